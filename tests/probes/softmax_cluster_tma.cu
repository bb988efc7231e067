// softmax_cluster_tma.cu: a probe for chapter 07's long rows (65536 to 262144 columns), where the
// step-4 reference streams each row twice (3 passes of traffic) and reaches 66-79% of the copy
// kernel on the H200. Here a cluster of CL blocks holds a row, CHUNK_BYTES of it a block; the blocks
// are persistent (as many clusters as fit, each taking every ncl-th row), and each block's
// chunk of the next two rows is already on its way into shared memory (bulk asynchronous copies,
// cp.async.bulk with an mbarrier a buffer: the TMA unit, no tensor map) while it reduces and
// writes the current one. The block's (max, sum) pair goes through distributed shared memory:
// one cluster barrier a row, the pairs double-buffered by the row's parity. One read of the
// row and one write, with the loads of the next rows in flight during the reduction and the
// stores: what the streaming reference cannot overlap.
//
// Measured on the H200 (2026-12-02, driver 580.159.04, SM clock 1980 MHz), each configuration
// beside the copy kernel in the same run: plots/data/h200/probe-softmax-cluster.tsv, three shapes
// of block (64 KB and 512 threads, 32 KB and 256 or 512) at rows of 16384 to 262144 columns,
// fp32 and bf16. fp32 at 64 KB a block: 94% of the copy at 16384 columns, 92% at 32768, 86% at
// 65536, 78% at 131072, 60% at 262144; bf16 runs lower at the same bytes a row.
// Build and run on a GPU of compute capability 9.0:
//   nvcc -O3 -std=c++17 -arch=sm_90a -o softmax_cluster_tma tests/probes/softmax_cluster_tma.cu
//   ./softmax_cluster_tma
#include <cmath>
#include <cooperative_groups.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_bf16.h>
#include <vector>
namespace cg = cooperative_groups;

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)


__device__ __forceinline__ uint32_t su32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(uint64_t *b, uint32_t n)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(su32(b)), "r"(n));
}
__device__ __forceinline__ void mbar_expect(uint64_t *b, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(su32(b)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *b, uint32_t parity)
{
    uint32_t done = 0;
    while (!done)
        asm volatile(
            "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(done)
            : "r"(su32(b)), "r"(parity)
            : "memory");
}
__device__ __forceinline__ void bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar)
{
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
            "r"(su32(dst)),
        "l"(src), "r"(bytes), "r"(su32(bar))
        : "memory");
}

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
{ // (max, sum against max)
    float m = fmaxf(a.x, b.x);
    float s = (a.y == 0.f ? 0.f : a.y * exp2f(a.x - m)) + (b.y == 0.f ? 0.f : b.y * exp2f(b.x - m));
    return make_float2(m, s);
}

// values are kept pre-scaled by log2(e): exp(x - m) = exp2(x*L2E - m*L2E)
template <typename T, int CHUNK_BYTES, int THREADS>
__global__ void __launch_bounds__(THREADS, 1)
    softmax_long(const T *__restrict__ x, T *__restrict__ y, int rows, int cols)
{
    constexpr int VEC_PER_THREAD = CHUNK_BYTES / 16 / THREADS;
    extern __shared__ __align__(128) unsigned char buf[]; // 2 x CHUNK_BYTES
    __shared__ uint64_t bar[2];
    __shared__ float2 part[2];
    __shared__ float2 warp_part[THREADS / 32];
    cg::cluster_group cl = cg::this_cluster();
    const int CL = (int)cl.num_blocks(), rank = (int)cl.block_rank();
    const int cid = blockIdx.x / CL, ncl = gridDim.x / CL;
    const int E = CHUNK_BYTES / sizeof(T);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const float L2E = 1.4426950408889634f;
    if (tid == 0) {
        mbar_init(&bar[0], 1);
        mbar_init(&bar[1], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    auto issue = [&](int row, int b) {
        if (row < rows) {
            mbar_expect(&bar[b], CHUNK_BYTES);
            bulk_load(buf + b * CHUNK_BYTES, x + (size_t)row * cols + (size_t)rank * E, CHUNK_BYTES,
                      &bar[b]);
        }
    };
    if (tid == 0) {
        issue(cid, 0);
        issue(cid + ncl, 1);
    }
    int it = 0;
    for (int row = cid; row < rows; row += ncl, it++) {
        const int b = it & 1;
        mbar_wait(&bar[b], (it >> 1) & 1);
        constexpr int PER = io<T>::PER;
        float v[VEC_PER_THREAD * PER];
        const uint4 *s4 = reinterpret_cast<const uint4 *>(buf + b * CHUNK_BYTES);
#pragma unroll
        for (int k = 0; k < VEC_PER_THREAD; k++)
            io<T>::unpack(s4[tid + k * THREADS], &v[k * PER]);
        __syncthreads(); // every read of buffer b is done
        if (tid == 0) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            issue(row + 2 * ncl, b);
        }
        float m = -INFINITY;
#pragma unroll
        for (int i = 0; i < VEC_PER_THREAD * PER; i++) {
            v[i] *= L2E;
            m = fmaxf(m, v[i]);
        }
        float s = 0.f;
        float mb = m == -INFINITY ? 0.f : m;
#pragma unroll
        for (int i = 0; i < VEC_PER_THREAD * PER; i++)
            s += exp2f(v[i] - mb);
        float2 p = make_float2(m, s);
        for (int o = 16; o; o >>= 1) {
            float2 q = make_float2(__shfl_xor_sync(~0u, p.x, o), __shfl_xor_sync(~0u, p.y, o));
            p = merge(p, q);
        }
        if (lane == 0)
            warp_part[warp] = p;
        __syncthreads();
        if (warp == 0) {
            p = lane < THREADS / 32 ? warp_part[lane] : make_float2(-INFINITY, 0.f);
            for (int o = 16; o; o >>= 1) {
                float2 q = make_float2(__shfl_xor_sync(~0u, p.x, o), __shfl_xor_sync(~0u, p.y, o));
                p = merge(p, q);
            }
            if (lane == 0)
                part[b] = p;
        }
        cl.sync(); // every block's part[b] is written
        float2 r = make_float2(-INFINITY, 0.f);
        for (int k = 0; k < CL; k++)
            r = merge(r, *cl.map_shared_rank(&part[b], k));
        const float inv = 1.f / r.y, mr = r.x;
        uint4 *d4 = reinterpret_cast<uint4 *>(y + (size_t)row * cols + (size_t)rank * E);
#pragma unroll
        for (int k = 0; k < VEC_PER_THREAD; k++) {
            float o[PER];
#pragma unroll
            for (int i = 0; i < PER; i++)
                o[i] = exp2f(v[k * PER + i] - mr) * inv;
            __stcs(&d4[tid + k * THREADS], io<T>::pack(o));
        }
    }
    cl.sync(); // no block leaves while others read it
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

template <typename T, int CHUNK_BYTES, int THREADS> static void run(int rows, int cols, int sms)
{
    size_t n = (size_t)rows * cols, bytes = n * sizeof(T);
    int E = CHUNK_BYTES / sizeof(T), CL = cols / E;
    if (cols % E || CL > 16) {
        printf("skip %dx%d (chunk %d KB)\n", rows, cols, CHUNK_BYTES / 1024);
        return;
    }
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
    CK(cudaMalloc(&dx, bytes));
    CK(cudaMalloc(&dy, bytes));
    CK(cudaMemcpy(dx, h.data(), bytes, cudaMemcpyHostToDevice));
    auto kern = softmax_long<T, CHUNK_BYTES, THREADS>;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, 2 * CHUNK_BYTES));
    if (CL > 8)
        CK(cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = CL;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = 2 * CHUNK_BYTES;
    cfg.gridDim = dim3(CL * (sms / CL > 0 ? sms / CL : 1)); /* a multiple of the cluster */
    int maxcl = 0;
    cudaError_t oe = cudaOccupancyMaxActiveClusters(&maxcl, (void *)kern, &cfg);
    if (oe != cudaSuccess || maxcl == 0) {
        printf("%dx%d: clusters of %d do not fit (%s)\n", rows, cols, CL, cudaGetErrorString(oe));
        (void)cudaGetLastError();
        CK(cudaFree(dx));
        CK(cudaFree(dy));
        return;
    }
    int ncl = maxcl < rows ? maxcl : rows;
    cfg.gridDim = dim3(ncl * CL);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto launch = [&]() { CK(cudaLaunchKernelEx(&cfg, kern, (const T *)dx, dy, rows, cols)); };
    launch();
    CK(cudaDeviceSynchronize());
    // check rows 0 and rows-1
    std::vector<T> out(n);
    CK(cudaMemcpy(out.data(), dy, bytes, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int rr : {0, rows / 2, rows - 1}) /* three rows against the host */ {
        double m = -1e300, s = 0;
        auto val = [&](size_t i) {
            return sizeof(T) == 4 ? (double)*(float *)&h[i] : (double)bf2f(*(__nv_bfloat16 *)&h[i]);
        };
        auto got = [&](size_t i) {
            return sizeof(T) == 4 ? (double)*(float *)&out[i]
                                  : (double)bf2f(*(__nv_bfloat16 *)&out[i]);
        };
        for (int c = 0; c < cols; c++)
            m = fmax(m, val((size_t)rr * cols + c));
        for (int c = 0; c < cols; c++)
            s += exp(val((size_t)rr * cols + c) - m);
        for (int c = 0; c < cols; c++) {
            double w = exp(val((size_t)rr * cols + c) - m) / s;
            double e = fabs(got((size_t)rr * cols + c) - w) / w;
            if (e > worst)
                worst = e;
        }
    }
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
    printf("%-5s %6dx%-7d chunk %3d KB x %4d threads CL %2d clusters %3d  softmax %.4f ms %7.1f GB/s  copy %.4f ms %7.1f GB/s "
           " = %5.1f%%  max rel err %.2e\n",
           sizeof(T) == 4 ? "f32" : "bf16", rows, cols, CHUNK_BYTES / 1024, THREADS, CL, ncl, ms, 2 * bytes / ms / 1e6, cms,
           2 * bytes / cms / 1e6, 100 * cms / ms, worst);
    CK(cudaFree(dx));
    CK(cudaFree(dy));
}

template <typename T> static void shapes(int sms)
{
    const int total = sizeof(T) == 4 ? (1 << 25) : (1 << 26); /* 128 MB a tensor */
    for (int cols : {16384, 32768, 65536, 131072, 262144}) {
        run<T, 64 * 1024, 512>(total / cols, cols, sms);
        run<T, 32 * 1024, 256>(total / cols, cols, sms);
        run<T, 32 * 1024, 512>(total / cols, cols, sms);
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
