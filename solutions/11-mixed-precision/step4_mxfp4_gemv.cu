/* step4_mxfp4_gemv.cu: chapter 11, step 4 of 4, weight-only MXFP4 for small batches. The
 * reference.
 * Change from step 2: the MXFP4 weights are not dequantised into memory and then multiplied;
 * they are dequantised in registers, on their way into the multiply, and never exist in a wider
 * format anywhere else. At m = 1 to 16 (a decode step's batch) a linear layer reads each weight
 * once and does m multiply-adds with it: 2m FLOPs for 0.5 bytes of FP4 (4.25 bits with the
 * scales) against 2 bytes of bf16. The H200 moves bytes some 200 times slower than it does
 * FLOPs, so the time is the weights' bytes: MXFP4 reads 17 MiB where BF16 reads 64 (at
 * k = n = 8192), and the ratio of bytes, 3.8, is the most it can gain. The tensor cores have
 * nothing to do here (Hopper's take no FP4, and an m of 1 would fill one row of their 16), so
 * the multiply-adds run on the CUDA cores in fp32.
 *
 * One warp a row c of W (a column of y), its lanes along k: lane l takes the scale blocks
 * l, l + 32, ..., each 32 codes = 16 bytes = one 16-byte load, so a warp's load is 512
 * contiguous bytes, and two of them are in flight a lane before either is used. A code becomes a
 * float in a few integer operations and a conversion: e2m1 is the top of an fp16 (sign, 2
 * exponent bits, 1 mantissa bit), so the nibble shifted into an fp16's bit positions is its
 * value x 2^-14 exactly, the subnormal 0.5 included (both formats read an exponent field of 0
 * as "no implicit 1, the smallest exponent"), and __half22float2 makes two fp32s of a pair.
 * The scale is a power of two, so it factors out of
 * its block: each block's 32 products are summed first, then multiplied by 2^14 (undoing the
 * shift's 2^-14, exactly) and by X (exactly, unless the sum leaves fp32's normal range). The
 * activations, at most 16 x 8192 bf16 = 256 KB, come through the L1 and L2 caches; each lane
 * reads the 64 bytes of each row that its block needs, 16 at a time. At the end the warp sums
 * its lanes by shuffles and lane 0 writes the m results.
 *
 * m is a template parameter up to 16 (the next power of two at or above it: a row past m is
 * skipped, not computed); a larger m runs in groups of 16 rows. Expect: at m = 1, the weights'
 * bytes at close to the copy kernel's rate, about 3x cuBLAS's BF16 GEMM of the same shape. */
#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.h"
#include "quant.h"

#define GV_THREADS 256
#define GV_WARPS (GV_THREADS / 32)
#define GV_UNROLL 2 /* 16-byte loads of W in flight a lane */
#define FULL 0xffffffffu

/* X = 2^(code - 127); 0x00 is the fp32 subnormal 2^-127; 0xff is NaN */
static __device__ __forceinline__ float e8m0_value(uint32_t code)
{
    if (code == 0xffu)
        return __uint_as_float(0x7fc00000u);
    return code == 0 ? __uint_as_float(0x00400000u) : __uint_as_float(code << 23);
}

/* the two codes of byte p of word w (element 2p in the low nibble) as two fp32s, each its e2m1
 * value times 2^-14: the nibble's magnitude goes to an fp16's bits 9-11 (exponent 0-1, mantissa
 * top bit), its sign to bit 15 */
static __device__ __forceinline__ float2 decode_pair(uint32_t w, int p)
{
    const uint32_t b = w >> (8 * p);
    const uint32_t bits = (b & 0x7u) << 9 | (b & 0x8u) << 12 | (b & 0x70u) << 21 |
                          (b & 0x80u) << 24;
    __half2_raw raw;
    raw.x = (unsigned short)(bits & 0xffffu);
    raw.y = (unsigned short)(bits >> 16);
    return __half22float2(__half2(raw));
}

/* two bf16 (one 32-bit word, element 0 low) as fp32s: a bf16 is the top half of an fp32 */
static __device__ __forceinline__ float2 bf16x2_to_float2(uint32_t u)
{
    return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u));
}

/* the products of row r's 32 activations of block j with the block's 32 decoded weights */
static __device__ __forceinline__ float block_dot(const uint16_t *__restrict__ xr,
                                                  const float (&w)[32])
{
    float sum = 0.0f;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        const uint4 v = __ldg(reinterpret_cast<const uint4 *>(xr) + q);
        const uint32_t u[4] = { v.x, v.y, v.z, v.w };
#pragma unroll
        for (int t = 0; t < 4; t++) {
            const float2 x2 = bf16x2_to_float2(u[t]);
            sum = fmaf(x2.x, w[8 * q + 2 * t], sum);
            sum = fmaf(x2.y, w[8 * q + 2 * t + 1], sum);
        }
    }
    return sum;
}

template <int MR>
static __global__ void __launch_bounds__(GV_THREADS)
gemm_mxfp4_kernel(const uint16_t *__restrict__ x, const uint8_t *__restrict__ wq,
                  const uint8_t *__restrict__ ws, float *__restrict__ y, int m, int k, int n)
{
    const int lane = threadIdx.x % 32;
    const int c = blockIdx.x * GV_WARPS + threadIdx.x / 32;
    if (c >= n)
        return; /* the whole warp */
    const int kblocks = k / MX_BLOCK;
    const uint4 *__restrict__ wrow = reinterpret_cast<const uint4 *>(wq + (size_t)c * (k / 2));
    const uint8_t *__restrict__ srow = ws + (size_t)c * kblocks;
    float acc[MR];
#pragma unroll
    for (int r = 0; r < MR; r++)
        acc[r] = 0.0f;

    for (int j0 = lane; j0 < kblocks; j0 += 32 * GV_UNROLL) {
        uint4 wv[GV_UNROLL];
        uint32_t sc[GV_UNROLL];
#pragma unroll
        for (int u = 0; u < GV_UNROLL; u++) { /* all loads of W first: bytes in flight */
            const int j = j0 + 32 * u;
            if (j < kblocks) {
                wv[u] = __ldg(wrow + j);
                sc[u] = __ldg(srow + j);
            }
        }
#pragma unroll
        for (int u = 0; u < GV_UNROLL; u++) {
            const int j = j0 + 32 * u;
            if (j >= kblocks)
                break;
            float w[32];
            const uint32_t words[4] = { wv[u].x, wv[u].y, wv[u].z, wv[u].w };
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int p = 0; p < 4; p++) {
                    const float2 f = decode_pair(words[q], p);
                    w[8 * q + 2 * p] = f.x;
                    w[8 * q + 2 * p + 1] = f.y;
                }
            const float X = e8m0_value(sc[u]);
#pragma unroll
            for (int r = 0; r < MR; r++)
                if (r < m) /* 2^14 undoes the decode's 2^-14, exactly */
                    acc[r] += block_dot(x + (size_t)r * k + (size_t)j * MX_BLOCK, w) *
                              16384.0f * X;
        }
    }
#pragma unroll
    for (int r = 0; r < MR; r++) {
        float v = acc[r];
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1)
            v += __shfl_xor_sync(FULL, v, offset);
        if (lane == 0 && r < m)
            y[(size_t)r * n + c] = v;
    }
}

template <int MR>
static void launch(const uint16_t *x, const uint8_t *w, const uint8_t *ws, float *y, int m, int k,
                   int n)
{
    gemm_mxfp4_kernel<MR><<<cdiv(n, GV_WARPS), GV_THREADS>>>(x, w, ws, y, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

void gemm_mxfp4_bf16(const uint16_t *d_x, const uint8_t *d_w, const uint8_t *d_ws, float *d_y,
                     int m, int k, int n)
{
    for (int r0 = 0; r0 < m; r0 += MXFP4_GEMV_MAX_M) { /* groups of 16 rows of x and y */
        const int mr = m - r0 < MXFP4_GEMV_MAX_M ? m - r0 : MXFP4_GEMV_MAX_M;
        const uint16_t *x = d_x + (size_t)r0 * k;
        float *y = d_y + (size_t)r0 * n;
        if (mr == 1)
            launch<1>(x, d_w, d_ws, y, mr, k, n);
        else if (mr == 2)
            launch<2>(x, d_w, d_ws, y, mr, k, n);
        else if (mr <= 4)
            launch<4>(x, d_w, d_ws, y, mr, k, n);
        else if (mr <= 8)
            launch<8>(x, d_w, d_ws, y, mr, k, n);
        else
            launch<16>(x, d_w, d_ws, y, mr, k, n);
    }
}
