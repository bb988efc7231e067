/* step5_vec4.cu: chapter 02, step 5 of 5: 16-byte vectors, a 4 x 4 block in registers. Your
 * file.
 *
 * TODO: make transpose_vec4 compute the same out as step 1 (transpose.h), for any rows,
 * cols >= 1, with EVERY global load and store a 16-byte float4 wherever the shape allows it
 * (rows and cols multiples of 4: then every row of in and of out starts on a 16-byte
 * boundary), coalesced and free of bank conflicts at that width. The launcher below is written:
 * for such shapes a block of 16 x 16 threads for each 64 x 64 tile of in (blockIdx.x over its
 * columns, blockIdx.y over its rows), the float pointers passed as float4 pointers; for every
 * other shape the given transpose_unaligned_kernel (step 4's kernel). Complete
 * transpose_vec4_kernel; the block shape is yours to change. Step 4's reference is
 * solutions/02-coalesced-transpose/step4_padded_8.cu, step 3's (the swizzle)
 * step3_swizzled.cu.
 *
 *     make grade CH=02 STEP=5
 *
 * The grader checks, for this step:
 *   correct         step 1's shapes, and 4x4, 1028x516, 36x132 (multiples of 4 whose edge
 *                   tiles are partial), 1026x1024 and 1024x1030 (one of the two not a multiple
 *                   of 4), exactly;
 *   coalesced       on the CPU backend, on a shape drawn from the run's seed whose edge tiles
 *                   are partial (rows and cols multiples of 8): at most 1.125 times the fewest
 *                   sectors per global request at the width used (18 for float4s, which
 *                   touch 16);
 *   conflict-free   on the CPU backend: at most 1.5 times the fewest wavefronts per shared
 *                   request at the width used (6 for float4s, which need 4);
 *   bytes in flight on the CPU backend: at least 8 elements a thread, as in step 4;
 *   16-byte vectors on the CPU backend: 16 bytes a lane in every global load and store request
 *                   on that shape, its partial edge tiles included;
 *   speed           on a GPU, at 8192x8192: at least 1.04x the bandwidth of step 4's
 *                   reference, measured in the same run, with copy_same_bytes beside it.
 * The lesson's Hints, "Step 5", say how. */
#include <stdint.h>

#include "cuda_check.h"
#include "transpose.h"

#define TILE 32        /* step 4's tile, for the shapes vectors cannot take */
#define BLOCK_ROWS_8 4 /* step 4's block: TILE x 4 threads, 8 elements each */
#define TILE5 64       /* a tile is TILE5 x TILE5 elements of in */
#define QUADS 16       /* TILE5 / 4: float4s across a row of the tile */

/* rows and cols are multiples of 4 here: in is rows x cols / 4 float4s, out cols x rows / 4 */
static __global__ void transpose_vec4_kernel(const float4 *__restrict__ in,
                                             float4 *__restrict__ out, int rows, int cols)
{
    /* TODO: this block's 64 x 64 tile of in, transposed into out, every global access a
     * float4 */
    (void)in; (void)out; (void)rows; (void)cols;
}

/* Given: step 4's kernel, for shapes whose rows do not start on a 16-byte boundary. */
static __global__ void transpose_unaligned_kernel(const float *__restrict__ in,
                                                  float *__restrict__ out, int rows, int cols)
{
    __shared__ float s_tile[TILE][TILE + 1];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row0 = blockIdx.y * TILE + threadIdx.y;
    float v[TILE / BLOCK_ROWS_8];
    for (int j = 0; j < TILE / BLOCK_ROWS_8; j++) {
        int row = row0 + j * BLOCK_ROWS_8;
        v[j] = row < rows && col < cols ? in[row * cols + col] : 0.0f;
    }
    for (int j = 0; j < TILE / BLOCK_ROWS_8; j++)
        s_tile[threadIdx.y + j * BLOCK_ROWS_8][threadIdx.x] = v[j];
    __syncthreads();
    int out_col = blockIdx.y * TILE + threadIdx.x;
    int out_row0 = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS_8) {
        int out_row = out_row0 + j;
        if (out_row < cols && out_col < rows)
            out[out_row * rows + out_col] = s_tile[threadIdx.x][threadIdx.y + j];
    }
}

void transpose_vec4(const float *d_in, float *d_out, int rows, int cols)
{
    /* a float4 is 16 bytes and must sit on a 16-byte boundary: every row of in starts on one
     * when cols is a multiple of 4, every row of out when rows is */
    int aligned = rows % 4 == 0 && cols % 4 == 0 && ((uintptr_t)d_in | (uintptr_t)d_out) % 16 == 0;
    if (aligned) {
        dim3 block(QUADS, QUADS); /* TODO: the block shape sets what a thread moves */
        dim3 grid(cdiv(cols, TILE5), cdiv(rows, TILE5));
        transpose_vec4_kernel<<<grid, block>>>((const float4 *)d_in, (float4 *)d_out, rows, cols);
    } else {
        dim3 block(TILE, BLOCK_ROWS_8);
        dim3 grid(cdiv(cols, TILE), cdiv(rows, TILE));
        transpose_unaligned_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    }
    CUDA_CHECK(cudaGetLastError());
}
