/* attention_wgmma.cuh: the Hopper instructions step 4 uses (given), beside chapter 05's tma.cuh
 * (mbar_init, mbar_arrive_expect_tx, mbar_arrive, mbar_wait, smem_u32, encode_tiled) and
 * wgmma.cuh (smem_desc, the 128-byte swizzled descriptor; wgmma_fence, wgmma_commit,
 * wgmma_wait<N>; fence_acc, the accumulators pinned around them). What the step is about is
 * the pipeline: which warp issues which copy, who waits on which barrier, and which product
 * runs under which softmax; the instructions themselves are wrapped here and there.
 *
 * Device side (sm_90a code only; every other target sees none of it):
 *   tma_load_3d(dst, map, x, y, z, bar)   one box of a 3-D tensor map at (column x, row y,
 *                                         matrix z) into shared memory, its bytes counted on bar
 *   wgmma_ss<T, N>(d, desc_a, desc_b, scale_d)
 *                                         d (64 x N, fp32) = A B + (scale_d ? d : 0), A (64 x 16)
 *                                         and B (16 x N) both from shared memory, both K-major
 *                                         (k contiguous: rows of Q and rows of K)
 *   wgmma_rs<T, N>(d, a, desc_b)          d += A B, A (64 x 16) from registers, B (16 x N) from
 *                                         shared memory MN-major (n contiguous: rows of V)
 *   exp2_approx(x)                        2^x on the SFU (ex2.approx.ftz: one instruction)
 *   pack_t<T>(lo, hi)                     two floats rounded to T, lo in the low 16 bits
 * Host side:
 *   make_map_rows<T>(who, base, rows, mats, dim, box_rows)
 *                                         a stack of `mats` row-major rows x dim matrices of T
 *                                         (q, k or v: one matrix a (batch, head)), read in boxes
 *                                         of box_rows x 64 with the 128-byte swizzle
 *
 * The register layouts (PTX ISA, "Register Fragments and Shared Memory Matrix Layouts" of
 * wgmma), for thread t of the warpgroup: warp w = t / 32 owns rows 16 w .. 16 w + 15 of the 64,
 * and inside them lane l, g = l / 4, q = l % 4, holds
 *   accumulator (64 x N fp32, N / 2 floats): d[4 j], d[4 j + 1] = row g, columns 8 j + 2 q and
 *             8 j + 2 q + 1; d[4 j + 2], d[4 j + 3] = the same in row g + 8
 *   A from registers (64 x 16 of T, 4 registers of two): a[0] = row g, columns 2 q, 2 q + 1;
 *             a[1] = row g + 8, the same columns; a[2], a[3] = columns 8 + 2 q, 9 + 2 q
 * which are chapter 10's mma.sync layouts, a warp's 16 rows at a time. So the accumulators of
 * S for keys 16 k .. 16 k + 15, d[8 k] .. d[8 k + 7], rounded in pairs, are the A operand of
 * O += P V for those keys: pack_t(d[8k], d[8k+1]), pack_t(d[8k+2], d[8k+3]), pack_t(d[8k+4],
 * d[8k+5]), pack_t(d[8k+6], d[8k+7]).
 *
 * The shared-memory layout wgmma reads, as TMA writes it with CU_TENSOR_MAP_SWIZZLE_128B: a box
 * row is 64 values of T (128 bytes); within each 1 KB block of 8 rows the 16-byte chunk c of
 * row r sits at chunk c ^ (r % 8), and wgmma undoes that from the address bits, so every box
 * starts on a 1 KB boundary. A dim of 128 is two boxes side by side in memory, each of all the
 * tile's rows. The descriptors:
 *   K-major (Q, K: the product's k runs along a row): the start advances 32 bytes for each 16
 *             of k inside a box (the swizzle is applied to the sum) and jumps to the next box
 *             every 64; 8-row blocks 1 KB apart (sbo = 1024); lbo unused (16 by convention)
 *   MN-major (V: k runs down the rows, n along them): the start advances 16 rows (2 KB) for
 *             each 16 of k; 8-row blocks of k 1 KB apart (sbo), 64-column boxes lbo apart
 *             (the box's bytes: rows x 128)
 *
 * Given; chapter 05's step 4 (step4_wgmma_sm90a.cu) introduces the same instructions on a GEMM.
 * A wgmma_fence() goes before the first wgmma that reads registers ordinary instructions wrote
 * (O rescaled, P packed).
 * The CPU backend cannot run any of it and leaves the files that include this out. */
#ifndef ATTENTION_WGMMA_CUH
#define ATTENTION_WGMMA_CUH

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../05-async-pipelining/tma.cuh"   /* the mbarriers, encode_tiled */
#include "../05-async-pipelining/wgmma.cuh" /* smem_desc, the fences and waits */

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

static __device__ __forceinline__ void tma_load_3d(void *dst, const CUtensorMap *map, int x,
                                                   int y, int z, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y),
                   "r"(z), "r"(smem_u32(bar))
                 : "memory");
}

static __device__ __forceinline__ float exp2_approx(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

template <typename T> static __device__ __forceinline__ uint32_t pack_t(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack_t<__nv_bfloat16>(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
template <> __device__ __forceinline__ uint32_t pack_t<__half>(float lo, float hi)
{
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* The instructions, one for each N the steps use, for T's format TY ("bf16", "f16"): d's N / 2
 * floats are operands 0 .. N / 2 - 1. The immediates after the predicate scale-d are
 * scale-a and scale-b (1: not negated), then trans-a and trans-b for a descriptor operand
 * (0: K-major), trans-b alone for a register A (1: B is MN-major). */
#define WG_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                 "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define WG_D32 WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24)
#define WG_D64 WG_D32, WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56)
#define WG_D88 WG_D64, WG_D8(64), WG_D8(72), WG_D8(80)
#define WG_D96 WG_D88, WG_D8(88)

#define WG_SS_N128(TY)                                                                           \
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"                              \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY "\n\t{"                \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "                            \
                 "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "                  \
                 "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "                  \
                 "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                  \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "                  \
                 "%60, %61, %62, %63"                                                            \
                 "}, %64, %65, p, 1, 1, 0, 0;\n\t}"                                              \
                 : WG_D64 : "l"(desc_a), "l"(desc_b), "r"(scale_d))

#define WG_SS_N176(TY)                                                                           \
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %90, 0;\n\t"                              \
                 "wgmma.mma_async.sync.aligned.m64n176k16.f32." TY "." TY "\n\t{"                \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "                            \
                 "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "                  \
                 "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "                  \
                 "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                  \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "                  \
                 "%60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, "                  \
                 "%72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, "                  \
                 "%84, %85, %86, %87"                                                            \
                 "}, %88, %89, p, 1, 1, 0, 0;\n\t}"                                              \
                 : WG_D88 : "l"(desc_a), "l"(desc_b), "r"(scale_d))

#define WG_SS_N192(TY)                                                                           \
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %98, 0;\n\t"                              \
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32." TY "." TY "\n\t{"                \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "                            \
                 "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "                  \
                 "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "                  \
                 "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                  \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "                  \
                 "%60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, "                  \
                 "%72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, "                  \
                 "%84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"                    \
                 "}, %96, %97, p, 1, 1, 0, 0;\n\t}"                                              \
                 : WG_D96 : "l"(desc_a), "l"(desc_b), "r"(scale_d))

#define WG_RS_N64(TY)                                                                            \
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %37, 0;\n\t"                              \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY "\n\t{"                 \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "                            \
                 "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "                  \
                 "%24, %25, %26, %27, %28, %29, %30, %31"                                        \
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n\t}"                                \
                 : WG_D32 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b),              \
                   "r"(scale_d))

#define WG_RS_N128(TY)                                                                           \
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %69, 0;\n\t"                              \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY "\n\t{"                \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "                            \
                 "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "                  \
                 "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "                  \
                 "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                  \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "                  \
                 "%60, %61, %62, %63"                                                            \
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n\t}"                                \
                 : WG_D64 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b),              \
                   "r"(scale_d))

template <typename T, int N>
static __device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t desc_a,
                                                uint64_t desc_b, int scale_d)
{
    static_assert(N == 128 || N == 176 || N == 192, "wgmma_ss: N is 128, 176 or 192 here");
    constexpr bool f16 = __is_same(T, __half);
    if constexpr (N == 128) {
        if constexpr (f16) WG_SS_N128("f16"); else WG_SS_N128("bf16");
    } else if constexpr (N == 176) {
        if constexpr (f16) WG_SS_N176("f16"); else WG_SS_N176("bf16");
    } else {
        if constexpr (f16) WG_SS_N192("f16"); else WG_SS_N192("bf16");
    }
}

template <typename T, int N>
static __device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4],
                                                uint64_t desc_b)
{
    static_assert(N == 64 || N == 128, "wgmma_rs: N is dim, 64 or 128");
    constexpr bool f16 = __is_same(T, __half);
    const int scale_d = 1;
    if constexpr (N == 64) {
        if constexpr (f16) WG_RS_N64("f16"); else WG_RS_N64("bf16");
    } else {
        if constexpr (f16) WG_RS_N128("f16"); else WG_RS_N128("bf16");
    }
}

#undef WG_SS_N128
#undef WG_SS_N176
#undef WG_SS_N192
#undef WG_RS_N64
#undef WG_RS_N128
#undef WG_D96
#undef WG_D88
#undef WG_D64
#undef WG_D32
#undef WG_D8

#endif /* __CUDA_ARCH_FEAT_SM90_ALL */

template <typename T> struct tma_type;
template <> struct tma_type<__nv_bfloat16> {
    static constexpr CUtensorMapDataType value = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
};
template <> struct tma_type<__half> {
    static constexpr CUtensorMapDataType value = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
};

/* mats row-major rows x dim matrices of T one after the other (q, k or v: mats = batch x heads,
 * rows = len), as one 3-D tensor, read in boxes of box_rows x 64 with the 128-byte swizzle. A
 * box that hangs past a matrix's last row is zero-filled there: it never reads the next
 * matrix's rows. dim * sizeof(T) must be a multiple of 16 (TMA's rule for a stride); `who`
 * names the caller in the error message. */
template <typename T>
static inline CUtensorMap make_map_rows(const char *who, const T *base, int rows, int mats,
                                        int dim, int box_rows)
{
    CUtensorMap map;
    cuuint64_t dims[3] = { (cuuint64_t)dim, (cuuint64_t)rows, (cuuint64_t)mats };
    cuuint64_t strides[2] = { (cuuint64_t)dim * sizeof(T), (cuuint64_t)rows * dim * sizeof(T) };
    cuuint32_t box[3] = { 64, (cuuint32_t)box_rows, 1 };
    cuuint32_t elem_strides[3] = { 1, 1, 1 };
    CUresult r = encode_tiled(who)(&map, tma_type<T>::value, 3, const_cast<T *>(base), dims,
                                   strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE /* zeros past the edges */);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "%s: cuTensorMapEncodeTiled failed (CUresult %d) for %d x %dx%d\n", who,
                (int)r, mats, rows, dim);
        exit(EXIT_FAILURE);
    }
    return map;
}

#endif
