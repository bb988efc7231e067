/* step4_data_parallel.cu: chapter 12, step 4 of 4, a data-parallel step.
 * Your file.
 *
 * The contract (collective.h): dp_backward(s, a, g, grad) makes every layer's weight gradient on
 * every device, from the last layer to the first (grad_gemm, into bucket l % DP_BUCKETS), and
 * sums each over the devices into grad[l] (grad_allreduce). As given it is correct and serial:
 * the host waits for every device's GEMM before the all-reduce, and for the all-reduce before
 * the next layer's GEMM, and the all-reduce runs on the compute streams. The devices' copy
 * engines and links sit idle while the GEMMs run, and the SMs while the bytes move.
 *
 * TODO: issue every layer's work without the host waiting, and say what must come before what
 * with events (s->ev[d]: DP_EVENTS a layer on device d, made on it):
 *   - after layer l's GEMM on device d, record an event on s->compute[d];
 *   - before layer l's all-reduce, make every device's s->comm stream wait for every device's
 *     GEMM event of layer l (device d's all-reduce reads every device's bucket), then
 *     grad_allreduce on s->comm, and record an event on each s->comm[d] after it;
 *   - before the GEMM of layer l that reuses a bucket (the one of layer l + DP_BUCKETS), make
 *     s->compute[d] wait for that layer's all-reduce event on every device.
 * Nothing else: the GEMM of layer l - 1 must not wait for the all-reduce of layer l. Then wait
 * for every stream, and put the current device back.
 *
 * What the grader checks (make grade CH=12 STEP=4):
 *   correct  on the CPU backend 1 to 4 devices, 1 to 7 layers, shapes that no tile divides,
 *            integer-valued data whose sums are exact in any order: every device's every grad
 *            the exact sum, three times, the second and third in shuffled orders that keep only
 *            the dependencies you declared; nothing held; NULL arguments refused
 *   concept  on the CPU backend, from the schedule: the GEMMs on the compute streams, the
 *            all-reduces on the comm streams, each all-reduce after its layer's GEMM on every
 *            device, each bucket's reuse after the all-reduce that read it on every device, the
 *            next layer's GEMM free of this layer's all-reduce, and no host wait until every
 *            layer's work is issued
 *   speed    on a GPU with two devices or more: the whole step at most 1.15x the longer of its
 *            GEMMs alone and its all-reduces alone
 *
 * The lesson is README.md beside this file; its hints for step 4 are there too. */
#include "collective.h"

cudaError_t dp_backward(struct dp *s, const float *a[][MGPU_MAX], const float *g[][MGPU_MAX],
                        float *grad[][MGPU_MAX])
{
    if (!s || !a || !g || !grad)
        return cudaErrorInvalidValue;
    int was = 0;
    cudaError_t err = cudaGetDevice(&was);
    if (err != cudaSuccess)
        return err;
    for (int l = s->layers - 1; l >= 0 && err == cudaSuccess; l--) {
        for (int d = 0; d < s->ndev && err == cudaSuccess; d++)
            err = grad_gemm(s, d, l % DP_BUCKETS, a[l][d], g[l][d], s->compute[d]);
        for (int d = 0; d < s->ndev && err == cudaSuccess; d++)
            err = cudaStreamSynchronize(s->compute[d]); /* every bucket made */
        if (err == cudaSuccess)
            err = grad_allreduce(s, l % DP_BUCKETS, grad[l], s->compute);
        for (int d = 0; d < s->ndev && err == cudaSuccess; d++)
            err = cudaStreamSynchronize(s->compute[d]); /* every sum made, the bucket free */
    }
    cudaError_t e = cudaSetDevice(was);
    if (err == cudaSuccess)
        err = e;
    if (err != cudaSuccess)
        (void)cudaGetLastError();
    return err;
}
