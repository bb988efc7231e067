/* tma.cuh: what steps 3 and 4 of chapter 05 (step3_tma_sm90.cu, step4_wgmma_sm90a.cu) share
 * to move tiles with the tensor memory accelerator: the mbarrier and bulk-tensor-copy
 * instructions on the device, and the tensor map that describes a matrix to the TMA unit on
 * the host.
 *
 * Device side (sm_90 and later only; other targets see none of it):
 *   mbar_init, mbar_arrive_expect_tx, mbar_arrive, mbar_wait   an mbarrier in shared memory
 *   tma_load_2d                                                one box, its bytes counted there
 * Host side:
 *   make_map(who, base, rows, cols, pitch, box_rows, box_cols, swizzle)  a row-major bf16
 *                                                                         matrix
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

/* spin until the phase of the given parity has completed */
static __device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    uint32_t done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(smem_u32(bar)), "r"(parity) : "memory");
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

/* A rows x cols row-major bf16 matrix whose rows start `pitch` elements apart (pitch >= cols;
 * the elements between cols and pitch are never read), read in boxes of box_rows x box_cols;
 * zeros outside. TMA needs the base 16-byte aligned and the pitch a multiple of 8 bf16 (16
 * bytes): gemm_pad_rows (pad_rows.h) makes a copy that is. `who` names the caller in the error
 * message. With a swizzle, a box row may span at most the swizzle's width (128 bytes for
 * CU_TENSOR_MAP_SWIZZLE_128B). */
static inline CUtensorMap make_map(const char *who, const __nv_bfloat16 *base, int rows,
                                   int cols, int pitch, int box_rows, int box_cols,
                                   CUtensorMapSwizzle swizzle)
{
    CUtensorMap map;
    cuuint64_t dims[2] = { (cuuint64_t)cols, (cuuint64_t)rows };  /* innermost first */
    /* the row stride in bytes, which TMA needs a multiple of 16 */
    cuuint64_t strides[1] = { (cuuint64_t)pitch * sizeof(__nv_bfloat16) };
    cuuint32_t box[2] = { (cuuint32_t)box_cols, (cuuint32_t)box_rows };
    cuuint32_t elem_strides[2] = { 1, 1 };
    CUresult r = encode_tiled(who)(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                                   const_cast<__nv_bfloat16 *>(base), dims, strides, box,
                                   elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE /* zeros past the edges */);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "%s: cuTensorMapEncodeTiled failed (CUresult %d) for %dx%d, rows %d "
                        "apart\n", who, (int)r, rows, cols, pitch);
        exit(EXIT_FAILURE);
    }
    return map;
}

#endif
