/* step2_blocked_1d.cu: chapter 04, step 2 of 7, reference solution: 1D register blocking.
 *
 * Shared loads per FMA, counted per thread: step 1 needs 2 (one of A, one of B); here
 * 1 + 1/8 (each B value is kept in a register and reused for 8 rows). Correct on any shape:
 * tails in m, n and k are zero-filled in shared memory. */
#include "cuda_check.h"
#include "tiled.h"

/* 1D register blocking.
 * Change from step 1: a 64x64 tile of C per block of 512 threads, BK = 8; each thread
 * computes 8 elements of one column of C. The B value it reads from shared memory is kept in
 * a register and used for 8 FMAs, so shared loads per FMA drop from 2 to 1.125.
 * Expect: a clear step over step 1 at every square size, as the shared loads per FMA that
 * bound it drop from 2 to 1.125. */
#define B1_BM 64
#define B1_BN 64
#define B1_BK 8
#define B1_TM 8
#define B1_THREADS (B1_BM * B1_BN / B1_TM) /* 512 */

static __global__ void __launch_bounds__(B1_THREADS)
matmul_blocked_1d_kernel(const float *__restrict__ a, const float *__restrict__ b,
                         float *__restrict__ c, int m, int k, int n)
{
    __shared__ float s_a[B1_BM * B1_BK]; /* [64][8], row-major like A */
    __shared__ float s_b[B1_BK * B1_BN]; /* [8][64] */
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * B1_BM, col0 = blockIdx.x * B1_BN;
    /* loading: one element of each tile per thread (64 x 8 = 8 x 64 = 512) */
    const int a_r = tid / B1_BK, a_c = tid % B1_BK;
    const int b_r = tid / B1_BN, b_c = tid % B1_BN;
    /* computing: a warp is 32 consecutive columns of one band of 8 rows */
    const int t_col = tid % B1_BN, t_row = tid / B1_BN;
    float acc[B1_TM] = { 0.0f };
    for (int k0 = 0; k0 < k; k0 += B1_BK) {
        const int ar = row0 + a_r, ak = k0 + a_c;
        s_a[a_r * B1_BK + a_c] = (ar < m && ak < k) ? a[ar * k + ak] : 0.0f;
        const int bk = k0 + b_r, bc = col0 + b_c;
        s_b[b_r * B1_BN + b_c] = (bk < k && bc < n) ? b[bk * n + bc] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < B1_BK; i++) {
            const float bv = s_b[i * B1_BN + t_col]; /* one shared load, 8 FMAs */
#pragma unroll
            for (int r = 0; r < B1_TM; r++)
                acc[r] += s_a[(t_row * B1_TM + r) * B1_BK + i] * bv; /* broadcast */
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < B1_TM; r++) {
        const int row = row0 + t_row * B1_TM + r, col = col0 + t_col;
        if (row < m && col < n)
            c[row * n + col] = acc[r];
    }
}

void matmul_blocked_1d(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 grid(cdiv(n, B1_BN), cdiv(m, B1_BM));
    matmul_blocked_1d_kernel<<<grid, B1_THREADS>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
