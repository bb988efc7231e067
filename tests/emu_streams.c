/* emu_streams.c: the tests of the emu's stream scheduler (make emu-test): work on created
 * streams waits for a synchronisation and then runs in an order that respects only stream
 * order, events and the legacy default stream, shuffled from a seed; the schedule it ran is
 * recorded (harness/emu/README.md, "Streams"; emu_streams.h).
 *
 * Check runs every test in its own process, so a stream, an order set by emu_shuffle_streams or
 * a sticky error of one test never reaches the next. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <emu_memory.h>
#include <emu_streams.h>

#include "capture.h"
#include "emu_streams_kernels.h"

#define CK_CUDA(call)                                                                         \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorName(e_));             \
    } while (0)

#define CK_ERROR(call, want)                                                                  \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        ck_assert_msg(e_ == (want), "%s: got %s, want %s", #call, cudaGetErrorName(e_),       \
                      cudaGetErrorName(want));                                                \
    } while (0)

#define N 1000
#define BYTES (N * sizeof(float))

static void set_order(const char *order)
{
    setenv("EMU_STREAM_ORDER", order, 1);
}

static void shuffle_seed(unsigned seed)
{
    char v[32];
    snprintf(v, sizeof v, "shuffle:%u", seed);
    set_order(v);
}

/* The recorded operations since the last emu_schedule_reset, as an array (free it). */
static struct emu_op *schedule(size_t *count)
{
    *count = emu_schedule_count();
    struct emu_op *ops = calloc(*count + 1, sizeof *ops);
    ck_assert_ptr_nonnull(ops);
    for (size_t i = 0; i < *count; ++i)
        ck_assert_int_eq(emu_schedule_get(i, &ops[i]), 0);
    return ops;
}

/* The recorded op of kind k on stream s, the first of them issued at or after `from`. */
static const struct emu_op *find_op(const struct emu_op *ops, size_t n, enum emu_op_kind k,
                                    int stream, unsigned long long from)
{
    const struct emu_op *best = NULL;
    for (size_t i = 0; i < n; ++i)
        if (ops[i].kind == k && ops[i].stream == stream && ops[i].issue >= from &&
            (!best || ops[i].issue < best->issue))
            best = &ops[i];
    return best;
}

/* ---------------------------------------------------------------- two streams and an event */

enum sync_how { SYNC_STREAMS, SYNC_DEVICE };

/* The pipeline of the chapter on streams, in small: an H2D copy on stream 1, an event recorded
 * after it, a kernel on stream 2 (waiting for the event when with_wait) that reads what the copy
 * wrote, and the D2H copy of its result on stream 2. Returns how many results are wrong. */
static int copy_then_kernel(int with_wait, enum sync_how how)
{
    float *h_in, *h_out, *d_in, *d_out;
    CK_CUDA(cudaMallocHost((void **)&h_in, BYTES));
    CK_CUDA(cudaMallocHost((void **)&h_out, BYTES));
    CK_CUDA(cudaMalloc((void **)&d_in, BYTES));
    CK_CUDA(cudaMalloc((void **)&d_out, BYTES));
    for (int i = 0; i < N; ++i)
        h_in[i] = (float)(i + 1); /* the kernel on zeros gives 1: wrong everywhere */
    CK_CUDA(cudaMemset(d_in, 0, BYTES));
    cudaStream_t s1, s2;
    cudaEvent_t copied;
    CK_CUDA(cudaStreamCreate(&s1));
    CK_CUDA(cudaStreamCreate(&s2));
    CK_CUDA(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    CK_CUDA(cudaMemcpyAsync(d_in, h_in, BYTES, cudaMemcpyHostToDevice, s1));
    CK_CUDA(cudaEventRecord(copied, s1));
    if (with_wait)
        CK_CUDA(cudaStreamWaitEvent(s2, copied, 0));
    esk_affine(d_in, d_out, N, 2.0f, 1.0f, s2);
    CK_CUDA(cudaGetLastError());
    CK_CUDA(cudaMemcpyAsync(h_out, d_out, BYTES, cudaMemcpyDeviceToHost, s2));
    if (how == SYNC_STREAMS) {
        CK_CUDA(cudaStreamSynchronize(s2)); /* the host reads h_out after this */
    } else {
        CK_CUDA(cudaDeviceSynchronize());
    }
    int wrong = 0;
    for (int i = 0; i < N; ++i)
        wrong += h_out[i] != 2.0f * (float)(i + 1) + 1.0f;
    CK_CUDA(cudaStreamSynchronize(s1));
    CK_CUDA(cudaEventDestroy(copied));
    CK_CUDA(cudaStreamDestroy(s1));
    CK_CUDA(cudaStreamDestroy(s2));
    CK_CUDA(cudaFree(d_in));
    CK_CUDA(cudaFree(d_out));
    CK_CUDA(cudaFreeHost(h_in));
    CK_CUDA(cudaFreeHost(h_out));
    return wrong;
}

START_TEST(event_dependency_is_right_in_every_order)
{
    set_order("inorder");
    ck_assert_int_eq(copy_then_kernel(1, SYNC_STREAMS), 0);
    ck_assert_int_eq(copy_then_kernel(1, SYNC_DEVICE), 0);
    for (unsigned seed = 1; seed <= 40; ++seed) {
        shuffle_seed(seed);
        ck_assert_msg(copy_then_kernel(1, SYNC_STREAMS) == 0, "shuffle:%u, stream sync", seed);
        ck_assert_msg(copy_then_kernel(1, SYNC_DEVICE) == 0, "shuffle:%u, device sync", seed);
    }
    /* emu_shuffle_streams (what gpu_shuffle_schedule calls) overrides the environment */
    set_order("inorder");
    for (unsigned long long seed = 1; seed <= 10; ++seed) {
        emu_shuffle_streams(seed * 7919);
        ck_assert_int_eq(copy_then_kernel(1, SYNC_DEVICE), 0);
    }
}
END_TEST

START_TEST(missing_wait_gives_a_wrong_answer_under_some_seed)
{
    /* issue order hides it when the host waits for everything at once */
    set_order("inorder");
    ck_assert_int_eq(copy_then_kernel(0, SYNC_DEVICE), 0);
    int caught = 0;
    for (unsigned seed = 1; seed <= 8; ++seed) {
        shuffle_seed(seed);
        caught += copy_then_kernel(0, SYNC_DEVICE) > 0;
    }
    ck_assert_msg(caught > 0, "no seed of 8 ran the kernel before the copy it did not wait for");
    ck_assert_msg(caught < 8, "every seed ran the kernel first: the order is not shuffled");
    /* synchronising stream 2 alone runs only what stream 2 declared it needs: not the copy of
     * stream 1, in any order */
    set_order("inorder");
    emu_schedule_reset();
    ck_assert_int_eq(copy_then_kernel(0, SYNC_STREAMS), N);
    size_t n;
    struct emu_op *ops = schedule(&n);
    const struct emu_op *h2d = NULL, *kernel = NULL;
    for (size_t i = 0; i < n; ++i) {
        if (ops[i].kind == EMU_OP_MEMCPY && !strcmp(ops[i].name, "H2D"))
            h2d = &ops[i];
        if (ops[i].kind == EMU_OP_KERNEL)
            kernel = &ops[i];
    }
    ck_assert(h2d && kernel);
    ck_assert(h2d->issue < kernel->issue && h2d->run > kernel->run);
    free(ops);
}
END_TEST

/* ---------------------------------------------------------------- staging buffers */

/* Copies `src` (N floats of 1) to the device on a stream, lets the host write 2 into it, copies
 * the device buffer back into pinned memory; `sync_between`: the host waits for the first copy
 * before writing. Returns the value the device got (every element must agree). */
static float staged_value(float *src, int sync_between)
{
    float *d, *back;
    cudaStream_t s;
    CK_CUDA(cudaMalloc((void **)&d, BYTES));
    CK_CUDA(cudaMallocHost((void **)&back, BYTES));
    CK_CUDA(cudaStreamCreate(&s));
    for (int i = 0; i < N; ++i)
        src[i] = 1.0f;
    CK_CUDA(cudaMemcpyAsync(d, src, BYTES, cudaMemcpyHostToDevice, s));
    if (sync_between)
        CK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < N; ++i)
        src[i] = 2.0f; /* the next chunk, written into the same staging buffer */
    CK_CUDA(cudaMemcpyAsync(back, d, BYTES, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    float v = back[0];
    for (int i = 1; i < N; ++i)
        ck_assert_msg(back[i] == v, "back[%d] = %g, back[0] = %g", i, back[i], v);
    CK_CUDA(cudaStreamDestroy(s));
    CK_CUDA(cudaFreeHost(back));
    CK_CUDA(cudaFree(d));
    return v;
}

START_TEST(a_pinned_buffer_is_read_when_the_copy_runs)
{
    float *pinned;
    CK_CUDA(cudaMallocHost((void **)&pinned, BYTES));
    ck_assert_float_eq(staged_value(pinned, 0), 2.0f); /* the bug a pinned pipeline must avoid */
    ck_assert_float_eq(staged_value(pinned, 1), 1.0f);
    CK_CUDA(cudaFreeHost(pinned));

    /* registered memory is pinned too */
    float *registered = malloc(BYTES);
    CK_CUDA(cudaHostRegister(registered, BYTES, cudaHostRegisterDefault));
    CK_ERROR(cudaHostRegister(registered + 10, 4, cudaHostRegisterDefault),
             cudaErrorHostMemoryAlreadyRegistered);
    ck_assert_float_eq(staged_value(registered, 0), 2.0f);
    CK_CUDA(cudaHostUnregister(registered));
    CK_ERROR(cudaHostUnregister(registered), cudaErrorHostMemoryNotRegistered);
    CK_ERROR(cudaFreeHost(registered), cudaErrorInvalidValue); /* not cudaMallocHost's */
    CK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
    CK_CUDA(cudaGetLastError()); /* read once, then cleared */

    /* pageable memory is staged when the copy is issued: the host may reuse it at once */
    emu_schedule_reset();
    ck_assert_float_eq(staged_value(registered, 0), 1.0f);
    size_t n;
    struct emu_op *ops = schedule(&n);
    int h2d = 0;
    for (size_t i = 0; i < n; ++i)
        if (ops[i].kind == EMU_OP_MEMCPY && !strcmp(ops[i].name, "H2D")) {
            ck_assert_int_eq(ops[i].pageable, 1);
            ck_assert_int_eq(ops[i].host_sync, 0);
            ck_assert_uint_eq(ops[i].bytes, BYTES);
            ++h2d;
        } else if (ops[i].kind == EMU_OP_MEMCPY && !strcmp(ops[i].name, "D2H")) {
            ck_assert_int_eq(ops[i].pageable, 0); /* into pinned memory */
        }
    ck_assert_int_eq(h2d, 1);
    free(ops);
    free(registered);
}
END_TEST

START_TEST(a_copy_to_pageable_memory_waits_for_its_stream)
{
    float *d, *pageable = malloc(BYTES);
    cudaStream_t s;
    CK_CUDA(cudaMalloc((void **)&d, BYTES));
    CK_CUDA(cudaStreamCreate(&s));
    CK_CUDA(cudaMemsetAsync(d, 0, BYTES, s));
    memset(pageable, 0xff, BYTES);
    emu_schedule_reset();
    CK_CUDA(cudaMemcpyAsync(pageable, d, BYTES, cudaMemcpyDeviceToHost, s));
    /* no synchronisation: it has landed, after the memset before it */
    for (int i = 0; i < N; ++i)
        ck_assert_float_eq(pageable[i], 0.0f);
    size_t n;
    struct emu_op *ops = schedule(&n);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(ops[0].kind, EMU_OP_MEMSET);
    ck_assert_int_eq(ops[1].kind, EMU_OP_MEMCPY);
    ck_assert_int_eq(ops[1].host_sync, 1);
    ck_assert_int_eq(ops[1].pageable, 1);
    ck_assert_int_eq(ops[1].stream, emu_stream_index(s));
    free(ops);
    CK_CUDA(cudaStreamDestroy(s));
    CK_CUDA(cudaFree(d));
    free(pageable);
}
END_TEST

/* ---------------------------------------------------------------- the legacy default stream */

START_TEST(legacy_stream_drains_blocking_streams_only)
{
    set_order("inorder");
    unsigned char *a, *b, ha[64], hb[64];
    cudaStream_t blocking, nonblocking;
    CK_CUDA(cudaMalloc((void **)&a, 64));
    CK_CUDA(cudaMalloc((void **)&b, 64));
    CK_CUDA(cudaMemset(a, 0, 64));
    CK_CUDA(cudaMemset(b, 0, 64));
    CK_CUDA(cudaStreamCreate(&blocking));
    CK_CUDA(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking));
    CK_CUDA(cudaMemsetAsync(a, 1, 64, blocking));
    CK_CUDA(cudaMemsetAsync(b, 2, 64, nonblocking));
    /* a blocking copy is a legacy-stream operation: it waits for the blocking stream only */
    CK_CUDA(cudaMemcpy(ha, a, 64, cudaMemcpyDeviceToHost));
    CK_CUDA(cudaMemcpy(hb, b, 64, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; ++i) {
        ck_assert_int_eq(ha[i], 1);
        ck_assert_int_eq(hb[i], 0);
    }
    /* so does a kernel launched on the legacy stream */
    float *f;
    CK_CUDA(cudaMalloc((void **)&f, BYTES));
    emu_schedule_reset();
    CK_CUDA(cudaMemsetAsync(f, 0, BYTES, blocking));
    esk_affine(f, f, N, 1.0f, 1.0f, 0);
    CK_CUDA(cudaGetLastError());
    size_t n;
    struct emu_op *ops = schedule(&n);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(ops[0].kind, EMU_OP_MEMSET);
    ck_assert_int_eq(ops[0].stream, emu_stream_index(blocking));
    ck_assert_int_eq(ops[0].host_sync, 0);
    ck_assert_int_eq(ops[1].kind, EMU_OP_KERNEL);
    ck_assert_str_eq(ops[1].name, "affine_kernel");
    ck_assert_int_eq(ops[1].stream, 0);
    ck_assert_int_eq(ops[1].host_sync, 1);
    free(ops);
    /* the non-blocking stream's memset is still queued; its own synchronisation runs it */
    CK_CUDA(cudaStreamSynchronize(nonblocking));
    CK_CUDA(cudaMemcpy(hb, b, 64, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; ++i)
        ck_assert_int_eq(hb[i], 2);
    /* cudaStreamLegacy and cudaStreamPerThread are the legacy stream */
    ck_assert_int_eq(emu_stream_index(cudaStreamLegacy), 0);
    ck_assert_int_eq(emu_stream_index(cudaStreamPerThread), 0);
    CK_CUDA(cudaStreamDestroy(blocking));
    CK_CUDA(cudaStreamDestroy(nonblocking));
    CK_CUDA(cudaFree(a));
    CK_CUDA(cudaFree(b));
    CK_CUDA(cudaFree(f));
}
END_TEST

/* ---------------------------------------------------------------- the schedule */

START_TEST(schedule_records_every_op_in_dependency_order)
{
    for (unsigned seed = 0; seed <= 12; ++seed) {
        if (seed == 0)
            set_order("inorder");
        else
            shuffle_seed(seed);
        emu_schedule_reset();
        ck_assert_int_eq(copy_then_kernel(1, SYNC_DEVICE), 0);
        size_t n;
        struct emu_op *ops = schedule(&n);
        /* the legacy memset, then streams 1 and 2 of this run: find them by their kinds */
        const struct emu_op *memset_op = find_op(ops, n, EMU_OP_MEMSET, 0, 0);
        ck_assert_ptr_nonnull(memset_op);
        ck_assert_int_eq(memset_op->host_sync, 1);
        const struct emu_op *h2d = NULL;
        for (size_t i = 0; i < n; ++i)
            if (ops[i].kind == EMU_OP_MEMCPY && !strcmp(ops[i].name, "H2D"))
                h2d = &ops[i];
        ck_assert_ptr_nonnull(h2d);
        const int s1 = h2d->stream, s2 = s1 + 1;
        ck_assert_int_gt(s1, 0);
        const struct emu_op *rec = find_op(ops, n, EMU_OP_EVENT_RECORD, s1, 0);
        const struct emu_op *wait = find_op(ops, n, EMU_OP_EVENT_WAIT, s2, 0);
        const struct emu_op *kernel = find_op(ops, n, EMU_OP_KERNEL, s2, 0);
        const struct emu_op *d2h = find_op(ops, n, EMU_OP_MEMCPY, s2, 0);
        ck_assert(rec && wait && kernel && d2h);
        ck_assert_str_eq(kernel->name, "affine_kernel");
        ck_assert_str_eq(d2h->name, "D2H");
        ck_assert_uint_eq(h2d->bytes, BYTES);
        ck_assert_uint_eq(d2h->bytes, BYTES);
        /* issue order is the program's; run order respects the stream and the event */
        ck_assert(h2d->issue < rec->issue && rec->issue < wait->issue &&
                  wait->issue < kernel->issue && kernel->issue < d2h->issue);
        ck_assert_int_eq(wait->after, (long long)rec->issue);
        ck_assert_int_eq(wait->event, rec->event);
        ck_assert(h2d->run < rec->run && rec->run < wait->run && wait->run < kernel->run &&
                  kernel->run < d2h->run);
        ck_assert(memset_op->run < h2d->run);
        for (size_t i = 0; i < n; ++i) {
            ck_assert(ops[i].start_ms <= ops[i].end_ms);
            ck_assert_int_eq(ops[i].skipped, 0);
            if (i > 0)
                ck_assert(ops[i].run == ops[i - 1].run + 1 && ops[i].start_ms >= ops[i - 1].end_ms);
        }
        free(ops);
    }
    /* a wait on an event never recorded is met at once */
    cudaStream_t s;
    cudaEvent_t never;
    CK_CUDA(cudaStreamCreate(&s));
    CK_CUDA(cudaEventCreate(&never));
    emu_schedule_reset();
    CK_CUDA(cudaStreamWaitEvent(s, never, 0));
    CK_CUDA(cudaStreamSynchronize(s));
    ck_assert_uint_eq(emu_schedule_count(), 1);
    struct emu_op op;
    ck_assert_int_eq(emu_schedule_get(0, &op), 0);
    ck_assert_int_eq(op.kind, EMU_OP_EVENT_WAIT);
    ck_assert_int_eq(op.after, -1);
    ck_assert_int_eq(emu_schedule_get(1, &op), -1);
    CK_CUDA(cudaEventDestroy(never));
    CK_CUDA(cudaStreamDestroy(s));
}
END_TEST

/* Four memsets on each of two independent streams, then cudaDeviceSynchronize: the streams of
 * the eight operations in the order they ran, as a string of '1' and '2'. */
static void independent_order(char out[9])
{
    unsigned char *d;
    cudaStream_t s[2];
    CK_CUDA(cudaMalloc((void **)&d, 8));
    CK_CUDA(cudaStreamCreate(&s[0]));
    CK_CUDA(cudaStreamCreate(&s[1]));
    emu_schedule_reset();
    for (int k = 0; k < 4; ++k)
        for (int j = 0; j < 2; ++j)
            CK_CUDA(cudaMemsetAsync(d + 4 * j + k, k, 1, s[j]));
    CK_CUDA(cudaDeviceSynchronize());
    size_t n;
    struct emu_op *ops = schedule(&n);
    ck_assert_uint_eq(n, 8);
    int first = emu_stream_index(s[0]);
    unsigned long long last_issue[2] = {0, 0};
    int seen[2] = {0, 0};
    for (size_t i = 0; i < n; ++i) {
        int j = ops[i].stream - first;
        ck_assert(j == 0 || j == 1);
        /* stream order holds within each stream */
        ck_assert(!seen[j] || ops[i].issue > last_issue[j]);
        seen[j] = 1;
        last_issue[j] = ops[i].issue;
        out[i] = (char)('1' + j);
    }
    out[8] = 0;
    free(ops);
    CK_CUDA(cudaStreamDestroy(s[0]));
    CK_CUDA(cudaStreamDestroy(s[1]));
    CK_CUDA(cudaFree(d));
}

START_TEST(independent_streams_interleave_by_seed)
{
    char order[9], first[9];
    set_order("inorder");
    independent_order(order);
    ck_assert_str_eq(order, "12121212"); /* issue order */
    shuffle_seed(1);
    independent_order(first);
    int differs = 0;
    for (unsigned seed = 2; seed <= 6; ++seed) {
        shuffle_seed(seed);
        independent_order(order);
        differs += strcmp(order, first) != 0;
    }
    ck_assert_msg(differs > 0, "six seeds ran two independent streams in one order, %s", first);
    /* the same seed, the same order */
    shuffle_seed(1);
    independent_order(order);
    ck_assert_str_eq(order, first);

    /* and the record, as a table */
    char path[] = "/tmp/emu_schedule_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(emu_schedule_write_tsv(path), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    int lines = 0;
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_msg(!strncmp(line, "issue\trun\tstream\tkind\tname\tbytes\tstart_ms\tend_ms", 48), "%s", line);
    while (fgets(line, sizeof line, f)) {
        ck_assert_msg(strstr(line, "\tmemset\tmemset\t1\t"), "%s", line);
        ++lines;
    }
    fclose(f);
    unlink(path);
    ck_assert_int_eq(lines, 8);
    ck_assert_int_eq(emu_schedule_write_tsv("/nonexistent/dir/x.tsv"), -1);
}
END_TEST

/* ---------------------------------------------------------------- handles */

START_TEST(live_streams_and_events_are_counted)
{
    int streams = emu_live_streams(), events = emu_live_events();
    cudaStream_t s[2];
    cudaEvent_t e[3];
    CK_CUDA(cudaStreamCreate(&s[0]));
    CK_CUDA(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking));
    for (int i = 0; i < 3; ++i)
        CK_CUDA(cudaEventCreate(&e[i]));
    ck_assert_int_eq(emu_live_streams(), streams + 2);
    ck_assert_int_eq(emu_live_events(), events + 3);
    int first = emu_stream_index(s[0]);
    ck_assert_int_gt(first, 0);
    ck_assert_int_eq(emu_stream_index(s[1]), first + 1);
    /* a stream destroyed with work queued: the handle goes at once, the work runs later */
    unsigned char *d, h[16];
    CK_CUDA(cudaMalloc((void **)&d, 16));
    CK_CUDA(cudaMemset(d, 0, 16));
    CK_CUDA(cudaMemsetAsync(d, 7, 16, s[1]));
    CK_CUDA(cudaEventRecord(e[0], s[1]));
    CK_CUDA(cudaStreamDestroy(s[1]));
    CK_CUDA(cudaEventDestroy(e[0])); /* its record still completes */
    ck_assert_int_eq(emu_live_streams(), streams + 1);
    ck_assert_int_eq(emu_live_events(), events + 2);
    CK_CUDA(cudaDeviceSynchronize());
    CK_CUDA(cudaMemcpy(h, d, 16, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 16; ++i)
        ck_assert_int_eq(h[i], 7);
    CK_CUDA(cudaStreamDestroy(s[0]));
    CK_CUDA(cudaEventDestroy(e[1]));
    CK_CUDA(cudaEventDestroy(e[2]));
    ck_assert_int_eq(emu_live_streams(), streams);
    ck_assert_int_eq(emu_live_events(), events);
    CK_ERROR(cudaStreamDestroy(0), cudaErrorInvalidResourceHandle);
    CK_ERROR(cudaStreamCreateWithFlags(&s[0], 0x100), cudaErrorInvalidValue);
    CK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
    ck_assert_int_eq(emu_live_streams(), streams);
    CK_CUDA(cudaFree(d));
}
END_TEST

/* ---------------------------------------------------------------- queries */

static int host_calls;
static void count_call(void *arg)
{
    host_calls += *(int *)arg;
}

START_TEST(queries_answer_not_ready_once_then_run_the_work)
{
    unsigned char *d;
    cudaStream_t s;
    cudaEvent_t start, stop;
    CK_CUDA(cudaMalloc((void **)&d, 64));
    CK_CUDA(cudaStreamCreate(&s));
    CK_CUDA(cudaEventCreate(&start));
    CK_CUDA(cudaEventCreate(&stop));
    CK_CUDA(cudaStreamQuery(s));     /* nothing queued */
    CK_CUDA(cudaEventQuery(start));  /* never recorded */
    emu_schedule_reset();
    CK_CUDA(cudaEventRecord(start, s));
    CK_CUDA(cudaMemsetAsync(d, 1, 64, s));
    CK_CUDA(cudaEventRecord(stop, s));
    ck_assert_uint_eq(emu_schedule_count(), 0); /* queued, not run */
    CK_ERROR(cudaStreamQuery(s), cudaErrorNotReady);
    CK_CUDA(cudaGetLastError()); /* NotReady is an answer, not an error */
    ck_assert_uint_eq(emu_schedule_count(), 0);
    float ms;
    CK_ERROR(cudaEventElapsedTime(&ms, start, stop), cudaErrorNotReady);
    CK_CUDA(cudaStreamQuery(s)); /* the next query runs the work */
    ck_assert_uint_eq(emu_schedule_count(), 3);
    CK_CUDA(cudaStreamQuery(s));
    CK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    ck_assert(ms >= 0.0f);

    /* an event: NotReady once while its record is queued, then done */
    CK_CUDA(cudaMemsetAsync(d, 2, 64, s));
    CK_CUDA(cudaEventRecord(stop, s));
    CK_ERROR(cudaEventQuery(stop), cudaErrorNotReady);
    CK_CUDA(cudaEventQuery(stop));
    CK_CUDA(cudaEventQuery(stop));

    /* a polling loop ends */
    int polls = 0, one = 1;
    host_calls = 0;
    CK_CUDA(cudaLaunchHostFunc(s, count_call, &one));
    ck_assert_int_eq(host_calls, 0); /* deferred like the rest of the stream */
    while (cudaStreamQuery(s) == cudaErrorNotReady)
        ++polls;
    ck_assert_int_eq(polls, 1);
    ck_assert_int_eq(host_calls, 1);

    /* timing disabled: no elapsed time */
    cudaEvent_t untimed;
    CK_CUDA(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
    CK_CUDA(cudaEventRecord(untimed, s));
    CK_CUDA(cudaEventSynchronize(untimed));
    CK_ERROR(cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
    CK_ERROR(cudaGetLastError(), cudaErrorInvalidResourceHandle);
    CK_CUDA(cudaEventDestroy(untimed));
    CK_CUDA(cudaEventDestroy(start));
    CK_CUDA(cudaEventDestroy(stop));
    CK_CUDA(cudaStreamDestroy(s));
    CK_CUDA(cudaFree(d));
}
END_TEST

/* ---------------------------------------------------------------- faults */

static int bad_line;

/* In a child (run_captured): exits 0 when every expectation holds, else with the number of the
 * first that failed. */
static void deferred_fault(void)
{
    float *d;
    unsigned char *other;
    cudaStream_t s, t;
    if (cudaMalloc((void **)&d, 64 * sizeof(float)) || cudaMalloc((void **)&other, 16) ||
        cudaStreamCreate(&s) || cudaStreamCreate(&t))
        _exit(1);
    emu_schedule_reset();
    bad_line = esk_out_of_bounds(d, 64, s);
    if (cudaGetLastError() != cudaSuccess)
        _exit(2); /* the launch itself is fine */
    if (emu_schedule_count() != 0)
        _exit(3); /* and has not run */
    if (cudaMemsetAsync(other, 1, 16, t) != cudaSuccess)
        _exit(4);
    if (cudaStreamSynchronize(s) != cudaErrorIllegalAddress)
        _exit(5); /* the fault surfaces at the synchronisation */
    if (cudaDeviceSynchronize() != cudaErrorIllegalAddress)
        _exit(6); /* sticky */
    struct emu_op op;
    if (emu_schedule_count() != 2 || emu_schedule_get(0, &op) || op.kind != EMU_OP_KERNEL ||
        op.skipped || emu_schedule_get(1, &op) || op.kind != EMU_OP_MEMSET || !op.skipped)
        _exit(7); /* the memset of the other stream ran after the fault: skipped */
    fflush(NULL);
    _exit(0);
}

START_TEST(a_deferred_kernel_fault_surfaces_at_the_sync)
{
    char err[4096];
    int status = run_captured(deferred_fault, err, sizeof err);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exit %d; stderr: %s",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1, err);
    char where[64];
    snprintf(where, sizeof where, "emu_streams_kernels.cu:%d", 19);
    ck_assert_msg(strstr(err, "out_of_bounds_kernel") && strstr(err, "illegal write") &&
                      strstr(err, where),
                  "report: %s", err);
}
END_TEST

START_TEST(a_refused_launch_on_a_stream_is_reported_at_once)
{
    float *d;
    cudaStream_t s;
    CK_CUDA(cudaMalloc((void **)&d, 16));
    CK_CUDA(cudaStreamCreate(&s));
    emu_schedule_reset();
    esk_bad_config(d, s);
    CK_ERROR(cudaGetLastError(), cudaErrorInvalidConfiguration);
    CK_CUDA(cudaStreamSynchronize(s)); /* nothing was queued, nothing is lost */
    ck_assert_uint_eq(emu_schedule_count(), 0);
    CK_CUDA(cudaStreamDestroy(s));
    CK_CUDA(cudaFree(d));
}
END_TEST

START_TEST(bad_stream_order_is_rejected)
{
    set_order("sideways");
    cudaDeviceSynchronize(); /* exits: a malformed value stops the program */
}
END_TEST

static Suite *streams_suite(void)
{
    Suite *s = suite_create("emu-streams");
    TCase *tc = tcase_create("streams");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, event_dependency_is_right_in_every_order);
    tcase_add_test(tc, missing_wait_gives_a_wrong_answer_under_some_seed);
    tcase_add_test(tc, a_pinned_buffer_is_read_when_the_copy_runs);
    tcase_add_test(tc, a_copy_to_pageable_memory_waits_for_its_stream);
    tcase_add_test(tc, legacy_stream_drains_blocking_streams_only);
    tcase_add_test(tc, schedule_records_every_op_in_dependency_order);
    tcase_add_test(tc, independent_streams_interleave_by_seed);
    tcase_add_test(tc, live_streams_and_events_are_counted);
    tcase_add_test(tc, queries_answer_not_ready_once_then_run_the_work);
    tcase_add_test(tc, a_deferred_kernel_fault_surfaces_at_the_sync);
    tcase_add_test(tc, a_refused_launch_on_a_stream_is_reported_at_once);
    tcase_add_exit_test(tc, bad_stream_order_is_rejected, EXIT_FAILURE);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* each test sets the order it needs; none inherits one from the caller */
    unsetenv("EMU_STREAM_ORDER");
    unsetenv("EMU_SCHEDULE");
    unsetenv("EMU_THREADS");
    SRunner *sr = srunner_create(streams_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr), run = srunner_ntests_run(sr);
    srunner_free(sr);
    const char *counts = getenv("GRADE_COUNTS"); /* make test's tally */
    FILE *f = counts && *counts ? fopen(counts, "a") : NULL;
    if (f) {
        fprintf(f, "emu-streams\thost\t%d\t%d\n", run - failed, failed);
        fclose(f);
    }
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
