/* 10-fused-attention.c: the grader of chapter 10, and its bench. The steps (steps.cu):
 *
 *   step 1  unfused attention, given: nothing to write; the baseline later steps are timed
 *           against. Its own correctness is checked ahead of the ladder ("baseline ..."), on
 *           every grade, so that a speed ratio never rests on a wrong baseline.
 *   step 2  fused attention on the SIMT cores, bf16 and fp16: attention_fused_*
 *   step 3  fused attention on the tensor cores (ldmatrix, mma.sync, cp.async): attention_mma_*
 *   step 4  fused attention with wgmma and TMA, FlashAttention-3 style (sm_90a, GPU only):
 *           attention_wgmma_*
 *
 * Step 3 is graded as step 2 on correctness (the same shapes and vectors, on the CPU backend
 * too, where ldmatrix and mma.sync are emulated lane by lane), with no concept test, and on a
 * GPU against the unfused step at bf16, dim 128, 2 x 16 heads x len 4096, no mask: 2x its speed
 * (SPEED_NEEDS_MMA). The V_FA3 vector adds an RMSE bound on o for every step.
 *
 * Step 4 is graded on a GPU of compute capability 9.0 only (sm_90a code; the CPU backend's builds
 * leave its file out and the step says SKIP there): step 3's shapes and vectors, step 3's speed
 * test at SPEED_NEEDS_WGMMA, and in the sm_90a machine code of attention_wgmma_kernel, HGMMA
 * (wgmma) and UTMALDG (TMA).
 *
 * Step 2 is graded on
 *   correctness  o and lse against a double-precision reference on fresh random inputs, twice
 *                each (the second run shuffled on the CPU backend), o and lse poisoned with
 *                NaN, every buffer guarded (the work space too); dim 64 and 128, causal and
 *                not, len 1, primes, lengths short of a tile and off every tile, several
 *                heads; the numerical vectors below; the padding mask: d_kv_len NULL on the
 *                shapes above, kv_len[b] drawn in [1, len] a batch (causal and not, scores to
 *                +-200 too), and a batch of kv_len 0 among them, whose rows see no key: o
 *                exactly 0 there and lse -inf, NaN nowhere
 *   concept      on the CPU backend, from the emu's instrumented build (graders/concept.h and
 *                the profile driver graders/10-fused-attention-profile.c), on a shape drawn
 *                from the seed: one launch; global stores no more than o and lse (no len x len
 *                matrix written anywhere); global loads no more than q once and k and v once a
 *                block of 16 query rows, and no fewer than q, k and v once (the backend sees
 *                loads of plain types only: 16-byte loads, uint4, are asked for)
 *   speed        on a GPU: causal, bf16, dim 64, 2 x 16 heads x len 4096, yours against the
 *                unfused step in the same run, needs 1.2x its speed (see SPEED_NEEDS)
 *   grade --bench F  both steps, bf16, dim 64 and 128 (hidden size 2048: 32 and 16 heads),
 *                batch 2, len 512 to 8192, causal and not (GPU only)
 *
 * Tolerances (graders/tolerance.h: tol_attention; TOLERANCE.md derives them). u is the unit
 * roundoff of fp32 (2^-24), u_t that of the inputs' format (2^-8 bf16, 2^-11 fp16). Per query
 * row i, the reference (in double) gives the scores s_j, the probabilities p_j, o = sum p_j v_j,
 * lse = m + log l, and two scales: A_c = sum_j p_j |v_jc| (what the rounding of the sum of o's
 * column c is relative to) and E_i = scale max_j sum_c |q_ic||k_jc| (what a score's rounding is
 * relative to). Then, with n the keys row i sees and w = (4 (dim + 2) E_i + 16 sqrt(n) + 64) u,
 *   o    |got - o| <= u_t |o| + A_c (u_t + w) + a (1 + sum_j |v_jc| / l)
 *   lse  |got - lse| <= 8 u |lse| + w
 * u_t |o|: o is rounded to the format once. u_t A_c: P may be rounded to the format before
 * the second product (step 1 does, as every tensor-core kernel does). A score's error, at most
 * (dim + 2) u E_i for fp32 accumulation of exact bf16 or fp16 products, moves p_j by that
 * relative amount, o by at most twice that (the normalisation) and lse by at most once: in o,
 * 4 (dim + 2) E_i leaves a factor of 2 for __expf's own error and the rounding of s - m. The
 * sums of n terms (l, and o's) are held to the probabilistic bound of Higham and Mary at
 * lambda = 8 each, 16 sqrt(n) for the two, and 64 u covers the few roundings of the rescales,
 * the division and the log. lse's allowance is looser than twice its derivation (2.5 to 4 times
 * on the graded rows). a: 2^-25 for fp16 (its subnormals are spaced 2^-24), 2^-126 for bf16,
 * once for o's own rounding and once for each weight p_j (relative to the row's max, so at most
 * 1) that P's rounding to the format puts among the subnormals, where the error is a, not
 * u_t p_j (worst case; FA3's vector, one key dominating a row, leaves most weights there in
 * fp16). A dropped key (weight about 1/n) or a mask off by one key breaks o far outside this
 * on the short rows, and a score out by a rescale breaks it everywhere.
 * NaN: where the reference is NaN (a NaN row of q; a row that sees a NaN row of k) the output
 * must be NaN; NaN passes nowhere else.
 * A row that sees no key (kv_len[b] == 0) has a defined output with no rounding in it: o is
 * held to exactly 0 (a tolerance of 0) and lse to exactly -inf.
 */
#define _POSIX_C_SOURCE 200809L /* popen: graders/concept.h */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* sysconf */

#include "flow.h"
#include "concept.h"
#include "attention.h"
#include "sass.h"
#include "tolerance.h"

#define CHAPTER "10-fused-attention"

/* ==== the problem ========================================================================== */

enum dtype { BF16, F16 };
enum vec {
    V_UNIFORM, /* q, k, v uniform in [-1, 1), scale 1/sqrt(dim): a spread of scores */
    V_LARGE,   /* q and k uniform in [-4, 4), scale 1: scores reach +-200, where exp
                  overflows fp32; a softmax that does not subtract the max gives inf / inf */
    V_NAN,     /* a NaN in one row of q a head; with the causal mask also in one row of k,
                  which every later row sees */
    V_FA3,     /* FlashAttention-3's accuracy vector: q, k, v drawn from N(0, 1) plus
                  N(0, 100) x Bernoulli(0.001), rare outliers of 10 sigma; o is also held to an
                  RMSE against the double-precision reference (tol_attention_rmse) */
};
static const char *const VEC_NAME[] = { "", ", scores to +-200", ", NaN rows",
                                        ", FA3 outliers" };
enum pad {
    PAD_NONE,  /* d_kv_len NULL: every key is real */
    PAD_KEYS,  /* kv_len[b] drawn in [1, len] a batch (batch 0's short of len) */
    PAD_EMPTY, /* the same, and one batch drawn to kv_len 0: its rows see no key */
};
static const char *const PAD_NAME[] = { "", ", padded keys", ", padded keys, a batch with "
                                                            "kv_len 0" };

struct at_shape {
    int dtype, batch, heads, len, dim, causal, vec;
    int lse;        /* 1: lse is checked (the step writes it) */
    int pad;        /* enum pad */
};

struct at_problem {
    struct at_shape s;
    size_t nqkv, nlse;           /* elements of q (= k = v = o), of lse */
    float scale;
    float *h_q, *h_k, *h_v;      /* the inputs' values, widened */
    uint16_t *raw_q, *raw_k, *raw_v, *raw_o;
    float *h_lse;
    double *ref_o, *tol_o, *ref_lse, *tol_lse;
    int ref_lse_valid;           /* 0 where the reference is a kernel's o alone (speed) */
    int *h_kv_len;               /* batch ints, PAD_KEYS and PAD_EMPTY only, else NULL */
    void *d_q, *d_k, *d_v, *d_o, *d_lse, *d_work;
    void *d_kv_len;              /* what the launchers get: NULL for PAD_NONE */
};

/* ---- the two 16-bit formats, bit by bit ---------------------------------------------------- */

static uint16_t to_bf16(double v)
{
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    if ((b & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc0;
    b += 0x7fffu + ((b >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(b >> 16);
}

static double from_bf16(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* fp16, round to nearest even (nearbyint in the default rounding mode); |v| < 65504 here */
static uint16_t to_f16(double v)
{
    if (isnan(v))
        return 0x7e00;
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (a == 0)
        return sign;
    int e;
    frexp(a, &e); /* a = f 2^e, f in [0.5, 1): the leading bit is 2^(e - 1) */
    if (e - 1 < -14) /* subnormal: steps of 2^-24; 1024 of them is the smallest normal */
        return sign | (uint16_t)nearbyint(ldexp(a, 24));
    double mant = nearbyint(ldexp(a, 10 - (e - 1)));
    if (mant >= 2048)
        mant = 1024, e++;
    int field = e - 1 + 15;
    if (field >= 31)
        return sign | 0x7c00;
    return sign | (uint16_t)(field << 10) | (uint16_t)(mant - 1024);
}

static double from_f16(uint16_t h)
{
    int field = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double sign = h & 0x8000 ? -1 : 1;
    if (field == 31)
        return mant ? NAN : sign * INFINITY;
    if (field == 0)
        return sign * ldexp(mant, -24);
    return sign * ldexp(1024 + mant, field - 25);
}

static uint16_t to_fmt(int dtype, double v) { return dtype == F16 ? to_f16(v) : to_bf16(v); }
static double from_fmt(int dtype, uint16_t h) { return dtype == F16 ? from_f16(h) : from_bf16(h); }
static enum tol_format tol_fmt(int dtype) { return dtype == F16 ? TOL_FP16 : TOL_BF16; }

static void at_shape_name(const void *shape, char *buf, size_t len)
{
    const struct at_shape *s = shape;
    snprintf(buf, len, "%dx%dx%dx%d %s%s%s%s", s->batch, s->heads, s->len, s->dim,
             s->dtype == F16 ? "fp16" : "bf16", s->causal ? " causal" : "", VEC_NAME[s->vec],
             PAD_NAME[s->pad]);
}

/* the multiply-adds of both products, every score counted */
static double at_work(const void *shape)
{
    const struct at_shape *s = shape;
    return 2.0 * s->batch * s->heads * (double)s->len * s->len * s->dim;
}

static void *at_init(const struct flow_kind *k, const void *shape)
{
    (void)k;
    struct at_problem *p = calloc(1, sizeof *p);
    if (!p)
        abort();
    p->s = *(const struct at_shape *)shape;
    const struct at_shape *s = &p->s;
    p->nlse = (size_t)s->batch * s->heads * s->len;
    p->nqkv = p->nlse * s->dim;
    p->scale = s->vec == V_LARGE ? 1.0f : (float)(1.0 / sqrt((double)s->dim));
    size_t n = p->nqkv;
    p->h_q = xmalloc(n * sizeof(float));
    p->h_k = xmalloc(n * sizeof(float));
    p->h_v = xmalloc(n * sizeof(float));
    p->raw_q = xmalloc(n * 2), p->raw_k = xmalloc(n * 2), p->raw_v = xmalloc(n * 2);
    p->raw_o = xmalloc(n * 2);
    p->h_lse = xmalloc(p->nlse * sizeof(float));
    p->ref_o = xmalloc(n * sizeof(double)), p->tol_o = xmalloc(n * sizeof(double));
    p->ref_lse = xmalloc(p->nlse * sizeof(double));
    p->tol_lse = xmalloc(p->nlse * sizeof(double));
    p->d_q = dbuf_alloc_input(n * 2, "d_q");
    p->d_k = dbuf_alloc_input(n * 2, "d_k");
    p->d_v = dbuf_alloc_input(n * 2, "d_v");
    p->d_o = dbuf_alloc(n * 2, "d_o");
    p->d_lse = dbuf_alloc(p->nlse * sizeof(float), "d_lse");
    /* an input to the judge: only its guard zones travel from the runner, not its bytes */
    p->d_work = dbuf_alloc_input(attention_work_bytes(s->batch, s->heads, s->len), "d_work");
    if (s->pad != PAD_NONE) {
        p->h_kv_len = xmalloc((size_t)s->batch * sizeof(int));
        p->d_kv_len = dbuf_alloc_input((size_t)s->batch * sizeof(int), "d_kv_len");
    }
    return p;
}

static void at_free(void *pp)
{
    struct at_problem *p = pp;
    free(p->h_q), free(p->h_k), free(p->h_v);
    free(p->raw_q), free(p->raw_k), free(p->raw_v), free(p->raw_o), free(p->h_lse);
    free(p->ref_o), free(p->tol_o), free(p->ref_lse), free(p->tol_lse);
    dbuf_free(p->d_q), dbuf_free(p->d_k), dbuf_free(p->d_v), dbuf_free(p->d_o);
    dbuf_free(p->d_lse), dbuf_free(p->d_work);
    if (p->d_kv_len)
        dbuf_free(p->d_kv_len);
    free(p->h_kv_len);
    free(p);
}

static void at_poison(void *pp)
{
    struct at_problem *p = pp;
    dbuf_poison(p->d_o);
    dbuf_poison(p->d_lse);
    dbuf_poison(p->d_work); /* garbage on entry, as the contract says */
}

/* ---- inputs ------------------------------------------------------------------------------ */

/* N(0, 1) (Box-Muller), plus N(0, 100) with probability 0.001: FlashAttention-3's inputs */
static double fa3_draw(struct rng *r)
{
    double u1 = rng_uniform(r, 0x1p-53, 1), u2 = rng_uniform(r, 0, 1);
    double x = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
    if (rng_uniform(r, 0, 1) < 0.001) {
        u1 = rng_uniform(r, 0x1p-53, 1), u2 = rng_uniform(r, 0, 1);
        x += 10 * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
    }
    return x;
}

static void at_fill_inputs(void *pp, struct rng *r)
{
    struct at_problem *p = pp;
    const struct at_shape *s = &p->s;
    const int t = s->dtype;
    const double qk = s->vec == V_LARGE ? 4 : 1;
    for (size_t e = 0; e < p->nqkv; e++) {
        if (s->vec == V_FA3) {
            p->raw_q[e] = to_fmt(t, fa3_draw(r));
            p->raw_k[e] = to_fmt(t, fa3_draw(r));
            p->raw_v[e] = to_fmt(t, fa3_draw(r));
            continue;
        }
        p->raw_q[e] = to_fmt(t, rng_uniform(r, -qk, qk));
        p->raw_k[e] = to_fmt(t, rng_uniform(r, -qk, qk));
        p->raw_v[e] = to_fmt(t, rng_uniform(r, -1, 1));
    }
    if (s->vec == V_NAN)
        for (int bh = 0; bh < s->batch * s->heads; bh++) {
            size_t row = (size_t)bh * s->len + rng_next(r) % (uint64_t)s->len;
            p->raw_q[row * s->dim + rng_next(r) % (uint64_t)s->dim] = to_fmt(t, NAN);
            if (s->causal) {
                row = (size_t)bh * s->len + rng_next(r) % (uint64_t)s->len;
                p->raw_k[row * s->dim + rng_next(r) % (uint64_t)s->dim] = to_fmt(t, NAN);
            }
        }
    /* the padding mask: each batch's valid keys; batch 0 is short of len, so that a shape
     * always has padding to mask (len > 1), and with PAD_EMPTY one batch has none at all */
    if (s->pad != PAD_NONE) {
        for (int b = 0; b < s->batch; b++)
            p->h_kv_len[b] = 1 + (int)(rng_next(r) % (uint64_t)(b == 0 && s->len > 1 ? s->len - 1
                                                                                     : s->len));
        if (s->pad == PAD_EMPTY)
            p->h_kv_len[rng_next(r) % (uint64_t)s->batch] = 0;
        to_device(p->d_kv_len, p->h_kv_len, (size_t)s->batch * sizeof(int));
    }
    for (size_t e = 0; e < p->nqkv; e++) {
        p->h_q[e] = (float)from_fmt(t, p->raw_q[e]);
        p->h_k[e] = (float)from_fmt(t, p->raw_k[e]);
        p->h_v[e] = (float)from_fmt(t, p->raw_v[e]);
    }
    to_device(p->d_q, p->raw_q, p->nqkv * 2);
    to_device(p->d_k, p->raw_k, p->nqkv * 2);
    to_device(p->d_v, p->raw_v, p->nqkv * 2);
    at_poison(p);
}

/* ---- the reference ------------------------------------------------------------------------- */

#define AT_MAX_DIM 128 /* the head dimensions graded: 64 and 128 */

/* row i of head bh into ref_o, tol_o, ref_lse, tol_lse; s and pr: len doubles of room */
static void reference_row(struct at_problem *p, int bh, int i, double *sc, double *pr)
{
    const struct at_shape *s = &p->s;
    /* row i sees the keys j < kv_len[b], and with causal j <= i: the first n */
    const int kv = p->h_kv_len ? p->h_kv_len[bh / s->heads] : s->len;
    const int d = s->dim, n = s->causal && i + 1 < kv ? i + 1 : kv;
    const size_t row = (size_t)bh * s->len + i;
    const float *q = p->h_q + row * d, *kb = p->h_k + (size_t)bh * s->len * d;
    const float *vb = p->h_v + (size_t)bh * s->len * d;
    double *o = p->ref_o + row * d, *tol = p->tol_o + row * d;
    if (n == 0) { /* no key: the contract's zeros and -inf, exactly */
        for (int c = 0; c < d; c++)
            o[c] = 0, tol[c] = 0;
        p->ref_lse[row] = -INFINITY, p->tol_lse[row] = 0;
        return;
    }
    double m = -INFINITY, e_max = 0;
    int has_nan = 0;
    for (int j = 0; j < n; j++) {
        const float *kj = kb + (size_t)j * d;
        double dot = 0, abs = 0;
        for (int c = 0; c < d; c++) {
            dot += (double)q[c] * kj[c];
            abs += fabs((double)q[c] * kj[c]);
        }
        sc[j] = p->scale * dot;
        has_nan |= isnan(sc[j]);
        if (!isnan(abs) && p->scale * abs > e_max)
            e_max = p->scale * abs;
        if (sc[j] > m)
            m = sc[j];
    }
    if (has_nan) {
        for (int c = 0; c < d; c++)
            o[c] = NAN, tol[c] = 0;
        p->ref_lse[row] = NAN, p->tol_lse[row] = 0;
        return;
    }
    double l = 0;
    for (int j = 0; j < n; j++)
        l += pr[j] = exp(sc[j] - m);
    const struct tol_attention t = tol_attention(d, e_max, n, tol_fmt(s->dtype));
    /* o's columns summed over j in order, a row of v at a time (v read along its rows, not
     * down its columns): the same sums, term for term, as a column at a time */
    double acc[AT_MAX_DIM] = { 0 }, a[AT_MAX_DIM] = { 0 }, va[AT_MAX_DIM] = { 0 };
    for (int j = 0; j < n; j++) {
        const float *vj = vb + (size_t)j * d;
        for (int c = 0; c < d; c++) {
            const double v = vj[c];
            acc[c] += pr[j] * v;
            a[c] += pr[j] * fabs(v);
            va[c] += fabs(v);
        }
    }
    for (int c = 0; c < d; c++) {
        o[c] = acc[c] / l;
        /* o_abs (va / l): a weight p_j rounded to the format may fall among its subnormals,
         * where the error is up to half their spacing, not u_t p_j */
        tol[c] = t.o_rel * fabs(o[c]) + (a[c] / l) * t.o_a + t.o_abs * (1 + va[c] / l);
    }
    p->ref_lse[row] = m + log(l);
    p->tol_lse[row] = tol_attention_lse(d, e_max, n, p->ref_lse[row]);
}

/* The reference's rows are independent: REF_THREADS threads take every REF_THREADS-th row
 * (interleaved, so that a causal mask's long rows are shared out too). A GPU shape (len 4096,
 * 2 x 1000 x 3 heads) is seconds of double-precision work a row at a time, and the grader
 * computes it afresh for every test. */
#define REF_THREADS_MAX 32
struct ref_part {
    struct at_problem *p;
    long first, stride;
};

static void *reference_rows(void *arg)
{
    const struct ref_part *w = arg;
    struct at_problem *p = w->p;
    const long rows = (long)p->s.batch * p->s.heads * p->s.len;
    double *sc = xmalloc((size_t)p->s.len * sizeof(double));
    double *pr = xmalloc((size_t)p->s.len * sizeof(double));
    for (long r = w->first; r < rows; r += w->stride)
        reference_row(p, (int)(r / p->s.len), (int)(r % p->s.len), sc, pr);
    free(sc), free(pr);
    return NULL;
}

static void at_fill(void *pp, struct rng *r)
{
    struct at_problem *p = pp;
    at_fill_inputs(p, r);
    /* about a million multiply-adds before a thread pays for itself */
    const double work = (double)p->s.batch * p->s.heads * p->s.len * p->s.len * p->s.dim;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = work < 1e6 || cpus < 2 ? 1 : cpus > REF_THREADS_MAX ? REF_THREADS_MAX : (int)cpus;
    pthread_t th[REF_THREADS_MAX];
    int started[REF_THREADS_MAX] = { 0 };
    struct ref_part part[REF_THREADS_MAX];
    for (int k = 0; k < nt; k++) {
        part[k] = (struct ref_part){ p, k, nt };
        started[k] = k > 0 && pthread_create(&th[k], NULL, reference_rows, &part[k]) == 0;
    }
    /* this thread's rows, and those of any thread the system refused */
    for (int k = 0; k < nt; k++)
        if (!started[k])
            reference_rows(&part[k]);
    for (int k = 1; k < nt; k++)
        if (started[k] && pthread_join(th[k], NULL) != 0) {
            fprintf(stderr, "reference: pthread_join: cannot join a thread of the reference\n");
            exit(2);
        }
    p->ref_lse_valid = 1;
}

/* ---- launching ----------------------------------------------------------------------------- */

static void at_launch(void *pp, flow_fn fn)
{
    struct at_problem *p = pp;
    const struct at_shape *s = &p->s;
    if (s->dtype == F16)
        ((attention_f16_fn)fn)(p->d_q, p->d_k, p->d_v, p->d_o, p->d_lse, p->d_kv_len, s->batch,
                               s->heads, s->len, s->dim, s->causal, p->scale, p->d_work);
    else
        ((attention_bf16_fn)fn)(p->d_q, p->d_k, p->d_v, p->d_o, p->d_lse, p->d_kv_len, s->batch,
                                s->heads, s->len, s->dim, s->causal, p->scale, p->d_work);
}

/* no library of the whole operation here: the baseline is step 1 */
static int at_library(void *pp)
{
    (void)pp;
    return -1;
}

/* ---- checking ------------------------------------------------------------------------------ */

struct verdict {
    size_t bad, checked, unwritten, nan_missing, bad_lse, lse_unwritten;
    size_t bad_empty, bad_lse_empty;  /* of those, in rows that see no key (kv_len[b] == 0) */
    double sq_err;              /* sum of (got - want)^2 over o's finite references */
    size_t first[CMP_MAX_REPORT];
    int nreport;
    size_t first_lse;
    double got_lse;
};

static int wrong(double got, double want, double tol)
{
    if (isnan(want))
        return !isnan(got);
    if (isinf(want)) /* the lse of a row that sees no key: -inf and nothing else */
        return got != want;
    return !isfinite(got) || fabs(got - want) > tol;
}

/* row (of batch x heads x len) sees no key: its reference is the contract's zeros and -inf */
static int empty_row(const struct at_problem *p, size_t row)
{
    return p->h_kv_len && p->h_kv_len[row / p->s.len / p->s.heads] == 0;
}

static struct verdict compare(struct at_problem *p)
{
    struct verdict v = { 0 };
    for (size_t e = 0; e < p->nqkv; e++) {
        double got = from_fmt(p->s.dtype, p->raw_o[e]);
        v.checked++;
        if (!isnan(p->ref_o[e]))
            v.sq_err += (got - p->ref_o[e]) * (got - p->ref_o[e]);
        if (!wrong(got, p->ref_o[e], p->tol_o[e]))
            continue;
        if (v.nreport < CMP_MAX_REPORT)
            v.first[v.nreport++] = e;
        v.bad++;
        v.unwritten += isnan(got) && !isnan(p->ref_o[e]);
        v.nan_missing += isnan(p->ref_o[e]) != 0;
        v.bad_empty += empty_row(p, e / p->s.dim);
    }
    if (p->s.lse && p->ref_lse_valid)
        for (size_t e = 0; e < p->nlse; e++)
            if (wrong(p->h_lse[e], p->ref_lse[e], p->tol_lse[e])) {
                if (!v.bad_lse++)
                    v.first_lse = e, v.got_lse = p->h_lse[e];
                v.lse_unwritten += isnan(p->h_lse[e]) && !isnan(p->ref_lse[e]);
                v.bad_lse_empty += empty_row(p, e);
            }
    return v;
}

static const char *at_hint(const struct at_problem *p, const struct verdict *v, int in_o,
                           const char *what)
{
    const struct at_shape *s = &p->s;
    const int mma = strstr(what, "_mma_") != NULL, wgmma = strstr(what, "_wgmma_") != NULL;
    if (in_o && v->unwritten == v->checked)
        return wgmma ? "nothing was written (every element of o is still the NaN poison): is the "
                       "TODO of step4_wgmma_sm90a.cu done, and do the consumer warpgroups store "
                       "o and lse?"
             : mma ? "nothing was written (every element of o is still the NaN poison): is the "
                     "TODO of step3_mma.cu done, and does the launcher start the kernel?"
                   : "nothing was written (every element of o is still the NaN poison): is the "
                     "TODO of step2_fused.cu done, and does the launcher start the kernel?";
    if (!in_o && v->lse_unwritten == p->nlse)
        return "lse is still the NaN poison everywhere: write lse[row] = m + log(l) for every "
               "row, once, at the end";
    if (!in_o && v->bad_lse_empty == v->bad_lse)
        return "a row that sees no key (kv_len[b] == 0) has l = 0 and m = -inf: the contract "
               "gives it lse = -inf (the log of an empty sum), exactly, whether or not any tile "
               "of keys was visited";
    if (!in_o)
        return "lse = m + log(l), with m the row's running max and l the running sum of "
               "exp(s - m): log(l) alone forgets the max the sum was taken against";
    if (in_o && v->bad_empty == v->bad)
        return "a row that sees no key (kv_len[b] == 0) ends with l = 0 and acc = 0, and acc / "
               "l is 0 / 0, NaN: the contract gives that row zeros in o (and -inf in lse), so "
               "test l == 0 before dividing";
    if (v->nan_missing && v->nan_missing == v->bad)
        return "a NaN in a row of q (or a row of k the row sees) must make that row of o NaN: "
               "fmaxf drops a NaN, but exp(NaN) and sums keep it; do not clamp or skip it";
    if (s->vec == V_LARGE)
        return "scores of +-200: exp(200) is inf in fp32 (and inf / inf is NaN), so subtract "
               "the row's running max before exp, and rescale what was summed against an "
               "older max by exp(m_old - m_new)";
    if (v->unwritten)
        return "some elements of o are NaN where the reference is not (the poison, never "
               "overwritten, or a 0 / 0): does every query row get a block, the last partial "
               "tile of rows included, and every column of a row? Does every row see a key?";
    if (s->pad != PAD_NONE)
        return "with the padding mask row i of batch b sees the keys j < kv_len[b] (kv_len[b] "
               "= len where d_kv_len is NULL): the keys from there on are masked (-inf) in the "
               "tile that holds kv_len[b], as the keys past len are in the last tile, and the "
               "loop over tiles of keys can stop there";
    if (s->causal)
        return "row i sees keys j <= i (itself included): the mask is key > row, and the "
               "keys past len in the last tile are masked too";
    if (wgmma)
        return "with several tiles of keys: l and the accumulator rescaled by exp(m_old - "
               "m_new) once the product that reads O is done (wgmma_wait), the stage released "
               "(the empty barrier) only after the wgmma that reads its V has completed, the "
               "parity of each wait flipping every STAGES tiles, and the keys past len masked "
               "(-inf): TMA's zero fill makes them score 0, not -inf";
    if (mma)
        return "with several tiles of keys (len over 64): the accumulator and l rescaled by "
               "exp(m_old - m_new) when the max grows; the next tile's cp.async issued only "
               "after a barrier that every warp passes once done with the buffer it refills; "
               "V through ldmatrix.trans (B's k runs down V's rows); and the keys past len "
               "masked (-inf), not zero";
    return "when the running max grows, both l and the accumulator of o must be scaled by "
           "exp(m_old - m_new); and the keys past len in the last tile must be masked (-inf), "
           "not zero";
}

static void at_check(void *pp, int slot, const char *what)
{
    struct at_problem *p = pp;
    char shape[96], msg[GRADE_TEXT];
    at_shape_name(&p->s, shape, sizeof shape);
    gpu_sync();
    void *bufs[] = { p->d_o, p->d_lse, p->d_work, p->d_q, p->d_k, p->d_v, p->d_kv_len };
    for (size_t b = 0; b < sizeof bufs / sizeof bufs[0] && bufs[b]; b++) {
        if (dbuf_check_guards(bufs[b], msg, sizeof msg) == 0)
            continue;
        grade_hint(slot, "%s", b == 0 ? "a store past the end of o: the last tile of rows must "
                                        "stop at len"
                             : b == 1 ? "a store past the end of lse: one float a row, rows "
                                        "past len have none"
                             : b == 2 ? "the work space is attention_work_bytes(batch, heads, "
                                        "len) bytes"
                                      : "q, k, v and kv_len are only read: nothing may be "
                                        "stored there");
        ck_abort_msg("%s: %s: %s", shape, what, msg);
    }
    to_host(p->raw_o, p->d_o, p->nqkv * 2);
    if (p->s.lse)
        to_host(p->h_lse, p->d_lse, p->nlse * sizeof(float));
    struct verdict v = compare(p);
    const int d = p->s.dim, len = p->s.len;
    if (v.bad) {
        char first[320] = "";
        size_t at = 0;
        for (int i = 0; i < v.nreport && at < sizeof first; i++) {
            size_t e = v.first[i], row = e / d;
            at += snprintf(first + at, sizeof first - at, "%s(head %zu, row %zu, col %zu): got "
                           "%.6g, want %.6g (within %.2g)", i ? "; " : "first at ",
                           row / len, row % len, e % d, from_fmt(p->s.dtype, p->raw_o[e]),
                           p->ref_o[e], p->tol_o[e]);
        }
        grade_hint(slot, "%s", at_hint(p, &v, 1, what));
        ck_abort_msg("%s: %s: o: %zu of %zu wrong, %s", shape, what, v.bad, v.checked, first);
    }
    if (v.bad_lse) {
        grade_hint(slot, "%s", at_hint(p, &v, 0, what));
        ck_abort_msg("%s: %s: lse: %zu of %zu wrong, first at (head %zu, row %zu): got %.7g, "
                     "want %.7g (within %.2g)", shape, what, v.bad_lse, p->nlse,
                     v.first_lse / len, v.first_lse % len, v.got_lse, p->ref_lse[v.first_lse],
                     p->tol_lse[v.first_lse]);
    }
    if (p->s.vec == V_FA3 && p->ref_lse_valid) {
        const double rmse = sqrt(v.sq_err / (double)v.checked);
        const double bound = tol_attention_rmse(tol_fmt(p->s.dtype));
        if (rmse > bound) {
            grade_hint(slot, "every element is within its bound, but the errors add up: round "
                             "to the format once (o at the store, P before the second product), "
                             "and keep the scores, the max, the sums and the accumulator in fp32");
            ck_abort_msg("%s: %s: o: RMSE %.3g against double precision, more than %.3g",
                         shape, what, rmse, bound);
        }
        grade_note(slot, "%s: RMSE of o %.3g (at most %.3g)", shape, rmse, bound);
    }
}

/* The speed test's reference is step 1's o on the GPU (the host would take minutes at len
 * 4096): both sides round, so the allowance doubles, and the sum's scale A_c is bounded by
 * max |v| = 1 (tol_attention_vs_gpu); dim stands in for E, which q and k in [-1, 1) at scale
 * 1 / sqrt(dim) keep below sqrt(dim). lse, which step 1 does not write, is checked by the
 * correctness tests only. */
static void at_adopt(void *pp)
{
    struct at_problem *p = pp;
    gpu_sync();
    to_host(p->raw_o, p->d_o, p->nqkv * 2);
    const struct tol_attention t = tol_attention(p->s.dim, p->s.dim, p->s.len,
                                                 tol_fmt(p->s.dtype));
    for (size_t e = 0; e < p->nqkv; e++) {
        p->ref_o[e] = from_fmt(p->s.dtype, p->raw_o[e]);
        p->tol_o[e] = tol_attention_vs_gpu(&t, p->ref_o[e]);
    }
    p->ref_lse_valid = 0;
}

/* the adopted reference against the host's on a sample of rows: 8 of each of the first and
 * the last head */
static void at_vet(void *pp, struct rng *r, int slot)
{
    struct at_problem *p = pp;
    double *ref = xmalloc(p->nqkv * sizeof(double)), *tol = xmalloc(p->nqkv * sizeof(double));
    memcpy(ref, p->ref_o, p->nqkv * sizeof(double));
    memcpy(tol, p->tol_o, p->nqkv * sizeof(double));
    double *sc = xmalloc((size_t)p->s.len * sizeof(double));
    double *pr = xmalloc((size_t)p->s.len * sizeof(double));
    const int heads = p->s.batch * p->s.heads, d = p->s.dim;
    for (int t = 0; t < 16; t++) {
        int bh = t < 8 ? 0 : heads - 1, i = (int)(rng_next(r) % (uint64_t)p->s.len);
        reference_row(p, bh, i, sc, pr);
        size_t row = (size_t)bh * p->s.len + i;
        for (int c = 0; c < d; c++) {
            size_t e = row * d + c;
            if (wrong(ref[e], p->ref_o[e], p->tol_o[e])) {
                grade_hint(slot, "the unfused step is the speed test's reference, and it is "
                                 "wrong: unfused.cu is given; has it been changed?");
                ck_abort_msg("the unfused step's o at (head %d, row %d, col %d) is %.6g, the "
                             "host's %.6g", bh, i, c, ref[e], p->ref_o[e]);
            }
        }
    }
    memcpy(p->ref_o, ref, p->nqkv * sizeof(double));
    memcpy(p->tol_o, tol, p->nqkv * sizeof(double));
    free(ref), free(tol), free(sc), free(pr);
}

static int at_bench_check(void *pp, const char *name, const char *shape)
{
    struct at_problem *p = pp;
    gpu_sync();
    to_host(p->raw_o, p->d_o, p->nqkv * 2);
    struct verdict v = compare(p);
    if (v.bad) {
        fprintf(stderr, "bench: %s at %s: %zu of %zu outputs wrong\n", name, shape, v.bad,
                v.checked);
        return -1;
    }
    return 0;
}

static const struct flow_kind AT = {
    sizeof(struct at_shape), at_init, at_fill, at_launch, at_library, at_check, at_poison,
    at_free, at_shape_name, at_work, "multiply-adds", at_fill, at_bench_check, at_fill_inputs,
    at_adopt, NULL,
};

/* ==== the correctness shapes ================================================================ */

/* { batch, heads, GPU len, CPU len, dim, causal, vec, pad }: len 1 (o is v), 17 and 97 and 257
 * (primes), 31 (short of a 32-key tile), 200 (no multiple of 64), several heads; the padding
 * mask (kv_len drawn a batch: no multiple of a tile but by chance) without and with causal, on
 * scores to +-200 (a padded key's large score must not reach the max), and with a batch of
 * kv_len 0; the CPU backend's largest shapes shrink */
static const struct { int batch, heads, gpu_len, cpu_len, dim, causal, vec, pad; } SHAPES[] = {
    { 1, 1,    1,   1,  64, 0, V_UNIFORM, PAD_NONE },
    { 1, 2,   17,  17,  64, 1, V_UNIFORM, PAD_NONE },
    { 2, 1,   97,  97, 128, 0, V_UNIFORM, PAD_NONE },
    { 1, 1,   31,  31, 128, 1, V_UNIFORM, PAD_NONE },
    { 1, 2,  200, 200,  64, 1, V_UNIFORM, PAD_NONE },
    { 1, 1,  257, 257, 128, 1, V_UNIFORM, PAD_NONE },
    { 2, 3, 1000, 131,  64, 0, V_UNIFORM, PAD_NONE },
    { 1, 2, 2047, 193, 128, 0, V_UNIFORM, PAD_NONE },
    { 1, 1, 4096, 300,  64, 1, V_UNIFORM, PAD_NONE },
    { 1, 1,  130, 130,  64, 0, V_LARGE,   PAD_NONE },
    { 1, 1,   77,  77, 128, 1, V_LARGE,   PAD_NONE },
    { 1, 2,   70,  70,  64, 1, V_NAN,     PAD_NONE },
    { 1, 2,   45,  45, 128, 0, V_NAN,     PAD_NONE },
    { 1, 2, 1024, 192, 128, 0, V_FA3,     PAD_NONE },
    { 1, 2, 1000, 160,  64, 1, V_FA3,     PAD_NONE },
    { 3, 2,  200, 200,  64, 0, V_UNIFORM, PAD_KEYS },
    { 2, 2, 1000, 257, 128, 1, V_UNIFORM, PAD_KEYS },
    { 2, 1,  300, 150,  64, 1, V_LARGE,   PAD_KEYS },
    { 3, 1,   97,  97, 128, 0, V_UNIFORM, PAD_EMPTY },
    { 2, 2,  130, 130,  64, 1, V_UNIFORM, PAD_EMPTY },
};
#define NSHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

/* the baseline's: fewer, small (it runs on every grade, STEP or not); its masks included */
static const int BASE_SHAPES[] = { 0, 1, 2, 4, 9, 15, 19 };
#define NBASE ((int)(sizeof BASE_SHAPES / sizeof BASE_SHAPES[0]))

struct shape_list {
    struct at_shape gpu[NSHAPES], cpu[NSHAPES];
    struct flow_shapes fs;
};

static const struct flow_shapes *shapes_for(struct shape_list *l, int dtype, int lse,
                                            int baseline)
{
    int n = 0;
    for (int k = 0; k < (baseline ? NBASE : NSHAPES); k++, n++) {
        int i = baseline ? BASE_SHAPES[k] : k;
        struct at_shape s = { dtype, SHAPES[i].batch, SHAPES[i].heads, SHAPES[i].gpu_len,
                              SHAPES[i].dim, SHAPES[i].causal, SHAPES[i].vec, lse,
                              SHAPES[i].pad };
        l->gpu[n] = s;
        s.len = SHAPES[i].cpu_len;
        l->cpu[n] = s;
    }
    l->fs = (struct flow_shapes){ l->gpu, l->cpu, n, .plain_titles = 0 };
    return &l->fs;
}

/* ==== speed (GPU only) ======================================================================= */

/* Step 2 against step 1 at one shape: causal, bf16, dim 64, batch 2, 16 heads, len 4096.
 * The napkin math of the lesson:
 *   step 1 moves about 20 bytes a score (S and P through memory) plus a causal mask pass
 *   (4 more), 24 x 4096^2 x 32 = 12.9 GB: about 3.5 ms at 3.7 TB/s, its GEMMs on the tensor
 *   cores hidden under that; step 2 does 4 x 4096^2 x 64 x 32 / 2 = 69 GFLOP of FMAs (the
 *   masked half skipped), about 3.5 ms at 20 TFLOP/s (30% of the FP32 peak, what about one
 *   FMA per shared load allows). Predicted about 1.0x.
 * Measured on the H200 (plots/data/h200/10-fused-attention.tsv, 32 heads, the same length and
 * mask): the reference at 1.51x the unfused step, 23.5 TFLOP/s against 15.5. The gate is 80%
 * of that, as chapter 04's are of their references: 1.2x. Non-causal, the bench measured
 * 0.55x at dim 64 and 0.20x at dim 128: there the tensor cores win, which is step 3's point. */
#define SPEED_NEEDS 1.2
static const struct at_shape SPEED_SHAPE = { BF16, 2, 16, 4096, 64, 1, V_UNIFORM, 0, PAD_NONE };

/* Step 3 against step 1: bf16, dim 128, batch 2, 16 heads (hidden size 2048), len 4096, no
 * mask, where step 1's GEMMs run on the tensor cores as step 3's products do, and the gap is
 * the 20 bytes a score step 1 moves. The napkin math: step 1 moves 20 x 4096^2 x 32 = 10.7 GB,
 * about 2.7 ms at the copy's 4 TB/s; step 3 does 4 x 4096^2 x 128 x 32 = 275 GFLOP, 0.8 ms at
 * 330 TFLOP/s (the FlashAttention-2 class), some 3x. The reference, 32 query rows a warp,
 * measured 4.48x on the H200 in this test; the gate is three quarters of that. */
#define SPEED_NEEDS_MMA 3.3
static const struct at_shape SPEED_SHAPE_MMA = { BF16, 2, 16, 4096, 128, 0, V_UNIFORM, 0,
                                                 PAD_NONE };

/* Step 4 against step 1 at step 3's shape. The napkin math: the same 275 GFLOP at the class of
 * FlashAttention-3 (some 550 TFLOP/s and more at dim 128 on the H100's tensor cores, which the
 * H200 shares) take 0.5 ms, against step 1's 2.7 ms of memory: about 6x. The reference measured
 * 7.48x on the H200 (628 TFLOP/s at this shape, SM 1980 MHz); the gate is three quarters of
 * that, far out of reach of step 3's algorithm (2.75x to 3.10x here), so that only the products
 * on wgmma with the softmax under them pass. */
#define SPEED_NEEDS_WGMMA 5.6

static void speed_report(int slot, const void *shape, const struct flow_times *t, double needs,
                         const char *hint)
{
    const struct at_shape *s = shape;
    double tb = t->base.median_ms, ty = t->yours.median_ms, ratio = tb / ty;
    /* FLOPs as the issue counts them: 4 len^2 dim a head, halved for the causal mask */
    double flops = 2 * at_work(s) * (s->causal ? 0.5 : 1);
    grade_note(slot, "yours %.3f ms (%.1f TFLOP/s) = %.2fx the unfused step's %.3f ms (%.1f "
                     "TFLOP/s; needs %.2fx)", ty, flops / (ty * 1e9), ratio, tb,
               flops / (tb * 1e9), needs);
    grade_summary("%.1f TFLOP/s = %.2fx unfused (needs %.2fx)", flops / (ty * 1e9), ratio,
                  needs);
    grade_hint(slot, "%s", hint);
    char name[96];
    at_shape_name(s, name, sizeof name);
    ck_assert_msg(ratio >= needs, "%s: yours %.3f ms, the unfused step %.3f ms: %.2fx, "
                  "needs %.2fx", name, ty, tb, ratio, needs);
}

static void speed_verdict(int slot, const void *shape, const struct flow_times *t)
{
    speed_report(slot, shape, t, SPEED_NEEDS,
                 "a block of query rows must load each K and V tile once for all its rows "
                 "(shared memory), each thread compute several scores and several output "
                 "columns from registers (as chapter 04's register blocking), and a causal "
                 "block stop at its last row's key: the tiles above the diagonal are half the "
                 "work");
}

static void speed_verdict_wgmma(int slot, const void *shape, const struct flow_times *t)
{
    speed_report(slot, shape, t, SPEED_NEEDS_WGMMA,
                 "the tensor cores must never wait for the softmax: issue S = Q K^T of the next "
                 "tile before O += P V of this one, wait for the older group only "
                 "(wgmma_wait<1>) and do the softmax while the second product runs; the "
                 "producer a whole stage ahead (it refills a stage as soon as the empty barrier "
                 "says both consumers are done with it); and setmaxnreg giving the consumers the "
                 "registers for S, P and O without spills");
}

static void speed_verdict_mma(int slot, const void *shape, const struct flow_times *t)
{
    speed_report(slot, shape, t, SPEED_NEEDS_MMA,
                 "the tensor cores want feeding: Q's fragments loaded once into registers, "
                 "P passed from S's accumulators to the second mma.sync without shared memory, "
                 "the next tile's cp.async in flight while this tile's products run, and "
                 "shared-memory rows swizzled (or padded) so that no ldmatrix phase hits a "
                 "bank twice");
}

/* ==== concept tests (CPU backend) ============================================================ */

/* the shape drawn from the test's seed: batch 1, 2 heads, len 150-250 (no multiple of 16, 32
 * or 64), dim 64 or 128, causal or not; the driver's shape syntax: BxHxLxD, "c" for causal */
static void concept_shape(int slot, struct at_shape *s, char *arg, size_t n)
{
    struct rng r = grade_rng(slot);
    *s = (struct at_shape){ BF16, 1, 2, concept_pick(&r, 151, 249, 2),
                            concept_pick(&r, 64, 128, 64), concept_pick(&r, 0, 1, 1),
                            V_UNIFORM, 1, PAD_NONE };
    snprintf(arg, n, "%dx%dx%dx%d%s", s->batch, s->heads, s->len, s->dim, s->causal ? "c" : "");
}

START_TEST(fused_traffic)
{
    int slot = grade_slot();
    struct at_shape s;
    char arg[64];
    concept_shape(slot, &s, arg, sizeof arg);
    struct concept_row r = concept_profile_or_abort_at("fused", arg);
    const double bh = (double)s.batch * s.heads, qkv = bh * s.len * s.dim * 2;
    const double out = qkv + bh * s.len * 4; /* o and lse */
    const double loads = r.gld_bpr * (double)r.gld_requests;
    const double stores = r.gst_bpr * (double)r.gst_requests;
    const double kv_passes = (loads - qkv) / (2 * qkv), tiles16 = ceil(s.len / 16.0);
    if (loads == 0 && stores == 0)
        ck_abort_msg("at %s: the kernel read and wrote nothing in global memory: is the TODO of "
                     "step2_fused.cu done?", arg);
    if (r.launches != 1) {
        grade_hint(slot, "one kernel does it all: the scores, the softmax and the product with "
                         "V of a tile, then the next tile");
        ck_abort_msg("at %s: %d kernel launches (one wanted)", arg, r.launches);
    }
    /* the CPU backend counts accesses of plain types (a uint4, an unsigned short), not those
     * made through the __nv_bfloat16 and __half classes: a kernel whose loads it did not see
     * is asked for 16-byte loads, which a GPU wants anyway */
    if (loads < 0.95 * 3 * qkv) {
        grade_hint(slot, "load q, k and v 16 bytes at a time: a uint4 (eight bf16 or fp16 "
                         "values) from a row (every row starts on a 16-byte boundary), then "
                         "widen each half of it; the CPU backend counts loads of plain types, "
                         "and a GPU moves 16 bytes a lane in one instruction");
        ck_abort_msg("at %s: %.0f bytes of global loads seen for %.0f of q, k and v: loads "
                     "through __nv_bfloat16 or __half elements are not counted here; load "
                     "uint4s", arg, loads, 3 * qkv);
    }
    if (stores > 1.1 * out) {
        grade_hint(slot, "o and lse are the only outputs: the scores and probabilities of a "
                         "tile live in registers and shared memory, and are gone when the next "
                         "tile comes; a len x len matrix in memory is step 1's 20 bytes a "
                         "score");
        ck_abort_msg("at %s: stored %.0f bytes to global memory; o and lse are %.0f (%.1fx): "
                     "something besides the output went to memory", arg, stores, out,
                     stores / out);
    }
    if (loads > 1.1 * (qkv + 2 * qkv * tiles16)) {
        grade_hint(slot, "stage each tile of K and V in shared memory once, and let every "
                         "query row of the block use it from there: a thread that reads K and "
                         "V from global memory for its own row reads them len times");
        ck_abort_msg("at %s: loaded %.0f bytes from global memory for %.0f of q, k and v: k "
                     "and v read %.1f times each, more than once a block of 16 query rows "
                     "(%.0f)", arg, loads, 3 * qkv, kv_passes, tiles16);
    }
    grade_note(slot, "at %s: one launch; stored %.2fx o and lse; loaded q once and k, v %.1f "
                     "times (a block of %.0f query rows each)", arg, stores / out, kv_passes,
               kv_passes > 0 ? s.len / kv_passes : 0);
    grade_summary("one launch, %.2fx o and lse stored, k and v read %.1fx", stores / out,
                  kv_passes);
}
END_TEST

/* ==== machine code (GPU only, needs cuobjdump) ================================================ */

/* What step 4's sm_90a machine code must show: its products as wgmma, its copies as TMA. The
 * chapter links no references beside the learner's kernels, so every function of that name is
 * the one graded. */
static const struct sass_check {
    const char *opcode, *hint;
} SASS_CHECKS[] = {
    { "HGMMA", "both products must be wgmma.mma_async (wgmma_ss and wgmma_rs in "
               "attention_wgmma.cuh) in the sm_90a cubin of attention_wgmma_kernel: mma.sync "
               "compiles to HMMA, and elsewhere than sm_90a the kernel is a trap" },
    { "UTMALDG", "the tiles must be copied by cp.async.bulk.tensor (tma_load_3d in "
                 "attention_wgmma.cuh): cp.async compiles to LDGSTS, plain loads to LDG" },
};
#define SASS_KERNEL "attention_wgmma_kernel"

START_TEST(sass)
{
    int slot = grade_slot();
    const struct sass_check *k = grade_ctx();
    char why[256];
    int nfn, nwith;
    ck_assert_msg(sass_count(SASS_KERNEL, k->opcode, "sm_90a", &nfn, &nwith, why, sizeof why) == 0,
                  "%s", why);
    if (nfn < 1) {
        grade_hint(slot, "%s", k->hint);
        ck_abort_msg("the sm_90a machine code holds no function named %s: is yours named so (in "
                     "step4_wgmma_sm90a.cu), and built for sm_90a?", SASS_KERNEL);
    }
    if (nwith < nfn) {
        grade_hint(slot, "%s", k->hint);
        ck_abort_msg("no %s in the sm_90a machine code of %s (%d of its %d instances have it)",
                     k->opcode, SASS_KERNEL, nwith, nfn);
    }
    grade_note(slot, "%s holds %s (sm_90a, %d instances)", SASS_KERNEL, k->opcode, nfn);
}
END_TEST

static void add_sass(Suite *s)
{
    static char titles[sizeof SASS_CHECKS / sizeof SASS_CHECKS[0]][64];
    for (size_t i = 0; i < sizeof SASS_CHECKS / sizeof SASS_CHECKS[0]; i++) {
        snprintf(titles[i], sizeof titles[i], "sass: %s in %s", SASS_CHECKS[i].opcode,
                 SASS_KERNEL);
        const char *t = titles[i];
        if (!sass_on_path("cuobjdump"))
            grader_skip(t, "cuobjdump is not on PATH (it comes with the CUDA toolkit)");
        else if (grader_add_ctx(s, "sass", sass, &t, 1, 120, &SASS_CHECKS[i]) >= 0)
            sass_preload(NULL, 0); /* the machine code, read once here (sass.h) */
    }
}

/* ==== bench ================================================================================= */

struct bench_run {
    struct at_problem *p;
    flow_fn fn;
};

static void bench_launch(void *ctx)
{
    struct bench_run *b = ctx;
    at_launch(b->p, b->fn);
}

/* Rows: kernel "unfused_bf16" or "fused_simt_bf16", shape "BxHxLxD" with "c" for causal, the
 * median ms, GB/s of the compulsory bytes (q, k, v read and o written once, lse), and GFLOP/s
 * counted as 4 len^2 dim a head, halved for causal (the work the mask leaves). Step 1's o,
 * vetted against the host on a sample of rows, is each shape's reference. */
static int bench(const char *path)
{
    struct device_info info;
    struct results out;
    if (bench_begin(path, &out, &info) != 0)
        return EXIT_FAILURE;
    struct rng r;
    rng_init(&r, harness_seed());
    int rc = 0;
    /* the rungs this device runs: an sm_90a step on compute capability 9.0 only */
    int runs[16] = { 0 };
    for (int k = 0; k < ATTENTION_NUM_STEPS && k < 16; k++) {
        const struct attention_step *st = &ATTENTION_STEPS[k];
        runs[k] = st->bf16 != NULL &&
                  (!st->sm90a || (strcmp(info.backend, "cuda") == 0 && info.cc_major == 9 &&
                                  info.cc_minor == 0));
        if (!runs[k])
            fprintf(stderr, "bench: %s_bf16 left out: %s\n", st->name,
                    st->bf16 ? "sm_90a code runs on compute capability 9.0 only"
                             : "this build leaves its file out");
    }
    static const int LENS[] = { 512, 1024, 2048, 4096, 8192 };
    static const int DIMS[] = { 64, 128 };
    for (size_t di = 0; di < 2 && !rc; di++)
        for (int causal = 0; causal <= 1 && !rc; causal++)
            for (size_t li = 0; li < sizeof LENS / sizeof LENS[0] && !rc; li++) {
                /* hidden size 2048, batch 2: 32 heads of 64 or 16 of 128 */
                struct at_shape s = { BF16, 2, 2048 / DIMS[di], LENS[li], DIMS[di], causal,
                                      V_UNIFORM, 0, PAD_NONE };
                struct at_problem *p = at_init(&AT, &s);
                at_fill_inputs(p, &r);
                at_launch(p, (flow_fn)ATTENTION_STEPS[0].bf16);
                at_adopt(p);
                double *keep_ref = xmalloc(p->nqkv * sizeof(double));
                memcpy(keep_ref, p->ref_o, p->nqkv * sizeof(double));
                double *sc = xmalloc((size_t)s.len * sizeof(double));
                double *pr = xmalloc((size_t)s.len * sizeof(double));
                for (int t = 0; t < 4 && !rc; t++) { /* the vetting, as the speed test's */
                    int bh = t % 2 ? s.batch * s.heads - 1 : 0;
                    int i = (int)(rng_next(&r) % (uint64_t)s.len);
                    reference_row(p, bh, i, sc, pr);
                    for (int c = 0; c < s.dim; c++) {
                        size_t e = ((size_t)bh * s.len + i) * s.dim + c;
                        if (wrong(keep_ref[e], p->ref_o[e], p->tol_o[e])) {
                            fprintf(stderr, "bench: the unfused step's o at (head %d, row %d, "
                                    "col %d) is %.6g, the host's %.6g\n", bh, i, c,
                                    keep_ref[e], p->ref_o[e]);
                            rc = -1;
                            break;
                        }
                    }
                }
                at_adopt(p); /* back to step 1's o and its tolerance */
                free(keep_ref), free(sc), free(pr);
                char shape[48];
                snprintf(shape, sizeof shape, "%dx%dx%dx%d%s", s.batch, s.heads, s.len, s.dim,
                         causal ? "c" : "");
                const double flops = 2 * at_work(&s) * (causal ? 0.5 : 1);
                const double bytes = 4.0 * p->nqkv * 2 + p->nlse * 4.0;
                for (int k = 0; k < ATTENTION_NUM_STEPS && k < 16 && !rc; k++) {
                    if (!runs[k])
                        continue;
                    char name[48];
                    snprintf(name, sizeof name, "%s_bf16", ATTENTION_STEPS[k].name);
                    at_poison(p);
                    struct bench_run b = { p, (flow_fn)ATTENTION_STEPS[k].bf16 };
                    struct timing t = gpu_time(bench_launch, &b, 2, s.len >= 4096 ? 5 : 10);
                    if (at_bench_check(p, name, shape) != 0) {
                        rc = -1;
                        break;
                    }
                    results_row(&out, CHAPTER, name, shape, t.median_ms,
                                bytes / (t.median_ms * 1e6), flops / (t.median_ms * 1e6));
                    printf("%-20s %-18s %10.3f ms %8.1f TFLOP/s\n", shape, name, t.median_ms,
                           flops / (t.median_ms * 1e9));
                    fflush(stdout);
                }
                at_free(p);
            }
    if (results_close(&out) != 0 || rc) {
        fprintf(stderr, "bench: %s\n", rc ? "a rung's output was wrong (above)" : "writing failed");
        return EXIT_FAILURE;
    }
    return EXIT_SUCCESS;
}

/* ==== registration ========================================================================== */

static struct shape_list LISTS[10];

static void add_tests(Suite *s)
{
    const struct attention_step *s1 = &ATTENTION_STEPS[0];
    /* the given baseline, checked ahead of the ladder on every grade */
    static char base_what[2][48];
    for (int t = BF16; t <= F16; t++) {
        snprintf(base_what[t], sizeof base_what[t], "baseline attention_%s_%s", s1->name,
                 t == F16 ? "f16" : "bf16");
        flow_add_correct(s, &AT, shapes_for(&LISTS[t], t, s1->writes_lse, 1),
                         t == F16 ? (flow_fn)s1->f16 : (flow_fn)s1->bf16, base_what[t]);
    }
    static char what[4][2][48];
    static struct flow_speed sp[4];
    for (int k = 1; k <= ATTENTION_NUM_STEPS && k <= 4; k++) {
        const struct attention_step *st = &ATTENTION_STEPS[k - 1];
        if (!grader_step(k, st->title))
            continue;
        if (st->given) {
            grader_skip("given", "nothing to write: unfused.cu is the baseline the later steps "
                                 "are timed against (its correctness is graded above, as "
                                 "\"baseline\")");
            continue;
        }
        if (st->sm90a) {
            /* step 4: sm_90a code, which the CPU backend cannot run and leaves out */
            if (strcmp(grader_device()->backend, "cuda") != 0) {
                grader_skip("attention_wgmma", "graded on a GPU only: TMA, mbarrier and wgmma "
                                               "are PTX that the CPU backend cannot run, and its "
                                               "builds leave this step's file out");
                continue;
            }
            if (!st->bf16 || !st->f16) {
                grader_skip("attention_wgmma", "this build leaves its file out");
                continue;
            }
            if (grader_cc() != 90) {
                static char why[96];
                snprintf(why, sizeof why, "wgmma is sm_90a code, which runs on compute "
                                          "capability 9.0 only; this device is sm_%d",
                         grader_cc());
                grader_skip("attention_wgmma", why);
                continue;
            }
        }
        for (int t = BF16; t <= F16; t++) {
            snprintf(what[k - 1][t], sizeof what[k - 1][t], "attention_%s_%s",
                     k == 4 ? "wgmma" : k == 3 ? "mma" : "fused", t == F16 ? "f16" : "bf16");
            flow_add_correct(s, &AT, shapes_for(&LISTS[2 * k + t], t, st->writes_lse, 0),
                             t == F16 ? (flow_fn)st->f16 : (flow_fn)st->bf16, what[k - 1][t]);
        }
        if (k >= 3) {
            /* the tensor-core steps: no traffic count (their copies are cp.async or TMA, their
             * products the same bytes as step 2's); the CPU backend grades step 3's lanes'
             * addressing; step 4 runs on a GPU only, at step 3's speed shape */
            sp[k - 1] = (struct flow_speed){
                "speed", &AT, &SPEED_SHAPE_MMA, (flow_fn)st->bf16, (flow_fn)s1->bf16, NULL,
                what[k - 1][BF16], 2, 10, 600, k == 4 ? speed_verdict_wgmma : speed_verdict_mma,
                .order = { FLOW_BASE, FLOW_YOURS, FLOW_BASE }, .reference = (flow_fn)s1->bf16,
                .vet = at_vet };
            flow_add_speed(s, &sp[k - 1]);
            if (k == 4)
                add_sass(s);
            continue;
        }
        if (concept_here()) {
            static const char *titles[1] = { "traffic: no len x len matrix, k and v read once "
                                              "a block" };
            grader_add(s, "traffic", fused_traffic, titles, 1, 120);
        } else
            grader_skip("traffic", "counted on the CPU backend only (make grade BACKEND=emu); "
                                   "on a GPU the speed test is the measure");
        sp[k - 1] = (struct flow_speed){ "speed", &AT, &SPEED_SHAPE, (flow_fn)st->bf16,
                                         (flow_fn)s1->bf16, NULL, "attention_fused_bf16", 2, 10,
                                         600,
                                         /* no ceiling of the whole operation: the baseline is
                                          * timed before and after yours, the later kept */
                                         speed_verdict,
                                         .order = { FLOW_BASE, FLOW_YOURS, FLOW_BASE },
                                         .reference = (flow_fn)s1->bf16, .vet = at_vet };
        flow_add_speed(s, &sp[k - 1]);
    }
}

int main(int argc, char **argv)
{
    static const struct grader_spec spec = { CHAPTER, add_tests, bench, NULL };
    return grader_main(&spec, argc, argv);
}
