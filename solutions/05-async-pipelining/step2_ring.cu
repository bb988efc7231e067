/* step2_ring.cu: step 2 of 5, the solution. An N-stage ring of cp.async copies, and the
 * bigger tiles that a ring's shared memory makes room for.
 *
 * Change from step 1: STAGES shared-memory stages instead of two, the copy of tile
 * t + STAGES - 1 issued while tile t is multiplied (up to STAGES - 1 tiles in flight, so a copy
 * has STAGES - 1 steps of math to arrive instead of one); and, because a ring deep enough to
 * hide the copies no longer has to live in 48 KB, a block tile of 128 x 256 with 64 of k a
 * step (step 1: 128 x 128 x 32), each warp owning 64 x 64 of C (step 1: 64 x 32).
 *
 * Why the tile, and not just the stages. The first version of this step kept step 1's tile and
 * only deepened the ring, and on the H200 it ran no faster with 2, 3 or 4 stages (README.md,
 * "What the measurements show"): the copies were already hidden, and what bounded it was the
 * math loop's feed. Per 16 of k a warp of step 1 loads 6 fragments (4 of A, 2 of B: ldmatrix)
 * for 8 mma_sync; with a 64 x 64 warp tile it loads 8 for 16, so each fragment read from
 * shared memory feeds twice the tensor-core work. A 128 x 256 block tile halves the bytes of A
 * and B that the block copies per FLOP, and 64 of k a step halves the barriers per FLOP.
 * The price is what the ring is about: 51 KB a stage, so 2, 3 and 4 stages take 102, 153 and
 * 204 KB, one block an SM, and 128 accumulator registers a thread (launch bounds say so).
 *
 * And the feed. With one block of 8 warps an SM, two warps share a scheduler, and any cycle in
 * which both wait (for an ldmatrix, at a barrier, or issuing copies) the tensor cores idle. So
 * the fragments are double-buffered (the next step's ldmatrix goes out before this step's
 * products), the copier steps precomputed offsets and skips the checks inside the matrices, and
 * a tile's refill goes out in two halves between products (README.md, "What the measurements
 * show", has what each did, with the Nsight Compute profile before and after).
 * Expect: well above step 1 (the grader asks 2.0x at 4096^3), because each fragment loaded
 * from shared memory feeds twice the products and the copies have STAGES - 1 tiles of math to land in; still below cuBLAS, whose
 * wgmma reads its operands from shared memory without the warps loading fragments at all (step 4).
 *
 * Bank conflicts: rows padded by 8 bf16 (16 bytes) as in step 1. A row of the A tile is then
 * 144 bytes and of the B tile 528 bytes, both an odd multiple of 16, so the eight 16-byte rows
 * of one ldmatrix phase fall in eight different groups of four banks.
 *
 * Rows that do not start on 16 bytes (k or n not a multiple of 8): the launcher first copies
 * such a matrix into rows padded with zeros to a multiple of 8 (gemm_pad_rows, given), and the
 * kernel reads the copy, its rows lda or ldb apart, with the same 16-byte copies. (The first
 * version copied such tiles one bf16 at a time through registers, inside the loop, as step 1
 * does: synchronous copies in a kernel built to hide them, and at 1000x999x1001 on the H200
 * the slowest rung of the chapter, step 1 and the baseline included.) */
#include <stdint.h>

#include <cuda_pipeline.h>

#include "tile.cuh"
#include "mma_sync.cuh" /* ldsm_frag, ldsm_x4 and mma_16816: ldmatrix and mma.sync */
#include "pad_rows.h"   /* gemm_pad_rows: the padded copies of A and B */

#define RING_BM 128                       /* rows of C a block */
#define RING_BN 256                       /* columns of C a block */
#define RING_WM 64                        /* rows of C a warp: 8 warps as 2 x 4 */
#define RING_WN 64                        /* columns of C a warp */
#define RING_FM (RING_WM / 16)            /* 4 accumulators down */
#define RING_FN (RING_WN / 16)            /* 4 across */
#define RING_LDB (RING_BN + PAD)          /* 264 bf16 = 528 bytes a row of the B tile */

static_assert((RING_BM / RING_WM) * (RING_BN / RING_WN) * 32 == THREADS, "8 warps tile the block");

/* The helpers below live in an anonymous namespace: internal linkage, like the kernels, so that
 * the reference the grader links beside a learner's file keeps its own copies. */
namespace {

/* The shape of a stage for BK of k a step (64; 32 where shared memory is short, see
 * gemm_ring_n): A's BM x BK and B's BK x BN, rows padded by PAD. */
template <int BK>
struct ring_stage {
    static constexpr int LDA = BK + PAD;                /* 72 bf16 = 144 bytes (BK = 64) */
    static constexpr int A = RING_BM * LDA;             /* bf16 of A */
    static constexpr int B = BK * RING_LDB;             /* bf16 of B */
    static constexpr int ELEMS = A + B;
    static constexpr size_t BYTES = (size_t)ELEMS * 2;  /* 52224 (BK = 64), 27136 (BK = 32) */
    static_assert(A * 2 % 128 == 0 && B * 2 % 128 == 0,
                  "stages start 128-byte aligned (wmma wants 32, cp.async 16)");
};

/* One thread's share of a stage's copies, issued tile after tile. The pieces a thread copies sit
 * at the same rows and columns of every tile, so the copier works out their offsets and bounds
 * once and then only steps along k: A's pieces move BK elements a tile, B's BK rows. (The
 * first version recomputed each piece's row, column, bounds and 64-bit offset, a 64-bit
 * multiply among them, on every tile: in the SASS some 18 instructions a copy, between the
 * products, with two warps a scheduler to cover them.)
 *
 * A tile that lies wholly inside the matrices (every tile of an interior block but the last
 * along a ragged k) takes the short path: an add and a cp.async a piece. The others check each
 * piece and zero-fill what lies past the edge, its source clamped to the matrix's base so that
 * no address outside the matrix is formed. Rows are lda and ldb elements apart, multiples of 8
 * (the launcher's padded copies where k or n is not): a piece that starts before column k (or
 * n) ends inside its row, and what it holds past k is the copy's zeros.
 *
 * issue(st, part, parts) copies the pieces i with i % parts == part, so that a tile's copies
 * can go out in parts between the products; the last part moves the copier on to the next
 * tile. (part and parts are constants once the kernel's loops are unrolled, and the tests on
 * them vanish.) */
template <int BK>
struct ring_copier {
    typedef ring_stage<BK> S;
    static constexpr int A_PIECES = RING_BM * BK / 8 / THREADS;   /* 4 a thread (BK = 64) */
    static constexpr int B_PIECES = BK * RING_BN / 8 / THREADS;   /* 8 */
    static constexpr int A_STEP = THREADS / (BK / 8);             /* rows between them: 32 */
    static constexpr int B_STEP = THREADS / (RING_BN / 8);        /* 8 */
    static_assert(RING_BM * BK / 8 % THREADS == 0 && BK * RING_BN / 8 % THREADS == 0,
                  "every thread copies the same number of pieces");

    const bf16 *a, *b;           /* the matrices */
    size_t a_next, b_next;       /* this thread's first piece of A and of B in the next tile */
    size_t a_stride, b_stride;   /* from one of its pieces to the next: A_STEP rows, B_STEP rows */
    size_t b_tile;               /* BK rows of B: one tile along k */
    int k0, k, m, n, row0, col0;
    int a_row, a_col, b_row, b_col; /* the first piece in the tile; the others a stride apart */
    unsigned a_rows_in;          /* bit i: piece i of A lies in a row < m */
    bool b_col_in;               /* this thread's column of B is < n */
    bool interior;               /* the block's rows and columns all lie inside C */

    __device__ __forceinline__ ring_copier(const bf16 *a_, int lda, const bf16 *b_, int ldb,
                                           int m_, int k_, int n_, int row0_, int col0_)
        : a(a_), b(b_), k0(0), k(k_), m(m_), n(n_), row0(row0_), col0(col0_)
    {
        a_row = threadIdx.x / (BK / 8);
        a_col = threadIdx.x % (BK / 8) * 8;
        b_row = threadIdx.x / (RING_BN / 8);
        b_col = threadIdx.x % (RING_BN / 8) * 8;
        a_rows_in = 0;
#pragma unroll
        for (int i = 0; i < A_PIECES; i++)
            a_rows_in |= (unsigned)(row0 + a_row + i * A_STEP < m) << i;
        b_col_in = col0 + b_col < n;
        interior = row0 + RING_BM <= m && col0 + RING_BN <= n;
        /* offsets, not pointers: a pointer is formed only for a piece inside the matrix */
        a_next = (size_t)(row0 + a_row) * lda + a_col;
        b_next = (size_t)b_row * ldb + col0 + b_col;
        a_stride = (size_t)A_STEP * lda;
        b_stride = (size_t)B_STEP * ldb;
        b_tile = (size_t)BK * ldb;
    }

    /* start part `part` of `parts` of the next tile's copies into stage st */
    __device__ __forceinline__ void issue(bf16 *st, int part, int parts)
    {
        bf16 *s_a = st + a_row * S::LDA + a_col;
        bf16 *s_b = st + S::A + b_row * RING_LDB + b_col;
        const bool whole = interior && k0 + BK <= k;
        if (whole) {
#pragma unroll
            for (int i = 0; i < A_PIECES; i++)
                if (i % parts == part)
                    __pipeline_memcpy_async(s_a + i * A_STEP * S::LDA, a + a_next + i * a_stride,
                                            16);
#pragma unroll
            for (int i = 0; i < B_PIECES; i++)
                if (i % parts == part)
                    __pipeline_memcpy_async(s_b + i * B_STEP * RING_LDB, b + b_next + i * b_stride,
                                            16);
        } else {
            const bool k_in = k0 + a_col < k; /* all 8 inside the row; past k, the pad's zeros */
#pragma unroll
            for (int i = 0; i < A_PIECES; i++) {
                if (i % parts != part)
                    continue;
                bool in = k_in && (a_rows_in >> i & 1);
                __pipeline_memcpy_async(s_a + i * A_STEP * S::LDA,
                                        in ? a + a_next + i * a_stride : a, 16, in ? 0 : 16);
            }
#pragma unroll
            for (int i = 0; i < B_PIECES; i++) {
                if (i % parts != part)
                    continue;
                bool in = b_col_in && k0 + b_row + i * B_STEP < k;
                __pipeline_memcpy_async(s_b + i * B_STEP * RING_LDB,
                                        in ? b + b_next + i * b_stride : b, 16, in ? 0 : 16);
            }
        }
        if (part == parts - 1) { /* on to the next tile */
            k0 += BK;
            a_next += BK;
            b_next += b_tile;
        }
    }
};

/* the four fragments of A and four of B that one 16-wide step of k needs, from a stage */
template <int BK>
__device__ __forceinline__ void load_fragments(ldsm_frag (&fa)[RING_FM], ldsm_frag (&fb)[RING_FN],
                                               const bf16 *st, int kk, int a_off, int b_off)
{
    typedef ring_stage<BK> S;
#pragma unroll
    for (int i = 0; i < RING_FM; i++)
        ldsm_x4<false>(fa[i], st, a_off + i * 16 * S::LDA + kk);
#pragma unroll
    for (int jj = 0; jj < RING_FN; jj++) /* 16 columns, two blocks of 8, a load */
        ldsm_x4<true>(fb[jj], st + S::A, b_off + kk * RING_LDB + jj * 16);
}

} /* namespace */

/* the dynamic shared memory of a launch (declared at file scope: one name for every
 * instantiation of the template below) */
extern __shared__ __align__(128) bf16 smem[];

/* C (m x n, rows n apart) = A (m x k, rows lda apart) B (k x n, rows ldb apart); lda and ldb
 * multiples of 8 and the bases 16-byte aligned */
template <int BK, int STAGES>
static __global__ void __launch_bounds__(THREADS, 1)
gemm_ring_kernel(const bf16 *__restrict__ a, int lda, const bf16 *__restrict__ b, int ldb,
                 float *__restrict__ c, int m, int k, int n)
{
#if GEMM_BF16_MMA
    /* stage s: A at smem + s * S::ELEMS, B right after it */
    typedef ring_stage<BK> S;
    constexpr int KS = BK / 16;                 /* steps of 16 a tile: 4 (BK = 64) */
    constexpr int PARTS = KS / 2;               /* a refill goes out over the first 2 of them */
    static_assert(KS % 2 == 0, "the fragments' two buffers alternate across tiles");

    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int warp_row = warp / (RING_BN / RING_WN), warp_col = warp % (RING_BN / RING_WN);
    int row0 = blockIdx.y * RING_BM, col0 = blockIdx.x * RING_BN;
    int tiles = cdiv(k, BK);

    /* 4 x 8 products of 16 x 8 make the warp's 64 x 64: 128 accumulators a lane */
    float acc[RING_FM][2 * RING_FN][4];
#pragma unroll
    for (int i = 0; i < RING_FM; i++)
#pragma unroll
        for (int j = 0; j < 2 * RING_FN; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0.0f;

    /* this lane's ldmatrix rows, in elements from the start of a stage's A and B tiles (the
     * layouts in the comment above the helpers) */
    const int a_off = (warp_row * RING_WM + lane % 16) * S::LDA + (lane / 16) * 8;
    const int b_off = (lane % 16) * RING_LDB + warp_col * RING_WN + (lane / 16) * 8;

    ring_copier<BK> copier(a, lda, b, ldb, m, k, n, row0, col0);

    /* prologue: tiles 0 .. STAGES - 2 in flight, one commit group each (empty groups past the
     * last tile keep the count of groups, and so wait_prior's argument, the same) */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < tiles)
            copier.issue(smem + s * S::ELEMS, 0, 1);
        __pipeline_commit();
    }

    /* Two sets of fragments: while the tensor cores multiply one step's, the next step's are
     * on their way from shared memory, so no product waits for an ldmatrix. The last step of
     * a tile is where the stage changes: there the warp waits for tile t + 1 and for the
     * other warps (which have all loaded their last fragments of tile t, so its stage may be
     * refilled), and loads tile t + 1's first fragments before tile t's last products. */
    ldsm_frag fa[2][RING_FM], fb[2][RING_FN];
    __pipeline_wait_prior(STAGES - 2);   /* tile 0 has landed, for every thread */
    __syncthreads();
    load_fragments<BK>(fa[0], fb[0], smem, 0, a_off, b_off);

    for (int t = 0; t < tiles; t++) {
        const bf16 *st = smem + (t % STAGES) * S::ELEMS;
        /* the refill: tile t + STAGES - 1 into the stage tile t - 1 used, free since the
         * barrier in tile t - 1's last step */
        const int fill = t + STAGES - 1;
        bf16 *st_fill = smem + (fill % STAGES) * S::ELEMS;
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            const int cur = ks % 2, nxt = (ks + 1) % 2;
            if (ks < KS - 1) {
                load_fragments<BK>(fa[nxt], fb[nxt], st, (ks + 1) * 16, a_off, b_off);
            } else {
                /* of this thread's groups, all but the STAGES - 2 youngest are done: tile
                 * t + 1's included */
                __pipeline_wait_prior(STAGES - 2);
                __syncthreads();
                if (t + 1 < tiles)
                    load_fragments<BK>(fa[nxt], fb[nxt], smem + ((t + 1) % STAGES) * S::ELEMS, 0,
                                       a_off, b_off);
            }
            /* the refill's copies go out in PARTS parts, one before each of the first steps'
             * products, so the warps never stop multiplying for long to issue them */
            if (ks < PARTS) {
                if (fill < tiles)
                    copier.issue(st_fill, ks, PARTS);
                if (ks == PARTS - 1)
                    __pipeline_commit();
            }
#pragma unroll
            for (int i = 0; i < RING_FM; i++)
#pragma unroll
                for (int j = 0; j < 2 * RING_FN; j++)
                    mma_16816(acc[i][j], fa[cur][i], fb[cur][j / 2], j % 2);
        }
    }

    /* the store of C straight from the accumulators: lane (g, q) holds rows g and g + 8,
     * columns 2q and 2q + 1 of each 16 x 8 product; a warp's store writes 8 rows of 32
     * contiguous bytes. Pairs go as one 8-byte store where n is even (then every pair is
     * 8-byte aligned), else one float at a time; each element is bounds-checked. */
    const int g = lane / 4, q = lane % 4;
    const bool pairs = n % 2 == 0 && (reinterpret_cast<uintptr_t>(c) & 7) == 0;
#pragma unroll
    for (int i = 0; i < RING_FM; i++)
#pragma unroll
        for (int j = 0; j < 2 * RING_FN; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int row = row0 + warp_row * RING_WM + i * 16 + g + 8 * h;
                int col = col0 + warp_col * RING_WN + j * 8 + 2 * q;
                if (row >= m)
                    continue;
                float *dst = c + (size_t)row * n + col;
                if (pairs && col + 1 < n)
                    *reinterpret_cast<float2 *>(dst) = make_float2(acc[i][j][2 * h],
                                                                   acc[i][j][2 * h + 1]);
                else {
                    if (col < n)
                        dst[0] = acc[i][j][2 * h];
                    if (col + 1 < n)
                        dst[1] = acc[i][j][2 * h + 1];
                }
            }
#else
    __trap(); /* sm_75: no bf16 tensor cores */
#endif
}

/* A and B as gemm_pad_rows hands them over: 16-byte aligned rows, lda and ldb apart */
template <int BK, int STAGES>
static void launch_ring(const struct gemm_padded *p, float *c, int m, int k, int n,
                        size_t smem_bytes)
{
    /* over 48 KB of dynamic shared memory a block must be allowed explicitly */
    CUDA_CHECK(cudaFuncSetAttribute(gemm_ring_kernel<BK, STAGES>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes));
    dim3 grid(cdiv(n, RING_BN), cdiv(m, RING_BM));
    gemm_ring_kernel<BK, STAGES><<<grid, THREADS, smem_bytes>>>(
        reinterpret_cast<const bf16 *>(p->a), p->lda, reinterpret_cast<const bf16 *>(p->b),
        p->ldb, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

/* STAGES stages of 64 of k where the device gives a block room for them (sm_90: 227 KB, sm_80:
 * 163 KB), else of 32 of k (sm_86 and sm_89 give 99 KB: 3 stages of 64 would need 161 KB, of 32
 * they take 88 KB). The launcher asks the device rather than assuming one. Rows that are not
 * 16-byte aligned are copied first into padded ones (gemm_pad_rows), whose workspace goes back
 * in stream order right after the launch. */
template <int STAGES>
static void gemm_ring_n(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    const size_t need64 = STAGES * ring_stage<64>::BYTES;
    const size_t need32 = STAGES * ring_stage<32>::BYTES;
    int dev = 0, optin = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (need32 > (size_t)optin) {
        fprintf(stderr, "gemm_ring: %d stages need %zu bytes of shared memory a block; this "
                        "device allows %d\n", STAGES, need32, optin);
        CUDA_CHECK(cudaErrorInvalidConfiguration);
    }
    struct gemm_padded p;
    gemm_pad_rows(d_a, d_b, m, k, n, &p);
    if (need64 <= (size_t)optin)
        launch_ring<64, STAGES>(&p, d_c, m, k, n, need64);
    else
        launch_ring<32, STAGES>(&p, d_c, m, k, n, need32);
    gemm_pad_rows_free(&p);
}

extern "C" {
/* step 2 proper: three stages */
void gemm_ring(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    gemm_ring_n<3>(d_a, d_b, d_c, m, k, n);
}
/* the sweep's other points */
void gemm_ring_2(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    gemm_ring_n<2>(d_a, d_b, d_c, m, k, n);
}
void gemm_ring_4(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    gemm_ring_n<4>(d_a, d_b, d_c, m, k, n);
}
}

/* ---- the ceiling of this path ------------------------------------------------------------
 * How fast can mma.sync go on this GPU with no memory traffic at all? Every warp multiplies
 * register fragments into 8 independent accumulators, iters times: nothing to load, nothing to
 * wait for but the tensor cores. The bench (grade --bench) times it as the row "mma_sync_peak",
 * the roof of the baseline and of steps 1 to 3, against which their share of cuBLAS (which
 * uses wgmma) is read. */
static __global__ void __launch_bounds__(THREADS)
mma_sync_peak_kernel(float *sink, int iters)
{
#if GEMM_BF16_MMA && !defined(HARNESS_EMU)
    ldsm_frag a, b; /* bf16 near 0.008, different in every lane */
#pragma unroll
    for (int i = 0; i < 4; i++) {
        a.r[i] = 0x3c003c00u ^ (threadIdx.x + i);
        b.r[i] = 0x3c003c00u ^ (threadIdx.x * 3 + i);
    }
    float acc[8][4];
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            acc[j][e] = 0.0f;
    for (int it = 0; it < iters; it++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            mma_16816(acc[j], a, b, j % 2);
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; j++)
        sum += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
    if (sum == 1234.5f) /* never, but the compiler cannot know: the products must be made */
        sink[threadIdx.x] = sum;
#else
    __trap(); /* sm_75 has no bf16 mma; the CPU backend times nothing */
#endif
}

extern "C" {
/* blocks of 8 warps, each warp iters x 8 products of 16 x 8 x 16: 2 * 16 * 8 * 16 * 8 * iters
 * * 8 * blocks FLOP. d_sink: THREADS floats, written only in the impossible case. */
void gemm_mma_sync_peak(float *d_sink, int blocks, int iters)
{
    mma_sync_peak_kernel<<<blocks, THREADS>>>(d_sink, iters);
    CUDA_CHECK(cudaGetLastError());
}
}
