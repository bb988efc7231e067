/* 04-shared-memory-tiling.c: the grader of chapter 04, its bench, and its tuner.
 *
 *   grade            the ladder, a step a rung (TILED_STEPS, steps.cu), each step graded on
 *                    its own (GRADE_STEP=k grades step k alone):
 *                      correct  the step's launcher on the chapter's edge shapes, twice each on
 *                               fresh inputs (the second run shuffled on the CPU backend),
 *                               against a double-precision reference; step 6 also every tile
 *                               configuration of TILED_CONFIGS on three small odd shapes
 *                      concept  (CPU backend) the step's idea counted by the instrumented build
 *                               (graders/concept.h): coalesced, reused tiles; FMAs per shared
 *                               load; the width of loads; shared wavefronts per request
 *                      staged   (GPU) the kernels the step's launcher really launched at its
 *                               speed shape (harness/launches.h): every one whose machine code
 *                               multiplies (FFMA) also reads shared memory (LDS); register
 *                               blocking straight from global memory skips the chapter's idea
 *                               and can still pass a speed gate
 *                      sass     (GPU, step 7) in the same kernels' machine code, FFMAs per
 *                               LDS at least the lesson's count, and no local memory (a spill)
 *                      speed    (GPU) a ratio over the previous step's reference (step 1: over
 *                               the given matmul_naive), measured in the same run, with cuBLAS
 *                               SGEMM timed beside it
 *   grade --bench F  the naive kernel, every step and cuBLAS at 1024^3, 2048^3, 4096^3,
 *                    1000x999x1001 and 4096x4096x72, each checked against cuBLAS, as
 *                    tab-separated rows in F (GPU only)
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
 *
 * Thresholds. Each speed threshold comes from the references' times in
 * plots/data/h200/04-shared-memory-tiling.tsv (NVIDIA H200, driver 580.159.04, CUDA 13.0,
 * 2026-11-29, `make bench SOLUTIONS=1`): the step's reference over the previous step's at the
 * speed shape, times a margin of about 0.8 where the gain is large, and a share of the gain
 * where it is small, so that the previous step's reference itself fails. Each is beside its
 * step in the table of gates below, with the times it came from.
 */
#define _POSIX_C_SOURCE 200809L /* popen: graders/concept.h */
#include <stdlib.h>
#include <string.h>

#include "gemm_family.h"
#include "tiled.h"
#include "concept.h"
#include "sass.h"

#define CHAPTER "04-shared-memory-tiling"
#define NSTEPS 7
#define TUNED_STEP 6 /* the step whose configurations `grade --tune` measures */

/* Edge shapes, for every step: one element; primes just off the 32x32 tile; everything odd
 * (67x45x131: the float4 steps take their scalar paths); k and n multiples of 4 but of no
 * tile (130x132x260: the float4 paths, with tails in m, n and k); n a multiple of 4 with k
 * odd (31x45x36: a float4 path taken for A reads the wrong elements); k and n odd near 1000;
 * a short k (72: two full 32-wide tiles and a partial one) under a wide C; a tall thin C (37
 * columns, catches a grid with x and y swapped); and a square that fills the GPU. On the CPU
 * backend the shapes that only exist to fill a GPU shrink; the edge cases stay. */
static const struct gemm_shape GPU_SHAPES[] = {
    { 1, 1, 1 }, { 31, 33, 35 }, { 67, 45, 131 }, { 130, 132, 260 }, { 31, 45, 36 },
    { 1000, 999, 1001 }, { 4096, 72, 4096 }, { 3001, 517, 37 }, { 2048, 2048, 2048 },
};
static const struct gemm_shape CPU_SHAPES[] = {
    { 1, 1, 1 }, { 31, 33, 35 }, { 67, 45, 131 }, { 130, 132, 260 }, { 31, 45, 36 },
    { 1000, 999, 1001 }, { 1024, 72, 1024 }, { 3001, 517, 37 }, { 256, 256, 256 },
};
static const struct flow_shapes SHAPES = { GPU_SHAPES, CPU_SHAPES, .n = 9 };

/* Step 6's tile configurations, each on the three small odd shapes above. For a split-K
 * configuration (name ending _kS) k = 45 and 132 are 6 and 17 steps of BK = 8: every split has
 * slices of one step and of several, boundaries inside k, and the partial last step in the
 * last slice. */
static const struct gemm_shape CONFIG_SHAPES[] = {
    { 67, 45, 131 }, { 130, 132, 260 }, { 31, 45, 36 },
};
#define NCONFIG_SHAPES 3

/* The bench's and the tuner's shapes: three squares and the two odd ones. */
static const struct gemm_shape BENCH_SHAPES[] = {
    { 1024, 1024, 1024 }, { 2048, 2048, 2048 }, { 4096, 4096, 4096 }, { 1000, 999, 1001 },
    { 4096, 4096, 72 },
};
#define NBENCH 5

#define GUARD_HINT                                                                             \
    "a thread with row >= m or col >= n still stored its result: every store to C needs its "  \
    "own bounds check, after the tile loop"
#define FLOAT4_HINT                                                                            \
    "67x45x131 takes the scalar paths everywhere, 130x132x260 the float4 paths with tails in " \
    "m, k and n, and 31x45x36 must not take a float4 path for A (k = 45: A's rows are not "     \
    "16-byte aligned)"

/* Each step's problem; they differ in the hint they give when where the wrong elements sit
 * says nothing (split-K's first: it knows more). */
static const struct gemm_kind KIND[NSTEPS] = {
    { GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT,
      .hint = "walk cdiv(k, TILE) tiles, the last one partial; store 0.0f in the tile where the "
              "index falls outside A or B (skipping the store leaves the previous tile's values "
              "there); __syncthreads() after the loads AND after the inner loop; set acc to 0 "
              "once, before the tile loop" },
    { GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT,
      .hint = "each thread's column of results: the rows it loads from s_a, the rows it stores "
              "to C and the accumulator it adds into must be the same; zero-fill both tiles "
              "wherever the index falls outside A (row or k) or B (k or column)" },
    { GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT,
      .hint = "a tile loaded in several passes needs every pass (BM x BK and BK x BN elements "
              "over the block's threads); each thread's fragment rows and columns in shared "
              "memory must be the rows and columns it stores to C" },
    { GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT,
      .hint = "a step that fails only on some shapes: " FLOAT4_HINT "; A's tile stored "
              "transposed must be read transposed, at the same stride" },
    { GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT,
      .hint = "the warp's tile in the block tile (row and column offsets from the warp index), "
              "the lane's fragment in each sub-tile, and the stride of the padded A tile must "
              "agree between the loads, the reads and the stores; " FLOAT4_HINT },
    { GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT,
      .hint = "matmul_tuned launches one of your configurations: the configs tests say which "
              "fails; " FLOAT4_HINT },
    { GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT,
      .hint = "a ring of stages: a stage is refilled only after every thread has read its "
              "last fragments from it (the barrier that ends the tile before), and a tile is "
              "read only after __pipeline_wait_prior(STAGES - 2) and a barrier; every copy "
              "outside A or B zero-filled (a zfill of the copy's size); A's tile transposed by "
              "the copies, read at the same stride; " FLOAT4_HINT },
};
static const struct gemm_kind SPLITK = {
    GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT, .given_first = 1,
    .hint = "a split-K configuration (_kS: S blocks share each tile of C, each adding its "
            "slice of k): C must be zeroed before the slices add into it (NaN + x stays NaN), "
            "every slice must add (atomicAdd), never store, and the slices must cover every "
            "step of BK exactly once (a step counted twice or skipped where one slice ends and "
            "the next begins)",
};
static const struct gemm_kind CONFIG = {
    GEMM_FLOW, .input = GEMM_F32, .sampled = 1, .guard_hint = GUARD_HINT,
    .hint = "a configuration that fails only on some of the three shapes: " FLOAT4_HINT,
};

/* ---- the steps' gates ------------------------------------------------------------------------
 * Speed (GPU): yours over the previous step's reference (ref_TILED_STEPS, the solution's
 * kernels linked into this grader renamed ref_), step 1 over the given naive kernel. The
 * measured ratios are the H200's bench rows of plots/data/h200/04-shared-memory-tiling.tsv (ms,
 * the references; the grade of the solution in the same run measured the same ratios):
 *
 *   step  shape   reference over the one before             measured  needs
 *   1     2048^3  tiled 1.8884 / naive 2.7484                 1.46x    1.2x   (0.82)
 *   2     2048^3  blocked_1d 0.9877 / tiled 1.8884            1.91x    1.5x   (0.78)
 *   3     2048^3  blocked_2d 0.5668 / blocked_1d 0.9877       1.74x    1.4x   (0.80)
 *   4     2048^3  vectorized 0.4944 / blocked_2d 0.5668       1.15x    1.08x  (half the gain)
 *   5     2048^3  warptiled 0.4797 / vectorized 0.4944        1.03x    0.97x  (no slower)
 *   6     4096x4096x72  tuned 0.1026 / warptiled 0.7154       6.97x    5.5x   (0.79)
 *   6     4096^3  tuned 2.9354 / warptiled 3.8100             1.30x    0.95x  (no slower)
 *   7     4096^3         multistage 3.0864 / tuned 2.9409        0.95x    0.90x  (see below)
 *   7     1000x999x1001  multistage 0.0879 / tuned 0.0783        0.89x    0.80x  (see below)
 *
 * Step 4 gains little over step 3 (1.14x at 4096^3 too), so its threshold keeps half the gain:
 * a correct kernel that skips the idea measures about 1.0x. Step 5 gains too little to be told
 * apart by time on this GPU (1.03x at 2048^3, 1.02x at 4096^3: a warp tile changes which
 * shared-memory addresses a warp's request touches, and the float4 kernel before it is
 * already near the rate its tile shape allows), so on a GPU it must only not be slower, and
 * its idea is graded on the CPU backend, which counts it: the wavefronts per request below.
 *
 * Concepts (CPU backend), each on the step's own rung on a shape drawn from the test's seed
 * (below), the references' counts:
 *   step 1  4.00 sectors per global load request (at most 4.5 for floats), 0.0625 global
 *           load requests x 32 per FMA (at most 0.25; the naive kernel 2)
 *   step 2  0.89 FMAs per shared load, requests x 32 lanes (at least 0.7; step 1 0.50)
 *   step 3  4.00 FMAs per shared load (at least 2; step 2 0.89)
 *   step 4  16 bytes a lane, shared loads and global loads alike (at least 12; step 3 4)
 *   step 5  3.0 shared wavefronts per shared load request (at most 4; step 4 5.0, the same
 *           counts as Nsight Compute's on the H200: plots/data/h200/profile-calibration.tsv),
 *           shared loads still 16 bytes a lane (at least 12)
 *   step 6  correctness of every configuration: its idea is graded by speed on a GPU
 *   step 7  FMAs per shared load, at least CONCEPT_MIN_FMAS_PER_LOAD_7 (the reference's small-shape
 *           tile, 8x8 results a thread: 14.1 to 14.5 at the drawn shapes, 16 with whole
 *           tiles); on a GPU the same idea is read from the machine code (SASS_MIN_FFMA_PER_LDS) */
#define CONCEPT_MAX_LOADS_PER_FMA 0.25
#define CONCEPT_MIN_WIDTH 12.0
#define CONCEPT_MAX_WAVEFRONTS 4.0

struct step_speed {
    struct flow_speed sp;       /* first: grade_ctx() is this */
    int step;
    double needs;
    const char *base;           /* "naive", "step 4" */
    const char *hint;
};

struct step_gate {
    int step;
    const char *rung;           /* the rung the profile driver runs */
    double min_fmas_per_load;   /* steps 2 and 3 */
};

static const struct gemm_shape SHAPE_2048 = { 2048, 2048, 2048 };
static const struct gemm_shape SHAPE_4096 = { 4096, 4096, 4096 };
static const struct gemm_shape SHAPE_THIN = { 4096, 4096, 72 };
static const struct gemm_shape SHAPE_ODD = { 1000, 999, 1001 };

static const double NEEDS[NSTEPS - 1] = { 1.2, 1.5, 1.4, 1.08, 0.97, 5.5 };
#define NEEDS_TUNED_SQUARE 0.95
/* Step 7 over step 6's reference, at 4096^3 and at 1000x999x1001. On the H200 step 7's reference
 * (the cp.async ring) measured 0.95x and 0.89x step 6's register-staged double buffering in the
 * bench of 2026-12-03 (the grade of the solution in the same run: 0.95x and 0.89x), so there is no
 * gain to keep a share of: these gates only hold the step near step 6's pace, with a margin of
 * about 5 and 10 points, and its idea is graded in its machine code (the sass test below). */
#define NEEDS_MULTISTAGE_OVER_TUNED 0.90
#define NEEDS_MULTISTAGE_ODD_OVER_TUNED 0.80

/* Step 7's machine code (GPU): in every kernel its launcher launches at 4096^3 that multiplies,
 * the FFMAs over the shared loads (LDS, of any width) of its SASS, counted once each as they
 * stand in the code (an unrolled loop's body once), must be at least SASS_MIN_FFMA_PER_LDS, and
 * it must touch no local memory (LDL or STL: spilled registers, or an array indexed at run
 * time). The lesson's count (README.md, "Step 7"): a thread of TM x TN results over a tile BK
 * deep holds TM TN BK FFMAs and (TM + TN) / 4 LDS.128 for each of the BK steps and for the first
 * step of the next tile: the reference's 16x8 over BK = 8 gives 1024 / 54 = 19.0; 8x8 results a
 * thread, 512 / 36 = 14.2, which fails. */
#define SASS_MIN_FFMA_PER_LDS 16.0
/* the CPU backend's count of the same idea, FMAs per shared load as executed (edges included: at
 * m, n of 240, 64-wide tiles do 0.88 of their FMAs inside C) */
#define CONCEPT_MIN_FMAS_PER_LOAD_7 12.0

static const char *const SPEED_HINT[NSTEPS] = {
    "each element of a tile must come from global memory once per block and then be read TILE "
    "times from shared memory; check that s_a is read along a row (s_a[ty][i], a broadcast) "
    "and s_b down a column (s_b[i][tx], 32 banks), and that the block is 32x32 threads",
    "each thread should keep the B value it loads from shared memory in a register and use it "
    "for all TM rows of its column (TM = 8: 9 shared loads for 8 FMAs instead of 16)",
    "each thread should load TM values of A and TN of B into registers per step of k and do "
    "all TM x TN FMAs with them (8x8: 16 loads for 64 FMAs)",
    "the fragments should come from shared memory as float4s (A's tile stored transposed, so "
    "a thread's TM values of A are contiguous) and the tiles from global memory as float4s",
    "the lanes of a warp should read contiguous runs of shared memory together: a warp's tile "
    "of C split into sub-tiles its 32 lanes cover at once, 4x4 results a lane in each",
    "a C with few tiles needs more blocks: split k over S blocks a tile (split-K) where the "
    "tiles leave SMs idle, and pick each shape's configuration from your tuning table",
    "count the issue slots of the inner loop: every LDS, address add and branch takes the slot "
    "of an FFMA; a thread of 8x16 or 16x8 results reads 6 float4s a step for 128 FFMAs; copy "
    "the tiles with cp.async into a ring of 3 or 4 stages (one barrier a tile), read step k + 1's "
    "fragments while step k's FFMAs run, and split k where C has fewer tiles than SMs",
};

static struct step_speed SPEED[NSTEPS + 2];
static struct step_gate GATE[NSTEPS];
static int CONFIGS_SLOT;
/* the configurations that fit this device, in TILED_CONFIGS order (set before the forks) */
static int CONFIG_OF[GRADE_MAX_TESTS];

/* S of a configuration named ..._kS (split-K), 1 for the others. */
static int config_splits(const char *name)
{
    const char *k = strrchr(name, '_');
    return k && k[1] == 'k' && k[2] >= '1' && k[2] <= '9' ? atoi(k + 2) : 1;
}

START_TEST(configs)
{
    const struct tiled_config *cfg = &TILED_CONFIGS[CONFIG_OF[_i]];
    const struct gemm_kind *k = config_splits(cfg->name) > 1 ? &SPLITK : &CONFIG;
    flow_correct_each(&k->kind, CONFIGS_SLOT + _i, CONFIG_SHAPES, NCONFIG_SHAPES,
                      (flow_fn)cfg->fn, cfg->name, 0);
}
END_TEST

START_TEST(splitk_offered)
{
    int slot = grade_slot();
    int split = -1;
    for (int i = 0; i < TILED_NUM_CONFIGS && split < 0; i++)
        if (config_splits(TILED_CONFIGS[i].name) > 1)
            split = i;
    if (split < 0) {
        grade_hint(slot, "list your configurations in TILED_CONFIGS (tiled.h), among them at "
                         "least one that splits k S ways, named ..._kS");
        ck_abort_msg("TILED_CONFIGS has %d configurations, none of them split-K (a name ending "
                     "_kS)", TILED_NUM_CONFIGS);
    }
    grade_note(slot, "%d configurations, split-K among them (%s)", TILED_NUM_CONFIGS,
               TILED_CONFIGS[split].name);
}
END_TEST

/* ---- concept tests (CPU backend) ------------------------------------------------------------
 * Each runs the step's own rung once in the instrumented build (the profile driver,
 * graders/profile_main.c) and reads its counts, on a shape drawn from the test's seed: m and n
 * 240 or 248, k a multiple of 8 from 72 to 152 that is not a multiple of 32, never the driver's
 * own 128x128x128, so that a launcher cannot keep its good kernel for one known shape, nor for
 * shapes of whole tiles: no block tile of the steps (32 to 128 wide) divides m or n, and
 * step 1's 32-deep tile does not divide k. Every row still starts on a 32-byte boundary, so
 * float4 loads stay possible. The edge tiles are nearly whole (their last 8 or 16 rows or
 * columns missing), so the counts stay near those of full tiles: over every reference, 0.074
 * global loads per FMA at most (step 1; 0.0625 with full tiles), and at least 0.78 and 3.5
 * FMAs per shared load (steps 2 and 3; 0.89 and 4.0), inside the gates below; the per-request
 * counts of partial warps only fall. Every step stages its tiles in shared memory: a kernel
 * that makes no shared load fails each test. */

static char concept_shape[32]; /* the shape the test's run drew, for its messages */

/* The step's rung's row, or the test fails: a kernel that ran nothing, or staged nothing in
 * shared memory, say so. */
static struct concept_row gate_row(const struct step_gate *g)
{
    struct rng rg = grade_rng(grade_slot());
    int m, k, n;
    m = concept_pick(&rg, 240, 248, 8);
    n = concept_pick(&rg, 240, 248, 8);
    do
        k = concept_pick(&rg, 72, 152, 8);
    while (k % 32 == 0);
    snprintf(concept_shape, sizeof concept_shape, "%dx%dx%d", m, k, n);
    struct concept_row r = concept_profile_or_abort_at(g->rung, concept_shape);
    if (r.work <= 0 || r.gld_requests == 0) {
        grade_hint(grade_slot(), "the kernel of step %d is yours to write: the TODO at the top "
                   "of step%d_%s.cu says what it must do", g->step, g->step, g->rung);
        ck_abort_msg("matmul_%s at %s made %llu global load requests: it read nothing",
                     g->rung, concept_shape, r.gld_requests);
    }
    if (r.shld_requests == 0) {
        grade_hint(grade_slot(), "stage the tiles of A and B in shared memory (a __shared__ "
                   "array each block fills, __syncthreads(), then reads): blocking registers "
                   "straight from global memory is not this chapter's step");
        ck_abort_msg("matmul_%s at %s made no shared load: no tile is staged in shared memory",
                     g->rung, concept_shape);
    }
    return r;
}

/* step 1: tile loads coalesced, and each element reused across a tile. Its global loads (the
 * A and B tiles) must need at most concept_max_sectors 32-byte sectors per warp request (4.5
 * for floats, 18 for float4s: a margin for partial or unaligned edge tiles over the 4 of 32
 * consecutive floats); and global load requests times 32 lanes per FMA at most
 * CONCEPT_MAX_LOADS_PER_FMA: 2 / TILE for a tiled kernel, 2 for the naive kernel, whose loads
 * average 2.50 sectors per request (A's row is a broadcast, B's is coalesced) and so would
 * pass the first bound alone. 0.25 asks for tiles of at least 8. */
START_TEST(coalesced)
{
    int slot = grade_slot();
    struct concept_row r = gate_row(grade_ctx());
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
    grade_summary("%.4f global loads per FMA (at most %.2f), coalesced", per_fma,
                  CONCEPT_MAX_LOADS_PER_FMA);
}
END_TEST

/* steps 2 and 3: FMAs per shared load, the FMAs over shared load requests x 32 lanes */
START_TEST(register_reuse)
{
    int slot = grade_slot();
    const struct step_gate *g = grade_ctx();
    struct concept_row r = gate_row(g);
    if (r.shld_requests == 0) {
        grade_hint(slot, "stage the tiles of A and B in shared memory, as step 1 does, and read "
                         "each value from there into a register");
        ck_abort_msg("matmul_%s at %s made no shared load: no tile is staged", g->rung,
                     concept_shape);
    }
    double fmas = r.work / ((double)r.shld_requests * 32.0);
    if (!(fmas >= g->min_fmas_per_load)) {
        grade_hint(slot, "%s", SPEED_HINT[g->step - 1]);
        ck_abort_msg("%.2f FMAs per shared load (needs %.1f; %s, with whole tiles)", fmas,
                     g->min_fmas_per_load,
                     g->step == 2   ? "step 1's reference has 0.50"
                     : g->step == 3 ? "step 2's reference has 0.89"
                                    : "4x4 results a thread make 2.0, 8x8 make 16");
    }
    grade_note(slot, "%.2f FMAs per shared load (needs %.1f)", fmas, g->min_fmas_per_load);
    grade_summary("%.2f FMAs per shared load (needs %.1f)", fmas, g->min_fmas_per_load);
}
END_TEST

/* step 4: 16-byte loads, from shared memory and from global memory, as the bytes a lane of
 * the profile's requests moved on average */
START_TEST(widths)
{
    int slot = grade_slot();
    struct concept_row r = gate_row(grade_ctx());
    if (!(r.shld_width >= CONCEPT_MIN_WIDTH)) {
        grade_hint(slot, "read each thread's fragments from shared memory as float4s: B's "
                         "values are contiguous along a row of its tile; A's are contiguous only "
                         "if its tile is stored transposed (s_a[k][m])");
        ck_abort_msg("shared loads of %.1f bytes a lane on average (needs %.0f: float4 loads "
                     "are 16)", concept_width(r.shld_width), CONCEPT_MIN_WIDTH);
    }
    if (!(r.gld_width >= CONCEPT_MIN_WIDTH)) {
        grade_hint(slot, "load the tiles from global memory as float4s where k and n are "
                         "multiples of 4 (the grader's profile shapes are)");
        ck_abort_msg("global loads of %.1f bytes a lane on average (needs %.0f: float4 loads "
                     "are 16)", concept_width(r.gld_width), CONCEPT_MIN_WIDTH);
    }
    grade_note(slot, "shared loads %.1f bytes a lane, global loads %.1f (each needs %.0f)",
               r.shld_width, r.gld_width, CONCEPT_MIN_WIDTH);
    grade_summary("%.0f-byte shared loads, %.0f-byte global loads (need %.0f)", r.shld_width,
                  r.gld_width, CONCEPT_MIN_WIDTH);
}
END_TEST

/* step 5: shared wavefronts per shared load request, with the loads still float4s */
START_TEST(wavefronts)
{
    int slot = grade_slot();
    struct concept_row r = gate_row(grade_ctx());
    if (!(r.shld_width >= CONCEPT_MIN_WIDTH)) {
        grade_hint(slot, "keep step 4's float4 reads of both fragments from shared memory");
        ck_abort_msg("shared loads of %.1f bytes a lane on average (needs %.0f: float4 loads "
                     "are 16)", concept_width(r.shld_width), CONCEPT_MIN_WIDTH);
    }
    if (!(r.shld_wpr <= CONCEPT_MAX_WAVEFRONTS)) {
        grade_hint(slot, "%s", SPEED_HINT[4]);
        ck_abort_msg("%.2f shared wavefronts per shared load request (at most %.1f; step 4's "
                     "reference has 5.0)", r.shld_wpr, CONCEPT_MAX_WAVEFRONTS);
    }
    grade_note(slot, "%.2f shared wavefronts per shared load request (at most %.1f), %.0f-byte "
               "shared loads", r.shld_wpr, CONCEPT_MAX_WAVEFRONTS, r.shld_width);
    grade_summary("%.2f shared wavefronts per request (at most %.1f)", r.shld_wpr,
                  CONCEPT_MAX_WAVEFRONTS);
}
END_TEST

/* ---- staged (GPU): the idea in the machine code of what ran ------------------------------ */

struct staged_case {
    int step;
    const struct gemm_shape *shape;
};
static struct staged_case STAGED[NSTEPS];

/* Runs step c->step's entry point at c->shape with its launches recorded into *log, and names
 * what ran (what) and the cubin's architecture (arch); aborts the test when nothing was seen. */
static void launches_of(const struct staged_case *c, int slot, char what[96], char arch[16],
                        struct launch_log *log)
{
    const struct tiled_step *st = &TILED_STEPS[c->step - 1];
    char shape[48];
    gemm_shape_name(c->shape, shape, sizeof shape);
    snprintf(what, 96, "matmul_%s at %s", st->name, shape);
    flow_launches_of(&KIND[c->step - 1].kind, c->shape, (flow_fn)st->fn, slot, what, log);
    snprintf(arch, 16, "sm_%d", grader_cc());
}

START_TEST(staged)
{
    int slot = grade_slot();
    const struct staged_case *c = grade_ctx();
    char what[96], arch[16], why[256];
    struct launch_log log;
    launches_of(c, slot, what, arch, &log);
    int multiplying = 0;
    for (int i = 0; i < log.n; i++) {
        const char *name = log.r[i].name;
        if (!name[0])
            ck_abort_msg("%s: the runtime could not name kernel %d of the %d it launched", what,
                         i + 1, log.n);
        int nfn, nffma, nlds;
        ck_assert_msg(sass_count(name, "FFMA", arch, &nfn, &nffma, why, sizeof why) == 0, "%s",
                      why);
        ck_assert_msg(sass_count(name, "LDS", arch, &nfn, &nlds, why, sizeof why) == 0, "%s",
                      why);
        if (nfn == 0)
            ck_abort_msg("the %s machine code holds no function %s, which %s launched: built "
                         "for another architecture?", arch, name, what);
        if (nffma == 0)
            continue; /* a kernel that multiplies nothing (a split-K reduction, a transpose) */
        multiplying++;
        if (nlds < nfn) {
            char text[GRADE_TEXT];
            launches_describe(&log, 0, "", 0, text, sizeof text);
            grade_hint(slot, "this step stages tiles of A and B in shared memory: each block "
                             "loads a tile once from global memory (coalesced), waits at a "
                             "barrier, and its threads read the tile from shared memory many "
                             "times; a kernel that multiplies values it loaded straight from "
                             "global memory skips the idea this chapter is about, however "
                             "fast it is");
            ck_abort_msg("%s launched %s, which multiplies (FFMA) but never reads shared memory "
                         "(no LDS in its %s machine code): %s", what, name, arch, text);
        }
    }
    if (multiplying == 0)
        ck_abort_msg("%s: none of the %d kernels it launched holds an FFMA in its %s machine "
                     "code: where is the product computed?", what, log.n, arch);
    grade_note(slot, "%d kernel%s that multipl%s, each reading shared memory (LDS, %s)",
               multiplying, multiplying == 1 ? "" : "s", multiplying == 1 ? "ies" : "y", arch);
}
END_TEST

static void add_staged(Suite *s, int k, const struct gemm_shape *shape)
{
    static char titles[NSTEPS][128];
    static const char *t[NSTEPS][1];
    char name[48];
    gemm_shape_name(shape, name, sizeof name);
    snprintf(titles[k - 1], sizeof titles[k - 1], "staged: what it launched at %s reads "
             "shared memory (SASS)", name);
    t[k - 1][0] = titles[k - 1];
    if (!gpu_times_are_real()) {
        grader_skip(titles[k - 1], "graded on a GPU only: the concept test counts the shared "
                                   "loads here");
        return;
    }
    if (!sass_on_path("cuobjdump")) {
        grader_skip(titles[k - 1], "cuobjdump is not on PATH (it comes with the CUDA toolkit)");
        return;
    }
    STAGED[k - 1] = (struct staged_case){ k, shape };
    if (grader_add_ctx(s, "staged", staged, t[k - 1], 1, 120, &STAGED[k - 1]) >= 0)
        sass_preload(NULL, 0); /* the machine code, read once here (sass.h) */
}

/* ---- the machine code of step 7 (GPU): FFMAs per shared load, and no spill ---------------- */

static const char *const SASS_OPS[] = { "FFMA", "LDS", "LDL", "STL" };
enum { OP_FFMA, OP_LDS, OP_LDL, OP_STL, NOPS };
#define SASS_MAX_FNS 4 /* the learner's kernel and the reference's of the same name, at most */

START_TEST(issue_slots)
{
    int slot = grade_slot();
    const struct staged_case *c = grade_ctx();
    char what[96], arch[16], why[256];
    struct launch_log log;
    launches_of(c, slot, what, arch, &log);
    double worst = -1;
    int multiplying = 0;
    for (int i = 0; i < log.n; i++) {
        const char *name = log.r[i].name;
        if (!name[0])
            ck_abort_msg("%s: the runtime could not name kernel %d of the %d it launched", what,
                         i + 1, log.n);
        int counts[SASS_MAX_FNS * NOPS], nfn;
        ck_assert_msg(sass_tally(name, arch, SASS_OPS, NOPS, counts, SASS_MAX_FNS, &nfn, why,
                                 sizeof why) == 0, "%s", why);
        if (nfn == 0)
            ck_abort_msg("the %s machine code holds no function %s, which %s launched: built "
                         "for another architecture?", arch, name, what);
        for (int f = 0; f < nfn && f < SASS_MAX_FNS; f++) {
            const int *cnt = counts + f * NOPS;
            if (cnt[OP_LDL] || cnt[OP_STL]) {
                grade_hint(slot, "a kernel that touches local memory has spilled registers "
                                 "(or indexes a register array with a value known only at run "
                                 "time): ptxas -v (nvcc -Xptxas -v) prints its spill stores and "
                                 "loads; fewer results a thread, fully unrolled loops over the "
                                 "fragments, or __launch_bounds__ with fewer blocks an SM");
                ck_abort_msg("%s launched %s, whose %s machine code touches local memory: %d "
                             "LDL and %d STL (a spill)", what, name, arch, cnt[OP_LDL],
                             cnt[OP_STL]);
            }
            if (cnt[OP_FFMA] == 0)
                continue; /* a kernel that multiplies nothing */
            multiplying++;
            if (cnt[OP_LDS] == 0) {
                grade_hint(slot, "%s", SPEED_HINT[c->step - 1]);
                ck_abort_msg("%s launched %s, which multiplies (%d FFMA) but never reads shared "
                             "memory (no LDS in its %s machine code)", what, name,
                             cnt[OP_FFMA], arch);
            }
            const double ratio = (double)cnt[OP_FFMA] / cnt[OP_LDS];
            if (!(ratio >= SASS_MIN_FFMA_PER_LDS)) {
                grade_hint(slot, "each LDS takes an FFMA's issue slot: read fragments as "
                                 "float4s (LDS.128) and use each value for more FFMAs, 8x16 or "
                                 "16x8 results a thread: (TM + TN) / 4 loads a step for TM TN "
                                 "FFMAs (README.md, Step 7)");
                ck_abort_msg("%s launched %s: %d FFMA over %d LDS in its %s machine code, %.1f "
                             "FFMAs a shared load (needs %.0f)", what, name, cnt[OP_FFMA],
                             cnt[OP_LDS], arch, ratio, SASS_MIN_FFMA_PER_LDS);
            }
            if (worst < 0 || ratio < worst)
                worst = ratio;
        }
    }
    if (multiplying == 0)
        ck_abort_msg("%s: none of the %d kernels it launched holds an FFMA in its %s machine "
                     "code: where is the product computed?", what, log.n, arch);
    grade_note(slot, "%.1f FFMAs a shared load in the machine code (needs %.0f), no local "
                     "memory (%s)", worst, SASS_MIN_FFMA_PER_LDS, arch);
    grade_summary("%.1f FFMAs per LDS in the SASS (needs %.0f), no spill", worst,
                  SASS_MIN_FFMA_PER_LDS);
}
END_TEST

static void add_issue_slots(Suite *s, int k, const struct gemm_shape *shape)
{
    static char title[128];
    static const char *t[1];
    static struct staged_case ctx;
    char name[48];
    gemm_shape_name(shape, name, sizeof name);
    snprintf(title, sizeof title, "issue slots: FFMAs per shared load and no spill in what it "
             "launched at %s (SASS)", name);
    t[0] = title;
    if (!gpu_times_are_real()) {
        grader_skip(title, "graded on a GPU only (the machine code of what ran); the concept "
                           "test counts FMAs per shared load here");
        return;
    }
    if (!sass_on_path("cuobjdump")) {
        grader_skip(title, "cuobjdump is not on PATH (it comes with the CUDA toolkit)");
        return;
    }
    ctx = (struct staged_case){ k, shape };
    if (grader_add_ctx(s, "sass", issue_slots, t, 1, 120, &ctx) >= 0)
        sass_preload(NULL, 0);
}

/* ---- speed, bench and tune -------------------------------------------------------------- */

static void verdict(int slot, const void *shape, const struct flow_times *t)
{
    const struct step_speed *st = grade_ctx();
    struct gemm_shape s = *(const struct gemm_shape *)shape;
    double ratio = t->base.median_ms / t->yours.median_ms;
    grade_note(slot, "%s %.0f GFLOP/s, yours %.0f (%.2fx, needs %.2fx), cuBLAS %.0f: yours "
                     "is %.0f%% of cuBLAS", st->base,
               gemm_rate(s, t->base.median_ms, 1e9), gemm_rate(s, t->yours.median_ms, 1e9),
               ratio, st->needs, gemm_rate(s, t->ceiling.median_ms, 1e9),
               100.0 * t->ceiling.median_ms / t->yours.median_ms);
    grade_summary("%.1f TFLOP/s = %.2fx %s at %dx%dx%d (needs %.2fx)",
                  gemm_rate(s, t->yours.median_ms, 1e12), ratio, st->base, s.m, s.k, s.n,
                  st->needs);
    grade_hint(slot, "%s", st->hint);
    ck_assert_msg(ratio >= st->needs, "%dx%dx%d: yours %.3f ms, %s %.3f ms: %.2fx, needs %.2fx",
                  s.m, s.k, s.n, t->yours.median_ms, st->base, t->base.median_ms, ratio,
                  st->needs);
}

/* Step k's speed test at shape, against base (named base_name), needing `needs`. */
static void add_speed(Suite *s, struct step_speed *st, int k, const struct gemm_shape *shape,
                      flow_fn base, const char *base_name, double needs)
{
    *st = (struct step_speed){
        .sp = { "speed", &KIND[k - 1].kind, shape, (flow_fn)TILED_STEPS[k - 1].fn, base, NULL,
                NULL, 2, 10, 120, .verdict = verdict },
        .step = k, .needs = needs, .base = base_name, .hint = SPEED_HINT[k - 1],
    };
    static char what[NSTEPS][48];
    snprintf(what[k - 1], sizeof what[k - 1], "matmul_%s", TILED_STEPS[k - 1].name);
    st->sp.what = what[k - 1];
    flow_add_speed(s, &st->sp);
}

static int bench(const char *path)
{
    struct flow_rung rungs[1 + NSTEPS];
    int n = 0;
    rungs[n++] = (struct flow_rung){ .name = "naive", .fn = (flow_fn)matmul_naive };
    for (int v = 0; v < TILED_NUM_STEPS && n < 1 + NSTEPS; v++)
        rungs[n++] = (struct flow_rung){ .name = TILED_STEPS[v].name,
                                         .fn = (flow_fn)TILED_STEPS[v].fn };
    return gemm_bench(CHAPTER, &KIND[0], BENCH_SHAPES, NBENCH, rungs, n, path);
}

static int tune(const char *path)
{
    if (TILED_NUM_CONFIGS == 0) {
        fprintf(stderr, "tune: this build's step6_tuned.cu offers no tile configurations "
                        "(TILED_CONFIGS); tune the solution (SOLUTIONS=1)\n");
        return EXIT_FAILURE;
    }
    struct gemm_candidate *c = xmalloc((size_t)TILED_NUM_CONFIGS * sizeof *c);
    for (int i = 0; i < TILED_NUM_CONFIGS; i++)
        c[i] = (struct gemm_candidate){ TILED_CONFIGS[i].name, TILED_CONFIGS[i].fn,
                                        TILED_CONFIGS[i].smem_bytes };
    int rc = gemm_tune(&KIND[TUNED_STEP - 1], BENCH_SHAPES, NBENCH, c, TILED_NUM_CONFIGS,
                       "every tile configuration of matmul_tuned, checked against cuBLAS; best = "
                       "1 marks the fastest of each shape, the one matmul_tuned picks for this "
                       "device", path);
    free(c);
    return rc;
}

/* ---- registration ----------------------------------------------------------------------- */

static void add_concept(Suite *s, int k, const TTest *fn, const char *title, double min_fmas)
{
    if (!concept_here()) {
        grader_skip(title, "counted on the CPU backend only (make grade BACKEND=emu); on a GPU "
                           "this needs Nsight Compute, which is to come");
        return;
    }
    GATE[k - 1] = (struct step_gate){ k, TILED_STEPS[k - 1].name, min_fmas };
    static const char *titles[NSTEPS][1];
    titles[k - 1][0] = title;
    grader_add_ctx(s, "concept", fn, titles[k - 1], 1, 60, &GATE[k - 1]);
}

static void add_configs(Suite *s)
{
    /* every tile configuration that fits this device (more than GRADE_MAX_TESTS in all stops
     * grader_add with a message, never silently) */
    if (TILED_NUM_CONFIGS > GRADE_MAX_TESTS) {
        fprintf(stderr, "grade: %d tile configurations: more than %d tests\n",
                TILED_NUM_CONFIGS, GRADE_MAX_TESTS);
        exit(EXIT_FAILURE);
    }
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
        snprintf(cfg_titles[ncfg], sizeof cfg_titles[ncfg], "config %s on 67x45x131, "
                 "130x132x260, 31x45x36", cfg->name);
        ct[ncfg] = cfg_titles[ncfg];
        ncfg++;
    }
    if (ncfg)
        CONFIGS_SLOT = grader_add(s, "configs", configs, ct, ncfg, 120);
    static const char *title[] = { "TILED_CONFIGS offers a split-K configuration" };
    grader_add(s, "splitk", splitk_offered, title, 1, 10);
}

static void add_tests(Suite *s)
{
    if (TILED_NUM_STEPS != NSTEPS || ref_TILED_NUM_STEPS != NSTEPS) {
        fprintf(stderr, "grade: steps.cu lists %d steps (the references %d); this grader "
                        "grades %d\n", TILED_NUM_STEPS, ref_TILED_NUM_STEPS, NSTEPS);
        exit(EXIT_FAILURE);
    }
    static char what[NSTEPS][48];
    for (int k = 1; k <= NSTEPS; k++) {
        const struct tiled_step *st = &TILED_STEPS[k - 1];
        if (!grader_step(k, st->title))
            continue;
        snprintf(what[k - 1], sizeof what[k - 1], "matmul_%s", st->name);
        flow_add_correct(s, &KIND[k - 1].kind, &SHAPES, (flow_fn)st->fn, what[k - 1]);
        switch (k) {
        case 1:
            add_concept(s, 1, coalesced, "coalesced tile loads, each reused across a tile", 0);
            break;
        case 2:
            add_concept(s, 2, register_reuse, "FMAs per shared load, B cached in a register",
                        0.7);
            break;
        case 3:
            add_concept(s, 3, register_reuse, "FMAs per shared load, A and B fragments in "
                                              "registers", 2.0);
            break;
        case 4:
            add_concept(s, 4, widths, "16-byte shared and global loads", 0);
            break;
        case 5:
            add_concept(s, 5, wavefronts, "shared wavefronts per request, lanes over a warp "
                                          "tile", 0);
            break;
        case 6:
            add_configs(s);
            break;
        case 7:
            add_concept(s, 7, register_reuse, "FMAs per shared load, large fragments a thread",
                        CONCEPT_MIN_FMAS_PER_LOAD_7);
            add_issue_slots(s, 7, &SHAPE_4096);
            break;
        }
        add_staged(s, k, k < 6 ? &SHAPE_2048 : k == 6 ? &SHAPE_THIN : &SHAPE_4096);
        static char base_name[NSTEPS][32];
        if (k == 1)
            snprintf(base_name[0], sizeof base_name[0], "naive");
        else
            snprintf(base_name[k - 1], sizeof base_name[k - 1], "step %d", k - 1);
        flow_fn base = k == 1 ? (flow_fn)matmul_naive : (flow_fn)ref_TILED_STEPS[k - 2].fn;
        if (k < 6) {
            add_speed(s, &SPEED[k - 1], k, &SHAPE_2048, base, base_name[k - 1], NEEDS[k - 1]);
        } else if (k == 6) {
            add_speed(s, &SPEED[k - 1], k, &SHAPE_THIN, base, base_name[k - 1], NEEDS[k - 1]);
            add_speed(s, &SPEED[NSTEPS], k, &SHAPE_4096, base, base_name[k - 1],
                      NEEDS_TUNED_SQUARE);
        } else {
            add_speed(s, &SPEED[k - 1], k, &SHAPE_4096, base, base_name[k - 1],
                      NEEDS_MULTISTAGE_OVER_TUNED);
            add_speed(s, &SPEED[NSTEPS + 1], k, &SHAPE_ODD, base, base_name[k - 1],
                      NEEDS_MULTISTAGE_ODD_OVER_TUNED);
        }
    }
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, tune };
    return grader_main(&spec, argc, argv);
}
