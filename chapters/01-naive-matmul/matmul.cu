/* matmul.cu: chapter 01, the naive matmul. Your file.
 *
 * matmul_uncoalesced is given: it is correct, and slow, as its warps touch 32 sectors of A
 * and of C where 1 would do. Complete matmul_kernel below so that it computes the same C, one
 * thread per element, but with consecutive threadIdx.x on consecutive COLUMNS of C. Then:
 *
 *     make grade CH=01
 *
 * The grader checks C on shapes that are not multiples of the block (1x1x1, 17x33x9,
 * 1000x999x1001, ...), and on a GPU that your kernel runs at least 5x the uncoalesced one.
 * The lesson is README.md beside this file. */
#include "cuda_check.h"
#include "matmul.h"

#define BLOCK 32

__global__ void matmul_kernel(const float *__restrict__ a, const float *__restrict__ b,
                              float *__restrict__ c, int m, int k, int n)
{
    /* TODO: compute c[row * n + col] = sum over i of a[row * k + i] * b[i * n + col],
     * with col taken from the x dimension (so that a warp's 32 threads share a row and read
     * 32 consecutive floats of B) and row from the y dimension. Guard against the partial
     * blocks at the edges: m and n are rarely multiples of BLOCK. */
    (void)a; (void)b; (void)c; (void)m; (void)k; (void)n;
}

void matmul(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 block(BLOCK, BLOCK);
    /* x covers the n columns of C, y its m rows */
    dim3 grid(cdiv(n, BLOCK), cdiv(m, BLOCK));
    matmul_kernel<<<grid, block>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

const struct matmul_rung MATMUL_RUNGS[] = {
    { "uncoalesced", matmul_uncoalesced },
    { "yours",       matmul },
};
const int MATMUL_NUM_RUNGS = sizeof MATMUL_RUNGS / sizeof MATMUL_RUNGS[0];
