/* step2_ring.cu: step 2 of 5, yours. An N-stage ring of cp.async copies, ldmatrix into
 * mma.sync.
 *
 * Step 1 hides a copy behind one step of math, and its math goes through WMMA, whose fragment
 * loads from shared memory compile to 32-bit LDS on sm_90. This step deepens the pipeline to a
 * ring of stages and feeds the tensor cores with ldmatrix and mma.sync (mma_sync.cuh, given).
 * The lesson is README.md beside this file; its hints ("Step 2") have the algorithm.
 *
 * TODO, the contract. gemm_ring, gemm_ring_2 and gemm_ring_4 compute C = A B as gemm.h says
 * (any m, k, n >= 1, rows not necessarily 16-byte aligned), on the default stream, checking
 * their launches, with a ring of 3, 2 and 4 shared-memory stages filled by cp.async: the copies
 * of the next STAGES - 1 tiles in flight while one is multiplied, the math ldsm_x4 and
 * mma_16816. A ring that needs over 48 KB of shared memory a block must be allowed it
 * (cudaFuncSetAttribute) and must fit what the device allows (ask it:
 * cudaDevAttrMaxSharedMemoryPerBlockOptin). Rows that do not start on 16 bytes (k or n not a
 * multiple of 8) cannot take 16-byte copies: gemm_pad_rows (pad_rows.h, given) copies such a
 * matrix into rows padded with zeros to a multiple of 8 and hands back the copy and its pitch,
 * for the kernel to read with the same 16-byte copies (gemm_pad_rows_free after the launch).
 *
 * What the grader measures (make grade CH=05 STEP=2):
 *   - gemm_ring's C on step 1's shapes (1x1x1, 17x33x9, 100x72x130, 200x123x150, 1000^3 and
 *     3001x517x37; 264^3 and 301x517x37 on the CPU backend), twice each, C poisoned first;
 *     gemm_ring_2's and gemm_ring_4's on 17x33x9, 100x72x130, 200x123x150, 1x8x8 and
 *     130x520x264. ldmatrix, mma.sync and the copies' asynchrony are emulated on the CPU
 *     backend, so a lane that points at the wrong row, or a stage read before its wait, fails
 *     there too;
 *   - on a GPU: gemm_ring at 4096^3 at least 2.0x the reference of step 1 (gemm_pipelined),
 *     measured in the same run, cuBLAS BF16 beside them.
 * As given, the kernel writes nothing: every shape fails with C unwritten. */
#include <cuda_pipeline.h>

#include "tile.cuh"       /* THREADS, PAD, bf16, rows_are_16b_aligned, load_tile_sync */
#include "mma_sync.cuh"   /* ldsm_frag, ldsm_x4 (ldmatrix), mma_16816 (mma.sync m16n8k16) */
#include "pad_rows.h"     /* gemm_pad_rows, gemm_pad_rows_free: rows padded to 16 bytes */

template <int STAGES>
static __global__ void __launch_bounds__(THREADS, 1)
gemm_ring_kernel(const bf16 *__restrict__ a, const bf16 *__restrict__ b, float *__restrict__ c,
                 int m, int k, int n)
{
#if GEMM_BF16_MMA
    /* TODO: this block's tile of C through a ring of STAGES stages (the contract above) */
    (void)a; (void)b; (void)c; (void)m; (void)k; (void)n;
#else
    __trap(); /* sm_75: no bf16 tensor cores */
#endif
}

template <int STAGES>
static void gemm_ring_n(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k,
                        int n)
{
    const bf16 *a = reinterpret_cast<const bf16 *>(d_a), *b = reinterpret_cast<const bf16 *>(d_b);
    dim3 grid(cdiv(n, GEMM_BN), cdiv(m, GEMM_BM));
    gemm_ring_kernel<STAGES><<<grid, THREADS>>>(a, b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

extern "C" {
void gemm_ring(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    gemm_ring_n<3>(d_a, d_b, d_c, m, k, n);
}
void gemm_ring_2(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    gemm_ring_n<2>(d_a, d_b, d_c, m, k, n);
}
void gemm_ring_4(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    gemm_ring_n<4>(d_a, d_b, d_c, m, k, n);
}
}
