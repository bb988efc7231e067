/* 03-warp-divergence.c: the grader of chapter 03, and its bench.
 *
 *   grade            process() on odd sizes that are not multiples of a warp, twice each on
 *                    fresh inputs, against a CPU reference; on a GPU, process at least 1.6x
 *                    process_divergent at n = 2^24 + 1, with parity_warp (the same work with
 *                    no divergence and no remapping) measured in the same run as the ceiling
 *   grade --bench F  every rung of the linked process.cu (the solution's: the three demo
 *                    pairs and the task's pair) at two sizes, as tab-separated rows in F
 *                    (GPU only)
 *
 * Tolerance. path_a and path_b (divergence.h) are chains of fmaf only, and fmaf is correctly
 * rounded both on the GPU and in C, so the kernels and the reference below compute the same
 * floats bit for bit. The grader still allows 1e-5 relative (plus 1e-5 absolute, for path B's
 * outputs near zero): room for a compiler that ever splits an fmaf, and more than six orders
 * of magnitude below what any wrong mapping produces (path A's output is about 450 x, path
 * B's about 0.55 x + 0.18, and two neighbouring inputs differ by about 0.5).
 *
 * The choreography is harness/flow.c's, the problem graders/array_family.c's; here, the facts,
 * the references, the hints, the concept test and the bench.
 */
#define _POSIX_C_SOURCE 200809L /* popen: graders/concept.h */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array_family.h"
#include "divergence.h"
#include "concept.h"

#define CHAPTER "03-warp-divergence"
#define NEEDS_SPEEDUP 1.6
#define SPEED_N ((1 << 24) + 1) /* odd: the last pair of warps is partial */
#define RTOL 1e-5
#define ATOL 1e-5

/* Odd sizes, sizes just off a warp and off a pair of warps, one that is even (the last pair
 * complete but for one odd element), and a large one that fills the GPU many times over. On
 * the CPU backend the large size shrinks; the edge cases stay. */
static const struct array_shape GPU_SIZES[] = {
    ARRAY_N(1), ARRAY_N(2), ARRAY_N(31), ARRAY_N(33), ARRAY_N(97), ARRAY_N(4099), ARRAY_N(1000003),
};
static const struct array_shape CPU_SIZES[] = {
    ARRAY_N(1), ARRAY_N(2), ARRAY_N(31), ARRAY_N(33), ARRAY_N(97), ARRAY_N(4099), ARRAY_N(100003),
};
static const struct flow_shapes SIZES = { GPU_SIZES, CPU_SIZES, 7, .plain_titles = 1 };

static int UNIFORM;

/* ---- references ------------------------------------------------------------------------- */

/* What element i of each kind of rung must hold, from input x. */
static float ref_element(enum rung_output kind, size_t i, float x)
{
    switch (kind) {
    case OUT_PROCESS:     return (i & 1) ? path_b(x) : path_a(x);
    case OUT_WARP_PARITY: return ((i / 32) & 1) ? path_b(x) : path_a(x);
    case OUT_KEY_BRANCH:  return x < 0.0f ? path_a(x) : path_b(x);
    case OUT_BLOCK_SUMS:  break;
    }
    abort();
}

static size_t out_len(enum rung_output kind, int n)
{
    return kind == OUT_BLOCK_SUMS ? (size_t)cdiv(n, REDUCE_BLOCK) : (size_t)n;
}

/* ref (and scale, for the sums) of a rung's output over in[0, n). */
static void reference(enum rung_output kind, const float *in, int n, double *ref, double *scale)
{
    if (kind == OUT_BLOCK_SUMS) {
        size_t nb = out_len(kind, n);
        for (size_t b = 0; b < nb; b++) {
            double s = 0, a = 0;
            for (size_t i = b * REDUCE_BLOCK; i < (b + 1) * REDUCE_BLOCK && i < (size_t)n; i++) {
                s += in[i];
                a += fabs((double)in[i]);
            }
            ref[b] = s;
            scale[b] = a;
        }
        return;
    }
    for (size_t i = 0; i < (size_t)n; i++)
        ref[i] = ref_element(kind, i, in[i]);
}

/* A guess at the cause from the wrong elements: unwritten ones, and written ones that hold
 * the OTHER path's result for their own input (the parity of the thread or of the warp was
 * used where the element's parity belongs). Looks at up to 256 wrong elements. */
static void process_hint(const struct array_problem *p, const struct cmp_result *c, char *hint,
                         size_t len)
{
    int n = (int)p->n;
    if (c->unwritten == c->checked) { /* nothing written: the TODO, or no launch */
        cmp_hint(c, (size_t)n, 0, hint, len);
        return;
    }
    size_t seen = 0, swapped = 0, other = 0;
    for (size_t i = 0; i < (size_t)n && seen < 256; i++) {
        float got = p->h_out[i], want = (float)p->ref[i];
        if (isnan(got) || fabs((double)got - want) <= ATOL + RTOL * fabs((double)want))
            continue;
        seen++;
        float wrong_path = (i & 1) ? path_a(p->h_in[i]) : path_b(p->h_in[i]);
        if (fabs((double)got - wrong_path) <= ATOL + RTOL * fabs((double)wrong_path))
            swapped++;
        else
            other++;
    }
    if (seen && swapped == seen) {
        snprintf(hint, len, "%zu of the first %zu wrong elements hold the other path's result "
                            "for their own input: the path must follow the ELEMENT's parity "
                            "(even i: path_a), so after you remap, branch on a condition that "
                            "is uniform across the warp AND equal to the parity of the element "
                            "each lane was given", swapped, seen);
        return;
    }
    if (c->unwritten && c->unwritten == c->bad && n > 32 &&
        c->unwritten * 5 >= (size_t)n * 2 && c->unwritten * 5 <= (size_t)n * 3) {
        snprintf(hint, len, "%zu of %d elements were never written: about half. Is one parity "
                            "missing, or does each thread think it owns two elements? Count "
                            "the threads the grid starts and the elements your mapping reaches",
                 c->unwritten, n);
        return;
    }
    if (c->unwritten && c->unwritten == c->bad) {
        size_t first = 0;
        while (first < (size_t)n && !isnan(p->h_out[first]))
            first++;
        snprintf(hint, len, "%zu elements were never written (still NaN), the first at [%zu]: "
                            "which thread does your mapping give it, and does that thread "
                            "exist and get past the bound? Every element needs exactly one "
                            "thread, and the bound belongs on the element index after the "
                            "remap, not on the thread index", c->unwritten, first);
        return;
    }
    if (other && c->unwritten) {
        snprintf(hint, len, "some elements are unwritten and others hold values of neither "
                            "path: two threads are mapped to one element and none to another. "
                            "Write out which elements threads 0-63 take: each must appear once");
        return;
    }
    cmp_hint(c, (size_t)n, 0, hint, len);
    if (!hint[0])
        snprintf(hint, len, "element i must be path_a(in[i]) for even i and path_b(in[i]) "
                            "for odd i: compute the element index first, then read in[i], "
                            "and write out[i] with the same i");
}

static void process_reference(const struct array_problem *p)
{
    reference(OUT_PROCESS, p->h_in, (int)p->n, p->ref, NULL);
}

static const struct array_kind PROCESS = {
    ARRAY_FLOW, .dims = ARRAY_1D, .reference = process_reference, .rtol = RTOL, .atol = ATOL,
    .guard_hint = "a thread whose element is past the end still stored: with a remap, an "
                  "element index can reach n while the thread index is below n. Bound the "
                  "element index, i >= n, before the load and the store",
    .hint = process_hint,
};

/* ---- speed (GPU only) -------------------------------------------------------------------- */

/* The CPU would take minutes over 2^24 chains of 512 FMAs, so the reference at this size is
 * the given baseline's own output (the same fmaf chains, so the same bits), itself checked
 * against the CPU on 4096 elements spread over the array. */
static void vet_baseline(void *pp, struct rng *r, int slot)
{
    const struct array_problem *p = pp;
    (void)slot;
    for (size_t k = 0; k < 4096; k++) {
        size_t i = k == 0 ? p->n - 1 : (size_t)(rng_next(r) % (uint64_t)p->n);
        double want = ref_element(OUT_PROCESS, i, p->h_in[i]);
        ck_assert_msg(fabs(p->ref[i] - want) <= ATOL + RTOL * fabs(want),
                      "the baseline process_divergent is wrong at [%zu]: %.7g, want %.7g "
                      "(is process_divergent.cu as given?)", i, p->ref[i], want);
    }
}

static void verdict(int slot, const void *shape, const struct flow_times *t)
{
    (void)shape;
    double tb = t->base.median_ms, ty = t->yours.median_ms, tc = t->ceiling.median_ms;
    double ratio = tb / ty;
    grade_note(slot, "yours %.3f ms = %.2fx the divergent %.3f ms (needs %.1fx); parity_warp, "
                     "the same work with no remapping, %.3f ms, so yours is %.0f%% of its "
                     "speed", ty, ratio, tb, NEEDS_SPEEDUP, tc, 100.0 * tc / ty);
    grade_summary("%.2fx over divergent (needs %.1fx)", ratio, NEEDS_SPEEDUP);
    grade_hint(slot, "the output is right, so look at the branch: is it the same for all 32 "
                     "lanes of every warp? A condition on threadIdx.x %% 2, or on the element "
                     "index when consecutive lanes hold consecutive elements, is not. Make "
                     "it depend on the warp index (t / 32) and give each warp elements of "
                     "that one parity");
    ck_assert_msg(ratio >= NEEDS_SPEEDUP,
                  "n = %d: yours %.3f ms, the divergent %.3f ms: %.2fx, needs %.1fx", SPEED_N, ty,
                  tb, ratio, NEEDS_SPEEDUP);
}

/* the reference is the baseline's output; parity_warp is the ceiling */
static const struct array_shape SPEED_SHAPE = ARRAY_N(SPEED_N);
static const struct flow_speed SPEED = {
    "speed", &PROCESS.kind, &SPEED_SHAPE, (flow_fn)process, (flow_fn)process_divergent,
    (flow_fn)parity_warp, "process", 2, 10, 120, verdict,
    .reference = (flow_fn)process_divergent, .vet = vet_baseline,
};

/* ---- concept test (CPU backend): warp-uniform branches -----------------------------------
 * process() once on n = 16384 (512 full warps) in the instrumented build (graders/concept.h):
 * the emulator counts a branch as divergent when the lanes of one warp take both ways.
 * process_divergent measures 1.000 per warp (every warp splits on the parity of i); the
 * remapped solution 0.000. The bound leaves room for a few split warps (1 in 20), none for a
 * kernel that splits every warp, or every other one. */
#define CONCEPT_MAX_DIVERGENT 0.05

START_TEST(uniform)
{
    int slot = UNIFORM;
    struct concept_row r = concept_profile_or_abort("yours");
    if (r.warps == 0 || r.gld_requests == 0)
        ck_abort_msg("process at n = 16384 launched %llu warps that made %llu global load "
                     "requests: it read nothing", r.warps, r.gld_requests);
    if (!(r.div_per_warp < CONCEPT_MAX_DIVERGENT)) {
        grade_hint(slot, "the path should depend on something all 32 lanes of a warp share: "
                         "map the warp's lanes to elements of one parity (the warp index picks "
                         "the path), rather than branching on each lane's own i");
        ck_abort_msg("%.3f divergent branches per warp (%llu in %llu warps; under %.2f wanted; "
                     "process_divergent has 1.000)", r.div_per_warp, r.divergent_branches,
                     r.warps, CONCEPT_MAX_DIVERGENT);
    }
    grade_note(slot, "%.3f divergent branches per warp (%llu in %llu warps; under %.2f)",
               r.div_per_warp, r.divergent_branches, r.warps, CONCEPT_MAX_DIVERGENT);
}
END_TEST

/* ---- bench ------------------------------------------------------------------------------ */

struct launch { divergence_fn fn; const float *d_in; float *d_out; int n; };

static void run_rung(void *ctx)
{
    struct launch *l = ctx;
    l->fn(l->d_in, l->d_out, l->n);
}

static const int BENCH_SIZES[] = { 1 << 22, 1 << 24 };

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int bench(const char *path)
{
    struct device_info info;
    struct results out;
    if (bench_begin(path, &out, &info) != 0)
        return EXIT_FAILURE;
    struct rng r;
    rng_init(&r, harness_seed());
    printf("%-10s %-22s %10s\n", "n", "kernel", "ms");
    for (size_t s = 0; s < sizeof BENCH_SIZES / sizeof BENCH_SIZES[0]; s++) {
        int n = BENCH_SIZES[s];
        float *h_in = xmalloc((size_t)n * sizeof(float));
        float *h_sorted = xmalloc((size_t)n * sizeof(float));
        float *h_out = xmalloc((size_t)n * sizeof(float));
        double *ref = xmalloc((size_t)n * sizeof(double));
        double *scale = xmalloc((size_t)n * sizeof(double));
        rng_fill_f32(&r, h_in, (size_t)n, -1.0f, 1.0f);
        memcpy(h_sorted, h_in, (size_t)n * sizeof(float));
        qsort(h_sorted, (size_t)n, sizeof(float), cmp_float);
        float *d_in = dbuf_alloc((size_t)n * sizeof(float), "d_in");
        float *d_sorted = dbuf_alloc((size_t)n * sizeof(float), "d_sorted");
        float *d_out = dbuf_alloc((size_t)n * sizeof(float), "d_out");
        to_device(d_in, h_in, (size_t)n * sizeof(float));
        to_device(d_sorted, h_sorted, (size_t)n * sizeof(float));
        char shape[32];
        snprintf(shape, sizeof shape, "%d", n);
        for (int v = 0; v < DIVERGENCE_NUM_RUNGS; v++) {
            const struct divergence_rung *g = &DIVERGENCE_RUNGS[v];
            const float *h_src = g->sorted_input ? h_sorted : h_in;
            struct launch l = { g->fn, g->sorted_input ? d_sorted : d_in, d_out, n };
            size_t len = out_len(g->output, n);
            dbuf_poison(d_out);
            struct timing t = gpu_time(run_rung, &l, 2, 10);
            /* every rung checked against its own reference: on the CPU for the sums; for the
             * FMA chains on 65536 elements spread over the array (all of them would take the
             * CPU minutes), the first and the last included */
            to_host(h_out, d_out, len * sizeof(float));
            char kernel[64];
            snprintf(kernel, sizeof kernel, "%s:%s", g->pair, g->name);
            if (g->output == OUT_BLOCK_SUMS) {
                reference(g->output, h_src, n, ref, scale);
                struct cmp_result c = compare_f32(h_out, ref, scale, len, 0,
                                                  fp32_dot_rtol(REDUCE_BLOCK), 0.0);
                if (c.bad) {
                    char desc[512];
                    cmp_describe(&c, 0, desc, sizeof desc);
                    fprintf(stderr, "bench: %s at n = %d is wrong: %s\n", kernel, n, desc);
                    return EXIT_FAILURE;
                }
            } else {
                for (size_t k = 0; k < 65536; k++) {
                    size_t i = k == 0 ? 0 : k == 1 ? (size_t)n - 1
                                                   : (size_t)(rng_next(&r) % (uint64_t)n);
                    double want = ref_element(g->output, i, h_src[i]);
                    if (!(fabs(h_out[i] - want) <= ATOL + RTOL * fabs(want))) {
                        fprintf(stderr, "bench: %s at n = %d is wrong at [%zu]: got %.7g, "
                                        "want %.7g\n", kernel, n, i, h_out[i], want);
                        return EXIT_FAILURE;
                    }
                }
            }
            /* FLOPs for the FMA chains: 2 per FMA, PATH_FMAS per element; bytes for the
             * sums (read once, the block sums written) */
            double gflops = 0, gbs = 0;
            if (g->output == OUT_BLOCK_SUMS)
                gbs = 4.0 * ((double)n + len) / (t.median_ms * 1e-3) / 1e9;
            else
                gflops = 2.0 * PATH_FMAS * (double)n / (t.median_ms * 1e-3) / 1e9;
            results_row(&out, CHAPTER, kernel, shape, t.median_ms, gbs, gflops);
            printf("%-10s %-22s %10.4f\n", shape, kernel, t.median_ms);
            fflush(stdout);
        }
        dbuf_free(d_in);
        dbuf_free(d_sorted);
        dbuf_free(d_out);
        free(h_in);
        free(h_sorted);
        free(h_out);
        free(ref);
        free(scale);
    }
    results_close(&out);
    printf("bench: wrote %s\n", path);
    return EXIT_SUCCESS;
}

static void add_tests(Suite *s)
{
    flow_add_correct(s, &PROCESS.kind, &SIZES, (flow_fn)process, "process");
    flow_add_speed(s, &SPEED);
    /* Concept tests, CPU backend (the profiling issue registers them here): divergent
     * branches per warp, counted by the emulator over process(): the remapped kernel must
     * show no branch that splits a full warp (only the last pair of warps, past n, may have
     * lanes that left), where process_divergent splits every warp at every path (the test
     * `uniform` above, through graders/concept.h). */
    if (concept_here()) {
        static const char *title[] = { "warp-uniform: no divergent branch in process()" };
        UNIFORM = grader_add(s, "uniform", uniform, title, 1, 60);
    } else {
        grader_skip("uniform", "counted on the CPU backend only (make grade BACKEND=emu); on "
                               "a GPU this needs Nsight Compute, which is to come");
    }
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
