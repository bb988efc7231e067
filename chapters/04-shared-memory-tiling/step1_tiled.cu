/* step1_tiled.cu: chapter 04, step 1 of 7: a 32x32 shared tile. Your file.
 *
 * matmul_naive (matmul_naive.cu, chapter 01's coalesced kernel) is given: every thread reads a
 * whole row of A and a whole column of B, 8 bytes through L1/L2 for every 2 FLOPs.
 *
 * TODO: complete matmul_tiled_kernel, so that matmul_tiled computes C = A B (tiled.h) with
 * each element of A and B loaded from global memory once per 32x32 tile of C and then read
 * from shared memory by the whole block. The launcher below is written: a 32x32 block a
 * 32x32 tile of C.
 *
 * Graded by `make grade CH=04 STEP=1`:
 *   correct   every element of C on 1x1x1, 31x33x35, 67x45x131, 130x132x260, 31x45x36,
 *             1000x999x1001, 4096x72x4096, 3001x517x37 and 2048^3 (on the CPU backend
 *             1024x72x1024 and 256^3 for the two large ones), twice each, C poisoned first
 *   concept   (CPU backend) on a shape drawn from the seed (m, n 240 or 248, k not a multiple of
 *             32): global loads coalesced (at most 4.5 sectors per request of floats) and reused
 *             (at most 0.25 global load requests x 32 lanes per FMA; the naive kernel needs 2)
 *   staged    (GPU) at 2048^3, every kernel your launcher launches that multiplies (FFMA in
 *             its machine code) also reads shared memory (LDS): the tiles are staged there
 *   speed     (GPU) at least 1.2x matmul_naive at 2048^3, cuBLAS timed beside it
 * The lesson and the hints are in README.md beside this file. */
#include "cuda_check.h"
#include "tiled.h"

#define TILE 32

/* 1,024 threads a block: at most 64 registers a thread, or the launch fails
 * (cudaErrorLaunchOutOfResources); __launch_bounds__ makes the compiler keep to it. */
static __global__ void __launch_bounds__(TILE * TILE)
matmul_tiled_kernel(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                    int m, int k, int n)
{
    /* TODO: step 1 (see the top of this file) */
    (void)a; (void)b; (void)c; (void)m; (void)k; (void)n;
}

void matmul_tiled(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 block(TILE, TILE);
    /* x covers the n columns of C, y its m rows */
    dim3 grid(cdiv(n, TILE), cdiv(m, TILE));
    matmul_tiled_kernel<<<grid, block>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
