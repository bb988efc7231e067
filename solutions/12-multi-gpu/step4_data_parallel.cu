/* step4_data_parallel.cu: chapter 12, step 4 of 4, a data-parallel step. The reference.
 *
 * Every layer's work is issued at once, from the last layer to the first, and the host waits
 * only at the end. Two events a device a layer carry what the data needs:
 *   done[l][d]     recorded on compute[d] after layer l's GEMM: its bucket is made on device d;
 *   reduced[l][d]  recorded on comm[d] after layer l's all-reduce: device d has read every
 *                  device's bucket of layer l.
 * Layer l's all-reduce waits, on every comm stream, for done[l][e] of every device e; the GEMM
 * that next writes layer l's bucket (layer l - DP_BUCKETS) waits, on every compute stream, for
 * reduced[l][e] of every device e. Nothing orders layer l - 1's GEMM after layer l's all-reduce,
 * so the comm streams sum layer l while the compute streams make layer l - 1: with two buckets
 * a device can be a whole layer ahead of the slowest all-reduce, and no further.
 *
 * A cross-device wait (a stream of device d waiting for an event of device e) is what
 * cudaStreamWaitEvent is for: the event names its device, and the wait is kept on the GPU, with
 * no host thread involved. */
#include "collective.h"

/* the events of layer l on device d: its GEMM done, its all-reduce done */
static cudaEvent_t done_of(const struct dp *s, int d, int l) { return s->ev[d][DP_EVENTS * l]; }
static cudaEvent_t reduced_of(const struct dp *s, int d, int l)
{
    return s->ev[d][DP_EVENTS * l + 1];
}

cudaError_t dp_backward(struct dp *s, const float *a[][MGPU_MAX], const float *g[][MGPU_MAX],
                        float *grad[][MGPU_MAX])
{
    if (!s || !a || !g || !grad)
        return cudaErrorInvalidValue;
    int was = 0;
    cudaError_t err = cudaGetDevice(&was);
    if (err != cudaSuccess)
        return err;
    const int n = s->ndev;
    for (int l = s->layers - 1; l >= 0 && err == cudaSuccess; l--) {
        const int b = l % DP_BUCKETS;
        for (int d = 0; d < n && err == cudaSuccess; d++) {
            if ((err = cudaSetDevice(d)) != cudaSuccess)
                break;
            /* the bucket's last readers: the all-reduce of layer l + DP_BUCKETS, everywhere */
            for (int e = 0; e < n && err == cudaSuccess && l + DP_BUCKETS < s->layers; e++)
                err = cudaStreamWaitEvent(s->compute[d], reduced_of(s, e, l + DP_BUCKETS), 0);
            if (err == cudaSuccess)
                err = grad_gemm(s, d, b, a[l][d], g[l][d], s->compute[d]);
            if (err == cudaSuccess)
                err = cudaEventRecord(done_of(s, d, l), s->compute[d]);
        }
        /* every device's all-reduce reads every device's bucket */
        for (int d = 0; d < n && err == cudaSuccess; d++) {
            if ((err = cudaSetDevice(d)) != cudaSuccess)
                break;
            for (int e = 0; e < n && err == cudaSuccess; e++)
                err = cudaStreamWaitEvent(s->comm[d], done_of(s, e, l), 0);
        }
        if (err == cudaSuccess)
            err = grad_allreduce(s, b, grad[l], s->comm);
        for (int d = 0; d < n && err == cudaSuccess; d++)
            if ((err = cudaSetDevice(d)) == cudaSuccess)
                err = cudaEventRecord(reduced_of(s, d, l), s->comm[d]);
    }
    /* the host waits once, at the end (and after a failure, for what was issued) */
    for (int d = 0; d < n; d++) {
        cudaError_t e = cudaSetDevice(d);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(s->compute[d]);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(s->comm[d]);
        if (err == cudaSuccess)
            err = e;
    }
    cudaError_t e = cudaSetDevice(was);
    if (err == cudaSuccess)
        err = e;
    if (err != cudaSuccess)
        (void)cudaGetLastError();
    return err;
}
