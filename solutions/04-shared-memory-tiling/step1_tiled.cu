/* step1_tiled.cu: chapter 04, step 1 of 7, reference solution: a 32x32 shared tile.
 *
 * Bytes per FMA, counted per thread (one FMA = 2 FLOPs), from the level that feeds it:
 *   naive (given)   2 loads from L1/L2 per FMA (8 bytes)
 *   tiled (here)    global: 2 loads per 32 FMAs; shared: 2 loads per FMA (8 bytes)
 * Correct on any shape: tails in m, n and k are zero-filled in shared memory. */
#include "cuda_check.h"
#include "tiled.h"

/* 32x32 shared-memory tiles.
 * Change from the naive kernel: the block stages a 32x32 tile of A and one of B in shared
 * memory, each element loaded once from global memory and then read 32 times from shared.
 * Global traffic drops 32x; every FMA still needs two shared loads (s_a's is a broadcast).
 * Expect: faster than the naive kernel (the grader asks 1.2x), but nothing like 32x: it is
 * now bound by shared-memory load instructions, two per FMA, not by L1/L2. */
#define TILE 32

/* 1,024 threads a block: each may use at most 64 of the SM's 65,536 registers, or the launch
 * fails with cudaErrorLaunchOutOfResources. __launch_bounds__ makes the compiler keep to that
 * (spilling if it must) instead of failing at run time: a variant of this kernel that resets
 * acc inside the loop compiled to 77 registers and did not launch on the H200. */
static __global__ void __launch_bounds__(TILE * TILE)
matmul_tiled_kernel(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                    int m, int k, int n)
{
    __shared__ float s_a[TILE][TILE];
    __shared__ float s_b[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < cdiv(k, TILE); t++) {
        const int k0 = t * TILE;
        /* one element of each tile per thread; lanes walk along a row of A and of B, so both
         * loads are 128 contiguous bytes. Outside A or B: 0, which adds nothing to the sum */
        if (row < m && k0 + tx < k)
            s_a[ty][tx] = a[row * k + k0 + tx];
        else
            s_a[ty][tx] = 0.0f;
        if (k0 + ty < k && col < n)
            s_b[ty][tx] = b[(k0 + ty) * n + col];
        else
            s_b[ty][tx] = 0.0f;
        __syncthreads(); /* the whole tile is in shared memory before anyone reads it */
#pragma unroll
        for (int i = 0; i < TILE; i++)
            acc += s_a[ty][i] * s_b[i][tx]; /* s_a: one address per warp (broadcast); s_b: 32 banks */
        __syncthreads(); /* everyone is done with this tile before the next load overwrites it */
    }
    if (row < m && col < n)
        c[row * n + col] = acc;
}

void matmul_tiled(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 block(TILE, TILE);
    dim3 grid(cdiv(n, TILE), cdiv(m, TILE));
    matmul_tiled_kernel<<<grid, block>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
