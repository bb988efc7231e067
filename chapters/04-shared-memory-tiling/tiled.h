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

/* Yours: 32x32 tiles of A and B staged in shared memory, any shape, tails handled. */
void matmul_tiled(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);

/* The baseline, given: chapter 01's coalesced kernel, one thread per element of C with
 * consecutive threadIdx.x on consecutive columns. */
void matmul_naive(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);

/* The rungs a file offers, in order, for the grader, the bench and the plot. */
typedef void (*tiled_fn)(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);
struct tiled_rung {
    const char *name;
    tiled_fn fn;
};
extern const struct tiled_rung TILED_RUNGS[];
extern const int TILED_NUM_RUNGS;

/* The candidate tile configurations of the last rung, for `grade --tune` (the solution has
 * several; the starter none). Each one's fn launches that configuration on any shape; it may
 * only be called where it fits: smem_bytes <= the device's sharedMemPerBlockOptin and
 * threads <= its maxThreadsPerBlock. */
struct tiled_config {
    const char *name;     /* "128x128x8 w64x32 db": block tile m x n x k, warp tile, buffering */
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
