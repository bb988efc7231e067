/* split.h: the judge and the runner of a split test (grade.h, "the judge and the runner"), as
 * the graders of host code use them (chapters 08 and 12): which process runs the code under
 * grading and which checks, and what crosses from the one to the other. Everything that comes
 * back is a claim of the code under grading, to be bounded before it sizes anything and never
 * taken as a pointer. Unsplit (CK_FORK=no) one process does both, and the exchanges do nothing. */
#ifndef SPLIT_H
#define SPLIT_H

#include <stddef.h>

#include <check.h>
#include <cuda_runtime_api.h>

#include "grade.h"

/* 1 where the code under grading runs: the runner, or an unsplit test */
static inline int runs(void)
{
    return grade_role() != GRADE_JUDGE;
}

/* 1 where checks are made: the judge, or an unsplit test */
static inline int judges(void)
{
    return grade_role() != GRADE_RUNNER;
}

/* ck_assert_msg where checks are made; the runner checks nothing */
#define JUDGE(cond, ...) do { if (judges()) ck_assert_msg(cond, __VA_ARGS__); } while (0)

/* the most bytes one message carries: a 256 MiB buffer goes in 64 */
#define SPLIT_PIECE ((size_t)4 << 20)

/* n bytes at p: the runner's sent, the judge's overwritten with them, a piece at a time */
static inline void exchange_pieces(void *p, size_t n)
{
    for (size_t off = 0; off < n; off += SPLIT_PIECE)
        grade_exchange_bytes((unsigned char *)p + off,
                             n - off < SPLIT_PIECE ? n - off : SPLIT_PIECE);
}

static inline cudaError_t code_seen(cudaError_t e)
{
    grade_exchange_bytes(&e, sizeof e);
    return e;
}

/* The code `call` returned, as both see it: the call is made where the code under grading runs
 * (the judge does not evaluate it), and its code is sent */
#define SEEN(call) code_seen(runs() ? (call) : cudaSuccess)

/* The next seed drawn, and the CPU backend's schedule shuffled with it where the code runs (the
 * judge draws it too, to stay in step with the runner's inputs) */
static inline void shuffle(struct rng *r)
{
    unsigned long long seed = rng_next(r);
    if (runs())
        gpu_shuffle_schedule(seed);
}

#endif
