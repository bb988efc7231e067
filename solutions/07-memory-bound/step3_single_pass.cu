/* step3_single_pass.cu: chapter 07, step 3 of 5, the sum in one launch. The reference.
 *
 * Step 2 (step2_shuffle.cu) is two launches: the blocks' partials, then one block over them.
 *   At n = 2^28 the second is lost in the first; at n = 2^20 the reading takes about a
 *   microsecond, and a launch costs a few (4.9 us back to back on the reference H200's
 *   host), so the launches are most of the time.
 * Change (here): one launch. Every block sums its share as in step 2 and writes its partial
 *   to the scratch; then thread 0 takes a ticket, atomicAdd(counter, 1), which returns how
 *   many blocks finished before it. The block that draws the last ticket, gridDim.x - 1,
 *   knows that every other partial has been written, sums them all with the same block code,
 *   writes *d_out and sets the counter back to 0. The other blocks just leave. The counter is
 *   in the scratch, which holds garbage on entry, so the launcher zeroes it first
 *   (cudaMemsetAsync: a memory operation on the stream, not a kernel launch).
 *   - Why the fence: a block's partial and its ticket are two writes to two addresses, and
 *     without a fence between them nothing makes other SMs see them in that order. The
 *     ticket is an atomic performed at the L2; the partial is a plain store that may still
 *     be on its way there. Then the last block can draw its ticket, read a partial that has
 *     not landed, and sum a stale value (here, the scratch's garbage). __threadfence()
 *     after the store and before the atomic makes the partial visible to the whole device
 *     before the ticket that announces it. The last block fences again after its ticket,
 *     before its threads read, and reads with __ldcg (at the L2, bypassing L1), so that no
 *     read of a partial can be served from a copy older than the ticket.
 *   - Neither this race nor a missing fence shows on the CPU backend, whose blocks run one
 *     after another (or on x86 cores, which keep stores in order); the concept test counts
 *     launches instead, and a GPU run is where the fence earns its place.
 * Expect: at n = 2^20, faster than step 2 by up to a launch: the 4-byte memset is a stream
 *   operation too, and what it costs beside a kernel launch is for the bench to show. At
 *   n = 2^28 the same as step 2 (the last block's few hundred partials are nothing against
 *   1 GiB). CUB is two kernels at 2^20, so there this step should be ahead of it. */
#include <stdint.h>

#include "cuda_check.h"
#include "sm_count.h"
#include "membound.h"

#define BLOCK 256         /* a multiple of 32: warps are whole */
#define BLOCKS_PER_SM 4
#define UNROLL 4          /* float4 loads in flight a thread */
#define FULL_MASK 0xffffffffu

/* ---- as in step 2: a warp's sum, a block's sum, a thread's share of the loads ---------- */

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


/* ---- new in step 3: one launch ---------------------------------------------------------- */

static __global__ void sum_single_pass_kernel(const float *__restrict__ in, int n,
                                              float *partials, unsigned *counter,
                                              float *__restrict__ out)
{
    __shared__ bool s_last; /* this block drew the last ticket */
    float v = block_sum(thread_sum(in, n));
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = v;
        __threadfence(); /* the partial is visible to every block before the ticket is */
        unsigned ticket = atomicAdd(counter, 1u); /* how many blocks finished before this one */
        s_last = ticket == gridDim.x - 1;
        if (s_last)
            __threadfence(); /* and nothing below is read before the ticket was drawn */
    }
    /* also the barrier between block_sum's two uses of its shared words: warp 0 has read
     * them by the time thread 0 gets here */
    __syncthreads();
    if (!s_last)
        return;

    /* the last block: every partial is written and visible; read them at the L2 */
    int blocks = gridDim.x;
    float p = 0.0f;
    for (int b = threadIdx.x; b < blocks; b += blockDim.x)
        p += __ldcg(&partials[b]);
    p = block_sum(p);
    if (threadIdx.x == 0) {
        *out = p;
        /* the launcher's memset already zeroes the counter before every launch; the reset
         * keeps the kernel correct when it is launched again without one (replayed alone
         * in a CUDA graph, say) */
        *counter = 0;
    }
}

/* Blocks for n elements: at most BLOCKS_PER_SM an SM, fewer when n does not give every
 * thread one round of UNROLL float4s. */
static int grid_size(int n)
{
    int want = cdiv(n, BLOCK * UNROLL * 4);
    int most = BLOCKS_PER_SM * sm_count();
    return want < most ? want : most;
}

void sum_single_pass(const float *d_in, int n, float *d_out, void *d_scratch)
{
    /* the scratch: the ticket counter, then (a cache line further on) one partial a block */
    unsigned *counter = static_cast<unsigned *>(d_scratch);
    float *partials = reinterpret_cast<float *>(static_cast<char *>(d_scratch) + 128);
    CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof *counter)); /* garbage on entry */
    sum_single_pass_kernel<<<grid_size(n), BLOCK>>>(d_in, n, partials, counter, d_out);
    CUDA_CHECK(cudaGetLastError());
}
