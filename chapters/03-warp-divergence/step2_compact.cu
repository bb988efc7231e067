/* step2_compact.cu: chapter 03, step 2 of 2, stream compaction with warp-aggregated atomics.
 * Your file.
 *
 * The contract (divergence.h): compact(d_in, n, d_out, d_count) copies every element x of
 * d_in[0, n) with compact_keep(x) (x > 0; NaN and zeros are never kept) to d_out[0 .. count),
 * each exactly once and in any order, writes count to *d_count, and writes nothing at
 * d_out[count] or past it. The launcher below is given: it sets the count to 0, then starts
 * cdiv(n, BLOCK) blocks of BLOCK threads (BLOCK a multiple of 32, so warps never straddle two
 * blocks). compact_atomic (compact_atomic.cu, given) is correct and makes one global atomic
 * per kept element, all on one address; yours makes at most one per warp.
 *
 * What the grader measures (make grade CH=03 STEP=2):
 *   correct  n = 1, 31, 32, 33, 97, 1000, 4099 and a large n (4194319 on a GPU, 100003 on the
 *            CPU backend), each at one or more keep densities (none kept, all kept, half,
 *            one in 64), twice each on fresh inputs: the kept elements as a multiset (both
 *            sorted, compared exactly) and the count against the host's; d_out poisoned
 *            with NaN and guarded, the count poisoned
 *   concept  on the CPU backend, global atomic operations per 32 elements over compact at an
 *            odd n drawn from the run's seed, half kept: at most 1.5 (one per warp is 1.0;
 *            compact_atomic ~16)
 *   speed    on a GPU, at least 11x compact_atomic at n = 2^24 + 1, half kept, measured in the
 *            same run, with cub::DeviceSelect::If beside it for scale
 *
 * The lesson is README.md beside this file; its hints for step 2 are there too. */
#include "cuda_check.h"
#include "divergence.h"

#define BLOCK 256

static __global__ void compact_kernel(const float *__restrict__ in, int n,
                                      float *__restrict__ out, int *__restrict__ count)
{
    /* TODO: every kept element of in[0, n) into out[0 .. *count), at most one global atomic
     * per warp. */
    (void)in; (void)n; (void)out; (void)count;
}

void compact(const float *d_in, int n, float *d_out, int *d_count)
{
    CUDA_CHECK(cudaMemsetAsync(d_count, 0, sizeof *d_count));
    compact_kernel<<<cdiv(n, BLOCK), BLOCK>>>(d_in, n, d_out, d_count);
    CUDA_CHECK(cudaGetLastError());
}
