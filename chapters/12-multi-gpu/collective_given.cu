/* collective_given.cu: chapter 12's given code: the all-reduce through the host.
 * Given: you do not need to change it.
 *
 * Every buffer comes to the host, the host adds them, and the sum goes back to every device:
 * 2 x ndev x count x 4 bytes over the host's links, one after the other, and an add on one
 * CPU core. It is the baseline the rings of steps 2 and 3 are measured against, and what
 * their starters call. */
#include <stdlib.h>

#include "collective.h"

cudaError_t allreduce_host(float *const buf[], int ndev, size_t count)
{
    if (!buf || ndev < 1 || ndev > MGPU_MAX || count == 0)
        return cudaErrorInvalidValue;
    for (int d = 0; d < ndev; d++)
        if (!buf[d])
            return cudaErrorInvalidValue;
    int was = 0;
    cudaError_t err = cudaGetDevice(&was);
    if (err != cudaSuccess)
        return err;
    float *sum = (float *)malloc(count * sizeof *sum);
    float *part = (float *)malloc(count * sizeof *part);
    if (!sum || !part)
        err = cudaErrorMemoryAllocation;
    /* cudaMemcpy with a device pointer works from any current device (unified addressing); the
     * device is set anyway, as the copy is that device's work */
    for (int d = 0; d < ndev && err == cudaSuccess; d++) {
        err = cudaSetDevice(d);
        if (err == cudaSuccess)
            err = cudaMemcpy(d == 0 ? sum : part, buf[d], count * sizeof *sum,
                             cudaMemcpyDeviceToHost);
        if (err == cudaSuccess && d > 0)
            for (size_t i = 0; i < count; i++)
                sum[i] += part[i];
    }
    for (int d = 0; d < ndev && err == cudaSuccess; d++) {
        err = cudaSetDevice(d);
        if (err == cudaSuccess)
            err = cudaMemcpy(buf[d], sum, count * sizeof *sum, cudaMemcpyHostToDevice);
    }
    free(sum);
    free(part);
    cudaError_t e = cudaSetDevice(was);
    if (err == cudaSuccess)
        err = e;
    if (err != cudaSuccess)
        (void)cudaGetLastError(); /* returned here: do not let it surface again */
    return err;
}
