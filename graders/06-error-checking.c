/* 06-error-checking.c: the grader of chapter 06, and its bench.
 *
 *   grade            by fault injection: CUDA_TRY on a planted failing call (file, line, the
 *                    call's text); run_pipeline with no fault (success, the right result, all
 *                    freed); then an out-of-bounds write, an invalid launch configuration and a
 *                    trap, each at three (iteration, stage, cadence) points, each in its own
 *                    forked test (a sticky error ends its process's use of the GPU): never
 *                    success, the failing iteration inside the reported window, the window no
 *                    wider than the cadence, the kernel named where it can be known, sticky
 *                    told from not sticky, the device usable after the non-sticky one, and
 *                    nothing leaked. On a GPU: your loop at your cadence at most 5% slower
 *                    than the same work with no checks, measured in the same run.
 *
 * Nothing leaked, on both backends: this grader is linked with the runtime's allocation,
 * stream, event and reset calls wrapped (harness/watch.h; the Makefile's WATCH_CALLS), and
 * after every graded call (the demo, each run with no fault, each fault, the fresh run after
 * the refused launch) anything the call made and left live fails the test, named with its
 * size: a device allocation of any size, pinned or registered host memory, a stream, an
 * event. So does a release of what it did not hold, and a cudaDeviceReset (it destroys every
 * object of the process, the caller's too: no recovery). On a GPU the free device memory is
 * compared as well (cudaMemGetInfo, 64 MiB buffers), which also sees memory taken by calls
 * that are not watched.
 *   grade --bench F  the loop with no checks and with a check after every launch, each with a
 *                    synchronisation every 1, 10, 100 iterations and never, as rows in F (GPU
 *                    only): ms is the time per iteration of three launches.
 *
 * Every test is split (grade.h, "the judge and the runner"): a runner process calls the code
 * under grading (the demo, run_pipeline, the timed loops) and asks what it left (the watch,
 * the free device memory, the last-error slot, a synchronisation after a sticky fault, the
 * output); it sends those facts, the report's strings copied in, to a judge that never runs
 * that code, needs no CUDA, and makes every check, note and verdict from them. Code that
 * overwrites the grade's records reaches none of them there; one that ends its process
 * early fails its test, saying so.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_check.h"
#include "grade.h"
#include "loop_ref.h"
#include "pipeline.h"
#include "tolerance.h"
#include "watch.h"

#define CHAPTER "06-error-checking"
#define ITERS 25                        /* iterations of every correctness and fault run */
#define GPU_BIG_N (1 << 24)             /* 64 MiB a buffer: a leak of one is unmistakable */
#define CPU_BIG_N 40009                 /* a prime, small enough for the CPU backend */
#define GPU_LEAK_SLACK ((size_t)1 << 20) /* what the CUDA context itself may move, 1 MiB */
#define SPEED_N (1 << 23)               /* 32 MiB a buffer: kernels long against a launch */
#define SPEED_ITERS 1000
#define SPEED_REPS 7
#define NEEDS_RATIO 1.05
#define BENCH_ITERS 100

static int MACRO, CORRECT, FAULTS, SPEED;

static int big_n(void)
{
    return gpu_times_are_real() ? GPU_BIG_N : CPU_BIG_N;
}

static const char *err_name(cudaError_t e)
{
    return e == cudaErrorNotYetImplemented ? "cudaErrorNotYetImplemented" : cudaGetErrorName(e);
}

/* ---- the reference and the problem --------------------------------------------------------- */

/* The pipeline on the CPU (loop_ref.h: the GPU's result to the last bit), widened. */
static void ref_pipeline(const float *in, double *out, int n, int iterations)
{
    float *a = xmalloc((size_t)n * sizeof(float)), *b = xmalloc((size_t)n * sizeof(float));
    memcpy(a, in, (size_t)n * sizeof(float));
    loop_on_host(a, b, n, iterations);
    for (int i = 0; i < n; i++)
        out[i] = a[i];
    free(a);
    free(b);
}

struct problem {
    struct pipeline_spec spec;
    float *h_in, *h_out;     /* h_out pinned where the code runs (problem_init says why) */
    double *ref;             /* where the checks are made; NULL in the runner */
    int device_lost;         /* set once a sticky fault is confirmed: every call fails after */
};

static void problem_init(struct problem *p, int n, int iterations, int sync_every,
                         struct fault fault)
{
    p->h_in = xmalloc((size_t)n * sizeof(float));
    /* pinned, as a pipeline's output buffer would be: a copy into pageable memory returns only
     * once it has landed (and reports any fault before it), which would hide a missing final
     * synchronisation on a GPU; into pinned memory cudaMemcpyAsync returns at once. The judge
     * only reads what the runner sent into it: plain memory, no CUDA context of its own (one
     * would cost it seconds on a GPU) */
    if (grade_role() == GRADE_JUDGE)
        p->h_out = xmalloc((size_t)n * sizeof(float));
    else
        CUDA_CHECK(cudaMallocHost((void **)&p->h_out, (size_t)n * sizeof(float)));
    p->ref = grade_role() == GRADE_RUNNER ? NULL : xmalloc((size_t)n * sizeof(double));
    p->spec = (struct pipeline_spec){ n, iterations, sync_every, p->h_in, p->h_out, fault };
    p->device_lost = 0;
}

/* Fresh inputs (the same in the judge and the runner: the same seed), their reference where
 * the checks are made (a run that should fail needs none), and a poisoned output. */
static void problem_fill(struct problem *p, struct rng *r)
{
    rng_fill_f32(r, p->h_in, (size_t)p->spec.n, -1.0f, 1.0f);
    if (p->spec.fault.kind == FAULT_NONE && p->ref)
        ref_pipeline(p->h_in, p->ref, p->spec.n, p->spec.iterations);
    memset(p->h_out, 0xff, (size_t)p->spec.n * sizeof(float));
}

static void problem_free(struct problem *p)
{
    free(p->h_in);
    free(p->ref);
    if (grade_role() == GRADE_JUDGE) {
        free(p->h_out);
        return;
    }
    /* after a sticky fault every call returns it, cudaFreeHost too; the test's process ends
     * with the test, and the pinned buffer with it */
    cudaError_t err = cudaFreeHost(p->h_out);
    if (!p->device_lost)
        CUDA_CHECK(err);
}

/* 0 when h_out equals the reference, else -1 with a description. Exact (TOL_EXACT): the
 * replay performs the device's IEEE operations in the device's order. */
static int problem_compare(const struct problem *p, char *desc, size_t len)
{
    struct cmp_result c =
        compare_f32(p->h_out, p->ref, NULL, (size_t)p->spec.n, 0, TOL_EXACT, TOL_EXACT);
    if (c.bad == 0)
        return 0;
    cmp_describe(&c, 0, desc, len);
    return -1;
}

/* ---- what a run leaves behind, seen by the runner ---------------------------------------- */

/* Every test is split (grade.h, "the judge and the runner"): the runner makes every call of
 * the code under grading and every query of what it left (the watch, the device's free
 * memory, the last-error slot, the output), and sends them as these facts; the judge, which
 * runs none of that code, checks them. The report's file and call point into the runner's
 * memory: they travel as text, copied in. The judge reads every field as a claim of the code
 * under grading: each string ended inside its array, no pointer among them. */
#define FACT_TEXT 512
#define DESC_LEN (2 * FACT_TEXT + 256) /* a report described: its file and call, and numbers */

struct run_facts {
    cudaError_t ret;                        /* what the graded call returned */
    /* the failure it recorded (struct cuda_failure), its strings copied */
    cudaError_t err;
    int has_file, has_call, line;
    char file[FACT_TEXT], call[FACT_TEXT];
    /* the rest of its report (struct loop_report) */
    int sync_every, first_possible, detected, stage, device_lost;
    int demo_line;                          /* cuda_try_demo's *line */
    /* the watch after the call (harness/watch.h) */
    int resets, reset_victims, strays, live;
    char stray[256], live_desc[256], calls[160];
    /* the device's free memory just before the call and after it (a GPU only; 0 when not
     * measured or when the device cannot say) */
    size_t free_before, free_after;
    cudaError_t last_error;                 /* the last-error slot after the call, as asked */
    cudaError_t sync_after;                 /* cudaDeviceSynchronize after a sticky fault */
};

/* Make the CUDA context and load the pipeline's kernels before anything is measured: both
 * take device memory once per process (CUDA loads a kernel at its first launch). */
static void warm_up(void)
{
    float h[1000] = { 0 }, o[1000];
    struct pipeline_spec s = { 1000, 1, 1, h, o, { FAULT_NONE, 0, 0 } };
    run_pipeline_unchecked(&s);
}

/* Free device memory now, or 0 when the device cannot say (after a sticky error). */
static size_t free_bytes(void)
{
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) != cudaSuccess)
        return 0;
    return f;
}

/* Open the watch around a graded call (the caller closes it with watch_end), the device's free
 * memory just before it into f->free_before. What the call itself makes and releases, of every
 * kind and size, is watched (harness/watch.h): this grader is linked with the CUDA runtime's
 * allocation, stream, event and reset calls wrapped, on both backends. */
static void watch_call(struct run_facts *f)
{
    f->free_before = gpu_times_are_real() ? free_bytes() : 0;
    watch_reset();
    watch_begin();
}

/* What the watch saw in the window just closed, into f. */
static void record_watch(struct run_facts *f)
{
    f->resets = watch_resets();
    f->reset_victims = watch_reset_victims();
    f->strays = watch_strays();
    watch_describe_stray(f->stray, sizeof f->stray);
    f->live = watch_describe(f->live_desc, sizeof f->live_desc);
    watch_describe_calls(f->calls, sizeof f->calls);
}

/* src, a string of the code under grading (NULL or not), into dst: *has says whether there
 * was one. A text too long keeps its end when keep_end (a file's name: the judge checks how
 * it ends), else its beginning. */
static void copy_text(char *dst, size_t size, int *has, const char *src, int keep_end)
{
    *has = src != NULL;
    dst[0] = '\0';
    if (!src)
        return;
    size_t len = strlen(src), from = keep_end && len >= size ? len - (size - 1) : 0;
    snprintf(dst, size, "%s", src + from);
}

static void record_failure(struct run_facts *f, const struct cuda_failure *fail)
{
    f->err = fail->err;
    f->line = fail->line;
    copy_text(f->file, sizeof f->file, &f->has_file, fail->file, 1);
    copy_text(f->call, sizeof f->call, &f->has_call, fail->call, 0);
}

/* One graded run of run_pipeline, in the runner (or the one process, unsplit): the watch
 * opened around it, the report zeroed, the run, and its report and what the watch saw into
 * f. What the test asks after it (the last-error slot, a synchronisation, the free memory)
 * its caller adds, in the order the checks read them. */
static void run_graded(struct problem *p, struct run_facts *f)
{
    struct loop_report rep;
    memset(f, 0, sizeof *f);
    memset(&rep, 0, sizeof rep);
    watch_call(f);
    f->ret = run_pipeline(&p->spec, &rep);
    watch_end();
    record_failure(f, &rep.failure);
    f->sync_every = rep.sync_every;
    f->first_possible = rep.first_possible;
    f->detected = rep.detected;
    f->stage = rep.stage;
    f->device_lost = rep.device_lost;
    record_watch(f);
}

/* The runner sends its facts; the judge's f is overwritten with them and made safe to read:
 * every string ended inside its array, every flag 0 or 1. Unsplit, f is the process's own. */
static void exchange_facts(struct run_facts *f)
{
    grade_exchange_bytes(f, sizeof *f);
    f->file[sizeof f->file - 1] = '\0';
    f->call[sizeof f->call - 1] = '\0';
    f->stray[sizeof f->stray - 1] = '\0';
    f->live_desc[sizeof f->live_desc - 1] = '\0';
    f->calls[sizeof f->calls - 1] = '\0';
    f->has_file = f->has_file != 0;
    f->has_call = f->has_call != 0;
}

/* ---- what a run leaves behind, judged ------------------------------------------------------ */

/* Fail the test when `fn` called cudaDeviceReset in the run with `what`. Checked first: a
 * reset has destroyed what every other check would look at. */
static void check_reset(int slot, const struct run_facts *f, const char *fn, const char *what)
{
    if (f->resets == 0)
        return;
    grade_hint(slot, "leave the device as it is and hand the error back: after a sticky error "
                     "(an illegal address, a trap) nothing brings the context back, the process "
                     "must end, and ending it is the caller's choice; after a refused launch the "
                     "device still works, and cudaGetLastError clears the error. Free what "
                     "%s made, and only that", fn);
    ck_abort_msg("%s called cudaDeviceReset %s in the run with %s: a reset is not a recovery: "
                 "it destroys every allocation, stream and event of the process, the "
                 "caller's included (it destroyed %d made before %s was called)", fn,
                 f->resets == 1 ? "once" : "more than once", what, f->reset_victims, fn);
}

/* Fail the test when `fn` released what it did not hold, or left anything it made live (every
 * allocation of any size, pinned host memory, every stream and event), in the run with
 * `what`; on a GPU also when the device's free memory fell by more than the context's own
 * slack (buffer_bytes: the size of one buffer, for the message). */
static void check_leak(int slot, const struct run_facts *f, size_t buffer_bytes, const char *fn,
                       const char *what)
{
    if (f->strays > 0) {
        grade_hint(slot, "release each object once, and only what this call made: start every "
                         "pointer and handle at NULL, so that the cleanup can tell what was "
                         "made before the failure");
        ck_abort_msg("%s released what it did not hold in the run with %s: %s", fn, what,
                     f->stray);
    }
    if (f->live > 0) {
        grade_hint(slot, "what is left was made by %s: every path out of %s, the failing ones "
                         "included, must pass through the cleanup label, which frees every "
                         "buffer and destroys every stream and event made before the failure "
                         "(CUDA_TRY jumps there, it does not return)", f->calls, fn);
        ck_abort_msg("%s left %s live after the run with %s", fn, f->live_desc, what);
    }
    if (f->free_before == 0)
        return;
    if (f->free_after == 0)
        return; /* a GPU after a sticky error cannot be asked: the watch above has answered */
    if (f->free_after < f->free_before && f->free_before - f->free_after > GPU_LEAK_SLACK) {
        grade_hint(slot, "every path out of %s must pass through the cleanup label and free "
                         "what it made, the failing ones included; memory can also be taken "
                         "by calls this grader does not watch (cudaMallocPitch, cudaMalloc3D, "
                         "a graph)", fn);
        ck_abort_msg("%s: %.1f MiB of device memory more in use after the run with %s than "
                     "before (each buffer is %.1f MiB)", fn,
                     (double)(f->free_before - f->free_after) / (1 << 20), what,
                     (double)buffer_bytes / (1 << 20));
    }
}

/* The report, as a learner reads it. */
static void describe(const struct run_facts *f, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%d: %s: %s; iterations [%d, %d], stage %d, device %s, cadence %d",
             f->has_file ? f->file : "(no file)", f->line,
             f->has_call ? f->call : "(no call)", err_name(f->err), f->first_possible,
             f->detected, f->stage, f->device_lost ? "lost" : "usable", f->sync_every);
}

/* ---- the macro ----------------------------------------------------------------------------- */

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

static void judge_macro(int slot, const struct run_facts *f, const char *what)
{
    check_reset(slot, f, "cuda_try_demo", what);
    if (f->ret == cudaSuccess || f->err == cudaSuccess) {
        grade_hint(slot, "CUDA_TRY in pipeline.cu is still the TODO: on a failed call it must "
                         "record the error, __FILE__, __LINE__ and #expr in *fail before it "
                         "jumps to cleanup");
        ck_abort_msg("cudaMalloc of 2^62 bytes failed and CUDA_TRY recorded nothing (the demo "
                     "returned %s)", err_name(f->ret));
    }
    ck_assert_msg(f->err == cudaErrorMemoryAllocation && f->ret == f->err,
                  "recorded %s and returned %s, want cudaErrorMemoryAllocation for both",
                  err_name(f->err), err_name(f->ret));
    if (!f->has_file || !ends_with(f->file, "pipeline.cu") || f->line != f->demo_line) {
        grade_hint(slot, "use __FILE__ and __LINE__ inside the macro's body: a macro expands "
                         "where it is used, a function would record its own line");
        ck_abort_msg("recorded %s:%d, want pipeline.cu:%d (the failing call's own line)",
                     f->has_file ? f->file : "(null)", f->line, f->demo_line);
    }
    if (!f->has_call || !strstr(f->call, "cudaMalloc(&d_huge")) {
        grade_hint(slot, "#expr turns the macro's argument into a string literal of the call "
                         "as written");
        ck_abort_msg("recorded the call as \"%s\", want the failing call's text, "
                     "\"cudaMalloc(&d_huge, (size_t)1 << 62)\"",
                     f->has_call ? f->call : "(null)");
    }
    check_leak(slot, f, 4096, "cuda_try_demo", what);
    grade_note(slot, "%s:%d: %s failed: %s", f->file, f->line, f->call, err_name(f->err));
}

START_TEST(macro)
{
    grade_split(); /* the demo in a runner, the checks here (grade.h) */
    int slot = MACRO;
    static const char *what = "the planted failure of cudaMalloc";
    struct run_facts f;
    memset(&f, 0, sizeof f);
    if (grade_role() != GRADE_JUDGE) {
        warm_up();
        struct cuda_failure fail = { cudaSuccess, NULL, 0, NULL };
        int line = -1;
        watch_call(&f);
        f.ret = cuda_try_demo(&fail, &line);
        watch_end();
        record_failure(&f, &fail);
        f.demo_line = line;
        record_watch(&f);
        f.free_after = f.free_before ? free_bytes() : 0;
    }
    exchange_facts(&f);
    if (grade_role() != GRADE_RUNNER)
        judge_macro(slot, &f, what);
    grade_split_end();
}
END_TEST

/* ---- no fault ------------------------------------------------------------------------------ */

struct run_case { int n, iterations, sync_every; };

static const struct run_case CORRECT_CASES[] = {
    { 1, 3, 1 },          /* one element: both neighbours are itself */
    { 4097, ITERS, 10 },  /* 25 iterations, not a multiple of the cadence */
    { 0, 20, 0 },         /* big_n(), your own cadence */
};
#define NCORRECT ((int)(sizeof CORRECT_CASES / sizeof CORRECT_CASES[0]))

/* The checks of one run with no fault (`what`), on what the runner saw and the output it sent
 * (p->h_out). */
static void judge_no_fault(int slot, struct run_case c, const char *what, struct run_facts *f,
                           const struct problem *p)
{
    char desc[DESC_LEN];
    describe(f, desc, sizeof desc);
    check_reset(slot, f, "run_pipeline", what);
    if (f->ret == cudaErrorNotYetImplemented) {
        grade_hint(slot, "run_pipeline in pipeline.cu is still the TODO: allocate, loop, "
                         "check, synchronise, copy back, clean up");
        ck_abort_msg("n %d, %d iterations: run_pipeline returned cudaErrorNotYetImplemented",
                     c.n, c.iterations);
    }
    ck_assert_msg(f->ret == cudaSuccess && f->err == cudaSuccess,
                  "n %d, %d iterations, no fault: run_pipeline returned %s (%s)", c.n,
                  c.iterations, err_name(f->ret), desc);
    ck_assert_msg(f->first_possible == -1 && f->detected == -1 && f->stage == -1,
                  "n %d: success, but the report names iterations [%d, %d] and stage %d "
                  "(want -1 for each)", c.n, f->first_possible, f->detected, f->stage);
    int want_every = c.sync_every;
    ck_assert_msg(want_every ? f->sync_every == want_every : f->sync_every >= 1,
                  "the report says it synchronised every %d iterations; the spec asked "
                  "for %d%s", f->sync_every, c.sync_every,
                  c.sync_every ? "" : " (yours: PIPELINE_SYNC_EVERY, at least 1)");
    char cmp[512];
    if (problem_compare(p, cmp, sizeof cmp) != 0) {
        grade_hint(slot, "the result must be d_a after all %d iterations, copied back once "
                         "the stream has finished (synchronise before returning)",
                   c.iterations);
        ck_abort_msg("%s: %s", what, cmp);
    }
    ck_assert_msg(f->last_error == cudaSuccess, "after a successful run the last-error slot "
                  "still holds %s", err_name(f->last_error));
    if (c.n != big_n())
        f->free_before = 0; /* on a GPU only the 64 MiB buffers stand out of the slack */
    check_leak(slot, f, (size_t)c.n * sizeof(float), "run_pipeline", what);
}

START_TEST(correct)
{
    int slot = CORRECT + _i;
    struct run_case c = CORRECT_CASES[_i];
    if (c.n == 0)
        c.n = big_n();
    if (grade_quick_skip(slot, (double)c.n * c.iterations, "element updates"))
        return;
    grade_split(); /* run_pipeline in a runner, the checks here (grade.h) */
    struct rng r = grade_rng(slot);
    struct problem p;
    problem_init(&p, c.n, c.iterations, c.sync_every, (struct fault){ FAULT_NONE, 0, 0 });
    if (grade_role() != GRADE_JUDGE)
        warm_up();
    for (int round = 0; round < 2; round++) {
        char what[96];
        snprintf(what, sizeof what, "no fault, n %d, %d iterations, cadence %d%s", c.n,
                 c.iterations, c.sync_every, round == 0 ? "" : ", its second run");
        problem_fill(&p, &r);
        struct run_facts f;
        memset(&f, 0, sizeof f);
        if (grade_role() != GRADE_JUDGE) {
            run_graded(&p, &f);
            f.last_error = cudaGetLastError();
            f.free_after = f.free_before ? free_bytes() : 0;
        }
        exchange_facts(&f);
        grade_exchange_bytes(p.h_out, (size_t)c.n * sizeof(float));
        if (grade_role() != GRADE_RUNNER)
            judge_no_fault(slot, c, what, &f, &p);
    }
    grade_note(slot, "the right result, all freed");
    problem_free(&p);
    grade_split_end();
}
END_TEST

/* ---- faults -------------------------------------------------------------------------------- */

struct fault_case { enum fault_kind kind; int iteration, stage, sync_every; };

/* Each fault three ways: every iteration synchronised; a window of 10 in the middle; and the
 * last kernel of the last iteration (25 iterations, cadence 10: the last window is partial),
 * which only the synchronisation after the final copy can see. Any earlier in that window and
 * a GPU hands a sticky fault to a later iteration's cudaGetLastError, so that a loop with no
 * final synchronisation would still report it there. */
static const struct fault_case FAULT_CASES[] = {
    { FAULT_OUT_OF_BOUNDS, 3, 1, 1 },
    { FAULT_OUT_OF_BOUNDS, 13, 0, 10 },
    { FAULT_OUT_OF_BOUNDS, ITERS - 1, 2, 10 },
    { FAULT_BAD_CONFIG, 3, 1, 1 },
    { FAULT_BAD_CONFIG, 13, 0, 10 },
    { FAULT_BAD_CONFIG, ITERS - 1, 2, 10 },
    { FAULT_TRAP, 3, 1, 1 },
    { FAULT_TRAP, 13, 0, 10 },
    { FAULT_TRAP, ITERS - 1, 2, 10 },
};
#define NFAULTS ((int)(sizeof FAULT_CASES / sizeof FAULT_CASES[0]))

static const char *fault_name(enum fault_kind k)
{
    return k == FAULT_OUT_OF_BOUNDS ? "out-of-bounds write" : k == FAULT_BAD_CONFIG
           ? "invalid configuration" : "trap";
}

/* The checks of the run with the fault `fc` (`what`), on what the runner saw: all of them for
 * a sticky fault (its note written), those before the fresh run for a refused launch. */
static void judge_fault(int slot, struct fault_case fc, const char *what, const char *kernel,
                        const struct run_facts *f, size_t bytes)
{
    int sticky = fc.kind != FAULT_BAD_CONFIG;
    char desc[DESC_LEN];
    describe(f, desc, sizeof desc);
    check_reset(slot, f, "run_pipeline", what);

    if (f->ret == cudaErrorNotYetImplemented) {
        grade_hint(slot, "run_pipeline in pipeline.cu is still the TODO");
        ck_abort_msg("run_pipeline returned cudaErrorNotYetImplemented");
    }
    if (f->ret == cudaSuccess) {
        grade_hint(slot, sticky ? "a fault inside a kernel is only returned by a later "
                                  "synchronising call: check what every cudaStreamSynchronize "
                                  "returns, the one after the last iterations included"
                                : "a refused launch is reported only by cudaGetLastError right "
                                  "after it (and only once): check every launch, and never let "
                                  "a later success overwrite the first error");
        ck_abort_msg("%s at iteration %d (%s), cadence %d: run_pipeline reported success",
                     fault_name(fc.kind), fc.iteration, kernel, fc.sync_every);
    }
    ck_assert_msg(f->ret == f->err, "returned %s, but the report holds %s",
                  err_name(f->ret), err_name(f->err));
    ck_assert_msg(f->line > 0 && f->has_call && f->has_file,
                  "the report's failure has no file, line or call: record it with CUDA_TRY");
    cudaError_t want = fc.kind == FAULT_OUT_OF_BOUNDS ? cudaErrorIllegalAddress
                       : fc.kind == FAULT_BAD_CONFIG ? cudaErrorInvalidConfiguration
                       : cudaErrorLaunchFailure;
    /* what a GPU returns for __trap() is the driver's choice (see the lesson's fault table);
     * for a block of 2048 threads, CUDA 13.0 on the H200 answered cudaErrorInvalidValue where
     * the CPU backend (and the runtime's documentation) say cudaErrorInvalidConfiguration:
     * both are refusals at the launch, and neither is sticky */
    if (fc.kind == FAULT_BAD_CONFIG && gpu_times_are_real())
        ck_assert_msg(f->ret == cudaErrorInvalidConfiguration || f->ret == cudaErrorInvalidValue,
                      "%s at iteration %d: returned %s, want the launch's refusal, "
                      "cudaErrorInvalidConfiguration or cudaErrorInvalidValue (%s)",
                      fault_name(fc.kind), fc.iteration, err_name(f->ret), desc);
    else if (fc.kind != FAULT_TRAP || !gpu_times_are_real())
        ck_assert_msg(f->ret == want, "%s at iteration %d: returned %s, want %s (%s)",
                      fault_name(fc.kind), fc.iteration, err_name(f->ret), err_name(want),
                      desc);
    else
        ck_assert_msg(f->ret != cudaErrorInvalidConfiguration, "trap: returned %s (%s)",
                      err_name(f->ret), desc);

    /* width in 64 bits: both ends are the code's claims, and may be any int */
    int k = fc.iteration;
    long long width = (long long)f->detected - f->first_possible + 1;
    if (!(f->first_possible <= k && k <= f->detected)) {
        grade_hint(slot, "first_possible is the iteration after the last synchronisation that "
                         "succeeded; detected is the iteration whose call returned the error");
        ck_abort_msg("%s at iteration %d: reported iterations [%d, %d], which do not contain "
                     "it (%s)", fault_name(fc.kind), k, f->first_possible, f->detected, desc);
    }
    if (f->sync_every < 1 || width > f->sync_every) {
        grade_hint(slot, "with a synchronisation every %d iterations, a fault is seen at most "
                         "%d iterations after it happened; a wider window means a "
                         "synchronisation was skipped or its result not checked",
                   f->sync_every, f->sync_every);
        ck_abort_msg("%s at iteration %d: the window [%d, %d] spans %lld iterations, wider "
                     "than the cadence %d", fault_name(fc.kind), k, f->first_possible,
                     f->detected, width, f->sync_every);
    }
    if (sticky) {
        ck_assert_msg(f->stage == -1 || f->stage == fc.stage,
                      "%s in %s: the report blames stage %d (%s); a fault found at a "
                      "synchronisation cannot be pinned to one kernel: say -1",
                      fault_name(fc.kind), kernel, f->stage,
                      f->stage >= 0 && f->stage < PIPELINE_NUM_STAGES
                          ? PIPELINE_STAGES[f->stage].name : "none");
        ck_assert_msg(f->device_lost == 1, "%s: a sticky error, but the report says the "
                      "device is usable (ask it: every later call returns the error)",
                      fault_name(fc.kind));
        /* the test itself: the fault really was sticky */
        ck_assert_msg(f->sync_after != cudaSuccess, "grader: the fault did not stick");
        check_leak(slot, f, bytes, "run_pipeline", what);
        grade_note(slot, "%s at %d (%s, cadence %d): %s", fault_name(fc.kind), k, kernel,
                   fc.sync_every, desc);
        return;
    }

    /* not sticky: known at once, the kernel named, and the device goes on */
    ck_assert_msg(f->first_possible == k && f->detected == k && f->stage == fc.stage,
                  "a refused launch is known at the launch: want iterations [%d, %d] and "
                  "stage %d (%s), got [%d, %d] and stage %d", k, k, fc.stage, kernel,
                  f->first_possible, f->detected, f->stage);
    ck_assert_msg(f->device_lost == 0, "an invalid configuration is not sticky, but the report "
                  "says the device is lost");
    check_leak(slot, f, bytes, "run_pipeline", what);
    if (f->last_error != cudaSuccess) {
        grade_hint(slot, "cudaPeekAtLastError leaves the error in place: read it with "
                         "cudaGetLastError, which clears it, or it surfaces one call late in "
                         "someone else's check");
        ck_abort_msg("run_pipeline returned, and the last-error slot still holds %s",
                     err_name(f->last_error));
    }
}

/* The checks of the fresh run with no fault after a refused launch (`what`), on what the
 * runner saw and the output it sent (q->h_out). */
static void judge_fresh_run(int slot, struct fault_case fc, const char *kernel,
                            const char *what, struct run_facts *f, const struct problem *q)
{
    char desc[DESC_LEN];
    describe(f, desc, sizeof desc);
    check_reset(slot, f, "run_pipeline", what);
    ck_assert_msg(f->ret == cudaSuccess, "after the invalid configuration, a fresh run with no "
                  "fault returned %s (%s): the device should still work", err_name(f->ret),
                  desc);
    char cmp[512];
    ck_assert_msg(problem_compare(q, cmp, sizeof cmp) == 0, "after the invalid configuration, "
                  "a fresh run with no fault: %s", cmp);
    f->free_before = 0; /* 16 KiB buffers: within a GPU's slack; the watch counts them */
    check_leak(slot, f, (size_t)q->spec.n * sizeof(float), "run_pipeline", what);
    grade_note(slot, "%s at %d (%s, cadence %d): reported at once, stage named, and the "
                     "device works after it", fault_name(fc.kind), fc.iteration, kernel,
               fc.sync_every);
}

START_TEST(faults)
{
    grade_split(); /* run_pipeline in a runner, the checks here (grade.h) */
    int slot = FAULTS + _i;
    struct fault_case fc = FAULT_CASES[_i];
    int n = big_n(), sticky = fc.kind != FAULT_BAD_CONFIG;
    size_t bytes = (size_t)n * sizeof(float);
    struct rng r = grade_rng(slot);
    struct problem p;
    problem_init(&p, n, ITERS, fc.sync_every,
                 (struct fault){ fc.kind, fc.iteration, fc.stage });
    problem_fill(&p, &r);
    if (grade_role() != GRADE_JUDGE)
        warm_up();
    const char *kernel = PIPELINE_STAGES[fc.stage].name;
    char what[96];
    snprintf(what, sizeof what, "the %s at iteration %d in %s, cadence %d", fault_name(fc.kind),
             fc.iteration, kernel, fc.sync_every);
    struct run_facts f;
    memset(&f, 0, sizeof f);
    if (grade_role() != GRADE_JUDGE) {
        run_graded(&p, &f);
        if (sticky) {
            /* the test itself: the fault really was sticky (the judge checks it) */
            f.sync_after = cudaDeviceSynchronize();
            p.device_lost = f.sync_after != cudaSuccess;
            f.free_after = f.free_before ? free_bytes() : 0;
        } else {
            f.free_after = f.free_before ? free_bytes() : 0;
            f.last_error = cudaPeekAtLastError();
        }
    }
    exchange_facts(&f);
    if (grade_role() != GRADE_RUNNER)
        judge_fault(slot, fc, what, kernel, &f, bytes);

    if (!sticky) {
        /* the device goes on: a fresh run, after the checks of the refused one (the runner
         * may start it before they end; a failed check ends both) */
        struct problem q;
        problem_init(&q, 4097, 5, 1, (struct fault){ FAULT_NONE, 0, 0 });
        problem_fill(&q, &r);
        char again_what[160];
        snprintf(again_what, sizeof again_what, "no fault, n 4097, 5 iterations, after %s",
                 what);
        memset(&f, 0, sizeof f);
        if (grade_role() != GRADE_JUDGE)
            run_graded(&q, &f);
        exchange_facts(&f);
        grade_exchange_bytes(q.h_out, (size_t)q.spec.n * sizeof(float));
        if (grade_role() != GRADE_RUNNER)
            judge_fresh_run(slot, fc, kernel, again_what, &f, &q);
        problem_free(&q);
    }
    problem_free(&p);
    grade_split_end();
}
END_TEST

/* ---- speed (GPU only) ---------------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* What the runner measured: the first run's return, then the timed pairs' (the first failure
 * stops them: reps says how many ran), and the cadence the last run reported. */
struct speed_facts {
    cudaError_t first, ret;
    int reps, sync_every;
    double tu[SPEED_REPS], ty[SPEED_REPS];
};

static void judge_speed(int slot, struct speed_facts *s)
{
    ck_assert_msg(s->ret == cudaSuccess, "run_pipeline returned %s", err_name(s->ret));
    int times_ok = s->reps == SPEED_REPS;
    for (int i = 0; i < SPEED_REPS; i++) /* the negations also refuse a NaN */
        times_ok = times_ok && s->tu[i] > 0 && !(s->tu[i] > 1e9) && s->ty[i] > 0 &&
                   !(s->ty[i] > 1e9);
    if (!times_ok)
        ck_abort_msg("the grade lost step with the code it runs: no timing came back");
    double mu = median(s->tu, SPEED_REPS), my = median(s->ty, SPEED_REPS), ratio = my / mu;
    grade_note(slot, "%d iterations, n = %d: yours %.2f ms (cadence %d) against %.2f ms with no "
                     "checks: %.3fx (at most %.2fx)", SPEED_ITERS, SPEED_N, my, s->sync_every,
               mu, ratio, NEEDS_RATIO);
    grade_summary("checked loop %.3fx the unchecked one at cadence %d (at most %.2fx)", ratio,
                  s->sync_every, NEEDS_RATIO);
    grade_hint(slot, "each synchronisation drains the stream and leaves the GPU idle for about "
                     "a launch latency: synchronise every 10 iterations or so, not every one; "
                     "cudaGetLastError itself costs next to nothing");
    ck_assert_msg(ratio <= NEEDS_RATIO, "yours %.2f ms at cadence %d, unchecked %.2f ms: %.3fx, "
                  "at most %.2fx", my, s->sync_every, mu, ratio, NEEDS_RATIO);
}

START_TEST(speed)
{
    grade_split(); /* the loops run and are timed in a runner, judged here (grade.h) */
    int slot = SPEED;
    struct rng r = grade_rng(slot);
    struct speed_facts s;
    memset(&s, 0, sizeof s);
    struct problem p;
    struct loop_report rep;
    memset(&rep, 0, sizeof rep);
    if (grade_role() != GRADE_JUDGE) {
        problem_init(&p, SPEED_N, SPEED_ITERS, 0, (struct fault){ FAULT_NONE, 0, 0 });
        rng_fill_f32(&r, p.h_in, SPEED_N, -1.0f, 1.0f);
        run_pipeline_unchecked(&p.spec);
        s.first = run_pipeline(&p.spec, &rep);
        s.sync_every = rep.sync_every;
    }
    grade_exchange_bytes(&s, sizeof s);
    if (grade_role() != GRADE_RUNNER)
        ck_assert_msg(s.first == cudaSuccess, "run_pipeline returned %s (speed is graded once "
                      "it succeeds)", err_name(s.first));
    /* a host loop is timed with the host's clock: what it costs is the GPU's idle time
     * between kernels, which only the wall clock sees in full. Both loops alternate, after a
     * warm-up of each, and the median of each is compared. */
    if (grade_role() != GRADE_JUDGE) {
        for (int i = 0; i < SPEED_REPS && s.first == cudaSuccess && s.ret == cudaSuccess; i++) {
            double t0 = now_ms();
            run_pipeline_unchecked(&p.spec);
            double t1 = now_ms();
            s.ret = run_pipeline(&p.spec, &rep);
            double t2 = now_ms();
            s.tu[i] = t1 - t0;
            s.ty[i] = t2 - t1;
            s.reps = i + 1;
        }
        s.sync_every = rep.sync_every;
        problem_free(&p);
    }
    grade_exchange_bytes(&s, sizeof s);
    if (grade_role() != GRADE_RUNNER)
        judge_speed(slot, &s);
    grade_split_end();
}
END_TEST

/* ---- bench --------------------------------------------------------------------------------- */

/* Per-iteration ms of BENCH_ITERS iterations with a synchronisation every `every` (0: only at
 * the end), each launch checked with cudaGetLastError when `checked`. */
static double bench_loop(float *d_a, float *d_b, int n, int every, int checked, cudaStream_t s)
{
    double t0 = now_ms();
    for (int it = 0; it < BENCH_ITERS; it++) {
        for (int st = 0; st < PIPELINE_NUM_STAGES; st++) {
            PIPELINE_STAGES[st].launch(d_a, d_b, n, it, NULL, s);
            if (checked)
                CUDA_CHECK(cudaGetLastError());
        }
        if (every && (it + 1) % every == 0) {
            cudaError_t e = cudaStreamSynchronize(s);
            if (checked)
                CUDA_CHECK(e);
        }
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    return (now_ms() - t0) / BENCH_ITERS;
}

static int bench(const char *path)
{
    struct device_info info;
    struct results out;
    if (bench_begin(path, &out, &info) != 0)
        return EXIT_FAILURE;
    static const int EVERY[] = { 1, 10, 100, 0 };
    int n = SPEED_N;
    float *d_a, *d_b;
    cudaStream_t s;
    CUDA_CHECK(cudaMalloc((void **)&d_a, (size_t)n * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&d_b, (size_t)n * sizeof(float)));
    CUDA_CHECK(cudaMemset(d_a, 0, (size_t)n * sizeof(float)));
    CUDA_CHECK(cudaStreamCreate(&s));
    char shape[32];
    snprintf(shape, sizeof shape, "%dx%d", n, BENCH_ITERS);
    printf("%-14s %-16s %12s\n", "shape", "loop", "ms/iteration");
    for (size_t e = 0; e < sizeof EVERY / sizeof EVERY[0]; e++)
        for (int checked = 0; checked < 2; checked++) {
            double v[11];
            bench_loop(d_a, d_b, n, EVERY[e], checked, s); /* warm-up */
            gpu_clocks_start(); /* the row's clocks: host-timed, so not through gpu_time */
            for (int i = 0; i < 11; i++)
                v[i] = bench_loop(d_a, d_b, n, EVERY[e], checked, s);
            gpu_clocks_stop();
            double ms = median(v, 11);
            char name[32];
            if (EVERY[e])
                snprintf(name, sizeof name, "%s:%d", checked ? "checked" : "unchecked", EVERY[e]);
            else
                snprintf(name, sizeof name, "%s:never", checked ? "checked" : "unchecked");
            /* three kernels an iteration, each reading and writing n floats (blur reads 3,
             * mostly from cache) */
            double gbs = 3.0 * 2.0 * n * sizeof(float) / (ms * 1e-3) / 1e9;
            results_row(&out, CHAPTER, name, shape, ms, gbs, 0.0);
            printf("%-14s %-16s %12.4f\n", shape, name, ms);
            fflush(stdout);
        }
    CUDA_CHECK(cudaStreamDestroy(s));
    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
    results_close(&out);
    printf("bench: wrote %s\n", path);
    return EXIT_SUCCESS;
}

static void add_tests(Suite *s)
{
    /* Under a sanitizer the tests that fail calls on purpose stay out: it would report each
     * planted failure (the cudaMalloc of 2^62 bytes, the out-of-bounds write, the trap) as an
     * error. The run without a fault is what it checks. */
    static const char *macro_title[] = { "CUDA_TRY on a planted failing cudaMalloc" };
    if (grade_sanitizing())
        grader_skip("macro", "under a sanitizer (GRADE_SANITIZE=1): it fails a cudaMalloc on "
                             "purpose, which the sanitizer would report");
    else
        MACRO = grader_add(s, "macro", macro, macro_title, 1, 60);

    char titles[NCORRECT][96];
    const char *t[NCORRECT];
    for (int i = 0; i < NCORRECT; i++) {
        struct run_case c = CORRECT_CASES[i];
        int n = c.n ? c.n : big_n();
        snprintf(titles[i], sizeof titles[i], "no fault, n %d, %d iterations, cadence %s%s", n,
                 c.iterations, c.sync_every ? (c.sync_every == 1 ? "1" : "10") : "yours",
                 !c.n && !gpu_times_are_real() ? " (in place of the GPU's 16M)" : "");
        t[i] = titles[i];
    }
    CORRECT = grader_add(s, "correct", correct, t, NCORRECT, 120);

    char ftitles[NFAULTS][96];
    const char *ft[NFAULTS];
    for (int i = 0; i < NFAULTS; i++) {
        struct fault_case f = FAULT_CASES[i];
        snprintf(ftitles[i], sizeof ftitles[i], "%s at iteration %d in %s, cadence %d",
                 fault_name(f.kind), f.iteration, f.stage == 0 ? "blur" : f.stage == 1
                 ? "bias" : "copy", f.sync_every);
        ft[i] = ftitles[i];
    }
    if (grade_sanitizing())
        grader_skip("faults", "under a sanitizer (GRADE_SANITIZE=1): each plants a fault (an "
                              "out-of-bounds write, an invalid launch, a trap) that the "
                              "sanitizer would report");
    else
        FAULTS = grader_add(s, "faults", faults, ft, NFAULTS, 120);

    /* Concept tests of the profiling issue (counters from the CPU backend) register here.
     * This chapter's concepts are graded above, by fault injection, on both backends. */

    SPEED = grader_add_timed(s, "speed", speed, "speed: yours at your cadence against no "
                             "checks, 1000 iterations", 180);
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
