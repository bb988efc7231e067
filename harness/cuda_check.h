/* cuda_check.h: the project's one error macro, for kernel files and host code alike.
 *
 * CUDA_CHECK(call) runs a CUDA runtime call and, if it failed, prints the file, the line, the
 * call as written and the runtime's own description, then exits. It is never compiled out:
 * an unchecked call is how an illegal address in one kernel turns into a wrong answer three
 * launches later.
 *
 * Every launcher ends with CUDA_CHECK(cudaGetLastError()): a launch returns nothing, and an
 * invalid configuration (too many threads, too much shared memory) is only reported there. */
#ifndef CUDA_CHECK_H
#define CUDA_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include "cdiv.h"

#define CUDA_CHECK(call) do {                                              \
    cudaError_t err_ = (call);                                             \
    if (err_ != cudaSuccess) {                                             \
        fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, \
                #call, cudaGetErrorString(err_), cudaGetErrorName(err_));  \
        exit(EXIT_FAILURE);                                                \
    }                                                                      \
} while (0)

#endif
