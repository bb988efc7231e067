/* step3_mma.cu: chapter 10, step 3 of the ladder, the reference: fused attention on the tensor
 * cores with ldmatrix and mma.sync (FlashAttention-2's forward pass).
 * Change from step 2: both products run as mma.sync m16n8k16 (bf16 or fp16 in, fp32
 * accumulators), fed by ldmatrix from shared memory. A block is 4 warps and 64 query rows; each
 * warp owns 16 rows whole (their scores, their max and sum, their 16 x dim accumulator of O),
 * so the softmax needs no shared memory and no barrier: a row lives in the 4 lanes of a quad.
 * The warp's Q is loaded once into registers (A fragments); each tile of 64 keys is
 *   S = Q K^T        K's rows are B's columns: ldmatrix without .trans
 *   softmax          on S's accumulators, in registers: exp2f with the scale and log2(e)
 *                    folded into one multiply-add
 *   O += P V         P is S's accumulators rounded to the input type, already in the A
 *                    layout; V's rows are B's rows: ldmatrix.trans
 * K and V are double-buffered: the cp.async of tile t + 1 is issued before tile t's products,
 * into the other buffer, and lands while the tensor cores work. One barrier a tile: it makes
 * tile t's copies (every thread's) visible and says every warp is done with tile t - 1, whose
 * buffer tile t + 1 is about to overwrite.
 * Shared memory rows are dim 16-bit values (128 or 256 bytes): the 16-byte chunk c of row r is
 * stored at chunk c ^ (r % 8), so the 8 rows one ldmatrix phase reads fall in 8 different
 * groups of 4 banks, and a row's cp.async stores stay a permutation of one row.
 * Causal: block b's rows see keys up to its last row, so it visits tiles 0..b and masks only
 * tile b (the diagonal); blocks are issued longest first. Padding: a head's rows see the keys
 * below kv_len[b], so its blocks stop at the tile that holds the last of them, copy the keys
 * past it as zeros and mask them; a block that sees no key copies nothing and writes zeros and
 * -inf (l == 0).
 * Expect: the tensor cores' work at several times step 2's rate; at dim 128 and len 8192 some
 * hundreds of TFLOP/s on an H200 (the bench's rows, README.md, "What the measurements show"). */
#include <stdint.h>

#include <cuda_pipeline.h>

#include "cuda_check.h"
#include "attention.h"
#include "attention_mma.cuh"

#define THREADS 128 /* 4 warps */
#define BR 64       /* query rows a block: 16 a warp */
#define BC 64       /* keys a tile */
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f
#define FULL 0xffffffffu

/* the launch's dynamic shared memory (at file scope: one name for every kernel) */
extern __shared__ __align__(128) unsigned char smem_raw[];

namespace {

/* element offset of (row, col) in a tile of D columns: 16-byte chunks swizzled by row % 8 */
template <int D>
__device__ __forceinline__ int swz(int row, int col)
{
    return row * D + (((col >> 3) ^ (row & 7)) << 3) + (col & 7);
}

/* rows [r0, r0 + ROWS) of a len x D matrix into a swizzled tile, 16 bytes a cp.async; rows
 * from `end` on zero-filled (past len for Q; past kv_len[b] for K and V, whose scores are
 * masked: V's zeros keep 0 x garbage out of O) */
template <typename T, int D, int ROWS>
__device__ __forceinline__ void copy_tile(T *s, const T *g, int r0, int end)
{
    constexpr int CHUNKS = D / 8;
#pragma unroll
    for (int i = 0; i < ROWS * CHUNKS / THREADS; ++i) {
        const int e = threadIdx.x + i * THREADS, row = e / CHUNKS, c = e % CHUNKS;
        const bool in = r0 + row < end;
        __pipeline_memcpy_async(s + swz<D>(row, c * 8), in ? g + (size_t)(r0 + row) * D + c * 8 : g,
                                16, in ? 0 : 16);
    }
}

template <typename T, int D>
__global__ void __launch_bounds__(THREADS)
attention_mma_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                     T *__restrict__ o, float *__restrict__ lse, const int *__restrict__ kv_len,
                     int heads, int len, int causal, float scale)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    __trap(); /* sm_75: no bf16 or fp16 mma.sync m16n8k16 with these layouts before sm_80 */
#else
    constexpr int KD = D / 16;  /* 16-wide steps of dim: Q's A fragments */
    constexpr int NS = BC / 8;  /* 8-key accumulators of S a row block */
    constexpr int NO = D / 8;   /* 8-column accumulators of O */
    T *s_q = reinterpret_cast<T *>(smem_raw);   /* BR x D */
    T *s_k = s_q + BR * D;                       /* 2 buffers of BC x D */
    T *s_v = s_k + 2 * BC * D;                   /* 2 buffers of BC x D */

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, qd = lane % 4;
    const int ntiles_q = (int)gridDim.x;
    /* causal: the last blocks of rows have the most tiles; start them first */
    const int qb = causal ? ntiles_q - 1 - (int)blockIdx.x : (int)blockIdx.x;
    const int q0 = qb * BR;
    const size_t head = (size_t)blockIdx.y * len * D;
    const T *qh = q + head, *kh = k + head, *vh = v + head;
    /* the padding mask: this head's rows see the keys below kv_end, in its first kv_tiles */
    const int kv_end = kv_len ? kv_len[blockIdx.y / heads] : len;
    const int kv_tiles = (kv_end + BC - 1) / BC;
    const int ntiles = causal ? min(qb + 1, kv_tiles) : kv_tiles; /* BR == BC: qb is diagonal */

    if (ntiles > 0) { /* none: the rows see no key, and the loop below never waits */
        copy_tile<T, D, BR>(s_q, qh, q0, len);
        copy_tile<T, D, BC>(s_k, kh, 0, kv_end);
        copy_tile<T, D, BC>(s_v, vh, 0, kv_end);
        __pipeline_commit();
    }

    const float sl2 = scale * LOG2E; /* scores in log2 units: exp(x) = exp2(x log2 e) */
    ldsm_frag qf[KD];
    float acc[NO][4];
#pragma unroll
    for (int n = 0; n < NO; ++n)
        acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
    float m[2] = { -INFINITY, -INFINITY }, l[2] = { 0.0f, 0.0f }; /* rows g and g + 8 */
    const int row0 = q0 + warp * 16 + g; /* this lane's rows: row0, row0 + 8 */

    for (int t = 0; t < ntiles; ++t) {
        __pipeline_wait_prior(0);
        __syncthreads(); /* tile t is in (every thread's copies); tile t - 1 is done with */
        const T *sk = s_k + (t & 1) * BC * D, *sv = s_v + (t & 1) * BC * D;
        if (t == 0) {
#pragma unroll
            for (int kk = 0; kk < KD; ++kk) /* rows l % 16, the 8 columns 8 (l / 16) of kk */
                ldsm_x4<false>(qf[kk], s_q, swz<D>(warp * 16 + lane % 16, kk * 16 + lane / 16 * 8));
        }
        if (t + 1 < ntiles) {
            copy_tile<T, D, BC>(s_k + ((t + 1) & 1) * BC * D, kh, (t + 1) * BC, kv_end);
            copy_tile<T, D, BC>(s_v + ((t + 1) & 1) * BC * D, vh, (t + 1) * BC, kv_end);
            __pipeline_commit();
        }

        /* S = Q K^T: 16 rows x 64 keys a warp, in NS accumulators */
        float s[NS][4];
#pragma unroll
        for (int j = 0; j < NS; ++j)
            s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KD; ++kk)
#pragma unroll
            for (int jp = 0; jp < NS / 2; ++jp) {
                /* keys 16 jp + 8 (l / 16) + l % 8: matrices (keys 0-7, 8-15) x (dim lo, hi) */
                ldsm_frag kf;
                ldsm_x4<false>(kf, sk, swz<D>(jp * 16 + lane / 16 * 8 + lane % 8,
                                              kk * 16 + (lane / 8) % 2 * 8));
                mma_t<T>(s[2 * jp], qf[kk], kf, 0);
                mma_t<T>(s[2 * jp + 1], qf[kk], kf, 1);
            }

        /* the mask: padded keys and keys past len (the last tile), keys after the row (the
         * diagonal tile) */
        const int k0 = t * BC;
        if (k0 + BC > kv_end || (causal && t == qb)) {
#pragma unroll
            for (int j = 0; j < NS; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int key = k0 + 8 * j + 2 * qd + e % 2, row = row0 + 8 * (e / 2);
                    if (key >= kv_end || (causal && key > row))
                        s[j][e] = -INFINITY;
                }
        }

        /* the online softmax, rows g and g + 8: the quad's 4 lanes hold a row's 64 scores */
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < NS; ++j)
                mx = fmaxf(mx, fmaxf(s[j][2 * h], s[j][2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, 2));
            const float m_new = fmaxf(m[h], mx * sl2);
            /* a row that has seen only NaN or masked keys subtracts 0: -inf - -inf is NaN */
            const float base = m_new == -INFINITY ? 0.0f : m_new;
            const float alpha = exp2f(m[h] - base); /* 0 on the first tile */
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < NS; ++j)
#pragma unroll
                for (int e = 2 * h; e < 2 * h + 2; ++e) {
                    s[j][e] = exp2f(fmaf(s[j][e], sl2, -base));
                    sum += s[j][e];
                }
            l[h] = l[h] * alpha + sum; /* this lane's share; the quad's shares add at the end */
            m[h] = m_new;
#pragma unroll
            for (int n = 0; n < NO; ++n) {
                acc[n][2 * h] *= alpha;
                acc[n][2 * h + 1] *= alpha;
            }
        }

        /* O += P V: P's 16 x 16 blocks straight from S's accumulators */
#pragma unroll
        for (int kt = 0; kt < BC / 16; ++kt) {
            ldsm_frag pf;
            ldsm_from_regs(pf, pack2<T>(s[2 * kt][0], s[2 * kt][1]),
                           pack2<T>(s[2 * kt][2], s[2 * kt][3]),
                           pack2<T>(s[2 * kt + 1][0], s[2 * kt + 1][1]),
                           pack2<T>(s[2 * kt + 1][2], s[2 * kt + 1][3]));
#pragma unroll
            for (int np = 0; np < D / 16; ++np) {
                /* keys 16 kt + l % 16, columns 16 np + 8 (l / 16), transposed on the way */
                ldsm_frag vf;
                ldsm_x4<true>(vf, sv, swz<D>(kt * 16 + lane % 16, np * 16 + lane / 16 * 8));
                mma_t<T>(acc[2 * np], pf, vf, 0);
                mma_t<T>(acc[2 * np + 1], pf, vf, 1);
            }
        }
    }

    /* O = acc / l, lse = m ln 2 + log l; l summed over the quad first. l == 0: the row saw no
     * key (kv_len[b] == 0), acc / l would be 0 / 0, and the contract says zeros and -inf (a NaN
     * row has l NaN, not 0, and stays NaN) */
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(FULL, l[h], 1);
        l[h] += __shfl_xor_sync(FULL, l[h], 2);
        const int row = row0 + 8 * h;
        if (row >= len)
            continue;
        const float inv = l[h] == 0.0f ? 0.0f : 1.0f / l[h];
        T *out = o + head + (size_t)row * D + 2 * qd;
#pragma unroll
        for (int n = 0; n < NO; ++n)
            *reinterpret_cast<uint32_t *>(out + 8 * n) =
                pack2<T>(acc[n][2 * h] * inv, acc[n][2 * h + 1] * inv);
        if (qd == 0)
            lse[blockIdx.y * (size_t)len + row] = l[h] == 0.0f ? -INFINITY
                                                               : m[h] * LN2 + logf(l[h]);
    }
#endif
}

template <typename T, int D>
void mma_attention(const T *d_q, const T *d_k, const T *d_v, T *d_o, float *d_lse,
                   const int *d_kv_len, int batch, int heads, int len, float scale, int causal)
{
    const size_t smem = (size_t)(BR + 4 * BC) * D * sizeof(T); /* 40 KB (dim 64), 80 KB (128) */
    CUDA_CHECK(cudaFuncSetAttribute(attention_mma_kernel<T, D>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid((unsigned)cdiv(len, BR), (unsigned)(batch * heads));
    attention_mma_kernel<T, D><<<grid, THREADS, smem>>>(d_q, d_k, d_v, d_o, d_lse, d_kv_len,
                                                        heads, len, causal, scale);
    CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void mma_dim(const T *d_q, const T *d_k, const T *d_v, T *d_o, float *d_lse, const int *d_kv_len,
             int batch, int heads, int len, int dim, int causal, float scale, const char *name)
{
    if (dim == 64)
        mma_attention<T, 64>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, scale,
                             causal);
    else if (dim == 128)
        mma_attention<T, 128>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, scale,
                              causal);
    else {
        fprintf(stderr, "%s: dim %d: the contract (attention.h) allows 64 and 128\n", name, dim);
        exit(EXIT_FAILURE);
    }
}

} /* namespace */

void attention_mma_bf16(const at_bf16 *d_q, const at_bf16 *d_k, const at_bf16 *d_v,
                        at_bf16 *d_o, float *d_lse, const int *d_kv_len, int batch, int heads,
                        int len, int dim, int causal, float scale, void *d_work)
{
    (void)d_work;
    mma_dim<__nv_bfloat16>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, dim, causal,
                           scale, "attention_mma_bf16");
}

void attention_mma_f16(const at_f16 *d_q, const at_f16 *d_k, const at_f16 *d_v, at_f16 *d_o,
                       float *d_lse, const int *d_kv_len, int batch, int heads, int len,
                       int dim, int causal, float scale, void *d_work)
{
    (void)d_work;
    mma_dim<__half>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, dim, causal, scale,
                    "attention_mma_f16");
}
