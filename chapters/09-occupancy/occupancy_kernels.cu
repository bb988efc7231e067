/* occupancy_kernels.cu: chapter 09, given. Real kernels whose occupancy the grader asks the CUDA
 * runtime for (cudaOccupancyMaxActiveBlocksPerMultiprocessor) on the GPU it runs on, and asks your
 * blocks_per_sm for from what cudaFuncGetAttributes says of them: their registers are the
 * compiler's choice, not a number typed here. None of them is launched. */
#include "occupancy.h"

/* few registers, no shared memory: warps and block slots limit it */
static __global__ void occ_light_kernel(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 2.0f * in[i];
}

/* many registers: 32 independent accumulators live across the loop */
static __global__ void occ_heavy_kernel(const float *in, float *out, int n)
{
    float acc[32];
#pragma unroll
    for (int j = 0; j < 32; j++)
        acc[j] = in[(threadIdx.x + 37 * j) % n];
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float x = in[i];
#pragma unroll
        for (int j = 0; j < 32; j++)
            acc[j] = fmaf(acc[j], x, (float)j);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; j++)
        s += acc[j] * acc[(j + 5) % 32];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

/* the same, held to 128 threads and 4 blocks an SM: the compiler may use up to 128 registers */
static __global__ void __launch_bounds__(128, 4) occ_bounded_kernel(const float *in, float *out,
                                                                      int n)
{
    float acc[48];
#pragma unroll
    for (int j = 0; j < 48; j++)
        acc[j] = in[(threadIdx.x + 41 * j) % n];
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float x = in[i];
#pragma unroll
        for (int j = 0; j < 48; j++)
            acc[j] = fmaf(acc[j], x, (float)j);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 48; j++)
        s += acc[j] * acc[(j + 7) % 48];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

/* 24 KB of static shared memory */
static __global__ void occ_static_smem_kernel(const float *in, float *out, int n)
{
    __shared__ float s_buf[6144];
    for (int i = threadIdx.x; i < 6144; i += blockDim.x)
        s_buf[i] = i < n ? in[i] : 0.0f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = s_buf[(threadIdx.x * 33) % 6144];
}

/* dynamic shared memory: as much as the launch gives */
static __global__ void occ_dynamic_smem_kernel(const float *in, float *out, int n, int words)
{
    extern __shared__ float s_dyn[];
    for (int i = threadIdx.x; i < words; i += blockDim.x)
        s_dyn[i] = i < n ? in[i] : 0.0f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = s_dyn[threadIdx.x % words];
}

const struct occ_real_kernel OCC_REAL_KERNELS[] = {
    { "light, 256 threads",                 (const void *)occ_light_kernel, 256, 0, 0 },
    { "light, 96 threads",                  (const void *)occ_light_kernel, 96, 0, 0 },
    { "light, 1024 threads",                (const void *)occ_light_kernel, 1024, 0, 0 },
    { "heavy registers, 256 threads",       (const void *)occ_heavy_kernel, 256, 0, 0 },
    { "heavy registers, 160 threads",       (const void *)occ_heavy_kernel, 160, 0, 0 },
    { "launch bounds (128, 4), 128 threads", (const void *)occ_bounded_kernel, 128, 0, 0 },
    { "24 KB static shared, 256 threads",   (const void *)occ_static_smem_kernel, 256, 0, 0 },
    { "20 KB dynamic shared, 128 threads",  (const void *)occ_dynamic_smem_kernel, 128, 20480, 0 },
    { "45 KB dynamic shared, 256 threads",  (const void *)occ_dynamic_smem_kernel, 256, 46080, 0 },
    { "60 KB dynamic, opted in, 256 threads", (const void *)occ_dynamic_smem_kernel, 256, 61440,
      61440 },
};
const int OCC_NUM_REAL_KERNELS = sizeof OCC_REAL_KERNELS / sizeof OCC_REAL_KERNELS[0];
