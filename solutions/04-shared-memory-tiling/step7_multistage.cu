/* step7_multistage.cu: chapter 04, step 7 of 7, reference solution: a multistage cp.async
 * ring and fragments double-buffered in registers, built for the FFMA pipe's issue slots.
 *
 * Change from step 6: the tiles travel from global to shared memory with cp.async (LDGSTS), no
 * register staging, into a ring of STAGES stages, so the loads of STAGES - 1 tiles are in flight
 * while one is computed; one barrier a tile. A's tile is still stored transposed (s_a[k][m]), now
 * by 4-byte copies, each lane one element, since a 16-byte copy cannot transpose. Inside a tile,
 * the fragments of step k + 1 are read from shared memory (LDS.128) into a second set of
 * registers while the FFMAs of step k run, so no FFMA waits for a load. The blocks walk the
 * tiles of C in groups of GROUP rows of tiles, so that the tiles resident at once share their
 * rows of A and columns of B in L2. Split-K (as in step 6) for shapes whose tiles leave SMs idle.
 *
 * The issue-slot arithmetic (README.md, "The last rung's budget"): an SM sub-partition issues
 * one warp instruction a clock, and its FP32 pipe takes one warp FFMA a clock, so every
 * instruction that is not an FFMA costs one FFMA. A 64x64 warp tile gives each thread 16x8
 * results: per step of k, 4 LDS.128 of A and 2 of B for 128 FFMAs (21.3 a shared load; 8x8
 * results make 16). The large tile, 128x256x16 (8 such warps, 3 stages, one block an SM), was
 * the fastest of the sweep's first visit at 4096^3, 8192^3 and 2048^3 (a sweep of tile shapes,
 * depths, stages, block orders and splits, each timed against cuBLAS in one process).
 * Expect: ahead of step 6 by the per-tile instructions and waits it no longer pays; where C has
 * fewer 128x128 tiles than SMs, the 128x128x8 tile split 2, 4 or 8 ways along k. */
#include <cuda_pipeline.h>
#include <stdint.h>

#include "cuda_check.h"
#include "tiled.h"

/* The tile parameters and what follows from them. The lanes of a warp form LM rows x LN columns;
 * each lane owns a 4x4 fragment of every warp sub-tile (WSUBM x WSUBN, all 32 lanes once), so a
 * thread owns TM x TN results: TM = 4 WM / WSUBM rows, TN = 4 WN / WSUBN columns. */
template <int BM, int BN, int BK, int WM, int WN, int LN, int STAGES, int AK>
struct ms {
    static constexpr int AK_ = AK;
    static constexpr int WARPS = (BM / WM) * (BN / WN);
    static constexpr int THREADS = WARPS * 32;
    static constexpr int LM = 32 / LN;
    static constexpr int WSUBM = LM * 4, WSUBN = LN * 4;
    static constexpr int WMITER = WM / WSUBM, WNITER = WN / WSUBN;
    static constexpr int TM = WMITER * 4, TN = WNITER * 4;
    /* s_a[BK][AST]: +4 floats a row, so that the 4-byte copies of a warp (BK consecutive k of
     * 32 / BK rows) land in distinct banks (row kk starts 4 kk banks on), and a row stays
     * 16-byte aligned for the LDS.128 reads */
    static constexpr int AST = BM + 4;
    static constexpr int A_FLOATS = BK * AST;
    static constexpr int B_FLOATS = BK * BN;          /* s_b[BK][BN], as B lies in memory */
    static constexpr int STAGE = A_FLOATS + B_FLOATS;
    static constexpr int SMEM = STAGES * STAGE * (int)sizeof(float);
    /* the copies of a tile: A in A_PASSES passes of A_ROWS rows (AK floats of k a thread), B in
     * B_COPIES4 passes of B_ROWS rows (a float4 a thread), or B_COPIES1 floats a thread */
    static constexpr int A_ROWS = THREADS / (BK / AK), A_PASSES = BM / A_ROWS;
    static constexpr int B_ROWS = THREADS / (BN / 4), B_COPIES4 = BK / B_ROWS;
    static constexpr int B_COPIES1 = BK * BN / THREADS;
    static_assert(32 % LN == 0, "lanes must tile a warp");
    static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
    static_assert(WM % WSUBM == 0 && WN % WSUBN == 0, "sub-tiles must tile the warp tile");
    static_assert(BK % 2 == 0, "fragments alternate between two register sets over k");
    static_assert(STAGES >= 2, "a ring of at least two stages");
    static_assert(BK % AK == 0 && THREADS % (BK / AK) == 0 && A_PASSES >= 1 &&
                  A_PASSES * A_ROWS == BM, "A's tile, whole rows a pass");
    static_assert(BN % 4 == 0 && THREADS % (BN / 4) == 0 && B_COPIES4 >= 1 &&
                  B_COPIES4 * B_ROWS == BK, "B's tile, whole float4 rows a pass");
    static_assert(B_COPIES1 * THREADS == BK * BN, "B's tile, whole floats a thread");
    static_assert((A_FLOATS % 4) == 0 && (STAGE % 4) == 0, "stages 16-byte aligned");
};

extern __shared__ __align__(16) float s_ring[];

/* Where a thread's copies of every tile come from, computed once: tile t's are these plus
 * t BK elements of k (A) or rows (B). A: thread tid copies the 4 consecutive k at (tid % (BK/4))
 * 4 of rows tid / (BK/4) + i A_ROWS, each float its own 4-byte copy (a 16-byte copy cannot
 * transpose), at immediate offsets 0, 4, 8, 12 bytes from one address. B (VEC): one float4 a
 * copy, column (tid % (BN/4)) 4 of rows tid / (BN/4) + i B_ROWS. */
template <class P, int BM, int BN, int BK>
struct ms_src {
    const float *a, *b;   /* this thread's first element of A and B in tile 0 */
    int kq, ra, cb, rb;   /* its k, row of A, column and row of B within a tile */
    __device__ __forceinline__ ms_src(const float *a_, const float *b_, int k, int n, int row0,
                                      int col0, int kbeg)
    {
        const int tid = threadIdx.x;
        kq = (tid % (BK / P::AK_)) * P::AK_;
        ra = tid / (BK / P::AK_);
        cb = (tid % (BN / 4)) * 4;
        rb = tid / (BN / 4);
        a = a_ + (size_t)(row0 + ra) * k + kbeg + kq;
        b = b_ + (size_t)(kbeg + rb) * n + col0 + cb;
    }
};

/* Tile t of this block's k (its first k is kbeg + t BK) into stage s_st of the ring, as
 * cp.async copies in the thread's open group. FULL: the whole tile lies inside A and B (the
 * block's rows and columns, and the tile's k), so no copy needs a check; else each element
 * outside A or B is zero-filled (the copy's zfill: nothing is read). VEC: n % 4 == 0 and B 16-byte
 * aligned, so a float4 of a row of B lies all inside or all outside; else B a float at a time. */
template <class P, int BM, int BN, int BK, bool VEC>
static __device__ __forceinline__ void ms_load_tile(float *s_st, const ms_src<P, BM, BN, BK> &src,
                                                    const float *__restrict__ a,
                                                    const float *__restrict__ b, int m, int k,
                                                    int n, int row0, int col0, int kbeg, int t,
                                                    bool full)
{
    float *s_a = s_st, *s_b = s_st + P::A_FLOATS;
    const int kr = t * BK, k0 = kbeg + kr; /* the tile's first k: from kbeg, and in k */
    if (full) {
#pragma unroll
        for (int i = 0; i < P::A_PASSES; i++) {
            const float *p = src.a + (size_t)i * P::A_ROWS * k + kr;
            float *d = &s_a[src.kq * P::AST + src.ra + i * P::A_ROWS];
#pragma unroll
            for (int j = 0; j < P::AK_; j++)
                __pipeline_memcpy_async(d + j * P::AST, p + j, 4);
        }
        if constexpr (VEC) {
#pragma unroll
            for (int i = 0; i < P::B_COPIES4; i++)
                __pipeline_memcpy_async(&s_b[(src.rb + i * P::B_ROWS) * BN + src.cb],
                                        src.b + ((size_t)kr + i * P::B_ROWS) * n, 16);
        }
    } else {
        const int gk = k0 + src.kq;
#pragma unroll
        for (int i = 0; i < P::A_PASSES; i++) {
            const float *p = src.a + (size_t)i * P::A_ROWS * k + kr;
            float *d = &s_a[src.kq * P::AST + src.ra + i * P::A_ROWS];
            const bool row_in = row0 + src.ra + i * P::A_ROWS < m;
#pragma unroll
            for (int j = 0; j < P::AK_; j++) {
                const bool inside = row_in && gk + j < k;
                __pipeline_memcpy_async(d + j * P::AST, inside ? p + j : a, 4, inside ? 0 : 4);
            }
        }
        if constexpr (VEC) {
#pragma unroll
            for (int i = 0; i < P::B_COPIES4; i++) {
                const int r = src.rb + i * P::B_ROWS;
                const bool inside = k0 + r < k && col0 + src.cb < n;
                __pipeline_memcpy_async(&s_b[r * BN + src.cb],
                                        inside ? src.b + ((size_t)kr + i * P::B_ROWS) * n : b, 16,
                                        inside ? 0 : 16);
            }
        }
    }
    if constexpr (!VEC) {
        /* B a float at a time (n % 4 != 0 or B unaligned): element f of the tile, row f / BN */
#pragma unroll
        for (int i = 0; i < P::B_COPIES1; i++) {
            const int f = threadIdx.x + i * P::THREADS, r = f / BN, c = f % BN;
            const float *p = b + ((size_t)k0 + r) * n + col0 + c;
            if (full) {
                __pipeline_memcpy_async(&s_b[r * BN + c], p, 4);
            } else {
                const bool inside = k0 + r < k && col0 + c < n;
                __pipeline_memcpy_async(&s_b[r * BN + c], inside ? p : b, 4, inside ? 0 : 4);
            }
        }
    }
}

/* One step kk of a stage into one set of fragment registers: WMITER float4s of A (the lane's
 * 4 rows of each sub-tile, contiguous in the transposed tile) and WNITER of B. A warp's LDS.128
 * reads LM (or LN) distinct float4s, contiguous: one wavefront, the rest broadcast. */
template <class P, int BN>
static __device__ __forceinline__ void ms_load_frags(const float *s_st, int kk, int a_off,
                                                     int b_off, float (&fa)[P::TM],
                                                     float (&fb)[P::TN])
{
    const float *s_a = s_st + kk * P::AST + a_off;
    const float *s_b = s_st + P::A_FLOATS + kk * BN + b_off;
#pragma unroll
    for (int wi = 0; wi < P::WMITER; wi++) {
        const float4 v = *reinterpret_cast<const float4 *>(s_a + wi * P::WSUBM);
        fa[wi * 4 + 0] = v.x; fa[wi * 4 + 1] = v.y; fa[wi * 4 + 2] = v.z; fa[wi * 4 + 3] = v.w;
    }
#pragma unroll
    for (int wj = 0; wj < P::WNITER; wj++) {
        const float4 v = *reinterpret_cast<const float4 *>(s_b + wj * P::WSUBN);
        fb[wj * 4 + 0] = v.x; fb[wj * 4 + 1] = v.y; fb[wj * 4 + 2] = v.z; fb[wj * 4 + 3] = v.w;
    }
}

/* p[0..3] += v where other blocks add to the same elements (split-K): one reduction in L2 a
 * float4 on sm_90 (REDG.E.ADD.F32x4), four scalar ones elsewhere and on the CPU backend. */
static __device__ __forceinline__ void ms_red4(float *p, float4 v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float4 *>(p), v);
#else
    atomicAdd(p + 0, v.x);
    atomicAdd(p + 1, v.y);
    atomicAdd(p + 2, v.z);
    atomicAdd(p + 3, v.w);
#endif
}

/* The grid is one-dimensional over the tiles of C (times gridDim.z slices of k for split-K).
 * GROUP: consecutive blocks walk GROUP rows of tiles column by column, so the blocks resident at
 * once read GROUP tile-rows of A and a few tile-columns of B, which stay in L2; GROUP = 1 is the
 * plain row-by-row raster. MINB: blocks an SM that the register allocation must allow. */
template <int BM, int BN, int BK, int WM, int WN, int LN, int STAGES, int MINB, int GROUP, int AK,
          bool VEC, bool SPLITK>
static __global__ void __launch_bounds__(ms<BM, BN, BK, WM, WN, LN, STAGES, AK>::THREADS, MINB)
matmul_multistage_kernel(const float *__restrict__ a, const float *__restrict__ b,
                         float *__restrict__ c, int m, int k, int n)
{
    using P = ms<BM, BN, BK, WM, WN, LN, STAGES, AK>;
    const int tiles_m = cdiv(m, BM), tiles_n = cdiv(n, BN);
    const int bid = blockIdx.x, per_group = GROUP * tiles_n;
    const int first_m = (bid / per_group) * GROUP;
    const int rows_here = tiles_m - first_m < GROUP ? tiles_m - first_m : GROUP;
    const int tile_m = first_m + (bid % per_group) % rows_here;
    const int tile_n = (bid % per_group) / rows_here;
    const int row0 = tile_m * BM, col0 = tile_n * BN;

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int wm0 = (warp / (BN / WN)) * WM, wn0 = (warp % (BN / WN)) * WN;
    const int a_off = wm0 + (lane / LN) * 4, b_off = wn0 + (lane % LN) * 4;

    /* split-K: this block's tiles of k, [t0, t1) of cdiv(k, BK) (the partial one last) */
    const int tiles = cdiv(k, BK);
    const int t0 = SPLITK ? (int)((long long)blockIdx.z * tiles / gridDim.z) : 0;
    const int t1 = SPLITK ? (int)((long long)(blockIdx.z + 1) * tiles / gridDim.z) : tiles;
    const int ntiles = t1 - t0, kbeg = t0 * BK;

    float acc[P::TM][P::TN];
#pragma unroll
    for (int x = 0; x < P::TM; x++)
#pragma unroll
        for (int y = 0; y < P::TN; y++)
            acc[x][y] = 0.0f;

    /* the ring's prologue: tiles 0 .. STAGES - 2 in flight, a group each (empty groups past
     * the end, so that every wait below counts the same number of groups) */
    const ms_src<P, BM, BN, BK> src(a, b, k, n, row0, col0, kbeg);
    const bool inner = row0 + BM <= m && col0 + BN <= n; /* the block's tile lies inside C */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ntiles)
            ms_load_tile<P, BM, BN, BK, VEC>(s_ring + s * P::STAGE, src, a, b, m, k, n, row0,
                                             col0, kbeg, s, inner && kbeg + (s + 1) * BK <= k);
        __pipeline_commit();
    }
    __pipeline_wait_prior(STAGES - 2); /* my copies of tile 0 have landed */
    __syncthreads();                   /* and everyone's */

    float fa[2][P::TM], fb[2][P::TN];
    ms_load_frags<P, BN>(s_ring, 0, a_off, b_off, fa[0], fb[0]);

    int st = 0; /* the stage tile t lies in */
    for (int t = 0; t < ntiles; t++) {
        /* tile t + STAGES - 1 into the stage tile t - 1 left: every thread read its last
         * fragments before the barrier it passed at the end of tile t - 1 */
        {
            const int tn = t + STAGES - 1;
            const int sn = st == 0 ? STAGES - 1 : st - 1;
            if (tn < ntiles)
                ms_load_tile<P, BM, BN, BK, VEC>(s_ring + sn * P::STAGE, src, a, b, m, k, n,
                                                 row0, col0, kbeg, tn,
                                                 inner && kbeg + (tn + 1) * BK <= k);
            __pipeline_commit();
        }
        const float *s_st = s_ring + st * P::STAGE;
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            const int cur = kk & 1, nxt = cur ^ 1;
            if (kk < BK - 1) {
                ms_load_frags<P, BN>(s_st, kk + 1, a_off, b_off, fa[nxt], fb[nxt]);
            } else {
                /* the last step of the tile: wait for the next tile, then read its first
                 * fragments while this step's FFMAs run */
                __pipeline_wait_prior(STAGES - 2);
                __syncthreads();
                st = st == STAGES - 1 ? 0 : st + 1;
                if (t + 1 < ntiles)
                    ms_load_frags<P, BN>(s_ring + st * P::STAGE, 0, a_off, b_off, fa[nxt],
                                         fb[nxt]);
            }
#pragma unroll
            for (int x = 0; x < P::TM; x++)
#pragma unroll
                for (int y = 0; y < P::TN; y++)
                    acc[x][y] = fmaf(fa[cur][x], fb[cur][y], acc[x][y]);
        }
    }

    /* the results: row r of sub-tile wi is row wm0 + wi WSUBM + (lane / LN) 4 + r of the tile */
#pragma unroll
    for (int wi = 0; wi < P::WMITER; wi++) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int row = row0 + a_off + wi * P::WSUBM + r;
            if (row >= m)
                continue;
#pragma unroll
            for (int wj = 0; wj < P::WNITER; wj++) {
                const int col = col0 + b_off + wj * P::WSUBN;
                const float *v = acc[wi * 4 + r] + wj * 4;
                float *p = c + (size_t)row * n + col;
                if (SPLITK && VEC) {
                    if (col < n)
                        ms_red4(p, make_float4(v[0], v[1], v[2], v[3]));
                } else if (SPLITK) {
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        if (col + j < n)
                            atomicAdd(p + j, v[j]);
                } else if (VEC) {
                    if (col < n)
                        *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
                } else {
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        if (col + j < n)
                            p[j] = v[j];
                }
            }
        }
    }
}

/* One kernel instance, launched on the default stream; above 48 KB of shared memory a block it
 * opts in once (the caller has checked the device allows SMEM). */
template <int BM, int BN, int BK, int WM, int WN, int LN, int STAGES, int MINB, int GROUP, int AK,
          bool VEC, bool SPLITK>
static void ms_launch(int slices, const float *d_a, const float *d_b, float *d_c, int m, int k,
                      int n)
{
    using P = ms<BM, BN, BK, WM, WN, LN, STAGES, AK>;
    auto kernel =
        matmul_multistage_kernel<BM, BN, BK, WM, WN, LN, STAGES, MINB, GROUP, AK, VEC, SPLITK>;
    if (P::SMEM > 48 * 1024) {
        static bool opted_in = false;
        if (!opted_in) {
            CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            P::SMEM));
            opted_in = true;
        }
    }
    const dim3 grid(cdiv(m, BM) * cdiv(n, BN), 1, slices);
    kernel<<<grid, P::THREADS, P::SMEM>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

/* One configuration on any shape: the float4 path where n % 4 == 0 and B and C start on 16
 * bytes (A is copied a float at a time either way); S > 1 splits k S ways (never more than
 * there are tiles of k), C zeroed first on the same stream, the slices adding into it. */
template <int BM, int BN, int BK, int WM, int WN, int LN, int STAGES, int MINB, int GROUP, int AK,
          int S>
static void matmul_multistage_cfg(const float *d_a, const float *d_b, float *d_c, int m, int k,
                                  int n)
{
    static_assert(S >= 1 && S <= 65535, "S slices of k are gridDim.z");
    const bool vec = n % 4 == 0 && ((uintptr_t)d_b & 15) == 0 && ((uintptr_t)d_c & 15) == 0;
    const int slices = S < cdiv(k, BK) ? S : cdiv(k, BK);
    if (S > 1 && slices > 1) {
        CUDA_CHECK(cudaMemsetAsync(d_c, 0, (size_t)m * n * sizeof(float), 0));
        if (vec)
            ms_launch<BM, BN, BK, WM, WN, LN, STAGES, MINB, GROUP, AK, true, true>(slices, d_a, d_b,
                                                                              d_c, m, k, n);
        else
            ms_launch<BM, BN, BK, WM, WN, LN, STAGES, MINB, GROUP, AK, false, true>(slices, d_a, d_b,
                                                                               d_c, m, k, n);
    } else if (vec) {
        ms_launch<BM, BN, BK, WM, WN, LN, STAGES, MINB, GROUP, AK, true, false>(1, d_a, d_b, d_c, m,
                                                                           k, n);
    } else {
        ms_launch<BM, BN, BK, WM, WN, LN, STAGES, MINB, GROUP, AK, false, false>(1, d_a, d_b, d_c, m,
                                                                            k, n);
    }
}

/* The configurations matmul_multistage picks from (name: block tile m x n x k, warp tile, s
 * STAGES, b MINB blocks an SM, g GROUP, a AK floats of k a copying thread, k S slices), and their
 * shared memory, which the picker checks against the device. */
typedef void (*ms_fn)(const float *, const float *, float *, int, int, int);
struct ms_config {
    const char *name;
    int smem;
    ms_fn fn;
};
#define MS_CONFIG(BM, BN, BK, WM, WN, LN, STAGES, MINB, GROUP, AK, S)                            \
    { #BM "x" #BN "x" #BK "_w" #WM "x" #WN "_s" #STAGES "_b" #MINB "_g" #GROUP "_a" #AK "_k" #S,  \
      ms<BM, BN, BK, WM, WN, LN, STAGES, AK>::SMEM,                                              \
      matmul_multistage_cfg<BM, BN, BK, WM, WN, LN, STAGES, MINB, GROUP, AK, S> }

/* LARGE: C has at least as many 128x128 tiles as the GPU has SMs: 128x256x16 tiles of 8 warps,
 * each 64x64 (16x8 results a thread), 3 stages, one block an SM. Fewer tiles: 128x128x8 tiles
 * of 4 warps, k split into the fewest of 2, 4 and 8 slices that give every SM a block, each
 * slice at least MS_MIN_SLICE_K deep; SMALL (64x64 tiles, 4x as many) when k is too short to
 * split at all. A's tile is
 * copied a float of k a thread (AK = 1): a warp's copies then cover a few whole rows (2 of 16
 * floats, 4 of 8), not 16 rows a quarter each. */
enum { MS_LARGE, MS_K2, MS_K4, MS_K8, MS_SMALL, MS_CHOICES };
static const struct ms_config MS_CHOICE[MS_CHOICES] = {
    MS_CONFIG(128, 256, 16, 64, 64, 8, 3, 1, 8, 1, 1),
    MS_CONFIG(128, 128, 8, 64, 64, 8, 4, 1, 8, 1, 2),
    MS_CONFIG(128, 128, 8, 64, 64, 8, 4, 1, 8, 1, 4),
    MS_CONFIG(128, 128, 8, 64, 64, 8, 4, 1, 8, 1, 8),
    MS_CONFIG(64, 64, 8, 32, 64, 8, 4, 2, 8, 1, 1),
};
#define MS_MIN_SLICE_K 128

void matmul_multistage(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    static int sms = 0;
    static size_t optin = 0;
    if (!sms) {
        int dev;
        cudaDeviceProp prop;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
        optin = prop.sharedMemPerBlockOptin;
        sms = prop.multiProcessorCount;
    }
    const long tiles = (long)cdiv(m, 128) * cdiv(n, 128);
    int pick = MS_LARGE;
    if (tiles < sms) {
        int s = 1;
        while (s < 8 && tiles * s < sms && k / (2 * s) >= MS_MIN_SLICE_K)
            s *= 2;
        pick = s == 1 ? MS_SMALL : s == 2 ? MS_K2 : s == 4 ? MS_K4 : MS_K8;
    }
    if ((size_t)MS_CHOICE[pick].smem > optin)
        pick = MS_SMALL; /* a device with less shared memory a block than the H200 */
    MS_CHOICE[pick].fn(d_a, d_b, d_c, m, k, n);
}
