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
 * The block: 3 warpgroups, 384 threads, one block an SM, a 128 x 128 tile of D. Warpgroup 0 is
 * the producer: it gives registers away (setmaxnreg) and one thread issues the TMA copies of a
 * 128 x 128 box of A and one of B a stage (16 KB each), into a ring of 6 stages with a "full"
 * and an "empty" mbarrier each, as in chapter 05. Warpgroups 1 and 2 are the consumers, 64 rows
 * of the tile each: per stage, four wgmma.mma_async m64n128k32 e4m3 products into the partial
 * accumulator (64 floats a thread), the first with scale-d = 0 so that it starts from zero;
 * then wait for them, release the stage, and promote: 64 FMAs a thread with the scales of the
 * thread's two rows (read from global memory before the stage's wait, so that their latency
 * hides behind it). The two consumers interleave: while one promotes, the other's products run.
 *
 * Both operands K-major with a 128-byte swizzle: a box row is 128 e4m3 = 128 bytes, so a stage
 * is one scale block of k and each 8-row group of a box is 1 KB, which the descriptors' stride
 * byte offset says; the next 32 of k is 32 bytes further along the (swizzled) row, as the next
 * 16 bf16 were in chapter 05.
 *
 * Limits, said plainly: k a multiple of 16 and A, B 16-byte aligned (TMA); the boxes that hang
 * over m, n or k are zero-filled, so partial tiles and a partial last block of k need no code.
 * Expect: about 90% of cuBLASLt's FP8 GEMM with per-tensor scales at 4096^3 (which has no
 * scales to apply inside its loop), accurate to 1e-3 by the contract's measure. */
#include <cuda_bf16.h>

#include "../05-async-pipelining/tma.cuh" /* the mbarrier and TMA helpers, encode_tiled */
#include "../05-async-pipelining/wgmma.cuh" /* smem_desc, the wgmma fences and waits */
#include "quant.h"

#define FG_BM 128                            /* rows of D a block */
#define FG_BN 128                            /* columns of D a block: one block of B's scales */
#define FG_BK 128                            /* k a stage: one scale block, one swizzle row */
#define FG_STAGES 6
#define FG_THREADS 384                       /* 3 warpgroups: the producer, 2 consumers */
#define FG_CONSUMER_WARPS 8
#define FG_ACC (64 * FG_BN / 128)            /* fp32 accumulators a consumer thread: 64 */
#define FG_BOX_BYTES (128 * FG_BK)           /* a 128 x 128 box of e4m3: 16 KB */
#define FG_STAGE_BYTES (2 * FG_BOX_BYTES)    /* A's box, then B's */
#define FG_SMEM (FG_STAGES * FG_STAGE_BYTES + 2 * FG_STAGES * 8 + 1024)
#define FG_PRODUCER_REGS 40
#define FG_CONSUMER_REGS 232

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

#endif

static __global__ void __launch_bounds__(FG_THREADS, 1)
gemm_fp8_blockscaled_kernel(const __grid_constant__ CUtensorMap map_a,
                            const __grid_constant__ CUtensorMap map_b,
                            const float *__restrict__ sa, const float *__restrict__ sb,
                            __nv_bfloat16 *__restrict__ d, int m, int k, int n)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
    uint64_t *full = reinterpret_cast<uint64_t *>(smem + FG_STAGES * FG_STAGE_BYTES);
    uint64_t *empty = full + FG_STAGES;

    const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
    const int row0 = blockIdx.y * FG_BM, col0 = blockIdx.x * FG_BN;
    const int tiles = cdiv(k, FG_BK); /* = the blocks of k, each one stage */

    if (threadIdx.x == 0) {
        for (int s = 0; s < FG_STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], FG_CONSUMER_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(FG_PRODUCER_REGS));
        if (threadIdx.x == 0) {
            for (int t = 0; t < tiles; t++) {
                int s = t % FG_STAGES, round = t / FG_STAGES;
                if (round > 0)
                    mbar_wait(&empty[s], (round - 1) & 1);
                /* boxes over an edge land whole, zero-filled, and count all their bytes */
                mbar_arrive_expect_tx(&full[s], FG_STAGE_BYTES);
                unsigned char *st = smem + s * FG_STAGE_BYTES;
                tma_load_2d(st, &map_a, t * FG_BK, row0, &full[s]);
                tma_load_2d(st + FG_BOX_BYTES, &map_b, t * FG_BK, col0, &full[s]);
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(FG_CONSUMER_REGS));
        const int half = wg - 1;
        /* this thread's two rows of D (the wgmma m64nN accumulator layout: chapter 05) */
        const int row = row0 + half * 64 + warp * 16 + lane / 4;
        const float *__restrict__ sb_row = sb + (size_t)(col0 / FG_BN) * tiles;
        float part[FG_ACC], total[FG_ACC];
#pragma unroll
        for (int i = 0; i < FG_ACC; i++)
            part[i] = 0.0f, total[i] = 0.0f;
        fence_acc(part);

        const uint32_t base = smem_u32(smem);
        for (int t = 0; t < tiles; t++) {
            const int s = t % FG_STAGES;
            /* this block's scales, asked for before the wait so that they arrive during it;
             * rows past m have none (their products are zeros) */
            const float sb_t = __ldg(sb_row + t);
            const float sa0 = row < m ? __ldg(sa + (size_t)t * m + row) : 0.0f;
            const float sa1 = row + 8 < m ? __ldg(sa + (size_t)t * m + row + 8) : 0.0f;
            mbar_wait(&full[s], (t / FG_STAGES) & 1);
            __syncwarp();
            const uint32_t a = base + s * FG_STAGE_BYTES + half * 64 * 128;
            const uint32_t b = base + s * FG_STAGE_BYTES + FG_BOX_BYTES;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < FG_BK / 32; kk++)
                wgmma_m64n128k32_e4m3(part, smem_desc(a + kk * 32, 16, 1024),
                                      smem_desc(b + kk * 32, 16, 1024), kk > 0);
            wgmma_commit();
            wgmma_wait<0>();
            fence_acc(part);
            /* the stage's bytes are read: the producer may refill it while we promote */
            if (lane == 0)
                mbar_arrive(&empty[s]);
            /* promotion: the block's partial sums, scaled, into fp32 on the CUDA cores */
            const float s0 = sa0 * sb_t, s1 = sa1 * sb_t;
#pragma unroll
            for (int j = 0; j < FG_ACC / 4; j++) {
                total[4 * j] = fmaf(part[4 * j], s0, total[4 * j]);
                total[4 * j + 1] = fmaf(part[4 * j + 1], s0, total[4 * j + 1]);
                total[4 * j + 2] = fmaf(part[4 * j + 2], s1, total[4 * j + 2]);
                total[4 * j + 3] = fmaf(part[4 * j + 3], s1, total[4 * j + 3]);
            }
        }

        /* D in bf16: a thread's pairs of columns 8 j + 2 (lane % 4) and the one after, rows
         * `row` and row + 8; a 4-byte store where the pair is whole and n is even (then the
         * pair's offset is even), else one bf16 at a time */
        const int col = col0 + 2 * (lane % 4);
#pragma unroll
        for (int j = 0; j < FG_BN / 8; j++) {
            const int c = col + 8 * j;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = row + 8 * h;
                if (r >= m || c >= n)
                    continue;
                const float v0 = total[4 * j + 2 * h], v1 = total[4 * j + 2 * h + 1];
                __nv_bfloat16 *out = d + (size_t)r * n + c;
                if (c + 1 < n && n % 2 == 0) {
                    *reinterpret_cast<__nv_bfloat162 *>(out) = __floats2bfloat162_rn(v0, v1);
                } else {
                    out[0] = __float2bfloat16_rn(v0);
                    if (c + 1 < n)
                        out[1] = __float2bfloat16_rn(v1);
                }
            }
        }
    }
#else
    __trap(); /* wgmma and setmaxnreg exist in sm_90a code only */
#endif
}

/* a rows x cols row-major e4m3 matrix in boxes of 128 x 128 bytes, 128-byte swizzle, zeros
 * outside (tma.cuh's make_map is for bf16) */
static CUtensorMap make_map_e4m3(const uint8_t *base, int rows, int cols)
{
    CUtensorMap map;
    cuuint64_t dims[2] = { (cuuint64_t)cols, (cuuint64_t)rows };
    cuuint64_t strides[1] = { (cuuint64_t)cols };
    cuuint32_t box[2] = { FG_BK, 128 };
    cuuint32_t elem_strides[2] = { 1, 1 };
    CUresult r = encode_tiled("gemm_fp8_blockscaled")(
        &map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t *>(base), dims, strides, box,
        elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "gemm_fp8_blockscaled: cuTensorMapEncodeTiled failed (CUresult %d) for "
                        "%dx%d\n", (int)r, rows, cols);
        exit(EXIT_FAILURE);
    }
    return map;
}

void gemm_fp8_blockscaled(const uint8_t *d_a, const float *d_sa, const uint8_t *d_b,
                          const float *d_sb, uint16_t *d_d, int m, int k, int n)
{
    static int ready_dev = -1;
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
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
        CUDA_CHECK(cudaFuncSetAttribute(gemm_fp8_blockscaled_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, FG_SMEM));
        ready_dev = dev;
    }
    if (k % 16 != 0 || (reinterpret_cast<uintptr_t>(d_a) & 15) ||
        (reinterpret_cast<uintptr_t>(d_b) & 15)) {
        fprintf(stderr, "gemm_fp8_blockscaled: k = %d must be a multiple of 16 and A and B "
                        "16-byte aligned (quant.h)\n", k);
        exit(EXIT_FAILURE);
    }
    CUtensorMap map_a = make_map_e4m3(d_a, m, k);
    CUtensorMap map_b = make_map_e4m3(d_b, n, k);
    dim3 grid(cdiv(n, FG_BN), cdiv(m, FG_BM));
    gemm_fp8_blockscaled_kernel<<<grid, FG_THREADS, FG_SMEM>>>(
        map_a, map_b, d_sa, d_sb, reinterpret_cast<__nv_bfloat16 *>(d_d), m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
