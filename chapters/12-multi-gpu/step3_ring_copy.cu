/* step3_ring_copy.cu: chapter 12, step 3 of 3, the ring on the copy engines.
 * Your file.
 *
 * The contract (collective.h): ring_copy_allreduce(r, buf) makes the same all-reduce as step 2,
 * over the same ring, segments and chunks, with every byte between devices moved by
 * cudaMemcpyPeerAsync and no kernel that touches another device's memory, so that it runs with
 * or without peer access. As given, it goes through the host (allreduce_host).
 *
 * TODO: in ring_copy_create, on each device (current while you make its things) two streams,
 * r->copy[d] and r->add[d], RING_SLOTS receive slots of a chunk each (r->recv[d]), and the
 * events: r->ready[d] as in step 2, r->landed[d][k] and r->drained[d][k] for each slot k. In
 * ring_copy_allreduce, for each step, chunk and device d, in that order, on device d:
 *   reduce-scatter: on the copy stream, wait for the neighbour's chunk of the step before and
 *     for the add that last read slot k; copy the neighbour's chunk into slot k; record landed.
 *     On the add stream, wait for landed; add slot k into your chunk (at most RING_MAX_BLOCKS
 *     blocks); record drained, and ready for this step's chunk. Slots alternate, 0, 1, 0, ...
 *   all-gather: on the copy stream, wait for the neighbour's chunk of the step before; copy it
 *     straight into your chunk; record ready.
 * Then wait for both streams of every device, and put the current device back.
 *
 * What the grader checks (make grade CH=12 STEP=3):
 *   correct  on the CPU backend as step 2, 1 to 4 devices, and on 3 devices with no peer link
 *            at all: every device's buffer the exact sum, three times (shuffled streams twice);
 *            nothing held after ring_copy_destroy; bad arguments refused
 *   concept  on the CPU backend, from the schedule, no peer access enabled (a kernel given
 *            another device's memory faults): peer copies only, on a stream apart from the adds,
 *            each add after a wait for its copy, each slot refilled after a wait for its add,
 *            each copy after the neighbour's step, no kernel over RING_MAX_BLOCKS blocks
 *   speed    on a GPU with two devices or more, against allreduce_host in the same run
 *
 * The lesson is README.md beside this file; its hints for step 3 are there too. */
#include <string.h>

#include "collective.h"

cudaError_t ring_copy_create(struct ring_copy *r, int ndev, size_t count, size_t chunk)
{
    if (!r || ndev < 1 || ndev > MGPU_MAX || count == 0 || chunk == 0)
        return cudaErrorInvalidValue;
    memset(r, 0, sizeof *r);
    r->ndev = ndev;
    r->count = count;
    r->chunk = chunk;
    return cudaSuccess;
}

cudaError_t ring_copy_allreduce(struct ring_copy *r, float *const buf[])
{
    if (!r || !buf)
        return cudaErrorInvalidValue;
    return allreduce_host(buf, r->ndev, r->count);
}

cudaError_t ring_copy_destroy(struct ring_copy *r)
{
    if (!r)
        return cudaErrorInvalidValue;
    memset(r, 0, sizeof *r);
    return cudaSuccess;
}
