/* sm_count.h: the current device's streaming multiprocessors, for launchers that size a grid
 * to the GPU (a few blocks an SM, or as many as are resident at once), and the resident grid
 * itself. For kernel files and host code alike.
 *
 * The count is asked of the runtime once a device and kept: a launcher calls sm_count() at
 * every launch, and a timed loop of launches should time the kernels, not the query. The
 * device is asked for at every call (cudaGetDevice, a read of the thread's state), so a
 * process that moves between GPUs gets each one's own count. */
#ifndef SM_COUNT_H
#define SM_COUNT_H

#include "cuda_check.h"

#define SM_COUNT_KEPT 64 /* devices whose counts are kept; past them, asked at every call */

static inline int sm_count(void)
{
    static int kept[SM_COUNT_KEPT]; /* 0: not asked yet */
    int device, sms;
    CUDA_CHECK(cudaGetDevice(&device));
    const int keep = device >= 0 && device < SM_COUNT_KEPT;
    if (keep && kept[device] > 0)
        return kept[device];
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    if (keep)
        kept[device] = sms;
    return sms;
}

#ifdef __cplusplus
/* Blocks of `threads` threads for a grid-stride loop of `items` thread-steps: one step a
 * thread where that is fewer than the device holds at once, else as many as it holds (the
 * occupancy calculator's blocks an SM for this kernel's registers and shared memory, times
 * the SMs), and at least one. A grid that is all resident: no second wave, no block waiting
 * for another to finish. */
template <typename Kernel>
static inline int resident_blocks(Kernel kernel, int threads, long long items)
{
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
    const long long need = (items + threads - 1) / threads;
    const long long most = (long long)(per_sm > 0 ? per_sm : 1) * sm_count();
    return (int)(need < 1 ? 1 : need < most ? need : most);
}
#endif

#endif
