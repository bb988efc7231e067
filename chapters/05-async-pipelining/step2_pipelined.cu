/* step2_pipelined.cu: step 2 of 5, yours. Double buffering with cp.async.
 *
 * Change from step 1 (step1_sync.cu, given): two shared-memory stages. Step 1 is correct, and
 * its warps wait for every tile to arrive before they multiply it, and the loads wait for the
 * math. Make gemm_pipelined_kernel below compute the same C with two stages: while the tensor
 * cores multiply the tile in one stage, cp.async (__pipeline_memcpy_async) fills the other with
 * the next tile. The math (mma_tile) and the store of C (store_c_tile) are given in tile.cuh,
 * the same as in step 1. Then:
 *
 *     make grade CH=05
 *
 * Expect: faster than step 1, because a tile's copies are in flight while the tile before it
 * is multiplied, instead of between the multiplications.
 * The grader checks C on shapes that are not multiples of the tile, with k and n that are not
 * multiples of 8 (1x1x1, 17x33x9, 100x72x130, ...), and on a GPU that your kernel runs at least
 * 1.2x gemm_sync at 4096^3 and that its machine code holds LDGSTS (cp.async).
 * The lesson is README.md beside this file. */
#include <cuda_pipeline.h>

#include "tile.cuh"   /* the tile's shape, the fragments, mma_tile and store_c_tile */

#define STAGES 2

/* Start the copy of the R x C tile at (r0, c0) of the rows x cols row-major matrix g into s
 * (row stride LDS), with zeros where the tile hangs over the edge of the matrix, so that the
 * math needs no bounds checks. It should only START the copies: nothing waits here.
 * vec is true when every row of g starts on a 16-byte boundary (cols % 8 == 0). */
template <int R, int C, int LDS>
__device__ __forceinline__ void load_tile_async(bf16 *s, const bf16 *__restrict__ g, int rows,
                                                int cols, int r0, int c0, bool vec)
{
    /* TODO: with vec, each thread copies pieces of 8 bf16 (16 bytes) with
     *     __pipeline_memcpy_async(dst, src, 16, zfill)
     * where zfill is the number of bytes to write as zeros instead of copying: 16 for a piece
     * outside the matrix (keep src a valid address then: g itself). Without vec, 16-byte copies
     * would be misaligned: copy one bf16 at a time through registers, as load_tile_sync in
     * tile.cuh does (zeros outside). */
    (void)s; (void)g; (void)rows; (void)cols; (void)r0; (void)c0; (void)vec;
}

__global__ void __launch_bounds__(THREADS, 2)
gemm_pipelined_kernel(const bf16 *__restrict__ a, const bf16 *__restrict__ b,
                      float *__restrict__ c, int m, int k, int n, bool vec_a, bool vec_b)
{
#if GEMM_BF16_MMA
    /* two stages of each tile: 2 x (10240 + 8704) bytes, plus the scratch: 46 KB, under the
     * 48 KB a block may declare statically */
    __shared__ __align__(128) bf16 s_a[STAGES][GEMM_BM * LDS_A];
    __shared__ __align__(128) bf16 s_b[STAGES][GEMM_BK * LDS_B];
    __shared__ __align__(128) float s_scratch[8][16 * 16];

    int warp = threadIdx.x / 32;
    int warp_row = warp / 4, warp_col = warp % 4;
    int row0 = blockIdx.y * GEMM_BM, col0 = blockIdx.x * GEMM_BN;
    int tiles = cdiv(k, GEMM_BK);

    frag_c acc[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; i++)
#pragma unroll
        for (int j = 0; j < FRAG_N; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

    /* prologue (given): tile 0 into stage 0, one commit group */
    load_tile_async<GEMM_BM, GEMM_BK, LDS_A>(s_a[0], a, m, k, row0, 0, vec_a);
    load_tile_async<GEMM_BK, GEMM_BN, LDS_B>(s_b[0], b, k, n, 0, col0, vec_b);
    __pipeline_commit();

    /* TODO: the loop over the `tiles` tiles of k (tile t covers k from t * GEMM_BK). For
     * each tile t:
     *   __pipeline_wait_prior(0)   this thread's copies of tile t have landed;
     *   __syncthreads()            everyone's have, and everyone has finished tile t - 1,
     *                              whose stage is about to be refilled;
     *   if there is a tile t + 1, start its copies into the other stage ((t + 1) % STAGES);
     *   __pipeline_commit()        close this thread's group of copies (even an empty one);
     *   mma_tile<LDS_A, LDS_B> on stage t % STAGES: the math runs while tile t + 1 is in
     *                              flight. */
    (void)tiles; (void)warp_row; (void)warp_col;

    store_c_tile(c, s_scratch[warp], acc, m, n, row0 + warp_row * WARP_M,
                 col0 + warp_col * WARP_N);
#else
    __trap(); /* sm_75: no bf16 tensor cores */
#endif
}

void gemm_pipelined(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    const bf16 *a = reinterpret_cast<const bf16 *>(d_a), *b = reinterpret_cast<const bf16 *>(d_b);
    dim3 grid(cdiv(n, GEMM_BN), cdiv(m, GEMM_BM));
    gemm_pipelined_kernel<<<grid, THREADS>>>(a, b, d_c, m, k, n, rows_are_16b_aligned(a, k),
                                             rows_are_16b_aligned(b, n));
    CUDA_CHECK(cudaGetLastError());
}
