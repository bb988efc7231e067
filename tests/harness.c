/* harness.c: Check tests of the harness parts that run without a GPU: seed, random numbers,
 * comparison and its hints, the matmul reference and its tolerance, statistics, results, and
 * the pure parts of reading machine code (sass.h). */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "launches.h"
#include "sass.h"

/* ---- seed and rng ----------------------------------------------------------------------- */

START_TEST(seed_from_env_is_used)
{
    setenv("SEED", "12345", 1);
    ck_assert_uint_eq(harness_seed(), 12345);
    setenv("SEED", "999", 1);
    ck_assert_uint_eq(harness_seed(), 12345); /* one seed per process */
}
END_TEST

START_TEST(seed_hex_is_accepted)
{
    setenv("SEED", "0x1f", 1);
    ck_assert_uint_eq(harness_seed(), 31);
}
END_TEST

START_TEST(seed_decimal_with_zeros_is_decimal)
{
    setenv("SEED", "010", 1); /* not octal */
    ck_assert_uint_eq(harness_seed(), 10);
}
END_TEST

START_TEST(seed_largest_is_accepted)
{
    setenv("SEED", "18446744073709551615", 1);
    ck_assert_uint_eq(harness_seed(), UINT64_MAX);
}
END_TEST

/* what scripts/vars.sh refuses too (tests/vars.sh holds the same list) */
static const char *const BAD_SEEDS[] = {
    "12abc", "-1", "+1", " 1", "1 ", "0x", "0xg", "1e3", "18446744073709551616",
    "0x10000000000000000",
};

START_TEST(seed_garbage_exits_2)
{
    setenv("SEED", BAD_SEEDS[_i], 1);
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr)); /* the message is expected */
    harness_seed();
}
END_TEST

/* Without SEED every run draws a fresh seed: two processes agree with probability 2^-32. */
static uint64_t seed_of_a_child(void)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        uint64_t v = harness_seed();
        ssize_t w = write(fd[1], &v, sizeof v);
        _exit(w == (ssize_t)sizeof v ? 0 : 1);
    }
    uint64_t v = 0;
    ck_assert_int_eq(read(fd[0], &v, sizeof v), (ssize_t)sizeof v);
    close(fd[0]);
    close(fd[1]);
    return v;
}

START_TEST(seed_without_env_differs_between_processes)
{
    unsetenv("SEED");
    uint64_t a = seed_of_a_child(), b = seed_of_a_child();
    ck_assert_msg(a != b, "two runs drew the same seed %llu", (unsigned long long)a);
}
END_TEST

START_TEST(rng_is_reproducible)
{
    struct rng a, b;
    rng_init(&a, 42);
    rng_init(&b, 42);
    for (int i = 0; i < 1000; i++)
        ck_assert_uint_eq(rng_next(&a), rng_next(&b));
    rng_init(&b, 43);
    int same = 0;
    rng_init(&a, 42);
    for (int i = 0; i < 1000; i++)
        same += rng_next(&a) == rng_next(&b);
    ck_assert_int_lt(same, 2);
}
END_TEST

START_TEST(rng_fill_stays_in_range_and_is_not_constant)
{
    struct rng r;
    rng_init(&r, 7);
    enum { N = 100000 };
    static float v[N];
    rng_fill_f32(&r, v, N, -1.0f, 1.0f);
    double sum = 0, lo = 1, hi = -1;
    int zeros = 0;
    for (int i = 0; i < N; i++) {
        ck_assert(v[i] >= -1.0f && v[i] < 1.0f);
        sum += v[i];
        lo = fmin(lo, v[i]);
        hi = fmax(hi, v[i]);
        zeros += v[i] == 0.0f;
    }
    ck_assert_double_lt(fabs(sum / N), 0.02);  /* mean of U(-1,1) is 0, sd/sqrt(N) = 0.0018 */
    ck_assert_double_lt(lo, -0.99);
    ck_assert_double_gt(hi, 0.99);
    ck_assert_int_lt(zeros, 3);
}
END_TEST

/* ---- compare ---------------------------------------------------------------------------- */

START_TEST(compare_passes_within_tolerance)
{
    float got[3] = { 1.0f, 2.0f + 1e-6f, -3.0f };
    double want[3] = { 1.0, 2.0, -3.0 };
    struct cmp_result c = compare_f32(got, want, NULL, 3, 0, 1e-5, 0.0);
    ck_assert_uint_eq(c.bad, 0);
    ck_assert_uint_eq(c.checked, 3);
}
END_TEST

START_TEST(compare_fails_outside_tolerance_and_reports_index)
{
    float got[4] = { 1.0f, 2.0f, 3.1f, 4.0f };
    double want[4] = { 1.0, 2.0, 3.0, 4.0 };
    struct cmp_result c = compare_f32(got, want, NULL, 4, 2, 1e-5, 0.0);
    ck_assert_uint_eq(c.bad, 1);
    ck_assert_int_eq(c.nreport, 1);
    ck_assert_uint_eq(c.first[0].index, 2);
    ck_assert_uint_eq(c.min_bad_row, 1);
    ck_assert_uint_eq(c.min_bad_col, 0);
    char buf[256];
    cmp_describe(&c, 2, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "1 of 4 wrong") && strstr(buf, "(1,0)") && strstr(buf, "3.1"),
                  "describe said: %s", buf);
}
END_TEST

START_TEST(compare_never_passes_nan_or_inf)
{
    float got[3] = { NAN, INFINITY, -INFINITY };
    double want[3] = { 0.0, 1e300, -1e300 };
    /* even with a tolerance that would accept anything finite */
    struct cmp_result c = compare_f32(got, want, NULL, 3, 0, 1e300, 1e300);
    ck_assert_uint_eq(c.bad, 3);
    ck_assert_uint_eq(c.nonfinite, 3);
    ck_assert_uint_eq(c.unwritten, 1);
}
END_TEST

START_TEST(compare_uses_scale_when_given)
{
    /* want is tiny from cancellation; |a||b| is large: the error is fine relative to scale */
    float got[1] = { 1e-6f };
    double want[1] = { 0.0 }, scale[1] = { 100.0 };
    ck_assert_uint_eq(compare_f32(got, want, scale, 1, 0, 1e-7, 0.0).bad, 0);
    ck_assert_uint_eq(compare_f32(got, want, NULL, 1, 0, 1e-7, 0.0).bad, 1);
}
END_TEST

START_TEST(compare_reports_at_most_three)
{
    float got[10];
    double want[10];
    for (int i = 0; i < 10; i++) {
        got[i] = (float)i + 1.0f;
        want[i] = i;
    }
    struct cmp_result c = compare_f32(got, want, NULL, 10, 5, 1e-5, 0.0);
    ck_assert_uint_eq(c.bad, 10);
    ck_assert_int_eq(c.nreport, CMP_MAX_REPORT);
    ck_assert_uint_eq(c.first[2].index, 2);
}
END_TEST

/* ---- hints ------------------------------------------------------------------------------ */

static struct cmp_result poisoned_where(int rows, int cols, int from_row, int from_col)
{
    static float got[64 * 64];
    static double want[64 * 64];
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            want[r * cols + c] = r + c;
            got[r * cols + c] = r >= from_row || c >= from_col ? NAN : (float)(r + c);
        }
    return compare_f32(got, want, NULL, (size_t)rows * cols, (size_t)cols, 1e-6, 0.0);
}

START_TEST(hint_nothing_written)
{
    char h[400];
    struct cmp_result c = poisoned_where(8, 8, 0, 0);
    cmp_hint(&c, 8, 8, h, sizeof h);
    ck_assert_msg(strstr(h, "wrote nothing"), "hint: %s", h);
}
END_TEST

START_TEST(hint_missing_columns)
{
    char h[400];
    struct cmp_result c = poisoned_where(8, 40, 8, 32);
    cmp_hint(&c, 8, 40, h, sizeof h);
    ck_assert_msg(strstr(h, "columns from 32") && strstr(h, "cdiv"), "hint: %s", h);
}
END_TEST

START_TEST(hint_missing_rows)
{
    char h[400];
    struct cmp_result c = poisoned_where(40, 8, 32, 8);
    cmp_hint(&c, 40, 8, h, sizeof h);
    ck_assert_msg(strstr(h, "rows from 32"), "hint: %s", h);
}
END_TEST

START_TEST(hint_silent_on_plain_wrong_values)
{
    char h[400];
    float got[4] = { 1, 2, 3, 5 };
    double want[4] = { 1, 2, 3, 4 };
    struct cmp_result c = compare_f32(got, want, NULL, 4, 2, 1e-6, 0.0);
    cmp_hint(&c, 2, 2, h, sizeof h);
    ck_assert_str_eq(h, "");
}
END_TEST

/* ---- matmul reference and its tolerance ------------------------------------------------- */

START_TEST(ref_matmul_matches_definition)
{
    enum { M = 5, K = 7, N = 3 };
    float a[M * K], b[K * N];
    double c[M * N], s[M * N];
    struct rng r;
    rng_init(&r, 1);
    rng_fill_f32(&r, a, M * K, -1, 1);
    rng_fill_f32(&r, b, K * N, -1, 1);
    ref_matmul(a, b, c, s, M, K, N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0, sc = 0;
            for (int t = 0; t < K; t++) {
                want += (double)a[i * K + t] * b[t * N + j];
                sc += fabs((double)a[i * K + t] * b[t * N + j]);
            }
            ck_assert_double_eq_tol(c[i * N + j], want, 1e-12);
            ck_assert_double_eq_tol(s[i * N + j], sc, 1e-12);
        }
}
END_TEST

/* The tolerance must accept a plain fp32 loop of any length (it can never fail a correct
 * kernel) and reject one that drops a single term (the bug it exists to catch). */
START_TEST(fp32_tolerance_accepts_fp32_and_rejects_a_dropped_term)
{
    static const int KS[] = { 1, 9, 33, 517, 1001, 4096 };
    struct rng r;
    rng_init(&r, 2024);
    for (size_t t = 0; t < sizeof KS / sizeof KS[0]; t++) {
        int k = KS[t];
        enum { ROWS = 64 };
        float *a = malloc(sizeof(float) * ROWS * k), *b = malloc(sizeof(float) * k);
        double ref[ROWS], scale[ROWS];
        float fwd[ROWS], dropped[ROWS];
        rng_fill_f32(&r, a, (size_t)ROWS * k, -1, 1);
        rng_fill_f32(&r, b, (size_t)k, -1, 1);
        ref_matmul(a, b, ref, scale, ROWS, k, 1);
        for (int row = 0; row < ROWS; row++) {
            float acc = 0, acc2 = 0;
            for (int i = 0; i < k; i++) {
                acc = fmaf(a[row * k + i], b[i], acc);
                if (i != k / 2)
                    acc2 += a[row * k + i] * b[i];
            }
            fwd[row] = acc;
            dropped[row] = acc2;
        }
        struct cmp_result ok = compare_f32(fwd, ref, scale, ROWS, 1, fp32_dot_rtol(k), 0);
        ck_assert_msg(ok.bad == 0, "k=%d: a correct fp32 sum failed (worst %.2f of tol)", k,
                      ok.worst_ratio);
        struct cmp_result bad = compare_f32(dropped, ref, scale, ROWS, 1, fp32_dot_rtol(k), 0);
        ck_assert_msg(bad.bad > ROWS / 2, "k=%d: a dropped term passed in %zu of %d rows", k,
                      ROWS - bad.bad, ROWS);
        free(a);
        free(b);
    }
}
END_TEST

/* ---- statistics and results ------------------------------------------------------------- */

START_TEST(median_odd_and_even)
{
    double v[5] = { 5, 1, 4, 2, 3 };
    ck_assert_double_eq(median(v, 5), 3);
    double w[4] = { 10, 1, 3, 2 };
    ck_assert_double_eq(median(w, 4), 2.5);
    double one[1] = { 7 };
    ck_assert_double_eq(median(one, 1), 7);
}
END_TEST

/* The ratio of a pair timed in turns comes from one round. The times are the H200's, library
 * then step, at 8192^3 in five rounds while the clock fell under the power limit: the median
 * ratio is round 5's (0.8554 / 0.9817 = 0.871), where each kernel's own median time (0.8190
 * from round 3, 0.9817 from round 5) would give 0.834, a ratio no round measured. */
START_TEST(median_round_takes_one_round_of_the_median_ratio)
{
    const double pair[2 * 5] = { 0.7624, 0.7849, 0.8190, 0.8753, 0.8554,
                                 0.8862, 0.8868, 1.0046, 1.0029, 0.9817 };
    ck_assert_int_eq(median_round(pair, 2, 5), 4);
    /* the same rounds in another order: the same round is chosen */
    const double shuffled[2 * 5] = { 0.8554, 0.8190, 0.7624, 0.8753, 0.7849,
                                     0.9817, 1.0046, 0.8862, 1.0029, 0.8868 };
    ck_assert_int_eq(median_round(shuffled, 2, 5), 0);
    /* three functions: the geometric mean of the two ratios ranks a round; round 1 has ratios
     * 2 and 2, round 0 has 1 and 1, round 2 has 8 and 8 */
    const double three[3 * 3] = { 1, 1, 1, 1, 2, 8, 1, 2, 8 };
    ck_assert_int_eq(median_round(three, 3, 3), 1);
    /* one round: that round */
    const double once[2] = { 1.0, 3.0 };
    ck_assert_int_eq(median_round(once, 2, 1), 0);
}
END_TEST

/* the gate of chapter 07's step 2 on the H200 (CUB 2.44x its base: the fixed 1.8x stands) and
 * on an H100 (CUB 1.72x: 90% of it), a ceiling that gains little (the floor), no share, and a
 * floor above the fixed ratio (the fixed ratio) */
START_TEST(speed_gate_caps_by_the_ceiling_above_the_floor)
{
    int capped = -1;
    ck_assert_double_eq_tol(speed_gate(1.8, 0.9, 2.44, &capped), 1.8, 1e-12);
    ck_assert_int_eq(capped, 0);
    ck_assert_double_eq_tol(speed_gate(1.8, 0.9, 1.72, &capped), 0.9 * 1.72, 1e-12);
    ck_assert_int_eq(capped, 1);
    ck_assert_double_eq_tol(speed_gate(1.8, 0.9, 1.1, &capped), SPEED_GATE_FLOOR, 1e-12);
    ck_assert_int_eq(capped, 1);
    ck_assert_double_eq_tol(speed_gate(1.8, 0, 1.1, &capped), 1.8, 1e-12);
    ck_assert_int_eq(capped, 0);
    ck_assert_double_eq_tol(speed_gate(1.04, 0.9, 1.0, NULL), 1.04, 1e-12);
    /* the base itself (1.0x) fails every capped gate: the floor is above it */
    ck_assert(1.0 < speed_gate(1.8, 0.9, 0.5, NULL));
}
END_TEST

/* chapter 02's step 5 on the H200 (the copy 1.10x padded_8: 40% of the way is 1.04x, the
 * fixed 1.04x stands) and on an H100 (the copy 1.066x: 1.026x), a base already at the copy's
 * speed (1.0x: nothing left to gain), and no share */
START_TEST(speed_gate_gap_caps_by_the_way_to_the_ceiling)
{
    int capped = -1;
    ck_assert_double_eq_tol(speed_gate_gap(1.04, 0.4, 1.103, &capped), 1.04, 1e-12);
    ck_assert_int_eq(capped, 0);
    ck_assert_double_eq_tol(speed_gate_gap(1.04, 0.4, 1.066, &capped), 1.0264, 1e-12);
    ck_assert_int_eq(capped, 1);
    ck_assert_double_eq_tol(speed_gate_gap(1.04, 0.4, 1.0, &capped), 1.0, 1e-12);
    ck_assert_int_eq(capped, 1);
    ck_assert_double_eq_tol(speed_gate_gap(1.04, 0, 1.066, &capped), 1.04, 1e-12);
    ck_assert_int_eq(capped, 0);
    /* the base itself fails wherever the copy is faster than it */
    ck_assert(1.0 < speed_gate_gap(1.04, 0.4, 1.01, NULL));
}
END_TEST

/* two kernels, one launched twice: every grid times its block, times its launches */
START_TEST(launches_threads_counts_every_launch)
{
    struct launch_log log = { 0 };
    ck_assert_double_eq(launches_threads(&log), 0);
    log.n = 2;
    log.r[0] = (struct launch_rec){ .grid = { 9, 8, 1 }, .block = { 32, 4, 1 }, .count = 1 };
    log.r[1] = (struct launch_rec){ .grid = { 3, 1, 2 }, .block = { 256, 1, 1 }, .count = 2 };
    ck_assert_double_eq_tol(launches_threads(&log), 9 * 8 * 128 + 2 * 6 * 256, 1e-9);
}
END_TEST

START_TEST(cdiv_rounds_up)
{
    ck_assert_int_eq(cdiv(1, 32), 1);
    ck_assert_int_eq(cdiv(32, 32), 1);
    ck_assert_int_eq(cdiv(33, 32), 2);
    ck_assert_int_eq(cdiv(1000, 32), 32);
}
END_TEST

START_TEST(results_writes_header_and_rows)
{
    char dir[] = "/tmp/harness-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/sub/dir/r.tsv", dir);
    struct results r;
    ck_assert_int_eq(results_open(&r, path, "Test GPU", "driver 1.0"), 0);
    results_row(&r, "01-x", "naive", "4x4x4", 1.5, 2.5, 3.5);
    ck_assert_int_eq(results_close(&r), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "# device: Test GPU\n");
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "# driver: driver 1.0\n");
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert(strncmp(line, "# date: 20", 10) == 0);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "chapter\tkernel\tshape\tms\tgbs\tgflops\tdevice\tsm_mhz\twatts\n");
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "01-x\tnaive\t4x4x4\t1.5\t2.5\t3.5\tTest GPU\tNA\tNA\n");
    ck_assert_ptr_null(fgets(line, sizeof line, f));
    fclose(f);
}
END_TEST

/* readings of the SM clock and the power as a timed loop's sampler takes them */
START_TEST(clocks_summary_takes_median_extremes_and_mean)
{
    double mhz[6] = { 1980, 1410, 1755, 1980, 1500, 1980 };
    double w[4] = { 400, 700, 690, 10 };
    struct clocks c = clocks_summary(mhz, 6, w, 4);
    ck_assert_int_eq(c.samples, 6);
    ck_assert_double_eq(c.sm_mhz, 1867.5); /* (1755 + 1980) / 2 */
    ck_assert_double_eq(c.sm_mhz_min, 1410);
    ck_assert_double_eq(c.sm_mhz_max, 1980);
    ck_assert_int_eq(c.power_samples, 4);
    ck_assert_double_eq(c.watts, 450);
    /* a loop so short that the sampler read only at its start and its end */
    double two[2] = { 1980, 1965 }, pw[2] = { 300.5, 301.5 };
    c = clocks_summary(two, 2, pw, 2);
    ck_assert_double_eq(c.sm_mhz, 1972.5);
    ck_assert_double_eq(c.sm_mhz_min, 1965);
    ck_assert_double_eq(c.sm_mhz_max, 1980);
    ck_assert_double_eq(c.watts, 301);
    /* the clock read but not the power (a GPU without a power sensor) */
    double one[1] = { 1410 };
    c = clocks_summary(one, 1, NULL, 0);
    ck_assert_int_eq(c.samples, 1);
    ck_assert_double_eq(c.sm_mhz, 1410);
    ck_assert_int_eq(c.power_samples, 0);
    c = clocks_summary(NULL, 0, NULL, 0);
    ck_assert_int_eq(c.samples + c.power_samples, 0);
}
END_TEST

START_TEST(clocks_columns_say_na_where_not_sampled)
{
    char buf[64];
    double mhz[3] = { 1980, 1410, 1500 }, w[2] = { 402.4, 402.2 };
    struct clocks c = clocks_summary(mhz, 3, w, 2);
    clocks_columns(&c, buf, sizeof buf);
    ck_assert_str_eq(buf, "1500\t402");
    c = clocks_summary(mhz, 3, NULL, 0);
    clocks_columns(&c, buf, sizeof buf);
    ck_assert_str_eq(buf, "1500\tNA");
    clocks_columns(NULL, buf, sizeof buf);
    ck_assert_str_eq(buf, "NA\tNA");
    struct clocks none;
    memset(&none, 0, sizeof none); /* what the CPU backend's gpu_time returns */
    clocks_columns(&none, buf, sizeof buf);
    ck_assert_str_eq(buf, "NA\tNA");
}
END_TEST

/* each row carries the clocks last set (gpu_time sets them), a chapter's own columns NA */
START_TEST(results_rows_carry_the_last_clocks)
{
    char dir[] = "/tmp/harness-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/r.tsv", dir);
    struct results r;
    ck_assert_int_eq(results_open_extra(&r, path, "Test GPU", "driver 1.0", "lo\thi"), 0);
    double mhz[2] = { 1410, 1440 }, w[1] = { 699.6 };
    struct clocks c = clocks_summary(mhz, 2, w, 1);
    results_set_clocks(&c);
    results_row(&r, "11-x", "gemm", "8x8x8", 1, 2, 3);
    results_row(&r, "11-x", "gemm2", "8x8x8", 1, 2, 3); /* no loop between: the same clocks */
    results_set_clocks(NULL);
    results_row(&r, "11-x", "host", "8", 1, 2, 3);
    ck_assert_int_eq(results_close(&r), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    do
        ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    while (line[0] == '#');
    ck_assert_str_eq(line, "chapter\tkernel\tshape\tms\tgbs\tgflops\tdevice\tlo\thi\tsm_mhz"
                           "\twatts\n");
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "11-x\tgemm\t8x8x8\t1\t2\t3\tTest GPU\tNA\tNA\t1425\t700\n");
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "11-x\tgemm2\t8x8x8\t1\t2\t3\tTest GPU\tNA\tNA\t1425\t700\n");
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "11-x\thost\t8\t1\t2\t3\tTest GPU\tNA\tNA\tNA\tNA\n");
    ck_assert_ptr_null(fgets(line, sizeof line, f));
    fclose(f);
}
END_TEST

/* ---- machine code (sass.h) ------------------------------------------------------------ */

START_TEST(shell_quote_survives_quotes_and_spaces)
{
    char out[64];
    ck_assert_int_eq(sass_shell_quote("/a b/grade", out, sizeof out), 0);
    ck_assert_str_eq(out, "'/a b/grade'");
    ck_assert_int_eq(sass_shell_quote("it's", out, sizeof out), 0);
    ck_assert_str_eq(out, "'it'\\''s'");
    ck_assert_int_eq(sass_shell_quote("", out, sizeof out), 0);
    ck_assert_str_eq(out, "''");
    ck_assert_int_eq(sass_shell_quote("0123456789", out, 8), -1); /* never cut short */
}
END_TEST

START_TEST(arch_line_matches_exactly)
{
    ck_assert_int_eq(sass_arch_line("\tFunction : gemm_kernel\n", "sm_90"), -1);
    ck_assert_int_eq(sass_arch_line("arch = sm_90\n", "sm_90"), 1);
    ck_assert_int_eq(sass_arch_line("arch = sm_90a\n", "sm_90"), 0);
    ck_assert_int_eq(sass_arch_line("arch = sm_900\n", "sm_90"), 0);
    ck_assert_int_eq(sass_arch_line("arch = sm_90a\n", "sm_90a"), 1);
    ck_assert_int_eq(sass_arch_line("arch = sm_80\n", "sm_90"), 0);
}
END_TEST

/* a dump as cuobjdump -sass prints it: two cubins, the same kernel in both, LDS in one */
static const char DUMP[] =
    "\n\tcode for sm_90\n\t\tFunction : _Z4tilePKfPfi\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
    "        /*0010*/                   LDS.128 R4, [R2] ;\n"
    "        /*0020*/                   FFMA R8, R4, R5, R8 ;\n"
    "\t\tFunction : _Z4copyPKfPfi\n"
    "        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;\n"
    "\tarch = sm_90\n\t\tFunction : _Z4tilePKfPfi\n"
    "        /*0000*/                   FFMA R8, R4, R5, R8 ;\n"
    "\tarch = sm_80\n\t\tFunction : _Z4tilePKfPfi\n"
    "        /*0010*/                   LDS.128 R4, [R2] ;";

START_TEST(scan_counts_functions_and_opcodes)
{
    int nfn, nwith;
    /* the first cubin names no arch line before its functions: it is not counted as sm_90 */
    sass_scan(DUMP, "_Z4tilePKfPfi", "LDS", "sm_90", &nfn, &nwith);
    ck_assert_int_eq(nfn, 1);
    ck_assert_int_eq(nwith, 0);
    sass_scan(DUMP, "_Z4tilePKfPfi", "FFMA", "sm_90", &nfn, &nwith);
    ck_assert_int_eq(nfn, 1);
    ck_assert_int_eq(nwith, 1);
    sass_scan(DUMP, "_Z4tilePKfPfi", "LDS", "sm_80", &nfn, &nwith); /* the last line, unended */
    ck_assert_int_eq(nfn, 1);
    ck_assert_int_eq(nwith, 1);
    sass_scan(DUMP, "_Z4copyPKfPfi", "LDG", "sm_90", &nfn, &nwith);
    ck_assert_int_eq(nfn, 0);
    sass_scan("", "x", "LDS", "sm_90", &nfn, &nwith);
    ck_assert_int_eq(nfn + nwith, 0);
}
END_TEST

/* the mnemonics of each function: modifiers and predicates dropped, @!PT (never runs) left out,
 * LDSM not LDS, the encoding lines under each instruction no instruction */
static const char OPS_DUMP[] =
    "\tarch = sm_90\n\t\tFunction : _Z4tileILi8EEvPKfPfi\n"
    "        /*0000*/                   LDS.128 R4, [R2+0x100] ;   /* 0x000010000204798 */\n"
    "                                                              /* 0x000e220000000c00 */\n"
    "        /*0010*/               @!P1 LDS R8, [R2] ;\n"
    "        /*0020*/              @!PT LDS RZ, [RZ] ;\n"
    "        /*0030*/                   LDSM.16.M88.4 R12, [R3] ;\n"
    "        /*0040*/                   FFMA R8, R4, R5.reuse, R8 ;\n"
    "        /*0050*/                   FFMA.FTZ R9, R4, R6, R9 ;\n"
    "        /*0060*/                   STL [R1], R8 ;\n"
    "\t\tFunction : _Z4tileILi16EEvPKfPfi\n"
    "        /*0000*/                   FFMA R8, R4, R5, R8 ;\n"
    "\tarch = sm_80\n\t\tFunction : _Z4tileILi8EEvPKfPfi\n"
    "        /*0000*/                   LDS.128 R4, [R2] ;\n";

START_TEST(scan_ops_counts_mnemonics)
{
    static const char *const ops[] = { "FFMA", "LDS", "STL", "LDL" };
    int c[3 * 4];
    ck_assert_int_eq(sass_scan_ops(OPS_DUMP, "_Z4tile", "sm_90", ops, 4, c, 3), 2);
    ck_assert_int_eq(c[0], 2); /* FFMA and FFMA.FTZ */
    ck_assert_int_eq(c[1], 2); /* LDS.128 and @!P1 LDS; not @!PT LDS, not LDSM */
    ck_assert_int_eq(c[2], 1);
    ck_assert_int_eq(c[3], 0);
    ck_assert_int_eq(c[4], 1); /* the second function */
    ck_assert_int_eq(c[5], 0);
    ck_assert_int_eq(sass_scan_ops(OPS_DUMP, "_Z4tileILi8E", "sm_80", ops, 4, c, 3), 1);
    ck_assert_int_eq(c[0], 0);
    ck_assert_int_eq(c[1], 1);
    /* more functions than room: all counted, only the first max filled */
    ck_assert_int_eq(sass_scan_ops(OPS_DUMP, "_Z4tile", "sm_90", ops, 4, c, 1), 2);
    ck_assert_int_eq(c[0], 2);
    ck_assert_int_eq(sass_scan_ops("", "x", "sm_90", ops, 4, c, 3), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("harness");
    TCase *tc = tcase_create("seed");
    tcase_add_test(tc, seed_from_env_is_used);
    tcase_add_test(tc, seed_hex_is_accepted);
    tcase_add_test(tc, seed_decimal_with_zeros_is_decimal);
    tcase_add_test(tc, seed_largest_is_accepted);
    tcase_add_loop_exit_test(tc, seed_garbage_exits_2, 2, 0,
                             (int)(sizeof BAD_SEEDS / sizeof BAD_SEEDS[0]));
    tcase_add_test(tc, seed_without_env_differs_between_processes);
    tcase_add_test(tc, rng_is_reproducible);
    tcase_add_test(tc, rng_fill_stays_in_range_and_is_not_constant);
    suite_add_tcase(s, tc);

    tc = tcase_create("compare");
    tcase_add_test(tc, compare_passes_within_tolerance);
    tcase_add_test(tc, compare_fails_outside_tolerance_and_reports_index);
    tcase_add_test(tc, compare_never_passes_nan_or_inf);
    tcase_add_test(tc, compare_uses_scale_when_given);
    tcase_add_test(tc, compare_reports_at_most_three);
    tcase_add_test(tc, hint_nothing_written);
    tcase_add_test(tc, hint_missing_columns);
    tcase_add_test(tc, hint_missing_rows);
    tcase_add_test(tc, hint_silent_on_plain_wrong_values);
    suite_add_tcase(s, tc);

    tc = tcase_create("reference");
    tcase_add_test(tc, ref_matmul_matches_definition);
    tcase_add_test(tc, fp32_tolerance_accepts_fp32_and_rejects_a_dropped_term);
    suite_add_tcase(s, tc);

    tc = tcase_create("stats");
    tcase_add_test(tc, median_odd_and_even);
    tcase_add_test(tc, median_round_takes_one_round_of_the_median_ratio);
    tcase_add_test(tc, speed_gate_caps_by_the_ceiling_above_the_floor);
    tcase_add_test(tc, speed_gate_gap_caps_by_the_way_to_the_ceiling);
    tcase_add_test(tc, launches_threads_counts_every_launch);
    tcase_add_test(tc, cdiv_rounds_up);
    tcase_add_test(tc, results_writes_header_and_rows);
    tcase_add_test(tc, clocks_summary_takes_median_extremes_and_mean);
    tcase_add_test(tc, clocks_columns_say_na_where_not_sampled);
    tcase_add_test(tc, results_rows_carry_the_last_clocks);
    tcase_add_test(tc, shell_quote_survives_quotes_and_spaces);
    tcase_add_test(tc, arch_line_matches_exactly);
    tcase_add_test(tc, scan_counts_functions_and_opcodes);
    tcase_add_test(tc, scan_ops_counts_mnemonics);
    suite_add_tcase(s, tc);

    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    int run = srunner_ntests_run(sr);
    const char *counts = getenv("GRADE_COUNTS");
    if (counts && *counts) {
        FILE *f = fopen(counts, "a");
        if (f) {
            fprintf(f, "harness\thost\t%d\t%d\n", run - failed, failed);
            fclose(f);
        }
    }
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
