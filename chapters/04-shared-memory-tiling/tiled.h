/* tiled.h: the contract of chapter 04.
 *
 * C = A * B in fp32, every matrix row-major and in device memory, exactly as in chapter 01:
 *   A is m x k (element (r, i) at d_a[r * k + i]),
 *   B is k x n (element (i, c) at d_b[i * n + c]),
 *   C is m x n (element (r, c) at d_c[r * n + c]).
 * Shapes are written m x k x n: 4096x72x4096 is m = 4096, k = 72, n = 4096.
 * Any m, k, n >= 1: nothing is a multiple of a tile, and rows of odd width are not 16-byte
 * aligned; m k, k n and m n stay below 2^31 (int indices). Each launcher launches on the
 * default stream, checks the launch, and returns without synchronising.
 *
 * The grader, the bench and the book call only what is declared here. */
#ifndef TILED_H
#define TILED_H

#ifdef __cplusplus
extern "C" {
#endif

/* The baseline, given: chapter 01's coalesced kernel, one thread per element of C with
 * consecutive threadIdx.x on consecutive columns (matmul_naive.cu). */
void matmul_naive(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);

/* Yours, one file a step (stepK_NAME.cu), each launcher for any shape, tails handled; the
 * grader's gates are in each file's TODO and in README.md.
 *   step 1  32x32 shared tile            */
void matmul_tiled(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);
/*   step 2  1D register blocking         */
void matmul_blocked_1d(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);
/*   step 3  2D register blocking         */
void matmul_blocked_2d(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);
/*   step 4  float4 loads, transposed A   */
void matmul_vectorized(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);
/*   step 5  warp tiling                  */
void matmul_warptiled(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);
/*   step 6  split-K and the configuration table: a configuration of TILED_CONFIGS per shape */
void matmul_tuned(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);
/*   step 7  a multistage cp.async ring, fragments double-buffered in registers      */
void matmul_multistage(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);

/* The steps in order (steps.cu), for the grader, the bench and the plot: name is the rung's
 * name in the bench's rows and the plots (the given baseline's is "naive"). */
typedef void (*tiled_fn)(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);
struct tiled_step {
    const char *name;     /* "blocked_1d" */
    const char *title;    /* "1D register blocking" */
    tiled_fn fn;
};
extern const struct tiled_step TILED_STEPS[];
extern const int TILED_NUM_STEPS;
/* The same table over the references (solutions/04-shared-memory-tiling/), which the build
 * links into every grader of this chapter under the prefix ref_: step k's speed is measured
 * against ref_TILED_STEPS[k - 2].fn, the reference of the step before it. */
extern const struct tiled_step ref_TILED_STEPS[];
extern const int ref_TILED_NUM_STEPS;

/* Step 6's candidate tile configurations (step6_tuned.cu), for its grader and `grade --tune`
 * (the starter has none). Each one's fn launches that configuration on any shape; it may
 * only be called where it fits: smem_bytes <= the device's sharedMemPerBlockOptin and
 * threads <= its maxThreadsPerBlock. */
struct tiled_config {
    /* "128x128x8_w64x32_db_k4": block tile m x n x k, warp tile m x n, sb or db (one shared
     * stage or two), then _kS where k is split S ways (split-K; the grader reads S there) */
    const char *name;
    int bm, bn, bk;       /* block tile: rows of C, columns of C, depth of one k step */
    int wm, wn;           /* warp tile: rows and columns of C one warp owns */
    int threads;          /* threads a block */
    int smem_bytes;       /* shared memory a block (dynamic) */
    tiled_fn fn;
};
extern const struct tiled_config *const TILED_CONFIGS;
extern const int TILED_NUM_CONFIGS;

#ifdef __cplusplus
}
#endif

#endif
