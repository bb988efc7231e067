/* step4_mxfp4_gemv.cu: chapter 11, step 4 of 4, weight-only MXFP4 for small batches. The
 * reference.
 * Change from step 2: the MXFP4 weights are not dequantised into memory and then multiplied;
 * they are dequantised in registers, on their way into the tensor cores, and never exist in a
 * wider format anywhere else. At m = 1 to 16 (a decode step's batch) a linear layer reads each
 * weight once and does m multiply-adds with it: 2m FLOPs for 0.5 bytes of FP4 (4.25 bits with
 * the scales) against 2 bytes of bf16. The H200 moves bytes some 200 times slower than it does
 * FLOPs, so the time is the weights' bytes: MXFP4 reads 34 MiB where BF16 reads 128 (at
 * k = n = 8192), and the ratio of bytes, 3.8, is the most it can gain.
 *
 * What limits it instead is instructions. At the copy's rate an SM must take in some 13 bytes
 * of codes a clock, 26 weights, and it issues 4 warp instructions a clock: a decode and a
 * multiply-add per weight on the CUDA cores (ten and more instructions a byte) cannot keep up.
 * So the multiply-adds go to the tensor cores, as chapter 05's step 2 feeds them: mma.sync
 * m16n8k16 bf16 with fp32 accumulators, W's 16 rows as the product's m (its n8 holds x's rows:
 * 1 to 8 of them, or two products for 9 to 16: at m = 1 seven eighths of each product are
 * wasted, and the tensor cores still have time to spare). The CUDA cores only decode, one
 * 32-bit word of 8 codes into the 4 registers of bf16 pairs a product's A fragment takes, in
 * 17 instructions:
 *   - each pair of codes two bytes apart masked out of the word (codes 0 and 4, say) and put
 *     in its place in a bf16 pair by one multiply (two shifts at once) and one AND: magnitude
 *     (e1 e0 m) at bits 6-8 and 22-24, sign at 15 and 31. That is e2m1 as the bottom of a
 *     bf16, its value times 2^-126 exactly, the subnormal 0.5 included (both formats read an
 *     exponent field of 0 as "no implicit 1, the smallest exponent");
 *   - one bf16x2 multiply by 2^126 (exact, subnormal inputs kept) puts each pair at its value.
 * A product's 16 values of k may come from any codes, as long as x's B fragment pairs the same
 * ones: the pairs a word gives are codes (0, 4), (2, 6), (1, 5) and (3, 7) of its 8, and x's
 * eight bf16 of those codes are paired the same way by four byte permutes (PRMT).
 *
 * The scales stay out of the tensor cores: they would have to multiply the bf16 weights, and
 * 2^(e - 127) times 6 leaves bf16's range at the top of e8m0's; so a product's 16 values of k
 * lie in one block of 32 (lanes 4g .. 4g + 3 take the block's 4 words, two products a block),
 * the block's two products start from zero, and their fp32 result is multiplied by the block's
 * scale, per row, and added into the row's total: four FMAs a block, the scale read from a
 * 256-entry table in shared memory (0x00 is 2^-127, 0xff NaN).
 *
 * A block of 256 threads takes 16 rows of W (16 columns of y), its 8 warps taking turns along
 * k four scale blocks at a time: 8 x 4 x 16 bytes, 512 contiguous bytes of each row, a turn of
 * the CTA, every 32-byte sector read whole. Each lane has its 4 blocks' words of both rows in
 * flight before it decodes any. The 8 warps' totals meet in shared memory at the end.
 *
 * MT is a template parameter, 1 (x's rows 0-7, one product a fragment) or 2 (rows 0-15, two);
 * a larger m runs in groups of 16 rows.
 *
 * Where it stands on the H200 (the lesson's measurements): about 1.4x cuBLAS's BF16 GEMM at
 * m = 1, short of the 3x the bytes nearly allow. It is latency-bound, not instruction-bound: a
 * lane's loads are 4 bytes, a warp's touch half of 16 sectors, and 30 warps an SM keep too few
 * bytes in flight. The next rung stages W through shared memory (16-byte cp.async or TMA bulk
 * copies into a ring), so that the bytes in flight stop depending on registers.
 */
#include <stdint.h>

#include <cuda_bf16.h>

#include "../05-async-pipelining/mma_sync.cuh"
#include "cuda_check.h"
#include "quant.h"

#define GV_THREADS 256
#define GV_WARPS (GV_THREADS / 32)
#define GV_ROWS 16   /* rows of W a CTA: an mma's m */
#define GV_UNROLL 4  /* scale blocks a warp's turn: 4 x 16 bytes of each row in flight */
#define FULL 0xffffffffu

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800 /* sm_75 builds the trap alone */

/* the 4 bf16 pairs of one word of 8 e2m1 codes (code i in nibble i), each value exactly:
 * p[0] = codes (0, 4), p[1] = (2, 6), p[2] = (1, 5), p[3] = (3, 7), the first of a pair in the
 * low half. Each pair: magnitude to bits 6-8 of its half, sign to bit 15, so the bf16 is the
 * code's value x 2^-126 (exponent field e1 e0, one mantissa bit m); then x 2^126. 13 integer
 * instructions and 4 bf16x2 multiplies for 8 weights. */
static __device__ __forceinline__ void decode_word(uint32_t w, uint32_t (&p)[4])
{
    const uint32_t M = 0x81c081c0u; /* bits 6-8 and 15 of each half */
    const uint32_t w8 = w >> 8;      /* codes 2, 3, 6, 7 where 0, 1, 4, 5 were */
    /* codes 0 and 4 at bits 0-3 and 16-19: magnitude up 6, sign up 12; the two shifted copies
     * do not overlap, so one multiply by 2^6 + 2^12 makes both */
    p[0] = ((w & 0x000f000fu) * 0x1040u) & M;
    p[1] = ((w8 & 0x000f000fu) * 0x1040u) & M; /* 2, 6 */
    /* codes 1 and 5 at bits 4-7 and 20-23: up 2 and 8 */
    p[2] = ((w & 0x00f000f0u) * 0x104u) & M;
    p[3] = ((w8 & 0x00f000f0u) * 0x104u) & M; /* 3, 7 */
#ifdef HARNESS_EMU
#pragma unroll
    for (int i = 0; i < 4; i++) { /* exact: a power of two, and no rounding to do */
        uint32_t out = 0;
        for (int h = 0; h < 2; h++) {
            float f = __uint_as_float((p[i] >> (16 * h)) << 16) * 0x1p126f;
            out |= (__float_as_uint(f) >> 16) << (16 * h);
        }
        p[i] = out;
    }
#else
    const __nv_bfloat162 two126 = __floats2bfloat162_rn(0x1p126f, 0x1p126f);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        __nv_bfloat162 v = *reinterpret_cast<const __nv_bfloat162 *>(&p[i]);
        v = __hmul2(v, two126);
        p[i] = *reinterpret_cast<const uint32_t *>(&v);
    }
#endif
}

/* x's 8 bf16 of codes 0-7 (x0 = codes 0, 1 ... x3 = 6, 7) paired as decode_word pairs W */
static __device__ __forceinline__ void pair_x(const uint4 &x, uint32_t (&b)[4])
{
    b[0] = __byte_perm(x.x, x.z, 0x5410); /* codes 0, 4 */
    b[1] = __byte_perm(x.y, x.w, 0x5410); /* 2, 6 */
    b[2] = __byte_perm(x.x, x.z, 0x7632); /* 1, 5 */
    b[3] = __byte_perm(x.y, x.w, 0x7632); /* 3, 7 */
}

/* d += A B, one m16n8k16 product: A (W's 16 rows x 16 of k) in this lane's 4 registers,
 * B (16 of k x x's 8 rows) in 2, as mma.sync's fragments lay them out (mma_sync.cuh). On the
 * CPU backend the warp's registers meet in its 32 x 6 words of shared memory (`s`), and each
 * lane sums its four elements of D from them, k in order, in fp32: the same fragments, read
 * as the tensor cores read them, at two warp barriers a product. */
static __device__ __forceinline__ void mma_regs(float (&d)[4], uint32_t a0, uint32_t a1,
                                                uint32_t a2, uint32_t a3, uint32_t b0,
                                                uint32_t b1, uint32_t (*s)[6])
{
#ifdef HARNESS_EMU
    const int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const uint32_t mine[6] = { a0, a1, a2, a3, b0, b1 };
    for (int i = 0; i < 6; i++)
        s[lane][i] = mine[i];
    __syncwarp();
    for (int e = 0; e < 4; e++) { /* D[g + 8 (e / 2)][2q + e % 2] */
        const int row = g + 8 * (e / 2), col = 2 * q + e % 2;
        float sum = d[e];
        for (int kk = 0; kk < 16; kk++) {
            /* A[row][kk]: lane 4 (row % 8) + (kk % 8) / 2, register row / 8 + 2 (kk / 8);
             * B[kk][col]: lane 4 col + (kk % 8) / 2, register 4 + kk / 8; half kk % 2 */
            const int half = 16 * (kk % 2);
            const uint32_t a = s[4 * (row % 8) + (kk % 8) / 2][row / 8 + 2 * (kk / 8)] >> half;
            const uint32_t b = s[4 * col + (kk % 8) / 2][4 + kk / 8] >> half;
            sum += __uint_as_float(a << 16) * __uint_as_float(b << 16);
        }
        d[e] = sum;
    }
    __syncwarp();
#else
    (void)s;
    const ldsm_frag fa = { { a0, a1, a2, a3 } }, fb = { { b0, b1, 0, 0 } };
    mma_16816(d, fa, fb, 0);
#endif
}

#endif

/* MT products a fragment: x's rows 0-7 (MT = 1) or 0-15 (MT = 2) */
template <int MT>
static __global__ void __launch_bounds__(GV_THREADS)
gemm_mxfp4_kernel(const uint16_t *__restrict__ x, const uint8_t *__restrict__ wq,
                  const uint8_t *__restrict__ ws, float *__restrict__ y, int m, int k, int n)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    __trap(); /* sm_75: no bf16 mma.sync m16n8k16 before sm_80 */
#else
    __shared__ float scale_of[256];              /* e8m0 code -> its value */
    __shared__ float part[GV_WARPS][MT][32][4];  /* each warp's accumulators, for the sum */
#ifdef HARNESS_EMU
    __shared__ uint32_t frag[GV_WARPS][32][6];   /* the CPU backend's mma.sync (mma_regs) */
#else
    uint32_t (*const frag)[32][6] = nullptr;
#endif
    {
        const uint32_t e = threadIdx.x;
        scale_of[e] = e == 0xffu ? __uint_as_float(0x7fc00000u)
                                 : __uint_as_float(e == 0 ? 0x00400000u : e << 23);
    }
    __syncthreads();

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, q = lane % 4; /* the fragments' row group and pair */
    const int c0 = blockIdx.x * GV_ROWS;
    const int kblocks = k / MX_BLOCK;
    /* this lane's two rows of W, g and g + 8 (rows past n read row c0: their y is not kept) */
    const int r_lo = c0 + g < n ? c0 + g : c0, r_hi = c0 + g + 8 < n ? c0 + g + 8 : c0;
    const uint32_t *__restrict__ w_lo =
        reinterpret_cast<const uint32_t *>(wq + (size_t)r_lo * (k / 2)) + q;
    const uint32_t *__restrict__ w_hi =
        reinterpret_cast<const uint32_t *>(wq + (size_t)r_hi * (k / 2)) + q;
    const uint8_t *__restrict__ s_lo = ws + (size_t)r_lo * kblocks;
    const uint8_t *__restrict__ s_hi = ws + (size_t)r_hi * kblocks;
    /* x's rows of this lane's B columns: g and, for MT = 2, g + 8; 8 bf16 of a block each */
    const uint4 *__restrict__ x_row[MT];
    bool x_has[MT];
#pragma unroll
    for (int t = 0; t < MT; t++) {
        x_has[t] = g + 8 * t < m;
        x_row[t] = reinterpret_cast<const uint4 *>(x + (size_t)(x_has[t] ? g + 8 * t : 0) * k) + q;
    }

    float acc[MT][4];
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            acc[t][e] = 0.0f;

    /* a warp's turns along k: every load of a turn (4 blocks of both rows) issued before any
     * is decoded. (Issuing the next turn's before this one's decode, two turns in flight, costs
     * 26 more registers a thread and half the warps an SM: slower on the H200.) */
    for (int j0 = warp * GV_UNROLL; j0 < kblocks; j0 += GV_WARPS * GV_UNROLL) {
        uint32_t wl[GV_UNROLL], wh[GV_UNROLL];
        uint32_t sl[GV_UNROLL], sh[GV_UNROLL];
#pragma unroll
        for (int u = 0; u < GV_UNROLL; u++) {
            const int j = j0 + u;
            if (j < kblocks) {
                wl[u] = __ldg(w_lo + 4 * j);
                wh[u] = __ldg(w_hi + 4 * j);
                sl[u] = __ldg(s_lo + j);
                sh[u] = __ldg(s_hi + j);
            }
        }
#pragma unroll
        for (int u = 0; u < GV_UNROLL; u++) {
            const int j = j0 + u;
            if (j >= kblocks)
                break;
            uint32_t alo[4], ahi[4];
            decode_word(wl[u], alo);
            decode_word(wh[u], ahi);
            const float X_lo = scale_of[sl[u]], X_hi = scale_of[sh[u]];
#pragma unroll
            for (int t = 0; t < MT; t++) {
                uint32_t b[4] = { 0, 0, 0, 0 };
                if (x_has[t])
                    pair_x(__ldg(x_row[t] + 4 * j), b);
                float d[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
                /* codes 0, 4 | 2, 6 of the lanes' words, then 1, 5 | 3, 7: the block's 32 */
                mma_regs(d, alo[0], ahi[0], alo[1], ahi[1], b[0], b[1], frag[warp]);
                mma_regs(d, alo[2], ahi[2], alo[3], ahi[3], b[2], b[3], frag[warp]);
                acc[t][0] = fmaf(d[0], X_lo, acc[t][0]);
                acc[t][1] = fmaf(d[1], X_lo, acc[t][1]);
                acc[t][2] = fmaf(d[2], X_hi, acc[t][2]);
                acc[t][3] = fmaf(d[3], X_hi, acc[t][3]);
            }
        }
    }

#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            part[warp][t][lane][e] = acc[t][e];
    __syncthreads();
    /* thread i of the first MT x 128 sums element i of the warps' accumulators and stores it:
     * lane l = i / 4's d[e = i % 4] is D[g + 8 (e / 2)][2q + e % 2], D's rows W's, its columns
     * x's */
    for (int i = threadIdx.x; i < MT * 128; i += GV_THREADS) {
        const int t = i / 128, l = (i / 4) % 32, e = i % 4;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < GV_WARPS; w++)
            v += part[w][t][l][e];
        const int c = c0 + l / 4 + 8 * (e / 2), r = 8 * t + 2 * (l % 4) + e % 2;
        if (c < n && r < m)
            y[(size_t)r * n + c] = v;
    }
#endif
}

template <int MT>
static void launch(const uint16_t *x, const uint8_t *w, const uint8_t *ws, float *y, int m, int k,
                   int n)
{
    gemm_mxfp4_kernel<MT><<<cdiv(n, GV_ROWS), GV_THREADS>>>(x, w, ws, y, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

void gemm_mxfp4_bf16(const uint16_t *d_x, const uint8_t *d_w, const uint8_t *d_ws, float *d_y,
                     int m, int k, int n)
{
    for (int r0 = 0; r0 < m; r0 += MXFP4_GEMV_MAX_M) { /* groups of 16 rows of x and y */
        const int mr = m - r0 < MXFP4_GEMV_MAX_M ? m - r0 : MXFP4_GEMV_MAX_M;
        const uint16_t *x = d_x + (size_t)r0 * k;
        float *y = d_y + (size_t)r0 * n;
        if (mr <= 8)
            launch<1>(x, d_w, d_ws, y, mr, k, n);
        else
            launch<2>(x, d_w, d_ws, y, mr, k, n);
    }
}
