/* step5_norms.cu: chapter 07, step 5 of 5, the reference: RMSNorm and LayerNorm reading each
 * row once, the LayerNorm's variance from deviations about the mean.
 *
 * Baseline (norms_two_moment.cu, given): a block a row; one pass sums x and x^2, a second
 *   reads the row again to write y. Its LayerNorm takes var = E[x^2] - E[x]^2, which cancels
 *   where the mean is large against the spread: at mean 1e4 and variance 1e-2, E[x^2] ~ 1e8
 *   has an fp32 spacing of 8 and the variance comes out as noise of that size, often
 *   negative (NaN from rsqrtf).
 * Here: the structure of step 4, and its three shapes, the launcher choosing from cols:
 *     cols <= 1024          a warp a row, 8 rows a block, the row in registers
 *     1024 < cols <= 32768  a block a row, the row in registers: 32 values a thread, as few
 *                           threads as that needs (16 values, 16384 columns, where rows are
 *                           not 16-byte aligned), so that each thread has several 16-byte
 *                           loads in flight and the reductions span few warps
 *     longer fp32 rows and bf16 rows longer than 65536, 16-byte aligned, on a GPU with
 *                           cooperative launch: the row split across persistent blocks, as in
 *                           step 4: each block holds a slice (fp32: 8192 values widened; bf16:
 *                           16384 as loaded) and publishes its statistics (RMSNorm: the sum of
 *                           squares; LayerNorm: its moments, merged as below) through the
 *                           scratch; one read of the row and one write
 *     32768 < cols <= 65536, bf16 rows 16-byte aligned: a block a row, the row held as it was
 *                           loaded (64 bf16 a thread in 32 registers), widened on each pass
 *                           (step 4's packed softmax says why; as there, faster than the split
 *                           up to 65536 columns on the H200)
 *     32768 < cols <= 65536, fp32 rows 16-byte aligned, where the rows are not split but the
 *                           GPU launches clusters (sm_90): a cluster of 2 blocks a row, the row
 *                           in their registers, as in step 4; each sum over the row is the
 *                           blocks' sums added through distributed shared memory
 *     the other rows (and the CPU backend's long rows): a block a row, streamed: statistics
 *                           in a first pass, the outputs from a second read (3 passes of
 *                           traffic instead of 2: at most ~67% of copy)
 *   16-byte accesses (x, y, w and b alike) where every row starts on a 16-byte boundary
 *   (cols % 4 == 0 for f32, % 8 for bf16, aligned pointers), one element at a time otherwise.
 *   RMSNorm needs sum x^2 only: each thread sums the squares it holds, a shuffle tree and
 *   shared memory sum the threads'.
 *   LayerNorm, on a row held in registers: two passes over the registers, each a plain sum
 *   over the row. The mean is kept as a pair, k + d, with k the row's first value (every
 *   thread reads it) and d the mean of x - k; then M2 = sum ((x - k) - d)^2, a sum of
 *   squares, never negative, with no cancellation. Why the pair: an fp32 mean of 1e4 is a
 *   multiple of 2^-10 ~ 1e-3, a hundredth of a standard deviation of 0.1, and every output
 *   y = (x - mean) / sigma would carry that rounding: errors ~ 5e-3 whatever the variance's
 *   accuracy. x - k is exact there (Sterbenz: the two are within a factor 2), d is small and
 *   carries full precision, and y = ((x - k) - d) * rstd loses nothing to the mean's
 *   magnitude.
 *   LayerNorm, on a streamed row: a thread cannot keep its values for a second pass, so it
 *   keeps their moments, the count n, the mean (as a pair k + d, k the first value it
 *   read) and M2, updated a slice of 16 values at a time, and the threads' moments are
 *   combined pairwise by Chan, Golub and LeVeque's update (the parallel form of Welford's):
 *   with delta = mean_b - mean_a and n = n_a + n_b,
 *     mean = mean_a + delta * n_b / n,   M2 = M2_a + M2_b + delta^2 * n_a * n_b / n,
 *   a sum of non-negative terms. The merge never forms mean_b - mean_a from the means
 *   themselves: delta = (k_b - k_a) + (d_b - d_a).
 *   Weight and bias are applied in the store (w and b read at the same columns as x, 16 bytes
 *   at a time where aligned): one read of the row, one write. rsqrtf (2 ulp) once a row; eps
 *   inside the square root, as given. A NaN in a row makes its sum or its moments NaN, and so
 *   every output of the row.
 * Expect on an H200 (copy ~4 TB/s): close to copy for rows of 256 to 32768 columns (the goal
 *   is 90%; PyTorch measured 60% of copy for RMSNorm, 56% for LayerNorm), ~1.5x the two-moment
 *   baseline (3 passes to 2) and right where it is wrong; split rows beyond 32768 lose a little
 *   to each slice's wait for its row, most where a row has many slices. */
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "sm_count.h"
#include "membound.h"
#include "rows.cuh" /* one access widened, and reread (given) */

/* Thread block clusters (sm_90), as in step 4: a row too long for one block is held by a
 * cluster of them, which add their sums through distributed shared memory. The CPU backend
 * launches no clusters; there, and on a GPU that cannot, such rows are streamed. */
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
#define HELD_ROW_MAX 32768    /* up to this many a block holds it: 32 values a thread, 1024 threads
                                 (16384 where a row is read an element at a time: norm_rows) */
#define PACKED_ROW_MAX 65536  /* bf16 rows up to this many a block holds as loaded: 64 a thread */
#define STREAM_THREADS 1024   /* the streaming kernel, for longer rows */
#define STREAM_EPT 16         /* values a thread loads at a time there */
#define CLUSTER_MAX 2         /* rows up to 2 * HELD_ROW_MAX held by a cluster (fp32 only): see
                                 the cluster launcher for why no more */

/* ---- a thread's slice of a row (as in step 4) ----------------------------------------------
 * Thread `tid` of `nthreads` holds EPT columns of [first, first + EPT * nthreads), as EPT / W
 * accesses of W elements: access k at column first + (tid + k * nthreads) * W, each access of
 * a warp one coalesced run. With W > 1, cols % W == 0, so an access is wholly inside the row
 * or wholly past it. Columns past the end read as 0. The accesses inside come first: the
 * return value counts them, and v[0 .. W * accesses) are the thread's values. */
template <int EPT, int W, typename T>
static __device__ __forceinline__ int load_slice(const T *__restrict__ row, int cols, int first,
                                                 int tid, int nthreads, float (&v)[EPT])
{
    static_assert(EPT % W == 0, "a slice is whole accesses");
    int accesses = 0;
#pragma unroll
    for (int k = 0; k < EPT / W; ++k) {
        const int col = first + (tid + k * nthreads) * W;
        if (col < cols) {
            load_w<W>(row + col, &v[k * W]);
            ++accesses;
        } else {
#pragma unroll
            for (int j = 0; j < W; ++j)
                v[k * W + j] = 0.0f;
        }
    }
    return accesses;
}

/* y at the slice's columns: LAYER ? ((x - k) - d) * rstd * w + b : x * rstd * w, with w and b
 * read at the same columns, in the same accesses as x. */
template <bool LAYER, int EPT, int W, typename T>
static __device__ __forceinline__ void store_norm_slice(T *__restrict__ row, const T *__restrict__ w,
                                                        const T *__restrict__ b, int cols, int first,
                                                        int tid, int nthreads, const float (&v)[EPT],
                                                        float k, float d, float rstd)
{
#pragma unroll
    for (int a = 0; a < EPT / W; ++a) {
        const int col = first + (tid + a * nthreads) * W;
        if (col < cols) {
            float wv[W], y[W];
            load_w<W>(w + col, wv);
            if constexpr (LAYER) {
                float bv[W];
                load_w<W>(b + col, bv);
#pragma unroll
                for (int j = 0; j < W; ++j)
                    y[j] = ((v[a * W + j] - k) - d) * rstd * wv[j] + bv[j];
            } else {
#pragma unroll
                for (int j = 0; j < W; ++j)
                    y[j] = v[a * W + j] * rstd * wv[j];
            }
            store_w<W>(row + col, y);
        }
    }
}

/* ---- RMSNorm's statistic: a sum ------------------------------------------------------------ */

static __device__ __forceinline__ float warp_sum(float s)
{
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2)
        s += __shfl_xor_sync(FULL_MASK, s, offset);
    return s;
}

/* The block's sum in every thread (blockDim.x a multiple of 32): each warp leaves its sum in
 * s_part (WARP floats of shared memory), and after the barrier every warp adds all of them
 * itself (no second barrier for a broadcast). A second sum in the same block needs an array of
 * its own: slower warps may still be reading this one. */
static __device__ __forceinline__ float block_sum(float s, float *s_part)
{
    const int lane = threadIdx.x % WARP;
    s = warp_sum(s);
    if (lane == 0)
        s_part[threadIdx.x / WARP] = s;
    __syncthreads(); /* every warp's sum is written before any warp reads them */
    return warp_sum(lane < (int)(blockDim.x / WARP) ? s_part[lane] : 0.0f);
}

/* The sum of a row's held values in every thread of the row: a warp's, or the block's
 * through s_part */
template <bool BLOCK_WIDE>
static __device__ __forceinline__ float row_sum(float s, float *s_part)
{
    if constexpr (BLOCK_WIDE)
        return block_sum(s, s_part);
    else
        return warp_sum(s);
}

/* ---- LayerNorm's statistics: the moments of a set of values --------------------------------
 * n values, their mean k + d (k one of them, d the mean of x - k), m2 = sum (x - mean)^2.
 * The empty set is all zeros. */
struct moments {
    float n, k, d, m2;
};

/* The moments of a thread's values, the first `accesses` accesses of its slice: two passes
 * over its registers. (The test is on whole accesses: EPT / W predicates, not EPT.) */
template <int EPT, int W>
static __device__ __forceinline__ moments slice_moments(const float (&v)[EPT], int accesses)
{
    moments r = {0.0f, 0.0f, 0.0f, 0.0f};
    if (accesses == 0)
        return r;
    r.n = (float)(accesses * W);
    r.k = v[0];
    float sum = 0.0f;
#pragma unroll
    for (int a = 0; a < EPT / W; ++a)
        if (a < accesses) {
#pragma unroll
            for (int j = 0; j < W; ++j)
                sum += v[a * W + j] - r.k;
        }
    r.d = __fdividef(sum, r.n); /* 2 ulp, as in merge */
#pragma unroll
    for (int a = 0; a < EPT / W; ++a)
        if (a < accesses) {
#pragma unroll
            for (int j = 0; j < W; ++j) {
                const float e = (v[a * W + j] - r.k) - r.d; /* x - mean, the mean never rounded */
                r.m2 += e * e;
            }
        }
    return r;
}

/* The moments of the union of a and b (Chan et al.), a's shift kept (b's if a is empty).
 * __fdividef (MUFU.RCP and a multiply, 2 ulp): n_b / n is a weight in (0, 1], and an IEEE
 * division's slow-path call, 11 of them in a block's reduction, costs registers the held row
 * needs. Not symmetric in the last bits: callers that need equal results on both sides of an
 * exchange merge in one order. */
static __device__ __forceinline__ moments merge(moments a, moments b)
{
    const float n = a.n + b.n;
    const float wb = __fdividef(b.n, n);
    const float delta = (b.k - a.k) + (b.d - a.d); /* mean_b - mean_a, neither mean formed */
    /* an empty side changes nothing: a empty gives b (0 / 0 above is NaN), b empty gives a */
    moments r;
    r.n = n;
    r.k = a.n == 0.0f ? b.k : a.k;
    r.d = a.n == 0.0f ? b.d : b.n == 0.0f ? a.d : a.d + delta * wb;
    r.m2 = a.n == 0.0f ? b.m2 : b.n == 0.0f ? a.m2 : a.m2 + b.m2 + delta * delta * a.n * wb;
    return r;
}

/* Every lane ends with the warp's moments, the same bits in all 32: in each exchange both lanes
 * merge (lower lane, upper lane) in that order. */
static __device__ __forceinline__ moments warp_moments(moments m)
{
    const int lane = threadIdx.x % WARP;
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset /= 2) {
        moments o;
        o.n = __shfl_xor_sync(FULL_MASK, m.n, offset);
        o.k = __shfl_xor_sync(FULL_MASK, m.k, offset);
        o.d = __shfl_xor_sync(FULL_MASK, m.d, offset);
        o.m2 = __shfl_xor_sync(FULL_MASK, m.m2, offset);
        m = (lane & offset) ? merge(o, m) : merge(m, o);
    }
    return m;
}

/* The block's moments in every thread, as block_sum. Once a block. */
static __device__ __forceinline__ moments block_moments(moments m)
{
    __shared__ moments s_part[WARP];
    const int lane = threadIdx.x % WARP;
    m = warp_moments(m);
    if (lane == 0)
        s_part[threadIdx.x / WARP] = m;
    __syncthreads(); /* every warp's moments are written before any warp reads them */
    moments partial = {0.0f, 0.0f, 0.0f, 0.0f}; /* lanes past the last warp: the empty set */
    if (lane < (int)(blockDim.x / WARP))
        partial = s_part[lane];
    return warp_moments(partial);
}

/* ---- the kernels ---------------------------------------------------------------------------- */

/* A held row's LayerNorm statistics, a thread's share of each: the sum of x - k over its
 * values, then the sum of ((x - k) - d)^2 once the row's d is known. Only the first
 * `accesses` accesses count: a column past the end holds 0, which is not x - k. */
template <int EPT, int W>
static __device__ __forceinline__ float shifted_sum(const float (&v)[EPT], int accesses, float k)
{
    float sum = 0.0f;
#pragma unroll
    for (int a = 0; a < EPT / W; ++a)
        if (a < accesses) {
#pragma unroll
            for (int j = 0; j < W; ++j)
                sum += v[a * W + j] - k;
        }
    return sum;
}

template <int EPT, int W>
static __device__ __forceinline__ float deviations_m2(const float (&v)[EPT], int accesses, float k,
                                                      float d)
{
    float m2 = 0.0f;
#pragma unroll
    for (int a = 0; a < EPT / W; ++a)
        if (a < accesses) {
#pragma unroll
            for (int j = 0; j < W; ++j) {
                const float e = (v[a * W + j] - k) - d; /* x - mean, the mean never rounded */
                m2 += e * e;
            }
        }
    return m2;
}

/* One row held in registers by nthreads threads: a warp (BLOCK_WIDE false) or the block.
 * LayerNorm: two passes over the registers about a shift k, the row's first value (every
 * thread reads it, one broadcast load beside its slice): d = the mean of x - k, then
 * M2 = sum ((x - k) - d)^2, each a plain sum over the row, so the row's threads combine two
 * floats, not moments, and no count or division enters the reduction. */
template <typename T, int EPT, int W, bool LAYER, bool BLOCK_WIDE>
static __device__ __forceinline__ void norm_held_row(const T *__restrict__ x, const T *__restrict__ w,
                                                     const T *__restrict__ b, T *__restrict__ y,
                                                     int cols, float eps, int tid, int nthreads)
{
    __shared__ float s_part[2][WARP]; /* the block's two sums (unused by a warp a row) */
    float v[EPT];
    const int accesses = load_slice<EPT, W>(x, cols, 0, tid, nthreads, v);
    if constexpr (LAYER) {
        float k;
        load_w<1>(x, &k);
        const float d = __fdividef(row_sum<BLOCK_WIDE>(shifted_sum<EPT, W>(v, accesses, k), s_part[0]),
                                   (float)cols);
        const float m2 = deviations_m2<EPT, W>(v, accesses, k, d);
        const float rstd = rsqrtf(row_sum<BLOCK_WIDE>(m2, s_part[1]) / cols + eps);
        store_norm_slice<true, EPT, W>(y, w, b, cols, 0, tid, nthreads, v, k, d, rstd);
    } else {
        float ss = 0.0f; /* the columns past the end hold 0 */
#pragma unroll
        for (int p = 0; p < EPT; ++p)
            ss += v[p] * v[p];
        const float rstd = rsqrtf(row_sum<BLOCK_WIDE>(ss, s_part[0]) / cols + eps);
        store_norm_slice<false, EPT, W>(y, w, b, cols, 0, tid, nthreads, v, 0.0f, 0.0f, rstd);
    }
}

/* A warp a row: EPT values a lane, cols <= 32 * EPT. LAYER: LayerNorm, else RMSNorm (b NULL). */
template <typename T, int EPT, int W, bool LAYER>
static __global__ void __launch_bounds__(ROWS_PER_BLOCK * WARP)
norm_warp_kernel(const T *__restrict__ in, const T *__restrict__ w, const T *__restrict__ b,
                 T *__restrict__ out, int rows, int cols, float eps)
{
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
    if (row >= rows)
        return; /* whole warps leave: the shuffles always see 32 lanes */
    const size_t offset = (size_t)row * cols;
    norm_held_row<T, EPT, W, LAYER, false>(in + offset, w, b, out + offset, cols, eps,
                                           threadIdx.x % WARP, WARP);
}

/* A block a row: EPT values a thread, cols <= blockDim.x * EPT. */
template <typename T, int EPT, int W, bool LAYER>
static __global__ void __launch_bounds__(1024)
norm_block_kernel(const T *__restrict__ in, const T *__restrict__ w, const T *__restrict__ b,
                  T *__restrict__ out, int cols, float eps)
{
    const size_t offset = (size_t)blockIdx.x * cols;
    norm_held_row<T, EPT, W, LAYER, true>(in + offset, w, b, out + offset, cols, eps,
                                          threadIdx.x, blockDim.x);
}


/* A block a row for 16-byte aligned bf16 rows of up to PACKED_ROW_MAX columns, as step 4's
 * packed softmax: 64 values a thread kept as they were loaded (8 bf16 to a uint4, 32
 * registers), widened on each pass, since 64 floats would not fit the 64 registers a thread
 * has at 1024 threads; the passes are norm_held_row's, an access at a time, through the same
 * helpers. Columns past the end hold 0. */
template <bool LAYER>
static __global__ void __launch_bounds__(1024)
norm_block_packed_kernel(const __nv_bfloat16 *__restrict__ in, const __nv_bfloat16 *__restrict__ w,
                         const __nv_bfloat16 *__restrict__ b, __nv_bfloat16 *__restrict__ out,
                         int cols, float eps)
{
    constexpr int W = 8, ACCESSES = PACKED_ROW_MAX / 1024 / W; /* 8 accesses, 64 values */
    __shared__ float s_part[2][WARP];
    const __nv_bfloat16 *x = in + (size_t)blockIdx.x * cols;
    uint4 q[ACCESSES];
    int accesses = 0;
#pragma unroll
    for (int a = 0; a < ACCESSES; ++a) {
        const int col = (threadIdx.x + a * blockDim.x) * W;
        if (col < cols) {
            q[a] = *reinterpret_cast<const uint4 *>(x + col);
            ++accesses;
        } else {
            q[a] = make_uint4(0u, 0u, 0u, 0u);
        }
    }
    float k = 0.0f, d = 0.0f, rstd;
    if constexpr (LAYER) {
        load_w<1>(x, &k);
        float sum = 0.0f;
        reread(q);
#pragma unroll
        for (int a = 0; a < ACCESSES; ++a) {
            float v[W];
            widen8(q[a], v);
            sum += shifted_sum<W, W>(v, a < accesses ? 1 : 0, k);
        }
        d = __fdividef(block_sum(sum, s_part[0]), (float)cols);
        float m2 = 0.0f;
        reread(q);
#pragma unroll
        for (int a = 0; a < ACCESSES; ++a) {
            float v[W];
            widen8(q[a], v);
            m2 += deviations_m2<W, W>(v, a < accesses ? 1 : 0, k, d);
        }
        rstd = rsqrtf(block_sum(m2, s_part[1]) / cols + eps);
    } else {
        float ss = 0.0f; /* the columns past the end hold 0 */
#pragma unroll
        for (int a = 0; a < ACCESSES; ++a) {
            float v[W];
            widen8(q[a], v);
#pragma unroll
            for (int j = 0; j < W; ++j)
                ss += v[j] * v[j];
        }
        rstd = rsqrtf(block_sum(ss, s_part[0]) / cols + eps);
    }
    reread(q);
    /* the row's address again, not kept through the passes: every register counts here */
    int row = blockIdx.x, first = 0, stride = blockDim.x * W;
    asm volatile("" : "+r"(row));
    __nv_bfloat16 *y = out + (size_t)row * cols;
#pragma unroll
    for (int a = 0; a < ACCESSES; ++a) {
        float v[W];
        widen8(q[a], v);
        store_norm_slice<LAYER, W, W>(y, w, b, cols, first, threadIdx.x, blockDim.x, v, k, d, rstd);
        asm volatile("" : "+r"(stride)); /* one address at a time, not all eight kept */
        first += stride;
    }
}

/* A block a row too long to hold: the statistics over slices of STREAM_EPT values a thread,
 * then a second read for the outputs. */
template <typename T, int W, bool LAYER>
static __global__ void __launch_bounds__(STREAM_THREADS)
norm_stream_kernel(const T *__restrict__ in, const T *__restrict__ w, const T *__restrict__ b,
                   T *__restrict__ out, int cols, float eps)
{
    const T *x = in + (size_t)blockIdx.x * cols;
    T *y = out + (size_t)blockIdx.x * cols;
    const int step = STREAM_EPT * blockDim.x;
    float k = 0.0f, d = 0.0f, rstd;
    if constexpr (LAYER) {
        moments m = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int first = 0; first < cols; first += step) {
            float v[STREAM_EPT];
            const int accesses = load_slice<STREAM_EPT, W>(x, cols, first, threadIdx.x,
                                                           blockDim.x, v);
            m = merge(m, slice_moments<STREAM_EPT, W>(v, accesses)); /* Welford's update, a slice at a time */
        }
        m = block_moments(m);
        k = m.k;
        d = m.d;
        rstd = rsqrtf(m.m2 / cols + eps);
    } else {
        float ss = 0.0f;
        for (int first = 0; first < cols; first += step) {
            float v[STREAM_EPT];
            load_slice<STREAM_EPT, W>(x, cols, first, threadIdx.x, blockDim.x, v);
#pragma unroll
            for (int p = 0; p < STREAM_EPT; ++p)
                ss += v[p] * v[p];
        }
        __shared__ float s_part[WARP];
        rstd = rsqrtf(block_sum(ss, s_part) / cols + eps);
    }
    for (int first = 0; first < cols; first += step) {
        float v[STREAM_EPT];
        load_slice<STREAM_EPT, W>(x, cols, first, threadIdx.x, blockDim.x, v);
        store_norm_slice<LAYER, STREAM_EPT, W>(y, w, b, cols, first, threadIdx.x, blockDim.x, v,
                                               k, d, rstd);
    }
}

#if HAVE_CLUSTERS
/* A cluster of blocks a row (cluster dimensions (C, 1, 1), C blocks a row in the grid): block
 * r of the cluster holds columns [r * span, r * span + span) in registers, EPT values a
 * thread. Each sum over the row is the block's sum, left in the block's shared memory, then,
 * after the cluster's barrier, the C blocks' sums added by every thread in rank order (the same
 * bits in every block). LayerNorm takes two such sums, in two slots; the last barrier keeps
 * every block until the others have read it. Rows are 16-byte aligned here (W = 16 bytes). */
template <typename T, int EPT, int W, bool LAYER>
static __global__ void __launch_bounds__(1024)
norm_cluster_kernel(const T *__restrict__ in, const T *__restrict__ w, const T *__restrict__ b,
                    T *__restrict__ out, int cols, float eps, int span)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ float s_part[2][WARP]; /* the block's two sums */
    __shared__ float s_share[2];      /* the block's shares of the row's sums, read by the cluster */
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned nblocks = cluster.num_blocks(), rank = cluster.block_rank();
    const size_t offset = (size_t)(blockIdx.x / nblocks) * cols;
    const T *x = in + offset;
    const int first = (int)rank * span, limit = min(cols, first + span);
    /* the row's sum of one value a thread: the block's, then the cluster's, through slot i */
    auto row_total = [&](float t, int i) {
        t = block_sum(t, s_part[i]);
        if (threadIdx.x == 0)
            s_share[i] = t;
        cluster.sync(); /* every block's share is written (and visible to the cluster) */
        float total = 0.0f;
        for (unsigned r = 0; r < nblocks; ++r)
            total += *cluster.map_shared_rank(&s_share[i], r);
        return total;
    };
    float v[EPT];
    const int accesses = load_slice<EPT, W>(x, limit, first, threadIdx.x, blockDim.x, v);
    float k = 0.0f, d = 0.0f, rstd;
    if constexpr (LAYER) {
        load_w<1>(x, &k); /* the shift: the row's first value, the same in every block */
        d = __fdividef(row_total(shifted_sum<EPT, W>(v, accesses, k), 0), (float)cols);
        rstd = rsqrtf(row_total(deviations_m2<EPT, W>(v, accesses, k, d), 1) / cols + eps);
    } else {
        float ss = 0.0f; /* the columns past the slice hold 0 */
#pragma unroll
        for (int p = 0; p < EPT; ++p)
            ss += v[p] * v[p];
        rstd = rsqrtf(row_total(ss, 0) / cols + eps);
    }
    cluster.sync(); /* no block leaves while another still reads its shared memory */
    store_norm_slice<LAYER, EPT, W>(out + offset, w, b, limit, first, threadIdx.x, blockDim.x, v,
                                    k, d, rstd);
#else
    __trap(); /* clusters exist from sm_90; the launcher asks the device before it launches */
#endif
}
#endif

#if HAVE_CLUSTERS
/* ---- a row split across persistent blocks (GPU) ---------------------------------------------
 * As step 4's split softmax: rows too long for one block are cut into slices of SPLIT_THREADS *
 * SPLIT_EPT values, a slice held in one block's registers; exactly as many blocks as the GPU
 * holds at once (a cooperative launch) take slices in order from a ticket counter, publish their
 * slice's statistics in the scratch (RMSNorm: the sum of squares; LayerNorm: the moments, which
 * merge without a second exchange), count them in (a fence, then an atomic add on the row's
 * counter), wait for the row's other slices, merge the row's statistics from L2 in slice order
 * (the same bits in every block of the row) and write their slice from registers. One read of
 * the row and one write. Deadlock-free for step 4's reasons: tickets in order, publish before
 * wait, a grid of at least a row's slices. */
#define SPLIT_THREADS 256 /* a slice: 256 threads x 32 values */
#define SPLIT_EPT 32
/* the blocks an SM the registers are capped for: 4 (64 registers), but 3 (80) for fp32
 * LayerNorm, whose moments beside the 32 held values would spill at 64 */
template <typename T, bool LAYER>
constexpr int split_min_blocks = LAYER && sizeof(T) == 4 ? 3 : 4;

#define SPLIT_PACKED_ACCESSES 8 /* bf16: 8 accesses of 8 a thread as loaded, a slice of 16384 */

/* The block's next ticket, the same in every thread: (row, first column) of its slice, or
 * false when every slice of every row is taken. The barrier also ends the last slice. */
static __device__ __forceinline__ bool split_ticket(unsigned *__restrict__ counters, int rows,
                                                    int slices, int slice_values, unsigned &t,
                                                    int &row, int &first)
{
    __shared__ unsigned s_ticket;
    if (threadIdx.x == 0)
        s_ticket = atomicAdd(&counters[rows], 1u); /* the ticket counter follows the rows' */
    __syncthreads(); /* the ticket is in; and every thread is done with the last slice */
    t = s_ticket;
    if (t >= (unsigned)rows * (unsigned)slices)
        return false;
    row = (int)(t / (unsigned)slices);
    first = (int)(t % (unsigned)slices) * slice_values;
    return true;
}

/* Slice t of row `row` publishes its block's statistics `mine` (thread 0's), counts itself in
 * and waits for the row's other slices; warp 0 merges the row's from L2 in slice order (the
 * same bits in every block of the row) and every thread gets them: RMSNorm (sum of squares,
 * -, -, -), LayerNorm the moments (n, k, d, m2). Called by every thread, once a slice. */
template <bool LAYER>
static __device__ __forceinline__ float4 split_row_stats(float4 mine, unsigned t, int row,
                                                         int slices, float4 *__restrict__ parts,
                                                         unsigned *__restrict__ counters)
{
    __shared__ float4 s_row;
    if (threadIdx.x < WARP) {
        if (threadIdx.x == 0) {
            parts[t] = mine;
            __threadfence(); /* the statistics are visible before the count says so */
            atomicAdd(&counters[row], 1u);
            const volatile unsigned *count = &counters[row];
            while (*count < (unsigned)slices)
                ;
            __threadfence(); /* the others' statistics are read after their count */
        }
        __syncwarp();
        if constexpr (LAYER) {
            moments r = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int k = threadIdx.x; k < slices; k += WARP) { /* lane order, then a tree */
                const float4 p = __ldcg(&parts[(size_t)row * slices + k]); /* from L2 */
                r = merge(r, moments{p.x, p.y, p.z, p.w});
            }
            r = warp_moments(r);
            if (threadIdx.x == 0)
                s_row = make_float4(r.n, r.k, r.d, r.m2);
        } else {
            float ss = 0.0f;
            for (int k = threadIdx.x; k < slices; k += WARP)
                ss += __ldcg(&parts[(size_t)row * slices + k]).x;
            ss = warp_sum(ss);
            if (threadIdx.x == 0)
                s_row = make_float4(ss, 0.0f, 0.0f, 0.0f);
        }
    }
    __syncthreads(); /* the row's statistics are in s_row */
    return s_row;
}

template <typename T, int W, bool LAYER>
static __global__ void __launch_bounds__(SPLIT_THREADS, (split_min_blocks<T, LAYER>))
norm_split_kernel(const T *__restrict__ in, const T *__restrict__ w, const T *__restrict__ b,
                  T *__restrict__ out, int rows, int cols, float eps, int slices,
                  float4 *__restrict__ parts, unsigned *__restrict__ counters)
{
    __shared__ float s_part[WARP]; /* RMSNorm's block sum */
    unsigned t;
    int row, first;
    while (split_ticket(counters, rows, slices, SPLIT_THREADS * SPLIT_EPT, t, row, first)) {
        const size_t offset = (size_t)row * cols;
        float v[SPLIT_EPT];
        const int accesses = load_slice<SPLIT_EPT, W>(in + offset, cols, first, threadIdx.x,
                                                      SPLIT_THREADS, v);
        float4 mine; /* the block's statistics, in thread 0 */
        if constexpr (LAYER) {
            const moments m = block_moments(slice_moments<SPLIT_EPT, W>(v, accesses));
            mine = make_float4(m.n, m.k, m.d, m.m2);
        } else {
            float ss = 0.0f; /* the columns past the end hold 0 */
#pragma unroll
            for (int p = 0; p < SPLIT_EPT; ++p)
                ss += v[p] * v[p];
            mine = make_float4(block_sum(ss, s_part), 0.0f, 0.0f, 0.0f);
        }
        const float4 r = split_row_stats<LAYER>(mine, t, row, slices, parts, counters);
        const float rstd = rsqrtf((LAYER ? r.w : r.x) / cols + eps);
        store_norm_slice<LAYER, SPLIT_EPT, W>(out + offset, w, b, cols, first, threadIdx.x,
                                              SPLIT_THREADS, v, LAYER ? r.y : 0.0f,
                                              LAYER ? r.z : 0.0f, rstd);
    }
}

/* The split for 16-byte aligned bf16 rows, as step 4's softmax_split_packed_kernel: a thread
 * holds its share as loaded (8 accesses of 8 bf16 in 32 registers, a slice of 16384 values,
 * 32 KB like an fp32 slice) and widens it on each pass. LayerNorm's moments of a thread's
 * values take two passes (the sum of x - k, then of ((x - k) - d)^2, k the thread's first
 * value), as slice_moments does over widened registers; the outputs a third. */
template <bool LAYER>
static __global__ void __launch_bounds__(SPLIT_THREADS, 4)
norm_split_packed_kernel(const __nv_bfloat16 *__restrict__ in, const __nv_bfloat16 *__restrict__ w,
                         const __nv_bfloat16 *__restrict__ b, __nv_bfloat16 *__restrict__ out,
                         int rows, int cols, float eps, int slices, float4 *__restrict__ parts,
                         unsigned *__restrict__ counters)
{
    constexpr int W = 8, ACCESSES = SPLIT_PACKED_ACCESSES;
    __shared__ float s_part[WARP]; /* RMSNorm's block sum */
    unsigned t;
    int row, first;
    while (split_ticket(counters, rows, slices, SPLIT_THREADS * ACCESSES * W, t, row, first)) {
        const __nv_bfloat16 *x = in + (size_t)row * cols;
        uint4 q[ACCESSES];
        int accesses = 0; /* the accesses inside the row come first */
#pragma unroll
        for (int a = 0; a < ACCESSES; ++a) {
            const int col = first + (threadIdx.x + a * SPLIT_THREADS) * W;
            if (col < cols) {
                q[a] = __ldcs(reinterpret_cast<const uint4 *>(x + col));
                ++accesses;
            } else {
                q[a] = make_uint4(0u, 0u, 0u, 0u);
            }
        }
        float4 mine;
        float k = 0.0f, d = 0.0f;
        if constexpr (LAYER) {
            moments m = {0.0f, 0.0f, 0.0f, 0.0f};
            if (accesses > 0) {
                k = bf16_lo(q[0].x);
                float sum = 0.0f;
#pragma unroll
                for (int a = 0; a < ACCESSES; ++a) {
                    float v[W];
                    widen8(q[a], v);
                    sum += shifted_sum<W, W>(v, a < accesses ? 1 : 0, k);
                }
                m.n = (float)(accesses * W);
                m.k = k;
                m.d = __fdividef(sum, m.n); /* 2 ulp, as in merge */
                reread(q);
#pragma unroll
                for (int a = 0; a < ACCESSES; ++a) {
                    float v[W];
                    widen8(q[a], v);
                    m.m2 += deviations_m2<W, W>(v, a < accesses ? 1 : 0, k, m.d);
                }
            }
            m = block_moments(m);
            mine = make_float4(m.n, m.k, m.d, m.m2);
        } else {
            float ss = 0.0f; /* the columns past the end hold 0 */
#pragma unroll
            for (int a = 0; a < ACCESSES; ++a) {
                float v[W];
                widen8(q[a], v);
#pragma unroll
                for (int j = 0; j < W; ++j)
                    ss += v[j] * v[j];
            }
            mine = make_float4(block_sum(ss, s_part), 0.0f, 0.0f, 0.0f);
        }
        const float4 r = split_row_stats<LAYER>(mine, t, row, slices, parts, counters);
        const float rstd = rsqrtf((LAYER ? r.w : r.x) / cols + eps);
        if constexpr (LAYER) {
            k = r.y;
            d = r.z;
        }
        reread(q);
        /* the row's address again, not kept through the passes: every register counts here */
        asm volatile("" : "+r"(row));
        __nv_bfloat16 *y = out + (size_t)row * cols;
        int at = first, stride = SPLIT_THREADS * W;
#pragma unroll
        for (int a = 0; a < ACCESSES; ++a) {
            float v[W];
            widen8(q[a], v);
            store_norm_slice<LAYER, W, W>(y, w, b, cols, at, threadIdx.x, SPLIT_THREADS, v, k, d,
                                          rstd);
            asm volatile("" : "+r"(stride)); /* one address at a time, not all eight kept */
            at += stride;
        }
    }
}
#endif

/* ---- the launchers -------------------------------------------------------------------------- */

/* a block of whole warps, enough for cols at ept values a thread */
static int block_threads(int cols, int ept)
{
    return cdiv(cdiv(cols, ept), WARP) * WARP;
}

#if HAVE_CLUSTERS
/* Launches the cluster kernel for rows of HELD_ROW_MAX < cols <= CLUSTER_MAX * HELD_ROW_MAX, as
 * step 4 does: C = cdiv(cols, HELD_ROW_MAX) blocks a row, each of as few whole warps as hold its
 * share at 32 values a thread. false, launching nothing, where the device cannot run such a
 * cluster, the rows are not 16-byte aligned or are bf16: those are streamed (step 4's launcher
 * says why, from the H200's measurements of both). */
template <typename T, int W, bool LAYER>
static bool norm_cluster(const T *d_x, const T *d_w, const T *d_b, T *d_y, int rows, int cols,
                         float eps)
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
                CUDA_CHECK(cudaOccupancyMaxActiveClusters(
                    &clusters, norm_cluster_kernel<T, EPT, W, LAYER>, &config));
            fit = clusters > 0 ? 1 : -1;
        }
        if (fit < 0)
            return false;
        CUDA_CHECK(cudaLaunchKernelEx(&config, norm_cluster_kernel<T, EPT, W, LAYER>, d_x, d_w, d_b,
                                      d_y, cols, eps, EPT * threads));
        return true;
    }
}
#endif

#if HAVE_CLUSTERS
/* Launches the split kernel, as step 4's softmax_split: false, launching nothing, where the
 * device has no cooperative launch, its grid cannot take a row's slices at once, or the
 * statistics would not fit the scratch. fp32 slices hold 8192 values widened, bf16 slices
 * 16384 as loaded (norm_split_packed_kernel). */
template <typename T, int W, bool LAYER>
static bool norm_split(const T *d_x, const T *d_w, const T *d_b, T *d_y, int rows, int cols,
                       float eps, void *d_scratch)
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
            kernel = (const void *)norm_split_packed_kernel<LAYER>;
        else
            kernel = (const void *)norm_split_kernel<T, W, LAYER>;
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
        const size_t parts_at = (counter_bytes + 15) / 16 * 16;
        const size_t part_count = (size_t)rows * (size_t)slices;
        if (grid < slices || part_count > 0xffffffffu ||
            parts_at + part_count * sizeof(float4) > membound_scratch_bytes(rows))
            return false;
        unsigned *counters = static_cast<unsigned *>(d_scratch);
        float4 *parts = reinterpret_cast<float4 *>(static_cast<char *>(d_scratch) + parts_at);
        CUDA_CHECK(cudaMemsetAsync(counters, 0, counter_bytes));
        void *args[] = { (void *)&d_x, (void *)&d_w, (void *)&d_b, (void *)&d_y, (void *)&rows,
                         (void *)&cols, (void *)&eps, (void *)&slices, (void *)&parts,
                         (void *)&counters };
        CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3((unsigned)grid), dim3(SPLIT_THREADS),
                                               args, 0, 0));
        return true;
    }
}
#endif

template <typename T, int W, bool LAYER>
static void norm_rows(const T *d_x, const T *d_w, const T *d_b, T *d_y, int rows, int cols,
                      float eps, void *d_scratch)
{
#if !HAVE_CLUSTERS
    (void)d_scratch; /* the split rows need a GPU */
#endif
    /* A block holds 32 values a thread, up to 1024 threads: 64 registers a thread, of which
     * the row takes 32; one element at a time (W = 1), the bounds test of every element takes
     * the rest, so those rows hold 16 a thread (16384 columns) and longer ones are streamed. */
    constexpr int HELD_EPT = W == 1 ? 16 : HELD_ROW_MAX / 1024;
    const int warp_blocks = cdiv(rows, ROWS_PER_BLOCK), warp_threads = ROWS_PER_BLOCK * WARP;
    if (cols <= 8 * WARP)
        norm_warp_kernel<T, 8, W, LAYER><<<warp_blocks, warp_threads>>>(d_x, d_w, d_b, d_y, rows,
                                                                         cols, eps);
    else if (cols <= 16 * WARP)
        norm_warp_kernel<T, 16, W, LAYER><<<warp_blocks, warp_threads>>>(d_x, d_w, d_b, d_y, rows,
                                                                          cols, eps);
    else if (cols <= WARP_ROW_MAX)
        norm_warp_kernel<T, 32, W, LAYER><<<warp_blocks, warp_threads>>>(d_x, d_w, d_b, d_y, rows,
                                                                          cols, eps);
    else if (cols <= HELD_EPT * 1024)
        norm_block_kernel<T, HELD_EPT, W, LAYER><<<rows, block_threads(cols, HELD_EPT)>>>(
            d_x, d_w, d_b, d_y, cols, eps);
#if HAVE_CLUSTERS
    else if (norm_split<T, W, LAYER>(d_x, d_w, d_b, d_y, rows, cols, eps, d_scratch))
        ; /* a row split across persistent blocks */
#endif
    else if (sizeof(T) == 2 && W == 8 && cols <= PACKED_ROW_MAX)
        norm_block_packed_kernel<LAYER><<<rows, block_threads(cols, PACKED_ROW_MAX / 1024)>>>(
            reinterpret_cast<const __nv_bfloat16 *>(d_x), reinterpret_cast<const __nv_bfloat16 *>(d_w),
            reinterpret_cast<const __nv_bfloat16 *>(d_b), reinterpret_cast<__nv_bfloat16 *>(d_y),
            cols, eps);
#if HAVE_CLUSTERS
    else if (cols <= CLUSTER_MAX * HELD_ROW_MAX && norm_cluster<T, W, LAYER>(d_x, d_w, d_b, d_y, rows,
                                                                             cols, eps))
        ; /* a cluster a row */
#endif
    else
        norm_stream_kernel<T, W, LAYER><<<rows, STREAM_THREADS>>>(d_x, d_w, d_b, d_y, cols, eps);
}

static bool aligned16(const void *p)
{
    return (uintptr_t)p % 16 == 0;
}

/* d_b is NULL for RMSNorm */
template <typename T, bool LAYER>
static void norm(const T *d_x, const T *d_w, const T *d_b, T *d_y, int rows, int cols, float eps,
                 void *d_scratch)
{
    constexpr int VEC = 16 / sizeof(T);
    /* 16-byte accesses need every row, and w and b, to start on a 16-byte boundary */
    const bool aligned = cols % VEC == 0 && aligned16(d_x) && aligned16(d_w) && aligned16(d_y) &&
                         (!LAYER || aligned16(d_b));
    if (aligned)
        norm_rows<T, VEC, LAYER>(d_x, d_w, d_b, d_y, rows, cols, eps, d_scratch);
    else
        norm_rows<T, 1, LAYER>(d_x, d_w, d_b, d_y, rows, cols, eps, d_scratch);
    CUDA_CHECK(cudaGetLastError());
}

void rmsnorm_f32(const float *d_x, const float *d_w, float *d_y, int rows, int cols, float eps,
                 void *d_scratch)
{
    norm<float, false>(d_x, d_w, NULL, d_y, rows, cols, eps, d_scratch);
}

void rmsnorm_bf16(const mb_bf16 *d_x, const mb_bf16 *d_w, mb_bf16 *d_y, int rows, int cols,
                  float eps, void *d_scratch)
{
    norm<__nv_bfloat16, false>(d_x, d_w, NULL, d_y, rows, cols, eps, d_scratch);
}

void layernorm_f32(const float *d_x, const float *d_w, const float *d_b, float *d_y, int rows,
                   int cols, float eps, void *d_scratch)
{
    norm<float, true>(d_x, d_w, d_b, d_y, rows, cols, eps, d_scratch);
}

void layernorm_bf16(const mb_bf16 *d_x, const mb_bf16 *d_w, const mb_bf16 *d_b, mb_bf16 *d_y,
                    int rows, int cols, float eps, void *d_scratch)
{
    norm<__nv_bfloat16, true>(d_x, d_w, d_b, d_y, rows, cols, eps, d_scratch);
}
