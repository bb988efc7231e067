/* step3_tma_sm90.cu: step 3 of 5, yours; Hopper (sm_90) only. TMA, mbarriers and a producer
 * warp.
 *
 * In steps 1 and 2 every thread computes addresses, checks bounds and issues its 16-byte
 * copies between its math. Here the tensor memory accelerator copies whole boxes, one thread
 * of a producer warp asks for them, and the consumer warps only wait, multiply and release,
 * meeting the producer on mbarriers instead of __syncthreads. The instructions are wrapped in
 * tma.cuh (given); the lesson is README.md beside this file, its hints "Step 3".
 *
 * TODO, the contract. gemm_tma computes C = A B as gemm.h says, on the default stream,
 * checking its launch. Its kernel copies with TMA (cp.async.bulk.tensor, tensor maps made on
 * the host with make_map and passed as const __grid_constant__ CUtensorMap parameters), counts
 * the bytes of each stage on an mbarrier, and has one producer warp issue the copies while
 * consumer warps multiply. TMA describes rows that start on 16 bytes only (k and n multiples
 * of 8, bases 16-byte aligned: rows_are_16b_aligned); for the other shapes, describe the
 * padded copies that gemm_pad_rows (pad_rows.h, given) makes, with their pitch, or hand the
 * shape to gemm_ring (step 2).
 *
 * What the grader measures (make grade CH=05 STEP=3), on a GPU of compute capability 9.0 or
 * later only (the CPU backend runs no TMA, and leaves this file out: the step says SKIP there):
 *   - C on 1x1x1, 17x33x9, 1x8x8, 130x520x264, 200x123x150, 70x7x300, 1000x1000x1000,
 *     1000x999x1001 and 3001x520x40, twice each, C poisoned first (1x8x8, 130x520x264,
 *     1000x1000x1000 and 3001x520x40 have rows that start on 16 bytes);
 *   - at 4096^3, at least 0.36x the reference of step 2 (gemm_ring), measured in the same run
 *     (this step keeps step 1's WMMA math, and is slower than step 2's: README.md says why),
 *     and UTMALDG (TMA) in the machine code of gemm_tma_kernel.
 * As given, the kernel writes nothing: every shape fails with C unwritten. */
#include "tile.cuh"  /* the baseline's tile, fragments, mma_tile's math, store_c_tile */
#include "tma.cuh"   /* mbar_init, mbar_arrive_expect_tx, mbar_arrive, mbar_wait, tma_load_2d,
                      * make_map */
#include "pad_rows.h" /* gemm_pad_rows, gemm_pad_rows_free: rows padded to 16 bytes */

static __global__ void __launch_bounds__(THREADS + 32, 1)
gemm_tma_kernel(const bf16 *__restrict__ a, const bf16 *__restrict__ b, float *__restrict__ c,
                int m, int k, int n)
{
    /* TODO: the producer warp and the consumer warps (the contract above) */
    (void)a; (void)b; (void)c; (void)m; (void)k; (void)n;
}

extern "C" void gemm_tma(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k,
                         int n)
{
    const bf16 *a = reinterpret_cast<const bf16 *>(d_a), *b = reinterpret_cast<const bf16 *>(d_b);
    dim3 grid(cdiv(n, GEMM_BN), cdiv(m, GEMM_BM));
    gemm_tma_kernel<<<grid, THREADS + 32>>>(a, b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
