/* step6_tuned.cu: chapter 04, step 6 of 7: split-K and the configuration table. Your file.
 *
 * Step 5's one tile is one choice for every shape: at 4096x4096x72 (a C of 4096 x 72) its
 * 128x128 tiles make 32 blocks for a GPU of 132 SMs, each walking all 4096 of k.
 *
 * TODO: write matmul_tuned: C = A B (tiled.h), any shape, launching for each shape one of the
 * configurations you list in TILED_CONFIGS (tiled.h: a name, its tile, its threads, its
 * shared memory and its launcher, each correct on any shape). Among them, split-K ones named
 * ..._kS: S blocks share each tile of C, each over its own slice of k. `grade --tune FILE` on
 * a GPU times every configuration at the bench's shapes and writes the table your launcher
 * may read to choose (gemm_family.h has its format); a device or shape the table does not know
 * needs a documented fallback. The launcher below launches nothing.
 *
 * Graded by `make grade CH=04 STEP=6`:
 *   correct   matmul_tuned on the shapes of step 1 (README.md lists them), twice each; every
 *             configuration of TILED_CONFIGS on 67x45x131, 130x132x260 and 31x45x36 (k = 45
 *             and 132: slices of one step of k and of several); at least one split-K
 *             configuration among them
 *   staged    (GPU) at 4096x4096x72, every kernel your launcher launches that multiplies (FFMA in
 *             its machine code) also reads shared memory (LDS): the tiles are staged there
 *   speed     (GPU) at least 5.5x step 5's reference at 4096x4096x72, and at least 0.95x it at
 *             4096^3, cuBLAS timed beside each
 * On the CPU backend only correctness is graded: the idea is graded by speed on a GPU.
 * The hints are in README.md, "Step 6". */
#include "cuda_check.h"
#include "tiled.h"

void matmul_tuned(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    /* TODO: step 6 (see the top of this file): pick a configuration, launch it */
    (void)d_a; (void)d_b; (void)d_c; (void)m; (void)k; (void)n;
    CUDA_CHECK(cudaGetLastError());
}

/* TODO: step 6: your configurations, for the grader and `grade --tune` */
const struct tiled_config *const TILED_CONFIGS = 0;
const int TILED_NUM_CONFIGS = 0;
