/* sync.cu: the given baseline of chapter 05. The synchronous tiled GEMM on tensor cores.
 *
 * Each block computes a 128 x 128 tile of C with 8 warps of WMMA (16 x 16 x 16 bf16 fragments,
 * fp32 accumulators). Per step of k: every thread loads its share of the A and B tiles into
 * shared memory, the block waits (__syncthreads), the warps multiply, the block waits again.
 * Nothing overlaps: while a tile's loads are in flight (hundreds of cycles from HBM) the warps
 * only wait on them, and while the warps multiply no load is in flight. With two blocks on an
 * SM the other block fills some of the gaps; that is all the overlap this rung gets.
 * Expect: the baseline of the ladder, bound by that waiting rather than by the tensor cores;
 * step 1 (step1_pipelined.cu) overlaps the loads with the math. */
#include "tile.cuh"

static __global__ void __launch_bounds__(THREADS, 2)
gemm_sync_kernel(const bf16 *__restrict__ a, const bf16 *__restrict__ b, float *__restrict__ c,
                 int m, int k, int n, bool vec_a, bool vec_b)
{
#if GEMM_BF16_MMA
    __shared__ __align__(128) bf16 s_a[STAGE_A];
    __shared__ __align__(128) bf16 s_b[STAGE_B];
    __shared__ __align__(128) float s_scratch[SCRATCH_FLOATS];

    int warp = threadIdx.x / 32;
    int warp_row = warp / (GEMM_BN / WARP_N), warp_col = warp % (GEMM_BN / WARP_N);
    int row0 = blockIdx.y * GEMM_BM, col0 = blockIdx.x * GEMM_BN;

    frag_c acc[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; i++)
#pragma unroll
        for (int j = 0; j < FRAG_N; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < k; k0 += GEMM_BK) {
        load_tile_sync<GEMM_BM, GEMM_BK, LDS_A>(s_a, a, m, k, row0, k0, vec_a);
        load_tile_sync<GEMM_BK, GEMM_BN, LDS_B>(s_b, b, k, n, k0, col0, vec_b);
        __syncthreads(); /* the tile is complete: every warp reads all of it */
        mma_tile<LDS_A, LDS_B>(s_a, s_b, acc, warp_row, warp_col);
        __syncthreads(); /* every warp is done with the tile before it is overwritten */
    }
    store_c_tile(c, s_scratch + warp * 256, acc, m, n, row0 + warp_row * WARP_M,
                 col0 + warp_col * WARP_N);
#else
    __trap(); /* sm_75: no bf16 tensor cores */
#endif
}

void gemm_sync(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    const bf16 *a = reinterpret_cast<const bf16 *>(d_a), *b = reinterpret_cast<const bf16 *>(d_b);
    dim3 grid(cdiv(n, GEMM_BN), cdiv(m, GEMM_BM));
    gemm_sync_kernel<<<grid, THREADS>>>(a, b, d_c, m, k, n, rows_are_16b_aligned(a, k),
                                        rows_are_16b_aligned(b, n));
    CUDA_CHECK(cudaGetLastError());
}
