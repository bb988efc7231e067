// sum_single_pass.cu: a probe for chapter 07's step 3 (the sum of n floats in one launch, the
// last block done), against CUB's DeviceReduce::Sum in the same run. It varies what the step's
// reference fixes: threads a block, blocks an SM, float4 loads in flight a thread, and whether
// the loads bypass L1 (ld.global.nc.L1::no_allocate, a streaming read). Each configuration is
// timed as the step's launcher runs it: a memset of the ticket counter, then the kernel.
//
// Its measurements on the H200: plots/data/h200/probe-sum-single-pass.tsv.
//
// Build and run on a GPU:
//   nvcc -O3 -std=c++17 -arch=sm_90 -o sum_single_pass tests/probes/sum_single_pass.cu
//   ./sum_single_pass
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cub/device/device_reduce.cuh>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_down_sync(~0u, v, o);
    return v;
}

template <int BLOCK> __device__ __forceinline__ float block_sum(float v)
{
    __shared__ float s_warp[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0)
        s_warp[warp] = v;
    __syncthreads();
    if (warp == 0)
        v = warp_sum(lane < BLOCK / 32 ? s_warp[lane] : 0.0f);
    return v;
}

template <bool NC> __device__ __forceinline__ float4 load4(const float4 *p)
{
    if constexpr (NC) {
        float4 v;
        asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                     : "l"(p));
        return v;
    } else {
        return *p;
    }
}

// n a multiple of 4 here (the step's reference also handles a head and a tail)
template <int BLOCK, int UNROLL, bool NC>
__global__ void __launch_bounds__(BLOCK) sum_kernel(const float *__restrict__ in, int n,
                                                    float *partials, unsigned *counter,
                                                    float *out)
{
    __shared__ bool s_last;
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    const int n4 = n / 4, stride = gridDim.x * BLOCK;
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float4 acc[UNROLL];
    for (int u = 0; u < UNROLL; u++)
        acc[u] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            v[u] = load4<NC>(in4 + i + u * stride);
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            acc[u].x += v[u].x;
            acc[u].y += v[u].y;
            acc[u].z += v[u].z;
            acc[u].w += v[u].w;
        }
    }
    for (; i < n4; i += stride) {
        const float4 v = load4<NC>(in4 + i);
        acc[0].x += v.x;
        acc[0].y += v.y;
        acc[0].z += v.z;
        acc[0].w += v.w;
    }
    float x = 0.f;
#pragma unroll
    for (int u = 0; u < UNROLL; u++)
        x += (acc[u].x + acc[u].y) + (acc[u].z + acc[u].w);
    x = block_sum<BLOCK>(x);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = x;
        __threadfence();
        s_last = atomicAdd(counter, 1u) == gridDim.x - 1;
        if (s_last)
            __threadfence();
    }
    __syncthreads();
    if (!s_last)
        return;
    float p = 0.f;
    for (int b = threadIdx.x; b < (int)gridDim.x; b += BLOCK)
        p += __ldcg(&partials[b]);
    p = block_sum<BLOCK>(p);
    if (threadIdx.x == 0)
        *out = p;
}

template <typename F>
static float time_ms(int reps, cudaEvent_t e0, cudaEvent_t e1, const F &launch)
{
    for (int i = 0; i < 5; i++)
        launch();
    CK(cudaEventRecord(e0));
    for (int i = 0; i < reps; i++)
        launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return ms / reps;
}

struct ctx {
    const float *d_in;
    float *d_out, *partials;
    unsigned *counter;
    int n, sms;
    double want;
    cudaEvent_t e0, e1;
};

template <int BLOCK, int UNROLL, bool NC> static void run(ctx &c, int per_sm, float cub_ms)
{
    const int want_blocks = (c.n / 4 + BLOCK * UNROLL - 1) / (BLOCK * UNROLL);
    int grid = per_sm * c.sms;
    if (grid > want_blocks)
        grid = want_blocks;
    auto launch = [&]() {
        CK(cudaMemsetAsync(c.counter, 0, sizeof(unsigned)));
        sum_kernel<BLOCK, UNROLL, NC><<<grid, BLOCK>>>(c.d_in, c.n, c.partials, c.counter, c.d_out);
    };
    const float ms = time_ms(c.n > (1 << 24) ? 30 : 300, c.e0, c.e1, launch);
    CK(cudaGetLastError());
    float got;
    CK(cudaMemcpy(&got, c.d_out, sizeof got, cudaMemcpyDeviceToHost));
    printf("n %10d  block %4d  %d an SM (%4d blocks)  %d float4 in flight%s  %8.4f ms  %6.0f GB/s"
           "  %5.1f%% of CUB  rel err %.1e\n",
           c.n, BLOCK, per_sm, grid, UNROLL, NC ? ", L1 no_allocate" : "                ", ms,
           c.n * 4.0 / ms / 1e6, 100.0 * cub_ms / ms, (got - c.want) / c.want);
}

int main()
{
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    for (int n : { 1 << 20, 1 << 28 }) {
        std::vector<float> h(n);
        double want = 0;
        srand(1);
        for (int i = 0; i < n; i++) {
            h[i] = rand() / (float)RAND_MAX;
            want += h[i];
        }
        ctx c;
        float *d_in;
        CK(cudaMalloc(&d_in, (size_t)n * 4));
        CK(cudaMemcpy(d_in, h.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
        c.d_in = d_in;
        CK(cudaMalloc(&c.d_out, 4));
        CK(cudaMalloc(&c.partials, 1 << 20));
        CK(cudaMalloc(&c.counter, 4));
        c.n = n;
        c.sms = sms;
        c.want = want;
        CK(cudaEventCreate(&c.e0));
        CK(cudaEventCreate(&c.e1));
        size_t temp = 0;
        CK(cub::DeviceReduce::Sum(nullptr, temp, d_in, c.d_out, n));
        void *d_temp;
        CK(cudaMalloc(&d_temp, temp));
        auto cub_launch = [&]() { CK(cub::DeviceReduce::Sum(d_temp, temp, d_in, c.d_out, n)); };
        const float cub_ms = time_ms(n > (1 << 24) ? 30 : 300, c.e0, c.e1, cub_launch);
        printf("n %10d  CUB DeviceReduce::Sum %8.4f ms  %6.0f GB/s\n", n, cub_ms,
               n * 4.0 / cub_ms / 1e6);
        run<256, 4, false>(c, 4, cub_ms); // the step's reference
        run<256, 4, true>(c, 4, cub_ms);
        run<256, 8, false>(c, 4, cub_ms);
        run<256, 8, true>(c, 4, cub_ms);
        run<256, 4, false>(c, 8, cub_ms);
        run<256, 4, true>(c, 8, cub_ms);
        run<512, 4, true>(c, 4, cub_ms);
        run<512, 8, true>(c, 2, cub_ms);
        run<1024, 4, true>(c, 2, cub_ms);
        run<256, 16, true>(c, 2, cub_ms);
        run<128, 8, true>(c, 16, cub_ms);
        const float again = time_ms(n > (1 << 24) ? 30 : 300, c.e0, c.e1, cub_launch);
        printf("n %10d  CUB again %8.4f ms\n", n, again);
        CK(cudaFree(d_temp));
        CK(cudaFree(d_in));
        CK(cudaFree(c.d_out));
        CK(cudaFree(c.partials));
        CK(cudaFree(c.counter));
    }
    return 0;
}
