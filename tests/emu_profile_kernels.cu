/* emu_profile_kernels.cu: the planted kernels of tests/emu_profile.c. Each one has a profile
 * that the model must reproduce exactly; keep them small and their branches real (a branch
 * the compiler can turn into a select is not one). */
#include "emu_profile_kernels.h"
#include "shared_patterns.h"

__global__ void copy_kernel(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i];
}

void prof_copy(const float *in, float *out, int n)
{
    copy_kernel<<<(n + 255) / 256, 256>>>(in, out, n);
}

__global__ void copy4_kernel(const float4 *in, float4 *out, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4)
        out[i] = in[i];
}

void prof_copy4(const float *in, float *out, int n)
{
    copy4_kernel<<<(n / 4 + 255) / 256, 256>>>(reinterpret_cast<const float4 *>(in),
                                               reinterpret_cast<float4 *>(out), n / 4);
}

__global__ void copy_strided_kernel(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[(long)i * 32];
}

void prof_copy_strided(const float *in, float *out, int n)
{
    copy_strided_kernel<<<(n + 255) / 256, 256>>>(in, out, n);
}

template <int WIDTH> __global__ void shared_column_kernel(const float *in, float *out)
{
    __shared__ float tile[32][WIDTH];
    int tx = threadIdx.x, ty = threadIdx.y;
    tile[ty][tx] = in[ty * 32 + tx]; /* a row: one wavefront */
    __syncthreads();
    out[ty * 32 + tx] = tile[tx][ty]; /* a column */
}

void prof_shared_column(const float *in, float *out, int padded)
{
    if (padded)
        shared_column_kernel<33><<<1, dim3(32, 32)>>>(in, out);
    else
        shared_column_kernel<32><<<1, dim3(32, 32)>>>(in, out);
}

__global__ void branch_kernel(const float *in, float *out, int n, int by_warp)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int path = by_warp ? (threadIdx.x / 32) & 1 : threadIdx.x & 1;
    if (path) {
        float s = 0.0f;
        for (int k = 0; k < 8; ++k)
            s += in[(i + k) % n];
        out[i] = s;
    } else {
        out[i] = in[i] * 2.0f;
    }
}

void prof_branch(const float *in, float *out, int n, int by_warp)
{
    branch_kernel<<<n / 256, 256>>>(in, out, n, by_warp);
}

__global__ void read_before_kernel(const float *in, float *out)
{
    out[threadIdx.x] = in[(int)threadIdx.x - 1];
}

void prof_read_before(const float *in, float *out)
{
    read_before_kernel<<<1, 64>>>(in, out);
}

__global__ void shared_overrun_kernel(float *out, int stride)
{
    __shared__ float small[32];
    small[threadIdx.x * stride] = (float)threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = small[threadIdx.x];
}

void prof_shared_overrun(float *out, int stride)
{
    shared_overrun_kernel<<<1, 32>>>(out, stride);
}

/* one warp: lane l loads one T (float, float2, float4) at element index[l] of that width */
__device__ float sum_of(float v) { return v; }
__device__ float sum_of(float2 v) { return v.x + v.y; }
__device__ float sum_of(float4 v) { return v.x + v.y + v.z + v.w; }

template <typename T> __global__ void shared_pattern_kernel(const int *index, float *out)
{
    __shared__ __align__(16) float s[SHARED_PATTERN_BYTES / 4];
    for (int i = threadIdx.x; i < SHARED_PATTERN_BYTES / 4; i += 32)
        s[i] = (float)i;
    __syncthreads();
    const T v = reinterpret_cast<const T *>(s)[index[threadIdx.x]];
    out[threadIdx.x] = sum_of(v);
}

void prof_shared_pattern(const int *index, float *out, int bytes)
{
    if (bytes == 16)
        shared_pattern_kernel<float4><<<1, 32>>>(index, out);
    else if (bytes == 8)
        shared_pattern_kernel<float2><<<1, 32>>>(index, out);
    else
        shared_pattern_kernel<float><<<1, 32>>>(index, out);
}
