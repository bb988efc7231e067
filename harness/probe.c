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
 * exit 1.
 *
 * `probe --hold`: the same, then the process stays, holding its CUDA context, until it is
 * signalled or its parent ends. While one process holds a context on a device, another makes
 * its own in about 0.01 s instead of 0.25 (measured on the H200, persistence mode on); a grade
 * makes two a test (its judge and its runner), hundreds a chapter, so scripts/grade.sh and
 * scripts/gpu-run.sh keep one held while graders run. An idle context runs nothing and takes
 * no time from the kernels being timed. */
#define _GNU_SOURCE /* prctl */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "gpu.h"

int main(int argc, char **argv)
{
    int hold = argc > 1 && strcmp(argv[1], "--hold") == 0;
    if (hold)
        prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0); /* never outlive the script that asked */
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
    if (hold) {
        /* the queries above need no context: this call makes the device's primary one */
        cudaError_t err = cudaFree(NULL);
        if (err != cudaSuccess) {
            fprintf(stderr, "probe --hold: no context: %s\n", cudaGetErrorString(err));
            return 1;
        }
        fflush(stdout);
        for (;;)
            pause(); /* the context stays until a signal ends the process */
    }
    return 0;
}
