/* isolation_kernels.cu: kernels with one fault each, for the isolation demo (tests/isolation.c).
 * The same file builds for a GPU (nvcc) and for the CPU backend. */
#include <math.h>

#include "cuda_check.h"
#include "isolation_kernels.h"

#define BLOCK 128

__global__ void copy_faulty_kernel(const float *in, float *out, int n, int fault, int at)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == n && fault == FAULT_PAST_END)
        out[n] = 0.0f; /* one past the end: inside the grader's guard zone */
    if (i >= n)
        return;
    if (i == at && fault == FAULT_SKIP)
        return;
    float v = in[i];
    if (fault == FAULT_READ_PAST)
        v += 0.0f * in[i + 1]; /* the last thread reads in[n] */
    if (i == at && fault == FAULT_NAN)
        v = nanf("");
    if (i == at && fault == FAULT_INF)
        v = INFINITY;
    out[i] = v;
}

void copy_faulty(const float *d_in, float *d_out, int n, enum fault fault, int at)
{
    copy_faulty_kernel<<<cdiv(n + 1, BLOCK), BLOCK>>>(d_in, d_out, n, (int)fault, at);
    CUDA_CHECK(cudaGetLastError());
}

__global__ void spin_kernel(const int *flag)
{
    /* volatile: every iteration reads memory again, as a real wait on another thread would */
    while (*(const volatile int *)flag == 0) {
    }
}

void spin_forever(void)
{
    int *d_flag;
    CUDA_CHECK(cudaMalloc(&d_flag, sizeof *d_flag));
    CUDA_CHECK(cudaMemset(d_flag, 0, sizeof *d_flag));
    spin_kernel<<<1, 1>>>(d_flag);
    CUDA_CHECK(cudaGetLastError());
}

__global__ void illegal_kernel(float *p)
{
    p[threadIdx.x + 64] = 1.0f; /* p is null */
}

void write_illegal_address(void)
{
    illegal_kernel<<<1, 32>>>((float *)NULL);
    CUDA_CHECK(cudaGetLastError());
}
