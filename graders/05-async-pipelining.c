/* 05-async-pipelining.c: the grader of chapter 05, and its bench.
 *
 *   grade            gemm_pipelined on edge shapes (k and n odd or not multiples of 8 included)
 *                    against a double-precision reference computed from the same bf16 inputs,
 *                    twice each on fresh inputs; every other rung of the linked files on small
 *                    odd shapes; on a GPU, gemm_pipelined at least 1.2x gemm_sync at 4096^3,
 *                    with cuBLAS BF16 measured in the same run as the ceiling, and the machine
 *                    code checked for LDGSTS (cp.async) in your kernel, UTMALDG (TMA) in
 *                    step 4's, and HGMMA (wgmma) and UTMALDG in step 5's
 *   grade --bench F  every rung and cuBLAS BF16 at 1024^3, 2048^3, 4096^3 and two odd shapes,
 *                    plus the stage-count sweep at 4096^3, as tab-separated rows in F (GPU only);
 *                    on stdout, each rung's share of cuBLAS BF16 at the same shape
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grade.h"
#include "gemm.h"

#ifndef HARNESS_EMU
#include <cublas_v2.h>
#endif

#define CHAPTER "05-async-pipelining"
#define NEEDS_SPEEDUP 1.2
#define SPEED_SIZE 4096

struct shape { int m, k, n; };

/* Edge shapes: one element; primes under the tile with k odd (no 16-byte row starts: the
 * narrow path); a k that ends mid-tile with k % 8 == 0 (the zero-filled k tail); odd k with
 * several k tiles; a square that fills the GPU (k and n multiples of 8 but not of the tile:
 * the 16-byte copies of both A and B meet the k tail); a tall thin C with odd k and n. */
static const struct shape GPU_SHAPES[] = {
    { 1, 1, 1 }, { 17, 33, 9 }, { 100, 72, 130 }, { 200, 123, 150 }, { 1000, 1000, 1000 },
    { 3001, 517, 37 },
};
/* On the CPU backend every lane of a warp computes a whole 16 x 16 x 16 product (see
 * harness/emu/include/mma.h), so the shapes that only exist to fill a GPU shrink. */
static const struct shape CPU_SHAPES[] = {
    { 1, 1, 1 }, { 17, 33, 9 }, { 100, 72, 130 }, { 200, 123, 150 }, { 264, 264, 264 },
    { 301, 517, 37 },
};
#define NSHAPES ((int)(sizeof GPU_SHAPES / sizeof GPU_SHAPES[0]))

/* Every other rung on these. The first three have k or n odd, which the TMA rungs (steps 4
 * and 5) hand to step 3; the last two have k and n multiples of 8, so the TMA rungs run their
 * own kernels on them: one element of C in a box far larger than the matrix, and tails in m,
 * k and n with enough tiles of k (9 of step 5's 64) to go round its 4-stage ring twice. */
static const struct shape RUNG_SHAPES[] = {
    { 17, 33, 9 }, { 100, 72, 130 }, { 200, 123, 150 }, { 1, 8, 8 }, { 130, 520, 264 },
};
#define NRUNG_SHAPES ((int)(sizeof RUNG_SHAPES / sizeof RUNG_SHAPES[0]))

static int CORRECT, RUNGS, SPEED, SASS;
static int RUNG_INDEX[GRADE_MAX_TESTS]; /* test iteration -> ladder index */
static int SASS_CHECK[GRADE_MAX_TESTS]; /* test iteration -> SASS_CHECKS index */

/* ---- the ladder ---------------------------------------------------------------------------
 *
 * GEMM_RUNGS as rungs.cu gives it: every step, NULL where this build does not link its file. */

#define MAX_RUNGS 32
static struct gemm_rung LADDER[MAX_RUNGS];
static int NUM_LADDER;

static void ladder_init(void)
{
    NUM_LADDER = 0;
    for (int v = 0; v < GEMM_NUM_RUNGS && NUM_LADDER < MAX_RUNGS; v++)
        LADDER[NUM_LADDER++] = GEMM_RUNGS[v];
}

/* NULL when a rung this build has can run on a device of compute capability cc; else why not */
static const char *rung_cannot_run(const struct gemm_rung *g, int cc, char *why, size_t len)
{
    if (g->min_cc > cc)
        snprintf(why, len, "needs sm_%d; this device is sm_%d", g->min_cc, cc);
    else if (g->arch_specific && cc != g->min_cc)
        snprintf(why, len, "%s is sm_%da code, which runs on sm_%d only; this device is sm_%d",
                 g->name, g->min_cc, g->min_cc, cc);
    else
        return NULL;
    return why;
}

static const struct shape *shapes(void)
{
    return gpu_times_are_real() ? GPU_SHAPES : CPU_SHAPES;
}

/* ---- bf16 on the host ------------------------------------------------------------------- */

/* Round to the nearest bf16, ties to even (what __float2bfloat16 does); inputs are finite. */
static gemm_bf16 bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (gemm_bf16)(u >> 16);
}

static float bf16_to_float(gemm_bf16 h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- cuBLAS BF16, the ceiling and the reference past what the CPU can check ------------- */

#ifndef HARNESS_EMU
#define CUBLAS_CHECK(call) do {                                                  \
    cublasStatus_t st_ = (call);                                                 \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                          \
        fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,     \
                cublasGetStatusString(st_));                                     \
        exit(EXIT_FAILURE);                                                      \
    }                                                                            \
} while (0)
#endif

/* Row-major C = A B, bf16 in, fp32 out and fp32 accumulation, on the tensor cores. Returns 0,
 * or -1 on the CPU backend. */
static int blas_gemm_bf16(const gemm_bf16 *d_a, const gemm_bf16 *d_b, float *d_c, int m, int k,
                          int n)
{
#ifdef HARNESS_EMU
    (void)d_a; (void)d_b; (void)d_c; (void)m; (void)k; (void)n;
    return -1;
#else
    static cublasHandle_t handle;
    if (!handle)
        CUBLAS_CHECK(cublasCreate(&handle));
    const float one = 1.0f, zero = 0.0f;
    /* column-major C^T = B^T A^T: B first, m and n swapped, as in blas.c */
    CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, d_b, CUDA_R_16BF,
                              n, d_a, CUDA_R_16BF, k, &zero, d_c, CUDA_R_32F, n,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return 0;
#endif
}

/* ---- problems ---------------------------------------------------------------------------- */

struct problem {
    struct shape s;
    gemm_bf16 *h_a, *h_b;   /* the bf16 inputs */
    float *h_af, *h_bf;     /* the same values as floats, for the reference */
    float *h_c;
    double *ref, *scale;
    gemm_bf16 *d_a, *d_b;
    float *d_c;
};

static void problem_init(struct problem *p, struct shape s)
{
    p->s = s;
    size_t na = (size_t)s.m * s.k, nb = (size_t)s.k * s.n, nc = (size_t)s.m * s.n;
    p->h_a = xmalloc(na * sizeof(gemm_bf16));
    p->h_b = xmalloc(nb * sizeof(gemm_bf16));
    p->h_af = xmalloc(na * sizeof(float));
    p->h_bf = xmalloc(nb * sizeof(float));
    p->h_c = xmalloc(nc * sizeof(float));
    p->ref = xmalloc(nc * sizeof(double));
    p->scale = xmalloc(nc * sizeof(double));
    p->d_a = dbuf_alloc(na * sizeof(gemm_bf16), "d_a");
    p->d_b = dbuf_alloc(nb * sizeof(gemm_bf16), "d_b");
    p->d_c = dbuf_alloc(nc * sizeof(float), "d_c");
}

static void fill_bf16(struct rng *r, gemm_bf16 *h, float *hf, size_t n)
{
    rng_fill_f32(r, hf, n, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) {
        h[i] = bf16_from_float(hf[i]);
        hf[i] = bf16_to_float(h[i]);
        if (hf[i] == 0.0f) { /* never zeros: a dropped term must show */
            h[i] = bf16_from_float(0.5f);
            hf[i] = 0.5f;
        }
    }
}

/* The reference and the scale |A||B| of the rounded inputs, in double on the CPU. */
static void problem_ref_cpu(struct problem *p)
{
    ref_matmul(p->h_af, p->h_bf, p->ref, p->scale, p->s.m, p->s.k, p->s.n);
}

/* Past what the CPU checks in time: the reference from cuBLAS, and the scale from cuBLAS on
 * |A| and |B| (clearing a bf16's sign bit is its absolute value). Returns -1 on emu. */
static int problem_ref_blas(struct problem *p)
{
    struct shape s = p->s;
    size_t na = (size_t)s.m * s.k, nb = (size_t)s.k * s.n, nc = (size_t)s.m * s.n;
    if (blas_gemm_bf16(p->d_a, p->d_b, p->d_c, s.m, s.k, s.n) != 0)
        return -1;
    gpu_sync();
    to_host(p->h_c, p->d_c, nc * sizeof(float));
    for (size_t i = 0; i < nc; i++)
        p->ref[i] = p->h_c[i];
    gemm_bf16 *abs_a = xmalloc(na * sizeof(gemm_bf16)), *abs_b = xmalloc(nb * sizeof(gemm_bf16));
    for (size_t i = 0; i < na; i++)
        abs_a[i] = p->h_a[i] & 0x7fffu;
    for (size_t i = 0; i < nb; i++)
        abs_b[i] = p->h_b[i] & 0x7fffu;
    to_device(p->d_a, abs_a, na * sizeof(gemm_bf16));
    to_device(p->d_b, abs_b, nb * sizeof(gemm_bf16));
    blas_gemm_bf16(p->d_a, p->d_b, p->d_c, s.m, s.k, s.n);
    gpu_sync();
    to_host(p->h_c, p->d_c, nc * sizeof(float));
    for (size_t i = 0; i < nc; i++)
        p->scale[i] = p->h_c[i];
    to_device(p->d_a, p->h_a, na * sizeof(gemm_bf16));
    to_device(p->d_b, p->h_b, nb * sizeof(gemm_bf16));
    free(abs_a);
    free(abs_b);
    return 0;
}

/* Fresh inputs, on the device, and a poisoned C; the reference is the caller's choice. */
static void problem_fill(struct problem *p, struct rng *r)
{
    struct shape s = p->s;
    fill_bf16(r, p->h_a, p->h_af, (size_t)s.m * s.k);
    fill_bf16(r, p->h_b, p->h_bf, (size_t)s.k * s.n);
    to_device(p->d_a, p->h_a, (size_t)s.m * s.k * sizeof(gemm_bf16));
    to_device(p->d_b, p->h_b, (size_t)s.k * s.n * sizeof(gemm_bf16));
    dbuf_poison(p->d_c);
}

static void problem_free(struct problem *p)
{
    dbuf_free(p->d_a);
    dbuf_free(p->d_b);
    dbuf_free(p->d_c);
    free(p->h_a);
    free(p->h_b);
    free(p->h_af);
    free(p->h_bf);
    free(p->h_c);
    free(p->ref);
    free(p->scale);
}

/* What the bad elements of C suggest, for this chapter's bugs. */
static void pipeline_hint(const struct cmp_result *c, const float *got, struct shape s,
                          char *hint, size_t len)
{
    size_t zeros = 0, nc = (size_t)s.m * s.n;
    for (size_t i = 0; i < nc; i++)
        zeros += got[i] == 0.0f;
    if (zeros == nc) {
        snprintf(hint, len, "C is all zeros: the accumulators were stored, but nothing was "
                            "multiplied into them: is the loop over the tiles of k there (the "
                            "TODO in gemm_pipelined_kernel), and does it reach mma_tile?");
        return;
    }
    cmp_hint(c, (size_t)s.m, (size_t)s.n, hint, len);
    if (hint[0])
        return;
    if (c->nonfinite && c->unwritten < c->nonfinite)
        snprintf(hint, len, "NaN or Inf in C that the poison did not put there: a tile read "
                            "before its copy landed, or shared memory past the k tail that was "
                            "never zero-filled (the 4th argument of __pipeline_memcpy_async is "
                            "how many bytes to zero)");
    else if (c->bad == c->checked && s.k > GEMM_BK)
        snprintf(hint, len, "every element is wrong: does the loop multiply the stage that "
                            "holds tile t (t %% 2), after __pipeline_wait_prior and "
                            "__syncthreads, and is every accumulator filled with 0 first?");
    else
        snprintf(hint, len, "the wrong elements do not sit at an edge: check which stage each "
                            "copy fills and which one the math reads, and that the tile past "
                            "k is zero-filled (17x33x9 and 100x72x130 end k mid-tile)");
}

/* Copy C back and compare; on a mismatch, fail the test with the first wrong elements and a
 * hint. rtol_mult widens the tolerance when the reference is itself a GPU result. */
static void problem_check(struct problem *p, int slot, const char *what, double rtol_mult)
{
    struct shape s = p->s;
    char guard[256];
    if (dbuf_check_guards(p->d_c, guard, sizeof guard) != 0) {
        grade_hint(slot, "a thread stored outside C: the store of a tile that hangs over the "
                         "edge needs row < m && col < n");
        ck_abort_msg("%dx%dx%d: %s: %s", s.m, s.k, s.n, what, guard);
    }
    to_host(p->h_c, p->d_c, (size_t)s.m * s.n * sizeof(float));
    struct cmp_result c = compare_f32(p->h_c, p->ref, p->scale, (size_t)s.m * s.n,
                                      (size_t)s.n, rtol_mult * fp32_dot_rtol(s.k), 0.0);
    if (c.bad == 0)
        return;
    char desc[512], hint[400];
    cmp_describe(&c, (size_t)s.n, desc, sizeof desc);
    pipeline_hint(&c, p->h_c, s, hint, sizeof hint);
    grade_hint(slot, "%s", hint);
    ck_abort_msg("%dx%dx%d: %s: %s", s.m, s.k, s.n, what, desc);
}

static int device_cc(void)
{
    const struct device_info *d = grader_device();
    return 10 * d->cc_major + d->cc_minor;
}

/* ---- correctness ------------------------------------------------------------------------ */

START_TEST(correct)
{
    int slot = CORRECT + _i;
    if (grade_quick_skip(slot, (double)shapes()[_i].m * shapes()[_i].k * shapes()[_i].n,
                         "multiply-adds"))
        return;
    struct rng r = grade_rng(slot);
    struct problem p;
    problem_init(&p, shapes()[_i]);
    /* twice, on different inputs: a kernel that remembers an answer fails the second; on
     * the CPU backend the second run also shuffles the order threads meet at barriers */
    for (int round = 0; round < 2; round++) {
        const char *what = "gemm_pipelined";
        if (round == 1)
            what = gpu_shuffle_schedule(rng_next(&r))
                       ? "gemm_pipelined, second run, shuffled schedule"
                       : "gemm_pipelined, second run";
        problem_fill(&p, &r);
        problem_ref_cpu(&p);
        gemm_pipelined(p.d_a, p.d_b, p.d_c, p.s.m, p.s.k, p.s.n);
        gpu_sync();
        problem_check(&p, slot, what, 1.0);
    }
    problem_free(&p);
}
END_TEST

START_TEST(rung_correct)
{
    int slot = RUNGS + _i;
    const struct gemm_rung *g = &LADDER[RUNG_INDEX[_i]];
    /* the TMA rungs hand a shape whose k or n is not a multiple of 8 to step 3 */
    int tma_rung = strcmp(g->name, "tma") == 0 || strcmp(g->name, "wgmma") == 0;
    struct rng r = grade_rng(slot);
    for (int i = 0; i < NRUNG_SHAPES; i++) {
        struct problem p;
        problem_init(&p, RUNG_SHAPES[i]);
        char what[96];
        snprintf(what, sizeof what, "%s%s", g->name,
                 tma_rung && (p.s.k % 8 || p.s.n % 8)
                     ? " (k or n not a multiple of 8: step 3's kernel ran)" : "");
        for (int round = 0; round < 2; round++) {
            if (round == 1)
                gpu_shuffle_schedule(rng_next(&r));
            problem_fill(&p, &r);
            problem_ref_cpu(&p);
            g->fn(p.d_a, p.d_b, p.d_c, p.s.m, p.s.k, p.s.n);
            gpu_sync();
            problem_check(&p, slot, what, 1.0);
        }
        problem_free(&p);
    }
    if (tma_rung)
        grade_note(slot, "its own kernel where k and n are multiples of 8, step 3's elsewhere "
                         "(TMA needs 16-byte row strides)");
}
END_TEST

/* ---- speed (GPU only) ------------------------------------------------------------------- */

struct launch { gemm_fn fn; struct problem *p; };

static void run_rung(void *ctx)
{
    struct launch *l = ctx;
    l->fn(l->p->d_a, l->p->d_b, l->p->d_c, l->p->s.m, l->p->s.k, l->p->s.n);
}

static void run_cublas(void *ctx)
{
    struct launch *l = ctx;
    blas_gemm_bf16(l->p->d_a, l->p->d_b, l->p->d_c, l->p->s.m, l->p->s.k, l->p->s.n);
}

static double tflops(struct shape s, double ms)
{
    return 2.0 * s.m * s.k * s.n / (ms * 1e-3) / 1e12;
}

START_TEST(speed)
{
    int slot = SPEED;
    struct rng r = grade_rng(slot);
    struct problem p;
    problem_init(&p, (struct shape){ SPEED_SIZE, SPEED_SIZE, SPEED_SIZE });
    problem_fill(&p, &r);
    ck_assert_msg(problem_ref_blas(&p) == 0, "no cuBLAS for the reference");

    /* a kernel is timed only once it is right; C is poisoned before each kernel's runs, so
     * the check after timing sees what that kernel wrote and nothing else. The reference is
     * cuBLAS's own fp32 sum, so the tolerance covers two roundings. */
    dbuf_poison(p.d_c);
    gemm_pipelined(p.d_a, p.d_b, p.d_c, p.s.m, p.s.k, p.s.n);
    gpu_sync();
    problem_check(&p, slot, "gemm_pipelined (speed is graded once it is correct)", 2.0);

    struct launch base = { gemm_sync, &p }, yours = { gemm_pipelined, &p }, ceil = { NULL, &p };
    dbuf_poison(p.d_c);
    struct timing tb = gpu_time(run_rung, &base, 2, 10);
    dbuf_poison(p.d_c);
    struct timing ty = gpu_time(run_rung, &yours, 2, 10);
    problem_check(&p, slot, "gemm_pipelined after timing", 2.0);
    struct timing tc = gpu_time(run_cublas, &ceil, 2, 10);

    double ratio = tb.median_ms / ty.median_ms;
    struct shape s = p.s;
    grade_note(slot, "yours %.0f TFLOP/s = %.2fx gemm_sync's %.0f (needs %.1fx); cuBLAS BF16 "
                     "%.0f TFLOP/s, so yours is %.0f%% of it",
               tflops(s, ty.median_ms), ratio, tflops(s, tb.median_ms), NEEDS_SPEEDUP,
               tflops(s, tc.median_ms), 100.0 * tc.median_ms / ty.median_ms);
    grade_summary("%.2fx over gemm_sync (needs %.1fx)", ratio, NEEDS_SPEEDUP);
    grade_hint(slot, "issue the copy of tile t + 1 BEFORE multiplying tile t, and wait for a "
                     "tile only right before its math: __pipeline_wait_prior(0) then "
                     "__syncthreads() at the top of the loop, the next copies and their "
                     "__pipeline_commit() after it, the mma last");
    problem_free(&p);
    ck_assert_msg(ratio >= NEEDS_SPEEDUP,
                  "%dx%dx%d: yours %.3f ms, gemm_sync %.3f ms: %.2fx, needs %.1fx", s.m, s.k,
                  s.n, ty.median_ms, tb.median_ms, ratio, NEEDS_SPEEDUP);
}
END_TEST

/* ---- the instructions are really there (GPU only, needs cuobjdump) ---------------------- */

/* 1 when `prog` is an executable file in a directory of PATH. */
static int on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    char dir[4096], file[4200];
    while (*path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && len < sizeof dir) {
            memcpy(dir, path, len);
            dir[len] = '\0';
            snprintf(file, sizeof file, "%s/%s", dir, prog);
            if (access(file, X_OK) == 0)
                return 1;
        }
        path += len + (path[len] == ':');
    }
    return 0;
}

static int isdigit_ascii(char c)
{
    return c >= '0' && c <= '9';
}

/* The path of this grader's own executable, resolved here, in the grader's process. It cannot
 * be left to cuobjdump: "cuobjdump -sass /proc/self/exe" run through popen makes /proc/self/exe
 * name the shell's or cuobjdump's own executable when they open it, not this program, and on the
 * H200 that made both SASS tests fail with "shows no ... kernel" although the kernels and their
 * LDGSTS were there. Returns 0, or -1 with `why` filled. */
static int own_path(char *buf, size_t size, char *why, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n < 0 || (size_t)n >= size - 1) {
        snprintf(why, len, "could not resolve this grader's own path from /proc/self/exe");
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

/* `path` in single quotes for sh, each ' written as '\'' so that no path can end the quoting. */
static int shell_quote(const char *path, char *out, size_t size)
{
    size_t o = 0;
    if (o + 1 >= size)
        return -1;
    out[o++] = '\'';
    for (const char *p = path; *p; p++) {
        const char *piece = *p == '\'' ? "'\\''" : NULL;
        size_t plen = piece ? strlen(piece) : 1;
        if (o + plen + 2 >= size)
            return -1;
        if (piece) {
            memcpy(out + o, piece, plen);
            o += plen;
        } else {
            out[o++] = *p;
        }
    }
    out[o++] = '\'';
    out[o] = '\0';
    return 0;
}

/* What the machine code must show: the instruction each rung is about, in its kernel, in the
 * cubin a device of this compute capability runs (for step 5, the sm_90a one). */
static const struct sass_check {
    const char *rung, *kernel, *opcode;
    int arch_specific; /* 1: the sm_XYa cubin */
    const char *hint;
} SASS_CHECKS[] = {
    { "pipelined", "gemm_pipelined_kernel", "LDGSTS", 0,
      "the copies must be __pipeline_memcpy_async (cp.async): a plain load and store through "
      "registers compiles to LDG and STS" },
    { "tma", "gemm_tma_kernel", "UTMALDG", 0,
      "the copies must be cp.async.bulk.tensor (TMA) instructions" },
    { "wgmma", "gemm_wgmma_kernel", "HGMMA", 1,
      "the math must be wgmma.mma_async in an sm_90a cubin (-gencode arch=compute_90a,"
      "code=sm_90a, which the Makefile adds when ARCH has 90): elsewhere the kernel is a trap" },
    { "wgmma", "gemm_wgmma_kernel", "UTMALDG", 1,
      "the copies must be cp.async.bulk.tensor (TMA) instructions, in the sm_90a cubin" },
};
#define NSASS_CHECKS ((int)(sizeof SASS_CHECKS / sizeof SASS_CHECKS[0]))

/* The SASS of every function whose name contains `kernel`, in the cubin for `arch` ("sm_90",
 * "sm_90a"), from this very program (the kernels are in its fat binary, found by its resolved
 * path): does any line hold `opcode`? Returns 1 or 0, or -1 when no such function was found
 * for that arch. */
static int sass_has(const char *kernel, const char *opcode, const char *arch, char *why,
                    size_t len)
{
    char self[4096], quoted[3 * 4096], cmd[3 * 4096 + 64];
    if (own_path(self, sizeof self, why, len) != 0)
        return -1;
    if (shell_quote(self, quoted, sizeof quoted) != 0) {
        snprintf(why, len, "this grader's path is too long to pass to cuobjdump");
        return -1;
    }
    snprintf(cmd, sizeof cmd, "cuobjdump -sass %s 2>&1", quoted);
    FILE *f = popen(cmd, "r");
    if (!f) {
        snprintf(why, len, "could not run cuobjdump");
        return -1;
    }
    char line[4096];
    size_t alen = strlen(arch);
    int in_arch = 0, in_fn = 0, found_fn = 0, found_op = 0;
    while (fgets(line, sizeof line, f)) {
        char *a = strstr(line, "arch = sm_");
        if (a) {
            /* exactly `arch`: "sm_90" is neither "sm_90a" nor the start of "sm_900" */
            char next = a[7 + alen];
            in_arch = strncmp(a + 7, arch, alen) == 0 && !isdigit_ascii(next) && next != 'a';
            in_fn = 0;
            continue;
        }
        if (strstr(line, "Function : ")) {
            in_fn = in_arch && strstr(line, kernel) != NULL;
            found_fn |= in_fn;
            continue;
        }
        if (in_fn && strstr(line, opcode))
            found_op = 1;
    }
    int st = pclose(f);
    if (!found_fn) {
        int code = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        snprintf(why, len, "cuobjdump -sass %.100s (exit code %d) shows no %.40s for %.8s",
                 self, code, kernel, arch);
        return -1;
    }
    return found_op;
}

START_TEST(sass)
{
    int slot = SASS + _i;
    const struct sass_check *k = &SASS_CHECKS[SASS_CHECK[_i]];
    char why[256], arch[16];
    snprintf(arch, sizeof arch, "sm_%d%s", device_cc(), k->arch_specific ? "a" : "");
    int has = sass_has(k->kernel, k->opcode, arch, why, sizeof why);
    if (has < 0 && k->arch_specific) /* no sm_90a cubin at all: say how to build one */
        grade_hint(slot, "%s", k->hint);
    ck_assert_msg(has >= 0, "%s", why);
    if (!has) {
        grade_hint(slot, "%s", k->hint);
        ck_abort_msg("no %s in the %s machine code of %s", k->opcode, arch, k->kernel);
    }
    grade_note(slot, "%s holds %s (%s)", k->kernel, k->opcode, arch);
}
END_TEST

/* ---- bench ------------------------------------------------------------------------------ */

static const struct shape BENCH_SHAPES[] = {
    { 1024, 1024, 1024 }, { 2048, 2048, 2048 }, { 4096, 4096, 4096 },
    { 3999, 4000, 4008 },  /* odd m, k and n multiples of 8 but not of the tile: TMA runs */
    { 1000, 999, 1001 },   /* odd k and n: no 16-byte row starts, the narrow path; the TMA
                            * rungs (steps 4 and 5) hand it to step 3 */
};

/* Step 3's file offers the roof of the mma.sync path (no memory traffic, see step3_ring.cu);
 * weak, because the learner's build links no such file. */
extern void gemm_mma_sync_peak(float *d_sink, int blocks, int iters) __attribute__((weak));

struct peak_launch {
    float *d_sink;
    int blocks, iters;
};

static void run_peak(void *ctx)
{
    struct peak_launch *l = ctx;
    gemm_mma_sync_peak(l->d_sink, l->blocks, l->iters);
}

/* the row "mma_sync_peak": 4 blocks of 8 warps an SM, each warp 8 x 4096 products */
static int bench_mma_peak(struct results *out, const struct device_info *info)
{
    struct peak_launch l = { NULL, 4 * info->sms, 4096 };
    l.d_sink = dbuf_alloc(256 * sizeof(float), "d_sink");
    struct timing t = gpu_time(run_peak, &l, 2, 10);
    dbuf_free(l.d_sink);
    double flops = 2.0 * 16 * 8 * 16 * 8.0 * l.iters * 8.0 * l.blocks;
    double gflops = flops / (t.median_ms * 1e-3) / 1e9;
    char shape[48];
    snprintf(shape, sizeof shape, "%dx8warps", l.blocks);
    results_row(out, CHAPTER, "mma_sync_peak", shape, t.median_ms, 0.0, gflops);
    printf("%-16s %-10s %10.4f %10.1f   (no memory: the roof of steps 1-3)\n", shape,
           "mma_sync_peak", t.median_ms, gflops / 1e3);
    return 0;
}

static int bench(const char *path)
{
    struct device_info info;
    struct results out;
    if (bench_begin(path, &out, &info) != 0)
        return EXIT_FAILURE;
    int cc = 10 * info.cc_major + info.cc_minor;
    struct rng r;
    rng_init(&r, harness_seed());
    ladder_init();
    printf("%-16s %-10s %10s %10s %8s\n", "shape", "kernel", "ms", "TFLOP/s", "cuBLAS");
    for (size_t i = 0; i < sizeof BENCH_SHAPES / sizeof BENCH_SHAPES[0]; i++) {
        struct shape s = BENCH_SHAPES[i];
        struct problem p;
        problem_init(&p, s);
        problem_fill(&p, &r);
        if (problem_ref_blas(&p) != 0) {
            fprintf(stderr, "bench: no cuBLAS\n");
            return EXIT_FAILURE;
        }
        size_t nc = (size_t)s.m * s.n;
        char shape[48];
        snprintf(shape, sizeof shape, "%dx%dx%d", s.m, s.k, s.n);
        double bytes = 2.0 * ((double)s.m * s.k + (double)s.k * s.n) + 4.0 * (double)nc;
        int sweep_shape = s.m == SPEED_SIZE && s.k == SPEED_SIZE && s.n == SPEED_SIZE;
        double cublas_ms = 0.0;
        /* cuBLAS first, then every rung as a share of it */
        for (int v = -1; v < NUM_LADDER; v++) {
            const struct gemm_rung *g = v >= 0 ? &LADDER[v] : NULL;
            char why[96];
            if (g && (!g->fn || rung_cannot_run(g, cc, why, sizeof why) ||
                      (g->sweep && !sweep_shape)))
                continue;
            struct launch l = { g ? g->fn : NULL, &p };
            const char *name = g ? g->name : "cublas";
            dbuf_poison(p.d_c);
            struct timing t = gpu_time(g ? run_rung : run_cublas, &l, 2, 10);
            if (g) {
                to_host(p.h_c, p.d_c, nc * sizeof(float));
                struct cmp_result c = compare_f32(p.h_c, p.ref, p.scale, nc, (size_t)s.n,
                                                  2 * fp32_dot_rtol(s.k), 0.0);
                if (c.bad) {
                    char desc[512];
                    cmp_describe(&c, (size_t)s.n, desc, sizeof desc);
                    fprintf(stderr, "bench: %s at %s is wrong: %s\n", name, shape, desc);
                    return EXIT_FAILURE;
                }
            }
            if (!g)
                cublas_ms = t.median_ms;
            double gflops = 2.0 * s.m * s.k * s.n / (t.median_ms * 1e-3) / 1e9;
            results_row(&out, CHAPTER, name, shape, t.median_ms,
                        bytes / (t.median_ms * 1e-3) / 1e9, gflops);
            printf("%-16s %-10s %10.4f %10.1f %7.0f%%\n", shape, name, t.median_ms,
                   gflops / 1e3, 100.0 * cublas_ms / t.median_ms);
            fflush(stdout);
        }
        problem_free(&p);
    }
    if (gemm_mma_sync_peak && cc >= 80 && bench_mma_peak(&out, &info) != 0)
        return EXIT_FAILURE;
    results_close(&out);
    printf("bench: wrote %s\n", path);
    return EXIT_SUCCESS;
}

/* ---- registration ----------------------------------------------------------------------- */

static void add_tests(Suite *s)
{
    const struct device_info *dev = grader_device();
    int on_gpu = strcmp(dev->backend, "cuda") == 0;
    int cc = device_cc();
    if (on_gpu && cc < 80) {
        grader_skip("every test", "BF16 tensor cores (WMMA bf16 fragments) need sm_80 or later");
        return;
    }

    char titles[NSHAPES][96];
    const char *t[NSHAPES];
    for (int i = 0; i < NSHAPES; i++) {
        struct shape sh = shapes()[i], gpu = GPU_SHAPES[i];
        int shrunk = sh.m != gpu.m || sh.k != gpu.k || sh.n != gpu.n;
        char was[48] = "";
        if (shrunk)
            snprintf(was, sizeof was, " (in place of the GPU's %dx%dx%d)", gpu.m, gpu.k, gpu.n);
        snprintf(titles[i], sizeof titles[i], "correct %dx%dx%d%s", sh.m, sh.k, sh.n, was);
        t[i] = titles[i];
    }
    CORRECT = grader_add(s, "correct", correct, t, NSHAPES, 120);

    /* every other rung this build links, on small odd shapes */
    ladder_init();
    char shape_list[96] = "";
    for (int i = 0; i < NRUNG_SHAPES; i++) {
        size_t used = strlen(shape_list);
        snprintf(shape_list + used, sizeof shape_list - used, "%s%dx%dx%d", i ? ", " : "",
                 RUNG_SHAPES[i].m, RUNG_SHAPES[i].k, RUNG_SHAPES[i].n);
    }
    static char rtitles[GRADE_MAX_TESTS][128];
    const char *rt[GRADE_MAX_TESTS];
    int nr = 0;
    for (int v = 0; v < NUM_LADDER && nr < GRADE_MAX_TESTS; v++) {
        const struct gemm_rung *g = &LADDER[v];
        char title[128], why[96];
        snprintf(title, sizeof title, "rung %s on %s", g->name, shape_list);
        if (g->fn == gemm_pipelined)
            continue;
        if (!g->fn) {
            grader_skip(title, on_gpu || g->min_cc < 90
                ? "this build leaves that rung out (its file was not linked)"
                : "graded on a GPU only: TMA, mbarrier and wgmma are PTX that the CPU backend "
                  "cannot run, and this build leaves that rung out");
            continue;
        }
        if (on_gpu && rung_cannot_run(g, cc, why, sizeof why)) {
            grader_skip(title, why);
            continue;
        }
        memcpy(rtitles[nr], title, sizeof title);
        rt[nr] = rtitles[nr];
        RUNG_INDEX[nr++] = v;
    }
    if (nr > 0)
        RUNGS = grader_add(s, "rungs", rung_correct, rt, nr, 120);

    char speed_title[64];
    snprintf(speed_title, sizeof speed_title, "speed at %dx%dx%d", SPEED_SIZE, SPEED_SIZE,
             SPEED_SIZE);
    SPEED = grader_add_timed(s, "speed", speed, speed_title, 300);

    /* the machine code: yours, and steps 4's and 5's where the ladder has them */
    static char stitles[NSASS_CHECKS][96];
    const char *st[NSASS_CHECKS];
    int ns = 0;
    for (int i = 0; i < NSASS_CHECKS; i++) {
        const struct sass_check *k = &SASS_CHECKS[i];
        const struct gemm_rung *g = NULL;
        for (int v = 0; v < NUM_LADDER && !g; v++)
            if (strcmp(LADDER[v].name, k->rung) == 0)
                g = &LADDER[v];
        if (!g)
            continue;
        snprintf(stitles[ns], sizeof stitles[ns], "sass: %s in %s", k->opcode, k->kernel);
        char cannot[96], none[96];
        snprintf(none, sizeof none, "this build has no %s rung", k->rung);
        const char *why = NULL;
        if (!on_gpu)
            why = "graded on a GPU only: the CPU backend runs no machine code";
        else if (!g->fn)
            why = none;
        else if (rung_cannot_run(g, cc, cannot, sizeof cannot))
            why = cannot;
        else if (!on_path("cuobjdump"))
            why = "cuobjdump is not on PATH (it comes with the CUDA toolkit)";
        if (why) {
            grader_skip(stitles[ns], why);
            continue;
        }
        st[ns] = stitles[ns];
        SASS_CHECK[ns++] = i;
    }
    if (ns > 0)
        SASS = grader_add(s, "sass", sass, st, ns, 120);

    /* The concept tests of the profiling issue (sectors per request, shared-memory wavefronts
     * per request on the CPU backend) register here. */
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
