/* step2_shuffle.cu: chapter 07, step 2 of 5, the sum with float4 loads and warp shuffles.
 * Your file.
 *
 * The contract (membound.h): sum_shuffle(d_in, n, d_out, d_scratch) writes d_in[0] + ... +
 * d_in[n - 1] to *d_out, in fp32 and in any order, for any n from 1 to 2^30 (a multiple of
 * nothing); a NaN anywhere gives NaN. d_scratch is membound_scratch_bytes(1) bytes of device
 * memory that hold garbage on entry. The launcher below is given: it starts a grid of at most
 * BLOCKS_PER_SM blocks an SM, whatever n (fewer for a small n), of BLOCK threads, which
 * between them read every element of in[0, n) once, each block writing the sum of its share
 * to out[blockIdx.x], in the scratch; then one block of the same kernel over those partials
 * (in = the scratch, 256-byte aligned; n = the number of blocks) writes *d_out. d_in itself
 * need not be 16-byte aligned.
 *
 * What the grader measures (make grade CH=07 STEP=2):
 *   correct  n = 1, 31, 1000, 1000003, 2^24 + 7 (2^20 + 7 on the CPU backend) and, on a GPU,
 *            2^28 + 7; inputs uniform in [-1, 1), of magnitude 1e4, with a NaN (NaN out),
 *            and of +1 and -1 at 1000003 and 2^28 + 7, whose sum must come out exact; *d_out
 *            poisoned with NaN and the scratch filled with 0xff bytes; the error otherwise
 *            within a bound set by fp32's unit roundoff and n (the lesson derives it)
 *   concept  on the CPU backend: the global loads move 16 bytes a lane (float4s), and the
 *            last 32 values of a block's sum are combined with warp shuffles, not in shared
 *            memory (a few shared-memory requests a block)
 *   speed    on a GPU, at least 1.8x step 1's reference at n = 2^28 + 7, timed in the same
 *            run, with CUB's cub::DeviceReduce::Sum beside it for scale; on a GPU whose DRAM
 *            lets CUB itself gain less than 2x over step 1, 90% of CUB's gain instead
 *            (never below 1.25x)
 *   spills   on a GPU, no register spills (LDL, STL) in the functions whose names hold
 *            "sum_shuffle" (keep it in your kernels' names)
 *
 * The lesson is README.md beside this file; its hints for step 2 are there too. */
#include "cuda_check.h"
#include "sm_count.h"
#include "membound.h"

#define BLOCK 256         /* a multiple of 32: warps are whole */
#define BLOCKS_PER_SM 4
#define UNROLL 4          /* float4 loads in flight a thread, which the grid is sized for */

static __global__ void sum_shuffle_kernel(const float *__restrict__ in, int n,
                                          float *__restrict__ out)
{
    /* TODO: the blocks of the grid read every element of in[0, n) once between them, in
     * float4s where in allows it; out[blockIdx.x] = the sum of this block's share, the last
     * 32 values of it combined with warp shuffles. */
    (void)in; (void)n; (void)out;
}

/* Blocks for n elements: at most BLOCKS_PER_SM an SM, fewer when n does not give every
 * thread one round of UNROLL float4s. */
static int grid_size(int n)
{
    int want = cdiv(n, BLOCK * UNROLL * 4);
    int most = BLOCKS_PER_SM * sm_count();
    return want < most ? want : most;
}

void sum_shuffle(const float *d_in, int n, float *d_out, void *d_scratch)
{
    float *partials = static_cast<float *>(d_scratch); /* one a block */
    int blocks = grid_size(n);
    sum_shuffle_kernel<<<blocks, BLOCK>>>(d_in, n, partials);
    CUDA_CHECK(cudaGetLastError());
    /* the partials, summed by one block of the same kernel */
    sum_shuffle_kernel<<<1, BLOCK>>>(partials, blocks, d_out);
    CUDA_CHECK(cudaGetLastError());
}
