/* 01-naive-matmul.c: the grader of chapter 01, and its bench.
 *
 *   grade            correctness on edge shapes against a double-precision reference, twice
 *                    each on fresh inputs; on a GPU, matmul at least 5x matmul_uncoalesced at
 *                    1024^3, with cuBLAS SGEMM measured in the same run as the ceiling
 *   grade --bench F  every rung of the linked matmul.cu and cuBLAS over a range of sizes, as
 *                    tab-separated rows in F (GPU only)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "grade.h"
#include "matmul.h"

#define CHAPTER "01-naive-matmul"
#define NEEDS_SPEEDUP 5.0
#define SPEED_SIZE 1024

struct shape { int m, k, n; };

/* Edge shapes: one element, primes below the block, sizes just off the block, a square that
 * fills the GPU, and a tall thin C that catches a grid with x and y swapped. */
static const struct shape GPU_SHAPES[] = {
    { 1, 1, 1 }, { 17, 33, 9 }, { 1000, 999, 1001 }, { 1024, 1024, 1024 }, { 3001, 517, 37 },
};
/* On the CPU backend the shape that only exists to fill a GPU shrinks; the edge cases stay. */
static const struct shape CPU_SHAPES[] = {
    { 1, 1, 1 }, { 17, 33, 9 }, { 1000, 999, 1001 }, { 256, 256, 256 }, { 3001, 517, 37 },
};
#define NSHAPES ((int)(sizeof GPU_SHAPES / sizeof GPU_SHAPES[0]))

static int CORRECT, SPEED;

static const struct shape *shapes(void)
{
    return gpu_times_are_real() ? GPU_SHAPES : CPU_SHAPES;
}

/* Host and device buffers of one problem, with its reference. */
struct problem {
    struct shape s;
    float *h_a, *h_b, *h_c;
    double *ref, *scale;
    float *d_a, *d_b, *d_c;
};

static void problem_init(struct problem *p, struct shape s)
{
    p->s = s;
    size_t na = (size_t)s.m * s.k, nb = (size_t)s.k * s.n, nc = (size_t)s.m * s.n;
    p->h_a = xmalloc(na * sizeof(float));
    p->h_b = xmalloc(nb * sizeof(float));
    p->h_c = xmalloc(nc * sizeof(float));
    p->ref = xmalloc(nc * sizeof(double));
    p->scale = xmalloc(nc * sizeof(double));
    p->d_a = dbuf_alloc(na * sizeof(float), "d_a");
    p->d_b = dbuf_alloc(nb * sizeof(float), "d_b");
    p->d_c = dbuf_alloc(nc * sizeof(float), "d_c");
}

/* Fresh inputs, their reference, and a poisoned C. */
static void problem_fill(struct problem *p, struct rng *r)
{
    struct shape s = p->s;
    rng_fill_f32(r, p->h_a, (size_t)s.m * s.k, -1.0f, 1.0f);
    rng_fill_f32(r, p->h_b, (size_t)s.k * s.n, -1.0f, 1.0f);
    ref_matmul(p->h_a, p->h_b, p->ref, p->scale, s.m, s.k, s.n);
    to_device(p->d_a, p->h_a, (size_t)s.m * s.k * sizeof(float));
    to_device(p->d_b, p->h_b, (size_t)s.k * s.n * sizeof(float));
    dbuf_poison(p->d_c);
}

static void problem_free(struct problem *p)
{
    dbuf_free(p->d_a);
    dbuf_free(p->d_b);
    dbuf_free(p->d_c);
    free(p->h_a);
    free(p->h_b);
    free(p->h_c);
    free(p->ref);
    free(p->scale);
}

/* Copy C back and compare; on a mismatch, fail the test with the first wrong elements and a
 * hint. `what` names the run ("matmul", "matmul after timing"). */
static void problem_check(struct problem *p, int slot, const char *what)
{
    struct shape s = p->s;
    char guard[256];
    if (dbuf_check_guards(p->d_c, guard, sizeof guard) != 0) {
        grade_hint(slot, "a thread with row >= m or col >= n still stored its result: the "
                         "bounds check must come before the store");
        ck_abort_msg("%dx%dx%d: %s: %s", s.m, s.k, s.n, what, guard);
    }
    to_host(p->h_c, p->d_c, (size_t)s.m * s.n * sizeof(float));
    struct cmp_result c = compare_f32(p->h_c, p->ref, p->scale, (size_t)s.m * s.n,
                                      (size_t)s.n, fp32_dot_rtol(s.k), 0.0);
    if (c.bad == 0)
        return;
    char desc[512], hint[400];
    cmp_describe(&c, (size_t)s.n, desc, sizeof desc);
    cmp_hint(&c, (size_t)s.m, (size_t)s.n, hint, sizeof hint);
    if (!hint[0])
        snprintf(hint, sizeof hint, "check the indexing: A(row, i) is a[row * k + i], B(i, col) "
                                    "is b[i * n + col], C(row, col) is c[row * n + col]");
    grade_hint(slot, "%s", hint);
    ck_abort_msg("%dx%dx%d: %s: %s", s.m, s.k, s.n, what, desc);
}

START_TEST(correct)
{
    int slot = CORRECT + _i;
    struct shape s = shapes()[_i];
    if (grade_quick_skip(slot, (double)s.m * s.k * s.n, "multiply-adds"))
        return;
    struct rng r = grade_rng(slot);
    struct problem p;
    problem_init(&p, shapes()[_i]);
    /* twice, on different inputs: a kernel that remembers an answer fails the second; on
     * the CPU backend the second run also shuffles the order threads meet at barriers */
    for (int round = 0; round < 2; round++) {
        const char *what = "matmul";
        if (round == 1)
            what = gpu_shuffle_schedule(rng_next(&r)) ? "matmul, second run, shuffled schedule"
                                                      : "matmul, second run";
        problem_fill(&p, &r);
        matmul(p.d_a, p.d_b, p.d_c, p.s.m, p.s.k, p.s.n);
        gpu_sync();
        problem_check(&p, slot, what);
    }
    problem_free(&p);
}
END_TEST

struct launch { matmul_fn fn; struct problem *p; };

static void run_rung(void *ctx)
{
    struct launch *l = ctx;
    l->fn(l->p->d_a, l->p->d_b, l->p->d_c, l->p->s.m, l->p->s.k, l->p->s.n);
}

static void run_cublas(void *ctx)
{
    struct launch *l = ctx;
    blas_sgemm(l->p->d_a, l->p->d_b, l->p->d_c, l->p->s.m, l->p->s.k, l->p->s.n);
}

static double tflops(struct shape s, double ms)
{
    return 2.0 * s.m * s.k * s.n / (ms * 1e-3) / 1e12;
}

START_TEST(speed)
{
    int slot = SPEED;
    struct rng r = grade_rng(slot);
    struct problem p;
    problem_init(&p, (struct shape){ SPEED_SIZE, SPEED_SIZE, SPEED_SIZE });
    problem_fill(&p, &r);

    /* a kernel is timed only once it is right, and C is poisoned before each kernel's runs,
     * so the check after timing sees what that kernel wrote and nothing else */
    matmul(p.d_a, p.d_b, p.d_c, p.s.m, p.s.k, p.s.n);
    gpu_sync();
    problem_check(&p, slot, "matmul (speed is graded once it is correct)");

    struct launch base = { matmul_uncoalesced, &p }, yours = { matmul, &p }, ceil = { NULL, &p };
    dbuf_poison(p.d_c);
    struct timing tb = gpu_time(run_rung, &base, 2, 10);
    dbuf_poison(p.d_c);
    struct timing ty = gpu_time(run_rung, &yours, 2, 10);
    problem_check(&p, slot, "matmul after timing"); /* C holds the last timed run's result */
    struct timing tc = gpu_time(run_cublas, &ceil, 2, 10);

    double ratio = tb.median_ms / ty.median_ms;
    struct shape s = p.s;
    grade_note(slot, "yours %.2f TFLOP/s = %.1fx the uncoalesced %.2f (needs %.0fx); cuBLAS "
                     "%.1f TFLOP/s, so yours is %.0f%% of it",
               tflops(s, ty.median_ms), ratio, tflops(s, tb.median_ms), NEEDS_SPEEDUP,
               tflops(s, tc.median_ms), 100.0 * tc.median_ms / ty.median_ms);
    grade_summary("%.1fx over uncoalesced (needs %.0fx)", ratio, NEEDS_SPEEDUP);
    grade_hint(slot, "the 32 threads of a warp have consecutive threadIdx.x: give them "
                     "consecutive columns of C, so their loads of B and their stores to C each "
                     "fall in one 128-byte stretch");
    problem_free(&p);
    ck_assert_msg(ratio >= NEEDS_SPEEDUP,
                  "%dx%dx%d: yours %.3f ms, the uncoalesced %.3f ms: %.1fx, needs %.0fx", s.m,
                  s.k, s.n, ty.median_ms, tb.median_ms, ratio, NEEDS_SPEEDUP);
}
END_TEST

/* ---- bench ------------------------------------------------------------------------------ */

static const int BENCH_SIZES[] = { 256, 512, 1024, 2048, 4096 };

static int bench(const char *path)
{
    struct device_info info;
    struct results out;
    if (bench_begin(path, &out, &info) != 0)
        return EXIT_FAILURE;
    struct rng r;
    rng_init(&r, harness_seed());
    printf("%-12s %-12s %10s %10s\n", "shape", "kernel", "ms", "GFLOP/s");
    for (size_t i = 0; i < sizeof BENCH_SIZES / sizeof BENCH_SIZES[0]; i++) {
        int sz = BENCH_SIZES[i];
        struct shape s = { sz, sz, sz };
        struct problem p;
        problem_init(&p, s);
        size_t nc = (size_t)s.m * s.n;
        rng_fill_f32(&r, p.h_a, (size_t)s.m * s.k, -1.0f, 1.0f);
        rng_fill_f32(&r, p.h_b, (size_t)s.k * s.n, -1.0f, 1.0f);
        to_device(p.d_a, p.h_a, (size_t)s.m * s.k * sizeof(float));
        to_device(p.d_b, p.h_b, (size_t)s.k * s.n * sizeof(float));
        /* the CPU reference is too slow past 1024^3: check every rung against cuBLAS, with
         * both rounding bounds, |A||B| computed on the host in double */
        float *h_ref = xmalloc(nc * sizeof(float));
        blas_sgemm(p.d_a, p.d_b, p.d_c, s.m, s.k, s.n);
        gpu_sync();
        to_host(h_ref, p.d_c, nc * sizeof(float));
        for (size_t j = 0; j < nc; j++)
            p.ref[j] = h_ref[j];
        ref_matmul(p.h_a, p.h_b, NULL, p.scale, sz <= 1024 ? s.m : 0, s.k, s.n);
        char shape[32];
        snprintf(shape, sizeof shape, "%dx%dx%d", s.m, s.k, s.n);
        double bytes = 4.0 * ((double)s.m * s.k + (double)s.k * s.n + (double)nc);
        for (int v = 0; v <= MATMUL_NUM_RUNGS; v++) {
            struct launch l = { v < MATMUL_NUM_RUNGS ? MATMUL_RUNGS[v].fn : NULL, &p };
            const char *name = v < MATMUL_NUM_RUNGS ? MATMUL_RUNGS[v].name : "cublas";
            dbuf_poison(p.d_c);
            struct timing t = gpu_time(l.fn ? run_rung : run_cublas, &l, 2, sz >= 2048 ? 5 : 10);
            if (sz <= 1024 && l.fn) {
                to_host(p.h_c, p.d_c, nc * sizeof(float));
                struct cmp_result c = compare_f32(p.h_c, p.ref, p.scale, nc, (size_t)s.n,
                                                  2 * fp32_dot_rtol(s.k), 0.0);
                if (c.bad) {
                    char desc[512];
                    cmp_describe(&c, (size_t)s.n, desc, sizeof desc);
                    fprintf(stderr, "bench: %s at %s is wrong: %s\n", name, shape, desc);
                    return EXIT_FAILURE;
                }
            }
            double gflops = 2.0 * s.m * s.k * s.n / (t.median_ms * 1e-3) / 1e9;
            results_row(&out, CHAPTER, name, shape, t.median_ms, bytes / (t.median_ms * 1e-3) / 1e9,
                        gflops);
            printf("%-12s %-12s %10.4f %10.1f\n", shape, name, t.median_ms, gflops);
            fflush(stdout);
        }
        free(h_ref);
        problem_free(&p);
    }
    results_close(&out);
    printf("bench: wrote %s\n", path);
    return EXIT_SUCCESS;
}

static void add_tests(Suite *s)
{
    char titles[NSHAPES][80];
    const char *t[NSHAPES];
    for (int i = 0; i < NSHAPES; i++) {
        struct shape sh = shapes()[i], gpu = GPU_SHAPES[i];
        int shrunk = sh.m != gpu.m || sh.k != gpu.k || sh.n != gpu.n;
        snprintf(titles[i], sizeof titles[i], "correct %dx%dx%d%s", sh.m, sh.k, sh.n,
                 shrunk ? " (in place of the GPU's 1024x1024x1024)" : "");
        t[i] = titles[i];
    }
    CORRECT = grader_add(s, "correct", correct, t, NSHAPES, 120);
    SPEED = grader_add_timed(s, "speed", speed, "speed at 1024x1024x1024", 120);
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
