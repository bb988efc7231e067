// read_bytes.cuh: the plain read the MXFP4 probes time and flush with (mxfp4_gemv_variants.cu,
// mxfp4_reads.cu): every 16 bytes of a and of b read once, grid-stride, folded into one word
// that is stored only if it equals a value no input makes in practice (so that the loads are
// kept, and nothing else is done). U: the loads of a a thread has in flight; EF: a's loads carry
// an L2 evict-first policy (createpolicy, then ld.global.nc.L1::no_allocate.L2::cache_hint), so
// that in each set of L2 they replace each other before they replace other lines.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "cuda_check.h"
#include "sm_count.h"

template <int U, bool EF>
static __global__ void read_bytes(const uint4 *__restrict__ a, size_t na,
                                  const uint4 *__restrict__ b, size_t nb, unsigned *sink)
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
        *sink = acc;
}

// read_bytes over a_bytes of a and b_bytes of b (multiples of 16; b may be NULL with 0), on the
// grid every caller times: 8 CTAs of 256 threads an SM. sink: 4 bytes of device memory the
// kernel may write.
template <int U, bool EF>
static void read_bytes_launch(const void *a, size_t a_bytes, const void *b, size_t b_bytes,
                              unsigned *sink)
{
    read_bytes<U, EF><<<8 * sm_count(), 256>>>(static_cast<const uint4 *>(a), a_bytes / 16,
                                               static_cast<const uint4 *>(b), b_bytes / 16, sink);
    CUDA_CHECK(cudaGetLastError());
}
