/* norms_two_moment.cu: chapter 07, the baseline step 5 is measured against. Given.
 *
 * rmsnorm_two_moment_* and layernorm_two_moment_* (membound.h): a block of BLOCK threads a
 * row. One pass over the row accumulates, per thread and then per block, in fp32,
 *   s1 = sum_j x[r][j]   and   s2 = sum_j x[r][j]^2,
 * and a second pass reads the row again to write
 *   RMSNorm:   y = x * rsqrt(s2 / n + eps) * w
 *   LayerNorm: y = (x - mu) * rsqrt(var + eps) * w + b,  mu = s1 / n,  var = s2 / n - mu^2.
 * The RMSNorm is right: it needs only s2, a sum of positive terms. The LayerNorm is the
 * one-pass textbook formula, and it is wrong where the mean is large against the spread:
 * E[x^2] and E[x]^2 agree in their leading digits and the subtraction cancels them. With a
 * mean of 1e4 and a variance of 1e-2, E[x^2] ~ 1e8, whose fp32 spacing is 8: the variance
 * comes out as a multiple of 8 or so, often negative, and rsqrtf of a negative number is NaN,
 * which is the honest symptom. Nothing here clamps it. Step 5 computes the variance from
 * deviations about the mean instead.
 * Traffic: the row read twice, written once (3 passes where a copy makes 2; the second read
 * partly from L2), scalar loads; w and b are read by every row, from L2 after the first.
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

/* The block's sums of a and of b, in every thread: shuffles within each warp, then the
 * BLOCK / 32 warp results through shared memory. Once a kernel. */
static __device__ __forceinline__ void block_sum2(float &a, float &b)
{
    __shared__ float s_a[BLOCK / WARP], s_b[BLOCK / WARP];
    for (int offset = WARP / 2; offset > 0; offset /= 2) {
        a += __shfl_xor_sync(FULL_MASK, a, offset);
        b += __shfl_xor_sync(FULL_MASK, b, offset);
    }
    if (threadIdx.x % WARP == 0) {
        s_a[threadIdx.x / WARP] = a;
        s_b[threadIdx.x / WARP] = b;
    }
    __syncthreads();
    a = s_a[0];
    b = s_b[0];
    for (int w = 1; w < BLOCK / WARP; ++w) {
        a += s_a[w];
        b += s_b[w];
    }
}

/* LAYER: LayerNorm (b used), else RMSNorm (b NULL). */
template <typename T, bool LAYER>
static __global__ void __launch_bounds__(BLOCK)
norm_two_moment_kernel(const T *__restrict__ in, const T *__restrict__ w, const T *__restrict__ b,
                       T *__restrict__ out, int cols, float eps)
{
    const size_t offset = (size_t)blockIdx.x * cols;
    float s1 = 0.0f, s2 = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        const float x = to_float(in[offset + c]);
        s1 += x;
        s2 += x * x;
    }
    block_sum2(s1, s2);
    const float mean = LAYER ? s1 / cols : 0.0f;
    const float var = s2 / cols - mean * mean; /* E[x^2] - E[x]^2: cancels (see above) */
    const float rstd = rsqrtf(var + eps);      /* NaN when var + eps < 0 */
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        const float x = to_float(in[offset + c]);
        const float y = (x - mean) * rstd * to_float(w[c]);
        store(out + offset + c, LAYER ? y + to_float(b[c]) : y);
    }
}

template <typename T, bool LAYER>
static void norm_two_moment(const T *d_x, const T *d_w, const T *d_b, T *d_y, int rows, int cols,
                            float eps)
{
    norm_two_moment_kernel<T, LAYER><<<rows, BLOCK>>>(d_x, d_w, d_b, d_y, cols, eps);
    CUDA_CHECK(cudaGetLastError());
}

void rmsnorm_two_moment_f32(const float *d_x, const float *d_w, float *d_y, int rows, int cols,
                            float eps, void *d_scratch)
{
    (void)d_scratch;
    norm_two_moment<float, false>(d_x, d_w, NULL, d_y, rows, cols, eps);
}

void rmsnorm_two_moment_bf16(const mb_bf16 *d_x, const mb_bf16 *d_w, mb_bf16 *d_y, int rows,
                             int cols, float eps, void *d_scratch)
{
    (void)d_scratch;
    norm_two_moment<__nv_bfloat16, false>(d_x, d_w, NULL, d_y, rows, cols, eps);
}

void layernorm_two_moment_f32(const float *d_x, const float *d_w, const float *d_b, float *d_y,
                              int rows, int cols, float eps, void *d_scratch)
{
    (void)d_scratch;
    norm_two_moment<float, true>(d_x, d_w, d_b, d_y, rows, cols, eps);
}

void layernorm_two_moment_bf16(const mb_bf16 *d_x, const mb_bf16 *d_w, const mb_bf16 *d_b,
                               mb_bf16 *d_y, int rows, int cols, float eps, void *d_scratch)
{
    (void)d_scratch;
    norm_two_moment<__nv_bfloat16, true>(d_x, d_w, d_b, d_y, rows, cols, eps);
}
