/* step2_padded.cu: step 2 of 5, reference.
 * Change from step 1: the tile is 33 floats wide. Word (r, c) is in bank (r + c) % 32, so a
 *   column of the tile spans all 32 banks: the write-out's shared load takes one wavefront
 *   where step 1's took 32. Costs 32 floats of shared memory per tile (3%), and rows that no
 *   longer start on a 128-byte boundary.
 * Expect: about 2x step 1 at 8192 x 8192, and close to the copy kernel: what is left is the
 *   barrier and the shared-memory round trip that a copy does not pay.
 *
 * The grid of step 1: a block of 32 x 8 threads per 32 x 32 tile, 4 elements a thread. */
#include "cuda_check.h"
#include "transpose.h"

#define TILE 32       /* a tile is TILE x TILE elements of in; TILE = warp size = bank count */
#define BLOCK_ROWS 8  /* a block is TILE x BLOCK_ROWS threads: each moves TILE / BLOCK_ROWS */

/* x over the columns of in, y over its rows, one block per tile */
static void tile_grid(int rows, int cols, dim3 *grid, dim3 *block)
{
    *block = dim3(TILE, BLOCK_ROWS);
    *grid = dim3(cdiv(cols, TILE), cdiv(rows, TILE));
}

static __global__ void transpose_padded_kernel(const float *__restrict__ in,
                                               float *__restrict__ out, int rows, int cols)
{
    /* +1 column: word (r, c) is in bank (r + c) % 32, so a column of the tile spans all
     * 32 banks */
    __shared__ float s_tile[TILE][TILE + 1];
    /* read the tile (blockIdx.y, blockIdx.x) of in along its rows: 128 bytes per warp */
    int col = blockIdx.x * TILE + threadIdx.x;
    int row0 = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int row = row0 + j;
        if (row < rows && col < cols)
            s_tile[threadIdx.y + j][threadIdx.x] = in[row * cols + col]; /* a row: 32 banks */
    }
    /* the write-out reads elements that other warps stored */
    __syncthreads();
    /* it becomes the tile (blockIdx.x, blockIdx.y) of out, written along its rows: the block
     * offsets swap, the lanes still walk along a row */
    int out_col = blockIdx.y * TILE + threadIdx.x;
    int out_row0 = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int out_row = out_row0 + j;
        if (out_row < cols && out_col < rows)
            /* a column of the tile: 32 words in 32 different banks now */
            out[out_row * rows + out_col] = s_tile[threadIdx.x][threadIdx.y + j];
    }
}

void transpose_padded(const float *d_in, float *d_out, int rows, int cols)
{
    dim3 grid, block;
    tile_grid(rows, cols, &grid, &block);
    transpose_padded_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}
