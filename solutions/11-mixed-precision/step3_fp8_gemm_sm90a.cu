/* step3_fp8_gemm_sm90a.cu: chapter 11, step 3 of 4, a block-scaled FP8 GEMM on wgmma. The
 * reference; Hopper only (sm_90a code, which runs on compute capability 9.0 and nothing else).
 * Change from chapter 05's step 4 (the BF16 wgmma GEMM this kernel is built like): the
 * operands are e4m3, both K-major, and every 128 of k carries its own scales, one a row of A
 * (1 x 128) and one a 128 x 128 block of B. A scale cannot go into the tensor cores, which
 * multiply codes, so the k loop runs one scale block at a time: the tensor cores sum the block's
 * 128 products into a fresh accumulator, and the CUDA cores multiply that partial sum by its two
 * scales and add it into a second accumulator in fp32. This "promotion" also fixes a precision
 * loss: Hopper's FP8 tensor cores keep only about 14 bits of a running sum (DeepSeek-V3's
 * report, section 3.3), and a sum that ran over all of a large k would lose the small products.
 *
 * What sets the speed is keeping the tensor cores fed, and at FP8's rate three things starve
 * them: bytes from L2 (a 128 x 128 tile brings 32 KB a block of k for 4 MFLOP), the start and
 * end of every tile (the ring's first copies, the stores of D), and the promotion's wait. So:
 *
 *   the tile is 256 x 128 (m x n), and a cluster of 2 CTAs takes two tiles side by side in n,
 *     the same 256 rows of A: each CTA copies half of A's box (128 x 128) and the tensor memory
 *     accelerator multicasts it into both CTAs' shared memory, so a CTA brings 16 KB of A and
 *     16 KB of B a block of k for 8 MFLOP, half a 128 x 128 tile's bytes a FLOP;
 *   the CTAs are persistent: one an SM (as many clusters as fit), each walking tiles in a fixed
 *     order, m-blocks in bands of FG_GROUP so that a wave's tiles share their rows of A and
 *     columns of B in L2; the ring of stages runs on across tiles, so the producer copies the
 *     next tile's first blocks while the consumers store this one's D;
 *   3 warpgroups, 384 threads: warpgroup 0 the producer, which gives registers away (setmaxnreg
 *     40) and one thread of it issues the copies into a ring of 4 stages of 48 KB, a "full"
 *     and an "empty" mbarrier each; warpgroups 1 and 2 the consumers (setmaxnreg 232), 128
 *     rows of the tile each, in two halves of 64: per stage and half, four wgmma.mma_async
 *     m64n128k32 e4m3 products into the partial accumulator (64 floats a thread; the first
 *     with scale-d = 0, so that it starts from zero), wait for them, promote into the half's
 *     total (64 FMAs a thread). 64 + 2 x 64 accumulators is as much as a thread holds, so a
 *     warpgroup waits for its own products before it promotes, and the other warpgroup's
 *     products keep the tensor cores busy meanwhile: the two take turns (two named barriers,
 *     "ping-pong"), each issuing its four products and handing the turn over, so that one's
 *     products always run while the other promotes;
 *   the promotion is on the path from one batch of products to the next, so that path holds
 *     little else: the descriptors are the stage's base plus constants, in uniform registers
 *     (the warpgroup's index read through a shuffle, so the compiler knows it is one value a
 *     warp), and the scales come through pointers that step a block of k at a time, read while
 *     the products run and used a block later;
 *   D goes out through shared memory: each consumer writes a 64 x 128 half of its rows as bf16
 *     into its own 16 KB, two boxes of 64 x 64 in the 128-byte swizzle (16-byte chunks XORed
 *     with the row, so the accumulator layout's writes meet no bank twice), and one thread has
 *     the tensor memory accelerator store them (cp.async.bulk.tensor, which leaves out what
 *     lies past m or n): the tile's end, when the tensor cores wait for both consumers, holds
 *     a conversion and a barrier, not a loop of loads and stores;
 *   the last round, when the pairs are not a whole number of rounds, is cut along k into one
 *     segment a cluster and run as a second launch (split_of, below), so that no cluster sits
 *     idle while half of them finish a pair; the pieces' partial sums meet in a workspace.
 *     The second launch is an instance of its own of the kernel template: with the pieces'
 *     code beside it, the compiler gave the loop over whole pairs other registers and a slower
 *     schedule.
 *
 * The stage and its barriers. A stage holds A's 256 x 128 (two boxes: rank 0's copy at byte 0,
 * rank 1's at 16 KB) and B's 128 x 128 (at 32 KB); each box row is 128 e4m3 = 128 bytes, one
 * row of the 128-byte swizzle, each 8-row group 1 KB (the descriptors' stride byte offset);
 * the next 32 of k is 32 bytes along the swizzled row. A CTA's full barrier expects 48 KB: its
 * own half of A, its peer's (multicast in), its own B; its producer's one arrival. The empty
 * barrier counts the consumer warps of both CTAs (16): a stage may be refilled only when the
 * peer is done with it too, since the refill's half of A lands in both. Both CTAs walk the
 * same tiles with the same blocks of k, so their rings run in step.
 *
 * Limits, said plainly: k a multiple of 16 and A, B 16-byte aligned (TMA); the boxes that hang
 * over m, n or k are zero-filled, so partial tiles and a partial last block of k need no code.
 * A box that would lie wholly past m or n (the second half of a tile's rows, the second tile of
 * a pair at an odd count of n-blocks) is copied from the last rows that exist instead: what it
 * computes falls on rows or columns of D that are never stored.
 * Expect: the lesson's measurements (README.md) against cuBLASLt's FP8 GEMM with per-tensor
 * scales, which has no scales to apply inside its loop; the goal is 90% of it, accurate to 1e-3
 * by the contract's measure. */
#include <stdint.h>
#include <cuda_bf16.h>

#include "../05-async-pipelining/tma.cuh" /* the mbarrier and TMA helpers, make_map_2d */
#include "../05-async-pipelining/cluster.cuh" /* the cluster: rank, barrier, multicast copy */
#include "../05-async-pipelining/wgmma.cuh" /* smem_desc, the wgmma fences and waits */
#include "quant.h"

#define FG_BM 256                            /* rows of D a CTA: 128 a consumer warpgroup */
#define FG_BN 128                            /* columns of D a CTA: one block of B's scales */
#define FG_BK 128                            /* k a stage: one scale block, one swizzle row */
#define FG_STAGES 4
#define FG_CLUSTER 2                         /* CTAs a cluster: two tiles side by side in n */
#define FG_GROUP 8                           /* m-blocks a band of the tile order */
#define FG_THREADS 384                       /* 3 warpgroups: the producer, 2 consumers */
#define FG_CONSUMER_WARPS 8
#define FG_ACC (64 * FG_BN / 128)            /* fp32 accumulators a thread for 64 rows: 64 */
#define FG_BOX_BYTES (128 * FG_BK)           /* a 128 x 128 box of e4m3: 16 KB */
#define FG_A_BYTES (FG_BM * FG_BK)           /* A's 256 rows: two boxes, 32 KB */
#define FG_STAGE_BYTES (FG_A_BYTES + FG_BOX_BYTES) /* A's two boxes, then B's: 48 KB */
#define FG_OUT_BYTES (64 * FG_BN * 2)        /* a consumer's 64 rows of D in bf16: 16 KB */
#define FG_OUT_OFF (FG_STAGES * FG_STAGE_BYTES)
#define FG_BAR_OFF (FG_OUT_OFF + 2 * FG_OUT_BYTES)
/* and 1 KB of slack to put the start on 1 KB: 230,464 of the 232,448 bytes a block may have */
#define FG_SMEM (FG_BAR_OFF + 2 * FG_STAGES * 8 + 1024)
/* registers a thread after the hand-over: 128 x 40 + 256 x 232 = 64,512 of the SM's 65,536 */
#define FG_PRODUCER_REGS 40
#define FG_CONSUMER_REGS 232
#define FG_TURN_BAR 3 /* named barriers 3 and 4: consumer 0's turn, consumer 1's (1, 2: stores) */
#define FG_SK_MIN 4   /* the fewest blocks of k a piece of the last round may have */
#define FG_MAX_DEVICES 64 /* devices the launcher keeps a workspace for */
#define FG_PART_FLOATS (2 * FG_ACC * 128) /* a consumer's partial sums: 128 rows x 128, fp32 */

/* The last round (stream-K). With more pairs than clusters, the pairs of a last, partial round
 * (npairs % clusters of them) would leave the other clusters idle while they run: at 8192^3,
 * 1024 pairs over 66 clusters are 15.5 rounds, and the sixteenth costs a whole round. So one
 * launch takes the pairs up to `dp` whole, `clusters` at a time, and a second cuts the blocks
 * of k of the rest, laid end to end (pair by pair), into `segs` segments of `b` blocks, one a
 * cluster: each cluster's share of the last round is then b blocks, not a pair's kb. A pair cut
 * into pieces is finished by the cluster holding its last block (its "owner"), which adds in
 * the partial sums that the clusters holding its other pieces left in a workspace. No cut when
 * the pairs fill whole rounds or fewer than one (a small problem runs as it is), or when a
 * segment would be more than three quarters of a pair (at 4096^3, 256 pairs over 66 clusters:
 * 29 blocks of 32, and the pieces' partial sums cost more than the 3 blocks save); a segment
 * is at least FG_SK_MIN blocks. */
struct fg_split {
    int dp;   /* the pairs the first launch takes whole; past them, the segments */
    int b;    /* blocks of k a segment */
    int segs; /* segments: 0, or at most one a cluster */
    int tail; /* blocks of k in all the segments: (npairs - dp) kb */
};

static __host__ __device__ __forceinline__ fg_split split_of(int npairs, int clusters, int kb)
{
    fg_split sp = { npairs, kb, 0, 0 };
    const int rest = npairs % clusters;
    if (npairs <= clusters || rest == 0)
        return sp;
    int b = cdiv(rest * kb, clusters);
    b = b > FG_SK_MIN ? b : FG_SK_MIN;
    if (4 * b > 3 * kb) /* a segment saves less than a quarter of a pair: not worth its fix-up */
        return sp;
    sp.dp = npairs - rest;
    sp.b = b;
    sp.segs = cdiv(rest * kb, b);
    sp.tail = rest * kb;
    return sp;
}


#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

/* d (64 x 128, fp32) = (accumulate ? d : 0) + A (64 x 32, e4m3) B^T (B 128 x 32, e4m3), both
 * K-major: 8-bit wgmma has no transpose immediates, only scale-a and scale-b (1: as they are) */
#define ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
static __device__ __forceinline__ void wgmma_m64n128k32_e4m3(float (&d)[FG_ACC], uint64_t desc_a,
                                                             uint64_t desc_b, int accumulate)
{
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "setp.ne.b32 p, %66, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3\n\t{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
                 "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, "
                 "%61, %62, %63},\n\t"
                 "%64, %65, p, 1, 1;\n\t}"
                 : ACC8(0), ACC8(8), ACC8(16), ACC8(24), ACC8(32), ACC8(40), ACC8(48), ACC8(56)
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
#undef ACC8

/* The order of the tiles: pair p (the two tiles side by side in n of one cluster) is m-block mb
 * and pair of n-blocks np; m-blocks go in bands of FG_GROUP, and within a band m runs fastest,
 * so that the clusters at work at once share a few rows of A and a few columns of B. The CTA
 * of rank `rank` takes n-block 2 np + rank. */
struct fg_tile {
    int row0; /* its first row of D */
    int nb;   /* its n-block: columns 128 nb .. 128 nb + 127 (past n at an odd count of them) */
};

static __device__ __forceinline__ fg_tile tile_of(int p, int mblocks, int npairs_n,
                                                  uint32_t rank)
{
    const int band = p / (FG_GROUP * npairs_n), q = p % (FG_GROUP * npairs_n);
    const int mb0 = band * FG_GROUP, rows = min(FG_GROUP, mblocks - mb0);
    return { (mb0 + q % rows) * FG_BM, q / rows * FG_CLUSTER + (int)rank };
}

/* A piece of the last round: blocks k0 .. k1 - 1 of pair p (p < 0: none). A piece that does
 * not hold its pair's last block leaves its partial sums in slot `part` of the workspace
 * (part >= 0); the piece that does first adds those of slots lo .. hi - 1, then stores D. */
struct fg_item {
    int p, k0, k1;
    int part, lo, hi;
};

/* Piece j of cluster c's segment, the last first, so that a partial another cluster waits for
 * is made before the piece that waits. A segment is shorter than a pair: it holds the end of
 * one pair and the start of the next, or a middle, or an end: at most two pieces. */
static __device__ __forceinline__ fg_item item_of(int j, int c, int kb, const fg_split &sp)
{
    const fg_item none = { -1, 0, 0, -1, 0, 0 };
    if (c >= sp.segs || j > 1)
        return none;
    /* the segment's blocks g0 .. g1 - 1 of the tail; the tail pair of its last block, tp */
    const int g0 = c * sp.b, g1 = min(g0 + sp.b, sp.tail), tp = (g1 - 1) / kb;
    int a, e, t; /* this piece: blocks a .. e - 1 of the tail, of tail pair t */
    if (j == 0) {
        t = tp, a = max(g0, tp * kb), e = g1;
    } else {
        if (g0 >= tp * kb) /* one piece only */
            return none;
        t = tp - 1, a = g0, e = tp * kb;
    }
    if (e < (t + 1) * kb) /* not the pair's last block: a partial, into this segment's slot */
        return { sp.dp + t, a - t * kb, e - t * kb, c, 0, 0 };
    /* the owner: the segments before this one that hold a piece of pair t, from the one
     * holding its first block */
    return { sp.dp + t, a - t * kb, e - t * kb, -1, t * kb / sp.b, c };
}

#endif

/* SK false: pairs first, first + clusters, ... below np, whole. SK true: the segments of the
 * last round (split_of), their partial sums in ws, their flags in flags (epoch: this launch's
 * number). */
template <bool SK>
static __global__ void __launch_bounds__(FG_THREADS, 1)
gemm_fp8_blockscaled_kernel(const __grid_constant__ CUtensorMap map_a,
                            const __grid_constant__ CUtensorMap map_b,
                            const __grid_constant__ CUtensorMap map_d,
                            const float *__restrict__ sa, const float *__restrict__ sb,
                            uint16_t *__restrict__ d, int m, int k, int n, int vec, int np,
                            float *__restrict__ ws, uint32_t *__restrict__ flags,
                            uint32_t epoch)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    /* the swizzle repeats every 1 KB and wgmma computes it from the address bits */
    unsigned char *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
    uint64_t *full = reinterpret_cast<uint64_t *>(smem + FG_BAR_OFF);
    uint64_t *empty = full + FG_STAGES;

    /* the warpgroup's index read from lane 0, so that the compiler knows it is one value a warp
     * and keeps what derives from it (the descriptors, the stage's addresses) in uniform
     * registers, where they cost no instructions of the warp's own */
    const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
    const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
    const uint32_t rank = cluster_rank();
    const int first = (int)cluster_id(), stride = (int)cluster_count();
    const int kb = cdiv(k, FG_BK); /* blocks of k, each one stage */
    const int mblocks = cdiv(m, FG_BM), nblocks = cdiv(n, FG_BN);
    const int npairs_n = cdiv(nblocks, FG_CLUSTER), npairs = mblocks * npairs_n;

    if (threadIdx.x == 0) {
        for (int s = 0; s < FG_STAGES; s++) {
            mbar_init(&full[s], 1);                              /* the producer's arrival */
            mbar_init(&empty[s], FG_CLUSTER * FG_CONSUMER_WARPS); /* both CTAs' consumers */
        }
        /* the initialised barriers, visible to the TMA unit and to the peer CTA */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    /* no copy or arrival reaches a CTA before its barriers exist */
    cluster_sync();

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(FG_PRODUCER_REGS));
        if (threadIdx.x == 0) {
            /* block it of this CTA's sequence goes into stage it % FG_STAGES, once both CTAs'
             * consumers are done with block it - FG_STAGES there: the phase it / FG_STAGES - 1
             * of that stage's empty barrier */
            uint32_t it = 0;
            /* blocks k0 .. k1 - 1 of pair p */
            auto produce = [&](int p, int k0, int k1) {
                const fg_tile tile = tile_of(p, mblocks, npairs_n, rank);
                /* this CTA's half of A, for both CTAs, and its own n-block of B; a box wholly
                 * past the edge starts at the last row that exists instead (see the top) */
                const int ya = min(tile.row0 + (int)rank * 128, m - 1);
                const int xb = min(tile.nb * FG_BN, n - 1);
                for (int t = k0; t < k1; t++, it++) {
                    const int s = it % FG_STAGES;
                    if (it >= FG_STAGES)
                        mbar_wait(&empty[s], (it / FG_STAGES - 1) & 1);
                    /* boxes over an edge land whole, zero-filled, and count all their bytes;
                     * the peer's half of A may land before this arrival: the phase waits for
                     * both */
                    mbar_arrive_expect_tx(&full[s], FG_STAGE_BYTES);
                    unsigned char *st = smem + s * FG_STAGE_BYTES;
                    tma_load_2d_multicast(st + rank * FG_BOX_BYTES, &map_a, t * FG_BK, ya,
                                          &full[s], (1u << FG_CLUSTER) - 1);
                    tma_load_2d(st + FG_A_BYTES, &map_b, t * FG_BK, xb, &full[s]);
                }
            };
            if constexpr (!SK) {
                for (int p = first; p < np; p += stride)
                    produce(p, 0, kb);
            } else {
                const fg_split sp = split_of(npairs, stride, kb);
                for (int j = 0;; j++) {
                    const fg_item item = item_of(j, first, kb, sp);
                    if (item.p < 0)
                        break;
                    produce(item.p, item.k0, item.k1);
                }
            }
            /* the consumers' last arrivals (the peer's too) have landed before this CTA may
             * leave: the waits the next FG_STAGES blocks would have made */
            for (int i = 0; i < FG_STAGES; i++, it++)
                if (it >= FG_STAGES)
                    mbar_wait(&empty[it % FG_STAGES], (it / FG_STAGES - 1) & 1);
        }
        __syncwarp();
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(FG_CONSUMER_REGS));
        const int w = wg - 1; /* rows 128 w .. 128 w + 127 of the tile */
        /* this thread's rows of a 64-row half (the wgmma m64nN accumulator layout: chapter
         * 05): r and r + 8, where r = 16 warp + lane / 4; of the tile, 128 w + 64 h + those */
        const int r = 16 * warp + lane / 4;
        /* shared-memory addresses as numbers, made once: from a pointer the compiler would
         * make each anew inside the loop, reading the CTA's place in the cluster each time */
        uint32_t base;
        asm volatile("mov.b32 %0, %1;" : "=r"(base) : "r"(smem_u32(smem)));
        const uint32_t full_u32 = base + FG_BAR_OFF, empty_u32 = full_u32 + FG_STAGES * 8;
        unsigned char *out = smem + FG_OUT_OFF + w * FG_OUT_BYTES;
        /* the descriptors' low words in stage 0 (this warpgroup's box of A, and B); their high
         * word is the same for all. In 16-byte units, a stage is FG_STAGE_BYTES / 16 further
         * on, a 64-row half of A 512, 32 of k 2, all inside the 14-bit address field */
        const uint32_t da0 = (uint32_t)smem_desc(base + w * FG_BOX_BYTES, 16, 1024);
        const uint32_t db0 = (uint32_t)smem_desc(base + FG_A_BYTES, 16, 1024);
        const uint64_t desc_hi = smem_desc(0, 16, 1024) & ~0xffffffffull;

        /* The scales of the next block into next[]: sa of the thread's four rows (r, r + 8,
         * r + 64, r + 72 of its 128; rows past m give 0, and their products are never stored),
         * then sb of the tile's n-block (a tile past n reads the last n-block's: its columns
         * are never stored either). pa and pb point at the next block's, `valid` says which
         * rows exist; a block of k further is m floats further for sa, one for sb.
         * start_scales(p, k0) points them at block k0 of pair p's tile and loads its scales. */
        float next[5];
        const float *pa = sa, *pb = sb;
        unsigned valid = 0;
        auto load_scales = [&]() {
            next[0] = valid & 1 ? __ldg(pa) : 0.0f;
            next[1] = valid & 2 ? __ldg(pa + 8) : 0.0f;
            next[2] = valid & 4 ? __ldg(pa + 64) : 0.0f;
            next[3] = valid & 8 ? __ldg(pa + 72) : 0.0f;
            next[4] = __ldg(pb);
            pa += m;
            pb += 1;
        };

        float part[FG_ACC], total[2][FG_ACC];
#pragma unroll
        for (int i = 0; i < FG_ACC; i++)
            part[i] = 0.0f;
        fence_acc(part);

        auto start_scales = [&](int p, int k0) {
            const fg_tile tile = tile_of(p, mblocks, npairs_n, rank);
            const int row = tile.row0 + 128 * w + r;
            pa = sa + (size_t)k0 * m + row;
            valid = (row < m) | (row + 8 < m) << 1 | (row + 64 < m) << 2 | (row + 72 < m) << 3;
            pb = sb + (size_t)min(tile.nb, nblocks - 1) * kb + k0;
            load_scales();
        };
        fg_split sp = {};
        if constexpr (!SK) {
            if (first < np)
                start_scales(first, 0);
        } else {
            sp = split_of(npairs, stride, kb);
            const fg_item i0 = item_of(0, first, kb, sp);
            if (i0.p >= 0)
                start_scales(i0.p, i0.k0);
        }
        /* The two consumers take turns at the tensor cores (named barriers FG_TURN_BAR + w): each
         * issues its four products, hands the turn over, and promotes while the other's run.
         * Without the turns both issue at once, their products interleave, both finish
         * together and both promote together, with the tensor cores idle meanwhile. Consumer 0
         * takes the first turn. */
        if (w == 1)
            asm volatile("bar.arrive %0, 256;" ::"n"(FG_TURN_BAR) : "memory");
        uint32_t s = 0, phase = 0; /* the stage of this block, and its full barrier's phase */
        /* blocks k0 .. k1 - 1 of a tile into total[][]; at the last, next_scales() loads the
         * next tile's first scales */
        auto run_blocks = [&](int k0, int k1, auto &&next_scales) {
            for (int t = k0; t < k1; t++) {
                float sc[5];
#pragma unroll
                for (int i = 0; i < 5; i++)
                    sc[i] = next[i];
                mbar_wait_at(full_u32 + 8 * s, phase);
                __syncwarp(); /* the warp together again for the .aligned wgmma instructions */
                const uint32_t so = s * (FG_STAGE_BYTES / 16);
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    asm volatile("bar.sync %0, 256;" ::"r"(FG_TURN_BAR + w) : "memory");
                    wgmma_fence();
#pragma unroll
                    for (int kk = 0; kk < FG_BK / 32; kk++)
                        wgmma_m64n128k32_e4m3(part, desc_hi | (da0 + so + h * 512 + kk * 2),
                                              desc_hi | (db0 + so + kk * 2), kk > 0);
                    wgmma_commit();
                    asm volatile("bar.arrive %0, 256;" ::"r"(FG_TURN_BAR + 1 - w) : "memory");
                    /* the next block's scales (the next tile's first after this one's last),
                     * in flight while the products run, used a block from now */
                    if (h == 0) {
                        if (t + 1 < k1)
                            load_scales();
                        else
                            next_scales();
                    }
                    wgmma_wait<0>();
                    fence_acc(part);
                    /* both halves' bytes are read: either CTA's producer may refill the stage
                     * while we promote */
                    if (h == 1 && lane == 0) {
                        mbar_arrive_cluster_at(empty_u32 + 8 * s, 0);
                        mbar_arrive_cluster_at(empty_u32 + 8 * s, 1);
                    }
                    /* promotion: the block's partial sums, scaled, into fp32 on the CUDA cores */
                    const float s0 = sc[2 * h] * sc[4], s1 = sc[2 * h + 1] * sc[4];
#pragma unroll
                    for (int j = 0; j < FG_ACC / 4; j++) {
                        total[h][4 * j] = fmaf(part[4 * j], s0, total[h][4 * j]);
                        total[h][4 * j + 1] = fmaf(part[4 * j + 1], s0, total[h][4 * j + 1]);
                        total[h][4 * j + 2] = fmaf(part[4 * j + 2], s1, total[h][4 * j + 2]);
                        total[h][4 * j + 3] = fmaf(part[4 * j + 3], s1, total[h][4 * j + 3]);
                    }
                }
                if (++s == FG_STAGES) {
                    s = 0;
                    phase ^= 1;
                }
            }

        };
        /* total[][] to D, the tile's rows of this warpgroup */
        const int tid = threadIdx.x % 128;
        auto store_tile = [&](const fg_tile &tile) {
            /* D in bf16, a 64-row half at a time through this warpgroup's 16 KB, as two boxes
             * of 64 rows x 64 columns (128 bytes a row, 8 KB), each in the 128-byte swizzle
             * (16-byte chunk c of row R at chunk c ^ (R % 8)): the layout the tensor memory
             * accelerator stores from, in which neither the accumulator layout's writes nor
             * whole rows meet a bank twice. Column group j (8 columns) of a row is chunk j % 8
             * of box j / 8. */
#pragma unroll
            for (int h = 0; h < 2; h++) {
                /* the buffer's last store has read it (a store in flight reads it still) */
                if (tid == 0)
                    tma_store_wait_read();
                warpgroup_sync(1 + w);
                /* a thread's pairs of columns 8 j + 2 (lane % 4) and the one after, rows r and
                 * r + 8: the 8 rows of a store fall on 8 different chunks, 32 banks */
#pragma unroll
                for (int j = 0; j < FG_BN / 8; j++)
#pragma unroll
                    for (int hh = 0; hh < 2; hh++) {
                        const int row = r + 8 * hh;
                        const __nv_bfloat162 v = __floats2bfloat162_rn(
                            total[h][4 * j + 2 * hh], total[h][4 * j + 2 * hh + 1]);
                        *reinterpret_cast<__nv_bfloat162 *>(
                            out + (j / 8) * 8192 + row * 128 + (((j % 8) ^ (row % 8)) * 16) +
                            (lane % 4) * 4) = v;
                    }
                const int row0 = tile.row0 + 128 * w + 64 * h, col0 = tile.nb * FG_BN;
                if (vec) {
                    /* the writes, seen by the tensor memory accelerator's reads; then one
                     * thread stores the two boxes, which leave out what lies past m or n */
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                    warpgroup_sync(1 + w);
                    if (tid == 0 && row0 < m) {
#pragma unroll
                        for (int b = 0; b < 2; b++)
                            if (col0 + 64 * b < n)
                                tma_store_2d(&map_d, out + b * 8192, col0 + 64 * b, row0);
                        tma_store_commit();
                    }
                    continue;
                }
                warpgroup_sync(1 + w); /* the half is written */
                /* rows of D not 16-byte aligned (n not a multiple of 8, or D itself): 64 rows x
                 * 16 chunks, 8 a thread, a warp two whole rows, stored element by element */
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    const int row = 8 * i + tid / 16, c = tid % 16;
                    const uint4 v = *reinterpret_cast<const uint4 *>(
                        out + (c / 8) * 8192 + row * 128 + (((c % 8) ^ (row % 8)) * 16));
                    const int gr = row0 + row, gc = col0 + 8 * c;
                    if (gr >= m || gc >= n)
                        continue;
                    uint16_t *o = d + (size_t)gr * n + gc;
#pragma unroll
                    for (int e = 0; e < 8; e++) {
                        const uint32_t word = e < 2 ? v.x : e < 4 ? v.y : e < 6 ? v.z : v.w;
                        if (gc + e < n)
                            o[e] = (uint16_t)(word >> (16 * (e % 2)));
                    }
                }
            }
        };
        auto zero_totals = [&]() {
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int i = 0; i < FG_ACC; i++)
                    total[h][i] = 0.0f;
        };
        if constexpr (!SK) {
            for (int p = first; p < np; p += stride) {
                const fg_tile tile = tile_of(p, mblocks, npairs_n, rank);
                zero_totals();
                run_blocks(0, kb, [&]() {
                    if (p + stride < np)
                        start_scales(p + stride, 0);
                });
                store_tile(tile);
            }
        } else {
            /* slot sl of the workspace and its flag: a partial of each consumer of each CTA */
            auto slot_of = [&](int sl) {
                return ws + ((size_t)sl * FG_CLUSTER * 2 + rank * 2 + w) * FG_PART_FLOATS;
            };
            auto flag_of = [&](int sl) {
                return flags + (size_t)sl * FG_CLUSTER * 2 + rank * 2 + w;
            };
            for (int j = 0;; j++) {
                const fg_item item = item_of(j, first, kb, sp);
                if (item.p < 0)
                    break;
                const fg_tile tile = tile_of(item.p, mblocks, npairs_n, rank);
                zero_totals();
                run_blocks(item.k0, item.k1, [&]() {
                    const fg_item after = item_of(j + 1, first, kb, sp);
                    if (after.p >= 0)
                        start_scales(after.p, after.k0);
                });
                /* A piece that is not its pair's last: its partial sums go to its slot, this
                 * warpgroup's 64 KB of it, 16 bytes a thread at a time (the owner reads them
                 * back in the same order), then its flag says they are there: the
                 * warpgroup's writes, then one thread's release. */
                if (item.part >= 0) {
                    float4 *dst = reinterpret_cast<float4 *>(slot_of(item.part)) + tid;
#pragma unroll
                    for (int h = 0; h < 2; h++)
#pragma unroll
                        for (int i = 0; i < FG_ACC / 4; i++)
                            __stcg(dst + (h * FG_ACC / 4 + i) * 128,
                                   make_float4(total[h][4 * i], total[h][4 * i + 1],
                                               total[h][4 * i + 2], total[h][4 * i + 3]));
                    warpgroup_sync(1 + w);
                    if (tid == 0)
                        asm volatile("fence.acq_rel.gpu;\n\t"
                                     "st.relaxed.gpu.global.u32 [%0], %1;"
                                     ::"l"(flag_of(item.part)), "r"(epoch) : "memory");
                    continue;
                }
                /* The owner: the partial sums of the pair's other pieces, each once its flag
                 * holds this launch's number (one thread waits, with acquire, and the
                 * warpgroup's barrier passes that on), added in the order of their slots. */
                for (int sl = item.lo; sl < item.hi; sl++) {
                    if (tid == 0) {
                        uint32_t seen;
                        do
                            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                                         : "=r"(seen) : "l"(flag_of(sl)) : "memory");
                        while (seen != epoch);
                    }
                    warpgroup_sync(1 + w);
                    const float4 *src = reinterpret_cast<const float4 *>(slot_of(sl)) + tid;
#pragma unroll
                    for (int h = 0; h < 2; h++)
#pragma unroll
                        for (int i = 0; i < FG_ACC / 4; i++) {
                            const float4 v = __ldcg(src + (h * FG_ACC / 4 + i) * 128);
                            total[h][4 * i] += v.x;
                            total[h][4 * i + 1] += v.y;
                            total[h][4 * i + 2] += v.z;
                            total[h][4 * i + 3] += v.w;
                        }
                }
                store_tile(tile);
            }
        }
        /* the last stores have read this CTA's shared memory before it may go */
        if (threadIdx.x % 128 == 0)
            tma_store_wait_read();
        if (w == 0) /* consumer 1's last hand-over, which no turn took */
            asm volatile("bar.sync %0, 256;" ::"n"(FG_TURN_BAR) : "memory");
    }
    /* neither CTA leaves while the other may still write into its shared memory */
    cluster_sync();
#else
    __trap(); /* wgmma, setmaxnreg and multicast exist in sm_90a code only */
#endif
}

/* a launch of clusters of FG_CLUSTER CTAs, `clusters` of them, on the default stream */
static cudaLaunchConfig_t cluster_config(int clusters, cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(FG_CLUSTER * clusters);
    cfg.blockDim = dim3(FG_THREADS);
    cfg.dynamicSmemBytes = FG_SMEM;
    cfg.stream = 0;
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = FG_CLUSTER;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

void gemm_fp8_blockscaled(const uint8_t *d_a, const float *d_sa, const uint8_t *d_b,
                          const float *d_sb, uint16_t *d_d, int m, int k, int n)
{
    static int ready_dev = -1, max_clusters;
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev < 0 || dev >= FG_MAX_DEVICES) {
        fprintf(stderr, "gemm_fp8_blockscaled: device %d: this launcher keeps a workspace for "
                        "devices 0 to %d only\n", dev, FG_MAX_DEVICES - 1);
        exit(EXIT_FAILURE);
    }
    if (dev != ready_dev) {
        int major, minor;
        CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
        if (major != 9 || minor != 0) {
            fprintf(stderr, "gemm_fp8_blockscaled: needs sm_90 (wgmma is sm_90a code, which runs "
                            "on compute capability 9.0 only); this device is sm_%d%d\n", major,
                    minor);
            exit(EXIT_FAILURE);
        }
        CUDA_CHECK(cudaFuncSetAttribute(gemm_fp8_blockscaled_kernel<false>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, FG_SMEM));
        CUDA_CHECK(cudaFuncSetAttribute(gemm_fp8_blockscaled_kernel<true>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, FG_SMEM));
        /* persistent: as many clusters as the GPU holds at once (a cluster's two SMs must be
         * in one GPC, so this can be fewer than half the SMs) */
        cudaLaunchAttribute attr;
        cudaLaunchConfig_t cfg = cluster_config(1, &attr);
        CUDA_CHECK(cudaOccupancyMaxActiveClusters(&max_clusters,
                                                  (void *)gemm_fp8_blockscaled_kernel<false>,
                                                  &cfg));
        if (max_clusters < 1) {
            fprintf(stderr, "gemm_fp8_blockscaled: this device fits no cluster of %d CTAs of %d "
                            "bytes of shared memory\n", FG_CLUSTER, FG_SMEM);
            exit(EXIT_FAILURE);
        }
        ready_dev = dev;
    }
    if (k % 16 != 0 || (reinterpret_cast<uintptr_t>(d_a) & 15) ||
        (reinterpret_cast<uintptr_t>(d_b) & 15)) {
        fprintf(stderr, "gemm_fp8_blockscaled: k = %d must be a multiple of 16 and A and B "
                        "16-byte aligned (quant.h)\n", k);
        exit(EXIT_FAILURE);
    }
    /* A and B, e4m3 rows of k, in boxes of 128 rows x 128 bytes in the 128-byte swizzle (the
     * descriptors' layout), read through 256-byte L2 promotion */
    CUtensorMap map_a = make_map_2d("gemm_fp8_blockscaled", CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, d_a,
                                    m, k, k, 128, FG_BK, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
    CUtensorMap map_b = make_map_2d("gemm_fp8_blockscaled", CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, d_b,
                                    n, k, k, 128, FG_BK, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
    /* D's rows go out by the tensor memory accelerator when each starts on 16 bytes; otherwise
     * element by element (the map is then not used) */
    const int vec = n % 8 == 0 && (reinterpret_cast<uintptr_t>(d_d) & 15) == 0;
    CUtensorMap map_d = {};
    if (vec) /* boxes of 64 x 64 in the 128-byte swizzle, as a consumer lays a half out */
        map_d = make_map_2d("gemm_fp8_blockscaled", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d_d, m,
                            n, n, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_NONE);
    const int pairs = cdiv(m, FG_BM) * cdiv(cdiv(n, FG_BN), FG_CLUSTER);
    const int clusters = pairs < max_clusters ? pairs : max_clusters;
    const fg_split sp = split_of(pairs, clusters, cdiv(k, FG_BK));
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = cluster_config(clusters, &attr);
    /* the whole pairs (all of them, without a split) */
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, gemm_fp8_blockscaled_kernel<false>, map_a, map_b, map_d,
                                  d_sa, d_sb, d_d, m, k, n, vec, sp.dp, (float *)nullptr,
                                  (uint32_t *)nullptr, 0u));
    CUDA_CHECK(cudaGetLastError());
    if (sp.segs == 0)
        return;
    /* The last round, in a launch of its own, so that the whole pairs' loop is compiled as if
     * there were no pieces (with them in it, the compiler's choices in that loop cost more
     * than the last round saves). Its workspace: a slot of partial sums and its flags a
     * segment, kept for the device's later calls and grown when a call needs more. A flag
     * says "this launch's partial is here" by holding the launch's number (epoch), so no
     * launch has to clear them. */
    static float *ws_of[FG_MAX_DEVICES];
    static uint32_t *flags_of[FG_MAX_DEVICES];
    static int slots_of[FG_MAX_DEVICES];
    static uint32_t epoch_of[FG_MAX_DEVICES];
    if (sp.segs > slots_of[dev]) {
        if (ws_of[dev]) {
            CUDA_CHECK(cudaFree(ws_of[dev]));
            CUDA_CHECK(cudaFree(flags_of[dev]));
        }
        const size_t parts = (size_t)sp.segs * FG_CLUSTER * 2; /* a consumer of a CTA each */
        CUDA_CHECK(cudaMalloc(&ws_of[dev], parts * FG_PART_FLOATS * sizeof(float)));
        CUDA_CHECK(cudaMalloc(&flags_of[dev], parts * sizeof(uint32_t)));
        CUDA_CHECK(cudaMemset(flags_of[dev], 0, parts * sizeof(uint32_t)));
        slots_of[dev] = sp.segs;
        epoch_of[dev] = 0;
    }
    if (++epoch_of[dev] == 0) /* after 2^32 launches: a flag of 0 would read as this one's */
        epoch_of[dev] = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, gemm_fp8_blockscaled_kernel<true>, map_a, map_b, map_d,
                                  d_sa, d_sb, d_d, m, k, n, vec, 0, ws_of[dev], flags_of[dev],
                                  epoch_of[dev]));
    CUDA_CHECK(cudaGetLastError());
}
