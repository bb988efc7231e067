/* step4_padded_8.cu: chapter 02, step 4 of 5: more bytes in flight a thread. Your file.
 *
 * TODO: make transpose_padded_8 compute the same out as step 1 (transpose.h), for any rows,
 * cols >= 1, coalesced and free of bank conflicts as in step 2, with each thread moving at
 * least 8 elements (steps 1 to 3 move 4: 32 x 8 threads a 32 x 32 tile). The block shape and
 * the grid are yours to choose: the launcher below is step 1's, as a start. Step 3's reference
 * is solutions/02-coalesced-transpose/step3_swizzled.cu, step 2's step2_padded.cu.
 *
 *     make grade CH=02 STEP=4
 *
 * The grader checks, for this step:
 *   correct         as in step 1: the same shapes, exactly;
 *   coalesced       on the CPU backend: at most 4.5 sectors per global request, as in step 1;
 *   conflict-free   on the CPU backend: at most 1.5 wavefronts per shared request, as in step 2;
 *   bytes in flight on the CPU backend, on a shape drawn from the run's seed whose edge tiles
 *                   are partial: the elements of the whole 32 x 32 tiles that cover it over
 *                   the threads launched, at least 8 a thread;
 *   speed           on a GPU, at 8192x8192: at least 1.04x the bandwidth of step 3's
 *                   reference, measured in the same run, with copy_same_bytes beside it.
 * The lesson's Hints, "Step 4", say how. */
#include "cuda_check.h"
#include "transpose.h"

#define TILE 32 /* a tile is TILE x TILE elements of in; TILE = warp size = bank count */

static __global__ void transpose_padded_8_kernel(const float *__restrict__ in,
                                                 float *__restrict__ out, int rows, int cols)
{
    /* TODO: this block's tile of in, transposed into out, at least 8 elements a thread */
    (void)in; (void)out; (void)rows; (void)cols;
}

void transpose_padded_8(const float *d_in, float *d_out, int rows, int cols)
{
    dim3 block(TILE, 8); /* TODO: the block shape sets the elements a thread moves */
    dim3 grid(cdiv(cols, TILE), cdiv(rows, TILE));
    transpose_padded_8_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}
