/* attention_mma.cuh: the warp-level tensor-core instructions step 3 uses (given). Chapter 05's
 * mma_sync.cuh brings ldmatrix (ldsm_x4) and mma.sync m16n8k16 with bf16 inputs (mma_16816);
 * this adds what attention needs besides:
 *
 *   ldsm_x4<TRANS>(f, base, off)        also from __half rows (ldmatrix moves 16-bit elements,
 *                                       whatever they mean)
 *   mma_16816_f16(d, a, b, half)        mma.sync m16n8k16 with fp16 inputs, fp32 accumulators
 *   mma_t<T>(d, a, b, half)             the one of the two that T (__nv_bfloat16, __half) wants
 *   ldsm_from_regs(f, r0, r1, r2, r3)   an A operand made of four registers the lane already
 *                                       holds: P, from the accumulators of S, with no trip
 *                                       through shared memory
 *   pack2<T>(lo, hi)                    two floats rounded to T, as one 32-bit register
 *   exp2_approx(x)                      2^x as one instruction of the SFU (ex2.approx.ftz);
 *                                       exp2f adds a few instructions around the same one to
 *                                       return results below 2^-126 (fp32's subnormals) too
 *
 * The register layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), lane l, g = l / 4,
 * q = l % 4:
 *   A (16 x 16): a0 = A[g][2q..2q+1], a1 = A[g+8][2q..], a2 = A[g][8+2q..], a3 = A[g+8][8+2q..]
 *   B (16 x 8):  b0 = B[2q..2q+1][g], b1 = B[8+2q..9+2q][g]
 *   C (16 x 8):  c0, c1 = C[g][2q], C[g][2q+1]; c2, c3 = the same in row g + 8
 * Two accumulators side by side (columns 0-7 and 8-15 of a 16 x 16 block of S) hold, lane by
 * lane, exactly the A layout of that 16 x 16 block: a0 = (c0, c1) of the first, a1 = (c2, c3)
 * of the first, a2 and a3 the same of the second. So P goes from S's accumulators to the A
 * operand of P V by rounding pairs of floats, in the lane that holds them.
 *
 * The CPU backend has no PTX: there the same names come from its emu/ldmatrix.h, and
 * exp2_approx is exp2f with the same flush. */
#ifndef ATTENTION_MMA_CUH
#define ATTENTION_MMA_CUH

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../05-async-pipelining/mma_sync.cuh"

#ifndef HARNESS_EMU
template <bool TRANS>
static __device__ __forceinline__ void ldsm_x4(ldsm_frag &f, const __half *base, int off)
{
    ldsm_x4<TRANS>(f, reinterpret_cast<const bf16 *>(base), off);
}

static __device__ __forceinline__ void mma_16816_f16(float (&d)[4], const ldsm_frag &a,
                                                     const ldsm_frag &b, int half)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[2 * half]),
          "r"(b.r[2 * half + 1]));
}

static __device__ __forceinline__ void ldsm_from_regs(ldsm_frag &f, uint32_t r0, uint32_t r1,
                                                      uint32_t r2, uint32_t r3)
{
    f.r[0] = r0, f.r[1] = r1, f.r[2] = r2, f.r[3] = r3;
}
#endif

template <typename T>
static __device__ __forceinline__ void mma_t(float (&d)[4], const ldsm_frag &a,
                                             const ldsm_frag &b, int half)
{
    if constexpr (sizeof(T) == 2 && __is_same(T, __half))
        mma_16816_f16(d, a, b, half);
    else
        mma_16816(d, a, b, half);
}

/* 2^x, results below 2^-126 flushed to 0. In the softmax x = s - m <= 0, so a weight is
 * flushed only where it is under 2^-126 of the row's largest (which is 1): below what fp32
 * can add to l, which is at least 1 */
static __device__ __forceinline__ float exp2_approx(float x)
{
#ifdef HARNESS_EMU
    const float y = exp2f(x);
    return y < 0x1p-126f ? 0.0f : y;
#else
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#endif
}

/* lo in the lower 16 bits: the element of the lower column */
template <typename T> static __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi)
{
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

#endif
