/* 05-async-pipelining.c: the grader of chapter 05, and its bench.
 *
 *   grade            gemm_pipelined on edge shapes (k and n odd or not multiples of 8 included)
 *                    against a double-precision reference computed from the same bf16 inputs,
 *                    twice each on fresh inputs; every other rung of the linked files on small
 *                    odd shapes; on a GPU, gemm_pipelined at least 1.2x gemm_sync at 4096^3,
 *                    with cuBLAS BF16 measured in the same run as the ceiling, and the machine
 *                    code checked for LDGSTS (cp.async) in your kernel, UTMALDG (TMA) in
 *                    step 4's, and HGMMA (wgmma) and UTMALDG in step 5's
 *   grade --bench F  every rung and cuBLAS BF16 at 1024^3, 2048^3, 4096^3 and two odd shapes,
 *                    plus the stage-count sweep at 4096^3, as tab-separated rows in F (GPU only);
 *                    on stdout, each rung's share of cuBLAS BF16 at the same shape
 *
 * The choreography is harness/flow.c's, the problem graders/gemm_family.c's (bf16 inputs);
 * here, the facts, the ladder, and the machine-code checks (harness/sass.c).
 */
#include <stdlib.h>
#include <string.h>

#include "gemm_family.h"
#include "gemm.h"
#include "sass.h"

#define CHAPTER "05-async-pipelining"
#define NEEDS_SPEEDUP 1.2

/* Edge shapes: one element; primes under the tile with k odd (no 16-byte row starts: the
 * narrow path); a k that ends mid-tile with k % 8 == 0 (the zero-filled k tail); odd k with
 * several k tiles; a square that fills the GPU (k and n multiples of 8 but not of the tile:
 * the 16-byte copies of both A and B meet the k tail); a tall thin C with odd k and n. */
static const struct gemm_shape GPU_SHAPES[] = {
    { 1, 1, 1 }, { 17, 33, 9 }, { 100, 72, 130 }, { 200, 123, 150 }, { 1000, 1000, 1000 },
    { 3001, 517, 37 },
};
/* On the CPU backend every lane of a warp computes a whole 16 x 16 x 16 product (see
 * harness/emu/include/mma.h), so the shapes that only exist to fill a GPU shrink. */
static const struct gemm_shape CPU_SHAPES[] = {
    { 1, 1, 1 }, { 17, 33, 9 }, { 100, 72, 130 }, { 200, 123, 150 }, { 264, 264, 264 },
    { 301, 517, 37 },
};
static const struct flow_shapes SHAPES = { GPU_SHAPES, CPU_SHAPES, .n = 6 };

/* Every other rung on these. The first three have k or n odd, which the TMA rungs (steps 4
 * and 5) hand to step 3; the last two have k and n multiples of 8, so the TMA rungs run their
 * own kernels on them: one element of C in a box far larger than the matrix, and tails in m,
 * k and n with enough tiles of k (9 of step 5's 64) to go round its 4-stage ring twice. */
static const struct gemm_shape RUNG_SHAPES[] = {
    { 17, 33, 9 }, { 100, 72, 130 }, { 200, 123, 150 }, { 1, 8, 8 }, { 130, 520, 264 },
};
#define NRUNG_SHAPES ((int)(sizeof RUNG_SHAPES / sizeof RUNG_SHAPES[0]))

static const struct gemm_shape BENCH_SHAPES[] = {
    { 1024, 1024, 1024 }, { 2048, 2048, 2048 }, { 4096, 4096, 4096 },
    { 3999, 4000, 4008 },  /* odd m, k and n multiples of 8 but not of the tile: TMA runs */
    { 1000, 999, 1001 },   /* odd k and n: no 16-byte row starts, the narrow path; the TMA
                            * rungs (steps 4 and 5) hand it to step 3 */
};
#define SPEED_SIZE 4096 /* the speed test's, and the stage-count sweep's only bench shape */

static int RUNGS, SASS;
static int RUNG_INDEX[GRADE_MAX_TESTS]; /* test iteration -> ladder index */
static int SASS_CHECK[GRADE_MAX_TESTS]; /* test iteration -> SASS_CHECKS index */

/* ---- the ladder ---------------------------------------------------------------------------
 *
 * GEMM_RUNGS as rungs.cu gives it: every step, NULL where this build does not link its file. */

#define MAX_RUNGS 32
static struct gemm_rung LADDER[MAX_RUNGS];
static int NUM_LADDER;

static void ladder_init(void)
{
    NUM_LADDER = 0;
    for (int v = 0; v < GEMM_NUM_RUNGS && NUM_LADDER < MAX_RUNGS; v++)
        LADDER[NUM_LADDER++] = GEMM_RUNGS[v];
}

/* NULL when a rung this build has can run on a device of compute capability cc; else why not */
static const char *rung_cannot_run(const struct gemm_rung *g, int cc, char *why, size_t len)
{
    if (g->min_cc > cc)
        snprintf(why, len, "needs sm_%d; this device is sm_%d", g->min_cc, cc);
    else if (g->arch_specific && cc != g->min_cc)
        snprintf(why, len, "%s is sm_%da code, which runs on sm_%d only; this device is sm_%d",
                 g->name, g->min_cc, g->min_cc, cc);
    else
        return NULL;
    return why;
}

static int device_cc(void)
{
    const struct device_info *d = grader_device();
    return 10 * d->cc_major + d->cc_minor;
}

/* ---- the problem -------------------------------------------------------------------------- */

/* What the bad elements of C suggest, for this chapter's bugs. */
static void pipeline_hint(const struct cmp_result *c, const float *got, struct gemm_shape s,
                          char *hint, size_t len)
{
    size_t zeros = 0, nc = (size_t)s.m * s.n;
    for (size_t i = 0; i < nc; i++)
        zeros += got[i] == 0.0f;
    if (zeros == nc) {
        snprintf(hint, len, "C is all zeros: the accumulators were stored, but nothing was "
                            "multiplied into them: is the loop over the tiles of k there (the "
                            "TODO in gemm_pipelined_kernel), and does it reach mma_tile?");
        return;
    }
    cmp_hint(c, (size_t)s.m, (size_t)s.n, hint, len);
    if (hint[0])
        return;
    if (c->nonfinite && c->unwritten < c->nonfinite)
        snprintf(hint, len, "NaN or Inf in C that the poison did not put there: a tile read "
                            "before its copy landed, or shared memory past the k tail that was "
                            "never zero-filled (the 4th argument of __pipeline_memcpy_async is "
                            "how many bytes to zero)");
    else if (c->bad == c->checked && s.k > GEMM_BK)
        snprintf(hint, len, "every element is wrong: does the loop multiply the stage that "
                            "holds tile t (t %% 2), after __pipeline_wait_prior and "
                            "__syncthreads, and is every accumulator filled with 0 first?");
    else
        snprintf(hint, len, "the wrong elements do not sit at an edge: check which stage each "
                            "copy fills and which one the math reads, and that the tile past "
                            "k is zero-filled (17x33x9 and 100x72x130 end k mid-tile)");
}


#define GUARD_HINT                                                                             \
    "a thread stored outside C: the store of a tile that hangs over the edge needs row < m && " \
    "col < n"

static const struct gemm_kind PIPELINED = {
    GEMM_FLOW, .input = GEMM_BF16, .guard_hint = GUARD_HINT, .hint_fn = pipeline_hint,
};
/* at the speed test's size the reference is cuBLAS's own fp32 sum, checked at twice the
 * tolerance (two roundings) */
static const struct gemm_kind PIPELINED_BLAS = {
    GEMM_FLOW, .input = GEMM_BF16, .ref = GEMM_REF_LIBRARY, .guard_hint = GUARD_HINT,
    .hint_fn = pipeline_hint,
};

/* ---- correctness and speed ---------------------------------------------------------------- */

START_TEST(rung_correct)
{
    int slot = RUNGS + _i;
    const struct gemm_rung *g = &LADDER[RUNG_INDEX[_i]];
    /* the TMA rungs hand a shape whose k or n is not a multiple of 8 to step 3 */
    int tma_rung = strcmp(g->name, "tma") == 0 || strcmp(g->name, "wgmma") == 0;
    struct rng r = grade_rng(slot);
    for (int i = 0; i < NRUNG_SHAPES; i++) {
        struct gemm_shape s = RUNG_SHAPES[i];
        char what[96];
        snprintf(what, sizeof what, "%s%s", g->name, tma_rung && (s.k % 8 || s.n % 8)
                 ? " (k or n not a multiple of 8: step 3's kernel ran)" : "");
        void *p = gemm_init(&PIPELINED.kind, &s);
        flow_twice(&PIPELINED.kind, p, &r, (flow_fn)g->fn, what, slot, FLOW_SAME_LABEL);
        gemm_free(p);
    }
    if (tma_rung)
        grade_note(slot, "its own kernel where k and n are multiples of 8, step 3's elsewhere "
                         "(TMA needs 16-byte row strides)");
}
END_TEST

static void verdict(int slot, const void *shape, const struct flow_times *t)
{
    struct gemm_shape s = *(const struct gemm_shape *)shape;
    double ratio = t->base.median_ms / t->yours.median_ms;
    grade_note(slot, "yours %.0f TFLOP/s = %.2fx gemm_sync's %.0f (needs %.1fx); cuBLAS BF16 "
                     "%.0f TFLOP/s, so yours is %.0f%% of it",
               gemm_rate(s, t->yours.median_ms, 1e12), ratio, gemm_rate(s, t->base.median_ms, 1e12),
               NEEDS_SPEEDUP, gemm_rate(s, t->ceiling.median_ms, 1e12),
               100.0 * t->ceiling.median_ms / t->yours.median_ms);
    grade_summary("%.2fx over gemm_sync (needs %.1fx)", ratio, NEEDS_SPEEDUP);
    grade_hint(slot, "issue the copy of tile t + 1 BEFORE multiplying tile t, and wait for a "
                     "tile only right before its math: __pipeline_wait_prior(0) then "
                     "__syncthreads() at the top of the loop, the next copies and their "
                     "__pipeline_commit() after it, the mma last");
    ck_assert_msg(ratio >= NEEDS_SPEEDUP,
                  "%dx%dx%d: yours %.3f ms, gemm_sync %.3f ms: %.2fx, needs %.1fx", s.m, s.k,
                  s.n, t->yours.median_ms, t->base.median_ms, ratio, NEEDS_SPEEDUP);
}

static const struct gemm_shape SPEED_SHAPE = { SPEED_SIZE, SPEED_SIZE, SPEED_SIZE };
static const struct flow_speed SPEED = {
    "speed", &PIPELINED_BLAS.kind, &SPEED_SHAPE, (flow_fn)gemm_pipelined, (flow_fn)gemm_sync,
    NULL, "gemm_pipelined", 2, 10, 300, .verdict = verdict,
};

/* ---- the instructions are really there (GPU only, needs cuobjdump) ---------------------- */

/* What the machine code must show: the instruction each rung is about, in its kernel, in the
 * cubin a device of this compute capability runs (for step 5, the sm_90a one). */
static const struct sass_check {
    const char *rung, *kernel, *opcode;
    int arch_specific; /* 1: the sm_XYa cubin */
    const char *hint;
} SASS_CHECKS[] = {
    { "pipelined", "gemm_pipelined_kernel", "LDGSTS", 0,
      "the copies must be __pipeline_memcpy_async (cp.async): a plain load and store through "
      "registers compiles to LDG and STS" },
    { "tma", "gemm_tma_kernel", "UTMALDG", 0,
      "the copies must be cp.async.bulk.tensor (TMA) instructions" },
    { "wgmma", "gemm_wgmma_kernel", "HGMMA", 1,
      "the math must be wgmma.mma_async in an sm_90a cubin (-gencode arch=compute_90a,"
      "code=sm_90a, which the Makefile adds when ARCH has 90): elsewhere the kernel is a trap" },
    { "wgmma", "gemm_wgmma_kernel", "UTMALDG", 1,
      "the copies must be cp.async.bulk.tensor (TMA) instructions, in the sm_90a cubin" },
};
#define NSASS_CHECKS ((int)(sizeof SASS_CHECKS / sizeof SASS_CHECKS[0]))

START_TEST(sass)
{
    int slot = SASS + _i;
    const struct sass_check *k = &SASS_CHECKS[SASS_CHECK[_i]];
    char why[256], arch[16];
    snprintf(arch, sizeof arch, "sm_%d%s", device_cc(), k->arch_specific ? "a" : "");
    int has = sass_has(k->kernel, k->opcode, arch, why, sizeof why);
    if (has < 0 && k->arch_specific) /* no sm_90a cubin at all: say how to build one */
        grade_hint(slot, "%s", k->hint);
    ck_assert_msg(has >= 0, "%s", why);
    if (!has) {
        grade_hint(slot, "%s", k->hint);
        ck_abort_msg("no %s in the %s machine code of %s", k->opcode, arch, k->kernel);
    }
    grade_note(slot, "%s holds %s (%s)", k->kernel, k->opcode, arch);
}
END_TEST

/* ---- bench ------------------------------------------------------------------------------ */

/* Step 3's file offers the roof of the mma.sync path (no memory traffic, see step3_ring.cu);
 * weak, because the learner's build links no such file. */
extern void gemm_mma_sync_peak(float *d_sink, int blocks, int iters) __attribute__((weak));

struct peak_launch {
    float *d_sink;
    int blocks, iters;
};

static void run_peak(void *ctx)
{
    struct peak_launch *l = ctx;
    gemm_mma_sync_peak(l->d_sink, l->blocks, l->iters);
}

/* the row "mma_sync_peak": 4 blocks of 8 warps an SM, each warp 8 x 4096 products */
static int bench_mma_peak(struct results *out, const struct device_info *info)
{
    struct peak_launch l = { NULL, 4 * info->sms, 4096 };
    l.d_sink = dbuf_alloc(256 * sizeof(float), "d_sink");
    struct timing t = gpu_time(run_peak, &l, 2, 10);
    dbuf_free(l.d_sink);
    double flops = 2.0 * 16 * 8 * 16 * 8.0 * l.iters * 8.0 * l.blocks;
    double gflops = flops / (t.median_ms * 1e-3) / 1e9;
    char shape[48];
    snprintf(shape, sizeof shape, "%dx8warps", l.blocks);
    results_row(out, CHAPTER, "mma_sync_peak", shape, t.median_ms, 0.0, gflops);
    printf("%-16s %-10s %10.4f %10.1f   (no memory: the roof of steps 1-3)\n", shape,
           "mma_sync_peak", t.median_ms, gflops / 1e3);
    return 0;
}


/* a rung the bench leaves out: not in this build, not for this device, or the stage-count
 * sweep away from its one shape */
static int bench_skip(int v, const void *shape, const struct device_info *info)
{
    const struct gemm_shape *s = shape;
    const struct gemm_rung *g = &LADDER[v];
    int sweep_shape = s->m == SPEED_SIZE && s->k == SPEED_SIZE && s->n == SPEED_SIZE;
    char why[96];
    return !g->fn || rung_cannot_run(g, 10 * info->cc_major + info->cc_minor, why, sizeof why) ||
           (g->sweep && !sweep_shape);
}

static int bench_extra(struct results *out, const struct device_info *info)
{
    if (gemm_mma_sync_peak && 10 * info->cc_major + info->cc_minor >= 80)
        return bench_mma_peak(out, info);
    return 0;
}

static int bench(const char *path)
{
    ladder_init();
    struct flow_rung rungs[MAX_RUNGS];
    for (int v = 0; v < NUM_LADDER; v++)
        rungs[v] = (struct flow_rung){ .name = LADDER[v].name, .fn = (flow_fn)LADDER[v].fn };
    /* cuBLAS first, then every rung as a share of it */
    const struct flow_bench b = {
        .chapter = CHAPTER, .kind = &PIPELINED.kind, .shapes = BENCH_SHAPES,
        .nshapes = (int)(sizeof BENCH_SHAPES / sizeof BENCH_SHAPES[0]), .rungs = rungs,
        .nrungs = NUM_LADDER, .library = "cublas", .library_first = 1, .warmup = 2, .reps = 10,
        .bytes = gemm_bytes_bf16, .flops = gemm_flops, .print_unit = 1e12,
        .print_label = "TFLOP/s", .skip = bench_skip, .extra = bench_extra,
    };
    return flow_bench(&b, path);
}

/* ---- registration ----------------------------------------------------------------------- */

static void add_tests(Suite *s)
{
    const struct device_info *dev = grader_device();
    int on_gpu = strcmp(dev->backend, "cuda") == 0;
    int cc = device_cc();
    if (on_gpu && cc < 80) {
        grader_skip("every test", "BF16 tensor cores (WMMA bf16 fragments) need sm_80 or later");
        return;
    }
    flow_add_correct(s, &PIPELINED.kind, &SHAPES, (flow_fn)gemm_pipelined, "gemm_pipelined");

    /* every other rung this build links, on small odd shapes */
    ladder_init();
    char shape_list[96] = "";
    for (int i = 0; i < NRUNG_SHAPES; i++) {
        size_t used = strlen(shape_list);
        snprintf(shape_list + used, sizeof shape_list - used, "%s%dx%dx%d", i ? ", " : "",
                 RUNG_SHAPES[i].m, RUNG_SHAPES[i].k, RUNG_SHAPES[i].n);
    }
    static char rtitles[GRADE_MAX_TESTS][128];
    const char *rt[GRADE_MAX_TESTS];
    int nr = 0;
    for (int v = 0; v < NUM_LADDER && nr < GRADE_MAX_TESTS; v++) {
        const struct gemm_rung *g = &LADDER[v];
        char title[128], why[96];
        snprintf(title, sizeof title, "rung %s on %s", g->name, shape_list);
        if (g->fn == gemm_pipelined)
            continue;
        if (!g->fn) {
            grader_skip(title, on_gpu || g->min_cc < 90
                ? "this build leaves that rung out (its file was not linked)"
                : "graded on a GPU only: TMA, mbarrier and wgmma are PTX that the CPU backend "
                  "cannot run, and this build leaves that rung out");
            continue;
        }
        if (on_gpu && rung_cannot_run(g, cc, why, sizeof why)) {
            grader_skip(title, why);
            continue;
        }
        memcpy(rtitles[nr], title, sizeof title);
        rt[nr] = rtitles[nr];
        RUNG_INDEX[nr++] = v;
    }
    if (nr > 0)
        RUNGS = grader_add(s, "rungs", rung_correct, rt, nr, 120);

    flow_add_speed(s, &SPEED);

    /* the machine code: yours, and steps 4's and 5's where the ladder has them */
    static char stitles[NSASS_CHECKS][96];
    const char *st[NSASS_CHECKS];
    int ns = 0;
    for (int i = 0; i < NSASS_CHECKS; i++) {
        const struct sass_check *k = &SASS_CHECKS[i];
        const struct gemm_rung *g = NULL;
        for (int v = 0; v < NUM_LADDER && !g; v++)
            if (strcmp(LADDER[v].name, k->rung) == 0)
                g = &LADDER[v];
        if (!g)
            continue;
        snprintf(stitles[ns], sizeof stitles[ns], "sass: %s in %s", k->opcode, k->kernel);
        char cannot[96], none[96];
        snprintf(none, sizeof none, "this build has no %s rung", k->rung);
        const char *why = NULL;
        if (!on_gpu)
            why = "graded on a GPU only: the CPU backend runs no machine code";
        else if (!g->fn)
            why = none;
        else if (rung_cannot_run(g, cc, cannot, sizeof cannot))
            why = cannot;
        else if (!sass_on_path("cuobjdump"))
            why = "cuobjdump is not on PATH (it comes with the CUDA toolkit)";
        if (why) {
            grader_skip(stitles[ns], why);
            continue;
        }
        st[ns] = stitles[ns];
        SASS_CHECK[ns++] = i;
    }
    if (ns > 0)
        SASS = grader_add(s, "sass", sass, st, ns, 120);

    /* The concept tests of the profiling issue (sectors per request, shared-memory wavefronts
     * per request on the CPU backend) register here. */
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
