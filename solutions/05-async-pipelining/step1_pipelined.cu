/* step1_pipelined.cu: step 1 of 5, the solution. Double buffering with cp.async.
 * Change from the given baseline (sync.cu): two shared-memory stages. The copy of tile t + 1
 * is issued with __pipeline_memcpy_async (cp.async, LDGSTS in the machine code: global memory to shared memory
 * without passing through registers, so the thread does not wait for it) before tile t is
 * multiplied; the block waits for a tile only when it is about to multiply it, by which time
 * it has had a whole tile's worth of math to arrive.
 * Expect: faster than the baseline (the grader asks 1.35x at 4096^3), because the loads are
 * hidden behind the math; what bounds it then is mma.sync (WMMA) and how its fragments are fed
 * from shared memory, which steps 2 to 4 take on (see the chapter's README). */
#include <cuda_pipeline.h>

#include "tile.cuh"   /* the tile's shape, the fragments, mma_tile and store_c_tile */

#define STAGES 2

/* Start the copy of the R x C tile at (r0, c0) of the rows x cols row-major matrix g into s
 * (row stride LDS); zeros where the tile hangs over the edge of the matrix, so the math needs
 * no bounds checks. Adds to the thread's current cp.async group; nothing waits here.
 *
 * vec (cols % 8 == 0, base 16-byte aligned): 16 bytes a copy, which cp.async requires to be
 * 16-byte aligned at both ends. A piece past the edge copies 0 bytes and zero-fills 16 (the
 * 4th argument is how many bytes to zero); its source is clamped to g so that no address past
 * the matrix is ever formed. Otherwise (odd cols): one bf16 at a time through registers, as in
 * the baseline; correct, and slower, since cp.async copies only 4, 8 or 16 aligned bytes. */
template <int R, int C, int LDS>
static __device__ __forceinline__ void load_tile_async(bf16 *s, const bf16 *__restrict__ g,
                                                       int rows, int cols, int r0, int c0,
                                                       bool vec)
{
    if (vec) {
        for (int v = threadIdx.x; v < R * C / 8; v += THREADS) {
            int r = v / (C / 8), c = v % (C / 8) * 8;
            int gr = r0 + r, gc = c0 + c;
            bool inside = gr < rows && gc < cols; /* cols % 8 == 0: all 8 or none */
            const bf16 *src = inside ? g + (size_t)gr * cols + gc : g;
            __pipeline_memcpy_async(s + r * LDS + c, src, 16, inside ? 0 : 16);
        }
    } else {
        for (int e = threadIdx.x; e < R * C; e += THREADS) {
            int r = e / C, c = e % C;
            int gr = r0 + r, gc = c0 + c;
            s[r * LDS + c] = gr < rows && gc < cols ? g[(size_t)gr * cols + gc]
                                                    : __float2bfloat16(0.0f);
        }
    }
}

static __global__ void __launch_bounds__(THREADS, 2)
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

    /* prologue: tile 0 into stage 0 */
    load_tile_async<GEMM_BM, GEMM_BK, LDS_A>(s_a[0], a, m, k, row0, 0, vec_a);
    load_tile_async<GEMM_BK, GEMM_BN, LDS_B>(s_b[0], b, k, n, 0, col0, vec_b);
    __pipeline_commit();

    for (int t = 0; t < tiles; t++) {
        int cur = t % STAGES, next = (t + 1) % STAGES;
        /* this thread's copies of tile t have landed (no group is younger yet)... */
        __pipeline_wait_prior(0);
        /* ...and everyone's: after this barrier every warp has also finished multiplying
         * tile t - 1, so its stage (next) may be overwritten */
        __syncthreads();
        if (t + 1 < tiles) {
            load_tile_async<GEMM_BM, GEMM_BK, LDS_A>(s_a[next], a, m, k, row0, (t + 1) * GEMM_BK, vec_a);
            load_tile_async<GEMM_BK, GEMM_BN, LDS_B>(s_b[next], b, k, n, (t + 1) * GEMM_BK, col0, vec_b);
        }
        __pipeline_commit();
        /* the tensor cores work on tile t while tile t + 1 is in flight */
        mma_tile<LDS_A, LDS_B>(s_a[cur], s_b[cur], acc, warp_row, warp_col);
    }
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
