/* flow.h: the grading choreography every chapter shares, generic over a chapter's problem.
 *
 * A chapter's problem (its inputs, reference, output buffer and check) is a flow_kind: a table
 * of callbacks that a grading family fills (graders/gemm_family.c for the matmul chapters).
 * Over it, this file runs what every grader does the same way:
 *
 *   correct   each shape of a list (the GPU's or the CPU backend's), twice on fresh inputs:
 *             a kernel that remembers an answer fails the second run, and on the CPU backend
 *             the second run also shuffles the order threads meet at barriers
 *   titles    "correct 256x256x256 (in place of the GPU's 1024x1024x1024)", or the shape
 *             graded only, where a chapter's titles never named the GPU's
 *   speed     yours checked first (against the host's reference, or a given kernel's output
 *             where the host would take too long), then the baseline and yours timed in the
 *             same run, each after a poison, on 3 to 5 problems of their own inputs in turn
 *             (as many as the seed says: a launcher that hands back a kept output for inputs
 *             it saw last computes on every timed call), yours re-checked on what its last
 *             timed run of each problem wrote, the ceiling timed (first, last, or in the
 *             chapter's order); the chapter's verdict writes the note, summary and hint and
 *             asserts
 *   split     correctness and speed tests run as a judge and a runner (grade.h): the
 *             learner's code in the runner, every check in the judge
 *   bench     every rung of a table and the library, per shape: poison, time, check, one row
 *
 *   static void add_tests(Suite *s) {
 *       flow_add_correct(s, &MATMUL.kind, &SHAPES, (flow_fn)matmul, "matmul");
 *       flow_add_speed(s, &SPEED);
 *   }
 *
 * It includes no chapter header: kernels come in as flow_fn, which the kind casts back. */
#ifndef FLOW_H
#define FLOW_H

#include "grade.h"
#include "launches.h"

/* A chapter's launcher, cast to the type that matches any function; the kind's launch casts
 * it back to the launcher's real type. */
typedef void (*flow_fn)(void);

struct flow_kind {
    size_t shape_size;                              /* bytes of one shape of a shape table */
    void *(*init)(const struct flow_kind *k, const void *shape);  /* buffers, no inputs */
    void (*fill)(void *p, struct rng *r);           /* fresh inputs, reference, poisoned output */
    void (*launch)(void *p, flow_fn fn);            /* fn once on p, not synchronised */
    /* the library on p (cuBLAS): 0, or -1 where there is none (the CPU backend) */
    int (*library)(void *p);
    /* guard zones and values; on a mismatch, fails the test ("%dx%dx%d: WHAT: ...") */
    void (*check)(void *p, int slot, const char *what);
    void (*poison)(void *p);                        /* the output refilled with NaN */
    void (*free)(void *p);
    void (*shape_name)(const void *shape, char *buf, size_t len);  /* "1000x999x1001" */
    double (*work)(const void *shape);              /* for quick mode, in work_unit */
    const char *work_unit;                          /* "multiply-adds" */
    /* bench only: fresh inputs and the library's reference; and the check of what a rung
     * wrote, which prints why and returns -1 instead of failing a test */
    void (*bench_fill)(void *p, struct rng *r);
    int (*bench_check)(void *p, const char *name, const char *shape);
    /* optional, for a speed test whose reference is a kernel's output (flow_speed.reference):
     * fresh inputs and a poisoned output, no reference; and the output as it is made the
     * reference */
    void (*fill_inputs)(void *p, struct rng *r);
    void (*adopt)(void *p);
    /* optional, bench only: the problem set up for a rung's arg (flow_rung) before its runs */
    void (*bench_select)(void *p, const void *arg);
};

/* Shape i of a table of the kind's shapes. */
const void *flow_shape_at(const struct flow_kind *k, const void *table, int i);

/* A chapter's correctness shapes: the GPU's, and the CPU backend's, where the shapes that only
 * exist to fill a GPU shrink (same count, same order). */
struct flow_shapes {
    const void *gpu, *cpu;
    int n;
    int plain_titles;           /* 1: titles name the shape graded only (flow_title) */
};

/* Shape i of the list this backend grades: the GPU's where timings are real, else the CPU's. */
const void *flow_shape_here(const struct flow_kind *k, const struct flow_shapes *s, int i);

/* "correct SHAPE", and " (in place of the GPU's SHAPE)" where this backend's shape differs
 * and the titles are not plain, into buf (len bytes). */
void flow_title(const struct flow_kind *k, const struct flow_shapes *s, int i, char *buf,
                size_t len);

/* ---- correctness ---------------------------------------------------------------------------- */

/* flow_twice's flags */
#define FLOW_SAME_LABEL 1u /* both runs are labelled `what`: no ", second run" */

/* fn on p twice, each time on fresh inputs (kind->fill) and checked (kind->check, which fails
 * the test): the second after gpu_shuffle_schedule(rng_next(r)), labelled "WHAT, second run"
 * or "WHAT, second run, shuffled schedule" unless FLOW_SAME_LABEL. */
void flow_twice(const struct flow_kind *k, void *p, struct rng *r, flow_fn fn, const char *what,
                int slot, unsigned flags);

/* The whole test of one shape: the quick-mode hook, the test's generator, a problem of that
 * shape, flow_twice, and the problem freed. */
void flow_correct(const struct flow_kind *k, int slot, const void *shape, flow_fn fn,
                  const char *what);

/* Each shape of a table in turn, each twice (flow_twice, labels as flags say), all from one
 * generator grade_rng(slot): a rung's test over small odd shapes. The test is split into a
 * judge and a runner (grade.h) here, so it must be the test's first step: no CUDA call before
 * it (a process may not fork once it has a CUDA context). */
void flow_correct_each(const struct flow_kind *k, int slot, const void *shapes, int n, flow_fn fn,
                       const char *what, unsigned flags);

/* Registers the test "correct" (timeout 120 s): flow_correct on every shape of the list for
 * this backend, each titled by flow_title. The kind, the list and fn must outlive the run
 * (statics). Returns the slot of the first shape. One a step, say. */
int flow_add_correct(Suite *s, const struct flow_kind *k, const struct flow_shapes *shapes,
                     flow_fn fn, const char *what);

/* ---- speed ---------------------------------------------------------------------------------- */

struct flow_times {
    struct timing base, yours, ceiling;
};

/* What the speed test times, in a chapter's order (flow_speed.order). */
enum flow_timed { FLOW_BASE = 1, FLOW_YOURS, FLOW_CEILING };

struct flow_speed {
    const char *tcase;          /* "speed": the title is "speed at SHAPE" */
    const struct flow_kind *kind;
    const void *shape;
    flow_fn yours, base;
    flow_fn ceiling;            /* NULL: the kind's library */
    const char *what;           /* yours, in messages: "matmul" */
    int warmup, reps;           /* each kernel's gpu_time */
    double timeout_s;
    /* The chapter's verdict on the times: notes, summary and hint, and the assertion. The
     * problem is freed by then; the shape is the one timed. */
    void (*verdict)(int slot, const void *shape, const struct flow_times *t);
    /* The timing order; all 0: base, yours, ceiling. Base and yours are each timed after a
     * poison, and yours is re-checked right after its runs. */
    enum flow_timed order[3];
    /* optional: the reference is this kernel's output on the inputs (kind->fill_inputs, a run,
     * kind->adopt), where the host would take too long; then vet, the chapter's check of it
     * against the host on a sample (it fails the test), drawing from the test's generator */
    flow_fn reference;
    void (*vet)(void *p, struct rng *r, int slot);
};

/* Registers sp as a timed test (grader_add_timed: SKIP on the CPU backend and in quick mode).
 * Returns its slot or -1. sp must outlive the run (a static). One a step, say. */
int flow_add_speed(Suite *s, const struct flow_speed *sp);

/* ---- what a launcher launches ---------------------------------------------------------------- */

/* Every graded run records the kernels it launched in the runner and hands them to the judge
 * (launches.h; recorded = 0 where the launches are not wrapped: the CPU backend). A speed test
 * shows yours' under a FAIL ("launched: ..."): the blocks against the SMs and the work a thread,
 * which is often why a kernel is slow.
 *
 * A test's whole body: fn once on fresh inputs of shape, checked ("WHAT: ..." on a mismatch),
 * and what it launched into *out, in the judge. Split like flow_correct: the test's first
 * step. The test fails where the build does not record launches (a GPU grader linked without
 * harness/launch_wrap.o) or where fn launched no kernel, so a caller reads *out as a record of
 * at least one launch. */
void flow_launches_of(const struct flow_kind *k, const void *shape, flow_fn fn, int slot,
                      const char *what, struct launch_log *out);

/* ---- bench ---------------------------------------------------------------------------------- */

struct flow_rung {
    const char *name;
    flow_fn fn;                 /* NULL: the library */
    const void *arg;            /* optional: the kind's facts about it (kind->bench_select) */
};

struct flow_bench {
    const char *chapter;        /* the rows' chapter column */
    const struct flow_kind *kind;
    const void *shapes;         /* a table of the kind's shapes */
    int nshapes;
    const struct flow_rung *rungs;
    int nrungs;
    const char *library;        /* its row's kernel name: "cublas"; NULL: no library row */
    int library_first;          /* 1: the library first, and every rung as a share of it */
    int warmup, reps;
    double big_work;            /* at this much work or more (kind->work; 0: never) ... */
    int big_reps;               /* ... this many timed runs instead */
    double (*bytes)(const void *shape);    /* the rows' GB/s counts these */
    double (*flops)(const void *shape);    /* and their GFLOP/s these (NULL: 0) */
    double print_unit;          /* stdout shows FLOP/s over this (1e9, 1e12) ... */
    const char *print_label;    /* ... under this label ("GFLOP/s") */
    int shape_width, name_width;    /* stdout's first two columns (0: 16 and 12) */
    /* optional: 1 to leave rung i out at this shape (it cannot run on this device, say) */
    int (*skip)(int i, const void *shape, const struct device_info *info);
    /* optional: more rows before the file is closed; 0, or -1 to fail the bench */
    int (*extra)(struct results *out, const struct device_info *info);
};

/* Poison p and time fn on it (NULL: the kind's library) with gpu_time: its timing, nothing
 * checked or written (flow_time_row below is this, the check and the row) */
struct timing flow_time(const struct flow_kind *k, void *p, flow_fn fn, int warmup, int reps);

/* n functions timed on p in turns (flow_time, fn[0] first in each round), `rounds` rounds, a
 * line a round on stdout (under label, with each one's name). median_round_out[i] gets fn i's
 * timing in the median round, the same round for every i: the rounds ranked by the others'
 * times over fn[0]'s (for n = 2 the ratio of the pair; for more, the geometric mean of the
 * ratios), so that the ratio reported is that of two timings taken one after the other at the
 * same clocks, each with its own. Timed one after the other in a single round each, a later
 * function would run on a card the earlier ones have warmed, nearer its power limit and at a
 * lower clock; and each function's own median round could come from a different round, at a
 * different clock, than its partner's. Returns the median round's index (from 0). */
int flow_time_turns(const struct flow_kind *k, void *p, int n, const flow_fn *fn,
                    const char *const *name, const char *label, int rounds, int warmup,
                    int reps, struct timing *median_round_out);

/* One bench row: poison p, time fn on it (NULL: the kind's library) with gpu_time, check what
 * it wrote when check is 1 (kind->bench_check, which prints why it is wrong), then
 * results_row with GB/s over bytes and GFLOP/s over flops (0: none). Returns the median ms, or
 * -1 when the check failed (no row is written then). */
double flow_time_row(const struct flow_kind *k, void *p, flow_fn fn, int check,
                     struct results *out, const char *chapter, const char *name,
                     const char *shape, double bytes, double flops, int warmup, int reps);

/* bench_begin, then per shape a problem (kind->bench_fill), and every rung and the library:
 * bench_select (a rung's arg, or NULL), poison, gpu_time, bench_check (not the library's),
 * results_row, a line on stdout. Returns the exit status. */
int flow_bench(const struct flow_bench *b, const char *path);

#endif
