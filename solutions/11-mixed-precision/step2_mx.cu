/* step2_mx.cu: chapter 11, step 2 of 2, microscaled formats: MXFP8, MXFP4, NVFP4. The
 * reference.
 * Change from step 1: the scale is no longer one fp32 a block of 128 but one byte a block of 32
 * (MX: a power of two, e8m0) or of 16 (NVFP4: an e4m3, under one fp32 scale for the tensor),
 * and FP4 elements go two to a byte. A power-of-two scale makes x * 2^-e exact, so the only
 * rounding is the element's; NVFP4's e4m3 scale is finer (3 mantissa bits), rounded itself,
 * and its elements divide by the scale as rounded.
 *
 * Each thread holds 16 consecutive elements (four 16-byte loads, all in flight at once): a
 * block of 32 is 2 lanes, whose amax meets in one __shfl_xor_sync step, with a flag for a NaN
 * or an infinity beside it; a block of 16 is one thread's own. MXFP8 stores a thread's 16
 * elements as one 16-byte word, the FP4 formats as one 8-byte word; the group's first lane
 * stores the scale byte.
 * NVFP4's tensor scale needs the tensor's amax first: a pass of its own, as step 1's per-tensor
 * FP8. Back to fp32 as step 1: four codes a group, four groups a thread in flight in a
 * grid-stride loop on a resident grid. Expect: close to the copy kernel in GB/s; 4 bytes in,
 * 1 + 1/32 (MXFP8), 0.5 + 1/32 (MXFP4) or 0.5 + 1/16 (NVFP4, plus the amax pass's 4) out. */
#include <stdint.h>

#include <cuda_fp8.h>

#include "cuda_check.h"
#include "sm_count.h" /* sm_count, resident_blocks: grids sized to the device */
#include "quant.h"

#define BLOCK 256
#define WARPS (BLOCK / 32)
#define FULL 0xffffffffu
#define E4M3_EMAX 8 /* 448 = 1.75 x 2^8 */
#define E2M1_EMAX 2 /* 6 = 1.5 x 2^2 */

/* ---- shared pieces ------------------------------------------------------------------------ */

static __device__ __forceinline__ float4 load4(const float *__restrict__ x, long long i, int n)
{
    if (i + 3 < n)
        return *reinterpret_cast<const float4 *>(x + i);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (i < n) v.x = x[i];
    if (i + 1 < n) v.y = x[i + 1];
    if (i + 2 < n) v.z = x[i + 2];
    return v;
}

static __device__ __forceinline__ int nonfinite4(float4 v)
{
    return !isfinite(v.x) || !isfinite(v.y) || !isfinite(v.z) || !isfinite(v.w);
}

static __device__ __forceinline__ float absmax4(float4 v)
{
    return fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
}

/* a thread's 16 elements from i (four 16-byte loads, all issued before any is used), their
 * largest magnitude and whether any is a NaN or an infinity */
static __device__ __forceinline__ void load16(const float *__restrict__ x, long long i, int n,
                                              float4 (&v)[4], float &a, int &bad)
{
#pragma unroll
    for (int k = 0; k < 4; k++)
        v[k] = load4(x, i + 4 * k, n);
    a = 0.0f;
    bad = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        a = fmaxf(a, absmax4(v[k]));
        bad |= nonfinite4(v[k]);
    }
}

/* the max and the OR over an aligned group of `lanes` lanes (8: a block of 32; 4: of 16) */
static __device__ __forceinline__ void group_reduce(float &a, int &bad, int lanes)
{
    for (int offset = lanes / 2; offset > 0; offset >>= 1) {
        a = fmaxf(a, __shfl_xor_sync(FULL, a, offset));
        bad |= __shfl_xor_sync(FULL, bad, offset);
    }
}

static __device__ __forceinline__ uint32_t e4m3_of(float v)
{
    return (uint32_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}

/* e2m1, round-to-nearest-even and saturating, by thresholds: the values are 0, 0.5, 1, 1.5,
 * 2, 3, 4, 6 (codes 0-7) and each midpoint goes to the even code (0.25 to 0, 0.75 to 1, 1.25
 * to 1, 1.75 to 2, 2.5 to 2, 3.5 to 4, 5 to 4); past 5, 6. The sign is bit 3, -0 included. */
static __device__ __forceinline__ uint32_t e2m1_of(float v)
{
    float a = fabsf(v);
    uint32_t c = a <= 0.25f ? 0u : a < 0.75f ? 1u : a <= 1.25f ? 2u : a < 1.75f ? 3u
               : a <= 2.5f ? 4u : a < 3.5f ? 5u : a <= 5.0f ? 6u : 7u;
    return c | (__float_as_uint(v) >> 31) << 3;
}

static __device__ __forceinline__ float pow2(int k) /* k from -126 to 127 */
{
    return __uint_as_float((uint32_t)(k + 127) << 23);
}

static __device__ __forceinline__ float e4m3_value(uint32_t code)
{
    uint32_t sign = (code & 0x80u) << 24, mag = code & 0x7fu, e = mag >> 3, m = mag & 7u;
    if (mag == 0x7fu)
        return __uint_as_float(sign | 0x7fc00000u);
    float v = e == 0 ? (float)m * pow2(-9) : (float)(8u | m) * pow2((int)e - 10);
    return __uint_as_float(sign | __float_as_uint(v));
}

static __device__ __forceinline__ float e2m1_value(uint32_t code)
{
    const float mag[8] = { 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f };
    return __uint_as_float((code & 8u) << 28 | __float_as_uint(mag[code & 7u]));
}

/* X = 2^(code - 127): 2^-127 (code 0) is an fp32 subnormal; 0xff is NaN */
static __device__ __forceinline__ float e8m0_value(uint32_t code)
{
    if (code == 0xffu)
        return __uint_as_float(0x7fc00000u);
    return code == 0 ? __uint_as_float(0x00400000u) : __uint_as_float(code << 23);
}

/* MX's shared exponent: floor(log2(amax)) - emax, at least -127 (an amax of 0, or an fp32
 * subnormal, has exponent field 0: its floor(log2) is -127 or less, and clamps there) */
static __device__ __forceinline__ int mx_exponent(float amax, int emax)
{
    int field = (int)(__float_as_uint(amax) >> 23 & 0xffu);
    int e = field == 0 ? -127 : field - 127 - emax;
    return e < -127 ? -127 : e;
}

/* A thread's 16 codes from element i: four words of four codes (FP8: a byte each; FP4: 16
 * bits, two codes a byte, element 2j in byte j's low half). One 16-byte (FP8) or 8-byte (FP4)
 * store where q is aligned for it and all 16 elements exist (vec), else the bytes that exist. */
template <bool FP4>
static __device__ __forceinline__ void store_codes(uint8_t *__restrict__ q, long long i, int n,
                                                   int vec, const uint32_t (&word)[4])
{
    if (vec && i + 15 < n) {
        if (FP4)
            *reinterpret_cast<uint2 *>(q + i / 2) =
                make_uint2(word[0] | word[1] << 16, word[2] | word[3] << 16);
        else
            *reinterpret_cast<uint4 *>(q + i) = make_uint4(word[0], word[1], word[2], word[3]);
        return;
    }
    if (FP4) { /* the high half of a last odd byte holds the padding's 0 (load4) */
        for (int j = 0; j < 8 && i + 2 * j < n; j++)
            q[i / 2 + j] = (uint8_t)(word[j / 2] >> (8 * (j % 2))); /* past n: code 0 */
    } else {
        for (int j = 0; j < 16 && i + j < n; j++)
            q[i + j] = (uint8_t)(word[j / 4] >> (8 * (j % 4)));
    }
}

/* a vector access needs q aligned to its bytes and y (where there is one) to 16 */
static int vec_ok(const void *q, int align, const float *y)
{
    return (uintptr_t)q % align == 0 && (uintptr_t)y % 16 == 0; /* NULL: no y */
}

/* ---- MXFP8 and MXFP4 ---------------------------------------------------------------------- */

/* A thread's 16 elements (four 16-byte loads, all in flight before any is used) scaled by
 * 2^-e and rounded, stored as one 16-byte word (FP8) or one 8-byte word (FP4) where q is
 * aligned for it and all 16 exist, else element by element. */
template <bool FP4>
static __device__ __forceinline__ void store16(uint8_t *__restrict__ q, long long i, int n, int vec,
                                               const float4 (&v)[4], float inv)
{
    uint32_t word[4];
#pragma unroll
    for (int k = 0; k < 4; k++)
        word[k] = FP4 ? e2m1_of(v[k].x * inv) | e2m1_of(v[k].y * inv) << 4 |
                            e2m1_of(v[k].z * inv) << 8 | e2m1_of(v[k].w * inv) << 12
                      : e4m3_of(v[k].x * inv) | e4m3_of(v[k].y * inv) << 8 |
                            e4m3_of(v[k].z * inv) << 16 | e4m3_of(v[k].w * inv) << 24;
    store_codes<FP4>(q, i, n, vec, word);
}

/* Each thread takes 16 consecutive elements; a block of 32 is 2 lanes, whose amax and
 * non-finite flag meet in one __shfl_xor_sync step. */
template <bool FP4>
static __global__ void quantize_mx_kernel(const float *__restrict__ x, int n, int vec,
                                          uint8_t *__restrict__ q, uint8_t *__restrict__ scale)
{
    long long t = (long long)blockIdx.x * BLOCK + threadIdx.x, i = 16 * t;
    if (16 * (t - threadIdx.x % 32) >= n)
        return; /* the whole warp is past the end; otherwise every lane shuffles */
    float4 v[4];
    float a;
    int bad;
    load16(x, i, n, v, a, bad);
    group_reduce(a, bad, MX_BLOCK / 16);
    int e = mx_exponent(a, FP4 ? E2M1_EMAX : E4M3_EMAX);
    if (i < n && t % (MX_BLOCK / 16) == 0)
        scale[i / MX_BLOCK] = bad ? 0xffu : (uint8_t)(e + 127);
    if (i >= n)
        return;
    /* -e from -125 to 127: exact, and x * inv exact unless it underflows */
    store16<FP4>(q, i, n, vec, v, pow2(-e));
}

void quantize_mxfp8(const float *d_x, int n, uint8_t *d_q, uint8_t *d_scale, void *d_scratch)
{
    (void)d_scratch;
    quantize_mx_kernel<false><<<cdiv(cdiv(n, 16), BLOCK), BLOCK>>>(d_x, n, vec_ok(d_q, 16, NULL),
                                                                   d_q, d_scale);
    CUDA_CHECK(cudaGetLastError());
}

void quantize_mxfp4(const float *d_x, int n, uint8_t *d_q, uint8_t *d_scale, void *d_scratch)
{
    (void)d_scratch;
    quantize_mx_kernel<true><<<cdiv(cdiv(n, 16), BLOCK), BLOCK>>>(d_x, n, vec_ok(d_q, 8, NULL),
                                                                  d_q, d_scale);
    CUDA_CHECK(cudaGetLastError());
}

/* Back to fp32 as step 1 does it: four codes a group (4 bytes, or FP4's 2), one 16-byte store
 * a group, four groups a thread in flight at once in a grid-stride loop on a resident grid,
 * each warp's accesses contiguous. A group lies in one block (4 divides 16 and 32), under
 * one scale X. */
template <bool FP4>
static __device__ __forceinline__ uint32_t group_codes(const uint8_t *__restrict__ q, long long g)
{
    return FP4 ? (uint32_t)reinterpret_cast<const uint16_t *>(q)[g]
               : reinterpret_cast<const uint32_t *>(q)[g];
}

template <bool FP4>
static __device__ __forceinline__ void decode_group(uint32_t w, long long g, float X,
                                                    float *__restrict__ y)
{
    float r[4];
#pragma unroll
    for (int j = 0; j < 4; j++)
        r[j] = (FP4 ? e2m1_value(w >> (4 * j) & 0xfu) : e4m3_value(w >> (8 * j) & 0xffu)) * X;
    *reinterpret_cast<float4 *>(y + 4 * g) = make_float4(r[0], r[1], r[2], r[3]);
}

/* element i's code: a byte, or FP4's nibble (element 2j in byte j's low half) */
template <bool FP4>
static __device__ __forceinline__ uint32_t code_at(const uint8_t *__restrict__ q, long long i)
{
    return FP4 ? (uint32_t)q[i / 2] >> (4 * (i & 1)) & 0xfu : (uint32_t)q[i];
}

/* The loop of both dequantisers: SCALE(i) is the scale of element i. Where q or y is not
 * aligned for a group's load and store (vec = 0), and for the last n % 4 codes, one code at
 * a time. */
template <bool FP4, typename Scale>
static __device__ __forceinline__ void dequantize_loop(const uint8_t *__restrict__ q, int n,
                                                       int vec, Scale scale_of,
                                                       float *__restrict__ y)
{
    const long long stride = (long long)gridDim.x * BLOCK;
    const long long first = (long long)blockIdx.x * BLOCK + threadIdx.x;
    const long long groups = vec ? n / 4 : 0;
    long long g = first;
    for (; g + 3 * stride < groups; g += 4 * stride) {
        uint32_t w[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            w[k] = group_codes<FP4>(q, g + k * stride);
#pragma unroll
        for (int k = 0; k < 4; k++)
            decode_group<FP4>(w[k], g + k * stride, scale_of(4 * (g + k * stride)), y);
    }
    for (; g < groups; g += stride)
        decode_group<FP4>(group_codes<FP4>(q, g), g, scale_of(4 * g), y);
    for (long long i = 4 * groups + first; i < n; i += stride) {
        const uint32_t code = code_at<FP4>(q, i);
        y[i] = (FP4 ? e2m1_value(code) : e4m3_value(code)) * scale_of(i);
    }
}

template <bool FP4>
static __global__ void dequantize_mx_kernel(const uint8_t *__restrict__ q,
                                            const uint8_t *__restrict__ scale, int n, int vec,
                                            float *__restrict__ y)
{
    dequantize_loop<FP4>(
        q, n, vec, [scale](long long i) { return e8m0_value(scale[i / MX_BLOCK]); }, y);
}


void dequantize_mxfp8(const uint8_t *d_q, const uint8_t *d_scale, int n, float *d_y)
{
    const int grid = resident_blocks(dequantize_mx_kernel<false>, BLOCK, cdiv(n, 16));
    dequantize_mx_kernel<false><<<grid, BLOCK>>>(d_q, d_scale, n, vec_ok(d_q, 4, d_y), d_y);
    CUDA_CHECK(cudaGetLastError());
}

void dequantize_mxfp4(const uint8_t *d_q, const uint8_t *d_scale, int n, float *d_y)
{
    const int grid = resident_blocks(dequantize_mx_kernel<true>, BLOCK, cdiv(n, 16));
    dequantize_mx_kernel<true><<<grid, BLOCK>>>(d_q, d_scale, n, vec_ok(d_q, 2, d_y), d_y);
    CUDA_CHECK(cudaGetLastError());
}

/* ---- NVFP4 -------------------------------------------------------------------------------- */

/* the tensor's amax over its finite values, as bits (>= 0: they order as unsigned integers) */
static __device__ __forceinline__ float finite_amax4(float4 v)
{
    return fmaxf(fmaxf(isfinite(v.x) ? fabsf(v.x) : 0.0f, isfinite(v.y) ? fabsf(v.y) : 0.0f),
                 fmaxf(isfinite(v.z) ? fabsf(v.z) : 0.0f, isfinite(v.w) ? fabsf(v.w) : 0.0f));
}

/* as step 1's per-tensor amax: a grid-stride loop on a resident grid, four float4s a thread in
 * flight, one atomicMax a block */
static __global__ void nvfp4_amax_kernel(const float *__restrict__ x, int n,
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
            a = fmaxf(a, finite_amax4(v[k]));
    }
    for (; g < groups; g += stride)
        a = fmaxf(a, finite_amax4(x4[g]));
    if (first < n % 4) {
        const float t = x[4 * groups + first];
        a = fmaxf(a, isfinite(t) ? fabsf(t) : 0.0f);
    }
    for (int offset = 16; offset > 0; offset >>= 1)
        a = fmaxf(a, __shfl_xor_sync(FULL, a, offset));
    if (threadIdx.x % 32 == 0)
        s_max[threadIdx.x / 32] = a;
    __syncthreads();
    if (threadIdx.x < 32) {
        a = threadIdx.x < WARPS ? s_max[threadIdx.x] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1)
            a = fmaxf(a, __shfl_xor_sync(FULL, a, offset));
        if (threadIdx.x == 0)
            atomicMax(amax_bits, __float_as_uint(a));
    }
}

/* A thread a block of 16 (four 16-byte loads in flight): its amax needs no shuffle. */
static __global__ void quantize_nvfp4_kernel(const float *__restrict__ x, int n, int vec,
                                             const unsigned int *__restrict__ amax_bits,
                                             uint8_t *__restrict__ q, uint8_t *__restrict__ scale,
                                             float *__restrict__ tensor_scale)
{
    float g = __uint_as_float(*amax_bits) / NVFP4_TENSOR_DIVISOR;
    if (!(g > 0.0f))
        g = 1.0f;
    long long t = (long long)blockIdx.x * BLOCK + threadIdx.x, i = 16 * t;
    if (t == 0)
        *tensor_scale = g;
    if (i >= n)
        return;
    float4 v[4];
    float a;
    int bad;
    load16(x, i, n, v, a, bad);
    uint32_t sb = bad ? 0x7fu : e4m3_of(a / 6.0f / g);
    scale[i / NVFP4_BLOCK] = (uint8_t)sb;
    float total = e4m3_value(sb) * g;
    /* total == 0: the block's values are far below the tensor's; they become +-0 */
    uint32_t word[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const float r[4] = { v[k].x, v[k].y, v[k].z, v[k].w };
        word[k] = 0;
#pragma unroll
        for (int j = 0; j < 4; j++)
            word[k] |= (total > 0.0f ? e2m1_of(r[j] / total) : (__float_as_uint(r[j]) >> 31) << 3)
                       << (4 * j);
    }
    store_codes<true>(q, i, n, vec, word);
}

void quantize_nvfp4(const float *d_x, int n, uint8_t *d_q, uint8_t *d_scale,
                    float *d_tensor_scale, void *d_scratch)
{
    unsigned int *amax_bits = static_cast<unsigned int *>(d_scratch);
    CUDA_CHECK(cudaMemsetAsync(amax_bits, 0, sizeof *amax_bits)); /* garbage on entry */
    nvfp4_amax_kernel<<<resident_blocks(nvfp4_amax_kernel, BLOCK, cdiv(n, 16)), BLOCK>>>(d_x, n,
                                                                                amax_bits);
    CUDA_CHECK(cudaGetLastError());
    quantize_nvfp4_kernel<<<cdiv(cdiv(n, 16), BLOCK), BLOCK>>>(d_x, n, vec_ok(d_q, 8, NULL),
                                                               amax_bits, d_q, d_scale,
                                                               d_tensor_scale);
    CUDA_CHECK(cudaGetLastError());
}

/* as the MX kernel: 16 codes a step, here exactly one NVFP4 block, under one scale (its e4m3
 * times the tensor's fp32; NaN for the codes 0x7f and 0xff) */
static __global__ void dequantize_nvfp4_kernel(const uint8_t *__restrict__ q,
                                               const uint8_t *__restrict__ scale,
                                               const float *__restrict__ tensor_scale, int n,
                                               int vec, float *__restrict__ y)
{
    const float g = *tensor_scale;
    dequantize_loop<true>(
        q, n, vec, [scale, g](long long i) { return e4m3_value(scale[i / NVFP4_BLOCK]) * g; }, y);
}

void dequantize_nvfp4(const uint8_t *d_q, const uint8_t *d_scale, const float *d_tensor_scale,
                      int n, float *d_y)
{
    const int grid = resident_blocks(dequantize_nvfp4_kernel, BLOCK, cdiv(n, 16));
    dequantize_nvfp4_kernel<<<grid, BLOCK>>>(d_q, d_scale, d_tensor_scale, n, vec_ok(d_q, 2, d_y),
                                             d_y);
    CUDA_CHECK(cudaGetLastError());
}
