/* emu.c: the emulator's own tests (make emu-test). C11 against the emu's cuda_runtime_api.h,
 * as the harness is, over the kernels of tests/emu_kernels.cu, and those of known resource
 * usage in tests/emu_resources_kernels.cu.
 *
 * Check runs every test in its own process, so a sticky error of one test never reaches the
 * next. Tests that look at an error report, or at a process the emulator aborts, run the
 * kernel in a further child with its stderr captured (run_captured). */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_occupancy.h>
#include <cuda_runtime_api.h>
#include <emu_memory.h>
#include <emu_resources.h>

#include "capture.h"
#include "emu_kernels.h"
#include "emu_resources_kernels.h"

static const char *const SCHEDULES[] = {"inorder", "reverse", "shuffle:1", "shuffle:987654321"};
#define NUM_SCHEDULES ((int)(sizeof SCHEDULES / sizeof SCHEDULES[0]))

/* Runs fn in a child with stderr captured into out; returns the child's wait status. */
static int is_schedule_inorder(void)
{
    const char *s = getenv("EMU_SCHEDULE");
    return !s || !strcmp(s, "inorder");
}

/* ---------------------------------------------------------------- barriers */

START_TEST(barrier_orders_the_phases)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    static int out[1024];
    const int sizes[] = {1, 33, 256, 1024};
    for (int s = 0; s < 4; ++s) {
        int n = sizes[s];
        CK_CUDA(ek_barrier_rotate(n, out));
        for (int i = 0; i < n; ++i)
            ck_assert_msg(out[i] == (i + 1) % n, "%s, %d threads: out[%d] = %d, want %d",
                          SCHEDULES[_i], n, i, out[i], (i + 1) % n);
    }
}
END_TEST

START_TEST(syncthreads_count_and_or)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    int count, all, any;
    CK_CUDA(ek_barrier_votes(100, 3, &count, &all, &any));
    ck_assert_int_eq(count, 34); /* 0, 3, ..., 99 */
    ck_assert_int_eq(all, 0);
    ck_assert_int_eq(any, 1);
    CK_CUDA(ek_barrier_votes(64, 1, &count, &all, &any));
    ck_assert_int_eq(count, 64);
    ck_assert_int_eq(all, 1);
    ck_assert_int_eq(any, 1);
    CK_CUDA(ek_barrier_votes(64, 1000, &count, &all, &any)); /* only thread 0 */
    ck_assert_int_eq(count, 1);
    ck_assert_int_eq(all, 0);
    ck_assert_int_eq(any, 1);
}
END_TEST

START_TEST(exited_threads_count_as_arrived)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    int out[256];
    CK_CUDA(ek_early_exit(256, 100, out));
    for (int i = 0; i < 100; ++i)
        ck_assert_int_eq(out[i], 2 * ((i + 1) % 100));
}
END_TEST

START_TEST(divergent_barriers_are_an_error)
{
    char err[4096];
    int status = run_captured(ek_launch_divergent_barriers, err, sizeof err);
    ck_assert(WIFEXITED(status));
    /* in the child: nothing reported at the launch, the failure at the synchronisation */
    ek_launch_divergent_barriers();
    CK_ERROR(cudaGetLastError(), cudaSuccess);
    CK_ERROR(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
    ck_assert_msg(strstr(err, "different barriers") && strstr(err, "emu_kernels.cu:"),
                  "report: %s", err);
}
END_TEST

START_TEST(warp_op_a_lane_never_joins_is_an_error)
{
    char err[4096];
    run_captured(ek_launch_warp_op_without_lanes, err, sizeof err);
    ek_launch_warp_op_without_lanes();
    CK_ERROR(cudaGetLastError(), cudaSuccess);
    CK_ERROR(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
    ck_assert_msg(strstr(err, "deadlock") && strstr(err, "__shfl_down_sync") &&
                      strstr(err, "__syncthreads"),
                  "report: %s", err);
}
END_TEST

/* ---------------------------------------------------------------- the planted race */

START_TEST(shuffled_schedule_exposes_a_missing_barrier)
{
    int out[256];
    setenv("EMU_SCHEDULE", "inorder", 1);
    CK_CUDA(ek_missing_barrier(256, 1000, 0, out));
    int wrong_inorder = 0;
    for (int i = 1; i < 256; ++i)
        wrong_inorder += out[i] != 1000 + i - 1;
    ck_assert_msg(wrong_inorder == 0, "in order, the racy kernel should look right (%d wrong)",
                  wrong_inorder);

    const char *exposing[] = {"reverse", "shuffle:1", "shuffle:42"};
    for (int s = 0; s < 3; ++s) {
        const int base = 2000 + 1000 * s;
        setenv("EMU_SCHEDULE", exposing[s], 1);
        CK_CUDA(ek_missing_barrier(256, base, 0, out));
        int wrong = 0;
        for (int i = 1; i < 256; ++i)
            wrong += out[i] != base + i - 1;
        ck_assert_msg(wrong > 0, "%s did not expose the missing __syncthreads", exposing[s]);
        /* and with the barrier, every schedule is right */
        CK_CUDA(ek_missing_barrier(256, base + 500, 1, out));
        for (int i = 1; i < 256; ++i)
            ck_assert_int_eq(out[i], base + 500 + i - 1);
    }
}
END_TEST

START_TEST(bad_schedule_is_rejected)
{
    setenv("EMU_SCHEDULE", "sideways", 1);
    int out[4];
    ek_barrier_rotate(4, out); /* exits with a message */
}
END_TEST

/* ---------------------------------------------------------------- warp operations */

static long long shfl_want(enum ek_shfl_kind kind, int lane, int arg, int width)
{
    int src = lane;
    switch (kind) {
    case EK_SHFL_IDX: src = (lane & ~(width - 1)) + (arg & (width - 1)); break;
    case EK_SHFL_UP: src = (lane % width) >= arg ? lane - arg : lane; break;
    case EK_SHFL_DOWN: src = (lane % width) + arg < width ? lane + arg : lane; break;
    case EK_SHFL_XOR:
        src = lane ^ arg;
        if (src >= (lane & ~(width - 1)) + width)
            src = lane; /* a later group: own value */
        break;
    }
    return src * 10 + 1;
}

START_TEST(shuffles_with_widths)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    static const char *names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync"};
    long long out[32];
    for (int kind = EK_SHFL_IDX; kind <= EK_SHFL_XOR; ++kind)
        for (int width = 1; width <= 32; width *= 2)
            for (int arg = 0; arg < 34; arg += (arg < 8 ? 1 : 7)) {
                CK_CUDA(ek_shfl((enum ek_shfl_kind)kind, arg, width, out));
                for (int lane = 0; lane < 32; ++lane) {
                    long long want = shfl_want((enum ek_shfl_kind)kind, lane, arg, width);
                    ck_assert_msg(out[lane] == want, "%s(arg %d, width %d): lane %d got %lld, want %lld",
                                  names[kind], arg, width, lane, out[lane], want);
                }
            }
    float f[32];
    CK_CUDA(ek_shfl_float(7, f));
    for (int lane = 0; lane < 32; ++lane)
        ck_assert_float_eq(f[lane], 3.5f);
}
END_TEST

START_TEST(ballot_any_all_over_masks)
{
    unsigned ballot[32];
    int any[32], all[32];
    const unsigned masks[] = {0xffffffffu, 0x0000ffffu, 0xaaaaaaaau, 0x00000001u};
    for (int m = 0; m < 4; ++m)
        for (int modulo = 1; modulo <= 5; modulo += 2) {
            CK_CUDA(ek_votes(masks[m], modulo, ballot, any, all));
            unsigned want = 0;
            for (int l = 0; l < 32; ++l)
                if ((masks[m] >> l & 1) && l % modulo == 0)
                    want |= 1u << l;
            for (int l = 0; l < 32; ++l) {
                if (!(masks[m] >> l & 1))
                    continue;
                ck_assert_msg(ballot[l] == want, "mask %#x, modulo %d: lane %d ballot %#x, want %#x",
                              masks[m], modulo, l, ballot[l], want);
                ck_assert_int_eq(any[l], want != 0);
                ck_assert_int_eq(all[l], want == masks[m]);
            }
        }
}
END_TEST

START_TEST(warp_reductions_and_match)
{
    int add, min, max;
    unsigned umax, and_, or_, xor_;
    CK_CUDA(ek_warp_reduce(&add, &min, &max, &umax, &and_, &or_, &xor_));
    int want_add = 0, want_min = 1 << 30, want_max = -(1 << 30);
    unsigned want_umax = 0, want_and = ~0u, want_or = 0, want_xor = 0;
    for (int l = 0; l < 32; ++l) {
        int v = (l * 7) % 11 - 3;
        want_add += v;
        want_min = v < want_min ? v : want_min;
        want_max = v > want_max ? v : want_max;
        want_umax = (unsigned)v > want_umax ? (unsigned)v : want_umax;
        want_and &= (unsigned)v;
        want_or |= (unsigned)v;
        want_xor ^= (unsigned)v;
    }
    ck_assert_int_eq(add, want_add);
    ck_assert_int_eq(min, want_min);
    ck_assert_int_eq(max, want_max);
    ck_assert_uint_eq(umax, want_umax);
    ck_assert_uint_eq(and_, want_and);
    ck_assert_uint_eq(or_, want_or);
    ck_assert_uint_eq(xor_, want_xor);
    unsigned match[32];
    CK_CUDA(ek_match_any(match));
    for (int l = 0; l < 32; ++l)
        ck_assert_uint_eq(match[l], 0x11111111u << (l % 4));
}
END_TEST

START_TEST(partial_warps_and_exited_lanes)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    int sum;
    CK_CUDA(ek_partial_warp_sum(48, &sum));
    ck_assert_int_eq(sum, 48 * 49 / 2);
    CK_CUDA(ek_partial_warp_sum(100, &sum));
    ck_assert_int_eq(sum, 100 * 101 / 2);
    unsigned mask;
    CK_CUDA(ek_active_mask(20, &mask));
    ck_assert_uint_eq(mask, (1u << 20) - 1);
    int out[32];
    CK_CUDA(ek_syncwarp_exchange(out));
    for (int l = 0; l < 32; ++l)
        ck_assert_int_eq(out[l], (31 - l) * 3);
}
END_TEST

/* ---------------------------------------------------------------- atomics */

START_TEST(atomics_under_contention)
{
    /* loop: 0 in order on one OS thread, 1 shuffled on four OS threads (real contention) */
    setenv("EMU_SCHEDULE", _i ? "shuffle:7" : "inorder", 1);
    setenv("EMU_THREADS", _i ? "4" : "1", 1);
    const int blocks = 64, n = blocks * 256;
    struct ek_atomics a;
    CK_CUDA(ek_atomics(blocks, &a));
    ck_assert_int_eq(a.add_i, n);
    ck_assert_int_eq(a.sub_i, -2 * n);
    ck_assert_int_eq(a.min_i, -(n - 1));
    ck_assert_int_eq(a.max_i, n - 1);
    ck_assert_int_eq(a.and_i, (int)0x80000000u);
    ck_assert_int_eq(a.or_i, 0x7fffffff);
    ck_assert_int_eq(a.xor_i, 0); /* each bit flipped n / 8 times, an even number */
    ck_assert_int_eq(a.cas_i, 3 * n);
    ck_assert(a.exch_seen >= 0 && a.exch_seen < n);
    ck_assert_uint_eq(a.add_u, 2u * (unsigned)n);
    ck_assert_uint_eq(a.inc_u, (unsigned)n % 100u);
    ck_assert_uint_eq(a.dec_u, (100u - (unsigned)n % 100u) % 100u);
    ck_assert_uint_eq(a.max_u, 3u * (unsigned)(n - 1));
    ck_assert(a.add_ull == (unsigned long long)n << 33);
    ck_assert(a.min_ull == 1000000000000ull - (unsigned long long)(n - 1));
    ck_assert_float_eq(a.add_f, 0.5f * (float)n);
    ck_assert_double_eq(a.add_d, 0.25 * n);
}
END_TEST

/* ---------------------------------------------------------------- shared memory */

START_TEST(dynamic_shared_memory)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    int out[512];
    CK_CUDA(ek_dynamic_smem_reverse(512, 512 * sizeof(int), out));
    for (int i = 0; i < 512; ++i)
        ck_assert_int_eq(out[i], 511 - i + 7);
    unsigned bits;
    CK_CUDA(ek_dynamic_smem_first_read(&bits));
    ck_assert_uint_eq(bits, 0xffffffffu); /* poisoned: a NaN as a float */
}
END_TEST

START_TEST(dynamic_shared_memory_limit)
{
    int out[32];
    /* 48 KiB is the default ceiling; more needs cudaFuncSetAttribute */
    CK_CUDA(ek_dynamic_smem_reverse(32, 48 * 1024, out));
    CK_ERROR(ek_dynamic_smem_reverse(32, 48 * 1024 + 4, out), cudaErrorInvalidValue);
    CK_ERROR(cudaGetLastError(), cudaSuccess); /* not sticky */
    CK_CUDA(ek_raise_dynamic_smem(100 * 1024));
    CK_ERROR(ek_raise_dynamic_smem(228 * 1024), cudaErrorInvalidValue);
}
END_TEST

/* EMU_DEVICE's profiles: what the runtime reports, and the shared memory a kernel may opt in to */
static const struct {
    const char *key, *name;
    int major, minor, sms, threads_per_sm, blocks_per_sm, smem_per_sm_kb, optin_kb, reserved, l2_mb;
} PROFILE[] = {
    {"h200", "emu (CPU) as NVIDIA H200", 9, 0, 132, 2048, 32, 228, 227, 1024, 60},
    {"a100", "emu (CPU) as NVIDIA A100-SXM4", 8, 0, 108, 2048, 32, 164, 163, 1024, 40},
    {"l4", "emu (CPU) as NVIDIA L4", 8, 9, 58, 1536, 24, 100, 99, 1024, 48},
    {"t4", "emu (CPU) as Tesla T4", 7, 5, 40, 1024, 16, 64, 64, 0, 4},
};
#define NPROFILES ((int)(sizeof PROFILE / sizeof PROFILE[0]))

START_TEST(device_profiles_report_their_limits)
{
    setenv("EMU_DEVICE", PROFILE[_i].key, 1); /* before the first runtime call of this test */
    struct cudaDeviceProp p;
    CK_CUDA(cudaGetDeviceProperties(&p, 0));
    ck_assert_str_eq(p.name, PROFILE[_i].name);
    ck_assert_int_eq(p.major, PROFILE[_i].major);
    ck_assert_int_eq(p.minor, PROFILE[_i].minor);
    ck_assert_int_eq(p.multiProcessorCount, PROFILE[_i].sms);
    ck_assert_int_eq(p.maxThreadsPerMultiProcessor, PROFILE[_i].threads_per_sm);
    ck_assert_int_eq(p.maxBlocksPerMultiProcessor, PROFILE[_i].blocks_per_sm);
    ck_assert_uint_eq(p.sharedMemPerMultiprocessor, (size_t)PROFILE[_i].smem_per_sm_kb * 1024);
    ck_assert_uint_eq(p.sharedMemPerBlockOptin, (size_t)PROFILE[_i].optin_kb * 1024);
    ck_assert_uint_eq(p.reservedSharedMemPerBlock, (size_t)PROFILE[_i].reserved);
    ck_assert_int_eq(p.l2CacheSize, PROFILE[_i].l2_mb << 20);
    ck_assert_uint_eq(p.sharedMemPerBlock, 48 * 1024);
    ck_assert_int_eq(p.regsPerMultiprocessor, 65536);
    int v = 0;
    CK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
    ck_assert_int_eq(v, PROFILE[_i].sms);
    CK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    ck_assert_int_eq(v, PROFILE[_i].optin_kb * 1024);
    CK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMinor, 0));
    ck_assert_int_eq(v, PROFILE[_i].minor);
    /* a kernel may opt in to the profile's ceiling and launch with it, not a byte more */
    CK_CUDA(ek_raise_dynamic_smem(PROFILE[_i].optin_kb * 1024));
    CK_ERROR(ek_raise_dynamic_smem(PROFILE[_i].optin_kb * 1024 + 4), cudaErrorInvalidValue);
    CK_ERROR(cudaGetLastError(), cudaErrorInvalidValue); /* recorded once, not sticky */
    CK_CUDA(cudaGetLastError());
}
END_TEST

START_TEST(unknown_device_profile_ends_the_program)
{
    setenv("EMU_DEVICE", "h100x", 1);
    int count = 0;
    (void)cudaGetDeviceCount(&count);
    struct cudaDeviceProp p;
    (void)cudaGetDeviceProperties(&p, 0); /* exits 2, saying which names exist */
}
END_TEST

START_TEST(static_shared_memory_per_block)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    static int out[16 * 64];
    CK_CUDA(ek_static_smem_blocks(16, out));
    for (int b = 0; b < 16; ++b)
        for (int t = 0; t < 64; ++t)
            ck_assert_int_eq(out[b * 64 + t], b * 1000 + 63 - t);
}
END_TEST

/* ---------------------------------------------------------------- grids and launches */

START_TEST(grids_in_one_two_and_three_dimensions)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    const dim3 grids[] = {{7, 1, 1}, {3, 5, 1}, {2, 3, 4}, {1, 1, 1}};
    const dim3 blocks[] = {{33, 1, 1}, {8, 4, 1}, {4, 3, 5}, {2, 2, 64}};
    for (int c = 0; c < 4; ++c) {
        size_t n = (size_t)grids[c].x * grids[c].y * grids[c].z * blocks[c].x * blocks[c].y * blocks[c].z;
        unsigned *out = malloc(n * sizeof *out);
        CK_CUDA(ek_grid_ids(grids[c], blocks[c], out));
        for (size_t i = 0; i < n; ++i)
            ck_assert_msg(out[i] == i + 1, "case %d: slot %zu holds %u", c, i, out[i]);
        free(out);
    }
}
END_TEST

START_TEST(block_order_follows_the_schedule)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    enum { BLOCKS = 37 };
    int order[BLOCKS], seen[BLOCKS] = {0}, identity = 1, reversed = 1;
    CK_CUDA(ek_block_order(BLOCKS, order));
    for (int b = 0; b < BLOCKS; ++b) {
        ck_assert(order[b] >= 0 && order[b] < BLOCKS);
        ck_assert_msg(!seen[order[b]]++, "block slot %d ran twice", order[b]);
        identity &= order[b] == b;
        reversed &= order[b] == BLOCKS - 1 - b;
    }
    if (!strcmp(SCHEDULES[_i], "inorder"))
        ck_assert(identity);
    else if (!strcmp(SCHEDULES[_i], "reverse"))
        ck_assert(reversed);
    else {
        ck_assert(!identity && !reversed);
        /* the last block first, so that an order a kernel relies on breaks on every seed */
        ck_assert_msg(order[BLOCKS - 1] == 0, "shuffled, the last block ran as number %d",
                      order[BLOCKS - 1]);
    }
}
END_TEST

START_TEST(launch_forms_and_symbols)
{
    int out[4];
    CK_CUDA(ek_launch_forms(out));
    ck_assert_int_eq(out[0], 15);
    ck_assert_int_eq(out[1], 9);
    ck_assert_int_eq(out[2], 21);
    ck_assert_int_eq(out[3], 42);
    float values[16], doubled[16];
    for (int i = 0; i < 16; ++i)
        values[i] = (float)i * 1.5f;
    CK_CUDA(ek_constant_symbol(values, 16, doubled));
    for (int i = 0; i < 16; ++i)
        ck_assert_float_eq(doubled[i], values[i] * 2.0f);
}
END_TEST

START_TEST(several_os_threads_give_the_same_results)
{
    setenv("EMU_THREADS", "3", 1);
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    static int out[40 * 64];
    CK_CUDA(ek_static_smem_blocks(40, out));
    for (int b = 0; b < 40; ++b)
        for (int t = 0; t < 64; ++t)
            ck_assert_int_eq(out[b * 64 + t], b * 1000 + 63 - t);
}
END_TEST

/* ---------------------------------------------------------------- groups, pipeline, half */

START_TEST(cooperative_groups_subset)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    struct ek_groups g;
    CK_CUDA(ek_cooperative_groups(&g));
    ck_assert_int_eq(g.block_size, 64);
    for (unsigned r = 0; r < 64; ++r) {
        unsigned base = r / 16 * 16;
        int want_sum = (int)(16 * base + 120); /* base + (base + 1) + ... + (base + 15) */
        ck_assert_uint_eq(g.rank[r], r);
        ck_assert_uint_eq(g.tile_rank[r], r % 16);
        ck_assert_uint_eq(g.meta_rank[r], r / 16);
        ck_assert_uint_eq(g.tile_ballot[r], 0xaaaau);
        ck_assert_int_eq(g.tile_sum[r], want_sum);
        ck_assert_int_eq(g.reduce_sum[r], want_sum);
        ck_assert_int_eq(g.dyn_rank[r], (int)(r % 8));
    }
}
END_TEST

START_TEST(pipeline_primitives_copy)
{
    float in[64], out[64];
    for (int i = 0; i < 64; ++i)
        in[i] = (float)i + 0.25f;
    CK_CUDA(ek_pipeline_copy(in, 64, 3, out));
    for (int i = 0; i < 61; ++i)
        ck_assert_float_eq(out[i], in[i]);
    for (int i = 61; i < 64; ++i)
        ck_assert_float_eq(out[i], 0.0f); /* zero-filled */
}
END_TEST

/* A float is the poison (0xff bytes: NaN) when its bits are all ones. */
static int is_poison(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u == 0xffffffffu;
}

/* pipeline_stages_kernel (emu_kernels.cu): three stages, one group each, read after the wait
 * that _i's mode names; every schedule. */
static void pipeline_stages(int mode, float *in, float *out)
{
    for (int i = 0; i < 3 * 128; ++i)
        in[i] = (float)i + 0.5f;
    CK_CUDA(ek_pipeline_stages(in, mode, out));
}

/* the floats of stage st as copied: the data, or zeros where thread 31's copy zero-fills */
static float stage_want(const float *in, int st, int i)
{
    return st == 2 && i >= 126 ? 0.0f : in[st * 128 + i];
}

START_TEST(pipeline_read_before_wait_sees_the_poison)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    float in[3 * 128], out[3 * 128 + 4];
    pipeline_stages(0, in, out);
    for (int i = 0; i < 3 * 128; ++i)
        ck_assert_msg(is_poison(out[i]), "float %d read before any wait: got %g, want the poison",
                      i, (double)out[i]);
    /* thread 1 never waited: thread 0 sees its copy only as the poison, even after a barrier */
    for (int i = 0; i < 4; ++i)
        ck_assert_msg(is_poison(out[3 * 128 + i]), "thread 1's unwaited copy read as %g",
                      (double)out[3 * 128 + i]);
}
END_TEST

START_TEST(pipeline_wait_prior_0_lands_every_group)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    float in[3 * 128], out[3 * 128 + 4];
    pipeline_stages(2, in, out);
    for (int st = 0; st < 3; ++st)
        for (int i = 0; i < 128; ++i)
            ck_assert_float_eq(out[st * 128 + i], stage_want(in, st, i));
}
END_TEST

START_TEST(pipeline_wait_prior_1_leaves_the_newest_group)
{
    setenv("EMU_SCHEDULE", SCHEDULES[_i], 1);
    float in[3 * 128], out[3 * 128 + 4];
    pipeline_stages(1, in, out);
    for (int st = 0; st < 2; ++st)
        for (int i = 0; i < 128; ++i)
            ck_assert_float_eq(out[st * 128 + i], in[st * 128 + i]);
    for (int i = 0; i < 128; ++i)
        ck_assert_msg(is_poison(out[2 * 128 + i]), "stage 2 (the newest group) float %d: got %g, "
                      "want the poison", i, (double)out[2 * 128 + i]);
}
END_TEST

START_TEST(pipeline_uncommitted_copies_stay_in_flight)
{
    float in[3 * 128], out[3 * 128 + 4];
    pipeline_stages(3, in, out);
    for (int st = 0; st < 2; ++st)
        for (int i = 0; i < 128; ++i)
            ck_assert_float_eq(out[st * 128 + i], in[st * 128 + i]);
    for (int i = 0; i < 128; ++i)
        ck_assert(is_poison(out[2 * 128 + i]));
}
END_TEST

START_TEST(half_and_bfloat16)
{
    float sum, product, low;
    CK_CUDA(ek_half_bf16(1.5f, 2.25f, &sum, &product, &low));
    ck_assert_float_eq(sum, 3.75f);
    ck_assert_float_eq(product, 3.375f);
    ck_assert_float_eq(low, 2.25f);
    CK_CUDA(ek_half_bf16(1.0f / 3.0f, 3.0f, &sum, &product, &low));
    ck_assert_float_eq_tol(sum, 3.3333f, 2e-3f); /* fp16 keeps 11 bits */
    ck_assert_float_eq_tol(product, 1.0f, 1e-2f); /* bf16 keeps 8 bits */
}
END_TEST

/* c = a b + 1 through WMMA, against the same sums on the host: small multiples of 1/8 that bf16
 * holds exactly and whose sums float holds exactly, so the comparison is exact. Loop 0: b
 * row-major, c row-major; 1: b col-major; 2: c stored col-major; 3: both. */
START_TEST(wmma_bf16_mma)
{
    int b_col = _i & 1, c_col = (_i >> 1) & 1;
    float a[256], b[256], c[256];
    for (int i = 0; i < 256; ++i) {
        a[i] = (float)((i * 7) % 17 - 8) / 8.0f;
        b[i] = (float)((i * 5) % 13 - 6) / 4.0f;
    }
    CK_CUDA(ek_wmma_bf16(a, b, b_col, c_col, c));
    for (int r = 0; r < 16; ++r)
        for (int col = 0; col < 16; ++col) {
            float want = 1.0f;
            for (int k = 0; k < 16; ++k)
                want += a[r * 16 + k] * (b_col ? b[col * 16 + k] : b[k * 16 + col]);
            float got = c_col ? c[col * 16 + r] : c[r * 16 + col];
            ck_assert_msg(got == want, "b %s, c %s: (%d,%d): got %g, want %g",
                          b_col ? "col_major" : "row_major", c_col ? "col" : "row", r, col,
                          (double)got, (double)want);
        }
}
END_TEST

/* ---------------------------------------------------------------- errors */

START_TEST(invalid_configuration)
{
    const struct {
        dim3 grid, block;
    } bad[] = {
        {{1, 1, 1}, {1025, 1, 1}}, {{1, 1, 1}, {32, 32, 2}}, {{1, 1, 1}, {1, 1, 65}},
        {{0, 1, 1}, {32, 1, 1}},   {{1, 65536, 1}, {1, 1, 1}}, {{1, 1, 1}, {0, 1, 1}},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; ++c) {
        ek_launch_config(bad[c].grid, bad[c].block, 0);
        CK_ERROR(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
        CK_ERROR(cudaGetLastError(), cudaErrorInvalidConfiguration);
        CK_ERROR(cudaGetLastError(), cudaSuccess); /* read once, then cleared */
    }
    const dim3 ok_grid = {2147483647u, 1, 1}, one = {1, 1, 1}, big = {1024, 1, 1};
    (void)ok_grid;
    ek_launch_config(one, big, 0);
    CK_CUDA(cudaGetLastError());
    CK_CUDA(cudaDeviceSynchronize());
}
END_TEST

static float *g_buf;
static int g_buf_n;
static int g_oob_line;

static void launch_oob(void)
{
    g_oob_line = ek_launch_out_of_bounds(g_buf, g_buf_n, 0);
}

START_TEST(illegal_address_is_sticky_and_reported)
{
    g_buf_n = 256;
    CK_CUDA(cudaMalloc((void **)&g_buf, g_buf_n * sizeof(float)));
    char err[4096];
    int status = run_captured(launch_oob, err, sizeof err);
    ck_assert(WIFEXITED(status));
    ck_assert_msg(strstr(err, "out_of_bounds_kernel") && strstr(err, "block (2,0,0)") &&
                      strstr(err, "thread (5,0,0)") && strstr(err, "illegal write") &&
                      strstr(err, "byte 0 past the end of the 1024-byte allocation"),
                  "report: %s", err);
    /* again here, to see the error calls (the child ran the same launch) */
    launch_oob();
    char line[64];
    snprintf(line, sizeof line, "emu_kernels.cu:%d", g_oob_line);
    ck_assert_msg(g_oob_line > 0 && strstr(err, line), "want %s in: %s", line, err);
    CK_ERROR(cudaGetLastError(), cudaSuccess);     /* the launch itself was fine */
    CK_ERROR(cudaPeekAtLastError(), cudaSuccess);
    CK_ERROR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    CK_ERROR(cudaGetLastError(), cudaErrorIllegalAddress); /* sticky */
    CK_ERROR(cudaGetLastError(), cudaErrorIllegalAddress);
    void *p;
    CK_ERROR(cudaMalloc(&p, 16), cudaErrorIllegalAddress);
    float h;
    CK_ERROR(cudaMemcpy(&h, g_buf, 4, cudaMemcpyDeviceToHost), cudaErrorIllegalAddress);
    CK_ERROR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
}
END_TEST

START_TEST(illegal_addresses_that_fault)
{
    /* loop: 0 far past the end, 1 before the start, 2 after cudaFree, 3 a null pointer */
    float *d, *out;
    int n = 64;
    CK_CUDA(cudaMalloc((void **)&d, n * sizeof(float)));
    CK_CUDA(cudaMalloc((void **)&out, sizeof(float)));
    switch (_i) {
    case 0: ek_launch_out_of_bounds(d, n, 5000); break;
    case 1: ek_launch_out_of_bounds(d, n, -n - 1100); break;
    case 2:
        CK_CUDA(cudaFree(d));
        ek_launch_read(d, out);
        break;
    default: ek_launch_read(NULL, out); break;
    }
    CK_ERROR(cudaGetLastError(), cudaSuccess);
    CK_ERROR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
}
END_TEST

START_TEST(write_into_the_padding_is_caught_after_the_kernel)
{
    /* 9 floats: the buffer ends 12 bytes before the guard page; d[9] lands in the padding */
    float *d;
    CK_CUDA(cudaMalloc((void **)&d, 9 * sizeof(float)));
    ek_launch_out_of_bounds(d, 9, 0);
    CK_ERROR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
}
END_TEST

START_TEST(in_bounds_edges_are_fine)
{
    float *d;
    int n = 1000;
    CK_CUDA(cudaMalloc((void **)&d, n * sizeof(float)));
    ek_launch_out_of_bounds(d, n, -1); /* the last element */
    CK_CUDA(cudaGetLastError());
    CK_CUDA(cudaDeviceSynchronize());
    float last;
    CK_CUDA(cudaMemcpy(&last, d + n - 1, sizeof last, cudaMemcpyDeviceToHost));
    ck_assert_float_eq(last, 1.0f);
}
END_TEST

START_TEST(trap_assert_and_division_stop_the_kernel)
{
    /* loop: 0 __trap, 1 assert, 2 integer division by zero */
    int *d;
    CK_CUDA(cudaMalloc((void **)&d, 8 * sizeof(int)));
    if (_i == 0)
        ek_launch_trap();
    else if (_i == 1)
        ek_launch_assert(5); /* thread 2: 5 + 2 == 7 */
    else
        ek_launch_divide(d, 1);
    CK_ERROR(cudaGetLastError(), cudaSuccess);
    CK_ERROR(cudaDeviceSynchronize(), _i == 1 ? cudaErrorAssert : cudaErrorLaunchFailure);
}
END_TEST

static void launch_big_frame(void)
{
    float *d;
    if (cudaMalloc((void **)&d, 64) != cudaSuccess)
        _exit(3);
    ek_launch_big_frame(d);
    _exit(cudaDeviceSynchronize() == cudaSuccess ? 0 : 4);
}

START_TEST(stack_overflow_names_the_thread_and_the_remedy)
{
    char err[4096];
    int status = run_captured(launch_big_frame, err, sizeof err);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "status %#x: %s", status, err);
    ck_assert_msg(strstr(err, "big_frame_kernel") && strstr(err, "thread (0,0,0)") &&
                      strstr(err, "overflowed its 64 KiB stack") && strstr(err, "EMU_STACK_KB="),
                  "report: %s", err);
    setenv("EMU_STACK_KB", "1024", 1);
    status = run_captured(launch_big_frame, err, sizeof err);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "with 1 MiB stacks: %#x: %s", status, err);
}
END_TEST

START_TEST(copies_check_their_pointers)
{
    float *d, h[8] = {0};
    CK_CUDA(cudaMalloc((void **)&d, 8 * sizeof(float)));
    CK_CUDA(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    CK_ERROR(cudaMemcpy(d, h, sizeof h + 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CK_ERROR(cudaMemcpy(h, h + 1, 4, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    CK_ERROR(cudaMemcpy(h, d, 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CK_ERROR(cudaMemset(h, 0, 4), cudaErrorInvalidValue);
    CK_ERROR(cudaFree(h), cudaErrorInvalidValue);
    CK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
    CK_CUDA(cudaGetLastError()); /* argument errors are not sticky */
    CK_CUDA(cudaMemset(d, 0, sizeof h));
    CK_CUDA(cudaFree(d));
}
END_TEST

START_TEST(device_streams_and_events)
{
    int count = 0;
    CK_CUDA(cudaGetDeviceCount(&count));
    ck_assert_int_eq(count, 1);
    struct cudaDeviceProp p;
    CK_CUDA(cudaGetDeviceProperties(&p, 0));
    ck_assert_str_eq(p.name, "emu (CPU)");
    ck_assert_int_eq(p.warpSize, 32);
    ck_assert_int_eq(p.maxThreadsPerBlock, 1024);
    ck_assert_uint_eq(p.sharedMemPerBlock, 48 * 1024);
    int v = 0;
    CK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    ck_assert_int_eq(v, (int)p.sharedMemPerBlockOptin);
    CK_ERROR(cudaGetDeviceProperties(&p, 1), cudaErrorInvalidDevice);
    CK_ERROR(cudaGetLastError(), cudaErrorInvalidDevice); /* read, so the launch below starts clean */
    size_t free_bytes, total;
    CK_CUDA(cudaMemGetInfo(&free_bytes, &total));
    ck_assert(free_bytes <= total && total > 0);
    ck_assert_str_eq(cudaGetErrorString(cudaErrorIllegalAddress), "an illegal memory access was encountered");
    ck_assert_str_eq(cudaGetErrorName(cudaErrorInvalidConfiguration), "cudaErrorInvalidConfiguration");

    cudaStream_t s;
    cudaEvent_t a, b;
    CK_CUDA(cudaStreamCreate(&s));
    CK_CUDA(cudaEventCreate(&a));
    CK_CUDA(cudaEventCreate(&b));
    CK_CUDA(cudaEventRecord(a, s));
    int out[64];
    CK_CUDA(ek_barrier_rotate(64, out));
    CK_CUDA(cudaEventRecord(b, s));
    CK_CUDA(cudaEventSynchronize(b));
    float ms = -1;
    CK_CUDA(cudaEventElapsedTime(&ms, a, b));
    ck_assert(ms >= 0.0f);
    CK_CUDA(cudaStreamSynchronize(s));
    CK_CUDA(cudaEventDestroy(a));
    CK_CUDA(cudaEventDestroy(b));
    CK_CUDA(cudaStreamDestroy(s));
    ck_assert(is_schedule_inorder());
}
END_TEST

START_TEST(live_allocations_by_size_in_every_state)
{
    int all = emu_live_allocations(0);
    size_t bytes = emu_live_bytes();
    void *a, *b, *c;
    float *d;
    CK_CUDA(cudaMalloc(&a, 1000));
    CK_CUDA(cudaMalloc(&b, 1000));
    CK_CUDA(cudaMalloc(&c, 1001)); /* the same pages as 1000 bytes: counted apart all the same */
    CK_CUDA(cudaMalloc((void **)&d, 64 * sizeof(float)));
    ck_assert_int_eq(emu_live_allocations(1000), 2);
    ck_assert_int_eq(emu_live_allocations(1001), 1);
    ck_assert_int_eq(emu_live_allocations(999), 0);
    ck_assert_int_eq(emu_live_allocations(0), all + 4);
    ck_assert_uint_eq(emu_live_bytes(), bytes + 2001 + 1000 + 64 * sizeof(float));
    void *none;
    CK_CUDA(cudaMalloc(&none, 0)); /* no allocation */
    ck_assert_int_eq(emu_live_allocations(0), all + 4);
    CK_CUDA(cudaFree(a));
    ck_assert_int_eq(emu_live_allocations(1000), 1);
    /* after a sticky error cudaMemGetInfo answers with the error; the count still answers,
     * and a cudaFree that returns the error has freed all the same */
    ek_launch_out_of_bounds(d, 64, 5000);
    CK_ERROR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    size_t f, t;
    CK_ERROR(cudaMemGetInfo(&f, &t), cudaErrorIllegalAddress);
    ck_assert_int_eq(emu_live_allocations(1000), 1);
    CK_ERROR(cudaFree(b), cudaErrorIllegalAddress);
    ck_assert_int_eq(emu_live_allocations(1000), 0);
    ck_assert_int_eq(emu_live_allocations(1001), 1);
    ck_assert_int_eq(emu_live_allocations(0), all + 2);
    ck_assert_uint_eq(emu_live_bytes(), bytes + 1001 + 64 * sizeof(float));
}
END_TEST

/* ---------------------------------------------------------------- kernel resources */

/* The profiles again, with the architecture each one's resource rows come from ("" is the
 * default device: sm_90's rows, the H200's shared memory without its reservation). */
static const struct {
    const char *key;
    int sm;
} RES_PROFILE[] = {{"", 90}, {"h200", 90}, {"a100", 80}, {"l4", 89}, {"t4", 75}};
#define NRES_PROFILES ((int)(sizeof RES_PROFILE / sizeof RES_PROFILE[0]))

/* The largest block that `regs` registers a thread allow in 65536 a block, as a GPU allocates
 * them: a warp's in units of 256, a block's warps rounded up to the SM's 4 partitions. */
static int threads_for_registers(int regs)
{
    int per_warp = (regs * 32 + 255) / 256 * 256;
    int warps = regs > 0 ? 65536 / per_warp / 4 * 4 : 32;
    return warps * 32 < 1024 ? warps * 32 : 1024;
}

static struct cudaFuncAttributes attributes_of(enum erk_kernel k)
{
    struct cudaFuncAttributes a;
    CK_CUDA(cudaFuncGetAttributes(&a, erk_kernel(k)));
    return a;
}

START_TEST(kernel_attributes_come_from_the_gpu_compiler)
{
    setenv("EMU_DEVICE", RES_PROFILE[_i].key, 1);
    const int sm = RES_PROFILE[_i].sm;
    for (int k = ERK_BOUNDED; k <= ERK_TEMPLATE; ++k)
        ck_assert_msg(emu_kernel_resources_known(erk_kernel(k)), "sm_%d: kernel %d has no row", sm, k);
    /* __launch_bounds__(256, 4) caps it at 65536 / (256 x 4) registers, and it needs more */
    struct cudaFuncAttributes a = attributes_of(ERK_BOUNDED);
    ck_assert_int_eq(a.numRegs, 64);
    ck_assert_int_eq(a.maxThreadsPerBlock, 256);
    ck_assert_uint_eq(a.sharedSizeBytes, 0);
    ck_assert_msg(a.localSizeBytes > 0, "sm_%d: the spills take no local memory", sm);
    ck_assert_int_eq(a.maxDynamicSharedSizeBytes, 48 * 1024);
    /* 300 floats of static shared memory, __launch_bounds__(96); the default dynamic ceiling is
     * what the static part leaves of 48 KiB */
    a = attributes_of(ERK_TILE);
    ck_assert_uint_eq(a.sharedSizeBytes, 1200);
    ck_assert_int_eq(a.maxThreadsPerBlock, 96);
    ck_assert_int_eq(a.maxDynamicSharedSizeBytes, 48 * 1024 - 1200);
    ck_assert_int_gt(a.numRegs, 0);
    a = attributes_of(ERK_TEMPLATE);
    ck_assert_uint_eq(a.sharedSizeBytes, 64 * sizeof(float));
    ck_assert_int_eq(a.maxThreadsPerBlock, 1024);
    /* a static kernel and one in an anonymous namespace, which nvcc and g++ name apart */
    ck_assert_int_gt(attributes_of(ERK_STATIC).numRegs, 0);
    ck_assert_int_gt(attributes_of(ERK_ANON).numRegs, 0);
    ck_assert_int_eq(attributes_of(ERK_LIGHT).maxThreadsPerBlock, 1024);
    /* a code path only sm_75 compiles: its registers cap the block there */
    a = attributes_of(ERK_ARCH);
    if (sm == 75)
        ck_assert_msg(a.numRegs > 64, "sm_75: the heavy path has %d registers", a.numRegs);
    else
        ck_assert_msg(a.numRegs <= 32, "sm_%d: the light path has %d registers", sm, a.numRegs);
    ck_assert_int_eq(a.maxThreadsPerBlock, threads_for_registers(a.numRegs));
    ck_assert_int_eq(a.ptxVersion, sm);
    /* a function without a row (this host function) keeps the defaults */
    ck_assert_int_eq(emu_kernel_resources_known((const void *)erk_launch), 0);
    CK_CUDA(cudaFuncGetAttributes(&a, (const void *)erk_launch));
    ck_assert_int_eq(a.numRegs, 0);
    ck_assert_uint_eq(a.sharedSizeBytes, 0);
    ck_assert_int_eq(a.maxThreadsPerBlock, 1024);
    ck_assert_int_eq(a.maxDynamicSharedSizeBytes, 48 * 1024);
}
END_TEST

/* cuda_occupancy.h's answer, computed here from what the runtime reports */
static int calculator_blocks(enum erk_kernel k, int threads, size_t smem)
{
    struct cudaDeviceProp p;
    CK_CUDA(cudaGetDeviceProperties(&p, 0));
    struct cudaFuncAttributes a = attributes_of(k);
    if (threads > a.maxThreadsPerBlock)
        return 0; /* such a block is never launched */
    cudaOccDeviceProp prop = {0};
    prop.computeMajor = p.major;
    prop.computeMinor = p.minor;
    prop.maxThreadsPerBlock = p.maxThreadsPerBlock;
    prop.maxThreadsPerMultiprocessor = p.maxThreadsPerMultiProcessor;
    prop.regsPerBlock = p.regsPerBlock;
    prop.regsPerMultiprocessor = p.regsPerMultiprocessor;
    prop.warpSize = p.warpSize;
    prop.sharedMemPerBlock = p.sharedMemPerBlock;
    prop.sharedMemPerMultiprocessor = p.sharedMemPerMultiprocessor;
    prop.numSms = p.multiProcessorCount;
    prop.sharedMemPerBlockOptin = p.sharedMemPerBlockOptin;
    prop.reservedSharedMemPerBlock = p.reservedSharedMemPerBlock;
    cudaOccFuncAttributes attr = {0};
    attr.maxThreadsPerBlock = a.maxThreadsPerBlock;
    attr.numRegs = a.numRegs;
    attr.sharedSizeBytes = a.sharedSizeBytes;
    attr.partitionedGCConfig = PARTITIONED_GC_OFF;
    attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
    attr.maxDynamicSharedSizeBytes = (size_t)a.maxDynamicSharedSizeBytes;
    attr.numBlockBarriers = 1;
    cudaOccDeviceState state = {CACHE_PREFER_NONE, SHAREDMEM_CARVEOUT_DEFAULT};
    cudaOccResult r = {0};
    ck_assert_int_eq(cudaOccMaxActiveBlocksPerMultiprocessor(&r, &prop, &attr, &state, threads, smem),
                     CUDA_OCC_SUCCESS);
    return r.activeBlocksPerMultiprocessor;
}

START_TEST(occupancy_follows_the_calculator)
{
    setenv("EMU_DEVICE", RES_PROFILE[_i].key, 1);
    static const int THREADS[] = {1, 32, 64, 96, 100, 128, 192, 256, 288, 384, 512, 640, 768, 1000, 1024};
    struct cudaDeviceProp p;
    CK_CUDA(cudaGetDeviceProperties(&p, 0));
    const size_t optin = p.sharedMemPerBlockOptin;
    const size_t SMEM[] = {0, 1, 1000, 8 * 1024, 20 * 1024, 33 * 1024, 48 * 1024 - 1200, 48 * 1024,
                           optin / 4, optin / 2, optin};
    for (int pass = 0; pass < 2; ++pass)
        for (int k = ERK_BOUNDED; k <= ERK_TEMPLATE; ++k) {
            const void *f = erk_kernel(k);
            if (pass == 1) /* opted in to all the profile allows */
                CK_CUDA(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)(optin - attributes_of(k).sharedSizeBytes)));
            for (size_t t = 0; t < sizeof THREADS / sizeof THREADS[0]; ++t)
                for (size_t m = 0; m < sizeof SMEM / sizeof SMEM[0]; ++m) {
                    int got = -1, flagged = -1;
                    CK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&got, f, THREADS[t], SMEM[m]));
                    int want = calculator_blocks(k, THREADS[t], SMEM[m]);
                    ck_assert_msg(got == want,
                                  "%s, kernel %d, %d threads, %zu bytes (opted in: %d): got %d blocks, "
                                  "want %d", RES_PROFILE[_i].key, k, THREADS[t], SMEM[m], pass, got, want);
                    /* no partitioned global caching on these architectures: the flag changes nothing */
                    CK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
                        &flagged, f, THREADS[t], SMEM[m], cudaOccupancyDisableCachingOverride));
                    ck_assert_int_eq(flagged, got);
                }
        }
    int n = 0;
    const void *light = erk_kernel(ERK_LIGHT);
    CK_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(NULL, light, 32, 0), cudaErrorInvalidValue);
    CK_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, NULL, 32, 0), cudaErrorInvalidDeviceFunction);
    CK_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, light, 0, 0), cudaErrorInvalidValue);
    CK_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, light, 32, 0, 2),
             cudaErrorInvalidValue);
    CK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
    CK_CUDA(cudaGetLastError());
}
END_TEST

/* Worked by hand from the hardware's rules: 64 registers a thread take 2048 a warp, 16384 a
 * 256-thread block, a quarter of an SM's 65536; a block's shared memory is its dynamic part plus
 * the 1 KiB the driver reserves (compute capability 8.0 and up), rounded up to 128 bytes (256 on
 * 7.5). */
static const struct occupancy_case {
    const char *profile;
    enum erk_kernel kernel;
    int threads;
    int smem_kb; /* dynamic; above 48 the kernel opts in to it first */
    int blocks;
} OCCUPANCY_CASES[] = {
    {"h200", ERK_BOUNDED, 256, 0, 4},  /* registers: 65536 / 16384 */
    {"h200", ERK_BOUNDED, 256, 100, 2}, /* 228 KiB / 101 KiB */
    {"h200", ERK_BOUNDED, 128, 0, 8},
    {"h200", ERK_BOUNDED, 512, 0, 0},  /* over its __launch_bounds__ */
    {"a100", ERK_BOUNDED, 256, 0, 4},
    {"a100", ERK_BOUNDED, 256, 48, 3}, /* 164 KiB / 49 KiB */
    {"a100", ERK_BOUNDED, 256, 100, 1},
    {"l4", ERK_BOUNDED, 256, 0, 4},
    {"l4", ERK_BOUNDED, 256, 48, 2},   /* 100 KiB / 49 KiB */
    {"l4", ERK_BOUNDED, 128, 0, 8},
    {"t4", ERK_BOUNDED, 256, 0, 4},    /* and 32 warps / 8 */
    {"t4", ERK_BOUNDED, 256, 48, 1},   /* 64 KiB / 48 KiB, nothing reserved */
    {"t4", ERK_BOUNDED, 128, 0, 8},
    {"h200", ERK_LIGHT, 1024, 0, 2},   /* warps: 64 / 32 */
    {"a100", ERK_LIGHT, 1024, 0, 2},
    {"l4", ERK_LIGHT, 1024, 0, 1},     /* 48 / 32 */
    {"t4", ERK_LIGHT, 1024, 0, 1},
    {"h200", ERK_LIGHT, 64, 0, 32},    /* blocks an SM */
    {"l4", ERK_LIGHT, 64, 0, 24},
    {"t4", ERK_LIGHT, 64, 0, 16},
    {"h200", ERK_TILE, 96, 0, 21},     /* warps: 64 / 3 */
    {"t4", ERK_TILE, 96, 0, 10},       /* 32 / 3 */
    {"t4", ERK_TILE, 96, 30, 2},       /* 64 KiB / (1200 + 30 KiB, rounded to 256) */
    {"h200", ERK_TILE, 96, 100, 2},    /* 228 KiB / (1200 + 1024 + 100 KiB, to 128) */
};
#define NOCCUPANCY_CASES ((int)(sizeof OCCUPANCY_CASES / sizeof OCCUPANCY_CASES[0]))

START_TEST(occupancy_worked_by_hand)
{
    const struct occupancy_case *oc = &OCCUPANCY_CASES[_i];
    setenv("EMU_DEVICE", oc->profile, 1);
    const void *k = erk_kernel(oc->kernel);
    ck_assert_msg(attributes_of(ERK_LIGHT).numRegs <= 32, "the light kernel has %d registers",
                  attributes_of(ERK_LIGHT).numRegs);
    if (oc->smem_kb > 48)
        CK_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, oc->smem_kb * 1024));
    int got = -1;
    CK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&got, k, oc->threads, (size_t)oc->smem_kb * 1024));
    ck_assert_msg(got == oc->blocks, "%s, kernel %d, %d threads, %d KiB: got %d blocks, want %d",
                  oc->profile, oc->kernel, oc->threads, oc->smem_kb, got, oc->blocks);
}
END_TEST

START_TEST(occupancy_needs_the_opt_in)
{
    setenv("EMU_DEVICE", "h200", 1);
    int n = -1;
    /* 100 KiB without cudaFuncSetAttribute: no block can have it */
    CK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, erk_kernel(ERK_BOUNDED), 256, 100 * 1024));
    ck_assert_int_eq(n, 0);
    /* the dynamic shared memory a block may have for 3 blocks an SM: the calculator's answer,
     * 228 KiB / 3 rounded down to 128 bytes, leaves the driver's 1 KiB reservation in; without
     * it, 3 blocks fit */
    const void *k = erk_kernel(ERK_BOUNDED);
    CK_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
    size_t avail = 0;
    CK_CUDA(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, k, 3, 256));
    ck_assert_uint_eq(avail, 228 * 1024 / 3 / 128 * 128);
    CK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, 256, avail - 1024));
    ck_assert_int_eq(n, 3);
    CK_ERROR(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, k, 5, 256), cudaErrorInvalidValue); /* 4 fit */
}
END_TEST

START_TEST(potential_block_size)
{
    static const struct {
        const char *profile;
        enum erk_kernel kernel;
        int block, grid;
    } CASES[] = {
        {"h200", ERK_LIGHT, 1024, 2 * 132}, /* 2048 threads an SM at once */
        {"l4", ERK_LIGHT, 768, 2 * 58},     /* 1536: two blocks of 768, not one of 1024 */
        {"t4", ERK_LIGHT, 1024, 40},
        {"h200", ERK_BOUNDED, 256, 4 * 132},
        {"a100", ERK_TILE, 64, 32 * 108},   /* 32 blocks of 64 fill the SM; 21 of 96 do not */
    };
    setenv("EMU_DEVICE", CASES[_i].profile, 1);
    int grid = -1, block = -1;
    CK_CUDA(erk_potential_block_size(CASES[_i].kernel, 0, &grid, &block));
    ck_assert_int_eq(block, CASES[_i].block);
    ck_assert_int_eq(grid, CASES[_i].grid);
}
END_TEST

/* Refused launches run nothing: their outputs stay 0 (erk_launch) */
static void ck_launch_refused(enum erk_kernel k, int threads, size_t smem, cudaError_t want)
{
    static float out[1024];
    for (int i = 0; i < 1024; ++i)
        out[i] = -1.0f;
    cudaError_t got = erk_launch(k, threads, smem, out);
    ck_assert_msg(got == want, "kernel %d, %d threads, %zu bytes of shared memory: got %s, want %s", k,
                  threads, smem, cudaGetErrorName(got), cudaGetErrorName(want));
    for (int i = 0; i < threads && i < 1024; ++i)
        ck_assert_msg(out[i] == 0.0f, "kernel %d, %d threads: a refused launch wrote out[%d] = %g", k,
                      threads, i, (double)out[i]);
    CK_ERROR(cudaGetLastError(), cudaSuccess); /* read by erk_launch: not sticky */
}

static void ck_launch_runs(enum erk_kernel k, int threads, size_t smem)
{
    static float out[1024];
    cudaError_t got = erk_launch(k, threads, smem, out);
    ck_assert_msg(got == cudaSuccess, "kernel %d, %d threads, %zu bytes of shared memory: %s", k, threads,
                  smem, cudaGetErrorName(got));
    for (int i = 0; i < threads; ++i) {
        float want = k == ERK_TILE ? (float)((299 - i) % 17) : 2.0f * (float)(i % 17) + 1.0f;
        ck_assert_msg(out[i] == want, "kernel %d, %d threads: out[%d] = %g, want %g", k, threads, i,
                      (double)out[i], (double)want);
    }
}

START_TEST(launches_over_the_registers_or_bounds_fail)
{
    setenv("EMU_DEVICE", RES_PROFILE[_i].key, 1);
    const int sm = RES_PROFILE[_i].sm;
    /* 1024 threads of sm_75's heavy path need more than 65536 registers; elsewhere it is light */
    const int arch_max = attributes_of(ERK_ARCH).maxThreadsPerBlock;
    if (sm == 75) {
        ck_assert_int_lt(arch_max, 1024);
        ck_launch_refused(ERK_ARCH, 1024, 0, cudaErrorLaunchOutOfResources);
        ck_launch_refused(ERK_ARCH, arch_max + 1, 0, cudaErrorLaunchOutOfResources);
        ck_launch_runs(ERK_ARCH, arch_max, 0);
    } else {
        ck_assert_int_eq(arch_max, 1024);
        ck_launch_runs(ERK_ARCH, 1024, 0);
    }
    /* over __launch_bounds__, by a thread: refused, whatever the registers */
    ck_launch_refused(ERK_TILE, 97, 0, cudaErrorLaunchOutOfResources);
    ck_launch_refused(ERK_TILE, 128, 0, cudaErrorLaunchOutOfResources);
    ck_launch_runs(ERK_TILE, 96, 0);
    ck_launch_refused(ERK_BOUNDED, 288, 0, cudaErrorLaunchOutOfResources);
    CK_CUDA(erk_launch(ERK_BOUNDED, 256, 0, NULL));
    /* the block's shape does not matter, its threads do; and a bad shape is still a bad
     * configuration first */
    ck_launch_refused(ERK_LIGHT, 1025, 0, cudaErrorInvalidConfiguration);
}
END_TEST

START_TEST(static_shared_memory_counts_against_the_limit)
{
    setenv("EMU_DEVICE", RES_PROFILE[_i].key, 1);
    struct cudaDeviceProp p;
    CK_CUDA(cudaGetDeviceProperties(&p, 0));
    /* the 1200 static bytes and the dynamic ones share the 48 KiB a block has by default */
    ck_launch_runs(ERK_TILE, 96, 48 * 1024 - 1200);
    ck_launch_refused(ERK_TILE, 96, 48 * 1024 - 1200 + 4, cudaErrorInvalidValue);
    /* and the device's opt-in ceiling */
    const void *k = erk_kernel(ERK_TILE);
    const int optin = (int)p.sharedMemPerBlockOptin;
    CK_ERROR(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - 1200 + 4),
             cudaErrorInvalidValue);
    CK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
    CK_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - 1200));
    ck_assert_int_eq(attributes_of(ERK_TILE).maxDynamicSharedSizeBytes, optin - 1200);
    ck_launch_runs(ERK_TILE, 96, (size_t)optin - 1200);
    ck_launch_refused(ERK_TILE, 96, (size_t)optin - 1200 + 1, cudaErrorInvalidValue);
}
END_TEST

static Suite *emu_suite(void)
{
    Suite *s = suite_create("emu");
    struct {
        const char *name;
        const TTest *test;
        int loops;
    } loops[] = {
        {"barriers", barrier_orders_the_phases, NUM_SCHEDULES},
        {"barriers", syncthreads_count_and_or, NUM_SCHEDULES},
        {"barriers", exited_threads_count_as_arrived, NUM_SCHEDULES},
        {"warps", shuffles_with_widths, NUM_SCHEDULES},
        {"warps", partial_warps_and_exited_lanes, NUM_SCHEDULES},
        {"warps", wmma_bf16_mma, 4},
        {"atomics", atomics_under_contention, 2},
        {"shared", dynamic_shared_memory, NUM_SCHEDULES},
        {"runtime", device_profiles_report_their_limits, NPROFILES},
        {"shared", static_shared_memory_per_block, NUM_SCHEDULES},
        {"grids", grids_in_one_two_and_three_dimensions, NUM_SCHEDULES},
        {"grids", block_order_follows_the_schedule, NUM_SCHEDULES},
        {"grids", several_os_threads_give_the_same_results, NUM_SCHEDULES},
        {"groups", cooperative_groups_subset, NUM_SCHEDULES},
        {"groups", pipeline_read_before_wait_sees_the_poison, NUM_SCHEDULES},
        {"groups", pipeline_wait_prior_0_lands_every_group, NUM_SCHEDULES},
        {"groups", pipeline_wait_prior_1_leaves_the_newest_group, NUM_SCHEDULES},
        {"errors", illegal_addresses_that_fault, 4},
        {"errors", trap_assert_and_division_stop_the_kernel, 3},
        {"resources", kernel_attributes_come_from_the_gpu_compiler, NRES_PROFILES},
        {"resources", occupancy_follows_the_calculator, NRES_PROFILES},
        {"resources", occupancy_worked_by_hand, NOCCUPANCY_CASES},
        {"resources", potential_block_size, 5},
        {"resources", launches_over_the_registers_or_bounds_fail, NRES_PROFILES},
        {"resources", static_shared_memory_counts_against_the_limit, NRES_PROFILES},
    };
    const struct {
        const char *name;
        const TTest *test;
    } singles[] = {
        {"barriers", divergent_barriers_are_an_error},
        {"barriers", warp_op_a_lane_never_joins_is_an_error},
        {"races", shuffled_schedule_exposes_a_missing_barrier},
        {"warps", ballot_any_all_over_masks},
        {"warps", warp_reductions_and_match},
        {"shared", dynamic_shared_memory_limit},
        {"grids", launch_forms_and_symbols},
        {"groups", pipeline_primitives_copy},
        {"groups", pipeline_uncommitted_copies_stay_in_flight},
        {"groups", half_and_bfloat16},
        {"errors", invalid_configuration},
        {"errors", illegal_address_is_sticky_and_reported},
        {"errors", write_into_the_padding_is_caught_after_the_kernel},
        {"errors", in_bounds_edges_are_fine},
        {"errors", stack_overflow_names_the_thread_and_the_remedy},
        {"errors", copies_check_their_pointers},
        {"runtime", device_streams_and_events},
        {"runtime", live_allocations_by_size_in_every_state},
        {"resources", occupancy_needs_the_opt_in},
    };
    const char *cases[] = {"barriers", "races", "warps", "atomics", "shared", "grids",
                           "groups", "errors", "runtime", "resources"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        TCase *tc = tcase_create(cases[c]);
        tcase_set_timeout(tc, 60);
        for (size_t i = 0; i < sizeof loops / sizeof loops[0]; ++i)
            if (!strcmp(loops[i].name, cases[c]))
                tcase_add_loop_test(tc, loops[i].test, 0, loops[i].loops);
        for (size_t i = 0; i < sizeof singles / sizeof singles[0]; ++i)
            if (!strcmp(singles[i].name, cases[c]))
                tcase_add_test(tc, singles[i].test);
        if (!strcmp(cases[c], "runtime")) {
            tcase_add_exit_test(tc, bad_schedule_is_rejected, EXIT_FAILURE);
            tcase_add_exit_test(tc, unknown_device_profile_ends_the_program, 2);
        }
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    /* each test sets the schedule it needs; none inherits one from the caller */
    unsetenv("EMU_SCHEDULE");
    unsetenv("EMU_THREADS");
    unsetenv("EMU_STACK_KB");
    unsetenv("EMU_DEVICE");
    SRunner *sr = srunner_create(emu_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr), run = srunner_ntests_run(sr);
    srunner_free(sr);
    const char *counts = getenv("GRADE_COUNTS"); /* make test's tally */
    FILE *f = counts && *counts ? fopen(counts, "a") : NULL;
    if (f) {
        fprintf(f, "emu\thost\t%d\t%d\n", run - failed, failed);
        fclose(f);
    }
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
