/* step3_mma.cu: chapter 10, step 3 of the ladder, fused attention on the tensor cores. Your
 * file.
 *
 * The contract (attention.h) is step 2's: attention_mma_bf16 and attention_mma_f16 write, for
 * every (batch, head) and every query row i of it,
 *     o[i] = sum_j P[i][j] v[j],   P[i][j] = exp(S[i][j] - m_i) / l_i,   S = scale Q K^T,
 *     lse[i] = m_i + log(l_i),     m_i = max_j S[i][j],   l_i = sum_j exp(S[i][j] - m_i),
 * over the keys j row i sees (j < kv_len[b], or j < len when d_kv_len is NULL; with causal,
 * j <= i too); a row that sees no key (kv_len[b] == 0) writes zeros and lse -inf, never NaN.
 * dim is 64 or 128, len anything from 1 up. One kernel launch; d_work is not yours to need;
 * nothing may be allocated. Return without synchronising, after CUDA_CHECK(cudaGetLastError()).
 * What changes from step 2 is where the products run: S = Q K^T and O += P V as mma.sync
 * m16n8k16 (bf16 or fp16 in, fp32 accumulators), fed by ldmatrix from shared memory. Given, in
 * attention_mma.cuh: ldsm_x4 (ldmatrix .x4, with or without .trans), mma_t<T> (mma.sync for
 * T's format), ldsm_from_regs (an A operand from four registers the lane holds), pack2<T>
 * (two floats rounded into one register) and exp2_approx (2^x in one SFU instruction);
 * <cuda_pipeline.h> gives cp.async (__pipeline_memcpy_async, __pipeline_commit,
 * __pipeline_wait_prior).
 *
 * What the grader measures (make grade CH=10 STEP=3):
 *   correct  step 2's shapes and vectors (bf16 and fp16, dim 64 and 128, causal and not, len 1,
 *            17, 31, 97, 200, 257 and more, scores to +-200, NaN rows, padded keys and a batch
 *            with kv_len 0), and FlashAttention-3's
 *            accuracy vector (normal inputs with rare outliers of 10 sigma): o and lse against
 *            a double-precision reference, and there the RMSE of o too (fp16 at most 2e-4, as
 *            FlashAttention-3's own kernel); on the CPU backend, where ldmatrix and mma.sync are
 *            emulated lane by lane, so the lanes' addressing is graded without a GPU
 *   speed    on a GPU, bf16, dim 128, 2 x 16 heads x len 4096, not causal: at least 3.3x the
 *            unfused step's speed (whose two products already run on the tensor cores)
 *
 * The lesson is README.md beside this file; its hints for step 3 are there too. */
#include <stdint.h>

#include <cuda_pipeline.h>

#include "cuda_check.h"
#include "attention.h"
#include "attention_mma.cuh"

#define THREADS 128 /* 4 warps: change it as you like */
#define ROWS 128    /* query rows a block: 32 a warp, two tiles of 16 (README.md says why) */

template <typename T>
static __global__ void attention_mma_kernel(const T *__restrict__ q, const T *__restrict__ k,
                                            const T *__restrict__ v, T *__restrict__ o,
                                            float *__restrict__ lse,
                                            const int *__restrict__ kv_len, int heads, int len,
                                            int dim, int causal, float scale)
{
    /* TODO: the rows q0 = blockIdx.x * ROWS ... of head blockIdx.y, 32 a warp as two tiles of
     * 16 that share every K and V fragment. Stage the block's Q and the first tile of K and V
     * in shared memory (cp.async), take Q's ldmatrix fragments from there (into registers for
     * the whole loop where they fit beside the accumulators), and loop over the tiles of
     * keys: S = Q K^T with mma.sync, the mask and the online softmax on S's accumulators, the
     * next tile's copies into the other buffer, P V with P from those accumulators
     * (ldsm_from_regs) and V through ldmatrix.trans; the keys end at
     * kv_len[blockIdx.y / heads] (len when kv_len is NULL). Then o = acc / l and
     * lse = m + log l, or zeros and -inf for a row that saw no key. */
    (void)q; (void)k; (void)v; (void)o; (void)lse; (void)kv_len; (void)heads; (void)len;
    (void)dim; (void)causal; (void)scale;
}

template <typename T>
static void mma_attention(const T *d_q, const T *d_k, const T *d_v, T *d_o, float *d_lse,
                          const int *d_kv_len, int batch, int heads, int len, int dim,
                          int causal, float scale)
{
    const dim3 grid((unsigned)cdiv(len, ROWS), (unsigned)(batch * heads));
    attention_mma_kernel<T><<<grid, THREADS>>>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, heads, len,
                                               dim, causal, scale);
    CUDA_CHECK(cudaGetLastError());
}

void attention_mma_bf16(const at_bf16 *d_q, const at_bf16 *d_k, const at_bf16 *d_v,
                        at_bf16 *d_o, float *d_lse, const int *d_kv_len, int batch, int heads,
                        int len, int dim, int causal, float scale, void *d_work)
{
    (void)d_work;
    mma_attention<__nv_bfloat16>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, dim,
                                 causal, scale);
}

void attention_mma_f16(const at_f16 *d_q, const at_f16 *d_k, const at_f16 *d_v, at_f16 *d_o,
                       float *d_lse, const int *d_kv_len, int batch, int heads, int len,
                       int dim, int causal, float scale, void *d_work)
{
    (void)d_work;
    mma_attention<__half>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, dim, causal,
                          scale);
}
