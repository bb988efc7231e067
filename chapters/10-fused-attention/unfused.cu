/* unfused.cu: chapter 10, step 1, given: attention as three library-shaped calls, the way a
 * framework runs it without a fused kernel. The baseline every later step is timed against.
 *
 *   S = scale Q K^T     a strided batched GEMM, bf16 or fp16 in, fp32 out: on a GPU cuBLAS's
 *                       (unfused_gemm_gpu.cu), on the CPU backend scores_kernel below
 *   masks               -inf in S for the keys a row does not see: above the diagonal with
 *                       the causal mask, from kv_len[b] on with the padding mask (mask_kernel)
 *   P = softmax(S)      chapter 07's step 4 reference, softmax_f32, row by row, fp32 to fp32
 *   P rounded           fp32 to the input type, over S's bytes (round_kernel); with the
 *                       padding mask the keys from kv_len[b] on get a weight of exactly 0,
 *                       which is what defines a row that sees no key (kv_len[b] == 0): chapter
 *                       07's softmax makes an all -inf row NaN (0 / 0, its contract leaves it
 *                       undefined), and the zeros make its row of O = P V zeros
 *   O = P V             a strided batched GEMM again, fp32 accumulation, O in the input type
 *
 * Every score goes to memory and comes back: S written (4 bytes), read and P written by the
 * softmax (4 + 4), read and rounded (4 + 2), read by the second GEMM (2): 20 bytes a score,
 * len^2 scores a head. At len = 4096 that is 320 MiB a head, against 2 MiB of Q, K, V and O
 * (dim 64): the napkin math of the lesson starts here. Nothing here writes lse: the softmax
 * keeps its max and sum to itself.
 *
 * The CPU backend's kernels are plain (a thread an output element, fp32 sums): correct, not
 * fast; on a GPU they are never used. */
#include "cuda_check.h"
#include "attention.h"

#define BLOCK 256

static __device__ inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
static __device__ inline float widen(__half x) { return __half2float(x); }
static __device__ inline void narrow(float x, __nv_bfloat16 *out) { *out = __float2bfloat16_rn(x); }
static __device__ inline void narrow(float x, __half *out) { *out = __float2half_rn(x); }

/* CPU backend: S[bh][i][j] = scale * sum_c q[i][c] k[j][c], a thread a score */
template <typename T>
static __global__ void scores_kernel(const T *__restrict__ q, const T *__restrict__ k,
                                     float *__restrict__ s, int len, int dim, float scale)
{
    const size_t bh = blockIdx.y;
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)len * len)
        return;
    const int i = (int)(e / len), j = (int)(e % len);
    const T *qi = q + (bh * len + i) * dim, *kj = k + (bh * len + j) * dim;
    float acc = 0.0f;
    for (int c = 0; c < dim; ++c)
        acc = fmaf(widen(qi[c]), widen(kj[c]), acc);
    s[bh * len * len + e] = scale * acc;
}

/* CPU backend: O[bh][i][c] = sum_j p[i][j] v[j][c], a thread an output element */
template <typename T>
static __global__ void output_kernel(const T *__restrict__ p, const T *__restrict__ v,
                                     T *__restrict__ o, int len, int dim)
{
    const size_t bh = blockIdx.y;
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)len * dim)
        return;
    const int i = (int)(e / dim), c = (int)(e % dim);
    const T *pi = p + (bh * len + i) * len, *vc = v + bh * len * dim + c;
    float acc = 0.0f;
    for (int j = 0; j < len; ++j)
        acc = fmaf(widen(pi[j]), widen(vc[(size_t)j * dim]), acc);
    narrow(acc, &o[bh * len * dim + e]);
}

/* the valid keys of the batch that score (or weight) e belongs to: S is (b, h, i, j) */
static __device__ inline int keys_of(const int *kv_len, size_t e, int heads, int len)
{
    return kv_len ? kv_len[e / len / len / heads] : len;
}

/* S[i][j] = -inf for the keys row i does not see: j >= kv_len[b], and with causal j > i; a
 * thread a score */
static __global__ void mask_kernel(float *s, size_t rows, int heads, int len,
                                   const int *__restrict__ kv_len, int causal)
{
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= rows * len)
        return;
    const int i = (int)(e / len % len), j = (int)(e % len);
    if (j >= keys_of(kv_len, e, heads, len) || (causal && j > i))
        s[e] = -INFINITY;
}

/* P in the input type, from P in fp32: what the second GEMM's tensor cores take. The keys
 * past kv_len[b] get exactly 0: in a row that sees some key they are 0 already (exp(-inf)),
 * and in a row that sees none the softmax left NaN, which 0 x v would carry into O */
template <typename T>
static __global__ void round_kernel(const float *__restrict__ p32, T *__restrict__ p, size_t n,
                                    int heads, int len, const int *__restrict__ kv_len)
{
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x)
        narrow((int)(e % len) < keys_of(kv_len, e, heads, len) ? p32[e] : 0.0f, &p[e]);
}

static int grid_of(size_t n)
{
    size_t blocks = (n + BLOCK - 1) / BLOCK;
    return (int)(blocks < 65536 ? blocks : 65536);
}

template <typename T>
static void unfused(const T *d_q, const T *d_k, const T *d_v, T *d_o, const int *d_kv_len,
                    int batch, int heads, int len, int dim, int causal, float scale,
                    void *d_work, int fp16)
{
    const int bh = batch * heads;
    const size_t scores = (size_t)bh * len * len;
    /* the work space: S (fp32), then P (fp32), then chapter 07's scratch; P in the input
     * type goes over S, which is dead by then */
    float *d_s = (float *)d_work, *d_p32 = d_s + scores;
    T *d_p = (T *)d_work;
    void *d_scratch = d_p32 + scores;

    if (attention_gemm_scores_cublas) {
        attention_gemm_scores_cublas(d_q, d_k, d_s, bh, len, dim, scale, fp16);
    } else {
        dim3 grid((unsigned)(((size_t)len * len + BLOCK - 1) / BLOCK), (unsigned)bh);
        scores_kernel<T><<<grid, BLOCK>>>(d_q, d_k, d_s, len, dim, scale);
        CUDA_CHECK(cudaGetLastError());
    }
    if (causal || d_kv_len) {
        mask_kernel<<<(unsigned)((scores + BLOCK - 1) / BLOCK), BLOCK>>>(
            d_s, (size_t)bh * len, heads, len, d_kv_len, causal);
        CUDA_CHECK(cudaGetLastError());
    }
    /* chapter 07's softmax, as many rows a call as its contract allows */
    const size_t rows = (size_t)bh * len, chunk = attention_softmax_rows(len);
    for (size_t r = 0; r < rows; r += chunk) {
        const size_t n = rows - r < chunk ? rows - r : chunk;
        softmax_f32(d_s + r * len, d_p32 + r * len, (int)n, len, d_scratch);
    }
    round_kernel<T><<<grid_of(scores), BLOCK>>>(d_p32, d_p, scores, heads, len, d_kv_len);
    CUDA_CHECK(cudaGetLastError());
    if (attention_gemm_output_cublas) {
        attention_gemm_output_cublas(d_p, d_v, d_o, bh, len, dim, fp16);
    } else {
        dim3 grid((unsigned)cdiv(len * dim, BLOCK), (unsigned)bh);
        output_kernel<T><<<grid, BLOCK>>>(d_p, d_v, d_o, len, dim);
        CUDA_CHECK(cudaGetLastError());
    }
}

void attention_unfused_bf16(const at_bf16 *d_q, const at_bf16 *d_k, const at_bf16 *d_v,
                            at_bf16 *d_o, float *d_lse, const int *d_kv_len, int batch, int heads,
                            int len, int dim, int causal, float scale, void *d_work)
{
    (void)d_lse;
    unfused<__nv_bfloat16>(d_q, d_k, d_v, d_o, d_kv_len, batch, heads, len, dim, causal, scale,
                           d_work, 0);
}

void attention_unfused_f16(const at_f16 *d_q, const at_f16 *d_k, const at_f16 *d_v, at_f16 *d_o,
                           float *d_lse, const int *d_kv_len, int batch, int heads, int len,
                           int dim, int causal, float scale, void *d_work)
{
    (void)d_lse;
    unfused<__half>(d_q, d_k, d_v, d_o, d_kv_len, batch, heads, len, dim, causal, scale, d_work,
                    1);
}
