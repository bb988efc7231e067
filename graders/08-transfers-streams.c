/* 08-transfers-streams.c: the grader of chapter 08, and its bench. Four steps (transfers.h):
 *
 *   step 1  upload_open/copy/close: a user's malloc buffer copied at pinned speed
 *   step 2  pipeline_create/run/destroy: chunks through pinned staging over K streams
 *   step 3  exchange: a copy up and a copy down at the same time
 *   step 4  graph_loop: chapter 06's loop of three kernels as a CUDA graph
 *
 * Each step is graded on
 *   correctness  fresh random inputs from the run's seed (never zeros), outputs poisoned, the
 *                result compared bit for bit (every value is an integer or a copy), twice, the
 *                second time with the CPU backend's streams run in a shuffled order that keeps
 *                only the declared dependencies
 *   errors       bad arguments refused with cudaErrorInvalidValue; an injected failure (a buffer
 *                someone else registered, a refused launch at one chunk, an allocation too big)
 *                returned, with nothing left held or running; on the CPU backend its allocator
 *                and scheduler count what is held (streams, events, pinned and device buffers)
 *   concepts     on the CPU backend, from the schedule its stream scheduler records (every
 *                operation: its stream, issue and run order, whether it was pageable): which
 *                stream each copy ran on, from what memory, and what had run when each chunk
 *                was launched
 *   speed        on a GPU, each step against its baseline timed in the same run: step 1 over
 *                upload_pageable, step 2 (the caller's buffers pinned) against the floor of
 *                its resources, step 3 against the two copies one after the other, step 4
 *                over plain launches
 *
 * Every test is split into a runner and a judge (grade.h and, below, "the judge and the
 * runner"): the runner makes every call of the code under grading and sends what only its
 * process can read (return codes, the bytes the copies left, the CPU backend's counts and
 * recorded schedule, timings); the judge, which never runs that code and touches no device,
 * makes every check on inputs of its own from the same seed, so that the code under grading
 * can neither reach the grade's records nor forge a verdict.
 *
 *   grade --bench F  on a GPU: the copy rates of pageable, cudaMallocHost and cudaHostRegister
 *                memory both ways, the cost of registering, the pipeline at six chunk sizes and
 *                K = 1, 2, 4 with its floor's parts, from pageable buffers and (K = 1, 2, 4 at
 *                8 MiB chunks, with their floor) from pinned ones, both directions at once, the
 *                loop plain and as a graph, as rows in F; and a timeline of one pipeline run,
 *                every operation's start and end per stream (CUDA events; the host's copies by
 *                its clock), in gantt-08-transfers-streams.tsv beside F. On the CPU backend
 *                only the timeline, from the schedule its scheduler recorded (host times, not a
 *                GPU's), and rows of host times that say nothing about a GPU.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_check.h"
#include "grade.h"
#include "loop_ref.h"
#include "split.h"
#include "transfers.h"
#ifdef HARNESS_EMU
#include <emu_memory.h>
#include <emu_streams.h>
#endif

#define CHAPTER "08-transfers-streams"
#define MIB ((size_t)1 << 20)
#define BIG_BYTES (256 * MIB)          /* a GPU's transfer: 256 MiB */
#define CPU_BIG_BYTES (MIB + 13)       /* the CPU backend's stand-in */
#define STEP1_NEEDS 5.0                /* pinned over pageable (8.4x measured on the H200) */
#define STEP2_NEEDS 1.10               /* the pipeline over its floor, at most */
#define STEP2_HIDDEN 0.5               /* and the share of the hideable time it hid, at least */
#define STEP3_NEEDS 0.75               /* both ways at once over one after the other, at most */
#define STEP4_NEEDS 1.5                /* graph over plain launches, at least (2 to 3x expected) */
#define SPEED_REPS 7
#define INT_RANGE (1 << 28)            /* pipeline inputs within +-2^28: 3x + 1 fits an int */

static void fill_bytes(struct rng *r, unsigned char *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = rng_next(r);
        memcpy(p + i, &v, 8);
    }
    uint64_t v = rng_next(r);
    for (; i < n; i++, v >>= 8)
        p[i] = (unsigned char)v;
}

/* first differing byte of two buffers, or -1 */
static long long first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    if (memcmp(a, b, n) == 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return (long long)i;
    return -1;
}

/* ==== the judge and the runner ===================================================================
 *
 * Every test is split at its start (grade.h, "the judge and the runner"). The runner makes every
 * call of the code under grading and reads what only its process holds: the codes those calls
 * returned, the bytes they left on the device and in the host's buffers, the CPU backend's counts
 * of what is held and the schedule its scheduler recorded, the timings. It sends them, and the
 * judge, which made the same inputs from the same seed and went through the same steps without
 * running that code or any CUDA call but those that name an error (a context in the judge would
 * cost each test as long again on a GPU), makes every check, note and verdict. What comes back
 * is what the code under grading claims: counts are bounded before they size anything, strings
 * are cut to their fields, and no pointer is taken from it. Unsplit (CK_FORK=no) one process
 * does both; the exchanges do nothing. The pieces chapter 12's grader shares (runs, judges,
 * JUDGE, SEEN, exchange_pieces, shuffle) are graders/split.h's. */

/* n bytes of device memory at d, into the host buffer h as the judge sees them: copied where the
 * code ran, and sent (the judge compares real bytes, never a digest the runner made) */
static void device_seen(void *h, const void *d, size_t n)
{
    if (runs())
        to_host(h, d, n);
    exchange_pieces(h, n);
}

static void code_check(cudaError_t e, const char *call, const char *file, int line)
{
    if (e == cudaSuccess || !judges())
        return;
    fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, call, cudaGetErrorString(e),
            cudaGetErrorName(e));
    exit(EXIT_FAILURE);
}

/* CUDA_CHECK of a code the runner sent: CUDA_CHECK's words and exit, where checks are made */
#define CODE_CHECK(e, call) code_check(e, call, __FILE__, __LINE__)
/* CUDA_CHECK(call), split: the call where the code runs, the check where checks are made */
#define SEEN_CHECK(call) code_check(SEEN(call), #call, __FILE__, __LINE__)

/* An int the runner read (a flag, a count), as both see it */
static int int_seen(int v)
{
    grade_exchange_bytes(&v, sizeof v);
    return v;
}

/* Timings the runner took: claims like the rest, and a negative or non-finite one (a ratio over
 * it could pass anything) cannot be a measurement */
static void times_check(const double *t, int n)
{
    for (int i = 0; i < n && judges(); i++)
        if (!(t[i] >= 0 && t[i] < 1e9))
            ck_abort_msg("the grade lost step with the code it runs: a timing of %g ms came back",
                         t[i]);
}

/* ==== guard zones, as the judge sees them ========================================================
 *
 * dbuf_check_guards reads a buffer's guard zones on the device, which the judge has not got. The
 * runner reads them (the DBUF_GUARD bytes before the buffer and those after it, gpu.h) and sends
 * them: once as dbuf_alloc left them, before any code under grading had the buffer, and again at
 * each check; the judge compares the two (gpu.c keeps its pattern to itself), and says what it
 * found in dbuf_check_guards' words. */
struct guards {
    const void *d;             /* the buffer, where the code runs; NULL in the judge */
    size_t bytes;
    const char *name;
    unsigned char *was, *now;  /* 2 DBUF_GUARD bytes each: the front zone, then the back one */
};

static void guards_read(const struct guards *g, unsigned char *zones)
{
    if (runs()) {
        to_host(zones, (const unsigned char *)g->d - DBUF_GUARD, DBUF_GUARD);
        to_host(zones + DBUF_GUARD, (const unsigned char *)g->d + g->bytes, DBUF_GUARD);
    }
    exchange_pieces(zones, 2 * (size_t)DBUF_GUARD);
}

/* d's zones as dbuf_alloc left them: call it before the code under grading has d */
static void guards_open(struct guards *g, const void *d, size_t bytes, const char *name)
{
    g->d = d;
    g->bytes = bytes;
    g->name = name;
    g->was = xmalloc(2 * (size_t)DBUF_GUARD);
    g->now = xmalloc(2 * (size_t)DBUF_GUARD);
    guards_read(g, g->was);
}

/* 0 when both zones hold what they held at guards_open (and in the runner, which checks
 * nothing), else -1 with a message naming the buffer, the side and the first overwritten byte */
static int guards_check(struct guards *g, char *msg, size_t len)
{
    guards_read(g, g->now);
    if (!judges())
        return 0;
    /* front zone: report the write nearest the buffer, the one an off-by-one makes */
    for (int i = DBUF_GUARD - 1; i >= 0; i--)
        if (g->now[i] != g->was[i]) {
            snprintf(msg, len, "a write before the start of %s: byte %d before element 0 was "
                               "overwritten", g->name, DBUF_GUARD - i);
            return -1;
        }
    for (int i = 0; i < DBUF_GUARD; i++)
        if (g->now[DBUF_GUARD + i] != g->was[DBUF_GUARD + i]) {
            snprintf(msg, len, "a write past the end of %s (%zu bytes): byte %d past its end "
                               "was overwritten", g->name, g->bytes, i);
            return -1;
        }
    return 0;
}

static void guards_free(struct guards *g)
{
    free(g->was);
    free(g->now);
}

/* ==== what is held: the CPU backend's counts (graders/split.h) ================================ */

/* census_check with this chapter's hint */
static void check_census(int slot, struct census before, const char *what)
{
    census_check(slot, before, what,
                 "every path out must give back what was taken before it: keep each handle NULL "
                 "until it is made, and on a failure jump to one cleanup that destroys and frees "
                 "whatever is not NULL (chapter 06)");
}

/* ==== the schedule the CPU backend recorded ===================================================== */

#ifdef HARNESS_EMU
struct sched {
    size_t n;
    struct emu_op *op; /* in the order they ran */
};

/* the bench's: the whole record, in its own process */
static struct sched sched_take(void)
{
    struct sched s = { emu_schedule_count(), NULL };
    if (emu_schedule_dropped() != 0) {
        fprintf(stderr, "grader: the schedule record overflowed\n");
        exit(EXIT_FAILURE);
    }
    s.op = xmalloc((s.n ? s.n : 1) * sizeof *s.op);
    for (size_t i = 0; i < s.n; i++)
        emu_schedule_get(i, &s.op[i]);
    return s;
}

/* the most operations a concept test reads: its runs make a few hundred */
#define SEEN_OPS_MAX 8192

/* A test's: the record since the last emu_schedule_reset where the code ran, as the judge sees
 * it: its count bounded, every operation a plain struct, each name cut to its field */
static struct sched sched_seen(void)
{
    unsigned long long head[2] = { 0, 0 }; /* operations recorded, and those dropped */
    if (runs()) {
        head[0] = emu_schedule_count();
        head[1] = emu_schedule_dropped();
    }
    grade_exchange_bytes(head, sizeof head);
    if (judges() && (head[1] != 0 || head[0] > SEEN_OPS_MAX))
        ck_abort_msg("the schedule record overflowed: %llu operations kept and %llu dropped, where "
                     "this test reads at most %d", head[0], head[1], SEEN_OPS_MAX);
    struct sched s = { head[0] < SEEN_OPS_MAX ? (size_t)head[0] : SEEN_OPS_MAX, NULL };
    s.op = xmalloc((s.n ? s.n : 1) * sizeof *s.op);
    memset(s.op, 0, (s.n ? s.n : 1) * sizeof *s.op);
    for (size_t i = 0; i < s.n && runs(); i++)
        emu_schedule_get(i, &s.op[i]);
    grade_exchange_bytes(s.op, s.n * sizeof *s.op);
    for (size_t i = 0; i < s.n; i++)
        s.op[i].name[sizeof s.op[i].name - 1] = '\0';
    return s;
}

static int is_h2d(const struct emu_op *o)
{
    return o->kind == EMU_OP_MEMCPY && !strcmp(o->name, "H2D");
}
static int is_d2h(const struct emu_op *o)
{
    return o->kind == EMU_OP_MEMCPY && !strcmp(o->name, "D2H");
}
static int is_affine(const struct emu_op *o)
{
    return o->kind == EMU_OP_KERNEL && strstr(o->name, "affine") != NULL;
}

/* The run-order positions of the ops that `pick` accepts, in the order they were issued:
 * entry k is the k-th issued. Returns how many. */
static size_t by_issue(const struct sched *s, int (*pick)(const struct emu_op *), size_t *pos)
{
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++)
        if (pick(&s->op[i]))
            pos[m++] = i;
    for (size_t a = 1; a < m; a++) /* insertion sort by issue: the lists are short */
        for (size_t b = a; b > 0 && s->op[pos[b - 1]].issue > s->op[pos[b]].issue; b--) {
            size_t t = pos[b];
            pos[b] = pos[b - 1];
            pos[b - 1] = t;
        }
    return m;
}
#endif

/* ==== step 1: a user's buffer at pinned speed ==================================================== */

static const size_t STEP1_SIZES[] = { 0 /* big */, 1, 4099, 1000003 };
#define NSTEP1 ((int)(sizeof STEP1_SIZES / sizeof STEP1_SIZES[0]))

static size_t big_bytes(void)
{
    return gpu_times_are_real() ? BIG_BYTES : CPU_BIG_BYTES;
}

/* Still registered? cudaHostRegister again says so; unregisters what it registered. */
static int still_registered(void *h, size_t bytes)
{
    cudaError_t e = cudaHostRegister(h, bytes, cudaHostRegisterDefault);
    if (e == cudaErrorHostMemoryAlreadyRegistered) {
        (void)cudaGetLastError();
        return 1;
    }
    CUDA_CHECK(e);
    CUDA_CHECK(cudaHostUnregister(h));
    return 0;
}

/* open, three copies of fresh bytes (the user rewrites the buffer between them), close. The
 * judge's h holds the same bytes, from the same seed, to compare with; back, what the device
 * held after each copy, as the runner read it. */
static void upload_three(int slot, size_t bytes, struct rng *r, const char *what)
{
    unsigned char *h = xmalloc(bytes), *back = xmalloc(bytes);
    void *d = runs() ? dbuf_alloc(bytes, "d_dst") : NULL;
    struct guards g;
    guards_open(&g, d, bytes, "d_dst");
    struct census before = census_seen();
    struct upload u;
    memset(&u, 0xab, sizeof u);
    cudaError_t e = SEEN(upload_open(&u, h, bytes));
    JUDGE(e == cudaSuccess, "%s, %zu bytes: upload_open returned %s", what, bytes, err_name(e));
    for (int k = 0; k < 3; k++) {
        fill_bytes(r, h, bytes);
        if (runs())
            dbuf_poison(d);
        e = SEEN(upload_copy(&u, d));
        JUDGE(e == cudaSuccess, "%s, %zu bytes, copy %d: upload_copy returned %s", what, bytes,
              k + 1, err_name(e));
        device_seen(back, d, bytes);
        long long at = judges() ? first_diff(back, h, bytes) : -1;
        if (at >= 0) {
            grade_hint(slot, "upload_copy must return with the data on the device: wait for your "
                             "stream; and copy what the buffer holds now (the user rewrites it "
                             "between copies), not what it held at upload_open");
            ck_abort_msg("%s, %zu bytes, copy %d: byte %lld is 0x%02x on the device, want 0x%02x",
                         what, bytes, k + 1, at, back[at], h[at]);
        }
        char msg[256];
        int bad = guards_check(&g, msg, sizeof msg);
        JUDGE(bad == 0, "%s: %s", what, msg);
    }
    e = SEEN(upload_close(&u));
    JUDGE(e == cudaSuccess, "%s: upload_close returned %s", what, err_name(e));
    if (int_seen(runs() ? still_registered(h, bytes) : 0) && judges()) {
        grade_hint(slot, "upload_close must cudaHostUnregister what upload_open registered: a "
                         "registered range stays locked in RAM until then, and registering it "
                         "again fails");
        ck_abort_msg("%s, %zu bytes: the user's buffer is still registered after upload_close",
                     what, bytes);
    }
    check_census(slot, before, what);
    if (runs())
        dbuf_free(d);
    guards_free(&g);
    free(h);
    free(back);
}

START_TEST(step1_correct)
{
    int slot = grade_slot();
    size_t bytes = STEP1_SIZES[_i] ? STEP1_SIZES[_i] : big_bytes();
    if (grade_quick_skip(slot, (double)bytes, "bytes"))
        return;
    grade_split(); /* upload_* in a runner, the checks here */
    struct rng r = grade_rng(slot);
    upload_three(slot, bytes, &r, "upload");
    shuffle(&r);
    upload_three(slot, bytes, &r, "upload, second run");
    grade_note(slot, "%zu bytes, three copies each run, bit-exact, nothing held after", bytes);
    grade_split_end();
}
END_TEST

START_TEST(step1_errors)
{
    int slot = grade_slot();
    grade_split(); /* upload_* in a runner, the checks here */
    struct rng r = grade_rng(slot);
    size_t bytes = 4099;
    unsigned char *h = xmalloc(bytes);
    fill_bytes(&r, h, bytes);
    struct census before = census_seen();
    struct upload u;
    cudaError_t e1 = SEEN(upload_open(&u, h, 0)), e2 = SEEN(upload_open(&u, NULL, bytes));
    JUDGE(e1 == cudaErrorInvalidValue && e2 == cudaErrorInvalidValue,
          "upload_open of 0 bytes returned %s, of a NULL buffer %s: want "
          "cudaErrorInvalidValue for both", err_name(e1), err_name(e2));
    check_census(slot, before, "upload_open refusing bad arguments");

    /* someone else (the grader) registered the buffer first: the runtime refuses a second
     * registration of the same pages */
    void *d = NULL;
    if (runs()) {
        CUDA_CHECK(cudaHostRegister(h, bytes, cudaHostRegisterDefault));
        d = dbuf_alloc(bytes, "d_dst");
    }
    before = census_seen();
    cudaError_t e = SEEN(upload_open(&u, h, bytes));
    char how[64];
    if (e != cudaSuccess) {
        if (runs())
            (void)cudaGetLastError();
        check_census(slot, before, "upload_open failing on a buffer registered by someone else");
        snprintf(how, sizeof how, "returned %s", err_name(e));
    } else {
        e = SEEN(upload_copy(&u, d));
        JUDGE(e == cudaSuccess, "upload_copy returned %s", err_name(e));
        unsigned char *back = xmalloc(bytes);
        device_seen(back, d, bytes);
        JUDGE(first_diff(back, h, bytes) < 0, "upload_copy of an already registered "
              "buffer: the device holds other bytes");
        e = SEEN(upload_close(&u));
        JUDGE(e == cudaSuccess, "upload_close returned %s", err_name(e));
        check_census(slot, before, "open, copy and close of a buffer registered by someone else");
        free(back);
        snprintf(how, sizeof how, "succeeded");
    }
    cudaError_t un = SEEN(cudaHostUnregister(h));
    if (un != cudaSuccess && judges()) {
        grade_hint(slot, "unregister only what you registered: when your cudaHostRegister "
                         "failed, the range belongs to whoever registered it");
        ck_abort_msg("the grader's own registration of the buffer was undone by upload_open or "
                     "upload_close (cudaHostUnregister returned %s)", err_name(un));
    }
    if (runs())
        dbuf_free(d);
    free(h);
    grade_note(slot, "bad arguments refused; on a buffer registered by someone else upload_open "
                     "%s, holding nothing of its own", how);
    grade_split_end();
}
END_TEST

#ifdef HARNESS_EMU
/* step 1's schedule, judged: every copy up pinned, on a stream of its own, all the bytes */
static void judge_upload_schedule(int slot, const struct sched *s, size_t bytes)
{
    size_t up = 0, n_up = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct emu_op *o = &s->op[i];
        if (!is_h2d(o))
            continue;
        up += o->bytes;
        n_up++;
        if (o->stream == 0) {
            grade_hint(slot, "cudaMemcpy runs on the legacy stream and, from malloc's memory, "
                             "through the driver's own pinned bounce buffer: a CPU copy and a "
                             "DMA a few megabytes at a time. Pin the user's pages "
                             "(cudaHostRegister) and copy with cudaMemcpyAsync on a stream "
                             "you created");
            ck_abort_msg("a copy of %zu bytes up ran on the legacy stream (stream 0)%s", o->bytes,
                         o->pageable ? ", from pageable memory" : "");
        }
        if (o->pageable) {
            grade_hint(slot, "cudaMemcpyAsync from memory that is neither cudaMallocHost's nor "
                             "registered is staged by the driver, synchronously: register the "
                             "buffer in upload_open, or copy through a pinned buffer of yours");
            ck_abort_msg("a copy of %zu bytes up, on stream %d, was from pageable memory",
                         o->bytes, o->stream);
        }
    }
    ck_assert_msg(up == bytes, "the copies up carried %zu bytes in %zu copies; the buffer has %zu",
                  up, n_up, bytes);
    grade_note(slot, "%zu copy(ies) up, %zu bytes, pinned, on a stream of its own", n_up, up);
    grade_summary("pinned copies on a stream of its own");
}
#endif

START_TEST(step1_concept)
{
#ifdef HARNESS_EMU
    int slot = grade_slot();
    grade_split(); /* upload_* in a runner, its schedule judged here */
    struct rng r = grade_rng(slot);
    size_t bytes = CPU_BIG_BYTES;
    unsigned char *h = xmalloc(bytes);
    void *d = runs() ? dbuf_alloc(bytes, "d_dst") : NULL;
    fill_bytes(&r, h, bytes);
    struct upload u;
    SEEN_CHECK(upload_open(&u, h, bytes));
    if (runs())
        emu_schedule_reset();
    SEEN_CHECK(upload_copy(&u, d));
    struct sched s = sched_seen();
    SEEN_CHECK(upload_close(&u));
    if (judges())
        judge_upload_schedule(slot, &s, bytes);
    free(s.op);
    if (runs())
        dbuf_free(d);
    free(h);
    grade_split_end();
#endif
}
END_TEST

/* what a speed run of step 1 returned and took, sent whole: the warm-ups, then each rep */
struct upload_times {
    cudaError_t open, warm_pageable, warm_copy, pageable[SPEED_REPS], copy[SPEED_REPS];
    double tp[SPEED_REPS], ty[SPEED_REPS];
};

START_TEST(step1_speed)
{
    int slot = grade_slot();
    grade_split(); /* upload_* run and timed in a runner, judged here */
    size_t bytes = BIG_BYTES;
    struct rng r = grade_rng(slot);
    /* two buffers of the same bytes: upload_open may pin its own, the baseline's stays pageable
     * (the judge needs only the one it compares with) */
    unsigned char *h = xmalloc(bytes), *h_page = NULL;
    fill_bytes(&r, h, bytes);
    void *d = NULL;
    struct upload u;
    struct upload_times t;
    memset(&t, 0, sizeof t);
    if (runs()) {
        h_page = xmalloc(bytes);
        memcpy(h_page, h, bytes);
        d = dbuf_alloc(bytes, "d_dst");
        /* the first code that fails stops the run; the judge fails the test on it */
        int ok = (t.open = upload_open(&u, h, bytes)) == cudaSuccess &&
                 (t.warm_pageable = upload_pageable(d, h_page, bytes)) == cudaSuccess &&
                 (t.warm_copy = upload_copy(&u, d)) == cudaSuccess; /* warm-up of each */
        for (int i = 0; ok && i < SPEED_REPS; i++) {
            double t0 = now_ms();
            ok = (t.pageable[i] = upload_pageable(d, h_page, bytes)) == cudaSuccess;
            double t1 = now_ms();
            ok = ok && (t.copy[i] = upload_copy(&u, d)) == cudaSuccess;
            double t2 = now_ms();
            t.tp[i] = t1 - t0;
            t.ty[i] = t2 - t1;
        }
    }
    grade_exchange_bytes(&t, sizeof t);
    CODE_CHECK(t.open, "upload_open(&u, h, bytes)");
    CODE_CHECK(t.warm_pageable, "upload_pageable(d, h_page, bytes)");
    CODE_CHECK(t.warm_copy, "upload_copy(&u, d)");
    for (int i = 0; i < SPEED_REPS; i++) {
        CODE_CHECK(t.pageable[i], "upload_pageable(d, h_page, bytes)");
        CODE_CHECK(t.copy[i], "upload_copy(&u, d)");
    }
    times_check(t.tp, SPEED_REPS);
    times_check(t.ty, SPEED_REPS);
    unsigned char *back = xmalloc(bytes);
    device_seen(back, d, bytes);
    JUDGE(first_diff(back, h, bytes) < 0, "after the timed runs the device holds other "
          "bytes than the buffer");
    SEEN_CHECK(upload_close(&u));
    free(back);
    if (runs())
        dbuf_free(d);
    free(h);
    free(h_page);
    grade_split_end();
    double mp = median(t.tp, SPEED_REPS), my = median(t.ty, SPEED_REPS), ratio = mp / my;
    double gp = bytes / (mp * 1e6), gy = bytes / (my * 1e6);
    grade_note(slot, "256 MiB up: yours %.2f ms (%.1f GB/s), pageable %.2f ms (%.1f GB/s): %.2fx "
                     "(needs %.0fx)", my, gy, mp, gp, ratio, STEP1_NEEDS);
    grade_summary("%.1f GB/s = %.2fx pageable (needs %.0fx)", gy, ratio, STEP1_NEEDS);
    grade_hint(slot, "a copy from pinned pages is one DMA at the link's speed; from pageable "
                     "pages it is a CPU copy into a bounce buffer and a DMA, chunk after chunk. "
                     "Register once in upload_open, not in every upload_copy");
    ck_assert_msg(ratio >= STEP1_NEEDS, "%.2fx upload_pageable, needs %.0fx", ratio, STEP1_NEEDS);
}
END_TEST

/* ==== step 2: the pipeline ======================================================================= */

struct pipe_case { size_t n, chunk; int k, pinned; };
static const struct pipe_case PIPE_CASES[] = {
    { 1, 7, 2, 0 },           /* one element, a chunk larger than n */
    { 1000, 1000, 1, 0 },     /* one chunk, one stream */
    { 1000, 33, 1, 0 },       /* K = 1: chunks one after the other */
    { 100003, 4099, 3, 0 },   /* 25 chunks, the last short, over 3 streams */
    { 100003, 100, 4, 0 },    /* 1001 chunks */
    { 0, 0, 4, 0 },           /* big: 2^26 + 12345 in 2^21 (CPU: 1000003 in 65537) */
    { 100003, 4099, 3, 1 },   /* the caller's buffers pinned (cudaMallocHost) */
};
#define NPIPE ((int)(sizeof PIPE_CASES / sizeof PIPE_CASES[0]))

static struct pipe_case pipe_case_here(int i)
{
    struct pipe_case c = PIPE_CASES[i];
    if (c.n == 0) {
        c.n = gpu_times_are_real() ? ((size_t)1 << 26) + 12345 : 1000003;
        c.chunk = gpu_times_are_real() ? (size_t)1 << 21 : 65537;
    }
    return c;
}

struct pipe_problem {
    size_t n;
    int *h_in, *h_out;
    int pinned;               /* the buffers are cudaMallocHost's, else malloc's */
};

static void pipe_fill(struct pipe_problem *q, struct rng *r)
{
    for (size_t i = 0; i < q->n; i++)
        q->h_in[i] = (int)(rng_next(r) % (2 * INT_RANGE + 1)) - INT_RANGE;
    memset(q->h_out, 0xff, q->n * sizeof(int)); /* -1: 3x + 1 never is */
}

static void pipe_init(struct pipe_problem *q, size_t n)
{
    q->n = n;
    q->h_in = xmalloc(n * sizeof(int));   /* the caller's pageable memory */
    q->h_out = xmalloc(n * sizeof(int));
    q->pinned = 0;
}

/* the caller's buffers pinned: a pipeline should copy them directly, with no staging */
static void pipe_init_pinned(struct pipe_problem *q, size_t n)
{
    q->n = n;
    CUDA_CHECK(cudaMallocHost((void **)&q->h_in, n * sizeof(int)));
    CUDA_CHECK(cudaMallocHost((void **)&q->h_out, n * sizeof(int)));
    q->pinned = 1;
}

/* A test's buffers: pinned where the code runs when the case says so; the judge's are always
 * malloc's (it runs no CUDA), its h_out filled with what the runner's held (pipe_out_seen) */
static void pipe_init_seen(struct pipe_problem *q, size_t n, int pinned)
{
    if (pinned && runs())
        pipe_init_pinned(q, n);
    else
        pipe_init(q, n);
}

/* the caller's h_out as the code left it, as the judge sees it */
static void pipe_out_seen(struct pipe_problem *q)
{
    exchange_pieces(q->h_out, q->n * sizeof(int));
}

static void pipe_free(struct pipe_problem *q)
{
    if (q->pinned) {
        CUDA_CHECK(cudaFreeHost(q->h_in));
        CUDA_CHECK(cudaFreeHost(q->h_out));
    } else {
        free(q->h_in);
        free(q->h_out);
    }
}

/* 0 when h_out is right, else a description in msg */
static int pipe_check(const struct pipe_problem *q, size_t chunk, char *msg, size_t len)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < q->n; i++)
        if (q->h_out[i] != 3 * q->h_in[i] + 1 && bad++ == 0)
            first = i;
    if (!bad)
        return 0;
    snprintf(msg, len, "%zu of %zu wrong, first at %zu (chunk %zu): got %d, want %d%s", bad, q->n,
             first, first / chunk, q->h_out[first], 3 * q->h_in[first] + 1,
             q->h_out[first] == -1 ? " (never written)" : "");
    return -1;
}

static void pipe_hint_wrong(int slot)
{
    grade_hint(slot, "on the second, shuffled run the streams' work runs in any order their "
                     "declared dependencies allow: before the host rewrites a staging buffer, "
                     "wait for an event recorded after the copy that reads it; before it reads "
                     "a result out of staging, wait for an event recorded after the copy down; "
                     "and the kernel of a chunk must be on the stream of its copy up (or wait for "
                     "an event recorded after it)");
}

START_TEST(step2_correct)
{
    int slot = grade_slot();
    struct pipe_case c = pipe_case_here(_i);
    if (grade_quick_skip(slot, (double)c.n, "ints"))
        return;
    grade_split(); /* pipeline_* in a runner, the checks here */
    struct rng r = grade_rng(slot);
    struct pipe_problem q;
    pipe_init_seen(&q, c.n, c.pinned);
    struct census before = census_seen();
    struct pipeline p;
    cudaError_t e = SEEN(pipeline_create(&p, c.chunk, c.k));
    JUDGE(e == cudaSuccess, "pipeline_create(chunk %zu, K %d) returned %s", c.chunk, c.k,
          err_name(e));
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            shuffle(&r);
        pipe_fill(&q, &r);
        e = SEEN(pipeline_run(&p, q.h_in, q.h_out, c.n, NULL));
        JUDGE(e == cudaSuccess, "n %zu, chunk %zu, K %d: pipeline_run returned %s", c.n,
              c.chunk, c.k, err_name(e));
        pipe_out_seen(&q);
        char msg[256];
        if (judges() && pipe_check(&q, c.chunk, msg, sizeof msg) != 0) {
            pipe_hint_wrong(slot);
            ck_abort_msg("n %zu, chunk %zu, K %d%s: %s", c.n, c.chunk, c.k,
                         round ? ", second run, shuffled streams" : "", msg);
        }
    }
    e = SEEN(pipeline_destroy(&p));
    JUDGE(e == cudaSuccess, "pipeline_destroy returned %s", err_name(e));
    check_census(slot, before, "create, two runs, destroy");
    pipe_free(&q);
    grade_note(slot, "bit-exact twice, nothing held after destroy");
    grade_split_end();
}
END_TEST

START_TEST(step2_errors)
{
    int slot = grade_slot();
    grade_split(); /* pipeline_* in a runner, the checks here */
    struct rng r = grade_rng(slot);
    struct census before = census_seen();
    struct pipeline p;
    cudaError_t e1 = SEEN(pipeline_create(&p, 0, 2)), e2 = SEEN(pipeline_create(&p, 100, 0)),
                e3 = SEEN(pipeline_create(&p, 100, PIPE_MAX_STREAMS + 1));
    JUDGE(e1 == cudaErrorInvalidValue && e2 == cudaErrorInvalidValue &&
          e3 == cudaErrorInvalidValue, "pipeline_create with chunk 0, K 0 and K %d "
          "returned %s, %s, %s: want cudaErrorInvalidValue", PIPE_MAX_STREAMS + 1,
          err_name(e1), err_name(e2), err_name(e3));
    check_census(slot, before, "pipeline_create refusing bad arguments");

    /* an allocation that cannot succeed: 2^60 bytes a staging buffer */
    cudaError_t e = SEEN(pipeline_create(&p, (size_t)1 << 58, 3));
    JUDGE(e != cudaSuccess, "pipeline_create with chunks of 2^58 ints (2^60 bytes) "
          "succeeded");
    if (runs())
        (void)cudaGetLastError();
    check_census(slot, before, "pipeline_create failing to allocate (chunks of 2^60 bytes)");

    struct pipe_problem q;
    pipe_init(&q, 100003);
    SEEN_CHECK(pipeline_create(&p, 4099, 3)); /* 25 chunks */
    e = SEEN(pipeline_run(&p, q.h_in, q.h_out, 0, NULL));
    JUDGE(e == cudaErrorInvalidValue, "pipeline_run of n 0 returned %s, want "
          "cudaErrorInvalidValue", err_name(e));
    static const long long FAIL_AT[] = { 0, 11, 24 };
    for (int f = 0; f < 3; f++) {
        pipe_fill(&q, &r);
        struct pipe_test t = { FAIL_AT[f], NULL, NULL };
        e = SEEN(pipeline_run(&p, q.h_in, q.h_out, q.n, &t));
        if (e == cudaSuccess && judges()) {
            grade_hint(slot, "a launch returns nothing: only cudaGetLastError right after it "
                             "says it was refused");
            ck_abort_msg("the launch of chunk %lld was refused, and pipeline_run returned "
                         "cudaSuccess", FAIL_AT[f]);
        }
        cudaError_t left = SEEN(cudaGetLastError());
        JUDGE(left == cudaSuccess, "pipeline_run returned %s for the refused launch of "
              "chunk %lld, and the last-error slot still holds %s: read it with "
              "cudaGetLastError, which clears it", err_name(e), FAIL_AT[f], err_name(left));
        /* the same pipeline, no fault: right again */
        pipe_fill(&q, &r);
        e = SEEN(pipeline_run(&p, q.h_in, q.h_out, q.n, NULL));
        JUDGE(e == cudaSuccess, "after the refused launch of chunk %lld, a run with no "
              "fault returned %s", FAIL_AT[f], err_name(e));
        pipe_out_seen(&q);
        char msg[256];
        if (judges() && pipe_check(&q, 4099, msg, sizeof msg) != 0) {
            grade_hint(slot, "on a failure, wait for your streams before returning, and leave "
                             "no chunk marked as waiting: the next run starts clean");
            ck_abort_msg("after the refused launch of chunk %lld, the next run: %s", FAIL_AT[f],
                         msg);
        }
    }
    e = SEEN(pipeline_destroy(&p));
    JUDGE(e == cudaSuccess, "pipeline_destroy returned %s", err_name(e));
    check_census(slot, before, "three refused launches, three good runs, destroy");
    pipe_free(&q);
    grade_note(slot, "bad arguments and an impossible allocation refused holding nothing; each "
                     "refused launch returned, cleared and followed by a right run");
    grade_split_end();
}
END_TEST

#ifdef HARNESS_EMU
struct launch_watch {
    size_t *ran;      /* ran[c]: how many ops had run when chunk c was launched */
    long long n;
};
static void watch_launch(void *ctx, long long chunk)
{
    struct launch_watch *w = ctx;
    if (chunk >= 0 && chunk < w->n)
        w->ran[chunk] = emu_schedule_count();
}

/* step 2's schedule, judged: K streams of the program's own, pinned copies, and each chunk
 * launched before anything of the chunk before it had run */
static void judge_pipeline_schedule(int slot, const struct sched *s, const struct launch_watch *w,
                                    size_t n, size_t chunk, int k)
{
    const long long nchunks = w->n;
    /* every copy pinned and on a stream of the program's own */
    int streams[64], nstreams = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct emu_op *o = &s->op[i];
        if (o->kind == EMU_OP_EVENT_RECORD || o->kind == EMU_OP_EVENT_WAIT)
            continue;
        if (o->stream == 0) {
            grade_hint(slot, "the legacy stream (0, what cudaMemcpy and a launch without a stream "
                             "use) waits for all the work of every blocking stream and makes "
                             "them wait for it: one operation there serialises the pipeline. "
                             "Issue everything on your slots' streams");
            ck_abort_msg("%s%s ran on the legacy stream (stream 0)", o->name,
                         o->kind == EMU_OP_KERNEL ? " (a kernel)" : "");
        }
        if (o->kind == EMU_OP_MEMCPY && o->pageable) {
            grade_hint(slot, "copy from and to the pinned staging buffers (cudaMallocHost), never "
                             "from the caller's buffers: a copy from pageable memory is staged "
                             "by the driver while the host waits");
            ck_abort_msg("a %s copy of %zu bytes was from or to pageable memory", o->name,
                         o->bytes);
        }
        int seen = 0;
        for (int j = 0; j < nstreams; j++)
            seen |= streams[j] == o->stream;
        if (!seen && nstreams < 64)
            streams[nstreams++] = o->stream;
    }
    if (nstreams != k) {
        grade_hint(slot, "chunk c goes to slot c %% K, and each slot has a stream of its own");
        ck_abort_msg("with K = %d, the copies and kernels ran on %d stream(s)", k, nstreams);
    }
    size_t *up = xmalloc((s->n ? s->n : 1) * sizeof *up),
           *ker = xmalloc((s->n ? s->n : 1) * sizeof *ker),
           *down = xmalloc((s->n ? s->n : 1) * sizeof *down);
    size_t nu = by_issue(s, is_h2d, up), nk = by_issue(s, is_affine, ker),
           nd = by_issue(s, is_d2h, down);
    ck_assert_msg(nu == (size_t)nchunks && nk == (size_t)nchunks && nd == (size_t)nchunks,
                  "n %zu in chunks of %zu is %lld chunks: want one copy up, one kernel and one "
                  "copy down each; the schedule has %zu, %zu and %zu", n, chunk, nchunks, nu, nk,
                  nd);
    /* The check: when chunk d is launched, nothing of chunk d - 1 may have run yet. The CPU
     * backend runs queued work only when the host waits for it, and then only what that wait
     * needs: so a chunk d - 1 that ran before chunk d was launched means the host waited, after
     * issuing chunk d - 1 and before launching chunk d, for something that needed chunk d - 1's
     * copy up, kernel or copy down, or for the whole device. On a GPU either wait leaves the
     * copy engines idle while the host stages the next chunk. */
    for (long long d = 1; d < nchunks; d++) {
        size_t at = w->ran[d];
        ck_assert_msg(at != (size_t)-1, "chunk %lld was never launched through affine_chunk", d);
        const char *what = up[d - 1] < at ? "copy up" : ker[d - 1] < at ? "kernel"
                         : down[d - 1] < at ? "copy down" : NULL;
        if (what) {
            grade_hint(slot, "issue chunk d before you finish chunk d - 1: wait for an event of "
                             "one chunk only when you are about to touch its staging buffer, "
                             "and never for the whole device (cudaDeviceSynchronize, the legacy "
                             "stream) inside the loop");
            ck_abort_msg("when chunk %lld was launched, the %s of chunk %lld had already run: "
                         "the host waited for it (or for the whole device) before chunk %lld "
                         "was issued", d, what, d - 1, d);
        }
    }
    grade_note(slot, "%lld chunks over %d streams, pinned, none on the legacy stream; each "
                     "launched while the chunk before it was still in flight", nchunks, k);
    grade_summary("%lld chunks in flight over %d streams", nchunks, k);
    free(up), free(ker), free(down);
}
#endif

START_TEST(step2_concept)
{
#ifdef HARNESS_EMU
    int slot = grade_slot();
    grade_split(); /* pipeline_* in a runner, its schedule judged here */
    struct rng r = grade_rng(slot);
    const size_t n = 100003, chunk = 4099;
    const int k = 3;
    const long long nchunks = (long long)((n + chunk - 1) / chunk); /* 25 */
    struct pipe_problem q;
    pipe_init(&q, n);
    pipe_fill(&q, &r);
    struct pipeline p;
    SEEN_CHECK(pipeline_create(&p, chunk, k));
    struct launch_watch w = { xmalloc((size_t)nchunks * sizeof(size_t)), nchunks };
    for (long long c = 0; c < nchunks; c++)
        w.ran[c] = (size_t)-1;
    struct pipe_test t = { -1, watch_launch, &w };
    if (runs())
        emu_schedule_reset();
    SEEN_CHECK(pipeline_run(&p, q.h_in, q.h_out, n, &t));
    struct sched s = sched_seen();
    exchange_pieces(w.ran, (size_t)nchunks * sizeof *w.ran);
    SEEN_CHECK(pipeline_destroy(&p));
    pipe_out_seen(&q);
    char msg[256];
    JUDGE(pipe_check(&q, chunk, msg, sizeof msg) == 0, "%s", msg);
    if (judges())
        judge_pipeline_schedule(slot, &s, &w, n, chunk, k);
    free(w.ran), free(s.op);
    pipe_free(&q);
    grade_split_end();
#endif
}
END_TEST

/* the pipeline's floor: each resource alone, same bytes, same chunks (GPU only) */
struct floor_parts { double host, link, h2d, d2h, kernel; };

static struct floor_parts measure_floor(const struct pipe_problem *q, size_t chunk, int k)
{
    struct floor_parts f;
    size_t bytes = q->n * sizeof(int), cb = chunk * sizeof(int);
    int *stage[2 * PIPE_MAX_STREAMS], *h_pin_in, *h_pin_out, *d_x, *d_y;
    for (int i = 0; i < 2 * k; i++)
        CUDA_CHECK(cudaMallocHost((void **)&stage[i], cb));
    CUDA_CHECK(cudaMallocHost((void **)&h_pin_in, bytes));
    CUDA_CHECK(cudaMallocHost((void **)&h_pin_out, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_x, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_y, bytes));
    memcpy(h_pin_in, q->h_in, bytes);
    /* the caller's buffers pinned: no staging, so no host part */
    cudaStream_t a, b;
    CUDA_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    double th[SPEED_REPS], tl[SPEED_REPS], tu[SPEED_REPS], td[SPEED_REPS], tk[SPEED_REPS];
    for (int rep = -1; rep < SPEED_REPS; rep++) {
        /* the host: every chunk into a staging buffer and every result out of one, rotating
         * over 2K buffers of a chunk each as the pipeline does */
        double t0 = now_ms();
        for (size_t off = 0, c = 0; !q->pinned && off < q->n; off += chunk, c++) {
            size_t cnt = q->n - off < chunk ? q->n - off : chunk;
            memcpy(stage[c % k], q->h_in + off, cnt * sizeof(int));
            memcpy(q->h_out + off, stage[k + c % k], cnt * sizeof(int));
        }
        double t1 = now_ms();
        /* the link, both ways at once, pinned */
        CUDA_CHECK(cudaMemcpyAsync(d_x, h_pin_in, bytes, cudaMemcpyHostToDevice, a));
        CUDA_CHECK(cudaMemcpyAsync(h_pin_out, d_y, bytes, cudaMemcpyDeviceToHost, b));
        CUDA_CHECK(cudaStreamSynchronize(a));
        CUDA_CHECK(cudaStreamSynchronize(b));
        double t2 = now_ms();
        CUDA_CHECK(cudaMemcpyAsync(d_x, h_pin_in, bytes, cudaMemcpyHostToDevice, a));
        CUDA_CHECK(cudaStreamSynchronize(a));
        double t3 = now_ms();
        CUDA_CHECK(cudaMemcpyAsync(h_pin_out, d_y, bytes, cudaMemcpyDeviceToHost, b));
        CUDA_CHECK(cudaStreamSynchronize(b));
        double t4 = now_ms();
        /* the kernel, chunk by chunk on one stream */
        for (size_t off = 0, c = 0; off < q->n; off += chunk, c++) {
            size_t cnt = q->n - off < chunk ? q->n - off : chunk;
            affine_chunk(d_x + off, d_y + off, cnt, (long long)c, NULL, a);
            CUDA_CHECK(cudaGetLastError());
        }
        CUDA_CHECK(cudaStreamSynchronize(a));
        double t5 = now_ms();
        if (rep >= 0) {
            th[rep] = t1 - t0;
            tl[rep] = t2 - t1;
            tu[rep] = t3 - t2;
            td[rep] = t4 - t3;
            tk[rep] = t5 - t4;
        }
    }
    f.host = median(th, SPEED_REPS);
    f.link = median(tl, SPEED_REPS);
    f.h2d = median(tu, SPEED_REPS);
    f.d2h = median(td, SPEED_REPS);
    f.kernel = median(tk, SPEED_REPS);
    CUDA_CHECK(cudaStreamDestroy(a));
    CUDA_CHECK(cudaStreamDestroy(b));
    for (int i = 0; i < 2 * k; i++)
        CUDA_CHECK(cudaFreeHost(stage[i]));
    CUDA_CHECK(cudaFreeHost(h_pin_in));
    CUDA_CHECK(cudaFreeHost(h_pin_out));
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    return f;
}

/* The floor as the judge sees it: measured where the code runs (the grader's own copies and
 * kernels, but on the device, which the judge does not touch), and sent */
static struct floor_parts floor_seen(const struct pipe_problem *q, size_t chunk, int k)
{
    struct floor_parts f = { 0, 0, 0, 0, 0 };
    if (runs())
        f = measure_floor(q, chunk, k);
    grade_exchange_bytes(&f, sizeof f);
    const double parts[] = { f.host, f.link, f.h2d, f.d2h, f.kernel };
    times_check(parts, 5);
    return f;
}

static double floor_of(const struct floor_parts *f)
{
    double m = f->host;
    m = f->link > m ? f->link : m;
    return f->kernel > m ? f->kernel : m;
}

/* what the timed runs of step 2 returned and took: the warm-up, then each rep */
struct pipe_times {
    cudaError_t warm, run[SPEED_REPS];
    double t[SPEED_REPS];
};

/* the pipeline's run, median of SPEED_REPS after a warm-up, its result checked */
static double time_pipeline(struct pipeline *p, struct pipe_problem *q, size_t chunk)
{
    struct pipe_times pt;
    memset(&pt, 0, sizeof pt);
    if (runs()) {
        /* the first code that fails stops the runs; the judge fails the test on it */
        int ok = (pt.warm = pipeline_run(p, q->h_in, q->h_out, q->n, NULL)) == cudaSuccess;
        for (int i = 0; ok && i < SPEED_REPS; i++) {
            memset(q->h_out, 0xff, q->n * sizeof(int));
            double t0 = now_ms();
            ok = (pt.run[i] = pipeline_run(p, q->h_in, q->h_out, q->n, NULL)) == cudaSuccess;
            pt.t[i] = now_ms() - t0;
        }
    }
    grade_exchange_bytes(&pt, sizeof pt);
    CODE_CHECK(pt.warm, "pipeline_run(p, q->h_in, q->h_out, q->n, NULL)");
    for (int i = 0; i < SPEED_REPS; i++)
        CODE_CHECK(pt.run[i], "pipeline_run(p, q->h_in, q->h_out, q->n, NULL)");
    times_check(pt.t, SPEED_REPS);
    pipe_out_seen(q);
    char msg[256];
    JUDGE(pipe_check(q, chunk, msg, sizeof msg) == 0, "after the timed runs: %s", msg);
    return median(pt.t, SPEED_REPS);
}

#define SPEED_N (BIG_BYTES / sizeof(int))
#define SPEED_CHUNK ((size_t)1 << 21)  /* 8 MiB */
#define SPEED_K 4

START_TEST(step2_speed)
{
    int slot = grade_slot();
    grade_split(); /* pipeline_* run and timed in a runner, judged here */
    struct rng r = grade_rng(slot);
    /* the caller's buffers pinned, as step 1 teaches: the pipeline copies them directly, and
     * the floor is the link (both ways at once) or the kernel, not the host's staging */
    struct pipe_problem q;
    pipe_init_seen(&q, SPEED_N, 1);
    pipe_fill(&q, &r);
    struct pipeline p;
    SEEN_CHECK(pipeline_create(&p, SPEED_CHUNK, SPEED_K));
    double ms = time_pipeline(&p, &q, SPEED_CHUNK);
    SEEN_CHECK(pipeline_destroy(&p));
    struct floor_parts f = floor_seen(&q, SPEED_CHUNK, SPEED_K);
    pipe_free(&q);
    grade_split_end();
    double fl = floor_of(&f), ratio = ms / fl;
    /* Where one resource dominates (the host's staging, when the user's memory is pageable), a
     * loop that overlaps nothing can come near the floor too. So also: of the time that overlap
     * can hide (the four parts one after the other, less the floor), how much this run hid. */
    double serial = f.host + f.h2d + f.kernel + f.d2h, hideable = serial - fl;
    double hidden = hideable > 0 ? (serial - ms) / hideable : 1.0;
    const char *busiest = fl == f.link ? "the link"
                        : fl == f.kernel ? "the kernel" : "the host's copies";
    grade_note(slot, "256 MiB pinned, 8 MiB chunks, K %d: %.2f ms; floor %.2f ms (%s): host "
                     "staging %.2f, link both ways %.2f (up %.2f, down %.2f), kernel %.2f: "
                     "%.3fx (at most %.2fx); %.0f%% of the %.2f ms that overlap can hide was "
                     "hidden (at least %.0f%%)", SPEED_K, ms, fl, busiest, f.host, f.link,
               f.h2d, f.d2h, f.kernel, ratio, STEP2_NEEDS, 100 * hidden, hideable,
               100 * STEP2_HIDDEN);
    grade_summary("%.3fx its floor, %s (at most %.2fx), %.0f%% hidden (at least %.0f%%)", ratio,
                  busiest, STEP2_NEEDS, 100 * hidden, 100 * STEP2_HIDDEN);
    grade_hint(slot, "the caller's buffers are pinned here: copy them directly (staging would add "
                   "two host copies of every byte), and keep the link busy both ways: chunk c + 1 "
                   "goes up while chunk c comes down; a wait for the device, or for the chunk "
                   "just issued, makes them take turns");
    ck_assert_msg(ratio <= STEP2_NEEDS, "%.2f ms against a floor of %.2f ms: %.3fx, at most %.2fx",
                  ms, fl, ratio, STEP2_NEEDS);
    ck_assert_msg(hidden >= STEP2_HIDDEN, "%.2f ms against %.2f ms for the parts one after the "
                  "other: %.0f%% of the %.2f ms that overlap can hide was hidden, at least %.0f%%",
                  ms, serial, 100 * hidden, hideable, 100 * STEP2_HIDDEN);
}
END_TEST

/* ==== step 3: both directions at once ============================================================ */

struct duplex_case { size_t up, down; };
static const struct duplex_case DUPLEX_CASES[] = {
    { 0, 0 },            /* big both ways: 256 MiB (CPU: 1 MiB + 5) */
    { 1, 4099 },
    { 1000003, 0 },      /* one way only */
    { 0, 77 },
};
#define NDUPLEX ((int)(sizeof DUPLEX_CASES / sizeof DUPLEX_CASES[0]))

static struct duplex_case duplex_here(int i)
{
    struct duplex_case c = DUPLEX_CASES[i];
    if (i == 0)
        c.up = c.down = gpu_times_are_real() ? BIG_BYTES : MIB + 5;
    return c;
}

/* Where the code runs, h_up and h_down are pinned and d_up and d_down are guarded device
 * buffers; the judge has none of them but an h_up of its own (malloc's), the same bytes from the
 * same seed. got_down is h_down as read the moment exchange returned, back d_up's bytes: read
 * where the code ran, sent to the judge. */
struct duplex {
    size_t up, down;
    unsigned char *h_up, *h_down, *want_down, *got_down, *back;
    void *d_up, *d_down;
    struct guards g_up;        /* d_up's guard zones */
};

static void duplex_init(struct duplex *x, struct duplex_case c)
{
    x->up = c.up;
    x->down = c.down;
    size_t u = c.up ? c.up : 1, d = c.down ? c.down : 1;
    x->h_down = NULL;
    x->d_up = x->d_down = NULL;
    if (runs()) {
        CUDA_CHECK(cudaMallocHost((void **)&x->h_up, u));
        CUDA_CHECK(cudaMallocHost((void **)&x->h_down, d));
        x->d_up = dbuf_alloc(u, "d_up");
        x->d_down = dbuf_alloc(d, "d_down");
    } else {
        x->h_up = xmalloc(u);
    }
    x->want_down = xmalloc(d);
    x->got_down = xmalloc(d);
    x->back = xmalloc(u);
    guards_open(&x->g_up, x->d_up, u, "d_up");
}

static void duplex_fill(struct duplex *x, struct rng *r)
{
    if (x->up)
        fill_bytes(r, x->h_up, x->up);
    if (x->down) {
        fill_bytes(r, x->want_down, x->down);
        if (runs()) {
            to_device(x->d_down, x->want_down, x->down);
            memset(x->h_down, 0xff, x->down);
        }
    }
    if (runs())
        dbuf_poison(x->d_up);
}

static void duplex_free(struct duplex *x)
{
    if (runs()) {
        CUDA_CHECK(cudaFreeHost(x->h_up));
        CUDA_CHECK(cudaFreeHost(x->h_down));
        dbuf_free(x->d_up);
        dbuf_free(x->d_down);
    } else {
        free(x->h_up);
    }
    free(x->want_down);
    free(x->got_down);
    free(x->back);
    guards_free(&x->g_up);
}

static cudaError_t duplex_run(struct duplex *x)
{
    return exchange(x->up ? x->d_up : NULL, x->up ? x->h_up : NULL, x->up,
                    x->down ? x->h_down : NULL, x->down ? x->d_down : NULL, x->down);
}

static void duplex_check(int slot, struct duplex *x, const char *what)
{
    (void)slot;
    /* the host's side first: reading it needs no call, so a copy down still running (exchange
     * returned before it landed) shows here, where the synchronous copy that reads the device's
     * side below would wait for it on the legacy stream and hide it. The runner takes its copy
     * at once, before anything else, and sends that. */
    if (x->down) {
        if (runs())
            memcpy(x->got_down, x->h_down, x->down);
        exchange_pieces(x->got_down, x->down);
        long long at = judges() ? first_diff(x->got_down, x->want_down, x->down) : -1;
        JUDGE(at < 0, "%s: down %zu bytes: byte %lld on the host is 0x%02x, want 0x%02x",
              what, x->down, at, at < 0 ? 0 : x->got_down[at], at < 0 ? 0 : x->want_down[at]);
    }
    if (x->up) {
        device_seen(x->back, x->d_up, x->up);
        long long at = judges() ? first_diff(x->back, x->h_up, x->up) : -1;
        JUDGE(at < 0, "%s: up %zu bytes: byte %lld on the device is 0x%02x, want 0x%02x",
              what, x->up, at, at < 0 ? 0 : x->back[at], at < 0 ? 0 : x->h_up[at]);
    }
    char msg[256];
    int bad = guards_check(&x->g_up, msg, sizeof msg);
    JUDGE(bad == 0, "%s: %s", what, msg);
}

START_TEST(step3_correct)
{
    int slot = grade_slot();
    struct duplex_case c = duplex_here(_i);
    if (grade_quick_skip(slot, (double)(c.up + c.down), "bytes"))
        return;
    grade_split(); /* exchange in a runner, the checks here */
    struct rng r = grade_rng(slot);
    struct duplex x;
    duplex_init(&x, c);
    struct census before = census_seen();
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            shuffle(&r);
        duplex_fill(&x, &r);
        cudaError_t e = SEEN(duplex_run(&x));
        JUDGE(e == cudaSuccess, "up %zu, down %zu bytes: exchange returned %s", c.up,
              c.down, err_name(e));
        duplex_check(slot, &x, round ? "second run, shuffled streams" : "exchange");
    }
    check_census(slot, before, "two exchanges");
    if (_i == 0) {
        cudaError_t e = SEEN(exchange(x.d_up, x.h_up, 0, x.h_down, x.d_down, 0));
        JUDGE(e == cudaErrorInvalidValue, "exchange of 0 bytes both ways returned %s, "
              "want cudaErrorInvalidValue", err_name(e));
        e = SEEN(exchange(NULL, x.h_up, 16, x.h_down, x.d_down, 16));
        JUDGE(e == cudaErrorInvalidValue, "exchange with a NULL d_up returned %s, want "
              "cudaErrorInvalidValue", err_name(e));
        check_census(slot, before, "exchange refusing bad arguments");
    }
    duplex_free(&x);
    grade_note(slot, "up %zu, down %zu bytes, bit-exact twice", c.up, c.down);
    grade_split_end();
}
END_TEST

#ifdef HARNESS_EMU
/* step 3's schedule, judged: one stream a direction, pinned, nothing between the two */
static void judge_duplex_schedule(int slot, const struct sched *s)
{
    int up_stream = -1, down_stream = -1;
    for (size_t i = 0; i < s->n; i++) {
        const struct emu_op *o = &s->op[i];
        if (!is_h2d(o) && !is_d2h(o))
            continue;
        int *mine = is_h2d(o) ? &up_stream : &down_stream;
        const char *way = is_h2d(o) ? "up" : "down";
        if (o->stream == 0) {
            grade_hint(slot, "cudaMemcpy, and cudaMemcpyAsync on stream 0, use the legacy stream, "
                             "which runs after all other work and before all later work: the "
                             "two copies take turns. Create two streams, one a direction");
            ck_abort_msg("the copy %s (%zu bytes) ran on the legacy stream (stream 0)", way,
                         o->bytes);
        }
        if (o->pageable)
            ck_abort_msg("the copy %s was from or to pageable memory", way);
        if (*mine >= 0 && *mine != o->stream)
            ck_abort_msg("the copies %s ran on two streams (%d and %d): one stream a direction",
                         way, *mine, o->stream);
        *mine = o->stream;
    }
    ck_assert_msg(up_stream >= 0 && down_stream >= 0, "the schedule holds no copy %s",
                  up_stream < 0 ? "up" : "down");
    if (up_stream == down_stream) {
        grade_hint(slot, "the operations of one stream run one after the other: two copies on "
                         "one stream never overlap, whatever the hardware could do");
        ck_abort_msg("both copies ran on stream %d: one after the other", up_stream);
    }
    /* a wait of one direction's stream on a record made on the other's orders them */
    for (size_t i = 0; i < s->n; i++) {
        const struct emu_op *w = &s->op[i];
        if (w->kind != EMU_OP_EVENT_WAIT || w->after < 0)
            continue;
        for (size_t j = 0; j < s->n; j++) {
            const struct emu_op *rec = &s->op[j];
            if (rec->kind == EMU_OP_EVENT_RECORD && (long long)rec->issue == w->after &&
                rec->stream != w->stream &&
                (rec->stream == up_stream || rec->stream == down_stream) &&
                (w->stream == up_stream || w->stream == down_stream)) {
                grade_hint(slot, "the two copies touch different buffers: nothing needs one to "
                                 "finish before the other starts, so declare nothing. A false "
                                 "dependency costs the overlap as surely as one stream would");
                ck_abort_msg("stream %d waits for event %d, recorded on stream %d: a false "
                             "dependency between the two directions", w->stream, w->event,
                             rec->stream);
            }
        }
    }
    grade_note(slot, "up on stream %d, down on stream %d, pinned, nothing between them",
               up_stream, down_stream);
    grade_summary("two streams, no dependency between them");
}
#endif

START_TEST(step3_concept)
{
#ifdef HARNESS_EMU
    int slot = grade_slot();
    grade_split(); /* exchange in a runner, its schedule judged here */
    struct rng r = grade_rng(slot);
    struct duplex x;
    duplex_init(&x, (struct duplex_case){ MIB + 5, MIB + 5 });
    duplex_fill(&x, &r);
    if (runs())
        emu_schedule_reset();
    SEEN_CHECK(duplex_run(&x));
    struct sched s = sched_seen();
    duplex_check(slot, &x, "exchange");
    if (judges())
        judge_duplex_schedule(slot, &s);
    free(s.op);
    duplex_free(&x);
    grade_split_end();
#endif
}
END_TEST

/* what the timed runs of step 3 returned and took: the warm-up first, then each rep */
struct duplex_times {
    cudaError_t up[SPEED_REPS + 1], down[SPEED_REPS + 1], both[SPEED_REPS + 1];
    double tu[SPEED_REPS], td[SPEED_REPS], tb[SPEED_REPS];
};

START_TEST(step3_speed)
{
    int slot = grade_slot();
    grade_split(); /* exchange run and timed in a runner, judged here */
    struct rng r = grade_rng(slot);
    struct duplex x;
    duplex_init(&x, (struct duplex_case){ BIG_BYTES, BIG_BYTES });
    duplex_fill(&x, &r);
    struct duplex_times t;
    memset(&t, 0, sizeof t);
    /* each run until the device is idle: work an exchange left running is charged to it; the
     * first code that fails stops the runs, and the judge fails the test on it */
    for (int i = -1; i < SPEED_REPS && runs(); i++) {
        double t0 = now_ms();
        if ((t.up[i + 1] = exchange(x.d_up, x.h_up, x.up, NULL, NULL, 0)) != cudaSuccess)
            break;
        CUDA_CHECK(cudaDeviceSynchronize());
        double t1 = now_ms();
        if ((t.down[i + 1] = exchange(NULL, NULL, 0, x.h_down, x.d_down, x.down)) != cudaSuccess)
            break;
        CUDA_CHECK(cudaDeviceSynchronize());
        double t2 = now_ms();
        memset(x.h_down, 0xff, x.down);
        dbuf_poison(x.d_up);
        double t3 = now_ms();
        if ((t.both[i + 1] = duplex_run(&x)) != cudaSuccess)
            break;
        CUDA_CHECK(cudaDeviceSynchronize());
        double t4 = now_ms();
        if (i >= 0) {
            t.tu[i] = t1 - t0;
            t.td[i] = t2 - t1;
            t.tb[i] = t4 - t3;
        }
    }
    grade_exchange_bytes(&t, sizeof t);
    for (int i = 0; i < SPEED_REPS + 1; i++) {
        CODE_CHECK(t.up[i], "exchange(x.d_up, x.h_up, x.up, NULL, NULL, 0)");
        CODE_CHECK(t.down[i], "exchange(NULL, NULL, 0, x.h_down, x.d_down, x.down)");
        CODE_CHECK(t.both[i], "duplex_run(&x)");
    }
    times_check(t.tu, SPEED_REPS);
    times_check(t.td, SPEED_REPS);
    times_check(t.tb, SPEED_REPS);
    duplex_check(slot, &x, "after the timed runs");
    duplex_free(&x);
    grade_split_end();
    double mu = median(t.tu, SPEED_REPS), md = median(t.td, SPEED_REPS);
    double mb = median(t.tb, SPEED_REPS), ratio = mb / (mu + md);
    grade_note(slot, "256 MiB each way: up alone %.2f ms (%.1f GB/s), down alone %.2f ms "
                     "(%.1f GB/s), both at once %.2f ms (%.1f GB/s together): %.3fx one after "
                     "the other (at most %.2fx)", mu, BIG_BYTES / (mu * 1e6), md,
               BIG_BYTES / (md * 1e6), mb, 2.0 * BIG_BYTES / (mb * 1e6), ratio, STEP3_NEEDS);
    grade_summary("both ways in %.3fx the time of one after the other (at most %.2fx)", ratio,
                  STEP3_NEEDS);
    grade_hint(slot, "issue both copies before waiting for either, each on its own stream; a "
                     "wait between the two issues (cudaStreamSynchronize, cudaMemcpy) makes the "
                     "second start after the first has ended");
    ck_assert_msg(ratio <= STEP3_NEEDS, "both ways %.2f ms, one after the other %.2f ms: %.3fx, "
                  "at most %.2fx", mb, mu + md, ratio, STEP3_NEEDS);
}
END_TEST

/* ==== step 4: a CUDA graph ======================================================================= */

struct graph_case { int n, iterations; };
static const struct graph_case GRAPH_CASES[] = { { 1, 1 }, { 4097, 7 }, { 40009, 1000 } };
#define NGRAPH ((int)(sizeof GRAPH_CASES / sizeof GRAPH_CASES[0]))

/* the CPU backend runs the last case's 3000 kernels of 40009 threads slowly: 1009 and 107 there */
static struct graph_case graph_case_here(int i)
{
    struct graph_case c = GRAPH_CASES[i];
    if (!gpu_times_are_real() && c.iterations > 100)
        c = (struct graph_case){ 1009, 107 };
    return c;
}

/* What plain launches of the loop give, replayed on the host (loop_ref.h): the judge's
 * reference, as it runs no CUDA. */

START_TEST(step4_correct)
{
    int slot = grade_slot();
    grade_split(); /* graph_loop in a runner, the checks here */
    struct graph_case c = graph_case_here(_i);
    struct rng r = grade_rng(slot);
    size_t bytes = (size_t)c.n * sizeof(float);
    float *h = xmalloc(bytes), *want = xmalloc(bytes), *got = xmalloc(bytes), *b = xmalloc(bytes);
    float *d_a = NULL, *d_b = NULL;
    cudaStream_t s = NULL;
    if (runs()) {
        d_a = dbuf_alloc(bytes, "d_a");
        d_b = dbuf_alloc(bytes, "d_b");
        CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    }
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            shuffle(&r);
        rng_fill_f32(&r, h, (size_t)c.n, -1.0f, 1.0f);
        if (judges()) {
            memcpy(want, h, bytes);
            loop_on_host(want, b, c.n, c.iterations);
        }
        if (runs()) {
            to_device(d_a, h, bytes);
            dbuf_poison(d_b);
        }
        cudaError_t e = SEEN(graph_loop(d_a, d_b, c.n, c.iterations, s));
        JUDGE(e == cudaSuccess, "n %d, %d iterations: graph_loop returned %s", c.n,
              c.iterations, err_name(e));
        device_seen(got, d_a, bytes);
        for (int i = 0; i < c.n && judges(); i++)
            if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
                grade_hint(slot, "the graph must hold the loop's kernels in their order: capture "
                                 "blur, bias, copy for each iteration it stands for, and launch "
                                 "it iterations / batch times, the rest one by one");
                ck_abort_msg("n %d, %d iterations%s: element %d is %.9g, plain launches give %.9g",
                             c.n, c.iterations, round ? ", second run, shuffled" : "", i,
                             got[i], want[i]);
            }
    }
    if (runs()) {
        CUDA_CHECK(cudaStreamDestroy(s));
        dbuf_free(d_a);
        dbuf_free(d_b);
    }
    free(h), free(want), free(got), free(b);
    grade_note(slot, "bit-exact against plain launches, twice");
    grade_split_end();
}
END_TEST

#ifdef HARNESS_EMU
/* the CPU backend's live graphs and executable graphs before graph_loop and after it */
struct graph_census { int graphs, execs, graphs_after, execs_after; };

/* step 4's schedule, judged: most kernels run inside graph launches, of one executable graph,
 * and nothing left */
static void judge_graph_schedule(int slot, const struct sched *sc, const struct graph_census *g,
                                 int iterations)
{
    int launches = 0, kernels = 0, in_graph = 0, exec_ids[64], nexec = 0;
    for (size_t i = 0; i < sc->n; i++) {
        const struct emu_op *o = &sc->op[i];
        if (o->kind == EMU_OP_GRAPH_LAUNCH) {
            launches++;
            int seen = 0;
            for (int j = 0; j < nexec; j++)
                seen |= exec_ids[j] == o->graph;
            if (!seen && nexec < 64)
                exec_ids[nexec++] = o->graph;
        } else if (o->kind == EMU_OP_KERNEL) {
            kernels++;
            in_graph += o->graph != 0;
        }
    }
    ck_assert_msg(kernels == 3 * iterations, "%d iterations of three kernels: the schedule ran %d "
                  "kernels", iterations, kernels);
    if (launches == 0 || 2 * in_graph < kernels) {
        grade_hint(slot, "capture the launches of a batch of iterations between "
                         "cudaStreamBeginCapture and cudaStreamEndCapture, instantiate the graph, "
                         "and launch it with cudaGraphLaunch: its kernels then run as the graph's "
                         "nodes");
        ck_abort_msg("%d graph launch(es); %d of the %d kernels ran inside one (at least half "
                     "wanted)", launches, in_graph, kernels);
    }
    if (nexec > 1) {
        grade_hint(slot, "instantiate once, before the loop, and launch that executable graph "
                         "every time: a capture and an instantiation cost more than the launches "
                         "they replace");
        ck_abort_msg("the %d graph launches ran %d different executable graphs: the graph was "
                     "instantiated again and again", launches, nexec);
    }
    long long graphs_left = (long long)g->graphs_after - g->graphs,
              execs_left = (long long)g->execs_after - g->execs;
    if (graphs_left > 0 || execs_left > 0) {
        grade_hint(slot, "cudaGraphExecDestroy the executable graph and cudaGraphDestroy the graph "
                         "before returning, on every path");
        ck_abort_msg("after graph_loop returned: %lld graph(s) and %lld executable graph(s) still "
                     "live", graphs_left, execs_left);
    }
    grade_note(slot, "%d launches of one executable graph ran %d of the %d kernels; nothing left",
               launches, in_graph, kernels);
    grade_summary("%d graph launches for %d kernels, instantiated once", launches, kernels);
}
#endif

START_TEST(step4_concept)
{
#ifdef HARNESS_EMU
    int slot = grade_slot();
    grade_split(); /* graph_loop in a runner, its schedule judged here */
    struct rng r = grade_rng(slot);
    const int n = 1000, iterations = 100;
    size_t bytes = (size_t)n * sizeof(float);
    float *h = xmalloc(bytes), *d_a = NULL, *d_b = NULL;
    rng_fill_f32(&r, h, (size_t)n, -1.0f, 1.0f);
    cudaStream_t s = NULL;
    struct graph_census g = { 0, 0, 0, 0 };
    if (runs()) {
        d_a = dbuf_alloc(bytes, "d_a");
        d_b = dbuf_alloc(bytes, "d_b");
        to_device(d_a, h, bytes);
        CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        g.graphs = emu_live_graphs();
        g.execs = emu_live_graph_execs();
        emu_schedule_reset();
    }
    SEEN_CHECK(graph_loop(d_a, d_b, n, iterations, s));
    struct sched sc = sched_seen();
    if (runs()) {
        g.graphs_after = emu_live_graphs();
        g.execs_after = emu_live_graph_execs();
    }
    grade_exchange_bytes(&g, sizeof g);
    if (judges())
        judge_graph_schedule(slot, &sc, &g, iterations);
    if (runs()) {
        CUDA_CHECK(cudaStreamDestroy(s));
        dbuf_free(d_a);
        dbuf_free(d_b);
    }
    free(sc.op);
    free(h);
    grade_split_end();
#endif
}
END_TEST

/* what the timed runs of step 4 returned and took: the warm-up first, then each rep */
struct graph_times {
    cudaError_t plain[SPEED_REPS + 1], graph[SPEED_REPS + 1];
    double tp[SPEED_REPS], tg[SPEED_REPS];
};

START_TEST(step4_speed)
{
    int slot = grade_slot();
    grade_split(); /* graph_loop run and timed in a runner, judged here */
    const int n = 4096, iterations = 10000;
    size_t bytes = (size_t)n * sizeof(float);
    struct graph_times t;
    memset(&t, 0, sizeof t);
    if (runs()) {
        float *d_a = dbuf_alloc(bytes, "d_a"), *d_b = dbuf_alloc(bytes, "d_b");
        CUDA_CHECK(cudaMemset(d_a, 0, bytes));
        cudaStream_t s;
        CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        /* the first code that fails stops the runs; the judge fails the test on it */
        for (int i = -1; i < SPEED_REPS; i++) {
            double t0 = now_ms();
            if ((t.plain[i + 1] = plain_loop(d_a, d_b, n, iterations, s)) != cudaSuccess)
                break;
            double t1 = now_ms();
            if ((t.graph[i + 1] = graph_loop(d_a, d_b, n, iterations, s)) != cudaSuccess)
                break;
            double t2 = now_ms();
            if (i >= 0) {
                t.tp[i] = t1 - t0;
                t.tg[i] = t2 - t1;
            }
        }
        CUDA_CHECK(cudaStreamDestroy(s));
        dbuf_free(d_a);
        dbuf_free(d_b);
    }
    grade_exchange_bytes(&t, sizeof t);
    for (int i = 0; i < SPEED_REPS + 1; i++) {
        CODE_CHECK(t.plain[i], "plain_loop(d_a, d_b, n, iterations, s)");
        CODE_CHECK(t.graph[i], "graph_loop(d_a, d_b, n, iterations, s)");
    }
    times_check(t.tp, SPEED_REPS);
    times_check(t.tg, SPEED_REPS);
    grade_split_end();
    double mp = median(t.tp, SPEED_REPS), mg = median(t.tg, SPEED_REPS), ratio = mp / mg;
    double kernels = 3.0 * iterations;
    grade_note(slot, "n %d, %d kernels: plain %.2f ms (%.2f us a kernel), graph %.2f ms "
                     "(%.2f us a kernel): %.2fx (needs %.1fx)", n, (int)kernels, mp,
               1e3 * mp / kernels, mg, 1e3 * mg / kernels, ratio, STEP4_NEEDS);
    grade_summary("%.2f us a kernel = %.2fx plain launches (needs %.1fx)", 1e3 * mg / kernels,
                  ratio, STEP4_NEEDS);
    grade_hint(slot, "capture once, outside the loop, and launch the instantiated graph many "
                     "times; a graph of one iteration saves less than one of twenty, and a "
                     "capture or instantiation inside the loop costs more than it saves");
    ck_assert_msg(ratio >= STEP4_NEEDS, "%.2fx plain launches, needs %.1fx", ratio, STEP4_NEEDS);
}
END_TEST

/* ==== bench ====================================================================================== */

static double gbs_of(double bytes, double ms) { return bytes / (ms * 1e6); }

/* median of `reps` host-clock timings of fn(ctx), after one untimed run. Every timed loop of
 * the bench is bracketed by gpu_clocks_start and gpu_clocks_stop (gpu.h), so that its rows carry
 * the SM clock and power while it ran. */
static double time_host(void (*fn)(void *), void *ctx, int reps)
{
    double t[16];
    fn(ctx);
    gpu_clocks_start();
    for (int i = 0; i < reps; i++) {
        double t0 = now_ms();
        fn(ctx);
        t[i] = now_ms() - t0;
    }
    gpu_clocks_stop();
    return median(t, reps);
}

struct copy_job {
    void *dst;
    const void *src;
    size_t bytes;
    enum cudaMemcpyKind kind;
    cudaStream_t stream; /* NULL: cudaMemcpy */
};

static void run_copy(void *ctx)
{
    struct copy_job *j = ctx;
    if (!j->stream)
        CUDA_CHECK(cudaMemcpy(j->dst, j->src, j->bytes, j->kind));
    else {
        CUDA_CHECK(cudaMemcpyAsync(j->dst, j->src, j->bytes, j->kind, j->stream));
        CUDA_CHECK(cudaStreamSynchronize(j->stream));
    }
}

struct reg_job { void *h; size_t bytes; double unregister_ms; };
static void run_register(void *ctx)
{
    struct reg_job *j = ctx;
    CUDA_CHECK(cudaHostRegister(j->h, j->bytes, cudaHostRegisterDefault));
    double t0 = now_ms();
    CUDA_CHECK(cudaHostUnregister(j->h));
    j->unregister_ms = now_ms() - t0;
}

static void row(struct results *out, const char *kernel, const char *shape, double ms, double gbs)
{
    results_row(out, CHAPTER, kernel, shape, ms, gbs, 0.0);
    printf("%-14s %-18s %10.3f ms %8.2f GB/s\n", shape, kernel, ms, gbs);
    fflush(stdout);
}

/* step 1: the three kinds of host memory, both ways; what registering costs */
static void bench_memory(struct results *out, size_t bytes, int reps)
{
    char shape[32];
    snprintf(shape, sizeof shape, "%zu", bytes);
    unsigned char *h_page = xmalloc(bytes), *h_pin;
    memset(h_page, 1, bytes); /* touched: no page faults in the timings */
    CUDA_CHECK(cudaMallocHost((void **)&h_pin, bytes));
    memset(h_pin, 1, bytes);
    void *d;
    CUDA_CHECK(cudaMalloc(&d, bytes));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    struct copy_job j;
    for (int dir = 0; dir < 2; dir++) {
        const char *way = dir == 0 ? "h2d" : "d2h";
        enum cudaMemcpyKind kind = dir == 0 ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
        char name[32];
        j = (struct copy_job){ dir ? (void *)h_page : d, dir ? d : (void *)h_page, bytes, kind, NULL };
        snprintf(name, sizeof name, "%s_pageable", way);
        double ms = time_host(run_copy, &j, reps);
        row(out, name, shape, ms, gbs_of(bytes, ms));
        j = (struct copy_job){ dir ? (void *)h_pin : d, dir ? d : (void *)h_pin, bytes, kind, s };
        snprintf(name, sizeof name, "%s_pinned", way);
        ms = time_host(run_copy, &j, reps);
        row(out, name, shape, ms, gbs_of(bytes, ms));
        CUDA_CHECK(cudaHostRegister(h_page, bytes, cudaHostRegisterDefault));
        j = (struct copy_job){ dir ? (void *)h_page : d, dir ? d : (void *)h_page, bytes, kind, s };
        snprintf(name, sizeof name, "%s_registered", way);
        ms = time_host(run_copy, &j, reps);
        row(out, name, shape, ms, gbs_of(bytes, ms));
        CUDA_CHECK(cudaHostUnregister(h_page));
    }
    struct reg_job rj = { h_page, bytes, 0 };
    double ms = time_host(run_register, &rj, reps);
    row(out, "register", shape, ms - rj.unregister_ms, gbs_of(bytes, ms - rj.unregister_ms));
    row(out, "unregister", shape, rj.unregister_ms, gbs_of(bytes, rj.unregister_ms));
    /* the step's own upload, opened once */
    struct upload u;
    CUDA_CHECK(upload_open(&u, h_page, bytes));
    double t[16];
    gpu_clocks_start();
    for (int i = 0; i < reps; i++) {
        double t0 = now_ms();
        CUDA_CHECK(upload_copy(&u, d));
        t[i] = now_ms() - t0;
    }
    gpu_clocks_stop();
    CUDA_CHECK(upload_close(&u));
    ms = median(t, reps);
    row(out, "upload_copy", shape, ms, gbs_of(bytes, ms));
    CUDA_CHECK(cudaStreamDestroy(s));
    CUDA_CHECK(cudaFree(d));
    CUDA_CHECK(cudaFreeHost(h_pin));
    free(h_page);
}

/* one pipeline configuration: the median of reps runs after a warm-up; -1 on a wrong result */
static double bench_one(struct pipe_problem *q, size_t chunk, int k, int reps)
{
    struct pipeline p;
    CUDA_CHECK(pipeline_create(&p, chunk, k));
    double t[16];
    CUDA_CHECK(pipeline_run(&p, q->h_in, q->h_out, q->n, NULL));
    gpu_clocks_start();
    for (int i = 0; i < reps; i++) {
        memset(q->h_out, 0xff, q->n * sizeof(int));
        double t0 = now_ms();
        CUDA_CHECK(pipeline_run(&p, q->h_in, q->h_out, q->n, NULL));
        t[i] = now_ms() - t0;
    }
    gpu_clocks_stop();
    CUDA_CHECK(pipeline_destroy(&p));
    char msg[256];
    if (pipe_check(q, chunk, msg, sizeof msg) != 0) {
        fprintf(stderr, "bench: pipeline, chunk %zu, K %d%s: %s\n", chunk, k,
                q->pinned ? ", pinned" : "", msg);
        return -1;
    }
    return median(t, reps);
}

/* step 2: the pipeline at each chunk size and K, and its floor's parts, from pageable buffers;
 * then from pinned ones, at the grader's chunk size, with their floor; -1 on a wrong result */
static const int KS[] = { 1, 2, 4 }; /* the bench's stream counts */

/* The pipeline at each K of KS on q in chunks of `chunk` elements, one row each, named
 * PREFIX_kK; 0, or -1 when a run failed (said). bytes: q's payload, up and down. */
static int bench_ks(struct results *out, struct pipe_problem *q, size_t chunk, const char *prefix,
                    size_t bytes, int reps)
{
    char shape[32], name[48];
    snprintf(shape, sizeof shape, "%zu", chunk * sizeof(int));
    for (size_t ki = 0; ki < sizeof KS / sizeof KS[0]; ki++) {
        double ms = bench_one(q, chunk, KS[ki], reps);
        if (ms < 0)
            return -1;
        snprintf(name, sizeof name, "%s_k%d", prefix, KS[ki]);
        row(out, name, shape, ms, gbs_of(2.0 * bytes, ms));
    }
    return 0;
}

static int bench_pipeline(struct results *out, size_t n, int reps)
{
    static const size_t CHUNK_MIB[] = { 1, 2, 4, 8, 16, 32 };
    size_t bytes = n * sizeof(int);
    struct rng r;
    rng_init(&r, harness_seed());
    struct pipe_problem q;
    pipe_init(&q, n);
    pipe_fill(&q, &r);
    char shape[32];
    for (size_t ci = 0; ci < sizeof CHUNK_MIB / sizeof CHUNK_MIB[0]; ci++) {
        size_t chunk = CHUNK_MIB[ci] * MIB / sizeof(int);
        if (!gpu_times_are_real())
            chunk /= 64; /* the CPU backend's problem is 64x smaller */
        if (bench_ks(out, &q, chunk, "pipeline", bytes, reps) != 0) {
            pipe_free(&q);
            return -1;
        }
    }
    size_t chunk = (gpu_times_are_real() ? SPEED_CHUNK : SPEED_CHUNK / 64);
    gpu_clocks_start();
    struct floor_parts f = measure_floor(&q, chunk, SPEED_K);
    gpu_clocks_stop();
    snprintf(shape, sizeof shape, "%zu", bytes);
    row(out, "part_host", shape, f.host, gbs_of(2.0 * bytes, f.host));
    row(out, "part_link", shape, f.link, gbs_of(2.0 * bytes, f.link));
    row(out, "part_h2d", shape, f.h2d, gbs_of(bytes, f.h2d));
    row(out, "part_d2h", shape, f.d2h, gbs_of(bytes, f.d2h));
    row(out, "part_kernel", shape, f.kernel, gbs_of(2.0 * bytes, f.kernel));
    pipe_free(&q);
    /* the caller's buffers pinned: copied directly, no staging, and the link is the floor */
    pipe_init_pinned(&q, n);
    pipe_fill(&q, &r);
    if (bench_ks(out, &q, chunk, "pinned_pipeline", bytes, reps) != 0) {
        pipe_free(&q);
        return -1;
    }
    snprintf(shape, sizeof shape, "%zu", chunk * sizeof(int));
    gpu_clocks_start();
    f = measure_floor(&q, chunk, SPEED_K);
    gpu_clocks_stop();
    row(out, "pinned_floor", shape, floor_of(&f), gbs_of(2.0 * bytes, floor_of(&f)));
    pipe_free(&q);
    return 0;
}

/* step 3: each way alone, and both at once */
static void bench_duplex(struct results *out, size_t bytes, int reps)
{
    struct rng r;
    rng_init(&r, harness_seed());
    struct duplex x;
    duplex_init(&x, (struct duplex_case){ bytes, bytes });
    duplex_fill(&x, &r);
    double tu[16], td[16], tb[16];
    gpu_clocks_start();
    for (int i = -1; i < reps; i++) {
        double t0 = now_ms();
        CUDA_CHECK(exchange(x.d_up, x.h_up, x.up, NULL, NULL, 0));
        double t1 = now_ms();
        CUDA_CHECK(exchange(NULL, NULL, 0, x.h_down, x.d_down, x.down));
        double t2 = now_ms();
        CUDA_CHECK(duplex_run(&x));
        double t3 = now_ms();
        if (i >= 0)
            tu[i] = t1 - t0, td[i] = t2 - t1, tb[i] = t3 - t2;
    }
    gpu_clocks_stop();
    char shape[32];
    snprintf(shape, sizeof shape, "%zu", bytes);
    double mu = median(tu, reps), md = median(td, reps), mb = median(tb, reps);
    row(out, "up_alone", shape, mu, gbs_of(bytes, mu));
    row(out, "down_alone", shape, md, gbs_of(bytes, md));
    row(out, "both_ways", shape, mb, gbs_of(2.0 * bytes, mb));
    duplex_free(&x);
}

/* step 4: the launch-bound loop, plain and as a graph */
static void bench_graph(struct results *out, int reps, int iterations)
{
    const int n = 4096;
    size_t bytes = (size_t)n * sizeof(float);
    float *d_a, *d_b;
    CUDA_CHECK(cudaMalloc((void **)&d_a, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_b, bytes));
    CUDA_CHECK(cudaMemset(d_a, 0, bytes));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    double tp[16], tg[16];
    gpu_clocks_start();
    for (int i = -1; i < reps; i++) {
        double t0 = now_ms();
        CUDA_CHECK(plain_loop(d_a, d_b, n, iterations, s));
        double t1 = now_ms();
        CUDA_CHECK(graph_loop(d_a, d_b, n, iterations, s));
        double t2 = now_ms();
        if (i >= 0)
            tp[i] = t1 - t0, tg[i] = t2 - t1;
    }
    gpu_clocks_stop();
    char shape[32];
    snprintf(shape, sizeof shape, "%dx%d", n, iterations);
    double mp = median(tp, reps), mg = median(tg, reps);
    /* GB/s: the three kernels' bytes (each reads and writes n floats) */
    double moved = 3.0 * iterations * 2.0 * bytes;
    row(out, "plain_loop", shape, mp, gbs_of(moved, mp));
    row(out, "graph_loop", shape, mg, gbs_of(moved, mg));
    CUDA_CHECK(cudaStreamDestroy(s));
    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
}

/* ---- the timeline of one pipeline run ---------------------------------------------------------
 *
 * The reference pipeline's loop (solutions/08-transfers-streams/step2_pipeline.cu), written out
 * once more with a timing event before the copy up and after each of its three operations. On a
 * GPU the events give each operation's start and end on its stream; the host's copies into and
 * out of staging are timed with its clock, from a base event the host has waited for. On the CPU
 * backend the rows come from the schedule its scheduler recorded instead. Rows: lane (0 the host,
 * k stream k), lane_name, op (stage_in, h2d, kernel, d2h, stage_out), chunk, start_ms, end_ms. */
#define GANTT_MAX_CHUNKS 64

struct gantt_row { int lane; const char *op; long long chunk; double start, end; };

static void gantt_write(FILE *f, const struct gantt_row *g, size_t n)
{
    fprintf(f, "lane\tlane_name\top\tchunk\tstart_ms\tend_ms\n");
    for (size_t i = 0; i < n; i++) {
        char lane[16];
        if (g[i].lane == 0)
            snprintf(lane, sizeof lane, "host");
        else
            snprintf(lane, sizeof lane, "stream %d", g[i].lane);
        fprintf(f, "%d\t%s\t%s\t%lld\t%.4f\t%.4f\n", g[i].lane, lane, g[i].op, g[i].chunk,
                g[i].start, g[i].end);
    }
}

static int gantt(const char *path, const struct device_info *info, size_t n, size_t chunk, int k)
{
    const long long nchunks = (long long)((n + chunk - 1) / chunk);
    if (nchunks > GANTT_MAX_CHUNKS || k > PIPE_MAX_STREAMS)
        return -1;
    struct rng r;
    rng_init(&r, harness_seed());
    struct pipe_problem q;
    pipe_init(&q, n);
    pipe_fill(&q, &r);
    struct gantt_row *g = xmalloc((size_t)(nchunks * 5 + 16) * sizeof *g);
    size_t ng = 0;
    cudaStream_t st[PIPE_MAX_STREAMS];
    int *h_in[PIPE_MAX_STREAMS], *h_out[PIPE_MAX_STREAMS], *d_in[PIPE_MAX_STREAMS],
        *d_out[PIPE_MAX_STREAMS];
    cudaEvent_t done_out[PIPE_MAX_STREAMS], ev[GANTT_MAX_CHUNKS][4], base;
    size_t cb = chunk * sizeof(int);
    for (int i = 0; i < k; i++) {
        CUDA_CHECK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
        CUDA_CHECK(cudaEventCreateWithFlags(&done_out[i], cudaEventDisableTiming));
        CUDA_CHECK(cudaMallocHost((void **)&h_in[i], cb));
        CUDA_CHECK(cudaMallocHost((void **)&h_out[i], cb));
        CUDA_CHECK(cudaMalloc((void **)&d_in[i], cb));
        CUDA_CHECK(cudaMalloc((void **)&d_out[i], cb));
    }
    for (long long c = 0; c < nchunks; c++)
        for (int e = 0; e < 4; e++)
            CUDA_CHECK(cudaEventCreate(&ev[c][e]));
    CUDA_CHECK(cudaEventCreate(&base));
#ifdef HARNESS_EMU
    emu_schedule_reset();
#endif
    CUDA_CHECK(cudaEventRecord(base, st[0]));
    CUDA_CHECK(cudaEventSynchronize(base));
    double t0 = now_ms();
    const long long lag = k >= 2 ? 1 : 0;
    for (long long c = 0; c <= nchunks - 1 + lag; c++) {
        if (c < nchunks) {
            int s = (int)(c % k);
            size_t off = (size_t)c * chunk, cnt = n - off < chunk ? n - off : chunk;
            /* the staging buffer was read: chunk c - K was finished */
            double a = now_ms();
            memcpy(h_in[s], q.h_in + off, cnt * sizeof(int));
            g[ng++] = (struct gantt_row){ 0, "stage_in", c, a - t0, now_ms() - t0 };
            CUDA_CHECK(cudaEventRecord(ev[c][0], st[s]));
            CUDA_CHECK(cudaMemcpyAsync(d_in[s], h_in[s], cnt * sizeof(int),
                                       cudaMemcpyHostToDevice, st[s]));
            CUDA_CHECK(cudaEventRecord(ev[c][1], st[s]));
            affine_chunk(d_in[s], d_out[s], cnt, c, NULL, st[s]);
            CUDA_CHECK(cudaGetLastError());
            CUDA_CHECK(cudaEventRecord(ev[c][2], st[s]));
            CUDA_CHECK(cudaMemcpyAsync(h_out[s], d_out[s], cnt * sizeof(int),
                                       cudaMemcpyDeviceToHost, st[s]));
            CUDA_CHECK(cudaEventRecord(ev[c][3], st[s]));
            CUDA_CHECK(cudaEventRecord(done_out[s], st[s]));
        }
        long long f = c - lag;
        if (f >= 0) {
            int s = (int)(f % k);
            size_t off = (size_t)f * chunk, cnt = n - off < chunk ? n - off : chunk;
            CUDA_CHECK(cudaEventSynchronize(done_out[s]));
            double a = now_ms();
            memcpy(q.h_out + off, h_out[s], cnt * sizeof(int));
            g[ng++] = (struct gantt_row){ 0, "stage_out", f, a - t0, now_ms() - t0 };
        }
    }
    for (int i = 0; i < k; i++)
        CUDA_CHECK(cudaStreamSynchronize(st[i]));
    char msg[256];
    int bad = pipe_check(&q, chunk, msg, sizeof msg);
#ifdef HARNESS_EMU
    /* the CPU backend: the streams' rows from its schedule, in host time from the same base */
    (void)info;
    struct sched sc = sched_take();
    size_t *pos = xmalloc((sc.n ? sc.n : 1) * sizeof *pos);
    int (*const kinds[3])(const struct emu_op *) = { is_h2d, is_affine, is_d2h };
    static const char *const names[3] = { "h2d", "kernel", "d2h" };
    double zero = 0;
    for (size_t i = 0; i < sc.n; i++)
        if (sc.op[i].kind == EMU_OP_EVENT_RECORD) { /* the base's record, the first to run */
            zero = sc.op[i].end_ms;
            break;
        }
    int lanes[PIPE_MAX_STREAMS], nlanes = 0; /* the scheduler's stream numbers, as 1, 2, ... */
    for (int kd = 0; kd < 3; kd++) {
        size_t m = by_issue(&sc, kinds[kd], pos);
        for (size_t i = 0; i < m; i++) {
            const struct emu_op *o = &sc.op[pos[i]];
            int lane = 0;
            for (int j = 0; j < nlanes && !lane; j++)
                lane = lanes[j] == o->stream ? j + 1 : 0;
            if (!lane && nlanes < PIPE_MAX_STREAMS) {
                lanes[nlanes++] = o->stream;
                lane = nlanes;
            }
            g[ng++] = (struct gantt_row){ lane, names[kd], (long long)i, o->start_ms - zero,
                                          o->end_ms - zero };
        }
    }
    /* the host rows were timed from t0, taken just after the base ran */
    for (size_t i = 0; i < ng; i++)
        if (g[i].lane == 0)
            g[i].start += t0 - zero, g[i].end += t0 - zero;
    free(pos);
    free(sc.op);
#else
    (void)info;
    for (long long c = 0; c < nchunks; c++) {
        float e[4];
        for (int j = 0; j < 4; j++)
            CUDA_CHECK(cudaEventElapsedTime(&e[j], base, ev[c][j]));
        int lane = (int)(c % k) + 1;
        g[ng++] = (struct gantt_row){ lane, "h2d", c, e[0], e[1] };
        g[ng++] = (struct gantt_row){ lane, "kernel", c, e[1], e[2] };
        g[ng++] = (struct gantt_row){ lane, "d2h", c, e[2], e[3] };
    }
#endif
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        bad = -1;
    } else {
        results_provenance(f, info->name, info->driver);
        fprintf(f, "# pipeline: %zu ints in chunks of %zu over %d streams; times in ms from the "
                   "first operation (%s)\n", n, chunk, k,
                gpu_times_are_real() ? "CUDA events; the host's copies by its clock"
                                     : "the CPU backend's host clock");
        gantt_write(f, g, ng);
        if (fclose(f) != 0)
            bad = -1;
    }
    for (long long c = 0; c < nchunks; c++)
        for (int e = 0; e < 4; e++)
            CUDA_CHECK(cudaEventDestroy(ev[c][e]));
    CUDA_CHECK(cudaEventDestroy(base));
    for (int i = 0; i < k; i++) {
        CUDA_CHECK(cudaEventDestroy(done_out[i]));
        CUDA_CHECK(cudaStreamDestroy(st[i]));
        CUDA_CHECK(cudaFreeHost(h_in[i]));
        CUDA_CHECK(cudaFreeHost(h_out[i]));
        CUDA_CHECK(cudaFree(d_in[i]));
        CUDA_CHECK(cudaFree(d_out[i]));
    }
    free(g);
    pipe_free(&q);
    if (bad)
        fprintf(stderr, "bench: the timeline's pipeline: %s\n", msg);
    else
        printf("bench: wrote %s\n", path);
    return bad ? -1 : 0;
}

/* The bench: on a GPU every step's numbers; on the CPU backend the same rows in its host time
 * (they say nothing about a GPU: the file's device line says so) and its timeline. */
static int bench(const char *path)
{
    struct device_info info;
    struct results out;
    int gpu = gpu_times_are_real();
    if (gpu) {
        if (bench_begin(path, &out, &info) != 0)
            return EXIT_FAILURE;
    } else {
        char why[256];
        if (gpu_probe(&info, why, sizeof why) != 0) {
            fprintf(stderr, "bench: %s\n", why);
            return EXIT_FAILURE;
        }
        if (results_open(&out, path, info.name, "CPU backend, host times") != 0) {
            perror(path);
            return EXIT_FAILURE;
        }
    }
    /* 256 MiB on a GPU; 4 MiB on the CPU backend */
    size_t bytes = gpu ? BIG_BYTES : BIG_BYTES / 64;
    int reps = gpu ? SPEED_REPS : 3;
    printf("%-14s %-18s %13s %13s\n", "shape", "kernel", "ms", "GB/s");
    bench_memory(&out, bytes, reps);
    int rc = bench_pipeline(&out, bytes / sizeof(int), reps);
    if (rc == 0)
        bench_duplex(&out, bytes, reps);
    if (rc == 0)
        bench_graph(&out, reps, gpu ? 10000 : 100);
    if (results_close(&out) != 0 || rc != 0) {
        fprintf(stderr, "bench: %s\n", rc ? "a wrong result (above)" : "writing failed");
        return EXIT_FAILURE;
    }
    printf("bench: wrote %s\n", path);
    /* the timeline, beside the rows: 64 MiB in 4 MiB chunks over 3 streams (the CPU backend:
     * 1 MiB in 64 KiB chunks) */
    char gpath[4096];
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int)(slash - path + 1) : 0;
    snprintf(gpath, sizeof gpath, "%.*sgantt-%s.tsv", dir, path, CHAPTER);
    size_t gn = (gpu ? 64 * MIB : MIB) / sizeof(int);
    return gantt(gpath, &info, gn, gn / 16, 3) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* ==== registration =============================================================================== */

/* A step's concept test: read from the CPU backend's recorded schedule, so run there only */
static void add_concept(Suite *s, const TTest *fn, const char *title)
{
    static const char *titles[4]; /* grader_add keeps the pointer: one slot a step */
    static int n;
    if (n == 4)
        abort();
    if (!gpu_times_are_real()) {
        titles[n] = title;
        grader_add(s, "concept", fn, &titles[n++], 1, 60);
    } else {
        grader_skip(title, "read from the CPU backend's recorded schedule (make grade "
                           "BACKEND=emu); on a GPU the speed test shows the same thing in time");
    }
}

/* the tests that make calls fail on purpose stay out under a sanitizer, which would report each */
#define SANITIZE_SKIP "under a sanitizer (GRADE_SANITIZE=1): it makes calls fail on purpose, which " \
                      "the sanitizer would report"

static void add_tests(Suite *s)
{
    int emu = !gpu_times_are_real();
    if (grader_step(1, "pinned against pageable")) {
        static char t[NSTEP1][96];
        static const char *tt[NSTEP1];
        for (int i = 0; i < NSTEP1; i++) {
            size_t b = STEP1_SIZES[i] ? STEP1_SIZES[i] : big_bytes();
            snprintf(t[i], sizeof t[i], "correct: %zu bytes, three uploads%s", b,
                     !STEP1_SIZES[i] && emu ? " (in place of the GPU's 256 MiB)" : "");
            tt[i] = t[i];
        }
        grader_add(s, "correct", step1_correct, tt, NSTEP1, 120);
        static const char *te[] = { "errors: bad arguments, a buffer registered by someone else" };
        if (grade_sanitizing())
            grader_skip(te[0], SANITIZE_SKIP);
        else
            grader_add(s, "errors", step1_errors, te, 1, 60);
        add_concept(s, step1_concept, "concept: the copies pinned, on a stream of its own");
        grader_add_timed(s, "speed", step1_speed, "speed: 256 MiB up, yours against "
                         "upload_pageable", 120);
    }
    if (grader_step(2, "a chunked pipeline over K streams")) {
        static char t[NPIPE][112];
        static const char *tt[NPIPE];
        for (int i = 0; i < NPIPE; i++) {
            struct pipe_case c = pipe_case_here(i);
            snprintf(t[i], sizeof t[i], "correct: n %zu, chunks of %zu, K %d%s%s", c.n, c.chunk,
                     c.k, c.pinned ? ", the caller's buffers pinned" : "",
                     !PIPE_CASES[i].n && emu ? " (in place of the GPU's 2^26 + 12345)" : "");
            tt[i] = t[i];
        }
        grader_add(s, "correct", step2_correct, tt, NPIPE, 180);
        static const char *te[] = { "errors: bad arguments, an impossible allocation, refused "
                                    "launches" };
        if (grade_sanitizing())
            grader_skip(te[0], SANITIZE_SKIP);
        else
            grader_add(s, "errors", step2_errors, te, 1, 120);
        add_concept(s, step2_concept, "concept: K streams, pinned, each chunk launched while the "
                                      "one before is in flight");
        grader_add_timed(s, "speed", step2_speed, "speed: 256 MiB in 8 MiB chunks, K 4, against "
                         "its floor", 240);
    }
    if (grader_step(3, "both directions at once")) {
        static char t[NDUPLEX][96];
        static const char *tt[NDUPLEX];
        for (int i = 0; i < NDUPLEX; i++) {
            struct duplex_case c = duplex_here(i);
            snprintf(t[i], sizeof t[i], "correct: %zu bytes up, %zu down%s", c.up, c.down,
                     i == 0 && emu ? " (in place of the GPU's 256 MiB)" : "");
            tt[i] = t[i];
        }
        grader_add(s, "correct", step3_correct, tt, NDUPLEX, 120);
        add_concept(s, step3_concept, "concept: two streams of its own, nothing between them");
        grader_add_timed(s, "speed", step3_speed, "speed: 256 MiB each way, at once against one "
                         "after the other", 120);
    }
    if (grader_step(4, "a CUDA graph of a launch-bound loop")) {
        static char t[NGRAPH][112];
        static const char *tt[NGRAPH];
        for (int i = 0; i < NGRAPH; i++) {
            struct graph_case c = graph_case_here(i);
            snprintf(t[i], sizeof t[i], "correct: n %d, %d iterations%s", c.n, c.iterations,
                     c.n != GRAPH_CASES[i].n ? " (in place of the GPU's 40009, 1000)" : "");
            tt[i] = t[i];
        }
        grader_add(s, "correct", step4_correct, tt, NGRAPH, 120);
        add_concept(s, step4_concept, "concept: graph launches of one executable graph, nothing "
                                      "left");
        grader_add_timed(s, "speed", step4_speed, "speed: n 4096, 30000 kernels, graph against "
                         "plain launches", 120);
    }
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
