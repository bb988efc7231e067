// mxfp4_reads.cu: plain reads of step 4's bytes, built as variants of the step for
// tests/probes/mxfp4_gemv_variants.sh (the step's launcher's signature, its y left alone): every
// 16 bytes of the codes and of the scales read once, folded into one word that is stored only if
// it equals a value no input makes in practice, on a grid of 8 CTAs of 256 threads an SM. Two
// choices, as -D flags:
//   READ_U   the loads a thread has in flight (1, the probe's own read, or more);
//   READ_EF  1: the codes' loads carry an L2 evict-first policy (createpolicy, then
//            ld.global.nc.L1::no_allocate.L2::cache_hint), so that in each set of L2 they
//            replace each other before they replace other lines; 0: plain loads (__ldg).
// Example: tests/probes/mxfp4_gemv_variants.sh reference: \
//            read_ef:-DREAD_EF=1@tests/probes/mxfp4_reads.cu
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#include "cuda_check.h"
#include "quant.h"

#ifndef READ_U
#define READ_U 1
#endif
#ifndef READ_EF
#define READ_EF 0
#endif

template <int U, bool EF>
static __global__ void read_codes(const uint4 *__restrict__ a, size_t na,
                                  const uint4 *__restrict__ b, size_t nb, float *sink)
{
    uint64_t pol = 0;
    if (EF)
        asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned acc = 0;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (U - 1) * stride < na; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (EF)
                asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 "
                             "{%0, %1, %2, %3}, [%4], %5;"
                             : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w)
                             : "l"(a + i + u * stride), "l"(pol));
            else
                v[u] = __ldg(a + i + u * stride);
        }
#pragma unroll
        for (int u = 0; u < U; u++)
            acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < na; i += stride) {
        const uint4 v = __ldg(a + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    for (i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nb; i += stride) {
        const uint4 v = __ldg(b + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u)
        *sink = (float)acc;
}

void gemm_mxfp4_bf16(const uint16_t *d_x, const uint8_t *d_w, const uint8_t *d_ws, float *d_y,
                     int m, int k, int n)
{
    (void)d_x, (void)m;
    int dev, sms;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    read_codes<READ_U, READ_EF != 0><<<8 * sms, 256>>>(
        reinterpret_cast<const uint4 *>(d_w), (size_t)n * k / 2 / 16,
        reinterpret_cast<const uint4 *>(d_ws), (size_t)n * k / MX_BLOCK / 16, d_y);
    CUDA_CHECK(cudaGetLastError());
}
