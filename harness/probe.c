/* probe.c: does a GPU answer? `make grade` runs it to choose the backend when BACKEND=auto.
 *
 * When one does: a header line and one row of tab-separated fields, exit 0:
 *
 *   name         the device's name                         NVIDIA H200
 *   cc           compute capability                        9.0
 *   sms          streaming multiprocessors                 132
 *   driver       the kernel module's version ("" unknown)  580.159.04
 *   cuda_driver  the CUDA version the driver supports      13.0
 *   runtime      the CUDA runtime this program links       13.0
 *   memory_mib   global memory, MiB
 *   l2_kib       L2 cache, KiB
 *
 * Scripts read a field by its name (scripts/probe.sh). When none does: why not, on one line,
 * exit 1. */
#include <stdio.h>

#include "gpu.h"

int main(void)
{
    struct device_info info;
    char why[256];
    if (gpu_probe(&info, why, sizeof why) != 0) {
        printf("%s\n", why);
        return 1;
    }
    printf("name\tcc\tsms\tdriver\tcuda_driver\truntime\tmemory_mib\tl2_kib\n");
    printf("%s\t%d.%d\t%d\t%s\t%d.%d\t%d.%d\t%zu\t%zu\n", info.name, info.cc_major,
           info.cc_minor, info.sms, info.driver_module, info.driver_version / 1000,
           info.driver_version % 1000 / 10, info.runtime_version / 1000,
           info.runtime_version % 1000 / 10, info.global_bytes >> 20, info.l2_bytes >> 10);
    return 0;
}
