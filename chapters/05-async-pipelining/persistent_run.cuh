/* persistent_run.cuh: what step 5 of chapter 05 (step5_persistent_sm90a.cu) is given around
 * its kernel (given): the configurations (ps_config), the order of the tiles (ps_tile_of), the
 * stores of C from the accumulators (store_c, and store_c_rows through shared memory), and the
 * launcher, which sizes the persistent grid, picks a configuration by shape and runs the
 * kernel the step defines (gemm_persistent_kernel, declared here). Included by the step's file
 * only, once: it defines the chapter's launcher gemm_persistent. */
#ifndef PERSISTENT_RUN_CUH
#define PERSISTENT_RUN_CUH

#include "tile.cuh"       /* bf16 */
#include "persistent.cuh" /* tma.cuh, wgmma.cuh, the cluster and the products */
#include "pad_rows.h"     /* gemm_pad_rows: rows padded to 16 bytes where k or n asks for it */
#include "sm_count.h"     /* the device's SMs, for the tile by shape */

#define PS_BK 64            /* k a stage: 64 bf16, one 128-byte swizzle row */
#define PS_THREADS 384      /* 3 warpgroups: the producer, 2 consumers */
#define PS_CONSUMER_WARPS 8
#define PS_B_BOX_BYTES (PS_BK * 64 * 2) /* one 64 x 64 box of B: 8 KB */
/* registers a thread after the hand-over: 128 x 40 + 256 x 232 = 64,512 of the SM's 65,536 */
#define PS_PRODUCER_REGS 40
#define PS_CONSUMER_REGS 232

/* A configuration: its tile, stages and cluster, which operand the cluster shares, and what
 * follows from them. SHARE_B = 0: the CLUSTER tiles of a cluster sit side by side in n, on the
 * same rows of A, and each CTA copies BM / CLUSTER rows of A's box for all of them; SHARE_B =
 * 1: they sit one above the other in m, on the same columns of B, and each CTA copies
 * BN / 64 / CLUSTER of B's 64-column boxes for all of them. EPI: the store of C (store_c or
 * store_c_rows). */
template <int BM, int BN, int STAGES, int CLUSTER, int SHARE_B, int EPI>
struct ps_config {
    static_assert(BM == 128 || BM == 256, "a consumer warpgroup takes 64 or 128 rows");
    static_assert(BN == 64 || BN == 128 || BN == 256, "wgmma m64nNk16, N = 64, 128 or 256");
    static_assert(CLUSTER == 1 || CLUSTER == 2, "one CTA, or two sharing an operand");
    static constexpr int CM = SHARE_B ? CLUSTER : 1;  /* a cluster's tiles along m */
    static constexpr int CN = SHARE_B ? 1 : CLUSTER;  /* and along n */
    static constexpr int WM = BM / 2;                 /* rows of the tile a consumer */
    static constexpr int MI = WM / 64;                /* its 64-row products a k16 */
    static constexpr int ACC = BN / 2;                /* floats a thread for 64 rows */
    static constexpr int A_BYTES = BM * PS_BK * 2;
    static constexpr int A_BOX_ROWS = BM / CN;        /* the part of A's box a CTA copies */
    static constexpr int A_BOX_BYTES = A_BOX_ROWS * PS_BK * 2;
    static constexpr int B_BOXES = BN / 64;           /* B's 64-column boxes a stage */
    static constexpr int B_OWN = B_BOXES / CM;        /* those a CTA copies */
    static_assert(B_OWN * CM == B_BOXES, "B's boxes split evenly over the cluster");
    static constexpr int STAGE_SIZE = A_BYTES + B_BOXES * PS_B_BOX_BYTES;
    /* EPI: C goes out through 8 KB a consumer warpgroup of shared memory, 64 rows x 32 columns
     * of fp32 at a time, so that a warp stores whole 128-byte lines */
    static constexpr int EPI_OFF = STAGES * STAGE_SIZE;
    static constexpr int EPI_BYTES = EPI ? 2 * 64 * 32 * 4 : 0;
    static constexpr int BAR_OFF = EPI_OFF + EPI_BYTES;
    /* and 1 KB of slack to put the first stage on a 1 KB boundary */
    static constexpr int SMEM = BAR_OFF + 2 * STAGES * 8 + 1024;
    static_assert(SMEM <= 232448, "more shared memory than a block may have");
    static_assert(MI * ACC <= 128, "128 accumulators a thread at most");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

/* one tile: its first row and column of C */
struct ps_tile {
    int row0, col0;
};

/* Unit u of the tile order: the cluster's CM x CN tiles (one a CTA, by rank), unit row mu
 * (m-blocks CM mu ..) and unit column nu (n-blocks CN nu ..), of mu_count x nu_count. Unit
 * rows go in bands of `group`; within a band mu runs fastest, so that the clusters at work at
 * once share a few panels of A and of B. */
static __device__ __forceinline__ ps_tile ps_tile_of(int u, int mu_count, int nu_count,
                                                    int group, int bm, int bn, int cm, int cn,
                                                    int rank)
{
    const int band = u / (group * nu_count), q = u % (group * nu_count);
    const int mu0 = band * group, rows = min(group, mu_count - mu0);
    const int mu = mu0 + q % rows, nu = q / rows;
    return { (mu * cm + (cm > 1 ? rank : 0)) * bm, (nu * cn + (cn > 1 ? rank : 0)) * bn };
}

/* A consumer thread's share of 64 rows of C, as in step 4 (the accumulator layout:
 * persistent.cuh): rows row and row + 8, columns col + 8 j and the one after; pairs: n even and
 * C 8-byte aligned, so two columns go at once; else one float at a time (with n odd, every
 * other row starts on an odd float) */
template <int N>
static __device__ __forceinline__ void store_c(float *__restrict__ c, const float (&d)[N], int m,
                                               int n, int row, int col, bool pairs)
{
    if (pairs) {
#pragma unroll
        for (int j = 0; j < N / 4; j++) {
            if (col + 8 * j < n) {
                if (row < m)
                    *reinterpret_cast<float2 *>(c + (size_t)row * n + col + 8 * j) =
                        make_float2(d[4 * j], d[4 * j + 1]);
                if (row + 8 < m)
                    *reinterpret_cast<float2 *>(c + (size_t)(row + 8) * n + col + 8 * j) =
                        make_float2(d[4 * j + 2], d[4 * j + 3]);
            }
        }
    } else {
#pragma unroll
        for (int j = 0; j < N / 4; j++) {
            const int cj = col + 8 * j;
            if (cj < n) {
                if (row < m) {
                    c[(size_t)row * n + cj] = d[4 * j];
                    if (cj + 1 < n)
                        c[(size_t)row * n + cj + 1] = d[4 * j + 1];
                }
                if (row + 8 < m) {
                    c[(size_t)(row + 8) * n + cj] = d[4 * j + 2];
                    if (cj + 1 < n)
                        c[(size_t)(row + 8) * n + cj + 1] = d[4 * j + 3];
                }
            }
        }
    }
}

/* The same share of C through `stage` (64 x 32 fp32, this warpgroup's 8 KB), 32 columns at a
 * time: the accumulators go in as pairs, whole rows come out as 16-byte pieces, so that a warp
 * stores four whole 128-byte lines at once. In the stage a row is 8 chunks of 16 bytes, chunk
 * j of row r at j ^ (r % 8): the pairs of 8 rows, and the chunks of 4 rows, each meet every
 * bank at most twice. n a multiple of 4 and C 16-byte aligned; row0, col0: the 64 rows' first
 * row and column of C; wg_bar: the warpgroup's named barrier. */
template <int N>
static __device__ __forceinline__ void store_c_rows(float *__restrict__ c, const float (&d)[N],
                                                    float *stage, int m, int n, int row0,
                                                    int col0, int wg_bar)
{
    const int tid = threadIdx.x % 128, lane = tid % 32, r = tid / 32 * 16 + lane / 4;
#pragma unroll
    for (int ch = 0; ch < N / 16; ch++) { /* 32 columns: 4 groups of 8 */
        warpgroup_sync(wg_bar);            /* the last chunk's reads are done */
#pragma unroll
        for (int jj = 0; jj < 4; jj++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = r + 8 * h, c16 = 2 * jj + lane % 4 / 2;
                *reinterpret_cast<float2 *>(stage + row * 32 + (c16 ^ (row % 8)) * 4 +
                                            lane % 2 * 2) =
                    make_float2(d[4 * (4 * ch + jj) + 2 * h], d[4 * (4 * ch + jj) + 2 * h + 1]);
            }
        warpgroup_sync(wg_bar);            /* the chunk is written */
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = tid / 8 + 16 * i, c16 = tid % 8;
            const float4 v = *reinterpret_cast<const float4 *>(stage + row * 32 +
                                                               (c16 ^ (row % 8)) * 4);
            const int gr = row0 + row, gc = col0 + 32 * ch + 4 * c16;
            if (gr < m && gc < n) /* n % 4 == 0: all four columns are inside */
                *reinterpret_cast<float4 *>(c + (size_t)gr * n + gc) = v;
        }
    }
}

#endif

/* the kernel, the step's own (step5_persistent_sm90a.cu), which the launcher below runs */
template <int BM, int BN, int STAGES, int CLUSTER, int SHARE_B, int EPI>
static __global__ void __launch_bounds__(PS_THREADS, 1)
gemm_persistent_kernel(const __grid_constant__ CUtensorMap map_a,
                       const __grid_constant__ CUtensorMap map_b, float *__restrict__ c, int m,
                       int k, int n, bool pairs, bool rows16, int group);

/* C = A B with one configuration, A and B rows lda and ldb apart (multiples of 8: the padded
 * copies where needed), C's rows n apart; group: the band of the tile order, in m-blocks */
template <int BM, int BN, int STAGES, int CLUSTER, int SHARE_B, int EPI>
static void gemm_persistent_run(const bf16 *a, int lda, const bf16 *b, int ldb, float *d_c,
                                int m, int k, int n, int group)
{
    typedef ps_config<BM, BN, STAGES, CLUSTER, SHARE_B, EPI> cfg;
    auto kernel = gemm_persistent_kernel<BM, BN, STAGES, CLUSTER, SHARE_B, EPI>;
    /* once a device and configuration: the shared memory allowed, and how many clusters of
     * this kernel the GPU holds at once (a cluster's SMs must be in one GPC, so this can be
     * fewer than the SMs over CLUSTER) */
    static int ready_dev = -1, max_clusters;
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    cudaLaunchConfig_t lc = {};
    cudaLaunchAttribute attr;
    lc.blockDim = dim3(PS_THREADS);
    lc.dynamicSmemBytes = cfg::SMEM;
    lc.stream = 0;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = CLUSTER;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    lc.attrs = &attr;
    lc.numAttrs = 1;
    if (dev != ready_dev) {
        int major, minor;
        CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
        if (major != 9 || minor != 0) {
            fprintf(stderr, "gemm_persistent: needs sm_90 (wgmma is sm_90a code, which runs on "
                            "compute capability 9.0 only); this device is sm_%d%d\n", major,
                    minor);
            exit(EXIT_FAILURE);
        }
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        cfg::SMEM));
        lc.gridDim = dim3(CLUSTER);
        CUDA_CHECK(cudaOccupancyMaxActiveClusters(&max_clusters, (void *)kernel, &lc));
        if (max_clusters < 1) {
            fprintf(stderr, "gemm_persistent: this device fits no cluster of %d CTAs of %d "
                            "bytes of shared memory\n", CLUSTER, cfg::SMEM);
            exit(EXIT_FAILURE);
        }
        ready_dev = dev;
    }
    CUtensorMap map_a = make_map("gemm_persistent", a, m, k, lda, cfg::A_BOX_ROWS, PS_BK,
                                 CU_TENSOR_MAP_SWIZZLE_128B);
    CUtensorMap map_b = make_map("gemm_persistent", b, k, n, ldb, PS_BK, 64,
                                 CU_TENSOR_MAP_SWIZZLE_128B);
    const bool pairs = n % 2 == 0 && (reinterpret_cast<uintptr_t>(d_c) & 7) == 0;
    const bool rows16 = n % 4 == 0 && (reinterpret_cast<uintptr_t>(d_c) & 15) == 0;
    const int units = cdiv(cdiv(m, BM), cfg::CM) * cdiv(cdiv(n, BN), cfg::CN);
    lc.gridDim = dim3(CLUSTER * (units < max_clusters ? units : max_clusters));
    CUDA_CHECK(cudaLaunchKernelEx(&lc, kernel, map_a, map_b, d_c, m, k, n, pairs, rows16,
                                  group));
    CUDA_CHECK(cudaGetLastError());
}

/* The configuration for a shape. A grid of tiles runs in rounds of one tile an SM, and a round
 * of a tile shape takes about its FLOPs over its rate: so the estimate of a configuration's
 * time is its rounds times the tile's area over that rate, and the smallest estimate wins.
 * The rates are the sweep's on the H200 at 4096^3, relative to the 128 x 256 tile's (for 128 x
 * 128 in clusters sharing B, 87%; for 128 x 64, one CTA a cluster, 57%: narrow tiles read more
 * bytes a FLOP, and their products are shorter). Where the rounds are equal, the widest tile
 * wins; where a narrow tile fills the SMs that a wide one leaves idle, it does (1024^3: 32
 * tiles of 128 x 256, 128 of 128 x 64, for 132 SMs). Measured at 1024^3, the 128 x 64 tile ran
 * faster alone than in clusters of two sharing A: each CTA has one tile, and a cluster's pair
 * then waits on the slower of its two at every stage. */
typedef void (*ps_run_fn)(const bf16 *, int, const bf16 *, int, float *, int, int, int, int);
static ps_run_fn pick_config(int m, int n, int sms, int *group)
{
    struct choice {
        int bm, bn;
        double rate; /* relative to 128 x 256's */
        ps_run_fn run;
    };
    static const choice CHOICES[] = {
        { 128, 256, 1.00, gemm_persistent_run<128, 256, 4, 2, 1, 0> },
        { 128, 128, 0.87, gemm_persistent_run<128, 128, 6, 2, 1, 0> },
        { 128, 64, 0.57, gemm_persistent_run<128, 64, 8, 1, 0, 0> },
    };
    *group = 8;
    const choice *best = &CHOICES[0];
    double best_cost = 0.0;
    for (const choice &ch : CHOICES) {
        const long tiles = (long)cdiv(m, ch.bm) * cdiv(n, ch.bn);
        const double cost = (double)((tiles + sms - 1) / sms) * ch.bm * ch.bn / ch.rate;
        if (&ch == CHOICES || cost < best_cost) {
            best = &ch;
            best_cost = cost;
        }
    }
    return best->run;
}

extern "C" void gemm_persistent(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m,
                                int k, int n)
{
    /* TMA's global strides must be multiples of 16 bytes: where a row of A or B does not start
     * on 16 bytes, the maps describe a copy whose rows do, as in steps 3 and 4 */
    struct gemm_padded p;
    gemm_pad_rows(d_a, d_b, m, k, n, &p);
    int group;
    ps_run_fn run = pick_config(m, n, sm_count(), &group);
    run(reinterpret_cast<const bf16 *>(p.a), p.lda, reinterpret_cast<const bf16 *>(p.b), p.ldb,
        d_c, m, k, n, group);
    gemm_pad_rows_free(&p); /* in stream order: after the kernel has read the copies */
}

#endif
