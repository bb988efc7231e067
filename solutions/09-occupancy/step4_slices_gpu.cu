/* step4_slices_gpu.cu: chapter 09, step 4 of 4, smaller GPUs inside the GPU. The reference.
 *
 * A green context is a context that owns a set of the device's SMs: work launched in it (on a
 * stream of it, or on its default stream while it is current) is scheduled on those SMs and no
 * others. It shares the primary context's memory and modules, so a buffer allocated with
 * cudaMalloc and a kernel of this program run in it as they are. Four driver calls make one:
 *   cuDeviceGetDevResource    the device's SMs, as a resource (its smCount, and the partition
 *                             rules: minSmPartitionSize, smCoscheduledAlignment)
 *   cuDevSmResourceSplitByCount  that resource cut into groups of at least min_count SMs, each
 *                             rounded up to the rules (on 9.0: multiples of 8, as an H200's SMs
 *                             come in GPCs whose SMs are co-scheduled in 8s, and the thread
 *                             block clusters of 9.0 need their SMs together), the rest apart
 *   cuDevResourceGenerateDesc the group as a descriptor
 *   cuGreenCtxCreate          the green context; then cuGreenCtxStreamCreate, a stream of it
 *                             (non-blocking: the only kind a green context has)
 * The whole device is one resource already: a slice of all its SMs skips the split.
 * Expect: a kernel on the stream sees at most `sms` distinct %smid values; a copy on 8 SMs runs
 * at a small fraction of the device's bandwidth. */
#include <string.h>

#include "cuda_check.h"
#include "green.h"
#include "occupancy.h"

int slice_open(int sms, struct sm_slice *s)
{
    memset(s, 0, sizeof *s);
    const struct green_driver *cu = green_driver();
    if (!cu)
        return -1;
    int ordinal;
    CUDA_CHECK(cudaGetDevice(&ordinal));
    CUDA_CHECK(cudaFree(0)); /* the primary context live first: the green context retains it */
    CUdevice dev;
    CU_CHECK(cu->DeviceGet(&dev, ordinal));
    CUdevResource all;
    memset(&all, 0, sizeof all);
    CU_CHECK(cu->DeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
    if (sms < 1 || (unsigned)sms > all.sm.smCount)
        return -1;
    CUdevResource part, rest;
    memset(&part, 0, sizeof part);
    memset(&rest, 0, sizeof rest);
    if ((unsigned)sms == all.sm.smCount) {
        part = all; /* every SM: no split */
    } else {
        unsigned groups = 1; /* one group of at least sms SMs; the rest of the device apart */
        CU_CHECK(cu->DevSmResourceSplitByCount(&part, &groups, &all, &rest, 0, (unsigned)sms));
        if (groups != 1 || part.sm.smCount < (unsigned)sms)
            return -1;
    }
    CUdevResourceDesc desc;
    CU_CHECK(cu->DevResourceGenerateDesc(&desc, &part, 1));
    CUgreenCtx green;
    CU_CHECK(cu->GreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    CUstream stream;
    CU_CHECK(cu->GreenCtxStreamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0));
    s->sms = (int)part.sm.smCount;
    s->green = green;
    s->stream = stream;
    return 0;
}

void slice_close(struct sm_slice *s)
{
    const struct green_driver *cu = green_driver();
    if (cu && s->stream)
        CU_CHECK(cu->StreamDestroy(s->stream));
    if (cu && s->green)
        CU_CHECK(cu->GreenCtxDestroy(s->green));
    memset(s, 0, sizeof *s);
}
