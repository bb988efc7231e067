/* shared_wavefronts.cu: how many wavefronts one warp's shared load takes on a GPU, for each
 * pattern of tests/shared_patterns.h, counted by Nsight Compute. The CPU backend's model of
 * shared memory (harness/emu/prof/prof.cpp, shared_wavefronts) is checked against what this
 * measured on the reference H200 (plots/data/h200/shared-wavefronts.tsv, by tests/emu_profile.c).
 *
 * `make gpu-build` builds it as build/cuda/tests/shared_wavefronts; on a GPU machine:
 *     ncu --clock-control none --csv --metrics \
 *         l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum \
 *         build/cuda/tests/shared_wavefronts
 * One launch a pattern, in the order of the list (the program prints each before launching it);
 * the loads are inline PTX so that each is exactly one LDS, LDS.64 or LDS.128. */
#include <stdio.h>

#include <cuda_runtime.h>

#include "cuda_check.h"
#include "../shared_patterns.h"

/* one warp: fill the array (stores: not counted), then lane l loads BYTES bytes at index[l] */
template <int BYTES>
__global__ void load_kernel(const int *index, float *out)
{
    __shared__ __align__(16) float s[SHARED_PATTERN_BYTES / 4];
    for (int i = threadIdx.x; i < SHARED_PATTERN_BYTES / 4; i += 32)
        s[i] = (float)i;
    __syncthreads();
    unsigned a = (unsigned)__cvta_generic_to_shared(s) + (unsigned)(index[threadIdx.x] * BYTES);
    float r;
    if (BYTES == 16) {
        float x, y, z, w;
        asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(x), "=f"(y), "=f"(z), "=f"(w) : "r"(a));
        r = x + y + z + w;
    } else if (BYTES == 8) {
        float x, y;
        asm volatile("ld.volatile.shared.v2.f32 {%0, %1}, [%2];" : "=f"(x), "=f"(y) : "r"(a));
        r = x + y;
    } else {
        asm volatile("ld.volatile.shared.f32 %0, [%1];" : "=f"(r) : "r"(a));
    }
    out[threadIdx.x] = r;
}

int main(void)
{
    int *d_index;
    float *d_out;
    CUDA_CHECK(cudaMalloc((void **)&d_index, 32 * sizeof(int)));
    CUDA_CHECK(cudaMalloc((void **)&d_out, 32 * sizeof(float)));
    for (int p = 0; p < SHARED_PATTERN_COUNT; p++) {
        int h[32];
        for (int l = 0; l < 32; l++)
            h[l] = shared_pattern_index(p, l);
        CUDA_CHECK(cudaMemcpy(d_index, h, sizeof h, cudaMemcpyHostToDevice));
        printf("pattern %d: %d bytes, index %s\n", p, shared_pattern_bytes(p), shared_pattern_name(p));
        fflush(stdout);
        switch (shared_pattern_bytes(p)) {
        case 16: load_kernel<16><<<1, 32>>>(d_index, d_out); break;
        case 8: load_kernel<8><<<1, 32>>>(d_index, d_out); break;
        default: load_kernel<4><<<1, 32>>>(d_index, d_out); break;
        }
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    CUDA_CHECK(cudaFree(d_index));
    CUDA_CHECK(cudaFree(d_out));
    return 0;
}
