/* step2_shuffle.cu: chapter 07, step 2 of 5, the sum with float4 loads and warp shuffles.
 * The reference.
 *
 * Step 1 (step1_tree.cu) reads every element once, yet it leaves most of the bandwidth
 *   unused: two loads in flight a thread, n / 512 short blocks, and a block's time spent in
 *   eight barrier steps in which most of its warps do nothing.
 * Change (here):
 *   - Few blocks, long loops: a grid of BLOCKS_PER_SM blocks an SM (the SM count asked for
 *     once), each thread walking the array in a grid-stride loop. The grid is sized for the
 *     device, not for n, so no time goes into launching and retiring blocks, and the
 *     partials are one a block: a few hundred, not n / 512.
 *   - 16-byte loads, several in flight: the loop reads float4s (one LDG.128 for four floats,
 *     a warp's request 512 contiguous bytes) and issues UNROLL = 4 of them before it adds
 *     any, into four independent accumulators. The memory is several hundred ns away, and
 *     only bytes in flight hide that (Little's law): 64 bytes a thread, BLOCK x
 *     BLOCKS_PER_SM x 64 bytes an SM.
 *   - Shuffles, not shared memory, for a warp's 32 values: __shfl_down_sync passes a
 *     register from one lane to another, five steps for 32 values with no shared memory and
 *     no barrier. Each warp sums its lanes this way; lane 0 of each puts the warp's value in
 *     shared memory (8 words for 256 threads), one __syncthreads, and warp 0 sums those with
 *     the same five shuffles. One barrier a block, against step 1's nine.
 *   - Alignment and the tail: a float4 load needs a 16-byte aligned address, and n need not
 *     be a multiple of 4. The up to 3 floats before the first 16-byte boundary of d_in (none
 *     for a pointer from cudaMalloc) and the up to 3 after the last whole float4 are loaded
 *     one at a time, one a thread.
 *   - The blocks' partials go to d_scratch, and a second launch of one block sums them with
 *     the same kernel (the scratch is 256-byte aligned, so its float4 path applies too).
 * Expect: close to CUB (sum_cub_gpu.cu) and to the read half of the copy: about 4.5 TB/s on
 *   an H200 at n = 2^28, where CUB reads about 4.6. At n = 2^20 (4 MiB, about a
 *   microsecond of reading) the two launches cost more than the reading; step 3 makes
 *   them one. */
#include <stdint.h>

#include "cuda_check.h"
#include "sm_count.h"
#include "membound.h"

#define BLOCK 256         /* a multiple of 32: warps are whole */
#define BLOCKS_PER_SM 4
#define UNROLL 4          /* float4 loads in flight a thread */
#define FULL_MASK 0xffffffffu

/* The sum of v over the 32 lanes of a warp, in lane 0. All 32 lanes must call it: the full
 * mask says they do, and a lane that has left or is elsewhere makes the result undefined. */
static __device__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

/* The sum of v over the block, in thread 0. Every thread of the block calls it (it holds a
 * __syncthreads), and the block is whole warps. */
static __device__ float block_sum(float v)
{
    __shared__ float s_warp[32]; /* one value a warp, up to 1024 threads */
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_sum(v);
    if (lane == 0)
        s_warp[warp] = v;
    __syncthreads();
    if (warp == 0) {
        /* all 32 lanes of warp 0 take part, as the full mask promises; those past the
         * block's warps add 0 */
        v = lane < warps ? s_warp[lane] : 0.0f;
        v = warp_sum(v);
    }
    return v;
}

static __device__ void add4(float4 &acc, float4 v)
{
    acc.x += v.x;
    acc.y += v.y;
    acc.z += v.z;
    acc.w += v.w;
}

/* This thread's share of in[0, n): float4s in a grid-stride loop, and the floats before the
 * first 16-byte boundary and after the last whole float4, one a thread. n <= 2^30, so the
 * float4 indices stay below 2^28 and i + UNROLL * stride fits an int. */
static __device__ float thread_sum(const float *__restrict__ in, int n)
{
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    /* floats before in's first 16-byte boundary: 0 for a cudaMalloc pointer */
    int head = (int)((16 - reinterpret_cast<uintptr_t>(in) % 16) % 16 / sizeof(float));
    if (head > n)
        head = n;
    const float4 *in4 = reinterpret_cast<const float4 *>(in + head);
    int n4 = (n - head) / 4;
    int tail = head + 4 * n4; /* the first float after the last whole float4 */

    float4 acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++)
        acc[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    int i = tid;
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        /* the loads first: independent of each other and of the adds, so all in flight */
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            v[u] = in4[i + u * stride];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            add4(acc[u], v[u]);
    }
    for (; i < n4; i += stride) /* the last round: fewer than UNROLL float4s a thread */
        add4(acc[0], in4[i]);

    float x = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; u++)
        x += (acc[u].x + acc[u].y) + (acc[u].z + acc[u].w);
    if (tid < head)
        x += in[tid];
    if (tid < n - tail)
        x += in[tail + tid];
    return x;
}

static __global__ void sum_shuffle_kernel(const float *__restrict__ in, int n,
                                          float *__restrict__ out)
{
    float v = block_sum(thread_sum(in, n));
    if (threadIdx.x == 0)
        out[blockIdx.x] = v;
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
