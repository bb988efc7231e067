/* divergence.h: the contract of chapter 03.
 *
 * process(d_in, d_out, n): for every element i in [0, n),
 *     d_out[i] = path_a(d_in[i])  when i is even,
 *     d_out[i] = path_b(d_in[i])  when i is odd.
 * Which thread computes which element is the launcher's choice: the output is defined per
 * element, not per thread. Any n from 1 to 2^30: nothing is a multiple of the block or of a
 * warp. Device pointers; every launcher launches on the default stream, checks the launch, and
 * returns without synchronising.
 *
 * path_a and path_b are below, shared by the kernels and the grader's CPU reference: both are
 * chains of fmaf, which is correctly rounded on the GPU and in C alike, so the GPU and the CPU
 * compute the same floats bit for bit.
 *
 * The grader, the bench and the book call only what is declared here. */
#ifndef DIVERGENCE_H
#define DIVERGENCE_H

#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the two paths ---------------------------------------------------------------------- */

#ifdef __CUDACC__
#define PATH_QUALIFIERS __host__ __device__ static inline
#else
#define PATH_QUALIFIERS static inline
#endif

/* Dependent FMAs on each path: long enough that the compiler cannot turn the branch into a
 * select (it would have to compute both 512-long chains for every lane), so a divergent warp
 * really issues both. */
#define PATH_FMAS 512

/* Path A, one FMA a step: a leaky accumulator, y <- y (1 - 2^-11) + x. After 512 steps
 * y is about 450 x. */
PATH_QUALIFIERS float path_a(float x)
{
    float y = x;
    for (int i = 0; i < PATH_FMAS; i++)
        y = fmaf(y, 0.99951171875f, x);
    return y;
}

/* Path B, two FMAs a step and half the steps, so the same issue cost as path A with another
 * formula: y <- 0.75 (x - 0.5 y) + 0.25, which settles near (0.75 x + 0.25) / 1.375. */
PATH_QUALIFIERS float path_b(float x)
{
    float y = x;
    for (int i = 0; i < PATH_FMAS / 2; i++) {
        y = fmaf(y, -0.5f, x);
        y = fmaf(y, 0.75f, 0.25f);
    }
    return y;
}

/* ---- the learner's task ----------------------------------------------------------------- */

/* Yours: the same output as process_divergent, with every branch warp-uniform. */
void process(const float *d_in, float *d_out, int n);

/* The baseline, given: thread i computes element i, so the even and odd lanes of every warp
 * take different paths and the warp issues both. Correct, and slow for a reason this chapter
 * is about. */
void process_divergent(const float *d_in, float *d_out, int n);

/* ---- the demos (demos.cu, given) -------------------------------------------------------- */

/* Demo 1, the same work branched two ways. Both give half the elements path A and half path B:
 *   parity_lane:  element i takes path B when its lane is odd (i odd): process_divergent;
 *   parity_warp:  element i takes path B when its warp is odd ((i / 32) odd): no divergence.
 * Their outputs differ (a different half takes each path); the work is the same. */
void parity_warp(const float *d_in, float *d_out, int n);

/* Demo 2, a data-dependent branch: d_out[i] = d_keys[i] < 0 ? path_a(key) : path_b(key).
 * Fed unsorted keys, about half the lanes of every warp go each way; fed the same keys
 * sorted, only the warp that straddles 0 diverges. */
void branch_on_key(const float *d_keys, float *d_out, int n);

/* Demo 3, one block's sum per REDUCE_BLOCK elements: d_out[b] = sum of d_in[b * REDUCE_BLOCK
 * ... (b + 1) * REDUCE_BLOCK - 1] (fewer in the last block), cdiv(n, REDUCE_BLOCK) outputs.
 * The same tree in shared memory, with two assignments of threads to its nodes. */
#define REDUCE_BLOCK 256
void reduce_interleaved(const float *d_in, float *d_out, int n);
void reduce_sequential(const float *d_in, float *d_out, int n);

/* A short branch, for reading SASS: d_out[i] = x < 0 ? -0.5 x : 2 x. Short enough that the
 * compiler predicates it: no branch in the machine code, so it cannot diverge. */
void short_branch(const float *d_in, float *d_out, int n);

/* ---- the rungs a file offers, in order, for the bench and the plot ---------------------- */

typedef void (*divergence_fn)(const float *d_in, float *d_out, int n);

/* What a rung computes, so that the bench checks each one against its own reference. */
enum rung_output {
    OUT_PROCESS,        /* element parity picks the path: process, process_divergent */
    OUT_WARP_PARITY,    /* (i / 32) parity picks the path: parity_warp */
    OUT_KEY_BRANCH,     /* the key's sign picks the path: branch_on_key */
    OUT_BLOCK_SUMS,     /* one sum per REDUCE_BLOCK elements: reduce_* */
};

struct divergence_rung {
    const char *pair;   /* the demo it belongs to: "parity", "keys", "reduce", "process" */
    const char *name;   /* slow one first: "lane", "warp"; "unsorted", "sorted"; ... */
    divergence_fn fn;
    enum rung_output output;
    int sorted_input;   /* 1: the bench sorts the input first (same keys, other order) */
};
extern const struct divergence_rung DIVERGENCE_RUNGS[];
extern const int DIVERGENCE_NUM_RUNGS;

#ifdef __cplusplus
}
#endif

#endif
