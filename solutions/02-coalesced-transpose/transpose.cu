/* transpose.cu: chapter 02, reference solution. Four rungs, one grid.
 *
 * Every rung launches a block of 32 x 8 threads per 32 x 32 tile of `in`; each thread moves
 * 4 elements, 8 rows apart (the classic layout: 4 independent loads in flight per thread, and
 * 256-thread blocks small enough that 8 of them share an SM).
 *
 * Rung 1, naive: the chapter's given baseline, chapters/02-coalesced-transpose/
 *   transpose_naive.cu. Reads coalesced, writes 32 sectors per warp store.
 * Rung 2, tiled: stage the tile in shared memory. The block reads its tile along rows of `in`
 *   and writes it along rows of `out`, so both global sides are 128-byte warp accesses. The
 *   price: the write-out reads a COLUMN of the tile, s_tile[lane][k], whose 32 words are
 *   32 floats apart and so all in bank k: 32 wavefronts for one warp load.
 * Rung 3, padded: the same, with the tile 33 floats wide. Word (r, c) is in bank (r + c) % 32,
 *   so a column spans all 32 banks: one wavefront. Costs 32 floats of shared memory per tile.
 * Rung 4, swizzled: a 32-float-wide tile, with element (r, c) stored at column c ^ r. A row
 *   (fixed r) and a column (fixed c) both land on 32 different banks. Costs an XOR per access,
 *   no memory, and keeps every row of the tile 128-byte aligned.
 * The ceiling: copy_same_bytes in transpose_naive.cu, the same grid copying the same bytes.
 *
 * Expect, at 8192 x 8192 on an H200 (the reference H200's earlier measurement): naive 488 GB/s,
 *   tiled 1602, padded 3496, copy 3815. transpose() is the padded rung: padded and swizzled
 *   remove the same conflict, and padding is the one a reader checks at a glance. */
#include "cuda_check.h"
#include "transpose.h"

#define TILE 32       /* a tile is TILE x TILE elements of in; TILE = warp size = bank count */
#define BLOCK_ROWS 8  /* a block is TILE x BLOCK_ROWS threads: each moves TILE / BLOCK_ROWS */

/* The grid of every rung: x over the columns of in, y over its rows, one block per tile. */
static void tile_grid(int rows, int cols, dim3 *grid, dim3 *block)
{
    *block = dim3(TILE, BLOCK_ROWS);
    *grid = dim3(cdiv(cols, TILE), cdiv(rows, TILE));
}

/* ---- rung 2: tiled ------------------------------------------------------------------------ */

__global__ void transpose_tiled_kernel(const float *__restrict__ in, float *__restrict__ out,
                                       int rows, int cols)
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

/* ---- rung 3: padded ----------------------------------------------------------------------- */

__global__ void transpose_padded_kernel(const float *__restrict__ in, float *__restrict__ out,
                                        int rows, int cols)
{
    /* +1 column: word (r, c) is in bank (r + c) % 32, so a column of the tile spans all
     * 32 banks */
    __shared__ float s_tile[TILE][TILE + 1];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row0 = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int row = row0 + j;
        if (row < rows && col < cols)
            s_tile[threadIdx.y + j][threadIdx.x] = in[row * cols + col];
    }
    __syncthreads();
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

/* ---- rung 4: swizzled --------------------------------------------------------------------- */

__global__ void transpose_swizzled_kernel(const float *__restrict__ in, float *__restrict__ out,
                                          int rows, int cols)
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

/* ---- the contract ------------------------------------------------------------------------- */

void transpose(const float *d_in, float *d_out, int rows, int cols)
{
    transpose_padded(d_in, d_out, rows, cols);
}

const struct transpose_rung TRANSPOSE_RUNGS[] = {
    { "naive",    transpose_naive },
    { "tiled",    transpose_tiled },
    { "padded",   transpose_padded },
    { "swizzled", transpose_swizzled },
};
const int TRANSPOSE_NUM_RUNGS = sizeof TRANSPOSE_RUNGS / sizeof TRANSPOSE_RUNGS[0];
