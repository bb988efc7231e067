/* step4_slices_gpu.cu: chapter 09, step 4 of 4, smaller GPUs inside the GPU. Your file.
 *
 * The contract (occupancy.h):
 *   slice_open(sms, s)   carve a slice of the current device: a green context that holds at
 *                        least `sms` of its SMs (as few more as the partition rules allow; all
 *                        of them when sms is the device's count), and a stream of it; fill *s
 *                        (the SMs granted, the green context, the stream) and return 0; -1 when
 *                        sms is below 1 or over the device's SMs
 *   slice_close(s)       given, below
 * The driver's calls are in the table of green.h (given): cu->DeviceGetDevResource is
 * cuDeviceGetDevResource, and so on; CU_CHECK checks each.
 *
 * What the grader checks (make grade CH=09 STEP=4), on a GPU only (the CPU backend has no SMs to
 * partition; there the step says SKIP):
 *   SMs        for slices of 8, 16, 32 and 64 SMs: the count granted is at least the one asked
 *              and under it plus 8, and a kernel of many blocks on the slice's stream runs on
 *              no more distinct SMs (%smid) than that, and on at least half of them
 *   bandwidth  a copy bound by memory bandwidth on the stream of a slice of 8 SMs takes at
 *              least 2x the time it takes on a slice of all of them
 *
 * The lesson is README.md beside this file; its hints for step 4 are there too. */
#include <string.h>

#include "cuda_check.h"
#include "green.h"
#include "occupancy.h"

int slice_open(int sms, struct sm_slice *s)
{
    memset(s, 0, sizeof *s);
    /* TODO: the device's SMs as a resource; a group of at least sms of them split off it (or
     * the whole resource, for all of them); a descriptor of the group; a green context of it;
     * a stream of that green context. Fill *s with what you were granted. */
    (void)sms;
    return -1;
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
