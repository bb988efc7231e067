/* tma.cuh: what steps 3 and 4 of chapter 05 (step3_tma_sm90.cu, step4_wgmma_sm90a.cu) share
 * to move tiles with the tensor memory accelerator: the mbarrier and bulk-tensor-copy
 * instructions on the device, and the tensor map that describes a matrix to the TMA unit on
 * the host.
 *
 * Device side (sm_90 and later only; other targets see none of it):
 *   mbar_init, mbar_arrive_expect_tx, mbar_arrive, mbar_wait   an mbarrier in shared memory
 *   mbar_wait_at                                  the same wait, on the barrier's address
 *   tma_load_2d                                   one box in, its bytes counted on a barrier
 *   tma_store_2d, tma_store_commit, tma_store_wait_read   boxes out, and when their source
 *                                                         may be written again
 * Host side:
 *   make_map(who, base, rows, cols, pitch, box_rows, box_cols, swizzle)  a row-major bf16
 *                                                                         matrix
 *   make_map_2d(who, type, elem_bytes, base, rows, cols, pitch, box_rows, box_cols, swizzle,
 *               promotion)                                   the same, of any element type
 *
 * Given: the instructions, wrapped; what the steps are about is how the producer and the
 * consumers use them. Hopper only: the CPU backend leaves the files that include this out. */
#ifndef TMA_CUH
#define TMA_CUH

#include <cuda.h>          /* CUtensorMap and its enums; no driver call is linked (see below) */
#include <cudaTypedefs.h>  /* PFN_cuTensorMapEncodeTiled_v12000 */
#include <cuda_bf16.h>

#include "cuda_check.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

static __device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

static __device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(arrivals));
}

/* one arrival, and `bytes` more to come from the TMA unit before this phase completes */
static __device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
                 "r"(bytes) : "memory");
}

static __device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

/* spin until the phase of the given parity has completed, the barrier given by its shared
 * address: a kernel that makes its barriers' addresses once keeps them in registers (from a
 * pointer, the compiler may make the address anew at every wait) */
static __device__ __forceinline__ void mbar_wait_at(uint32_t bar, uint32_t parity)
{
    uint32_t done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}

static __device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    mbar_wait_at(smem_u32(bar), parity);
}

/* one box of the tensor map at element coordinates (x: the contiguous dimension, y: rows)
 * into shared memory, its bytes counted on bar; the unit zero-fills what lies outside */
static __device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, int x,
                                                   int y, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y),
                   "r"(smem_u32(bar))
                 : "memory");
}

/* one box from shared memory (laid out as the map's swizzle says) to the tensor map at element
 * coordinates (x, y); what lies outside the matrix is not written. The store joins the issuing
 * thread's open bulk group; the shared-memory writes it reads must first be made visible to
 * the TMA unit (fence.proxy.async.shared::cta). */
static __device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, const void *src,
                                                    int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(src)), "r"(x), "r"(y)
                 : "memory");
}

/* close the issuing thread's bulk group: the stores issued since the last commit */
static __device__ __forceinline__ void tma_store_commit()
{
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

/* wait until every committed store of this thread has read its source: the shared memory may
 * then be written again (the writes to global memory may still be on their way) */
static __device__ __forceinline__ void tma_store_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

#endif

/* cuTensorMapEncodeTiled is a driver API function. The runtime hands out the driver's entry
 * points (cudaGetDriverEntryPointByVersion, CUDA 12.5 and later), so nothing links -lcuda;
 * 12000 asks for the function as CUDA 12.0 defined it, which is the signature of
 * PFN_cuTensorMapEncodeTiled_v12000. */
static inline PFN_cuTensorMapEncodeTiled_v12000 encode_tiled(const char *who)
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn;
    if (!fn) {
        void *p = NULL;
        cudaDriverEntryPointQueryResult found;
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                                    cudaEnableDefault, &found));
        if (found != cudaDriverEntryPointSuccess || !p) {
            fprintf(stderr, "%s: the driver has no cuTensorMapEncodeTiled (status %d)\n", who,
                    (int)found);
            exit(EXIT_FAILURE);
        }
        fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    }
    return fn;
}

/* A rows x cols row-major matrix of `type` (elem_bytes bytes an element) whose rows start
 * `pitch` elements apart (pitch >= cols; the elements between cols and pitch are never read),
 * moved in boxes of box_rows x box_cols; zeros outside, and a store leaves out what lies
 * outside. TMA needs the base 16-byte aligned and the pitch a multiple of 16 bytes. `who`
 * names the caller in the error message. With a swizzle, a box row may span at most the
 * swizzle's width (128 bytes for CU_TENSOR_MAP_SWIZZLE_128B). `promotion` is how far the TMA
 * unit widens each read of L2 (a map only stored through: CU_TENSOR_MAP_L2_PROMOTION_NONE). */
static inline CUtensorMap make_map_2d(const char *who, CUtensorMapDataType type, int elem_bytes,
                                      const void *base, int rows, int cols, int pitch,
                                      int box_rows, int box_cols, CUtensorMapSwizzle swizzle,
                                      CUtensorMapL2promotion promotion)
{
    CUtensorMap map;
    cuuint64_t dims[2] = { (cuuint64_t)cols, (cuuint64_t)rows };  /* innermost first */
    /* the row stride in bytes, which TMA needs a multiple of 16 */
    cuuint64_t strides[1] = { (cuuint64_t)pitch * (cuuint64_t)elem_bytes };
    cuuint32_t box[2] = { (cuuint32_t)box_cols, (cuuint32_t)box_rows };
    cuuint32_t elem_strides[2] = { 1, 1 };
    CUresult r = encode_tiled(who)(&map, type, 2, const_cast<void *>(base), dims, strides, box,
                                   elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                   promotion,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE /* zeros past the edges */);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "%s: cuTensorMapEncodeTiled failed (CUresult %d) for %dx%d, rows %d "
                        "elements apart, boxes of %dx%d\n", who, (int)r, rows, cols, pitch,
                box_rows, box_cols);
        exit(EXIT_FAILURE);
    }
    return map;
}

/* make_map_2d of a bf16 matrix, read through 128-byte L2 promotion. Its pitch a multiple of
 * 8 bf16: gemm_pad_rows (pad_rows.h) makes a copy that is. */
static inline CUtensorMap make_map(const char *who, const __nv_bfloat16 *base, int rows,
                                   int cols, int pitch, int box_rows, int box_cols,
                                   CUtensorMapSwizzle swizzle)
{
    return make_map_2d(who, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, (int)sizeof(__nv_bfloat16), base,
                       rows, cols, pitch, box_rows, box_cols, swizzle,
                       CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
}

#endif
