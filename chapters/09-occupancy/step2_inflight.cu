/* step2_inflight.cu: chapter 09, step 2 of 4, Little's law. Your file.
 *
 * The contract (occupancy.h):
 *   stream_sum(d_in, n, d_sum, c)  *d_sum = the sum of d_in[0..n-1], by a grid of
 *                                  c->blocks_per_sm blocks for each of the device's SMs, of
 *                                  c->threads threads, each thread keeping c->loads loads of
 *                                  c->vec floats (float, float2 or float4) in flight together;
 *                                  *d_sum is NaN before the call: set it yourself
 *   knee_bytes_per_sm(gbs, ns, sms) Little's law: the bytes in flight an SM needs to stream at
 *                                  gbs GB/s when a load takes ns nanoseconds, on sms SMs
 *
 * What the grader checks (make grade CH=09 STEP=2), on a GPU only: it is a measurement, and the
 * CPU backend has no memory latency (there the step says SKIP):
 *   correct    the exact sum (the inputs are small integers) for odd n and every loads and vec,
 *              and the grid: blocks_per_sm x SMs blocks of `threads` threads
 *   in flight  at one block of 64 threads an SM, 4 float4 loads a thread stream at least 2x
 *              the bandwidth of 1, and at one block of 256, 1 float4 at least 2x that of 1
 *              float: the loads of a batch must really be in flight together
 *   knee       the grader measures a load's latency (latency.cu) and the bandwidth over 1 to
 *              128 KB in flight an SM, finds the knee (where the curve first reaches 80% of its
 *              top), and your knee_bytes_per_sm, given the top and the latency, must be within
 *              2x of it
 *
 * The lesson is README.md beside this file; its hints for step 2 are there too. */
#include "cuda_check.h"
#include "occupancy.h"

void stream_sum(const float *d_in, size_t n, double *d_sum, const struct inflight *c)
{
    /* TODO: zero *d_sum (on the default stream), then launch c->blocks_per_sm x SMs blocks of
     * c->threads threads whose every thread issues c->loads loads of c->vec floats before it
     * uses any of them; sum, and add each warp's sum to *d_sum. */
    (void)d_in;
    (void)n;
    (void)d_sum;
    (void)c;
}

double knee_bytes_per_sm(double gbs, double latency_ns, int sms)
{
    /* TODO: Little's law, per SM. */
    (void)gbs;
    (void)latency_ns;
    (void)sms;
    return -1.0;
}
