/* 02-coalesced-transpose.c: the grader of chapter 02, and its bench.
 *
 *   grade            correctness on edge shapes, exactly (a transpose moves bits, it computes
 *                    nothing), twice each on fresh inputs; on a GPU, transpose at least 70% of
 *                    copy_same_bytes's bandwidth at 8192x8192, both measured in the same run,
 *                    with transpose_naive measured beside them for scale; on the CPU backend,
 *                    the concept tests: coalesced global accesses, conflict-free shared ones
 *   grade --bench F  every rung of the linked transpose.cu and the copy kernel over a range of
 *                    square sizes, as tab-separated rows in F (GPU only)
 *
 * Bandwidth is counted as a transpose must move it: rows * cols floats read and as many
 * written, 2 * rows * cols * 4 bytes, whatever the kernel really moved.
 *
 * The choreography is harness/flow.c's, the problem graders/array_family.c's; here, the facts,
 * the hints and the concept tests.
 */
#define _POSIX_C_SOURCE 200809L /* popen: graders/concept.h */
#include <math.h>
#include <stdlib.h>

#include "array_family.h"
#include "transpose.h"
#include "concept.h"

#define CHAPTER "02-coalesced-transpose"
#define NEEDS_OF_COPY 0.70
#define SPEED_SIZE 8192
#define TILE 32 /* the tile the hints talk about: the one the starter and the solution use */

/* Edge shapes: one element, a single row and a single column one past a power of two (a grid
 * with x and y swapped covers neither), a shape under two tiles in each direction, sizes just
 * off the tile, a square that fills the GPU, and a rectangle that is a multiple of nothing. */
static const struct array_shape GPU_SHAPES[] = {
    { 1, 1 }, { 1, 4097 }, { 4097, 1 }, { 33, 17 }, { 1000, 999 }, { 8192, 8192 }, { 3000, 7001 },
};
/* On the CPU backend the two large shapes shrink; the edge cases stay. */
static const struct array_shape CPU_SHAPES[] = {
    { 1, 1 }, { 1, 4097 }, { 4097, 1 }, { 33, 17 }, { 1000, 999 }, { 1024, 1024 }, { 300, 701 },
};
static const struct flow_shapes SHAPES = { GPU_SHAPES, CPU_SHAPES, 7, .plain_titles = 1 };

static int COALESCED, CONFLICT_FREE;

/* ---- hints: where did the wrong elements come from? --------------------------------------- */

/* in(r, c), or NaN outside in (which no output element equals). */
static double in_at(const struct array_problem *p, long r, long c)
{
    if (r < 0 || c < 0 || r >= p->s.rows || c >= p->s.cols)
        return NAN;
    return p->h_in[(size_t)r * p->s.cols + c];
}

/* For the wrong output elements, the share that one known bug explains. Output element
 * (orow, ocol) should be in(ocol, orow); each bug reads something else. */
enum bug { AS_COPY, TILE_NOT_TRANSPOSED, TILES_NOT_MOVED, NBUGS };

static double bug_source(const struct array_problem *p, enum bug b, long orow, long ocol)
{
    long ti = orow / TILE, tj = ocol / TILE, i = orow % TILE, j = ocol % TILE;
    switch (b) {
    case AS_COPY: /* out holds in in its own order: out[k] = in[k] */
        return p->h_in[(size_t)orow * p->s.rows + ocol];
    case TILE_NOT_TRANSPOSED: /* tiles in the right place, each one read back untransposed */
        return in_at(p, tj * TILE + i, ti * TILE + j);
    case TILES_NOT_MOVED: /* each tile transposed, but written where it was in in */
        return in_at(p, ti * TILE + j, tj * TILE + i);
    default:
        return NAN;
    }
}

static const char *const BUG_HINT[NBUGS] = {
    [AS_COPY] = "the output holds the input in its own order: that is a copy. out is cols x "
                "rows: element (c, r) of out, at out[c * rows + r], is in[r * cols + c]",
    [TILE_NOT_TRANSPOSED] = "each 32x32 tile lands in the right place but is not transposed "
                            "inside: when writing out, read the shared tile transposed, "
                            "s_tile[threadIdx.x][threadIdx.y + j], not the way it was stored",
    [TILES_NOT_MOVED] = "each 32x32 tile is transposed inside but written where it sat in in: "
                        "the tile (blockIdx.y, blockIdx.x) of in is the tile (blockIdx.x, "
                        "blockIdx.y) of out, so swap the block offsets for the write",
};

/* A hint for a wrong output: the known bug that explains the wrong elements that were
 * written, else the harness's guess from where the unwritten ones sit (nothing written, a band
 * never written), else the indexing to check. A bug explains an element when the element holds
 * exactly the value that bug would have put there; elements whose source under that bug lies
 * outside in (stale shared memory) say nothing either way. */
static void transpose_hint(const struct array_problem *p, const struct cmp_result *c, char *buf,
                           size_t len)
{
    struct array_shape s = p->s;
    size_t n = p->n;
    size_t written_wrong = 0, applies[NBUGS] = { 0 }, explained[NBUGS] = { 0 };
    for (size_t k = 0; k < n; k++) {
        double want = p->ref[k], got = p->h_out[k];
        if (got == want || isnan(got))
            continue;
        written_wrong++;
        long orow = (long)(k / (size_t)s.rows), ocol = (long)(k % (size_t)s.rows);
        for (int b = 0; b < NBUGS; b++) {
            double src = bug_source(p, (enum bug)b, orow, ocol);
            if (isnan(src))
                continue;
            applies[b]++;
            explained[b] += got == src;
        }
    }
    for (int b = 0; b < NBUGS; b++)
        if (explained[b] > 0 && explained[b] * 10 >= applies[b] * 9 &&
            applies[b] * 4 >= written_wrong) {
            snprintf(buf, len, "%s", BUG_HINT[b]);
            return;
        }
    cmp_hint(c, (size_t)s.cols, (size_t)s.rows, buf, len);
    if (buf[0])
        return;
    snprintf(buf, len, "check the indexing of the write: out is cols x rows, so its row stride "
                       "is rows (not cols), and out(c, r) = in(r, c)%s. And if the kernel "
                       "stages a tile in shared memory: is there a __syncthreads() between "
                       "storing the tile and reading it back?",
             s.rows == s.cols ? "" : " (a square shape may pass where this one fails)");
}

static const struct array_kind TRANSPOSE = {
    ARRAY_FLOW, .dims = ARRAY_2D, .move = ARRAY_TRANSPOSE,
    .guard_hint = "a thread of a partial tile stored outside out: the write needs its own bounds "
                  "check, with the roles swapped (a row of out < cols, a column of out < rows)",
    .hint = transpose_hint,
};
/* what the copy kernel's output is checked as in the bench */
static const struct array_kind COPY = { ARRAY_FLOW, .dims = ARRAY_2D, .move = ARRAY_COPY };

/* ---- concept tests -------------------------------------------------------------------------
 * This chapter's two ideas, graded on the CPU backend's counters (graders/concept.h): transpose()
 * once at 256x256 in the instrumented build, whose model chapters/02-coalesced-transpose/
 * README.md ("How the CPU backend counts") writes down.
 *
 * coalesced: its global loads and its global stores must each need at most
 * concept_max_sectors(width) 32-byte sectors per warp request, 1.125 times the ideal: a warp's
 * 32 consecutive floats are 128 bytes, 4 sectors, so 4.5 for floats (and 18 for a float4
 * kernel, whose coalesced requests touch 16). The padded solution measures 4.00 and 4.00;
 * transpose_naive's column-wise store touches one sector per lane, 32.00. The margin is for a
 * tile whose edge warps are partial or whose rows do not start on a 32-byte boundary (5
 * sectors for some requests); anything that is not coalesced is far above it (8 for a stride
 * of 2 floats, 32 for a column).
 *
 * conflict-free: the tile goes through shared memory (a transpose that makes no shared load or
 * store has not staged a tile), and its shared loads and its shared stores must each need at
 * most concept_max_wavefronts(width) wavefronts per warp request, 1.5 times the ideal: one
 * wavefront for 32 floats in 32 banks. The padded and swizzled rungs measure 1.00 both ways;
 * the unpadded tiled rung reads a column of a [32][32] tile, all 32 lanes in one bank: 32.00
 * per shared load. */

START_TEST(coalesced)
{
    int slot = COALESCED;
    struct concept_row r = concept_profile_or_abort("yours");
    if (r.gld_requests == 0 || r.gst_requests == 0)
        ck_abort_msg("transpose at 256x256 made %llu global load and %llu global store requests: "
                     "it moved nothing", r.gld_requests, r.gst_requests);
    double max_ld = concept_max_sectors(r.gld_width), max_st = concept_max_sectors(r.gst_width);
    int loads_ok = r.gld_spr <= max_ld, stores_ok = r.gst_spr <= max_st;
    if (!loads_ok || !stores_ok) {
        grade_hint(slot, "a warp's 32 lanes should touch 32 consecutive floats (4 sectors) in "
                         "each request: read a tile's rows into shared memory, then write the "
                         "tile's transposed rows, so that threadIdx.x walks along a row both ways");
        ck_abort_msg("not coalesced: %.2f sectors per global load request, %.2f per store "
                     "request (at most %.1f and %.1f for %.0f- and %.0f-byte accesses; the naive "
                     "transpose's stores need 32)", r.gld_spr, r.gst_spr, max_ld, max_st,
                     concept_width(r.gld_width), concept_width(r.gst_width));
    }
    grade_note(slot, "%.2f sectors per load request, %.2f per store request (at most %.1f and "
               "%.1f)", r.gld_spr, r.gst_spr, max_ld, max_st);
}
END_TEST

START_TEST(conflict_free)
{
    int slot = CONFLICT_FREE;
    struct concept_row r = concept_profile_or_abort("yours");
    if (r.shld_requests == 0 || r.shst_requests == 0) {
        grade_hint(slot, "stage each 32x32 tile in a __shared__ array: store it along the rows "
                         "of in, __syncthreads(), read it back transposed (README.md, \"A tile "
                         "in shared memory\")");
        ck_abort_msg("transpose at 256x256 made %llu shared-memory loads and %llu stores: no tile "
                     "went through shared memory", r.shld_requests, r.shst_requests);
    }
    double max_ld = concept_max_wavefronts(r.shld_width);
    double max_st = concept_max_wavefronts(r.shst_width);
    if (!(r.shld_wpr <= max_ld) || !(r.shst_wpr <= max_st)) {
        grade_hint(slot, "a warp that reads (or writes) a column of a [32][32] float tile hits "
                         "one bank 32 times: pad the tile to [32][33], or store element (r, c) "
                         "at column c ^ r (README.md, \"Banks\")");
        ck_abort_msg("bank conflicts: %.2f wavefronts per shared load request, %.2f per shared "
                     "store request (at most %.1f and %.1f; a column of an unpadded tile needs "
                     "32, a padded one 1)", r.shld_wpr, r.shst_wpr, max_ld, max_st);
    }
    grade_note(slot, "%.2f wavefronts per shared load request, %.2f per store request (at most "
               "%.1f and %.1f)", r.shld_wpr, r.shst_wpr, max_ld, max_st);
}
END_TEST

/* ---- speed ------------------------------------------------------------------------------ */

/* What a transpose must move, 2 * rows * cols * 4 bytes, over the time: GB/s. */
static double gbs(struct array_shape s, double ms)
{
    return array_bytes(&s) / (ms * 1e-3) / 1e9;
}

static void verdict(int slot, const void *shape, const struct flow_times *t)
{
    struct array_shape s = *(const struct array_shape *)shape;
    double tc = t->ceiling.median_ms, tn = t->base.median_ms, ty = t->yours.median_ms;
    double share = tc / ty; /* your GB/s over the copy's */
    grade_note(slot, "yours %.0f GB/s = %.0f%% of the copy kernel's %.0f GB/s (needs %.0f%%); "
                     "the naive transpose %.0f GB/s, so yours is %.1fx it",
               gbs(s, ty), 100.0 * share, gbs(s, tc), 100.0 * NEEDS_OF_COPY, gbs(s, tn), tn / ty);
    grade_summary("%.0f%% of the copy kernel (needs %.0f%%)", 100.0 * share,
                  100.0 * NEEDS_OF_COPY);
    if (ty > 0.5 * tn)
        grade_hint(slot, "under 2x the naive transpose: one side of yours still walks a column "
                         "of global memory. Stage a 32x32 tile in shared memory so that a warp "
                         "reads a row of in and writes a row of out (128 bytes each)");
    else
        grade_hint(slot, "both global sides look coalesced; now the shared memory: a warp that "
                         "reads a column of a [32][32] float tile hits one bank 32 times. Pad "
                         "the tile to [32][33], or swizzle the column index (c ^ r)");
    ck_assert_msg(share >= NEEDS_OF_COPY,
                  "%dx%d: yours %.3f ms (%.0f GB/s), the copy kernel %.3f ms (%.0f GB/s): "
                  "%.0f%%, needs %.0f%%",
                  s.rows, s.cols, ty, gbs(s, ty), tc, gbs(s, tc), 100.0 * share,
                  100.0 * NEEDS_OF_COPY);
}

/* the copy first, then the naive transpose and yours, 3 warm-up runs and 20 timed each */
static const struct array_shape SPEED_SHAPE = { SPEED_SIZE, SPEED_SIZE };
static const struct flow_speed SPEED = {
    "bandwidth", &TRANSPOSE.kind, &SPEED_SHAPE, (flow_fn)transpose, (flow_fn)transpose_naive,
    (flow_fn)copy_same_bytes, "transpose", 3, 20, 120, verdict,
    .order = { FLOW_CEILING, FLOW_BASE, FLOW_YOURS },
};

/* ---- bench ------------------------------------------------------------------------------ */

static const struct array_shape BENCH_SHAPES[] = {
    { 1024, 1024 }, { 2048, 2048 }, { 4096, 4096 }, { 8192, 8192 }, { 16384, 16384 },
};

/* every rung, then the ceiling, on the same input in one run */
static int bench(const char *path)
{
    struct flow_rung rungs[64];
    int n = 0;
    for (; n < TRANSPOSE_NUM_RUNGS && n < 63; n++)
        rungs[n] = (struct flow_rung){ .name = TRANSPOSE_RUNGS[n].name,
                                       .fn = (flow_fn)TRANSPOSE_RUNGS[n].fn };
    rungs[n++] = (struct flow_rung){ "copy", (flow_fn)copy_same_bytes, .arg = &COPY };
    return array_bench(CHAPTER, &TRANSPOSE, BENCH_SHAPES, 5, rungs, n, 3, 20, path);
}

static void add_tests(Suite *s)
{
    flow_add_correct(s, &TRANSPOSE.kind, &SHAPES, (flow_fn)transpose, "transpose");
    /* concept tests (see "concept tests" above): CPU backend only; on a GPU, Nsight Compute
     * counts the same things (make profile CH=02 BACKEND=cuda) and the speed test grades */
    if (concept_here()) {
        static const char *title[] = { "coalesced: sectors per global load and store request" };
        COALESCED = grader_add(s, "coalesced", coalesced, title, 1, 60);
        static const char *title2[] = { "conflict-free: wavefronts per shared load and store "
                                        "request" };
        CONFLICT_FREE = grader_add(s, "conflict-free", conflict_free, title2, 1, 60);
    } else {
        grader_skip("coalesced", "counted on the CPU backend only (make grade BACKEND=emu); on "
                                 "a GPU, make profile CH=02 BACKEND=cuda shows Nsight Compute's "
                                 "count");
        grader_skip("conflict-free", "counted on the CPU backend only (make grade BACKEND=emu); "
                                     "on a GPU, make profile CH=02 BACKEND=cuda shows Nsight "
                                     "Compute's count");
    }
    flow_add_speed(s, &SPEED);
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
