/* emu_streams_kernels.cu: the kernels of tests/emu_streams.c (emu_streams_kernels.h). */
#include "emu_streams_kernels.h"

__global__ void affine_kernel(const float *in, float *out, int n, float a, float b)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * in[i] + b;
}

void esk_affine(const float *in, float *out, int n, float a, float b, cudaStream_t stream)
{
    affine_kernel<<<(n + 127) / 128, 128, 0, stream>>>(in, out, n, a, b);
}

__global__ void out_of_bounds_kernel(float *d, int n)
{
    if (threadIdx.x == 0)
        d[n + 1024] = 1.0f; /* OUT_OF_BOUNDS_LINE */
}

int esk_out_of_bounds(float *d, int n, cudaStream_t stream)
{
    out_of_bounds_kernel<<<1, 32, 0, stream>>>(d, n);
    return __LINE__ - 6;
}

void esk_bad_config(float *d, cudaStream_t stream)
{
    affine_kernel<<<1, 2048, 0, stream>>>(d, d, 1, 1.0f, 0.0f);
}

__global__ void add_kernel(const float *in, float *out, int n, float s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] += s * in[i];
}

void esk_add(const float *in, float *out, int n, float s, cudaStream_t stream)
{
    add_kernel<<<(n + 127) / 128, 128, 0, stream>>>(in, out, n, s);
}
