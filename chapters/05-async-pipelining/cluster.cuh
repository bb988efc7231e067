/* cluster.cuh: the thread-block cluster of sm_90a, for the persistent kernels that share an
 * operand between two CTAs by TMA multicast (chapter 05's step 5 through persistent.cuh, and
 * chapter 11's step 3): its CTAs, its barrier, an arrival on the peer's mbarrier, a copy
 * multicast into every CTA of it, and the named barrier of one warpgroup.
 *
 *   cluster_rank, cluster_id, cluster_count     %cluster_ctarank, %clusterid.x, %nclusterid.x
 *   cluster_sync()                              every thread of every CTA of the cluster meets
 *   mbar_arrive_cluster(bar, rank)              one arrival on CTA `rank`'s copy of bar
 *   mbar_arrive_cluster_at(bar, rank)           the same, bar given by its shared address
 *   tma_load_2d_multicast(dst, map, x, y, bar, mask)   one box into every CTA of mask
 *   warpgroup_sync(id)                          the 128 threads of one warpgroup meet
 *
 * sm_90a only (__CUDA_ARCH_FEAT_SM90_ALL): other targets see none of it, as the kernels that
 * include it compile to a trap there. */
#ifndef CLUSTER_CUH
#define CLUSTER_CUH

#include "tma.cuh" /* smem_u32 */

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

static __device__ __forceinline__ uint32_t cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

static __device__ __forceinline__ uint32_t cluster_id()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}

static __device__ __forceinline__ uint32_t cluster_count()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
    return r;
}

/* every thread of every CTA of the cluster: what each wrote before it (the barriers'
 * initialisation included) is seen by all after it */
static __device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/* one arrival on the mbarrier at bar's offset in the shared memory of the cluster's CTA `rank`
 * (this CTA's own, or a peer's). No release of this thread's writes to the cluster comes
 * with it (that would cost a GPU-wide memory barrier an arrival): what it says, that a stage's
 * bytes are read, is already true once the products that read them are waited for. */
static __device__ __forceinline__ void mbar_arrive_cluster_at(uint32_t bar, uint32_t rank)
{
    asm volatile("{\n\t.reg .b32 remote;\n\t"
                 "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n\t}"
                 ::"r"(bar), "r"(rank) : "memory");
}

static __device__ __forceinline__ void mbar_arrive_cluster(uint64_t *bar, uint32_t rank)
{
    mbar_arrive_cluster_at(smem_u32(bar), rank);
}

/* tma_load_2d into every CTA of `mask` (bit r: the cluster's CTA r), at dst's offset in each,
 * its bytes counted on the mbarrier at bar's offset in each */
static __device__ __forceinline__ void tma_load_2d_multicast(void *dst, const CUtensorMap *map,
                                                             int x, int y, uint64_t *bar,
                                                             uint16_t mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y),
                   "r"(smem_u32(bar)), "h"(mask)
                 : "memory");
}

/* the 128 threads of one warpgroup meet (named barrier `id`, 1 to 15; 0 is __syncthreads') */
static __device__ __forceinline__ void warpgroup_sync(int id)
{
    asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
}

#endif /* __CUDA_ARCH_FEAT_SM90_ALL */
#endif /* CLUSTER_CUH */
