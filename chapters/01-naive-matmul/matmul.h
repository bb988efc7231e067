/* matmul.h: the contract of chapter 01.
 *
 * C = A * B in fp32, every matrix row-major and in device memory:
 *   A is m x k (element (r, i) at d_a[r * k + i]),
 *   B is k x n (element (i, c) at d_b[i * n + c]),
 *   C is m x n (element (r, c) at d_c[r * n + c]).
 * Any m, k, n >= 1: nothing is a multiple of the block size. Each launcher launches its kernel
 * on the default stream, checks the launch, and returns without synchronising.
 *
 * The grader, the bench and the book call only what is declared here. */
#ifndef MATMUL_H
#define MATMUL_H

#ifdef __cplusplus
extern "C" {
#endif

/* Yours: one thread per element of C, with consecutive threadIdx.x on consecutive columns. */
void matmul(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);

/* The baseline, given: one thread per element of C, with consecutive threadIdx.x on
 * consecutive rows. Correct, and slow for a reason this chapter is about. */
void matmul_uncoalesced(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);

/* The rungs a file offers, in order, for the bench and the plot. */
typedef void (*matmul_fn)(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);
struct matmul_rung {
    const char *name;
    matmul_fn fn;
};
extern const struct matmul_rung MATMUL_RUNGS[];
extern const int MATMUL_NUM_RUNGS;

#ifdef __cplusplus
}
#endif

#endif
