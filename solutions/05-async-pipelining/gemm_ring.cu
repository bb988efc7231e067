/* gemm_ring.cu: step 3 of 4. An N-stage ring of cp.async copies.
 * Change from step 2: STAGES shared-memory stages instead of two, and the copy of tile
 * t + STAGES - 1 issued while tile t is multiplied: up to STAGES - 1 tiles are in flight, so a
 * copy has STAGES - 1 tiles' worth of math to arrive instead of one. The price is shared
 * memory: 18.5 KB a stage, so 3 stages (55.5 KB) and 4 (74 KB) need dynamic shared memory
 * over the 48 KB default (cudaFuncSetAttribute), and fewer blocks fit on an SM.
 * Expected: ahead of step 2 at 4096^3. Measured on the H200 (2026-11-29): 154.2 TFLOP/s, 6%
 * behind step 2's 164.5 and 20% of cuBLAS BF16, and the stage sweep flat (2, 3, 4 stages: 156.1,
 * 154.1, 154.6): at the rate mma.sync reaches, one step of math already covers a copy's round
 * trip, so stages beyond two buy nothing. */
#include <cuda_pipeline.h>

#include "gemm_tile.cuh"

/* Like step 1's load_tile_sync, but the 16-byte pieces go by cp.async (zero-filled past the
 * edge, the source clamped to g); odd cols fall back to one bf16 at a time through registers. */
template <int R, int C, int LDS>
__device__ __forceinline__ void load_tile_async(bf16 *s, const bf16 *__restrict__ g, int rows,
                                                int cols, int r0, int c0, bool vec)
{
    if (!vec) {
        load_tile_sync<R, C, LDS>(s, g, rows, cols, r0, c0, false);
        return;
    }
    for (int v = threadIdx.x; v < R * C / 8; v += THREADS) {
        int r = v / (C / 8), c = v % (C / 8) * 8;
        int gr = r0 + r, gc = c0 + c;
        bool inside = gr < rows && gc < cols;
        __pipeline_memcpy_async(s + r * LDS + c, inside ? g + (size_t)gr * cols + gc : g, 16,
                                inside ? 0 : 16);
    }
}

/* the dynamic shared memory of a launch (declared at file scope: one name for every
 * instantiation of the template below) */
extern __shared__ __align__(128) bf16 smem[];

template <int STAGES>
__global__ void __launch_bounds__(THREADS, 2)
gemm_ring_kernel(const bf16 *__restrict__ a, const bf16 *__restrict__ b, float *__restrict__ c,
                 int m, int k, int n, bool vec_a, bool vec_b)
{
#if GEMM_BF16_MMA
    /* stage s: A at smem + s * (STAGE_A + STAGE_B), B right after it; then the scratch */
    float *s_scratch = reinterpret_cast<float *>(smem + STAGES * (STAGE_A + STAGE_B));

    int warp = threadIdx.x / 32;
    int warp_row = warp / (GEMM_BN / WARP_N), warp_col = warp % (GEMM_BN / WARP_N);
    int row0 = blockIdx.y * GEMM_BM, col0 = blockIdx.x * GEMM_BN;
    int tiles = cdiv(k, GEMM_BK);

    frag_c acc[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; i++)
#pragma unroll
        for (int j = 0; j < FRAG_N; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

    /* prologue: tiles 0 .. STAGES - 2 in flight, one commit group each (empty groups past the
     * last tile keep the count of groups, and so wait_prior's argument, the same) */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < tiles) {
            bf16 *st = smem + s * (STAGE_A + STAGE_B);
            load_tile_async<GEMM_BM, GEMM_BK, LDS_A>(st, a, m, k, row0, s * GEMM_BK, vec_a);
            load_tile_async<GEMM_BK, GEMM_BN, LDS_B>(st + STAGE_A, b, k, n, s * GEMM_BK, col0, vec_b);
        }
        __pipeline_commit();
    }

    for (int t = 0; t < tiles; t++) {
        /* of this thread's groups, all but the STAGES - 2 youngest are done: tile t's included */
        __pipeline_wait_prior(STAGES - 2);
        /* everyone's copies of tile t have landed, and everyone has finished tile t - 1, whose
         * stage the copy below refills */
        __syncthreads();
        int fill = t + STAGES - 1;
        if (fill < tiles) {
            bf16 *st = smem + (fill % STAGES) * (STAGE_A + STAGE_B);
            load_tile_async<GEMM_BM, GEMM_BK, LDS_A>(st, a, m, k, row0, fill * GEMM_BK, vec_a);
            load_tile_async<GEMM_BK, GEMM_BN, LDS_B>(st + STAGE_A, b, k, n, fill * GEMM_BK, col0, vec_b);
        }
        __pipeline_commit();
        const bf16 *st = smem + (t % STAGES) * (STAGE_A + STAGE_B);
        mma_tile<LDS_A, LDS_B>(st, st + STAGE_A, acc, warp_row, warp_col);
    }
    store_c_tile(c, s_scratch + warp * 256, acc, m, n, row0 + warp_row * WARP_M,
                 col0 + warp_col * WARP_N);
#else
    __trap(); /* sm_75: no bf16 tensor cores */
#endif
}

template <int STAGES>
static void gemm_ring_n(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    const bf16 *a = reinterpret_cast<const bf16 *>(d_a), *b = reinterpret_cast<const bf16 *>(d_b);
    size_t smem = (size_t)STAGES * STAGE_BYTES + SCRATCH_FLOATS * sizeof(float);
    /* over 48 KB of dynamic shared memory a block must be allowed explicitly */
    CUDA_CHECK(cudaFuncSetAttribute(gemm_ring_kernel<STAGES>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    dim3 grid(cdiv(n, GEMM_BN), cdiv(m, GEMM_BM));
    gemm_ring_kernel<STAGES><<<grid, THREADS, smem>>>(a, b, d_c, m, k, n,
                                                      rows_are_16b_aligned(a, k),
                                                      rows_are_16b_aligned(b, n));
    CUDA_CHECK(cudaGetLastError());
}

extern "C" {
/* step 3 proper: three stages */
void gemm_ring(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    gemm_ring_n<3>(d_a, d_b, d_c, m, k, n);
}
/* the sweep's other points */
void gemm_ring_2(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    gemm_ring_n<2>(d_a, d_b, d_c, m, k, n);
}
void gemm_ring_4(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n)
{
    gemm_ring_n<4>(d_a, d_b, d_c, m, k, n);
}
}
