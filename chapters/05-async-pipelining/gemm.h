/* gemm.h: the contract of chapter 05.
 *
 * C = A * B with BF16 inputs and FP32 accumulation, every matrix row-major and in device memory:
 *   A is m x k bf16 (element (r, i) at d_a[r * k + i]),
 *   B is k x n bf16 (element (i, c) at d_b[i * n + c]),
 *   C is m x n fp32 (element (r, c) at d_c[r * n + c]).
 * Any m, k, n >= 1: nothing is a multiple of the tile, and k or n need not be a multiple of 8
 * (then a row of A or B does not start on a 16-byte boundary, and no 16-byte copy can take it:
 * the baseline and step 1 copy such rows one bf16 at a time, steps 2 to 4 multiply copies padded
 * to 16-byte rows, pad_rows.h: see README.md). Each launcher launches on the default stream,
 * checks the launch, and returns without synchronising.
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

/* The block tile of the given baseline and of steps 1 and 3: BM x BN of C per block of 8 warps,
 * BK of k per step (tile.cuh has the rest of its shape). */
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

/* The given baseline (sync.cu): the same tiles and the same WMMA math as step 1, but each tile
 * is loaded, waited for, then multiplied. Correct, and idle for a reason this chapter is
 * about. */
void gemm_sync(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n);

/* Step 1 (step1_pipelined.cu): two shared-memory stages filled by cp.async, the copy of tile
 * t + 1 in flight while tile t is multiplied. */
void gemm_pipelined(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n);

/* Step 2 (step2_ring.cu): a ring of three cp.async stages, a 128 x 256 block tile, ldmatrix and
 * mma.sync; gemm_ring_2 and gemm_ring_4 are the same with 2 and 4 stages, for the sweep. */
void gemm_ring(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n);
void gemm_ring_2(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n);
void gemm_ring_4(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n);

/* Step 3 (step3_tma_sm90.cu, sm_90 and later): TMA copies, an mbarrier ring, a producer warp.
 * Step 4 (step4_wgmma_sm90a.cu, sm_90a: compute capability 9.0 only): wgmma, setmaxnreg.
 * TMA describes rows that start on 16 bytes only (k and n multiples of 8, 16-byte aligned
 * bases): for other shapes both describe padded copies (pad_rows.h). The CPU backend leaves
 * their files out (TMA, mbarrier and wgmma are PTX it cannot run): there these two are not
 * linked. */
void gemm_tma(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n);
void gemm_wgmma(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k, int n);

/* Step 5 (step5_persistent_sm90a.cu, sm_90a): step 4's math in persistent CTAs (one an SM,
 * each walking a list of tiles), clusters of two that share A by TMA multicast, a tile order
 * that keeps L2 warm, and a tile chosen by the shape. Not linked on the CPU backend. */
void gemm_persistent(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k,
                     int n);

/* The roof of the mma.sync path (the reference's step2_ring.cu): blocks of 8 warps, each warp
 * iters x 8 products of 16 x 8 x 16 from registers, no memory traffic. d_sink: 256 floats. */
void gemm_mma_sync_peak(float *d_sink, int blocks, int iters);

/* The ladder, in order, for the grader, the bench and the plot (steps.cu): the given baseline,
 * the five steps, then the stage-count sweep of step 2. */
typedef void (*gemm_fn)(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k,
                        int n);
struct gemm_step {
    const char *name;   /* "sync", "pipelined", "ring", "tma", "wgmma", "persistent";
                         * "stages:N" for the sweep */
    int step;           /* its step, 1 to 5; 0 for the given baseline (sync) and the sweep */
    gemm_fn fn;         /* NULL: this build has no such step (steps 3 to 5 on the CPU backend) */
    int min_cc;         /* the compute capability it needs, 10 * major + minor: 80, 90 for TMA */
    int sweep;          /* 1: a row of the stage-count sweep, benched at 4096^3 only */
    int arch_specific;  /* 1: sm_XYa code (wgmma), which runs on compute capability min_cc
                         * exactly, not before it and not after */
};
extern const struct gemm_step GEMM_STEPS[];
extern const int GEMM_NUM_STEPS;
/* The same table over the references (solutions/), which the build links into every grader
 * under the prefix ref_: step k's speed is measured against ref_GEMM_STEPS' step k - 1. */
extern const struct gemm_step ref_GEMM_STEPS[];
extern const int ref_GEMM_NUM_STEPS;

#ifdef __cplusplus
}
#endif

#endif
