/* step7_multistage.cu: chapter 04, step 7 of 7: the FFMA pipe's issue slots, a multistage
 * cp.async ring and fragments double-buffered in registers. Your file.
 *
 * Step 6's best tile at 4096^3 runs near 70% of the FP32 peak: an SM sub-partition issues one
 * warp instruction a clock, and each LDS, address add, register-staged store and barrier of its
 * loop takes the slot of an FFMA; and its two shared stages leave one tile of loads in flight.
 *
 * TODO: write matmul_multistage: C = A B (tiled.h), any shape, at cuBLAS's pace: the kernels,
 * the tiles, the stages and the launch are yours; the launcher below launches nothing.
 *
 * Graded by `make grade CH=04 STEP=7`:
 *   correct   the shapes of step 1 (README.md lists them), twice each, C poisoned first
 *   concept   (CPU backend) on a shape drawn from the seed (m, n 240 or 248, k not a multiple
 *             of 32): at least 12 FMAs per shared load, lanes counted (8x8 results a thread
 *             make 16 with whole tiles; 4x4 make 2)
 *   staged    (GPU) at 4096^3, every kernel your launcher launches that multiplies (FFMA in
 *             its machine code) also reads shared memory (LDS)
 *   sass      (GPU) at 4096^3, in the machine code of every kernel that multiplies, at least 16
 *             FFMAs for each LDS (counted as the code stands: an unrolled loop's body once), and
 *             no local memory (LDL, STL: a spill)
 *   speed     (GPU) at 4096^3 and at 1000x999x1001, against step 6's reference in the same run
 *             (the ratio each needs is printed beside it), cuBLAS timed beside each
 * The hints are in README.md, "Step 7". */
#include "cuda_check.h"
#include "tiled.h"

void matmul_multistage(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    /* TODO: step 7 (see the top of this file): your kernels, launched here */
    (void)d_a; (void)d_b; (void)d_c; (void)m; (void)k; (void)n;
    CUDA_CHECK(cudaGetLastError());
}
