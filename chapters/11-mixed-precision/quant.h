/* quant.h: the contract of chapter 11, mixed precision: FP8 and microscaled formats.
 *
 *   step 1  FP8: amax, scale, round (e4m3, e5m2), and back   quantize_fp8, quantize_fp8_scaled,
 *                                                            dequantize_fp8     (step1_fp8.cu)
 *   step 2  microscaled: MXFP8, MXFP4, NVFP4, and back       quantize_mxfp8, quantize_mxfp4,
 *                                                            quantize_nvfp4, dequantize_*
 *                                                                               (step2_mx.cu)
 *   step 3  block-scaled FP8 GEMM on wgmma (Hopper only)     gemm_fp8_blockscaled
 *                                                                 (step3_fp8_gemm_sm90a.cu)
 *   step 4  weight-only MXFP4 GEMM for small batches         gemm_mxfp4_bf16
 *                                                                 (step4_mxfp4_gemv.cu)
 * Given: chapter 07's copy kernel (chapters/07-memory-bound/copy.cu), the ceiling steps 1 and 2
 * are measured against on a GPU; cuBLASLt's FP8 GEMM with per-tensor scales
 * (cublaslt_fp8_gpu.cu, GPU builds only), step 3's baseline; step 4's is cuBLAS's BF16 GEMM.
 *
 * The formats (the lesson, README.md, has their bit layouts):
 *   e4m3   OCP 8-bit Floating Point Specification (OFP8) rev 1.0, 2023, section 3: sign, 4
 *          exponent bits (bias 7), 3 mantissa bits; subnormals; no infinity; NaN is S.1111.111
 *          (0x7f, 0xff); largest finite 448 (0x7e), smallest normal 2^-6, smallest subnormal
 *          2^-9. NVIDIA's __nv_fp8_e4m3 (cuda_fp8.h) is this format.
 *   e5m2   OFP8 section 3: sign, 5 exponent bits (bias 15), 2 mantissa bits, IEEE 754's rules:
 *          +-inf is S.11111.00, NaN S.11111.{01,10,11}; largest finite 57344 (0x7b), smallest
 *          normal 2^-14, smallest subnormal 2^-16.
 *   e2m1   OCP Microscaling Formats (MX) v1.0, section 5.3.3: sign, 2 exponent bits (bias 1), 1
 *          mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6; no infinity, no NaN.
 *   e8m0   MX v1.0, section 5.4: an unsigned power of two, 2^(code - 127), code 0 to 254
 *          (2^-127 to 2^127); 0xff is NaN; no zero, no sign.
 *
 * Rounding, everywhere: to the nearest value of the format, ties to the one whose last mantissa
 * bit is 0 (round-to-nearest-even, OFP8 section 5); saturating: a value past the format's
 * largest finite magnitude, +-inf included, becomes that largest finite value with its sign
 * (OFP8's saturation mode; cuda_fp8.h's __NV_SATFINITE). NaN stays NaN (e4m3 and e5m2 have it;
 * e2m1 does not, and the MX formats carry it in the scale instead). The sign of zero is kept:
 * -0, and a negative value too small for the format, become -0. Subnormals of every format are
 * values like any other: nothing is flushed to zero.
 *
 * Arithmetic is fp32 as CUDA C does it without -use_fast_math: every +, *, / correctly rounded,
 * subnormals kept. Each rule below says which fp32 operations make a value, in which order:
 * the grader compares bits, so x * s and x / (1 / s) are different answers.
 *
 * Every launcher takes device pointers as cudaMalloc returns them (256-byte aligned), launches
 * on the default stream, checks its launches and returns without synchronising. n is any
 * element count from 1 to 2^30; the last block of a blocked format is partial when n is not a
 * multiple of its size (its amax is over the elements that exist). d_scratch is device memory
 * of at least QUANT_SCRATCH_BYTES that holds garbage on entry (the grader fills it with 0xff):
 * a launcher that needs a counter or an amax at zero sets it itself. Nothing else may be
 * allocated. The grader, the bench and the book call only what is declared here. */
#ifndef QUANT_H
#define QUANT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QUANT_SCRATCH_BYTES 256

enum fp8_format { FP8_E4M3 = 0, FP8_E5M2 = 1 };
#define FP8_E4M3_MAX 448.0f   /* 0x7e */
#define FP8_E5M2_MAX 57344.0f /* 0x7b */

/* ---- step 1: FP8 with an fp32 scale (step1_fp8.cu) ---------------------------------------
 *
 * quantize_fp8: current scaling, per tensor (block == FP8_PER_TENSOR: one scale for all n) or
 * per block of FP8_BLOCK = 128 consecutive elements (block b is x[128 b .. 128 b + 127]). For
 * each block, with MAX the format's largest finite value (448 or 57344):
 *   amax = max |x_i| over the block's finite x_i (NaN and +-inf are left out: one bad value
 *          must not decide the scale of its neighbours); 0 when there is none
 *   s    = 1                  if amax == 0 (an all-zero block: every element quantises to +-0)
 *        = MAX / amax         otherwise, one fp32 division; and where that overflows (amax
 *                             below about 2^-119 for e4m3), s = FLT_MAX
 *   d_q[i] = fp8(x_i * s)     the product in fp32, then rounded as above
 *   d_scale_inv[b] = 1.0f / s one fp32 division: what dequantisation (and a GEMM) multiplies by
 * This is NVIDIA Transformer Engine's current-scaling recipe (scale = MAX / amax, scale_inv =
 * 1 / scale). d_scale_inv holds cdiv(n, 128) floats per block, 1 per tensor. */
#define FP8_PER_TENSOR 0
#define FP8_BLOCK 128
void quantize_fp8(const float *d_x, int n, int format, int block, uint8_t *d_q,
                  float *d_scale_inv, void *d_scratch);

/* quantize_fp8_scaled: delayed scaling, the scale given (from earlier steps' amax, say), so
 * values may land past MAX and must saturate: d_q[i] = fp8(x_i * d_scale[0]), the product in
 * fp32. */
void quantize_fp8_scaled(const float *d_x, int n, int format, const float *d_scale,
                         uint8_t *d_q);

/* dequantize_fp8: the inverse, d_y[i] = value(d_q[i]) * d_scale_inv[block b of i] (one fp32
 * multiply; NaN codes give NaN, e5m2's infinities inf); block as in quantize_fp8. */
void dequantize_fp8(const uint8_t *d_q, const float *d_scale_inv, int n, int format, int block,
                    float *d_y);

/* ---- step 2: microscaled formats (step2_mx.cu) --------------------------------------------
 *
 * MXFP8 and MXFP4 (MX v1.0, section 6.3, Algorithm 1, with the choices it leaves open made as
 * Microsoft's microxcaling library, the specification's reference, makes them): blocks of
 * MX_BLOCK = 32 consecutive elements, each with one e8m0 scale X = 2^e:
 *   if the block holds a NaN or +-inf:  d_scale[b] = 0xff (NaN: the block decodes to NaN, MX
 *          section 5.3; its elements may hold anything, and the grader does not read them)
 *   else amax = max |x_i| over the block, and
 *          e = floor(log2(amax)) - EMAX, EMAX the exponent of the element format's largest
 *              normal (8 for e4m3, 448 = 1.75 x 2^8; 2 for e2m1, 6 = 1.5 x 2^2); floor(log2)
 *              exact (for a normal fp32, its exponent field minus 127)
 *          e = -127 when amax == 0 (the all-zero block), and e is clamped to [-127, 127]
 *          d_scale[b] = e + 127
 *          element i = format(x_i * 2^-e), the product in fp32 (exact unless it underflows),
 *              rounded and saturated as above: the floor leaves the top of the binade past MAX
 *              (amax = 1.9 x 2^k scales to 486), and saturation takes it to 448.
 * MXFP8's elements are e4m3, one a byte: d_q holds n bytes. MXFP4's are e2m1, two a byte:
 * element 2j in the low nibble of d_q[j], 2j + 1 in the high one (as cuda_fp4.h's
 * __nv_fp4x2_storage_t holds .x and .y); d_q holds cdiv(n, 2) bytes, and when n is odd the
 * last byte's high nibble is 0. d_scale holds cdiv(n, 32) bytes. */
#define MX_BLOCK 32
void quantize_mxfp8(const float *d_x, int n, uint8_t *d_q, uint8_t *d_scale, void *d_scratch);
void quantize_mxfp4(const float *d_x, int n, uint8_t *d_q, uint8_t *d_scale, void *d_scratch);
/* the inverse: d_y[i] = value(element i) * 2^(d_scale[b] - 127), one fp32 multiply (2^-127 is
 * an fp32 subnormal; e4m3 x 2^127 may overflow to inf); d_scale[b] == 0xff gives NaN. */
void dequantize_mxfp8(const uint8_t *d_q, const uint8_t *d_scale, int n, float *d_y);
void dequantize_mxfp4(const uint8_t *d_q, const uint8_t *d_scale, int n, float *d_y);

/* NVFP4 (NVIDIA's 4-bit format: e2m1 elements, an e4m3 scale a block of NVFP4_BLOCK = 16, and
 * one fp32 scale for the tensor; the recipe of NVIDIA's TensorRT Model Optimizer and PyTorch
 * torchao's nvfp4 tensor):
 *   t = max |x_i| over the tensor's finite x_i (0 when none)
 *   g = t / 2688.0f (2688 = 448 x 6: the block scales then span e4m3's range); g = 1 where that
 *       is 0 (t == 0, or so small that it underflows). *d_tensor_scale = g
 *   per block of 16: if it holds a NaN or +-inf, d_scale[b] = 0x7f (e4m3 NaN) and its elements
 *       are not read; else, with a = max |x_i| over the block,
 *       d_scale[b] = e4m3((a / 6.0f) / g)            two fp32 divisions, then rounded as above
 *       total = value(d_scale[b]) * g                one fp32 multiply
 *       element i = e2m1(x_i / total)                one fp32 division; +-0 (x_i's sign)
 *                                                    where total is 0
 * Elements are packed as MXFP4's; d_scale holds cdiv(n, 16) bytes. */
#define NVFP4_BLOCK 16
#define NVFP4_TENSOR_DIVISOR 2688.0f
void quantize_nvfp4(const float *d_x, int n, uint8_t *d_q, uint8_t *d_scale,
                    float *d_tensor_scale, void *d_scratch);
/* the inverse: d_y[i] = value(element i) * (value(d_scale[b]) * d_tensor_scale[0]), two fp32
 * multiplies in that order; an e4m3 NaN scale (0x7f, 0xff) gives NaN. */
void dequantize_nvfp4(const uint8_t *d_q, const uint8_t *d_scale, const float *d_tensor_scale,
                      int n, float *d_y);

/* ---- step 3: a block-scaled FP8 GEMM (step3_fp8_gemm_sm90a.cu; sm_90a: Hopper only) -------
 *
 * D = A B^T with per-block scales, DeepSeek-V3's recipe for a linear layer's forward pass:
 *   A      m x k e4m3, row-major (element (r, i) at d_a[r * k + i]): the activations
 *   B      n x k e4m3, row-major (element (c, i) at d_b[c * k + i]): the weights as a linear
 *          layer stores them (out_features x in_features). Both are K-major, as 8-bit wgmma
 *          requires of both operands.
 *   kb     = cdiv(k, 128) blocks of k; block j is k = 128 j .. 128 j + 127 (the last may be
 *          partial)
 *   d_sa   kb x m floats, d_sa[j * m + r]: the scale_inv of row r's block j of A (1 x 128, step
 *          1's per-block scale_inv, stored a block of k at a time so that the scales of a
 *          k-block's rows lie together)
 *   d_sb   cdiv(n, 128) x kb floats, d_sb[(c / 128) * kb + j]: the scale_inv of the 128 x 128
 *          block of B that holds rows c / 128 and block j of k
 *   D      m x n bf16, row-major (element (r, c) at d_d[r * n + c], as its 16 bits):
 *          D[r][c] = bf16( sum over j of d_sa[j * m + r] * d_sb[(c / 128) * kb + j] * P_j ),
 *          P_j = sum over i in block j of value(a(r, i)) * value(b(c, i)),
 *          P_j on the tensor cores, the scaling and the sum over j in fp32 on the CUDA cores
 *          ("promotion": Hopper's FP8 tensor cores keep only about 14 bits of a running sum,
 *          so no sum runs longer than 128 of k there), rounded to the nearest bf16, ties to
 *          even.
 * m, n >= 1 any; k a positive multiple of 16 and d_a, d_b 16-byte aligned (the tensor memory
 * accelerator's rule for a row's stride), d_d 4-byte aligned. NaN codes are not given. Graded
 * on a GPU of compute capability 9.0: 1 - 2 sum(xy) / sum(x^2 + y^2) below 1e-3 over D against
 * a double-precision product of the dequantised inputs, and each element within a worst-case
 * bound (README.md); the CPU backend cannot run wgmma or TMA, and its builds leave the file
 * out. */
#define GEMM_SCALE_BLOCK 128
/* Weak: the CPU backend's builds leave *_sm90a.cu out, and see NULL here. */
void gemm_fp8_blockscaled(const uint8_t *d_a, const float *d_sa, const uint8_t *d_b,
                          const float *d_sb, uint16_t *d_d, int m, int k, int n)
    __attribute__((weak));

/* The baseline (cublaslt_fp8_gpu.cu, given, GPU builds only): cuBLASLt's FP8 GEMM on the same
 * A and B with one scale each (*d_sa_t and *d_sb_t, device floats: a per-tensor scale_inv),
 * D as above but D[r][c] = bf16(sa_t sb_t sum over all k of value(a) value(b)). Weak: absent
 * from CPU-backend builds (NULL there). */
void gemm_fp8_cublaslt(const uint8_t *d_a, const float *d_sa_t, const uint8_t *d_b,
                       const float *d_sb_t, uint16_t *d_d, int m, int k, int n)
    __attribute__((weak));

/* ---- step 4: weight-only MXFP4 for small batches (step4_mxfp4_gemv.cu) ---------------------
 *
 * y = x W^T, the weights in MXFP4 and dequantised inside the kernel (Hopper's tensor cores have
 * no FP4 input), the activations bf16:
 *   x      m x k bf16, row-major (element (r, i) at d_x[r * k + i], as its 16 bits)
 *   W      n x k MXFP4: row c of W is k e2m1 codes, two a byte, element i in the low nibble of
 *          d_w[c * k / 2 + i / 2] when i is even, the high one when odd; d_ws[c * k / 32 + j]
 *          the e8m0 scale of elements 32 j .. 32 j + 31 of row c (0xff: NaN). This is step 2's
 *          quantize_mxfp4 of the n x k row-major weights, as it lays them out.
 *   y      m x n fp32, row-major: y[r][c] = sum over j of X(c, j) * (sum over i in block j of
 *          x(r, i) * value(w(c, i))), X(c, j) = 2^(d_ws[c * k / 32 + j] - 127), in fp32 in any
 *          order; NaN where a scale of row c is NaN.
 * k a positive multiple of 32; m >= 1 (the kernel is for m = 1 to 16: a decode step's batch);
 * n >= 1; d_x and d_w 16-byte aligned. Graded on both backends within the fp32 dot-product
 * bound of a sum of k terms (graders/tolerance.h's tol_dot_fp32(k) of sum |x| |value(w)| X);
 * on a GPU, its speed at m = 1, k = n = 8192 against cuBLAS's BF16 GEMM of the same shape (the
 * same weights in bf16: 4 times the bytes). */
#define MXFP4_GEMV_MAX_M 16
void gemm_mxfp4_bf16(const uint16_t *d_x, const uint8_t *d_w, const uint8_t *d_ws, float *d_y,
                     int m, int k, int n);

/* ---- the ceiling: chapter 07's copy (chapters/07-memory-bound/copy.cu, given) --------------
 * d_out[0 .. bytes) = d_in[0 .. bytes), 16 bytes a thread at a time. */
void copy_bytes(const void *d_in, void *d_out, size_t bytes);

/* ---- the steps, in order (steps.cu) --------------------------------------------------------
 * One row a step: its name in the bench and its line in the ladder. */
struct quant_step {
    const char *name;   /* "fp8", "mx", "fp8_gemm", "mxfp4_gemv" */
    const char *title;  /* "FP8: amax, scale, round, and back" */
};
extern const struct quant_step QUANT_STEPS[];
extern const int QUANT_NUM_STEPS;

#ifdef __cplusplus
}
#endif

#endif
