/* wgmma.cuh: what the warpgroup matrix products share (chapter 05's step 4, and the later
 * chapters' Hopper steps that include it): the shared-memory matrix descriptor and the fences
 * and waits around an asynchronous wgmma.
 *
 *   smem_desc(addr, lbo, sbo)   a descriptor of a 128-byte swizzled tile in shared memory
 *   fence_acc(d)                the accumulators pinned in place around the asynchronous products
 *   wgmma_fence, wgmma_commit, wgmma_wait<N>   wgmma.fence, commit_group, wait_group N
 *
 * Given: the instructions, wrapped; the products themselves (wgmma.mma_async of one shape and
 * type) are written where they are used. sm_90a only (__CUDA_ARCH_FEAT_SM90_ALL): other targets
 * see none of it, as the kernels that include it compile to a trap there. */
#ifndef WGMMA_CUH
#define WGMMA_CUH

#include <stdint.h>

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

/* A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): the start address,
 * the leading and stride byte offsets (all three in units of 16 bytes, 14 bits each) and, in
 * bits 62-63, the swizzle mode, 1 = 128-byte swizzle. */
static __device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)(lbo >> 4) << 16 |
           (uint64_t)(sbo >> 4) << 32 | 1ull << 62;
}

/* Registers hold the accumulators while wgmma writes them behind the compiler's back: this
 * empty statement "reads and writes" each one, so that no ordinary instruction touching them
 * moves across the wgmma fences and waits around it. */
template <int N>
static __device__ __forceinline__ void fence_acc(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

static __device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

static __device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

/* wait until at most N of this warpgroup's committed groups are still running */
template <int N>
static __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

#endif
#endif
