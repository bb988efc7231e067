/* step1_remapped.cu: chapter 03, step 1 of 2, the reference.
 *
 * Divergent (process_divergent.cu, given): thread i takes element i and branches on i's
 *   parity, so the even and odd lanes of every warp split and the warp issues both paths.
 * Remapped (here): the same grid, the same elements, each computed once, but the threads are
 *   dealt out differently. Warps come in pairs; pair c owns the 64 elements 64c .. 64c + 63.
 *   The pair's even warp takes its 32 even elements, the odd warp its 32 odd elements, so the
 *   branch depends on the warp index alone and never splits a warp.
 * Expect: close to 2x the divergent kernel (each warp issues one 512-FMA chain instead of
 *   two), and close to parity_warp, which does the same work without any remapping. The price
 *   is a stride-2 access: each warp's 32 loads span 256 bytes (8 sectors) for 128 useful ones,
 *   and its neighbour warp uses the other half, mostly from L1. The kernel is bound by FMA
 *   issue (512 FMAs per 8 bytes moved), so that costs little. */
#include "cuda_check.h"
#include "divergence.h"

#define BLOCK 256 /* a multiple of 64: a warp pair never straddles two blocks */

static __global__ void process_remapped_kernel(const float *__restrict__ in,
                                               float *__restrict__ out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int warp = t / 32, lane = t % 32;
    int parity = warp & 1; /* the same for all 32 lanes: the branch below is warp-uniform */
    /* pair c = warp / 2 owns elements 64c .. 64c + 63; (warp - parity) * 32 is 64c */
    int i = (warp - parity) * 32 + 2 * lane + parity;
    /* The grid has cdiv(n, BLOCK) * BLOCK >= n threads, a whole number of pairs, so every
     * element below n has exactly one thread; the bound is on the element, not on t. In the
     * last pair some lanes leave here: masked lanes in one warp, but no second path. */
    if (i >= n)
        return;
    float x = in[i];
    if (parity)
        out[i] = path_b(x);
    else
        out[i] = path_a(x);
}

void process(const float *d_in, float *d_out, int n)
{
    process_remapped_kernel<<<cdiv(n, BLOCK), BLOCK>>>(d_in, d_out, n);
    CUDA_CHECK(cudaGetLastError());
}
