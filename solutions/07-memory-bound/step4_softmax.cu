/* step4_softmax.cu: chapter 07, step 4 of 5, the reference: row softmax reading each row once.
 *
 * Baseline (softmax_three_pass.cu, given): three kernels, a block a row each: the row's max
 *   into the scratch, the sum of exp(x - max) into the scratch, then every output. The row is
 *   read three times and written once: 4 passes of traffic where a copy makes 2, so at most
 *   half of copy's speed, less the two extra launches and the scalar loads.
 * Here: one kernel. A thread keeps its share of the row in registers, takes its own max and
 *   its own sum of exp(x - max) over what it holds, and the threads combine their (max, sum)
 *   pairs with the online-softmax merge: when the max grows from m to m', a sum taken against
 *   m is rescaled by exp(m - m') before the other sum is added, so one reduction of pairs
 *   gives both statistics (a shuffle tree within the warp, shared memory across warps).
 *   Within a warp that holds a whole row, the 32 pairs merge at once: the row's max by a
 *   shuffle tree, then each lane rescales its sum once, by exp(m_lane - m), and a second
 *   tree adds them; one exponential a lane instead of one at each level of pairwise merges,
 *   which matters where a lane holds only 8 values.
 *   Every output is then exp(x - m_thread) * exp(m_thread - m_row) / sum: the exponentials
 *   were computed once, in registers, and the row is read from memory once and written once.
 *   The launcher chooses from cols:
 *     cols <= 1024          a warp a row, 8 rows a block: no barrier, no shared memory
 *     1024 < cols <= 32768  a block a row, the row held in registers: 32 values a thread,
 *                           as few threads as that needs (up to 1024), so that each thread
 *                           has several 16-byte loads in flight
 *     longer fp32 rows and bf16 rows longer than 65536, 16-byte aligned, on a GPU with
 *                           cooperative launch: the row split across persistent blocks (the
 *                           split kernel says how), each holding a slice in registers (fp32:
 *                           8192 values widened; bf16: 16384 as loaded, 64 a thread in 32
 *                           registers, widened on each of three passes) and exchanging (max,
 *                           sum) pairs with the row's other slices through the scratch. One
 *                           read of the row, one write, like the shorter rows.
 *     32768 < cols <= 65536, bf16 rows 16-byte aligned: a block a row, the row held as it was
 *                           loaded, 64 bf16 a thread, widened on each of three passes (max,
 *                           sum, outputs), the exponential taken twice (on the H200 faster
 *                           than the split up to 65536 columns, slower beyond)
 *     32768 < cols <= 65536, fp32 rows 16-byte aligned, where the rows are not split but the
 *                           GPU launches clusters (sm_90): a cluster of 2 blocks a row, the
 *                           row held in their registers, 32 values a thread. Each block reduces
 *                           its (max, sum) pair as the block kernel does and leaves it in its
 *                           shared memory; after the cluster's barrier every thread reads the
 *                           C pairs through distributed shared memory and merges them.
 *     the other rows (and the CPU backend's longer rows): a block a row that does not hold
 *                           it. The first pass streams the row through the online update
 *                           (per thread: every 16 values merged into a running (max, sum)),
 *                           the second reads it again for the outputs. 3 passes of traffic
 *                           instead of 2: at most ~67% of copy, a little more where the
 *                           second read hits L2.
 *   16-byte loads and stores (a float4, or 8 bf16) where every row starts on a 16-byte
 *   boundary (cols % 4 == 0 for f32, cols % 8 == 0 for bf16, and 16-byte aligned pointers),
 *   one element at a time otherwise.
 * Numerics: fp32 throughout, bf16 widened on the load and rounded once on the store
 *   (__float2bfloat16_rn). fp32 rows: expf, not __expf: expf's error is at most 2 ulp over its
 *   whole range, where __expf's grows with |x| and reaches tens of ulp on the tiny outputs at
 *   the far end of the row's range (not good enough for an f32 output compared against a
 *   double-precision reference). bf16 rows: the SFU's ex2 on (x - max) log2 e (exp_of says
 *   why): half the bytes an element, so twice the elements a clock at the copy's bandwidth,
 *   and instructions an element become the limit before the SFU does.
 *   Edge cases: the max keeps a NaN where fmaxf would drop it (fp32; bf16's fmaxf drops it,
 *   and its exponential is NaN all the same), so m and every exponential taken against it are
 *   NaN (the NaN's own exponential also reaches the sum): a row holding a NaN is NaN
 *   throughout. -inf entries give exp(-inf) = 0. A thread (or lane) whose values
 *   are all -inf (or that holds none) has max -inf and sum 0; it subtracts 0 instead of its
 *   max, because -inf - (-inf) is NaN (exp_base below). A row that is all -inf comes out NaN
 *   (0 / 0), as in PyTorch; the contract does not define it.
 * Expect on an H200 (copy ~4 TB/s): close to copy for rows from 256 to 32768 columns (the
 *   goal is 90%; PyTorch's softmax measured 63% of copy there), about twice the three-pass
 *   baseline; split rows beyond 32768 lose a little to each slice's wait for its row, most
 *   where a row has many slices. Below ~128 columns (f32) a
 *   warp a row leaves lanes idle and the rows' tails dominate. */
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "sm_count.h"
#include "membound.h"
#include "rows.cuh" /* one access widened, and reread (given) */

/* Thread block clusters (sm_90): a row too long for one block is held by a cluster of them,
 * which exchange their statistics through distributed shared memory. The CPU backend launches
 * no clusters; there, and on a GPU that cannot, such rows are streamed. */
#ifndef EMU_CUDA_RUNTIME_H
#define HAVE_CLUSTERS 1
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#else
#define HAVE_CLUSTERS 0
#endif

#define WARP 32
#define FULL_MASK 0xffffffffu
#define ROWS_PER_BLOCK 8      /* the warp-a-row kernel: 8 warps, 8 rows a block */
#define WARP_ROW_MAX 1024     /* up to this many columns a warp holds a row: 32 values a lane */
#define HELD_ROW_MAX 32768    /* up to this many a block holds it: 32 values a thread, 1024 threads */
#define PACKED_ROW_MAX 65536  /* bf16 rows up to this many a block holds as loaded: 64 a thread */
#define STREAM_THREADS 1024   /* the streaming kernel, for longer rows */
#define STREAM_EPT 16         /* values a thread loads at a time there: 64 bytes of f32 in flight */
#define CLUSTER_MAX 2         /* rows up to 2 * HELD_ROW_MAX held by a cluster (fp32 only): see
                                 the cluster launcher for why no more */

/* ---- a thread's slice of a row -------------------------------------------------------------
 * The slice of `nthreads` threads starting at column `first` covers EPT * nthreads columns;
 * thread `tid` holds EPT of them, as EPT / W accesses of W elements: access k is at column
 * first + (tid + k * nthreads) * W, so each access of a warp is one contiguous, coalesced run.
 * With W > 1, cols % W == 0: an access lies wholly inside the row or wholly past its end.
 * Columns past the end read as `fill`. */
template <int EPT, int W, typename T>
static __device__ __forceinline__ void load_slice(const T *__restrict__ row, int cols, int first,
                                                  int tid, int nthreads, float fill, float (&v)[EPT])
{
    static_assert(EPT % W == 0, "a slice is whole accesses");
#pragma unroll
    for (int k = 0; k < EPT / W; ++k) {
        const int col = first + (tid + k * nthreads) * W;
        if (col < cols) {
            load_w<W>(row + col, &v[k * W]);
        } else {
#pragma unroll
            for (int j = 0; j < W; ++j)
                v[k * W + j] = fill;
        }
    }
}

template <int EPT, int W, typename T>
static __device__ __forceinline__ void store_slice(T *__restrict__ row, int cols, int first,
                                                   int tid, int nthreads, const float (&v)[EPT])
{
#pragma unroll
    for (int k = 0; k < EPT / W; ++k) {
        const int col = first + (tid + k * nthreads) * W;
        if (col < cols)
            store_w<W>(row + col, &v[k * W]);
    }
}

/* ---- the online (max, sum) pair ----------------------------------------------------------
 * (m, s) stands for a set of values: m their max (-inf for none), s the sum of exp(x - m). */

/* max that keeps a NaN from either side (fmaxf returns the other operand) */
static __device__ __forceinline__ float max_nan(float a, float b)
{
    return (a > b || a != a) ? a : b;
}

/* exp(d) for d = x - base <= 0, an element's exponential. FAST (bf16 rows): 2^(d log2 e) on
 * the SFU's ex2 (ex2.approx.f32, relative error about 2^-22), three instructions with the
 * subtraction where expf takes about eight. A bf16 element is 4 bytes of traffic where an
 * fp32 one is 8: at the copy's ~3.7 TB/s over 132 SMs at 1.98 GHz an SM must finish about 3.5
 * bf16 elements a clock, and at 128 instructions a clock that leaves about 36 instructions an
 * element for everything (loads, max, exponential, sum, scale, conversions, stores and the
 * row's reduction). Its error, d u relative from rounding d log2 e, is inside the tolerance's
 * 4 d u, and far below bf16's 2^-8. fp32 rows keep expf: twice the bytes an element leave
 * room for it. */
template <bool FAST>
static __device__ __forceinline__ float exp_of(float d)
{
    if constexpr (FAST) {
#ifdef __CUDA_ARCH__
        float y;
        asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(d * 1.4426950408889634f));
        return y;
#else
        return exp2f(d * 1.4426950408889634f);
#endif
    } else {
        return expf(d);
    }
}

/* What exp's arguments are taken against: the max, or 0 while every value is -inf. Then
 * exp(-inf - 0) = 0 as it should be, where exp(-inf - (-inf)) would be exp(NaN). */
static __device__ __forceinline__ float exp_base(float m)
{
    return m == -INFINITY ? 0.0f : m;
}

/* (m, s) <- the pair of both sets: each sum rescaled to the new max before they are added.
 * The side that holds the new max would be scaled by exp(0) = 1, so one exponential does:
 * the other side's. A NaN on either side gives m_new NaN, keep_a false and e NaN. Written
 * with explicit FMAs, so that the two lanes of an exchange, each passing its own pair
 * first, compute the same bits. */
static __device__ __forceinline__ void merge(float &m, float &s, float m_b, float s_b)
{
    const float m_new = max_nan(m, m_b);
    const float base = exp_base(m_new);
    const bool keep_a = m == m_new; /* a holds the max: b is rescaled */
    const float e = expf((keep_a ? m_b : m) - base);
    s = keep_a ? __fmaf_rn(s_b, e, s) : __fmaf_rn(s, e, s_b);
    m = m_new;
}

/* The pair of a thread's own EPT values, which become exp(v - base): the max first (they are
 * in registers), then each exponential once. FAST: fmaxf, one instruction where max_nan takes
 * three; a NaN it drops still reaches the sum (exp(NaN) is NaN), so the row is NaN all the
 * same, and a thread whose values are all NaN has max -inf and base 0. */
template <bool FAST, int EPT>
static __device__ __forceinline__ void slice_max_sum(float (&v)[EPT], float &m, float &s)
{
    m = -INFINITY;
#pragma unroll
    for (int p = 0; p < EPT; ++p)
        m = FAST ? fmaxf(m, v[p]) : max_nan(m, v[p]);
    const float base = exp_base(m);
    s = 0.0f;
#pragma unroll
    for (int p = 0; p < EPT; ++p) {
        v[p] = exp_of<FAST>(v[p] - base);
        s += v[p];
    }
}

/* the fast exponential for bf16 rows (exp_of) */
template <typename T> constexpr bool fast_exp = sizeof(T) == 2;

/* Every lane ends with the warp's pair: a butterfly over all 32 lanes (a lane holding nothing
 * holds (-inf, 0), which changes nothing). merge is symmetric, so both lanes of each exchange
 * compute the same bits. */
static __device__ __forceinline__ void warp_merge(float &m, float &s)
{
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        merge(m, s, __shfl_xor_sync(FULL_MASK, m, offset), __shfl_xor_sync(FULL_MASK, s, offset));
}

/* The warp's pair in every lane, for a row a warp holds: the merge of the 32 lanes' pairs at
 * once. The row's max m by a butterfly of max_nan; then each lane rescales its own sum to m
 * with one exponential, exp(m_lane - m), and a butterfly of additions sums them. Pairwise
 * merges (warp_merge) take an exponential at each of the five levels; this takes one, and the
 * same factor scales the lane's outputs. Returns m; s becomes the row's sum, *lane_scale
 * the lane's exp(m_lane - m) (0 for a lane whose values are all -inf, or that holds none). */
static __device__ __forceinline__ float warp_max_sum(float m_lane, float &s, float *lane_scale)
{
    float m = m_lane;
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        m = max_nan(m, __shfl_xor_sync(FULL_MASK, m, offset));
    *lane_scale = expf(m_lane - exp_base(m));
    s *= *lane_scale;
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        s += __shfl_xor_sync(FULL_MASK, s, offset);
    return m;
}

/* Every thread ends with the block's pair (blockDim.x a multiple of 32). Each warp leaves its
 * pair in shared memory; after the barrier every warp merges all of them itself, which saves
 * the second barrier a broadcast from one warp would need. Once a block: a second call would
 * overwrite s_m while slower warps may still read it. */
static __device__ __forceinline__ void block_merge(float &m, float &s)
{
    __shared__ float s_m[WARP], s_s[WARP];
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    warp_merge(m, s);
    if (lane == 0) {
        s_m[warp] = m;
        s_s[warp] = s;
    }
    __syncthreads(); /* every warp's pair is written before any warp reads them */
    const bool has = lane < (int)(blockDim.x / WARP);
    m = has ? s_m[lane] : -INFINITY;
    s = has ? s_s[lane] : 0.0f;
    warp_merge(m, s);
}

/* block_merge's result in two plain reductions, as warp_max_sum does for a warp: the block's
 * max by max alone, then each thread rescales its sum to it with one exponential and the sums
 * are added. Two barriers instead of one, but no exponential inside the trees, and so fewer
 * registers live beside a held row. Returns the thread's factor exp(m_thread - m); s becomes
 * the block's sum. Once a block, as block_merge. */
static __device__ __forceinline__ float block_max_sum(float m_thread, float &s)
{
    __shared__ float s_max[WARP], s_sum[WARP];
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    const bool has = lane < (int)(blockDim.x / WARP);
    float m = m_thread;
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        m = max_nan(m, __shfl_xor_sync(FULL_MASK, m, offset));
    if (lane == 0)
        s_max[warp] = m;
    __syncthreads(); /* every warp's max is written */
    m = has ? s_max[lane] : -INFINITY;
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        m = max_nan(m, __shfl_xor_sync(FULL_MASK, m, offset));
    const float factor = expf(m_thread - exp_base(m));
    s *= factor;
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        s += __shfl_xor_sync(FULL_MASK, s, offset);
    if (lane == 0)
        s_sum[warp] = s;
    __syncthreads(); /* every warp's sum is written */
    s = has ? s_sum[lane] : 0.0f;
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        s += __shfl_xor_sync(FULL_MASK, s, offset);
    return factor;
}

/* ---- the kernels ---------------------------------------------------------------------------
 * After the reduction a thread holds exp(x - base_t) for its values (base_t its own max, or 0
 * if they are all -inf) and the row's (m, s). Its outputs are v * exp(m_t - m) / s, with m_t,
 * not base_t: for an all -inf slice v = 0 and exp(-inf - m) = 0, where exp(0 - m) could be
 * inf and give 0 * inf = NaN. */

/* A warp a row, the row in registers: EPT values a lane, cols <= 32 * EPT. */
template <typename T, int EPT, int W>
static __global__ void __launch_bounds__(ROWS_PER_BLOCK * WARP)
softmax_warp_kernel(const T *__restrict__ in, T *__restrict__ out, int rows, int cols)
{
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
    if (row >= rows)
        return; /* whole warps leave: the shuffles below always see 32 lanes */
    const int lane = threadIdx.x % WARP;
    float v[EPT], m, s, lane_scale;
    load_slice<EPT, W>(in + (size_t)row * cols, cols, 0, lane, WARP, -INFINITY, v);
    slice_max_sum<fast_exp<T>>(v, m, s);
    warp_max_sum(m, s, &lane_scale);
    const float scale = lane_scale / s;
#pragma unroll
    for (int p = 0; p < EPT; ++p)
        v[p] *= scale;
    store_slice<EPT, W>(out + (size_t)row * cols, cols, 0, lane, WARP, v);
}

/* A block a row, the row in registers: EPT values a thread, cols <= blockDim.x * EPT. */
template <typename T, int EPT, int W>
static __global__ void __launch_bounds__(1024)
softmax_block_kernel(const T *__restrict__ in, T *__restrict__ out, int cols)
{
    const size_t offset = (size_t)blockIdx.x * cols;
    float v[EPT], m, s;
    load_slice<EPT, W>(in + offset, cols, 0, threadIdx.x, blockDim.x, -INFINITY, v);
    slice_max_sum<fast_exp<T>>(v, m, s);
    const float m_thread = m;
    block_merge(m, s);
    const float scale = expf(m_thread - m) / s;
#pragma unroll
    for (int p = 0; p < EPT; ++p)
        v[p] *= scale;
    store_slice<EPT, W>(out + offset, cols, 0, threadIdx.x, blockDim.x, v);
}


/* A block a row for 16-byte aligned bf16 rows of up to PACKED_ROW_MAX columns: 64 values a
 * thread, kept as they were loaded (8 bf16 to a uint4, 32 registers) and widened each time
 * they are read, because 64 floats would not fit the 64 registers a thread has at 1024 threads.
 * The price is a second exponential an element (the first only reaches the sum): cheap with
 * exp_of's ex2, and the row is still read once. Columns past the end hold -inf (0xff80). */
static __global__ void __launch_bounds__(1024)
softmax_block_packed_kernel(const __nv_bfloat16 *__restrict__ in, __nv_bfloat16 *__restrict__ out,
                            int cols)
{
    constexpr int W = 8, ACCESSES = PACKED_ROW_MAX / 1024 / W; /* 8 accesses, 64 values */
    uint4 q[ACCESSES];
#pragma unroll
    for (int k = 0; k < ACCESSES; ++k) {
        const int col = (threadIdx.x + k * blockDim.x) * W;
        q[k] = col < cols ? *reinterpret_cast<const uint4 *>(in + (size_t)blockIdx.x * cols + col)
                          : make_uint4(0xff80ff80u, 0xff80ff80u, 0xff80ff80u, 0xff80ff80u);
    }
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < ACCESSES; ++k) {
        float v[W];
        widen8(q[k], v);
#pragma unroll
        for (int j = 0; j < W; ++j)
            m = fmaxf(m, v[j]);
    }
    const float m_thread = m;
    reread(q);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < ACCESSES; ++k) {
        float v[W];
        widen8(q[k], v);
#pragma unroll
        for (int j = 0; j < W; ++j)
            s += exp_of<true>(v[j] - exp_base(m_thread));
    }
    const float scale = block_max_sum(m_thread, s) / s, base = exp_base(m_thread);
    reread(q);
    /* the row's address again, not kept through the passes: every register counts here */
    int col = threadIdx.x * W, stride = blockDim.x * W, row = blockIdx.x;
    asm volatile("" : "+r"(row));
    __nv_bfloat16 *y = out + (size_t)row * cols + col;
#pragma unroll
    for (int k = 0; k < ACCESSES; ++k) {
        if (col < cols) {
            float v[W];
            widen8(q[k], v);
#pragma unroll
            for (int j = 0; j < W; ++j)
                v[j] = exp_of<true>(v[j] - base) * scale;
            store_w<W>(y, v);
        }
        asm volatile("" : "+r"(stride)); /* one address at a time, not all eight kept */
        col += stride;
        y += stride;
    }
}

/* A block a row too long to hold: the online update over the row in slices of STREAM_EPT
 * values a thread (each slice's pair merged into the running one), then a second read. */
template <typename T, int W>
static __global__ void __launch_bounds__(STREAM_THREADS)
softmax_stream_kernel(const T *__restrict__ in, T *__restrict__ out, int cols)
{
    const T *x = in + (size_t)blockIdx.x * cols;
    T *y = out + (size_t)blockIdx.x * cols;
    const int step = STREAM_EPT * blockDim.x;
    float m = -INFINITY, s = 0.0f;
    for (int first = 0; first < cols; first += step) {
        float v[STREAM_EPT], m_slice, s_slice;
        load_slice<STREAM_EPT, W>(x, cols, first, threadIdx.x, blockDim.x, -INFINITY, v);
        slice_max_sum<fast_exp<T>>(v, m_slice, s_slice);
        merge(m, s, m_slice, s_slice);
    }
    block_merge(m, s);
    const float inv_s = 1.0f / s;
    for (int first = 0; first < cols; first += step) {
        float v[STREAM_EPT];
        load_slice<STREAM_EPT, W>(x, cols, first, threadIdx.x, blockDim.x, -INFINITY, v);
#pragma unroll
        for (int p = 0; p < STREAM_EPT; ++p)
            v[p] = exp_of<fast_exp<T>>(v[p] - m) * inv_s;
        store_slice<STREAM_EPT, W>(y, cols, first, threadIdx.x, blockDim.x, v);
    }
}

#if HAVE_CLUSTERS
/* A cluster of blocks a row (cluster dimensions (C, 1, 1), C blocks a row in the grid): block
 * r of the cluster holds columns [r * span, r * span + span) of the row in registers, EPT
 * values a thread, span = EPT * blockDim.x. Each block reduces its pair as the block kernel
 * does and leaves it in its shared memory; after the cluster's barrier every thread merges the
 * C pairs itself, in rank order, so that every block of the row holds the same bits. Rows are
 * 16-byte aligned here (W = 16 bytes). */
template <typename T, int EPT, int W>
static __global__ void __launch_bounds__(1024)
softmax_cluster_kernel(const T *__restrict__ in, T *__restrict__ out, int cols, int span)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ float s_pair[2]; /* this block's (max, sum), read by the cluster */
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned nblocks = cluster.num_blocks(), rank = cluster.block_rank();
    const size_t offset = (size_t)(blockIdx.x / nblocks) * cols;
    const int first = (int)rank * span, limit = min(cols, first + span);
    float v[EPT], m, s;
    load_slice<EPT, W>(in + offset, limit, first, threadIdx.x, blockDim.x, -INFINITY, v);
    slice_max_sum<fast_exp<T>>(v, m, s);
    const float m_thread = m;
    block_merge(m, s);
    if (threadIdx.x == 0) {
        s_pair[0] = m;
        s_pair[1] = s;
    }
    cluster.sync(); /* every block's pair is written (and visible to the cluster) */
    float m_row = -INFINITY, s_row = 0.0f;
    for (unsigned r = 0; r < nblocks; ++r) {
        const float *pair = cluster.map_shared_rank(s_pair, r);
        merge(m_row, s_row, pair[0], pair[1]);
    }
    cluster.sync(); /* no block leaves while another still reads its shared memory */
    const float scale = expf(m_thread - m_row) / s_row;
#pragma unroll
    for (int p = 0; p < EPT; ++p)
        v[p] *= scale;
    store_slice<EPT, W>(out + offset, limit, first, threadIdx.x, blockDim.x, v);
#else
    __trap(); /* clusters exist from sm_90; the launcher asks the device before it launches */
#endif
}
#endif

#if HAVE_CLUSTERS
/* ---- a row split across persistent blocks (GPU) ---------------------------------------------
 * Rows too long for one block are cut into slices of SPLIT_THREADS * SPLIT_EPT values, a slice
 * held in one block's registers. The blocks are persistent: exactly as many as the GPU holds at
 * once (a cooperative launch guarantees they are all resident), each taking slices in order from
 * a ticket counter. A block reduces its slice to its (max, sum) pair, publishes the pair in the
 * scratch and adds one to its row's counter (release: the fence orders the pair before the
 * count), waits until the counter says every slice of the row has published (acquire), merges
 * the row's pairs from L2 and writes its slice from registers. The row is read once and written
 * once, on every SM, and while one block waits the SM's other blocks load, reduce or store.
 * It cannot deadlock: tickets go out in order and a block publishes before it waits, so every
 * row but the last one ticketed has all its slices held by blocks that will publish; the last
 * one's are too once the grid holds at least a row's slices (the launcher checks).
 * Every block of a row merges the same pairs in the same order: the same bits everywhere. */
#define SPLIT_THREADS 256 /* a slice: 256 threads x 32 values, 4 blocks an SM at 64 registers */
#define SPLIT_EPT 32
#define SPLIT_MIN_BLOCKS 4
#define SPLIT_PACKED_ACCESSES 8 /* bf16: 8 accesses of 8 a thread as loaded, a slice of 16384 */

/* The block's max (a NaN kept) and sum in every thread, each through its own WARP floats of
 * shared memory: after the barrier every warp reduces all the warps' values itself. */
static __device__ __forceinline__ float block_max(float m, float *s_part)
{
    const int lane = threadIdx.x % WARP;
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        m = max_nan(m, __shfl_xor_sync(FULL_MASK, m, offset));
    if (lane == 0)
        s_part[threadIdx.x / WARP] = m;
    __syncthreads(); /* every warp's max is written */
    m = lane < (int)(blockDim.x / WARP) ? s_part[lane] : -INFINITY;
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        m = max_nan(m, __shfl_xor_sync(FULL_MASK, m, offset));
    return m;
}

static __device__ __forceinline__ float block_sum(float s, float *s_part)
{
    const int lane = threadIdx.x % WARP;
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        s += __shfl_xor_sync(FULL_MASK, s, offset);
    if (lane == 0)
        s_part[threadIdx.x / WARP] = s;
    __syncthreads(); /* every warp's sum is written */
    s = lane < (int)(blockDim.x / WARP) ? s_part[lane] : 0.0f;
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        s += __shfl_xor_sync(FULL_MASK, s, offset);
    return s;
}

/* Slice t of row `row` publishes its block's pair (m, s), counts itself in and waits for the
 * row's other slices; then warp 0 merges the row's pairs from L2, in slice order, and every
 * thread gets the row's pair. Called by every thread of the block, once a slice: the barrier
 * at the top of the ticket loop keeps s_row from being written while another thread still
 * reads the last slice's. */
static __device__ __forceinline__ float2 split_row_pair(float m, float s, unsigned t, int row,
                                                        int slices, float2 *__restrict__ pairs,
                                                        unsigned *__restrict__ counters)
{
    __shared__ float2 s_row;
    if (threadIdx.x < WARP) {
        if (threadIdx.x == 0) {
            pairs[t] = make_float2(m, s);
            __threadfence(); /* the pair is visible before the count says so */
            atomicAdd(&counters[row], 1u);
            const volatile unsigned *count = &counters[row];
            while (*count < (unsigned)slices)
                ;
            __threadfence(); /* the others' pairs are read after their count */
        }
        __syncwarp();
        float m_row = -INFINITY, s_row_sum = 0.0f;
        for (int k = threadIdx.x; k < slices; k += WARP) {
            const float2 p = __ldcg(&pairs[(size_t)row * slices + k]); /* from L2 */
            merge(m_row, s_row_sum, p.x, p.y);
        }
        warp_merge(m_row, s_row_sum);
        if (threadIdx.x == 0)
            s_row = make_float2(m_row, s_row_sum);
    }
    __syncthreads(); /* the row's pair is in s_row */
    return s_row;
}

/* The block's next ticket into s_ticket (the kernel's shared variable), the same in every
 * thread; false when every slice of every row is taken. The barrier also ends the last slice.
 * Slice t is slice t % slices of row t / slices. */
static __device__ __forceinline__ bool split_ticket(unsigned *__restrict__ counters, int rows,
                                                    int slices, unsigned &s_ticket)
{
    if (threadIdx.x == 0)
        s_ticket = atomicAdd(&counters[rows], 1u); /* the ticket counter follows the rows' */
    __syncthreads(); /* the ticket is in; and every thread is done with the last slice */
    return s_ticket < (unsigned)rows * (unsigned)slices;
}

template <typename T, int W>
static __global__ void __launch_bounds__(SPLIT_THREADS, SPLIT_MIN_BLOCKS)
softmax_split_kernel(const T *__restrict__ in, T *__restrict__ out, int rows, int cols, int slices,
                     float2 *__restrict__ pairs, unsigned *__restrict__ counters)
{
    __shared__ unsigned s_ticket;
    while (split_ticket(counters, rows, slices, s_ticket)) {
        const unsigned t = s_ticket;
        const int row = (int)(t / (unsigned)slices);
        const int first = (int)(t % (unsigned)slices) * (SPLIT_THREADS * SPLIT_EPT);
        const size_t offset = (size_t)row * cols;
        float v[SPLIT_EPT], m, s;
        load_slice<SPLIT_EPT, W>(in + offset, cols, first, threadIdx.x, SPLIT_THREADS, -INFINITY,
                                 v);
        slice_max_sum<fast_exp<T>>(v, m, s);
        const float m_thread = m;
        block_merge(m, s);
        const float2 r = split_row_pair(m, s, t, row, slices, pairs, counters);
        const float scale = expf(m_thread - r.x) / r.y;
#pragma unroll
        for (int p = 0; p < SPLIT_EPT; ++p)
            v[p] *= scale;
        store_slice<SPLIT_EPT, W>(out + offset, cols, first, threadIdx.x, SPLIT_THREADS, v);
    }
}

/* The split for 16-byte aligned bf16 rows. A slice of 8192 bf16 held widened (32 floats a
 * thread, as the fp32 kernel holds) is 16 KB of row for the same fixed cost a slice (the
 * ticket, the barriers, the publish and the wait) that an fp32 slice spreads over 32 KB. So
 * a thread holds its share as loaded, 8 accesses of 8 bf16 in 32 registers, as the packed
 * block kernel does: a slice of 16384 values, 32 KB again. Each of the three passes (max,
 * sum, outputs) widens the registers afresh. The block's max is taken before any
 * exponential, so that the sums are plain sums (no exponential inside a tree, no registers
 * for one beside the held slice), and the outputs are taken against the row's max: the
 * exponential twice an element, once for the sum and once for the output. Loads and stores
 * stream (__ldcs, __stcs): each byte is touched once.
 * One slice is a function of its own, called from the ticket loop and not inlined into it:
 * inlined, the compiler keeps the loop's invariants in registers beside the held slice, and
 * at 64 registers (4 blocks an SM) the slice spills; called, it does not. */
static __device__ __noinline__ void softmax_split_packed_slice(
    const __nv_bfloat16 *__restrict__ in, __nv_bfloat16 *__restrict__ out, int cols, int slices,
    unsigned t, float2 *__restrict__ pairs, unsigned *__restrict__ counters, float *s_max,
    float *s_sum)
{
    constexpr int W = 8, ACCESSES = SPLIT_PACKED_ACCESSES, SLICE = SPLIT_THREADS * ACCESSES * W;
    const int row = (int)(t / (unsigned)slices), first = (int)(t % (unsigned)slices) * SLICE;
    const __nv_bfloat16 *x = in + (size_t)row * cols;
    uint4 q[ACCESSES];
#pragma unroll
    for (int k = 0; k < ACCESSES; ++k) {
        const int col = first + (threadIdx.x + k * SPLIT_THREADS) * W;
        q[k] = col < cols ? __ldcs(reinterpret_cast<const uint4 *>(x + col))
                          : make_uint4(0xff80ff80u, 0xff80ff80u, 0xff80ff80u, 0xff80ff80u);
    }
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < ACCESSES; ++k) {
        float v[W];
        widen8(q[k], v);
#pragma unroll
        for (int j = 0; j < W; ++j)
            m = fmaxf(m, v[j]); /* a NaN dropped here still reaches the sum */
    }
    m = block_max(m, s_max);
    const float base_block = exp_base(m);
    reread(q);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < ACCESSES; ++k) {
        float v[W];
        widen8(q[k], v);
#pragma unroll
        for (int j = 0; j < W; ++j)
            s += exp_of<true>(v[j] - base_block);
    }
    s = block_sum(s, s_sum);
    const float2 r = split_row_pair(m, s, t, row, slices, pairs, counters);
    const float base = exp_base(r.x), inv = 1.0f / r.y;
    reread(q);
    int col = first + threadIdx.x * W, stride = SPLIT_THREADS * W;
    __nv_bfloat16 *y = out + (size_t)row * cols + col;
#pragma unroll
    for (int k = 0; k < ACCESSES; ++k) {
        if (col < cols) {
            float v[W];
            widen8(q[k], v);
#pragma unroll
            for (int j = 0; j < W; ++j)
                v[j] = exp_of<true>(v[j] - base) * inv;
            __stcs(reinterpret_cast<uint4 *>(y),
                   make_uint4(bf16x2_rn(v[0], v[1]), bf16x2_rn(v[2], v[3]),
                              bf16x2_rn(v[4], v[5]), bf16x2_rn(v[6], v[7])));
        }
        asm volatile("" : "+r"(stride)); /* one address at a time, not all eight kept */
        col += stride;
        y += stride;
    }
}

static __global__ void __launch_bounds__(SPLIT_THREADS, SPLIT_MIN_BLOCKS)
softmax_split_packed_kernel(const __nv_bfloat16 *__restrict__ in, __nv_bfloat16 *__restrict__ out,
                            int rows, int cols, int slices, float2 *__restrict__ pairs,
                            unsigned *__restrict__ counters)
{
    __shared__ unsigned s_ticket;
    __shared__ float s_max[WARP], s_sum[WARP];
    while (split_ticket(counters, rows, slices, s_ticket))
        softmax_split_packed_slice(in, out, cols, slices, s_ticket, pairs, counters, s_max, s_sum);
}
#endif

/* ---- the launchers ------------------------------------------------------------------------ */

/* a block of whole warps, enough for cols at ept values a thread */
static int block_threads(int cols, int ept)
{
    return cdiv(cdiv(cols, ept), WARP) * WARP;
}

#if HAVE_CLUSTERS
/* Launches the cluster kernel for rows of HELD_ROW_MAX < cols <= CLUSTER_MAX * HELD_ROW_MAX:
 * C = cdiv(cols, HELD_ROW_MAX) blocks a row, each of as few whole warps as hold its share at
 * 32 values a thread. false, launching nothing, where the device cannot run such a cluster
 * (no cluster launch, or no cluster of C of these blocks fits its GPCs) or the rows are not
 * 16-byte aligned, or bf16: those are streamed. What the device answers is asked once a
 * shape of cluster (the answers are kept: one device, as everywhere in this workbook).
 * Why only fp32 rows two blocks hold: on the H200, with a cluster of up to 8 for every row of
 * up to 262144 columns, the cluster beat the streamed kernel only there
 * (plots/data/h200/clusters-07-memory-bound.tsv against 07-memory-bound.tsv). Each block takes
 * a whole SM's registers (1024 threads, 64 registers), so an SM loads, waits at two cluster
 * barriers and stores in turn with nothing to overlap; a bf16 share (64 KB) is too little data
 * to pay for the barriers, and a cluster of 8 waits on the slowest of 8 SMs. Smaller blocks,
 * several an SM, are the next thing to try. */
template <typename T, int W>
static bool softmax_cluster(const T *d_in, T *d_out, int rows, int cols)
{
    constexpr int EPT = HELD_ROW_MAX / 1024;
    if constexpr (W == 1 || sizeof(T) != 4) {
        return false;
    } else {
        static signed char fits[CLUSTER_MAX + 1][1024 / WARP + 1]; /* 0 not asked, 1 yes, -1 no */
        const int c = cdiv(cols, HELD_ROW_MAX), threads = block_threads(cdiv(cols, c), EPT);
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = (unsigned)c;
        attr.val.clusterDim.y = 1;
        attr.val.clusterDim.z = 1;
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3((unsigned)rows * (unsigned)c);
        config.blockDim = dim3((unsigned)threads);
        config.attrs = &attr;
        config.numAttrs = 1;
        signed char &fit = fits[c][threads / WARP];
        if (fit == 0) {
            int dev, can, clusters = 0;
            CUDA_CHECK(cudaGetDevice(&dev));
            CUDA_CHECK(cudaDeviceGetAttribute(&can, cudaDevAttrClusterLaunch, dev));
            if (can)
                CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters,
                                                          softmax_cluster_kernel<T, EPT, W>, &config));
            fit = clusters > 0 ? 1 : -1;
        }
        if (fit < 0)
            return false;
        CUDA_CHECK(cudaLaunchKernelEx(&config, softmax_cluster_kernel<T, EPT, W>, d_in, d_out,
                                      cols, EPT * threads));
        return true;
    }
}
#endif

#if HAVE_CLUSTERS
/* Launches the split kernel for 16-byte aligned rows longer than a block holds: the counters
 * (one a row, then the ticket counter) and the pairs (one a slice) in the scratch, the counters
 * zeroed before each launch. false, launching nothing, where the device has no cooperative
 * launch, the grid it holds cannot take a row's slices at once, or the pairs would not fit the
 * scratch: those rows are streamed. The grid (the blocks the device holds at once) is asked
 * once a kernel: one device, as everywhere in this workbook. fp32 slices hold 8192 values
 * widened, bf16 slices 16384 as loaded (softmax_split_packed_kernel says why). */
template <typename T, int W>
static bool softmax_split(const T *d_in, T *d_out, int rows, int cols, void *d_scratch)
{
    if constexpr (W == 1) {
        return false;
    } else {
        constexpr bool packed = sizeof(T) == 2;
        if (packed && cols <= PACKED_ROW_MAX)
            return false; /* the packed block kernel: measured faster up to its 65536 columns */
        constexpr int slice_values = packed ? SPLIT_THREADS * SPLIT_PACKED_ACCESSES * W
                                            : SPLIT_THREADS * SPLIT_EPT;
        const void *kernel;
        if constexpr (packed)
            kernel = (const void *)softmax_split_packed_kernel;
        else
            kernel = (const void *)softmax_split_kernel<T, W>;
        static int grid; /* 0 not asked, -1 no cooperative launch */
        if (grid == 0) {
            int dev, coop, per_sm = 0;
            CUDA_CHECK(cudaGetDevice(&dev));
            CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
            if (coop)
                CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel,
                                                                         SPLIT_THREADS, 0));
            grid = coop && per_sm > 0 ? per_sm * sm_count() : -1;
        }
        int slices = cdiv(cols, slice_values);
        const size_t counter_bytes = ((size_t)rows + 1) * sizeof(unsigned);
        const size_t pairs_at = (counter_bytes + 15) / 16 * 16;
        const size_t pair_count = (size_t)rows * (size_t)slices;
        if (grid < slices || pair_count > 0xffffffffu ||
            pairs_at + pair_count * sizeof(float2) > membound_scratch_bytes(rows))
            return false;
        unsigned *counters = static_cast<unsigned *>(d_scratch);
        float2 *pairs = reinterpret_cast<float2 *>(static_cast<char *>(d_scratch) + pairs_at);
        CUDA_CHECK(cudaMemsetAsync(counters, 0, counter_bytes));
        void *args[] = { (void *)&d_in, (void *)&d_out, (void *)&rows, (void *)&cols,
                         (void *)&slices, (void *)&pairs, (void *)&counters };
        CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3((unsigned)grid), dim3(SPLIT_THREADS),
                                               args, 0, 0));
        return true;
    }
}
#endif

template <typename T, int W>
static void softmax_rows(const T *d_in, T *d_out, int rows, int cols, void *d_scratch)
{
#if !HAVE_CLUSTERS
    (void)d_scratch; /* the split rows need a GPU */
#endif
    const int warp_blocks = cdiv(rows, ROWS_PER_BLOCK), warp_threads = ROWS_PER_BLOCK * WARP;
    if (cols <= 8 * WARP)
        softmax_warp_kernel<T, 8, W><<<warp_blocks, warp_threads>>>(d_in, d_out, rows, cols);
    else if (cols <= 16 * WARP)
        softmax_warp_kernel<T, 16, W><<<warp_blocks, warp_threads>>>(d_in, d_out, rows, cols);
    else if (cols <= WARP_ROW_MAX)
        softmax_warp_kernel<T, 32, W><<<warp_blocks, warp_threads>>>(d_in, d_out, rows, cols);
    else if (cols <= HELD_ROW_MAX)
        softmax_block_kernel<T, 32, W><<<rows, block_threads(cols, 32)>>>(d_in, d_out, cols);
#if HAVE_CLUSTERS
    else if (softmax_split<T, W>(d_in, d_out, rows, cols, d_scratch))
        ; /* a row split across persistent blocks */
#endif
    else if (sizeof(T) == 2 && W == 8 && cols <= PACKED_ROW_MAX)
        softmax_block_packed_kernel<<<rows, block_threads(cols, PACKED_ROW_MAX / 1024)>>>(
            reinterpret_cast<const __nv_bfloat16 *>(d_in),
            reinterpret_cast<__nv_bfloat16 *>(d_out), cols);
#if HAVE_CLUSTERS
    else if (cols <= CLUSTER_MAX * HELD_ROW_MAX && softmax_cluster<T, W>(d_in, d_out, rows, cols))
        ; /* a cluster a row */
#endif
    else
        softmax_stream_kernel<T, W><<<rows, STREAM_THREADS>>>(d_in, d_out, cols);
}

template <typename T>
static void softmax(const T *d_in, T *d_out, int rows, int cols, void *d_scratch)
{
    constexpr int VEC = 16 / sizeof(T);
    /* 16-byte accesses need every row to start on a 16-byte boundary */
    const bool aligned = cols % VEC == 0 && (uintptr_t)d_in % 16 == 0 && (uintptr_t)d_out % 16 == 0;
    if (aligned)
        softmax_rows<T, VEC>(d_in, d_out, rows, cols, d_scratch);
    else
        softmax_rows<T, 1>(d_in, d_out, rows, cols, d_scratch);
    CUDA_CHECK(cudaGetLastError());
}

void softmax_f32(const float *d_in, float *d_out, int rows, int cols, void *d_scratch)
{
    softmax<float>(d_in, d_out, rows, cols, d_scratch);
}

void softmax_bf16(const mb_bf16 *d_in, mb_bf16 *d_out, int rows, int cols, void *d_scratch)
{
    softmax<__nv_bfloat16>(d_in, d_out, rows, cols, d_scratch);
}
