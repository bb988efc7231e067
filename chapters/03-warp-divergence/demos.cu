/* demos.cu: chapter 03, the demos. Given; the lesson reads them and the bench measures each
 * pair in one run.
 *
 *   parity_warp         the work of process_divergent, branched on the warp's parity instead
 *                       of the lane's: every warp runs one path. Expect: close to 2x
 *                       faster, as a warp issues one of two equal-cost paths, not both.
 *   branch_on_key       a branch on the data; the bench feeds it unsorted keys, then the same
 *                       keys sorted. Sorting is the fix: same kernel, same results.
 *   reduce_interleaved  a block's tree sum with active threads tid = 0, 2s, 4s, ...: a few
 *                       lanes in every warp stay busy, so every warp issues every step.
 *   reduce_sequential   the same tree with active threads tid < s: whole warps retire.
 *   short_branch        a branch short enough that the compiler predicates it (read its SASS).
 *
 * Every kernel runs blocks of 256 threads, a multiple of 32, so warps start at thread
 * indices that are multiples of 32 across the whole grid. */
#include "cuda_check.h"
#include "divergence.h"

#define BLOCK 256

/* ---- demo 1: lane parity (process_divergent) against warp parity ------------------------- */

__global__ void parity_warp_kernel(const float *__restrict__ in, float *__restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = in[i];
    /* i / 32 is the warp's index in the grid: the same for all 32 lanes, so the warp never
     * splits. (Only the last warp can be partial, and its lanes past n have already left.) */
    if ((i / 32) & 1)
        out[i] = path_b(x);
    else
        out[i] = path_a(x);
}

void parity_warp(const float *d_in, float *d_out, int n)
{
    parity_warp_kernel<<<cdiv(n, BLOCK), BLOCK>>>(d_in, d_out, n);
    CUDA_CHECK(cudaGetLastError());
}

/* ---- demo 2: a branch on the data --------------------------------------------------------- */

__global__ void branch_on_key_kernel(const float *__restrict__ keys, float *__restrict__ out,
                                     int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float k = keys[i];
    /* uniform per warp only if the warp's 32 keys fall on one side of 0: the data decides */
    if (k < 0.0f)
        out[i] = path_a(k);
    else
        out[i] = path_b(k);
}

void branch_on_key(const float *d_keys, float *d_out, int n)
{
    branch_on_key_kernel<<<cdiv(n, BLOCK), BLOCK>>>(d_keys, d_out, n);
    CUDA_CHECK(cudaGetLastError());
}

/* ---- demo 3: the tree reduction, two ways ------------------------------------------------ */

__global__ void reduce_interleaved_kernel(const float *__restrict__ in, float *__restrict__ out,
                                          int n)
{
    __shared__ float s_sum[REDUCE_BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * REDUCE_BLOCK + tid;
    s_sum[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int s = 1; s < REDUCE_BLOCK; s *= 2) {
        /* the textbook writes tid % (2 * s) == 0; for a power of two s the mask is the same
         * test without the integer division, so this pair measures the divergence alone.
         * Active lanes are 2s apart: at s = 1 half the lanes of all 8 warps work, at s = 16
         * one lane in 32, and every warp still has a lane at work until s reaches 32. */
        if ((tid & (2 * s - 1)) == 0)
            s_sum[tid] += s_sum[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = s_sum[0];
}

__global__ void reduce_sequential_kernel(const float *__restrict__ in, float *__restrict__ out,
                                         int n)
{
    __shared__ float s_sum[REDUCE_BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * REDUCE_BLOCK + tid;
    s_sum[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int s = REDUCE_BLOCK / 2; s > 0; s /= 2) {
        /* active lanes are the first s: whole warps are either all in or all out while
         * s >= 32 (4 warps, then 2, then 1). nvcc unrolls this loop and predicates the step
         * rather than branching, so an idle warp still issues it with every lane off (the
         * README reads the SASS) */
        if (tid < s)
            s_sum[tid] += s_sum[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = s_sum[0];
}

void reduce_interleaved(const float *d_in, float *d_out, int n)
{
    reduce_interleaved_kernel<<<cdiv(n, REDUCE_BLOCK), REDUCE_BLOCK>>>(d_in, d_out, n);
    CUDA_CHECK(cudaGetLastError());
}

void reduce_sequential(const float *d_in, float *d_out, int n)
{
    reduce_sequential_kernel<<<cdiv(n, REDUCE_BLOCK), REDUCE_BLOCK>>>(d_in, d_out, n);
    CUDA_CHECK(cudaGetLastError());
}

/* ---- a short branch, predicated ---------------------------------------------------------- */

__global__ void short_branch_kernel(const float *__restrict__ in, float *__restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = in[i];
    float y;
    /* two multiplies: cheaper to compute both and select (FSEL) than to branch, so the
     * compiler emits no branch and the lanes cannot diverge */
    if (x < 0.0f)
        y = -0.5f * x;
    else
        y = 2.0f * x;
    out[i] = y;
}

void short_branch(const float *d_in, float *d_out, int n)
{
    short_branch_kernel<<<cdiv(n, BLOCK), BLOCK>>>(d_in, d_out, n);
    CUDA_CHECK(cudaGetLastError());
}
