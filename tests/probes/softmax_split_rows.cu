// softmax_split_rows.cu: a probe for chapter 07's long rows (32768 to 262144 columns) that
// needs no cluster: softmax, RMSNorm (weight) and LayerNorm (weight and bias), fp32 and bf16.
// A row is split into slices of SLICE values, one slice a block and the slice held in the
// block's registers; the blocks are persistent (as many as are resident, a cooperative launch
// to guarantee it) and take slices in order from a ticket counter. A block reduces its slice
// to its statistics (softmax: max and sum; RMSNorm: the sum of squares; LayerNorm: count,
// mean and M2, merged by Chan's update), publishes them in global memory (release: a fence,
// then an atomic add on the row's counter), waits until the row's counter says every slice
// has published (acquire), merges the row's pairs from L2 and writes its slice's outputs
// from registers. One read of the row and one write, on every SM (no GPC leaves SMs idle to
// clusters), with the other blocks of an SM loading, reducing or storing while one waits.
// Deadlock-free because tickets are taken in order and a block publishes before it waits:
// every row but the last one ticketed is wholly ticketed, so its slices all publish, and at
// least SLICES - 1 blocks wait on the last (the grid holds more than that).
// Its measurements on the H200: plots/data/h200/probe-softmax-split.tsv.
//
// Build and run on a GPU of compute capability 7.0 or later:
//   nvcc -O3 -std=c++17 -arch=sm_90 -o softmax_split_rows tests/probes/softmax_split_rows.cu
//   ./softmax_split_rows
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_bf16.h>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)


template <typename T> struct io;
template <> struct io<float> {
    static constexpr int PER = 4;
    __device__ static void unpack(const uint4 &u, float *f)
    {
        f[0] = __uint_as_float(u.x);
        f[1] = __uint_as_float(u.y);
        f[2] = __uint_as_float(u.z);
        f[3] = __uint_as_float(u.w);
    }
    __device__ static uint4 pack(const float *f)
    {
        return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                          __float_as_uint(f[3]));
    }
};
template <> struct io<__nv_bfloat16> {
    static constexpr int PER = 8;
    __device__ static void unpack(const uint4 &u, float *f)
    {
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
        for (int i = 0; i < 4; i++) {
            f[2 * i] = __uint_as_float(w[i] << 16);
            f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
    __device__ static uint4 pack(const float *f)
    {
        uint32_t w[4];
        for (int i = 0; i < 4; i++) {
            __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
            w[i] = *reinterpret_cast<uint32_t *>(&h);
        }
        return make_uint4(w[0], w[1], w[2], w[3]);
    }
};

enum { SOFTMAX, RMSNORM, LAYERNORM };
static const char *const OP_NAME[] = { "softmax", "rmsnorm", "layernorm" };

// A slice's statistics, merged across lanes, warps and the row's slices:
//   softmax    (max, sum of 2^(v - max)), values pre-scaled by log2(e)
//   RMSNorm    (sum of squares, -)
//   LayerNorm  (count, mean, M2): Chan et al.'s pairwise merge of Welford's moments
__device__ __forceinline__ float3 merge(int op, float3 a, float3 b)
{
    if (op == SOFTMAX) {
        float m = fmaxf(a.x, b.x);
        float s = (a.y == 0.f ? 0.f : a.y * exp2f(a.x - m)) +
                  (b.y == 0.f ? 0.f : b.y * exp2f(b.x - m));
        return make_float3(m, s, 0.f);
    }
    if (op == RMSNORM)
        return make_float3(a.x + b.x, 0.f, 0.f);
    const float n = a.x + b.x;
    if (n == 0.f)
        return a;
    const float d = b.y - a.y, f = b.x / n;
    return make_float3(n, a.y + d * f, a.z + b.z + d * d * a.x * f);
}

__device__ __forceinline__ float3 shfl3(float3 p, int o)
{
    return make_float3(__shfl_xor_sync(~0u, p.x, o), __shfl_xor_sync(~0u, p.y, o),
                       __shfl_xor_sync(~0u, p.z, o));
}

__device__ __forceinline__ float3 identity(int op)
{
    return op == SOFTMAX ? make_float3(-INFINITY, 0.f, 0.f) : make_float3(0.f, 0.f, 0.f);
}

// RAW: the slice is held as loaded (VECS 16-byte vectors a thread) and widened to fp32 on
// each pass over it, so that a bf16 thread holds as many bytes as an fp32 one for the same
// registers (softmax takes its exponentials twice: once for the sum, once for the outputs).
// MINB: the blocks an SM the registers must allow (__launch_bounds__'s second argument).
template <typename T, int OP, int THREADS, int VECS, bool RAW, int MINB>
__global__ void __launch_bounds__(THREADS, MINB)
    split_rows(const T *__restrict__ x, const T *__restrict__ w, const T *__restrict__ b,
               T *__restrict__ y, int rows, int cols, int slices, float4 *__restrict__ pairs,
               unsigned *__restrict__ counters)
{
    constexpr int PER = io<T>::PER, SLICE = THREADS * VECS * PER;
    constexpr int HELD = RAW ? 1 : VECS * PER; // floats held widened (1: none)
    __shared__ unsigned s_ticket;
    __shared__ float3 warp_part[THREADS / 32];
    __shared__ float3 s_row;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const float L2E = 1.4426950408889634f;
    const unsigned total = (unsigned)rows * (unsigned)slices;
    for (;;) {
        if (tid == 0)
            s_ticket = atomicAdd(&counters[rows], 1u); // the ticket counter follows the rows'
        __syncthreads();
        const unsigned t = s_ticket;
        if (t >= total)
            break;
        const int row = (int)(t / (unsigned)slices), slice = (int)(t % (unsigned)slices);
        const size_t row0 = (size_t)row * cols;
        const int first = slice * SLICE;
        uint4 q[VECS];
        float v[HELD];
        int mine = 0;
        // a vector past the row holds the op's identity (-inf, or 0), as bits: nothing to test
        // on the passes over it
        const unsigned pad = OP != SOFTMAX ? 0u : sizeof(T) == 4 ? 0xff800000u : 0xff80ff80u;
#pragma unroll
        for (int k = 0; k < VECS; k++) {
            const int col = first + (tid + k * THREADS) * PER;
            q[k] = col < cols ? __ldcs(reinterpret_cast<const uint4 *>(x + row0 + col))
                              : make_uint4(pad, pad, pad, pad);
            mine += col < cols ? PER : 0;
        }
        // vector k's values, widened
        auto vec = [&](int k, float *f) {
            if constexpr (RAW) {
                io<T>::unpack(q[k], f);
            } else {
#pragma unroll
                for (int i = 0; i < PER; i++)
                    f[i] = v[k * PER + i];
            }
        };
        auto in = [&](int k) { return first + (tid + k * THREADS) * PER < cols; };
        if constexpr (!RAW) {
#pragma unroll
            for (int k = 0; k < VECS; k++)
                io<T>::unpack(q[k], &v[k * PER]);
        }
        float3 p;
        float mb = 0.f;
        if (OP == SOFTMAX) {
            float m = -INFINITY;
#pragma unroll
            for (int k = 0; k < VECS; k++) {
                float f[PER];
                vec(k, f);
#pragma unroll
                for (int i = 0; i < PER; i++)
                    m = fmaxf(m, f[i] * L2E);
            }
            mb = m == -INFINITY ? 0.f : m;
            float s = 0.f;
#pragma unroll
            for (int k = 0; k < VECS; k++) {
                float f[PER];
                vec(k, f);
#pragma unroll
                for (int i = 0; i < PER; i++) {
                    const float e = exp2f(fmaf(f[i], L2E, -mb));
                    if constexpr (!RAW)
                        v[k * PER + i] = e; // kept: the outputs reuse it
                    s += e;
                }
            }
            p = make_float3(m, s, 0.f);
        } else if (OP == RMSNORM) {
            float ss = 0.f;
#pragma unroll
            for (int k = 0; k < VECS; k++) {
                float f[PER];
                vec(k, f);
#pragma unroll
                for (int i = 0; i < PER; i++)
                    ss = fmaf(f[i], f[i], ss);
            }
            p = make_float3(ss, 0.f, 0.f);
        } else { // two passes over what the thread holds: its mean, then its M2
            float s = 0.f;
#pragma unroll
            for (int k = 0; k < VECS; k++) {
                float f[PER];
                vec(k, f);
#pragma unroll
                for (int i = 0; i < PER; i++)
                    s += f[i];
            }
            const float mean = mine ? s / mine : 0.f;
            float m2 = 0.f;
#pragma unroll
            for (int k = 0; k < VECS; k++) {
                float f[PER];
                vec(k, f);
#pragma unroll
                for (int i = 0; i < PER; i++) {
                    const float d = in(k) ? f[i] - mean : 0.f;
                    m2 = fmaf(d, d, m2);
                }
            }
            p = make_float3((float)mine, mean, m2);
        }
        for (int o = 16; o; o >>= 1)
            p = merge(OP, p, shfl3(p, o));
        if (lane == 0)
            warp_part[warp] = p;
        __syncthreads();
        if (warp == 0) {
            p = lane < THREADS / 32 ? warp_part[lane] : identity(OP);
            for (int o = 16; o; o >>= 1)
                p = merge(OP, p, shfl3(p, o));
            if (lane == 0) {
                pairs[(size_t)row * slices + slice] = make_float4(p.x, p.y, p.z, 0.f);
                __threadfence(); // the pair is visible before the count says so
                atomicAdd(&counters[row], 1u);
                volatile unsigned *c = &counters[row];
                while (*c < (unsigned)slices)
                    ;
                __threadfence(); // and the others' pairs are read after the count
            }
            __syncwarp();
            float3 r = identity(OP);
            for (int k = lane; k < slices; k += 32) {
                const float4 pq = __ldcg(&pairs[(size_t)row * slices + k]);
                r = merge(OP, r, make_float3(pq.x, pq.y, pq.z));
            }
            for (int o = 16; o; o >>= 1)
                r = merge(OP, r, shfl3(r, o));
            if (lane == 0)
                s_row = r;
        }
        __syncthreads();
        const float3 r = s_row;
        float scale, shift = 0.f;
        if (OP == SOFTMAX) // held exponentials were taken against the thread's own base mb
            scale = RAW ? 1.f / r.y : exp2f(mb - r.x) / r.y;
        else if (OP == RMSNORM)
            scale = rsqrtf(r.x / cols + 1e-5f);
        else
            scale = rsqrtf(r.z / cols + 1e-5f), shift = r.y;
#pragma unroll
        for (int k = 0; k < VECS; k++) {
            const int col = first + (tid + k * THREADS) * PER;
            if (in(k)) {
                float f[PER], o[PER];
                vec(k, f);
                if (OP == SOFTMAX) {
#pragma unroll
                    for (int i = 0; i < PER; i++)
                        o[i] = (RAW ? exp2f(fmaf(f[i], L2E, -r.x)) : f[i]) * scale;
                } else {
                    float wv[PER], bv[PER];
                    io<T>::unpack(__ldg(reinterpret_cast<const uint4 *>(w + col)), wv);
                    if (OP == LAYERNORM)
                        io<T>::unpack(__ldg(reinterpret_cast<const uint4 *>(b + col)), bv);
#pragma unroll
                    for (int i = 0; i < PER; i++)
                        o[i] = OP == LAYERNORM ? fmaf((f[i] - shift) * scale, wv[i], bv[i])
                                               : f[i] * scale * wv[i];
                }
                __stcs(reinterpret_cast<uint4 *>(y + row0 + col), io<T>::pack(o));
            }
        }
    }
}

__global__ void copy_k(const uint4 *__restrict__ a, uint4 *__restrict__ b, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 r0 = a[i], r1 = a[i + stride], r2 = a[i + 2 * stride], r3 = a[i + 3 * stride];
        b[i] = r0;
        b[i + stride] = r1;
        b[i + 2 * stride] = r2;
        b[i + 3 * stride] = r3;
    }
    for (; i < n; i += stride)
        b[i] = a[i];
}

static float bf2f(__nv_bfloat16 h)
{
    uint16_t u;
    memcpy(&u, &h, 2);
    uint32_t w = (uint32_t)u << 16;
    float f;
    memcpy(&f, &w, 4);
    return f;
}

static double to_d(float f) { return f; }
static double to_d(__nv_bfloat16 h) { return bf2f(h); }
static void from_f(float f, float &o) { o = f; }
static void from_f(float f, __nv_bfloat16 &o) { o = __float2bfloat16(f); }

// the double-precision reference of rows 0, rows / 2 and rows - 1: the worst relative error
// against max(|y|, the row's largest |y| * 2^-10) (a normalised output near 0 has no relative
// error worth the name)
template <typename T>
static double worst_error(int op, const std::vector<T> &h, const std::vector<T> &wv,
                          const std::vector<T> &bv, const std::vector<T> &out, int rows, int cols)
{
    double worst = 0;
    std::vector<double> ref(cols);
    for (int rr : { 0, rows / 2, rows - 1 }) {
        const size_t r0 = (size_t)rr * cols;
        if (op == SOFTMAX) {
            double m = -1e300, s = 0;
            for (int c = 0; c < cols; c++)
                m = fmax(m, to_d(h[r0 + c]));
            for (int c = 0; c < cols; c++)
                s += exp(to_d(h[r0 + c]) - m);
            for (int c = 0; c < cols; c++)
                ref[c] = exp(to_d(h[r0 + c]) - m) / s;
        } else if (op == RMSNORM) {
            double ss = 0;
            for (int c = 0; c < cols; c++)
                ss += to_d(h[r0 + c]) * to_d(h[r0 + c]);
            const double rs = 1 / sqrt(ss / cols + 1e-5);
            for (int c = 0; c < cols; c++)
                ref[c] = to_d(h[r0 + c]) * rs * to_d(wv[c]);
        } else {
            double mu = 0, var = 0;
            for (int c = 0; c < cols; c++)
                mu += to_d(h[r0 + c]);
            mu /= cols;
            for (int c = 0; c < cols; c++)
                var += (to_d(h[r0 + c]) - mu) * (to_d(h[r0 + c]) - mu);
            const double rs = 1 / sqrt(var / cols + 1e-5);
            for (int c = 0; c < cols; c++)
                ref[c] = (to_d(h[r0 + c]) - mu) * rs * to_d(wv[c]) + to_d(bv[c]);
        }
        double big = 0;
        for (int c = 0; c < cols; c++)
            big = fmax(big, fabs(ref[c]));
        for (int c = 0; c < cols; c++) {
            const double e = fabs(to_d(out[r0 + c]) - ref[c]) / fmax(fabs(ref[c]), big / 1024);
            if (!(e <= worst))
                worst = e;
        }
    }
    return worst;
}

template <typename T, int OP, int THREADS, int VECS, bool RAW = false, int MINB = 1>
static void run(int rows, int cols, int sms)
{
    constexpr int PER = io<T>::PER, SLICE = THREADS * VECS * PER;
    const size_t n = (size_t)rows * cols, bytes = n * sizeof(T);
    const int slices = (cols + SLICE - 1) / SLICE;
    std::vector<T> h(n), wv(cols), bv(cols);
    srand(1);
    for (size_t i = 0; i < n; i++)
        from_f((rand() / (float)RAND_MAX) * 8.f - 4.f, h[i]);
    for (int c = 0; c < cols; c++) {
        from_f(0.5f + rand() / (float)RAND_MAX, wv[c]);
        from_f(rand() / (float)RAND_MAX - 0.5f, bv[c]);
    }
    T *dx, *dy, *dw, *db;
    float4 *pairs;
    unsigned *counters;
    CK(cudaMalloc(&dx, bytes));
    CK(cudaMalloc(&dy, bytes));
    CK(cudaMalloc(&dw, cols * sizeof(T)));
    CK(cudaMalloc(&db, cols * sizeof(T)));
    CK(cudaMalloc(&pairs, (size_t)rows * slices * sizeof(float4)));
    CK(cudaMalloc(&counters, (rows + 1) * sizeof(unsigned)));
    CK(cudaMemcpy(dx, h.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, wv.data(), cols * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, bv.data(), cols * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemset(dy, 0xff, bytes)); // poison: an output never written is NaN
    auto kern = split_rows<T, OP, THREADS, VECS, RAW, MINB>;
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, THREADS, 0));
    const int grid = per_sm * sms;
    if (grid < slices) {
        printf("%dx%d: %d slices a row, more than the %d resident blocks\n", rows, cols, slices,
               grid);
        return;
    }
    const T *cx = dx, *cw = dw, *cb = db;
    void *args[] = { (void *)&cx, (void *)&cw, (void *)&cb, (void *)&dy, (void *)&rows,
                     (void *)&cols, (void *)&slices, (void *)&pairs, (void *)&counters };
    auto launch = [&]() {
        CK(cudaMemsetAsync(counters, 0, (rows + 1) * sizeof(unsigned)));
        CK(cudaLaunchCooperativeKernel((void *)kern, dim3(grid), dim3(THREADS), args, 0, 0));
    };
    launch();
    CK(cudaDeviceSynchronize());
    std::vector<T> out(n);
    CK(cudaMemcpy(out.data(), dy, bytes, cudaMemcpyDeviceToHost));
    const double worst = worst_error(OP, h, wv, bv, out, rows, cols);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int reps = 30;
    for (int i = 0; i < 3; i++)
        launch();
    CK(cudaEventRecord(e0));
    for (int i = 0; i < reps; i++)
        launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ms /= reps;
    int cbk = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&cbk, copy_k, 256, 0));
    for (int i = 0; i < 3; i++)
        copy_k<<<sms * cbk, 256>>>((const uint4 *)dx, (uint4 *)dy, bytes / 16);
    CK(cudaEventRecord(e0));
    for (int i = 0; i < reps; i++)
        copy_k<<<sms * cbk, 256>>>((const uint4 *)dx, (uint4 *)dy, bytes / 16);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float cms;
    CK(cudaEventElapsedTime(&cms, e0, e1));
    cms /= reps;
    CK(cudaGetLastError());
    printf("%-9s %-4s %5dx%-7d slice %5d (%3d threads x %d vectors%s, min %d blocks) %2d slices a "
           "row, %3d blocks (%d an SM)  %.4f ms %6.0f GB/s  copy %.4f ms %6.0f GB/s  = %5.1f%%  "
           "worst rel err %.1e\n",
           OP_NAME[OP], sizeof(T) == 4 ? "f32" : "bf16", rows, cols, SLICE, THREADS, VECS,
           RAW ? " held as loaded" : "", MINB, slices, grid, per_sm, ms, 2 * bytes / ms / 1e6, cms,
           2 * bytes / cms / 1e6, 100 * cms / ms, worst);
    fflush(stdout);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaFree(dw));
    CK(cudaFree(db));
    CK(cudaFree(pairs));
    CK(cudaFree(counters));
}

/* 128 MB a tensor, as the chapter's bench. fp32: 32 values a thread (8 vectors) held widened;
 * bf16: held as loaded, 64 values a thread (8 vectors) or 32 (4). Each with its registers
 * capped for the blocks an SM that fill the SM's 2048 threads (MINB) and, for 256-thread
 * blocks, as the compiler chose (MINB 1), to see what the cap costs in spills and gains in
 * blocks. */
template <typename T, int OP> static void shapes(int sms)
{
    const int total = sizeof(T) == 4 ? (1 << 25) : (1 << 26);
    for (int cols : { 32768, 65536, 262144 }) {
        if constexpr (sizeof(T) == 4) {
            run<T, OP, 256, 8, false, 1>(total / cols, cols, sms);
            run<T, OP, 256, 8, false, 4>(total / cols, cols, sms);
            run<T, OP, 512, 8, false, 2>(total / cols, cols, sms);
        } else {
            run<T, OP, 256, 8, true, 1>(total / cols, cols, sms);
            run<T, OP, 256, 8, true, 4>(total / cols, cols, sms);
            run<T, OP, 256, 4, true, 4>(total / cols, cols, sms);
            run<T, OP, 512, 8, true, 2>(total / cols, cols, sms);
        }
    }
}

int main()
{
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    shapes<float, SOFTMAX>(sms);
    shapes<__nv_bfloat16, SOFTMAX>(sms);
    shapes<float, RMSNORM>(sms);
    shapes<__nv_bfloat16, RMSNORM>(sms);
    shapes<float, LAYERNORM>(sms);
    shapes<__nv_bfloat16, LAYERNORM>(sms);
    return 0;
}
