/* split.h: the judge and the runner of a split test (grade.h, "the judge and the runner"), as
 * the graders of host code use them (chapters 08 and 12): which process runs the code under
 * grading and which checks, and what crosses from the one to the other; and the CPU backend's
 * counts of what is held (streams, events, pinned and registered host memory, device buffers),
 * read where the code runs and judged where the checks are. Everything that comes back is a
 * claim of the code under grading, to be bounded before it sizes anything and never taken as a
 * pointer. Unsplit (CK_FORK=no) one process does both, and the exchanges do nothing. */
#ifndef SPLIT_H
#define SPLIT_H

#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include <check.h>
#include <cuda_runtime_api.h>
#ifdef HARNESS_EMU
#include <emu_memory.h>
#include <emu_streams.h>
#endif

#include "grade.h"

/* a CUDA error's name, as the messages print it */
static inline const char *err_name(cudaError_t e)
{
    return cudaGetErrorName(e);
}

/* the host's monotonic clock, in milliseconds (the grader defines _POSIX_C_SOURCE or more) */
static inline double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

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

/* ---- what is held: the CPU backend's counts ------------------------------------------------ */

struct census {
    int streams, events, pinned, registered, buffers; /* -1 where nobody can count (a GPU) */
};

/* The counts where the code runs, as both see them; on a GPU nobody counts, and nothing goes */
static inline struct census census_seen(void)
{
    struct census c = { -1, -1, -1, -1, -1 };
#ifdef HARNESS_EMU
    if (runs()) {
        c.streams = emu_live_streams();
        c.events = emu_live_events();
        c.pinned = emu_live_pinned(0);
        c.registered = emu_live_pinned(1);
        c.buffers = emu_live_allocations(0);
    }
    grade_exchange_bytes(&c, sizeof c);
#endif
    return c;
}

/* Fails the test, with `hint`, when more is held now than at `before` (census_seen's). `what`
 * names the run. */
static inline void census_check(int slot, struct census before, const char *what,
                                const char *hint)
{
#ifdef HARNESS_EMU
    struct census now = census_seen();
    if (!judges())
        return;
    static const char *const NAMES[] = { "stream(s)", "event(s)",
                                         "pinned buffer(s) (cudaMallocHost)",
                                         "registered range(s) (cudaHostRegister)",
                                         "device buffer(s)" };
    int was[] = { before.streams, before.events, before.pinned, before.registered, before.buffers };
    int is[] = { now.streams, now.events, now.pinned, now.registered, now.buffers };
    char msg[512] = "";
    size_t len = 0;
    for (int i = 0; i < 5; i++)
        if (is[i] > was[i] && len < sizeof msg) /* counts the runner sent: no overflow either */
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%lld %s", len ? ", " : "",
                                    (long long)is[i] - was[i], NAMES[i]);
    if (len) {
        grade_hint(slot, "%s", hint);
        ck_abort_msg("%s: still held afterwards: %s", what, msg);
    }
#else
    (void)slot, (void)before, (void)what, (void)hint; /* a GPU has no such count */
#endif
}

#endif
