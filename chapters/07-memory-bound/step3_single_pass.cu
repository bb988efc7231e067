/* step3_single_pass.cu: chapter 07, step 3 of 5, the sum in one launch.
 * Your file.
 *
 * The contract (membound.h): sum_single_pass(d_in, n, d_out, d_scratch) writes d_in[0] + ...
 * + d_in[n - 1] to *d_out, in fp32 and in any order, for any n from 1 to 2^30 (a multiple of
 * nothing); a NaN anywhere gives NaN. d_scratch is membound_scratch_bytes(1) bytes of device
 * memory that hold garbage on entry. The launcher below is given: it zeroes a counter in the
 * scratch (cudaMemsetAsync, not a kernel), then makes the one launch: a grid of at most
 * BLOCKS_PER_SM blocks an SM, whatever n (fewer for a small n), of BLOCK threads, which
 * between them read every element of in[0, n) once, as in step 2. `partials` has room for a
 * float a block; `counter` is 0 when the kernel starts, and the kernel leaves it at 0. Step
 * 2's second launch is gone: the sum of the blocks' sums reaches *out from within this one.
 * d_in need not be 16-byte aligned.
 *
 * What the grader measures (make grade CH=07 STEP=3):
 *   correct  n = 1, 31, 1000, 1000003, 2^24 + 7 (2^20 + 7 on the CPU backend) and, on a GPU,
 *            2^28 + 7; inputs uniform in [-1, 1), of magnitude 1e4, with a NaN (NaN out),
 *            and of +1 and -1 at 1000003 and 2^28 + 7, whose sum must come out exact; *d_out
 *            poisoned with NaN and the scratch filled with 0xff bytes; the error otherwise
 *            within a bound set by fp32's unit roundoff and n (the lesson derives it)
 *   concept  exactly one kernel launch a sum (counted on the CPU backend; on a GPU, from the
 *            launches the grader records)
 *   speed    on a GPU, at least 1.05x step 2's reference at n = 2^20, where launches take
 *            most of the time, and at least 0.95x CUB's cub::DeviceReduce::Sum at 2^28 + 7,
 *            each timed in the same run
 *   spills   on a GPU, no register spills (LDL, STL) in the functions whose names hold
 *            "sum_single_pass" (keep it in your kernels' names)
 *
 * The lesson is README.md beside this file; its hints for step 3 are there too. */
#include "cuda_check.h"
#include "sm_count.h"
#include "membound.h"

#define BLOCK 256         /* a multiple of 32: warps are whole */
#define BLOCKS_PER_SM 4
#define UNROLL 4          /* float4 loads in flight a thread, which the grid is sized for */

static __global__ void sum_single_pass_kernel(const float *__restrict__ in, int n,
                                              float *partials, unsigned *counter,
                                              float *__restrict__ out)
{
    /* TODO: the blocks of the grid read every element of in[0, n) once between them, as in
     * step 2; *out = the sum of all of it, written from within this launch once every
     * block's share is summed; *counter back to 0 at the end. */
    (void)in; (void)n; (void)partials; (void)counter; (void)out;
}

/* Blocks for n elements: at most BLOCKS_PER_SM an SM, fewer when n does not give every
 * thread one round of UNROLL float4s. */
static int grid_size(int n)
{
    int want = cdiv(n, BLOCK * UNROLL * 4);
    int most = BLOCKS_PER_SM * sm_count();
    return want < most ? want : most;
}

void sum_single_pass(const float *d_in, int n, float *d_out, void *d_scratch)
{
    /* the scratch: the counter, then (a cache line further on) one partial a block */
    unsigned *counter = static_cast<unsigned *>(d_scratch);
    float *partials = reinterpret_cast<float *>(static_cast<char *>(d_scratch) + 128);
    CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof *counter)); /* garbage on entry */
    sum_single_pass_kernel<<<grid_size(n), BLOCK>>>(d_in, n, partials, counter, d_out);
    CUDA_CHECK(cudaGetLastError());
}
