/* step3_swizzled.cu: step 3 of 5, reference.
 * Change from step 2: no padding. The tile is 32 x 32 floats again, and element (r, c) of it
 *   is stored at column c ^ r. A row (fixed r) and a column (fixed c) of the tile both land on
 *   32 different banks. Costs an XOR per shared access and no memory, and keeps every row of
 *   the tile 128-byte aligned (which a tile moved with 16-byte vectors needs).
 * Expect: about step 2's speed, not more: both remove the same conflict. What this step buys
 *   is the layout, and the CPU backend grades that (a block's shared memory is 32 x 32 floats).
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

static __global__ void transpose_swizzled_kernel(const float *__restrict__ in,
                                                 float *__restrict__ out, int rows, int cols)
{
    /* element (r, c) of the tile lives at s_tile[r][c ^ r]: for a fixed r, c ^ r is a
     * permutation of 0..31 (a row hits every bank once), and for a fixed c, so is it over r
     * (a column hits every bank once). No padding: rows stay 128 bytes, 128-byte aligned. */
    __shared__ float s_tile[TILE][TILE];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row0 = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int row = row0 + j;
        int r = threadIdx.y + j;
        if (row < rows && col < cols)
            s_tile[r][threadIdx.x ^ r] = in[row * cols + col];
    }
    __syncthreads();
    int out_col = blockIdx.y * TILE + threadIdx.x;
    int out_row0 = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int out_row = out_row0 + j;
        int c = threadIdx.y + j; /* the column of the tile this warp reads */
        if (out_row < cols && out_col < rows)
            out[out_row * rows + out_col] = s_tile[threadIdx.x][c ^ threadIdx.x];
    }
}

void transpose_swizzled(const float *d_in, float *d_out, int rows, int cols)
{
    dim3 grid, block;
    tile_grid(rows, cols, &grid, &block);
    transpose_swizzled_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}
