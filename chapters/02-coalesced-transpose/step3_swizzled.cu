/* step3_swizzled.cu: chapter 02, step 3 of 5: an XOR swizzle. Your file.
 *
 * TODO: make transpose_swizzled compute the same out as step 1 (transpose.h), for any rows,
 * cols >= 1, coalesced and free of bank conflicts as in step 2, WITHOUT padding: the block's
 * shared memory is one tile of exactly 32 x 32 floats (4096 bytes). The launcher below is
 * step 1's (a block of 32 x 8 threads per 32 x 32 tile); complete transpose_swizzled_kernel.
 * Step 2's reference is solutions/02-coalesced-transpose/step2_padded.cu, if you start here.
 *
 *     make grade CH=02 STEP=3
 *
 * The grader checks, for this step:
 *   correct        as in step 1: the same shapes, exactly;
 *   coalesced      on the CPU backend: at most 4.5 sectors per global request, as in step 1;
 *   conflict-free  on the CPU backend: at most 1.5 wavefronts per shared request, as in step 2;
 *   no padding     on the CPU backend: the __shared__ memory a block's accesses touch is at most
 *                  32 x 32 floats, 4096 bytes (step 2's padded tile is 4224);
 *   speed          on a GPU, at 8192x8192: at least 0.9x the bandwidth of step 2's reference
 *                  (this step is about the layout, not about speed: keep step 2's), measured in
 *                  the same run, with copy_same_bytes beside it.
 * The lesson's Hints, "Step 3", say how. */
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

static __global__ void transpose_swizzled_kernel(const float *__restrict__ in,
                                                 float *__restrict__ out, int rows, int cols)
{
    /* TODO: this block's 32 x 32 tile of in, transposed into out: no bank conflicts, no
     * padding */
    (void)in; (void)out; (void)rows; (void)cols;
}

void transpose_swizzled(const float *d_in, float *d_out, int rows, int cols)
{
    dim3 grid, block;
    tile_grid(rows, cols, &grid, &block);
    transpose_swizzled_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}
