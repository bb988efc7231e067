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
 * scale, per row, and added into the row's total: an FMA a row and a block.
 *
 * A block of 256 threads takes 16 rows of W (16 columns of y), its 8 warps taking turns along
 * k four scale blocks at a time: 8 x 4 x 16 bytes, 512 contiguous bytes of each row, a turn of
 * the CTA, every 32-byte sector read whole. The 8 warps' totals meet in shared memory at the
 * end. W reaches each warp through a ring of GV_STAGES stages in shared memory, one ring a
 * warp, filled by 16-byte cp.async: a load into registers holds its register until it lands, a
 * cp.async holds none, so each warp keeps GV_STAGES - 1 turns on their way while it decodes
 * another. The warps do not wait for each other until the end: a stage is one warp's, its
 * lanes' copies made visible to each other by __syncwarp. Two stages, one turn in flight a
 * warp, 1 KB, 32 KB an SM: at k = 8192 a warp has 8 turns in all, and a deeper ring asks for
 * more of them at the start, when every SM asks at once, and leaves less of the SM's shared
 * memory to L1 (on the H200, two or three stages were faster than four).
 *
 * Count the instructions of a warp's turn, 1 KB of codes: the decode is 8 words x 17 = 136, the
 * products, x's pairing and the scales' FMAs some 40 more. Everything else (the copies, the
 * loads of the words and of x, the scales, the addresses, the tests for the end of k) is
 * overhead, and with a 32-bit shared load a word, each lane looking up its own 8 scales in the
 * table, a test a block for the end of k and pointers into the ring made anew each turn, the
 * overhead was as much again as the decode. This kernel keeps it small:
 *   - the words come by ldmatrix.x4: its four 8 x 8 matrices of 16-bit elements are 8 rows x
 *     16 bytes, and a lane receives 4 bytes of each, which is exactly word q of rows g and
 *     g + 8 of two blocks: four 32-bit loads in one instruction, two a turn. A stage's rows
 *     are 64 bytes, swizzled (block c of row r at chunk c ^ ((r >> 1) & 3)) so that the 8 rows
 *     of a matrix fall on 8 different groups of 4 banks;
 *   - the scales: two codes a lane (block q of rows g and g + 8) looked up in the 256-entry
 *     table (0x00 is 2^-127, 0xff NaN) into the warp's 64 floats in shared memory, then 16 bytes
 *     a row read back: 6 shared accesses a turn, where each lane looking up its own 8 took 10
 *     and a byte extracted from a word for each;
 *   - a whole turn has no test a block (only the last turn of a row may be partial), and the
 *     ring is addressed by byte offsets from one shared address;
 *   - at m = 1 the odd columns of D are x's rows that do not exist, and their FMAs are left
 *     out.
 *
 * MT is a template parameter, 1 (x's rows 0-7, one product a fragment) or 2 (rows 0-15, two);
 * a larger m runs in groups of 16 rows.
 *
 * T (the blocks of a turn), STAGES, XS (x's one row copied through the ring beside the codes,
 * at m = 1) and MINB (the CTAs an SM the registers must allow) are template parameters, so that
 * the alternatives the lesson measures are one instantiation away. The launcher's choice, the
 * H200's fastest: T = 4, 2 stages, x loaded into registers, 4 CTAs an SM at m <= 8 (at most 64
 * registers a thread) and 2 at m = 9 to 16, where two products a fragment need more than 64
 * (at 130 registers one CTA fits, and m = 16 took half again as long). Through the ring, x's
 * 256 bytes a turn come from L2 in the same group as the codes, and every turn waits for them:
 * slower, at m = 1, than loads into registers issued before the wait.
 *
 * Expect: at m = 1, 32 warps an SM; the instructions of a turn about a fifth fewer than with
 * a shared load a word and each lane's own scale lookups (about 265 against 338, the ring's
 * shared address made once), and the time nearer DRAM's, some of it from the shallower ring;
 * a plain read of the same bytes still faster by about a fifth (the lesson's measurements).
 */
#include <stddef.h>
#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_pipeline.h>

#include "../05-async-pipelining/mma_sync.cuh"
#include "cuda_check.h"
#include "quant.h"

#define GV_THREADS 256
#define GV_WARPS (GV_THREADS / 32)
#define GV_ROWS 16   /* rows of W a CTA: an mma's m */
#define GV_TURN 4    /* scale blocks a warp's turn, and a ring stage: 64 bytes of each row */
#define GV_STAGES 2  /* a warp's ring: GV_STAGES - 1 turns in flight while it decodes one */
#define FULL 0xffffffffu

/* One stage of a warp's ring: a turn of T blocks (T = 4 or 8) of the CTA's 16 rows, a row's T
 * chunks (one block, 16 bytes, each) swizzled: chunk c of row r at chunk c ^ gv_swz<T>(r). And,
 * for a batch of one, x's 32 T bf16 of the turn, copied beside the codes. */
template <int T>
struct gv_stage {
    uint32_t w[GV_ROWS][4 * T];
    uint4 x[T][4]; /* block u's 32 bf16 of x's row 0, as 4 x 8 */
};

/* The chunk of row r where the turn's block c lies is c ^ gv_swz<T>(r). An ldmatrix reads one
 * chunk of 8 rows, 16 bytes each, and those must fall on 8 different groups of 4 banks. Rows
 * of 64 bytes (T = 4): rows r and r + 1 are already half the banks apart, and XORing the chunk
 * with r / 2 separates r and r + 2, r + 4, r + 6. Rows of 128 bytes (T = 8) all start on bank
 * 0: XOR with a different value for each of the 8, and the copy's quarter warp, which writes
 * chunks 0-3 (or 4-7) of rows 2h and 2h + 1, wants the two rows' values to differ in bit 2. */
template <int T>
static __host__ __device__ __forceinline__ int gv_swz(int r)
{
    return T == 4 ? (r >> 1) & 3 : ((r & 1) << 2) | ((r >> 1) & 3);
}

/* the CTA's shared memory past the scale table and the warps' scales: the warps' rings while
 * they stream W, then the warps' accumulators, for the sum across warps */
template <int MT, int T, int STAGES>
union gv_shared {
    gv_stage<T> ring[GV_WARPS][STAGES];
    float part[GV_WARPS][MT][32][4];
};

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
    /* 2^126 in both halves (exponent field 253), as bits: an immediate operand, where a
     * conversion from fp32 is an instruction of its own each time */
    const uint32_t two126_bits = 0x7e807e80u;
    const __nv_bfloat162 two126 = *reinterpret_cast<const __nv_bfloat162 *>(&two126_bits);
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

/* The ring is addressed by byte offsets from the warp's ring, ring_g as a pointer and ring_s
 * as a shared-memory address: an offset is one register and an add, where a pointer into
 * shared memory would be turned into a shared address again at every copy and load. */

/* 16 bytes from src to ring + off, as cp.async.cg (it skips L1: W is read once) */
static __device__ __forceinline__ void cp16(char *ring_g, uint32_t ring_s, int off,
                                            const void *src)
{
#ifdef HARNESS_EMU
    (void)ring_s;
    __pipeline_memcpy_async(ring_g + off, src, 16);
#else
    (void)ring_g;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(ring_s + off), "l"(src)
                 : "memory");
#endif
}

/* This lane's words of two blocks of a stage's turn, as the fragments want them: r[0] = word q
 * of row g's block c0, r[1] = of row g + 8's, r[2], r[3] the same of block c0 + 1. One
 * ldmatrix.x4 reads them: its four 8 x 8 matrices of 16-bit elements are 8 rows x 16 bytes
 * each (rows 0-7 and 8-15 of block c0, then of c0 + 1), lane l giving the address of row l % 8
 * of matrix l / 8 (its ring + off) and receiving 4 bytes of row l / 4 of each, bytes 4 (l % 4)
 * to 4 (l % 4) + 3: word q. Four 32-bit shared loads in one instruction, one wavefront a
 * matrix: the swizzle puts its 8 rows on 8 different groups of 4 banks. */
static __device__ __forceinline__ void load_words(const char *ring_g, uint32_t ring_s, int off,
                                                  uint32_t (&r)[4])
{
#ifdef HARNESS_EMU
    (void)ring_s;
    ldsm_frag f;
    ldsm_x4<false>(f, reinterpret_cast<const bf16 *>(ring_g), off / 2);
    /* the CPU backend's fragment holds the matrices whole: this lane's register of each */
    const int g = threadIdx.x % 32 / 4, q = threadIdx.x % 4;
#pragma unroll
    for (int i = 0; i < 4; i++)
        r[i] = f.m[i][g][2 * q] | (uint32_t)f.m[i][g][2 * q + 1] << 16;
#else
    (void)ring_g;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(ring_s + off)
                 : "memory");
#endif
}

/* One turn's products: the stage at ring + soff (ldc: this lane's ldmatrix offset of blocks
 * 0-1 in a stage, ldx: the XOR that moves it to blocks u, u + 1), x's words (xv, when XS is
 * false; else the stage's), the blocks' scales of rows g and g + 8 (xl, xh), nu of the turn's T
 * blocks inside k. Per block: two words decoded into the 8 registers of two A fragments, x
 * paired to match, two products from zero, and the block's scale applied to their fp32 sum,
 * row by row. ODD: x has a row 1 (m >= 2), and the odd columns of D (d[1], d[3]) are kept; at
 * m = 1 they are x's rows that do not exist, and their multiply-adds are left out. */
template <int MT, bool ODD, bool XS, int T>
static __device__ __forceinline__ void turn_products(float (&acc)[MT][4], const char *ring_g,
                                                     uint32_t ring_s, int soff, int ldr, int ldx,
                                                     const uint4 (&xv)[T][MT],
                                                     const float (&xl)[T], const float (&xh)[T],
                                                     int nu, uint32_t (*frag)[6])
{
    const int q = threadIdx.x % 4;
    const uint4 *const xs = reinterpret_cast<const gv_stage<T> *>(ring_g + soff)->x[0];
    uint32_t wr[4];
#pragma unroll
    for (int u = 0; u < T; u++) {
        if (u >= nu)
            break;
        if (u % 2 == 0) /* blocks u and u + 1: one ldmatrix, at chunk u ^ ldx of its row */
            load_words(ring_g, ring_s, soff + ldr + 16 * (u ^ ldx), wr);
        uint32_t alo[4], ahi[4];
        decode_word(wr[2 * (u % 2)], alo);     /* row g */
        decode_word(wr[2 * (u % 2) + 1], ahi); /* row g + 8 */
#pragma unroll
        for (int t = 0; t < MT; t++) {
            uint32_t b[4];
            pair_x(XS ? xs[4 * u + q] : xv[u][t], b);
            float d[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
            /* codes 0, 4 | 2, 6 of the lanes' words, then 1, 5 | 3, 7: the block's 32 */
            mma_regs(d, alo[0], ahi[0], alo[1], ahi[1], b[0], b[1], frag);
            mma_regs(d, alo[2], ahi[2], alo[3], ahi[3], b[2], b[3], frag);
            acc[t][0] = fmaf(d[0], xl[u], acc[t][0]);
            acc[t][2] = fmaf(d[2], xh[u], acc[t][2]);
            if (ODD) {
                acc[t][1] = fmaf(d[1], xl[u], acc[t][1]);
                acc[t][3] = fmaf(d[3], xh[u], acc[t][3]);
            }
        }
    }
}

#endif

/* the rings and totals (gv_shared) live in the launch's dynamic shared memory: over 48 KB at
 * T = 8 (declared at file scope: one name for every instantiation of the template below) */
extern __shared__ __align__(16) unsigned char gv_dyn[];

/* MT products a fragment: x's rows 0-7 (MT = 1) or 0-15 (MT = 2); ODD as in turn_products;
 * XS: x has one row (m = 1), which travels through the ring with the codes; T blocks a turn;
 * STAGES the depth of each warp's ring; MINB the CTAs an SM the registers must allow. */
template <int MT, bool ODD, bool XS, int T, int STAGES, int MINB>
static __global__ void __launch_bounds__(GV_THREADS, MINB)
gemm_mxfp4_kernel(const uint16_t *__restrict__ x, const uint8_t *__restrict__ wq,
                  const uint8_t *__restrict__ ws, float *__restrict__ y, int m, int k, int n)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    __trap(); /* sm_75: no bf16 mma.sync m16n8k16 before sm_80 */
#else
    static_assert(T == 4 || T == 8, "a turn is 4 or 8 blocks");
    constexpr int SB = (int)sizeof(gv_stage<T>); /* a stage's bytes */
    static_assert(SB % 16 == 0, "16-byte cp.async into every stage");
    __shared__ float scale_of[256];                       /* e8m0 code -> its value */
    __shared__ __align__(16) float s_x[GV_WARPS][GV_ROWS][T]; /* a turn's scales, a row's T */
    gv_shared<MT, T, STAGES> &s_ = *reinterpret_cast<gv_shared<MT, T, STAGES> *>(gv_dyn);
#ifdef HARNESS_EMU
    __shared__ uint32_t frag[GV_WARPS][32][6];            /* the CPU backend's mma.sync */
#else
    uint32_t (*const frag)[32][6] = nullptr;
#endif

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, q = lane % 4; /* the fragments' row group and pair */
    const int c0 = blockIdx.x * GV_ROWS;
    const int kblocks = k / MX_BLOCK;
    /* the rows this lane copies, and whose scale codes it turns into floats: g and g + 8 (rows
     * past n read row c0: their y is not kept) */
    const int ra = c0 + g < n ? c0 + g : c0, rb = c0 + g + 8 < n ? c0 + g + 8 : c0;

    /* The warp's turns: turn i takes blocks j0 = T (8 i + warp) .. j0 + T - 1, so that a turn
     * of the 8 warps reads 128 T contiguous bytes of each row. Turn i lives in stage
     * i % STAGES of the warp's ring; STAGES - 1 turns are copied ahead, each its own commit
     * group (empty ones past the warp's last turn, so that the count of groups to wait for
     * stays the same). Every pointer steps a turn of the CTA, 8 T blocks, at a time. The ring
     * is addressed by byte offsets (ring_g as a pointer, ring_s as a shared address). */
    char *const ring_g = reinterpret_cast<char *>(s_.ring[warp]);
#ifdef HARNESS_EMU
    const uint32_t ring_s = 0;
#else
    /* as a number made once, through an instruction the compiler cannot see into: from the
     * pointer, it would read the CTA's place in the cluster (S2R SR_CgaCtaId) and make the
     * shared address anew at every turn's copies (tests/probes/step4-generic-ring.patch) */
    uint32_t ring_s;
    asm volatile("mov.b32 %0, %1;"
                 : "=r"(ring_s)
                 : "r"((uint32_t)__cvta_generic_to_shared(ring_g)));
#endif
    const int turns = cdiv(kblocks, T);
    const int mine = warp < turns ? cdiv(turns - warp, GV_WARPS) : 0;
    int jc = T * warp; /* the first block of the next turn to copy */
    /* this lane copies blocks q + 4h (h < T / 4) of rows g and g + 8, 16 bytes each, into
     * their swizzled places (row g + 8's is 8 rows below: the same swizzle) */
    const uint8_t *src_a = wq + (size_t)ra * (k / 2) + 16 * (jc + q);
    const uint8_t *src_b = wq + (size_t)rb * (k / 2) + 16 * (jc + q);
    int w_off[T / 4];
#pragma unroll
    for (int h = 0; h < T / 4; h++)
        w_off[h] = 16 * (g * T + ((q + 4 * h) ^ gv_swz<T>(g)));
    /* XS: lane l < 4 T copies x's 16 bytes of 16 l .. 16 l + 15 of the turn's 64 T */
    const uint16_t *src_x = x + 32 * jc + 8 * lane;
    const int x_off = (int)offsetof(gv_stage<T>, x) + 16 * lane;
    /* this lane's row of an ldmatrix's 8 x 8 matrices: row lr of blocks u + lane / 16 */
    const int lr = lane % 8 + 8 * (lane / 8 % 2);
    const int ldr = 16 * T * lr, ldx = (lane / 16) ^ gv_swz<T>(lr);
    auto copy = [&](int soff) {
#pragma unroll
        for (int h = 0; h < T / 4; h++)
            if (jc + q + 4 * h < kblocks) {
                cp16(ring_g, ring_s, soff + w_off[h], src_a + 64 * h);
                cp16(ring_g, ring_s, soff + w_off[h] + 8 * 16 * T, src_b + 64 * h);
            }
        if (XS && lane < 4 * T && jc + lane / 4 < kblocks)
            cp16(ring_g, ring_s, soff + x_off, src_x);
        src_a += GV_WARPS * T * 16, src_b += GV_WARPS * T * 16;
        src_x += GV_WARPS * T * 32, jc += GV_WARPS * T;
    };
#pragma unroll
    for (int i = 0; i < STAGES - 1; i++) {
        if (i < mine)
            copy(i * SB);
        __pipeline_commit();
    }
    /* The scale codes this lane turns into floats for its warp, blocks q + 4h of each turn in
     * rows g and g + 8; and (not XS) x's rows of this lane's B columns, g and, for MT = 2,
     * g + 8, 8 bf16 of each block. A column past m reads row 0: a column of D is x's row alone,
     * and it is not kept. */
    const uint8_t *sc_a = ws + (size_t)ra * kblocks + T * warp + q;
    const uint8_t *sc_b = ws + (size_t)rb * kblocks + T * warp + q;
    const uint4 *__restrict__ xp[MT];
#pragma unroll
    for (int t = 0; t < MT; t++)
        xp[t] = reinterpret_cast<const uint4 *>(x + (size_t)(g + 8 * t < m ? g + 8 * t : 0) * k) +
                4 * T * warp + q;
    /* A turn's scale codes come from DRAM as W's codes do, so they too are loaded a turn
     * ahead, into registers: the scale codes of this warp's turn starting at block j (0 past k
     * or past the warp's turns). Loaded in the turn that uses them, they would keep every turn
     * waiting a whole trip to DRAM after its copies had landed. */
    uint32_t code[T / 4][2];
    auto load_codes = [&](int j, bool any) {
#pragma unroll
        for (int h = 0; h < T / 4; h++) {
            code[h][0] = code[h][1] = 0;
            if (any && j + q + 4 * h < kblocks)
                code[h][0] = __ldg(sc_a + 4 * h), code[h][1] = __ldg(sc_b + 4 * h);
        }
    };
    load_codes(T * warp, mine > 0);
    /* the table while the first copies fly */
    {
        const uint32_t e = threadIdx.x;
        scale_of[e] = e == 0xffu ? __uint_as_float(0x7fc00000u)
                                 : __uint_as_float(e == 0 ? 0x00400000u : e << 23);
    }
    __syncthreads();

    float acc[MT][4];
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            acc[t][e] = 0.0f;

    for (int i = 0; i < mine; i++) {
        const int j0 = (i * GV_WARPS + warp) * T;
        const int nu = kblocks - j0 < T ? kblocks - j0 : T; /* blocks inside k */
        /* (not XS) x's words for the turn, issued before the wait, whose time they then
         * share: x is read by every CTA, and after the first turns it comes from L2 */
        uint4 xv[T][MT];
        if (!XS) {
            if (nu == T) {
#pragma unroll
                for (int u = 0; u < T; u++)
#pragma unroll
                    for (int t = 0; t < MT; t++)
                        xv[u][t] = __ldg(xp[t] + 4 * u);
            } else {
#pragma unroll
                for (int u = 0; u < T; u++)
#pragma unroll
                    for (int t = 0; t < MT; t++)
                        xv[u][t] = u < nu ? __ldg(xp[t] + 4 * u) : make_uint4(0, 0, 0, 0);
            }
        }
        /* of this lane's groups all but the STAGES - 2 youngest have landed: turn i's; the
         * __syncwarp makes every lane's copies of it visible to all, and says that every lane
         * is done with turn i - 1's stage, which the refill below overwrites, and with its
         * scales in s_x */
        __pipeline_wait_prior(STAGES - 2);
        __syncwarp();
        if (i + STAGES - 1 < mine)
            copy((i + STAGES - 1) % STAGES * SB);
        __pipeline_commit();

        /* The turn's 16 T scale codes to floats, T / 2 a lane, into the warp's s_x; then each
         * lane reads its rows' T, 16 bytes at a time. (Each lane of row group g looking up the
         * 2 T codes it needs itself would be 4 times the table's loads, and a byte extracted
         * from a word for each.) */
#pragma unroll
        for (int h = 0; h < T / 4; h++) {
            s_x[warp][g][q + 4 * h] = scale_of[code[h][0]];
            s_x[warp][g + 8][q + 4 * h] = scale_of[code[h][1]];
        }
        sc_a += GV_WARPS * T, sc_b += GV_WARPS * T;
        load_codes(j0 + GV_WARPS * T, i + 1 < mine); /* the next turn's */
        __syncwarp();
        float xl[T], xh[T];
#pragma unroll
        for (int h = 0; h < T / 4; h++) {
            const float4 lo = reinterpret_cast<const float4 *>(s_x[warp][g])[h];
            const float4 hi = reinterpret_cast<const float4 *>(s_x[warp][g + 8])[h];
            xl[4 * h] = lo.x, xl[4 * h + 1] = lo.y, xl[4 * h + 2] = lo.z, xl[4 * h + 3] = lo.w;
            xh[4 * h] = hi.x, xh[4 * h + 1] = hi.y, xh[4 * h + 2] = hi.z, xh[4 * h + 3] = hi.w;
        }
        const int soff = i % STAGES * SB;
        /* a whole turn without a test a block; only the last turn of a row may be partial */
        if (nu == T)
            turn_products<MT, ODD, XS, T>(acc, ring_g, ring_s, soff, ldr, ldx, xv, xl, xh, T,
                                          frag[warp]);
        else
            turn_products<MT, ODD, XS, T>(acc, ring_g, ring_s, soff, ldr, ldx, xv, xl, xh, nu,
                                          frag[warp]);
#pragma unroll
        for (int t = 0; t < MT; t++)
            xp[t] += 4 * GV_WARPS * T;
    }

    /* every copy has landed (the groups still open are empty); once every warp is past its
     * ring, the rings' memory holds the warps' accumulators */
    __pipeline_wait_prior(0);
    __syncthreads();
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            s_.part[warp][t][lane][e] = acc[t][e];
    __syncthreads();
    /* thread i of the first MT x 128 sums element i of the warps' accumulators and stores it:
     * lane l = i / 4's d[e = i % 4] is D[g + 8 (e / 2)][2q + e % 2], D's rows W's, its columns
     * x's */
    for (int i = threadIdx.x; i < MT * 128; i += GV_THREADS) {
        const int t = i / 128, l = (i / 4) % 32, e = i % 4;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < GV_WARPS; w++)
            v += s_.part[w][t][l][e];
        const int c = c0 + l / 4 + 8 * (e / 2), r = 8 * t + 2 * (l % 4) + e % 2;
        if (c < n && r < m)
            y[(size_t)r * n + c] = v;
    }
#endif
}

/* one launch of the kernel. Over 48 KB of dynamic shared memory a CTA must ask, once a process
 * (the call is on the host, between the launches a timing measures) */
template <int MT, bool ODD, bool XS, int T, int STAGES, int MINB>
static void launch_kernel(const uint16_t *x, const uint8_t *w, const uint8_t *ws, float *y, int m,
                          int k, int n)
{
    const int smem = (int)sizeof(gv_shared<MT, T, STAGES>);
    static bool asked = false;
    if (smem > 48 * 1024 && !asked) {
        CUDA_CHECK(cudaFuncSetAttribute(gemm_mxfp4_kernel<MT, ODD, XS, T, STAGES, MINB>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        asked = true;
    }
    gemm_mxfp4_kernel<MT, ODD, XS, T, STAGES, MINB>
        <<<cdiv(n, GV_ROWS), GV_THREADS, smem>>>(x, w, ws, y, m, k, n);
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
            launch_kernel<1, false, false, GV_TURN, GV_STAGES, 4>(x, d_w, d_ws, y, mr, k, n);
        else if (mr <= 8)
            launch_kernel<1, true, false, GV_TURN, GV_STAGES, 4>(x, d_w, d_ws, y, mr, k, n);
        else
            launch_kernel<2, true, false, GV_TURN, GV_STAGES, 2>(x, d_w, d_ws, y, mr, k, n);
    }
}
