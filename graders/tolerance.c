/* tolerance.c: the graders' tolerances and the bounds they are derived from (see tolerance.h
 * and TOLERANCE.md). Each allowed bound below has its derivation beside it as a function, so
 * that the audit can hold one to the other. */
#include "tolerance.h"

#include <math.h>
#include <stdio.h>

#define U TOL_U_FP32

double tol_u(enum tol_format f)
{
    return f == TOL_BF16 ? TOL_U_BF16 : f == TOL_FP16 ? TOL_U_FP16 : TOL_U_FP32;
}

double tol_floor(enum tol_format f)
{
    return f == TOL_BF16 ? TOL_FLOOR_BF16 : f == TOL_FP16 ? TOL_FLOOR_FP16 : TOL_FLOOR_FP32;
}

double tol_gamma(double n, double u)
{
    return n <= 0 ? 0.0 : n * u < 1 ? n * u / (1 - n * u) : INFINITY;
}

double tol_gamma_prob(double n, double u)
{
    return n <= 0 ? 0.0 : expm1(TOL_LAMBDA * sqrt(n) * u + n * u * u / (1 - u));
}

/* lambda sqrt(n) u and 2 u more: the probabilistic bound as the graders have always written
 * it, a hair above gamma~_n (the 2 u: room for the last rounding) */
static double prob_allowed(double n) { return (TOL_LAMBDA * sqrt(n) + 2) * U; }

/* ---- reductions ------------------------------------------------------------------------------ */

/* fp32 products round (u each, or once with the sum in an FMA); any order of k - 1 additions:
 * along any path to the result at most k roundings, so gamma_k(u) in the worst case. */
double tol_dot_fp32(int k) { return fmin(tol_gamma(k, U), prob_allowed(k)); }
static double dot_fp32_derived(double k) { return fmin(tol_gamma(k, U), tol_gamma_prob(k, U)); }

/* bf16 products are exact in fp32 (8 + 8 significant bits). A tensor core may add them with
 * truncation (Fasi, Higham, Mikaitis and Pranesh, PeerJ Comput. Sci. 7:e330, 2021), which errs
 * by up to one ulp, 2u, where round-to-nearest errs by half: gamma_k(2u) covers k such
 * roundings. The probabilistic bound assumes centred errors; the graded inputs are symmetric
 * about zero, so the partial sums change sign. */
double tol_dot_bf16(int k) { return fmin(tol_gamma(k, 2 * U), prob_allowed(k)); }
static double dot_bf16_derived(double k)
{
    return fmin(tol_gamma(k, 2 * U), tol_gamma_prob(k, U));
}

/* n - 1 additions, in any order: gamma_{n-1}(u); a sum of one value is the value. */
double tol_sum_fp32(long n) { return fmin(tol_gamma((double)n - 1, U), prob_allowed((double)n)); }
static double sum_fp32_derived(double n)
{
    return fmin(tol_gamma(n - 1, U), tol_gamma_prob(n, U));
}

/* ---- row operations -----------------------------------------------------------------------------
 * softmax: y = exp(x - m) / sum_j exp(x_j - m), d = m - x.
 *   x - m rounds relative to d: d u, which exp turns into a relative error d u;
 *   __expf: at most 2 + floor(1.173 |x|) ulp (CUDA C++ Programming Guide), (4 + 2.35 d) u;
 *   the denominator's terms err the same way, weighted by p_j: (4 + 3.35 sum p_j d_j) u, and
 *   sum_j p_j d_j = m - E_p[x] <= lse - E_p[x] = H(p) <= ln(cols);
 *   the sum of cols positive terms, relative to itself: min(gamma_{cols-1}, gamma~_cols);
 *   the division (__fdividef, 2 ulp): 4u; the rescales of a running sum and the final scaling:
 *   2u; the store: u_out.
 * The grader allows (16 + 4 d + 8 sqrt(cols)) u + u_out. */
double tol_softmax(double d, int cols, enum tol_format out)
{
    return (16 + 4 * d + TOL_LAMBDA * sqrt((double)cols)) * U + tol_u(out);
}
static double softmax_derived(double d, double cols, enum tol_format out)
{
    return (4 + 3.35 * d + 4 + 3.35 * log(cols) + 4 + 2) * U + sum_fp32_derived(cols) +
           tol_u(out);
}

/* RMSNorm: y = x rstd w, rstd = rsqrtf(ss / cols + eps), ss = sum x^2.
 *   ss: cols squares and cols - 1 additions, min(gamma_cols, gamma~_cols) relative to itself;
 *   / cols and + eps: u each; the root halves these (3u / 2 and half of ss's); rsqrtf (2 ulp):
 *   4u; the products x rstd and w: 2u. Derived: half of ss's bound + 7.5 u + u_out.
 * The grader allows ss's bound whole, 15 u and u_out: twice the derivation but for u_out. */
static double sumsq_allowed(int cols)
{
    return fmin(tol_gamma(cols, U), TOL_LAMBDA * sqrt((double)cols) * U);
}
static double sumsq_derived(double cols)
{
    return fmin(tol_gamma(cols, U), tol_gamma_prob(cols, U));
}
double tol_rmsnorm(int cols, enum tol_format out)
{
    return sumsq_allowed(cols) + 15 * U + tol_u(out);
}
static double rmsnorm_derived(double cols, enum tol_format out)
{
    return sumsq_derived(cols) / 2 + 7.5 * U + tol_u(out);
}

/* LayerNorm: z = (x - mu) rstd w, y = z + b.
 *   z: RMSNorm's bound on the centred row, and x - mu rounds once more: derived half of the
 *      sum of squares' bound + 8.5 u; allowed as RMSNorm's, ss's bound and 15 u;
 *   mu: a sum of cols values (tol_sum_fp32's derivation) and the division, relative to
 *      mean |x|: the whole row shifts by that times rstd |w|; allowed min(gamma_{cols-1} + u,
 *      (8 sqrt(cols) + 2) u);
 *   + b: u |b|; the store: u_out |y|. */
static double ln_mean_allowed(int cols)
{
    return fmin(tol_gamma((double)cols - 1, U) + U, prob_allowed(cols));
}
struct tol_layernorm tol_layernorm(int cols, enum tol_format out)
{
    struct tol_layernorm t = { sumsq_allowed(cols) + 15 * U, tol_u(out), U, ln_mean_allowed(cols),
                               TOL_FLOOR_FP32 };
    return t;
}
static double ln_z_derived(double cols) { return sumsq_derived(cols) / 2 + 8.5 * U; }
static double ln_mean_derived(double cols) { return sum_fp32_derived(cols) + U; }

/* Detection thresholds (TOLERANCE.md): 2% in fp32, 5% in bf16. */
double tol_layernorm_variance(enum tol_format out) { return out == TOL_FP32 ? 0.02 : 0.05; }

/* ---- attention ----------------------------------------------------------------------------------
 * A score is an fp32 dot product of dim exact products (bf16 and fp16 products are exact in
 * fp32) times the scale: at most (dim + 2) u e, worst case. Through the normalisation a score's
 * error moves each p_j relatively by up to twice the largest, so o by 2 (dim + 2) u e A_c; lse
 * = m + log l moves by sum_j p_j delta_j, at most once the largest.
 * Each p_j's __expf and s - m rounding: (4 + 3.35 (m - s_j)) u relatively, weighted by p_j:
 * (4 + 3.35 ln n) u (sum_j p_j (m - s_j) <= ln n, as for softmax); twice that in o.
 * o has two sums of n terms (its numerator and l): 2 gamma~_n; lse has l's only.
 * o: the rescales, the division and the final product, 8 u; the store u_t |o|, and P rounded
 *    to the format before the second product, u_t A_c; the format's floor a (2^-25 fp16,
 *    2^-126 bf16) once for o's store and once for each weight p_j <= 1 that P's rounding puts
 *    among the subnormals, where the error is a, not u_t p_j: a (1 + sum_j |v_jc| / l), worst
 *    case.
 * lse: log l, __logf's 2^-21.41 absolute (6 u) or 3 ulp, 6 u ln n; the rescales of l, u;
 *    the addition m + log l, u |lse|.
 * The grader allows, in u, w = 4 (dim + 2) e + 16 sqrt(n) + 64 in o, within twice the
 * derivation (the 4 leaves a factor of 2 for __expf and s - m beside the normalisation's 2;
 * 16 sqrt(n) is the two sums' 8 sqrt(n) each; 64 the few roundings of the rescales, the
 * division and the log). lse is allowed 8 u |lse| + w u: 8 times the derivation's u |lse|,
 * and w is up to 4.2 times its absolute part (4 times the score term, where lse moves by the
 * largest score error once; twice the one sum): looser than twice the derivation, 2.5 times
 * on a row of 4096 uniform keys at dim 64, 4 on scores to +-200 (TOLERANCE.md).
 * Bound kind: mixed, the scores' worst case and the sums' probabilistic bound (lambda = 8);
 * o_rel, o_abs and lse_rel worst case. */
#define ATTN_LSE_REL 8 /* lse's allowance relative to |lse|, in u */

static double attn_o_w_allowed(double dim, double e, double n)
{
    return (4.0 * (dim + 2) * e + 2 * TOL_LAMBDA * sqrt(n) + 64) * U;
}
static double attn_o_w_derived(double dim, double e, double n)
{
    return (2 * (dim + 2) * e + 2 * (4 + 3.35 * log(n)) + 8) * U + 2 * tol_gamma_prob(n, U);
}
static double attn_lse_abs_derived(double dim, double e, double n)
{
    return ((dim + 2) * e + 4 + 3.35 * log(n) + 6 + 6 * log(n) + 1) * U + tol_gamma_prob(n, U);
}

struct tol_attention tol_attention(int dim, double e, long n, enum tol_format out)
{
    const double w = attn_o_w_allowed(dim, e, (double)n);
    struct tol_attention t = {
        .o_rel = tol_u(out),
        .o_a = tol_u(out) + w,
        .o_w = w,
        .o_abs = tol_floor(out),
        .lse_rel = ATTN_LSE_REL * U,
        .lse_abs = w,
    };
    return t;
}

/* the terms of lse_rel |lse| + lse_abs, added left to right in one sum before the scaling by u
 * (exact: a power of two) */
double tol_attention_lse(int dim, double e, long n, double lse)
{
    return (ATTN_LSE_REL * fabs(lse) + 4.0 * (dim + 2) * e + 2 * TOL_LAMBDA * sqrt((double)n) +
            64) * U;
}

/* Both sides round: TOL_TWO_SIDED times o's bound (mixed, as o's) with A_c <= max |v| = 1, so
 * u_t A_c + w becomes o_rel + o_w. The absolute floor is fp16's 2^-25 in either format: bf16's
 * own is 2^-126, but 2^-25 adds under 2^-15 of the rest of the bound (2 u_t >= 2^-10). */
double tol_attention_vs_gpu(const struct tol_attention *t, double o)
{
    return TOL_TWO_SIDED * (t->o_rel * fabs(o) + t->o_rel + t->o_w) + TOL_FLOOR_FP16;
}

/* FlashAttention-3 (Shah et al., 2024) reports an RMSE of o of 1.9e-4 for its fp16 kernel and
 * 3.2e-4 for unfused attention on this vector; fp16 is held to 2e-4, a measured accuracy
 * rather than a derived bound. Every rounding that reaches o (its store, and P's before the
 * second product) is relative to the format's unit roundoff, the fp32 terms being 2^13 (bf16
 * 2^16) times smaller: bf16's gate is fp16's times u_bf16 / u_fp16 = 8, 1.6e-3. */
double tol_attention_rmse(enum tol_format out)
{
    const double fp16 = 2e-4;
    return out == TOL_FP16 ? fp16 : fp16 * (TOL_U_BF16 / TOL_U_FP16);
}

struct tol_fp8_gemm tol_fp8_blockscaled(int kb)
{
    struct tol_fp8_gemm t;
    t.rel = ldexp(1, -9);
    t.s = (1 + ldexp(1, -9)) * (ldexp(1, -6) + (kb + 2) * ldexp(1, -24));
    return t;
}

/* ---- the profile drivers' checks --------------------------------------------------------------
 * Detection thresholds, not rounding bounds (no entry of the audit): they print a note, and
 * grade nothing.
 * TOL_PROFILE_MATMUL, |got - want| / (|want| + 1): the default shape is 128^3 with inputs in
 * [-1, 1], where S = sum |a||b| is about k / 4 = 32 and |want| about 3.8, so tol_dot_fp32(128) S
 * is about 1.8e-4 and the threshold (|want| + 1) 1e-4 about 4.8e-4: 2.7 times the bound on a
 * typical element, 0.57 of it where want is near 0. A wrong index or a dropped term moves an
 * element by about one product |a||b|, 0.25: far past either.
 * TOL_PROFILE_SUM, relative to sum |x|: the sum rungs add 65539 values in [-1, 1], where
 * tol_sum_fp32 is 2050 u = 1.2e-4; 1e-5 is 168 u, a twelfth of it. The values' partial sums
 * stay near sqrt(n / 3) = 150 while sum |x| is near n / 2: an order's rounding errs by about
 * sqrt(n) 150 u, about u of sum |x|, and a dropped element of the mean size 0.5 by 1.5e-5 of
 * it (256 u), past the threshold. */

/* ---- the table ------------------------------------------------------------------------------- */

#define OUT_FP32 (1u << TOL_FP32)
#define OUT_BF16 (1u << TOL_BF16)
#define OUT_FP16 (1u << TOL_FP16)
#define OUT_ALL (OUT_FP32 | OUT_BF16 | OUT_FP16)

static double zero(const struct tol_point *p) { (void)p; return 0; }
static double a_fp8_s(const struct tol_point *p)
{
    return tol_fp8_blockscaled((int)ceil(p->n / 128)).s;
}
static double a_dot_fp32(const struct tol_point *p) { return tol_dot_fp32((int)p->n); }
static double d_dot_fp32(const struct tol_point *p) { return dot_fp32_derived(p->n); }
static double a_dot_bf16(const struct tol_point *p) { return tol_dot_bf16((int)p->n); }
static double d_dot_bf16(const struct tol_point *p) { return dot_bf16_derived(p->n); }
static double a_sum(const struct tol_point *p) { return tol_sum_fp32((long)p->n); }
static double d_sum(const struct tol_point *p) { return sum_fp32_derived(p->n); }
static double a_softmax(const struct tol_point *p) { return tol_softmax(p->d, (int)p->n, p->out); }
static double d_softmax(const struct tol_point *p) { return softmax_derived(p->d, p->n, p->out); }
static double a_rms(const struct tol_point *p) { return tol_rmsnorm((int)p->n, p->out); }
static double d_rms(const struct tol_point *p) { return rmsnorm_derived(p->n, p->out); }
static double a_ln_z(const struct tol_point *p) { return tol_layernorm((int)p->n, p->out).z; }
static double d_ln_z(const struct tol_point *p) { return ln_z_derived(p->n); }
static double a_ln_mean(const struct tol_point *p) { return tol_layernorm((int)p->n, p->out).mean; }
static double d_ln_mean(const struct tol_point *p) { return ln_mean_derived(p->n); }
static double a_ln_y(const struct tol_point *p) { return tol_layernorm((int)p->n, p->out).y; }
static double a_ln_b(const struct tol_point *p) { return tol_layernorm((int)p->n, p->out).b; }
static double d_store(const struct tol_point *p) { return tol_u(p->out); }
static double d_one(const struct tol_point *p) { (void)p; return U; }
static double a_at_o_a(const struct tol_point *p)
{
    return tol_attention((int)p->dim, p->e, (long)p->n, p->out).o_a;
}
static double d_at_o_a(const struct tol_point *p)
{
    return tol_u(p->out) + attn_o_w_derived(p->dim, p->e, p->n);
}
static double a_at_o_rel(const struct tol_point *p)
{
    return tol_attention((int)p->dim, p->e, (long)p->n, p->out).o_rel;
}
static double a_at_o_abs(const struct tol_point *p)
{
    return tol_attention((int)p->dim, p->e, (long)p->n, p->out).o_abs;
}
static double d_floor(const struct tol_point *p) { return tol_floor(p->out); }
static double a_at_lse_rel(const struct tol_point *p)
{
    return tol_attention((int)p->dim, p->e, (long)p->n, p->out).lse_rel;
}
static double a_at_lse_abs(const struct tol_point *p)
{
    return tol_attention((int)p->dim, p->e, (long)p->n, p->out).lse_abs;
}
static double d_at_lse_abs(const struct tol_point *p)
{
    return attn_lse_abs_derived(p->dim, p->e, p->n);
}

const struct tol_entry TOL_ENTRIES[] = {
    { "TOL_EXACT: moves", "02 transpose_*; 08 upload_*, exchange",
      "fp32, bytes", TOL_KIND_EXACT, OUT_ALL,
      "0", "0: nothing rounds",
      zero, zero },
    { "TOL_EXACT: integers", "07 sum_* on +-1; 08 pipeline_*; 09 blocks_per_sm, stream_sum",
      "int, fp32 holding integers", TOL_KIND_EXACT, OUT_ALL,
      "0", "0: every partial result an integer below 2^24",
      zero, zero },
    { "TOL_EXACT: replays", "03 process; 06 run_pipeline; 08 graph_loop",
      "fp32", TOL_KIND_EXACT, OUT_ALL,
      "0", "0: the host replays the device's IEEE operations in its order",
      zero, zero },
    { "TOL_EXACT: quantisers", "11 quantize_*, dequantize_*",
      "e4m3, e5m2, e2m1, e8m0, fp32", TOL_KIND_EXACT, OUT_ALL,
      "0", "0: the contract fixes every operation and the formats' rounding",
      zero, zero },
    { "tol_fp8_blockscaled(kb).s", "11 gemm_fp8_blockscaled",
      "e4m3 in, bf16 out", TOL_KIND_WORST, OUT_BF16,
      "(1 + 2^-9) (2^-6 + (kb + 2) 2^-24) S", "the same: a worst case from the tensor cores' 13 bits",
      a_fp8_s, a_fp8_s },
    { "tol_dot_fp32(k)", "01 matmul; 04 matmul_*; 09 matmul_budget; 11 gemv_mxfp4",
      "fp32", TOL_KIND_MIXED, OUT_FP32,
      "min(gamma_k(u), (8 sqrt(k) + 2) u) S", "min(gamma_k(u), gamma~_k(u)) S",
      a_dot_fp32, d_dot_fp32 },
    { "tol_dot_bf16(k)", "05 gemm_*",
      "bf16 in, fp32 out", TOL_KIND_MIXED, OUT_FP32,
      "min(gamma_k(2u), (8 sqrt(k) + 2) u) S", "min(gamma_k(2u), gamma~_k(u)) S",
      a_dot_bf16, d_dot_bf16 },
    { "tol_sum_fp32(n)", "07 sum_*; 03 the bench's block sums",
      "fp32", TOL_KIND_MIXED, OUT_FP32,
      "min(gamma_{n-1}(u), (8 sqrt(n) + 2) u) X", "min(gamma_{n-1}(u), gamma~_n(u)) X",
      a_sum, d_sum },
    { "tol_softmax(d, c, out)", "07 softmax_f32, softmax_bf16",
      "fp32, bf16", TOL_KIND_MIXED, OUT_FP32 | OUT_BF16,
      "((16 + 4 d + 8 sqrt(c)) u + v) y",
      "((14 + 3.35 d + 3.35 ln c) u + min(gamma_{c-1}, gamma~_c) + v) y",
      a_softmax, d_softmax },
    { "tol_rmsnorm(c, out)", "07 rmsnorm_f32, rmsnorm_bf16",
      "fp32, bf16", TOL_KIND_MIXED, OUT_FP32 | OUT_BF16,
      "(min(gamma_c, 8 sqrt(c) u) + 15 u + v) abs(y)",
      "(min(gamma_c, gamma~_c) / 2 + 7.5 u + v) abs(y)",
      a_rms, d_rms },
    { "tol_layernorm(c, out).z", "07 layernorm_f32, layernorm_bf16",
      "fp32, bf16", TOL_KIND_MIXED, OUT_FP32 | OUT_BF16,
      "(min(gamma_c, 8 sqrt(c) u) + 15 u) abs(z)", "(min(gamma_c, gamma~_c) / 2 + 8.5 u) abs(z)",
      a_ln_z, d_ln_z },
    { "tol_layernorm(c, out).mean", "07 layernorm_f32, layernorm_bf16",
      "fp32, bf16", TOL_KIND_MIXED, OUT_FP32 | OUT_BF16,
      "min(gamma_{c-1} + u, (8 sqrt(c) + 2) u) rstd abs(w) mean abs(x)",
      "(min(gamma_{c-1}, gamma~_c) + u) rstd abs(w) mean abs(x)",
      a_ln_mean, d_ln_mean },
    { "tol_layernorm(c, out).y", "07 layernorm_f32, layernorm_bf16",
      "fp32, bf16", TOL_KIND_WORST, OUT_FP32 | OUT_BF16,
      "v abs(y)", "v abs(y): the store",
      a_ln_y, d_store },
    { "tol_layernorm(c, out).b", "07 layernorm_f32, layernorm_bf16",
      "fp32, bf16", TOL_KIND_WORST, OUT_FP32 | OUT_BF16,
      "u abs(b)", "u abs(b): the addition of the bias",
      a_ln_b, d_one },
    { "tol_attention(D, E, n, out).o_rel", "10 attention_fused_*: o",
      "bf16, fp16", TOL_KIND_WORST, OUT_BF16 | OUT_FP16,
      "t abs(o)", "t abs(o): the store",
      a_at_o_rel, d_store },
    { "tol_attention(D, E, n, out).o_a", "10 attention_fused_*: o",
      "bf16, fp16", TOL_KIND_MIXED, OUT_BF16 | OUT_FP16,
      "(t + (4 (D + 2) E + 16 sqrt(n) + 64) u) A",
      "(t + (2 (D + 2) E + 16 + 6.7 ln n) u + 2 gamma~_n) A",
      a_at_o_a, d_at_o_a },
    { "tol_attention(D, E, n, out).o_abs", "10 attention_fused_*: o",
      "bf16, fp16", TOL_KIND_WORST, OUT_BF16 | OUT_FP16,
      "a (1 + sum_j abs(v_j) / l)", "a (1 + sum_j abs(v_j) / l): the store, P's subnormals",
      a_at_o_abs, d_floor },
    { "tol_attention(D, E, n, out).lse_rel", "10 attention_fused_*: lse",
      "fp32", TOL_KIND_WORST, OUT_BF16 | OUT_FP16,
      "8 u abs(lse)", "u abs(lse): m + log l",
      a_at_lse_rel, d_one },
    { "tol_attention(D, E, n, out).lse_abs", "10 attention_fused_*: lse",
      "fp32", TOL_KIND_MIXED, OUT_BF16 | OUT_FP16,
      "(4 (D + 2) E + 16 sqrt(n) + 64) u", "((D + 2) E + 11 + 9.35 ln n) u + gamma~_n",
      a_at_lse_abs, d_at_lse_abs },
};
const int TOL_NENTRIES = (int)(sizeof TOL_ENTRIES / sizeof TOL_ENTRIES[0]);

const char *tol_kind_name(enum tol_kind k)
{
    switch (k) {
    case TOL_KIND_EXACT: return "exact";
    case TOL_KIND_WORST: return "worst case";
    case TOL_KIND_PROB: return "probabilistic";
    case TOL_KIND_MIXED: return "worst case or probabilistic, the smaller";
    }
    return "?";
}

/* ---- the audit ------------------------------------------------------------------------------- */

/* entry t over the grid: its largest allowed / derived, the points visited, and the points where
 * it is negative or over limit times its derivation (the first 20 printed if verbose) */
static double audit_entry(const struct tol_entry *t, double limit, int verbose, long *points,
                          int *bad)
{
    static const double ds[] = { 0, 0.1, 1, 4, 10, 87, 400, 2e4 };
    static const double dims[] = { 1, 16, 64, 128, 256 };
    static const double es[] = { 0, 1e-3, 0.5, 2.6, 8, 64, 310, 1e4 };
    static const enum tol_format outs[] = { TOL_FP32, TOL_BF16, TOL_FP16 };
    enum { ND = sizeof ds / sizeof ds[0], NDIM = sizeof dims / sizeof dims[0],
           NE = sizeof es / sizeof es[0] };
    double lens[400];
    int nl = 0;
    for (int k = 1; k <= 300; k++)
        lens[nl++] = k;
    for (int j = 9; j <= 28; j++) /* powers of 2 up to 2^28, and their neighbours */
        for (int o = -1; o <= 1; o++)
            lens[nl++] = ldexp(1, j) + o;
    double worst = 0;
    for (long q = 0; q < (long)nl * 3 * ND * NDIM * NE; q++) {
        long r = q;
        struct tol_point p;
        p.e = es[r % NE], r /= NE;
        p.dim = dims[r % NDIM], r /= NDIM;
        p.d = ds[r % ND], r /= ND;
        p.out = outs[r % 3], r /= 3;
        p.n = lens[r];
        if (!(t->outs & 1u << p.out))
            continue;
        double al = t->allowed(&p), de = t->derived(&p);
        ++*points;
        if (de > 0)
            worst = fmax(worst, al / de);
        if (!(al >= 0 && al <= limit * de) && (*bad)++ < 20 && verbose)
            printf("tolerance: %s allows %.4g where %g times its derivation is %.4g (n %g, "
                   "d %g, dim %g, e %g, format %d)\n",
                   t->name, al, limit, limit * de, p.n, p.d, p.dim, p.e, (int)p.out);
    }
    return worst;
}

double tol_ratio(const struct tol_entry *t)
{
    long points = 0;
    int bad = 0;
    return audit_entry(t, INFINITY, 0, &points, &bad);
}

int tol_audit(const struct tol_entry *entries, int n, int verbose)
{
    int bad = 0;
    long points = 0;
    for (int i = 0; i < n; i++) {
        double worst = audit_entry(&entries[i], 2, verbose, &points, &bad);
        if (verbose)
            printf("  %-36s at most %.3g times its derivation\n", entries[i].name, worst);
    }
    if (verbose)
        printf("tolerance: %d entries, %ld points, %d over twice their derivation\n", n, points,
               bad);
    return bad;
}
