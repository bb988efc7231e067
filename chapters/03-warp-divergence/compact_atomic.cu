/* compact_atomic.cu: chapter 03, the baseline of step 2. Given, and shared with the solution.
 *
 * Thread i reads element i; if compact_keep keeps it, the thread takes the next free slot of
 * d_out with atomicAdd(count, 1), which returns the count before the add, and writes the
 * element there. Correct in any order, and one global atomic per kept element, every one on
 * the same address: the L2 serialises atomics on one address, so at half kept the kernel
 * waits on n / 2 of them in a row while the loads and stores it needs would take a few
 * microseconds.
 *
 * One thing stands between the source and that measurement: nvcc knows this pattern. On an
 * address it can prove is the same for every lane, atomicAdd(count, 1) is compiled into a
 * warp-aggregated atomic by itself (VOTEU.ANY, FLO, POPC, one ATOMG per warp, SHFL.IDX: the
 * lesson shows the SASS). This baseline exists to measure one atomic per kept element, so its
 * address is count + (i & zero), where the launcher passes zero = 0: the same address at run
 * time, one the compiler cannot prove uniform, and so one ATOMG for every kept lane. */
#include "cuda_check.h"
#include "divergence.h"

#define BLOCK 256

static __global__ void compact_atomic_kernel(const float *__restrict__ in, int n,
                                             float *__restrict__ out, int *__restrict__ count,
                                             int zero)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = in[i];
    if (compact_keep(x))
        out[atomicAdd(count + (i & zero), 1)] = x; /* one atomic per kept element */
}

void compact_atomic(const float *d_in, int n, float *d_out, int *d_count)
{
    /* the count starts at 0 on every launch: a repeated launch gives the same count */
    CUDA_CHECK(cudaMemsetAsync(d_count, 0, sizeof *d_count));
    compact_atomic_kernel<<<cdiv(n, BLOCK), BLOCK>>>(d_in, n, d_out, d_count, 0);
    CUDA_CHECK(cudaGetLastError());
}
