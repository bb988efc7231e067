/* step5_vec4.cu: step 5 of 5, reference.
 * Change from step 4: every global access is a 16-byte vector. A block of 16 x 16 threads takes
 *   a 64 x 64 tile of in, and each thread a 4 x 4 block of it: four float4 loads, one from each
 *   of 4 consecutive rows, all issued before any is used. In registers the 4 x 4 block is
 *   transposed (no instruction: only which float goes into which vector), so each of the
 *   thread's four float4s is now 4 consecutive floats of one row of out. The exchange between
 *   threads goes through shared memory as whole float4s, and the write-out stores float4s.
 *   Per thread: 16 elements, 4 global loads, 4 shared stores, 4 shared loads, 4 global
 *   stores, where step 4 needs 8 of each for 8 elements. A warp request moves 512 bytes (two
 *   rows of 256), where steps 1 to 4 move 128, and a warp has 2 KiB of loads in flight.
 * The tile is not padded but swizzled at the grain of a float4: a row of the tile is 16 float4s
 *   (256 bytes, two passes over the 32 banks), and float4 j of row r is stored at j ^ (r / 4 % 8).
 *   A quarter-warp's 8 float4s (128 bytes: one pass) then fall in 8 different bank groups both
 *   when the threads store their transposed blocks (8 rows, one column of float4s) and when
 *   they read rows back: conflict-free, 4 wavefronts a request, the fewest for 16-byte lanes.
 * Vectors need every row of in and of out to start on a 16-byte boundary: rows and cols
 *   multiples of 4 (and both pointers 16-byte aligned). Any other shape goes to step 4's kernel,
 *   which moves one float at a time; partial tiles of an aligned shape stay on the vector path,
 *   guarded one float4 at a time (a float4 is wholly inside the matrix or wholly outside).
 * Expect: a few percent over step 4 at 8192 x 8192, if instructions and requests per byte and
 *   the bytes a warp has in flight are what keeps step 4 from the copy kernel. */
#include <stdint.h>

#include "cuda_check.h"
#include "transpose.h"

#define TILE 32        /* step 4's tile, for the shapes vectors cannot take */
#define BLOCK_ROWS_8 4 /* step 4's block: TILE x 4 threads, 8 elements each */
#define TILE5 64       /* a tile is TILE5 x TILE5 elements of in */
#define QUADS 16       /* TILE5 / 4: float4s across a row of the tile, 4 x 4 blocks down it */

/* float4 `chunk` of row `row` of the tile, swizzled: r / 4 % 8 is the 4 x 4 block's row among
 * the 8 that a quarter-warp stores at once, so its 8 float4s land in 8 bank groups */
#define SWZ(row, chunk) ((chunk) ^ ((row) / 4 % 8))

/* A block of QUADS x QUADS threads per 64 x 64 tile; thread (q, b) moves the 4 x 4 block of
 * rows 4b..4b+3 and columns 4q..4q+3 of the tile. rows and cols are multiples of 4. */
static __global__ void __launch_bounds__(QUADS * QUADS)
transpose_vec4_kernel(const float4 *__restrict__ in, float4 *__restrict__ out, int rows, int cols)
{
    /* the tile already transposed: row k of it is the part of row k of out that this tile
     * writes, 16 float4s */
    __shared__ float4 s_tile[TILE5][QUADS];
    const int q = threadIdx.x, b = threadIdx.y;
    const int rows4 = rows / 4, cols4 = cols / 4; /* float4s in a row of out, of in */

    /* four loads, none waiting for another: rows 4b + j of the tile, float4 q of each. A warp
     * (two values of b) reads two rows of 256 bytes a request. A float4 outside in reads as
     * zeros, which no store below writes. */
    const int col4 = blockIdx.x * QUADS + q;
    const int row = blockIdx.y * TILE5 + 4 * b;
    float4 a[4];
#pragma unroll
    for (int j = 0; j < 4; j++)
        a[j] = row + j < rows && col4 < cols4 ? in[(row + j) * cols4 + col4]
                                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    /* the 4 x 4 block transposed in registers: float4 k is column k of the block, that is
     * 4 consecutive floats of row 4q + k of the transposed tile (columns 4b..4b+3) */
    float4 t[4] = {
        make_float4(a[0].x, a[1].x, a[2].x, a[3].x),
        make_float4(a[0].y, a[1].y, a[2].y, a[3].y),
        make_float4(a[0].z, a[1].z, a[2].z, a[3].z),
        make_float4(a[0].w, a[1].w, a[2].w, a[3].w),
    };
#pragma unroll
    for (int k = 0; k < 4; k++)
        s_tile[4 * q + k][SWZ(4 * q + k, b)] = t[k];
    /* the write-out reads blocks that other threads stored */
    __syncthreads();

    /* the tile (blockIdx.y, blockIdx.x) of in is the tile (blockIdx.x, blockIdx.y) of out:
     * thread (q, b) writes float4 q of rows 4b..4b+3 of it, a warp two rows of 256 bytes */
    const int out_col4 = blockIdx.y * QUADS + q;
    const int out_row = blockIdx.x * TILE5 + 4 * b;
#pragma unroll
    for (int k = 0; k < 4; k++)
        if (out_row + k < cols && out_col4 < rows4)
            out[(out_row + k) * rows4 + out_col4] = s_tile[4 * b + k][SWZ(4 * b + k, q)];
}

/* Step 4's kernel, for shapes whose rows do not start on a 16-byte boundary: the padded tile,
 * 32 x 4 threads, 8 floats a thread. */
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
        dim3 block(QUADS, QUADS);
        dim3 grid(cdiv(cols, TILE5), cdiv(rows, TILE5));
        transpose_vec4_kernel<<<grid, block>>>((const float4 *)d_in, (float4 *)d_out, rows, cols);
    } else {
        dim3 block(TILE, BLOCK_ROWS_8);
        dim3 grid(cdiv(cols, TILE), cdiv(rows, TILE));
        transpose_unaligned_kernel<<<grid, block>>>(d_in, d_out, rows, cols);
    }
    CUDA_CHECK(cudaGetLastError());
}
