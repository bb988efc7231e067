/* step3_blocked_2d.cu: chapter 04, step 3 of 7, reference solution: 2D register blocking.
 *
 * Shared loads per FMA, counted per thread: step 2 needs 1 + 1/8; here 16 loads feed 64 FMAs
 * (0.25 per FMA), with 8x8 results in registers. Correct on any shape: tails in m, n and k
 * are zero-filled in shared memory. */
#include "cuda_check.h"
#include "tiled.h"

/* 2D register blocking.
 * Change from step 2: a 128x128 tile of C per block of 256 threads, BK = 8, and an 8x8 tile
 * of C per thread. Each step of k loads 8 values of A and 8 of B into registers and does
 * 64 FMAs with them: 0.25 shared loads per FMA, and 64 independent accumulators keep the
 * FMA pipes busy.
 * Expect: faster than step 2 at 2048^3 and up; the shared loads are now 16 scalar LDS a step,
 * with 2- and 4-way bank conflicts (step 4's target). Slower than step 2 at 1024^3, where
 * 128x128 tiles make 64 blocks for 132 SMs. */
#define B2_BM 128
#define B2_BN 128
#define B2_BK 8
#define B2_TM 8
#define B2_TN 8
#define B2_THREADS (B2_BM * B2_BN / (B2_TM * B2_TN)) /* 256 */

static __global__ void __launch_bounds__(B2_THREADS)
matmul_blocked_2d_kernel(const float *__restrict__ a, const float *__restrict__ b,
                         float *__restrict__ c, int m, int k, int n)
{
    __shared__ float s_a[B2_BM * B2_BK]; /* [128][8] */
    __shared__ float s_b[B2_BK * B2_BN]; /* [8][128] */
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * B2_BM, col0 = blockIdx.x * B2_BN;
    const int a_r = tid / B2_BK, a_c = tid % B2_BK; /* 32 rows a pass, 4 passes */
    const int b_r = tid / B2_BN, b_c = tid % B2_BN; /* 2 rows a pass, 4 passes */
    const int t_row = tid / (B2_BN / B2_TN), t_col = tid % (B2_BN / B2_TN);
    float acc[B2_TM][B2_TN] = { { 0.0f } };
    float ra[B2_TM], rb[B2_TN];
    for (int k0 = 0; k0 < k; k0 += B2_BK) {
#pragma unroll
        for (int o = 0; o < B2_BM; o += B2_THREADS / B2_BK) {
            const int ar = row0 + a_r + o, ak = k0 + a_c;
            s_a[(a_r + o) * B2_BK + a_c] = (ar < m && ak < k) ? a[ar * k + ak] : 0.0f;
        }
#pragma unroll
        for (int o = 0; o < B2_BK; o += B2_THREADS / B2_BN) {
            const int bk = k0 + b_r + o, bc = col0 + b_c;
            s_b[(b_r + o) * B2_BN + b_c] = (bk < k && bc < n) ? b[bk * n + bc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < B2_BK; i++) {
#pragma unroll
            for (int r = 0; r < B2_TM; r++)
                ra[r] = s_a[(t_row * B2_TM + r) * B2_BK + i];
#pragma unroll
            for (int q = 0; q < B2_TN; q++)
                rb[q] = s_b[i * B2_BN + t_col * B2_TN + q];
#pragma unroll
            for (int r = 0; r < B2_TM; r++)
#pragma unroll
                for (int q = 0; q < B2_TN; q++)
                    acc[r][q] += ra[r] * rb[q];
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < B2_TM; r++) {
        const int row = row0 + t_row * B2_TM + r;
#pragma unroll
        for (int q = 0; q < B2_TN; q++) {
            const int col = col0 + t_col * B2_TN + q;
            if (row < m && col < n)
                c[row * n + col] = acc[r][q];
        }
    }
}

void matmul_blocked_2d(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 grid(cdiv(n, B2_BN), cdiv(m, B2_BM));
    matmul_blocked_2d_kernel<<<grid, B2_THREADS>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
