/* 03-warp-divergence.c: the grader of chapter 03, and its bench. Two steps:
 *
 *   step 1  warp-uniform remap: process() on odd sizes that are not multiples of a warp, twice
 *           each on fresh inputs, against a CPU reference; on the CPU backend, divergent
 *           branches per warp (the concept test); on a GPU, process at least 1.6x
 *           process_divergent at n = 2^24 + 1, with parity_warp (the same work with no
 *           divergence and no remapping) measured in the same run as the ceiling
 *   step 2  stream compaction: compact() on edge sizes at four keep densities, the kept
 *           elements compared as a multiset and the count against the host's; on the CPU
 *           backend, global atomic operations per 32 elements (the concept test); on a GPU,
 *           compact at least 2x compact_atomic at n = 2^24 + 1, half kept, with
 *           cub::DeviceSelect::If measured in the same run for scale
 *   grade --bench F  every rung of the rung table (steps.cu: the three demo pairs and both
 *           steps' pairs) and CUB's compaction at two sizes, as tab-separated rows in F (GPU
 *           only)
 *
 * Tolerance of step 1: none (TOL_EXACT, tolerance.h). path_a and path_b (divergence.h) are
 * chains of fmaf only, and fmaf is one correctly rounded operation both on the GPU and in C,
 * so the kernels and the reference below compute the same floats bit for bit. A wrong mapping
 * is off by far more than rounding: path A's output is about 450 x, path B's about
 * 0.55 x + 0.18, and two neighbouring inputs differ by about 0.5.
 *
 * Step 2 computes nothing: it moves elements, so its check is exact, bit for bit, on the
 * multiset of what it kept (any order is right).
 *
 * The choreography is harness/flow.c's, step 1's problem graders/array_family.c's, step 2's
 * below; here, the facts, the references, the hints, the concept tests and the bench.
 */
#define _POSIX_C_SOURCE 200809L /* popen: graders/concept.h */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array_family.h"
#include "divergence.h"
#include "concept.h"

#define CHAPTER "03-warp-divergence"
/* Step 1: the committed H200 run (plots/data/h200/03-warp-divergence.tsv, 2026-11-29) has
 * process:remapped at 0.289 ms against process:divergent at 0.552 ms at n = 2^24: 1.91x (1.87x
 * at 2^22). 1.6 is 0.84 of that gain: a remap that still splits every warp measures 1.0. */
#define NEEDS_SPEEDUP 1.6
#define SPEED_N ((1 << 24) + 1) /* odd: the last pair of warps is partial */
#define PROCESS_RTOL TOL_EXACT /* step 1: the same fmaf chains on both sides */
#define PROCESS_ATOL TOL_EXACT

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

/* ==== step 1: warp-uniform remap =========================================================== */

/* ---- references ------------------------------------------------------------------------- */

/* What element i of each kind of rung must hold, from input x. */
static float ref_element(enum rung_output kind, size_t i, float x)
{
    switch (kind) {
    case OUT_PROCESS:     return (i & 1) ? path_b(x) : path_a(x);
    case OUT_WARP_PARITY: return ((i / 32) & 1) ? path_b(x) : path_a(x);
    case OUT_KEY_BRANCH:  return x < 0.0f ? path_a(x) : path_b(x);
    case OUT_BLOCK_SUMS:  break;
    case OUT_COMPACT:     break;
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

/* got is want within step 1's tolerance (NaN never is) */
static int process_within(double got, double want)
{
    return fabs(got - want) <= PROCESS_ATOL + PROCESS_RTOL * fabs(want);
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
        if (isnan(got) || process_within(got, want))
            continue;
        seen++;
        float wrong_path = (i & 1) ? path_a(p->h_in[i]) : path_b(p->h_in[i]);
        if (process_within(got, wrong_path))
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
    ARRAY_FLOW, .dims = ARRAY_1D, .reference = process_reference, .rtol = PROCESS_RTOL,
    .atol = PROCESS_ATOL,
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
        ck_assert_msg(process_within(p->ref[i], want),
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
 * process() (the step table's step 1) once in the instrumented build (graders/concept.h), on an
 * n drawn from the test's seed (concept_n: from 8193 to 33791, odd, never the driver's own
 * 16384: no one shape a launcher could keep its good kernel for, and a partial last warp):
 * the emulator counts a branch as divergent when the lanes of one warp take both ways.
 * process_divergent measures about 1 per warp (every warp that holds elements splits on the
 * parity of i; the whole warps past n in the last block split nothing: 0.97 to 1.00 at these
 * n); the remapped solution under 0.01 (the partial last warp's bound). The bound leaves room
 * for a few split warps (1 in 20), none for a kernel that splits every warp, or every other. */
#define CONCEPT_MAX_DIVERGENT 0.05

/* The concept tests' n, from the test's seed, as the driver's SHAPE argument: a multiple of
 * 1024 from 8192 to 32768 (never the driver's own 16384) and an odd number from 1 to 1023 more,
 * so that the last block, the last warp pair and the last warp are partial: a launcher that
 * keeps its good kernel for sizes of whole blocks (or whole warps, or any power of two) and
 * falls back to another elsewhere shows the other here. A partial last warp costs a kernel
 * that is right at most a split branch or an atomic of its own, far inside the bounds. */
static int concept_n(int slot, char *shape, size_t len)
{
    struct rng g = grade_rng(slot);
    int n;
    do
        n = concept_pick(&g, 8192, 32768, 1024);
    while (n == 16384);
    n += 2 * concept_pick(&g, 0, 511, 1) + 1;
    snprintf(shape, len, "%d", n);
    return n;
}

START_TEST(uniform)
{
    int slot = UNIFORM;
    char shape[16];
    int n = concept_n(slot, shape, sizeof shape);
    struct concept_row r = concept_profile_or_abort_at("step1", shape);
    if (r.warps == 0 || r.gld_requests == 0)
        ck_abort_msg("process at n = %d launched %llu warps that made %llu global load "
                     "requests: it read nothing", n, r.warps, r.gld_requests);
    if (!(r.div_per_warp < CONCEPT_MAX_DIVERGENT)) {
        grade_hint(slot, "the path should depend on something all 32 lanes of a warp share: "
                         "map the warp's lanes to elements of one parity (the warp index picks "
                         "the path), rather than branching on each lane's own i");
        ck_abort_msg("at n = %d: %.3f divergent branches per warp (%llu in %llu warps; under "
                     "%.2f wanted; process_divergent has about 1)", n, r.div_per_warp,
                     r.divergent_branches, r.warps, CONCEPT_MAX_DIVERGENT);
    }
    grade_note(slot, "at n = %d: %.3f divergent branches per warp (%llu in %llu warps; under "
               "%.2f)", n, r.div_per_warp, r.divergent_branches, r.warps,
               CONCEPT_MAX_DIVERGENT);
    grade_summary("%.3f divergent branches per warp (under %.2f)", r.div_per_warp,
                  CONCEPT_MAX_DIVERGENT);
}
END_TEST

/* ==== step 2: stream compaction ============================================================ */

/* The library, for scale: compact_cub_gpu.cu, which only GPU builds link (NULL elsewhere). */
extern void compact_cub(const float *d_in, int n, float *d_out, int *d_count)
    __attribute__((weak));

/* How many of the inputs compact_keep keeps: the densities that catch the lazy kernels. */
enum keep_density {
    KEEP_NONE,      /* all negative, zero or NaN: no atomic at all, the count 0 */
    KEEP_ALL,       /* all positive: every slot, the last warp's partial mask */
    KEEP_HALF,      /* uniform in [-1, 1): about 16 kept lanes a warp, at random */
    KEEP_1IN64,     /* most warps keep none, a few keep one or two */
};
static const char *const DENSITY_NAME[] = { "none kept", "all kept", "half kept",
                                            "1 in 64 kept" };

struct compact_shape { int n; enum keep_density d; };

/* Sizes off a warp and off a block (256), one a warp exactly, a prime, and a large one; every
 * density at the sizes where each matters (a partial last warp, a partial last block). On the
 * CPU backend the large size shrinks; the edge cases stay. */
#define COMPACT_LARGE_GPU 4194319 /* a prime, 2^22 + 15 */
#define COMPACT_LARGE_CPU 100003
#define COMPACT_SHAPES(LARGE)                                                                  \
    { 1, KEEP_ALL }, { 1, KEEP_NONE }, { 31, KEEP_HALF }, { 32, KEEP_ALL }, { 33, KEEP_HALF },   \
    { 33, KEEP_ALL }, { 97, KEEP_1IN64 }, { 1000, KEEP_HALF }, { 4099, KEEP_NONE },             \
    { 4099, KEEP_ALL }, { 4099, KEEP_HALF }, { 4099, KEEP_1IN64 }, { LARGE, KEEP_HALF },        \
    { LARGE, KEEP_1IN64 }, { LARGE, KEEP_ALL }
static const struct compact_shape COMPACT_GPU_SHAPES[] = { COMPACT_SHAPES(COMPACT_LARGE_GPU) };
static const struct compact_shape COMPACT_CPU_SHAPES[] = { COMPACT_SHAPES(COMPACT_LARGE_CPU) };
static const struct flow_shapes COMPACT_SIZES = {
    COMPACT_GPU_SHAPES, COMPACT_CPU_SHAPES,
    (int)(sizeof COMPACT_GPU_SHAPES / sizeof COMPACT_GPU_SHAPES[0]), .plain_titles = 1,
};

/* Step 2's speed: the baseline waits on n / 2 atomics on one address, the reference on about
 * n / 32 (one per warp). The H200 measured the reference at 15.2x compact_atomic at n = 2^24,
 * half kept (plots/data/h200/03-warp-divergence.tsv: compact:atomic 6.18826 ms, compact:warp
 * 0.408064), and 15.17x in its grade of the same run at 2^24 + 1; the threshold keeps 0.72 of
 * it: 11x, far over a kernel that still makes one atomic per kept element (1.0). */
#define COMPACT_NEEDS_SPEEDUP 11.0
#define COMPACT_SPEED_N ((1 << 24) + 1)

struct compact_problem {
    struct compact_shape s;
    float *h_in, *h_out;
    uint32_t *h_want;       /* the kept elements' bits, sorted */
    uint32_t *h_got;        /* d_out[0 .. count)'s bits, sorted (scratch) */
    int want;               /* how many are kept */
    float *d_in, *d_out;
    int *d_count;
};

typedef void (*compact_launch_fn)(const float *, int, float *, int *);

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static void compact_shape_name(const void *shape, char *buf, size_t len)
{
    const struct compact_shape *s = shape;
    snprintf(buf, len, "n = %d, %s", s->n, DENSITY_NAME[s->d]);
}

static double compact_elements(const void *shape)
{
    return (double)((const struct compact_shape *)shape)->n;
}

static void *compact_init(const struct flow_kind *k, const void *shape)
{
    (void)k;
    struct compact_problem *p = xmalloc(sizeof *p);
    memset(p, 0, sizeof *p);
    p->s = *(const struct compact_shape *)shape;
    size_t n = (size_t)p->s.n;
    p->h_in = xmalloc(n * sizeof(float));
    p->h_out = xmalloc(n * sizeof(float));
    p->h_want = xmalloc(n * sizeof(uint32_t));
    p->h_got = xmalloc(n * sizeof(uint32_t));
    p->d_in = dbuf_alloc_input(n * sizeof(float), "d_in");
    p->d_out = dbuf_alloc(n * sizeof(float), "d_out");
    p->d_count = dbuf_alloc(sizeof(int), "d_count");
    return p;
}

static void compact_free(void *pp)
{
    struct compact_problem *p = pp;
    dbuf_free(p->d_in);
    dbuf_free(p->d_out);
    dbuf_free(p->d_count);
    free(p->h_in);
    free(p->h_out);
    free(p->h_want);
    free(p->h_got);
    free(p);
}

/* d_out refilled with NaN (0xFFFFFFFF: no kept element has those bits), the count with -1 */
static void compact_poison(void *pp)
{
    struct compact_problem *p = pp;
    dbuf_poison(p->d_out);
    dbuf_poison(p->d_count);
}

/* One input of the density: in (0, 1) to keep, in (-1, 0) or a value that must never be kept
 * (NaN of either sign, +0, -0: one in 16 of the rejects) otherwise. Never a kept zero. */
static float compact_value(struct rng *r, int keep)
{
    if (keep)
        return (float)rng_uniform(r, 0x1p-20, 1.0);
    if (rng_next(r) % 16 == 0) {
        static const uint32_t never[] = { 0x7fc00000u, 0xffc00000u, 0x00000000u, 0x80000000u };
        return float_of(never[rng_next(r) % 4]);
    }
    return (float)-rng_uniform(r, 0x1p-20, 1.0);
}

static void compact_fill(void *pp, struct rng *r)
{
    struct compact_problem *p = pp;
    int n = p->s.n;
    p->want = 0;
    for (int i = 0; i < n; i++) {
        int keep = p->s.d == KEEP_ALL    ? 1
                   : p->s.d == KEEP_NONE ? 0
                   : p->s.d == KEEP_HALF ? (int)(rng_next(r) & 1)
                                         : rng_next(r) % 64 == 0;
        float x = compact_value(r, keep);
        p->h_in[i] = x;
        if (compact_keep(x))
            p->h_want[p->want++] = bits_of(x);
    }
    qsort(p->h_want, (size_t)p->want, sizeof(uint32_t), cmp_u32);
    to_device(p->d_in, p->h_in, (size_t)n * sizeof(float));
    compact_poison(p);
}

static void compact_launch(void *pp, flow_fn fn)
{
    struct compact_problem *p = pp;
    ((compact_launch_fn)fn)(p->d_in, p->s.n, p->d_out, p->d_count);
}

static int compact_library(void *pp)
{
    struct compact_problem *p = pp;
    if (!compact_cub)
        return -1;
    compact_cub(p->d_in, p->s.n, p->d_out, p->d_count);
    return 0;
}

/* The kept elements: d_out[0 .. count) against the host's, as sorted multisets. */
static void compact_check(void *pp, int slot, const char *what)
{
    struct compact_problem *p = pp;
    int n = p->s.n;
    char shape[64], guard[256];
    compact_shape_name(&p->s, shape, sizeof shape);
    if (dbuf_check_guards(p->d_out, guard, sizeof guard) != 0) {
        if (strstr(guard, "before the start"))
            grade_hint(slot, "a store landed before d_out[0]: a warp's base was negative. "
                             "*d_count holds garbage on entry (the grader's -1): the launcher "
                             "sets it to 0 before the kernel adds to it");
        else
            grade_hint(slot, "a store landed past d_out[n - 1]: the slots are 0 .. count - 1, "
                             "so a lane's offset is one too many (it is the number of kept lanes "
                             "BELOW it, its own bit not counted), or a base is too large");
        ck_abort_msg("%s: %s: %s", shape, what, guard);
    }
    if (dbuf_check_guards(p->d_count, guard, sizeof guard) != 0) {
        grade_hint(slot, "something was written next to the counter: the count is one int");
        ck_abort_msg("%s: %s: %s", shape, what, guard);
    }
    if (dbuf_check_guards(p->d_in, guard, sizeof guard) != 0) {
        grade_hint(slot, "the kernel wrote around d_in, which it only reads: are in and out "
                         "swapped somewhere?");
        ck_abort_msg("%s: %s: %s", shape, what, guard);
    }
    int count;
    to_host(&count, p->d_count, sizeof count);
    if (count != p->want) {
        if (count == 0 && p->want > 0)
            grade_hint(slot, "nothing was counted: does the kernel do anything yet (the TODO), "
                             "and does the warp's leader add the warp's total to *d_count?");
        else if (count == p->want - 1)
            grade_hint(slot, "one short of the host: *d_count held -1 (the grader's poison) "
                             "on entry, and nothing set it to 0 before the kernel counted. "
                             "The launcher sets it (cudaMemsetAsync) on every launch");
        else if (count > p->want)
            grade_hint(slot, "more slots reserved than elements kept: is every kept lane "
                             "adding the warp's whole total? One lane, the leader, makes the "
                             "warp's one atomicAdd of __popc(mask)");
        else
            grade_hint(slot, "fewer slots reserved than elements kept: some warps that keep "
                             "elements made no atomic. The leader must be a lane that keeps "
                             "its element (the lowest set bit of the ballot, __ffs(mask) - 1): "
                             "lane 0 may keep nothing, and then it is not there to add");
        ck_abort_msg("%s: %s: count %d, want %d (the host kept %d of %d)", shape, what, count,
                     p->want, p->want, n);
    }
    to_host(p->h_out, p->d_out, (size_t)n * sizeof(float));
    for (int k = 0; k < count; k++)
        p->h_got[k] = bits_of(p->h_out[k]);
    qsort(p->h_got, (size_t)count, sizeof(uint32_t), cmp_u32);
    /* merge the two sorted lists: what is missing, and what is there instead */
    int missing = 0, unwritten = 0, rejected = 0, repeated = 0, foreign = 0;
    uint32_t first_missing = 0;
    int a = 0, b = 0;
    while (a < p->want || b < count) {
        if (b >= count || (a < p->want && p->h_want[a] < p->h_got[b])) {
            if (!missing++)
                first_missing = p->h_want[a];
            a++;
        } else if (a >= p->want || p->h_got[b] < p->h_want[a]) {
            uint32_t g = p->h_got[b++];
            if (g == 0xffffffffu)
                unwritten++;
            else if (!compact_keep(float_of(g)))
                rejected++;
            else if (bsearch(&g, p->h_want, (size_t)p->want, sizeof g, cmp_u32))
                repeated++;
            else
                foreign++;
        } else {
            a++, b++;
        }
    }
    if (missing) {
        if (unwritten && repeated == 0)
            grade_hint(slot, "slots inside the count were never written, and the elements "
                             "meant for them are missing: check each lane's offset, the kept "
                             "lanes below it, __popc(mask & ((1u << lane) - 1)); with the "
                             "lane's own bit counted, every offset is one too many");
        else if (repeated)
            grade_hint(slot, "some elements were written twice, over others: two warps got "
                             "the same base, or two lanes of one warp the same offset. Every "
                             "kept lane needs the base its warp's leader reserved (broadcast "
                             "from the leader) plus its own rank among the kept lanes");
        else if (rejected)
            grade_hint(slot, "elements that compact_keep rejects were kept (NaN, a zero or a "
                             "negative): keep exactly compact_keep(x), x > 0");
        else
            grade_hint(slot, "d_out holds values that are not among the inputs: is each lane "
                             "writing its own element, in[i], to its slot?");
        ck_abort_msg("%s: %s: the count is right (%d) but d_out[0 .. %d) is not the kept "
                     "elements: %d missing (the first %.9g), in their place %d never written "
                     "(still NaN), %d duplicates, %d never kept (NaN, zero, negative), %d not "
                     "among the inputs", shape, what, count, count, missing,
                     (double)float_of(first_missing), unwritten, repeated, rejected, foreign);
    }
    for (int k = count; k < n; k++)
        if (bits_of(p->h_out[k]) != 0xffffffffu) {
            grade_hint(slot, "a store landed at or past d_out[count]: the slots of the kept "
                             "elements are 0 .. count - 1, so some lane's offset is one too "
                             "many (its own bit counted) or a warp wrote more than it reserved");
            ck_abort_msg("%s: %s: d_out[%d] = %.9g was written, at or past the count %d: "
                         "nothing past the kept elements may be written", shape, what, k,
                         (double)p->h_out[k], count);
        }
}

static const struct flow_kind COMPACT = {
    sizeof(struct compact_shape), compact_init, compact_fill, compact_launch, compact_library,
    compact_check, compact_poison, compact_free, compact_shape_name, compact_elements,
    "elements", NULL, NULL, NULL, NULL, NULL,
};

/* ---- speed (GPU only) -------------------------------------------------------------------- */

static void compact_verdict(int slot, const void *shape, const struct flow_times *t)
{
    (void)shape;
    double tb = t->base.median_ms, ty = t->yours.median_ms, tc = t->ceiling.median_ms;
    double ratio = tb / ty;
    if (compact_cub)
        grade_note(slot, "yours %.3f ms = %.2fx compact_atomic %.3f ms (needs %.1fx); "
                         "cub::DeviceSelect::If %.3f ms, so yours is %.0f%% of its speed", ty,
                   ratio, tb, COMPACT_NEEDS_SPEEDUP, tc, 100.0 * tc / ty);
    else
        grade_note(slot, "yours %.3f ms = %.2fx compact_atomic %.3f ms (needs %.1fx); this "
                         "build has no CUB", ty, ratio, tb, COMPACT_NEEDS_SPEEDUP);
    grade_summary("%.2fx over compact_atomic (needs %.1fx)", ratio, COMPACT_NEEDS_SPEEDUP);
    grade_hint(slot, "the output is right, so count the atomics: one per kept element queues "
                     "them all on one address in the L2. Vote first (__ballot_sync), let one "
                     "lane add the warp's __popc, and broadcast its base (__shfl_sync)");
    ck_assert_msg(ratio >= COMPACT_NEEDS_SPEEDUP,
                  "n = %d, half kept: yours %.3f ms, compact_atomic %.3f ms: %.2fx, needs %.1fx",
                  COMPACT_SPEED_N, ty, tb, ratio, COMPACT_NEEDS_SPEEDUP);
}

static const struct compact_shape COMPACT_SPEED_SHAPE = { COMPACT_SPEED_N, KEEP_HALF };
static const struct flow_speed COMPACT_SPEED = {
    "speed", &COMPACT, &COMPACT_SPEED_SHAPE, (flow_fn)compact, (flow_fn)compact_atomic, NULL,
    "compact", 2, 10, 300, compact_verdict, .order = { FLOW_BASE, FLOW_YOURS, FLOW_CEILING },
};

/* ---- concept test (CPU backend): one atomic per warp -------------------------------------
 * compact() once in the instrumented build, on an n drawn from the test's seed as above (about
 * half kept): the emulator counts every lane's global atomic. compact_atomic makes one per kept
 * element, about 16 per 32 elements; the warp-aggregated reference one per warp that keeps
 * anything, at most 1.0. The bound, 1.5, lets a kernel aggregate unevenly, not per half-warp
 * (2.0) or per lane. */
#define CONCEPT_MAX_ATOMICS 1.5

static int ATOMICS;

START_TEST(atomics)
{
    int slot = ATOMICS;
    char shape[16];
    int n = concept_n(slot, shape, sizeof shape);
    struct concept_row r = concept_profile_or_abort_at("step2", shape);
    if (!r.has_atomics)
        ck_abort_msg("the profile driver's row has no global_atomic_ops column: is it older "
                     "than this grader? (make grade rebuilds both)");
    if (r.warps == 0 || r.gld_requests == 0)
        ck_abort_msg("compact at n = %d launched %llu warps that made %llu global load "
                     "requests: it read nothing", n, r.warps, r.gld_requests);
    double per32 = r.work > 0 ? (double)r.gatom_ops / (r.work / 32.0) : 0.0;
    if (r.gatom_ops == 0)
        ck_abort_msg("compact at n = %d, half kept, made no global atomic at all: how does "
                     "it count?", n);
    if (!(per32 <= CONCEPT_MAX_ATOMICS)) {
        grade_hint(slot, "each kept lane still makes its own atomicAdd: let the warp vote "
                         "(__ballot_sync), one lane add __popc of the vote for all of them, "
                         "and hand its result to the others (__shfl_sync)");
        ck_abort_msg("%.2f global atomic operations per 32 elements (%llu over %.0f "
                     "elements; at most %.1f wanted, one per warp is 1.0; compact_atomic, one "
                     "per kept element, has about 16)", per32, r.gatom_ops, r.work,
                     CONCEPT_MAX_ATOMICS);
    }
    grade_note(slot, "%.2f global atomic operations per 32 elements (%llu over %.0f elements; "
                     "at most %.1f)", per32, r.gatom_ops, r.work, CONCEPT_MAX_ATOMICS);
    grade_summary("%.2f atomics per warp of elements (at most %.1f)", per32,
                  CONCEPT_MAX_ATOMICS);
}
END_TEST

/* ==== bench ================================================================================ */

struct launch { divergence_fn fn; const float *d_in; float *d_out; int n; };

static void run_rung(void *ctx)
{
    struct launch *l = ctx;
    l->fn(l->d_in, l->d_out, l->n);
}

static const int BENCH_SIZES[] = { 1 << 22, 1 << 24 };

struct compact_bench_launch { compact_fn fn; struct compact_problem *p; };

static void run_compact_rung(void *ctx)
{
    struct compact_bench_launch *l = ctx;
    l->fn(l->p->d_in, l->p->s.n, l->p->d_out, l->p->d_count);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Compaction's rungs and CUB at n, half kept, on one input: each timed, then its count and
 * its multiset checked against the host's. GB/s counts the input read and the kept elements
 * written. */
static int bench_compact(struct results *out, int n, struct rng *r)
{
    const struct compact_shape shape = { n, KEEP_HALF };
    struct compact_problem *p = compact_init(&COMPACT, &shape);
    compact_fill(p, r);
    char name[32];
    snprintf(name, sizeof name, "%d", n);
    int status = 0;
    for (int v = 0; v <= DIVERGENCE_NUM_RUNGS && status == 0; v++) {
        int is_lib = v == DIVERGENCE_NUM_RUNGS;
        if (is_lib ? !compact_cub : DIVERGENCE_RUNGS[v].output != OUT_COMPACT)
            continue;
        char kernel[64];
        if (is_lib)
            snprintf(kernel, sizeof kernel, "compact:cub");
        else
            snprintf(kernel, sizeof kernel, "%s:%s", DIVERGENCE_RUNGS[v].pair,
                     DIVERGENCE_RUNGS[v].name);
        struct compact_bench_launch l = { is_lib ? compact_cub : DIVERGENCE_RUNGS[v].compact, p };
        compact_poison(p);
        struct timing t = gpu_time(run_compact_rung, &l, 2, 10);
        int count;
        to_host(&count, p->d_count, sizeof count);
        if (count == p->want) {
            to_host(p->h_out, p->d_out, (size_t)n * sizeof(float));
            for (int k = 0; k < count; k++)
                p->h_got[k] = bits_of(p->h_out[k]);
            qsort(p->h_got, (size_t)count, sizeof(uint32_t), cmp_u32);
        }
        if (count != p->want ||
            memcmp(p->h_got, p->h_want, (size_t)count * sizeof(uint32_t)) != 0) {
            fprintf(stderr, "bench: %s at n = %d is wrong: count %d, want %d%s\n", kernel, n,
                    count, p->want, count == p->want ? ", other elements" : "");
            status = -1;
            break;
        }
        double gbs = 4.0 * ((double)n + count) / (t.median_ms * 1e-3) / 1e9;
        results_row(out, CHAPTER, kernel, name, t.median_ms, gbs, 0);
        printf("%-10s %-22s %10.4f\n", name, kernel, t.median_ms);
        fflush(stdout);
    }
    compact_free(p);
    return status;
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
        float *d_in = dbuf_alloc_input((size_t)n * sizeof(float), "d_in");
        float *d_sorted = dbuf_alloc_input((size_t)n * sizeof(float), "d_sorted");
        float *d_out = dbuf_alloc((size_t)n * sizeof(float), "d_out");
        to_device(d_in, h_in, (size_t)n * sizeof(float));
        to_device(d_sorted, h_sorted, (size_t)n * sizeof(float));
        char shape[32];
        snprintf(shape, sizeof shape, "%d", n);
        for (int v = 0; v < DIVERGENCE_NUM_RUNGS; v++) {
            const struct divergence_rung *g = &DIVERGENCE_RUNGS[v];
            if (g->output == OUT_COMPACT)
                continue; /* below, on inputs of their own */
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
                                                  tol_sum_fp32(REDUCE_BLOCK), 0.0);
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
                    if (!process_within(h_out[i], want)) {
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
        if (bench_compact(&out, n, &r) != 0)
            return EXIT_FAILURE;
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
    if (grader_step(1, "warp-uniform remap")) {
        flow_add_correct(s, &PROCESS.kind, &SIZES, (flow_fn)process, "process");
        flow_add_speed(s, &SPEED);
        /* divergent branches per warp, counted by the emulator over process(): the remapped
         * kernel must show no branch that splits a full warp (only the last pair of warps,
         * past n, may have lanes that left), where process_divergent splits every warp at
         * every path (the test `uniform` above, through graders/concept.h). */
        if (concept_here()) {
            static const char *title[] = { "warp-uniform: no divergent branch in process()" };
            UNIFORM = grader_add(s, "uniform", uniform, title, 1, 60);
        } else {
            grader_skip("uniform", "counted on the CPU backend only (make grade BACKEND=emu); "
                                   "on a GPU the speed test grades the idea");
        }
    }
    if (grader_step(2, "stream compaction with __ballot_sync and __popc")) {
        flow_add_correct(s, &COMPACT, &COMPACT_SIZES, (flow_fn)compact, "compact");
        flow_add_speed(s, &COMPACT_SPEED);
        /* global atomics per 32 elements over compact(), counted by the emulator: one per
         * warp at most (the test `atomics` above) */
        if (concept_here()) {
            static const char *title[] = { "warp-aggregated: at most one atomic per warp" };
            ATOMICS = grader_add(s, "atomics", atomics, title, 1, 60);
        } else {
            grader_skip("atomics", "counted on the CPU backend only (make grade BACKEND=emu); "
                                   "on a GPU the speed test grades the idea");
        }
    }
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
