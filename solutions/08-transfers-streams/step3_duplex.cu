/* step3_duplex.cu: chapter 08, step 3 of 4, the solution.
 *
 * Two streams of our own, non-blocking (so no legacy-stream work elsewhere in the program can
 * order them), one copy each, both issued before the host waits for either: the copy engine of
 * each direction takes its own, and the link carries both at once. Nothing declares an order
 * between them, because there is none: they touch different buffers.
 * Expect: about 0.6x the time of the two copies one after the other (the H200 moves 55 GB/s
 * each way alone and 92.7 GB/s both ways together, not 110: the two directions share the host's
 * memory and the link's protocol overhead). */
#include "transfers.h"

cudaError_t exchange(void *d_up, const void *h_up, size_t up_bytes, void *h_down,
                     const void *d_down, size_t down_bytes)
{
    if ((up_bytes == 0 && down_bytes == 0) || (up_bytes && (!d_up || !h_up)) ||
        (down_bytes && (!h_down || !d_down)))
        return cudaErrorInvalidValue;
    cudaStream_t up = NULL, down = NULL;
    cudaError_t err = cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking);
    if (err == cudaSuccess)
        err = cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking);
    if (err == cudaSuccess && up_bytes)
        err = cudaMemcpyAsync(d_up, h_up, up_bytes, cudaMemcpyHostToDevice, up);
    if (err == cudaSuccess && down_bytes)
        err = cudaMemcpyAsync(h_down, d_down, down_bytes, cudaMemcpyDeviceToHost, down);
    /* both issued: now wait, for each (on a failure too: nothing of ours may run on) */
    cudaError_t e;
    if (up && (e = cudaStreamSynchronize(up)) != cudaSuccess && err == cudaSuccess)
        err = e;
    if (down && (e = cudaStreamSynchronize(down)) != cudaSuccess && err == cudaSuccess)
        err = e;
    if (up)
        cudaStreamDestroy(up);
    if (down)
        cudaStreamDestroy(down);
    if (err != cudaSuccess)
        (void)cudaGetLastError(); /* returned here: do not let it surface again */
    return err;
}
