/* unfused_gemm_gpu.cu: chapter 10, step 1's two products on cuBLAS. Given; GPU builds only
 * (the CPU backend has no cuBLAS, and its builds leave *_gpu.cu out: unfused.cu then runs its
 * plain kernels).
 *
 * cublasGemmStridedBatchedEx runs one GEMM for each of batch_heads (b, h), bf16 or fp16 in,
 * fp32 accumulation (CUBLAS_COMPUTE_32F), on the tensor cores. cuBLAS is column-major; a
 * row-major matrix is the column-major matrix of its transpose, so:
 *   S = scale Q K^T (row-major, len x len)  is column-major S^T = K Q^T: A = K with OP_T
 *       (stored as the column-major dim x len matrix K^T), B = Q with OP_N (column-major Q^T),
 *       m = n = len, k = dim, C = S in fp32 with ldc = len
 *   O = P V (row-major, len x dim)          is column-major O^T = V^T P^T: A = V, B = P, both
 *       OP_N, m = dim, n = len, k = len, C = O in the input type with ldc = dim
 * No copies, no transposes in memory. One handle, made on first use (inside a test's process,
 * never before the grader forks), on the default stream as the contract says. */
#include <cublas_v2.h>

#include "cublas_check.h"
#include "cuda_check.h"
#include "attention.h"


static cublasHandle_t handle(void)
{
    static cublasHandle_t h;
    if (!h) {
        CUBLAS_CHECK(cublasCreate(&h));
        CUBLAS_CHECK(cublasSetStream(h, 0));
    }
    return h;
}

void attention_gemm_scores_cublas(const void *d_q, const void *d_k, float *d_s, int batch_heads,
                                  int len, int dim, float scale, int fp16)
{
    const cudaDataType t = fp16 ? CUDA_R_16F : CUDA_R_16BF;
    const float zero = 0.0f;
    const long long qk = (long long)len * dim, ss = (long long)len * len;
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle(), CUBLAS_OP_T, CUBLAS_OP_N, len, len, dim,
                                            &scale, d_k, t, dim, qk, d_q, t, dim, qk, &zero,
                                            d_s, CUDA_R_32F, len, ss, batch_heads,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CUDA_CHECK(cudaGetLastError());
}

void attention_gemm_output_cublas(const void *d_p, const void *d_v, void *d_o, int batch_heads,
                                  int len, int dim, int fp16)
{
    const cudaDataType t = fp16 ? CUDA_R_16F : CUDA_R_16BF;
    const float one = 1.0f, zero = 0.0f;
    const long long vo = (long long)len * dim, pp = (long long)len * len;
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, dim, len, len,
                                            &one, d_v, t, dim, vo, d_p, t, len, pp, &zero, d_o,
                                            t, dim, vo, batch_heads, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT));
    CUDA_CHECK(cudaGetLastError());
}
