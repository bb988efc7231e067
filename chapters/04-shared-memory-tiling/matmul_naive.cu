/* matmul_naive.cu: chapter 04, the baseline. Given, and shared with the solution.
 *
 * Chapter 01's coalesced kernel, unchanged: one thread per element of C, consecutive
 * threadIdx.x on consecutive columns, so a warp's loads of B and its store of C are 128
 * contiguous bytes and its load of A is a broadcast. Every thread still reads a whole row of A
 * and a whole column of B: 2k loads for 2k FLOPs, each of them served by L1 or L2. Expect it
 * far under cuBLAS, bound by that re-reading, which this chapter removes. */
#include "cuda_check.h"
#include "tiled.h"

#define BLOCK 32

static __global__ void matmul_naive_kernel(const float *__restrict__ a, const float *__restrict__ b,
                                           float *__restrict__ c, int m, int k, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x; /* lanes walk along a row of C */
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n)
        return;
    float acc = 0.0f;
    for (int i = 0; i < k; i++)
        acc += a[row * k + i] * b[i * n + col];
    c[row * n + col] = acc;
}

void matmul_naive(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 block(BLOCK, BLOCK);
    dim3 grid(cdiv(n, BLOCK), cdiv(m, BLOCK));
    matmul_naive_kernel<<<grid, block>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
