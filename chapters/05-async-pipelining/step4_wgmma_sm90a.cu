/* step4_wgmma_sm90a.cu: step 4 of 5, yours; sm_90a code, which runs on compute capability 9.0
 * only. wgmma reads the tiles where TMA put them; setmaxnreg moves registers to the math.
 *
 * Steps 1 to 3 multiply with mma.sync: each warp first loads its fragments from shared memory
 * into registers. wgmma.mma_async, issued by a warpgroup of 4 warps, reads A and B from
 * (swizzled) shared memory itself, through matrix descriptors, and runs asynchronously. The
 * lesson is README.md beside this file, its hints "Step 4"; tma.cuh (given) wraps TMA and the
 * mbarriers as in step 3, wgmma.cuh (given) the matrix descriptor and wgmma's fences and waits.
 *
 * TODO, the contract. gemm_wgmma computes C = A B as gemm.h says, on the default stream,
 * checking its launch. Its kernel multiplies with wgmma.mma_async from shared memory that TMA
 * fills (128-byte swizzled boxes, full and empty mbarriers a stage), in a block of a producer
 * warpgroup and consumer warpgroups, the producer giving registers away (setmaxnreg.dec) and
 * the consumers taking them (setmaxnreg.inc). As in step 3, TMA describes rows that start on
 * 16 bytes only: for other shapes, describe the padded copies of gemm_pad_rows (pad_rows.h,
 * given), or hand the shape to gemm_ring (step 2); C's rows stay n apart, and with n odd they
 * start on odd floats (no 8-byte stores there). wgmma and setmaxnreg exist in sm_90a code
 * only: the Makefile builds this file for sm_90a in place of sm_90, and elsewhere the kernel
 * must trap.
 *
 * What the grader measures (make grade CH=05 STEP=4), on a GPU of compute capability 9.0 only
 * (the CPU backend runs no wgmma, and leaves this file out: the step says SKIP there):
 *   - C on step 3's shapes (1x1x1, 17x33x9, 1x8x8, 130x520x264, 200x123x150, 70x7x300,
 *     1000^3, 1000x999x1001 and 3001x520x40), twice each, C poisoned first;
 *   - at 4096^3, at least 2.9x the reference of step 3 (gemm_tma), measured in the same run,
 *     and in the sm_90a machine code of gemm_wgmma_kernel: HGMMA (wgmma), UTMALDG (TMA) and
 *     USETMAXREG (setmaxnreg).
 * As given, the kernel writes nothing: every shape fails with C unwritten. */
#include "tile.cuh"   /* bf16, rows_are_16b_aligned */
#include "tma.cuh"    /* the mbarrier and TMA helpers, make_map */
#include "wgmma.cuh"  /* smem_desc, fence_acc, the wgmma fences and waits */
#include "pad_rows.h" /* gemm_pad_rows, gemm_pad_rows_free: rows padded to 16 bytes */

static __global__ void __launch_bounds__(384, 1)
gemm_wgmma_kernel(const bf16 *__restrict__ a, const bf16 *__restrict__ b, float *__restrict__ c,
                  int m, int k, int n)
{
    /* TODO: the producer warpgroup and the consumer warpgroups (the contract above) */
    (void)a; (void)b; (void)c; (void)m; (void)k; (void)n;
}

extern "C" void gemm_wgmma(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m,
                           int k, int n)
{
    const bf16 *a = reinterpret_cast<const bf16 *>(d_a), *b = reinterpret_cast<const bf16 *>(d_b);
    dim3 grid(cdiv(n, 256), cdiv(m, 128));
    gemm_wgmma_kernel<<<grid, 384>>>(a, b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
