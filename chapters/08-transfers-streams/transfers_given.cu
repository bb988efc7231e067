/* transfers_given.cu: the given code of chapter 08, shared by the starters and the solutions:
 * the pageable copy that step 1 starts from, the pipeline's kernel and its launcher, and the
 * loop of chapter 06's three kernels that step 4 captures into a graph.
 *
 * affine_chunk launches and returns. It does not check the launch and does not synchronise: in
 * this chapter, as in chapter 06, that is the caller's job, so that the caller decides what a
 * failure means (stop, give back what it holds, return the error). */
#include "cuda_check.h"
#include "transfers.h"

/* chapter 06's blur, bias and copy (PIPELINE_STAGES): the build links chapter 06's
 * pipeline_kernels.cu into this chapter's programs, one copy of them */
#include "../06-error-checking/pipeline.h"

#define AFFINE_BLOCK 256
/* a refused launch: twice the 1024 threads a block that every GPU since Kepler allows */
#define AFFINE_BAD_BLOCK 2048

cudaError_t upload_pageable(void *d_dst, const void *h_src, size_t bytes)
{
    return cudaMemcpy(d_dst, h_src, bytes, cudaMemcpyHostToDevice);
}

/* One int in, one int out: 8 bytes of HBM traffic an element, nothing next to the copies over
 * the link (55 GB/s against some 4 TB/s). A grid-stride loop, so any count fits the grid. */
__global__ void affine_kernel(const int *__restrict__ x, int *__restrict__ y, size_t count)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        y[i] = 3 * x[i] + 1;
}

void affine_chunk(const int *d_x, int *d_y, size_t count, long long chunk,
                  const struct pipe_test *t, cudaStream_t stream)
{
    int block = t && t->fail_chunk == chunk ? AFFINE_BAD_BLOCK : AFFINE_BLOCK;
    size_t blocks = (count + AFFINE_BLOCK - 1) / AFFINE_BLOCK;
    int grid = blocks > 4096 ? 4096 : (int)(blocks ? blocks : 1);
    if (t && t->on_launch)
        t->on_launch(t->ctx, chunk);
    affine_kernel<<<grid, block, 0, stream>>>(d_x, d_y, count);
}

cudaError_t loop_launches(float *d_a, float *d_b, int n, int iterations, cudaStream_t stream)
{
    for (int it = 0; it < iterations; it++)
        for (int s = 0; s < PIPELINE_NUM_STAGES; s++) {
            PIPELINE_STAGES[s].launch(d_a, d_b, n, it, NULL, stream);
            cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess)
                return e;
        }
    return cudaSuccess;
}

cudaError_t plain_loop(float *d_a, float *d_b, int n, int iterations, cudaStream_t stream)
{
    cudaError_t e = loop_launches(d_a, d_b, n, iterations, stream);
    return e != cudaSuccess ? e : cudaStreamSynchronize(stream);
}
