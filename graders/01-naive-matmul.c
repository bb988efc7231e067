/* 01-naive-matmul.c: the grader of chapter 01, and its bench.
 *
 *   grade            correctness on edge shapes against a double-precision reference, twice
 *                    each on fresh inputs; on a GPU, matmul at least 5x matmul_uncoalesced at
 *                    1024^3, with cuBLAS SGEMM measured in the same run as the ceiling
 *   grade --bench F  every rung of the linked matmul.cu and cuBLAS over a range of sizes, as
 *                    tab-separated rows in F (GPU only)
 *
 * The choreography is harness/flow.c's, the problem graders/gemm_family.c's; here, the facts.
 */
#include <stdlib.h>

#include "gemm_family.h"
#include "matmul.h"

#define CHAPTER "01-naive-matmul"
#define NEEDS_SPEEDUP 5.0

/* Edge shapes: one element, primes below the block, sizes just off the block, a square that
 * fills the GPU, and a tall thin C that catches a grid with x and y swapped. On the CPU
 * backend the shape that only exists to fill a GPU shrinks; the edge cases stay. */
static const struct gemm_shape GPU_SHAPES[] = {
    { 1, 1, 1 }, { 17, 33, 9 }, { 1000, 999, 1001 }, { 1024, 1024, 1024 }, { 3001, 517, 37 },
};
static const struct gemm_shape CPU_SHAPES[] = {
    { 1, 1, 1 }, { 17, 33, 9 }, { 1000, 999, 1001 }, { 256, 256, 256 }, { 3001, 517, 37 },
};
static const struct flow_shapes SHAPES = { GPU_SHAPES, CPU_SHAPES, .n = 5 };

static const struct gemm_kind MATMUL = {
    GEMM_FLOW, .input = GEMM_F32,
    .guard_hint = "a thread with row >= m or col >= n still stored its result: the bounds "
                  "check must come before the store",
    .hint = "check the indexing: A(row, i) is a[row * k + i], B(i, col) is b[i * n + col], "
            "C(row, col) is c[row * n + col]",
};

static void verdict(int slot, const void *shape, const struct flow_times *t)
{
    struct gemm_shape s = *(const struct gemm_shape *)shape;
    double ratio = t->base.median_ms / t->yours.median_ms;
    grade_note(slot, "yours %.2f TFLOP/s = %.1fx the uncoalesced %.2f (needs %.0fx); cuBLAS "
                     "%.1f TFLOP/s, so yours is %.0f%% of it",
               gemm_rate(s, t->yours.median_ms, 1e12), ratio, gemm_rate(s, t->base.median_ms, 1e12),
               NEEDS_SPEEDUP, gemm_rate(s, t->ceiling.median_ms, 1e12),
               100.0 * t->ceiling.median_ms / t->yours.median_ms);
    grade_summary("%.1fx over uncoalesced (needs %.0fx)", ratio, NEEDS_SPEEDUP);
    grade_hint(slot, "the 32 threads of a warp have consecutive threadIdx.x: give them "
                     "consecutive columns of C, so their loads of B and their stores to C each "
                     "fall in one 128-byte stretch");
    ck_assert_msg(ratio >= NEEDS_SPEEDUP,
                  "%dx%dx%d: yours %.3f ms, the uncoalesced %.3f ms: %.1fx, needs %.0fx", s.m,
                  s.k, s.n, t->yours.median_ms, t->base.median_ms, ratio, NEEDS_SPEEDUP);
}

static const struct gemm_shape SPEED_SHAPE = { 1024, 1024, 1024 };
static const struct flow_speed SPEED = {
    "speed", &MATMUL.kind, &SPEED_SHAPE, (flow_fn)matmul, (flow_fn)matmul_uncoalesced, NULL,
    "matmul", 2, 10, 120, .verdict = verdict,
};

static const struct gemm_shape BENCH_SHAPES[] = {
    { 256, 256, 256 }, { 512, 512, 512 }, { 1024, 1024, 1024 }, { 2048, 2048, 2048 },
    { 4096, 4096, 4096 },
};

static int bench(const char *path)
{
    struct flow_rung rungs[64];
    for (int v = 0; v < MATMUL_NUM_RUNGS && v < 64; v++)
        rungs[v] = (struct flow_rung){ .name = MATMUL_RUNGS[v].name,
                                       .fn = (flow_fn)MATMUL_RUNGS[v].fn };
    return gemm_bench(CHAPTER, &MATMUL, BENCH_SHAPES, 5, rungs, MATMUL_NUM_RUNGS, path);
}

static void add_tests(Suite *s)
{
    flow_add_correct(s, &MATMUL.kind, &SHAPES, (flow_fn)matmul, "matmul");
    flow_add_speed(s, &SPEED);
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
