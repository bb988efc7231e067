/* cublas_check.h: CUBLAS_CHECK, for cuBLAS and cuBLASLt calls (both return cublasStatus_t):
 * on a failure it prints the call, its file and line and cuBLAS's own words, and exits. GPU
 * builds only; include cublas_v2.h or cublasLt.h first. */
#ifndef CUBLAS_CHECK_H
#define CUBLAS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CUBLAS_CHECK(call) do {                                                  \
    cublasStatus_t st_ = (call);                                                 \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                          \
        fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,     \
                cublasGetStatusString(st_));                                     \
        exit(EXIT_FAILURE);                                                      \
    }                                                                            \
} while (0)

#endif
