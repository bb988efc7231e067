/* step4_vectorized.cu: chapter 04, step 4 of 7, reference solution: float4 loads, A
 * transposed in shared memory.
 *
 * The same 16 shared loads a step of k as step 3, in 4 LDS.128 instead of 16 LDS.32; global
 * loads in float4. Correct on any shape: the float4 paths run only where k and n are multiples
 * of 4 (else a scalar loader), and tails are zero-filled in shared memory. */
#include <stdint.h>

#include "cuda_check.h"
#include "tiled.h"

/* float4 loads, A transposed in shared memory.
 * Change from step 3: each thread loads one float4 of A and one of B from global memory (one
 * 16-byte load where step 3 issued four 4-byte loads), and stores A's tile transposed,
 * s_a[k][m], so that the 8 values of A a thread needs for one step of k are contiguous: the
 * 16 shared loads of a step become 4 LDS.128.
 * A float4 load needs a 16-byte aligned address: A's rows start every k floats and B's every
 * n, so the vector path runs only when k % 4 == 0 and n % 4 == 0; other shapes take the
 * scalar path (same tiles, four guarded scalar loads).
 * Expect: faster than step 3 at large sizes, with a quarter of its shared load instructions;
 * at odd shapes (the scalar path) no faster than step 3, and a little slower for the guards
 * of its scalar loads. */
#define V_BM 128
#define V_BN 128
#define V_BK 8
#define V_TM 8
#define V_TN 8
#define V_THREADS 256

/* Elements (r, c..c+3) of a rows x cols row-major matrix, 0 outside it. VEC: cols % 4 == 0
 * and c % 4 == 0, so the four are one aligned float4 and lie all inside or all outside. */
template <bool VEC>
static __device__ __forceinline__ float4 load4(const float *__restrict__ p, int r, int c, int rows,
                                               int cols)
{
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (VEC) {
        /* the matrix seen as rows x cols/4 float4s */
        if (r < rows && c < cols)
            v = reinterpret_cast<const float4 *>(p)[r * (cols / 4) + c / 4];
    } else if (r < rows) {
        const float *q = p + r * cols + c;
        if (c < cols)     v.x = q[0];
        if (c + 1 < cols) v.y = q[1];
        if (c + 2 < cols) v.z = q[2];
        if (c + 3 < cols) v.w = q[3];
    }
    return v;
}

template <bool VEC>
static __global__ void __launch_bounds__(V_THREADS)
matmul_vectorized_kernel(const float *__restrict__ a, const float *__restrict__ b,
                         float *__restrict__ c, int m, int k, int n)
{
    __shared__ __align__(16) float s_a[V_BK * V_BM]; /* [8][128]: A's tile, transposed */
    __shared__ __align__(16) float s_b[V_BK * V_BN]; /* [8][128] */
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * V_BM, col0 = blockIdx.x * V_BN;
    /* one float4 of each tile per thread: 128 x 8 / 4 = 8 x 128 / 4 = 256 */
    const int a_r = tid / (V_BK / 4), a_c = (tid % (V_BK / 4)) * 4;
    const int b_r = tid / (V_BN / 4), b_c = (tid % (V_BN / 4)) * 4;
    const int t_row = tid / (V_BN / V_TN), t_col = tid % (V_BN / V_TN);
    float acc[V_TM][V_TN] = { { 0.0f } };
    float ra[V_TM], rb[V_TN];
    for (int k0 = 0; k0 < k; k0 += V_BK) {
        const float4 va = load4<VEC>(a, row0 + a_r, k0 + a_c, m, k);
        s_a[(a_c + 0) * V_BM + a_r] = va.x; /* transposed: column a_r of s_a */
        s_a[(a_c + 1) * V_BM + a_r] = va.y;
        s_a[(a_c + 2) * V_BM + a_r] = va.z;
        s_a[(a_c + 3) * V_BM + a_r] = va.w;
        *reinterpret_cast<float4 *>(&s_b[b_r * V_BN + b_c]) =
            load4<VEC>(b, k0 + b_r, col0 + b_c, k, n);
        __syncthreads();
#pragma unroll
        for (int i = 0; i < V_BK; i++) {
#pragma unroll
            for (int r = 0; r < V_TM; r += 4) {
                const float4 v = *reinterpret_cast<const float4 *>(&s_a[i * V_BM + t_row * V_TM + r]);
                ra[r] = v.x; ra[r + 1] = v.y; ra[r + 2] = v.z; ra[r + 3] = v.w;
            }
#pragma unroll
            for (int q = 0; q < V_TN; q += 4) {
                const float4 v = *reinterpret_cast<const float4 *>(&s_b[i * V_BN + t_col * V_TN + q]);
                rb[q] = v.x; rb[q + 1] = v.y; rb[q + 2] = v.z; rb[q + 3] = v.w;
            }
#pragma unroll
            for (int r = 0; r < V_TM; r++)
#pragma unroll
                for (int q = 0; q < V_TN; q++)
                    acc[r][q] += ra[r] * rb[q];
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < V_TM; r++) {
        const int row = row0 + t_row * V_TM + r;
        if (row >= m)
            break;
#pragma unroll
        for (int q = 0; q < V_TN; q += 4) {
            const int col = col0 + t_col * V_TN + q;
            if (VEC) { /* n % 4 == 0: the four columns are all inside C or all outside */
                if (col < n)
                    *reinterpret_cast<float4 *>(&c[row * n + col]) =
                        make_float4(acc[r][q], acc[r][q + 1], acc[r][q + 2], acc[r][q + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (col + j < n)
                        c[row * n + col + j] = acc[r][q + j];
            }
        }
    }
}

static int aligned16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

void matmul_vectorized(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 grid(cdiv(n, V_BN), cdiv(m, V_BM));
    /* every row of A, B and C starts on a 16-byte boundary only when k and n are multiples
     * of 4 (and the base pointers are aligned, which cudaMalloc's are) */
    const bool vec = k % 4 == 0 && n % 4 == 0 && aligned16(d_a) && aligned16(d_b) &&
                     aligned16(d_c);
    if (vec)
        matmul_vectorized_kernel<true><<<grid, V_THREADS>>>(d_a, d_b, d_c, m, k, n);
    else
        matmul_vectorized_kernel<false><<<grid, V_THREADS>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
