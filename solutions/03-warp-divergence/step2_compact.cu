/* step2_compact.cu: chapter 03, step 2 of 2, the reference.
 *
 * Baseline (compact_atomic.cu, given): each kept element takes its slot with its own
 *   atomicAdd on the counter: one global atomic per kept element, all on one address, which
 *   the L2 serves one after the other.
 * Warp-aggregated (here): the warp votes first. __ballot_sync gives every lane the same
 *   32-bit mask of the lanes that keep their element; one lane, the lowest kept, reserves
 *   __popc(mask) slots with a single atomicAdd and hands the old count to the others with
 *   __shfl_sync; each kept lane writes at that base plus the number of kept lanes below it,
 *   __popc(mask & lanes_below). One atomic per warp that keeps anything, at most 32x fewer.
 * Expect: at half kept, 16x fewer atomics than the baseline (each warp keeps 16 elements on
 *   average and makes one atomic for them), and a time set by those atomics until the loads
 *   and stores take over. The order within a warp follows the lanes; across warps it is the
 *   order in which their atomics landed. */
#include "cuda_check.h"
#include "divergence.h"

#define BLOCK 256 /* a multiple of 32: a warp never straddles two blocks */
#define FULL_MASK 0xffffffffu

static __global__ void compact_warp_kernel(const float *__restrict__ in, int n,
                                           float *__restrict__ out, int *__restrict__ count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned lane = threadIdx.x % 32;
    /* No lane leaves before the vote: lanes past n vote "not kept", so the full mask names 32
     * lanes that all reach the ballot. */
    float x = i < n ? in[i] : 0.0f;
    int keep = i < n && compact_keep(x);
    unsigned kept = __ballot_sync(FULL_MASK, keep); /* the same value in every lane */
    if (!keep)
        return; /* from here on, exactly the lanes of `kept` run */
    unsigned leader = __ffs(kept) - 1;          /* the lowest kept lane */
    int base = 0;
    if (lane == leader)
        base = atomicAdd(count, __popc(kept));  /* the warp's one atomic: popc(kept) slots */
    base = __shfl_sync(kept, base, leader);     /* every kept lane gets the leader's base */
    /* the kept lanes below this one: the bits of kept under bit `lane` */
    out[base + __popc(kept & ((1u << lane) - 1))] = x;
}

void compact(const float *d_in, int n, float *d_out, int *d_count)
{
    /* the count starts at 0 on every launch: a repeated launch gives the same count */
    CUDA_CHECK(cudaMemsetAsync(d_count, 0, sizeof *d_count));
    compact_warp_kernel<<<cdiv(n, BLOCK), BLOCK>>>(d_in, n, d_out, d_count);
    CUDA_CHECK(cudaGetLastError());
}
