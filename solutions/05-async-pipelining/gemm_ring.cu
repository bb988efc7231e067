/* gemm_ring.cu: step 3 of 4. An N-stage ring of cp.async copies, and the bigger tiles that a
 * ring's shared memory makes room for.
 *
 * Change from step 2: STAGES shared-memory stages instead of two, the copy of tile
 * t + STAGES - 1 issued while tile t is multiplied (up to STAGES - 1 tiles in flight, so a copy
 * has STAGES - 1 steps of math to arrive instead of one); and, because a ring deep enough to
 * hide the copies no longer has to live in 48 KB, a block tile of 128 x 256 with 64 of k a
 * step (step 2: 128 x 128 x 32), each warp owning 64 x 64 of C (step 2: 64 x 32).
 *
 * Why the tile, and not just the stages. The first version of this step kept step 2's tile and
 * only deepened the ring: on the H200 it measured 154.2 TFLOP/s with 2, 3 and 4 stages alike
 * (README.md, "What the measurements say"): the copies were already hidden, and what bounded it
 * was the math loop's feed. Per 16 of k a warp of step 2 loads 6 fragments (4 of A, 2 of B:
 * ldmatrix) for 8 mma_sync; with a 64 x 64 warp tile it loads 8 for 16, so each fragment read
 * from shared memory feeds twice the tensor-core work. A 128 x 256 block tile halves the bytes
 * of A and B that the block copies per FLOP, and 64 of k a step halves the barriers per FLOP.
 * The price is what the ring is about: 51 KB a stage, so 2, 3 and 4 stages take 102, 153 and
 * 204 KB, one block an SM, and 128 accumulator registers a thread (launch bounds say so).
 *
 * Bank conflicts: rows padded by 8 bf16 (16 bytes) as in step 2. A row of the A tile is then
 * 144 bytes and of the B tile 528 bytes, both an odd multiple of 16, so the eight 16-byte rows
 * of one ldmatrix phase fall in eight different groups of four banks. */
#include <cuda_pipeline.h>

#include "gemm_tile.cuh"

#define RING_BM 128                       /* rows of C a block */
#define RING_BN 256                       /* columns of C a block */
#define RING_WM 64                        /* rows of C a warp: 8 warps as 2 x 4 */
#define RING_WN 64                        /* columns of C a warp */
#define RING_FM (RING_WM / 16)            /* 4 accumulators down */
#define RING_FN (RING_WN / 16)            /* 4 across */
#define RING_LDB (RING_BN + PAD)          /* 264 bf16 = 528 bytes a row of the B tile */

static_assert((RING_BM / RING_WM) * (RING_BN / RING_WN) * 32 == THREADS, "8 warps tile the block");

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

/* Like step 1's load_tile_sync, but the 16-byte pieces go by cp.async (zero-filled past the
 * edge, the source clamped to g); odd cols fall back to one bf16 at a time through registers. */
template <int R, int C, int LDS>
__device__ __forceinline__ void load_tile_async(bf16 *s, const bf16 *__restrict__ g, int rows,
                                                int cols, int r0, int c0, bool vec)
{
    if (!vec) {
        load_tile_sync<R, C, LDS>(s, g, rows, cols, r0, c0, false);
        return;
    }
    static_assert(R * C / 8 % THREADS == 0, "every thread copies the same number of pieces");
#pragma unroll
    for (int i = 0; i < R * C / 8 / THREADS; i++) {
        int v = threadIdx.x + i * THREADS;
        int r = v / (C / 8), c = v % (C / 8) * 8;
        int gr = r0 + r, gc = c0 + c;
        bool inside = gr < rows && gc < cols;
        __pipeline_memcpy_async(s + r * LDS + c, inside ? g + (size_t)gr * cols + gc : g, 16,
                                inside ? 0 : 16);
    }
}

/* the stage's two copies: A's 128 x BK and B's BK x 256 at tile kt of k */
template <int BK>
__device__ __forceinline__ void load_stage(bf16 *st, const bf16 *__restrict__ a,
                                           const bf16 *__restrict__ b, int m, int k, int n,
                                           int row0, int col0, int kt, bool vec_a, bool vec_b)
{
    typedef ring_stage<BK> S;
    load_tile_async<RING_BM, BK, S::LDA>(st, a, m, k, row0, kt * BK, vec_a);
    load_tile_async<BK, RING_BN, RING_LDB>(st + S::A, b, k, n, kt * BK, col0, vec_b);
}

/* the dynamic shared memory of a launch (declared at file scope: one name for every
 * instantiation of the template below) */
extern __shared__ __align__(128) bf16 smem[];

template <int BK, int STAGES>
__global__ void __launch_bounds__(THREADS, 1)
gemm_ring_kernel(const bf16 *__restrict__ a, const bf16 *__restrict__ b, float *__restrict__ c,
                 int m, int k, int n, bool vec_a, bool vec_b)
{
#if GEMM_BF16_MMA
    /* stage s: A at smem + s * S::ELEMS, B right after it; then the scratch for the store of C */
    typedef ring_stage<BK> S;
    float *s_scratch = reinterpret_cast<float *>(smem + STAGES * S::ELEMS);

    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int warp_row = warp / (RING_BN / RING_WN), warp_col = warp % (RING_BN / RING_WN);
    int row0 = blockIdx.y * RING_BM, col0 = blockIdx.x * RING_BN;
    int tiles = cdiv(k, BK);

    frag_c acc[RING_FM][RING_FN];
#pragma unroll
    for (int i = 0; i < RING_FM; i++)
#pragma unroll
        for (int j = 0; j < RING_FN; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

    /* prologue: tiles 0 .. STAGES - 2 in flight, one commit group each (empty groups past the
     * last tile keep the count of groups, and so wait_prior's argument, the same) */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < tiles)
            load_stage<BK>(smem + s * S::ELEMS, a, b, m, k, n, row0, col0, s, vec_a, vec_b);
        __pipeline_commit();
    }

    for (int t = 0; t < tiles; t++) {
        /* of this thread's groups, all but the STAGES - 2 youngest are done: tile t's included */
        __pipeline_wait_prior(STAGES - 2);
        /* everyone's copies of tile t have landed, and everyone has finished tile t - 1, whose
         * stage the copy below refills */
        __syncthreads();
        int fill = t + STAGES - 1;
        if (fill < tiles)
            load_stage<BK>(smem + (fill % STAGES) * S::ELEMS, a, b, m, k, n, row0, col0, fill,
                           vec_a, vec_b);
        __pipeline_commit();

        const bf16 *s_a = smem + (t % STAGES) * S::ELEMS;
        const bf16 *s_b = s_a + S::A;
        /* unrolled by two, not four: four steps' fragments at once spill (255 registers); two
         * let one step's loads overlap the other's mma_sync with 0 bytes spilled */
#pragma unroll 2
        for (int kk = 0; kk < BK; kk += 16) {
            frag_a fa[RING_FM];
            frag_b fb[RING_FN];
#pragma unroll
            for (int i = 0; i < RING_FM; i++)
                wmma::load_matrix_sync(fa[i], s_a + (warp_row * RING_WM + i * 16) * S::LDA + kk,
                                       S::LDA);
#pragma unroll
            for (int j = 0; j < RING_FN; j++)
                wmma::load_matrix_sync(fb[j], s_b + kk * RING_LDB + warp_col * RING_WN + j * 16,
                                       RING_LDB);
#pragma unroll
            for (int i = 0; i < RING_FM; i++)
#pragma unroll
                for (int j = 0; j < RING_FN; j++)
                    wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
    }

    /* the store of C, as in step 1 (store_c_tile), for a 64 x 64 warp tile: each fragment
     * through the warp's 16 x 16 scratch, copied out with a bounds check */
    float *scratch = s_scratch + warp * 256;
    int wr0 = row0 + warp_row * RING_WM, wc0 = col0 + warp_col * RING_WN;
#pragma unroll
    for (int i = 0; i < RING_FM; i++)
#pragma unroll
        for (int j = 0; j < RING_FN; j++) {
            wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp(); /* every lane's part of the tile is in the scratch */
            for (int e = lane; e < 256; e += 32) {
                int row = wr0 + i * 16 + e / 16, col = wc0 + j * 16 + e % 16;
                if (row < m && col < n)
                    c[(size_t)row * n + col] = scratch[e];
            }
            __syncwarp(); /* read before the next fragment overwrites it */
        }
#else
    __trap(); /* sm_75: no bf16 tensor cores */
#endif
}

template <int BK, int STAGES>
static void launch_ring(const bf16 *a, const bf16 *b, float *c, int m, int k, int n,
                        size_t smem_bytes)
{
    /* over 48 KB of dynamic shared memory a block must be allowed explicitly */
    CUDA_CHECK(cudaFuncSetAttribute(gemm_ring_kernel<BK, STAGES>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes));
    dim3 grid(cdiv(n, RING_BN), cdiv(m, RING_BM));
    gemm_ring_kernel<BK, STAGES><<<grid, THREADS, smem_bytes>>>(a, b, c, m, k, n,
                                                                rows_are_16b_aligned(a, k),
                                                                rows_are_16b_aligned(b, n));
    CUDA_CHECK(cudaGetLastError());
}

/* STAGES stages of 64 of k where the device gives a block room for them (sm_90: 227 KB, sm_80:
 * 163 KB), else of 32 of k (sm_86 and sm_89 give 99 KB: 3 stages of 64 would need 161 KB, of 32
 * they take 88 KB). The launcher asks the device rather than assuming one. */
template <int STAGES>
static void gemm_ring_n(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    const bf16 *a = reinterpret_cast<const bf16 *>(d_a), *b = reinterpret_cast<const bf16 *>(d_b);
    const size_t scratch = SCRATCH_FLOATS * sizeof(float);
    const size_t need64 = STAGES * ring_stage<64>::BYTES + scratch;
    const size_t need32 = STAGES * ring_stage<32>::BYTES + scratch;
    int dev = 0, optin = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (need64 <= (size_t)optin) {
        launch_ring<64, STAGES>(a, b, d_c, m, k, n, need64);
    } else if (need32 <= (size_t)optin) {
        launch_ring<32, STAGES>(a, b, d_c, m, k, n, need32);
    } else {
        fprintf(stderr, "gemm_ring: %d stages need %zu bytes of shared memory a block; this "
                        "device allows %d\n", STAGES, need32, optin);
        CUDA_CHECK(cudaErrorInvalidConfiguration);
    }
}

extern "C" {
/* step 3 proper: three stages */
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
