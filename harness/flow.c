/* flow.c: the grading choreography every chapter shares (see flow.h). */
#include "flow.h"

#ifdef HARNESS_EMU
#include <emu_memory.h>
#endif

#include <stdlib.h>
#include <string.h>

#include "launches.h"

const void *flow_shape_at(const struct flow_kind *k, const void *table, int i)
{
    return (const char *)table + (size_t)i * k->shape_size;
}

const void *flow_shape_here(const struct flow_kind *k, const struct flow_shapes *s, int i)
{
    return flow_shape_at(k, gpu_times_are_real() ? s->gpu : s->cpu, i);
}

void flow_title(const struct flow_kind *k, const struct flow_shapes *s, int i, char *buf,
                size_t len)
{
    const void *here = flow_shape_here(k, s, i), *gpu = flow_shape_at(k, s->gpu, i);
    char name[64], was[64];
    k->shape_name(here, name, sizeof name);
    k->shape_name(gpu, was, sizeof was);
    if (s->plain_titles || memcmp(here, gpu, k->shape_size) == 0)
        snprintf(buf, len, "correct %s", name);
    else
        snprintf(buf, len, "correct %s (in place of the GPU's %s)", name, was);
}

/* ---- correctness ---------------------------------------------------------------------------- */

/* the kernels the last graded run of this test launched: recorded in the runner, received in
 * the judge (launches.h) */
static struct launch_log last_launches;

/* fn once on p, as graded: in the runner (or an unsplit test) the launch and its
 * synchronisation, with the kernels it launched recorded; in the judge, what the runner's run
 * left on the device and what it launched (grade.h). */
static void graded_run(const struct flow_kind *k, void *p, flow_fn fn)
{
    unsigned long long to_host = 0;
    if (grade_role() != GRADE_JUDGE) {
#ifdef HARNESS_EMU
        unsigned long long before = emu_bytes_to_host();
#endif
        launches_begin();
        k->launch(p, fn);
        gpu_sync();
        launches_end(&last_launches);
#ifdef HARNESS_EMU
        to_host = emu_bytes_to_host() - before;
#endif
    }
    grade_exchange_run(&to_host);
    grade_exchange_bytes(&last_launches, sizeof last_launches);
    launches_sanitize(&last_launches);
    /* these problems' inputs and outputs live on the device: a launcher has nothing to copy
     * to the host, unless it means to compute there (on a GPU its speed tells; here, this) */
    if (grade_role() != GRADE_RUNNER && to_host > 0)
        ck_abort_msg("the code under grading copied %llu bytes from the device to the host "
                     "while it ran: compute on the device (a launcher that moves its inputs "
                     "to the host and computes there is not a kernel)", to_host);
}

/* Fresh inputs, the reference and a poisoned output (kind->fill); in the runner, which checks
 * nothing, the inputs and the poison alone where the kind can make them so (kind->fill_inputs,
 * which draws the same numbers from r): the reference is the judge's, and on a GPU its host
 * work (a GEMM's, in double) is the largest part of a correctness test. */
static void fill_here(const struct flow_kind *k, void *p, struct rng *r)
{
    if (grade_role() == GRADE_RUNNER && k->fill_inputs)
        k->fill_inputs(p, r);
    else
        k->fill(p, r);
    /* the runner's generator against the judge's: a kind whose fill draws more than its
     * fill_inputs (a sample of the reference's elements, say) leaves the runner computing on
     * other inputs than the reference's from the next fill on, which reads as a kernel wrong on
     * its second run; said here, as what it is */
    struct rng theirs = *r;
    grade_exchange_bytes(&theirs, sizeof theirs);
    if (grade_role() == GRADE_JUDGE && memcmp(&theirs, r, sizeof theirs) != 0)
        ck_abort_msg("the grade lost step with the code it runs: the kind's fill and fill_inputs "
                     "drew different numbers from the generator (a grader bug: fill_inputs must "
                     "draw everything fill draws)");
}

/* the kind's check, where checks are made: not in the runner */
static void judged_check(const struct flow_kind *k, void *p, int slot, const char *what)
{
    if (grade_role() != GRADE_RUNNER)
        k->check(p, slot, what);
}

void flow_twice(const struct flow_kind *k, void *p, struct rng *r, flow_fn fn, const char *what,
                int slot, unsigned flags)
{
    for (int round = 0; round < 2; round++) {
        char label[192];
        snprintf(label, sizeof label, "%s", what);
        if (round == 0)
            grade_second_run(slot, -1);
        if (round == 1) {
            int shuffled = gpu_shuffle_schedule(rng_next(r));
            grade_second_run(slot, shuffled);
            if (!(flags & FLOW_SAME_LABEL))
                snprintf(label, sizeof label, "%s, second run%s", what,
                         shuffled ? ", shuffled schedule" : "");
        }
        fill_here(k, p, r);
        graded_run(k, p, fn);
        judged_check(k, p, slot, label);
    }
}

void flow_correct(const struct flow_kind *k, int slot, const void *shape, flow_fn fn,
                  const char *what)
{
    if (grade_quick_skip(slot, k->work(shape), k->work_unit))
        return;
    grade_split(); /* the learner's code in a runner, the checks here (grade.h) */
    struct rng r = grade_rng(slot);
    void *p = k->init(k, shape);
    flow_twice(k, p, &r, fn, what, slot, 0);
    k->free(p);
    grade_split_end();
}

void flow_correct_each(const struct flow_kind *k, int slot, const void *shapes, int n, flow_fn fn,
                       const char *what, unsigned flags)
{
    grade_split(); /* the learner's code in a runner, the checks here (grade.h) */
    struct rng r = grade_rng(slot);
    for (int i = 0; i < n; i++) {
        void *p = k->init(k, flow_shape_at(k, shapes, i));
        flow_twice(k, p, &r, fn, what, slot, flags);
        k->free(p);
    }
    grade_split_end();
}

/* What a registered correctness test runs (its grade_ctx): set in the parent before the
 * forks, read in the children; one a registration (a step each, say). */
struct correct_reg {
    const struct flow_kind *kind;
    const struct flow_shapes *shapes;
    flow_fn fn;
    const char *what;
    int slot;
};
static struct correct_reg CORRECT[GRADE_MAX_STEPS + 1];
static int ncorrect;

START_TEST(flow_correct_test)
{
    const struct correct_reg *c = grade_ctx();
    flow_correct(c->kind, c->slot + _i, flow_shape_here(c->kind, c->shapes, _i), c->fn, c->what);
}
END_TEST

int flow_add_correct(Suite *s, const struct flow_kind *k, const struct flow_shapes *shapes,
                     flow_fn fn, const char *what)
{
    static char titles[GRADE_MAX_TESTS][160];
    const char *t[GRADE_MAX_TESTS];
    int n = shapes->n < GRADE_MAX_TESTS ? shapes->n : GRADE_MAX_TESTS;
    for (int i = 0; i < n; i++) {
        flow_title(k, shapes, i, titles[i], sizeof titles[i]);
        t[i] = titles[i];
    }
    if (ncorrect == (int)(sizeof CORRECT / sizeof CORRECT[0])) {
        fprintf(stderr, "flow: more than %d correctness registrations\n", ncorrect);
        exit(EXIT_FAILURE);
    }
    struct correct_reg *c = &CORRECT[ncorrect++];
    *c = (struct correct_reg){ k, shapes, fn, what, 0 };
    c->slot = grader_add_ctx(s, "correct", flow_correct_test, t, n, 120, c);
    return c->slot;
}

/* ---- speed ---------------------------------------------------------------------------------- */

/* A speed test's problems: the inputs it times, in rotation (flow.h) */
#define ROTATE_MAX 5

struct launch {
    const struct flow_kind *kind;
    void **p;           /* the problems, launched in turn */
    int n, next;
    flow_fn fn;         /* NULL: the library */
};

static void run_launch(void *ctx)
{
    struct launch *l = ctx;
    void *p = l->p[l->next++ % l->n];
    if (l->fn)
        l->kind->launch(p, l->fn);
    else
        l->kind->library(p);
}

START_TEST(flow_speed_test)
{
    const struct flow_speed *sp = grade_ctx();
    const struct flow_kind *k = sp->kind;
    int slot = grade_slot();
    grade_split(); /* the kernels run and are timed in a runner, judged here (grade.h) */
    struct rng r = grade_rng(slot);
    /* 3 to 5 problems, as many as the seed says, each with inputs of its own, launched in
     * turn: a launcher that remembers its last inputs and output and hands that output back
     * for the same inputs would time a copy, and each problem's output is checked after the
     * timing */
    const int n = 3 + (int)(rng_next(&r) % 3);
    void *p[ROTATE_MAX];
    for (int j = 0; j < n; j++) {
        p[j] = k->init(k, sp->shape);
        if (sp->reference)
            k->fill_inputs(p[j], &r);
        else
            fill_here(k, p[j], &r);
    }
    char what[192];
    if (sp->reference) {
        for (int j = 0; j < n; j++) {
            graded_run(k, p[j], sp->reference);
            k->adopt(p[j]);
            if (sp->vet && grade_role() != GRADE_RUNNER) {
                struct rng v = r; /* the judge's own draws: the runner's stay in step */
                rng_next(&v);
                v.s[0] ^= (uint64_t)j;
                sp->vet(p[j], &v, slot);
            }
            k->poison(p[j]);
        }
    }

    /* a kernel is timed only once it is right, and the outputs are poisoned before each
     * kernel's runs, so the checks after timing see what that kernel wrote and nothing else */
    graded_run(k, p[0], sp->yours);
    snprintf(what, sizeof what, "%s (speed is graded once it is correct)", sp->what);
    judged_check(k, p[0], slot, what);
    /* what yours launched, shown under a speed miss: blocks against SMs, work a thread */
    if (grade_role() != GRADE_RUNNER && last_launches.recorded) {
        char text[GRADE_TEXT];
        launches_describe(&last_launches, k->work(sp->shape), k->work_unit,
                          grader_device()->sms, text, sizeof text);
        grade_launched(slot, "%s", text);
    }

    static const enum flow_timed in_order[3] = { FLOW_BASE, FLOW_YOURS, FLOW_CEILING };
    const enum flow_timed *order = sp->order[0] ? sp->order : in_order;
    struct flow_times t;
    for (int i = 0; i < 3; i++) {
        struct launch l = { k, p, n, 0, order[i] == FLOW_BASE    ? sp->base
                                        : order[i] == FLOW_YOURS ? sp->yours
                                                                 : sp->ceiling };
        struct timing ti = { 0 };
        if (order[i] != FLOW_CEILING)
            for (int j = 0; j < n; j++)
                k->poison(p[j]);
        if (grade_role() != GRADE_JUDGE)
            ti = gpu_time(run_launch, &l, sp->warmup, sp->reps);
        grade_exchange_timing(&ti);
        if (order[i] == FLOW_CEILING) {
            t.ceiling = ti;
            continue;
        }
        if (order[i] == FLOW_BASE) {
            t.base = ti;
            continue;
        }
        t.yours = ti;
        /* each output holds its problem's last timed run (warmup + reps >= n: every problem
         * ran) */
        grade_exchange_buffers();
        for (int j = 0; j < n; j++) {
            snprintf(what, sizeof what, "%s after timing, inputs %d of %d", sp->what, j + 1, n);
            judged_check(k, p[j], slot, what);
        }
    }
    for (int j = 0; j < n; j++)
        k->free(p[j]);
    grade_split_end();
    sp->verdict(slot, sp->shape, &t);
}
END_TEST

int flow_add_speed(Suite *s, const struct flow_speed *sp)
{
    char name[64], title[128];
    sp->kind->shape_name(sp->shape, name, sizeof name);
    snprintf(title, sizeof title, "%s at %s", sp->tcase, name);
    return grader_add_timed_ctx(s, sp->tcase, flow_speed_test, title, sp->timeout_s, sp);
}

/* ---- what a launcher launches ---------------------------------------------------------------- */

void flow_launches_of(const struct flow_kind *k, const void *shape, flow_fn fn, int slot,
                      const char *what, struct launch_log *out)
{
    grade_split(); /* the learner's code in a runner, the checks here (grade.h) */
    struct rng r = grade_rng(slot);
    void *p = k->init(k, shape);
    fill_here(k, p, &r);
    graded_run(k, p, fn);
    judged_check(k, p, slot, what);
    *out = last_launches;
    k->free(p);
    grade_split_end();
    if (!out->recorded) /* the judge's side: a build without the wraps sees no launch at all */
        ck_abort_msg("grader: this build does not record launches (its graders are linked with "
                     "harness/launch_wrap.o: make grade rebuilds it)");
    if (out->n == 0) {
        grade_hint(slot, "launch your kernels with <<<...>>> or cudaLaunchKernel(Ex): the "
                         "grader reads what they launched (their grids, their machine code)");
        ck_abort_msg("%s: no kernel launch was seen", what);
    }
}

/* ---- bench ---------------------------------------------------------------------------------- */

struct timing flow_time(const struct flow_kind *k, void *p, flow_fn fn, int warmup, int reps)
{
    void *one[1] = { p };
    struct launch l = { k, one, 1, 0, fn };
    k->poison(p);
    return gpu_time(run_launch, &l, warmup, reps);
}

int flow_time_turns(const struct flow_kind *k, void *p, int n, const flow_fn *fn,
                    const char *const *name, const char *label, int rounds, int warmup,
                    int reps, struct timing *median_round_out)
{
    struct timing *t = xmalloc((size_t)n * rounds * sizeof *t);
    double *ms = xmalloc((size_t)n * rounds * sizeof *ms);
    for (int r = 0; r < rounds; r++) {
        printf("%-18s round %d of %d:", label, r + 1, rounds);
        for (int i = 0; i < n; i++) {
            t[i * rounds + r] = flow_time(k, p, fn[i], warmup, reps);
            ms[i * rounds + r] = t[i * rounds + r].median_ms;
            printf(" %s %.4f ms (%.0f MHz)", name[i], t[i * rounds + r].median_ms,
                   t[i * rounds + r].clocks.sm_mhz);
        }
        if (n == 2)
            printf("  %s / %s = %.3f", name[1], name[0], ms[r] / ms[rounds + r]);
        printf("\n");
        fflush(stdout);
    }
    const int mid = median_round(ms, n, rounds);
    for (int i = 0; i < n; i++)
        median_round_out[i] = t[i * rounds + mid];
    printf("%-18s the median round: %d\n", label, mid + 1);
    free(ms);
    free(t);
    return mid;
}

double flow_time_row(const struct flow_kind *k, void *p, flow_fn fn, int check,
                     struct results *out, const char *chapter, const char *name,
                     const char *shape, double bytes, double flops, int warmup, int reps)
{
    struct timing t = flow_time(k, p, fn, warmup, reps);
    if (check && k->bench_check(p, name, shape) != 0)
        return -1.0;
    double sec = t.median_ms * 1e-3;
    results_row(out, chapter, name, shape, t.median_ms, bytes / sec / 1e9, flops / sec / 1e9);
    return t.median_ms;
}

int flow_bench(const struct flow_bench *b, const char *path)
{
    const struct flow_kind *k = b->kind;
    struct device_info info;
    struct results out;
    if (bench_begin(path, &out, &info) != 0)
        return EXIT_FAILURE;
    struct rng r;
    rng_init(&r, harness_seed());
    int sw = b->shape_width ? b->shape_width : 16, nw = b->name_width ? b->name_width : 12;
    printf("%-*s %-*s %10s %10s%s\n", sw, "shape", nw, "kernel", "ms", b->print_label,
           b->library_first ? "  library" : "");
    for (int i = 0; i < b->nshapes; i++) {
        const void *s = flow_shape_at(k, b->shapes, i);
        void *p = k->init(k, s);
        k->bench_fill(p, &r);
        char shape[48];
        k->shape_name(s, shape, sizeof shape);
        int reps = b->big_work > 0 && k->work(s) >= b->big_work ? b->big_reps : b->reps;
        double lib_ms = 0.0;
        /* every rung and the library, on the same inputs in one run: the library first when
         * the rungs are shown as a share of it, else last */
        for (int v = -1; v <= b->nrungs; v++) {
            int is_lib = b->library && (b->library_first ? v == -1 : v == b->nrungs);
            if (!is_lib && (v < 0 || v >= b->nrungs))
                continue;
            if (!is_lib && b->skip && b->skip(v, s, &info))
                continue;
            if (!is_lib && k->bench_select)
                k->bench_select(p, b->rungs[v].arg);
            const char *name = is_lib ? b->library : b->rungs[v].name;
            double ms = flow_time_row(k, p, is_lib ? NULL : b->rungs[v].fn, !is_lib, &out,
                                      b->chapter, name, shape, b->bytes(s),
                                      b->flops ? b->flops(s) : 0.0, b->warmup, reps);
            if (ms < 0)
                return EXIT_FAILURE;
            if (is_lib)
                lib_ms = ms;
            double sec = ms * 1e-3;
            printf("%-*s %-*s %10.4f %10.1f", sw, shape, nw, name, ms,
                   b->flops ? b->flops(s) / sec / b->print_unit : b->bytes(s) / sec / 1e9);
            if (b->library_first)
                printf(" %7.0f%%", 100.0 * lib_ms / ms);
            printf("\n");
            fflush(stdout);
        }
        k->free(p);
    }
    if (b->extra && b->extra(&out, &info) != 0)
        return EXIT_FAILURE;
    results_close(&out);
    printf("bench: wrote %s\n", path);
    return EXIT_SUCCESS;
}
