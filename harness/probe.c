/* probe.c: does a GPU answer? Prints its name and exits 0, or prints why not and exits 1.
 * `make grade` runs it to choose the backend when BACKEND=auto. */
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
    printf("%s (compute capability %d.%d, %d SMs, %s)\n", info.name, info.cc_major,
           info.cc_minor, info.sms, info.driver);
    return 0;
}
