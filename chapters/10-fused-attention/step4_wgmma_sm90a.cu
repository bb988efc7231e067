/* step4_wgmma_sm90a.cu: chapter 10, step 4 of the ladder, fused attention with wgmma and TMA,
 * FlashAttention-3 style. Your file. Hopper only: sm_90a code, which runs on compute
 * capability 9.0 and nothing else.
 *
 * The contract (attention.h) is step 3's, with one parameter more: attention_wgmma_bf16 and
 * attention_wgmma_f16 write, for every (batch b, head) and every query row i of it,
 *     o[i] = sum_j P[i][j] v[j],   P[i][j] = exp(S[i][j] - m_i) / l_i,   S = scale Q K^T,
 *     lse[i] = m_i + log(l_i),     m_i = max_j S[i][j],   l_i = sum_j exp(S[i][j] - m_i),
 * over the keys j row i sees: j < len, and j < d_kv_len[b] when d_kv_len is not NULL, and with
 * causal j <= i. A row that sees no key writes o = 0 and lse = -INFINITY. dim is 64 or 128, len
 * anything from 1 up. One kernel launch; d_work is not yours to need; nothing may be
 * allocated. Return without synchronising, after CUDA_CHECK(cudaGetLastError()).
 * What changes from step 3 is who does what, and with which instructions: a producer
 * warpgroup whose one thread copies Q once and the tiles of K and V into a ring of stages with
 * TMA, each stage with "full" and "empty" mbarriers; consumer warpgroups of 64 query rows each
 * that multiply with wgmma (S = Q K^T from shared memory, O += P V with P from registers) and
 * run the softmax of one tile while the tensor cores run the products of the next; setmaxnreg
 * moving registers from the producer to the consumers. Given: attention_wgmma.cuh (tma_load_3d,
 * wgmma_ss and wgmma_rs, exp2_approx, pack_t, and make_map_rows for the tensor maps, with the
 * layouts of the registers and of shared memory), over chapter 05's tma.cuh (the mbarriers)
 * and wgmma.cuh (smem_desc, the fences and waits). Below, the launcher is given as far as the
 * launch: the tensor maps, the shared-memory allowance and the grid; change any of it.
 *
 * What the grader measures (make grade CH=10 STEP=4), on a GPU of compute capability 9.0 only
 * (the CPU backend runs no wgmma, and leaves this file out: the step says SKIP there):
 *   correct  step 3's shapes and vectors (bf16 and fp16, dim 64 and 128, causal and not, len 1,
 *            17, 31, 97, 200, 257 and more, scores to +-200, NaN rows, FlashAttention-3's
 *            accuracy vector), o and lse against a double-precision reference
 *   speed    bf16, dim 128, 2 x 16 heads x len 4096, not causal: at least 5.6x the unfused
 *            step's speed (step 3's reference reaches about 3x)
 *   sass     the sm_90a machine code of attention_wgmma_kernel holds HGMMA (wgmma) and UTMALDG
 *            (TMA)
 * As given, the kernel writes nothing: every shape fails with o unwritten.
 *
 * The lesson is README.md beside this file; its hints for step 4 are there too. */
#include <stdint.h>

#include "cuda_check.h"
#include "attention.h"
#include "attention_wgmma.cuh"

#define THREADS 384 /* 3 warpgroups: the producer and 2 consumers */
#define BR 128      /* query rows a block: 64 a consumer warpgroup */
#define BC 128      /* keys a tile */

template <typename T, int D>
static __global__ void __launch_bounds__(THREADS, 1)
attention_wgmma_kernel(const __grid_constant__ CUtensorMap map_q,
                       const __grid_constant__ CUtensorMap map_k,
                       const __grid_constant__ CUtensorMap map_v, T *__restrict__ o,
                       float *__restrict__ lse, const int *__restrict__ kv_len, int heads,
                       int len, int causal, float scale)
{
    /* TODO: the rows q0 = blockIdx.x * BR ... of matrix blockIdx.y (batch blockIdx.y / heads).
     * Thread 0 initialises the mbarriers (and fence.mbarrier_init), then one __syncthreads().
     * Warpgroup 0 gives registers away (setmaxnreg.dec) and its thread 0 copies Q (the boxes
     * of map_q at (64 j, q0, blockIdx.y)) and the tiles of K and V with tma_load_3d, a tile's
     * bytes announced on its full barrier first (mbar_arrive_expect_tx), waiting on a stage's
     * empty barrier before refilling it. Warpgroups 1 and 2 take registers (setmaxnreg.inc)
     * and loop over the tiles of keys: wait, S = Q K^T (wgmma_ss), the mask and the online
     * softmax on S's accumulators, O += P V (wgmma_rs, P rounded from S with pack_t), release
     * the stage; the next tile's S issued before this tile's P V, so that one's softmax runs
     * under the other's product. Then o = acc / l and lse = m + log l. */
    (void)map_q; (void)map_k; (void)map_v; (void)o; (void)lse; (void)kv_len; (void)heads;
    (void)len; (void)causal; (void)scale;
}

template <typename T, int D>
static void wgmma_attention(const T *d_q, const T *d_k, const T *d_v, T *d_o, float *d_lse,
                            const int *d_kv_len, int batch, int heads, int len, int causal,
                            float scale, const char *name)
{
    /* Q, two stages of K and of V, the mbarriers, 1 KB of slack to align the first box on
     * 1 KB (the swizzle's period): 161 KB at dim 128 */
    const int smem = (BR + 4 * BC) * D * 2 + 1024 + 1024;
    CUDA_CHECK(cudaFuncSetAttribute(attention_wgmma_kernel<T, D>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const CUtensorMap map_q = make_map_rows<T>(name, d_q, len, batch * heads, D, BR);
    const CUtensorMap map_k = make_map_rows<T>(name, d_k, len, batch * heads, D, BC);
    const CUtensorMap map_v = make_map_rows<T>(name, d_v, len, batch * heads, D, BC);
    const dim3 grid((unsigned)cdiv(len, BR), (unsigned)(batch * heads));
    attention_wgmma_kernel<T, D><<<grid, THREADS, smem>>>(map_q, map_k, map_v, d_o, d_lse,
                                                          d_kv_len, heads, len, causal, scale);
    CUDA_CHECK(cudaGetLastError());
}

template <typename T>
static void wgmma_dim(const T *d_q, const T *d_k, const T *d_v, T *d_o, float *d_lse,
                      const int *d_kv_len, int batch, int heads, int len, int dim, int causal,
                      float scale, const char *name)
{
    if (dim == 64)
        wgmma_attention<T, 64>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, causal,
                               scale, name);
    else if (dim == 128)
        wgmma_attention<T, 128>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, causal,
                                scale, name);
    else {
        fprintf(stderr, "%s: dim %d: the contract (attention.h) allows 64 and 128\n", name, dim);
        exit(EXIT_FAILURE);
    }
}

void attention_wgmma_bf16(const at_bf16 *d_q, const at_bf16 *d_k, const at_bf16 *d_v,
                          at_bf16 *d_o, float *d_lse, const int *d_kv_len, int batch, int heads,
                          int len, int dim, int causal, float scale, void *d_work)
{
    (void)d_work;
    wgmma_dim<__nv_bfloat16>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, dim,
                             causal, scale, "attention_wgmma_bf16");
}

void attention_wgmma_f16(const at_f16 *d_q, const at_f16 *d_k, const at_f16 *d_v, at_f16 *d_o,
                         float *d_lse, const int *d_kv_len, int batch, int heads, int len,
                         int dim, int causal, float scale, void *d_work)
{
    (void)d_work;
    wgmma_dim<__half>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, dim, causal,
                      scale, "attention_wgmma_f16");
}
