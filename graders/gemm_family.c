/* gemm_family.c: the grading family of the matmul chapters (see gemm_family.h). */
#include "gemm_family.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "tolerance.h"

/* Host and device buffers of one problem, with its reference over `rows` rows of C. */
struct gemm_problem {
    const struct gemm_kind *k;
    struct gemm_shape s;
    size_t elem;             /* bytes of an element of A and B: 4 or 2 */
    int rows;                /* rows of C the reference covers: m, a sample, or 0 (none) */
    int *row;                /* which: row[j] is the j-th of them */
    void *h_a, *h_b;         /* the inputs as the kernels read them */
    float *h_af, *h_bf;      /* the same values as floats, for the host reference */
    float *h_c, *h_got;      /* C read back; the covered rows of it */
    double *ref, *scale;     /* rows x n */
    void *d_a, *d_b;
    float *d_c;
    double rtol_mult;        /* TOL_TWO_SIDED where the reference is the library's */
};

static size_t na_of(struct gemm_shape s) { return (size_t)s.m * s.k; }
static size_t nb_of(struct gemm_shape s) { return (size_t)s.k * s.n; }
static size_t nc_of(struct gemm_shape s) { return (size_t)s.m * s.n; }

void gemm_shape_name(const void *shape, char *buf, size_t len)
{
    const struct gemm_shape *s = shape;
    snprintf(buf, len, "%dx%dx%d", s->m, s->k, s->n);
}

double gemm_macs(const void *shape)
{
    const struct gemm_shape *s = shape;
    return (double)s->m * s->k * s->n;
}

double gemm_flops(const void *shape)
{
    const struct gemm_shape *s = shape;
    return 2.0 * s->m * s->k * s->n;
}

double gemm_bytes_f32(const void *shape)
{
    const struct gemm_shape *s = shape;
    return 4.0 * ((double)s->m * s->k + (double)s->k * s->n + (double)s->m * s->n);
}

double gemm_bytes_bf16(const void *shape)
{
    const struct gemm_shape *s = shape;
    return 2.0 * ((double)s->m * s->k + (double)s->k * s->n) + 4.0 * (double)s->m * s->n;
}

double gemm_rate(struct gemm_shape s, double ms, double unit)
{
    return 2.0 * s.m * s.k * s.n / (ms * 1e-3) / unit;
}

uint16_t gemm_bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float gemm_bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- the problem ---------------------------------------------------------------------------- */

/* Cover `rows` rows of C: all of them, or `rows` spread over C, whose offsets step through
 * every residue modulo 32 and 128, so each row of a tile and of a thread's register block is
 * sampled somewhere; the last row too. */
static void cover_rows(struct gemm_problem *p, int rows)
{
    free(p->row);
    p->rows = rows;
    p->row = xmalloc((size_t)(rows > 0 ? rows : 1) * sizeof(int));
    if (rows == p->s.m) {
        for (int j = 0; j < rows; j++)
            p->row[j] = j;
    } else if (rows > 0) {
        int band = p->s.m / rows;
        for (int j = 0; j < rows; j++)
            p->row[j] = j * band + (j * 37) % band;
        p->row[rows - 1] = p->s.m - 1;
    }
}

void *gemm_init(const struct flow_kind *kind, const void *shape)
{
    const struct gemm_kind *k = (const struct gemm_kind *)kind;
    struct gemm_problem *p = xmalloc(sizeof *p);
    memset(p, 0, sizeof *p);
    struct gemm_shape s = *(const struct gemm_shape *)shape;
    p->k = k;
    p->s = s;
    p->elem = k->input == GEMM_BF16 ? sizeof(uint16_t) : sizeof(float);
    p->rtol_mult = k->ref == GEMM_REF_LIBRARY ? TOL_TWO_SIDED : 1.0;
    int sampled = k->sampled && gemm_macs(&s) > GEMM_FULL_REF_MACS && s.m > GEMM_SAMPLE_ROWS;
    cover_rows(p, sampled ? GEMM_SAMPLE_ROWS : s.m);
    size_t na = na_of(s), nb = nb_of(s), nc = nc_of(s);
    p->h_a = xmalloc(na * p->elem);
    p->h_b = xmalloc(nb * p->elem);
    if (k->input == GEMM_BF16) {
        p->h_af = xmalloc(na * sizeof(float));
        p->h_bf = xmalloc(nb * sizeof(float));
    } else {
        p->h_af = p->h_a;
        p->h_bf = p->h_b;
    }
    p->h_c = xmalloc(nc * sizeof(float));
    p->h_got = xmalloc((size_t)p->rows * s.n * sizeof(float) + 1);
    p->ref = xmalloc((size_t)p->rows * s.n * sizeof(double) + 1);
    p->scale = xmalloc((size_t)p->rows * s.n * sizeof(double) + 1);
    p->d_a = dbuf_alloc_input(na * p->elem, "d_a");
    p->d_b = dbuf_alloc_input(nb * p->elem, "d_b");
    p->d_c = dbuf_alloc(nc * sizeof(float), "d_c");
    return p;
}

void gemm_free(void *pp)
{
    struct gemm_problem *p = pp;
    dbuf_free(p->d_a);
    dbuf_free(p->d_b);
    dbuf_free(p->d_c);
    if (p->h_af != p->h_a) {
        free(p->h_af);
        free(p->h_bf);
    }
    free(p->h_a);
    free(p->h_b);
    free(p->h_c);
    free(p->h_got);
    free(p->ref);
    free(p->scale);
    free(p->row);
    free(p);
}

void gemm_poison(void *p)
{
    dbuf_poison(((struct gemm_problem *)p)->d_c);
}

/* bf16 inputs: uniform in [-1, 1), rounded, never zeros (a dropped term must show). */
static void fill_bf16(struct rng *r, uint16_t *h, float *hf, size_t n)
{
    rng_fill_f32(r, hf, n, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) {
        h[i] = gemm_bf16_from_float(hf[i]);
        hf[i] = gemm_bf16_to_float(h[i]);
        if (hf[i] == 0.0f) {
            h[i] = gemm_bf16_from_float(0.5f);
            hf[i] = 0.5f;
        }
    }
}

/* Fresh inputs, on the device too. */
static void fill_inputs(struct gemm_problem *p, struct rng *r)
{
    struct gemm_shape s = p->s;
    if (p->k->input == GEMM_BF16) {
        fill_bf16(r, p->h_a, p->h_af, na_of(s));
        fill_bf16(r, p->h_b, p->h_bf, nb_of(s));
    } else {
        rng_fill_f32(r, p->h_af, na_of(s), -1.0f, 1.0f);
        rng_fill_f32(r, p->h_bf, nb_of(s), -1.0f, 1.0f);
    }
    to_device(p->d_a, p->h_a, na_of(s) * p->elem);
    to_device(p->d_b, p->h_b, nb_of(s) * p->elem);
}

/* ref (when with_ref) and scale = |A||B| of the covered rows, in double on the host. */
static void host_reference(struct gemm_problem *p, int with_ref)
{
    struct gemm_shape s = p->s;
    if (p->rows == s.m)
        ref_matmul(p->h_af, p->h_bf, with_ref ? p->ref : NULL, p->scale, s.m, s.k, s.n);
    else
        for (int j = 0; j < p->rows; j++)
            ref_matmul(p->h_af + (size_t)p->row[j] * s.k, p->h_bf,
                       with_ref ? p->ref + (size_t)j * s.n : NULL, p->scale + (size_t)j * s.n,
                       1, s.k, s.n);
}

int gemm_library(void *pp)
{
    struct gemm_problem *p = pp;
    struct gemm_shape s = p->s;
    if (p->k->input == GEMM_BF16)
        return blas_gemm_bf16(p->d_a, p->d_b, p->d_c, s.m, s.k, s.n);
    return blas_sgemm(p->d_a, p->d_b, p->d_c, s.m, s.k, s.n);
}

/* The library's C into `dst` for the covered rows. */
static int library_rows(struct gemm_problem *p, double *dst)
{
    struct gemm_shape s = p->s;
    if (gemm_library(p) != 0)
        return -1;
    gpu_sync();
    to_host(p->h_c, p->d_c, nc_of(s) * sizeof(float));
    for (int j = 0; j < p->rows; j++)
        for (int c = 0; c < s.n; c++)
            dst[(size_t)j * s.n + c] = p->h_c[(size_t)p->row[j] * s.n + c];
    return 0;
}

/* The reference from the library: C, and for bf16 the scale from the library on |A| and |B|
 * (clearing a bf16's sign bit is its absolute value), for fp32 from the host. -1: no library. */
static int library_reference(struct gemm_problem *p)
{
    if (p->rows == 0)
        return 0;
    if (library_rows(p, p->ref) != 0)
        return -1;
    if (p->k->input != GEMM_BF16) {
        host_reference(p, 0);
        return 0;
    }
    size_t na = na_of(p->s), nb = nb_of(p->s);
    uint16_t *a = p->h_a, *b = p->h_b;
    uint16_t *abs_a = xmalloc(na * sizeof(uint16_t)), *abs_b = xmalloc(nb * sizeof(uint16_t));
    for (size_t i = 0; i < na; i++)
        abs_a[i] = a[i] & 0x7fffu;
    for (size_t i = 0; i < nb; i++)
        abs_b[i] = b[i] & 0x7fffu;
    to_device(p->d_a, abs_a, na * sizeof(uint16_t));
    to_device(p->d_b, abs_b, nb * sizeof(uint16_t));
    library_rows(p, p->scale);
    to_device(p->d_a, a, na * sizeof(uint16_t));
    to_device(p->d_b, b, nb * sizeof(uint16_t));
    free(abs_a);
    free(abs_b);
    return 0;
}

void gemm_fill_inputs(void *pp, struct rng *r)
{
    struct gemm_problem *p = pp;
    fill_inputs(p, r);
    dbuf_poison(p->d_c);
}

void gemm_fill(void *pp, struct rng *r)
{
    struct gemm_problem *p = pp;
    fill_inputs(p, r);
    if (p->k->ref == GEMM_REF_LIBRARY)
        ck_assert_msg(library_reference(p) == 0, "no cuBLAS for the reference");
    else
        host_reference(p, 1);
    dbuf_poison(p->d_c);
}

void gemm_launch(void *pp, flow_fn fn)
{
    struct gemm_problem *p = pp;
    struct gemm_shape s = p->s;
    if (p->k->input == GEMM_BF16)
        ((gemm_bf16_fn)fn)(p->d_a, p->d_b, p->d_c, s.m, s.k, s.n);
    else
        ((gemm_f32_fn)fn)(p->d_a, p->d_b, p->d_c, s.m, s.k, s.n);
}

/* ---- the check ------------------------------------------------------------------------------ */

/* The tolerance of an element of C, relative to sum |a||b| (tolerance.h): a dot product of
 * length len of the kind's inputs, accumulated in fp32. */
static double dot_rtol(const struct gemm_kind *k, int len)
{
    return k->input == GEMM_BF16 ? tol_dot_bf16(len) : tol_dot_fp32(len);
}

/* C from the device, and the covered rows compared against ref. Returns 0 when right, else
 * fills `desc` (what is wrong, with real row and column numbers) and `hint` (a guess from
 * where the wrong elements sit, or ""). */
static int compare(struct gemm_problem *p, double rtol, char *desc, size_t dlen, char *hint,
                   size_t hlen)
{
    struct gemm_shape s = p->s;
    size_t nc = nc_of(s);
    hint[0] = '\0';
    to_host(p->h_c, p->d_c, nc * sizeof(float));
    if (p->rows == s.m) {
        struct cmp_result c = compare_f32(p->h_c, p->ref, p->scale, nc, (size_t)s.n, rtol, 0.0);
        if (c.bad == 0)
            return 0;
        cmp_describe(&c, (size_t)s.n, desc, dlen);
        if (p->k->hint_fn)
            p->k->hint_fn(&c, p->h_c, s, hint, hlen);
        else
            cmp_hint(&c, (size_t)s.m, (size_t)s.n, hint, hlen);
        return -1;
    }
    /* sampled: every element written, then the sampled rows' values */
    size_t unwritten = 0, first = 0;
    for (size_t i = 0; i < nc; i++)
        if (!isfinite(p->h_c[i]) && unwritten++ == 0)
            first = i;
    if (unwritten) {
        snprintf(desc, dlen, "%zu of %zu elements of C are NaN or Inf, first at (%zu,%zu): a "
                             "block or a tail that never stored its results",
                 unwritten, nc, first / s.n, first % s.n);
        return -1;
    }
    for (int j = 0; j < p->rows; j++)
        memcpy(p->h_got + (size_t)j * s.n, p->h_c + (size_t)p->row[j] * s.n,
               (size_t)s.n * sizeof(float));
    struct cmp_result c = compare_f32(p->h_got, p->ref, p->scale, (size_t)p->rows * s.n,
                                      (size_t)s.n, rtol, 0.0);
    if (c.bad == 0)
        return 0;
    int len = snprintf(desc, dlen, "%zu of %zu sampled elements wrong (%d rows), first at", c.bad,
                       c.checked, p->rows);
    for (int i = 0; i < c.nreport && len > 0 && (size_t)len < dlen; i++) {
        const struct mismatch *mm = &c.first[i];
        len += snprintf(desc + len, dlen - len, "%s (%d,%zu): got %.7g, want %.7g",
                        i ? ";" : "", p->row[mm->index / s.n], mm->index % s.n, mm->got, mm->want);
    }
    return -1;
}

void gemm_check(void *pp, int slot, const char *what)
{
    struct gemm_problem *p = pp;
    struct gemm_shape s = p->s;
    char guard[256], desc[512], hint[400];
    if (dbuf_check_guards(p->d_c, guard, sizeof guard) != 0) {
        grade_hint(slot, "%s", p->k->guard_hint);
        ck_abort_msg("%dx%dx%d: %s: %s", s.m, s.k, s.n, what, guard);
    }
    if (compare(p, p->rtol_mult * dot_rtol(p->k, s.k), desc, sizeof desc, hint, sizeof hint) == 0)
        return;
    const char *given = p->k->hint ? p->k->hint : "";
    grade_hint(slot, "%s", hint[0] && !p->k->given_first ? hint : given);
    ck_abort_msg("%dx%dx%d: %s: %s", s.m, s.k, s.n, what, desc);
}

/* ---- bench and tune ------------------------------------------------------------------------- */

void gemm_bench_fill(void *pp, struct rng *r)
{
    struct gemm_problem *p = pp;
    struct gemm_shape s = p->s;
    p->rtol_mult = TOL_TWO_SIDED;
    /* the bench checks what the host can afford: a sampled kind samples rows past a quarter
     * of GEMM_FULL_REF_MACS (|A||B| of all of C is as slow as the reference itself); a kind
     * that is not sampled checks all of C up to GEMM_FULL_REF_MACS, and nothing past it */
    if (p->k->input == GEMM_F32 && gemm_macs(&s) > GEMM_FULL_REF_MACS / 4) {
        if (p->k->sampled)
            cover_rows(p, GEMM_SAMPLE_ROWS < s.m ? GEMM_SAMPLE_ROWS : s.m);
        else if (gemm_macs(&s) > GEMM_FULL_REF_MACS)
            cover_rows(p, 0);
    }
    fill_inputs(p, r);
    if (library_reference(p) != 0) {
        fprintf(stderr, "bench: no cuBLAS: %s\n", blas_unavailable_reason());
        exit(EXIT_FAILURE);
    }
}

int gemm_bench_check(void *pp, const char *name, const char *shape)
{
    struct gemm_problem *p = pp;
    if (p->rows == 0)
        return 0;
    char guard[256], desc[512], hint[400];
    if (dbuf_check_guards(p->d_c, guard, sizeof guard) != 0) {
        fprintf(stderr, "bench: %s at %s wrote outside C: %s\n", name, shape, guard);
        return -1;
    }
    double rtol = TOL_TWO_SIDED * dot_rtol(p->k, p->s.k);
    if (compare(p, rtol, desc, sizeof desc, hint, sizeof hint) != 0) {
        fprintf(stderr, "bench: %s at %s is wrong: %s\n", name, shape, desc);
        return -1;
    }
    return 0;
}

int gemm_bench(const char *chapter, const struct gemm_kind *k, const struct gemm_shape *shapes,
               int nshapes, const struct flow_rung *rungs, int nrungs, const char *path)
{
    const struct flow_bench b = {
        .chapter = chapter, .kind = &k->kind, .shapes = shapes, .nshapes = nshapes,
        .rungs = rungs, .nrungs = nrungs, .library = "cublas", .warmup = 2, .reps = 10,
        .big_work = 8e9, .big_reps = 5,
        .bytes = k->input == GEMM_BF16 ? gemm_bytes_bf16 : gemm_bytes_f32, .flops = gemm_flops,
        .print_unit = 1e9, .print_label = "GFLOP/s",
    };
    return flow_bench(&b, path);
}

struct tune_launch {
    void *p;
    gemm_f32_fn fn; /* NULL: the library */
};

static void run_tune(void *ctx)
{
    struct tune_launch *l = ctx;
    if (l->fn)
        gemm_launch(l->p, (flow_fn)l->fn);
    else
        gemm_library(l->p);
}

/* Time fn (NULL: cuBLAS) on the problem, then check what the last timed run wrote. */
static int tune_one(void *p, gemm_f32_fn fn, const char *name, const char *shape, double *ms)
{
    struct tune_launch l = { p, fn };
    int big = gemm_macs(&((struct gemm_problem *)p)->s) >= 8e9;
    gemm_poison(p);
    struct timing t = gpu_time(run_tune, &l, 2, big ? 5 : 10);
    *ms = t.median_ms;
    return fn ? gemm_bench_check(p, name, shape) : 0;
}

int gemm_tune(const struct gemm_kind *k, const struct gemm_shape *shapes, int nshapes,
              const struct gemm_candidate *cand, int ncand, const char *legend, const char *path)
{
    struct device_info info;
    if (measure_begin("tune", &info) != 0)
        return EXIT_FAILURE;
    double *ms = xmalloc((size_t)nshapes * ncand * sizeof(double));
    struct rng r;
    rng_init(&r, harness_seed());
    printf("%-16s %-24s %10s %10s\n", "shape", "config", "ms", "GFLOP/s");
    for (int i = 0; i < nshapes; i++) {
        struct gemm_shape s = shapes[i];
        void *p = gemm_init(&k->kind, &s);
        gemm_bench_fill(p, &r);
        char shape[48];
        gemm_shape_name(&s, shape, sizeof shape);
        for (int c = 0; c < ncand; c++) {
            double *t = &ms[i * ncand + c];
            *t = NAN;
            if ((size_t)cand[c].smem_bytes > info.smem_per_block_optin) {
                printf("%-16s %-24s skipped: needs %d bytes of shared memory a block, this "
                       "device allows %zu\n", shape, cand[c].name, cand[c].smem_bytes,
                       info.smem_per_block_optin);
                continue;
            }
            if (tune_one(p, cand[c].fn, cand[c].name, shape, t) != 0)
                return EXIT_FAILURE;
            printf("%-16s %-24s %10.4f %10.1f\n", shape, cand[c].name, *t, gemm_rate(s, *t, 1e9));
            fflush(stdout);
        }
        double cublas_ms;
        tune_one(p, NULL, "cublas", shape, &cublas_ms);
        printf("%-16s %-24s %10.4f %10.1f\n", shape, "(cuBLAS)", cublas_ms,
               gemm_rate(s, cublas_ms, 1e9));
        gemm_free(p);
    }

    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return EXIT_FAILURE;
    }
    results_provenance(f, info.name, info.driver);
    fprintf(f, "# %s\n", legend);
    fprintf(f, "device\tm\tn\tk\tconfig\tms\tgflops\tbest\n");
    for (int i = 0; i < nshapes; i++) {
        struct gemm_shape s = shapes[i];
        const double *t = &ms[i * ncand];
        int best = -1;
        for (int c = 0; c < ncand; c++)
            if (!isnan(t[c]) && (best < 0 || t[c] < t[best]))
                best = c;
        for (int c = 0; c < ncand; c++)
            if (!isnan(t[c]))
                fprintf(f, "%s\t%d\t%d\t%d\t%s\t%.6g\t%.6g\t%d\n", info.name, s.m, s.n, s.k,
                        cand[c].name, t[c], gemm_rate(s, t[c], 1e9), c == best);
    }
    if (fclose(f) != 0) {
        perror(path);
        return EXIT_FAILURE;
    }
    free(ms);
    printf("tune: wrote %s\n", path);
    return EXIT_SUCCESS;
}
