/* blas.h: cuBLAS (SGEMM, BF16 GemmEx) as the ceiling the matmul chapters are measured against.
 * On the CPU backend there is no cuBLAS: the calls return -1 and the caller says so. */
#ifndef BLAS_H
#define BLAS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C = A * B, row-major fp32 (A m x k, B k x n, C m x n), device pointers, plain fp32 math
 * (no TF32 tensor cores). Returns 0, or -1 where cuBLAS is not available (CPU backend). */
int blas_sgemm(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);

/* C = A * B, row-major, A and B bf16 (as their 16 bits), C fp32, fp32 accumulation, on the
 * tensor cores. Returns 0, or -1 where cuBLAS is not available (CPU backend). */
int blas_gemm_bf16(const uint16_t *d_a, const uint16_t *d_b, float *d_c, int m, int k, int n);

/* Why blas_sgemm or blas_gemm_bf16 returned -1, for messages. */
const char *blas_unavailable_reason(void);

#ifdef __cplusplus
}
#endif

#endif
