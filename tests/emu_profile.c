/* emu_profile.c: the instrumented emu build's own tests (make emu-profile-test). Planted
 * kernels (tests/emu_profile_kernels.cu) whose sectors, wavefronts and divergent branches are
 * known; each launch's totals come from emu_profile_last(). And the bounds checks: an access
 * the plain build cannot see stops the kernel with cudaErrorIllegalAddress and a report
 * naming kernel, thread and line. Check runs each test in its own process. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "capture.h"
#include "emu_profile.h"
#include "emu_profile_kernels.h"
#include "shared_patterns.h"
#define CONCEPT_LIMITS_ONLY /* the graders' limits, without the grader */
#include "concept.h"

static float *device_floats(int n)
{
    float *h = malloc((size_t)n * sizeof *h), *d;
    for (int i = 0; i < n; ++i)
        h[i] = (float)(i % 97) + 1.0f;
    CK_CUDA(cudaMalloc((void **)&d, (size_t)n * sizeof *d));
    CK_CUDA(cudaMemcpy(d, h, (size_t)n * sizeof *d, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static struct emu_profile_totals last(void)
{
    struct emu_profile_totals t;
    CK_CUDA(cudaDeviceSynchronize());
    ck_assert_msg(emu_profile_last(&t), "no launch was recorded");
    return t;
}

static double per(unsigned long long units, unsigned long long requests)
{
    ck_assert_msg(requests > 0, "no requests were recorded");
    return (double)units / (double)requests;
}

START_TEST(coalesced_copy_is_4_sectors_a_request)
{
    const int n = 4096;
    float *in = device_floats(n), *out = device_floats(n);
    prof_copy(in, out, n);
    struct emu_profile_totals t = last();
    ck_assert_uint_eq(t.gld_requests, n / 32);
    ck_assert_uint_eq(t.gst_requests, n / 32);
    ck_assert_msg(per(t.gld_sectors, t.gld_requests) == 4.0, "loads: %.2f sectors/req",
                  per(t.gld_sectors, t.gld_requests));
    ck_assert_msg(per(t.gst_sectors, t.gst_requests) == 4.0, "stores: %.2f sectors/req",
                  per(t.gst_sectors, t.gst_requests));
    ck_assert_uint_eq(t.divergent_branches, 0);
}
END_TEST

START_TEST(coalesced_copy_reports_4_bytes_a_lane)
{
    const int n = 4096;
    float *in = device_floats(n), *out = device_floats(n);
    prof_copy(in, out, n);
    struct emu_profile_totals t = last();
    ck_assert_uint_eq(t.gld_lanes, n);
    ck_assert_uint_eq(t.gld_bytes, 4 * n);
    ck_assert_uint_eq(t.gst_bytes, 4 * n);
    ck_assert_uint_eq(t.gld_bytes / t.gld_requests, 128); /* 32 lanes x 4 bytes */
}
END_TEST

/* A float4 copy touches 16 sectors a request: coalesced for its width, and the concept tests'
 * limit (graders/concept.h) must say so, where a limit made for floats (4.5) would fail it. */
START_TEST(float4_copy_is_16_sectors_a_request_and_coalesced)
{
    const int n = 4096;
    float *in = device_floats(n), *out = device_floats(n);
    prof_copy4(in, out, n);
    struct emu_profile_totals t = last();
    ck_assert_uint_eq(t.gld_requests, n / 4 / 32);
    ck_assert_uint_eq(t.gst_requests, n / 4 / 32);
    double spr = per(t.gld_sectors, t.gld_requests), width = (double)t.gld_bytes / t.gld_lanes;
    ck_assert_msg(spr == 16.0, "loads: %.2f sectors/req", spr);
    ck_assert_msg(per(t.gst_sectors, t.gst_requests) == 16.0, "stores: %.2f sectors/req",
                  per(t.gst_sectors, t.gst_requests));
    ck_assert_msg(width == 16.0, "loads: %.2f bytes a lane, not 16", width);
    ck_assert_uint_eq(t.gld_bytes / t.gld_requests, 512); /* 32 lanes x 16 bytes */
    ck_assert_msg(concept_ideal_sectors(width) == 16.0, "ideal %.2f", concept_ideal_sectors(width));
    ck_assert_msg(spr <= concept_max_sectors(width), "a coalesced float4 copy judged uncoalesced: "
                  "%.2f sectors/req, limit %.2f", spr, concept_max_sectors(width));
    /* and the strided copy of floats is still judged uncoalesced */
    float *wide = device_floats(n * 32);
    prof_copy_strided(wide, out, n);
    t = last();
    width = (double)t.gld_bytes / t.gld_lanes;
    ck_assert_msg(width == 4.0, "strided loads: %.2f bytes a lane", width);
    ck_assert_msg(per(t.gld_sectors, t.gld_requests) > concept_max_sectors(width),
                  "a strided copy judged coalesced: %.2f sectors/req, limit %.2f",
                  per(t.gld_sectors, t.gld_requests), concept_max_sectors(width));
}
END_TEST

START_TEST(strided_copy_is_32_sectors_a_request)
{
    const int n = 1024;
    float *in = device_floats(n * 32), *out = device_floats(n);
    prof_copy_strided(in, out, n);
    struct emu_profile_totals t = last();
    ck_assert_msg(per(t.gld_sectors, t.gld_requests) == 32.0, "loads: %.2f sectors/req",
                  per(t.gld_sectors, t.gld_requests));
    ck_assert_msg(per(t.gst_sectors, t.gst_requests) == 4.0, "stores: %.2f sectors/req",
                  per(t.gst_sectors, t.gst_requests));
}
END_TEST

START_TEST(a_partial_warp_at_the_edge_is_one_request)
{
    const int n = 4096 + 8; /* the last warp has 8 live lanes: 1 sector */
    float *in = device_floats(n), *out = device_floats(n);
    prof_copy(in, out, n);
    struct emu_profile_totals t = last();
    ck_assert_uint_eq(t.gld_requests, 4096 / 32 + 1);
    ck_assert_uint_eq(t.gld_sectors, 4096 / 8 + 1);
    /* the bounds check splits the edge warp: one divergent branch */
    ck_assert_uint_eq(t.divergent_branches, 1);
}
END_TEST

START_TEST(column_of_a_32x32_tile_is_32_wavefronts)
{
    float *in = device_floats(1024), *out = device_floats(1024);
    prof_shared_column(in, out, 0);
    struct emu_profile_totals t = last();
    ck_assert_uint_eq(t.shld_requests, 32);
    ck_assert_msg(per(t.shld_wavefronts, t.shld_requests) == 32.0, "column read: %.2f wavefronts/req",
                  per(t.shld_wavefronts, t.shld_requests));
    ck_assert_msg(per(t.shst_wavefronts, t.shst_requests) == 1.0, "row write: %.2f wavefronts/req",
                  per(t.shst_wavefronts, t.shst_requests));
}
END_TEST

START_TEST(column_of_a_padded_tile_is_1_wavefront)
{
    float *in = device_floats(1024), *out = device_floats(1024);
    prof_shared_column(in, out, 1);
    struct emu_profile_totals t = last();
    ck_assert_msg(per(t.shld_wavefronts, t.shld_requests) == 1.0, "column read: %.2f wavefronts/req",
                  per(t.shld_wavefronts, t.shld_requests));
    ck_assert_msg(per(t.shst_wavefronts, t.shst_requests) == 1.0, "row write: %.2f wavefronts/req",
                  per(t.shst_wavefronts, t.shst_requests));
}
END_TEST

/* The model's shared-memory rule (harness/emu/prof/prof.cpp, shared_wavefronts) against what
 * the reference H200 measured for the same loads (tests/ncu/shared_wavefronts.cu, recorded in
 * plots/data/h200/shared-wavefronts.tsv): every pattern, exactly. */
#define WAVEFRONTS_TSV "plots/data/h200/shared-wavefronts.tsv"

/* the H200's wavefronts for pattern p, from the record; -1 if the record has no such row */
static int h200_wavefronts(int p)
{
    FILE *f = fopen(WAVEFRONTS_TSV, "r");
    ck_assert_msg(f != NULL, "cannot open %s (the tests run from the project's root)", WAVEFRONTS_TSV);
    char line[512];
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        int bytes, requests, wavefronts;
        char index[128];
        if (line[0] == '#' || sscanf(line, "%d\t%127[^\t]\t%d\t%d", &bytes, index, &requests,
                                     &wavefronts) != 4)
            continue;
        if (bytes == shared_pattern_bytes(p) && strcmp(index, shared_pattern_name(p)) == 0) {
            ck_assert_msg(requests == 1, "%s: %d bytes at %s: %d requests", WAVEFRONTS_TSV, bytes,
                          index, requests);
            found = wavefronts;
        }
    }
    fclose(f);
    return found;
}

START_TEST(shared_wavefronts_match_the_h200)
{
    int *d_index;
    float *out = device_floats(32);
    CK_CUDA(cudaMalloc((void **)&d_index, 32 * sizeof(int)));
    int wrong = 0;
    for (int p = 0; p < SHARED_PATTERN_COUNT; p++) {
        int h[32];
        for (int l = 0; l < 32; l++)
            h[l] = shared_pattern_index(p, l);
        CK_CUDA(cudaMemcpy(d_index, h, sizeof h, cudaMemcpyHostToDevice));
        prof_shared_pattern(d_index, out, shared_pattern_bytes(p));
        struct emu_profile_totals t = last();
        const int want = h200_wavefronts(p);
        ck_assert_msg(want > 0, "%s has no row for %d bytes at index %s", WAVEFRONTS_TSV,
                      shared_pattern_bytes(p), shared_pattern_name(p));
        ck_assert_uint_eq(t.shld_requests, 1);
        if (t.shld_wavefronts != (unsigned long long)want) {
            fprintf(stderr, "  %2d bytes at index %-18s model %llu wavefronts, H200 %d\n",
                    shared_pattern_bytes(p), shared_pattern_name(p), t.shld_wavefronts, want);
            wrong++;
        }
    }
    ck_assert_msg(wrong == 0, "%d of %d patterns differ from the H200 (listed above)", wrong,
                  SHARED_PATTERN_COUNT);
}
END_TEST

START_TEST(branch_on_lane_parity_diverges)
{
    const int n = 1024;
    float *in = device_floats(n), *out = device_floats(n);
    prof_branch(in, out, n, 0);
    struct emu_profile_totals t = last();
    ck_assert_uint_eq(t.warps, n / 32);
    ck_assert_msg(t.divergent_branches >= t.warps, "%llu divergent branches in %llu warps",
                  t.divergent_branches, t.warps);
}
END_TEST

START_TEST(branch_on_warp_parity_does_not)
{
    const int n = 1024;
    float *in = device_floats(n), *out = device_floats(n);
    prof_branch(in, out, n, 1);
    struct emu_profile_totals t = last();
    ck_assert_uint_eq(t.warps, n / 32);
    ck_assert_uint_eq(t.divergent_branches, 0);
}
END_TEST

START_TEST(recording_can_be_switched_off)
{
    const int n = 1024;
    float *in = device_floats(n), *out = device_floats(n);
    prof_copy(in, out, n);
    struct emu_profile_totals a = last(), b;
    emu_profile_record(0);
    prof_copy_strided(in, out, n / 32);
    CK_CUDA(cudaDeviceSynchronize());
    ck_assert(emu_profile_last(&b));
    ck_assert_uint_eq(b.gld_sectors, a.gld_sectors); /* still the first launch's */
}
END_TEST

/* Runs fn in a child with stderr captured into out; returns the child's exit status. */
static void read_before(void)
{
    float *in = device_floats(64), *out = device_floats(64);
    prof_read_before(in, out);
    _exit(cudaDeviceSynchronize() == cudaErrorIllegalAddress ? 0 : 1);
}

START_TEST(a_read_before_an_allocation_is_caught_with_thread_and_line)
{
    char err[4096];
    int status = run_captured(read_before, err, sizeof err);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
    ck_assert_msg(strstr(err, "read_before_kernel") && strstr(err, "thread (0,0,0)") &&
                      strstr(err, "illegal read") && strstr(err, "emu_profile_kernels.cu:"),
                  "report: %s", err);
}
END_TEST

static void shared_overrun(void)
{
    float *out = device_floats(64);
    prof_shared_overrun(out, 4096); /* lane 1 writes 16 KiB past the array */
    _exit(cudaDeviceSynchronize() == cudaErrorIllegalAddress ? 0 : 1);
}

START_TEST(a_shared_overrun_is_caught_with_thread_and_line)
{
    char err[4096];
    int status = run_captured(shared_overrun, err, sizeof err);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
    ck_assert_msg(strstr(err, "shared_overrun_kernel") && strstr(err, "thread (1,0,0)") &&
                      strstr(err, "shared memory") && strstr(err, "emu_profile_kernels.cu:"),
                  "report: %s", err);
}
END_TEST

START_TEST(in_bounds_shared_writes_pass)
{
    float *out = device_floats(64);
    prof_shared_overrun(out, 1);
    CK_CUDA(cudaDeviceSynchronize());
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("emu-profile");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, coalesced_copy_is_4_sectors_a_request);
    tcase_add_test(tc, coalesced_copy_reports_4_bytes_a_lane);
    tcase_add_test(tc, float4_copy_is_16_sectors_a_request_and_coalesced);
    tcase_add_test(tc, strided_copy_is_32_sectors_a_request);
    tcase_add_test(tc, a_partial_warp_at_the_edge_is_one_request);
    tcase_add_test(tc, column_of_a_32x32_tile_is_32_wavefronts);
    tcase_add_test(tc, column_of_a_padded_tile_is_1_wavefront);
    tcase_add_test(tc, shared_wavefronts_match_the_h200);
    tcase_add_test(tc, branch_on_lane_parity_diverges);
    tcase_add_test(tc, branch_on_warp_parity_does_not);
    tcase_add_test(tc, recording_can_be_switched_off);
    suite_add_tcase(s, tc);
    tc = tcase_create("bounds");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_read_before_an_allocation_is_caught_with_thread_and_line);
    tcase_add_test(tc, a_shared_overrun_is_caught_with_thread_and_line);
    tcase_add_test(tc, in_bounds_shared_writes_pass);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    unsetenv("EMU_SCHEDULE");
    unsetenv("EMU_THREADS");
    emu_profile_print(0);
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr), run = srunner_ntests_run(sr);
    srunner_free(sr);
    const char *counts = getenv("GRADE_COUNTS"); /* make test's tally */
    FILE *f = counts && *counts ? fopen(counts, "a") : NULL;
    if (f) {
        fprintf(f, "emu-profile\thost\t%d\t%d\n", run - failed, failed);
        fclose(f);
    }
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
