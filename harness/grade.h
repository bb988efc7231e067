/* grade.h: the Check glue every grader shares, and the lines a learner reads.
 *
 * A grader registers its tests with grader_add (a title each), runs them with grader_run, and
 * gets, per test, a PASS or FAIL line with what was measured or what went wrong and a hint;
 * then one line for the chapter; then Check's own summary. Check forks each test, so a kernel
 * that crashes or hangs fails its own test and the rest still grade; the tests pass their notes
 * back to the parent through a shared mapping made before the fork.
 *
 *   static void add_tests(Suite *s) {
 *       CORRECT = grader_add(s, "correct", correct, titles, n, 60);
 *       SPEED = grader_add_timed(s, "speed", speed, "speed at 1024^3", 120);
 *   }
 *   int main(int argc, char **argv) {
 *       static const struct grader_spec spec = { "01-naive-matmul", add_tests, bench, NULL };
 *       return grader_main(&spec, argc, argv);
 *   }
 */
#ifndef GRADE_H
#define GRADE_H

#include <check.h>

#include "gpu.h"
#include "harness.h"
#include "ident.h"

#define GRADE_MAX_TESTS 192
#define GRADE_MAX_STEPS 12
#define GRADE_TEXT 512

/* Print the chapter's header line (backend, device, seed). The device is probed in a child
 * process, so the parent never touches CUDA before the tests fork. */
void grader_init(const char *chapter);

/* What grader_init found; backend "none" and name holding the reason when no device answered. */
const struct device_info *grader_device(void);

/* Its compute capability as one number: 90 for 9.0 (a grader names an arch "sm_90" by it). */
int grader_cc(void);

/* Add fn as n loop iterations (_i = 0..n-1) of a test case named tcase, titled titles[i], with
 * a timeout in seconds (scaled by CK_TIMEOUT_MULTIPLIER as Check does). Returns the slot of
 * iteration 0: iteration _i writes its notes to slot + _i. */
int grader_add(Suite *s, const char *tcase, const TTest *fn, const char *const *titles, int n,
               double timeout_s);

/* grader_add, with a context the test reads back with grade_ctx(): one test function serving
 * several registrations (a correctness test per step, say). ctx must outlive the run. */
int grader_add_ctx(Suite *s, const char *tcase, const TTest *fn, const char *const *titles, int n,
                   double timeout_s, const void *ctx);

/* From inside a test: the ctx its registration gave (NULL for grader_add), and its slot. */
const void *grade_ctx(void);
int grade_slot(void);

/* A test that cannot run here, reported as SKIP with the reason; it counts as neither. */
void grader_skip(const char *title, const char *why);

/* From inside a test: what a PASS line shows after the title. */
void grade_note(int slot, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* From inside a test: the hint a FAIL line shows under the message. */
void grade_hint(int slot, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* From inside a test: what the code under grading launched, shown under a FAIL after the hint
 * ("launched: 264 blocks of 256 threads ..."): the speed tests of flow.h set it. */
void grade_launched(int slot, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* From inside a test: its second run (on fresh inputs; shuffled: on the CPU backend, in a
 * shuffled schedule) begins, the first having passed. A failure from here on is shown with a
 * note of what that means (a race, or a result kept from the first run); shuffled < 0: a
 * first run begins again (the next shape), and the note goes. flow_twice calls it. */
void grade_second_run(int slot, int shuffled);
/* From inside a test: the chapter line's closing words (the ratio and what it needs:
 * "...x over uncoalesced (needs 5x)"), or, in a step, that step's line's. */
void grade_summary(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the judge and the runner ---------------------------------------------------------------
 *
 * A test split at its start (grade_split) runs as two processes that go through the same steps
 * on the same seed. The runner calls the learner's code; the judge never does. Where the test
 * runs the code under grading, the runner runs it and sends what it left on the device (every
 * guarded buffer: an output whole, an input's guard zones), and its timings, to the judge, which
 * writes them into its own buffers and makes every check, note and verdict. The runner checks
 * nothing, writes no note, and cannot reach the judge's records: it drops the shared mapping
 * they live in, its output goes to the test's captured stderr, and the sandbox (sandbox.h)
 * keeps it from tracing or signalling the grader. A runner that dies is mirrored by the judge:
 * the same exit status, or the same signal, so a test's failure reads as it did unsplit; one
 * that ends with status 0 before the test's end fails it, saying so.
 *
 *   grade_split();                          first thing in a test, before any CUDA call
 *   ...fill (both)...
 *   if (grade_role() != GRADE_JUDGE) { launch(); gpu_sync(); }
 *   grade_exchange_buffers();               the runner sends, the judge receives
 *   if (grade_role() != GRADE_RUNNER) check();
 *   ...
 *   grade_split_end();                      the runner ends here; the judge waits for it
 *
 * Unsplit (no call to grade_split, or Check's no-fork mode), the role is GRADE_SOLO and the
 * exchanges do nothing. flow.c splits every correctness and speed test it runs. */
enum grade_role { GRADE_SOLO, GRADE_JUDGE, GRADE_RUNNER };
enum grade_role grade_role(void);
void grade_split(void);
void grade_exchange_buffers(void);
/* The same, with what the run copied to the host (*host_bytes: the runner's count, which the
 * judge receives; NULL: none counted). */
void grade_exchange_run(unsigned long long *host_bytes);
void grade_exchange_timing(struct timing *t);
/* n bytes at p: the runner's sent, the judge's overwritten with them (a struct of what the
 * runner saw: return codes, a report with its strings copied in, counts). The judge must treat
 * them as claims of the code under grading: bounded, checked, never trusted as pointers. */
void grade_exchange_bytes(void *p, size_t n);
void grade_split_end(void);

/* A generator for this test's inputs: the run's seed mixed with the slot, so one test's data
 * does not depend on which others ran. */
struct rng grade_rng(int slot);

/* ---- steps: a chapter's ladder ---------------------------------------------------------------
 *
 * grader_step(k, name) opens step k of the chapter's ladder (k = 1, 2, ... in order): every test
 * added after it (grader_add, grader_add_timed, grader_skip and the flow_add_* of flow.h) belongs
 * to step k, until the next grader_step. After the tests, grader_run prints the ladder, a line a
 * step:
 *
 *   04 step 3 of 6  2D register blocking   PASS  31.2 TFLOP/s = 3.50x step 2 (needs 2.5x)
 *   04 step 4 of 6  float4, transposed A   FAIL  correct; 1.02x step 3 (needs 1.2x)
 *   05 step 3 of 4  TMA and a producer     SKIP  graded on a GPU only: ...
 *
 * PASS when every test of the step that ran passed, FAIL when one failed, SKIP when none ran
 * (each skipped, saying why). What follows is the step's summary (grade_summary from one of
 * its tests), or, when a correctness test failed, that test's message. Each step also writes a
 * row to the results file: step "k/N", test NAME, its verdict and the text shown.
 *
 * GRADE_STEP=k (make grade STEP=k): only step k is registered; the others' grader_step returns
 * 0, and what they add is dropped. A value that names no step stops grader_run with the list.
 * Returns 1 when step k's tests are registered. */
int grader_step(int k, const char *name);

/* Run every test, print the lines, return the exit status: 0 only when every test passed. */
int grader_run(Suite *s);

/* A test that times kernels: added as grader_add does on a GPU; on the CPU backend, whose
 * timings are not GPU timings, reported as SKIP instead. Returns its slot, or -1 when skipped. */
int grader_add_timed(Suite *s, const char *tcase, const TTest *fn, const char *title,
                     double timeout_s);
/* The same, with a context (grader_add_ctx). */
int grader_add_timed_ctx(Suite *s, const char *tcase, const TTest *fn, const char *title,
                         double timeout_s, const void *ctx);

/* ---- quick mode, and grading under a sanitizer ----------------------------------------------
 *
 * GRADE_QUICK=1 in the environment (`make sanitize` sets it: under compute-sanitizer, and on
 * the CPU backend's instrumented build, kernels run many times slower): the timed tests
 * are skipped (grader_add_timed says so), and so is every correctness shape whose work is over
 * GRADE_QUICK_WORK (default 1e8: elements, multiply-adds or element updates, as the grader
 * counts them): the shapes that exist to fill a GPU go, the edge shapes stay. Each grader
 * opens its correctness test with the hook:
 *
 *   if (grade_quick_skip(slot, (double)s.m * s.k * s.n, "multiply-adds"))
 *       return;
 *
 * GRADE_SANITIZE=1 (set by `make sanitize` too): a sanitizer watches the run. Tests that make
 * errors on purpose (chapter 06's fault injection) are not registered, as every error they
 * plant would be reported; and each test that passes destroys its CUDA context at its end
 * (cudaDeviceReset), so that memcheck's leak check sees what it left allocated. */

/* 1 in quick mode (GRADE_QUICK=1). */
int grade_quick(void);

/* 1 under a sanitizer (GRADE_SANITIZE=1). */
int grade_sanitizing(void);

/* From inside a test, before it does anything: in quick mode, when `work` (in `unit`s) is over
 * the cap, marks the test skipped (its line says SKIP and why, and it counts as neither passed
 * nor failed) and returns 1, and the test must return at once. Otherwise returns 0. */
int grade_quick_skip(int slot, double work, const char *unit);

/* What one chapter's grader program does. */
struct grader_spec {
    const char *chapter;
    void (*add_tests)(Suite *s);      /* registers the tests, after grader_init */
    int (*bench)(const char *path);   /* --bench FILE: rows into FILE; NULL when none */
    int (*tune)(const char *path);    /* --tune FILE: candidate configurations; NULL when none */
};

/* The whole main() of a grader: no argument grades, --bench FILE and --tune FILE run those
 * modes, --describe prints what the grader is and which modes it has ("chapter", "side",
 * "backend", "modes" lines, tab-separated; exit status 1 when the build told it another chapter
 * than its own), anything else prints the usage and returns 2. */
int grader_main(const struct grader_spec *spec, int argc, char **argv);

/* The start of every run that measures (MODE "bench", "tune"): a GPU must answer and its
 * timings must be real. Returns 0, or prints why and returns -1. */
int measure_begin(const char *mode, struct device_info *info);

/* The start of every bench: measure_begin, then path opened for results. Returns 0, or prints
 * why and returns -1. */
int bench_begin(const char *path, struct results *out, struct device_info *info);
/* The same for a bench that adds columns of its own after device (results_open_extra). */
int bench_begin_extra(const char *path, const char *extra, struct results *out,
                      struct device_info *info);

#endif
