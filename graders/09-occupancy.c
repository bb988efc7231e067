/* 09-occupancy.c: the grader of chapter 09, occupancy and cross-architecture tuning.
 *
 *   grade            the ladder, a step at a time (GRADE_STEP=k grades step k alone):
 *                      step 1  blocks_per_sm   an occupancy calculator: exact against the CUDA
 *                                              toolkit's own calculator (cuda_occupancy.h) on 36
 *                                              kernels on each of four devices' limits (H200,
 *                                              A100, L4, T4), and against the runtime's
 *                                              cudaOccupancyMaxActiveBlocksPerMultiprocessor for
 *                                              the real kernels of occupancy_kernels.cu (on a
 *                                              GPU, its own; on the CPU backend, under each
 *                                              EMU_DEVICE profile), on both backends
 *
 * The truth of step 1 is cudaOccMaxActiveBlocksPerMultiprocessor from cuda_occupancy.h, the
 * header-only calculator the CUDA toolkit ships in $(CUDA_HOME)/include (it is C as well as C++:
 * its C++ parts are behind __cplusplus, and C users zero its structures): the same rules the
 * runtime applies, with the device's limits filled in from OCC_DEVICES. The learner's code runs
 * in a runner process; the judge computes the truth and compares (grade.h). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_occupancy.h>
#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "grade.h"
#include "occupancy.h"

#define CHAPTER "09-occupancy"
#define KIB ((size_t)1024)

/* ---- step 1: the configurations ------------------------------------------------------------
 *
 * Each names the rule it exercises (its `what`, which a wrong answer reports, so a learner sees
 * which rule they missed). The same 36 kernels go to each of the four devices: a limit that does
 * not bind on one binds on another (the T4's 1024 threads and 16 blocks an SM, the L4's 100 KiB). */
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

static void add_tests(Suite *s)
{
    const struct device_info *dev = grader_device();
    int on_gpu = strcmp(dev->backend, "cuda") == 0;
    grader_step(1, OCC_STEPS[0].title);
    add_step1(s, on_gpu);
}

/* ---- the table: the calculator's answers, for the lesson's figure ---------------------------
 *
 * grade --bench F writes, on either backend, what the toolkit's calculator (cuda_occupancy.h)
 * answers for a block of 256 threads, no shared memory, at each count of registers a thread, on
 * each of the four devices: the blocks and the warps an SM holds. Arithmetic, not a measurement:
 * its header says so (and names no device), and it needs no GPU. The columns are the bench's (chapter, kernel, shape,
 * ms, gbs, gflops, device; the kernel "occupancy:DEVICE", the shape "THREADSxREGS", the times
 * 0) and two more: blocks and warps. plots/09-occupancy.gp draws it. */
static int bench(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return EXIT_FAILURE;
    }
    /* no "# device:" line: nothing here ran on a device, and the book's caption says
     * "measured on" only of a file that names one */
    fprintf(f, "# what: the CUDA toolkit's occupancy calculator (cuda_occupancy.h) on the limits "
               "of chapters/09-occupancy/devices.cu; computed, not measured\n"
               "chapter\tkernel\tshape\tms\tgbs\tgflops\tdevice\tblocks\twarps\n");
    for (int i = 0; i < OCC_NUM_DEVICES; i++) {
        const struct occ_device *d = &OCC_DEVICES[i];
        for (int regs = 16; regs <= 256; regs += 8) {
            int r = regs > 255 ? 255 : regs;
            struct occ_kernel k = { 256, r, 0, 0, 48 * KIB, -1 };
            cudaOccResult res;
            int blocks = truth(&k, d, &res);
            fprintf(f, "%s\toccupancy:%s\t256x%d\t0\t0\t0\t%s\t%d\t%d\n", CHAPTER,
                    OCC_DEVICE_KEYS[i], r, d->name, blocks, blocks * 256 / d->warp_size);
        }
    }
    if (fclose(f) != 0) {
        perror(path);
        return EXIT_FAILURE;
    }
    printf("bench: wrote %s (the calculator's answers; nothing measured)\n", path);
    return EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
