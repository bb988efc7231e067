/* step1_tree.cu: chapter 07, step 1 of 5, the sum as a tree in shared memory.
 * Your file.
 *
 * The contract (membound.h): sum_tree(d_in, n, d_out, d_scratch) writes d_in[0] + ... +
 * d_in[n - 1] to *d_out, in fp32 and in any order, for any n from 1 to 2^30; a NaN anywhere
 * gives NaN. d_scratch is membound_scratch_bytes(1) bytes of device memory that hold garbage
 * on entry. The launcher below is given: it starts cdiv(n, PER_BLOCK) blocks of BLOCK
 * threads, each of which writes the sum of its PER_BLOCK elements (those below n) to
 * out[blockIdx.x], a partial in the scratch; then the same kernel again over those partials,
 * and again, until one block covers what is left and writes its sum to *d_out. sum_atomic (sum_atomic.cu, given)
 * is correct and makes one global atomic per element, all on one address; yours makes none.
 *
 * What the grader measures (make grade CH=07 STEP=1):
 *   correct  n = 1, 31, 1000, 1000003, 2^24 + 7 (2^20 + 7 on the CPU backend) and, on a GPU,
 *            2^28 + 7; inputs uniform in [-1, 1), of magnitude 1e4, with a NaN (NaN out),
 *            and of +1 and -1 at 1000003 and 2^28 + 7, whose sum must come out exact; *d_out
 *            poisoned with NaN and the scratch filled with 0xff bytes; the error otherwise
 *            within a bound set by fp32's unit roundoff and n (the lesson derives it)
 *   concept  on the CPU backend, the tree's shared-memory requests: at most 1.5 wavefronts a
 *            request (1.0 is conflict-free; a 2-way bank conflict on every request is 2.0)
 *   speed    on a GPU, at least 100x sum_atomic at n = 2^24, timed in the same run, with
 *            CUB's cub::DeviceReduce::Sum beside it for scale
 *   spills   on a GPU, no register spills (LDL, STL) in the functions whose names hold
 *            "sum_tree" (keep it in your kernels' names)
 *
 * The lesson is README.md beside this file; its hints for step 1 are there too. */
#include "cuda_check.h"
#include "membound.h"

#define BLOCK 256              /* threads a block */
#define PER_BLOCK (2 * BLOCK)  /* elements a block */

static __global__ void sum_tree_kernel(const float *__restrict__ in, int n,
                                       float *__restrict__ out)
{
    /* TODO: out[blockIdx.x] = the sum of in[blockIdx.x * PER_BLOCK, (blockIdx.x + 1) *
     * PER_BLOCK), the elements of it that are below n, by a tree in shared memory without
     * bank conflicts. */
    (void)in; (void)n; (void)out;
}

void sum_tree(const float *d_in, int n, float *d_out, void *d_scratch)
{
    /* Each pass writes its partials just past the ones it reads, never over them. At
     * n = 2^30 the passes keep 2^21 + 4096 + 8 floats, under membound_scratch_bytes(1). */
    float *partials = static_cast<float *>(d_scratch);
    const float *src = d_in;
    int count = n;
    while (count > PER_BLOCK) {
        int blocks = cdiv(count, PER_BLOCK);
        sum_tree_kernel<<<blocks, BLOCK>>>(src, count, partials);
        CUDA_CHECK(cudaGetLastError());
        src = partials;
        partials += blocks;
        count = blocks;
    }
    /* one block covers what is left: its partial is the sum */
    sum_tree_kernel<<<1, BLOCK>>>(src, count, d_out);
    CUDA_CHECK(cudaGetLastError());
}
