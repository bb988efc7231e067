/* step1_fp8.cu: chapter 11, step 1 of 2, FP8: amax, scale, round, and back.
 * Your file.
 *
 * The contract (quant.h, which says every rule exactly): quantize_fp8 finds each block's amax
 * (a block of 128 consecutive elements, or the whole tensor), its scale s = MAX / amax (1 for
 * an all-zero block, FLT_MAX where the quotient overflows), writes fp8(x * s) for every element
 * and 1 / s for every block; quantize_fp8_scaled does the same with a scale it is given, so its
 * values can land past MAX and must saturate; dequantize_fp8 multiplies each code's value by
 * its block's 1 / s. The formats are OFP8's e4m3 and e5m2 (OCP 8-bit Floating Point
 * Specification rev 1.0): round to nearest, ties to even; saturate to +-MAX (+-inf too); NaN
 * stays NaN; subnormals kept; -0 kept. The launchers below are given: they start the kernels,
 * a warp for each block of 128, and for a whole tensor an amax pass into the scratch first.
 *
 * What the grader checks (make grade CH=11 STEP=1):
 *   correct  every output byte and float bit for bit against the grader's own C reference of
 *            the formats' rules, both formats, per block and per tensor, at n = 1, 127, 129,
 *            1000, 4099 and 2^24 + 3 (2^18 + 3 on the CPU backend), on values whose blocks
 *            span 2^-40 to 2^40, on fixed vectors of every edge (each format's largest value,
 *            values past it, ties at every exponent, subnormals, 0 and -0, NaN, +-inf,
 *            all-zero blocks, blocks of fp32 subnormals), fresh inputs from the printed seed,
 *            outputs poisoned (0xff bytes) before every run
 *   speed    on a GPU, each of quantize_fp8 (e4m3, per block) and dequantize_fp8 at n = 2^26,
 *            in GB/s against chapter 07's copy kernel timed in the same run (the lesson says
 *            what it needs)
 * You may call cuda_fp8.h's __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3) (or
 * __NV_E5M2), or round by hand from the float's bits: the grader checks the result, not how.
 *
 * The lesson is README.md beside this file; its hints for step 1 are there too. */
#include <float.h>
#include <stdint.h>

#include <cuda_fp8.h>

#include "cuda_check.h"
#include "sm_count.h"
#include "quant.h"

#define BLOCK 256 /* threads a CUDA block */
#define WARPS (BLOCK / 32)

static __global__ void quantize_fp8_block_kernel(const float *__restrict__ x, int n, int format,
                                                 uint8_t *__restrict__ q,
                                                 float *__restrict__ scale_inv, int nblocks)
{
    /* TODO: warp b = blockIdx.x * WARPS + threadIdx.x / 32 (b < nblocks) owns elements
     * [128 b, 128 b + 128) below n: their amax over finite values, the scale, q[i] for each
     * of them and scale_inv[b] (quant.h). */
    (void)x; (void)n; (void)format; (void)q; (void)scale_inv; (void)nblocks;
}

static __global__ void amax_kernel(const float *__restrict__ x, int n,
                                   unsigned int *__restrict__ amax_bits)
{
    /* TODO: *amax_bits = the bits of max |x_i| over all finite x_i (it starts at 0); the grid
     * strides over x. */
    (void)x; (void)n; (void)amax_bits;
}

static __global__ void quantize_fp8_tensor_kernel(const float *__restrict__ x, int n, int format,
                                                  const unsigned int *__restrict__ amax_bits,
                                                  uint8_t *__restrict__ q,
                                                  float *__restrict__ scale_inv)
{
    /* TODO: the scale from the tensor's amax (its bits in *amax_bits), q[i] for every i < n
     * (the grid strides), and scale_inv[0]. */
    (void)x; (void)n; (void)format; (void)amax_bits; (void)q; (void)scale_inv;
}

static int stride_blocks(int n)
{
    int need = cdiv(cdiv(n, 4), BLOCK);
    int most = 4 * sm_count();
    return need < most ? need : most;
}

void quantize_fp8(const float *d_x, int n, int format, int block, uint8_t *d_q,
                  float *d_scale_inv, void *d_scratch)
{
    if (block == FP8_BLOCK) {
        int nblocks = cdiv(n, FP8_BLOCK);
        quantize_fp8_block_kernel<<<cdiv(nblocks, WARPS), BLOCK>>>(d_x, n, format, d_q,
                                                                   d_scale_inv, nblocks);
        CUDA_CHECK(cudaGetLastError());
        return;
    }
    unsigned int *amax_bits = static_cast<unsigned int *>(d_scratch);
    CUDA_CHECK(cudaMemsetAsync(amax_bits, 0, sizeof *amax_bits)); /* garbage on entry */
    int blocks = stride_blocks(n);
    amax_kernel<<<blocks, BLOCK>>>(d_x, n, amax_bits);
    CUDA_CHECK(cudaGetLastError());
    quantize_fp8_tensor_kernel<<<blocks, BLOCK>>>(d_x, n, format, amax_bits, d_q, d_scale_inv);
    CUDA_CHECK(cudaGetLastError());
}

static __global__ void quantize_fp8_scaled_kernel(const float *__restrict__ x, int n, int format,
                                                  const float *__restrict__ scale,
                                                  uint8_t *__restrict__ q)
{
    /* TODO: q[i] = fp8(x[i] * scale[0]) for the four elements i = 4 t .. 4 t + 3 below n,
     * t = this thread's index in the grid. */
    (void)x; (void)n; (void)format; (void)scale; (void)q;
}

void quantize_fp8_scaled(const float *d_x, int n, int format, const float *d_scale,
                         uint8_t *d_q)
{
    quantize_fp8_scaled_kernel<<<cdiv(cdiv(n, 4), BLOCK), BLOCK>>>(d_x, n, format, d_scale, d_q);
    CUDA_CHECK(cudaGetLastError());
}

static __global__ void dequantize_fp8_kernel(const uint8_t *__restrict__ q,
                                             const float *__restrict__ scale_inv, int n,
                                             int format, int block, float *__restrict__ y)
{
    /* TODO: y[i] = value(q[i]) * scale_inv[its block] for the four elements i = 4 t .. 4 t + 3
     * below n. */
    (void)q; (void)scale_inv; (void)n; (void)format; (void)block; (void)y;
}

void dequantize_fp8(const uint8_t *d_q, const float *d_scale_inv, int n, int format, int block,
                    float *d_y)
{
    dequantize_fp8_kernel<<<cdiv(cdiv(n, 4), BLOCK), BLOCK>>>(d_q, d_scale_inv, n, format, block,
                                                              d_y);
    CUDA_CHECK(cudaGetLastError());
}
