/* harness.h: the host-side pieces every grader and bench shares, in plain C11 (no CUDA here,
 * so tests/harness.c can test all of it on any machine).
 *
 *   seed      one seed a run, printed, reproducible with SEED=
 *   rng       xoshiro256** seeded by splitmix64: fast, good enough for test data
 *   refs      double-precision references (matmul)
 *   compare   got (fp32) against a double-precision reference, NaN-aware, with the first
 *             mismatches and where the wrong elements sit (for hints)
 *   stats     median of repeated timings; a speed gate capped by a ceiling measured beside
 *   clocks    the SM clock and power sampled while a timed loop ran, summarised
 *   results   tab-separated rows: chapter, kernel, shape, ms, GB/s, GFLOP/s, device, then a
 *             chapter's own columns if any, then the SM clock and the power while the row's
 *             timed loop ran (sm_mhz, watts)
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cdiv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* malloc that exits with a message instead of returning NULL: graders have no use for a
 * half-built problem. */
void *xmalloc(size_t bytes);

/* ---- seed and random numbers ------------------------------------------------------------ */

/* The run's seed: SEED from the environment when set (decimal or 0x hex; anything else is an
 * error that exits with status 2), otherwise fresh from the system's entropy. Same value on
 * every call within one process. */
uint64_t harness_seed(void);

struct rng { uint64_t s[4]; };

void rng_init(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [lo, hi). */
double rng_uniform(struct rng *r, double lo, double hi);
/* Fill with uniform values in [lo, hi). */
void rng_fill_f32(struct rng *r, float *dst, size_t n, float lo, float hi);

/* ---- comparison against a double-precision reference ------------------------------------ */

#define CMP_MAX_REPORT 3

struct mismatch {
    size_t index;
    double got, want, tol;
};

struct cmp_result {
    size_t checked;          /* elements compared */
    size_t bad;              /* elements outside tolerance, NaN and Inf included */
    size_t unwritten;        /* of those, still NaN: the poison was never overwritten */
    size_t nonfinite;        /* of those, NaN or Inf (unwritten included) */
    struct mismatch first[CMP_MAX_REPORT];
    int nreport;
    /* Where the bad elements are, for a matrix of `cols` columns (cols == 0: a vector). */
    size_t min_bad_row, max_bad_row, min_bad_col, max_bad_col;
    double worst_ratio;      /* max |got - want| / tol over the finite elements */
};

/* Compare n floats against a double reference. An element passes when it is finite and
 *   |got - want| <= atol + rtol * s,  where s = scale[i] if scale != NULL, else |want|.
 * For a dot product of length k, pass scale[i] = sum |a||b| and rtol = fp32_dot_rtol(k). */
struct cmp_result compare_f32(const float *got, const double *want, const double *scale,
                              size_t n, size_t cols, double rtol, double atol);

/* "12 of 1000 wrong, first at (0,17): got nan, want 0.25; (0,18): ..." into buf. */
void cmp_describe(const struct cmp_result *c, size_t cols, char *buf, size_t len);

/* A guess at the cause from where the bad elements sit in a rows x cols output, or "" when
 * nothing stands out: nothing written, a band of unwritten rows or columns at the edge. */
void cmp_hint(const struct cmp_result *c, size_t rows, size_t cols, char *buf, size_t len);

/* ---- references ------------------------------------------------------------------------ */

/* Row-major C = A B in double (A m x k, B k x n), and scale = |A| |B|, the bound that
 * compare_f32 measures a dot product's rounding against. Either output may be NULL. */
void ref_matmul(const float *a, const float *b, double *c, double *scale, int m, int k, int n);

/* The tolerance, relative to scale = sum |a||b|, of a fp32 dot product of length k computed
 * in any order, fused or not: (8 sqrt(k) + 2) * 2^-24. The worst-case bound k * 2^-24 is so
 * loose at large k that a dropped term passes; rounding errors add up like a random walk, and
 * the probabilistic bound of Higham and Mary (SIAM J. Sci. Comput. 41(5), 2019) with
 * lambda = 8 fails a correct element with probability below 1e-13. The 2 covers the final
 * rounding to fp32. */
double fp32_dot_rtol(int k);

/* ---- statistics ------------------------------------------------------------------------- */

/* Median of n values (n >= 1); v is reordered. */
double median(double *v, int n);

/* The median round of n functions timed in turns: ms[i * rounds + r] is function i's time in
 * round r (n >= 2, rounds >= 1). Each round is ranked by the others' times over function 0's
 * (for n = 2 the pair's ratio; for more, the geometric mean of the ratios), and the index of
 * the round ranked in the middle is returned (the upper middle for an even count), so that a
 * ratio is read from two timings of one round, never from each one's median of its own. */
int median_round(const double *ms, int n, int rounds);

/* The floor every capped gate asks: the base itself (1.0x) and a kernel little faster than it
 * fail, however little the ceiling gains. */
#define SPEED_GATE_FLOOR 1.25
/* A speed gate set on one GPU that a GPU with slower memory cannot make impossible. needs is
 * the fixed ratio over the base; where share x ceiling_gain (the ceiling's own ratio over the
 * base, measured in the same run: a copy kernel, or the library) is lower, that is the gate, so
 * that a kernel at share of the ceiling's speed passes; and never below SPEED_GATE_FLOOR (a
 * floor above needs leaves needs). share <= 0: needs, uncapped.
 * *capped (may be NULL) is set to whether the ceiling decided it. */
double speed_gate(double needs, double share, double ceiling_gain, int *capped);
/* The same for a step that asks a few percent near the ceiling, where SPEED_GATE_FLOOR would lie
 * above needs: the gate is at most share of the way from the base to the ceiling, 1 + share x
 * (ceiling_gain - 1), where that is lower than needs (a base already at the ceiling's speed
 * leaves a gate of 1.0x, the base's own). share <= 0: needs. *capped as above. */
double speed_gate_gap(double needs, double share, double ceiling_gain, int *capped);

/* ---- clocks ----------------------------------------------------------------------------- */

/* What the SM clock and the board's power were while a timed loop ran: gpu.h's gpu_time samples
 * them on a GPU (gpu_clocks_start), and every results row carries the summary. */
struct clocks {
    int samples;                            /* readings of the SM clock; 0: not sampled */
    double sm_mhz, sm_mhz_min, sm_mhz_max;  /* their median, lowest and highest, MHz */
    int power_samples;                      /* readings of the power; 0: not read */
    double watts;                           /* their mean, W */
};

/* The summary of n readings of the SM clock (MHz; reordered) and nw of the power (W). Either
 * count may be 0: that half then says "not sampled". */
struct clocks clocks_summary(double *sm_mhz, int n, const double *watts, int nw);

/* ---- results ---------------------------------------------------------------------------- */

/* The last two columns of every results row: the median SM clock (MHz) and the mean power (W)
 * sampled while the row's timed loop ran, or NA where nothing was sampled (the CPU backend, a
 * machine without NVML, a row computed rather than timed). A chapter that writes rows of its
 * own ends its header with RESULTS_CLOCK_COLUMNS and each row with clocks_columns. */
#define RESULTS_CLOCK_COLUMNS "sm_mhz\twatts"

/* "1980\t402" for c, or "NA\tNA" (c NULL or not sampled); each half NA alone when only it is
 * missing. */
void clocks_columns(const struct clocks *c, char *buf, size_t len);

struct results {
    FILE *f;
    char device[128];
    int extra;      /* the chapter's own columns between device and sm_mhz (results_open_extra) */
};

/* The comment lines that open every measurement file: "# device: ...", "# driver: ..." and
 * "# date: YYYY-MM-DD" (today, UTC). */
void results_provenance(FILE *f, const char *device, const char *driver);
/* Open a results file and write its header: comment lines with device, driver and date, then
 * the column names (chapter kernel shape ms gbs gflops device sm_mhz watts). Creates the parent
 * directory. Returns 0, or -1 with errno set. */
int results_open(struct results *r, const char *path, const char *device, const char *driver);
/* The same with a chapter's own columns after device, named by `extra` ("lo_log2\thi_log2",
 * NULL or "" for none); results_row writes NA in them, the chapter writes its own rows. */
int results_open_extra(struct results *r, const char *path, const char *device,
                       const char *driver, const char *extra);
/* A row, stamped with the clocks that results_set_clocks last set (gpu_time sets them at the end
 * of every timed loop). */
void results_row(struct results *r, const char *chapter, const char *kernel, const char *shape,
                 double ms, double gbs, double gflops);
int results_close(struct results *r);
/* The clocks the rows that follow are stamped with (copied); NULL: not sampled. */
void results_set_clocks(const struct clocks *c);

#ifdef __cplusplus
}
#endif

#endif
