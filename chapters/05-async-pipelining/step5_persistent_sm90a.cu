/* step5_persistent_sm90a.cu: step 5 of 5, yours; sm_90a code, which runs on compute
 * capability 9.0 only. Step 4's math in persistent CTAs, clusters of two that share an operand
 * by TMA multicast, and a tile chosen by the shape.
 *
 * Step 4 launches a block a tile: each fills its ring from empty, multiplies, stores C and
 * leaves. Here the grid is as many CTAs as the GPU holds at once, each walking a list of
 * tiles with its ring running on across them, and the two CTAs of a cluster take two
 * neighbouring tiles that read the same panel of A or of B: each copies half of that panel's
 * boxes and TMA multicasts them into both. The lesson is README.md beside this file, its hints
 * "Step 5"; persistent.cuh (given) wraps the cluster's instructions and the wgmma products of
 * widths 64, 128 and 256. Given in persistent_run.cuh: the configurations (ps_config), the tile
 * order (ps_tile_of), the stores of C (store_c, store_c_rows), and the launcher, which sizes
 * the grid, picks a configuration by shape and runs the kernel below.
 *
 * TODO, the contract. gemm_persistent_kernel<BM, BN, STAGES, CLUSTER, SHARE_B> computes C = A B
 * as gemm.h says over the units of ps_tile_of: its cluster's index (blockIdx.x / CLUSTER),
 * then that plus the number of clusters, and so on, the CTA of rank r taking the tile of rank
 * r. A producer warpgroup (setmaxnreg.dec, one thread issuing the copies) and two consumer
 * warpgroups (setmaxnreg.inc), each WM = BM / 2 rows of the tile, k 64 a stage through a ring
 * of STAGES stages laid out as ps_config says, a full and an empty mbarrier a stage, the ring
 * running on from one tile to the next. With CLUSTER = 2 each CTA copies its part of the
 * shared operand (A_BOX_ROWS rows of A's box, or B_OWN of B's boxes) with
 * tma_load_2d_multicast into both CTAs, the rest with tma_load_2d into its own; the empty
 * barrier of a stage counts the consumer warps of both CTAs, and a consumer warp releases a
 * stage on both (mbar_arrive_cluster). No CTA leaves while its peer may still write into it.
 *
 * What the grader measures (make grade CH=05 STEP=5), on a GPU of compute capability 9.0 only
 * (the CPU backend runs no wgmma, and leaves this file out: the step says SKIP there):
 *   - C on step 4's shapes, twice each, C poisoned first; and, checked against cuBLAS, on
 *     1024^3, 2056 x 2048 x 2048 and 4100 x 4000 x 4104, which take each configuration the
 *     launcher picks and leave partial tiles in all of them;
 *   - at 1024^3, where step 4's tiles leave half the SMs idle, at least STEP5_NEEDS (1.2) times
 *     the reference of step 4 (gemm_wgmma), measured in the same run; and in the sm_90a
 *     machine code of gemm_persistent_kernel: HGMMA, UTMALDG with MULTICAST, and USETMAXREG.
 * As given, the kernel writes nothing: every shape fails with C unwritten. */
#include "persistent_run.cuh" /* given: configurations, tile order, stores of C, the launcher */

template <int BM, int BN, int STAGES, int CLUSTER, int SHARE_B, int EPI>
static __global__ void __launch_bounds__(PS_THREADS, 1)
gemm_persistent_kernel(const __grid_constant__ CUtensorMap map_a,
                       const __grid_constant__ CUtensorMap map_b, float *__restrict__ c, int m,
                       int k, int n, bool pairs, bool rows16, int group)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    /* TODO: the barriers, the producer and the consumers (the contract above) */
    (void)map_a; (void)map_b; (void)c; (void)m; (void)k; (void)n; (void)pairs; (void)rows16; (void)group;
    (void)&ps_tile_of; /* given: the order of the tiles */
#else
    __trap(); /* wgmma, setmaxnreg and multicast exist in sm_90a code only */
#endif
}
