/* step3_mma.cu: chapter 10, step 3 of the ladder, the reference: fused attention on the tensor
 * cores with ldmatrix and mma.sync (FlashAttention-2's forward pass).
 * Change from step 2: both products run as mma.sync m16n8k16 (bf16 or fp16 in, fp32
 * accumulators), fed by ldmatrix from shared memory. A block is 4 warps and 128 query rows;
 * each warp owns 32 rows whole, as two tiles of 16 (their scores, their max and sum, their
 * accumulators of O), so the softmax needs no shared memory and no barrier: a row lives in the
 * 4 lanes of a quad. Each tile of 64 keys is
 *   S = Q K^T        K's rows are B's columns: ldmatrix without .trans; each K fragment feeds
 *                    both tiles of rows, 4 mma.sync
 *   softmax          on S's accumulators, in registers: ex2 with the scale and log2(e) folded
 *                    into one multiply-add
 *   O += P V         P is S's accumulators rounded to the input type, already in the A
 *                    layout; V's rows are B's rows: ldmatrix.trans, each V fragment feeding
 *                    both tiles of rows
 * Why 32 rows a warp: a fragment of K or V that ldmatrix brings in (512 bytes a warp) feeds
 * two mma.sync for each tile of rows the warp has. With 16 rows a warp that is 256 bytes of
 * shared memory for each mma.sync, and at 128 bytes a clock an SM, one mma.sync every 2 clocks
 * at best; with 32 rows, 128 bytes (160 with Q's, below). The price is registers: a lane's
 * accumulators of O are dim / 2 floats a tile of rows and its scores 32, so at dim 128 O and S
 * alone take 192 of the 255 a thread may have, and Q's fragments (64 more) no longer fit
 * beside them: they are read from shared memory again at every tile of keys (2 ldmatrix for
 * the 16 mma.sync of a step of dim). At dim 64 (O 64, S 64) Q's 32 stay in registers. 8 warps
 * an SM either way (2 blocks).
 * K and V are double-buffered: the cp.async of tile t + 1 go into the other buffer once tile
 * t's softmax is done, and land while its P V runs (and the SM's other block works). One
 * barrier a tile: it makes tile t's copies (every thread's) visible and says every warp is done
 * with tile t - 1, whose buffer tile t + 1 is about to overwrite.
 * Shared memory rows are dim 16-bit values (128 or 256 bytes): the 16-byte chunk c of row r is
 * stored at chunk c ^ (r % 8), so the 8 rows one ldmatrix phase reads fall in 8 different
 * groups of 4 banks, and a row's cp.async stores stay a permutation of one row. A lane's
 * ldmatrix offset at step j of dim is its offset at step 0 with the chunk's bits flipped
 * (swz_step): one offset a lane for Q and V and one for K, computed once.
 * Causal: block b's rows see keys up to its last row, so it visits the tiles up to that row and
 * masks only those its diagonal crosses (keys past its first row); blocks are issued longest
 * first. Padding: a head's rows see the keys below kv_len[b], so its blocks stop at the tile
 * that holds the last of them, copy the keys past it as zeros and mask them; a block that sees
 * no key copies nothing and writes zeros and -inf (l == 0).
 * Expect: the tensor cores' work at several times step 2's rate; at dim 128 and len 8192 some
 * hundreds of TFLOP/s on an H200 (the bench's rows, README.md, "What the measurements show"). */
#include <stdint.h>

#include <cuda_pipeline.h>

#include "cuda_check.h"
#include "attention.h"
#include "attention_mma.cuh"

#define THREADS 128 /* 4 warps */
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f
#define FULL 0xffffffffu

/* the launch's dynamic shared memory (at file scope: one name for every kernel) */
extern __shared__ __align__(128) unsigned char smem_raw[];

/* How a block is cut: WM tiles of 16 query rows a warp (the block's rows: 64 WM), Q's
 * fragments held in registers for the whole loop (QREG) or read again from shared memory at
 * each tile of keys, BC keys a tile, and the blocks an SM is to hold (__launch_bounds__: at
 * most 65536 / (128 BLOCKS) registers a thread; 1 leaves the count to the compiler). */
template <int WM_, bool QREG_, int BC_, int BLOCKS_> struct tiling {
    static constexpr int WM = WM_, BC = BC_, BLOCKS = BLOCKS_;
    static constexpr bool QREG = QREG_;
};

/* Each head dim's: 32 rows a warp, 64 keys a tile, two blocks (8 warps) an SM, with 255
 * registers a thread at most; Q's fragments in registers at dim 64 only. */
template <int D> struct tiling_of;
template <> struct tiling_of<64> { typedef tiling<2, true, 64, 2> type; };
template <> struct tiling_of<128> { typedef tiling<2, false, 64, 2> type; };

namespace {

/* element offset of (row, col) in a tile of D columns: 16-byte chunks swizzled by row % 8 */
template <int D>
__device__ __forceinline__ int swz(int row, int col)
{
    return row * D + (((col >> 3) ^ (row & 7)) << 3) + (col & 7);
}

/* The offset of step j (16 columns on) from a lane's swizzled offset at step 0, whose chunk is
 * c0 ^ (r % 8), c0 0 or 1: chunk c0 + 2 j is stored at (c0 + 2 j) ^ (r % 8), which is
 * (c0 ^ (r % 8)) ^ 2 j. So the step flips bits 4 and 5 of the offset (the chunk's bits 1 and
 * 2), and from j = 4 on (dim 128) adds 64 (its bit 3, clear at step 0); the row's bits and a
 * buffer's offset lie above them and are untouched. */
template <int D>
__device__ __forceinline__ int swz_step(int off, int j)
{
    static_assert(D / 8 <= 16, "rows of 16 chunks at most: steps 0 to 7");
    return (off ^ ((j & 3) << 4)) + ((j >> 2) << 6);
}

/* rows [r0, r0 + ROWS) of a len x D matrix into a swizzled tile, 16 bytes a cp.async; rows
 * from `end` on zero-filled (past len for Q; past kv_len[b] for K and V, whose scores are
 * masked: V's zeros keep 0 x garbage out of O). A thread copies the same chunk of every
 * (THREADS / CHUNKS)-th row, 8 or 16 rows apart: its rows share r % 8, so one swizzled offset
 * and one source pointer, stepped by constants, address all of its copies; only a tile that
 * crosses `end` pays for a test and a zero fill a copy. */
template <typename T, int D, int ROWS>
__device__ __forceinline__ void copy_tile(T *s, const T *g, int r0, int end)
{
    constexpr int CHUNKS = D / 8, STEP = THREADS / CHUNKS;
    const int row = (int)threadIdx.x / CHUNKS, c = (int)threadIdx.x % CHUNKS;
    T *dst = s + swz<D>(row, c * 8);
    const T *src = g + ((size_t)r0 + row) * D + c * 8;
    if (r0 + ROWS <= end) {
#pragma unroll
        for (int i = 0; i < ROWS / STEP; ++i)
            __pipeline_memcpy_async(dst + i * STEP * D, src + i * STEP * D, 16);
    } else {
#pragma unroll
        for (int i = 0; i < ROWS / STEP; ++i) {
            const bool in = r0 + row + i * STEP < end;
            __pipeline_memcpy_async(dst + i * STEP * D, in ? src + i * STEP * D : g, 16,
                                    in ? 0 : 16);
        }
    }
}

template <typename T, int D, class TL>
__global__ void __launch_bounds__(THREADS, TL::BLOCKS)
attention_mma_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                     T *__restrict__ o, float *__restrict__ lse, const int *__restrict__ kv_len,
                     int heads, int len, int causal, float scale)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    __trap(); /* sm_75: no bf16 or fp16 mma.sync m16n8k16 with these layouts before sm_80 */
#else
    constexpr int WM = TL::WM;   /* 16-row tiles a warp */
    constexpr int BR = 64 * WM;  /* query rows a block */
    constexpr int BC = TL::BC;   /* keys a tile */
    constexpr int KD = D / 16;   /* 16-wide steps of dim: Q's A fragments */
    constexpr int NS = BC / 8;   /* 8-key accumulators of S a tile of rows */
    constexpr int NO = D / 8;    /* 8-column accumulators of O a tile of rows */
    constexpr int QF = TL::QREG ? KD : 1; /* Q's fragments a tile of rows the warp holds */
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
    /* causal: the block's last row, q0 + BR - 1, sees the keys up to itself */
    const int ntiles = causal ? min((q0 + BR - 1) / BC + 1, kv_tiles) : kv_tiles;

    if (ntiles > 0) { /* none: the rows see no key, and the loop below never waits */
        copy_tile<T, D, BR>(s_q, qh, q0, len);
        copy_tile<T, D, BC>(s_k, kh, 0, kv_end);
        copy_tile<T, D, BC>(s_v, vh, 0, kv_end);
        __pipeline_commit();
    }

    const float sl2 = scale * LOG2E; /* scores in log2 units: exp(x) = exp2(x log2 e) */
    ldsm_frag qf[WM][QF];
    float acc[WM][NO][4];
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int n = 0; n < NO; ++n)
            acc[i][n][0] = acc[i][n][1] = acc[i][n][2] = acc[i][n][3] = 0.0f;
    float m[WM][2], l[WM][2]; /* rows g and g + 8 of each tile of rows */
#pragma unroll
    for (int i = 0; i < WM; ++i)
        m[i][0] = m[i][1] = -INFINITY, l[i][0] = l[i][1] = 0.0f;
    const int wr = warp * 16 * WM; /* the warp's first row in the block */
    const int row0 = q0 + wr + g;  /* this lane's rows: row0 + 16 i and row0 + 16 i + 8 */
    /* ldmatrix's offsets at step 0 of dim: lane l reads row l % 16, chunk l / 16 of a 16 x 16
     * block of Q or V, and row 8 (l / 16) + l % 8, chunk (l / 8) % 2 of one of K */
    const int off_a = swz<D>(lane % 16, lane / 16 * 8);
    const int off_k = swz<D>(lane / 16 * 8 + lane % 8, (lane / 8) % 2 * 8);

    for (int t = 0; t < ntiles; ++t) {
        __pipeline_wait_prior(0);
        __syncthreads(); /* tile t is in (every thread's copies); tile t - 1 is done with */
        /* this tile's buffers, as offsets from s_k and s_v with the lane's step-0 offset in
         * (a buffer's offset lies above the bits swz_step changes) */
        const int ok = (t & 1) * BC * D + off_k, ov = (t & 1) * BC * D + off_a;
        if (TL::QREG && t == 0) {
#pragma unroll
            for (int i = 0; i < WM; ++i)
#pragma unroll
                for (int kk = 0; kk < QF; ++kk)
                    ldsm_x4<false>(qf[i][kk], s_q, (wr + 16 * i) * D + swz_step<D>(off_a, kk));
        }

        /* S = Q K^T: 16 WM rows x BC keys a warp, in WM x NS accumulators */
        float s[WM][NS][4];
#pragma unroll
        for (int i = 0; i < WM; ++i)
#pragma unroll
            for (int j = 0; j < NS; ++j)
                s[i][j][0] = s[i][j][1] = s[i][j][2] = s[i][j][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KD; ++kk) {
            const int qk = TL::QREG ? kk : 0;
            if (!TL::QREG) {
#pragma unroll
                for (int i = 0; i < WM; ++i)
                    ldsm_x4<false>(qf[i][0], s_q, (wr + 16 * i) * D + swz_step<D>(off_a, kk));
            }
#pragma unroll
            for (int jp = 0; jp < NS / 2; ++jp) {
                /* keys 16 jp + 8 (l / 16) + l % 8: matrices (keys 0-7, 8-15) x (dim lo, hi) */
                ldsm_frag kf;
                ldsm_x4<false>(kf, s_k, jp * 16 * D + swz_step<D>(ok, kk));
#pragma unroll
                for (int i = 0; i < WM; ++i) { /* one K fragment, every tile of rows */
                    mma_t<T>(s[i][2 * jp], qf[i][qk], kf, 0);
                    mma_t<T>(s[i][2 * jp + 1], qf[i][qk], kf, 1);
                }
            }
        }

        /* the mask: padded keys and keys past len (the last tile), keys after the row (the
         * tiles the block's diagonal crosses: keys past its first row) */
        const int k0 = t * BC;
        if (k0 + BC > kv_end || (causal && k0 + BC - 1 > q0)) {
#pragma unroll
            for (int i = 0; i < WM; ++i)
#pragma unroll
                for (int j = 0; j < NS; ++j)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int key = k0 + 8 * j + 2 * qd + e % 2;
                        const int row = row0 + 16 * i + 8 * (e / 2);
                        if (key >= kv_end || (causal && key > row))
                            s[i][j][e] = -INFINITY;
                    }
        }

        /* the online softmax, rows g and g + 8 of each tile of rows: the quad's 4 lanes hold
         * a row's BC scores */
#pragma unroll
        for (int i = 0; i < WM; ++i)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float mx = -INFINITY;
#pragma unroll
                for (int j = 0; j < NS; ++j)
                    mx = fmaxf(mx, fmaxf(s[i][j][2 * h], s[i][j][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, 2));
                const float m_new = fmaxf(m[i][h], mx * sl2);
                /* a row that has seen only NaN or masked keys subtracts 0: -inf - -inf is NaN */
                const float base = m_new == -INFINITY ? 0.0f : m_new;
                const float alpha = exp2_approx(m[i][h] - base); /* 0 on the first tile */
                float sum = 0.0f;
#pragma unroll
                for (int j = 0; j < NS; ++j)
#pragma unroll
                    for (int e = 2 * h; e < 2 * h + 2; ++e) {
                        s[i][j][e] = exp2_approx(fmaf(s[i][j][e], sl2, -base));
                        sum += s[i][j][e];
                    }
                /* this lane's share; the quad's shares add at the end */
                l[i][h] = l[i][h] * alpha + sum;
                m[i][h] = m_new;
#pragma unroll
                for (int n = 0; n < NO; ++n) {
                    acc[i][n][2 * h] *= alpha;
                    acc[i][n][2 * h + 1] *= alpha;
                }
            }

        /* the next tile's copies, into the buffer of tile t - 1 (every warp is past it: the
         * barrier above), in flight while P V runs */
        if (t + 1 < ntiles) {
            copy_tile<T, D, BC>(s_k + ((t + 1) & 1) * BC * D, kh, (t + 1) * BC, kv_end);
            copy_tile<T, D, BC>(s_v + ((t + 1) & 1) * BC * D, vh, (t + 1) * BC, kv_end);
            __pipeline_commit();
        }

        /* O += P V: P's 16 x 16 blocks straight from S's accumulators */
#pragma unroll
        for (int kt = 0; kt < BC / 16; ++kt) {
            ldsm_frag pf[WM];
#pragma unroll
            for (int i = 0; i < WM; ++i)
                ldsm_from_regs(pf[i], pack2<T>(s[i][2 * kt][0], s[i][2 * kt][1]),
                               pack2<T>(s[i][2 * kt][2], s[i][2 * kt][3]),
                               pack2<T>(s[i][2 * kt + 1][0], s[i][2 * kt + 1][1]),
                               pack2<T>(s[i][2 * kt + 1][2], s[i][2 * kt + 1][3]));
#pragma unroll
            for (int np = 0; np < D / 16; ++np) {
                /* keys 16 kt + l % 16, columns 16 np + 8 (l / 16), transposed on the way */
                ldsm_frag vf;
                ldsm_x4<true>(vf, s_v, kt * 16 * D + swz_step<D>(ov, np));
#pragma unroll
                for (int i = 0; i < WM; ++i) { /* one V fragment, every tile of rows */
                    mma_t<T>(acc[i][2 * np], pf[i], vf, 0);
                    mma_t<T>(acc[i][2 * np + 1], pf[i], vf, 1);
                }
            }
        }
    }

    /* O = acc / l, lse = m ln 2 + log l; l summed over the quad first. l == 0: the row saw no
     * key (kv_len[b] == 0), acc / l would be 0 / 0, and the contract says zeros and -inf (a NaN
     * row has l NaN, not 0, and stays NaN) */
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float lr = l[i][h];
            lr += __shfl_xor_sync(FULL, lr, 1);
            lr += __shfl_xor_sync(FULL, lr, 2);
            const int row = row0 + 16 * i + 8 * h;
            if (row >= len)
                continue;
            const float inv = lr == 0.0f ? 0.0f : 1.0f / lr;
            T *out = o + head + (size_t)row * D + 2 * qd;
#pragma unroll
            for (int n = 0; n < NO; ++n)
                *reinterpret_cast<uint32_t *>(out + 8 * n) =
                    pack2<T>(acc[i][n][2 * h] * inv, acc[i][n][2 * h + 1] * inv);
            if (qd == 0)
                lse[blockIdx.y * (size_t)len + row] = lr == 0.0f ? -INFINITY
                                                                 : m[i][h] * LN2 + logf(lr);
        }
#endif
}

template <typename T, int D, class TL>
void mma_attention(const T *d_q, const T *d_k, const T *d_v, T *d_o, float *d_lse,
                   const int *d_kv_len, int batch, int heads, int len, float scale, int causal)
{
    constexpr int BR = 64 * TL::WM;
    /* Q and two buffers each of K and V: 48 KB (dim 64), 96 KB (dim 128) */
    const size_t smem = (size_t)(BR + 4 * TL::BC) * D * sizeof(T);
    CUDA_CHECK(cudaFuncSetAttribute(attention_mma_kernel<T, D, TL>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid((unsigned)cdiv(len, BR), (unsigned)(batch * heads));
    attention_mma_kernel<T, D, TL><<<grid, THREADS, smem>>>(d_q, d_k, d_v, d_o, d_lse, d_kv_len,
                                                            heads, len, causal, scale);
    CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void mma_dim(const T *d_q, const T *d_k, const T *d_v, T *d_o, float *d_lse, const int *d_kv_len,
             int batch, int heads, int len, int dim, int causal, float scale, const char *name)
{
    if (dim == 64)
        mma_attention<T, 64, tiling_of<64>::type>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch,
                                                  heads, len, scale, causal);
    else if (dim == 128)
        mma_attention<T, 128, tiling_of<128>::type>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch,
                                                    heads, len, scale, causal);
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
