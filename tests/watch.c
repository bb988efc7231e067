/* watch.c: Check tests of harness/watch.h on the CPU backend, linked with the same --wrap
 * flags as chapter 06's graders (the Makefile's WATCH_CALLS): what is made inside the window
 * counts and what is made outside it does not, each kind with its bytes, a release of what is
 * not live is a stray, a nested runtime call counts once, and cudaDeviceReset is counted with
 * the caller's objects it destroyed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "watch.h"

START_TEST(counts_only_the_window)
{
    void *outside, *inside;
    CUDA_CHECK(cudaMalloc(&outside, 4096));
    watch_reset();
    watch_begin();
    CUDA_CHECK(cudaMalloc(&inside, 64));
    watch_end();
    ck_assert_int_eq(watch_live(WATCH_DEVICE), 1);
    ck_assert_uint_eq(watch_live_bytes(WATCH_DEVICE), 64);
    CUDA_CHECK(cudaFree(inside));
    ck_assert_int_eq(watch_live(WATCH_ANY), 0);
    CUDA_CHECK(cudaFree(outside)); /* made before the window: known, so no stray */
    ck_assert_int_eq(watch_strays(), 0);
}
END_TEST

START_TEST(describes_every_kind)
{
    void *a, *b, *pinned;
    static char range[1024];
    cudaStream_t s;
    cudaEvent_t e;
    watch_reset();
    watch_begin();
    CUDA_CHECK(cudaMalloc(&a, 4096));
    CUDA_CHECK(cudaMallocManaged(&b, 64, cudaMemAttachGlobal));
    CUDA_CHECK(cudaMallocHost(&pinned, 256));
    CUDA_CHECK(cudaHostRegister(range, sizeof range, cudaHostRegisterDefault));
    CUDA_CHECK(cudaStreamCreate(&s)); /* the CPU backend's calls cudaStreamCreateWithFlags */
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    watch_end();
    char buf[256], calls[160];
    ck_assert_int_eq(watch_describe(buf, sizeof buf), 6);
    ck_assert_str_eq(buf, "2 allocations (4096 and 64 bytes), 1 pinned host buffer (256 bytes), "
                          "1 registered host range (1024 bytes), 1 stream, 1 event");
    watch_describe_calls(calls, sizeof calls);
    ck_assert_str_eq(calls, "cudaMalloc, cudaMallocManaged, cudaMallocHost, cudaHostRegister, "
                            "cudaStreamCreate, cudaEventCreateWithFlags");
    CUDA_CHECK(cudaEventDestroy(e));
    CUDA_CHECK(cudaStreamDestroy(s));
    CUDA_CHECK(cudaHostUnregister(range));
    CUDA_CHECK(cudaFreeHost(pinned));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(a));
    ck_assert_int_eq(watch_describe(buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "nothing");
}
END_TEST

START_TEST(names_many_sizes_with_a_total)
{
    void *p[6];
    watch_reset();
    watch_begin();
    for (int i = 0; i < 6; i++)
        CUDA_CHECK(cudaMalloc(&p[i], (size_t)(i + 1) * 16));
    watch_end();
    char buf[256];
    watch_describe(buf, sizeof buf);
    ck_assert_str_eq(buf, "6 allocations (16, 32, 48, 64 and 2 more: 336 bytes in all)");
    for (int i = 0; i < 6; i++)
        CUDA_CHECK(cudaFree(p[i]));
}
END_TEST

START_TEST(a_double_free_is_a_stray)
{
    void *p, *pinned;
    watch_reset();
    watch_begin();
    CUDA_CHECK(cudaMalloc(&p, 128));
    CUDA_CHECK(cudaMallocHost(&pinned, 128));
    CUDA_CHECK(cudaFree(p));
    (void)cudaFree(p);       /* freed already */
    (void)cudaFree(pinned);  /* pinned memory is cudaFreeHost's */
    (void)cudaGetLastError();
    CUDA_CHECK(cudaFree(NULL)); /* allowed, and nothing */
    watch_end();
    ck_assert_int_eq(watch_strays(), 2);
    char buf[160];
    watch_describe_stray(buf, sizeof buf);
    ck_assert_msg(strstr(buf, "cudaFree(") && strstr(buf, "not live"), "got \"%s\"", buf);
    ck_assert_int_eq(watch_live(WATCH_PINNED), 1); /* the wrong release did not take it */
    CUDA_CHECK(cudaFreeHost(pinned));
}
END_TEST

START_TEST(a_reset_is_counted_with_its_victims)
{
    void *callers, *mine;
    CUDA_CHECK(cudaMalloc(&callers, 4096));
    watch_reset();
    watch_begin();
    CUDA_CHECK(cudaMalloc(&mine, 64));
    CUDA_CHECK(cudaDeviceReset());
    watch_end();
    ck_assert_int_eq(watch_resets(), 1);
    ck_assert_int_eq(watch_reset_victims(), 1);
    ck_assert_int_eq(watch_live(WATCH_ANY), 0); /* a reset destroys them all */
    watch_reset();
    ck_assert_int_eq(watch_resets(), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("watch");
    TCase *tc = tcase_create("watch");
    tcase_add_test(tc, counts_only_the_window);
    tcase_add_test(tc, describes_every_kind);
    tcase_add_test(tc, names_many_sizes_with_a_total);
    tcase_add_test(tc, a_double_free_is_a_stray);
    tcase_add_test(tc, a_reset_is_counted_with_its_victims);
    suite_add_tcase(s, tc);

    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    int run = srunner_ntests_run(sr);
    const char *counts = getenv("GRADE_COUNTS");
    if (counts && *counts) {
        FILE *f = fopen(counts, "a");
        if (f) {
            fprintf(f, "watch\temu\t%d\t%d\n", run - failed, failed);
            fclose(f);
        }
    }
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
