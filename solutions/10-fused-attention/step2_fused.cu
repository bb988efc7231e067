/* step2_fused.cu: chapter 10, step 2 of the ladder, the reference: fused attention on the
 * SIMT cores (fp32 FMAs, no tensor cores).
 * Change from step 1: one kernel. A block takes a tile of BR query rows and walks the keys in
 * tiles of BC, each staged once in shared memory for all BR rows; the scores of a tile live in
 * registers and one small shared array, never in global memory; the softmax is online (a
 * running max m and sum l a row, the accumulator of O rescaled by exp(m_old - m_new) whenever
 * the max grows, chapter 07's step 4 with a tile of keys in place of a chunk of a row); O and
 * the log-sum-exp m + log l are written once at the end. With a causal mask the tiles wholly
 * above the diagonal are never visited: half the work; with the padding mask the tiles from
 * kv_len[b] on neither (a row that sees no key ends with l = 0, and writes zeros and -inf).
 * Expect: global traffic of Q once and K, V once a block of BR rows (some MB, not the
 * 20 bytes a score of step 1); the speed is then the FP32 pipe's: about 1 FMA per shared
 * load in the inner loops, a third of the FMA peak at best, while step 1's GEMMs run on the
 * tensor cores. Step 3 moves the products onto them.
 *
 * The block: 256 threads as a 16 x 16 grid (ty = tid / 16, tx = tid % 16). Thread (ty, tx)
 * owns the scores of rows ty + 16 i (i < BR / 16) and keys tx + 16 j (j < BC / 16), and the
 * outputs of the same rows at columns tx + 16 c (c < D / 16). The 16 threads of a row sit in
 * one half-warp, so a row's max and sum are four shuffles (xor 8, 4, 2, 1), no shared memory.
 * Tiles: D = 64 takes BR = 64 rows (46 KB of shared memory); D = 128 takes BR = 32 (56 KB,
 * over the 48 KB a block gets without asking: the launcher opts in). */
#include "cuda_check.h"
#include "attention.h"

#define THREADS 256
#define BC 32                    /* keys a tile */
#define FULL 0xffffffffu

/* padding, in floats, chosen for the banks (32 of 4 bytes):
 *   sQ row stride D + 4: a warp reads rows ty and ty + 1 at once, 4 banks apart
 *   sKt row stride BC + 1: K is stored transposed (a column of K a row of sKt), and the
 *       transposing store then walks down columns: an odd stride spreads them
 *   sP row stride BC + 16: the two half-warps write rows r and r + 1, 16 banks apart */
#define Q_STRIDE(D) ((D) + 4)
#define KT_STRIDE (BC + 1)
#define P_STRIDE (BC + 16)

template <int D, int BR>
static constexpr size_t smem_floats()
{
    return (size_t)BR * Q_STRIDE(D) + (size_t)D * KT_STRIDE + (size_t)BC * D +
           (size_t)BR * P_STRIDE;
}

static __device__ inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
static __device__ inline float widen(__half x) { return __half2float(x); }
/* the store as the format's bits: one 2-byte store */
static __device__ inline void narrow(float x, __nv_bfloat16 *out)
{
    *reinterpret_cast<unsigned short *>(out) = __bfloat16_as_ushort(__float2bfloat16_rn(x));
}
static __device__ inline void narrow(float x, __half *out)
{
    *reinterpret_cast<unsigned short *>(out) = __half_as_ushort(__float2half_rn(x));
}

/* eight values of a row, from one 16-byte load (rows start on 16-byte boundaries) */
template <typename T>
static __device__ inline void load8(const T *src, float *dst)
{
    const uint4 raw = *reinterpret_cast<const uint4 *>(src);
    const T *h = reinterpret_cast<const T *>(&raw);
#pragma unroll
    for (int t = 0; t < 8; ++t)
        dst[t] = widen(h[t]);
}

/* the launch's dynamic shared memory (declared at file scope: one name for every kernel) */
extern __shared__ __align__(16) float smem[];

template <typename T, int D, int BR>
static __global__ void __launch_bounds__(THREADS)
attention_fused_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                       T *__restrict__ o, float *__restrict__ lse, const int *__restrict__ kv_len,
                       int heads, int len, int causal, float scale)
{
    constexpr int RM = BR / 16, KN = BC / 16, CN = D / 16, CHUNKS = D / 8;
    float *s_q = smem;                              /* BR x D, scaled */
    float *s_kt = s_q + BR * Q_STRIDE(D);           /* D x BC: K^T */
    float *s_v = s_kt + D * KT_STRIDE;              /* BC x D */
    float *s_p = s_v + BC * D;                      /* BR x BC: this tile's P */

    const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
    const size_t head = (size_t)blockIdx.y * len;   /* the head's first row */
    const int q0 = blockIdx.x * BR;
    /* the padding mask: the keys this head's rows see are those below kv_end */
    const int kv_end = kv_len ? kv_len[blockIdx.y / heads] : len;

    /* Q once, scaled, rows past len as zeros (their scores are finite and never stored) */
    for (int e = tid; e < BR * CHUNKS; e += THREADS) {
        const int r = e / CHUNKS, c8 = e % CHUNKS * 8;
        float x[8] = {};
        if (q0 + r < len)
            load8(q + (head + q0 + r) * D + c8, x);
#pragma unroll
        for (int t = 0; t < 8; ++t)
            s_q[r * Q_STRIDE(D) + c8 + t] = x[t] * scale;
    }

    float m[RM], l[RM], acc[RM][CN];
#pragma unroll
    for (int i = 0; i < RM; ++i) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
#pragma unroll
        for (int c = 0; c < CN; ++c)
            acc[i][c] = 0.0f;
    }

    /* causal: the keys past the block's last row are masked for every row of it; the keys
     * from kv_end on for every row of the head: no tile of them is visited */
    const int k_end = causal ? min(kv_end, q0 + BR) : kv_end;
    for (int k0 = 0; k0 < k_end; k0 += BC) {
        __syncthreads(); /* every thread is done with the last tile's K, V and P */
        for (int e = tid; e < BC * CHUNKS; e += THREADS) {
            const int j = e / CHUNKS, c8 = e % CHUNKS * 8;
            float kx[8] = {}, vx[8] = {};
            if (k0 + j < kv_end) { /* padded keys, and keys past len, staged as zeros */
                load8(k + (head + k0 + j) * D + c8, kx);
                load8(v + (head + k0 + j) * D + c8, vx);
            }
#pragma unroll
            for (int t = 0; t < 8; ++t) {
                s_kt[(c8 + t) * KT_STRIDE + j] = kx[t];
                s_v[j * D + c8 + t] = vx[t];
            }
        }
        __syncthreads(); /* the tile is in */

        /* this thread's scores: RM x KN dot products of length D */
        float s[RM][KN];
#pragma unroll
        for (int i = 0; i < RM; ++i)
#pragma unroll
            for (int j = 0; j < KN; ++j)
                s[i][j] = 0.0f;
#pragma unroll 8
        for (int c = 0; c < D; ++c) {
            float qv[RM], kv[KN];
#pragma unroll
            for (int i = 0; i < RM; ++i)
                qv[i] = s_q[(ty + 16 * i) * Q_STRIDE(D) + c];
#pragma unroll
            for (int j = 0; j < KN; ++j)
                kv[j] = s_kt[c * KT_STRIDE + tx + 16 * j];
#pragma unroll
            for (int i = 0; i < RM; ++i)
#pragma unroll
                for (int j = 0; j < KN; ++j)
                    s[i][j] = fmaf(qv[i], kv[j], s[i][j]);
        }

        /* the online softmax, a row at a time: mask, the tile's max, rescale, exponentials */
#pragma unroll
        for (int i = 0; i < RM; ++i) {
            const int row = q0 + ty + 16 * i;
            float tile_max = -INFINITY;
#pragma unroll
            for (int j = 0; j < KN; ++j) {
                const int key = k0 + tx + 16 * j;
                if (key >= kv_end || (causal && key > row))
                    s[i][j] = -INFINITY; /* a padded key, or one in the row's future */
                tile_max = fmaxf(tile_max, s[i][j]);
            }
#pragma unroll
            for (int off = 8; off > 0; off /= 2) /* the 16 threads of the row: a half-warp */
                tile_max = fmaxf(tile_max, __shfl_xor_sync(FULL, tile_max, off));
            const float m_new = fmaxf(m[i], tile_max);
            /* exp(-inf - -inf) is NaN: a row that has seen no key yet subtracts 0 instead */
            const float base = m_new == -INFINITY ? 0.0f : m_new;
            const float alpha = __expf(m[i] - base); /* 0 on the first tile: m is -inf */
            float tile_sum = 0.0f;
#pragma unroll
            for (int j = 0; j < KN; ++j) {
                const float p = __expf(s[i][j] - base);
                tile_sum += p;
                s_p[(ty + 16 * i) * P_STRIDE + tx + 16 * j] = p;
            }
#pragma unroll
            for (int off = 8; off > 0; off /= 2)
                tile_sum += __shfl_xor_sync(FULL, tile_sum, off);
            l[i] = l[i] * alpha + tile_sum;
            m[i] = m_new;
#pragma unroll
            for (int c = 0; c < CN; ++c)
                acc[i][c] *= alpha; /* what was summed against the old max, moved to the new */
        }
        __syncthreads(); /* the tile's P is in */

        /* acc += P V over the tile's keys */
#pragma unroll 4
        for (int j = 0; j < BC; ++j) {
            float pv[RM], vv[CN];
#pragma unroll
            for (int i = 0; i < RM; ++i)
                pv[i] = s_p[(ty + 16 * i) * P_STRIDE + j];
#pragma unroll
            for (int c = 0; c < CN; ++c)
                vv[c] = s_v[j * D + tx + 16 * c];
#pragma unroll
            for (int i = 0; i < RM; ++i)
#pragma unroll
                for (int c = 0; c < CN; ++c)
                    acc[i][c] = fmaf(pv[i], vv[c], acc[i][c]);
        }
    }

    /* O = acc / l and lse = m + log l, once. l == 0: the row saw no key (kv_len[b] == 0), and
     * acc / l would be 0 / 0; the contract defines its o as zeros and its lse as -inf. (A NaN
     * row has l NaN, not 0, and stays NaN.) */
#pragma unroll
    for (int i = 0; i < RM; ++i) {
        const int row = q0 + ty + 16 * i;
        if (row >= len)
            continue;
        const float inv = l[i] == 0.0f ? 0.0f : 1.0f / l[i];
#pragma unroll
        for (int c = 0; c < CN; ++c)
            narrow(acc[i][c] * inv, &o[(head + row) * D + tx + 16 * c]);
        if (tx == 0)
            lse[head + row] = l[i] == 0.0f ? -INFINITY : m[i] + logf(l[i]);
    }
}

template <typename T, int D, int BR>
static void fused(const T *d_q, const T *d_k, const T *d_v, T *d_o, float *d_lse,
                  const int *d_kv_len, int batch, int heads, int len, float scale, int causal)
{
    const size_t smem = smem_floats<D, BR>() * sizeof(float);
    /* over 48 KB a block must ask (D = 128): every GPU from sm_75 allows 64 KB */
    CUDA_CHECK(cudaFuncSetAttribute(attention_fused_kernel<T, D, BR>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid((unsigned)cdiv(len, BR), (unsigned)(batch * heads));
    attention_fused_kernel<T, D, BR><<<grid, THREADS, smem>>>(d_q, d_k, d_v, d_o, d_lse,
                                                              d_kv_len, heads, len, causal,
                                                              scale);
    CUDA_CHECK(cudaGetLastError());
}

template <typename T>
static void fused_dim(const T *d_q, const T *d_k, const T *d_v, T *d_o, float *d_lse,
                      const int *d_kv_len, int batch, int heads, int len, int dim, int causal,
                      float scale, const char *name)
{
    if (dim == 64)
        fused<T, 64, 64>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, scale, causal);
    else if (dim == 128)
        fused<T, 128, 32>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, scale, causal);
    else {
        fprintf(stderr, "%s: dim %d: the contract (attention.h) allows 64 and 128\n", name, dim);
        exit(EXIT_FAILURE);
    }
}

void attention_fused_bf16(const at_bf16 *d_q, const at_bf16 *d_k, const at_bf16 *d_v,
                          at_bf16 *d_o, float *d_lse, const int *d_kv_len, int batch, int heads,
                          int len, int dim, int causal, float scale, void *d_work)
{
    (void)d_work;
    fused_dim<__nv_bfloat16>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, dim, causal,
                             scale, "attention_fused_bf16");
}

void attention_fused_f16(const at_f16 *d_q, const at_f16 *d_k, const at_f16 *d_v, at_f16 *d_o,
                         float *d_lse, const int *d_kv_len, int batch, int heads, int len,
                         int dim, int causal, float scale, void *d_work)
{
    (void)d_work;
    fused_dim<__half>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len, dim, causal, scale,
                      "attention_fused_f16");
}
