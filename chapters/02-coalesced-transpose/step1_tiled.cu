/* step1_tiled.cu: chapter 02, step 1 of 5: a shared-memory tile. Your file.
 *
 * TODO: make transpose_tiled compute out = transpose(in) (transpose.h: in is rows x cols, out is
 * cols x rows, out[c * rows + r] = in[r * cols + c]) for any rows, cols >= 1, with BOTH its
 * global reads and its global writes coalesced. The launcher below is written: a block of
 * 32 x 8 threads for each 32 x 32 tile of in (blockIdx.x over its columns, blockIdx.y over its
 * rows); complete transpose_tiled_kernel.
 *
 *     make grade CH=02 STEP=1
 *
 * The grader checks, for this step:
 *   correct    out exactly, bit for bit, on 1x1, 1x4097, 4097x1, 33x17, 1000x999, 8192x8192
 *              and 3000x7001 (rows x cols; on the CPU backend 1024x1024 and 300x701 in place
 *              of the two large ones), twice each, out poisoned with NaN and guarded;
 *   coalesced  on the CPU backend, on a shape drawn from the run's seed whose edge tiles are
 *              partial: at most 4.5 sectors of 32 bytes per warp request,
 *              for the global loads and for the global stores (32 floats in a row are 4;
 *              transpose_naive's stores need 32);
 *   speed      on a GPU, at 8192x8192: at least 2.3x the bandwidth of transpose_naive, measured
 *              in the same run, with copy_same_bytes beside it for scale.
 * The lesson is README.md beside this file; its Hints, "Step 1", say how. */
#include "cuda_check.h"
#include "transpose.h"

#define TILE 32       /* a tile is TILE x TILE elements of in; TILE = warp size = bank count */
#define BLOCK_ROWS 8  /* a block is TILE x BLOCK_ROWS threads: each moves TILE / BLOCK_ROWS */

/* x over the columns of in, y over its rows, one block per 32 x 32 tile of in */
static void tile_grid(int rows, int cols, dim3 *grid, dim3 *block)
{
    *block = dim3(TILE, BLOCK_ROWS);
    *grid = dim3(cdiv(cols, TILE), cdiv(rows, TILE));
}

static __global__ void transpose_tiled_kernel(const float *__restrict__ in,
                                              float *__restrict__ out, int rows, int cols)
{
    /* TODO: this block's 32 x 32 tile of in, transposed into out (see the top of the file) */
    (void)in; (void)out; (void)rows; (void)cols;
}

void transpose_tiled(const float *d_in, float *d_out, int rows, int cols)
{
    dim3 grid, block;
    tile_grid(rows, cols, &grid, &block);
    transpose_tiled_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}
