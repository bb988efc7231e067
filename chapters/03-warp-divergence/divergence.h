/* divergence.h: the contract of chapter 03, a ladder of two steps.
 *
 * Step 1, process(d_in, d_out, n): for every element i in [0, n),
 *     d_out[i] = path_a(d_in[i])  when i is even,
 *     d_out[i] = path_b(d_in[i])  when i is odd.
 * Which thread computes which element is the launcher's choice: the output is defined per
 * element, not per thread.
 *
 * Step 2, compact(d_in, n, d_out, d_count): every element of d_in[0, n) that compact_keep()
 * keeps, copied to d_out[0 .. count), in any order, and count written to *d_count.
 *
 * Any n from 1 to 2^30: nothing is a multiple of the block or of a warp. Device pointers;
 * every launcher launches on the default stream, checks the launch, and returns without
 * synchronising.
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

/* ---- step 1: warp-uniform remap (step1_remapped.cu) ------------------------------------ */

/* Yours: the same output as process_divergent, with every branch warp-uniform. */
void process(const float *d_in, float *d_out, int n);

/* The baseline, given: thread i computes element i, so the even and odd lanes of every warp
 * take different paths and the warp issues both. Correct, and slow for a reason this chapter
 * is about. */
void process_divergent(const float *d_in, float *d_out, int n);

/* ---- step 2: stream compaction (step2_compact.cu) ---------------------------------------- */

/* The predicate: x > 0. NaN (either sign), +0 and -0 are never kept; neither is any
 * negative. Shared by the kernels and the grader's host reference. */
PATH_QUALIFIERS int compact_keep(float x)
{
    return x > 0.0f;
}

/* Yours: compact(d_in, n, d_out, d_count) copies every x = d_in[i], i in [0, n), with
 * compact_keep(x) to d_out[0 .. count), each exactly once, in any order (the order within a
 * warp and across warps is free), and writes count to *d_count. d_out has room for n floats;
 * nothing at d_out[count] or past it is written. *d_count holds garbage on entry: the launcher
 * sets it (a launch may be repeated on the same buffers and must give the same count). */
void compact(const float *d_in, int n, float *d_out, int *d_count);

/* The baseline, given (compact_atomic.cu): each kept element takes its slot with its own
 * atomicAdd on the counter, one global atomic per kept element, every one on the same
 * address. */
void compact_atomic(const float *d_in, int n, float *d_out, int *d_count);

/* The library, for scale (compact_cub_gpu.cu, GPU builds only: the CPU backend has no CUB):
 * cub::DeviceSelect::If with compact_keep, which also keeps the input order. The grader and
 * the rung table declare it weak, so a build without it sees NULL. */

typedef void (*compact_fn)(const float *d_in, int n, float *d_out, int *d_count);

/* ---- the steps, in order (steps.cu) ------------------------------------------------------ */

/* One step's launcher: its contract is step 1's (process) or step 2's (compact), the other
 * NULL. Each step has its own given baseline (process_divergent, compact_atomic): step 2 is a
 * new problem, not a faster step 1. */
struct divergence_step {
    const char *name;       /* "remapped", "compact" */
    void (*process)(const float *d_in, float *d_out, int n);
    compact_fn compact;
};
extern const struct divergence_step DIVERGENCE_STEPS[];
extern const int DIVERGENCE_NUM_STEPS;
/* The same table over the references, which the build links into every grader under the
 * prefix ref_ (solutions/ renamed): the reference of each step, whichever side is graded. */
extern const struct divergence_step ref_DIVERGENCE_STEPS[];
extern const int ref_DIVERGENCE_NUM_STEPS;

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

/* ---- the rungs, in order, for the bench, the plot and the profile driver (steps.cu) ------ */

typedef void (*divergence_fn)(const float *d_in, float *d_out, int n);

/* What a rung computes, so that the bench checks each one against its own reference. */
enum rung_output {
    OUT_PROCESS,        /* element parity picks the path: process, process_divergent */
    OUT_WARP_PARITY,    /* (i / 32) parity picks the path: parity_warp */
    OUT_KEY_BRANCH,     /* the key's sign picks the path: branch_on_key */
    OUT_BLOCK_SUMS,     /* one sum per REDUCE_BLOCK elements: reduce_* */
    OUT_COMPACT,        /* the kept elements and their count: compact_* (fn NULL, compact set) */
};

struct divergence_rung {
    const char *pair;   /* the demo it belongs to: "parity", "keys", "reduce", "process",
                           "compact" */
    const char *name;   /* slow one first: "lane", "warp"; "unsorted", "sorted"; ...;
                           "atomic", "warp", "cub" */
    divergence_fn fn;
    enum rung_output output;
    int sorted_input;   /* 1: the bench sorts the input first (same keys, other order) */
    compact_fn compact; /* OUT_COMPACT's launcher (NULL where the build lacks it: cub on the
                           CPU backend) */
};
extern const struct divergence_rung DIVERGENCE_RUNGS[];
extern const int DIVERGENCE_NUM_RUNGS;

#ifdef __cplusplus
}
#endif

#endif
