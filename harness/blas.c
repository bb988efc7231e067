/* blas.c: cuBLAS SGEMM for row-major matrices (see blas.h). */
#include "blas.h"

#ifdef HARNESS_EMU

int blas_sgemm(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    (void)d_a; (void)d_b; (void)d_c; (void)m; (void)k; (void)n;
    return -1;
}

int blas_gemm_bf16(const uint16_t *d_a, const uint16_t *d_b, float *d_c, int m, int k, int n)
{
    (void)d_a; (void)d_b; (void)d_c; (void)m; (void)k; (void)n;
    return -1;
}

const char *blas_unavailable_reason(void)
{
    return "cuBLAS runs on a GPU only, not on the CPU backend";
}

#else

#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>

#include "cublas_check.h"

/* One handle for both calls, made on first use (in the test's child: never before the fork). */
static cublasHandle_t blas_handle(void)
{
    static cublasHandle_t handle;
    if (!handle) {
        CUBLAS_CHECK(cublasCreate(&handle));
        CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    }
    return handle;
}

int blas_sgemm(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    cublasHandle_t handle = blas_handle();
    const float one = 1.0f, zero = 0.0f;
    /* cuBLAS is column-major: a row-major C = A B is the column-major C^T = B^T A^T, so pass
     * B first and swap m and n; no transposes, no copies. */
    CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, d_b, n, d_a, k,
                             &zero, d_c, n));
    return 0;
}

int blas_gemm_bf16(const uint16_t *d_a, const uint16_t *d_b, float *d_c, int m, int k, int n)
{
    const float one = 1.0f, zero = 0.0f;
    /* column-major C^T = B^T A^T, as in blas_sgemm */
    CUBLAS_CHECK(cublasGemmEx(blas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, d_b,
                              CUDA_R_16BF, n, d_a, CUDA_R_16BF, k, &zero, d_c, CUDA_R_32F, n,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return 0;
}

const char *blas_unavailable_reason(void)
{
    return "";
}

#endif
