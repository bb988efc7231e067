/* softmax_three_pass.cu: chapter 07, the baseline step 4 is measured against. Given.
 *
 * softmax_three_pass_f32/_bf16 (membound.h): the textbook order of a numerically safe softmax,
 * one kernel for each statistic and a block of BLOCK threads for each row:
 *   1. m_r = max_j x[r][j]                  into the scratch: floats d_scratch[0 .. rows)
 *   2. s_r = sum_j exp(x[r][j] - m_r)       into the scratch: floats d_scratch[rows .. 2 rows)
 *   3. y[r][j] = exp(x[r][j] - m_r) / s_r
 * Correct on every row the contract allows: subtracting the max keeps exp from overflowing at
 * +-1e4, the max propagates a NaN (fmaxf would drop it), exp(-inf - m) is 0. Slow by design:
 * the row is read three times and written once, with scalar loads, where a copy reads once and
 * writes once: at most half of copy's bandwidth (a little more where a row's second and third
 * reads hit L2). Step 4 reads it once.
 * Arithmetic in fp32 for bf16 too: widened on the load, rounded once on the store. */
#include <math.h>

#include "cuda_check.h"
#include "membound.h"

#define BLOCK 256
#define WARP 32
#define FULL_MASK 0xffffffffu

static __device__ __forceinline__ float to_float(float x) { return x; }
static __device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
static __device__ __forceinline__ void store(float *p, float y) { *p = y; }
static __device__ __forceinline__ void store(__nv_bfloat16 *p, float y) { *p = __float2bfloat16_rn(y); }

/* max that keeps a NaN from either side (fmaxf returns the other operand) */
static __device__ __forceinline__ float max_nan(float a, float b)
{
    return (a > b || a != a) ? a : b;
}

/* The block's max, or its sum, in every thread: shuffles within each warp, then the BLOCK /
 * 32 warp results through shared memory. Once a kernel (a second call would overwrite s_part
 * while slower warps may still read it). */
template <bool MAX>
static __device__ __forceinline__ float block_reduce(float v)
{
    __shared__ float s_part[BLOCK / WARP];
    for (int offset = WARP / 2; offset > 0; offset /= 2) {
        const float o = __shfl_xor_sync(FULL_MASK, v, offset);
        v = MAX ? max_nan(v, o) : v + o;
    }
    if (threadIdx.x % WARP == 0)
        s_part[threadIdx.x / WARP] = v;
    __syncthreads();
    v = s_part[0];
    for (int w = 1; w < BLOCK / WARP; ++w)
        v = MAX ? max_nan(v, s_part[w]) : v + s_part[w];
    return v;
}

template <typename T>
static __global__ void __launch_bounds__(BLOCK)
softmax_max_kernel(const T *__restrict__ in, int cols, float *__restrict__ row_max)
{
    const T *x = in + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        m = max_nan(m, to_float(x[c]));
    m = block_reduce<true>(m);
    if (threadIdx.x == 0)
        row_max[blockIdx.x] = m;
}

template <typename T>
static __global__ void __launch_bounds__(BLOCK)
softmax_sum_kernel(const T *__restrict__ in, int cols, const float *__restrict__ row_max,
                   float *__restrict__ row_sum)
{
    const T *x = in + (size_t)blockIdx.x * cols;
    const float m = row_max[blockIdx.x];
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        s += expf(to_float(x[c]) - m);
    s = block_reduce<false>(s);
    if (threadIdx.x == 0)
        row_sum[blockIdx.x] = s;
}

template <typename T>
static __global__ void __launch_bounds__(BLOCK)
softmax_out_kernel(const T *__restrict__ in, T *__restrict__ out, int cols,
                   const float *__restrict__ row_max, const float *__restrict__ row_sum)
{
    const size_t offset = (size_t)blockIdx.x * cols;
    const float m = row_max[blockIdx.x], s = row_sum[blockIdx.x];
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        store(out + offset + c, expf(to_float(in[offset + c]) - m) / s);
}

template <typename T>
static void softmax_three_pass(const T *d_in, T *d_out, int rows, int cols, void *d_scratch)
{
    float *d_max = static_cast<float *>(d_scratch); /* rows floats, then rows more */
    float *d_sum = d_max + rows;
    softmax_max_kernel<T><<<rows, BLOCK>>>(d_in, cols, d_max);
    CUDA_CHECK(cudaGetLastError());
    softmax_sum_kernel<T><<<rows, BLOCK>>>(d_in, cols, d_max, d_sum);
    CUDA_CHECK(cudaGetLastError());
    softmax_out_kernel<T><<<rows, BLOCK>>>(d_in, d_out, cols, d_max, d_sum);
    CUDA_CHECK(cudaGetLastError());
}

void softmax_three_pass_f32(const float *d_in, float *d_out, int rows, int cols, void *d_scratch)
{
    softmax_three_pass<float>(d_in, d_out, rows, cols, d_scratch);
}

void softmax_three_pass_bf16(const mb_bf16 *d_in, mb_bf16 *d_out, int rows, int cols,
                             void *d_scratch)
{
    softmax_three_pass<__nv_bfloat16>(d_in, d_out, rows, cols, d_scratch);
}
