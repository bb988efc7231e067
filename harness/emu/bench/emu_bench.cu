/* emu_bench.cu: what the emu backend costs, as tab-separated rows (harness/emu/README.md,
 * "Costs", says how to build and run it). Pure CUDA: on a GPU it measures the GPU instead.
 *
 *   threads      an empty kernel over 1M threads: the cost of starting and ending a fiber
 *   barrier      1024 threads x 2000 __syncthreads(): the cost of one fiber switch
 *   shuffle      a warp-shuffle sum over 1M values: the cost of a warp operation per lane
 *   matmul       the naive matmul of chapter 01 at 1000x999x1001, one thread per element */
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

static double now_s()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void empty_kernel(int *out)
{
    if (out)
        out[0] = 1;
}

__global__ void barrier_kernel(int *out, int rounds)
{
    __shared__ int s[1024];
    int acc = 0;
    for (int r = 0; r < rounds; ++r) {
        s[threadIdx.x] = r + threadIdx.x;
        __syncthreads();
        acc += s[(threadIdx.x + 1) % blockDim.x];
        __syncthreads();
    }
    out[threadIdx.x] = acc;
}

__global__ void shuffle_kernel(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0)
        atomicAdd(out, v);
}

__global__ void matmul_kernel(const float *a, const float *b, float *c, int m, int k, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n)
        return;
    float acc = 0.0f;
    for (int i = 0; i < k; i++)
        acc += a[row * k + i] * b[i * n + col];
    c[row * n + col] = acc;
}

int main()
{
    printf("what\tseconds\tper_unit_ns\tunit\n");
    const int nthreads = 1 << 20;
    double t = now_s();
    empty_kernel<<<nthreads / 256, 256>>>(nullptr);
    CHECK(cudaDeviceSynchronize());
    t = now_s() - t;
    printf("threads\t%.4f\t%.1f\tthread\n", t, t * 1e9 / nthreads);

    int *d_out;
    CHECK(cudaMalloc(&d_out, 1024 * sizeof(int)));
    const int rounds = 2000;
    t = now_s();
    barrier_kernel<<<1, 1024>>>(d_out, rounds);
    CHECK(cudaDeviceSynchronize());
    t = now_s() - t;
    printf("barrier\t%.4f\t%.1f\tthread_switch\n", t, t * 1e9 / (2.0 * rounds * 1024));

    float *d_in, *d_sum;
    CHECK(cudaMalloc(&d_in, nthreads * sizeof(float)));
    CHECK(cudaMalloc(&d_sum, sizeof(float)));
    CHECK(cudaMemset(d_in, 0, nthreads * sizeof(float)));
    t = now_s();
    shuffle_kernel<<<nthreads / 256, 256>>>(d_in, d_sum, nthreads);
    CHECK(cudaDeviceSynchronize());
    t = now_s() - t;
    printf("shuffle\t%.4f\t%.1f\tlane_shuffle\n", t, t * 1e9 / (5.0 * nthreads));

    const int m = 1000, k = 999, n = 1001;
    std::vector<float> h((size_t)(m > n ? m : n) * k, 0.5f);
    float *d_a, *d_b, *d_c;
    CHECK(cudaMalloc(&d_a, m * k * sizeof(float)));
    CHECK(cudaMalloc(&d_b, k * n * sizeof(float)));
    CHECK(cudaMalloc(&d_c, m * n * sizeof(float)));
    CHECK(cudaMemcpy(d_a, h.data(), m * k * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_b, h.data(), k * n * sizeof(float), cudaMemcpyHostToDevice));
    t = now_s();
    matmul_kernel<<<dim3((n + 31) / 32, (m + 31) / 32), dim3(32, 32)>>>(d_a, d_b, d_c, m, k, n);
    CHECK(cudaDeviceSynchronize());
    t = now_s() - t;
    printf("matmul\t%.4f\t%.1f\tthread\n", t, t * 1e9 / (m * n));
    return 0;
}
