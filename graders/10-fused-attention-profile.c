/* 10-fused-attention-profile.c: chapter 10's profile driver, graders/profile_main.c's
 * counterpart for the attention launchers (`make profile CH=10`, and the concept test of
 * graders/10-fused-attention.c).
 *
 * Built with -Ichapters/10-fused-attention against one side's kernels, for the emu's
 * instrumented build (per kernel and source line: global requests, sectors and bytes a lane,
 * shared requests and wavefronts, launches) or for the GPU, where Nsight Compute runs it a
 * rung at a time. Each rung runs once, bf16, on fixed, varied inputs:
 *
 *   unfused   step 1 (the given baseline: S and P through memory)
 *   fused     step 2 (yours)
 *
 * at 1 x 2 heads x len 200 x dim 64, or at the shape given after the name: BxHxLxD, with a
 * trailing "c" for the causal mask ("1x2x173x128c").
 *
 *   profile --list             the rungs' names
 *   profile --run NAME [SHAPE] that rung only ("yours": fused)
 *   profile --tsv NAME [SHAPE] emu build only: that rung, and instead of the tables one header
 *                              line and one tab-separated row (graders/profile_row.h) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "attention.h"
#ifdef HARNESS_EMU
#include "emu_profile.h"
#include "profile_row.h"
#endif

struct rung {
    const char *name;
    int step; /* ATTENTION_STEPS[step] */
};
static const struct rung RUNGS[] = { { "unfused", 0 }, { "fused", 1 } };
#define NUM_RUNGS ((int)(sizeof RUNGS / sizeof RUNGS[0]))

struct shape { int batch, heads, len, dim, causal; };

static int g_tsv;

static void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "profile: %s: %s\n", what, cudaGetErrorString(e));
        exit(EXIT_FAILURE);
    }
}

/* n bf16 values in [-1, 1), from a fixed seed, as their bits (truncated: any bf16 will do) */
static void *device_bf16(size_t n, unsigned seed)
{
    unsigned short *h = malloc(n * sizeof *h);
    if (!h)
        abort();
    for (size_t i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        float f = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
        unsigned b;
        memcpy(&b, &f, 4);
        h[i] = (unsigned short)(b >> 16);
    }
    void *d;
    check(cudaMalloc(&d, n * sizeof *h), "cudaMalloc");
    check(cudaMemcpy(d, h, n * sizeof *h, cudaMemcpyHostToDevice), "cudaMemcpy");
    free(h);
    return d;
}

/* runs rung r once at s: 0, or -2 if the kernel failed (the result is the grader's to check) */
static int run_one(const struct rung *r, const struct shape *s, double *work)
{
    const size_t rows = (size_t)s->batch * s->heads * s->len, n = rows * s->dim;
    *work = 4.0 * (double)s->batch * s->heads * s->len * s->len * s->dim;
    if (!g_tsv)
        printf("== rung %s: bf16 %dx%dx%dx%d%s\n", r->name, s->batch, s->heads, s->len, s->dim,
               s->causal ? " causal" : "");
    fflush(stdout);
    void *dq = device_bf16(n, 7), *dk = device_bf16(n, 8), *dv = device_bf16(n, 9), *d_o, *lse,
         *work_space;
    size_t wb = attention_work_bytes(s->batch, s->heads, s->len);
    check(cudaMalloc(&d_o, n * 2), "cudaMalloc");
    check(cudaMalloc(&lse, rows * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&work_space, wb), "cudaMalloc");
    check(cudaMemset(work_space, 0xff, wb), "cudaMemset");
    /* no padding mask (d_kv_len NULL): every key is real */
    ATTENTION_STEPS[r->step].bf16(dq, dk, dv, d_o, lse, NULL, s->batch, s->heads, s->len, s->dim,
                                  s->causal, (float)(1.0 / sqrt((double)s->dim)), work_space);
    cudaError_t e = cudaDeviceSynchronize();
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(d_o), cudaFree(lse);
    cudaFree(work_space);
    if (e != cudaSuccess) {
        printf("   the kernel failed: %s (the report above says where)\n", cudaGetErrorString(e));
        return -2;
    }
    return -1;
}

static const struct rung *find_rung(const char *name)
{
    if (!strcmp(name, "yours"))
        name = "fused";
    for (int i = 0; i < NUM_RUNGS; ++i)
        if (!strcmp(name, RUNGS[i].name))
            return &RUNGS[i];
    fprintf(stderr, "profile: no rung named '%s' (nor 'yours'); the rungs are:", name);
    for (int i = 0; i < NUM_RUNGS; ++i)
        fprintf(stderr, " %s", RUNGS[i].name);
    fprintf(stderr, "\n");
    return NULL;
}

/* "BxHxLxD" or "BxHxLxDc" into *s; 0, or -1 with a message */
static int parse_shape(const char *text, struct shape *s)
{
    char c = 0;
    int got = sscanf(text, "%dx%dx%dx%d%c", &s->batch, &s->heads, &s->len, &s->dim, &c);
    s->causal = got == 5 && c == 'c';
    if (got < 4 || (got == 5 && c != 'c') || s->batch < 1 || s->heads < 1 || s->len < 1 ||
        (s->dim != 64 && s->dim != 128)) {
        fprintf(stderr, "profile: shape '%s': BxHxLxD with dim 64 or 128, \"c\" after it for "
                        "the causal mask\n", text);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    double work;
    struct shape s = { 1, 2, 200, 64, 0 };
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (int i = 0; i < NUM_RUNGS; ++i)
            printf("%s\n", RUNGS[i].name);
        return 0;
    }
    if ((argc == 3 || argc == 4) && !strcmp(argv[1], "--run")) {
        const struct rung *r = find_rung(argv[2]);
        if (!r || (argc == 4 && parse_shape(argv[3], &s) != 0))
            return 2;
        return run_one(r, &s, &work) == -2;
    }
#ifdef HARNESS_EMU
    if ((argc == 3 || argc == 4) && !strcmp(argv[1], "--tsv")) {
        profile_driver_limits();
        const struct rung *r = find_rung(argv[2]);
        if (!r || (argc == 4 && parse_shape(argv[3], &s) != 0))
            return 2;
        g_tsv = 1;
        emu_profile_print(0);
        emu_profile_reset();
        int ok = run_one(r, &s, &work);
        if (ok == -2)
            return 1;
        profile_print_row(r->name, work, ok);
        return 0;
    }
#endif
    if (argc != 1) {
        fprintf(stderr, "usage: %s                     every rung (KERNEL=name: only that one)\n"
                        "       %s --list              the rungs' names\n"
                        "       %s --run NAME [SHAPE]  only that rung (or yours), at SHAPE "
                        "(BxHxLxD[c])\n",
                argv[0], argv[0], argv[0]);
        return 2;
    }
    const char *kernel = getenv("KERNEL");
    int any = 0;
    for (int i = 0; i < NUM_RUNGS; ++i) {
        if (kernel && *kernel && strcmp(kernel, RUNGS[i].name))
            continue;
        any = 1;
        if (run_one(&RUNGS[i], &s, &work) == -2)
            return 1; /* a fault is sticky: nothing more runs in this process */
    }
    if (!any) {
        find_rung(kernel);
        return 2;
    }
    return 0;
}
