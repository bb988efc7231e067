/* gemm.h: the contract of chapter 05.
 *
 * C = A * B with BF16 inputs and FP32 accumulation, every matrix row-major and in device memory:
 *   A is m x k bf16 (element (r, i) at d_a[r * k + i]),
 *   B is k x n bf16 (element (i, c) at d_b[i * n + c]),
 *   C is m x n fp32 (element (r, c) at d_c[r * n + c]).
 * Any m, k, n >= 1: nothing is a multiple of the tile, and k or n need not be a multiple of 8
 * (then a row of A or B does not start on a 16-byte boundary, and the 16-byte copies give way
 * to narrower ones: see README.md). Each launcher launches on the default stream, checks the
 * launch, and returns without synchronising.
 *
 * The header is C, for the grader: a bf16 is passed as its 16 bits (gemm_bf16, the same two
 * bytes as CUDA's __nv_bfloat16, which only C++ knows); the kernels reinterpret the pointers.
 *
 * The grader, the bench and the book call only what is declared here. */
#ifndef GEMM_H
#define GEMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t gemm_bf16;

/* The block tile every rung uses: BM x BN of C per block of 8 warps, BK of k per step. */
#define GEMM_BM 128
#define GEMM_BN 128
#define GEMM_BK 32

/* BF16 tensor cores (and WMMA's bf16 fragments) arrived with sm_80. The build also makes sm_75
 * code, where every kernel of this chapter compiles to a trap: a kernel body sits inside
 * #if GEMM_BF16_MMA ... #else __trap(); #endif, and the grader skips the chapter below sm_80. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define GEMM_BF16_MMA 0
#else
#define GEMM_BF16_MMA 1
#endif

/* Yours (gemm_pipelined.cu): rung 2, two shared-memory stages filled by cp.async, the copy of
 * tile t + 1 in flight while tile t is multiplied. */
void gemm_pipelined(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n);

/* The baseline, given (gemm_sync.cu): rung 1, the same tiles and the same WMMA math, but each
 * tile is loaded, waited for, then multiplied. Correct, and idle for a reason this chapter is
 * about. */
void gemm_sync(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n);

/* The rungs a file offers, in order, for the grader, the bench and the plot. */
typedef void (*gemm_fn)(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k,
                        int n);
struct gemm_rung {
    const char *name;   /* "sync", "pipelined", "ring", "tma"; "stages:N" for the sweep */
    gemm_fn fn;         /* NULL: this build has no such rung (TMA on the CPU backend) */
    int min_cc;         /* the compute capability it needs, 10 * major + minor: 80, 90 for TMA */
    int sweep;          /* 1: a row of the stage-count sweep, benched at 4096^3 only */
};
extern const struct gemm_rung GEMM_RUNGS[];
extern const int GEMM_NUM_RUNGS;

#ifdef __cplusplus
}
#endif

#endif
