/* matmul_tiled.cu: chapter 04, the shared-memory tiled matmul. Your file.
 *
 * matmul_naive (matmul_naive.cu, chapter 01's coalesced kernel) is given: every thread reads a
 * whole row of A and a whole column of B, so the kernel moves 8 bytes through L1/L2 for every
 * 2 FLOPs. Complete matmul_tiled_kernel below so that a 32x32 block of threads computes a 32x32
 * tile of C by walking along k one 32x32 tile of A and one 32x32 tile of B at a time, each
 * staged in shared memory once and then read 32 times. Then:
 *
 *     make grade CH=04
 *
 * The grader checks C on shapes that are not multiples of 32 (1x1x1, 31x33x35,
 * 1000x999x1001, ...), and on a GPU that your kernel runs at least 1.3x matmul_naive at
 * 2048^3. The lesson is README.md beside this file. */
#include "cuda_check.h"
#include "tiled.h"

#define TILE 32

/* 1,024 threads a block: at most 64 registers a thread, or the launch fails
 * (cudaErrorLaunchOutOfResources); __launch_bounds__ makes the compiler keep to it. */
__global__ void __launch_bounds__(TILE * TILE)
matmul_tiled_kernel(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                    int m, int k, int n)
{
    /* TODO: declare the two tiles,
     *     __shared__ float s_a[TILE][TILE];
     *     __shared__ float s_b[TILE][TILE];
     * Thread (threadIdx.x, threadIdx.y) owns C(row, col) with
     *     row = blockIdx.y * TILE + threadIdx.y,  col = blockIdx.x * TILE + threadIdx.x.
     * For each tile t = 0, 1, ... of the k dimension (there are cdiv(k, TILE) of them):
     *   1. every thread loads ONE element of A's tile and ONE of B's into s_a and s_b:
     *      s_a[threadIdx.y][threadIdx.x] = A(row, t * TILE + threadIdx.x), and
     *      s_b[threadIdx.y][threadIdx.x] = B(t * TILE + threadIdx.y, col),
     *      or 0.0f where the index falls outside A or B (the last tile of k is partial);
     *   2. wait until the whole block has loaded;
     *   3. accumulate the 32 products of row threadIdx.y of s_a and column threadIdx.x of s_b;
     *   4. wait again before the next iteration overwrites the tiles.
     * Store C(row, col) only where row < m and col < n. A thread outside C still loads and
     * still reaches every __syncthreads(): do not return early. */
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

const struct tiled_rung TILED_RUNGS[] = {
    { "naive", matmul_naive },
    { "tiled", matmul_tiled },
};
const int TILED_NUM_RUNGS = sizeof TILED_RUNGS / sizeof TILED_RUNGS[0];

/* Tile configurations for `grade --tune`: the solution's last rung offers several; this file
 * has none. */
const struct tiled_config *const TILED_CONFIGS = 0;
const int TILED_NUM_CONFIGS = 0;
