/* process_divergent.cu: chapter 03, the baseline. Given, and shared with the solution.
 *
 * Thread i computes element i and picks its path by the parity of i. A warp is 32 consecutive
 * threads, so in every warp the 16 even lanes want path A and the 16 odd lanes want path B.
 * The warp has one program counter's worth of issue slots: it runs path A with the odd lanes
 * masked off, then path B with the even lanes masked off. Every lane waits through the other
 * half's 512 FMAs, so the kernel issues twice the instructions the work needs. The output is
 * right; nothing reports the loss but the clock. */
#include "cuda_check.h"
#include "divergence.h"

#define BLOCK 256

__global__ void process_divergent_kernel(const float *__restrict__ in, float *__restrict__ out,
                                         int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = in[i];
    /* i & 1 is lane & 1 (BLOCK is a multiple of 32): half the lanes of every warp each way */
    if (i & 1)
        out[i] = path_b(x);
    else
        out[i] = path_a(x);
}

void process_divergent(const float *d_in, float *d_out, int n)
{
    process_divergent_kernel<<<cdiv(n, BLOCK), BLOCK>>>(d_in, d_out, n);
    CUDA_CHECK(cudaGetLastError());
}
