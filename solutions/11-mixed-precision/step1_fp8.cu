/* step1_fp8.cu: chapter 11, step 1 of 2, FP8 quantisation and back. The reference.
 *
 * Three kernels do all of it, each a memory-bound pass that moves 16 bytes of fp32 a thread:
 *   - per block of 128: a warp a block, each lane a float4 (4 x 32 = 128): the block's amax is a
 *     5-step __shfl_xor_sync max, the scale follows, each lane rounds its four values and
 *     stores them as one 4-byte word, lane 0 the scale_inv. One pass: 4 bytes in, 1 out.
 *   - per tensor: the amax needs every element before any can be rounded, so two passes: a
 *     grid-stride amax (warp shuffles, then one atomicMax a block on the float's bits, which
 *     order as unsigned integers for values >= 0) into the scratch, then the rounding pass.
 *   - the rounding is cuda_fp8.h's __nv_cvt_float_to_fp8(v, __NV_SATFINITE, fmt): on sm_89 and
 *     later one cvt.rn.satfinite.e4m3x2.f32 instruction for two values, elsewhere (and on the
 *     CPU backend) the header's software path. Both are round-to-nearest-even with OFP8's
 *     saturation (+-inf and overflow to +-MAX, NaN to 0x7f), subnormals kept: what the
 *     contract asks, and what the grader's own reference of the rules checks bit by bit.
 *   - back to fp32: four codes a group (a 4-byte load, a 16-byte store), four groups a thread
 *     in flight at once in a grid-stride loop on a resident grid: the pass writes four bytes
 *     for each it reads, and each warp's accesses stay contiguous (dequantize_fp8_kernel).
 * Expect: each pass within a few per cent of chapter 07's copy kernel in GB/s (a per-block
 * quantise moves 4 + 1 + 4/128 bytes an element, a per-tensor one 4 more for the amax pass). */
#include <float.h>
#include <stdint.h>

#include <cuda_fp8.h>

#include "cuda_check.h"
#include "sm_count.h" /* sm_count, resident_blocks: grids sized to the device */
#include "quant.h"

#define BLOCK 256                 /* threads a CUDA block */
#define WARPS (BLOCK / 32)
#define FULL 0xffffffffu

static __device__ __forceinline__ float fmt_max(int format)
{
    return format == FP8_E4M3 ? FP8_E4M3_MAX : FP8_E5M2_MAX;
}

/* the contract's scale from an amax: 1 for an all-zero block, MAX / amax otherwise, FLT_MAX
 * where that quotient overflows */
static __device__ __forceinline__ float scale_of(float amax, int format)
{
    if (amax == 0.0f)
        return 1.0f;
    float s = fmt_max(format) / amax;
    return s == INFINITY ? FLT_MAX : s;
}

/* |v| for the amax: non-finite values are left out (0 never raises a max) */
static __device__ __forceinline__ float amax_term(float v)
{
    return isfinite(v) ? fabsf(v) : 0.0f;
}

static __device__ __forceinline__ uint32_t fp8_of(float v, int format)
{
    return (uint32_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE,
                                           format == FP8_E4M3 ? __NV_E4M3 : __NV_E5M2);
}

/* four values, scaled and rounded, packed little-endian into one word: element i's byte at
 * bits 8i, so the word's store writes them in order */
static __device__ __forceinline__ uint32_t pack4(float4 v, float s, int format)
{
    return fp8_of(v.x * s, format) | fp8_of(v.y * s, format) << 8 |
           fp8_of(v.z * s, format) << 16 | fp8_of(v.w * s, format) << 24;
}

static __device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_xor_sync(FULL, v, offset));
    return v;
}

/* lane's four elements from i = 4 * (its index); past n they read as 0 (which neither raises
 * an amax nor is stored) */
static __device__ __forceinline__ float4 load4(const float *__restrict__ x, long long i, int n)
{
    if (i + 3 < n) /* i is a multiple of 4 and x 16-byte aligned: one 16-byte load */
        return *reinterpret_cast<const float4 *>(x + i);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (i < n) v.x = x[i];
    if (i + 1 < n) v.y = x[i + 1];
    if (i + 2 < n) v.z = x[i + 2];
    return v;
}

static __device__ __forceinline__ void store4(uint8_t *__restrict__ q, long long i, int n,
                                              uint32_t word)
{
    if (i + 3 < n) {
        *reinterpret_cast<uint32_t *>(q + i) = word;
        return;
    }
    for (int k = 0; k < 4 && i + k < n; k++)
        q[i + k] = (uint8_t)(word >> (8 * k));
}

/* ---- per block of 128: a warp a block ---------------------------------------------------- */

static __global__ void quantize_fp8_block_kernel(const float *__restrict__ x, int n, int format,
                                                 uint8_t *__restrict__ q,
                                                 float *__restrict__ scale_inv, int nblocks)
{
    int lane = threadIdx.x % 32;
    long long b = (long long)blockIdx.x * WARPS + threadIdx.x / 32;
    if (b >= nblocks)
        return; /* the whole warp: the shuffles below see all 32 lanes */
    long long i = b * FP8_BLOCK + 4 * lane;
    float4 v = load4(x, i, n);
    float a = fmaxf(fmaxf(amax_term(v.x), amax_term(v.y)), fmaxf(amax_term(v.z), amax_term(v.w)));
    a = warp_max(a);
    float s = scale_of(a, format);
    if (i < n)
        store4(q, i, n, pack4(v, s, format));
    if (lane == 0)
        scale_inv[b] = 1.0f / s;
}

/* ---- per tensor: the amax, then the rounding ---------------------------------------------- */

/* a float4's largest finite magnitude */
static __device__ __forceinline__ float amax_of4(float4 v)
{
    return fmaxf(fmaxf(amax_term(v.x), amax_term(v.y)), fmaxf(amax_term(v.z), amax_term(v.w)));
}

/* The tensor's amax: a grid-stride loop of float4s on a resident grid, four a thread in flight
 * at once (a stride apart, so each warp's loads stay contiguous), then the block's max by
 * shuffles and shared memory and one atomicMax a block on the float's bits. */
static __global__ void amax_kernel(const float *__restrict__ x, int n,
                                   unsigned int *__restrict__ amax_bits)
{
    __shared__ float s_max[WARPS];
    const long long stride = (long long)gridDim.x * BLOCK;
    const long long first = (long long)blockIdx.x * BLOCK + threadIdx.x, groups = n / 4;
    const float4 *__restrict__ x4 = reinterpret_cast<const float4 *>(x);
    float a = 0.0f;
    long long g = first;
    for (; g + 3 * stride < groups; g += 4 * stride) {
        float4 v[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            v[k] = x4[g + k * stride];
#pragma unroll
        for (int k = 0; k < 4; k++)
            a = fmaxf(a, amax_of4(v[k]));
    }
    for (; g < groups; g += stride)
        a = fmaxf(a, amax_of4(x4[g]));
    if (first < n % 4)
        a = fmaxf(a, amax_term(x[4 * groups + first]));
    a = warp_max(a);
    if (threadIdx.x % 32 == 0)
        s_max[threadIdx.x / 32] = a;
    __syncthreads();
    if (threadIdx.x < 32) {
        a = threadIdx.x < WARPS ? s_max[threadIdx.x] : 0.0f;
        a = warp_max(a);
        /* a >= 0, so its bits order as the values do */
        if (threadIdx.x == 0)
            atomicMax(amax_bits, __float_as_uint(a));
    }
}

/* The rounding pass under the tensor's scale, as amax_kernel loops: four float4s a thread in
 * flight, each stored as one 4-byte word of codes. */
static __global__ void quantize_fp8_tensor_kernel(const float *__restrict__ x, int n, int format,
                                                  const unsigned int *__restrict__ amax_bits,
                                                  uint8_t *__restrict__ q,
                                                  float *__restrict__ scale_inv)
{
    const float s = scale_of(__uint_as_float(*amax_bits), format);
    const long long stride = (long long)gridDim.x * BLOCK;
    const long long first = (long long)blockIdx.x * BLOCK + threadIdx.x, groups = cdiv(n, 4);
    long long g = first;
    for (; g + 3 * stride < groups; g += 4 * stride) {
        float4 v[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            v[k] = load4(x, 4 * (g + k * stride), n);
#pragma unroll
        for (int k = 0; k < 4; k++)
            store4(q, 4 * (g + k * stride), n, pack4(v[k], s, format));
    }
    for (; g < groups; g += stride)
        store4(q, 4 * g, n, pack4(load4(x, 4 * g, n), s, format));
    if (blockIdx.x == 0 && threadIdx.x == 0)
        scale_inv[0] = 1.0f / s;
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
    amax_kernel<<<resident_blocks(amax_kernel, BLOCK, cdiv(n, 16)), BLOCK>>>(d_x, n, amax_bits);
    CUDA_CHECK(cudaGetLastError());
    const int grid = resident_blocks(quantize_fp8_tensor_kernel, BLOCK, cdiv(n, 16));
    quantize_fp8_tensor_kernel<<<grid, BLOCK>>>(d_x, n, format, amax_bits, d_q, d_scale_inv);
    CUDA_CHECK(cudaGetLastError());
}

/* ---- delayed scaling: the scale given ----------------------------------------------------- */

static __global__ void quantize_fp8_scaled_kernel(const float *__restrict__ x, int n, int format,
                                                  const float *__restrict__ scale,
                                                  uint8_t *__restrict__ q)
{
    float s = *scale;
    long long i = 4 * ((long long)blockIdx.x * BLOCK + threadIdx.x);
    if (i < n)
        store4(q, i, n, pack4(load4(x, i, n), s, format));
}

void quantize_fp8_scaled(const float *d_x, int n, int format, const float *d_scale,
                         uint8_t *d_q)
{
    quantize_fp8_scaled_kernel<<<cdiv(cdiv(n, 4), BLOCK), BLOCK>>>(d_x, n, format, d_scale, d_q);
    CUDA_CHECK(cudaGetLastError());
}

/* ---- back to fp32 ------------------------------------------------------------------------- */

/* 2^k for the k an fp8 value needs (-16 to 13: normal fp32 numbers), built from its bits */
static __device__ __forceinline__ float pow2(int k)
{
    return __uint_as_float((uint32_t)(k + 127) << 23);
}

/* an fp8 code's value, exactly (every e4m3 and e5m2 value is an fp32 value) */
static __device__ __forceinline__ float fp8_value(uint32_t code, int format)
{
    uint32_t sign = (code & 0x80u) << 24;
    uint32_t mag = code & 0x7fu;
    int mbits = format == FP8_E4M3 ? 3 : 2, bias = format == FP8_E4M3 ? 7 : 15;
    uint32_t e = mag >> mbits, m = mag & ((1u << mbits) - 1);
    if (format == FP8_E4M3 ? mag == 0x7fu : e == 31u) /* NaN, or e5m2's infinity */
        return __uint_as_float(sign | (m != 0 || format == FP8_E4M3 ? 0x7fc00000u : 0x7f800000u));
    /* subnormal (e == 0): m x 2^(1 - bias - mbits); normal: (2^mbits + m) x 2^(e - bias - mbits);
     * both products exact */
    float v = e == 0 ? (float)m * pow2(1 - bias - mbits)
                     : (float)((1u << mbits) | m) * pow2((int)e - bias - mbits);
    return __uint_as_float(sign | __float_as_uint(v));
}

/* Four codes a group: one 4-byte load, one 16-byte store, the four in one block of 128 and so
 * under one scale. A grid-stride loop on a resident grid takes four groups a thread at a time,
 * a stride apart, their four loads issued before any is used (chapter 07's copy kernel does
 * the same): a warp's load is 128 contiguous bytes and its store 512. One group a thread and
 * one launch-wide wave of short-lived blocks left each thread waiting a whole memory latency
 * for 4 bytes. Giving a lane 16 consecutive codes instead (one 16-byte load, four float4
 * stores) is worse: a warp's store then covers 2 KB with a lane's 16 bytes every 64, half of
 * every 32-byte sector it touches. Where q is not 4-byte aligned or y not 16-byte aligned
 * (vec = 0), and for the last n % 4 codes, one code at a time. */
static __device__ __forceinline__ void dequantize_group(uint32_t w, long long g, int format,
                                                        int block,
                                                        const float *__restrict__ scale_inv,
                                                        float *__restrict__ y)
{
    const long long i = 4 * g;
    const float d = scale_inv[block == FP8_BLOCK ? i / FP8_BLOCK : 0];
    *reinterpret_cast<float4 *>(y + i) =
        make_float4(fp8_value(w & 0xffu, format) * d, fp8_value(w >> 8 & 0xffu, format) * d,
                    fp8_value(w >> 16 & 0xffu, format) * d, fp8_value(w >> 24, format) * d);
}

static __global__ void dequantize_fp8_kernel(const uint8_t *__restrict__ q,
                                             const float *__restrict__ scale_inv, int n,
                                             int format, int block, int vec,
                                             float *__restrict__ y)
{
    const long long stride = (long long)gridDim.x * BLOCK;
    const long long first = (long long)blockIdx.x * BLOCK + threadIdx.x;
    const long long groups = vec ? n / 4 : 0;
    const uint32_t *__restrict__ words = reinterpret_cast<const uint32_t *>(q);
    long long g = first;
    for (; g + 3 * stride < groups; g += 4 * stride) {
        uint32_t w[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            w[k] = words[g + k * stride];
#pragma unroll
        for (int k = 0; k < 4; k++)
            dequantize_group(w[k], g + k * stride, format, block, scale_inv, y);
    }
    for (; g < groups; g += stride)
        dequantize_group(words[g], g, format, block, scale_inv, y);
    for (long long i = 4 * groups + first; i < n; i += stride)
        y[i] = fp8_value(q[i], format) * scale_inv[block == FP8_BLOCK ? i / FP8_BLOCK : 0];
}

void dequantize_fp8(const uint8_t *d_q, const float *d_scale_inv, int n, int format, int block,
                    float *d_y)
{
    const int vec = (uintptr_t)d_q % 4 == 0 && (uintptr_t)d_y % 16 == 0;
    const int grid = resident_blocks(dequantize_fp8_kernel, BLOCK, cdiv(n, 16));
    dequantize_fp8_kernel<<<grid, BLOCK>>>(d_q, d_scale_inv, n, format, block, vec, d_y);
    CUDA_CHECK(cudaGetLastError());
}
