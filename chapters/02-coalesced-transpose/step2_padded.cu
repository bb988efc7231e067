/* step2_padded.cu: chapter 02, step 2 of 5: a padded tile. Your file.
 *
 * TODO: make transpose_padded compute the same out as step 1 (transpose.h), for any rows,
 * cols >= 1, with its global accesses coalesced as in step 1 AND its shared-memory accesses
 * free of bank conflicts. The launcher below is step 1's (a block of 32 x 8 threads per
 * 32 x 32 tile); complete transpose_padded_kernel. Step 1's reference is
 * solutions/02-coalesced-transpose/step1_tiled.cu, if you start here.
 *
 *     make grade CH=02 STEP=2
 *
 * The grader checks, for this step:
 *   correct        as in step 1: the same shapes, exactly;
 *   coalesced      on the CPU backend, on a shape drawn from the run's seed whose edge tiles
 *                  are partial: at most 4.5 sectors per global load and per
 *                  global store request, as in step 1;
 *   conflict-free  on the CPU backend: the tile goes through shared memory, and at most 1.5
 *                  wavefronts per warp request for the shared loads and for the shared stores
 *                  (1 is 32 words in 32 banks; step 1's column read needs 32);
 *   speed          on a GPU, at 8192x8192: at least 1.7x the bandwidth of step 1's reference,
 *                  measured in the same run, with copy_same_bytes beside it; on a GPU whose
 *                  DRAM lets the copy itself gain less than 2.27x over step 1, 75% of the
 *                  copy's gain instead (never below 1.25x).
 * The lesson's Hints, "Step 2", say how. */
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

static __global__ void transpose_padded_kernel(const float *__restrict__ in,
                                               float *__restrict__ out, int rows, int cols)
{
    /* TODO: this block's 32 x 32 tile of in, transposed into out, with no bank conflicts */
    (void)in; (void)out; (void)rows; (void)cols;
}

void transpose_padded(const float *d_in, float *d_out, int rows, int cols)
{
    dim3 grid, block;
    tile_grid(rows, cols, &grid, &block);
    transpose_padded_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}
