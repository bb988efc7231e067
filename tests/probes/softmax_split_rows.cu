// softmax_split_rows.cu: a probe for chapter 07's long rows (32768 to 262144 columns) that
// needs no cluster. A row is split into slices of SLICE values, one slice a block and the
// slice held in the block's registers; the blocks are persistent (as many as are resident, a
// cooperative launch to guarantee it) and take slices in order from a ticket counter. A block
// reduces its slice to a (max, sum) pair, publishes it in global memory (release: a fence,
// then an atomic add on the row's counter), waits until the row's counter says every slice
// has published (acquire), merges the row's pairs from L2 and writes its slice's outputs
// from registers. One read of the row and one write, on every SM (no GPC leaves SMs idle to
// clusters), with the other blocks of an SM loading, reducing or storing while one waits.
// Deadlock-free because tickets are taken in order and a block publishes before it waits:
// every row but the last one ticketed is wholly ticketed, so its slices all publish, and at
// least SLICES - 1 blocks wait on the last (the grid holds more than that).
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

__device__ __forceinline__ float2 merge(float2 a, float2 b)
{ // (max, sum against max), values pre-scaled by log2(e)
    float m = fmaxf(a.x, b.x);
    float s = (a.y == 0.f ? 0.f : a.y * exp2f(a.x - m)) + (b.y == 0.f ? 0.f : b.y * exp2f(b.x - m));
    return make_float2(m, s);
}

// values pre-scaled by log2(e): exp(x - m) = 2^(x log2 e - m log2 e)
template <typename T, int THREADS, int VECS>
__global__ void __launch_bounds__(THREADS)
    softmax_split(const T *__restrict__ x, T *__restrict__ y, int rows, int cols, int slices,
                  float2 *__restrict__ pairs, unsigned *__restrict__ counters)
{
    constexpr int PER = io<T>::PER, SLICE = THREADS * VECS * PER;
    __shared__ unsigned s_ticket;
    __shared__ float2 warp_part[THREADS / 32];
    __shared__ float2 s_row;
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
        float v[VECS * PER];
#pragma unroll
        for (int k = 0; k < VECS; k++) {
            const int col = first + (tid + k * THREADS) * PER;
            if (col < cols) {
                io<T>::unpack(__ldcs(reinterpret_cast<const uint4 *>(x + row0 + col)), &v[k * PER]);
            } else {
#pragma unroll
                for (int i = 0; i < PER; i++)
                    v[k * PER + i] = -INFINITY;
            }
        }
        float m = -INFINITY;
#pragma unroll
        for (int i = 0; i < VECS * PER; i++) {
            v[i] *= L2E;
            m = fmaxf(m, v[i]);
        }
        const float mb = m == -INFINITY ? 0.f : m;
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < VECS * PER; i++) {
            v[i] = exp2f(v[i] - mb);
            s += v[i];
        }
        float2 p = make_float2(m, s);
        for (int o = 16; o; o >>= 1)
            p = merge(p, make_float2(__shfl_xor_sync(~0u, p.x, o), __shfl_xor_sync(~0u, p.y, o)));
        if (lane == 0)
            warp_part[warp] = p;
        __syncthreads();
        if (warp == 0) {
            p = lane < THREADS / 32 ? warp_part[lane] : make_float2(-INFINITY, 0.f);
            for (int o = 16; o; o >>= 1)
                p = merge(p, make_float2(__shfl_xor_sync(~0u, p.x, o), __shfl_xor_sync(~0u, p.y, o)));
            if (lane == 0) {
                pairs[(size_t)row * slices + slice] = p;
                __threadfence(); // the pair is visible before the count says so
                atomicAdd(&counters[row], 1u);
                volatile unsigned *c = &counters[row];
                while (*c < (unsigned)slices)
                    ;
                __threadfence(); // and the others' pairs are read after the count
            }
            __syncwarp();
            float2 r = make_float2(-INFINITY, 0.f);
            for (int k = lane; k < slices; k += 32)
                r = merge(r, __ldcg(&pairs[(size_t)row * slices + k]));
            for (int o = 16; o; o >>= 1)
                r = merge(r, make_float2(__shfl_xor_sync(~0u, r.x, o), __shfl_xor_sync(~0u, r.y, o)));
            if (lane == 0)
                s_row = make_float2(r.x, 1.f / r.y); // the row's max and 1 / sum
        }
        __syncthreads();
        // each thread's exponentials were taken against its own base mb
        const float scale = exp2f(mb - s_row.x) * s_row.y;
#pragma unroll
        for (int k = 0; k < VECS; k++) {
            const int col = first + (tid + k * THREADS) * PER;
            if (col < cols) {
                float o[PER];
#pragma unroll
                for (int i = 0; i < PER; i++)
                    o[i] = v[k * PER + i] * scale;
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

template <typename T, int THREADS, int VECS> static void run(int rows, int cols, int sms)
{
    constexpr int PER = io<T>::PER, SLICE = THREADS * VECS * PER;
    const size_t n = (size_t)rows * cols, bytes = n * sizeof(T);
    const int slices = (cols + SLICE - 1) / SLICE;
    std::vector<T> h(n);
    srand(1);
    for (size_t i = 0; i < n; i++) {
        float f = (rand() / (float)RAND_MAX) * 8.f - 4.f;
        if (sizeof(T) == 4)
            memcpy(&h[i], &f, 4);
        else
            h[i] = __float2bfloat16(f);
    }
    T *dx, *dy;
    float2 *pairs;
    unsigned *counters;
    CK(cudaMalloc(&dx, bytes));
    CK(cudaMalloc(&dy, bytes));
    CK(cudaMalloc(&pairs, (size_t)rows * slices * sizeof(float2)));
    CK(cudaMalloc(&counters, (rows + 1) * sizeof(unsigned)));
    CK(cudaMemcpy(dx, h.data(), bytes, cudaMemcpyHostToDevice));
    auto kern = softmax_split<T, THREADS, VECS>;
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, THREADS, 0));
    const int grid = per_sm * sms;
    if (grid < slices) {
        printf("%dx%d: %d slices a row, more than the %d resident blocks\n", rows, cols, slices, grid);
        return;
    }
    const T *cx = dx;
    void *args[] = { (void *)&cx, (void *)&dy, (void *)&rows, (void *)&cols, (void *)&slices,
                     (void *)&pairs, (void *)&counters };
    auto launch = [&]() {
        CK(cudaMemsetAsync(counters, 0, (rows + 1) * sizeof(unsigned)));
        CK(cudaLaunchCooperativeKernel((void *)kern, dim3(grid), dim3(THREADS), args, 0, 0));
    };
    launch();
    CK(cudaDeviceSynchronize());
    std::vector<T> out(n);
    CK(cudaMemcpy(out.data(), dy, bytes, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int rr : {0, rows / 2, rows - 1}) {
        auto val = [&](size_t i) {
            return sizeof(T) == 4 ? (double)*(float *)&h[i] : (double)bf2f(*(__nv_bfloat16 *)&h[i]);
        };
        auto got = [&](size_t i) {
            return sizeof(T) == 4 ? (double)*(float *)&out[i] : (double)bf2f(*(__nv_bfloat16 *)&out[i]);
        };
        double m = -1e300, s = 0;
        for (int c = 0; c < cols; c++)
            m = fmax(m, val((size_t)rr * cols + c));
        for (int c = 0; c < cols; c++)
            s += exp(val((size_t)rr * cols + c) - m);
        for (int c = 0; c < cols; c++) {
            double w = exp(val((size_t)rr * cols + c) - m) / s;
            double e = fabs(got((size_t)rr * cols + c) - w) / w;
            if (!(e <= worst))
                worst = e;
        }
    }
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
    int cb = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&cb, copy_k, 256, 0));
    for (int i = 0; i < 3; i++)
        copy_k<<<sms * cb, 256>>>((const uint4 *)dx, (uint4 *)dy, bytes / 16);
    CK(cudaEventRecord(e0));
    for (int i = 0; i < reps; i++)
        copy_k<<<sms * cb, 256>>>((const uint4 *)dx, (uint4 *)dy, bytes / 16);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float cms;
    CK(cudaEventElapsedTime(&cms, e0, e1));
    cms /= reps;
    CK(cudaGetLastError());
    printf("%-5s %6dx%-7d slice %6d (%3d threads x %d vectors) %2d slices a row, %3d blocks (%d an SM)  "
           "softmax %.4f ms %7.1f GB/s  copy %.4f ms %7.1f GB/s  = %5.1f%%  max rel err %.2e\n",
           sizeof(T) == 4 ? "f32" : "bf16", rows, cols, SLICE, THREADS, VECS, slices, grid, per_sm,
           ms, 2 * bytes / ms / 1e6, cms, 2 * bytes / cms / 1e6, 100 * cms / ms, worst);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaFree(pairs));
    CK(cudaFree(counters));
}

/* 32 values a thread in both types (8 or 4 vectors), 128 MB a tensor */
template <typename T> static void shapes(int sms)
{
    constexpr int V = sizeof(T) == 4 ? 8 : 4;
    const int total = sizeof(T) == 4 ? (1 << 25) : (1 << 26);
    for (int cols : {16384, 32768, 65536, 131072, 262144}) {
        run<T, 256, V>(total / cols, cols, sms);
        run<T, 128, V>(total / cols, cols, sms);
        run<T, 512, V>(total / cols, cols, sms);
    }
}

int main()
{
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    shapes<float>(sms);
    shapes<__nv_bfloat16>(sms);
    return 0;
}
