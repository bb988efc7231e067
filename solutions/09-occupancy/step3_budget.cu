/* step3_budget.cu: chapter 09, step 3 of 4, a launcher that reads its budget. The reference.
 *
 * Chapter 04's 2D register-blocked SGEMM with its constants made template parameters: the block
 * tile BM x BN x BK, the fragment a thread TM x TN, the stages of shared memory, and the second
 * argument of __launch_bounds__, the blocks an SM the compiler must fit (it caps the registers
 * at 65536 / (threads x blocks)). The tiles of A and B go to shared memory with cp.async
 * (__pipeline_memcpy_async), STAGES - 1 tiles ahead of the one being multiplied, in a ring of
 * STAGES tiles in dynamic shared memory: the one buffer whose size the launch chooses.
 *
 * The choice, from the device (budget_choose): the first configuration of the table, in its
 * order of preference, that the device holds as it was compiled to be held: its shared memory
 * no more than a block may opt in to (sharedMemPerBlockOptin), and as many blocks an SM as its
 * __launch_bounds__ promised, by the runtime's occupancy calculator, which counts the SM's
 * shared memory with the driver's reserve, its registers and its warps; and whose tiles give
 * every SM a block. A shape too small for that gets the configuration with the smallest tile
 * that fits. Nothing about a device is assumed: the same binary picks a different row on an
 * H200, an A100, an L4 and a T4.
 * Expect: on the H200, the configuration with the deepest ring that still holds two blocks an
 * SM; on the smaller devices, fewer stages or a thinner k step, never a launch that fails. */
#include <cuda_pipeline.h>

#include "cuda_check.h"
#include "occupancy.h"

/* One stage: A's tile BM x BK then B's BK x BN, row-major. Each element is one 4-byte cp.async,
 * zero-filled where it falls outside A or B, so that any shape and any alignment work. */
template <int BM, int BN, int BK, int THREADS>
static __device__ __forceinline__ void load_stage(float *s, const float *__restrict__ a,
                                                  const float *__restrict__ b, int row0,
                                                  int col0, int k0, int m, int k, int n)
{
    for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
        const int r = row0 + e / BK, c = k0 + e % BK;
        const bool inside = r < m && c < k;
        __pipeline_memcpy_async(s + e, inside ? a + (size_t)r * k + c : a, 4, inside ? 0 : 4);
    }
    float *s_b = s + BM * BK;
    for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
        const int r = k0 + e / BN, c = col0 + e % BN;
        const bool inside = r < k && c < n;
        __pipeline_memcpy_async(s_b + e, inside ? b + (size_t)r * n + c : b, 4, inside ? 0 : 4);
    }
}

/* The ring, in dynamic shared memory: STAGES stages of (BM + BN) x BK floats. */
extern __shared__ __align__(16) float s_ring[];

template <int BM, int BN, int BK, int TM, int TN, int STAGES, int MIN_BLOCKS>
static __global__ void __launch_bounds__((BM / TM) * (BN / TN), MIN_BLOCKS)
budget_kernel(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
              int m, int k, int n)
{
    constexpr int THREADS = (BM / TM) * (BN / TN);
    constexpr int STAGE = (BM + BN) * BK; /* floats a stage */
    static_assert(STAGES >= 2, "a ring needs a stage to fill while another is read");
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int t_row = tid / (BN / TN), t_col = tid % (BN / TN);
    const int tiles = (k + BK - 1) / BK;
    float acc[TM][TN] = { { 0.0f } };
    float ra[TM], rb[TN];

    /* the first STAGES - 1 tiles in flight; one commit a tile, empty past the last */
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < tiles)
            load_stage<BM, BN, BK, THREADS>(s_ring + s * STAGE, a, b, row0, col0, s * BK, m, k,
                                            n);
        __pipeline_commit();
    }
    for (int t = 0; t < tiles; t++) {
        __pipeline_wait_prior(STAGES - 2); /* this thread's copies of tile t have landed */
        __syncthreads();                   /* everyone's have; and tile t - 1 is read by all */
        const int next = t + STAGES - 1;   /* into the stage tile t - 1 leaves free */
        if (next < tiles)
            load_stage<BM, BN, BK, THREADS>(s_ring + (next % STAGES) * STAGE, a, b, row0, col0,
                                            next * BK, m, k, n);
        __pipeline_commit();
        const float *s_a = s_ring + (t % STAGES) * STAGE;
        const float *s_b = s_a + BM * BK;
#pragma unroll
        for (int i = 0; i < BK; i++) {
#pragma unroll
            for (int r = 0; r < TM; r++)
                ra[r] = s_a[(t_row * TM + r) * BK + i];
#pragma unroll
            for (int q = 0; q < TN; q++)
                rb[q] = s_b[i * BN + t_col * TN + q];
#pragma unroll
            for (int r = 0; r < TM; r++)
#pragma unroll
                for (int q = 0; q < TN; q++)
                    acc[r][q] += ra[r] * rb[q];
        }
    }
#pragma unroll
    for (int r = 0; r < TM; r++) {
        const int row = row0 + t_row * TM + r;
#pragma unroll
        for (int q = 0; q < TN; q++) {
            const int col = col0 + t_col * TN + q;
            if (row < m && col < n)
                c[(size_t)row * n + col] = acc[r][q];
        }
    }
}

/* One configuration on any shape. Over the 48 KiB a block has by default, the kernel must opt
 * in to its shared memory first; on a device whose ceiling is lower that call fails, which is
 * why the launcher asks budget_choose and never calls a row the device cannot hold. */
template <int BM, int BN, int BK, int TM, int TN, int STAGES, int MIN_BLOCKS>
static void run_config(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    constexpr int THREADS = (BM / TM) * (BN / TN);
    constexpr int SMEM = STAGES * (BM + BN) * BK * (int)sizeof(float);
    void (*kernel)(const float *, const float *, float *, int, int, int) =
        budget_kernel<BM, BN, BK, TM, TN, STAGES, MIN_BLOCKS>;
    if (SMEM > 48 * 1024)
        CUDA_CHECK(cudaFuncSetAttribute((const void *)kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    dim3 grid(cdiv(n, BN), cdiv(m, BM));
    kernel<<<grid, THREADS, SMEM>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

#define BUDGET_CONFIG(NAME, BM, BN, BK, TM, TN, S, MB)                                           \
    { NAME, BM, BN, BK, S, (BM / TM) * (BN / TN), MB, (size_t)(S) * ((BM) + (BN)) * (BK) * 4,    \
      (const void *)budget_kernel<BM, BN, BK, TM, TN, S, MB>,                                    \
      run_config<BM, BN, BK, TM, TN, S, MB> }

/* In order of preference: a deeper ring first (more of k in flight a block, so two blocks an
 * SM hide the latency of global memory), then thinner k steps, then a smaller tile. The shared
 * memory a block: 96, 64, 48, 32 and 16 KiB; each row promises two blocks an SM. */
const struct budget_config BUDGET_CONFIGS[] = {
    BUDGET_CONFIG("128x128x32_s3", 128, 128, 32, 8, 8, 3, 2),
    BUDGET_CONFIG("128x128x16_s4", 128, 128, 16, 8, 8, 4, 2),
    BUDGET_CONFIG("128x128x16_s3", 128, 128, 16, 8, 8, 3, 2),
    BUDGET_CONFIG("128x128x16_s2", 128, 128, 16, 8, 8, 2, 2),
    BUDGET_CONFIG("64x64x16_s2",    64,  64, 16, 4, 4, 2, 2),
};
const int BUDGET_NUM_CONFIGS = sizeof BUDGET_CONFIGS / sizeof BUDGET_CONFIGS[0];

/* Whether the current device holds row i as it was compiled to be held. */
static int holds(const struct budget_config *c, int device)
{
    int optin = 0, blocks = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (c->smem_bytes > (size_t)optin)
        return 0; /* more than a block may have here, even opted in */
    if (c->smem_bytes > 48 * 1024)
        CUDA_CHECK(cudaFuncSetAttribute(c->kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)c->smem_bytes));
    /* the SM's budget: its shared memory (with the driver's reserve), registers and warps */
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, c->kernel, c->threads,
                                                             c->smem_bytes));
    return blocks >= c->min_blocks;
}

int budget_choose(int m, int k, int n)
{
    (void)k; /* every row takes any k */
    int device, sms;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    int smallest = -1;
    for (int i = 0; i < BUDGET_NUM_CONFIGS; i++) {
        const struct budget_config *c = &BUDGET_CONFIGS[i];
        if (!holds(c, device))
            continue;
        if ((long long)cdiv(m, c->bm) * cdiv(n, c->bn) >= sms)
            return i; /* a block for every SM */
        const struct budget_config *least = smallest < 0 ? NULL : &BUDGET_CONFIGS[smallest];
        if (!least || c->bm * c->bn < least->bm * least->bn)
            smallest = i;
    }
    return smallest;
}

void matmul_budget(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    int i = budget_choose(m, k, n);
    if (i < 0) {
        fprintf(stderr, "matmul_budget: no configuration fits this device\n");
        exit(EXIT_FAILURE);
    }
    BUDGET_CONFIGS[i].launch(d_a, d_b, d_c, m, k, n);
}
