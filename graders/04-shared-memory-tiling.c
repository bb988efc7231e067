/* 04-shared-memory-tiling.c: the grader of chapter 04, its bench, and its tuner.
 *
 *   grade            matmul_tiled on edge shapes, twice each on fresh inputs (the second run
 *                    shuffled on the CPU backend), against a double-precision reference; every
 *                    rung of the linked file's TILED_RUNGS, and every tile configuration of
 *                    TILED_CONFIGS, on three small odd shapes; on a GPU, matmul_tiled at least
 *                    1.3x matmul_naive at 2048^3, with cuBLAS SGEMM measured in the same run
 *   grade --bench F  every rung and cuBLAS at 1024^3, 2048^3, 4096^3, 1000x999x1001 and
 *                    4096x4096x72, each checked against cuBLAS, as tab-separated rows in F
 *                    (GPU only)
 *   grade --tune F   every tile configuration at the same five shapes, each checked against
 *                    cuBLAS, as the table matmul_tuned reads (GPU only; format below)
 *
 * Shapes are m x k x n, as in chapter 01: 4096x4096x72 is m = 4096, k = 4096, n = 72.
 *
 * Reference. Up to about 1.3e9 multiply-adds, every element of C against ref_matmul (double,
 * host). Above, every element of C must be written (no NaN left from the poison), and a
 * sample of 64 rows spread over C, at every offset within a tile and including the last row,
 * is compared against the double-precision reference of those rows. The bench and the tuner
 * compare the same kind of sample against cuBLAS's output, with twice the tolerance (both
 * sides round), as chapter 01's bench does.
 *
 * The tune table (tab-separated, written whole at the end of a run):
 *   # device: NVIDIA H200          comment lines: device, driver, date, then a legend
 *   device  m  n  k  config  ms  gflops  best
 *   one row per (shape, configuration) measured; best = 1 on the fastest configuration of
 *   each shape, 0 elsewhere. matmul_tuned reads the best = 1 rows of its own device.
 */
#define _POSIX_C_SOURCE 200809L /* popen, readlink: graders/concept.h */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blas.h"
#include "grade.h"
#include "tiled.h"
#include "concept.h"

#define CHAPTER "04-shared-memory-tiling"
#define NEEDS_SPEEDUP 1.3
#define SPEED_SIZE 2048
#define FULL_REF_MACS 1.3e9 /* above this, a sampled reference */
#define SAMPLE_ROWS 64

struct shape { int m, k, n; };

/* Edge shapes for matmul_tiled: one element; primes just off the 32x32 tile; k and n odd
 * near 1000; a short k (72: two full tiles and a partial one) under a wide C; a tall thin C
 * (37 columns, catches a grid with x and y swapped); and a square that fills the GPU. */
static const struct shape GPU_SHAPES[] = {
    { 1, 1, 1 }, { 31, 33, 35 }, { 1000, 999, 1001 }, { 4096, 72, 4096 }, { 3001, 517, 37 },
    { 2048, 2048, 2048 },
};
/* On the CPU backend the shapes that only exist to fill a GPU shrink; the edge cases stay. */
static const struct shape CPU_SHAPES[] = {
    { 1, 1, 1 }, { 31, 33, 35 }, { 1000, 999, 1001 }, { 1024, 72, 1024 }, { 3001, 517, 37 },
    { 256, 256, 256 },
};
#define NSHAPES ((int)(sizeof GPU_SHAPES / sizeof GPU_SHAPES[0]))

/* Small shapes for every rung and every tile configuration: everything odd; k and n
 * multiples of 4 but of no tile (the float4 paths, with tails in m, n and k); and n a
 * multiple of 4 with k odd (a float4 path taken there reads the wrong elements). For a
 * split-K configuration (name ending _kS) k = 45 and 132 are 6 and 17 steps of BK = 8: every
 * split has slices of one step and of several, boundaries inside k, and the partial last step
 * in the last slice. */
static const struct shape RUNG_SHAPES[] = { { 67, 45, 131 }, { 130, 132, 260 }, { 31, 45, 36 } };
#define NRUNG_SHAPES ((int)(sizeof RUNG_SHAPES / sizeof RUNG_SHAPES[0]))

/* The bench's and the tuner's shapes: three squares and the two odd ones of the issue. */
static const struct shape BENCH_SHAPES[] = {
    { 1024, 1024, 1024 }, { 2048, 2048, 2048 }, { 4096, 4096, 4096 }, { 1000, 999, 1001 },
    { 4096, 4096, 72 },
};
#define NBENCH ((int)(sizeof BENCH_SHAPES / sizeof BENCH_SHAPES[0]))

static int CORRECT, RUNGS, CONFIGS, SPEED, COALESCED;
/* the configurations that fit this device, in TILED_CONFIGS order (set before the forks) */
static int CONFIG_OF[GRADE_MAX_TESTS];

static const struct shape *shapes(void)
{
    return gpu_times_are_real() ? GPU_SHAPES : CPU_SHAPES;
}

/* ---- one problem: inputs, reference, buffers ----------------------------------------------- */

struct problem {
    struct shape s;
    int rows;                /* rows of C the reference covers: m, or SAMPLE_ROWS */
    int *row;                /* which: row[j] is the j-th of them */
    float *h_a, *h_b, *h_c, *h_got;
    double *ref, *scale;     /* rows x n */
    float *d_a, *d_b, *d_c;
};

static int sampled(struct shape s)
{
    return (double)s.m * s.k * s.n > FULL_REF_MACS && s.m > SAMPLE_ROWS;
}

static void problem_init(struct problem *p, struct shape s)
{
    p->s = s;
    size_t na = (size_t)s.m * s.k, nb = (size_t)s.k * s.n, nc = (size_t)s.m * s.n;
    p->rows = sampled(s) ? SAMPLE_ROWS : s.m;
    p->row = xmalloc((size_t)p->rows * sizeof(int));
    if (p->rows == s.m) {
        for (int j = 0; j < s.m; j++)
            p->row[j] = j;
    } else {
        /* spread over C; the offsets step through every residue modulo 32 and 128, so each
         * row of a tile and of a thread's register block is sampled somewhere; last row too */
        int band = s.m / SAMPLE_ROWS;
        for (int j = 0; j < SAMPLE_ROWS; j++)
            p->row[j] = j * band + (j * 37) % band;
        p->row[SAMPLE_ROWS - 1] = s.m - 1;
    }
    p->h_a = xmalloc(na * sizeof(float));
    p->h_b = xmalloc(nb * sizeof(float));
    p->h_c = xmalloc(nc * sizeof(float));
    p->h_got = xmalloc((size_t)p->rows * s.n * sizeof(float));
    p->ref = xmalloc((size_t)p->rows * s.n * sizeof(double));
    p->scale = xmalloc((size_t)p->rows * s.n * sizeof(double));
    p->d_a = dbuf_alloc(na * sizeof(float), "d_a");
    p->d_b = dbuf_alloc(nb * sizeof(float), "d_b");
    p->d_c = dbuf_alloc(nc * sizeof(float), "d_c");
}

/* Fresh inputs on both sides; the reference (ref and scale) of the covered rows when
 * `reference`, else their scale only (the caller fills ref, from cuBLAS). */
static void problem_fill(struct problem *p, struct rng *r, int reference)
{
    struct shape s = p->s;
    rng_fill_f32(r, p->h_a, (size_t)s.m * s.k, -1.0f, 1.0f);
    rng_fill_f32(r, p->h_b, (size_t)s.k * s.n, -1.0f, 1.0f);
    if (p->rows == s.m)
        ref_matmul(p->h_a, p->h_b, reference ? p->ref : NULL, p->scale, s.m, s.k, s.n);
    else
        for (int j = 0; j < p->rows; j++)
            ref_matmul(p->h_a + (size_t)p->row[j] * s.k, p->h_b,
                       reference ? p->ref + (size_t)j * s.n : NULL, p->scale + (size_t)j * s.n,
                       1, s.k, s.n);
    to_device(p->d_a, p->h_a, (size_t)s.m * s.k * sizeof(float));
    to_device(p->d_b, p->h_b, (size_t)s.k * s.n * sizeof(float));
    dbuf_poison(p->d_c);
}

static void problem_free(struct problem *p)
{
    dbuf_free(p->d_a);
    dbuf_free(p->d_b);
    dbuf_free(p->d_c);
    free(p->row);
    free(p->h_a);
    free(p->h_b);
    free(p->h_c);
    free(p->h_got);
    free(p->ref);
    free(p->scale);
}

/* C from the device, and the covered rows compared against ref. Returns 0 when right, else
 * fills `desc` (what is wrong, with real row and column numbers) and `hint` (a guess from
 * where the wrong elements sit, or ""). `rtol` scales with k. */
static int problem_compare(struct problem *p, double rtol, char *desc, size_t dlen, char *hint,
                           size_t hlen)
{
    struct shape s = p->s;
    size_t nc = (size_t)s.m * s.n;
    hint[0] = '\0';
    to_host(p->h_c, p->d_c, nc * sizeof(float));
    if (p->rows == s.m) {
        struct cmp_result c = compare_f32(p->h_c, p->ref, p->scale, nc, (size_t)s.n, rtol, 0.0);
        if (c.bad == 0)
            return 0;
        cmp_describe(&c, (size_t)s.n, desc, dlen);
        cmp_hint(&c, (size_t)s.m, (size_t)s.n, hint, hlen);
        return -1;
    }
    /* sampled: every element written, then the sampled rows' values */
    size_t unwritten = 0, first = 0;
    for (size_t i = 0; i < nc; i++)
        if (!isfinite(p->h_c[i]) && unwritten++ == 0)
            first = i;
    if (unwritten) {
        snprintf(desc, dlen, "%zu of %zu elements of C are NaN or Inf, first at (%zu,%zu): a "
                             "block or a tail that never stored its results",
                 unwritten, nc, first / s.n, first % s.n);
        return -1;
    }
    for (int j = 0; j < p->rows; j++)
        memcpy(p->h_got + (size_t)j * s.n, p->h_c + (size_t)p->row[j] * s.n,
               (size_t)s.n * sizeof(float));
    struct cmp_result c = compare_f32(p->h_got, p->ref, p->scale, (size_t)p->rows * s.n,
                                      (size_t)s.n, rtol, 0.0);
    if (c.bad == 0)
        return 0;
    int len = snprintf(desc, dlen, "%zu of %zu sampled elements wrong (%d rows), first at", c.bad,
                       c.checked, p->rows);
    for (int i = 0; i < c.nreport && len > 0 && (size_t)len < dlen; i++) {
        const struct mismatch *mm = &c.first[i];
        len += snprintf(desc + len, dlen - len, "%s (%d,%zu): got %.7g, want %.7g",
                        i ? ";" : "", p->row[mm->index / s.n], mm->index % s.n, mm->got, mm->want);
    }
    return -1;
}

/* The grader's check: guard zones, then values; fails the test with a message and a hint.
 * `what` names the kernel and the run. The hint is a guess from where the wrong elements sit,
 * else `given`; `given` first when `given_first` (it knows more than the guess: split-K). */
static void problem_check(struct problem *p, int slot, const char *what, const char *given,
                          int given_first)
{
    struct shape s = p->s;
    char guard[256], desc[512], hint[400];
    if (dbuf_check_guards(p->d_c, guard, sizeof guard) != 0) {
        grade_hint(slot, "a thread with row >= m or col >= n still stored its result: every "
                         "store to C needs its own bounds check, after the tile loop");
        ck_abort_msg("%dx%dx%d: %s: %s", s.m, s.k, s.n, what, guard);
    }
    if (problem_compare(p, fp32_dot_rtol(s.k), desc, sizeof desc, hint, sizeof hint) == 0)
        return;
    grade_hint(slot, "%s", hint[0] && !given_first ? hint : given);
    ck_abort_msg("%dx%dx%d: %s: %s", s.m, s.k, s.n, what, desc);
}

#define TILED_HINT                                                                             \
    "walk cdiv(k, TILE) tiles, the last one partial; store 0.0f in the tile where the index "  \
    "falls outside A or B (skipping the store leaves the previous tile's values there); "      \
    "__syncthreads() after the loads AND after the inner loop; set acc to 0 once, before the " \
    "tile loop"

#define RUNG_HINT                                                                              \
    "a rung that fails only on some of the three shapes: 67x45x131 takes the scalar paths "    \
    "everywhere, 130x132x260 the float4 paths with tails in m, k and n, and 31x45x36 must "    \
    "not take a float4 path for A (k = 45: A's rows are not 16-byte aligned)"

#define SPLITK_HINT                                                                            \
    "a split-K configuration (_kS: S blocks share each tile of C, each adding its "            \
    "slice of k): C must be zeroed before the slices add into it (NaN + x stays NaN), "        \
    "every slice must add (atomicAdd), never store, and the slices must cover every step "     \
    "of BK exactly once (a step counted twice or skipped where one slice ends and the "        \
    "next begins)"

/* S of a configuration named ..._kS (split-K), 1 for the others. */
static int config_splits(const char *name)
{
    const char *k = strrchr(name, '_');
    return k && k[1] == 'k' && k[2] >= '1' && k[2] <= '9' ? atoi(k + 2) : 1;
}

/* Run fn on the problem twice on fresh inputs; the second run shuffled on the CPU backend. */
static void run_twice(struct problem *p, struct rng *r, tiled_fn fn, const char *name, int slot,
                      const char *hint, int hint_first)
{
    for (int round = 0; round < 2; round++) {
        char what[160];
        snprintf(what, sizeof what, "%s", name);
        if (round == 1)
            snprintf(what, sizeof what, "%s, second run%s", name,
                     gpu_shuffle_schedule(rng_next(r)) ? ", shuffled schedule" : "");
        problem_fill(p, r, 1);
        fn(p->d_a, p->d_b, p->d_c, p->s.m, p->s.k, p->s.n);
        gpu_sync();
        problem_check(p, slot, what, hint, hint_first);
    }
}

START_TEST(correct)
{
    int slot = CORRECT + _i;
    if (grade_quick_skip(slot, (double)shapes()[_i].m * shapes()[_i].k * shapes()[_i].n,
                         "multiply-adds"))
        return;
    struct rng r = grade_rng(slot);
    struct problem p;
    problem_init(&p, shapes()[_i]);
    /* twice, on different inputs: a kernel that remembers an answer fails the second; on
     * the CPU backend the second run also shuffles the order threads meet at barriers, which
     * turns a missing __syncthreads into a wrong answer */
    run_twice(&p, &r, matmul_tiled, "matmul_tiled", slot, TILED_HINT, 0);
    problem_free(&p);
}
END_TEST

START_TEST(rungs)
{
    int slot = RUNGS + _i;
    struct rng r = grade_rng(slot);
    const struct tiled_rung *rung = &TILED_RUNGS[_i];
    for (int i = 0; i < NRUNG_SHAPES; i++) {
        struct problem p;
        problem_init(&p, RUNG_SHAPES[i]);
        run_twice(&p, &r, rung->fn, rung->name, slot, RUNG_HINT, 0);
        problem_free(&p);
    }
}
END_TEST

START_TEST(configs)
{
    int slot = CONFIGS + _i;
    struct rng r = grade_rng(slot);
    const struct tiled_config *cfg = &TILED_CONFIGS[CONFIG_OF[_i]];
    const int split = config_splits(cfg->name) > 1;
    for (int i = 0; i < NRUNG_SHAPES; i++) {
        struct problem p;
        problem_init(&p, RUNG_SHAPES[i]);
        run_twice(&p, &r, cfg->fn, cfg->name, slot, split ? SPLITK_HINT : RUNG_HINT, split);
        problem_free(&p);
    }
}
END_TEST

/* ---- concept tests -------------------------------------------------------------------------
 * The profiling issue registers its tests of this chapter's ideas here, on the CPU backend's
 * counters (and Nsight Compute where it runs): global loads per FMA of matmul_tiled (1/16
 * where the naive kernel needs 2), shared-memory wavefronts per request of its tile reads (1:
 * s_a's read is a broadcast, s_b's spans 32 banks), and no divergent barrier. Add them with
 * grader_add beside `correct` in main().
 *
 * coalesced-reuse (CPU backend): matmul_tiled() once at 128x128x128 in the instrumented build
 * (graders/concept.h). Its global loads (the A and B tiles) must need at most
 * CONCEPT_MAX_SECTORS 32-byte sectors per warp request: 32 consecutive floats are 4 sectors,
 * the solution measures 4.00; the margin is for partial or unaligned edge tiles. And a tile
 * must be reused: global load requests times 32 lanes per FMA at most CONCEPT_MAX_LOADS_PER_FMA,
 * 2 / TILE for a tiled kernel (0.0625 for the solution's 32), 2 for the naive kernel, whose
 * loads average 2.50 sectors per request (A's row is a broadcast, B's is coalesced) and so
 * would pass the first bound alone. 0.25 asks for tiles of at least 8. The sector limit scales
 * with the width the profile saw (concept_max_sectors: 4.5 for floats, 18 for float4), so a
 * tile loaded with float4 is judged coalesced too. */
#define CONCEPT_MAX_LOADS_PER_FMA 0.25

START_TEST(coalesced)
{
    int slot = COALESCED;
    struct concept_row r = concept_profile_or_abort("yours");
    if (r.gld_requests == 0 || r.work <= 0)
        ck_abort_msg("matmul_tiled at 128x128x128 made %llu global load requests: it read "
                     "nothing", r.gld_requests);
    double per_fma = (double)r.gld_requests * 32.0 / r.work;
    const double max_sectors = concept_max_sectors(r.gld_width);
    if (!(r.gld_spr <= max_sectors)) {
        grade_hint(slot, "threadIdx.x should walk along a row of A and of B when a tile is "
                         "loaded, so that a warp's 32 loads are 32 consecutive floats");
        ck_abort_msg("tile loads not coalesced: %.2f sectors per global load request (at most "
                     "%.1f for %.0f-byte loads)", r.gld_spr, max_sectors, concept_width(r.gld_width));
    }
    if (!(per_fma <= CONCEPT_MAX_LOADS_PER_FMA)) {
        grade_hint(slot, "each thread should read its operands from shared memory tiles, each "
                         "element of A and B loaded from global memory once per tile, not once "
                         "per FMA");
        ck_abort_msg("no tile reuse: %.4f global loads per FMA (at most %.2f; the naive kernel "
                     "needs 2, a 32-wide tile 0.0625)", per_fma, CONCEPT_MAX_LOADS_PER_FMA);
    }
    grade_note(slot, "%.2f sectors per load request (at most %.1f), %.4f loads per FMA (at "
               "most %.2f)", r.gld_spr, max_sectors, per_fma, CONCEPT_MAX_LOADS_PER_FMA);
}
END_TEST

/* ---- speed ------------------------------------------------------------------------------ */

struct launch { tiled_fn fn; struct problem *p; };

static void run_fn(void *ctx)
{
    struct launch *l = ctx;
    l->fn(l->p->d_a, l->p->d_b, l->p->d_c, l->p->s.m, l->p->s.k, l->p->s.n);
}

static void run_cublas(void *ctx)
{
    struct launch *l = ctx;
    blas_sgemm(l->p->d_a, l->p->d_b, l->p->d_c, l->p->s.m, l->p->s.k, l->p->s.n);
}

static double gflops(struct shape s, double ms)
{
    return 2.0 * s.m * s.k * s.n / (ms * 1e-3) / 1e9;
}

START_TEST(speed)
{
    int slot = SPEED;
    struct rng r = grade_rng(slot);
    struct problem p;
    problem_init(&p, (struct shape){ SPEED_SIZE, SPEED_SIZE, SPEED_SIZE });
    problem_fill(&p, &r, 1);

    /* a kernel is timed only once it is right, and C is poisoned before each kernel's runs,
     * so the check after timing sees what that kernel wrote and nothing else */
    matmul_tiled(p.d_a, p.d_b, p.d_c, p.s.m, p.s.k, p.s.n);
    gpu_sync();
    problem_check(&p, slot, "matmul_tiled (speed is graded once it is correct)", TILED_HINT, 0);

    struct launch base = { matmul_naive, &p }, yours = { matmul_tiled, &p }, ceil = { NULL, &p };
    dbuf_poison(p.d_c);
    struct timing tb = gpu_time(run_fn, &base, 2, 10);
    dbuf_poison(p.d_c);
    struct timing ty = gpu_time(run_fn, &yours, 2, 10);
    problem_check(&p, slot, "matmul_tiled after timing", TILED_HINT, 0);
    struct timing tc = gpu_time(run_cublas, &ceil, 2, 10);

    double ratio = tb.median_ms / ty.median_ms;
    struct shape s = p.s;
    grade_note(slot, "naive %.0f GFLOP/s, yours %.0f (%.2fx, needs %.1fx), cuBLAS %.0f: yours "
                     "is %.0f%% of cuBLAS",
               gflops(s, tb.median_ms), gflops(s, ty.median_ms), ratio, NEEDS_SPEEDUP,
               gflops(s, tc.median_ms), 100.0 * tc.median_ms / ty.median_ms);
    grade_summary("%.2fx over naive (needs %.1fx)", ratio, NEEDS_SPEEDUP);
    grade_hint(slot, "each element of a tile must come from global memory once per block and "
                     "then be read TILE times from shared memory; check that s_a is read along "
                     "a row (s_a[ty][i], a broadcast) and s_b down a column (s_b[i][tx], 32 "
                     "banks), and that the block is 32x32 threads");
    problem_free(&p);
    ck_assert_msg(ratio >= NEEDS_SPEEDUP,
                  "%dx%dx%d: yours %.3f ms, naive %.3f ms: %.2fx, needs %.1fx", s.m, s.k, s.n,
                  ty.median_ms, tb.median_ms, ratio, NEEDS_SPEEDUP);
}
END_TEST

/* ---- bench and tune: measured on a GPU, checked against cuBLAS ------------------------------ */

static int gpu_only(const char *mode, struct device_info *info)
{
    char why[256];
    if (gpu_probe(info, why, sizeof why) != 0) {
        fprintf(stderr, "%s: no GPU answered (%s): nothing to measure\n", mode, why);
        return -1;
    }
    if (!gpu_times_are_real()) {
        fprintf(stderr, "%s: the CPU backend's timings are not GPU timings; run it on a GPU "
                        "(BACKEND=cuda)\n", mode);
        return -1;
    }
    return 0;
}

/* Fresh inputs, cuBLAS's C as the reference of the sampled rows, and their |A||B| scale. */
static void bench_problem(struct problem *p, struct shape s, struct rng *r)
{
    problem_init(p, s);
    if (p->rows == s.m && (double)s.m * s.k * s.n > FULL_REF_MACS / 4) {
        /* the bench samples rows at every size: |A||B| of all of C is as slow as the
         * reference itself */
        free(p->row);
        p->rows = SAMPLE_ROWS < s.m ? SAMPLE_ROWS : s.m;
        p->row = xmalloc((size_t)p->rows * sizeof(int));
        int band = s.m / p->rows;
        for (int j = 0; j < p->rows; j++)
            p->row[j] = j * band + (j * 37) % band;
        p->row[p->rows - 1] = s.m - 1;
    }
    problem_fill(p, r, 0);
    blas_sgemm(p->d_a, p->d_b, p->d_c, s.m, s.k, s.n);
    gpu_sync();
    to_host(p->h_c, p->d_c, (size_t)s.m * s.n * sizeof(float));
    for (int j = 0; j < p->rows; j++)
        for (int c = 0; c < s.n; c++)
            p->ref[(size_t)j * s.n + c] = p->h_c[(size_t)p->row[j] * s.n + c];
}

/* Time fn (NULL: cuBLAS) on the problem, then check what the last timed run wrote. */
static int bench_one(struct problem *p, tiled_fn fn, const char *name, const char *shape,
                     double *ms)
{
    struct launch l = { fn, p };
    int big = (double)p->s.m * p->s.k * p->s.n >= 8e9;
    dbuf_poison(p->d_c);
    struct timing t = gpu_time(fn ? run_fn : run_cublas, &l, 2, big ? 5 : 10);
    *ms = t.median_ms;
    if (!fn)
        return 0;
    char guard[256], desc[512], hint[400];
    if (dbuf_check_guards(p->d_c, guard, sizeof guard) != 0) {
        fprintf(stderr, "%s at %s wrote outside C: %s\n", name, shape, guard);
        return -1;
    }
    if (problem_compare(p, 2 * fp32_dot_rtol(p->s.k), desc, sizeof desc, hint, sizeof hint)) {
        fprintf(stderr, "%s at %s is wrong: %s\n", name, shape, desc);
        return -1;
    }
    return 0;
}

static void shape_name(struct shape s, char *buf, size_t len)
{
    snprintf(buf, len, "%dx%dx%d", s.m, s.k, s.n);
}

static int bench(const char *path)
{
    struct device_info info;
    if (gpu_only("bench", &info) != 0)
        return EXIT_FAILURE;
    struct results out;
    if (results_open(&out, path, info.name, info.driver) != 0) {
        perror(path);
        return EXIT_FAILURE;
    }
    struct rng r;
    rng_init(&r, harness_seed());
    printf("%-16s %-12s %10s %10s\n", "shape", "kernel", "ms", "GFLOP/s");
    for (int i = 0; i < NBENCH; i++) {
        struct shape s = BENCH_SHAPES[i];
        struct problem p;
        bench_problem(&p, s, &r);
        char shape[48];
        shape_name(s, shape, sizeof shape);
        double bytes = 4.0 * ((double)s.m * s.k + (double)s.k * s.n + (double)s.m * s.n);
        for (int v = 0; v <= TILED_NUM_RUNGS; v++) {
            tiled_fn fn = v < TILED_NUM_RUNGS ? TILED_RUNGS[v].fn : NULL;
            const char *name = v < TILED_NUM_RUNGS ? TILED_RUNGS[v].name : "cublas";
            double ms;
            if (bench_one(&p, fn, name, shape, &ms) != 0)
                return EXIT_FAILURE;
            results_row(&out, CHAPTER, name, shape, ms, bytes / (ms * 1e-3) / 1e9, gflops(s, ms));
            printf("%-16s %-12s %10.4f %10.1f\n", shape, name, ms, gflops(s, ms));
            fflush(stdout);
        }
        problem_free(&p);
    }
    results_close(&out);
    printf("bench: wrote %s\n", path);
    return EXIT_SUCCESS;
}

static int tune(const char *path)
{
    struct device_info info;
    if (gpu_only("tune", &info) != 0)
        return EXIT_FAILURE;
    if (TILED_NUM_CONFIGS == 0) {
        fprintf(stderr, "tune: this build's matmul_tiled.cu offers no tile configurations "
                        "(TILED_CONFIGS); tune the solution (SOLUTIONS=1)\n");
        return EXIT_FAILURE;
    }
    int ncfg = TILED_NUM_CONFIGS;
    double *ms = xmalloc((size_t)NBENCH * ncfg * sizeof(double));
    struct rng r;
    rng_init(&r, harness_seed());
    printf("%-16s %-24s %10s %10s\n", "shape", "config", "ms", "GFLOP/s");
    for (int i = 0; i < NBENCH; i++) {
        struct shape s = BENCH_SHAPES[i];
        struct problem p;
        bench_problem(&p, s, &r);
        char shape[48];
        shape_name(s, shape, sizeof shape);
        for (int c = 0; c < ncfg; c++) {
            const struct tiled_config *cfg = &TILED_CONFIGS[c];
            ms[i * ncfg + c] = NAN;
            if ((size_t)cfg->smem_bytes > info.smem_per_block_optin) {
                printf("%-16s %-24s skipped: needs %d bytes of shared memory a block, this "
                       "device allows %zu\n", shape, cfg->name, cfg->smem_bytes,
                       info.smem_per_block_optin);
                continue;
            }
            if (bench_one(&p, cfg->fn, cfg->name, shape, &ms[i * ncfg + c]) != 0)
                return EXIT_FAILURE;
            printf("%-16s %-24s %10.4f %10.1f\n", shape, cfg->name, ms[i * ncfg + c],
                   gflops(s, ms[i * ncfg + c]));
            fflush(stdout);
        }
        double cublas_ms;
        bench_one(&p, NULL, "cublas", shape, &cublas_ms);
        printf("%-16s %-24s %10.4f %10.1f\n", shape, "(cuBLAS)", cublas_ms, gflops(s, cublas_ms));
        problem_free(&p);
    }

    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return EXIT_FAILURE;
    }
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    fprintf(f, "# device: %s\n# driver: %s\n# date: %s\n", info.name, info.driver, date);
    fprintf(f, "# every tile configuration of matmul_tuned, checked against cuBLAS; best = 1 "
               "marks the fastest of each shape, the one matmul_tuned picks for this device\n");
    fprintf(f, "device\tm\tn\tk\tconfig\tms\tgflops\tbest\n");
    for (int i = 0; i < NBENCH; i++) {
        struct shape s = BENCH_SHAPES[i];
        int best = -1;
        for (int c = 0; c < ncfg; c++)
            if (!isnan(ms[i * ncfg + c]) && (best < 0 || ms[i * ncfg + c] < ms[i * ncfg + best]))
                best = c;
        for (int c = 0; c < ncfg; c++)
            if (!isnan(ms[i * ncfg + c]))
                fprintf(f, "%s\t%d\t%d\t%d\t%s\t%.6g\t%.6g\t%d\n", info.name, s.m, s.n, s.k,
                        TILED_CONFIGS[c].name, ms[i * ncfg + c], gflops(s, ms[i * ncfg + c]),
                        c == best);
    }
    if (fclose(f) != 0) {
        perror(path);
        return EXIT_FAILURE;
    }
    free(ms);
    printf("tune: wrote %s\n", path);
    return EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--bench") == 0)
        return bench(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--tune") == 0)
        return tune(argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: %s            grade chapter " CHAPTER "\n"
                        "       %s --bench F  measure every rung and cuBLAS, rows into F\n"
                        "       %s --tune F   measure every tile configuration, the table "
                        "into F\n",
                argv[0], argv[0], argv[0]);
        return 2;
    }
    grader_init(CHAPTER);
    Suite *s = suite_create(CHAPTER);

    static char titles[NSHAPES][96];
    const char *t[NSHAPES];
    for (int i = 0; i < NSHAPES; i++) {
        struct shape sh = shapes()[i], gpu = GPU_SHAPES[i];
        int shrunk = sh.m != gpu.m || sh.k != gpu.k || sh.n != gpu.n;
        char in_place[64] = "";
        if (shrunk)
            snprintf(in_place, sizeof in_place, " (in place of the GPU's %dx%dx%d)", gpu.m, gpu.k,
                     gpu.n);
        snprintf(titles[i], sizeof titles[i], "correct %dx%dx%d%s", sh.m, sh.k, sh.n, in_place);
        t[i] = titles[i];
    }
    CORRECT = grader_add(s, "correct", correct, t, NSHAPES, 120);

    /* every rung of the linked file, and every tile configuration that fits this device
     * (more than GRADE_MAX_TESTS in all stops grader_add with a message, never silently) */
    static char rung_titles[GRADE_MAX_TESTS][96];
    const char *rt[GRADE_MAX_TESTS];
    if (TILED_NUM_RUNGS > GRADE_MAX_TESTS || TILED_NUM_CONFIGS > GRADE_MAX_TESTS) {
        fprintf(stderr, "grade: %d rungs and %d tile configurations: more than %d tests\n",
                TILED_NUM_RUNGS, TILED_NUM_CONFIGS, GRADE_MAX_TESTS);
        return EXIT_FAILURE;
    }
    int nrungs = TILED_NUM_RUNGS;
    for (int i = 0; i < nrungs; i++) {
        snprintf(rung_titles[i], sizeof rung_titles[i], "rung %s on 67x45x131, 130x132x260, "
                 "31x45x36", TILED_RUNGS[i].name);
        rt[i] = rung_titles[i];
    }
    RUNGS = grader_add(s, "rungs", rungs, rt, nrungs, 120);

    static char cfg_titles[GRADE_MAX_TESTS][96];
    const char *ct[GRADE_MAX_TESTS];
    int ncfg = 0;
    size_t optin = grader_device()->smem_per_block_optin;
    for (int i = 0; i < TILED_NUM_CONFIGS; i++) {
        const struct tiled_config *cfg = &TILED_CONFIGS[i];
        if (optin && (size_t)cfg->smem_bytes > optin) {
            char why[160];
            snprintf(why, sizeof why, "needs %d bytes of shared memory a block; this device "
                     "allows %zu", cfg->smem_bytes, optin);
            snprintf(cfg_titles[ncfg], sizeof cfg_titles[ncfg], "config %s", cfg->name);
            grader_skip(cfg_titles[ncfg], why);
            continue;
        }
        CONFIG_OF[ncfg] = i;
        snprintf(cfg_titles[ncfg], sizeof cfg_titles[ncfg], "config %s on the same shapes",
                 cfg->name);
        ct[ncfg] = cfg_titles[ncfg];
        ncfg++;
    }
    if (ncfg)
        CONFIGS = grader_add(s, "configs", configs, ct, ncfg, 120);

    /* concept tests: registered here (see "concept tests" above); CPU backend only: on a GPU
     * the counters need Nsight Compute, which is to come */
    if (concept_here()) {
        static const char *title[] = { "coalesced tile loads, each reused across a tile" };
        COALESCED = grader_add(s, "coalesced", coalesced, title, 1, 60);
    } else {
        grader_skip("coalesced", "counted on the CPU backend only (make grade BACKEND=emu); on "
                                 "a GPU this needs Nsight Compute, which is to come");
    }
    SPEED = grader_add_timed(s, "speed", speed, "speed at 2048x2048x2048", 120);
    return grader_run(s);
}
