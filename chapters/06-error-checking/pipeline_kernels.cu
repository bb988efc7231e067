/* pipeline_kernels.cu: the given pipeline of chapter 06, shared by the starter and the
 * solution: three small memory-bound kernels, their launchers (which inject the grader's
 * faults), and the loop with no checks that the speed test measures yours against.
 *
 * The launchers launch and return. They do not check the launch and do not synchronise: in
 * this chapter that is the caller's job, so that the caller decides what a failure means
 * (stop, report, free) instead of a launcher that exits the process. */
#include <stdint.h>

#include "cuda_check.h"
#include "pipeline.h"

#define BLOCK 256
/* FAULT_BAD_CONFIG: twice the 1024 threads a block that every GPU since Kepler allows */
#define BAD_BLOCK 2048
/* FAULT_OUT_OF_BOUNDS writes this far past the output: 2^38 floats = 1 TiB, an address that no
 * allocation of this process is near, so the MMU (or, on the CPU backend, the host's) refuses
 * it. A small overrun would not do: a few bytes past a buffer is often another buffer, and
 * nothing faults at all. */
#define FAR_FLOATS ((size_t)1 << 38)

/* Thread 0 of the faulting launch misbehaves; every other thread does the stage's work. */
__device__ static void inject(float *out, int n, int fault)
{
    if (fault == FAULT_OUT_OF_BOUNDS)
        out[(size_t)n + FAR_FLOATS] = 1.0f;
    else if (fault == FAULT_TRAP)
        __trap(); /* like a failed device assert(), but NDEBUG cannot compile it out */
}

__global__ void blur_kernel(const float *a, float *b, int n, int fault)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (fault != FAULT_NONE && i == 0)
        inject(b, n, fault);
    if (i >= n)
        return;
    float l = a[i > 0 ? i - 1 : i], c = a[i], r = a[i < n - 1 ? i + 1 : i];
    b[i] = (l + c + r) * (1.0f / 3.0f);
}

__global__ void bias_kernel(float *b, int n, int fault)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (fault != FAULT_NONE && i == 0)
        inject(b, n, fault);
    if (i >= n)
        return;
    b[i] = b[i] + 1.0f;
}

__global__ void copy_kernel(const float *b, float *a, int n, int fault)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (fault != FAULT_NONE && i == 0)
        inject(a, n, fault);
    if (i >= n)
        return;
    a[i] = b[i];
}

/* The fault this launch injects: the spec's, when it names this iteration and stage. */
static int fault_here(const struct fault *f, int iteration, int stage)
{
    if (!f || f->kind == FAULT_NONE || f->iteration != iteration || f->stage != stage)
        return FAULT_NONE;
    return f->kind;
}

static int block_for(int fault)
{
    return fault == FAULT_BAD_CONFIG ? BAD_BLOCK : BLOCK;
}

static void blur(float *d_a, float *d_b, int n, int iteration, const struct fault *f, cudaStream_t stream)
{
    int fault = fault_here(f, iteration, 0), block = block_for(fault);
    blur_kernel<<<cdiv(n, block), block, 0, stream>>>(d_a, d_b, n, fault);
}

static void bias(float *d_a, float *d_b, int n, int iteration, const struct fault *f, cudaStream_t stream)
{
    (void)d_a;
    int fault = fault_here(f, iteration, 1), block = block_for(fault);
    bias_kernel<<<cdiv(n, block), block, 0, stream>>>(d_b, n, fault);
}

static void copy(float *d_a, float *d_b, int n, int iteration, const struct fault *f, cudaStream_t stream)
{
    int fault = fault_here(f, iteration, 2), block = block_for(fault);
    copy_kernel<<<cdiv(n, block), block, 0, stream>>>(d_b, d_a, n, fault);
}

extern "C" const struct pipeline_stage PIPELINE_STAGES[] = {
    { "blur", blur },
    { "bias", bias },
    { "copy", copy },
};
extern "C" const int PIPELINE_NUM_STAGES = sizeof PIPELINE_STAGES / sizeof PIPELINE_STAGES[0];

void run_pipeline_unchecked(const struct pipeline_spec *spec)
{
    size_t bytes = (size_t)spec->n * sizeof(float);
    float *d_a, *d_b;
    cudaStream_t stream;
    CUDA_CHECK(cudaMalloc((void **)&d_a, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_b, bytes));
    CUDA_CHECK(cudaStreamCreate(&stream));
    CUDA_CHECK(cudaMemcpyAsync(d_a, spec->h_in, bytes, cudaMemcpyHostToDevice, stream));
    for (int it = 0; it < spec->iterations; it++)
        for (int s = 0; s < PIPELINE_NUM_STAGES; s++)
            PIPELINE_STAGES[s].launch(d_a, d_b, spec->n, it, &spec->fault, stream);
    CUDA_CHECK(cudaMemcpyAsync(spec->h_out, d_a, bytes, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaStreamDestroy(stream));
    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
}
