/* step2_inflight.cu: chapter 09, step 2 of 4, Little's law. The reference.
 *
 * A read stream whose bytes in flight an SM are its parameters: blocks_per_sm blocks of
 * `threads` threads on every SM, each thread issuing `loads` independent loads of `vec` floats
 * before it adds any of them. Those loads are in flight together only because nothing between
 * them waits: the loads of a batch are unrolled (LOADS and VEC are template parameters, so the
 * batch is LOADS load instructions in a row), and the adds that use them come after the last.
 * A loop over a runtime count of loads would add each value before loading the next, and keep
 * one load a thread in flight whatever `loads` says.
 *
 * Little's law: to move R bytes a second when each load takes L seconds to come back, R x L
 * bytes must be in flight; over S SMs, R x L / S an SM. With R in GB/s (1e9 bytes a second) and
 * L in ns (1e-9 s) the powers of ten cancel: R x L bytes.
 * Expect: bandwidth that grows with the bytes in flight an SM up to about that many, then stays;
 * the grader finds where. */
#include "cuda_check.h"
#include "occupancy.h"

/* a load of VEC floats, and the sum of what it brought */
template <int VEC> struct vec_of;
template <> struct vec_of<1> {
    typedef float type;
    static __device__ __forceinline__ float sum(float x) { return x; }
};
template <> struct vec_of<2> {
    typedef float2 type;
    static __device__ __forceinline__ float sum(float2 x) { return x.x + x.y; }
};
template <> struct vec_of<4> {
    typedef float4 type;
    static __device__ __forceinline__ float sum(float4 x) { return (x.x + x.y) + (x.z + x.w); }
};

/* Each thread walks the vectors t, t + T, t + 2T, ... (T: the grid's threads), LOADS at a time:
 * a warp's loads of one batch are each 32 consecutive vectors, coalesced. */
template <int LOADS, int VEC>
static __global__ void stream_sum_kernel(const float *__restrict__ in, size_t n, double *sum)
{
    typedef typename vec_of<VEC>::type V;
    const V *v = reinterpret_cast<const V *>(in);
    const size_t nv = n / VEC;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f; /* small integers: exact in fp32 for the grader's sizes */
    size_t i = t;
    for (; i + (LOADS - 1) * stride < nv; i += LOADS * stride) {
        V x[LOADS];
#pragma unroll
        for (int j = 0; j < LOADS; j++) /* LOADS loads, none waiting for another */
            x[j] = v[i + j * stride];
#pragma unroll
        for (int j = 0; j < LOADS; j++) /* only now the first use */
            acc += vec_of<VEC>::sum(x[j]);
    }
    for (; i < nv; i += stride) /* what is left of the vectors, one at a time */
        acc += vec_of<VEC>::sum(v[i]);
    if (t < n - nv * VEC) /* the last n % VEC floats */
        acc += in[nv * VEC + t];
    double s = acc;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(sum, s);
}

template <int LOADS>
static void launch_loads(const float *d_in, size_t n, double *d_sum, int vec, dim3 grid,
                         int threads)
{
    if (vec == 4)
        stream_sum_kernel<LOADS, 4><<<grid, threads>>>(d_in, n, d_sum);
    else if (vec == 2)
        stream_sum_kernel<LOADS, 2><<<grid, threads>>>(d_in, n, d_sum);
    else
        stream_sum_kernel<LOADS, 1><<<grid, threads>>>(d_in, n, d_sum);
}

void stream_sum(const float *d_in, size_t n, double *d_sum, const struct inflight *c)
{
    int device, sms;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    dim3 grid((unsigned)(c->blocks_per_sm * sms));
    CUDA_CHECK(cudaMemsetAsync(d_sum, 0, sizeof *d_sum)); /* ordered before the kernel */
    switch (c->loads) {
    case 8: launch_loads<8>(d_in, n, d_sum, c->vec, grid, c->threads); break;
    case 4: launch_loads<4>(d_in, n, d_sum, c->vec, grid, c->threads); break;
    case 2: launch_loads<2>(d_in, n, d_sum, c->vec, grid, c->threads); break;
    default: launch_loads<1>(d_in, n, d_sum, c->vec, grid, c->threads); break;
    }
    CUDA_CHECK(cudaGetLastError());
}

double knee_bytes_per_sm(double gbs, double latency_ns, int sms)
{
    /* GB/s x ns = bytes: (1e9 bytes/s) x (1e-9 s) */
    return gbs * latency_ns / sms;
}
