/* step2_mx.cu: chapter 11, step 2 of 2, microscaled formats: MXFP8, MXFP4, NVFP4.
 * Your file.
 *
 * The contract (quant.h, which says every rule exactly): MXFP8 and MXFP4 (OCP Microscaling
 * Formats v1.0, section 6.3) give each block of 32 elements one e8m0 scale, 2^e with
 * e = floor(log2(amax)) - EMAX (EMAX 8 for e4m3 elements, 2 for e2m1), at least -127 (an
 * all-zero block has 2^-127), 0xff (NaN) for a block holding a NaN or an infinity; each element
 * is x * 2^-e rounded to nearest-even and saturated. NVFP4 gives each block of 16 an e4m3 scale,
 * e4m3((amax / 6) / g), under one fp32 scale g = t / 2688 for the tensor (t its amax), and
 * divides each element by the scale as rounded times g. FP4 elements go two to a byte, the
 * first in the low nibble. Each dequantize_* is the inverse: value times scale.
 * The launchers below are given: four elements a thread, and for NVFP4 an amax pass over the
 * tensor into the scratch first.
 *
 * What the grader checks (make grade CH=11 STEP=2):
 *   correct  every element, scale byte and float bit for bit against the grader's own C
 *            reference of the MX specification's rules and NVIDIA's NVFP4 recipe (elements of a
 *            NaN-scaled block excepted: the block is NaN whatever they hold), at n = 1, 31, 33,
 *            1001, 4099 and 2^24 + 3 (2^18 + 3 on the CPU backend), on values whose blocks span
 *            2^-40 to 2^40, on fixed vectors of every edge (amax just below and at a power of
 *            two, values that saturate, ties, all-zero blocks, fp32 subnormals, NaN, +-inf,
 *            tiny blocks beside large ones), and dequantisation of random codes and scales,
 *            e8m0's 0x00, 0xfe and 0xff included; outputs poisoned before every run
 *   speed    on a GPU, quantize_mxfp8, quantize_mxfp4 and quantize_nvfp4 at n = 2^26, in GB/s
 *            against chapter 07's copy kernel timed in the same run
 *
 * The lesson is README.md beside this file; its hints for step 2 are there too. */
#include <stdint.h>

#include <cuda_fp8.h>

#include "cuda_check.h"
#include "sm_count.h"
#include "quant.h"

#define BLOCK 256

template <bool FP4>
static __global__ void quantize_mx_kernel(const float *__restrict__ x, int n,
                                          uint8_t *__restrict__ q, uint8_t *__restrict__ scale)
{
    /* TODO: for the four elements i = 4 t .. 4 t + 3 below n (t this thread's index in the
     * grid): their block's scale byte (the block is 8 threads: share the amax), and their
     * elements: e4m3 bytes (MXFP8) or e2m1 nibbles (FP4). */
    (void)x; (void)n; (void)q; (void)scale;
}

void quantize_mxfp8(const float *d_x, int n, uint8_t *d_q, uint8_t *d_scale, void *d_scratch)
{
    (void)d_scratch;
    quantize_mx_kernel<false><<<cdiv(cdiv(n, 4), BLOCK), BLOCK>>>(d_x, n, d_q, d_scale);
    CUDA_CHECK(cudaGetLastError());
}

void quantize_mxfp4(const float *d_x, int n, uint8_t *d_q, uint8_t *d_scale, void *d_scratch)
{
    (void)d_scratch;
    quantize_mx_kernel<true><<<cdiv(cdiv(n, 4), BLOCK), BLOCK>>>(d_x, n, d_q, d_scale);
    CUDA_CHECK(cudaGetLastError());
}

template <bool FP4>
static __global__ void dequantize_mx_kernel(const uint8_t *__restrict__ q,
                                            const uint8_t *__restrict__ scale, int n,
                                            float *__restrict__ y)
{
    /* TODO: y[i] = value(element i) * 2^(scale[i / 32] - 127) for i = 4 t .. 4 t + 3 below n;
     * NaN where the scale is 0xff. */
    (void)q; (void)scale; (void)n; (void)y;
}

void dequantize_mxfp8(const uint8_t *d_q, const uint8_t *d_scale, int n, float *d_y)
{
    dequantize_mx_kernel<false><<<cdiv(cdiv(n, 4), BLOCK), BLOCK>>>(d_q, d_scale, n, d_y);
    CUDA_CHECK(cudaGetLastError());
}

void dequantize_mxfp4(const uint8_t *d_q, const uint8_t *d_scale, int n, float *d_y)
{
    dequantize_mx_kernel<true><<<cdiv(cdiv(n, 4), BLOCK), BLOCK>>>(d_q, d_scale, n, d_y);
    CUDA_CHECK(cudaGetLastError());
}

static __global__ void nvfp4_amax_kernel(const float *__restrict__ x, int n,
                                         unsigned int *__restrict__ amax_bits)
{
    /* TODO: *amax_bits = the bits of max |x_i| over all finite x_i (it starts at 0). */
    (void)x; (void)n; (void)amax_bits;
}

static __global__ void quantize_nvfp4_kernel(const float *__restrict__ x, int n,
                                             const unsigned int *__restrict__ amax_bits,
                                             uint8_t *__restrict__ q, uint8_t *__restrict__ scale,
                                             float *__restrict__ tensor_scale)
{
    /* TODO: g from the tensor's amax (thread 0 writes *tensor_scale = g); for the four elements
     * i = 4 t .. 4 t + 3 below n, their block's e4m3 scale byte (a block is 4 threads) and
     * their e2m1 nibbles. */
    (void)x; (void)n; (void)amax_bits; (void)q; (void)scale; (void)tensor_scale;
}

static int stride_blocks(int n)
{
    int need = cdiv(cdiv(n, 4), BLOCK);
    int most = 4 * sm_count();
    return need < most ? need : most;
}

void quantize_nvfp4(const float *d_x, int n, uint8_t *d_q, uint8_t *d_scale,
                    float *d_tensor_scale, void *d_scratch)
{
    unsigned int *amax_bits = static_cast<unsigned int *>(d_scratch);
    CUDA_CHECK(cudaMemsetAsync(amax_bits, 0, sizeof *amax_bits)); /* garbage on entry */
    nvfp4_amax_kernel<<<stride_blocks(n), BLOCK>>>(d_x, n, amax_bits);
    CUDA_CHECK(cudaGetLastError());
    quantize_nvfp4_kernel<<<cdiv(cdiv(n, 4), BLOCK), BLOCK>>>(d_x, n, amax_bits, d_q, d_scale,
                                                              d_tensor_scale);
    CUDA_CHECK(cudaGetLastError());
}

static __global__ void dequantize_nvfp4_kernel(const uint8_t *__restrict__ q,
                                               const uint8_t *__restrict__ scale,
                                               const float *__restrict__ tensor_scale, int n,
                                               float *__restrict__ y)
{
    /* TODO: y[i] = value(element i) * (value(scale[i / 16]) * tensor_scale[0]) for
     * i = 4 t .. 4 t + 3 below n; NaN where the scale is e4m3's NaN. */
    (void)q; (void)scale; (void)tensor_scale; (void)n; (void)y;
}

void dequantize_nvfp4(const uint8_t *d_q, const uint8_t *d_scale, const float *d_tensor_scale,
                      int n, float *d_y)
{
    dequantize_nvfp4_kernel<<<cdiv(cdiv(n, 4), BLOCK), BLOCK>>>(d_q, d_scale, d_tensor_scale, n,
                                                                d_y);
    CUDA_CHECK(cudaGetLastError());
}
