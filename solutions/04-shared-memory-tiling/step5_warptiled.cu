/* step5_warptiled.cu: chapter 04, step 5 of 7, reference solution: warp tiling.
 *
 * Change from step 4: the same 128x128 block tile, BK = 8, 256 threads and 8x8 results a
 * thread, but the block tile is split into warp tiles: each of the 8 warps owns a 64x32
 * sub-tile of C, and each lane a 4x4 fragment of each of the warp's 2x2 sub-tiles (lanes 8
 * rows x 4 columns over a 32x16 sub-tile). What changes is which threads read shared memory
 * together: a warp's 32 lanes read 8 float4s of A (128 contiguous bytes) and 4 of B (64
 * bytes) per request, where step 4's warp read 16 float4s of B spread over 512 bytes. Shared
 * wavefronts per request drop from 5 to 3 (the CPU backend counts them, as Nsight Compute
 * does). A's tile is padded by 4 floats a row, so the transposed stores of two k-columns land
 * in different banks.
 * Expect: a little faster than step 4 at 2048^3 and 4096^3, by far less than the drop in
 * shared wavefronts: what remains is mostly the latency between the global load of a tile and
 * its use, which step 6's double buffering hides.
 *
 * Correct on any shape: the float4 path only where every row of A, B and C starts on a
 * 16-byte boundary (k % 4 == 0 and n % 4 == 0), else four guarded scalar loads; tails are
 * zero-filled in shared memory. */
#include <stdint.h>

#include "cuda_check.h"
#include "tiled.h"

#define W_BM 128
#define W_BN 128
#define W_BK 8
#define W_WM 64                       /* a warp tile: 64 rows x 32 columns of C */
#define W_WN 32
#define W_LN 4                        /* lanes of a warp: 8 rows x 4 columns */
#define W_LM (32 / W_LN)
#define W_WSUBM (W_LM * 4)            /* a warp sub-tile: all 32 lanes once, 4x4 each */
#define W_WSUBN (W_LN * 4)
#define W_WMITER (W_WM / W_WSUBM)     /* 2 x 2 sub-tiles a warp tile */
#define W_WNITER (W_WN / W_WSUBN)
#define W_THREADS ((W_BM / W_WM) * (W_BN / W_WN) * 32) /* 256 */
#define W_AST (W_BM + 4)              /* s_a's row stride: +4 floats, see above */
#define W_A_LOADS (W_BM * W_BK / 4 / W_THREADS) /* float4s a thread loads a tile: 1 */
#define W_B_LOADS (W_BK * W_BN / 4 / W_THREADS) /* 1 */

/* Elements (r, c..c+3) of a rows x cols row-major matrix, 0 outside it. VEC: cols % 4 == 0
 * and c % 4 == 0, so the four are one aligned float4 and lie all inside or all outside. */
template <bool VEC>
static __device__ __forceinline__ float4 wt_load4(const float *__restrict__ p, int r, int c,
                                                  int rows, int cols)
{
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (VEC) {
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

/* The tiles of A and B at k0, from global memory into shared: A transposed, B as it is. */
template <bool VEC>
static __device__ __forceinline__ void wt_load_tiles(const float *__restrict__ a,
                                                     const float *__restrict__ b, int m, int k,
                                                     int n, int row0, int col0, int k0,
                                                     float *s_a, float *s_b)
{
#pragma unroll
    for (int i = 0; i < W_A_LOADS; i++) {
        const int f = threadIdx.x + i * W_THREADS;
        const int r = f / (W_BK / 4), c = (f % (W_BK / 4)) * 4;
        const float4 v = wt_load4<VEC>(a, row0 + r, k0 + c, m, k);
        s_a[(c + 0) * W_AST + r] = v.x;
        s_a[(c + 1) * W_AST + r] = v.y;
        s_a[(c + 2) * W_AST + r] = v.z;
        s_a[(c + 3) * W_AST + r] = v.w;
    }
#pragma unroll
    for (int i = 0; i < W_B_LOADS; i++) {
        const int f = threadIdx.x + i * W_THREADS;
        const int r = f / (W_BN / 4), c = (f % (W_BN / 4)) * 4;
        *reinterpret_cast<float4 *>(&s_b[r * W_BN + c]) =
            wt_load4<VEC>(b, k0 + r, col0 + c, k, n);
    }
}

template <bool VEC>
static __global__ void __launch_bounds__(W_THREADS)
matmul_warptiled_kernel(const float *__restrict__ a, const float *__restrict__ b,
                        float *__restrict__ c, int m, int k, int n)
{
    __shared__ __align__(16) float s_a[W_BK * W_AST]; /* [8][132]: A's tile, transposed */
    __shared__ __align__(16) float s_b[W_BK * W_BN];  /* [8][128] */
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int row0 = blockIdx.y * W_BM, col0 = blockIdx.x * W_BN;
    /* the warp's tile in the block tile, and the lane's place in each sub-tile */
    const int wm0 = (warp / (W_BN / W_WN)) * W_WM, wn0 = (warp % (W_BN / W_WN)) * W_WN;
    const int lm = lane / W_LN, ln = lane % W_LN;

    float fa[W_WMITER * 4], fb[W_WNITER * 4];
    float acc[W_WMITER * 4][W_WNITER * 4];
#pragma unroll
    for (int x = 0; x < W_WMITER * 4; x++)
#pragma unroll
        for (int y = 0; y < W_WNITER * 4; y++)
            acc[x][y] = 0.0f;

    for (int k0 = 0; k0 < k; k0 += W_BK) {
        wt_load_tiles<VEC>(a, b, m, k, n, row0, col0, k0, s_a, s_b);
        __syncthreads(); /* the whole tile is in shared memory before anyone reads it */
#pragma unroll
        for (int i = 0; i < W_BK; i++) {
            /* a warp reads 8 float4s of A and 4 of B: 128 and 64 contiguous bytes, every
             * value then used 8 times from registers */
#pragma unroll
            for (int wi = 0; wi < W_WMITER; wi++) {
                const float4 v = *reinterpret_cast<const float4 *>(
                    &s_a[i * W_AST + wm0 + wi * W_WSUBM + lm * 4]);
                fa[wi * 4 + 0] = v.x; fa[wi * 4 + 1] = v.y; fa[wi * 4 + 2] = v.z; fa[wi * 4 + 3] = v.w;
            }
#pragma unroll
            for (int wj = 0; wj < W_WNITER; wj++) {
                const float4 v = *reinterpret_cast<const float4 *>(
                    &s_b[i * W_BN + wn0 + wj * W_WSUBN + ln * 4]);
                fb[wj * 4 + 0] = v.x; fb[wj * 4 + 1] = v.y; fb[wj * 4 + 2] = v.z; fb[wj * 4 + 3] = v.w;
            }
#pragma unroll
            for (int x = 0; x < W_WMITER * 4; x++)
#pragma unroll
                for (int y = 0; y < W_WNITER * 4; y++)
                    acc[x][y] += fa[x] * fb[y];
        }
        __syncthreads(); /* everyone is done with the tile before the next one overwrites it */
    }

#pragma unroll
    for (int wi = 0; wi < W_WMITER; wi++) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int row = row0 + wm0 + wi * W_WSUBM + lm * 4 + r;
            if (row >= m)
                continue;
#pragma unroll
            for (int wj = 0; wj < W_WNITER; wj++) {
                const int col = col0 + wn0 + wj * W_WSUBN + ln * 4;
                const float *v = acc[wi * 4 + r] + wj * 4;
                if (VEC) { /* n % 4 == 0: the four columns are all inside C or all outside */
                    if (col < n)
                        *reinterpret_cast<float4 *>(&c[row * n + col]) =
                            make_float4(v[0], v[1], v[2], v[3]);
                } else {
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        if (col + j < n)
                            c[row * n + col + j] = v[j];
                }
            }
        }
    }
}

void matmul_warptiled(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 grid(cdiv(n, W_BN), cdiv(m, W_BM));
    const bool vec = k % 4 == 0 && n % 4 == 0 && ((uintptr_t)d_a & 15) == 0 &&
                     ((uintptr_t)d_b & 15) == 0 && ((uintptr_t)d_c & 15) == 0;
    if (vec)
        matmul_warptiled_kernel<true><<<grid, W_THREADS>>>(d_a, d_b, d_c, m, k, n);
    else
        matmul_warptiled_kernel<false><<<grid, W_THREADS>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
