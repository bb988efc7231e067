/* step4_wgmma_sm90a.cu: chapter 10, step 4 of the ladder, the reference: fused attention with
 * wgmma and TMA, FlashAttention-3's forward pass. Hopper only (sm_90a code, which runs on
 * compute capability 9.0 and nothing else).
 * Change from step 3: who does what. In step 3 every warp copied, multiplied and did its own
 * softmax, in that order, and the tensor cores idled while the warps computed exp. Here the
 * block is specialised:
 *   warpgroup 0, the producer: one thread issues every copy as TMA boxes: Q once, then the
 *            tiles of K and of V, each into its own ring of 2 stages with a "full" mbarrier
 *            a stage (the copy has landed) and an "empty" one (every consumer warp is done
 *            with it); the warpgroup gives its registers away (setmaxnreg.dec)
 *   warpgroups 1 and 2, the consumers: 64 query rows each (128 a block), their registers
 *            raised to 240 (setmaxnreg.inc) for two accumulators: S (64 x BC, fp32) and O
 *            (64 x dim, fp32)
 * and both products are wgmma, which reads its operands where TMA put them (S = Q K^T: Q and K
 * from shared memory, both K-major) or from registers (O += P V: P, S's accumulators rounded
 * in place, V from shared memory, MN-major). wgmma is asynchronous, so a consumer overlaps: at
 * tile t it issues S_t = Q K_t^T and then O += P_{t-1} V_{t-1}, and while the tensor cores
 * run the second it waits for the first alone and does S_t's mask and softmax on the CUDA
 * cores and the SFU. Only then does it wait for the second and round S_t into P_t; O's
 * rescale to tile t's max waits for the next iteration, where it runs under S_{t+1}'s product
 * (O is no operand of that one). The two consumer warpgroups interleave besides, one's exp
 * under the other's products.
 * K_t's stage is free once S_t is done, V_t's only once P_t V_t is, an iteration later: so the
 * producer copies K one tile ahead of V (K_{t+1}, then V_t), and K_{t+2} lands while tile t's
 * softmax and tile t+1's products run.
 * The tiles: 128 query rows a block; BC keys a tile, 128 (176 at dim 128 without the mask,
 * FlashAttention-3's choice: 88 accumulators of S, 64 of O and 44 registers of P a thread fit
 * in 240). TMA reads q, k and v as 3-D tensors (dim, len, batch x heads): a box past len is
 * zero-filled, never the next head's rows; the keys past the end are masked to -inf as well.
 * Causal: block b's rows see keys up to its last row, so it stops there and masks only the
 * tiles that cross the diagonal; blocks are issued longest first.
 * d_kv_len (optional): row i of batch b sees key j only if j < kv_len[b]; the tile loop stops
 * at it, the partial tile is masked, and a row that sees no key writes o = 0, lse = -inf.
 * Expect: about twice step 3 at dim 128 and len 8192, FlashAttention-3's class (the bench's
 * rows, README.md, "What the measurements show"). */
#include <stdint.h>

#include "cuda_check.h"
#include "attention.h"
#include "attention_wgmma.cuh"

#define THREADS 384  /* 3 warpgroups: the producer, 2 consumers */
#define BR 128       /* query rows a block: 64 a consumer warpgroup */
#define STAGES 2     /* K and V tiles in flight */
#define BOX_COLS 64  /* values of a box row: 128 bytes, the swizzle's width */
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f
#define FULL 0xffffffffu
/* registers a thread after the hand-over: 128 x 24 + 256 x 240 = 64,512 of the SM's 65,536 */
#define PRODUCER_REGS 24
#define CONSUMER_REGS 240

namespace {

/* The shared memory of a block: Q, then the STAGES tiles of K, then those of V, each a row of
 * dim / 64 boxes (rows x 128 bytes, 1 KB aligned), then the mbarriers: full_q, then full_k,
 * full_v, empty_k and empty_v, STAGES each. */
template <int D, int BC>
struct layout {
    static constexpr int Q_BYTES = BR * D * 2;
    static constexpr int TILE_BYTES = BC * D * 2; /* one tile of K or of V */
    static constexpr int K_OFF = Q_BYTES;
    static constexpr int V_OFF = K_OFF + STAGES * TILE_BYTES;
    static constexpr int BAR_OFF = V_OFF + STAGES * TILE_BYTES;
    /* and 1 KB of slack to put the start on 1 KB */
    static constexpr int SMEM = BAR_OFF + (1 + 4 * STAGES) * 8 + 1024;
};

template <typename T, int D, int BC>
__global__ void __launch_bounds__(THREADS, 1)
attention_wgmma_kernel(const __grid_constant__ CUtensorMap map_q,
                       const __grid_constant__ CUtensorMap map_k,
                       const __grid_constant__ CUtensorMap map_v, T *__restrict__ o,
                       float *__restrict__ lse, const int *__restrict__ kv_len, int heads,
                       int len, int causal, float scale)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using L = layout<D, BC>;
    constexpr int BOXES = D / BOX_COLS; /* a row of a tile: 1 or 2 boxes */
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    /* the swizzle repeats every 1 KB and wgmma computes it from the address bits */
    unsigned char *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
    uint64_t *full_q = reinterpret_cast<uint64_t *>(smem + L::BAR_OFF);
    uint64_t *full_k = full_q + 1, *full_v = full_k + STAGES;
    uint64_t *empty_k = full_v + STAGES, *empty_v = empty_k + STAGES;

    const int bh = (int)blockIdx.y;
    /* causal: the last blocks of rows have the most tiles; start them first */
    const int qb = causal ? (int)gridDim.x - 1 - (int)blockIdx.x : (int)blockIdx.x;
    const int q0 = qb * BR;
    const int kv_end = kv_len ? min(max(kv_len[bh / heads], 0), len) : len;
    /* the keys this block's rows see end before key_end: with the mask, at its last row */
    const int key_end = causal ? min(kv_end, q0 + BR) : kv_end;
    const int ntiles = (key_end + BC - 1) / BC;

    if (threadIdx.x == 0) {
        mbar_init(full_q, 1);
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&full_k[s], 1);  /* the producer's arrive.expect_tx */
            mbar_init(&full_v[s], 1);
            mbar_init(&empty_k[s], 8); /* one arrival a consumer warp */
            mbar_init(&empty_v[s], 8);
        }
        /* the initialised barriers, visible to the TMA unit (the async proxy) */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads(); /* the last block-wide barrier: from here the roles part */

    if (threadIdx.x < 128) {
        /* the producer: one thread's loop of copies needs few registers */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        /* a block none of whose rows sees a key copies nothing: its consumers wait for nothing
         * and must not leave a copy landing in a block that has exited */
        if (threadIdx.x == 0 && ntiles > 0) {
            /* tile t of K (or V) into stage t % STAGES, once every consumer warp is done with
             * tile t - STAGES there: the phase (t / STAGES - 1) of that stage's empty barrier */
            auto load = [&](const CUtensorMap *map, int off, uint64_t *full, uint64_t *empty,
                            int t) {
                const int s = t % STAGES;
                if (t >= STAGES)
                    mbar_wait(&empty[s], (t / STAGES - 1) & 1);
                mbar_arrive_expect_tx(&full[s], L::TILE_BYTES);
                for (int j = 0; j < BOXES; j++)
                    tma_load_3d(smem + off + s * L::TILE_BYTES + j * BC * 128, map,
                                j * BOX_COLS, t * BC, bh, &full[s]);
            };
            mbar_arrive_expect_tx(full_q, L::Q_BYTES);
            for (int j = 0; j < BOXES; j++)
                tma_load_3d(smem + j * BR * 128, &map_q, j * BOX_COLS, q0, bh, full_q);
            load(&map_k, L::K_OFF, full_k, empty_k, 0);
            for (int t = 0; t < ntiles; t++) {
                if (t + 1 < ntiles) /* K one tile ahead of V: its stage is freed first */
                    load(&map_k, L::K_OFF, full_k, empty_k, t + 1);
                load(&map_v, L::V_OFF, full_v, empty_v, t);
            }
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int cw = threadIdx.x / 128 - 1;  /* consumer 0 or 1: rows q0 + 64 cw .. */
    const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32, g = lane / 4, qd = lane % 4;
    const int row0 = q0 + cw * 64 + warp * 16 + g; /* this thread's rows: row0, row0 + 8 */
    const float sl2 = scale * LOG2E; /* scores in log2 units: exp(x) = exp2(x log2 e) */

    float acc[D / 2];     /* O: 64 x dim, fp32 */
    float s[BC / 2];      /* S: 64 x BC, fp32; P after the softmax */
    uint32_t p[BC / 16][4]; /* P rounded to T: the A operand of each 16 keys */
#pragma unroll
    for (int i = 0; i < D / 2; i++)
        acc[i] = 0.0f;
    float m[2] = { -INFINITY, -INFINITY }, l[2] = { 0.0f, 0.0f }; /* rows g and g + 8 */

    const uint32_t q_base = smem_u32(smem) + cw * 64 * 128; /* this warpgroup's 64 rows */
    const uint32_t k_base = smem_u32(smem + L::K_OFF), v_base = smem_u32(smem + L::V_OFF);

    /* S = Q K^T for the tile in stage st: dim / 16 products of 64 x BC x 16, the first
     * overwriting S (scale-d 0). Both operands K-major: 32 bytes on for each 16 of dim inside
     * a box, the next box every 64. */
    auto issue_qk = [&](int st) {
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            const uint32_t col = (kk % 4) * 32;
            wgmma_ss<T, BC>(s, smem_desc(q_base + (kk / 4) * BR * 128 + col, 16, 1024),
                            smem_desc(k_base + st * L::TILE_BYTES + (kk / 4) * BC * 128 + col,
                                      16, 1024),
                            kk > 0);
        }
    };
    /* O += P V for the tile in stage st: BC / 16 products of 64 x dim x 16, P from registers,
     * V MN-major (16 keys = 16 rows on, 64-column boxes BC x 128 bytes apart) */
    auto issue_pv = [&](int st) {
#pragma unroll
        for (int kt = 0; kt < BC / 16; kt++)
            wgmma_rs<T, D>(acc, p[kt],
                           smem_desc(v_base + st * L::TILE_BYTES + kt * 16 * 128, BC * 128, 1024));
    };
    /* the mask, then the online softmax on S (exp in place), rows g and g + 8; returns the
     * factors the accumulator of O is to be rescaled by */
    auto softmax = [&](int t, float (&alpha)[2]) {
        const int k0 = t * BC;
        if (k0 + BC > kv_end || (causal && k0 + BC - 1 > q0)) {
#pragma unroll
            for (int j = 0; j < BC / 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int key = k0 + 8 * j + 2 * qd + e % 2, row = row0 + 8 * (e / 2);
                    if (key >= kv_end || (causal && key > row))
                        s[4 * j + e] = -INFINITY;
                }
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < BC / 8; j++)
                mx = fmaxf(mx, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, 1)); /* a row: the 4 lanes of a quad */
            mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, 2));
            const float m_new = fmaxf(m[h], mx * sl2);
            /* a row that has seen only masked keys subtracts 0: -inf - -inf is NaN */
            const float base = m_new == -INFINITY ? 0.0f : m_new;
            alpha[h] = exp2_approx(m[h] - base); /* 0 on the first tile */
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < BC / 8; j++)
#pragma unroll
                for (int e = 2 * h; e < 2 * h + 2; e++) {
                    s[4 * j + e] = exp2_approx(fmaf(s[4 * j + e], sl2, -base));
                    sum += s[4 * j + e];
                }
            l[h] = l[h] * alpha[h] + sum; /* this lane's share; the quad's add up at the end */
            m[h] = m_new;
        }
    };
    /* S's accumulators for keys 16 kt .. 16 kt + 15 are, rounded in pairs, P's A operand */
    auto round_p = [&]() {
#pragma unroll
        for (int kt = 0; kt < BC / 16; kt++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                p[kt][r] = pack_t<T>(s[8 * kt + 2 * r], s[8 * kt + 2 * r + 1]);
    };
    /* O, so far against the old max, rescaled to the new one before P_t V_t is added */
    auto rescale_o = [&](const float (&alpha)[2]) {
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
            acc[4 * j] *= alpha[0], acc[4 * j + 1] *= alpha[0];
            acc[4 * j + 2] *= alpha[1], acc[4 * j + 3] *= alpha[1];
        }
    };
    /* this warp is done with a stage: the producer may refill it once all 8 have said so */
    auto release = [&](uint64_t *empty) {
        __syncwarp();
        if (lane == 0)
            mbar_arrive(empty);
    };

    if (ntiles > 0) {
        float alpha[2];
        mbar_wait(full_q, 0);
        mbar_wait(&full_k[0], 0);
        __syncwarp(); /* the warp together again: the wgmma instructions are .aligned */
        wgmma_fence();
        issue_qk(0);
        wgmma_commit();
        wgmma_wait<0>();
        fence_acc(s);
        release(&empty_k[0]);
        softmax(0, alpha);
        round_p();

        for (int t = 1; t < ntiles; t++) {
            const int st = t % STAGES, sp = (t - 1) % STAGES;
            /* V_{t-1} came with K_{t-1}, long waited for: both waits before the fence */
            mbar_wait(&full_v[sp], ((t - 1) / STAGES) & 1);
            mbar_wait(&full_k[st], (t / STAGES) & 1);
            __syncwarp();
            wgmma_fence(); /* P was written by ordinary instructions */
            issue_qk(st);
            wgmma_commit();
            /* O's rescale for tile t - 1 while the tensor cores start on S_t */
            fence_acc(acc);
            rescale_o(alpha);
            wgmma_fence(); /* and O too */
            issue_pv(sp);
            wgmma_commit();
            /* S_t is in once the older group is done (K_t's stage free); P_{t-1} V_{t-1} may
             * run on */
            wgmma_wait<1>();
            fence_acc(s);
            release(&empty_k[st]);
            softmax(t, alpha);
            /* now O's product too: O and P may be written again, V_{t-1}'s stage refilled */
            wgmma_wait<0>();
            fence_acc(acc);
            fence_acc(s);
            release(&empty_v[sp]);
            round_p();
        }

        const int sp = (ntiles - 1) % STAGES;
        mbar_wait(&full_v[sp], ((ntiles - 1) / STAGES) & 1);
        __syncwarp();
        rescale_o(alpha);
        wgmma_fence();
        issue_pv(sp);
        wgmma_commit();
        wgmma_wait<0>();
        fence_acc(acc);
    }

    /* O = acc / l, lse = m ln 2 + log l; l summed over the quad first. A row that saw no key
     * (l = 0: kv_len 0) writes O = 0 and lse = -inf. */
#pragma unroll
    for (int h = 0; h < 2; h++) {
        l[h] += __shfl_xor_sync(FULL, l[h], 1);
        l[h] += __shfl_xor_sync(FULL, l[h], 2);
        const int row = row0 + 8 * h;
        if (row >= len)
            continue;
        const bool none = l[h] == 0.0f;
        const float inv = none ? 0.0f : 1.0f / l[h];
        T *out = o + ((size_t)bh * len + row) * D + 2 * qd;
#pragma unroll
        for (int j = 0; j < D / 8; j++)
            *reinterpret_cast<uint32_t *>(out + 8 * j) =
                none ? 0u : pack_t<T>(acc[4 * j + 2 * h] * inv, acc[4 * j + 2 * h + 1] * inv);
        if (qd == 0)
            lse[(size_t)bh * len + row] = none ? -INFINITY : m[h] * LN2 + logf(l[h]);
    }
#else
    __trap(); /* wgmma and setmaxnreg exist in sm_90a code only */
#endif
}

template <typename T, int D, int BC>
void wgmma_attention(const T *d_q, const T *d_k, const T *d_v, T *d_o, float *d_lse,
                     const int *d_kv_len, int batch, int heads, int len, int causal,
                     float scale, const char *name)
{
    using L = layout<D, BC>;
    /* once a device (and a kernel): a block may use over 48 KB of shared memory only once it
     * is allowed to */
    static int ready_dev = -1;
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev != ready_dev) {
        CUDA_CHECK(cudaFuncSetAttribute(attention_wgmma_kernel<T, D, BC>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM));
        ready_dev = dev;
    }
    const int mats = batch * heads;
    const CUtensorMap map_q = make_map_rows<T>(name, d_q, len, mats, D, BR);
    const CUtensorMap map_k = make_map_rows<T>(name, d_k, len, mats, D, BC);
    const CUtensorMap map_v = make_map_rows<T>(name, d_v, len, mats, D, BC);
    const dim3 grid((unsigned)cdiv(len, BR), (unsigned)mats);
    attention_wgmma_kernel<T, D, BC><<<grid, THREADS, L::SMEM>>>(
        map_q, map_k, map_v, d_o, d_lse, d_kv_len, heads, len, causal, scale);
    CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void wgmma_dim(const T *d_q, const T *d_k, const T *d_v, T *d_o, float *d_lse,
               const int *d_kv_len, int batch, int heads, int len, int dim, int causal,
               float scale, const char *name)
{
    /* sm_90a code runs on compute capability 9.0 exactly, not before it and not after */
    int dev, major, minor;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major != 9 || minor != 0) {
        fprintf(stderr, "%s: needs sm_90 (wgmma is sm_90a code, which runs on compute "
                        "capability 9.0 only); this device is sm_%d%d\n", name, major, minor);
        exit(EXIT_FAILURE);
    }
    if (dim == 64)
        wgmma_attention<T, 64, 128>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len,
                                    causal, scale, name);
    else if (dim == 128 && causal)
        wgmma_attention<T, 128, 128>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len,
                                     causal, scale, name);
    else if (dim == 128)
        wgmma_attention<T, 128, 176>(d_q, d_k, d_v, d_o, d_lse, d_kv_len, batch, heads, len,
                                     causal, scale, name);
    else {
        fprintf(stderr, "%s: dim %d: the contract (attention.h) allows 64 and 128\n", name, dim);
        exit(EXIT_FAILURE);
    }
}

} /* namespace */

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
