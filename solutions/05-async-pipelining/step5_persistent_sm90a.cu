/* step5_persistent_sm90a.cu: step 5 of 5, the solution; Hopper only (sm_90a code, which runs
 * on compute capability 9.0 and nothing else). A persistent, clustered wgmma GEMM: the tile
 * shape chosen by the shape of the problem.
 * Change from step 4: the math is the same (wgmma from 128-byte swizzled TMA boxes, a producer
 * warpgroup and two consumer warpgroups, setmaxnreg); what changes is everything around it.
 *
 *   Persistent CTAs. Step 4 launches a block a tile: each block fills its ring from empty,
 *     multiplies, stores C and leaves, and the SM waits for the next block to start and fill
 *     its ring again. Here the grid is as many CTAs as the GPU holds at once (one an SM), and
 *     each walks a list of tiles. The ring of stages runs on across tiles: while the consumers
 *     store one tile's C, the producer is already copying the next tile's first blocks of k.
 *   Clusters of two CTAs and TMA multicast. The two CTAs of a cluster take two neighbouring
 *     tiles that read the same panel of one operand: one above the other in m (the same
 *     columns of B), or side by side in n (the same rows of A). Each copies half of the shared
 *     operand's boxes, and the TMA unit writes them into both CTAs' shared memory: a CTA
 *     fetches half of that operand from L2, and the other half arrives from its peer's copy.
 *     Share the bigger of the two: a 128 x 256 tile reads 16 KB of A and 32 KB of B a stage,
 *     so its clusters share B. A stage may be refilled only when both CTAs' consumers are done
 *     with it (the refill lands in both), so the empty barrier counts the consumer warps of
 *     both, and each consumer warp arrives on both CTAs' barriers.
 *   A tile order that keeps L2 warm. Units (a cluster's tiles) go in bands of `group` rows;
 *     within a band the row runs fastest, so the clusters at work at once share a few panels
 *     of A and of B, which L2 then serves many times for one read of HBM.
 *   A tile for the shape. 128 x 256 (two 64 x 256 halves, step 4's) where there are tiles
 *     enough to fill the SMs; 128 x 64, one CTA a cluster, where there are not (1024^3 has 32
 *     tiles of 128 x 256 for 132 SMs, but 128 of 128 x 64). The kernel is a template over the
 *     tile (BM x BN), the stages, the cluster size, the operand shared and the epilogue;
 *     gemm_persistent picks one (pick_config below, from a model of rounds of tiles and the
 *     rates a sweep of the configurations measured).
 *
 * The stage: A's BM x 64, then B's 64 x BN in boxes of 64 x 64, 8 KB apart; every box 128-byte
 * swizzled and on 1 KB. Sharing A, rank r copies rows r BM / 2 .. of A's box; sharing B, the
 * r-th half of B's boxes. A CTA's full barrier expects the whole stage: what it copies itself,
 * what its peer multicasts in, and the one arrival of its own producer.
 *
 * Edges, said plainly: boxes that hang over m, n or k land zero-filled and count all their
 * bytes. A box that would start wholly past m or n (the peer's half of rows past m, the second
 * tile of a pair at an odd count of blocks) is copied from the last row, or the last 64
 * columns, that exist instead: its products fall on rows or columns of C that are never
 * stored. As in step 4, A and B whose rows do not start on 16 bytes are multiplied from padded
 * copies (pad_rows.h), and C is stored from the registers, in pairs of floats where n is even.
 * Expect: about cuBLAS BF16 at 4096^3 and 8192^3 (the lesson's measurements), and half as
 * much again as step 4 at 1024^3, where step 4 leaves three quarters of the SMs idle. */
#include "persistent_run.cuh" /* given: configurations, tile order, stores of C, the launcher */

template <int BM, int BN, int STAGES, int CLUSTER, int SHARE_B, int EPI>
static __global__ void __launch_bounds__(PS_THREADS, 1)
gemm_persistent_kernel(const __grid_constant__ CUtensorMap map_a,
                       const __grid_constant__ CUtensorMap map_b, float *__restrict__ c, int m,
                       int k, int n, bool pairs, bool rows16, int group)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    typedef ps_config<BM, BN, STAGES, CLUSTER, SHARE_B, EPI> cfg;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    /* the swizzle repeats every 1 KB and wgmma computes it from the address bits */
    unsigned char *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
    uint64_t *full = reinterpret_cast<uint64_t *>(smem + cfg::BAR_OFF);
    uint64_t *empty = full + STAGES;

    const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
    const int rank = CLUSTER > 1 ? (int)cluster_rank() : 0;
    const int first = CLUSTER > 1 ? (int)cluster_id() : (int)blockIdx.x;
    const int stride = CLUSTER > 1 ? (int)cluster_count() : (int)gridDim.x;
    const int kb = cdiv(k, PS_BK); /* blocks of k, one a stage */
    const int mu_count = cdiv(cdiv(m, BM), cfg::CM), nu_count = cdiv(cdiv(n, BN), cfg::CN);
    const int units = mu_count * nu_count;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&full[s], 1);                               /* the producer's arrival */
            mbar_init(&empty[s], CLUSTER * PS_CONSUMER_WARPS);    /* every CTA's consumers */
        }
        /* the initialised barriers, visible to the TMA unit and to the peer CTA */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    /* no copy or arrival reaches a CTA before its barriers exist */
    cluster_sync();

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PS_PRODUCER_REGS));
        if (threadIdx.x == 0) {
            /* block `it` of this CTA's sequence goes into stage it % STAGES once every CTA's
             * consumers are done with block it - STAGES there */
            uint32_t it = 0;
            for (int u = first; u < units; u += stride) {
                const ps_tile tile = ps_tile_of(u, mu_count, nu_count, group, BM, BN,
                                                cfg::CM, cfg::CN, rank);
                /* a box wholly past the edge starts at the last row of A, or at the last
                 * 64-column box of B, that exists instead */
                const int ya = min(tile.row0 + (cfg::CN > 1 ? rank * cfg::A_BOX_ROWS : 0),
                                   m - 1);
                const int xb_last = (n - 1) / 64 * 64;
                const int j0 = cfg::CM > 1 ? rank * cfg::B_OWN : 0; /* this CTA's boxes of B */
                for (int t = 0; t < kb; t++, it++) {
                    const int s = it % STAGES;
                    if (it >= STAGES)
                        mbar_wait(&empty[s], (it / STAGES - 1) & 1);
                    /* the peer's part may land before this arrival: the phase completes when
                     * the arrival has come and every byte expected has landed */
                    mbar_arrive_expect_tx(&full[s], cfg::STAGE_SIZE);
                    unsigned char *st = smem + s * cfg::STAGE_SIZE;
                    const uint16_t all = (uint16_t)((1u << CLUSTER) - 1);
                    if (cfg::CN > 1)
                        tma_load_2d_multicast(st + rank * cfg::A_BOX_BYTES, &map_a, t * PS_BK,
                                              ya, &full[s], all);
                    else
                        tma_load_2d(st, &map_a, t * PS_BK, ya, &full[s]);
#pragma unroll
                    for (int j = j0; j < j0 + cfg::B_OWN; j++) {
                        unsigned char *dst = st + cfg::A_BYTES + j * PS_B_BOX_BYTES;
                        const int xb = min(tile.col0 + 64 * j, xb_last);
                        if (cfg::CM > 1)
                            tma_load_2d_multicast(dst, &map_b, xb, t * PS_BK, &full[s], all);
                        else
                            tma_load_2d(dst, &map_b, xb, t * PS_BK, &full[s]);
                    }
                }
            }
            /* every CTA's last arrivals have landed here before this CTA may leave: the waits
             * the next STAGES blocks would have made */
            for (int i = 0; i < STAGES; i++, it++)
                if (it >= STAGES)
                    mbar_wait(&empty[it % STAGES], (it / STAGES - 1) & 1);
        }
        __syncwarp();
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(PS_CONSUMER_REGS));
        const int w = wg - 1; /* rows w WM .. w WM + WM - 1 of the tile */
        const uint32_t base = smem_u32(smem);
        float acc[cfg::MI][cfg::ACC];

        /* the stage's bytes are read: every CTA's producer may refill it */
        auto release = [&](int s) {
            if (lane == 0) {
                if (CLUSTER > 1) {
#pragma unroll
                    for (int r = 0; r < CLUSTER; r++)
                        mbar_arrive_cluster(&empty[s], r);
                } else {
                    mbar_arrive(&empty[s]);
                }
            }
        };

        uint32_t it = 0;
        for (int u = first; u < units; u += stride) {
            const ps_tile tile = ps_tile_of(u, mu_count, nu_count, group, BM, BN, cfg::CM,
                                            cfg::CN, rank);
#pragma unroll
            for (int mi = 0; mi < cfg::MI; mi++) {
#pragma unroll
                for (int i = 0; i < cfg::ACC; i++)
                    acc[mi][i] = 0.0f;
                fence_acc(acc[mi]);
            }
            for (int t = 0; t < kb; t++, it++) {
                const int s = it % STAGES;
                mbar_wait(&full[s], (it / STAGES) & 1); /* all of block t has landed */
                __syncwarp(); /* the warp together again for the .aligned wgmma instructions */
                const uint32_t a = base + s * cfg::STAGE_SIZE + w * cfg::WM * 128;
                const uint32_t b = base + s * cfg::STAGE_SIZE + cfg::A_BYTES;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < PS_BK / 16; kk++)
#pragma unroll
                    for (int mi = 0; mi < cfg::MI; mi++)
                        /* the descriptors of step 4: A K-major, the next 16 of k 32 bytes
                         * along each swizzled row, 8-row blocks 1 KB apart; B MN-major, the
                         * next 16 rows of k 2 KB further, 8-row blocks 1 KB apart, 64-column
                         * boxes 8 KB apart */
                        wgmma_bf16(acc[mi], smem_desc(a + mi * 64 * 128 + kk * 32, 16, 1024),
                                   smem_desc(b + kk * 16 * 128, PS_B_BOX_BYTES, 1024));
                wgmma_commit();
                /* block t's products may run on; block t - 1's are done: its stage is free */
                wgmma_wait<1>();
                if (t > 0)
                    release((it - 1) % STAGES);
            }
            wgmma_wait<0>();
#pragma unroll
            for (int mi = 0; mi < cfg::MI; mi++)
                fence_acc(acc[mi]);
            release((it - 1) % STAGES);

            /* C from the registers; meanwhile the producer fills the ring with the next
             * tile's first blocks of k */
#pragma unroll
            for (int mi = 0; mi < cfg::MI; mi++) {
                const int row0 = tile.row0 + w * cfg::WM + mi * 64;
                if (EPI && rows16)
                    store_c_rows(c, acc[mi],
                                 reinterpret_cast<float *>(smem + cfg::EPI_OFF) + w * 64 * 32, m,
                                 n, row0, tile.col0, 1 + w);
                else
                    store_c(c, acc[mi], m, n, row0 + warp * 16 + lane / 4,
                            tile.col0 + 2 * (lane % 4), pairs);
            }
        }
    }
    /* no CTA leaves while another may still write into its shared memory */
    cluster_sync();
#else
    __trap(); /* wgmma, setmaxnreg and multicast exist in sm_90a code only */
#endif
}
