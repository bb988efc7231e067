/* transpose.cu: chapter 02, the coalesced transpose. Your file.
 *
 * transpose_naive (in transpose_naive.cu beside this file) is given: it is correct, its reads
 * are coalesced and its writes are not, so it reaches a fraction of the bandwidth of
 * copy_same_bytes, a copy of the same bytes (its header says why). Complete
 * transpose_kernel below so that it computes the same `out` with BOTH its global reads and
 * its global writes coalesced. Then:
 *
 *     make grade CH=02
 *
 * The grader checks `out` exactly on shapes that are not multiples of the tile (1x1, 1x4097,
 * 4097x1, 33x17, 1000x999, ...), and on a GPU that your kernel reaches at least 70% of the
 * bandwidth of copy_same_bytes at 8192 x 8192. The lesson is README.md beside this file. */
#include "cuda_check.h"
#include "transpose.h"

#define TILE 32       /* a block handles a TILE x TILE tile of in */
#define BLOCK_ROWS 8  /* with TILE x BLOCK_ROWS threads: each moves TILE / BLOCK_ROWS elements */

__global__ void transpose_kernel(const float *__restrict__ in, float *__restrict__ out,
                                 int rows, int cols)
{
    /* TODO: transpose the tile (blockIdx.y, blockIdx.x) of in, which becomes the tile
     * (blockIdx.x, blockIdx.y) of out.
     *   1. Read the tile from in along its rows (threadIdx.x along a row: 128 bytes per warp)
     *      into a __shared__ array; thread (x, y) reads rows y, y + 8, y + 16, y + 24.
     *   2. __syncthreads(): the next step reads elements that other warps stored.
     *   3. Write the tile to out along ITS rows (threadIdx.x along a row of out again), reading
     *      the shared array transposed.
     * Guard both steps: rows and cols are rarely multiples of TILE. Then look at which shared-
     * memory bank each lane of step 3 reads from (README.md, "Banks"). */
    (void)in; (void)out; (void)rows; (void)cols;
}

void transpose(const float *d_in, float *d_out, int rows, int cols)
{
    dim3 block(TILE, BLOCK_ROWS);
    /* x covers the cols of in, y its rows: one block per tile */
    dim3 grid(cdiv(cols, TILE), cdiv(rows, TILE));
    transpose_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}

const struct transpose_rung TRANSPOSE_RUNGS[] = {
    { "naive", transpose_naive },
    { "yours", transpose },
};
const int TRANSPOSE_NUM_RUNGS = sizeof TRANSPOSE_RUNGS / sizeof TRANSPOSE_RUNGS[0];
