/* profile_membound.c: chapter 07's profile driver, graders/profile_main.c's counterpart for
 * the memory-bound kernels, whose launchers take other arguments than the other chapters'
 * (`make profile CH=07`, and the concept tests of graders/07-memory-bound.c).
 *
 * Built with -Ichapters/07-memory-bound against one side's kernels, for the emu's instrumented
 * build (per kernel and source line: global requests, sectors and bytes a lane, shared
 * requests and wavefronts, launches) or for the GPU, where Nsight Compute runs it a rung at a
 * time. Each rung runs once on a small shape of fixed, varied inputs:
 *
 *   atomic, tree, shuffle, single_pass   a sum of 65539 floats (sum_atomic, then steps 1-3)
 *   softmax_three_pass, softmax_short    softmax f32 at 64x1024 (the given three kernels, step 4)
 *   softmax_long                         step 4 at 4x32768 (a block a row)
 *   two_moment, layernorm_short          LayerNorm f32 at 64x1024 (the given kernel, step 5)
 *   layernorm_long                       step 5's LayerNorm f32 at 4x32768
 *   rmsnorm_short                        step 5's RMSNorm f32 at 64x1024
 *
 *   profile --list       the rungs' names
 *   profile --run NAME   that rung only ("yours": layernorm_short)
 *   profile --tsv NAME   emu build only: that rung, and instead of the tables one header line
 *                        and one tab-separated row (graders/profile_row.h) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "membound.h"
#include "tolerance.h"
#ifdef HARNESS_EMU
#include "emu_profile.h"
#include "profile_row.h"
#endif

enum rung_op { R_SUM, R_SOFTMAX, R_LN, R_RMS };
struct rung {
    const char *name;
    enum rung_op op;
    int rows, cols;
    sum_fn sum;
    softmax_f32_fn softmax;
    layernorm_f32_fn ln;
    rmsnorm_f32_fn rms;
};

#define SUM_N 65539 /* 2^16 + 3: a float4 path and a scalar tail */
/* the contract's eps of LayerNorm and RMSNorm, as chapter 07's grader passes them */
#define LN_EPS 1e-5f
#define RMS_EPS 1e-6f
static const struct rung RUNGS[] = {
    { "atomic", R_SUM, 1, SUM_N, sum_atomic, NULL, NULL, NULL },
    { "tree", R_SUM, 1, SUM_N, sum_tree, NULL, NULL, NULL },
    { "shuffle", R_SUM, 1, SUM_N, sum_shuffle, NULL, NULL, NULL },
    { "single_pass", R_SUM, 1, SUM_N, sum_single_pass, NULL, NULL, NULL },
    { "softmax_three_pass", R_SOFTMAX, 64, 1024, NULL, softmax_three_pass_f32, NULL, NULL },
    { "softmax_short", R_SOFTMAX, 64, 1024, NULL, softmax_f32, NULL, NULL },
    { "softmax_long", R_SOFTMAX, 4, 32768, NULL, softmax_f32, NULL, NULL },
    { "two_moment", R_LN, 64, 1024, NULL, NULL, layernorm_two_moment_f32, NULL },
    { "layernorm_short", R_LN, 64, 1024, NULL, NULL, layernorm_f32, NULL },
    { "layernorm_long", R_LN, 4, 32768, NULL, NULL, layernorm_f32, NULL },
    { "rmsnorm_short", R_RMS, 64, 1024, NULL, NULL, NULL, rmsnorm_f32 },
};
#define NUM_RUNGS ((int)(sizeof RUNGS / sizeof RUNGS[0]))

static int g_tsv;

static void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "profile: %s: %s\n", what, cudaGetErrorString(e));
        exit(EXIT_FAILURE);
    }
}

static void *device_floats(const float *h, size_t n)
{
    void *d;
    check(cudaMalloc(&d, n * sizeof(float)), "cudaMalloc");
    if (h)
        check(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    else
        check(cudaMemset(d, 0xff, n * sizeof(float)), "cudaMemset");
    return d;
}

static float *varied(size_t n, unsigned seed)
{
    float *h = malloc(n * sizeof *h);
    if (!h)
        abort();
    for (size_t i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
    return h;
}

/* runs rung r once: 1 if its result is right, -1 if not checked here, 0 if wrong, -2 if the
 * kernel failed */
static int run_one(const struct rung *r, double *work)
{
    size_t n = (size_t)r->rows * r->cols;
    *work = (double)n;
    if (!g_tsv)
        printf("== rung %s: %s %dx%d\n", r->name, r->op == R_SUM ? "sum of" : "f32",
               r->rows, r->cols);
    fflush(stdout);
    float *hx = varied(n, 7), *hw = varied((size_t)r->cols, 8), *hb = varied((size_t)r->cols, 9);
    void *dx = device_floats(hx, n), *dw = device_floats(hw, (size_t)r->cols);
    void *db = device_floats(hb, (size_t)r->cols);
    void *dy = device_floats(NULL, r->op == R_SUM ? 1 : n);
    void *scratch;
    size_t sb = membound_scratch_bytes(r->rows);
    check(cudaMalloc(&scratch, sb), "cudaMalloc");
    check(cudaMemset(scratch, 0xff, sb), "cudaMemset");
    int ok = -1;
    switch (r->op) {
    case R_SUM: r->sum(dx, r->cols, dy, scratch); break;
    case R_SOFTMAX: r->softmax(dx, dy, r->rows, r->cols, scratch); break;
    case R_LN: r->ln(dx, dw, db, dy, r->rows, r->cols, LN_EPS, scratch); break;
    case R_RMS: r->rms(dx, dw, dy, r->rows, r->cols, RMS_EPS, scratch); break;
    }
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess && r->op == R_SUM) { /* the rows' results are the grader's to check */
        float got;
        check(cudaMemcpy(&got, dy, sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy");
        double want = 0, abs = 0;
        for (size_t i = 0; i < n; ++i)
            want += hx[i], abs += fabs((double)hx[i]);
        ok = fabs(got - want) <= TOL_PROFILE_SUM * abs;
    }
    free(hx), free(hw), free(hb);
    cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dy), cudaFree(scratch);
    if (e != cudaSuccess) {
        printf("   the kernel failed: %s (the report above says where)\n", cudaGetErrorString(e));
        return -2;
    }
    if (ok == 0 && !g_tsv)
        printf("   note: the result is WRONG (make grade says how)\n");
    return ok;
}

static const struct rung *find_rung(const char *name)
{
    if (!strcmp(name, "yours"))
        name = "layernorm_short";
    for (int i = 0; i < NUM_RUNGS; ++i)
        if (!strcmp(name, RUNGS[i].name))
            return &RUNGS[i];
    fprintf(stderr, "profile: no rung named '%s' (nor 'yours'); the rungs are:", name);
    for (int i = 0; i < NUM_RUNGS; ++i)
        fprintf(stderr, " %s", RUNGS[i].name);
    fprintf(stderr, "\n");
    return NULL;
}

int main(int argc, char **argv)
{
    double work;
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (int i = 0; i < NUM_RUNGS; ++i)
            printf("%s\n", RUNGS[i].name);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "--run")) {
        const struct rung *r = find_rung(argv[2]);
        return r ? run_one(r, &work) == -2 : 2;
    }
#ifdef HARNESS_EMU
    if (argc == 3 && !strcmp(argv[1], "--tsv")) {
        profile_driver_limits();
        const struct rung *r = find_rung(argv[2]);
        if (!r)
            return 2;
        g_tsv = 1;
        emu_profile_print(0);
        emu_profile_reset();
        int ok = run_one(r, &work);
        if (ok == -2)
            return 1;
        profile_print_row(r->name, work, ok);
        return 0;
    }
#endif
    if (argc != 1) {
        fprintf(stderr, "usage: %s              every rung (KERNEL=name: only that one)\n"
                        "       %s --list       the rungs' names\n"
                        "       %s --run NAME   only that rung (or yours)\n",
                argv[0], argv[0], argv[0]);
        return 2;
    }
    const char *kernel = getenv("KERNEL");
    int any = 0;
    for (int i = 0; i < NUM_RUNGS; ++i) {
        if (kernel && *kernel && strcmp(kernel, RUNGS[i].name))
            continue;
        any = 1;
        if (run_one(&RUNGS[i], &work) == -2)
            return 1; /* a fault is sticky: nothing more runs in this process */
    }
    if (!any) {
        find_rung(kernel);
        return 2;
    }
    return 0;
}
