/* step1_links.cu: chapter 12, step 1 of 3, the solution.
 *
 * Peer access is a property of a pair of contexts, one way: device i's context maps device j's
 * memory into its own address space (its page tables gain j's pages, reached over NVLink or
 * PCIe). So the call is made with device i current, once for each peer j, and only where the
 * driver says the pair can (cudaDeviceCanAccessPeer: same kind of link, same PCIe root or an
 * NVLink between them). A pair someone already enabled answers
 * cudaErrorPeerAccessAlreadyEnabled, which is not sticky but stays for cudaGetLastError to
 * find: read it here, so that the caller's next check does not trip on it. */
#include <string.h>

#include "collective.h"

/* disables what l->opened says, from device 0 up; the first error, or cudaSuccess */
static cudaError_t close_opened(struct links *l)
{
    cudaError_t err = cudaSuccess;
    for (int i = 0; i < l->ndev; i++) {
        int any = 0;
        for (int j = 0; j < l->ndev; j++)
            any |= l->opened[i][j];
        if (!any)
            continue;
        cudaError_t e = cudaSetDevice(i);
        for (int j = 0; j < l->ndev && e == cudaSuccess; j++)
            if (l->opened[i][j]) {
                e = cudaDeviceDisablePeerAccess(j);
                l->opened[i][j] = l->peer[i][j] = 0;
            }
        if (e != cudaSuccess && err == cudaSuccess)
            err = e;
    }
    return err;
}

cudaError_t links_open(struct links *l, int ndev)
{
    int count = 0, was = 0;
    if (!l || ndev < 1 || ndev > MGPU_MAX)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaSuccess && ndev > count)
        err = cudaErrorInvalidValue;
    if (err == cudaSuccess)
        err = cudaGetDevice(&was);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return err;
    }
    memset(l, 0, sizeof *l);
    l->ndev = ndev;
    for (int i = 0; i < ndev && err == cudaSuccess; i++) {
        err = cudaSetDevice(i);
        for (int j = 0; j < ndev && err == cudaSuccess; j++) {
            int can = 0;
            if (j == i || (err = cudaDeviceCanAccessPeer(&can, i, j)) != cudaSuccess || !can)
                continue;
            cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
            if (e == cudaSuccess) {
                l->peer[i][j] = l->opened[i][j] = 1;
            } else if (e == cudaErrorPeerAccessAlreadyEnabled) {
                (void)cudaGetLastError(); /* enabled before: open, but not ours to close */
                l->peer[i][j] = 1;
            } else {
                err = e;
            }
        }
    }
    if (err != cudaSuccess) {
        (void)close_opened(l);
        l->ndev = 0;
    }
    cudaError_t e = cudaSetDevice(was);
    if (err == cudaSuccess)
        err = e;
    if (err != cudaSuccess)
        (void)cudaGetLastError(); /* returned here: do not let it surface again */
    return err;
}

cudaError_t links_close(struct links *l)
{
    int was = 0;
    if (!l || l->ndev < 0 || l->ndev > MGPU_MAX)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaGetDevice(&was);
    if (err == cudaSuccess)
        err = close_opened(l);
    memset(l, 0, sizeof *l);
    cudaError_t e = cudaSetDevice(was);
    if (err == cudaSuccess)
        err = e;
    if (err != cudaSuccess)
        (void)cudaGetLastError();
    return err;
}
