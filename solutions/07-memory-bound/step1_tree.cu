/* step1_tree.cu: chapter 07, step 1 of 5, the sum as a tree in shared memory. The reference.
 *
 * Baseline (sum_atomic.cu, given): every element is an atomicAdd on the same address, and the
 *   L2 performs those one after another: 2.3 GB/s on an H200, a thousandth of what the memory
 *   can deliver. Reading the elements is not the problem; adding them one at a time is.
 * Change (here): each block of BLOCK = 256 threads sums PER_BLOCK = 512 elements by itself and
 *   writes one partial; the same kernel then runs again over the partials (one float for every
 *   512 elements) until one block covers what is left, and that block writes *d_out.
 *   n = 2^30 takes four launches: 2^21 partials, then 4096, then 8, then the sum. No atomics.
 *   - First add during the load: each thread loads two elements BLOCK apart (each load is a
 *     warp reading 128 contiguous bytes) and stores their sum, so the tree starts from 256
 *     values and no thread is idle in its first step.
 *   - Sequential addressing: in the step of stride s the first s threads add s_sum[tid + s]
 *     into s_sum[tid]. A warp's 32 threads read 32 consecutive words, one in each of the 32
 *     banks: one wavefront a request. The interleaved tree (s_sum[2*s*tid] += s_sum[2*s*tid
 *     + s], s growing) reads words 2s apart instead: a 2-way bank conflict at s = 1, 32-way
 *     at s = 16. And since the busy threads are the first s, whole warps go idle together
 *     (chapter 03's reduce_sequential, which this tree is, plus the first add).
 *   - A __syncthreads() after every step, including the last five, where only warp 0 is
 *     busy: step s / 2 reads what other threads wrote in step s, and the lanes of one warp
 *     are not in lockstep (independent thread scheduling, since Volta), so they need the
 *     barrier too (__syncwarp() would do below s = 32).
 * Expect: hundreds of times the atomic baseline, and still well short of the copy
 *   (copy.cu) and of CUB: a thread has only two loads in flight before it waits through
 *   eight barrier steps in which most warps do nothing; the grid is n / 512 short blocks
 *   that the hardware launches and retires one after another; and the partials are read
 *   back by a second launch. Step 2 removes all three. */
#include "cuda_check.h"
#include "membound.h"

#define BLOCK 256              /* threads a block: a power of two, for the tree */
#define PER_BLOCK (2 * BLOCK)  /* elements a block: two a thread */

static __global__ void sum_tree_kernel(const float *__restrict__ in, int n,
                                       float *__restrict__ out)
{
    __shared__ float s_sum[BLOCK];
    int tid = threadIdx.x;
    /* i < n + PER_BLOCK <= 2^30 + 512: an int holds it */
    int i = blockIdx.x * PER_BLOCK + tid;
    float x = 0.0f; /* elements past n add nothing */
    if (i < n)
        x = in[i];
    if (i + BLOCK < n)
        x += in[i + BLOCK];
    s_sum[tid] = x;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        /* consecutive threads, consecutive words: each warp's request is conflict-free */
        if (tid < s)
            s_sum[tid] += s_sum[tid + s];
        __syncthreads(); /* step s / 2 reads what this step wrote */
    }
    if (tid == 0)
        out[blockIdx.x] = s_sum[0];
}

void sum_tree(const float *d_in, int n, float *d_out, void *d_scratch)
{
    /* Each pass writes its partials just past the ones it reads, never over them: block b
     * would write partial b while block b / PER_BLOCK may not yet have read it. At n = 2^30
     * the passes keep 2^21 + 4096 + 8 floats, under membound_scratch_bytes(1). */
    float *partials = static_cast<float *>(d_scratch);
    const float *src = d_in;
    int count = n;
    while (count > PER_BLOCK) {
        int blocks = cdiv(count, PER_BLOCK);
        sum_tree_kernel<<<blocks, BLOCK>>>(src, count, partials);
        CUDA_CHECK(cudaGetLastError());
        src = partials;
        partials += blocks;
        count = blocks;
    }
    /* one block covers what is left: its partial is the sum */
    sum_tree_kernel<<<1, BLOCK>>>(src, count, d_out);
    CUDA_CHECK(cudaGetLastError());
}
