/* transpose_naive.cu: chapter 02, the baseline and the ceiling. Given, and shared with the
 * solution.
 *
 * Both kernels use the grid every kernel of this chapter uses: a block of 32 x 8 threads per
 * 32 x 32 tile of `in`, each thread moving 4 elements of its column of the tile, 8 rows apart.
 * Same grid, same loads in flight per thread, so the rungs differ only in where the bytes go.
 *
 * transpose_naive: reads `in` along a row (a warp reads 128 contiguous bytes: 4 sectors) and
 *   writes `out` down a column (the 32 lanes store 32 floats `rows` floats apart: 32 sectors,
 *   4 useful bytes in each). Correct, and slow: expect a fraction of what a copy of the same
 *   bytes reaches, as each warp store moves 32 sectors (1 KiB) for 128 useful bytes.
 *
 * copy_same_bytes: the same reads, and writes that are a plain copy (out[i] = in[i]), so both
 *   sides are coalesced. It moves exactly the bytes a transpose must move, with the same
 *   grid and the same float loads, and nothing else: the ceiling a transpose is measured
 *   against. */
#include "cuda_check.h"
#include "transpose.h"

#define TILE 32       /* a tile is TILE x TILE elements of in */
#define BLOCK_ROWS 8  /* a block is TILE x BLOCK_ROWS threads: each moves TILE / BLOCK_ROWS */

__global__ void transpose_naive_kernel(const float *__restrict__ in, float *__restrict__ out,
                                       int rows, int cols)
{
    int col = blockIdx.x * TILE + threadIdx.x; /* lanes walk along a row of in */
    int row0 = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int row = row0 + j;
        if (row < rows && col < cols)
            out[col * rows + row] = in[row * cols + col]; /* read: 128 B; write: 32 sectors */
    }
}

void transpose_naive(const float *d_in, float *d_out, int rows, int cols)
{
    dim3 block(TILE, BLOCK_ROWS);
    dim3 grid(cdiv(cols, TILE), cdiv(rows, TILE));
    transpose_naive_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}

__global__ void copy_same_bytes_kernel(const float *__restrict__ in, float *__restrict__ out,
                                       int rows, int cols)
{
    int col = blockIdx.x * TILE + threadIdx.x;
    int row0 = blockIdx.y * TILE + threadIdx.y;
    /* all loads first, then all stores, as the tiled transposes do on either side of their
     * barrier: the same bytes in flight per thread */
    float v[TILE / BLOCK_ROWS];
    for (int j = 0; j < TILE / BLOCK_ROWS; j++) {
        int row = row0 + j * BLOCK_ROWS;
        if (row < rows && col < cols)
            v[j] = in[row * cols + col];
    }
    for (int j = 0; j < TILE / BLOCK_ROWS; j++) {
        int row = row0 + j * BLOCK_ROWS;
        if (row < rows && col < cols)
            out[row * cols + col] = v[j];
    }
}

void copy_same_bytes(const float *d_in, float *d_out, int rows, int cols)
{
    dim3 block(TILE, BLOCK_ROWS);
    dim3 grid(cdiv(cols, TILE), cdiv(rows, TILE));
    copy_same_bytes_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}
