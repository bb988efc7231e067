/* 12-multi-gpu.c: the grader of chapter 12, and its bench. Four steps (collective.h):
 *
 *   step 1  links_open, links_close: peer access between every pair of devices that allows it
 *   step 2  ring_create, ring_allreduce, ring_destroy: a ring all-reduce by hand
 *   step 3  ring_copy_create, ring_copy_allreduce, ring_copy_destroy: the ring on the copy
 *           engines
 *   step 4  dp_backward: a data-parallel backward pass, each layer's all-reduce overlapping the
 *           GEMMs of the layers below it (the model, the GEMM and the all-reduce are given)
 *
 * Each step is graded on
 *   correctness  on the CPU backend, machines of 1 to 4 emulated devices (harness/emu/README.md,
 *                "Several devices"), some with every link, some with none, some with a few; on
 *                a GPU, the machine's own devices. Step 1: which device reaches which, as the
 *                machine says and as the accesses really are, before and after links_close.
 *                Steps 2 and 3: fresh random integer-valued inputs (never zeros) whose sums are exact
 *                in any order, every device's buffer compared bit for bit with the sum, three
 *                times, the second and third with the CPU backend's streams run in a shuffled
 *                order that keeps only the declared dependencies; guard zones round every
 *                buffer
 *   errors       bad arguments refused with cudaErrorInvalidValue, a missing link with
 *                cudaErrorPeerAccessNotEnabled, nothing left held; every call leaves the
 *                current device as it found it and no error for cudaGetLastError
 *   concept      on the CPU backend, from the schedule its stream scheduler records. Step 2:
 *                no copy, no kernel over RING_MAX_BLOCKS blocks, and on every device a kernel
 *                a step at least, each step after a wait on an event of the device before it
 *                in the ring. Step 3 (run with no peer access enabled, so that a kernel given
 *                another device's memory faults): peer copies only, on a stream apart from the
 *                adds', each add after its copy landed, each receive slot refilled after the
 *                add that read it
 *   speed        on a GPU with two devices or more: each ring against allreduce_host, both
 *                timed in the same run
 *
 * Every test is split into a runner and a judge (grade.h, "the judge and the runner"): the
 * runner makes every call of the code under grading and every CUDA call, and sends what only
 * its process can read (return codes, the accesses it found enabled, the buffers' bytes, the
 * CPU backend's counts and schedule, timings); the judge, which never runs that code and makes
 * no CUDA call, makes every check on inputs of its own from the same seed. What comes back is a
 * claim of the code under grading: bounded before it sizes anything, never a pointer.
 *
 *   grade --bench F  on a GPU: a peer copy one way and both ways at once, the same bytes
 *                through the host, and both rings against allreduce_host and NCCL's
 *                ncclAllReduce (where libnccl.so.2 can be opened) at sizes from 1 MiB to 1 GiB,
 *                on every device the machine has (rows of algorithm bandwidth); step 4's GEMMs
 *                alone, all-reduces alone and the whole step (bench_dp); on the
 *                CPU backend, the same rows on 2 and 4 emulated devices in host time, which says
 *                nothing about a GPU.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collective.h"
#include "cuda_check.h"
#include "grade.h"
#include "split.h"
#ifdef HARNESS_EMU
#include <emu_devices.h>
#include <emu_memory.h>
#include <emu_streams.h>
#else
#include <dlfcn.h>
#include <nccl.h>
#endif

#define CHAPTER "12-multi-gpu"
#define MIB ((size_t)1 << 20)
#define RING_NEEDS 3.0   /* the ring over allreduce_host at 256 MiB a device, at least */
#define SPEED_FLOATS ((size_t)64 << 20) /* 256 MiB a device */
#define SPEED_REPS 5
#define INPUT_RANGE (1 << 20) /* inputs in [-2^20, 2^20]: a sum of 8 stays under 2^24, exact */

/* ==== the machine ================================================================================
 *
 * On the CPU backend a test makes the machine it grades on: n emulated devices and the pairs that
 * can reach each other (emu_set_devices), in its runner, before any other CUDA call. On a GPU the
 * machine is the one there is: every device the process sees, up to MGPU_MAX. */
struct machine {
    int n;
    const char *peers; /* NULL: every pair; "": none; "0-1,2-3": those pairs, both ways */
    const char *what;
};

/* the devices a GPU machine has, as grader_init probed them (0 where none answered) */
static int gpu_devices(void)
{
    int n = grader_device()->devices;
    return n > MGPU_MAX ? MGPU_MAX : n;
}

static struct machine this_gpu(void)
{
    return (struct machine){ gpu_devices(), NULL, "this machine's devices" };
}

/* where the code runs: the machine made (CPU backend) or checked (GPU) */
static void machine_up(const struct machine *m)
{
    if (!runs())
        return;
#ifdef HARNESS_EMU
    if (emu_set_devices(m->n, m->peers) != 0) {
        fprintf(stderr, "grader: emu_set_devices(%d, \"%s\") refused\n", m->n,
                m->peers ? m->peers : "(every pair)");
        exit(EXIT_FAILURE);
    }
#endif
    int count = 0;
    CUDA_CHECK(cudaGetDeviceCount(&count));
    if (count < m->n) {
        fprintf(stderr, "grader: %d devices wanted, %d here\n", m->n, count);
        exit(EXIT_FAILURE);
    }
}

/* A matrix of 0/1 flags, one row a device, as the runner found it and sent it */
struct flags {
    int f[MGPU_MAX][MGPU_MAX];
};

static void flags_seen(struct flags *x)
{
    grade_exchange_bytes(x, sizeof *x);
    for (int i = 0; i < MGPU_MAX; i++) /* claims: anything else than 0 reads as 1 */
        for (int j = 0; j < MGPU_MAX; j++)
            x->f[i][j] = x->f[i][j] != 0;
}

/* what cudaDeviceCanAccessPeer says of every pair, in the runner */
static struct flags can_access(int n)
{
    struct flags c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < n && runs(); i++)
        for (int j = 0; j < n; j++)
            if (i != j)
                CUDA_CHECK(cudaDeviceCanAccessPeer(&c.f[i][j], i, j));
    flags_seen(&c);
    return c;
}

/* Which accesses are enabled now: cudaDeviceEnablePeerAccess says so (already enabled), or, where
 * it enables one, it is disabled again at once. The current device is put back. */
static struct flags enabled_now(int n, const struct flags *can)
{
    struct flags on;
    memset(&on, 0, sizeof on);
    if (runs()) {
        int was = 0;
        CUDA_CHECK(cudaGetDevice(&was));
        for (int i = 0; i < n; i++) {
            CUDA_CHECK(cudaSetDevice(i));
            for (int j = 0; j < n; j++) {
                if (i == j || !can->f[i][j])
                    continue;
                cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
                if (e == cudaSuccess) {
                    CUDA_CHECK(cudaDeviceDisablePeerAccess(j));
                } else if (e == cudaErrorPeerAccessAlreadyEnabled) {
                    (void)cudaGetLastError();
                    on.f[i][j] = 1;
                } else {
                    CUDA_CHECK(e);
                }
            }
        }
        CUDA_CHECK(cudaSetDevice(was));
    }
    flags_seen(&on);
    return on;
}

/* the current device and the error left for cudaGetLastError, where the code ran */
struct after {
    int device;
    cudaError_t left;
};

static struct after after_seen(void)
{
    struct after a = { -1, cudaSuccess };
    if (runs()) {
        CUDA_CHECK(cudaGetDevice(&a.device));
        a.left = cudaGetLastError();
    }
    grade_exchange_bytes(&a, sizeof a);
    return a;
}

/* fails the test where `call` moved the current device from `want` or left an error behind */
static void check_after(int slot, const char *call, int want)
{
    struct after a = after_seen();
    if (!judges())
        return;
    if (a.device != want) {
        grade_hint(slot, "the current device belongs to the caller's thread: note it on entry "
                         "(cudaGetDevice) and set it back before every return");
        ck_abort_msg("the current device was %d before %s and %d after it", want, call,
                     a.device);
    }
    if (a.left != cudaSuccess) {
        grade_hint(slot, "a call that fails without a sticky error (cudaDeviceEnablePeerAccess "
                         "on an access already enabled, say) leaves its error for the next "
                         "cudaGetLastError: read it where you handle it");
        ck_abort_msg("%s left %s for cudaGetLastError", call, err_name(a.left));
    }
}

/* ==== what is held: the CPU backend's counts (graders/split.h) ================================ */

/* census_check with this chapter's hint */
static void check_census(int slot, struct census before, const char *what)
{
    census_check(slot, before, what,
                 "every path out must give back what was taken before it, on the device it was "
                 "made on: keep each handle NULL until it is made, and on a failure destroy "
                 "whatever is not NULL, each with its device current");
}

/* ==== step 1: the links ========================================================================== */

static const struct machine LINK_MACHINES[] = {
    { 1, NULL, "1 device" },
    { 2, NULL, "2 devices, linked" },
    { 3, "", "3 devices, no link between them" },
    { 4, "0-1,2-3", "4 devices, links 0-1 and 2-3 only" },
    { 4, NULL, "4 devices, every pair linked" },
};
#define NLINK ((int)(sizeof LINK_MACHINES / sizeof LINK_MACHINES[0]))

static struct machine link_machine(int i)
{
    return gpu_times_are_real() ? this_gpu() : LINK_MACHINES[i];
}

/* l as the runner holds it, as both see it: claims, each flag 0 or 1, ndev as sent */
static void links_seen(struct links *l)
{
    grade_exchange_bytes(l, sizeof *l);
    for (int i = 0; i < MGPU_MAX; i++)
        for (int j = 0; j < MGPU_MAX; j++) {
            l->peer[i][j] = l->peer[i][j] != 0 ? (l->peer[i][j] == 1 ? 1 : 2) : 0;
            l->opened[i][j] = l->opened[i][j] != 0 ? (l->opened[i][j] == 1 ? 1 : 2) : 0;
        }
}

static const char *reach(int v)
{
    return v ? "reaches" : "does not reach";
}

START_TEST(step1_correct)
{
    int slot = grade_slot();
    struct machine m = link_machine(_i);
    grade_split(); /* links_open and links_close in a runner, the checks here */
    machine_up(&m);
    const int n = m.n;
    struct flags can = can_access(n);
    /* the caller's own access, enabled before links_open: device 1 to device 0, where it can */
    struct flags pre;
    memset(&pre, 0, sizeof pre);
    if (n >= 2 && can.f[1][0]) {
        pre.f[1][0] = 1;
        if (runs()) {
            CUDA_CHECK(cudaSetDevice(1));
            CUDA_CHECK(cudaDeviceEnablePeerAccess(0, 0));
        }
    }
    const int current = 0; /* the caller's: not the last device links_open works on */
    if (runs())
        CUDA_CHECK(cudaSetDevice(current));
    struct links l;
    memset(&l, 0x5a, sizeof l); /* poisoned: links_open must write all of it */
    cudaError_t e = SEEN(links_open(&l, n));
    JUDGE(e == cudaSuccess, "links_open(l, %d) returned %s", n, err_name(e));
    check_after(slot, "links_open", current);
    links_seen(&l);
    JUDGE(l.ndev == n, "links_open left l->ndev %d, want %d", l.ndev, n);
    struct flags on = enabled_now(n, &can);
    for (int i = 0; i < n && judges(); i++)
        for (int j = 0; j < n; j++) {
            int want = i != j && can.f[i][j];
            if (on.f[i][j] != want) {
                grade_hint(slot, "peer access is enabled by the device that will do the "
                                 "reaching: make device i current (cudaSetDevice(i)), then "
                                 "cudaDeviceEnablePeerAccess(j, 0), for every j that "
                                 "cudaDeviceCanAccessPeer allows");
                ck_abort_msg("after links_open, access from device %d to device %d's memory is "
                             "%s; the machine %s it", i, j,
                             on.f[i][j] ? "enabled" : "not enabled",
                             want ? "allows" : "does not allow");
            }
            if (l.peer[i][j] != want)
                ck_abort_msg("l->peer[%d][%d] is %d, but device %d %s device %d's memory", i, j, l.peer[i][j], i, reach(want), j);
            int opened = want && !pre.f[i][j];
            if (l.opened[i][j] != opened) {
                if (pre.f[i][j])
                    grade_hint(slot, "cudaErrorPeerAccessAlreadyEnabled means someone enabled "
                                     "it before you: it is open, but not yours to close");
                ck_abort_msg("l->opened[%d][%d] is %d, want %d (%s)", i, j,
                             l.opened[i][j], opened,
                             pre.f[i][j] ? "the caller enabled it before links_open"
                                         : opened ? "links_open enabled it" : "no such link");
            }
        }
    if (runs())
        CUDA_CHECK(cudaSetDevice(current));
    e = SEEN(links_close(&l));
    JUDGE(e == cudaSuccess, "links_close returned %s", err_name(e));
    check_after(slot, "links_close", current);
    links_seen(&l);
    JUDGE(l.ndev == 0, "links_close left l->ndev %d, want 0", l.ndev);
    on = enabled_now(n, &can);
    for (int i = 0; i < n && judges(); i++)
        for (int j = 0; j < n; j++) {
            if (on.f[i][j] == pre.f[i][j])
                continue;
            if (pre.f[i][j]) {
                grade_hint(slot, "close only what l->opened says you opened");
                ck_abort_msg("links_close disabled the caller's own access from device %d to "
                             "device %d, which links_open did not enable", i, j);
            }
            ck_abort_msg("after links_close, access from device %d to device %d is still "
                         "enabled", i, j);
        }
    int links = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            links += i != j && can.f[i][j];
    grade_note(slot, "%d one-way links of %d, opened and closed, the caller's own kept", links,
               n * (n - 1));
    grade_summary("every link the machine allows, opened and closed");
    grade_split_end();
}
END_TEST

START_TEST(step1_errors)
{
    int slot = grade_slot();
    struct machine m = gpu_times_are_real() ? this_gpu() : (struct machine){ 2, NULL, "2 devices" };
    grade_split();
    machine_up(&m);
    struct flags can = can_access(m.n);
    const int current = m.n - 1;
    if (runs())
        CUDA_CHECK(cudaSetDevice(current));
    struct links l;
    struct { int ndev; const char *why; } bad[] = {
        { 0, "0 devices" }, { m.n + 1, "one more device than the machine has" },
        { MGPU_MAX + 1, "MGPU_MAX + 1 devices" }, { -1, "-1 devices" },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cudaError_t e = SEEN(links_open(&l, bad[k].ndev));
        JUDGE(e == cudaErrorInvalidValue, "links_open(l, %d) (%s) returned %s, want "
              "cudaErrorInvalidValue", bad[k].ndev, bad[k].why, err_name(e));
        check_after(slot, "links_open refusing bad arguments", current);
    }
    cudaError_t e = SEEN(links_open(NULL, m.n));
    JUDGE(e == cudaErrorInvalidValue, "links_open(NULL, %d) returned %s, want "
          "cudaErrorInvalidValue", m.n, err_name(e));
    e = SEEN(links_close(NULL));
    JUDGE(e == cudaErrorInvalidValue, "links_close(NULL) returned %s, want "
          "cudaErrorInvalidValue", err_name(e));
    check_after(slot, "links_close(NULL)", current);
    struct flags on = enabled_now(m.n, &can);
    for (int i = 0; i < m.n && judges(); i++)
        for (int j = 0; j < m.n; j++)
            JUDGE(!on.f[i][j], "a refused links_open left access from device %d to device %d "
                  "enabled", i, j);
    grade_note(slot, "refused, nothing enabled");
    grade_split_end();
}
END_TEST

/* ==== step 2: the ring ============================================================================ */

struct ring_case {
    int n;            /* devices; 0: the GPU's own */
    size_t count, chunk;
};
static const struct ring_case RING_CASES[] = {
    { 1, 1000, 64 },
    { 2, 1, 1 },          /* one float, two devices: a segment is empty */
    { 2, 4097, 1000 },
    { 3, 10007, 333 },
    { 4, 3, 1 },          /* fewer floats than devices */
    { 4, 100003, 4096 },
    { 3, 65536, 1 << 20 }, /* one chunk a segment */
};
#define NRING ((int)(sizeof RING_CASES / sizeof RING_CASES[0]))
static const struct ring_case GPU_RING_CASES[] = {
    { 0, (size_t)16 << 20, (size_t)1 << 20 },
    { 0, 1000003, 65536 },
    { 0, 4097, 1000 },
    { 0, 3, 1 },
};
#define NGPURING ((int)(sizeof GPU_RING_CASES / sizeof GPU_RING_CASES[0]))

static struct ring_case ring_case_here(int i)
{
    if (!gpu_times_are_real())
        return RING_CASES[i];
    struct ring_case c = GPU_RING_CASES[i];
    c.n = gpu_devices();
    return c;
}

/* The problem: n buffers of count floats, one a device, guarded (dbuf_alloc), where the code
 * runs; the inputs and the sum on the host, in both; got, what came back from one device. */
struct ring_problem {
    int n;
    size_t count;
    float *d[MGPU_MAX];
    float *in[MGPU_MAX];
    float *want, *got;
    unsigned char *zones_was, *zones_now; /* every buffer's two guard zones */
};

static void ring_problem_init(struct ring_problem *q, int n, size_t count)
{
    memset(q, 0, sizeof *q);
    q->n = n;
    q->count = count;
    for (int d = 0; d < n; d++) {
        q->in[d] = xmalloc(count * sizeof(float));
        if (runs()) {
            CUDA_CHECK(cudaSetDevice(d));
            char name[16];
            snprintf(name, sizeof name, "buf[%d]", d);
            q->d[d] = dbuf_alloc(count * sizeof(float), name);
        }
    }
    if (runs())
        CUDA_CHECK(cudaSetDevice(0));
    q->want = xmalloc(count * sizeof(float));
    q->got = xmalloc(count * sizeof(float));
    q->zones_was = xmalloc((size_t)n * 2 * DBUF_GUARD);
    q->zones_now = xmalloc((size_t)n * 2 * DBUF_GUARD);
}

static void ring_problem_free(struct ring_problem *q)
{
    for (int d = 0; d < q->n; d++) {
        free(q->in[d]);
        if (runs())
            dbuf_free(q->d[d]);
    }
    free(q->want);
    free(q->got);
    free(q->zones_was);
    free(q->zones_now);
}

/* the two guard zones of a guarded buffer (dbuf_alloc) of `bytes`, into z, where the code runs */
static void guard_read(const void *buf, size_t bytes, unsigned char *z)
{
    to_host(z, (const unsigned char *)buf - DBUF_GUARD, DBUF_GUARD);
    to_host(z + DBUF_GUARD, (const unsigned char *)buf + bytes, DBUF_GUARD);
}

/* a buffer's zones as read before and after (guard_read), in the judge: fails naming the side
 * and the byte written */
static void guard_check(const char *what, const unsigned char *was, const unsigned char *now,
                        const char *name, size_t count)
{
    for (int b = DBUF_GUARD - 1; b >= 0; b--)
        ck_assert_msg(now[b] == was[b], "%s: a write before the start of %s: byte %d before "
                      "element 0 was overwritten", what, name, DBUF_GUARD - b);
    for (int b = 0; b < DBUF_GUARD; b++)
        ck_assert_msg(now[DBUF_GUARD + b] == was[DBUF_GUARD + b], "%s: a write past the end of "
                      "%s (%zu floats): byte %d past its end was overwritten", what, name, count,
                      b);
}

/* every buffer's guard zones, read where the code runs, sent */
static void zones_seen(const struct ring_problem *q, unsigned char *zones)
{
    for (int d = 0; d < q->n && runs(); d++)
        guard_read(q->d[d], q->count * sizeof(float), zones + (size_t)d * 2 * DBUF_GUARD);
    exchange_pieces(zones, (size_t)q->n * 2 * DBUF_GUARD);
}

/* fresh integer-valued inputs (never all zero), the sum, the buffers filled where the code runs */
static void ring_fill(struct ring_problem *q, struct rng *r)
{
    for (size_t i = 0; i < q->count; i++)
        q->want[i] = 0.0f;
    for (int d = 0; d < q->n; d++) {
        for (size_t i = 0; i < q->count; i++) {
            float v = (float)((long long)(rng_next(r) % (2 * INPUT_RANGE + 1)) - INPUT_RANGE);
            q->in[d][i] = v != 0.0f ? v : (float)(d + 1);
            q->want[i] += q->in[d][i];
        }
        if (runs())
            to_device(q->d[d], q->in[d], q->count * sizeof(float));
    }
}

/* every device's buffer against the sum, bit for bit, and the guard zones */
static void ring_check(int slot, struct ring_problem *q, const char *what)
{
    for (int d = 0; d < q->n; d++) {
        if (runs())
            to_host(q->got, q->d[d], q->count * sizeof(float));
        exchange_pieces(q->got, q->count * sizeof(float));
        if (!judges())
            continue;
        for (size_t i = 0; i < q->count; i++) {
            if (memcmp(&q->got[i], &q->want[i], sizeof(float)) == 0)
                continue;
            int same_as_input = memcmp(&q->got[i], &q->in[d][i], sizeof(float)) == 0;
            grade_hint(slot, "%s", same_as_input
                       ? "an element kept its own input: a segment or a chunk was never "
                         "reached. Device d adds segment d - 1 - s at reduce-scatter step s "
                         "and copies segment d - t at all-gather step t, and the last chunk "
                         "of a segment may be short"
                       : "a partial sum, or a sum counted twice: check which segment each "
                         "device reads at each step (reduce-scatter: d - 1 - s; all-gather: "
                         "d - t, mod ndev), that device d waits for its neighbour's event "
                         "of the step before, recorded after the work that wrote the chunk, "
                         "and (step 3) that an add waits for its copy and a copy into a slot "
                         "for the add that read it last");
            ck_abort_msg("%s: %d devices, count %zu: device %d's element %zu is %.9g, want "
                         "%.9g (the sum of the %d inputs)%s", what, q->n, q->count, d, i,
                         (double)q->got[i], (double)q->want[i], q->n,
                         same_as_input ? ", its own input" : "");
        }
    }
    zones_seen(q, q->zones_now);
    if (!judges())
        return;
    for (int d = 0; d < q->n; d++) {
        char name[32];
        snprintf(name, sizeof name, "device %d's buffer", d);
        guard_check(what, q->zones_was + (size_t)d * 2 * DBUF_GUARD,
                    q->zones_now + (size_t)d * 2 * DBUF_GUARD, name, q->count);
    }
}

/* The links a ring needs, opened by the grader itself (not by step 1's code): every device to
 * the one before it in the ring. On a machine whose devices cannot, the test fails saying so. */
/* device i's access to device j's memory, enabled by the grader where the code runs (already
 * enabled is fine); device i is left current */
static void grader_enable(int i, int j)
{
    CUDA_CHECK(cudaSetDevice(i));
    cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled)
        (void)cudaGetLastError();
    else
        CUDA_CHECK(e);
}

static struct links grader_links(int n)
{
    struct links l;
    memset(&l, 0, sizeof l);
    l.ndev = n;
    for (int d = 0; d < n && n > 1; d++) {
        int left = (d + n - 1) % n;
        l.peer[d][left] = 1;
        if (!runs())
            continue;
        int can = 0;
        CUDA_CHECK(cudaDeviceCanAccessPeer(&can, d, left));
        if (!can) {
            fprintf(stderr, "grader: device %d cannot reach device %d's memory on this machine: "
                            "a ring over peer access cannot run here\n", d, left);
            exit(EXIT_FAILURE);
        }
        grader_enable(d, left);
    }
    if (runs())
        CUDA_CHECK(cudaSetDevice(0));
    return l;
}

/* Step 2's ring or step 3's, behind one face: the step's own calls make, run and destroy it.
 * Step 2's reads its neighbours through the links (the grader's, opened beforehand); step 3's
 * copies, and needs none. */
struct any_ring {
    int step;
    struct ring r2;
    struct ring_copy r3;
};

static const char *call_name(int step, const char *what)
{
    static const char *const NAMES[2][3] = {
        { "ring_create", "ring_allreduce", "ring_destroy" },
        { "ring_copy_create", "ring_copy_allreduce", "ring_copy_destroy" },
    };
    int i = !strcmp(what, "create") ? 0 : !strcmp(what, "allreduce") ? 1 : 2;
    return NAMES[step == 3][i];
}

static cudaError_t any_create(struct any_ring *a, int step, const struct links *l, int n,
                              size_t count, size_t chunk)
{
    memset(a, 0, sizeof *a);
    a->step = step;
    return step == 2 ? ring_create(&a->r2, l, count, chunk)
                     : ring_copy_create(&a->r3, n, count, chunk);
}

static cudaError_t any_allreduce(struct any_ring *a, float *const buf[])
{
    return a->step == 2 ? ring_allreduce(&a->r2, buf) : ring_copy_allreduce(&a->r3, buf);
}

static cudaError_t any_destroy(struct any_ring *a)
{
    return a->step == 2 ? ring_destroy(&a->r2) : ring_copy_destroy(&a->r3);
}

/* the machine of a ring test: step 2's links opened by the grader; step 3's correctness on three
 * devices with no peer link at all (its copies must work there), elsewhere on links that nobody
 * opens, and its speed on open links (a peer copy without them is staged through the host) */
static struct links ring_machine(int step, int n, int timed)
{
    struct machine m = { n, step == 3 && n == 3 && !timed && !gpu_times_are_real() ? "" : NULL,
                         "" };
    machine_up(&m);
    struct links l;
    memset(&l, 0, sizeof l);
    return step == 2 || timed ? grader_links(n) : l;
}

static const int STEP2 = 2, STEP3 = 3; /* the tests' contexts: their step */

START_TEST(ring_correct)
{
    int slot = grade_slot();
    const int step = *(const int *)grade_ctx();
    struct ring_case c = ring_case_here(_i);
    if (grade_quick_skip(slot, (double)c.count * c.n, "floats"))
        return;
    grade_split(); /* the ring in a runner, the checks here */
    struct links l = ring_machine(step, c.n, 0);
    struct rng r = grade_rng(slot);
    struct ring_problem q;
    ring_problem_init(&q, c.n, c.count);
    zones_seen(&q, q.zones_was);
    struct census before = census_seen();
    const int current = c.n > 1 ? 1 : 0;
    if (runs())
        CUDA_CHECK(cudaSetDevice(current));
    struct any_ring ring;
    cudaError_t e = SEEN(any_create(&ring, step, &l, c.n, c.count, c.chunk));
    JUDGE(e == cudaSuccess, "%d devices, count %zu, chunk %zu: %s returned %s", c.n, c.count,
          c.chunk, call_name(step, "create"), err_name(e));
    check_after(slot, call_name(step, "create"), current);
    const char *const RUNS[] = { call_name(step, "allreduce"), "second run, shuffled streams",
                                 "third run, shuffled streams" };
    for (int round = 0; round < 3; round++) {
        if (round > 0) {
            shuffle(&r);
            grade_second_run(slot, 1);
        }
        ring_fill(&q, &r);
        if (runs())
            CUDA_CHECK(cudaSetDevice(current));
        e = SEEN(any_allreduce(&ring, q.d));
        JUDGE(e == cudaSuccess, "%s: %d devices, count %zu, chunk %zu: %s returned %s",
              RUNS[round], c.n, c.count, c.chunk, call_name(step, "allreduce"), err_name(e));
        check_after(slot, call_name(step, "allreduce"), current);
        ring_check(slot, &q, RUNS[round]);
    }
    e = SEEN(any_destroy(&ring));
    JUDGE(e == cudaSuccess, "%s returned %s", call_name(step, "destroy"), err_name(e));
    check_after(slot, call_name(step, "destroy"), current);
    check_census(slot, before, "a ring made, run three times and destroyed");
    ring_problem_free(&q);
    grade_note(slot, "every buffer the exact sum, three times");
    grade_split_end();
}
END_TEST

/* The all-reduce of a ring just made, refusing a NULL ring, NULL buffers and buffers that are
 * NULL, each with cudaErrorInvalidValue and nothing else changed; then the ring destroyed */
static void allreduce_refusals(int slot, struct any_ring *a, int current)
{
    const int step = a->step;
    const char *name = call_name(step, "allreduce");
    cudaError_t e = SEEN(any_allreduce(a, NULL));
    JUDGE(e == cudaErrorInvalidValue, "%s(r, NULL) returned %s, want cudaErrorInvalidValue",
          name, err_name(e));
    e = SEEN(step == 2 ? ring_allreduce(NULL, NULL) : ring_copy_allreduce(NULL, NULL));
    JUDGE(e == cudaErrorInvalidValue, "%s(NULL, NULL) returned %s, want cudaErrorInvalidValue",
          name, err_name(e));
    float *none[MGPU_MAX] = { NULL };
    e = SEEN(any_allreduce(a, none));
    JUDGE(e == cudaErrorInvalidValue, "%s with NULL buffers returned %s, want "
          "cudaErrorInvalidValue", name, err_name(e));
    char call[64];
    snprintf(call, sizeof call, "%s refusing bad arguments", name);
    check_after(slot, call, current);
    e = SEEN(any_destroy(a));
    JUDGE(e == cudaSuccess, "%s returned %s", call_name(step, "destroy"), err_name(e));
}

START_TEST(step2_errors)
{
    int slot = grade_slot();
    int n = gpu_times_are_real() ? gpu_devices() : 2;
    grade_split();
    struct machine m = { n, NULL, "" };
    machine_up(&m);
    struct links l = grader_links(n);
    struct census before = census_seen();
    const int current = n - 1;
    if (runs())
        CUDA_CHECK(cudaSetDevice(current));
    struct ring ring;
    struct { const struct links *l; size_t count, chunk; const char *why; } bad[] = {
        { &l, 0, 1, "count 0" },
        { &l, 1000, 0, "chunk 0" },
        { NULL, 1000, 10, "no links" },
        { &l, (size_t)1 << 20, 1, "chunks of 1 float in segments of 2^20 / ndev" },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        if (k == 3 && n == 1)
            continue; /* one device: no segment, no chunk */
        memset(&ring, 0, sizeof ring);
        cudaError_t e = SEEN(ring_create(&ring, bad[k].l, bad[k].count, bad[k].chunk));
        JUDGE(e == cudaErrorInvalidValue, "ring_create with %s returned %s, want "
              "cudaErrorInvalidValue", bad[k].why, err_name(e));
        check_after(slot, "ring_create refusing bad arguments", current);
    }
    cudaError_t e = SEEN(ring_create(NULL, &l, 1000, 10));
    JUDGE(e == cudaErrorInvalidValue, "ring_create(NULL, ...) returned %s, want "
          "cudaErrorInvalidValue", err_name(e));
    if (n >= 2) {
        struct links missing = l;
        missing.peer[1][0] = 0;
        memset(&ring, 0, sizeof ring);
        e = SEEN(ring_create(&ring, &missing, 1000, 10));
        JUDGE(e == cudaErrorPeerAccessNotEnabled, "ring_create with device 1 unable to reach "
              "device 0 returned %s, want cudaErrorPeerAccessNotEnabled", err_name(e));
        check_after(slot, "ring_create refusing a missing link", current);
    }
    check_census(slot, before, "ring_create refusing bad arguments");
    struct any_ring made;
    e = SEEN(any_create(&made, 2, &l, n, 1000, 10));
    JUDGE(e == cudaSuccess, "ring_create(%d devices, 1000, 10) returned %s", n, err_name(e));
    allreduce_refusals(slot, &made, current);
    check_census(slot, before, "a ring made and destroyed");
    grade_note(slot, "refused, nothing held");
    grade_split_end();
}
END_TEST

START_TEST(step3_errors)
{
    int slot = grade_slot();
    int n = gpu_times_are_real() ? gpu_devices() : 2;
    grade_split();
    struct machine m = { n, NULL, "" };
    machine_up(&m);
    struct census before = census_seen();
    const int current = n - 1;
    if (runs())
        CUDA_CHECK(cudaSetDevice(current));
    struct ring_copy ring;
    struct { int ndev; size_t count, chunk; const char *why; } bad[] = {
        { n, 0, 1, "count 0" },
        { n, 1000, 0, "chunk 0" },
        { 0, 1000, 10, "0 devices" },
        { n + 1, 1000, 10, "one device more than the machine has" },
        { MGPU_MAX + 1, 1000, 10, "MGPU_MAX + 1 devices" },
        { n, (size_t)1 << 20, 1, "chunks of 1 float in segments of 2^20 / ndev" },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memset(&ring, 0, sizeof ring);
        cudaError_t e = SEEN(ring_copy_create(&ring, bad[k].ndev, bad[k].count, bad[k].chunk));
        JUDGE(e == cudaErrorInvalidValue, "ring_copy_create with %s returned %s, want "
              "cudaErrorInvalidValue", bad[k].why, err_name(e));
        check_after(slot, "ring_copy_create refusing bad arguments", current);
    }
    cudaError_t e = SEEN(ring_copy_create(NULL, n, 1000, 10));
    JUDGE(e == cudaErrorInvalidValue, "ring_copy_create(NULL, ...) returned %s, want "
          "cudaErrorInvalidValue", err_name(e));
    check_census(slot, before, "ring_copy_create refusing bad arguments");
    struct any_ring made;
    e = SEEN(any_create(&made, 3, NULL, n, 1000, 10));
    JUDGE(e == cudaSuccess, "ring_copy_create(%d devices, 1000, 10) returned %s", n, err_name(e));
    allreduce_refusals(slot, &made, current);
    check_census(slot, before, "a ring made and destroyed");
    grade_note(slot, "refused, nothing held");
    grade_split_end();
}
END_TEST

#ifdef HARNESS_EMU
/* the most operations the concept test reads: its ring makes a few hundred */
#define SEEN_OPS_MAX 8192

/* the schedule since the last emu_schedule_reset where the code ran, as the judge sees it */
static struct emu_op *sched_seen(size_t *n)
{
    unsigned long long head[2] = { 0, 0 };
    if (runs()) {
        head[0] = emu_schedule_count();
        head[1] = emu_schedule_dropped();
    }
    grade_exchange_bytes(head, sizeof head);
    if (judges() && (head[1] != 0 || head[0] > SEEN_OPS_MAX))
        ck_abort_msg("the schedule record overflowed: %llu operations kept and %llu dropped, where "
                     "this test reads at most %d", head[0], head[1], SEEN_OPS_MAX);
    *n = head[0] < SEEN_OPS_MAX ? (size_t)head[0] : SEEN_OPS_MAX;
    struct emu_op *op = xmalloc((*n ? *n : 1) * sizeof *op);
    memset(op, 0, (*n ? *n : 1) * sizeof *op);
    for (size_t i = 0; i < *n && runs(); i++)
        emu_schedule_get(i, &op[i]);
    exchange_pieces(op, *n * sizeof *op);
    for (size_t i = 0; i < *n; i++)
        op[i].name[sizeof op[i].name - 1] = '\0';
    return op;
}

/* the ring's schedule, judged: no copy at all, no kernel of more than RING_MAX_BLOCKS blocks,
 * and on every device a kernel a step at least, each step but the first after a wait on an event
 * recorded on the device before it */
static void judge_ring_schedule(int slot, const struct emu_op *op, size_t nop, int n)
{
    int kernels[MGPU_MAX] = { 0 }, waits[MGPU_MAX] = { 0 };
    for (size_t i = 0; i < nop; i++) {
        const struct emu_op *o = &op[i];
        if (o->kind == EMU_OP_MEMCPY) {
            grade_hint(slot, "%s", o->src_device >= 0 && o->dst_device >= 0
                       ? "a copy between devices moves the bytes, but the ring's step is a "
                         "kernel of the receiving device that reads its neighbour's memory "
                         "directly and adds as it goes"
                       : "nothing goes through the host: each device's kernel reads its "
                         "neighbour's buffer over the link, directly");
            ck_abort_msg("the ring made a copy (%s, %zu bytes, on device %d): every step is a "
                         "kernel reading the neighbour's memory", o->name, o->bytes, o->device);
        }
        if (o->kind == EMU_OP_KERNEL && o->blocks > RING_MAX_BLOCKS) {
            grade_hint(slot, "the link, not the SMs, bounds the ring: a few dozen blocks with a "
                             "few 16-byte loads each in flight fill it, and the rest of the GPU "
                             "stays free for the work the all-reduce runs beside. Cap the grid "
                             "and let each thread stride through the chunk");
            ck_abort_msg("a ring kernel (%s, on device %d) launched %llu blocks of %u threads: "
                         "at most RING_MAX_BLOCKS = %d", o->name, o->device, o->blocks,
                         o->threads, RING_MAX_BLOCKS);
        }
        if (o->device < 0 || o->device >= n)
            continue;
        if (o->kind == EMU_OP_KERNEL)
            kernels[o->device]++;
        if (o->kind == EMU_OP_EVENT_WAIT && o->after >= 0)
            for (size_t j = 0; j < nop; j++)
                if (op[j].kind == EMU_OP_EVENT_RECORD && (long long)op[j].issue == o->after &&
                    op[j].device == (o->device + n - 1) % n)
                    waits[o->device]++;
    }
    for (int d = 0; d < n; d++) {
        if (kernels[d] < 2 * (n - 1)) {
            grade_hint(slot, "every device runs a kernel at each of the 2 (ndev - 1) steps: "
                             "reduce-scatter then all-gather");
            ck_abort_msg("device %d ran %d kernels: a ring of %d devices takes 2 (n - 1) = %d "
                         "steps, a kernel each at least", d, kernels[d], n, 2 * (n - 1));
        }
        if (waits[d] < 2 * (n - 1) - 1) {
            grade_hint(slot, "before device d reads a chunk at step s, its neighbour must have "
                             "written that chunk at step s - 1: record an event on the "
                             "neighbour's stream after that kernel and cudaStreamWaitEvent on "
                             "device d's stream");
            ck_abort_msg("device %d waited %d times for an event of device %d: a ring of %d "
                         "devices takes a wait before each step after the first, %d at least",
                         d, waits[d], (d + n - 1) % n, n, 2 * (n - 1) - 1);
        }
    }
    grade_note(slot, "no copy; kernels and waits on the neighbour on every device (%d and %d on "
                     "device 0)", kernels[0], waits[0]);
    grade_summary("the ring reads its neighbours directly, each step after its neighbour's");
}
#endif

#ifdef HARNESS_EMU
/* the record op[j] whose issue number is `issue`, or NULL */
static const struct emu_op *record_of(const struct emu_op *op, size_t nop, long long issue)
{
    for (size_t j = 0; j < nop; j++)
        if (op[j].kind == EMU_OP_EVENT_RECORD && (long long)op[j].issue == issue)
            return &op[j];
    return NULL;
}

/* step 3's schedule, judged: every byte between devices a P2P copy, none through the host; on
 * each device the copies on one stream and the adds on another, each add after a wait on a
 * record of the copy stream (the chunk landed), a copy into a slot used before after a wait on a
 * record of the add stream (the add read it), the copies after the neighbour's records; no
 * kernel over RING_MAX_BLOCKS blocks */
static void judge_copy_schedule(int slot, const struct emu_op *op, size_t nop, int n)
{
    int copies[MGPU_MAX] = { 0 }, adds[MGPU_MAX] = { 0 }, landed[MGPU_MAX] = { 0 };
    int drained[MGPU_MAX] = { 0 }, from_left[MGPU_MAX] = { 0 };
    int copy_stream[MGPU_MAX], add_stream[MGPU_MAX];
    for (int d = 0; d < n; d++)
        copy_stream[d] = add_stream[d] = -1;
    for (size_t i = 0; i < nop; i++) {
        const struct emu_op *o = &op[i];
        if (o->kind == EMU_OP_MEMCPY && (o->src_device < 0 || o->dst_device < 0)) {
            grade_hint(slot, "cudaMemcpyPeerAsync moves a chunk from one device's memory to "
                             "another's: nothing needs to come to the host");
            ck_abort_msg("a copy through the host (%s, %zu bytes, on device %d)", o->name,
                         o->bytes, o->device);
        }
        if (o->kind == EMU_OP_KERNEL && o->blocks > RING_MAX_BLOCKS)
            ck_abort_msg("an add kernel (%s, on device %d) launched %llu blocks: at most "
                         "RING_MAX_BLOCKS = %d", o->name, o->device, o->blocks, RING_MAX_BLOCKS);
        if (o->device < 0 || o->device >= n)
            continue;
        int d = o->device;
        if (o->kind == EMU_OP_MEMCPY) {
            copies[d]++;
            copy_stream[d] = copy_stream[d] < 0 ? o->stream : copy_stream[d];
        } else if (o->kind == EMU_OP_KERNEL) {
            adds[d]++;
            add_stream[d] = add_stream[d] < 0 ? o->stream : add_stream[d];
        }
    }
    for (int d = 0; d < n; d++) {
        if (copies[d] < 2 * (n - 1) || adds[d] < n - 1) {
            grade_hint(slot, "every step of the ring is a copy from the neighbour on the "
                             "receiving device, and every reduce-scatter step an add after it");
            ck_abort_msg("device %d made %d copies and %d adds: a ring of %d devices takes a "
                         "copy at each of its %d steps and an add at each of its %d "
                         "reduce-scatter steps, at least", d, copies[d], adds[d], n,
                         2 * (n - 1), n - 1);
        }
        for (size_t i = 0; i < nop; i++) {
            const struct emu_op *o = &op[i];
            if (o->device != d)
                continue;
            if ((o->kind == EMU_OP_MEMCPY && o->stream != copy_stream[d]) ||
                (o->kind == EMU_OP_KERNEL && o->stream != add_stream[d]))
                ck_abort_msg("device %d's %s ran on streams %d and %d: one stream for the "
                             "copies, another for the adds", d,
                             o->kind == EMU_OP_MEMCPY ? "copies" : "adds",
                             o->kind == EMU_OP_MEMCPY ? copy_stream[d] : add_stream[d],
                             o->stream);
        }
        if (copy_stream[d] == add_stream[d]) {
            grade_hint(slot, "on one stream the copy of the next chunk waits for the add of "
                             "this one: give the copies a stream of their own, and order the two "
                             "by events");
            ck_abort_msg("device %d's copies and adds ran on one stream (%d)", d,
                         copy_stream[d]);
        }
    }
    for (size_t i = 0; i < nop; i++) {
        const struct emu_op *w = &op[i];
        if (w->kind != EMU_OP_EVENT_WAIT || w->after < 0 || w->device < 0 || w->device >= n)
            continue;
        const struct emu_op *rec = record_of(op, nop, w->after);
        if (!rec)
            continue;
        int d = w->device;
        if (w->stream == add_stream[d] && rec->stream == copy_stream[d])
            landed[d]++;
        if (w->stream == copy_stream[d] && rec->device == d && rec->stream == add_stream[d])
            drained[d]++;
        if (w->stream == copy_stream[d] && rec->device == (d + n - 1) % n)
            from_left[d]++;
    }
    for (int d = 0; d < n; d++) {
        if (landed[d] < adds[d]) {
            grade_hint(slot, "an add reads the slot its copy fills: record an event on the copy "
                             "stream after the copy, and make the add stream wait for it");
            ck_abort_msg("device %d ran %d adds and waited %d times for its copy stream: each "
                         "add must wait for its chunk to land", d, adds[d], landed[d]);
        }
        if (adds[d] > RING_SLOTS && drained[d] == 0) {
            grade_hint(slot, "a slot is filled again %d chunks later: the copy into it must wait "
                             "for the add that read it last (an event recorded on the add "
                             "stream after that add)", RING_SLOTS);
            ck_abort_msg("device %d reused its %d receive slots for %d chunks and its copy "
                         "stream never waited for an add: a copy may overwrite a slot before "
                         "the add read it", d, RING_SLOTS, adds[d]);
        }
        if (from_left[d] < 2 * (n - 1) - 1)
            ck_abort_msg("device %d's copies waited %d times for an event of device %d: a ring "
                         "of %d devices takes a wait before each step after the first, %d at "
                         "least", d, from_left[d], (d + n - 1) % n, n, 2 * (n - 1) - 1);
    }
    grade_note(slot, "P2P copies on one stream, adds on another, each add after its copy, each "
                     "slot refilled after its add (device 0: %d copies, %d adds)", copies[0],
               adds[0]);
    grade_summary("copies on the copy engines, adds on the SMs, ordered by events");
}
#endif

START_TEST(ring_concept)
{
#ifdef HARNESS_EMU
    int slot = grade_slot();
    const int step = *(const int *)grade_ctx();
    grade_split();
    const int n = 3;
    struct links l = ring_machine(step, n, 0);
    struct rng r = grade_rng(slot);
    struct ring_problem q;
    /* chunks of 10^5 floats: a grid of one thread a float4 would be 49 blocks */
    ring_problem_init(&q, n, 300007);
    zones_seen(&q, q.zones_was);
    struct any_ring ring;
    cudaError_t e = SEEN(any_create(&ring, step, &l, n, q.count, 100000));
    JUDGE(e == cudaSuccess, "%s returned %s", call_name(step, "create"), err_name(e));
    ring_fill(&q, &r);
    if (runs())
        emu_schedule_reset();
    e = SEEN(any_allreduce(&ring, q.d));
    JUDGE(e == cudaSuccess, "%s returned %s", call_name(step, "allreduce"), err_name(e));
    size_t nop = 0;
    struct emu_op *op = sched_seen(&nop);
    ring_check(slot, &q, call_name(step, "allreduce"));
    if (judges()) {
        if (step == 2)
            judge_ring_schedule(slot, op, nop, n);
        else
            judge_copy_schedule(slot, op, nop, n);
    }
    free(op);
    e = SEEN(any_destroy(&ring));
    JUDGE(e == cudaSuccess, "%s returned %s", call_name(step, "destroy"), err_name(e));
    ring_problem_free(&q);
    grade_split_end();
#endif
}
END_TEST

/* what the timed runs of step 2 returned and took */
struct ring_times {
    cudaError_t ring[SPEED_REPS + 1], host[SPEED_REPS + 1];
    double tr[SPEED_REPS], th[SPEED_REPS];
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

START_TEST(ring_speed)
{
    int slot = grade_slot();
    const int step = *(const int *)grade_ctx();
    const int n = gpu_devices();
    grade_split();
    struct links l = ring_machine(step, n, 1);
    struct rng r = grade_rng(slot);
    struct ring_problem q;
    ring_problem_init(&q, n, SPEED_FLOATS);
    zones_seen(&q, q.zones_was);
    struct any_ring ring;
    cudaError_t e = SEEN(any_create(&ring, step, &l, n, q.count, (size_t)1 << 20));
    JUDGE(e == cudaSuccess, "%s returned %s", call_name(step, "create"), err_name(e));
    ring_fill(&q, &r);
    struct ring_times t;
    memset(&t, 0, sizeof t);
    if (runs()) {
        /* a warm-up of each, then the two in turns */
        t.ring[SPEED_REPS] = any_allreduce(&ring, q.d);
        t.host[SPEED_REPS] = allreduce_host(q.d, n, q.count);
        for (int k = 0; k < SPEED_REPS; k++) {
            double t0 = now_ms();
            t.ring[k] = any_allreduce(&ring, q.d);
            double t1 = now_ms();
            t.host[k] = allreduce_host(q.d, n, q.count);
            double t2 = now_ms();
            t.tr[k] = t1 - t0;
            t.th[k] = t2 - t1;
        }
    }
    grade_exchange_bytes(&t, sizeof t);
    for (int k = 0; k <= SPEED_REPS && judges(); k++) {
        ck_assert_msg(t.ring[k] == cudaSuccess, "%s returned %s", call_name(step, "allreduce"),
                      err_name(t.ring[k]));
        ck_assert_msg(t.host[k] == cudaSuccess, "allreduce_host returned %s",
                      err_name(t.host[k]));
    }
    for (int k = 0; k < SPEED_REPS && judges(); k++)
        ck_assert_msg(t.tr[k] > 0 && t.tr[k] < 1e9 && t.th[k] > 0 && t.th[k] < 1e9,
                      "the grade lost step with the code it runs: a timing of %g or %g ms came "
                      "back", t.tr[k], t.th[k]);
    e = SEEN(any_destroy(&ring));
    JUDGE(e == cudaSuccess, "%s returned %s", call_name(step, "destroy"), err_name(e));
    ring_problem_free(&q);
    if (judges()) {
        qsort(t.tr, SPEED_REPS, sizeof t.tr[0], cmp_double);
        qsort(t.th, SPEED_REPS, sizeof t.th[0], cmp_double);
        double tr = t.tr[SPEED_REPS / 2], th = t.th[SPEED_REPS / 2];
        double bytes = (double)SPEED_FLOATS * sizeof(float);
        grade_note(slot, "%d devices, %.0f MiB each: the ring %.3f ms (%.1f GB/s of algorithm "
                         "bandwidth, %.1f of bus bandwidth), through the host %.3f ms: %.1fx "
                         "(needs %.1fx)", n, bytes / MIB, tr, bytes / (tr * 1e6),
                   bytes / (tr * 1e6) * 2.0 * (n - 1) / n, th, th / tr, RING_NEEDS);
        grade_summary("%.1fx allreduce_host (needs %.1fx)", th / tr, RING_NEEDS);
        grade_hint(slot, "%s", step == 2
                   ? "is every step a kernel reading the neighbour over the link, with the "
                     "chunks of different steps in flight at once? A wait of the host between "
                     "steps, or one chunk a step, serialises the ring"
                   : "are the copies of one chunk in flight while the adds of the one before "
                     "run, on the two streams, and every step of every device issued before "
                     "the host waits? (The grader opened the links: each copy crosses them "
                     "directly)");
        ck_assert_msg(th / tr >= RING_NEEDS, "the ring %.3f ms, allreduce_host %.3f ms: %.2fx, "
                      "needs %.1fx", tr, th, th / tr, RING_NEEDS);
    }
    grade_split_end();
}
END_TEST

/* ==== step 4: a data-parallel step ============================================================== */

#define DP_NEEDS 1.15 /* the whole step over the longer of its GEMMs and its all-reduces, at most */
#define DP_VALUE 8    /* inputs in [-8, 8], never 0: a sum of 4 x 40 x 64 products is exact */

struct dp_case {
    int n, layers, batch, rows, cols;
};

static const struct dp_case DP_CASES[] = {
    { 1, 3, 5, 17, 9 },   { 2, 1, 16, 16, 16 }, { 2, 5, 7, 33, 20 },
    { 3, 4, 19, 12, 31 }, { 4, 7, 3, 9, 14 },   { 4, 2, 40, 40, 3 },
};
#define NDP ((int)(sizeof DP_CASES / sizeof DP_CASES[0]))
/* on a GPU, every device: graded on 4 layers of 520 x 264 gradients; timed on 8 layers of
 * 2048 x 2048 (16 MiB), 64 rows of batch a device */
static const struct dp_case DP_GPU = { 0, 4, 64, 520, 264 }, DP_TIMED = { 0, 8, 64, 2048, 2048 };

static struct dp_case dp_case_here(int i)
{
    if (!gpu_times_are_real())
        return DP_CASES[i];
    struct dp_case c = DP_GPU;
    c.n = gpu_devices();
    return c;
}

/* The problem, where the code runs: every layer's A and G on every device, its grad (guarded,
 * dbuf_alloc) on every device; in both, the inputs and each layer's sum on the host. */
struct dp_problem {
    struct dp_case c;
    const float *a[DP_MAX_LAYERS][MGPU_MAX], *g[DP_MAX_LAYERS][MGPU_MAX];
    float *grad[DP_MAX_LAYERS][MGPU_MAX];
    float *ha, *hg;   /* layers x n x batch x rows, and x cols */
    float *want, *got; /* layers x rows x cols; one grad */
    unsigned char *zones_was, *zones_now;
};

static size_t dp_out(const struct dp_case *c) { return (size_t)c->rows * c->cols; }
static float *dp_ha(const struct dp_problem *q, int l, int d)
{
    return q->ha + ((size_t)l * q->c.n + d) * q->c.batch * q->c.rows;
}
static float *dp_hg(const struct dp_problem *q, int l, int d)
{
    return q->hg + ((size_t)l * q->c.n + d) * q->c.batch * q->c.cols;
}

static void dp_problem_init(struct dp_problem *q, struct dp_case c)
{
    memset(q, 0, sizeof *q);
    q->c = c;
    const size_t na = (size_t)c.batch * c.rows, ng = (size_t)c.batch * c.cols, no = dp_out(&c);
    q->ha = xmalloc((size_t)c.layers * c.n * na * sizeof(float));
    q->hg = xmalloc((size_t)c.layers * c.n * ng * sizeof(float));
    q->want = xmalloc((size_t)c.layers * no * sizeof(float));
    q->got = xmalloc(no * sizeof(float));
    q->zones_was = xmalloc((size_t)c.layers * c.n * 2 * DBUF_GUARD);
    q->zones_now = xmalloc((size_t)c.layers * c.n * 2 * DBUF_GUARD);
    for (int d = 0; d < c.n && runs(); d++) {
        CUDA_CHECK(cudaSetDevice(d));
        for (int l = 0; l < c.layers; l++) {
            float *p;
            CUDA_CHECK(cudaMalloc((void **)&p, na * sizeof(float)));
            q->a[l][d] = p;
            CUDA_CHECK(cudaMalloc((void **)&p, ng * sizeof(float)));
            q->g[l][d] = p;
            char name[32];
            snprintf(name, sizeof name, "grad[%d][%d]", l, d);
            q->grad[l][d] = dbuf_alloc(no * sizeof(float), name);
        }
    }
    if (runs())
        CUDA_CHECK(cudaSetDevice(0));
}

static void dp_problem_free(struct dp_problem *q)
{
    for (int d = 0; d < q->c.n && runs(); d++)
        for (int l = 0; l < q->c.layers; l++) {
            CUDA_CHECK(cudaFree((void *)q->a[l][d]));
            CUDA_CHECK(cudaFree((void *)q->g[l][d]));
            dbuf_free(q->grad[l][d]);
        }
    free(q->ha);
    free(q->hg);
    free(q->want);
    free(q->got);
    free(q->zones_was);
    free(q->zones_now);
}

/* every grad's guard zones, read where the code runs, sent */
static void dp_zones_seen(const struct dp_problem *q, unsigned char *zones)
{
    const size_t bytes = dp_out(&q->c) * sizeof(float);
    for (int l = 0; l < q->c.layers && runs(); l++)
        for (int d = 0; d < q->c.n; d++)
            guard_read(q->grad[l][d], bytes, zones + ((size_t)l * q->c.n + d) * 2 * DBUF_GUARD);
    exchange_pieces(zones, (size_t)q->c.layers * q->c.n * 2 * DBUF_GUARD);
}

static float dp_value(struct rng *r)
{
    int v = (int)(rng_next(r) % (2 * DP_VALUE)) - DP_VALUE; /* -8 .. 7 */
    return (float)(v >= 0 ? v + 1 : v);                      /* -8 .. -1, 1 .. 8 */
}

/* fresh inputs, each layer's sum (in double, exact; where `sums`: a timing needs none), the
 * inputs copied and every grad poisoned (0xff bytes: NaN) where the code runs */
static void dp_fill(struct dp_problem *q, struct rng *r, int sums)
{
    const struct dp_case *c = &q->c;
    const size_t na = (size_t)c->batch * c->rows, ng = (size_t)c->batch * c->cols;
    for (int l = 0; l < c->layers; l++) {
        float *w = q->want + (size_t)l * dp_out(c);
        for (int d = 0; d < c->n; d++) {
            float *a = dp_ha(q, l, d), *g = dp_hg(q, l, d);
            for (size_t i = 0; i < na; i++)
                a[i] = dp_value(r);
            for (size_t i = 0; i < ng; i++)
                g[i] = dp_value(r);
        }
        for (int i = 0; i < c->rows && sums; i++)
            for (int j = 0; j < c->cols; j++) {
                double s = 0;
                for (int d = 0; d < c->n; d++)
                    for (int b = 0; b < c->batch; b++)
                        s += (double)dp_ha(q, l, d)[(size_t)b * c->rows + i] *
                             dp_hg(q, l, d)[(size_t)b * c->cols + j];
                w[(size_t)i * c->cols + j] = (float)s;
            }
        for (int d = 0; d < c->n && runs(); d++) {
            to_device((void *)q->a[l][d], dp_ha(q, l, d), na * sizeof(float));
            to_device((void *)q->g[l][d], dp_hg(q, l, d), ng * sizeof(float));
            CUDA_CHECK(cudaMemset(q->grad[l][d], 0xff, dp_out(c) * sizeof(float)));
        }
    }
}

/* every grad against its layer's sum, bit for bit, and the guard zones */
static void dp_check(int slot, struct dp_problem *q, const char *what)
{
    const struct dp_case *c = &q->c;
    const size_t no = dp_out(c);
    for (int l = 0; l < c->layers; l++)
        for (int d = 0; d < c->n; d++) {
            if (runs())
                to_host(q->got, q->grad[l][d], no * sizeof(float));
            exchange_pieces(q->got, no * sizeof(float));
            if (!judges())
                continue;
            const float *w = q->want + (size_t)l * no;
            for (size_t i = 0; i < no; i++) {
                if (memcmp(&q->got[i], &w[i], sizeof(float)) == 0)
                    continue;
                grade_hint(slot, "%s", q->got[i] != q->got[i]
                           ? "a grad never written (still the poison, NaN): every layer's "
                             "all-reduce must run, into grad[l], before dp_backward returns"
                           : "a sum of the wrong buckets: an all-reduce that read a device's "
                             "bucket before that device's GEMM had made it (wait for every "
                             "device's GEMM event of the layer, not only your own), or after the "
                             "GEMM of a later layer had overwritten it (the GEMM that reuses a "
                             "bucket waits for the all-reduce that read it, on every device)");
                ck_abort_msg("%s: %d device%s, %d layer%s, batch %d, %d x %d: layer %d's grad on "
                             "device %d, element (%zu, %zu) is %.9g, want %.9g", what, c->n,
                             c->n == 1 ? "" : "s", c->layers, c->layers == 1 ? "" : "s",
                             c->batch, c->rows, c->cols, l, d, i / c->cols, i % c->cols,
                             (double)q->got[i], (double)w[i]);
            }
        }
    dp_zones_seen(q, q->zones_now);
    if (!judges())
        return;
    for (size_t z = 0; z < (size_t)c->layers * c->n; z++) {
        char name[72];
        snprintf(name, sizeof name, "layer %zu's grad on device %zu", z / c->n, z % c->n);
        guard_check(what, q->zones_was + z * 2 * DBUF_GUARD, q->zones_now + z * 2 * DBUF_GUARD,
                    name, no);
    }
}

/* The model's machine: every pair linked. The given all-reduce copies, and needs no link; but on
 * a GPU a peer copy without peer access is staged through the host, so there the grader enables
 * every access the machine allows (not step 1's code: this step is graded alone). */
static void dp_machine(int n)
{
    struct machine m = { n, NULL, "" };
    machine_up(&m);
    if (!runs() || !gpu_times_are_real())
        return;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int can = 0;
            if (i != j)
                CUDA_CHECK(cudaDeviceCanAccessPeer(&can, i, j));
            if (can)
                grader_enable(i, j);
        }
    CUDA_CHECK(cudaSetDevice(0));
}

START_TEST(dp_correct)
{
    int slot = grade_slot();
    struct dp_case c = dp_case_here(_i);
    if (grade_quick_skip(slot, (double)c.n * c.layers * c.batch * c.rows * c.cols,
                         "multiply-adds"))
        return;
    grade_split();
    dp_machine(c.n);
    struct rng r = grade_rng(slot);
    struct dp_problem q;
    dp_problem_init(&q, c);
    dp_zones_seen(&q, q.zones_was);
    struct census before = census_seen();
    const int current = c.n > 1 ? 1 : 0;
    if (runs())
        CUDA_CHECK(cudaSetDevice(current));
    struct dp s;
    memset(&s, 0, sizeof s);
    cudaError_t e = SEEN(dp_create(&s, c.n, c.layers, c.batch, c.rows, c.cols));
    JUDGE(e == cudaSuccess, "dp_create (given) returned %s", err_name(e));
    const char *const RUNS[] = { "dp_backward", "second run, shuffled streams",
                                 "third run, shuffled streams" };
    for (int round = 0; round < 3; round++) {
        if (round > 0) {
            shuffle(&r);
            grade_second_run(slot, 1);
        }
        dp_fill(&q, &r, 1);
        if (runs())
            CUDA_CHECK(cudaSetDevice(current));
        e = SEEN(dp_backward(&s, q.a, q.g, q.grad));
        JUDGE(e == cudaSuccess, "%s: %d devices, %d layers: dp_backward returned %s",
              RUNS[round], c.n, c.layers, err_name(e));
        check_after(slot, "dp_backward", current);
        dp_check(slot, &q, RUNS[round]);
    }
    e = SEEN(dp_destroy(&s));
    JUDGE(e == cudaSuccess, "dp_destroy (given) returned %s", err_name(e));
    check_census(slot, before, "a model made, three backward passes, destroyed");
    dp_problem_free(&q);
    grade_note(slot, "every grad the exact sum, three times");
    grade_split_end();
}
END_TEST

START_TEST(dp_errors)
{
    int slot = grade_slot();
    grade_split();
    const int n = gpu_times_are_real() ? gpu_devices() : 2;
    dp_machine(n);
    struct dp_case c = { n, 2, 4, 8, 8 };
    struct dp_problem q;
    dp_problem_init(&q, c);
    struct census before = census_seen();
    struct dp s;
    memset(&s, 0, sizeof s);
    cudaError_t e = SEEN(dp_create(&s, c.n, c.layers, c.batch, c.rows, c.cols));
    JUDGE(e == cudaSuccess, "dp_create (given) returned %s", err_name(e));
    struct census made = census_seen();
    static const char *const WHAT[] = { "a NULL model", "a NULL a", "a NULL g", "a NULL grad" };
    for (int k = 0; k < 4; k++) {
        e = SEEN(dp_backward(k == 0 ? NULL : &s, k == 1 ? NULL : q.a, k == 2 ? NULL : q.g,
                             k == 3 ? NULL : q.grad));
        JUDGE(e == cudaErrorInvalidValue, "dp_backward with %s returned %s, want "
              "cudaErrorInvalidValue", WHAT[k], err_name(e));
        check_after(slot, "dp_backward refusing bad arguments", 0);
    }
    check_census(slot, made, "dp_backward refusing bad arguments");
    e = SEEN(dp_destroy(&s));
    JUDGE(e == cudaSuccess, "dp_destroy (given) returned %s", err_name(e));
    check_census(slot, before, "a model made and destroyed");
    dp_problem_free(&q);
    grade_note(slot, "refused, nothing held");
    grade_split_end();
}
END_TEST

#ifdef HARNESS_EMU
/* the host's waits, as the judge sees them: how many, and the issue count at each (at most
 * SEEN_OPS_MAX are read) */
static unsigned long long *host_waits_seen(size_t *n)
{
    unsigned long long count = runs() ? emu_host_wait_count() : 0;
    grade_exchange_bytes(&count, sizeof count);
    *n = count < SEEN_OPS_MAX ? (size_t)count : SEEN_OPS_MAX;
    unsigned long long *w = xmalloc((*n ? *n : 1) * sizeof *w);
    for (size_t i = 0; i < *n; i++)
        w[i] = runs() ? emu_host_wait_issued(i) : 0;
    exchange_pieces(w, *n * sizeof *w);
    return w;
}

static int is_gemm(const struct emu_op *o)
{
    return o->kind == EMU_OP_KERNEL && strstr(o->name, "grad_gemm") != NULL;
}

/* one op of an all-reduce on device d: its own bucket's copy, a peer's, or an add */
static int is_reduce_on(const struct emu_op *o, int d)
{
    if (o->kind == EMU_OP_MEMCPY)
        return o->dst_device == d && o->src_device >= 0;
    return o->kind == EMU_OP_KERNEL && strstr(o->name, "grad_add") != NULL && o->device == d;
}

static int cmp_issue(const void *x, const void *y)
{
    const struct emu_op *a = x, *b = y;
    return (a->issue > b->issue) - (a->issue < b->issue);
}

/* Step 4's schedule, judged. The operations sorted by issue; each one's predecessors (stream
 * order and the waits declared: the record a wait names, and what came before it on its
 * stream), closed over; then the layers' GEMMs and all-reduces found on each device and the
 * four rules of the contract checked against them. */
static void judge_dp_schedule(int slot, struct emu_op *op, size_t nop, const unsigned long long *w,
                              size_t nw, const struct dp_case *c)
{
    const int n = c->n, L = c->layers, per = 2 * n - 1; /* an all-reduce's ops on a device */
    qsort(op, nop, sizeof *op, cmp_issue);
    for (size_t i = 0; i < nop; i++) {
        if (op[i].host_sync) {
            grade_hint(slot, "the legacy stream (stream 0, cudaMemcpy, cudaMemset) waits for "
                             "everything and makes the host wait: keep every operation on "
                             "the model's streams");
            ck_abort_msg("%s on device %d ran with the host waiting for it (the legacy "
                         "stream, or a copy to pageable memory)", op[i].name, op[i].device);
        }
        if (op[i].kind == EMU_OP_KERNEL && !is_gemm(&op[i]) && !strstr(op[i].name, "grad_add"))
            ck_abort_msg("a kernel of dp_backward's own (%s): the step issues grad_gemm and "
                         "grad_allreduce, and orders them", op[i].name);
    }
    const unsigned long long last = nop ? op[nop - 1].issue : 0;
    for (size_t k = 0; k < nw; k++)
        if (w[k] <= last) {
            size_t issued = 0; /* of the operations judged, those issued before the wait */
            while (issued < nop && op[issued].issue < w[k])
                issued++;
            grade_hint(slot, "every layer's work is issued before the host waits for any: a "
                             "cudaStreamSynchronize between layers holds the next layer's GEMM "
                             "until the all-reduce is done. Say what must come first with "
                             "events, and let the GPUs wait for them");
            ck_abort_msg("the host waited after %zu of the %zu operations had been issued: "
                         "the rest waited for it", issued, nop);
        }
    /* the layers' ops on each device: GEMMs in issue order are layers L - 1 .. 0, and the
     * all-reduce ops in groups of 2n - 1 likewise */
    size_t gemm[DP_MAX_LAYERS][MGPU_MAX], first[DP_MAX_LAYERS][MGPU_MAX],
        lastop[DP_MAX_LAYERS][MGPU_MAX];
    int gstream[MGPU_MAX], rstream[MGPU_MAX];
    for (int d = 0; d < n; d++) {
        int ng = 0, nr = 0;
        gstream[d] = rstream[d] = -1;
        for (size_t i = 0; i < nop; i++) {
            const struct emu_op *o = &op[i];
            if (is_gemm(o) && o->device == d) {
                ck_assert_msg(ng < L, "device %d ran more than %d GEMMs", d, L);
                gemm[L - 1 - ng++][d] = i;
                if (gstream[d] >= 0 && gstream[d] != o->stream)
                    ck_abort_msg("device %d's GEMMs ran on streams %d and %d: all on "
                                 "s->compute[%d]", d, gstream[d], o->stream, d);
                gstream[d] = o->stream;
            } else if (is_reduce_on(o, d)) {
                ck_assert_msg(nr < L * per, "device %d ran more all-reduce work than %d layers "
                              "take", d, L);
                int l = L - 1 - nr / per;
                if (nr % per == 0)
                    first[l][d] = i;
                lastop[l][d] = i;
                nr++;
                if (rstream[d] >= 0 && rstream[d] != o->stream)
                    ck_abort_msg("device %d's all-reduces ran on streams %d and %d: all on "
                                 "s->comm[%d]", d, rstream[d], o->stream, d);
                rstream[d] = o->stream;
            }
        }
        ck_assert_msg(ng == L && nr == L * per, "device %d ran %d GEMMs and %d all-reduce "
                      "operations, where %d layers take %d and %d", d, ng, nr, L, L, L * per);
        if (gstream[d] == rstream[d]) {
            grade_hint(slot, "the operations of one stream run one after the other: an "
                             "all-reduce on the compute stream holds the next layer's GEMM "
                             "behind it. grad_allreduce on s->comm");
            ck_abort_msg("device %d's GEMMs and all-reduces ran on one stream (%d)", d,
                         gstream[d]);
        }
        ck_assert_msg(gstream[d] != 0 && rstream[d] != 0, "device %d's work ran on the legacy "
                      "stream", d);
    }
    /* predecessors: bit j of pred[i] when op j must come before op i */
    const size_t words = (nop + 63) / 64;
    uint64_t *pred = xmalloc((nop ? nop : 1) * words * sizeof *pred);
    memset(pred, 0, (nop ? nop : 1) * words * sizeof *pred);
#define PRED(i) (pred + (size_t)(i) * words)
    for (size_t i = 0; i < nop; i++) {
        size_t direct[2];
        int nd = 0;
        for (size_t j = i; j-- > 0;)
            if (op[j].stream == op[i].stream) {
                direct[nd++] = j;
                break;
            }
        if (op[i].kind == EMU_OP_EVENT_WAIT && op[i].after >= 0)
            for (size_t j = 0; j < i; j++)
                if (op[j].kind == EMU_OP_EVENT_RECORD && (long long)op[j].issue == op[i].after) {
                    direct[nd++] = j;
                    break;
                }
        for (int k = 0; k < nd; k++) {
            uint64_t *p = PRED(i), *q = PRED(direct[k]);
            for (size_t x = 0; x < words; x++)
                p[x] |= q[x];
            p[direct[k] / 64] |= (uint64_t)1 << (direct[k] % 64);
        }
    }
#define BEFORE(j, i) ((PRED(i)[(j) / 64] >> ((j) % 64)) & 1)
    for (int l = L - 1; l >= 0; l--)
        for (int d = 0; d < n; d++)
            for (int e = 0; e < n; e++) {
                if (!BEFORE(gemm[l][e], first[l][d])) {
                    grade_hint(slot, "device d's all-reduce reads every device's bucket: record "
                                     "an event after each device's GEMM, and make every comm "
                                     "stream wait for all of them (cudaStreamWaitEvent takes an "
                                     "event of another device)");
                    free(pred);
                    ck_abort_msg("layer %d's all-reduce on device %d may start before layer "
                                 "%d's GEMM on device %d: nothing declared orders them", l, d,
                                 l, e);
                }
                if (l + DP_BUCKETS < L && !BEFORE(lastop[l + DP_BUCKETS][e], gemm[l][d])) {
                    grade_hint(slot, "layer l's GEMM writes the bucket layer l + DP_BUCKETS's "
                                     "all-reduces read, on every device: record an event on "
                                     "each comm stream after the all-reduce, and make the "
                                     "GEMM's stream wait for all of them");
                    free(pred);
                    ck_abort_msg("layer %d's GEMM on device %d may overwrite bucket %d before "
                                 "layer %d's all-reduce on device %d has read it", l, d,
                                 l % DP_BUCKETS, l + DP_BUCKETS, e);
                }
                for (size_t j = first[l][e]; l > 0 && j <= lastop[l][e]; j++)
                    if (BEFORE(j, gemm[l - 1][d])) {
                        grade_hint(slot, "layer l - 1's GEMM needs only its own bucket, which "
                                         "layer l's all-reduce does not read: a wait on the "
                                         "all-reduce (or on anything after it) serialises "
                                         "the two, and the overlap is lost");
                        free(pred);
                        ck_abort_msg("layer %d's GEMM on device %d waits for layer %d's "
                                     "all-reduce on device %d: they cannot overlap", l - 1, d,
                                     l, e);
                    }
            }
#undef BEFORE
#undef PRED
    free(pred);
    grade_note(slot, "%d devices, %d layers: GEMMs on streams of their own, all-reduces on "
                     "others, each after its layer's GEMMs, each bucket reused after its "
                     "all-reduces, no layer's GEMM after the all-reduce above it", n, L);
    grade_summary("the all-reduces overlap the GEMMs, ordered by events only where data flows");
}
#endif

START_TEST(dp_concept)
{
#ifdef HARNESS_EMU
    int slot = grade_slot();
    grade_split();
    const struct dp_case c = { 3, 5, 6, 10, 12 };
    dp_machine(c.n);
    struct rng r = grade_rng(slot);
    struct dp_problem q;
    dp_problem_init(&q, c);
    dp_zones_seen(&q, q.zones_was);
    struct dp s;
    memset(&s, 0, sizeof s);
    cudaError_t e = SEEN(dp_create(&s, c.n, c.layers, c.batch, c.rows, c.cols));
    JUDGE(e == cudaSuccess, "dp_create (given) returned %s", err_name(e));
    dp_fill(&q, &r, 1);
    if (runs()) {
        CUDA_CHECK(cudaDeviceSynchronize()); /* the fill's copies ran, and are not judged */
        emu_schedule_reset();
    }
    e = SEEN(dp_backward(&s, q.a, q.g, q.grad));
    JUDGE(e == cudaSuccess, "dp_backward returned %s", err_name(e));
    size_t nop = 0, nw = 0;
    struct emu_op *op = sched_seen(&nop);
    unsigned long long *w = host_waits_seen(&nw);
    dp_check(slot, &q, "dp_backward");
    if (judges())
        judge_dp_schedule(slot, op, nop, w, nw, &c);
    free(op);
    free(w);
    e = SEEN(dp_destroy(&s));
    JUDGE(e == cudaSuccess, "dp_destroy (given) returned %s", err_name(e));
    dp_problem_free(&q);
    grade_split_end();
#endif
}
END_TEST

/* what the timed runs of step 4 returned and took: the step, its GEMMs alone, its all-reduces
 * alone */
struct dp_times {
    cudaError_t e[3][SPEED_REPS + 1];
    double t[3][SPEED_REPS];
};

/* What the speed test and the bench time: the step (k = 0, dp_backward), or every layer's GEMMs
 * alone (k = 1) or its all-reduces alone (k = 2) on the model's streams, then every device
 * waited for */
struct dp_run {
    struct dp *s;
    struct dp_problem *q;
    int k;
};

static cudaError_t dp_run(void *ctx)
{
    const struct dp_run *r = ctx;
    struct dp *s = r->s;
    struct dp_problem *q = r->q;
    const int k = r->k;
    if (k == 0)
        return dp_backward(s, q->a, q->g, q->grad);
    cudaError_t e = cudaSuccess;
    for (int l = s->layers - 1; l >= 0 && e == cudaSuccess; l--) {
        if (k == 1)
            for (int d = 0; d < s->ndev && e == cudaSuccess; d++)
                e = grad_gemm(s, d, l % DP_BUCKETS, q->a[l][d], q->g[l][d], s->compute[d]);
        else
            e = grad_allreduce(s, l % DP_BUCKETS, q->grad[l], s->comm);
    }
    for (int d = 0; d < s->ndev && e == cudaSuccess; d++) {
        if ((e = cudaSetDevice(d)) == cudaSuccess)
            e = cudaDeviceSynchronize();
    }
    cudaError_t f = cudaSetDevice(0);
    return e == cudaSuccess ? f : e;
}

START_TEST(dp_speed)
{
    int slot = grade_slot();
    struct dp_case c = DP_TIMED;
    c.n = gpu_devices();
    grade_split();
    dp_machine(c.n);
    struct rng r = grade_rng(slot);
    struct dp_problem q;
    dp_problem_init(&q, c);
    struct dp s;
    memset(&s, 0, sizeof s);
    cudaError_t e = SEEN(dp_create(&s, c.n, c.layers, c.batch, c.rows, c.cols));
    JUDGE(e == cudaSuccess, "dp_create (given) returned %s", err_name(e));
    dp_fill(&q, &r, 0);
    struct dp_times t;
    memset(&t, 0, sizeof t);
    if (runs()) {
        for (int k = 0; k < 3; k++) /* a warm-up of each */
            t.e[k][SPEED_REPS] = dp_run(&(struct dp_run){ &s, &q, k });
        for (int rep = 0; rep < SPEED_REPS; rep++)
            for (int k = 0; k < 3; k++) {
                double t0 = now_ms();
                t.e[k][rep] = dp_run(&(struct dp_run){ &s, &q, k });
                t.t[k][rep] = now_ms() - t0;
            }
    }
    grade_exchange_bytes(&t, sizeof t);
    static const char *const PART[] = { "dp_backward", "the GEMMs alone",
                                        "the all-reduces alone" };
    for (int k = 0; k < 3 && judges(); k++)
        for (int rep = 0; rep <= SPEED_REPS; rep++) {
            ck_assert_msg(t.e[k][rep] == cudaSuccess, "%s returned %s", PART[k],
                          err_name(t.e[k][rep]));
            ck_assert_msg(rep == SPEED_REPS || (t.t[k][rep] > 0 && t.t[k][rep] < 1e9),
                          "the grade lost step with the code it runs: a timing of %g ms came "
                          "back", t.t[k][rep]);
        }
    e = SEEN(dp_destroy(&s));
    JUDGE(e == cudaSuccess, "dp_destroy (given) returned %s", err_name(e));
    dp_problem_free(&q);
    if (judges()) {
        double m[3];
        for (int k = 0; k < 3; k++) {
            qsort(t.t[k], SPEED_REPS, sizeof t.t[k][0], cmp_double);
            m[k] = t.t[k][SPEED_REPS / 2];
        }
        const double longer = m[1] > m[2] ? m[1] : m[2];
        grade_note(slot, "%d devices, %d layers of %d x %d (batch %d a device): the step %.3f "
                         "ms, its GEMMs alone %.3f, its all-reduces alone %.3f: %.2fx the longer "
                         "(at most %.2fx; one after the other would be %.2fx)", c.n, c.layers,
                   c.rows, c.cols, c.batch, m[0], m[1], m[2], m[0] / longer, DP_NEEDS,
                   (m[1] + m[2]) / longer);
        grade_summary("%.2fx the longer of compute and communication (at most %.2fx)",
                      m[0] / longer, DP_NEEDS);
        grade_hint(slot, "is every layer issued before the host waits, each all-reduce on the "
                         "comm streams after its layer's GEMMs, and the next layer's GEMM "
                         "waiting on nothing but its bucket?");
        ck_assert_msg(m[0] <= DP_NEEDS * longer, "the step %.3f ms, the longer part alone %.3f "
                      "ms: %.2fx, at most %.2fx", m[0], longer, m[0] / longer, DP_NEEDS);
    }
    grade_split_end();
}
END_TEST

/* ==== the bench ================================================================================== */

static void row(struct results *out, const char *kernel, const char *shape, double ms, double gbs)
{
    results_row(out, CHAPTER, kernel, shape, ms, gbs, 0.0);
}

/* the median of `reps` host-timed calls of fn (after one warm-up); -1 when one fails */
static double timed(cudaError_t (*fn)(void *), void *ctx, int reps)
{
    double t[16];
    if (reps > 16)
        reps = 16;
    if (fn(ctx) != cudaSuccess)
        return -1;
    for (int k = 0; k < reps; k++) {
        double t0 = now_ms();
        if (fn(ctx) != cudaSuccess)
            return -1;
        t[k] = now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

struct bench_ring {
    struct ring *ring;
    struct ring_copy *ring_copy;
    float *buf[MGPU_MAX];
    int n;
    size_t count;
};

static cudaError_t run_ring(void *ctx)
{
    struct bench_ring *b = ctx;
    return ring_allreduce(b->ring, b->buf);
}

static cudaError_t run_ring_copy(void *ctx)
{
    struct bench_ring *b = ctx;
    return ring_copy_allreduce(b->ring_copy, b->buf);
}

static cudaError_t run_host(void *ctx)
{
    struct bench_ring *b = ctx;
    return allreduce_host(b->buf, b->n, b->count);
}

struct bench_copy {
    void *dst[2];
    const void *src[2];
    int dst_dev[2], src_dev[2];
    size_t bytes;
    int ways;               /* 1: dst[0] <- src[0]; 2: both at once */
    cudaStream_t stream[2];
};

static cudaError_t run_copy(void *ctx)
{
    struct bench_copy *b = ctx;
    cudaError_t e = cudaSuccess;
    for (int w = 0; w < b->ways && e == cudaSuccess; w++)
        e = cudaMemcpyPeerAsync(b->dst[w], b->dst_dev[w], b->src[w], b->src_dev[w], b->bytes,
                                b->stream[w]);
    for (int w = 0; w < b->ways; w++) {
        cudaError_t s = cudaStreamSynchronize(b->stream[w]);
        if (e == cudaSuccess)
            e = s;
    }
    return e;
}

/* device 0's buffer to device 1 through pinned host memory: down, then up */
struct bench_staged {
    void *d0, *d1, *h;
    size_t bytes;
};

static cudaError_t run_staged(void *ctx)
{
    struct bench_staged *b = ctx;
    cudaError_t e = cudaMemcpy(b->h, b->d0, b->bytes, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        e = cudaMemcpy(b->d1, b->h, b->bytes, cudaMemcpyHostToDevice);
    return e;
}

static void bench_links(struct results *out, size_t bytes, int reps)
{
    struct bench_copy b;
    memset(&b, 0, sizeof b);
    void *a0, *a1, *b0, *b1, *h;
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaMalloc(&a0, bytes));
    CUDA_CHECK(cudaMalloc(&b0, bytes));
    CUDA_CHECK(cudaStreamCreateWithFlags(&b.stream[0], cudaStreamNonBlocking));
    CUDA_CHECK(cudaMallocHost(&h, bytes));
    CUDA_CHECK(cudaSetDevice(1));
    CUDA_CHECK(cudaMalloc(&a1, bytes));
    CUDA_CHECK(cudaMalloc(&b1, bytes));
    CUDA_CHECK(cudaStreamCreateWithFlags(&b.stream[1], cudaStreamNonBlocking));
    CUDA_CHECK(cudaMemset(a1, 1, bytes));
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaMemset(a0, 1, bytes));
    char shape[32];
    snprintf(shape, sizeof shape, "%zu", bytes);
    b.bytes = bytes;
    b.dst[0] = a1, b.dst_dev[0] = 1, b.src[0] = a0, b.src_dev[0] = 0;
    b.dst[1] = b0, b.dst_dev[1] = 0, b.src[1] = b1, b.src_dev[1] = 1;
    b.ways = 1;
    double one = timed(run_copy, &b, reps);
    b.ways = 2;
    double both = timed(run_copy, &b, reps);
    struct bench_staged st = { a0, a1, h, bytes };
    double staged = timed(run_staged, &st, reps);
    if (one > 0)
        row(out, "p2p_one_way", shape, one, bytes / (one * 1e6));
    if (both > 0)
        row(out, "p2p_both_ways", shape, both, 2.0 * bytes / (both * 1e6));
    if (staged > 0)
        row(out, "through_host", shape, staged, bytes / (staged * 1e6));
    CUDA_CHECK(cudaFreeHost(h));
    CUDA_CHECK(cudaFree(a0));
    CUDA_CHECK(cudaFree(b0));
    CUDA_CHECK(cudaStreamDestroy(b.stream[0]));
    CUDA_CHECK(cudaSetDevice(1));
    CUDA_CHECK(cudaFree(a1));
    CUDA_CHECK(cudaFree(b1));
    CUDA_CHECK(cudaStreamDestroy(b.stream[1]));
    CUDA_CHECK(cudaSetDevice(0));
}

#ifndef HARNESS_EMU
/* NCCL, opened at run time: the bench's baseline where the library is installed (NVIDIA ships it
 * apart from the CUDA runtime), and no dependency of the grader's where it is not. One process
 * drives every device: a communicator a device (ncclCommInitAll), and each all-reduce issued for
 * every device between ncclGroupStart and ncclGroupEnd, in place, on a stream a device. */
struct nccl_lib {
    void *handle;
    ncclResult_t (*init_all)(ncclComm_t *, int, const int *);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                               ncclComm_t, cudaStream_t);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    ncclResult_t (*destroy)(ncclComm_t);
    const char *(*error)(ncclResult_t);
    ncclComm_t comm[MGPU_MAX];
    cudaStream_t stream[MGPU_MAX];
    int n;
};

/* 0 with l's functions found, communicators and streams made on devices 0 .. n - 1; -1 saying
 * why (no library, a symbol missing, a failed call), with nothing held */
static int nccl_open(struct nccl_lib *l, int n)
{
    memset(l, 0, sizeof *l);
    l->handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!l->handle)
        l->handle = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    if (!l->handle) {
        printf("bench: NCCL not found (%s): no nccl rows\n", dlerror());
        return -1;
    }
    /* (a function pointer through a void *: POSIX's dlsym idiom) */
    *(void **)&l->init_all = dlsym(l->handle, "ncclCommInitAll");
    *(void **)&l->all_reduce = dlsym(l->handle, "ncclAllReduce");
    *(void **)&l->group_start = dlsym(l->handle, "ncclGroupStart");
    *(void **)&l->group_end = dlsym(l->handle, "ncclGroupEnd");
    *(void **)&l->destroy = dlsym(l->handle, "ncclCommDestroy");
    *(void **)&l->error = dlsym(l->handle, "ncclGetErrorString");
    if (!l->init_all || !l->all_reduce || !l->group_start || !l->group_end || !l->destroy ||
        !l->error) {
        printf("bench: libnccl lacks a function this bench calls: no nccl rows\n");
        dlclose(l->handle);
        return -1;
    }
    ncclResult_t r = l->init_all(l->comm, n, NULL);
    if (r != ncclSuccess) {
        printf("bench: ncclCommInitAll on %d devices: %s: no nccl rows\n", n, l->error(r));
        dlclose(l->handle);
        return -1;
    }
    l->n = n;
    for (int d = 0; d < n; d++) {
        CUDA_CHECK(cudaSetDevice(d));
        CUDA_CHECK(cudaStreamCreateWithFlags(&l->stream[d], cudaStreamNonBlocking));
    }
    CUDA_CHECK(cudaSetDevice(0));
    return 0;
}

static void nccl_close(struct nccl_lib *l)
{
    for (int d = 0; d < l->n; d++) {
        CUDA_CHECK(cudaSetDevice(d));
        CUDA_CHECK(cudaStreamDestroy(l->stream[d]));
        l->destroy(l->comm[d]);
    }
    CUDA_CHECK(cudaSetDevice(0));
    dlclose(l->handle);
    memset(l, 0, sizeof *l);
}

struct bench_nccl {
    struct nccl_lib *lib;
    float *const *buf;
    size_t count;
};

/* NCCL opened on n devices for the bench, or NULL (it said why); and given back */
static void *nccl_for_bench(int n)
{
    static struct nccl_lib lib;
    return nccl_open(&lib, n) == 0 ? &lib : NULL;
}

static void nccl_done(void *l)
{
    if (l)
        nccl_close(l);
}

static cudaError_t run_nccl(void *ctx)
{
    struct bench_nccl *b = ctx;
    struct nccl_lib *l = b->lib;
    ncclResult_t r = l->group_start();
    for (int d = 0; d < l->n && r == ncclSuccess; d++)
        r = l->all_reduce(b->buf[d], b->buf[d], b->count, ncclFloat, ncclSum, l->comm[d],
                          l->stream[d]);
    ncclResult_t g = l->group_end();
    if (r == ncclSuccess)
        r = g;
    if (r != ncclSuccess) {
        fprintf(stderr, "bench: ncclAllReduce: %s\n", l->error(r));
        return cudaErrorUnknown;
    }
    cudaError_t e = cudaSuccess;
    for (int d = 0; d < l->n && e == cudaSuccess; d++)
        e = cudaStreamSynchronize(l->stream[d]);
    return e;
}
#else
static void *nccl_for_bench(int n)
{
    (void)n;
    return NULL; /* no NCCL on the CPU backend */
}

static void nccl_done(void *l)
{
    (void)l;
}
#endif

/* the rings (and allreduce_host up to host_max floats, and NCCL where nccl is not NULL) on n
 * devices at `count` floats a device: rows of algorithm bandwidth (count x 4 bytes over the
 * time) */
static int bench_ring_at(struct results *out, const struct links *l, int n, size_t count,
                         size_t chunk, size_t host_max, int reps, void *nccl)
{
    struct ring ring;
    struct ring_copy ring_copy;
    memset(&ring, 0, sizeof ring);
    memset(&ring_copy, 0, sizeof ring_copy);
    struct bench_ring b = { &ring, &ring_copy, { NULL }, n, count };
    for (int d = 0; d < n; d++) {
        CUDA_CHECK(cudaSetDevice(d));
        CUDA_CHECK(cudaMalloc((void **)&b.buf[d], count * sizeof(float)));
        CUDA_CHECK(cudaMemset(b.buf[d], 0, count * sizeof(float)));
    }
    CUDA_CHECK(cudaSetDevice(0));
    cudaError_t e = ring_create(&ring, l, count, chunk);
    if (e != cudaSuccess) {
        fprintf(stderr, "bench: ring_create: %s\n", err_name(e));
        return -1;
    }
    e = ring_copy_create(&ring_copy, n, count, chunk);
    if (e != cudaSuccess) {
        fprintf(stderr, "bench: ring_copy_create: %s\n", err_name(e));
        return -1;
    }
    char shape[48];
    snprintf(shape, sizeof shape, "%dx%zu", n, count);
    double bytes = (double)count * sizeof(float);
    double tr = timed(run_ring, &b, reps);
    if (tr > 0)
        row(out, "ring", shape, tr, bytes / (tr * 1e6));
    double tc = timed(run_ring_copy, &b, reps);
    if (tc > 0)
        row(out, "ring_copy", shape, tc, bytes / (tc * 1e6));
    if (count <= host_max) {
        double th = timed(run_host, &b, reps < 3 ? reps : 3);
        if (th > 0)
            row(out, "host", shape, th, bytes / (th * 1e6));
    }
#ifndef HARNESS_EMU
    if (nccl) {
        struct bench_nccl bn = { nccl, b.buf, count };
        double tn = timed(run_nccl, &bn, reps);
        if (tn > 0)
            row(out, "nccl", shape, tn, bytes / (tn * 1e6));
    }
#else
    (void)nccl;
#endif
    CUDA_CHECK(ring_destroy(&ring));
    CUDA_CHECK(ring_copy_destroy(&ring_copy));
    for (int d = 0; d < n; d++) {
        CUDA_CHECK(cudaSetDevice(d));
        CUDA_CHECK(cudaFree(b.buf[d]));
    }
    CUDA_CHECK(cudaSetDevice(0));
    return tr > 0 && tc > 0 ? 0 : -1;
}

/* Step 4 on every device: the step, the GEMMs alone and the all-reduces alone, each the median
 * of `reps` host-timed runs after one (timed); rows "dp_step", "dp_gemms", "dp_allreduces" at a
 * shape "NxLAYERSxBATCHxROWSxCOLS", with GB/s of gradient bytes a device (layers x rows x cols x
 * 4) and GFLOP/s of the GEMMs' work a device. 0, or 1 when a run failed. */
static int bench_dp(struct results *out, int n, int reps)
{
    struct dp_case c = DP_TIMED;
    c.n = n;
    struct dp_problem q;
    dp_problem_init(&q, c);
    struct rng r;
    rng_init(&r, harness_seed());
    dp_fill(&q, &r, 0);
    struct dp s;
    if (dp_create(&s, c.n, c.layers, c.batch, c.rows, c.cols) != cudaSuccess) {
        dp_problem_free(&q);
        return 1;
    }
    static const char *const NAME[] = { "dp_step", "dp_gemms", "dp_allreduces" };
    int fail = 0;
    char shape[64];
    snprintf(shape, sizeof shape, "%dx%dx%dx%dx%d", c.n, c.layers, c.batch, c.rows, c.cols);
    const double bytes = (double)c.layers * dp_out(&c) * sizeof(float),
                 flops = 2.0 * c.layers * c.batch * (double)dp_out(&c);
    for (int k = 0; k < 3 && !fail; k++) {
        struct dp_run run = { &s, &q, k };
        const double ms = timed(dp_run, &run, reps);
        if (ms < 0) {
            fprintf(stderr, "bench: %s failed\n", NAME[k]);
            fail = 1;
            break;
        }
        results_row(out, CHAPTER, NAME[k], shape, ms, bytes / (ms * 1e6), flops / (ms * 1e6));
        printf("%-24s %-14s %9.3f ms\n", shape, NAME[k], ms);
    }
    fail |= dp_destroy(&s) != cudaSuccess;
    dp_problem_free(&q);
    return fail;
}

static int bench(const char *path)
{
    struct results out;
    struct device_info info;
    int emu = !gpu_times_are_real();
    int count = 0;
    if (!emu && cudaGetDeviceCount(&count) == cudaSuccess && count == 1) {
        /* nothing to measure, and no file: a machine of one GPU has no link and no ring */
        printf("bench: chapter 12 needs two GPUs of one host; this machine has one: no rows "
               "written\n");
        return EXIT_SUCCESS;
    }
    if (emu) {
        /* the CPU backend's rows: host time, which says nothing about a GPU */
        char why[256];
        if (gpu_probe(&info, why, sizeof why) != 0) {
            fprintf(stderr, "bench: %s\n", why);
            return EXIT_FAILURE;
        }
        if (results_open(&out, path, info.name, "CPU backend, host times") != 0) {
            perror(path);
            return EXIT_FAILURE;
        }
    } else if (bench_begin(path, &out, &info) != 0) {
        return EXIT_FAILURE;
    }
    int fail = 0;
    if (emu) {
#ifdef HARNESS_EMU
        static const int NS[] = { 2, 4 };
        for (size_t k = 0; k < sizeof NS / sizeof NS[0]; k++) {
            if (emu_set_devices(NS[k], NULL) != 0) {
                fprintf(stderr, "bench: emu_set_devices(%d) refused\n", NS[k]);
                return EXIT_FAILURE;
            }
            struct links l;
            CUDA_CHECK(links_open(&l, NS[k]));
            for (size_t count = (size_t)1 << 12; count <= (size_t)1 << 18; count <<= 3)
                fail |= bench_ring_at(&out, &l, NS[k], count, (size_t)1 << 14, (size_t)1 << 18, 3,
                                      NULL);
            CUDA_CHECK(links_close(&l));
        }
#endif
    } else {
        int n = count > MGPU_MAX ? MGPU_MAX : count;
        struct links l;
        CUDA_CHECK(links_open(&l, n));
        bench_links(&out, (size_t)256 << 20, 9);
        void *nccl = nccl_for_bench(n);
        for (size_t count = (size_t)1 << 18; count <= (size_t)1 << 28; count <<= 2)
            fail |= bench_ring_at(&out, &l, n, count, (size_t)1 << 20, (size_t)1 << 26, 9, nccl);
        nccl_done(nccl);
        fail |= bench_dp(&out, n, 9); /* its peer copies over the links open */
        CUDA_CHECK(links_close(&l));
    }
    if (results_close(&out) != 0 || fail) {
        fprintf(stderr, "bench: %s\n", fail ? "a run failed (above)" : "writing failed");
        return EXIT_FAILURE;
    }
    printf("bench: wrote %s\n", path);
    return EXIT_SUCCESS;
}

/* ==== the tests ================================================================================== */

#define SANITIZE_SKIP "under a sanitizer (GRADE_SANITIZE=1): it makes calls fail on purpose, which " \
                      "the sanitizer would report"
#define SCHEDULE_SKIP "read from the CPU backend's recorded schedule (make grade BACKEND=emu); on a " \
                      "GPU the speed test shows the same thing in time"

static void add_tests(Suite *s)
{
    int emu = !gpu_times_are_real();
    int n = emu ? 0 : gpu_devices();
    if (!emu && n < 2) {
        /* one GPU: no link to open and no ring to run; every test would pass on anything */
        static char why[160];
        snprintf(why, sizeof why, "needs two GPUs of one host, and this machine has %d; make "
                 "grade CH=12 BACKEND=emu grades it on emulated devices", n);
        if (grader_step(1, "the links between the GPUs"))
            grader_skip("the links between this machine's GPUs", why);
        if (grader_step(2, "a ring all-reduce by hand"))
            grader_skip("the ring over this machine's GPUs", why);
        if (grader_step(3, "the ring on the copy engines"))
            grader_skip("the copy ring over this machine's GPUs", why);
        if (grader_step(4, "a data-parallel step"))
            grader_skip("the data-parallel step over this machine's GPUs", why);
        return;
    }
    if (grader_step(1, "the links between the GPUs")) {
        static char t[NLINK][112];
        static const char *tt[NLINK];
        int nt = emu ? NLINK : 1;
        for (int i = 0; i < nt; i++) {
            struct machine m = link_machine(i);
            snprintf(t[i], sizeof t[i], "correct: %s", emu ? m.what : "this machine's devices");
            tt[i] = t[i];
        }
        grader_add(s, "correct", step1_correct, tt, nt, 60);
        static const char *te[] = { "errors: bad device counts, NULL" };
        if (grade_sanitizing())
            grader_skip(te[0], SANITIZE_SKIP);
        else
            grader_add(s, "errors", step1_errors, te, 1, 60);
    }
    if (grader_step(2, "a ring all-reduce by hand")) {
        static char t[NRING][112];
        static const char *tt[NRING];
        int nt = emu ? NRING : NGPURING;
        for (int i = 0; i < nt; i++) {
            struct ring_case c = ring_case_here(i);
            snprintf(t[i], sizeof t[i], "correct: %d device%s, count %zu, chunks of %zu", c.n,
                     c.n == 1 ? "" : "s", c.count, c.chunk);
            tt[i] = t[i];
        }
        grader_add_ctx(s, "correct", ring_correct, tt, nt, 120, &STEP2);
        static const char *te[] = { "errors: bad counts, chunks, links and pointers" };
        if (grade_sanitizing())
            grader_skip(te[0], SANITIZE_SKIP);
        else
            grader_add(s, "errors", step2_errors, te, 1, 60);
        static const char *tc[] = { "concept: no copy, at most RING_MAX_BLOCKS blocks a kernel, "
                                    "a kernel a step on every device, each after its "
                                    "neighbour's" };
        if (emu)
            grader_add_ctx(s, "concept", ring_concept, tc, 1, 60, &STEP2);
        else
            grader_skip(tc[0], SCHEDULE_SKIP);
        grader_add_timed_ctx(s, "speed", ring_speed, "speed: 256 MiB a device, the ring against "
                             "allreduce_host", 240, &STEP2);
    }
    if (grader_step(3, "the ring on the copy engines")) {
        static char t[NRING][128];
        static const char *tt[NRING];
        int nt = emu ? NRING : NGPURING;
        for (int i = 0; i < nt; i++) {
            struct ring_case c = ring_case_here(i);
            snprintf(t[i], sizeof t[i], "correct: %d device%s%s, count %zu, chunks of %zu", c.n,
                     c.n == 1 ? "" : "s", emu && c.n == 3 ? " with no peer link" : "", c.count,
                     c.chunk);
            tt[i] = t[i];
        }
        grader_add_ctx(s, "correct", ring_correct, tt, nt, 120, &STEP3);
        static const char *te[] = { "errors: bad device counts, counts, chunks and pointers" };
        if (grade_sanitizing())
            grader_skip(te[0], SANITIZE_SKIP);
        else
            grader_add(s, "errors", step3_errors, te, 1, 60);
        static const char *tc[] = { "concept: P2P copies on a stream of their own, adds on "
                                    "another, each after its copy, each slot refilled after its "
                                    "add" };
        if (emu)
            grader_add_ctx(s, "concept", ring_concept, tc, 1, 60, &STEP3);
        else
            grader_skip(tc[0], SCHEDULE_SKIP);
        grader_add_timed_ctx(s, "speed", ring_speed, "speed: 256 MiB a device, the ring on the "
                             "copy engines against allreduce_host", 240, &STEP3);
    }
    if (grader_step(4, "a data-parallel step")) {
        static char t[NDP][112];
        static const char *tt[NDP];
        int nt = emu ? NDP : 1;
        for (int i = 0; i < nt; i++) {
            struct dp_case c = dp_case_here(i);
            snprintf(t[i], sizeof t[i], "correct: %d device%s, %d layer%s of %d x %d, batch %d",
                     c.n, c.n == 1 ? "" : "s", c.layers, c.layers == 1 ? "" : "s", c.rows,
                     c.cols, c.batch);
            tt[i] = t[i];
        }
        grader_add(s, "correct", dp_correct, tt, nt, 120);
        static const char *te[] = { "errors: NULL model, inputs and outputs" };
        if (grade_sanitizing())
            grader_skip(te[0], SANITIZE_SKIP);
        else
            grader_add(s, "errors", dp_errors, te, 1, 60);
        static const char *tc[] = { "concept: each all-reduce after its GEMMs, each bucket "
                                    "reused after its all-reduces, the next GEMM free" };
        if (emu)
            grader_add(s, "concept", dp_concept, tc, 1, 60);
        else
            grader_skip(tc[0], SCHEDULE_SKIP);
        grader_add_timed(s, "speed", dp_speed, "speed: 8 layers of 2048 x 2048, the step "
                         "against the longer of its GEMMs and its all-reduces alone", 240);
    }
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
