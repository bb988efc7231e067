/* attention.h: the contract of chapter 10, fused attention: a ladder of steps.
 *
 *   step 1  unfused, given: S = Q K^T, softmax, O = P V     attention_unfused_*  (unfused.cu)
 *   step 2  fused, SIMT: tiles of K and V in shared memory,  attention_fused_*    (step2_fused.cu)
 *           the online softmax, the log-sum-exp written out
 *   step 3  fused on the tensor cores: ldmatrix, mma.sync,    attention_mma_*      (step3_mma.cu)
 *           K and V double-buffered with cp.async
 *   step 4  wgmma and TMA, FlashAttention-3 style: a          attention_wgmma_*
 *           producer warpgroup, two consumer warpgroups;      (step4_wgmma_sm90a.cu)
 *           Hopper only (sm_90a code)
 *
 * Given: step 1, the baseline every later step is timed against. On a GPU its two products are
 * cuBLAS's (unfused_gemm_gpu.cu, GPU builds only); on the CPU backend, which has no cuBLAS, a
 * plain kernel does them (unfused.cu). Its softmax is chapter 07's step 4 reference
 * (solutions/07-memory-bound/step4_softmax.cu, softmax_f32 of membound.h), which the build
 * links into this chapter's programs.
 *
 * The problem: for every batch b and head h, with Q, K, V the len x dim blocks of that (b, h),
 *     S = scale * Q K^T                       (len x len scores)
 *     P[i][j] = exp(S[i][j] - m_i) / l_i      over the keys j that row i sees,
 *               m_i = max_j S[i][j],  l_i = sum_j exp(S[i][j] - m_i)
 *     O = P V                                 (len x dim)
 *     lse[i] = m_i + log(l_i)                 (the log-sum-exp of row i, natural log)
 * Row i of batch b sees the keys j < kv_len[b] (below), and with causal != 0 only those with
 * j <= i. lse is what the backward pass needs to rebuild P without storing it.
 *
 * The padding mask: a batch holds sequences of different lengths, each padded to len, and the
 * padding must not be attended to. d_kv_len is NULL (kv_len[b] = len: every key is real) or
 * batch ints in device memory, each in [0, len], the same for every head of b. The padded keys
 * of k and v hold finite values, which a launcher may read or not, and must give no weight.
 * Only keys are masked: the rows i >= kv_len[b] are computed as any other. A row that sees no
 * key at all (kv_len[b] == 0; with causal, row i always sees key 0 otherwise) has no softmax:
 * m = -inf, l = 0, and O = P V would be 0 / 0. Its output is defined instead: its row of o is
 * zeros and its lse is -inf (log 0), never NaN.
 *
 * Layout: q, k, v and o are batch x heads x len x dim, row-major and contiguous (element
 * ((b * heads + h) * len + i) * dim + c); lse is batch x heads x len floats. dim is 64 or 128;
 * len any value >= 1 (1, a prime, a value that is no multiple of any tile); batch * heads >= 1;
 * batch * heads * len * len <= 2^34. The pointers are cudaMalloc's (aligned to 256 bytes), so
 * each row of q, k, v and o starts on a 16-byte boundary.
 *
 * Types: q, k, v and o in bf16 or fp16 (a launcher each); the arithmetic in fp32 (widen on
 * the load, round once on the store); lse in fp32. A NaN in q or k reaches every output it
 * touches: the rows of o and lse of a NaN row of q are NaN, and so is every row that sees a
 * NaN row of k. Scores of any size: a row whose scores reach +-200 (exp overflows fp32 above
 * 88.7) is as right as any other.
 *
 * Every launcher takes device pointers, launches on the default stream, checks its launches
 * and returns without synchronising. d_work is device memory of attention_work_bytes(batch,
 * heads, len) bytes that the launcher may use as it likes (step 1 keeps S and P there; a fused
 * step needs none of it); it holds garbage on entry. Nothing else may be allocated. A step that
 * does not write lse (step 1: chapter 07's softmax keeps no max or sum) leaves d_lse alone.
 *
 * The grader, the bench and the book call only what is declared here. */
#ifndef ATTENTION_H
#define ATTENTION_H

#include <stddef.h>

#include "../07-memory-bound/membound.h" /* chapter 07: step 1 uses its softmax */

#ifdef __cplusplus
#include <cuda_bf16.h>
#include <cuda_fp16.h>
typedef __nv_bfloat16 at_bf16;
typedef __half at_f16;
extern "C" {
#else
/* The C side (the grader) sees the same two bytes: the bits of a bfloat16 or a half. */
typedef struct { unsigned short bits; } at_bf16;
typedef struct { unsigned short bits; } at_f16;
#endif

/* The rows of S that step 1's softmax takes in one call: chapter 07's softmax allows
 * rows * cols <= 2^30 a call. */
static inline size_t attention_softmax_rows(int len)
{
    size_t rows = ((size_t)1 << 30) / (size_t)(len > 0 ? len : 1);
    return rows > 0 ? rows : 1;
}

/* The work space every launcher is given: S and P of step 1 in fp32 (8 bytes a score), and
 * chapter 07's scratch for the rows one softmax call takes. */
static inline size_t attention_work_bytes(int batch, int heads, int len)
{
    size_t scores = (size_t)batch * heads * (size_t)len * (size_t)len;
    size_t rows = (size_t)batch * heads * (size_t)len, chunk = attention_softmax_rows(len);
    return 8 * scores + membound_scratch_bytes((int)(rows < chunk ? rows : chunk));
}

typedef void (*attention_bf16_fn)(const at_bf16 *d_q, const at_bf16 *d_k, const at_bf16 *d_v,
                                  at_bf16 *d_o, float *d_lse, const int *d_kv_len, int batch,
                                  int heads, int len, int dim, int causal, float scale,
                                  void *d_work);
typedef void (*attention_f16_fn)(const at_f16 *d_q, const at_f16 *d_k, const at_f16 *d_v,
                                 at_f16 *d_o, float *d_lse, const int *d_kv_len, int batch,
                                 int heads, int len, int dim, int causal, float scale,
                                 void *d_work);

/* Step 1, given (unfused.cu): S = scale Q K^T into d_work in fp32 (cuBLAS on a GPU: a strided
 * batched GEMM, bf16 or fp16 in, fp32 out, on the tensor cores), the masks as -inf in S (the
 * causal mask above the diagonal, the padding mask from kv_len[b] on), chapter 07's
 * softmax_f32 row by row into P (fp32), P rounded to the input type with every key the row
 * does not see given a weight of exactly 0 (chapter 07's softmax leaves a row that is all -inf
 * undefined: NaN), O = P V (cuBLAS again, fp32 accumulation). S and P go to memory and come
 * back: 20 bytes a score of traffic. It does not write lse. */
void attention_unfused_bf16(const at_bf16 *d_q, const at_bf16 *d_k, const at_bf16 *d_v,
                            at_bf16 *d_o, float *d_lse, const int *d_kv_len, int batch, int heads,
                            int len, int dim, int causal, float scale, void *d_work);
void attention_unfused_f16(const at_f16 *d_q, const at_f16 *d_k, const at_f16 *d_v, at_f16 *d_o,
                           float *d_lse, const int *d_kv_len, int batch, int heads, int len,
                           int dim, int causal, float scale, void *d_work);

/* Step 2 (step2_fused.cu): one kernel. A block a tile of query rows, looping over tiles of K
 * and V staged in shared memory, up to kv_len[b]; the online softmax (a running max and sum a
 * row, the accumulator of O rescaled whenever the max grows); O and lse written once (l == 0:
 * zeros and -inf). S and P never leave the chip; d_work is not touched. SIMT: fp32 FMAs, no
 * tensor cores. */
void attention_fused_bf16(const at_bf16 *d_q, const at_bf16 *d_k, const at_bf16 *d_v,
                          at_bf16 *d_o, float *d_lse, const int *d_kv_len, int batch, int heads,
                          int len, int dim, int causal, float scale, void *d_work);
void attention_fused_f16(const at_f16 *d_q, const at_f16 *d_k, const at_f16 *d_v, at_f16 *d_o,
                         float *d_lse, const int *d_kv_len, int batch, int heads, int len,
                         int dim, int causal, float scale, void *d_work);

/* Step 3 (step3_mma.cu): step 2's algorithm with both products on the tensor cores:
 * mma.sync m16n8k16 (bf16 or fp16 in, fp32 accumulators) fed by ldmatrix from shared memory
 * (attention_mma.cuh, given), 32 query rows a warp sharing every fragment of K and V, P kept in
 * registers between the two products, the tiles of K and V double-buffered with cp.async.
 * d_work is not touched. */
void attention_mma_bf16(const at_bf16 *d_q, const at_bf16 *d_k, const at_bf16 *d_v,
                        at_bf16 *d_o, float *d_lse, const int *d_kv_len, int batch, int heads,
                        int len, int dim, int causal, float scale, void *d_work);
void attention_mma_f16(const at_f16 *d_q, const at_f16 *d_k, const at_f16 *d_v, at_f16 *d_o,
                       float *d_lse, const int *d_kv_len, int batch, int heads, int len,
                       int dim, int causal, float scale, void *d_work);

/* Step 4 (step4_wgmma_sm90a.cu, sm_90a: compute capability 9.0 only): step 3's algorithm with
 * both products as wgmma, the tiles copied by TMA, and the block specialised: a producer
 * warpgroup issues the copies, two consumer warpgroups (64 query rows each) multiply and run
 * the softmax, the softmax of one tile overlapping the products of the next. d_work is not
 * touched.
 * d_kv_len: NULL, every key is valid; else a device array of batch ints in [0, len]: row i of
 * batch b sees key j only if j < d_kv_len[b] (and j <= i with causal). A row that sees no key
 * writes o = 0 and lse = -INFINITY, never NaN.
 * Weak: the CPU backend's builds leave *_sm90a.cu out (no TMA, no wgmma), and see NULL here. */
void attention_wgmma_bf16(const at_bf16 *d_q, const at_bf16 *d_k, const at_bf16 *d_v,
                          at_bf16 *d_o, float *d_lse, const int *d_kv_len, int batch, int heads,
                          int len, int dim, int causal, float scale, void *d_work)
    __attribute__((weak));
void attention_wgmma_f16(const at_f16 *d_q, const at_f16 *d_k, const at_f16 *d_v, at_f16 *d_o,
                         float *d_lse, const int *d_kv_len, int batch, int heads, int len,
                         int dim, int causal, float scale, void *d_work) __attribute__((weak));

/* The batched products of step 1, on a GPU cuBLAS's (unfused_gemm_gpu.cu). Weak: the CPU
 * backend's builds leave *_gpu.cu out, see NULL here, and use unfused.cu's plain kernel.
 * fp16 != 0: the inputs are fp16, else bf16. For each of batch_heads (b, h):
 *   scores:  S = scale Q K^T (len x len, fp32), from Q and K (len x dim)
 *   output:  O = P V (len x dim, the input type), from P (len x len, the input type) and V */
void attention_gemm_scores_cublas(const void *d_q, const void *d_k, float *d_s, int batch_heads,
                                  int len, int dim, float scale, int fp16) __attribute__((weak));
void attention_gemm_output_cublas(const void *d_p, const void *d_v, void *d_o, int batch_heads,
                                  int len, int dim, int fp16) __attribute__((weak));

/* ---- the steps, in order (steps.cu) --------------------------------------------------------
 * One row a step. given: 1 for a step the learner does not write (step 1); writes_lse: 1 when
 * the step writes d_lse; sm90a: 1 for a step of sm_90a code, which runs on compute capability
 * 9.0 only and is graded on a GPU only (its launchers NULL in the CPU backend's builds). */
struct attention_step {
    const char *name;               /* the rung's name in the bench: "unfused", "fused_simt" */
    const char *title;              /* the ladder's line */
    int given, writes_lse;
    attention_bf16_fn bf16;
    attention_f16_fn f16;
    int sm90a;
};
extern const struct attention_step ATTENTION_STEPS[];
extern const int ATTENTION_NUM_STEPS;

#ifdef __cplusplus
}
#endif

#endif
