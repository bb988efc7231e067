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
 *                    cuBLAS, as the table matmul_tuned reads (GPU only; gemm_family.h has the
 *                    format)
 *
 * Shapes are m x k x n, as in chapter 01: 4096x4096x72 is m = 4096, k = 4096, n = 72.
 *
 * Reference. Up to about 1.3e9 multiply-adds (GEMM_FULL_REF_MACS), every element of C against
 * ref_matmul (double, host). Above, every element of C must be written (no NaN left from the
 * poison), and a sample of 64 rows spread over C, at every offset within a tile and including
 * the last row, is compared against the double-precision reference of those rows. The bench
 * and the tuner compare the same kind of sample against cuBLAS's output, with twice the
 * tolerance (both sides round). graders/gemm_family.c does all three.
 */
#define _POSIX_C_SOURCE 200809L /* popen: graders/concept.h */
#include <stdlib.h>
#include <string.h>

#include "gemm_family.h"
#include "tiled.h"
#include "concept.h"

#define CHAPTER "04-shared-memory-tiling"
#define NEEDS_SPEEDUP 1.3

/* Edge shapes for matmul_tiled: one element; primes just off the 32x32 tile; k and n odd
 * near 1000; a short k (72: two full tiles and a partial one) under a wide C; a tall thin C
 * (37 columns, catches a grid with x and y swapped); and a square that fills the GPU. On the
 * CPU backend the shapes that only exist to fill a GPU shrink; the edge cases stay. */
static const struct gemm_shape GPU_SHAPES[] = {
    { 1, 1, 1 }, { 31, 33, 35 }, { 1000, 999, 1001 }, { 4096, 72, 4096 }, { 3001, 517, 37 },
    { 2048, 2048, 2048 },
};
static const struct gemm_shape CPU_SHAPES[] = {
    { 1, 1, 1 }, { 31, 33, 35 }, { 1000, 999, 1001 }, { 1024, 72, 1024 }, { 3001, 517, 37 },
    { 256, 256, 256 },
};
static const struct flow_shapes SHAPES = { GPU_SHAPES, CPU_SHAPES, .n = 6 };

/* Small shapes for every rung and every tile configuration: everything odd; k and n
 * multiples of 4 but of no tile (the float4 paths, with tails in m, n and k); and n a
 * multiple of 4 with k odd (a float4 path taken there reads the wrong elements). For a
 * split-K configuration (name ending _kS) k = 45 and 132 are 6 and 17 steps of BK = 8: every
 * split has slices of one step and of several, boundaries inside k, and the partial last step
 * in the last slice. */
static const struct gemm_shape RUNG_SHAPES[] = {
    { 67, 45, 131 }, { 130, 132, 260 }, { 31, 45, 36 },
};
#define NRUNG_SHAPES 3

/* The bench's and the tuner's shapes: three squares and the two odd ones of the issue. */
static const struct gemm_shape BENCH_SHAPES[] = {
    { 1024, 1024, 1024 }, { 2048, 2048, 2048 }, { 4096, 4096, 4096 }, { 1000, 999, 1001 },
    { 4096, 4096, 72 },
};
#define NBENCH 5

#define GUARD_HINT                                                                             \
    "a thread with row >= m or col >= n still stored its result: every store to C needs its "  \
    "own bounds check, after the tile loop"

/* matmul_tiled's problem; the rungs' and the configurations' differ in the hint they give
 * when where the wrong elements sit says nothing (split-K's first: it knows more) */
static const struct gemm_kind TILED = {
    GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT,
    .hint = "walk cdiv(k, TILE) tiles, the last one partial; store 0.0f in the tile where the "
            "index falls outside A or B (skipping the store leaves the previous tile's values "
            "there); __syncthreads() after the loads AND after the inner loop; set acc to 0 "
            "once, before the tile loop",
};
static const struct gemm_kind RUNG = {
    GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT,
    .hint = "a rung that fails only on some of the three shapes: 67x45x131 takes the scalar "
            "paths everywhere, 130x132x260 the float4 paths with tails in m, k and n, and "
            "31x45x36 must not take a float4 path for A (k = 45: A's rows are not 16-byte "
            "aligned)",
};
static const struct gemm_kind SPLITK = {
    GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT, .given_first = 1,
    .hint = "a split-K configuration (_kS: S blocks share each tile of C, each adding its "
            "slice of k): C must be zeroed before the slices add into it (NaN + x stays NaN), "
            "every slice must add (atomicAdd), never store, and the slices must cover every "
            "step of BK exactly once (a step counted twice or skipped where one slice ends and "
            "the next begins)",
};

static int RUNGS, CONFIGS, COALESCED;
/* the configurations that fit this device, in TILED_CONFIGS order (set before the forks) */
static int CONFIG_OF[GRADE_MAX_TESTS];

/* S of a configuration named ..._kS (split-K), 1 for the others. */
static int config_splits(const char *name)
{
    const char *k = strrchr(name, '_');
    return k && k[1] == 'k' && k[2] >= '1' && k[2] <= '9' ? atoi(k + 2) : 1;
}

START_TEST(rungs)
{
    const struct tiled_rung *rung = &TILED_RUNGS[_i];
    flow_correct_each(&RUNG.kind, RUNGS + _i, RUNG_SHAPES, NRUNG_SHAPES, (flow_fn)rung->fn,
                      rung->name, 0);
}
END_TEST

START_TEST(configs)
{
    const struct tiled_config *cfg = &TILED_CONFIGS[CONFIG_OF[_i]];
    const struct gemm_kind *k = config_splits(cfg->name) > 1 ? &SPLITK : &RUNG;
    flow_correct_each(&k->kind, CONFIGS + _i, RUNG_SHAPES, NRUNG_SHAPES, (flow_fn)cfg->fn,
                      cfg->name, 0);
}
END_TEST

/* ---- concept tests -------------------------------------------------------------------------
 * The profiling issue registers its tests of this chapter's ideas here, on the CPU backend's
 * counters (and Nsight Compute where it runs): global loads per FMA of matmul_tiled (1/16
 * where the naive kernel needs 2), shared-memory wavefronts per request of its tile reads (1:
 * s_a's read is a broadcast, s_b's spans 32 banks), and no divergent barrier. Add them with
 * grader_add beside `correct` in add_tests().
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

/* ---- speed, bench and tune -------------------------------------------------------------- */

static void verdict(int slot, const void *shape, const struct flow_times *t)
{
    struct gemm_shape s = *(const struct gemm_shape *)shape;
    double ratio = t->base.median_ms / t->yours.median_ms;
    grade_note(slot, "naive %.0f GFLOP/s, yours %.0f (%.2fx, needs %.1fx), cuBLAS %.0f: yours "
                     "is %.0f%% of cuBLAS",
               gemm_rate(s, t->base.median_ms, 1e9), gemm_rate(s, t->yours.median_ms, 1e9),
               ratio, NEEDS_SPEEDUP, gemm_rate(s, t->ceiling.median_ms, 1e9),
               100.0 * t->ceiling.median_ms / t->yours.median_ms);
    grade_summary("%.2fx over naive (needs %.1fx)", ratio, NEEDS_SPEEDUP);
    grade_hint(slot, "each element of a tile must come from global memory once per block and "
                     "then be read TILE times from shared memory; check that s_a is read along "
                     "a row (s_a[ty][i], a broadcast) and s_b down a column (s_b[i][tx], 32 "
                     "banks), and that the block is 32x32 threads");
    ck_assert_msg(ratio >= NEEDS_SPEEDUP,
                  "%dx%dx%d: yours %.3f ms, naive %.3f ms: %.2fx, needs %.1fx", s.m, s.k, s.n,
                  t->yours.median_ms, t->base.median_ms, ratio, NEEDS_SPEEDUP);
}

static const struct gemm_shape SPEED_SHAPE = { 2048, 2048, 2048 };
static const struct flow_speed SPEED = {
    "speed", &TILED.kind, &SPEED_SHAPE, (flow_fn)matmul_tiled, (flow_fn)matmul_naive, NULL,
    "matmul_tiled", 2, 10, 120, .verdict = verdict,
};

static int bench(const char *path)
{
    struct flow_rung rungs[GRADE_MAX_TESTS];
    int n = TILED_NUM_RUNGS < GRADE_MAX_TESTS ? TILED_NUM_RUNGS : GRADE_MAX_TESTS;
    for (int v = 0; v < n; v++)
        rungs[v] = (struct flow_rung){ .name = TILED_RUNGS[v].name,
                                       .fn = (flow_fn)TILED_RUNGS[v].fn };
    return gemm_bench(CHAPTER, &TILED, BENCH_SHAPES, NBENCH, rungs, n, path);
}

static int tune(const char *path)
{
    if (TILED_NUM_CONFIGS == 0) {
        fprintf(stderr, "tune: this build's matmul_tiled.cu offers no tile configurations "
                        "(TILED_CONFIGS); tune the solution (SOLUTIONS=1)\n");
        return EXIT_FAILURE;
    }
    struct gemm_candidate *c = xmalloc((size_t)TILED_NUM_CONFIGS * sizeof *c);
    for (int i = 0; i < TILED_NUM_CONFIGS; i++)
        c[i] = (struct gemm_candidate){ TILED_CONFIGS[i].name, TILED_CONFIGS[i].fn,
                                        TILED_CONFIGS[i].smem_bytes };
    int rc = gemm_tune(&TILED, BENCH_SHAPES, NBENCH, c, TILED_NUM_CONFIGS,
                       "every tile configuration of matmul_tuned, checked against cuBLAS; best = "
                       "1 marks the fastest of each shape, the one matmul_tuned picks for this "
                       "device", path);
    free(c);
    return rc;
}

/* ---- registration ----------------------------------------------------------------------- */

static void add_tests(Suite *s)
{
    flow_add_correct(s, &TILED.kind, &SHAPES, (flow_fn)matmul_tiled, "matmul_tiled");

    /* every rung of the linked file, and every tile configuration that fits this device
     * (more than GRADE_MAX_TESTS in all stops grader_add with a message, never silently) */
    static char rung_titles[GRADE_MAX_TESTS][96];
    const char *rt[GRADE_MAX_TESTS];
    if (TILED_NUM_RUNGS > GRADE_MAX_TESTS || TILED_NUM_CONFIGS > GRADE_MAX_TESTS) {
        fprintf(stderr, "grade: %d rungs and %d tile configurations: more than %d tests\n",
                TILED_NUM_RUNGS, TILED_NUM_CONFIGS, GRADE_MAX_TESTS);
        exit(EXIT_FAILURE);
    }
    for (int i = 0; i < TILED_NUM_RUNGS; i++) {
        snprintf(rung_titles[i], sizeof rung_titles[i], "rung %s on 67x45x131, 130x132x260, "
                 "31x45x36", TILED_RUNGS[i].name);
        rt[i] = rung_titles[i];
    }
    RUNGS = grader_add(s, "rungs", rungs, rt, TILED_NUM_RUNGS, 120);

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
    flow_add_speed(s, &SPEED);
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, tune };
    return grader_main(&spec, argc, argv);
}
