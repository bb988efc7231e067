/* emu_devices_kernels.cu: the kernels of tests/emu_devices.c (emu_devices_kernels.h). */
#include "emu_devices_kernels.h"

__global__ void affine_kernel(const float *in, float *out, int n, float a, float b)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * in[i] + b;
}

void edk_affine(const float *in, float *out, int n, float a, float b, cudaStream_t stream)
{
    affine_kernel<<<(n + 127) / 128, 128, 0, stream>>>(in, out, n, a, b);
}

typedef float (*combine_fn)(float, float);

static float add_host(float x, float y)
{
    return x + y;
}

/* `combine` is never called: a function pointer among the arguments, which the launch's device
 * check must pass over */
__global__ void accumulate_kernel(int n, const float *in, combine_fn combine, float *out, float s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && combine)
        out[i] += s * in[i];
}

void edk_accumulate(const float *in, float *out, int n, cudaStream_t stream)
{
    accumulate_kernel<<<(n + 127) / 128, 128, 0, stream>>>(n, in, add_host, out, 1.0f);
}
