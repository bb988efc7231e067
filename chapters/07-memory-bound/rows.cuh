/* rows.cuh: what steps 4 and 5 (the softmax and the norms) both do with a row's elements,
 * given: one access of W consecutive elements, fp32 or bf16, widened to fp32 on the load and
 * rounded once on the store; and reread, which keeps a held row's passes from being merged.
 *
 * An access is 16 bytes (a float4, or 8 bf16 as a uint4: W = 4 or 8) where every row starts
 * on a 16-byte boundary, else one element (W = 1); the launcher chooses W from the row length
 * and the pointers, and the kernels are templates on it. */
#ifndef ROWS_CUH
#define ROWS_CUH

#include <cuda_runtime.h> /* float4, uint4 */
#include <cuda_bf16.h>

/* ---- one access: W consecutive elements widened to fp32 (W = 16 bytes, or 1) -------------- */

template <int W>
static __device__ __forceinline__ void load_w(const float *p, float *v)
{
    if constexpr (W == 4) {
        const float4 q = *reinterpret_cast<const float4 *>(p); /* one 16-byte load */
        v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
    } else {
        static_assert(W == 1, "an f32 access is 16 bytes or one element");
        v[0] = *p;
    }
}

template <int W>
static __device__ __forceinline__ void store_w(float *p, const float *v)
{
    if constexpr (W == 4) {
        *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
        static_assert(W == 1, "an f32 access is 16 bytes or one element");
        *p = v[0];
    }
}

/* bf16 -> fp32 is exact: a bf16's bits are the top 16 bits of the float it stands for */
static __device__ __forceinline__ float bf16_lo(unsigned w) { return __uint_as_float(w << 16); }
static __device__ __forceinline__ float bf16_hi(unsigned w)
{
    return __uint_as_float(w & 0xffff0000u);
}
/* two floats rounded to nearest-even bf16, packed as they lie in memory (the first low): one
 * conversion instruction for the pair on a GPU (cvt.rn.bf16x2.f32) */
static __device__ __forceinline__ unsigned bf16x2_rn(float lo, float hi)
{
    const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
    return (unsigned)__bfloat16_as_ushort(pair.x) | (unsigned)__bfloat16_as_ushort(pair.y) << 16;
}

/* the 8 bf16 of a 16-byte access, widened (in registers: no address of q is taken, which
 * would put the held row in local memory) */
static __device__ __forceinline__ void widen8(const uint4 &q, float *v)
{
    v[0] = bf16_lo(q.x); v[1] = bf16_hi(q.x); v[2] = bf16_lo(q.y); v[3] = bf16_hi(q.y);
    v[4] = bf16_lo(q.z); v[5] = bf16_hi(q.z); v[6] = bf16_lo(q.w); v[7] = bf16_hi(q.w);
}

template <int W>
static __device__ __forceinline__ void load_w(const __nv_bfloat16 *p, float *v)
{
    if constexpr (W == 8) {
        widen8(*reinterpret_cast<const uint4 *>(p), v); /* one 16-byte load: 8 values */
    } else {
        static_assert(W == 1, "a bf16 access is 16 bytes or one element");
        v[0] = __bfloat162float(*p);
    }
}

template <int W>
static __device__ __forceinline__ void store_w(__nv_bfloat16 *p, const float *v)
{
    if constexpr (W == 8) {
        *reinterpret_cast<uint4 *>(p) = make_uint4(bf16x2_rn(v[0], v[1]), bf16x2_rn(v[2], v[3]),
                                                   bf16x2_rn(v[4], v[5]), bf16x2_rn(v[6], v[7]));
    } else {
        static_assert(W == 1, "a bf16 access is 16 bytes or one element");
        *p = __float2bfloat16_rn(v[0]);
    }
}

/* ---- a row held as it was loaded ------------------------------------------------------------
 * Each pass over a held row widens its values again, and the compiler would rather keep the
 * widened floats of one pass for the next (the same expressions): 64 more registers a thread
 * than it has, so it would spill. An empty asm that claims to change the held registers makes
 * each pass compute from them afresh. */
template <int N>
static __device__ __forceinline__ void reread(uint4 (&q)[N])
{
#pragma unroll
    for (int k = 0; k < N; ++k)
        asm volatile("" : "+r"(q[k].x), "+r"(q[k].y), "+r"(q[k].z), "+r"(q[k].w));
}

#endif
