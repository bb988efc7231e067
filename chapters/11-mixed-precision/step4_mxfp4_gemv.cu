/* step4_mxfp4_gemv.cu: chapter 11, step 4 of 4, weight-only MXFP4 for small batches. Your
 * file.
 *
 * The contract (quant.h says it exactly): gemm_mxfp4_bf16 computes y = x W^T in fp32, x an
 * m x k bf16 matrix of activations (m = 1 to 16: a decode step's batch), W an n x k matrix of
 * MXFP4 weights as step 2's quantize_mxfp4 lays out its n x k rows (two e2m1 codes a byte,
 * element 2j in the low nibble of byte j of its row, an e8m0 scale a block of 32 of k), and the
 * weights are dequantised in registers on their way into the multiply-adds, never written out
 * wider. k is a multiple of 32; any m and n; a NaN scale (0xff) makes its row of W, and so its
 * column of y, NaN. The launcher below starts you with a warp for each row of W; it is yours to
 * change (the hints in README.md lead to 16 rows a block, on the tensor cores).
 *
 * What the grader checks (make grade CH=11 STEP=4):
 *   correct  y on shapes m x k x n = 1x32x1, 3x96x7, 16x1024x130, 5x2048x257, 1x2080x33,
 *            1x4096x1000, 1x16384x40, 17x512x64 (more than 16 rows), NaN scales at 4x256x100
 *            and 1x1024x70, and x from 2^-40 to 2^40 (past fp16's range) at 1x2048x100 and
 *            3x512x40; on a GPU also 1x8192x8192 and 16x8192x8192; each element within the
 *            fp32 dot-product bound of its k terms (tol_dot_fp32(k) of sum |x| |value(w)| X),
 *            twice on fresh inputs, y poisoned first
 *   speed    on a GPU, at m = 1, k = n = 8192, against cuBLAS's BF16 GEMM of the same shape
 *            measured in the same run (the lesson says what it needs)
 *
 * The lesson is README.md beside this file; its hints for step 4 are there too. */
#include <stdint.h>

#include "cuda_check.h"
#include "quant.h"

#define GV_THREADS 256
#define GV_WARPS (GV_THREADS / 32)

static __global__ void gemm_mxfp4_kernel(const uint16_t *__restrict__ x,
                                         const uint8_t *__restrict__ wq,
                                         const uint8_t *__restrict__ ws, float *__restrict__ y,
                                         int m, int k, int n)
{
    /* TODO: warp c = blockIdx.x * GV_WARPS + threadIdx.x / 32 (if c < n) computes column c of
     * y: for r < m, y[r * n + c] = the sum over k of x[r][i] * value(W[c][i]), each code's
     * value its e2m1 value times its block's 2^(scale - 127). */
    (void)x; (void)wq; (void)ws; (void)y; (void)m; (void)k; (void)n;
}

void gemm_mxfp4_bf16(const uint16_t *d_x, const uint8_t *d_w, const uint8_t *d_ws, float *d_y,
                     int m, int k, int n)
{
    gemm_mxfp4_kernel<<<cdiv(n, GV_WARPS), GV_THREADS>>>(d_x, d_w, d_ws, d_y, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
