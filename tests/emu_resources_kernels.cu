/* emu_resources_kernels.cu: kernels whose registers, shared memory and launch bounds the tests
 * know from the source (emu_resources_kernels.h says what each is). The CPU backend's build
 * compiles this file with nvcc too (EMU_RESOURCE_USAGE in harness/emu/emu.mk), so its object
 * carries what ptxas gave each kernel; it is plain CUDA, and builds with nvcc as it is. */
#include "emu_resources_kernels.h"

#include <cuda_runtime.h>

#define LIVE 96 /* values live at once: more than 64 registers hold */

/* LIVE loads kept live through rounds that read them all, then summed: ptxas needs about LIVE
 * registers, and spills what its cap leaves out. */
__device__ __forceinline__ float pressure(const float *in, int n)
{
    float v[LIVE];
#pragma unroll
    for (int k = 0; k < LIVE; ++k)
        v[k] = in[(threadIdx.x + k * 37) % n];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int k = 0; k < LIVE; ++k)
            v[k] = v[k] * v[(k + r + 1) % LIVE] + 1.0f;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < LIVE; ++k)
        s += v[k];
    return s;
}

__global__ void __launch_bounds__(256, 4) bounded_kernel(const float *in, float *out, int n)
{
    out[threadIdx.x] = pressure(in, n);
}

__global__ void __launch_bounds__(96) tile_kernel(const float *in, float *out)
{
    __shared__ float s_tile[300];
    for (int i = threadIdx.x; i < 300; i += blockDim.x)
        s_tile[i] = in[i];
    __syncthreads();
    out[threadIdx.x] = s_tile[299 - threadIdx.x];
}

__global__ void light_kernel(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 2.0f * in[i] + 1.0f;
}

/* heavy < 0 never holds (the launcher passes 1): the heavy path costs its registers all the
 * same where it is compiled */
__global__ void arch_kernel(const float *in, float *out, int n, int heavy)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    if (heavy < 0) {
        out[i] = pressure(in, n);
        return;
    }
#endif
    if (i < n)
        out[i] = 2.0f * in[i] + 1.0f;
}

static __global__ void static_kernel(float *out)
{
    out[threadIdx.x] = 3.0f;
}

namespace {
__global__ void anon_kernel(float *out)
{
    out[threadIdx.x] = 4.0f;
}
} /* namespace */

template <int N> __global__ void template_kernel(float *out)
{
    __shared__ float s[N];
    s[threadIdx.x % N] = (float)N;
    __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % N];
}

const void *erk_kernel(enum erk_kernel k)
{
    switch (k) {
    case ERK_BOUNDED: return (const void *)bounded_kernel;
    case ERK_TILE: return (const void *)tile_kernel;
    case ERK_LIGHT: return (const void *)light_kernel;
    case ERK_ARCH: return (const void *)arch_kernel;
    case ERK_STATIC: return (const void *)static_kernel;
    case ERK_ANON: return (const void *)anon_kernel;
    case ERK_TEMPLATE: return (const void *)template_kernel<64>;
    }
    return 0;
}

cudaError_t erk_launch(enum erk_kernel k, int threads, size_t smem, float *h_out)
{
    const int n = 1024;
    float h_in[1024];
    for (int i = 0; i < n; ++i)
        h_in[i] = (float)(i % 17);
    float *d_in = 0, *d_out = 0;
    cudaError_t e = cudaMalloc(&d_in, n * sizeof(float));
    if (e == cudaSuccess)
        e = cudaMalloc(&d_out, n * sizeof(float));
    if (e == cudaSuccess)
        e = cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = cudaMemset(d_out, 0, n * sizeof(float)); /* what a launch that never ran leaves */
    cudaError_t launch = cudaSuccess;
    if (e == cudaSuccess) {
        switch (k) {
        case ERK_BOUNDED: bounded_kernel<<<1, threads, smem>>>(d_in, d_out, n); break;
        case ERK_TILE: tile_kernel<<<1, threads, smem>>>(d_in, d_out); break;
        case ERK_LIGHT: light_kernel<<<1, threads, smem>>>(d_in, d_out, threads); break;
        case ERK_ARCH: arch_kernel<<<1, threads, smem>>>(d_in, d_out, threads, 1); break;
        case ERK_STATIC: static_kernel<<<1, threads, smem>>>(d_out); break;
        case ERK_ANON: anon_kernel<<<1, threads, smem>>>(d_out); break;
        case ERK_TEMPLATE: template_kernel<64><<<1, threads, smem>>>(d_out); break;
        }
        launch = cudaGetLastError();
        e = cudaDeviceSynchronize();
    }
    /* the output, also after a refused launch (its error is not sticky) */
    if (e == cudaSuccess && h_out && threads > 0)
        e = cudaMemcpy(h_out, d_out, (threads < n ? threads : n) * sizeof(float), cudaMemcpyDeviceToHost);
    cudaError_t f = cudaFree(d_in);
    cudaError_t g = cudaFree(d_out);
    return launch != cudaSuccess ? launch : e != cudaSuccess ? e : f != cudaSuccess ? f : g;
}

cudaError_t erk_potential_block_size(enum erk_kernel k, size_t smem, int *min_grid, int *block)
{
    switch (k) {
    case ERK_BOUNDED: return cudaOccupancyMaxPotentialBlockSize(min_grid, block, bounded_kernel, smem);
    case ERK_TILE: return cudaOccupancyMaxPotentialBlockSize(min_grid, block, tile_kernel, smem);
    case ERK_LIGHT: return cudaOccupancyMaxPotentialBlockSize(min_grid, block, light_kernel, smem);
    case ERK_ARCH: return cudaOccupancyMaxPotentialBlockSize(min_grid, block, arch_kernel, smem);
    case ERK_STATIC: return cudaOccupancyMaxPotentialBlockSize(min_grid, block, static_kernel, smem);
    case ERK_ANON: return cudaOccupancyMaxPotentialBlockSize(min_grid, block, anon_kernel, smem);
    case ERK_TEMPLATE: return cudaOccupancyMaxPotentialBlockSize(min_grid, block, template_kernel<64>, smem);
    }
    return cudaErrorInvalidValue;
}
