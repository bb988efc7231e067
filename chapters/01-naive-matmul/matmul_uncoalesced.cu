/* matmul_uncoalesced.cu: chapter 01, the baseline. Given, and shared with the solution.
 *
 * One thread per element of C, with threadIdx.x walking DOWN a column of C: the 32 lanes of a
 * warp read A at 32 different rows (k floats apart) and write C at 32 different rows (n floats
 * apart), so every load of A and every store of C touches 32 sectors where 1 would do. B's
 * element is the same for the whole warp (a broadcast). Correct, and bound by those wasted
 * sectors rather than by its arithmetic. */
#include "cuda_check.h"
#include "matmul.h"

#define BLOCK 32

__global__ void matmul_uncoalesced_kernel(const float *__restrict__ a,
                                          const float *__restrict__ b, float *__restrict__ c,
                                          int m, int k, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n)
        return;
    float acc = 0.0f;
    for (int i = 0; i < k; i++)
        acc += a[row * k + i] * b[i * n + col];
    c[row * n + col] = acc;
}

void matmul_uncoalesced(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 block(BLOCK, BLOCK);
    dim3 grid(cdiv(m, BLOCK), cdiv(n, BLOCK));
    matmul_uncoalesced_kernel<<<grid, block>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
