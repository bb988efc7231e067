/* step1_links.cu: chapter 12, step 1 of 3, the links between the GPUs.
 * Your file.
 *
 * The contract (collective.h): links_open(l, ndev) enables peer access for every ordered pair
 * of devices 0 .. ndev - 1 that the machine allows, and says in l->peer which device reaches
 * which, and in l->opened which accesses it enabled itself; links_close(l) disables exactly
 * those. As given, links_open opens nothing, and every ring built on it would have to go
 * through the host.
 *
 * TODO: for each device i (current while you work on its behalf: cudaSetDevice) and each other
 * device j, ask cudaDeviceCanAccessPeer whether i can reach j, and where it can,
 * cudaDeviceEnablePeerAccess(j, 0). An access enabled before (by the caller, or an earlier
 * links_open) answers cudaErrorPeerAccessAlreadyEnabled: it is open, but not yours to close,
 * and the error stays for cudaGetLastError to find unless you read it. Restore the caller's
 * current device before you return, on every path; on a failure disable what you enabled.
 *
 * What the grader checks (make grade CH=12 STEP=1):
 *   correct  on the CPU backend, machines of 1 to 4 devices with every link, none, and some
 *            (pairs 0-1 and 2-3 of 4): l->peer and l->opened as the machine and the caller's
 *            earlier enabling say, the accesses really enabled (and, after links_close, really
 *            disabled, except the caller's own), the current device kept, no error left
 *            behind; bad arguments refused with cudaErrorInvalidValue
 *   links    on a GPU with two devices or more, the same on the machine's own links
 *
 * The lesson is README.md beside this file; its hints for step 1 are there too. */
#include <string.h>

#include "collective.h"

cudaError_t links_open(struct links *l, int ndev)
{
    int count = 0;
    if (!l || ndev < 1 || ndev > MGPU_MAX)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess)
        return err;
    if (ndev > count)
        return cudaErrorInvalidValue;
    memset(l, 0, sizeof *l);
    l->ndev = ndev;
    return cudaSuccess;
}

cudaError_t links_close(struct links *l)
{
    if (!l || l->ndev < 0 || l->ndev > MGPU_MAX)
        return cudaErrorInvalidValue;
    memset(l, 0, sizeof *l);
    return cudaSuccess;
}
