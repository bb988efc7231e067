/* latency.cu: chapter 09, given. The latency of one load from device memory, for step 2's
 * prediction: a single thread follows a chain of indices, each load's address the value the
 * load before it returned, so that no two loads are ever in flight together and the time a
 * step takes is the latency itself.
 *
 * The chain visits CHASE_NODES nodes 2 KiB apart in a random cyclic order (Sattolo's shuffle,
 * from a fixed seed) through a buffer of CHASE_BYTES, twice the H200's 60 MiB of L2; a buffer
 * written over the L2 beforehand evicts them, and the walk takes fewer steps than the chain has
 * nodes, so every load it times misses the L2 and goes to device memory. What it measures is the
 * unloaded latency: one load alone. Under a full stream of loads the memory system queues them,
 * and the loaded latency is longer; the lesson says what that does to the prediction. */
#include <stdlib.h>

#include "cuda_check.h"
#include "occupancy.h"

#ifndef HARNESS_EMU
#define CHASE_BYTES ((size_t)128 << 20)
#define CHASE_STRIDE 512u                         /* unsigned ints between nodes: 2 KiB */
#define CHASE_NODES ((unsigned)(CHASE_BYTES / sizeof(unsigned) / CHASE_STRIDE))
#define CHASE_STEPS 20000

static __global__ void chase_kernel(const unsigned *next, unsigned start, int steps,
                                    unsigned *out)
{
    unsigned j = start;
    for (int s = 0; s < steps; s++)
        j = next[j];
    *out = j; /* the chain's end, so that the walk is not dead code */
}

/* a fixed generator: the chain is the same every run */
static unsigned long long chase_next(unsigned long long *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

double load_latency_ns(void)
{
    size_t words = CHASE_BYTES / sizeof(unsigned);
    unsigned *h_next = (unsigned *)calloc(words, sizeof(unsigned));
    unsigned *order = (unsigned *)malloc(CHASE_NODES * sizeof(unsigned));
    if (!h_next || !order) {
        fprintf(stderr, "load_latency_ns: out of host memory\n");
        exit(EXIT_FAILURE);
    }
    /* Sattolo's shuffle: one cycle through every node */
    unsigned long long x = 0x9E3779B97F4A7C15ull;
    for (unsigned i = 0; i < CHASE_NODES; i++)
        order[i] = i;
    for (unsigned i = CHASE_NODES - 1; i > 0; i--) {
        unsigned j = (unsigned)(chase_next(&x) % i);
        unsigned t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (unsigned i = 0; i < CHASE_NODES; i++)
        h_next[order[i] * CHASE_STRIDE] = order[(i + 1) % CHASE_NODES] * CHASE_STRIDE;
    unsigned *d_next, *d_out;
    unsigned char *d_flush;
    CUDA_CHECK(cudaMalloc(&d_next, CHASE_BYTES));
    CUDA_CHECK(cudaMalloc(&d_flush, CHASE_BYTES));
    CUDA_CHECK(cudaMalloc(&d_out, sizeof(unsigned)));
    CUDA_CHECK(cudaMemcpy(d_next, h_next, CHASE_BYTES, cudaMemcpyHostToDevice));
    cudaEvent_t t0, t1;
    CUDA_CHECK(cudaEventCreate(&t0));
    CUDA_CHECK(cudaEventCreate(&t1));
    /* three walks from different starts, each after the L2 is flushed; the fastest counts */
    float best = -1.0f;
    for (int rep = 0; rep < 3; rep++) {
        CUDA_CHECK(cudaMemset(d_flush, rep, CHASE_BYTES));
        unsigned start = order[(unsigned)rep * (CHASE_NODES / 3)] * CHASE_STRIDE;
        CUDA_CHECK(cudaEventRecord(t0));
        chase_kernel<<<1, 1>>>(d_next, start, CHASE_STEPS, d_out);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaEventRecord(t1));
        CUDA_CHECK(cudaEventSynchronize(t1));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
        if (best < 0.0f || ms < best)
            best = ms;
    }
    CUDA_CHECK(cudaEventDestroy(t0));
    CUDA_CHECK(cudaEventDestroy(t1));
    CUDA_CHECK(cudaFree(d_next));
    CUDA_CHECK(cudaFree(d_flush));
    CUDA_CHECK(cudaFree(d_out));
    free(h_next);
    free(order);
    return (double)best * 1e6 / CHASE_STEPS;
}
#else
double load_latency_ns(void)
{
    return -1.0; /* the CPU backend has no memory latency to measure */
}
#endif
