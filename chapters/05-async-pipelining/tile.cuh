/* tile.cuh: the pieces every step of chapter 05 shares (given): the block tile's shape in
 * shared memory, the WMMA fragments, the synchronous tile load of the baseline (sync.cu), the
 * math on a tile (mma_tile) and the store of C (store_c_tile). The baseline and step 1 multiply
 * and store with these; step 3 stores with store_c_tile and multiplies the same way from its
 * TMA boxes, whose layout differs; steps 2 and 4 bring their own math (ldmatrix and mma.sync,
 * then wgmma) and use the shapes and rows_are_16b_aligned.
 *
 * One block of 8 warps computes a GEMM_BM x GEMM_BN (128 x 128) tile of C, stepping through k
 * GEMM_BK (32) at a time. The warps sit 2 x 4 over the tile: warp w owns the 64 x 32 stretch at
 * rows 64 (w / 4), columns 32 (w % 4), which is 4 x 2 WMMA accumulators of 16 x 16.
 *
 * Shared memory holds the A tile as 128 rows of 32 bf16 and the B tile as 32 rows of 128 bf16,
 * each row padded by 8 bf16 (16 bytes): a row of A is then 80 bytes and a row of B 272, so the
 * eight 16-byte rows that one phase of a fragment load (ldmatrix) reads fall in eight different
 * groups of four banks: no bank conflicts. */
#ifndef TILE_CUH
#define TILE_CUH

#include <cuda_bf16.h>
#include <mma.h>

#include "cuda_check.h"
#include "gemm.h"

namespace wmma = nvcuda::wmma;
typedef __nv_bfloat16 bf16;

#define THREADS 256                    /* 8 warps */
#define WARP_M 64                      /* the rows of C one warp owns */
#define WARP_N 32                      /* its columns */
#define FRAG_M (WARP_M / 16)           /* 4 accumulators down */
#define FRAG_N (WARP_N / 16)           /* 2 across */
#define PAD 8                          /* bf16 of padding a shared row: 16 bytes */
#define LDS_A (GEMM_BK + PAD)          /* 40 bf16 = 80 bytes a row of the A tile */
#define LDS_B (GEMM_BN + PAD)          /* 136 bf16 = 272 bytes a row of the B tile */
#define STAGE_A (GEMM_BM * LDS_A)      /* bf16 in one stage of A */
#define STAGE_B (GEMM_BK * LDS_B)      /* bf16 in one stage of B */
#define STAGE_BYTES ((STAGE_A + STAGE_B) * 2)  /* 18944 */
#define SCRATCH_FLOATS (8 * 16 * 16)   /* one 16 x 16 fp32 tile a warp, for the store of C */

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> frag_b;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

/* A row of `cols` bf16 at p starts on a 16-byte boundary for every row only when the base is
 * 16-byte aligned and cols is a multiple of 8: then a tile row moves in 16-byte pieces. */
static inline bool rows_are_16b_aligned(const void *p, int cols)
{
    return cols % 8 == 0 && (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

/* Synchronous load of a R x C tile (rows r0.., columns c0..) of the rows x cols matrix g into
 * s (row stride LDS), zeros outside the matrix. With vec, 16 bytes a thread a step through
 * registers (LDG.128 then STS.128); without, one bf16 at a time. Steps 1 and 2 fall back to
 * it where the rows are not 16-byte aligned. */
template <int R, int C, int LDS>
static __device__ __forceinline__ void load_tile_sync(bf16 *s, const bf16 *__restrict__ g,
                                                      int rows, int cols, int r0, int c0,
                                                      bool vec)
{
    if (vec) {
        for (int v = threadIdx.x; v < R * C / 8; v += THREADS) {
            int r = v / (C / 8), c = v % (C / 8) * 8;
            int gr = r0 + r, gc = c0 + c;
            uint4 val = make_uint4(0, 0, 0, 0);
            if (gr < rows && gc < cols) /* cols % 8 == 0: all 8 are in range */
                val = *reinterpret_cast<const uint4 *>(g + (size_t)gr * cols + gc);
            *reinterpret_cast<uint4 *>(s + r * LDS + c) = val;
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

/* acc += the warp's 64 x 32 share of (A tile) (B tile), 16 of k at a time. The A tile is
 * GEMM_BM x GEMM_BK, row-major with row stride LDA; the B tile GEMM_BK x GEMM_BN, row-major
 * with row stride LDB (a stage's padded strides: LDS_A and LDS_B). */
template <int LDA, int LDB>
static __device__ __forceinline__ void mma_tile(const bf16 *s_a, const bf16 *s_b,
                                                frag_c (&acc)[FRAG_M][FRAG_N], int warp_row,
                                                int warp_col)
{
#if GEMM_BF16_MMA
#pragma unroll
    for (int kk = 0; kk < GEMM_BK; kk += 16) {
        frag_a a[FRAG_M];
        frag_b b[FRAG_N];
#pragma unroll
        for (int i = 0; i < FRAG_M; i++)
            wmma::load_matrix_sync(a[i], s_a + (warp_row * WARP_M + i * 16) * LDA + kk, LDA);
#pragma unroll
        for (int j = 0; j < FRAG_N; j++)
            wmma::load_matrix_sync(b[j], s_b + kk * LDB + warp_col * WARP_N + j * 16, LDB);
#pragma unroll
        for (int i = 0; i < FRAG_M; i++)
#pragma unroll
            for (int j = 0; j < FRAG_N; j++)
                wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
#endif
}

/* Store the warp's accumulators into C, skipping what falls outside m x n. A fragment's
 * layout in the lanes is opaque, and store_matrix_sync straight to C would need a 32-byte
 * aligned address and n % 4 == 0: so each goes through the warp's 16 x 16 scratch in shared
 * memory, and the lanes copy it out with a bounds check. */
static __device__ __forceinline__ void store_c_tile(float *__restrict__ c, float *s_scratch,
                                                    frag_c (&acc)[FRAG_M][FRAG_N], int m, int n,
                                                    int row0, int col0)
{
    int lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < FRAG_M; i++)
#pragma unroll
        for (int j = 0; j < FRAG_N; j++) {
            wmma::store_matrix_sync(s_scratch, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp(); /* every lane's part of the tile is in the scratch */
            for (int e = lane; e < 256; e += 32) {
                int row = row0 + i * 16 + e / 16, col = col0 + j * 16 + e % 16;
                if (row < m && col < n)
                    c[(size_t)row * n + col] = s_scratch[e];
            }
            __syncwarp(); /* read before the next fragment overwrites it */
        }
}

#endif
