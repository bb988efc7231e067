/* step1_tiled.cu: step 1 of 5, reference.
 * Change from transpose_naive: stage a 32x32 tile in shared memory. The block reads its tile
 *   along rows of `in` and writes it along rows of `out`, so both global sides are 128-byte
 *   warp accesses (4 sectors each, where the naive store needs 32).
 * The price: the write-out reads a COLUMN of the tile, s_tile[lane][k], whose 32 words are
 *   32 floats apart and so all in bank k: 32 wavefronts for one warp load, which step 2 fixes.
 * Expect: about 3x transpose_naive at 8192 x 8192, and well under the copy kernel.
 *
 * The grid, the same as transpose_naive's and the copy's: a block of 32 x 8 threads per
 * 32 x 32 tile of `in`; each thread moves 4 elements, 8 rows apart. */
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

static __global__ void transpose_tiled_kernel(const float *__restrict__ in,
                                              float *__restrict__ out, int rows, int cols)
{
    __shared__ float s_tile[TILE][TILE];
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
            /* a column of the tile: 32 words 32 floats apart, all in one bank */
            out[out_row * rows + out_col] = s_tile[threadIdx.x][threadIdx.y + j];
    }
}

void transpose_tiled(const float *d_in, float *d_out, int rows, int cols)
{
    dim3 grid, block;
    tile_grid(rows, cols, &grid, &block);
    transpose_tiled_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}
