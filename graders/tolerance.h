/* tolerance.h: every tolerance a grader grades with, in one place. A grader calls one of the
 * functions below for the bound of an output element and computes no constant of its own;
 * TOLERANCE.md explains each derivation, and TOL_ENTRIES lists them for the audit: no entry may
 * allow more than twice the bound it is derived from, but the few TOLERANCE.md names as known
 * exceptions (chapter 10's lse), each with its ratio.
 *
 * A rounding bound is relative to a scale the caller passes to compare_f32 (harness.h):
 *   |got - want| <= atol + rtol * scale
 * with scale = sum |a_i||b_i| for a dot product and sum |x_i| for a sum: not the result, which
 * cancels where inputs have both signs.
 *
 * Two kinds of bound, u a format's unit roundoff:
 *   worst case     gamma_n(u) = n u / (1 - n u) for n roundings in a chain, of any size and
 *                  sign, in any order (Higham, Accuracy and Stability of Numerical Algorithms,
 *                  2nd ed., Lemma 3.1)
 *   probabilistic  gamma~_n(u) = exp(lambda sqrt(n) u + n u^2 / (1 - u)) - 1 ~ lambda sqrt(n) u,
 *                  with lambda = 8: roundings modelled as independent and centred (Higham and
 *                  Mary, SIAM J. Sci. Comput. 41(5), 2019); a correct result of n terms fails
 *                  with probability below n * 2 exp(-32), 2.5e-14 a term
 * A reduction's bound is the smaller of the two: the worst case while it is the tighter (n up to
 * about 68 for fp32), the probabilistic one above. */
#ifndef TOLERANCE_H
#define TOLERANCE_H

/* Unit roundoffs, 2^-p for p significant bits under round-to-nearest. */
#define TOL_U_FP64 0x1p-53
#define TOL_U_FP32 0x1p-24
#define TOL_U_FP16 0x1p-11
#define TOL_U_BF16 0x1p-8
#define TOL_U_E4M3 0x1p-4
#define TOL_U_E5M2 0x1p-3
#define TOL_U_E2M1 0x1p-2
#define TOL_LAMBDA 8.0

/* Absolute floors: fp32 and bf16 results under the smallest normal may be flushed to zero;
 * fp16's subnormals are spaced 2^-24, so a rounding there is off by up to 2^-25. */
#define TOL_FLOOR_FP32 0x1p-126
#define TOL_FLOOR_BF16 0x1p-126
#define TOL_FLOOR_FP16 0x1p-25

/* Where the derivation gives zero: nothing rounds (a move, integer arithmetic), or the contract
 * fixes every IEEE operation and its order, so a replay on the host is the device's result bit
 * for bit (fmaf chains, the loop of graders/loop_ref.h, the quantisers of chapter 11). */
#define TOL_EXACT 0.0

/* Where the reference is itself a rounded result (a library's, a GPU's), both sides carry the
 * bound: the triangle inequality doubles it. */
#define TOL_TWO_SIDED 2.0

enum tol_format { TOL_FP32, TOL_BF16, TOL_FP16 };

double tol_u(enum tol_format f);     /* the format's unit roundoff */
double tol_floor(enum tol_format f); /* its absolute floor */

/* gamma_n(u), INFINITY where n u >= 1 (no bound); and gamma~_n(u) at lambda = 8. */
double tol_gamma(double n, double u);
double tol_gamma_prob(double n, double u);

/* ---- reductions: rtol, relative to the scale named ------------------------------------------ */

/* A dot product of length k, fp32 inputs, fp32 products and accumulation (FMA or not, any
 * order), relative to sum |a||b|: min(gamma_k(u), (8 sqrt(k) + 2) u). */
double tol_dot_fp32(int k);

/* A dot product of length k, bf16 inputs (their products exact in fp32), fp32 accumulation,
 * possibly on tensor cores that truncate (one rounding up to 2u), relative to sum |a||b|:
 * min(gamma_k(2u), (8 sqrt(k) + 2) u). */
double tol_dot_bf16(int k);

/* A sum of n fp32 values in any order, relative to sum |x|: min(gamma_{n-1}(u),
 * (8 sqrt(n) + 2) u); a sum of one value is exact. On values whose partial sums are all
 * integers below 2^24 (+-1, small integers), every order is exact: TOL_EXACT. */
double tol_sum_fp32(long n);

/* ---- row operations (chapter 07): rtol relative to the output element ----------------------- */

/* softmax, relative to y: (16 + 4 d + 8 sqrt(cols)) u + u_out, d = max - x; add
 * tol_floor(TOL_FP32). */
double tol_softmax(double d, int cols, enum tol_format out);

/* RMSNorm, relative to |y|: min(gamma_cols(u), 8 sqrt(cols) u) + 15 u + u_out; add
 * tol_floor(TOL_FP32). */
double tol_rmsnorm(int cols, enum tol_format out);

/* LayerNorm, y = z + b with z = (x - mu) rstd w, per element:
 *   z |z| + y |y| + b |b| + mean rstd |w| mean|x| + floor */
struct tol_layernorm { double z, y, b, mean, floor; };
struct tol_layernorm tol_layernorm(int cols, enum tol_format out);

/* LayerNorm's row-variance check on rows of a large mean: a detection threshold, not a rounding
 * bound (TOLERANCE.md says why it is tighter than the element bound): the output row's
 * variance within this fraction of the reference row's. */
double tol_layernorm_variance(enum tol_format out);

/* ---- attention (chapter 10) ------------------------------------------------------------------
 * A row of n visible keys, head dimension dim, e = scale * max_j sum_c |q_c k_jc| (the largest
 * score's scale), output format out (bf16 or fp16), l = sum_j exp(s_j - m):
 *   o    o_rel |o| + o_a A_c + o_abs (1 + sum_j |v_jc| / l),  A_c = sum_j p_j |v_jc|
 *   lse  lse_rel |lse| + lse_abs, as tol_attention_lse adds it
 * o_w is the fp32 part of o_a (o_a = u_t + o_w). lse's allowance is looser than twice its
 * derivation, up to 8 times (TOLERANCE.md says where and why it is kept). */
struct tol_attention { double o_rel, o_a, o_w, o_abs, lse_rel, lse_abs; };
struct tol_attention tol_attention(int dim, double e, long n, enum tol_format out);

/* lse's bound at the value lse: lse_rel |lse| + lse_abs, summed |lse|'s term first */
double tol_attention_lse(int dim, double e, long n, double lse);

/* o against a GPU's o (the speed test, both sides rounded): TOL_TWO_SIDED (o_rel |o| + o_rel
 * + o_w) + TOL_FLOOR_FP16, for inputs with max |v| <= 1 (A_c <= 1); t from tol_attention at
 * an e the inputs cannot exceed. */
double tol_attention_vs_gpu(const struct tol_attention *t, double o);

/* The RMSE of o against double precision on FlashAttention-3's vector of outliers: an accuracy
 * gate, not a rounding bound (tolerance.c says where it comes from). */
double tol_attention_rmse(enum tol_format out);

/* ---- the block-scaled FP8 GEMM (chapter 11, step 3) ----------------------------------------- */

/* Each element of D (bf16) from e4m3 A and B with a scale a row of A and one a 128 x 128 block of
 * B every 128 of k, kb such blocks: |got - want| <= rel |want| + s S, S = sum over the blocks j
 * of |sa sb| sum over block j of |a b|. rel = 2^-9, the bf16 rounding of D; s = (1 + 2^-9)
 * (2^-6 + (kb + 2) 2^-24): the tensor cores' sum of a block's 128 products keeps at least 13
 * bits (about 14, DeepSeek-V3's report, section 3.3), so each of its additions errs by less than
 * 2^-13 of a partial sum below S_j, 2^-6 S_j a block; the promotion's fp32 multiply and add
 * (kb + 2) 2^-24 S. A worst case, loose by design (1.6% of S): it catches a wrong scale, tile or
 * element; the accuracy measure below catches a loss of precision. */
struct tol_fp8_gemm { double rel, s; };
struct tol_fp8_gemm tol_fp8_blockscaled(int kb);
/* The accuracy measure over every element checked, 1 - 2 sum(xy) / sum(x^2 + y^2), below this
 * gate (a public block-scaled FP8 GEMM library's): a kernel that promotes reaches about 1e-6,
 * which the bf16 rounding alone explains, (2^-9)^2 / 3. */
#define TOL_FP8_ACCURACY_GATE 1e-3

/* ---- the profile drivers' checks of a result -------------------------------------------------
 * Sanity checks that print a note and grade nothing: detection thresholds, not rounding bounds
 * (tolerance.c compares each with the bound of tol_dot_fp32 and tol_sum_fp32 at its shapes).
 *   matmul (01, 04)  max over C of |got - want| / (|want| + 1) below TOL_PROFILE_MATMUL
 *   sum (07)         |got - want| <= TOL_PROFILE_SUM sum |x| */
#define TOL_PROFILE_MATMUL 1e-4
#define TOL_PROFILE_SUM 1e-5

/* ---- the audit -------------------------------------------------------------------------------
 * Every entry: what it grades, its bound as a function of a point (n the reduction length, out
 * the output format, d a softmax element's distance below its row's maximum, dim and e as for
 * attention), and the derived bound it comes from. tol_audit checks allowed <= 2 derived over a
 * grid of points for each entry of a table and returns the number of violations; verbose: it
 * prints the first 20 of them and each entry's largest ratio. */
struct tol_point { double n; enum tol_format out; double d, dim, e; };

enum tol_kind { TOL_KIND_EXACT, TOL_KIND_WORST, TOL_KIND_PROB, TOL_KIND_MIXED };

struct tol_entry {
    const char *name;     /* the function, or "exact: ..." */
    const char *graded;   /* the graded functions, by chapter */
    const char *formats;
    enum tol_kind kind;
    unsigned outs;        /* the output formats it grades: bits 1 << TOL_FP32, ... */
    const char *allowed_text, *derived_text;
    double (*allowed)(const struct tol_point *p);
    double (*derived)(const struct tol_point *p);
};

extern const struct tol_entry TOL_ENTRIES[];
extern const int TOL_NENTRIES;

const char *tol_kind_name(enum tol_kind k);
int tol_audit(const struct tol_entry *entries, int n, int verbose);
/* an entry's largest allowed / derived over the audit's grid */
double tol_ratio(const struct tol_entry *t);

#endif
