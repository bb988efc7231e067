/* 09-occupancy.c: the grader of chapter 09, occupancy and cross-architecture tuning.
 *
 *   grade            the ladder, a step at a time (GRADE_STEP=k grades step k alone):
 *                      step 1  blocks_per_sm   an occupancy calculator: exact against the CUDA
 *                                              toolkit's own calculator (cuda_occupancy.h) on 37
 *                                              kernels on each of four devices' limits (H200,
 *                                              A100, L4, T4), and against the runtime's
 *                                              cudaOccupancyMaxActiveBlocksPerMultiprocessor for
 *                                              the real kernels of occupancy_kernels.cu (on a
 *                                              GPU, its own; on the CPU backend, under each
 *                                              EMU_DEVICE profile), on both backends
 *                      step 2  stream_sum,     Little's law, on a GPU only: the exact sum and the
 *                              knee_bytes_per_sm grid; 4 loads a thread in flight at least 2x
 *                                              the bandwidth of 1, a float4 2x a float; the
 *                                              bandwidth over 1 to 128 KB in flight an SM, and
 *                                              the prediction within 2x of its knee
 *                      step 3  budget_choose,  a launcher that reads its budget: on the CPU
 *                              matmul_budget   backend under each EMU_DEVICE profile (on a GPU,
 *                                              its own) a choice the device holds and a correct
 *                                              result; every row of the table correct; on a GPU
 *                                              within 10% of the fastest row at 4096^3
 *                      step 4  slice_open      smaller GPUs inside the GPU, on a GPU only: slices
 *                                              of 8, 16, 32 and 64 SMs granted as asked, and a
 *                                              kernel on a slice's stream on no more SMs than
 *                                              its slice holds (%smid); a copy on 8 SMs at
 *                                              least 2x the time of one on all of them
 *   grade --bench F  the calculator's table; on a GPU, steps 2 to 4 measured (see bench())
 *
 * The truth of step 1 is cudaOccMaxActiveBlocksPerMultiprocessor from cuda_occupancy.h, the
 * header-only calculator the CUDA toolkit ships in $(CUDA_HOME)/include (it is C as well as C++:
 * its C++ parts are behind __cplusplus, and C users zero its structures): the same rules the
 * runtime applies, with the device's limits filled in from OCC_DEVICES. The learner's code runs
 * in a runner process; the judge computes the truth and compares (grade.h). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_occupancy.h>
#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "flow.h"
#include "gemm_family.h"
#include "grade.h"
#include "occupancy.h"
#ifndef HARNESS_EMU
#include "blas.h"
#include "../chapters/04-shared-memory-tiling/tiled.h" /* chapter 04's ladder, for step 4's bench */
#endif

#define CHAPTER "09-occupancy"
#define KIB ((size_t)1024)

/* ---- step 1: the configurations ------------------------------------------------------------
 *
 * Each names the rule it exercises (its `what`, which a wrong answer reports, so a learner sees
 * which rule they missed). The same 37 kernels go to each of the four devices: a limit that
 * does not bind on one binds on another (the T4's 1024 threads and 16 blocks an SM, the L4's
 * 100 KiB). */
struct config {
    const char *what;
    int threads, regs;
    size_t smem_static, smem_dynamic;
    size_t max_dynamic;      /* 0: the default, 48 KiB - static; else opted in to this */
    int carveout;            /* -1: no preference */
};

static const struct config CONFIGS[] = {
    /* warps an SM: 64 on 9.0 and 8.0, 48 on 8.9, 32 on 7.5 */
    { "warps",              1024, 16, 0, 0, 0, -1 },
    { "warps",               768, 24, 0, 0, 0, -1 },
    { "warps",               512, 32, 0, 0, 0, -1 },
    /* a block that is not whole warps takes whole warp slots */
    { "partial warps",        33, 16, 0, 0, 0, -1 },
    { "partial warps",       100, 16, 0, 0, 0, -1 },
    { "partial warps",       200, 24, 0, 0, 0, -1 },
    { "partial warps",      1000, 16, 0, 0, 0, -1 },
    /* tiny blocks: the block slots bind, not the warps */
    { "block slots",          32, 16, 0, 0, 0, -1 },
    { "block slots",          64, 20, 0, 0, 0, -1 },
    { "block slots",          32, 32, 1024, 0, 0, -1 },
    /* registers, multiples of 8 a thread: whole units of 256 a warp */
    { "registers",           256, 64, 0, 0, 0, -1 },
    { "registers",           256, 128, 0, 0, 0, -1 },
    { "registers",           256, 255, 0, 0, 0, -1 },
    { "registers",           128, 96, 0, 0, 0, -1 },
    /* registers that are not a multiple of 8: a warp's 32 x regs round up to 256 */
    { "odd registers",       128, 37, 0, 0, 0, -1 },
    { "odd registers",       128, 41, 0, 0, 0, -1 },
    { "odd registers",        64, 45, 0, 0, 0, -1 },
    { "odd registers",       192, 100, 0, 0, 0, -1 },
    /* a warp's registers come from one quarter of the SM's file */
    { "register quarters",    96, 40, 0, 0, 0, -1 },
    { "register quarters",   352, 184, 0, 0, 0, -1 },
    { "register quarters",   160, 72, 0, 0, 0, -1 },
    /* the driver keeps 1 KiB of every block's shared memory from 8.0 on */
    { "shared reservation",  128, 32, 0, 32 * KIB, 0, -1 },
    { "shared reservation",  256, 32, 0, 45 * KIB, 0, -1 },
    { "shared reservation",  128, 32, 16 * KIB, 16 * KIB, 0, -1 },
    /* shared memory comes in units of 128 bytes (256 on 7.x) */
    { "shared units",         64, 32, 0, 10000, 0, -1 },
    { "shared units",         32, 16, 500, 6500, 0, -1 },
    { "shared units",         32, 16, 0, 5400, 0, -1 },
    /* more than 48 KiB needs the kernel's opt-in, and the device's ceiling */
    { "opt-in",              256, 32, 0, 100 * KIB, 100 * KIB, -1 },
    { "opt-in",              256, 64, 0, 60 * KIB, 60 * KIB, -1 },
    { "opt-in",              512, 32, 0, 200 * KIB, 227 * KIB, -1 },
    /* a launch with more dynamic shared memory than the kernel opted in to cannot run */
    { "dynamic over its limit", 256, 32, 0, 64 * KIB, 0, -1 },
    { "dynamic over its limit", 256, 32, 8 * KIB, 41 * KIB, 0, -1 },
    /* the carveout: the share of the unified L1 the kernel prefers as shared memory */
    { "carveout",            128, 32, 0, 16 * KIB, 0, 50 },
    { "carveout",            256, 32, 0, 40 * KIB, 0, 0 },
    { "carveout",            128, 32, 0, 8 * KIB, 0, 25 },
    /* blocks that do not fit at all */
    { "does not fit",       1025, 16, 0, 0, 0, -1 },
    { "does not fit",       1024, 255, 0, 0, 0, -1 },
};
#define NCONFIGS ((int)(sizeof CONFIGS / sizeof CONFIGS[0]))

static struct occ_kernel kernel_of(const struct config *c)
{
    struct occ_kernel k = { c->threads, c->regs, c->smem_static, c->smem_dynamic,
                            c->max_dynamic ? c->max_dynamic : 48 * KIB - c->smem_static,
                            c->carveout };
    return k;
}

/* ---- the truth: cuda_occupancy.h --------------------------------------------------------- */

static cudaOccDeviceProp occ_prop_of(const struct occ_device *d)
{
    cudaOccDeviceProp p;
    memset(&p, 0, sizeof p);
    p.computeMajor = d->cc_major;
    p.computeMinor = d->cc_minor;
    p.maxThreadsPerBlock = d->max_threads_per_block;
    p.maxThreadsPerMultiprocessor = d->max_threads_per_sm;
    p.regsPerBlock = d->regs_per_block;
    p.regsPerMultiprocessor = d->regs_per_sm;
    p.warpSize = d->warp_size;
    p.sharedMemPerBlock = d->smem_per_block;
    p.sharedMemPerMultiprocessor = d->smem_per_sm;
    p.numSms = d->sms;
    p.sharedMemPerBlockOptin = d->smem_per_block_optin;
    p.reservedSharedMemPerBlock = d->smem_reserved_per_block;
    return p;
}

/* The function as the runtime describes a kernel to the calculator (what cuda_occupancy.h's C++
 * constructor from cudaFuncAttributes makes): the per-function opt-in limit in force, one
 * barrier. */
static cudaOccFuncAttributes occ_attr_of(const struct occ_kernel *k)
{
    cudaOccFuncAttributes a;
    memset(&a, 0, sizeof a);
    a.maxThreadsPerBlock = INT_MAX;
    a.numRegs = k->regs;
    a.sharedSizeBytes = k->smem_static;
    a.partitionedGCConfig = PARTITIONED_GC_OFF;
    a.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
    a.maxDynamicSharedSizeBytes = k->smem_max_dynamic;
    a.numBlockBarriers = 1;
    return a;
}

/* The toolkit's answer, with what limits it; the grader's own configurations must all be valid
 * input (an error here is the grader's bug: it ends the test, or the table, saying so). */
static int truth(const struct occ_kernel *k, const struct occ_device *d, cudaOccResult *r)
{
    cudaOccDeviceProp p = occ_prop_of(d);
    cudaOccFuncAttributes a = occ_attr_of(k);
    cudaOccDeviceState s;
    memset(&s, 0, sizeof s);
    s.cacheConfig = CACHE_PREFER_NONE;
    s.carveoutConfig = k->carveout;
    memset(r, 0, sizeof *r);
    cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(r, &p, &a, &s, k->threads,
                                                             k->smem_dynamic);
    if (e != CUDA_OCC_SUCCESS) {
        fprintf(stderr, "the grader's configuration (%d threads, %d registers) is not valid input "
                        "to cuda_occupancy.h on %s: error %d\n", k->threads, k->regs, d->name,
                (int)e);
        exit(EXIT_FAILURE); /* the grader's own bug: fails the test (or the table) saying so */
    }
    return r->activeBlocksPerMultiprocessor;
}

/* "6" or "-" (no limit from it) */
static const char *limit_text(int v, char *buf, size_t len)
{
    if (v == INT_MAX)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%d", v);
    return buf;
}

static void describe_kernel(const struct occ_kernel *k, char *buf, size_t len)
{
    int used = snprintf(buf, len, "%d threads x %d registers", k->threads, k->regs);
    if (k->smem_static || k->smem_dynamic)
        used += snprintf(buf + used, len - (size_t)used, ", shared %zu static + %zu dynamic B",
                         k->smem_static, k->smem_dynamic);
    if (k->smem_max_dynamic != 48 * KIB - k->smem_static && used < (int)len)
        used += snprintf(buf + used, len - (size_t)used, " (opted in to %zu)",
                         k->smem_max_dynamic);
    if (k->carveout >= 0 && used < (int)len)
        snprintf(buf + used, len - (size_t)used, ", carveout %d%%", k->carveout);
}

/* What to look at, for the first rule a learner got wrong. */
static const char *hint_for(const char *what)
{
    static const struct { const char *what, *hint; } HINTS[] = {
        { "warps", "an SM holds max_threads_per_sm / warp_size warps; a block takes its warps" },
        { "partial warps", "a block of 33 threads takes two warp slots: round a block's threads "
                           "up to whole warps before dividing" },
        { "block slots", "however small the block, an SM holds at most max_blocks_per_sm of "
                         "them" },
        { "registers", "a warp takes regs x 32 registers, rounded up to reg_alloc_unit (256)" },
        { "odd registers", "37 registers a thread is 1184 a warp, which the SM allocates as 1280 "
                           "(5 units of 256): round a warp's registers up before dividing" },
        { "register quarters", "each warp's registers come from one of the SM's "
                               "sub_partitions quarters of the file: count the warps one "
                               "quarter holds (regs_per_sm / 4 over a warp's registers, rounded "
                               "down), times four, then divide by the block's warps" },
        { "shared reservation", "from compute capability 8.0 on the driver keeps "
                                "smem_reserved_per_block (1 KiB) of every block's shared memory: "
                                "add it to what the block asks for" },
        { "shared units", "shared memory is allocated in units of smem_alloc_unit bytes (128, "
                          "or 256 on 7.x): round static + dynamic + reserved up to it" },
        { "opt-in", "a block may have up to smem_per_block_optin (plus the reserve) once the "
                    "kernel opted in; a device whose ceiling is lower cannot run it at all (0)" },
        { "dynamic over its limit", "a launch with more dynamic shared memory than the kernel's "
                                    "smem_max_dynamic fails: 0 blocks" },
        { "carveout", "the SM's shared memory is set to the smallest of smem_configs at least "
                      "carveout% of smem_per_sm (all of smem_per_sm when carveout is -1), and "
                      "to the smallest that holds one block when that is not enough" },
        { "does not fit", "a block over max_threads_per_block threads, or whose warps need more "
                          "registers than regs_per_block, cannot run: 0" },
    };
    for (size_t i = 0; i < sizeof HINTS / sizeof HINTS[0]; i++)
        if (strcmp(HINTS[i].what, what) == 0)
            return HINTS[i].hint;
    return "";
}

static int EXACT;

START_TEST(exact)
{
    grade_split(); /* blocks_per_sm in a runner, the truth and the checks here (grade.h) */
    int slot = EXACT + _i;
    const struct occ_device *d = &OCC_DEVICES[_i];
    int got[NCONFIGS];
    memset(got, 0, sizeof got);
    if (grade_role() != GRADE_JUDGE)
        for (int c = 0; c < NCONFIGS; c++) {
            struct occ_kernel k = kernel_of(&CONFIGS[c]);
            got[c] = blocks_per_sm(&k, d);
        }
    grade_exchange_bytes(got, sizeof got);
    if (grade_role() != GRADE_RUNNER) {
        int wrong = 0, starter = 0, first = -1;
        char whats[256] = "";
        cudaOccResult first_r;
        memset(&first_r, 0, sizeof first_r);
        for (int c = 0; c < NCONFIGS; c++) {
            struct occ_kernel k = kernel_of(&CONFIGS[c]);
            cudaOccResult r;
            int want = truth(&k, d, &r);
            starter += got[c] == -1;
            if (got[c] == want)
                continue;
            if (wrong++ == 0) {
                first = c;
                first_r = r;
            }
            if (!strstr(whats, CONFIGS[c].what) && strlen(whats) + strlen(CONFIGS[c].what) + 3 <
                                                        sizeof whats) {
                if (*whats)
                    strcat(whats, ", ");
                strcat(whats, CONFIGS[c].what);
            }
        }
        if (starter == NCONFIGS) {
            grade_hint(slot, "the starter's -1 is still there: write blocks_per_sm (the TODO in "
                             "step1_occupancy.cu)");
            ck_abort_msg("%s: blocks_per_sm returned -1 on all %d kernels: the starter, not yet "
                         "written", d->name, NCONFIGS);
        }
        if (wrong) {
            struct occ_kernel k = kernel_of(&CONFIGS[first]);
            char desc[160], lr[16], lw[16], ls[16];
            describe_kernel(&k, desc, sizeof desc);
            grade_hint(slot, "%s", hint_for(CONFIGS[first].what));
            ck_abort_msg("%s (%d.%d): %d of %d wrong, in: %s; first [%s] %s: yours %d, want %d "
                         "(registers allow %s, warps %s, shared memory %s, block slots %d)",
                         d->name, d->cc_major, d->cc_minor, wrong, NCONFIGS, whats,
                         CONFIGS[first].what, desc, got[first],
                         first_r.activeBlocksPerMultiprocessor,
                         limit_text(first_r.blockLimitRegs, lr, sizeof lr),
                         limit_text(first_r.blockLimitWarps, lw, sizeof lw),
                         limit_text(first_r.blockLimitSharedMem, ls, sizeof ls),
                         first_r.blockLimitBlocks);
        }
        grade_note(slot, "all %d kernels exact", NCONFIGS);
        grade_summary("exact on %d kernels x %d devices", NCONFIGS, OCC_NUM_DEVICES);
    }
    grade_split_end();
}
END_TEST

/* ---- step 1, the runtime's answer for real kernels ---------------------------------------------
 *
 * What cudaFuncGetAttributes says of each kernel of occupancy_kernels.cu (registers the compiler
 * chose, its static shared memory, its dynamic limit after any opt-in) goes to your blocks_per_sm
 * with the device this runs on (occ_device_query); the runtime's
 * cudaOccupancyMaxActiveBlocksPerMultiprocessor is the truth. On a GPU, the GPU it runs on; on
 * the CPU backend, once under each of its device profiles (EMU_DEVICE=h200, a100, l4, t4, set in
 * the test's own process before its first CUDA call), whose registers a kernel are ptxas's for
 * that profile's architecture (harness/emu/README.md, "Kernel resources"). */
static const char *const RUNTIME_PROFILES[] = { "h200", "a100", "l4", "t4" };
#define NRUNTIME_PROFILES ((int)(sizeof RUNTIME_PROFILES / sizeof RUNTIME_PROFILES[0]))

static struct occ_kernel real_kernel(const struct occ_real_kernel *r)
{
    if (r->opt_in)
        CUDA_CHECK(cudaFuncSetAttribute(r->fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)r->opt_in));
    struct cudaFuncAttributes a;
    CUDA_CHECK(cudaFuncGetAttributes(&a, r->fn));
    struct occ_kernel k = { r->threads, a.numRegs, a.sharedSizeBytes, r->dynamic,
                            (size_t)a.maxDynamicSharedSizeBytes, -1 };
    return k;
}

static int RUNTIME;
#define MAX_REAL 32
START_TEST(runtime)
{
    int on_gpu = strcmp(grader_device()->backend, "cuda") == 0;
    if (!on_gpu)
        setenv("EMU_DEVICE", RUNTIME_PROFILES[_i], 1); /* before any CUDA call, in both roles */
    grade_split(); /* blocks_per_sm in a runner, the runtime's answer here */
    int slot = RUNTIME + _i;
    int n = OCC_NUM_REAL_KERNELS < MAX_REAL ? OCC_NUM_REAL_KERNELS : MAX_REAL;
    int got[MAX_REAL];
    int known = 0;
    memset(got, 0, sizeof got);
    if (grade_role() != GRADE_JUDGE) {
        struct occ_device d;
        known = occ_device_query(&d) == 0;
        for (int i = 0; known && i < n; i++) {
            struct occ_kernel k = real_kernel(&OCC_REAL_KERNELS[i]);
            got[i] = blocks_per_sm(&k, &d);
        }
    }
    grade_exchange_bytes(&known, sizeof known);
    grade_exchange_bytes(got, sizeof got);
    if (grade_role() != GRADE_RUNNER) {
        struct cudaDeviceProp prop;
        CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
        ck_assert_msg(known, "%s (%d.%d): the device tables of devices.cu do not know this "
                      "compute capability", prop.name, prop.major, prop.minor);
        int wrong = 0, first = -1, first_want = 0;
        struct occ_kernel first_k;
        memset(&first_k, 0, sizeof first_k);
        for (int i = 0; i < n; i++) {
            const struct occ_real_kernel *r = &OCC_REAL_KERNELS[i];
            struct occ_kernel k = real_kernel(r);
            int want = 0;
            CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&want, r->fn, r->threads,
                                                                     r->dynamic));
            if (got[i] != want && wrong++ == 0) {
                first = i;
                first_want = want;
                first_k = k;
            }
        }
        if (wrong) {
            char desc[160];
            describe_kernel(&first_k, desc, sizeof desc);
            ck_abort_msg("%s: %d of %d real kernels wrong; first %s (%s): yours %d, the "
                         "runtime's %d", prop.name, wrong, n, OCC_REAL_KERNELS[first].name, desc,
                         got[first], first_want);
        }
        grade_note(slot, "%d kernels as the runtime says on %s", n, prop.name);
    }
    grade_split_end();
}
END_TEST

/* ---- registration ---------------------------------------------------------------------------- */

static void add_step1(Suite *s, int on_gpu)
{
    static char titles[OCC_NUM_DEVICES][96];
    const char *t[OCC_NUM_DEVICES];
    for (int i = 0; i < OCC_NUM_DEVICES; i++) {
        snprintf(titles[i], sizeof titles[i], "exact on %s (%d.%d): %d kernels against "
                 "cuda_occupancy.h", OCC_DEVICES[i].name, OCC_DEVICES[i].cc_major,
                 OCC_DEVICES[i].cc_minor, NCONFIGS);
        t[i] = titles[i];
    }
    EXACT = grader_add(s, "exact", exact, t, OCC_NUM_DEVICES, 60);
    static char rtitles[NRUNTIME_PROFILES][128];
    const char *rt[NRUNTIME_PROFILES];
    int nrt = on_gpu ? 1 : NRUNTIME_PROFILES;
    for (int i = 0; i < nrt; i++) {
        snprintf(rtitles[i], sizeof rtitles[i], "runtime: real kernels against "
                 "cudaOccupancyMaxActiveBlocksPerMultiprocessor%s%s", on_gpu ? "" : ", EMU_DEVICE=",
                 on_gpu ? "" : RUNTIME_PROFILES[i]);
        rt[i] = rtitles[i];
    }
    RUNTIME = grader_add(s, "runtime", runtime, rt, nrt, 60);
}

/* ---- step 2: Little's law (a GPU only) --------------------------------------------------------
 *
 * The inputs are small integers (-4 to 4), so every order of summation gives the exact sum in
 * fp32 a thread and in double across them: the check is equality. The grid is read from what
 * the launcher launched (launches.h): blocks_per_sm blocks for each SM, of `threads` threads.
 * Then the measurements: a read stream of INFLIGHT_N floats (512 MiB, over eight times the
 * H200's L2, and the L2 flushed before every timed run), timed at each configuration of a sweep
 * of the bytes in flight an SM; and the load latency of latency.cu. Both in the runner, whose
 * numbers the judge bounds before it uses them. */
static const struct inflight SUM_CONFIGS[] = {
    { 1, 1, 32, 1 }, { 2, 2, 64, 3 }, { 4, 4, 256, 2 }, { 8, 4, 128, 1 }, { 8, 1, 96, 2 },
    { 4, 2, 1024, 1 }, { 1, 4, 512, 4 },
};
#define NSUM_CONFIGS ((int)(sizeof SUM_CONFIGS / sizeof SUM_CONFIGS[0]))
static const size_t SUM_SIZES[] = { 1, 3, 4097, 1000003, (size_t)1 << 22 };
#define NSUM_SIZES ((int)(sizeof SUM_SIZES / sizeof SUM_SIZES[0]))

#define INFLIGHT_N ((size_t)1 << 27)

/* The knee's sweep: float4 loads, from 1 to 128 KB in flight an SM, mostly by the warps of one
 * block an SM, each step about 1.4x the one before. */
static const struct inflight SWEEP[] = {
    { 1, 4, 64, 1 },  { 2, 4, 64, 1 },  { 2, 4, 128, 1 }, { 2, 4, 192, 1 }, { 4, 4, 128, 1 },
    { 4, 4, 192, 1 }, { 4, 4, 256, 1 }, { 4, 4, 384, 1 }, { 4, 4, 512, 1 }, { 4, 4, 768, 1 },
    { 4, 4, 512, 2 }, { 4, 4, 768, 2 }, { 4, 4, 512, 4 },
};
#define NSWEEP ((int)(sizeof SWEEP / sizeof SWEEP[0]))
#define KNEE_FRACTION 0.8   /* the knee: where the curve first reaches 80% of its top */
#define KNEE_WITHIN 2.0     /* the prediction within 2x of it */
#define INFLIGHT_GAIN 2.0   /* 4 loads over 1, and a float4 over a float, at least this */

/* Small integers into a guarded input, from r: the same values in the judge and the runner. */
static double fill_small_ints(float *d_in, size_t n, struct rng *r)
{
    float *h = xmalloc(n * sizeof *h);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        h[i] = (float)((int)(rng_next(r) % 9) - 4);
        if (h[i] == 0.0f)
            h[i] = 1.0f; /* never zeros: a value dropped must change the sum */
        sum += h[i];
    }
    to_device(d_in, h, n * sizeof *h);
    free(h);
    return sum;
}

static void describe_inflight(const struct inflight *c, char *buf, size_t len)
{
    snprintf(buf, len, "%d load%s of %d float%s a thread, %d threads, %d block%s an SM (%.0f B "
             "in flight an SM)", c->loads, c->loads == 1 ? "" : "s", c->vec, c->vec == 1 ? "" : "s",
             c->threads, c->blocks_per_sm, c->blocks_per_sm == 1 ? "" : "s",
             inflight_bytes_per_sm(c));
}

static int SUM_CORRECT;

START_TEST(sum_correct)
{
    int slot = SUM_CORRECT;
    grade_split(); /* stream_sum in a runner, the checks here (grade.h) */
    struct rng r = grade_rng(slot);
    int sms = grader_device()->sms;
    for (int z = 0; z < NSUM_SIZES; z++) {
        size_t n = SUM_SIZES[z];
        float *d_in = dbuf_alloc_input(n * sizeof(float), "d_in");
        double *d_sum = dbuf_alloc(sizeof(double), "d_sum");
        double want = fill_small_ints(d_in, n, &r);
        for (int c = 0; c < NSUM_CONFIGS; c++) {
            const struct inflight *cf = &SUM_CONFIGS[c];
            struct launch_log log;
            memset(&log, 0, sizeof log);
            dbuf_poison(d_sum);
            if (grade_role() != GRADE_JUDGE) {
                launches_begin();
                stream_sum(d_in, n, d_sum, cf);
                gpu_sync();
                launches_end(&log);
            }
            grade_exchange_buffers();
            grade_exchange_bytes(&log, sizeof log);
            launches_sanitize(&log);
            if (grade_role() == GRADE_RUNNER)
                continue;
            char desc[160], guard[256];
            describe_inflight(cf, desc, sizeof desc);
            if (dbuf_check_guards(d_sum, guard, sizeof guard) != 0)
                ck_abort_msg("n = %zu, %s: %s", n, desc, guard);
            double got = 0.0;
            to_host(&got, d_sum, sizeof got);
            if (got != want) {
                grade_hint(slot, "%s", got != got ? "*d_sum is still NaN, the poison: set it "
                           "(cudaMemsetAsync on the default stream, before the kernel) and add "
                           "every warp's sum to it" : "a sum off by some elements: the tail "
                           "past the last whole batch of loads, or the n % vec floats past "
                           "the last vector, is not summed, or summed twice");
                ck_abort_msg("n = %zu, %s: sum %.17g, want %.17g", n, desc, got, want);
            }
            int found = 0;
            for (int i = 0; log.recorded && i < log.n; i++)
                found |= log.r[i].grid[0] == (unsigned)(cf->blocks_per_sm * sms) &&
                          log.r[i].block[0] == (unsigned)cf->threads;
            if (log.recorded && !found) {
                char text[GRADE_TEXT];
                launches_describe(&log, 0, "", sms, text, sizeof text);
                grade_hint(slot, "the grid is blocks_per_sm blocks for each of the device's SMs "
                           "(cudaDevAttrMultiProcessorCount), of c->threads threads: the bytes "
                           "in flight an SM are what the configuration says only then");
                ck_abort_msg("%s: the sum is right, but no launch of %d blocks of %d threads; "
                             "launched: %s", desc, cf->blocks_per_sm * sms, cf->threads, text);
            }
        }
        dbuf_free(d_in);
        dbuf_free(d_sum);
    }
    if (grade_role() != GRADE_RUNNER)
        grade_note(slot, "exact on %d sizes x %d configurations, grids as configured",
                   NSUM_SIZES, NSUM_CONFIGS);
    grade_split_end();
}
END_TEST

/* One timed read stream: what gpu_time runs. */
struct stream_run {
    const float *d_in;
    double *d_sum;
    const struct inflight *c;
};

static void run_stream(void *ctx)
{
    const struct stream_run *sr = ctx;
    stream_sum(sr->d_in, INFLIGHT_N, sr->d_sum, sr->c);
}

/* The bandwidth of each configuration of cs (GB/s) into gbs, timed in the runner and sent to
 * the judge; the sum of every configuration's last timed run checked in the judge. */
static void time_streams(const struct inflight *cs, int n, double *gbs, int slot)
{
    struct rng r = grade_rng(slot);
    float *d_in = dbuf_alloc_input(INFLIGHT_N * sizeof(float), "d_in");
    double *d_sum = dbuf_alloc(sizeof(double), "d_sum");
    double want = fill_small_ints(d_in, INFLIGHT_N, &r);
    for (int i = 0; i < n; i++) {
        struct stream_run sr = { d_in, d_sum, &cs[i] };
        struct timing t = { 0 };
        dbuf_poison(d_sum);
        if (grade_role() != GRADE_JUDGE)
            t = gpu_time(run_stream, &sr, 2, 10);
        grade_exchange_timing(&t);
        grade_exchange_buffers();
        gbs[i] = t.median_ms > 0 ? INFLIGHT_N * sizeof(float) / (t.median_ms * 1e6) : 0.0;
        if (grade_role() == GRADE_RUNNER)
            continue;
        double got = 0.0;
        to_host(&got, d_sum, sizeof got);
        char desc[160];
        describe_inflight(&cs[i], desc, sizeof desc);
        ck_assert_msg(got == want, "n = %zu, %s, after timing: sum %.17g, want %.17g",
                      INFLIGHT_N, desc, got, want);
        ck_assert_msg(t.median_ms > 0, "%s: no time measured", desc);
    }
    dbuf_free(d_in);
    dbuf_free(d_sum);
}

static int INFLIGHT;

START_TEST(in_flight)
{
    int slot = INFLIGHT;
    grade_split(); /* the stream timed in a runner, judged here */
    /* Each pair puts 1 KB and 4 KB in flight an SM. Below the knee bandwidth grows with the
     * bytes in flight (Little's law), so 4 KB gains min(4, B L / 1 KB) over 1 KB, B an SM's
     * share of the bandwidth and L a load's latency: at least 2x wherever B L is 2 KB or more
     * (about 10 KB on an H200: 4 TB/s over 132 SMs, a load of 336 ns unloaded). The loads'
     * pair at 256 threads, 4 against 16 KB, measured 2.1x on an H100, whose 16 KB is near its
     * knee, and would fail a correct kernel on a GPU of less bandwidth an SM. */
    static const struct inflight PAIRS[] = {
        { 1, 4, 64, 1 }, { 4, 4, 64, 1 },   /* 4 loads in flight over 1 */
        { 1, 1, 256, 1 }, { 1, 4, 256, 1 }, /* a float4 over a float */
    };
    double gbs[4];
    time_streams(PAIRS, 4, gbs, slot);
    if (grade_role() != GRADE_RUNNER) {
        double loads = gbs[1] / gbs[0], vec = gbs[3] / gbs[2];
        grade_note(slot, "at 1 block of 64 threads an SM: 4 float4 loads a thread %.0f GB/s = "
                   "%.2fx 1 (needs %.1fx); at 1 block of 256: a float4 %.0f GB/s = %.2fx a "
                   "float (needs %.1fx)", gbs[1], loads, INFLIGHT_GAIN, gbs[3], vec,
                   INFLIGHT_GAIN);
        if (loads < INFLIGHT_GAIN)
            grade_hint(slot, "the loads of a batch are in flight together only if none waits "
                       "for another: load all c->loads values into registers first (an "
                       "unrolled loop: LOADS a template parameter), and add them only after "
                       "the last load");
        ck_assert_msg(loads >= INFLIGHT_GAIN, "loads in flight: 4 float4 loads a thread "
                      "%.0f GB/s, 1 load %.0f GB/s: %.2fx (needs %.1fx)", gbs[1], gbs[0], loads,
                      INFLIGHT_GAIN);
        if (vec < INFLIGHT_GAIN)
            grade_hint(slot, "c->vec floats a load: one float4 (or float2) load instruction, "
                       "not four float loads");
        ck_assert_msg(vec >= INFLIGHT_GAIN, "vector width: a float4 a thread %.0f GB/s, a "
                      "float %.0f GB/s: %.2fx (needs %.1fx)", gbs[3], gbs[2], vec,
                      INFLIGHT_GAIN);
        grade_summary("%.2fx with 4 loads in flight, %.2fx with a float4", loads, vec);
    }
    grade_split_end();
}
END_TEST

/* Where the curve first reaches `fraction` of its top, in bytes an SM, interpolated between
 * the two configurations around it on a log scale of the bytes; the first configuration's
 * bytes when it is there already. */
static double knee_of(const double *bytes, const double *gbs, int n, double top,
                      double fraction)
{
    double level = fraction * top;
    if (gbs[0] >= level)
        return bytes[0];
    for (int i = 1; i < n; i++)
        if (gbs[i] >= level) {
            double f = (level - gbs[i - 1]) / (gbs[i] - gbs[i - 1]);
            return exp(log(bytes[i - 1]) + f * (log(bytes[i]) - log(bytes[i - 1])));
        }
    return bytes[n - 1];
}

static int KNEE;

START_TEST(knee)
{
    int slot = KNEE;
    grade_split(); /* the curve and the latency measured in a runner, judged here */
    double gbs[NSWEEP], bytes[NSWEEP];
    time_streams(SWEEP, NSWEEP, gbs, slot);
    double top = 0.0;
    for (int i = 0; i < NSWEEP; i++) {
        bytes[i] = inflight_bytes_per_sm(&SWEEP[i]);
        if (gbs[i] > top)
            top = gbs[i];
    }
    /* the latency and your prediction, from the runner: {latency ns, predicted bytes} */
    double got[2] = { 0.0, 0.0 };
    int sms = grader_device()->sms;
    if (grade_role() != GRADE_JUDGE) {
        got[0] = load_latency_ns();
        got[1] = knee_bytes_per_sm(top, got[0], sms);
    }
    grade_exchange_bytes(got, sizeof got);
    if (grade_role() != GRADE_RUNNER) {
        double latency = got[0], predicted = got[1];
        ck_assert_msg(latency > 50.0 && latency < 1e5, "the load latency measured %g ns: not a "
                      "latency of device memory (latency.cu is given: is it changed?)", latency);
        double measured = knee_of(bytes, gbs, NSWEEP, top, KNEE_FRACTION);
        char curve[GRADE_TEXT];
        int used = 0;
        for (int i = 0; i < NSWEEP && used < (int)sizeof curve - 24; i++)
            used += snprintf(curve + used, sizeof curve - (size_t)used, "%s%.0fK %.0f",
                             i ? ", " : "", bytes[i] / 1024, gbs[i]);
        grade_note(slot, "predicted %.1f KB an SM, knee measured at %.1f KB (%.0f%% of the top, "
                   "%.0f GB/s; load latency %.0f ns; GB/s by KB in flight an SM: %s)",
                   predicted / 1024, measured / 1024, 100 * KNEE_FRACTION, top, latency, curve);
        double ratio = predicted / measured;
        if (!(ratio >= 1.0 / KNEE_WITHIN && ratio <= KNEE_WITHIN))
            grade_hint(slot, "Little's law: bytes in flight = bandwidth x latency, over the "
                       "device's SMs for a share an SM; GB/s x ns is bytes (1e9 x 1e-9)");
        ck_assert_msg(ratio >= 1.0 / KNEE_WITHIN && ratio <= KNEE_WITHIN,
                      "knee: predicted %.4g bytes an SM from %.0f GB/s and %.0f ns on %d SMs, "
                      "measured %.4g: %.2fx (needs within %.0fx)", predicted, top, latency, sms,
                      measured, ratio, KNEE_WITHIN);
        grade_summary("knee predicted %.1f KB an SM, measured %.1f KB (%.2fx; needs within "
                      "%.0fx)", predicted / 1024, measured / 1024, ratio, KNEE_WITHIN);
    }
    grade_split_end();
}
END_TEST

static void add_step2(Suite *s, int on_gpu)
{
    static const char *const correct_title[] = { "correct: exact sums, every loads and vec, "
                                                 "odd n; the grid as configured" };
    static const char *const why = "graded on a GPU only: it measures the bandwidth and the "
                                   "load latency of device memory, which the CPU backend does "
                                   "not have";
    static const char *const inflight_title = "in flight: 4 loads a thread over 1, a float4 "
                                              "over a float";
    static const char *const knee_title = "knee: the prediction within 2x of the measured knee";
    if (!on_gpu) {
        grader_skip(correct_title[0], why);
        grader_skip(inflight_title, why);
        grader_skip(knee_title, why);
        return;
    }
    SUM_CORRECT = grader_add(s, "sum_correct", sum_correct, correct_title, 1, 120);
    INFLIGHT = grader_add_timed(s, "in_flight", in_flight, inflight_title, 120);
    KNEE = grader_add_timed(s, "knee", knee, knee_title, 180);
}

/* ---- step 3: a launcher that reads its budget ---------------------------------------------
 *
 * fits: budget_choose for each of FIT_SHAPES, in the runner; in the judge, what the device says
 * of the row it names: its shared memory against sharedMemPerBlockOptin, and the blocks an SM
 * the runtime's occupancy calculator gives it (after the opt-in) against the blocks its
 * __launch_bounds__ promise. correct: matmul_budget on BUDGET_SHAPES under each profile (on the
 * CPU backend; on a GPU, the GPU's shapes), and each row of the table on ROW_SHAPES. speed: each
 * row the device holds, and matmul_budget, at 4096^3. */
static const struct gemm_shape FIT_SHAPES[] = {
    { 4096, 4096, 4096 }, { 1024, 1024, 1024 }, { 8192, 64, 8192 }, { 130, 257, 70 },
    { 1, 1, 1 },
};
#define NFIT_SHAPES ((int)(sizeof FIT_SHAPES / sizeof FIT_SHAPES[0]))

/* 1409 x 1411: 12 x 12 tiles of 128, a block for every SM of every profile, so the chosen row
 * is the largest the profile holds; k = 37 keeps it quick on the CPU */
static const struct gemm_shape BUDGET_CPU_SHAPES[] = {
    { 1, 1, 1 }, { 67, 45, 131 }, { 1409, 37, 1411 },
};
#define NBUDGET_CPU_SHAPES ((int)(sizeof BUDGET_CPU_SHAPES / sizeof BUDGET_CPU_SHAPES[0]))
static const struct gemm_shape BUDGET_GPU_SHAPES[] = {
    { 1, 1, 1 }, { 31, 33, 35 }, { 67, 45, 131 }, { 130, 132, 260 }, { 1000, 999, 1001 },
    { 3001, 517, 37 }, { 2048, 2048, 2048 },
};
static const struct flow_shapes BUDGET_SHAPES = { BUDGET_GPU_SHAPES, BUDGET_GPU_SHAPES, .n = 7 };
/* k = 45 and 260: 3 and 17 steps of 16, 2 and 9 of 32: the ring wraps, the last step partial */
static const struct gemm_shape ROW_SHAPES[] = {
    { 31, 45, 36 }, { 67, 45, 131 }, { 130, 260, 132 },
};
#define NROW_SHAPES ((int)(sizeof ROW_SHAPES / sizeof ROW_SHAPES[0]))
#define MAX_ROWS 16
#define BUDGET_WITHIN 1.10  /* matmul_budget at most 1.10x the time of the fastest row */

static const struct gemm_kind BUDGET_KIND = {
    GEMM_FLOW, .input = GEMM_F32, .sampled = 1,
    .guard_hint = "a store past the end of C: the stores of a tile that hangs over C's edge "
                  "must be bounded by m and n",
    .hint = "a row that fails under one profile only: the launch (a row the profile does not "
            "hold), or the ring of stages (the stage a tile is read from must be the one its "
            "copies went to, and a stage is refilled only after every thread is done with it)",
};

static const char *const BUDGET_PROFILES[] = { "h200", "a100", "l4", "t4" };
#define NBUDGET_PROFILES ((int)(sizeof BUDGET_PROFILES / sizeof BUDGET_PROFILES[0]))

static int nrows(void)
{
    return BUDGET_NUM_CONFIGS < MAX_ROWS ? BUDGET_NUM_CONFIGS : MAX_ROWS;
}

/* The blocks an SM of the current device holds of row c, with its shared memory opted in to;
 * 0 when a block may not have that much here. */
static int row_blocks(const struct budget_config *c)
{
    struct cudaDeviceProp prop;
    int device, blocks = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    if (c->smem_bytes > prop.sharedMemPerBlockOptin)
        return 0;
    if (c->smem_bytes > prop.sharedMemPerBlock)
        CUDA_CHECK(cudaFuncSetAttribute(c->kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)c->smem_bytes));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, c->kernel, c->threads,
                                                             c->smem_bytes));
    return blocks;
}

/* On the CPU backend, test _i runs under profile _i, set before any CUDA call (both roles). */
static void budget_profile(int i)
{
    if (strcmp(grader_device()->backend, "cuda") != 0)
        setenv("EMU_DEVICE", BUDGET_PROFILES[i], 1);
}

static int FITS;

START_TEST(fits)
{
    budget_profile(_i);
    grade_split(); /* budget_choose in a runner, the device's word here */
    int slot = FITS + _i;
    int got[NFIT_SHAPES];
    memset(got, 0, sizeof got);
    if (grade_role() != GRADE_JUDGE)
        for (int j = 0; j < NFIT_SHAPES; j++)
            got[j] = budget_choose(FIT_SHAPES[j].m, FIT_SHAPES[j].k, FIT_SHAPES[j].n);
    grade_exchange_bytes(got, sizeof got);
    if (grade_role() != GRADE_RUNNER) {
        struct cudaDeviceProp prop;
        CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
        char chosen[GRADE_TEXT] = "";
        int used = 0;
        for (int j = 0; j < NFIT_SHAPES; j++) {
            const struct gemm_shape *sh = &FIT_SHAPES[j];
            if (got[j] == -1) {
                grade_hint(slot, "budget_choose returned -1: the TODO in step3_budget.cu, or "
                           "no row was found to fit where the 64x64 one always does");
                ck_abort_msg("%s: budget_choose(%d, %d, %d) = -1: no row chosen", prop.name,
                             sh->m, sh->k, sh->n);
            }
            ck_assert_msg(got[j] >= 0 && got[j] < BUDGET_NUM_CONFIGS, "%s: budget_choose(%d, "
                          "%d, %d) = %d: not a row of BUDGET_CONFIGS (0 to %d)", prop.name,
                          sh->m, sh->k, sh->n, got[j], BUDGET_NUM_CONFIGS - 1);
            const struct budget_config *c = &BUDGET_CONFIGS[got[j]];
            if (c->smem_bytes > prop.sharedMemPerBlockOptin) {
                grade_hint(slot, "a block may have at most sharedMemPerBlockOptin bytes of "
                           "shared memory (cudaDevAttrMaxSharedMemoryPerBlockOptin), opted in "
                           "or not: read it from the device");
                ck_abort_msg("%s: for %dx%dx%d you chose %s, %zu bytes of shared memory a "
                             "block; a block may have %zu here", prop.name, sh->m, sh->k, sh->n,
                             c->name, c->smem_bytes, prop.sharedMemPerBlockOptin);
            }
            int blocks = row_blocks(c);
            int promised = c->min_blocks > 1 ? c->min_blocks : 1;
            if (blocks < promised) {
                grade_hint(slot, "a block that fits is not enough: the SM must hold as many "
                           "blocks as the row's __launch_bounds__ promise (its registers were "
                           "capped for that many), by its shared memory with the driver's "
                           "reserve, its registers and its warps: ask "
                           "cudaOccupancyMaxActiveBlocksPerMultiprocessor, after the opt-in");
                ck_abort_msg("%s: for %dx%dx%d you chose %s; an SM holds %d blocks of it, its "
                             "__launch_bounds__ promise %d", prop.name, sh->m, sh->k, sh->n,
                             c->name, blocks, promised);
            }
            if (used < (int)sizeof chosen - 64)
                used += snprintf(chosen + used, sizeof chosen - (size_t)used, "%s%dx%dx%d %s",
                                 j ? ", " : "", sh->m, sh->k, sh->n, c->name);
        }
        grade_note(slot, "%s", chosen);
    }
    grade_split_end();
}
END_TEST

static int BUDGET_CORRECT;

START_TEST(budget_correct)
{
    budget_profile(_i);
    flow_correct_each(&BUDGET_KIND.kind, BUDGET_CORRECT + _i, BUDGET_CPU_SHAPES,
                      NBUDGET_CPU_SHAPES, (flow_fn)matmul_budget, "matmul_budget", 0);
}
END_TEST

static int ROW_INDEX[MAX_ROWS]; /* each row's test's context: the row */

START_TEST(row_correct)
{
    const struct budget_config *c = &BUDGET_CONFIGS[*(const int *)grade_ctx()];
    flow_correct_each(&BUDGET_KIND.kind, grade_slot(), ROW_SHAPES, NROW_SHAPES,
                      (flow_fn)c->launch, c->name, 0);
}
END_TEST

/* One timed GEMM: what gpu_time runs. */
struct gemm_run {
    void *p;
    flow_fn fn;
};

static void run_gemm(void *ctx)
{
    const struct gemm_run *g = ctx;
    gemm_launch(g->p, g->fn);
}

static int BUDGET_SPEED;

START_TEST(budget_speed)
{
    int slot = BUDGET_SPEED;
    grade_split(); /* every row and yours timed in a runner, judged here */
    struct rng r = grade_rng(slot);
    static const struct gemm_shape shape = { 4096, 4096, 4096 };
    void *p = gemm_init(&BUDGET_KIND.kind, &shape);
    if (grade_role() == GRADE_RUNNER)
        gemm_fill_inputs(p, &r);
    else
        gemm_fill(p, &r);
    /* yours, once, checked before anything is timed */
    if (grade_role() != GRADE_JUDGE) {
        gemm_launch(p, (flow_fn)matmul_budget);
        gpu_sync();
    }
    grade_exchange_buffers();
    if (grade_role() != GRADE_RUNNER)
        gemm_check(p, slot, "matmul_budget (speed is graded once it is correct)");
    int n = nrows(), best = -1;
    struct timing t[MAX_ROWS], yours = { 0 };
    for (int i = 0; i < n; i++) {
        memset(&t[i], 0, sizeof t[i]);
        if (row_blocks(&BUDGET_CONFIGS[i]) < 1)
            continue; /* a row this device cannot run is no candidate */
        struct gemm_run g = { p, (flow_fn)BUDGET_CONFIGS[i].launch };
        gemm_poison(p);
        if (grade_role() != GRADE_JUDGE)
            t[i] = gpu_time(run_gemm, &g, 2, 10);
        grade_exchange_timing(&t[i]);
        grade_exchange_buffers();
        if (grade_role() != GRADE_RUNNER) {
            char what[96];
            snprintf(what, sizeof what, "row %s after timing", BUDGET_CONFIGS[i].name);
            gemm_check(p, slot, what);
            if (best < 0 || t[i].median_ms < t[best].median_ms)
                best = i;
        }
    }
    struct gemm_run g = { p, (flow_fn)matmul_budget };
    gemm_poison(p);
    if (grade_role() != GRADE_JUDGE)
        yours = gpu_time(run_gemm, &g, 2, 10);
    grade_exchange_timing(&yours);
    grade_exchange_buffers();
    if (grade_role() != GRADE_RUNNER)
        gemm_check(p, slot, "matmul_budget after timing");
    gemm_free(p);
    if (grade_role() != GRADE_RUNNER) {
        ck_assert_msg(best >= 0 && yours.median_ms > 0, "no row of BUDGET_CONFIGS runs here");
        double ratio = yours.median_ms / t[best].median_ms;
        char rows[GRADE_TEXT] = "";
        int used = 0;
        for (int i = 0; i < n && used < (int)sizeof rows - 48; i++)
            if (t[i].median_ms > 0)
                used += snprintf(rows + used, sizeof rows - (size_t)used, "%s%s %.1f",
                                 used ? ", " : "", BUDGET_CONFIGS[i].name,
                                 gemm_rate(shape, t[i].median_ms, 1e12));
        grade_note(slot, "yours %.1f TFLOP/s = %.2fx the time of the fastest row, %s (needs at "
                   "most %.2fx); TFLOP/s by row: %s", gemm_rate(shape, yours.median_ms, 1e12),
                   ratio, BUDGET_CONFIGS[best].name, BUDGET_WITHIN, rows);
        if (ratio > BUDGET_WITHIN)
            grade_hint(slot, "the row your launcher picks is not the fastest this device holds: "
                       "prefer what keeps the most of k in flight (the deepest ring) among the "
                       "rows the SM holds as promised, and a block for every SM");
        ck_assert_msg(ratio <= BUDGET_WITHIN, "speed at 4096x4096x4096: yours %.3f ms, the "
                      "fastest row %s %.3f ms: %.2fx (needs at most %.2fx)", yours.median_ms,
                      BUDGET_CONFIGS[best].name, t[best].median_ms, ratio, BUDGET_WITHIN);
        grade_summary("%.2fx the time of the fastest row (needs at most %.2fx)", ratio,
                      BUDGET_WITHIN);
    }
    grade_split_end();
}
END_TEST

static void add_step3(Suite *s, int on_gpu)
{
    static char ftitles[NBUDGET_PROFILES][320], ctitles[NBUDGET_PROFILES][160];
    const char *ft[NBUDGET_PROFILES], *ct[NBUDGET_PROFILES];
    int np = on_gpu ? 1 : NBUDGET_PROFILES;
    for (int i = 0; i < np; i++) {
        snprintf(ftitles[i], sizeof ftitles[i], "fits: the chosen row holds on %s%s",
                 on_gpu ? grader_device()->name : "EMU_DEVICE=",
                 on_gpu ? "" : BUDGET_PROFILES[i]);
        snprintf(ctitles[i], sizeof ctitles[i], "correct 1x1x1, 67x45x131, 1409x37x1411, "
                 "EMU_DEVICE=%s", BUDGET_PROFILES[i]);
        ft[i] = ftitles[i];
        ct[i] = ctitles[i];
    }
    FITS = grader_add(s, "fits", fits, ft, np, 60);
    if (on_gpu)
        flow_add_correct(s, &BUDGET_KIND.kind, &BUDGET_SHAPES, (flow_fn)matmul_budget,
                         "matmul_budget");
    else
        BUDGET_CORRECT = grader_add(s, "budget_correct", budget_correct, ct, np, 300);
    static char rtitles[MAX_ROWS][96];
    for (int i = 0; i < nrows(); i++) {
        const char *rt[1] = { rtitles[i] };
        snprintf(rtitles[i], sizeof rtitles[i], "row %s: 31x45x36, 67x45x131, 130x260x132",
                 BUDGET_CONFIGS[i].name);
        ROW_INDEX[i] = i;
        if (BUDGET_CONFIGS[i].smem_bytes > grader_device()->smem_per_block_optin)
            grader_skip(rtitles[i], "more shared memory a block than this device has");
        else
            grader_add_ctx(s, "rows", row_correct, rt, 1, 120, &ROW_INDEX[i]);
    }
    BUDGET_SPEED = grader_add_timed(s, "budget_speed", budget_speed,
                                    "speed at 4096x4096x4096: within 10% of the fastest row",
                                    300);
}

/* ---- step 4: smaller GPUs inside the GPU (a GPU only) ------------------------------------------
 *
 * SMs: slice_open for each of SLICE_SIZES, in the runner, then the given kernel that records
 * the SM of each of its blocks (slice_smids) on the slice's stream, SLICE_SMID_BLOCKS_PER_SM
 * blocks for every SM of the device, each holding its SM SLICE_SMID_SPIN cycles so that the
 * grid spreads over every SM it may use; the judge counts the distinct SM ids. A slice of N
 * must grant at least N SMs and fewer than N + SLICE_GRAIN (9.0 grants multiples of 8, 8.x of
 * 2), and its stream must reach no more SMs than it was granted, and at least half of them.
 * bandwidth: the given copy (slice_copy, SLICE_COPY_N floats each way, eight times the H200's
 * L2) timed on the stream of a slice of 8 SMs and of one of all the device's; the first must
 * take at least SLICE_SLOWER x the time of the second. The reason for the bound: a copy is
 * bound by the bytes its SMs keep in flight (Little's law, step 2) until the memory itself is
 * the limit, which on an H200 takes most of its 132 SMs; 8 SMs, even each streaming at several
 * times its share of the device's rate, take several times as long as all 132 (the note
 * prints both rates), while a stream that runs on every SM whatever the slice takes the same
 * time in both (1x). 2x sits between the two with room on either side. */
static const int SLICE_SIZES[] = { 8, 16, 32, 64 };
#define NSLICE_SIZES ((int)(sizeof SLICE_SIZES / sizeof SLICE_SIZES[0]))
#define SLICE_GRAIN 8
#define SLICE_SMID_BLOCKS_PER_SM 4
#define SLICE_MAX_SMID 1024      /* above any SM id of any GPU */
#define SLICE_COPY_N ((size_t)1 << 26)
#define SLICE_REPS 10
#define SLICE_SLOWER 2.0
#define GREEN_DRIVER 12050        /* cuGreenCtxStreamCreate: a driver of CUDA 12.5 or newer */

/* The median time of SLICE_REPS copies on stream, in ms, after two untimed: events recorded on
 * the slice's own stream, so that nothing of another stream is counted. */
#ifndef HARNESS_EMU
static double time_slice_copy(cudaStream_t stream, const float *d_in, float *d_out)
{
    cudaEvent_t t0, t1;
    CUDA_CHECK(cudaEventCreate(&t0));
    CUDA_CHECK(cudaEventCreate(&t1));
    for (int i = 0; i < 2; i++)
        slice_copy(stream, d_in, d_out, SLICE_COPY_N);
    double ms[SLICE_REPS];
    for (int i = 0; i < SLICE_REPS; i++) {
        CUDA_CHECK(cudaEventRecord(t0, stream));
        slice_copy(stream, d_in, d_out, SLICE_COPY_N);
        CUDA_CHECK(cudaEventRecord(t1, stream));
        CUDA_CHECK(cudaEventSynchronize(t1));
        float t = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&t, t0, t1));
        ms[i] = t;
    }
    CUDA_CHECK(cudaEventDestroy(t0));
    CUDA_CHECK(cudaEventDestroy(t1));
    return median(ms, SLICE_REPS);
}

static const char *const SLICE_TODO = "slice_open returned -1: the TODO in step4_slices_gpu.cu "
                                      "(the device's SM resource, split, a descriptor, a green "
                                      "context, a stream of it)";

static int SLICE_SMS;

START_TEST(slice_sms)
{
    const int asked = SLICE_SIZES[_i];
    const int slot = SLICE_SMS + _i;
    grade_split(); /* slice_open and the kernel on its stream in a runner, the count here */
    const int blocks = SLICE_SMID_BLOCKS_PER_SM * grader_device()->sms;
    int *d_ids = dbuf_alloc((size_t)blocks * sizeof(int), "d_ids");
    dbuf_poison(d_ids);
    int got[2] = { -2, 0 }; /* slice_open's return, and the SMs the slice says it holds */
    if (grade_role() != GRADE_JUDGE) {
        struct sm_slice s;
        memset(&s, 0, sizeof s);
        got[0] = slice_open(asked, &s);
        got[1] = s.sms;
        if (got[0] == 0) {
            slice_smids(s.stream, d_ids, blocks);
            CUDA_CHECK(cudaStreamSynchronize(s.stream));
            slice_close(&s);
        }
    }
    grade_exchange_bytes(got, sizeof got);
    grade_exchange_buffers();
    if (grade_role() != GRADE_RUNNER) {
        if (got[0] != 0) {
            grade_hint(slot, "%s", SLICE_TODO);
            ck_abort_msg("slice_open(%d) returned %d on a device of %d SMs", asked, got[0],
                         grader_device()->sms);
        }
        if (got[1] < asked || got[1] >= asked + SLICE_GRAIN) {
            grade_hint(slot, "s->sms is what the split granted: the smCount of the group "
                       "cuDevSmResourceSplitByCount wrote, asked for with min_count = sms");
            ck_abort_msg("slice_open(%d): the slice says it holds %d SMs; a slice of %d holds "
                         "from %d to %d", asked, got[1], asked, asked, asked + SLICE_GRAIN - 1);
        }
        int *ids = xmalloc((size_t)blocks * sizeof *ids);
        to_host(ids, d_ids, (size_t)blocks * sizeof *ids);
        char seen[SLICE_MAX_SMID];
        memset(seen, 0, sizeof seen);
        int distinct = 0, unwritten = -1;
        for (int b = 0; b < blocks; b++) {
            if (ids[b] < 0 || ids[b] >= SLICE_MAX_SMID) {
                if (unwritten < 0)
                    unwritten = b;
                continue;
            }
            distinct += !seen[ids[b]];
            seen[ids[b]] = 1;
        }
        free(ids);
        ck_assert_msg(unwritten < 0, "slice of %d SMs: block %d of the SM-id kernel wrote no SM "
                      "id (the kernel did not run to its end on the slice's stream)", asked,
                      unwritten);
        if (distinct > got[1]) {
            grade_hint(slot, "the work on s->stream ran outside the slice: the stream must be "
                       "the green context's (cuGreenCtxStreamCreate), made from a descriptor of "
                       "the split's group (not the whole device's resource, nor the remainder)");
            ck_abort_msg("slice of %d SMs: a kernel of %d blocks on its stream ran on %d "
                         "distinct SMs; the slice holds %d", asked, blocks, distinct, got[1]);
        }
        ck_assert_msg(2 * distinct >= got[1], "slice of %d SMs: a kernel of %d blocks on its "
                      "stream reached only %d of them", got[1], blocks, distinct);
        grade_note(slot, "granted %d SMs; %d blocks on its stream ran on %d distinct SMs", got[1],
                   blocks, distinct);
    }
    dbuf_free(d_ids);
    grade_split_end();
}
END_TEST

static int SLICE_BW;

START_TEST(slice_bandwidth)
{
    const int slot = SLICE_BW;
    grade_split(); /* the slices opened and timed in a runner, the ratio judged here */
    const int all = grader_device()->sms;
    const int asked[2] = { SLICE_SIZES[0], all };
    struct {
        int rc[2], sms[2];
        double ms[2];
    } got;
    memset(&got, 0, sizeof got);
    if (grade_role() != GRADE_JUDGE) {
        float *d_in, *d_out;
        CUDA_CHECK(cudaMalloc((void **)&d_in, SLICE_COPY_N * sizeof(float)));
        CUDA_CHECK(cudaMalloc((void **)&d_out, SLICE_COPY_N * sizeof(float)));
        CUDA_CHECK(cudaMemset(d_in, 0x3f, SLICE_COPY_N * sizeof(float)));
        for (int j = 0; j < 2; j++) {
            struct sm_slice s;
            memset(&s, 0, sizeof s);
            got.rc[j] = slice_open(asked[j], &s);
            got.sms[j] = s.sms;
            if (got.rc[j] != 0)
                continue;
            got.ms[j] = time_slice_copy(s.stream, d_in, d_out);
            slice_close(&s);
        }
        CUDA_CHECK(cudaFree(d_in));
        CUDA_CHECK(cudaFree(d_out));
    }
    grade_exchange_bytes(&got, sizeof got);
    if (grade_role() != GRADE_RUNNER) {
        for (int j = 0; j < 2; j++) {
            if (got.rc[j] != 0)
                grade_hint(slot, "%s", SLICE_TODO);
            ck_assert_msg(got.rc[j] == 0, "slice_open(%d) returned %d", asked[j], got.rc[j]);
            ck_assert_msg(got.ms[j] > 0 && got.ms[j] < 1e4, "slice of %d SMs: the copy took "
                          "%g ms: not a time", asked[j], got.ms[j]);
        }
        const double bytes = 2.0 * SLICE_COPY_N * sizeof(float);
        const double ratio = got.ms[0] / got.ms[1];
        grade_note(slot, "copy of %zu MiB: %.0f GB/s on %d SMs, %.0f GB/s on all %d: %.1fx the "
                   "time (needs %.1fx)", SLICE_COPY_N * sizeof(float) >> 20,
                   bytes / (got.ms[0] * 1e6), got.sms[0], bytes / (got.ms[1] * 1e6), got.sms[1],
                   ratio, SLICE_SLOWER);
        if (ratio < SLICE_SLOWER)
            grade_hint(slot, "the copy on the small slice's stream is as fast as on the whole "
                       "device: it is not running in the slice (a stream of the primary "
                       "context, or a green context of every SM)");
        ck_assert_msg(ratio >= SLICE_SLOWER, "bandwidth: the copy on a slice of %d SMs took "
                      "%.3f ms, on all %d %.3f ms: %.2fx the time (needs at least %.1fx)",
                      got.sms[0], got.ms[0], got.sms[1], got.ms[1], ratio, SLICE_SLOWER);
        grade_summary("%d SMs stream at 1/%.1f of all %d (needs 1/%.0f or less); slices of 8 "
                      "to 64 hold their SMs", got.sms[0], ratio, got.sms[1], SLICE_SLOWER);
    }
    grade_split_end();
}
END_TEST
#endif

static void add_step4(Suite *s, int on_gpu)
{
    static char titles[NSLICE_SIZES][96];
    static const char *const bw_title = "bandwidth: a copy on 8 SMs at least 2x the time of all";
    const struct device_info *dev = grader_device();
    char why[160] = "";
    if (!on_gpu)
        snprintf(why, sizeof why, "graded on a GPU only: green contexts partition a GPU's SMs, "
                 "which the CPU backend does not have");
    else if (dev->driver_version < GREEN_DRIVER)
        snprintf(why, sizeof why, "the driver (CUDA %d.%d) has no green-context streams: they "
                 "need CUDA 12.5 or newer", dev->driver_version / 1000,
                 dev->driver_version % 1000 / 10);
    for (int i = 0; i < NSLICE_SIZES; i++)
        snprintf(titles[i], sizeof titles[i], "SMs: a slice of %d, and a kernel on its stream "
                 "within it", SLICE_SIZES[i]);
    if (*why) {
        for (int i = 0; i < NSLICE_SIZES; i++)
            grader_skip(titles[i], why);
        grader_skip(bw_title, why);
        return;
    }
#ifdef HARNESS_EMU
    (void)s; /* not reached: the CPU backend skipped the step above */
#else
    int n = 0;
    const char *t[NSLICE_SIZES];
    for (int i = 0; i < NSLICE_SIZES; i++) {
        if (SLICE_SIZES[i] > dev->sms)
            grader_skip(titles[i], "more SMs than this device has");
        else
            t[n++] = titles[i];
    }
    if (n > 0)
        SLICE_SMS = grader_add(s, "slice_sms", slice_sms, t, n, 60);
    SLICE_BW = grader_add_timed(s, "slice_bandwidth", slice_bandwidth, bw_title, 120);
#endif
}

static void add_tests(Suite *s)
{
    const struct device_info *dev = grader_device();
    int on_gpu = strcmp(dev->backend, "cuda") == 0;
    if (grader_step(1, OCC_STEPS[0].title))
        add_step1(s, on_gpu);
    if (grader_step(2, OCC_STEPS[1].title))
        add_step2(s, on_gpu);
    if (grader_step(3, OCC_STEPS[2].title))
        add_step3(s, on_gpu);
    if (grader_step(4, OCC_STEPS[3].title))
        add_step4(s, on_gpu);
}

/* ---- the bench: the calculator's table, and on a GPU steps 2, 3 and 4 measured ----------------
 *
 * grade --bench F writes, on either backend, what the toolkit's calculator (cuda_occupancy.h)
 * answers for a block of 256 threads, no shared memory, at each count of registers a thread, on
 * each of the four devices: the blocks and the warps an SM holds; arithmetic, not a
 * measurement, which needs no GPU. On a GPU it then measures, with the code it was linked with:
 *   inflight:sweep     step 2's curve: stream_sum over INFLIGHT_N floats at each configuration
 *                      of SWEEP (GB/s against the bytes in flight an SM); inflight:latency, the
 *                      load latency (its ms column); inflight:knee, where the curve first
 *                      reaches 80% of its top, and inflight:predicted, knee_bytes_per_sm's
 *   budget:ROW         step 3: every row of BUDGET_CONFIGS the device holds, at each of
 *                      BENCH_GEMMS, and budget:chosen, matmul_budget (chosen: the row it picks)
 *   slice:*            step 4: in slices of 8, 16, 32, 64 and all the device's SMs (slice_open):
 *                      slice:copy, the given copy on the slice's stream; then, with the slice's
 *                      green context current (slice_enter), slice:inflight, stream_sum at
 *                      SLICE_INFLIGHT, the tuning table: slice:budget:ROW for every row
 *                      and slice:budget:chosen, at each of BENCH_GEMMS, and chapter 04's
 *                      ladder: slice:rung:NAME for the naive kernel, each step's reference
 *                      and cuBLAS's SGEMM at RUNG_GEMM (plots/09-occupancy.gp draws their
 *                      scaling with the SMs)
 * The columns are the bench's (chapter, kernel, shape, ms, gbs, gflops, device) and five more:
 * blocks (the blocks an SM of the configuration or row), warps (an SM), sms (the SMs it ran
 * on: the device's, or the slice's as granted), bytes (in flight an SM, for step 2's rows) and
 * chosen (1 on the row the launcher picks, and on the fastest row of each table: 2, or 3 when
 * both), then the SM clock and power while the row's timed loop ran (sm_mhz, watts: NA on the
 * rows computed, not timed, as the calculator's, the knee and the prediction). Every result is
 * checked after it is timed; a step whose code fails writes no row and makes the bench fail.
 * plots/09-occupancy.gp draws the calculator's rows. */

static void bench_row(FILE *f, const char *kernel, const char *shape, double ms, double gbs,
                      double gflops, const char *device, int blocks, int warps, int sms,
                      double bytes, int chosen, const struct clocks *clocks)
{
    char c[64];
    clocks_columns(clocks, c, sizeof c);
    fprintf(f, "%s\t%s\t%s\t%.6g\t%.6g\t%.6g\t%s\t%d\t%d\t%d\t%.6g\t%d\t%s\n", CHAPTER, kernel,
            shape, ms, gbs, gflops, device, blocks, warps, sms, bytes, chosen, c);
    fflush(f);
}

#ifndef HARNESS_EMU
static const struct gemm_shape BENCH_GEMMS[] = { { 4096, 4096, 4096 }, { 1024, 1024, 1024 } };
#define NBENCH_GEMMS ((int)(sizeof BENCH_GEMMS / sizeof BENCH_GEMMS[0]))
static const int BENCH_SLICES[] = { 8, 16, 32, 64, 0 }; /* 0: all the device's SMs */
#define NBENCH_SLICES ((int)(sizeof BENCH_SLICES / sizeof BENCH_SLICES[0]))
static const struct inflight SLICE_INFLIGHT = { 4, 4, 256, 2 }; /* 32 KB an SM */

/* stream_sum at c over d_in, timed (its clocks in *clocks); 0 when the sum after timing is
 * wrong (said on stderr) */
static double bench_stream(const float *d_in, double *d_sum, double want,
                           const struct inflight *c, struct clocks *clocks)
{
    struct stream_run sr = { d_in, d_sum, c };
    struct timing t = gpu_time(run_stream, &sr, 2, 10);
    *clocks = t.clocks;
    double got = 0.0;
    to_host(&got, d_sum, sizeof got);
    if (got != want) {
        char desc[160];
        describe_inflight(c, desc, sizeof desc);
        fprintf(stderr, "bench: stream_sum (%s): sum %.17g, want %.17g\n", desc, got, want);
        return 0.0;
    }
    return t.median_ms;
}

static int bench_inflight(FILE *f, const char *device, int sms)
{
    struct rng r;
    rng_init(&r, 9);
    float *d_in = dbuf_alloc_input(INFLIGHT_N * sizeof(float), "d_in");
    double *d_sum = dbuf_alloc(sizeof(double), "d_sum");
    double want = fill_small_ints(d_in, INFLIGHT_N, &r);
    double gbs[NSWEEP], bytes[NSWEEP], top = 0.0;
    int rc = 0;
    for (int i = 0; i < NSWEEP && rc == 0; i++) {
        const struct inflight *c = &SWEEP[i];
        struct clocks clocks;
        double ms = bench_stream(d_in, d_sum, want, c, &clocks);
        if (ms <= 0) {
            rc = -1;
            break;
        }
        char shape[64];
        snprintf(shape, sizeof shape, "%dx%dx%dx%d", c->loads, c->vec, c->threads,
                 c->blocks_per_sm);
        bytes[i] = inflight_bytes_per_sm(c);
        gbs[i] = INFLIGHT_N * sizeof(float) / (ms * 1e6);
        top = gbs[i] > top ? gbs[i] : top;
        bench_row(f, "inflight:sweep", shape, ms, gbs[i], 0, device, c->blocks_per_sm,
                  c->blocks_per_sm * c->threads / 32, sms, bytes[i], 0, &clocks);
    }
    if (rc == 0) {
        gpu_clocks_start();
        double latency = load_latency_ns();
        struct clocks clocks = gpu_clocks_stop();
        double knee = knee_of(bytes, gbs, NSWEEP, top, KNEE_FRACTION);
        double predicted = knee_bytes_per_sm(top, latency, sms);
        bench_row(f, "inflight:latency", "1", latency * 1e-6, 0, 0, device, 0, 0, sms, 0, 0,
                  &clocks);
        bench_row(f, "inflight:knee", "80%", 0, KNEE_FRACTION * top, 0, device, 0, 0, sms, knee,
                  0, NULL);
        bench_row(f, "inflight:predicted", "80%", 0, top, 0, device, 0, 0, sms, predicted, 0,
                  NULL);
        printf("bench: step 2: top %.0f GB/s, knee %.1f KB an SM, predicted %.1f KB (latency "
               "%.0f ns)\n", top, knee / 1024, predicted / 1024, latency);
    }
    dbuf_free(d_in);
    dbuf_free(d_sum);
    return rc;
}

/* Every row the device holds and matmul_budget at each of BENCH_GEMMS, in the context current
 * now; the kernels' names under prefix ("budget" or "slice:budget"), sms the SMs they run on. */
static int bench_budget(FILE *f, const char *prefix, const char *device, int sms)
{
    int rc = 0;
    for (int g = 0; g < NBENCH_GEMMS && rc == 0; g++) {
        const struct gemm_shape *sh = &BENCH_GEMMS[g];
        char shape[64], kernel[96];
        gemm_shape_name(sh, shape, sizeof shape);
        struct rng r;
        rng_init(&r, 3 + (uint64_t)g);
        void *p = gemm_init(&BUDGET_KIND.kind, sh);
        gemm_bench_fill(p, &r);
        const int pick = budget_choose(sh->m, sh->k, sh->n);
        double ms[MAX_ROWS];
        struct clocks clocks[MAX_ROWS];
        int blocks[MAX_ROWS], best = -1;
        for (int i = 0; i < nrows() && rc == 0; i++) {
            ms[i] = 0;
            blocks[i] = row_blocks(&BUDGET_CONFIGS[i]);
            if (blocks[i] < 1)
                continue; /* a row this device cannot run */
            struct gemm_run run = { p, (flow_fn)BUDGET_CONFIGS[i].launch };
            gemm_poison(p);
            struct timing t = gpu_time(run_gemm, &run, 2, 10);
            ms[i] = t.median_ms;
            clocks[i] = t.clocks;
            snprintf(kernel, sizeof kernel, "%s:%s", prefix, BUDGET_CONFIGS[i].name);
            if (gemm_bench_check(p, kernel, shape) != 0)
                rc = -1;
            else if (best < 0 || ms[i] < ms[best])
                best = i;
        }
        for (int i = 0; i < nrows() && rc == 0; i++)
            if (ms[i] > 0) {
                snprintf(kernel, sizeof kernel, "%s:%s", prefix, BUDGET_CONFIGS[i].name);
                bench_row(f, kernel, shape, ms[i], 0, gemm_rate(*sh, ms[i], 1e9), device,
                          blocks[i], blocks[i] * BUDGET_CONFIGS[i].threads / 32, sms, 0,
                          (i == pick) + 2 * (i == best), &clocks[i]);
            }
        if (rc == 0 && best < 0) {
            fprintf(stderr, "bench: no row of BUDGET_CONFIGS runs here\n");
            rc = -1;
        }
        if (rc == 0) {
            struct gemm_run run = { p, (flow_fn)matmul_budget };
            gemm_poison(p);
            struct timing tc = gpu_time(run_gemm, &run, 2, 10);
            double t = tc.median_ms;
            snprintf(kernel, sizeof kernel, "%s:chosen", prefix);
            if (gemm_bench_check(p, kernel, shape) != 0 || pick < 0) {
                rc = -1;
            } else {
                const struct budget_config *c = &BUDGET_CONFIGS[pick];
                bench_row(f, kernel, shape, t, 0, gemm_rate(*sh, t, 1e9), device,
                          blocks[pick], blocks[pick] * c->threads / 32, sms, 0, 1, &tc.clocks);
                printf("bench: %s at %s on %d SMs: picks %s, %.2f ms; fastest %s, %.2f ms\n",
                       prefix, shape, sms, c->name, t, BUDGET_CONFIGS[best].name, ms[best]);
            }
        }
        gemm_free(p);
    }
    return rc;
}

/* Chapter 04's ladder in a slice: the given naive kernel, every step's reference (linked as
 * given code, GIVEN_FROM_09-occupancy in the Makefile) and cuBLAS's SGEMM, at RUNG_GEMM on the
 * problem p (filled once, its reference from the whole device), in the context current now.
 * Rows slice:rung:NAME; each result checked after it is timed. The naive rung on 8 SMs takes
 * about a third of a second a run, so every rung is timed over RUNG_REPS runs after one. */
static const struct gemm_shape RUNG_GEMM = { 4096, 4096, 4096 };
#define RUNG_REPS 5

static void rung_cublas(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    if (blas_sgemm(d_a, d_b, d_c, m, k, n) != 0) {
        fprintf(stderr, "bench: cuBLAS: %s\n", blas_unavailable_reason());
        exit(EXIT_FAILURE);
    }
}

static int bench_rungs(FILE *f, void *p, const char *device, int sms)
{
    struct flow_rung rungs[2 + 16];
    int n = 0;
    rungs[n++] = (struct flow_rung){ .name = "naive", .fn = (flow_fn)matmul_naive };
    for (int v = 0; v < TILED_NUM_STEPS && n < 1 + 16; v++)
        rungs[n++] = (struct flow_rung){ .name = TILED_STEPS[v].name,
                                         .fn = (flow_fn)TILED_STEPS[v].fn };
    rungs[n++] = (struct flow_rung){ .name = "cublas", .fn = (flow_fn)rung_cublas };
    char shape[64], kernel[96];
    gemm_shape_name(&RUNG_GEMM, shape, sizeof shape);
    for (int i = 0; i < n; i++) {
        struct gemm_run run = { p, rungs[i].fn };
        gemm_poison(p);
        struct timing t = gpu_time(run_gemm, &run, 1, RUNG_REPS);
        double ms = t.median_ms;
        snprintf(kernel, sizeof kernel, "slice:rung:%s", rungs[i].name);
        if (gemm_bench_check(p, kernel, shape) != 0)
            return -1;
        bench_row(f, kernel, shape, ms, 0, gemm_rate(RUNG_GEMM, ms, 1e9), device, 0, 0, sms, 0,
                  0, &t.clocks);
        printf("bench: %s on %d SMs: %.1f TFLOP/s\n", kernel, sms,
               gemm_rate(RUNG_GEMM, ms, 1e12));
    }
    return 0;
}

static int bench_slices(FILE *f, const char *device, int device_sms)
{
    struct rng r;
    rng_init(&r, 11);
    float *d_in = dbuf_alloc_input(INFLIGHT_N * sizeof(float), "d_in");
    double *d_sum = dbuf_alloc(sizeof(double), "d_sum");
    float *d_out;
    CUDA_CHECK(cudaMalloc((void **)&d_out, SLICE_COPY_N * sizeof(float)));
    double want = fill_small_ints(d_in, INFLIGHT_N, &r);
    void *rung_p = gemm_init(&BUDGET_KIND.kind, &RUNG_GEMM);
    gemm_bench_fill(rung_p, &r);
    int rc = 0;
    for (int i = 0; i < NBENCH_SLICES && rc == 0; i++) {
        int asked = BENCH_SLICES[i] ? BENCH_SLICES[i] : device_sms;
        if (asked > device_sms)
            continue;
        struct sm_slice s;
        memset(&s, 0, sizeof s);
        if (slice_open(asked, &s) != 0) {
            fprintf(stderr, "bench: slice_open(%d) returned -1: step 4 is not written\n",
                    asked);
            rc = -1;
            break;
        }
        char shape[64];
        snprintf(shape, sizeof shape, "%zu", SLICE_COPY_N);
        gpu_clocks_start();
        double ms = time_slice_copy(s.stream, d_in, d_out);
        struct clocks clocks = gpu_clocks_stop();
        bench_row(f, "slice:copy", shape, ms, 2.0 * SLICE_COPY_N * sizeof(float) / (ms * 1e6),
                  0, device, 0, 0, s.sms, 0, 0, &clocks);
        slice_enter(&s);
        int seen = slice_current_sms();
        if (seen != s.sms)
            fprintf(stderr, "bench: inside a slice of %d SMs its context reports %d\n", s.sms,
                    seen);
        ms = bench_stream(d_in, d_sum, want, &SLICE_INFLIGHT, &clocks);
        if (ms > 0) {
            snprintf(shape, sizeof shape, "%zu", INFLIGHT_N);
            bench_row(f, "slice:inflight", shape, ms, INFLIGHT_N * sizeof(float) / (ms * 1e6),
                      0, device, SLICE_INFLIGHT.blocks_per_sm,
                      SLICE_INFLIGHT.blocks_per_sm * SLICE_INFLIGHT.threads / 32, s.sms,
                      inflight_bytes_per_sm(&SLICE_INFLIGHT), 0, &clocks);
        } else {
            rc = -1;
        }
        if (rc == 0)
            rc = bench_budget(f, "slice:budget", device, s.sms);
        if (rc == 0)
            rc = bench_rungs(f, rung_p, device, s.sms);
        slice_leave();
        printf("bench: slice of %d SMs (asked %d) measured\n", s.sms, asked);
        slice_close(&s);
    }
    gemm_free(rung_p);
    CUDA_CHECK(cudaFree(d_out));
    dbuf_free(d_in);
    dbuf_free(d_sum);
    return rc;
}
#endif

static int bench(const char *path)
{
    const int on_gpu = strcmp(gpu_backend(), "cuda") == 0;
    struct device_info info;
    memset(&info, 0, sizeof info);
    if (on_gpu && measure_begin("bench", &info) != 0)
        return EXIT_FAILURE;
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return EXIT_FAILURE;
    }
    /* "# device:" only where something ran on one: the book's caption says "measured on" only
     * of a file that names a device */
    if (on_gpu)
        results_provenance(f, info.name, info.driver);
    fprintf(f, "# what: rows occupancy:* are the CUDA toolkit's occupancy calculator "
               "(cuda_occupancy.h) on the limits of chapters/09-occupancy/devices.cu, computed, "
               "not measured%s\n"
               "chapter\tkernel\tshape\tms\tgbs\tgflops\tdevice\tblocks\twarps\tsms\tbytes"
               "\tchosen\t" RESULTS_CLOCK_COLUMNS "\n",
               on_gpu ? "; the rest measured on the device above" : "");
    for (int i = 0; i < OCC_NUM_DEVICES; i++) {
        const struct occ_device *d = &OCC_DEVICES[i];
        for (int regs = 16; regs <= 256; regs += 8) {
            int r = regs > 255 ? 255 : regs;
            struct occ_kernel k = { 256, r, 0, 0, 48 * KIB, -1 };
            cudaOccResult res;
            int blocks = truth(&k, d, &res);
            char kernel[32], shape[32];
            snprintf(kernel, sizeof kernel, "occupancy:%s", OCC_DEVICE_KEYS[i]);
            snprintf(shape, sizeof shape, "256x%d", r);
            bench_row(f, kernel, shape, 0, 0, 0, d->name, blocks, blocks * 256 / d->warp_size,
                      d->sms, 0, 0, NULL);
        }
    }
    int rc = 0;
#ifndef HARNESS_EMU
    if (on_gpu) {
        if (bench_inflight(f, info.name, info.sms) != 0) {
            fprintf(stderr, "bench: step 2 not measured\n");
            rc = -1;
        }
        if (bench_budget(f, "budget", info.name, info.sms) != 0) {
            fprintf(stderr, "bench: step 3 not measured\n");
            rc = -1;
        }
        if (info.driver_version < GREEN_DRIVER)
            printf("bench: step 4 not measured: the driver has no green-context streams\n");
        else if (bench_slices(f, info.name, info.sms) != 0) {
            fprintf(stderr, "bench: step 4 not measured\n");
            rc = -1;
        }
    }
#endif
    if (fclose(f) != 0) {
        perror(path);
        return EXIT_FAILURE;
    }
    printf("bench: wrote %s (%s)\n", path, on_gpu ? "the calculator's answers, and steps 2 to 4 "
           "measured" : "the calculator's answers; nothing measured on the CPU backend");
    return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
