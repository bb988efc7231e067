/* persistent.cuh: what step 5 of chapter 05 (step5_persistent_sm90a.cu) adds to tma.cuh and
 * wgmma.cuh (given): the thread-block cluster (cluster.cuh: its CTAs, its barrier, an arrival
 * on the peer's mbarrier, a TMA copy multicast into every CTA of it) and the wgmma products of
 * one warpgroup at the three tile widths the step may choose.
 *
 *   cluster_rank, cluster_id, cluster_count     %cluster_ctarank, %clusterid.x, %nclusterid.x
 *   cluster_sync()                              every thread of every CTA of the cluster meets
 *   mbar_arrive_cluster(bar, rank)              one arrival on CTA `rank`'s copy of bar
 *   tma_load_2d_multicast(dst, map, x, y, bar, mask)   one box into every CTA of mask
 *   warpgroup_sync(id)                          the 128 threads of one warpgroup meet
 *   wgmma_bf16(d, desc_a, desc_b)               d (64 x N) += A (64 x 16) B (16 x N), N = 64,
 *                                               128 or 256 (by the size of d: N / 2 floats)
 *
 * sm_90a only (__CUDA_ARCH_FEAT_SM90_ALL): other targets see none of it, as the kernels that
 * include it compile to a trap there. */
#ifndef PERSISTENT_CUH
#define PERSISTENT_CUH

#include "cluster.cuh" /* tma.cuh, and the cluster's instructions */
#include "wgmma.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

/* The products, as in step 4: d (64 x N, fp32) += A (64 x 16, bf16, K-major) B (16 x N, bf16,
 * MN-major); the immediates after the predicate are scale-a, scale-b (1: as they are),
 * trans-a = 0, trans-b = 1. Thread `lane` of warp w of the warpgroup holds, for each 8 columns
 * j, rows 16 w + lane / 4 (d[4 j], d[4 j + 1]) and 8 below (d[4 j + 2], d[4 j + 3]), at columns
 * 8 j + 2 (lane % 4) and the one after. */
#define ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
/* N = 64 */
static __device__ __forceinline__ void wgmma_bf16(float (&d)[32], uint64_t desc_a,
                                                  uint64_t desc_b)
{
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "setp.ne.b32 p, %34, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16\n\t{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, "
                 "%17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31},\n\t"
                 "%32, %33, p, 1, 1, 0, 1;\n\t}"
                 : ACC8(0), ACC8(8), ACC8(16), ACC8(24)
                 : "l"(desc_a), "l"(desc_b), "r"(1));
}

/* N = 128 */
static __device__ __forceinline__ void wgmma_bf16(float (&d)[64], uint64_t desc_a,
                                                  uint64_t desc_b)
{
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "setp.ne.b32 p, %66, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16\n\t{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, "
                 "%17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, "
                 "%47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
                 "%62, %63},\n\t"
                 "%64, %65, p, 1, 1, 0, 1;\n\t}"
                 : ACC8(0), ACC8(8), ACC8(16), ACC8(24), ACC8(32), ACC8(40), ACC8(48), ACC8(56)
                 : "l"(desc_a), "l"(desc_b), "r"(1));
}

/* N = 256 */
static __device__ __forceinline__ void wgmma_bf16(float (&d)[128], uint64_t desc_a,
                                                  uint64_t desc_b)
{
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "setp.ne.b32 p, %130, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16\n\t{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, "
                 "%17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, "
                 "%47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
                 "%62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, "
                 "%77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "
                 "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, "
                 "%106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, "
                 "%118, %119, %120, %121, %122, %123, %124, %125, %126, %127},\n\t"
                 "%128, %129, p, 1, 1, 0, 1;\n\t}"
                 : ACC8(0), ACC8(8), ACC8(16), ACC8(24), ACC8(32), ACC8(40), ACC8(48),
                   ACC8(56), ACC8(64), ACC8(72), ACC8(80), ACC8(88), ACC8(96), ACC8(104),
                   ACC8(112), ACC8(120)
                 : "l"(desc_a), "l"(desc_b), "r"(1));
}
#undef ACC8

#endif
#endif
