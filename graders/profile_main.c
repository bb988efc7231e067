/* profile_main.c: the driver of `make profile CH=NN [KERNEL=name]` (scripts/profile.sh) and
 * of `make calibrate` (scripts/calibrate.sh).
 *
 * Built once per chapter and side, with -Ichapters/NN, against that side's kernel files, for
 * one of two backends (build/programs.tsv says where each lies):
 *   the instrumented emu build       the runtime prints, per kernel
 *                                    launch and per source line, the global requests and their
 *                                    sectors, the shared requests and their wavefronts, and the
 *                                    divergent branches (harness/emu/README.md, "Profiling")
 *   the CUDA build                   which Nsight Compute runs one rung at a time
 *                                    (scripts/ncu-run.sh): the same rungs on the same shapes, so
 *                                    that a rung's counts on both sides can be compared
 * It runs every rung of the chapter's rung table (or only KERNEL's) once on a small shape.
 *
 * The chapter's contract header picks the family: matmul.h (01) and tiled.h (04) share the
 * matmul signature, transpose.h (02) the transpose one, divergence.h (03) its own.
 *
 *   profile --list       the rungs' names, one a line ("pair/name" in chapter 03): the names
 *                        that --run, --tsv and KERNEL take, and the key that joins a rung's
 *                        model and its Nsight Compute counts
 *   profile --run NAME   only the rung named NAME exactly (or "yours")
 *   profile --tsv NAME [SHAPE]  emu build only; for the concept tests of the graders (tests/02-04) and
 *                        the calibration: runs only NAME, a rung's name or "yours" (the learner's
 *                        entry point: matmul, matmul_tiled, transpose, process), or in chapter
 *                        03 "step1" or "step2" (the step table's launchers), on the same shape,
 *                        prints nothing of the tables and instead a header line and one
 *                        tab-separated row: its launches' totals summed (emu_profile_sum), the
 *                        derived ratios, the access widths, the work done and the kernels it
 *                        launched. SHAPE (MxKxN, ROWSxCOLS or N, as the chapter has) replaces
 *                        the small shape: the concept tests draw it from their seed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cuda_runtime_api.h>

#include "tolerance.h"
#ifdef HARNESS_EMU
#include "emu_profile.h"
#include "profile_row.h"
#endif

#if __has_include("matmul.h")
#include "matmul.h"
#define FAMILY_MATMUL 1
#define RUNGS MATMUL_RUNGS
#define NUM_RUNGS MATMUL_NUM_RUNGS
#define YOURS matmul
#elif __has_include("tiled.h")
#include "tiled.h"
#define FAMILY_MATMUL 1
/* chapter 04: the given naive kernel, then every step of TILED_STEPS (steps.cu), by the
 * steps' rung names; "yours" is step 1 */
static const struct tiled_step *tiled_rungs(void)
{
    static struct tiled_step r[1 + 16];
    if (!r[0].name) {
        r[0] = (struct tiled_step){ "naive", "the given baseline", matmul_naive };
        for (int i = 0; i < TILED_NUM_STEPS && i < 16; ++i)
            r[1 + i] = TILED_STEPS[i];
    }
    return r;
}
#define RUNGS (tiled_rungs())
#define NUM_RUNGS (1 + (TILED_NUM_STEPS < 16 ? TILED_NUM_STEPS : 16))
#define YOURS matmul_tiled
#elif __has_include("transpose.h")
#include "transpose.h"
#define FAMILY_TRANSPOSE 1
/* The rungs: the step table (chapters/02-coalesced-transpose/steps.cu: the given naive rung,
 * then one a step; the concept tests name a step's rung), then the solution's grouped rung
 * where the side has it (solutions/02-coalesced-transpose/step4_padded_8.cu; a weak reference,
 * absent on the learner's side), so that make profile and make calibrate see every rung the
 * bench measures. "yours" is the ladder's last step. */
void transpose_grouped(const float *d_in, float *d_out, int rows, int cols) __attribute__((weak));
static struct transpose_step transpose_rungs[16];
static int transpose_num_rungs;
__attribute__((constructor)) static void transpose_rungs_init(void)
{
    for (int i = 0; i < TRANSPOSE_NUM_STEPS && i < 15; ++i)
        transpose_rungs[transpose_num_rungs++] = TRANSPOSE_STEPS[i];
    if (transpose_grouped)
        transpose_rungs[transpose_num_rungs++] =
            (struct transpose_step){ "grouped", "padded_8, tiles in groups", transpose_grouped };
}
#define RUNGS transpose_rungs
#define NUM_RUNGS transpose_num_rungs
#define YOURS transpose_vec4
#elif __has_include("divergence.h")
/* the rungs (the demos and both steps' pairs), and the step table: "stepK" names step K's
 * launcher of this side, process (step 1) or compact (step 2), for the concept tests */
#include "divergence.h"
#define FAMILY_DIVERGENCE 1
#define RUNGS DIVERGENCE_RUNGS
#define NUM_RUNGS DIVERGENCE_NUM_RUNGS
#define STEPS DIVERGENCE_STEPS
#define NUM_STEPS DIVERGENCE_NUM_STEPS
#define YOURS process
#else
#error "profile_main.c: no contract header of a chapter it knows (matmul.h, tiled.h, transpose.h, divergence.h)"
#endif

static void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "profile: %s: %s\n", what, cudaGetErrorString(e));
        exit(EXIT_FAILURE);
    }
}

static float *device_copy(const float *h, size_t n)
{
    float *d;
    check(cudaMalloc((void **)&d, n * sizeof *d), "cudaMalloc");
    if (h)
        check(cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice), "cudaMemcpy");
    return d;
}

static float *random_floats(size_t n, unsigned seed)
{
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
        if (h[i] == 0.0f)
            h[i] = 0.5f;
    }
    return h;
}

static const char *rung_name(int i)
{
#if FAMILY_DIVERGENCE
    static char buf[128];
    snprintf(buf, sizeof buf, "%s/%s", RUNGS[i].pair, RUNGS[i].name);
    return buf;
#else
    return RUNGS[i].name;
#endif
}

/* "name" or "pair/name" (chapter 03) or "pair" */
static int selected(int i, const char *kernel)
{
    if (!kernel || !*kernel)
        return 1;
#if FAMILY_DIVERGENCE
    if (!strcmp(kernel, RUNGS[i].pair) || !strcmp(kernel, RUNGS[i].name))
        return 1;
#endif
    return !strcmp(kernel, rung_name(i));
}

typedef __typeof__(&YOURS) rung_fn;
#if FAMILY_DIVERGENCE
/* the compaction launcher run_one runs in place of fn, when the rung is one (OUT_COMPACT) */
static compact_fn g_compact;
/* a stand-in fn for a compaction rung, never called: run_one runs g_compact */
static void compact_rung(const float *d_in, float *d_out, int n) { (void)d_in, (void)d_out, (void)n; }
#endif
static int g_tsv; /* --tsv: no tables, no "== rung" lines; main prints one row */
/* the shape every rung runs on: the defaults below, or --tsv's SHAPE (a concept test draws it
 * from its seed, so that a launcher that recognises one fixed shape cannot pick its good
 * kernel for the concept test alone) */
#if FAMILY_MATMUL
static int g_m = 128, g_k = 128, g_n = 128;
#elif FAMILY_TRANSPOSE
static int g_rows = 256, g_cols = 256;
#elif FAMILY_DIVERGENCE
static int g_count = 1 << 14;
#endif
static double g_work; /* what the last run did: FMAs (m * k * n), elements (transpose, 03) */

/* runs fn (named name) once; prints whether its result is right; 1 if right, -1 if not
 * checked, 0 if wrong; -2 if the kernel failed */
static int run_one(const char *name, rung_fn fn, int sorted_input)
{
    int ok = 1;
    cudaError_t e;
    (void)sorted_input;
#if FAMILY_MATMUL
    const int m = g_m, k = g_k, n = g_n;
    g_work = (double)m * k * n;
    if (!g_tsv)
        printf("== rung %s: m = %d, k = %d, n = %d\n", name, m, k, n);
    fflush(stdout);
    float *ha = random_floats((size_t)m * k, 1), *hb = random_floats((size_t)k * n, 2);
    float *hc = malloc((size_t)m * n * sizeof *hc);
    float *da = device_copy(ha, (size_t)m * k), *db = device_copy(hb, (size_t)k * n);
    float *dc = device_copy(NULL, (size_t)m * n);
    fn(da, db, dc, m, k, n);
    e = cudaDeviceSynchronize();
    if (e == cudaSuccess) {
        check(cudaMemcpy(hc, dc, (size_t)m * n * sizeof *hc, cudaMemcpyDeviceToHost), "cudaMemcpy");
        double worst = 0;
        for (int r = 0; r < m; ++r)
            for (int c = 0; c < n; ++c) {
                double s = 0;
                for (int x = 0; x < k; ++x)
                    s += (double)ha[(size_t)r * k + x] * hb[(size_t)x * n + c];
                double err = fabs(hc[(size_t)r * n + c] - s) / (fabs(s) + 1.0);
                if (!(err <= worst))
                    worst = err;
            }
        ok = worst < TOL_PROFILE_MATMUL;
    }
    free(ha), free(hb), free(hc);
#elif FAMILY_TRANSPOSE
    const int rows = g_rows, cols = g_cols;
    g_work = (double)rows * cols;
    if (!g_tsv)
        printf("== rung %s: rows = %d, cols = %d\n", name, rows, cols);
    fflush(stdout);
    const size_t count = (size_t)rows * cols;
    float *hin = random_floats(count, 3), *hout = malloc(count * sizeof *hout);
    float *din = device_copy(hin, count), *dout = device_copy(NULL, count);
    fn(din, dout, rows, cols);
    e = cudaDeviceSynchronize();
    if (e == cudaSuccess) {
        check(cudaMemcpy(hout, dout, count * sizeof *hout, cudaMemcpyDeviceToHost), "cudaMemcpy");
        for (int r = 0; r < rows && ok; ++r)
            for (int c = 0; c < cols && ok; ++c)
                ok = hout[(size_t)c * rows + r] == hin[(size_t)r * cols + c];
    }
    free(hin), free(hout);
#elif FAMILY_DIVERGENCE
    const int n = g_count;
    g_work = n;
    if (!g_tsv)
        printf("== rung %s: n = %d%s\n", name, n, sorted_input ? ", sorted input" : "");
    fflush(stdout);
    float *hin = random_floats((size_t)n, 4);
    if (sorted_input) { /* negative keys first: the same keys in another order */
        int neg = 0;
        for (int j = 0; j < n; ++j)
            neg += hin[j] < 0;
        float *s = malloc((size_t)n * sizeof *s);
        int a = 0, b = neg;
        for (int j = 0; j < n; ++j)
            s[hin[j] < 0 ? a++ : b++] = hin[j];
        free(hin);
        hin = s;
    }
    float *din = device_copy(hin, (size_t)n), *dout = device_copy(NULL, (size_t)n);
    if (g_compact) { /* compaction: the count checked here, the elements by the grader */
        int *dcount, count = -1, want = 0;
        check(cudaMalloc((void **)&dcount, sizeof *dcount), "cudaMalloc");
        g_compact(din, n, dout, dcount);
        e = cudaDeviceSynchronize();
        if (e == cudaSuccess)
            check(cudaMemcpy(&count, dcount, sizeof count, cudaMemcpyDeviceToHost), "cudaMemcpy");
        for (int j = 0; j < n; ++j)
            want += compact_keep(hin[j]);
        ok = count == want;
    } else {
        fn(din, dout, n);
        e = cudaDeviceSynchronize();
        ok = -1; /* not checked here: the grader does */
    }
    free(hin);
#endif
    if (e != cudaSuccess) {
        printf("   the kernel failed: %s (the report above says where)\n", cudaGetErrorString(e));
        return -2;
    }
    if (ok == 0 && !g_tsv)
        printf("   note: the result is WRONG (make grade says how)\n");
    return ok;
}

static int run_rung(int i)
{
#if FAMILY_DIVERGENCE
    g_compact = RUNGS[i].compact;
    return run_one(rung_name(i), RUNGS[i].compact ? compact_rung : RUNGS[i].fn,
                   RUNGS[i].sorted_input) != -2;
#else
    return run_one(rung_name(i), RUNGS[i].fn, 0) != -2;
#endif
}

/* the rung named exactly NAME ("yours": the entry point); 0 and *fn set, or 2 */
static int find_rung(const char *name, rung_fn *fn, int *sorted_input)
{
    *fn = NULL;
    *sorted_input = 0;
    if (!strcmp(name, "yours"))
        *fn = YOURS;
#if FAMILY_DIVERGENCE
    g_compact = NULL;
    for (int k = 1; k <= NUM_STEPS && !*fn; ++k) { /* "step1", "step2": this side's launcher */
        char step[16];
        snprintf(step, sizeof step, "step%d", k);
        if (!strcmp(name, step)) {
            g_compact = STEPS[k - 1].compact;
            *fn = g_compact ? compact_rung : STEPS[k - 1].process;
        }
    }
#endif
    for (int i = 0; i < NUM_RUNGS && !*fn; ++i)
        if (!strcmp(name, rung_name(i))) {
            *fn = RUNGS[i].fn;
#if FAMILY_DIVERGENCE
            *sorted_input = RUNGS[i].sorted_input;
            g_compact = RUNGS[i].compact;
            if (g_compact)
                *fn = compact_rung;
#endif
        }
    if (*fn)
        return 0;
    fprintf(stderr, "profile: no rung named '%s' (nor 'yours'%s); the rungs are:", name,
#if FAMILY_DIVERGENCE
            ", 'step1', 'step2'"
#else
            ""
#endif
    );
    for (int i = 0; i < NUM_RUNGS; ++i)
        fprintf(stderr, " %s", rung_name(i));
    fprintf(stderr, "\n");
    return 2;
}

#ifdef HARNESS_EMU
/* --tsv's SHAPE: "MxKxN" (matmul), "ROWSxCOLS" (transpose), "N" (chapter 03), each at most
 * 2^20; 0, or -1 with a line on stderr */
static int parse_shape(const char *shape)
{
    int v[3] = { 0, 0, 0 }, n = 0;
    const char *p = shape;
    while (n < 3) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || x < 1 || x > (1 << 20))
            break;
        v[n++] = (int)x;
        p = end;
        if (*p != 'x')
            break;
        p++;
    }
#if FAMILY_MATMUL
    const int want = 3;
#elif FAMILY_TRANSPOSE
    const int want = 2;
#else
    const int want = 1;
#endif
    if (n != want || *p) {
        fprintf(stderr, "profile: --tsv SHAPE '%s': want %s, each from 1 to 2^20\n", shape,
                want == 3 ? "MxKxN" : want == 2 ? "ROWSxCOLS" : "N");
        return -1;
    }
#if FAMILY_MATMUL
    g_m = v[0], g_k = v[1], g_n = v[2];
#elif FAMILY_TRANSPOSE
    g_rows = v[0], g_cols = v[1];
#else
    g_count = v[0];
#endif
    return 0;
}

/* --tsv NAME: one row for the concept tests and the calibration (see the top); 0, 1 if the
 * kernel failed, 2 if there is no such rung */
static int tsv(const char *name)
{
    rung_fn fn;
    int sorted_input;
    if (find_rung(name, &fn, &sorted_input) != 0)
        return 2;
    g_tsv = 1;
    emu_profile_print(0);
    emu_profile_reset();
    int ok = run_one(name, fn, sorted_input);
    if (ok == -2)
        return 1;
    profile_print_row(name, g_work, ok);
    return 0;
}
#endif

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (int i = 0; i < NUM_RUNGS; ++i)
            printf("%s\n", rung_name(i));
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "--run")) {
        rung_fn fn;
        int sorted_input;
        if (find_rung(argv[2], &fn, &sorted_input) != 0)
            return 2;
        return run_one(argv[2], fn, sorted_input) == -2;
    }
#ifdef HARNESS_EMU
    if ((argc == 3 || argc == 4) && !strcmp(argv[1], "--tsv")) {
        profile_driver_limits();
        if (argc == 4 && parse_shape(argv[3]) != 0)
            return 2;
        return tsv(argv[2]);
    }
#endif
    if (argc != 1) {
        fprintf(stderr, "usage: %s              every rung (KERNEL=name: only that one)\n"
                        "       %s --list       the rungs' names\n"
                        "       %s --run NAME   only that rung (or yours)\n",
                argv[0], argv[0], argv[0]);
#ifdef HARNESS_EMU
        fprintf(stderr, "       %s --tsv NAME [SHAPE]  one rung, or yours, as a tab-separated "
                        "row (SHAPE: MxKxN, ROWSxCOLS or N, as the chapter has)\n", argv[0]);
#endif
        return 2;
    }
    const char *kernel = getenv("KERNEL");
    int any = 0;
    for (int i = 0; i < NUM_RUNGS; ++i)
        any |= selected(i, kernel);
    if (!any) {
        fprintf(stderr, "profile: no rung named '%s'; the rungs are:", kernel);
        for (int i = 0; i < NUM_RUNGS; ++i)
            fprintf(stderr, " %s", rung_name(i));
        fprintf(stderr, "\n");
        return 2;
    }
    for (int i = 0; i < NUM_RUNGS; ++i)
        if (selected(i, kernel) && !run_rung(i))
            return 1; /* a fault is sticky: nothing more runs in this process */
    return 0;
}
