/* matmul_tiled.cu: chapter 04, reference solution, rungs 1 to 4 and the rung table.
 * Rungs 5 and 6 (warp tiling, and the configuration picked per device and shape) are in
 * warptiled.cu beside this file; rung 0, the baseline, is chapters/04-shared-memory-tiling/
 * matmul_naive.cu (chapter 01's coalesced kernel).
 *
 * Bytes per FMA, counted per thread (one FMA = 2 FLOPs), from the level that feeds it:
 *   naive       2 loads from L1/L2 per FMA (8 bytes)
 *   tiled       global: 2 loads per 32 FMAs; shared: 2 loads per FMA (8 bytes)
 *   blocked_1d  shared: 1 + 1/8 loads per FMA (each B value is reused for 8 rows)
 *   blocked_2d  shared: 16 loads per 64 FMAs (0.25 per FMA), 8x8 results in registers
 *   vectorized  the same 16 values in 4 LDS.128 instead of 16 LDS.32; global loads in float4
 * Every rung is correct on any shape: tails in m, n and k are zero-filled in shared memory,
 * and the float4 paths run only where k and n are multiples of 4 (else a scalar loader). */
#include <stdint.h>

#include "cuda_check.h"
#include "tiled.h"

/* rungs 5 and 6, in warptiled.cu */
extern "C" void matmul_warptiled(const float *d_a, const float *d_b, float *d_c, int m, int k,
                                 int n);
extern "C" void matmul_tuned(const float *d_a, const float *d_b, float *d_c, int m, int k,
                             int n);

/* ---- rung 1: 32x32 shared-memory tiles --------------------------------------------------
 * Change from the naive kernel: the block stages a 32x32 tile of A and one of B in shared
 * memory, each element loaded once from global memory and then read 32 times from shared.
 * Global traffic drops 32x; every FMA still needs two shared loads (s_a's is a broadcast).
 * Expect: faster than the naive kernel (the grader asks 1.3x), but nothing like 32x: it is
 * now bound by shared-memory load instructions, two per FMA, not by L1/L2. */
#define TILE 32

/* 1,024 threads a block: each may use at most 64 of the SM's 65,536 registers, or the launch
 * fails with cudaErrorLaunchOutOfResources. __launch_bounds__ makes the compiler keep to that
 * (spilling if it must) instead of failing at run time: a variant of this kernel that resets
 * acc inside the loop compiled to 77 registers and did not launch on the H200. */
__global__ void __launch_bounds__(TILE * TILE)
matmul_tiled_kernel(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                    int m, int k, int n)
{
    __shared__ float s_a[TILE][TILE];
    __shared__ float s_b[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < cdiv(k, TILE); t++) {
        const int k0 = t * TILE;
        /* one element of each tile per thread; lanes walk along a row of A and of B, so both
         * loads are 128 contiguous bytes. Outside A or B: 0, which adds nothing to the sum */
        if (row < m && k0 + tx < k)
            s_a[ty][tx] = a[row * k + k0 + tx];
        else
            s_a[ty][tx] = 0.0f;
        if (k0 + ty < k && col < n)
            s_b[ty][tx] = b[(k0 + ty) * n + col];
        else
            s_b[ty][tx] = 0.0f;
        __syncthreads(); /* the whole tile is in shared memory before anyone reads it */
#pragma unroll
        for (int i = 0; i < TILE; i++)
            acc += s_a[ty][i] * s_b[i][tx]; /* s_a: one address per warp (broadcast); s_b: 32 banks */
        __syncthreads(); /* everyone is done with this tile before the next load overwrites it */
    }
    if (row < m && col < n)
        c[row * n + col] = acc;
}

void matmul_tiled(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 block(TILE, TILE);
    dim3 grid(cdiv(n, TILE), cdiv(m, TILE));
    matmul_tiled_kernel<<<grid, block>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

/* ---- rung 2: 1D register blocking --------------------------------------------------------
 * Change from rung 1: a 64x64 tile of C per block of 512 threads, BK = 8; each thread
 * computes 8 elements of one column of C. The B value it reads from shared memory is kept in
 * a register and used for 8 FMAs, so shared loads per FMA drop from 2 to 1.125.
 * Expect: a clear step over rung 1 at every square size, as the shared loads per FMA that
 * bound it drop from 2 to 1.125. */
#define B1_BM 64
#define B1_BN 64
#define B1_BK 8
#define B1_TM 8
#define B1_THREADS (B1_BM * B1_BN / B1_TM) /* 512 */

__global__ void __launch_bounds__(B1_THREADS)
matmul_blocked_1d_kernel(const float *__restrict__ a, const float *__restrict__ b,
                         float *__restrict__ c, int m, int k, int n)
{
    __shared__ float s_a[B1_BM * B1_BK]; /* [64][8], row-major like A */
    __shared__ float s_b[B1_BK * B1_BN]; /* [8][64] */
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * B1_BM, col0 = blockIdx.x * B1_BN;
    /* loading: one element of each tile per thread (64 x 8 = 8 x 64 = 512) */
    const int a_r = tid / B1_BK, a_c = tid % B1_BK;
    const int b_r = tid / B1_BN, b_c = tid % B1_BN;
    /* computing: a warp is 32 consecutive columns of one band of 8 rows */
    const int t_col = tid % B1_BN, t_row = tid / B1_BN;
    float acc[B1_TM] = { 0.0f };
    for (int k0 = 0; k0 < k; k0 += B1_BK) {
        const int ar = row0 + a_r, ak = k0 + a_c;
        s_a[a_r * B1_BK + a_c] = (ar < m && ak < k) ? a[ar * k + ak] : 0.0f;
        const int bk = k0 + b_r, bc = col0 + b_c;
        s_b[b_r * B1_BN + b_c] = (bk < k && bc < n) ? b[bk * n + bc] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < B1_BK; i++) {
            const float bv = s_b[i * B1_BN + t_col]; /* one shared load, 8 FMAs */
#pragma unroll
            for (int r = 0; r < B1_TM; r++)
                acc[r] += s_a[(t_row * B1_TM + r) * B1_BK + i] * bv; /* broadcast */
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < B1_TM; r++) {
        const int row = row0 + t_row * B1_TM + r, col = col0 + t_col;
        if (row < m && col < n)
            c[row * n + col] = acc[r];
    }
}

void matmul_blocked_1d(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 grid(cdiv(n, B1_BN), cdiv(m, B1_BM));
    matmul_blocked_1d_kernel<<<grid, B1_THREADS>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

/* ---- rung 3: 2D register blocking --------------------------------------------------------
 * Change from rung 2: a 128x128 tile of C per block of 256 threads, BK = 8, and an 8x8 tile
 * of C per thread. Each step of k loads 8 values of A and 8 of B into registers and does
 * 64 FMAs with them: 0.25 shared loads per FMA, and 64 independent accumulators keep the
 * FMA pipes busy.
 * Expect: faster than rung 2 at 2048^3 and up; the shared loads are now 16 scalar LDS a step,
 * with 2- and 4-way bank conflicts (rung 4's target). Slower than rung 2 at 1024^3, where
 * 128x128 tiles make 64 blocks for 132 SMs. */
#define B2_BM 128
#define B2_BN 128
#define B2_BK 8
#define B2_TM 8
#define B2_TN 8
#define B2_THREADS (B2_BM * B2_BN / (B2_TM * B2_TN)) /* 256 */

__global__ void __launch_bounds__(B2_THREADS)
matmul_blocked_2d_kernel(const float *__restrict__ a, const float *__restrict__ b,
                         float *__restrict__ c, int m, int k, int n)
{
    __shared__ float s_a[B2_BM * B2_BK]; /* [128][8] */
    __shared__ float s_b[B2_BK * B2_BN]; /* [8][128] */
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * B2_BM, col0 = blockIdx.x * B2_BN;
    const int a_r = tid / B2_BK, a_c = tid % B2_BK; /* 32 rows a pass, 4 passes */
    const int b_r = tid / B2_BN, b_c = tid % B2_BN; /* 2 rows a pass, 4 passes */
    const int t_row = tid / (B2_BN / B2_TN), t_col = tid % (B2_BN / B2_TN);
    float acc[B2_TM][B2_TN] = { { 0.0f } };
    float ra[B2_TM], rb[B2_TN];
    for (int k0 = 0; k0 < k; k0 += B2_BK) {
#pragma unroll
        for (int o = 0; o < B2_BM; o += B2_THREADS / B2_BK) {
            const int ar = row0 + a_r + o, ak = k0 + a_c;
            s_a[(a_r + o) * B2_BK + a_c] = (ar < m && ak < k) ? a[ar * k + ak] : 0.0f;
        }
#pragma unroll
        for (int o = 0; o < B2_BK; o += B2_THREADS / B2_BN) {
            const int bk = k0 + b_r + o, bc = col0 + b_c;
            s_b[(b_r + o) * B2_BN + b_c] = (bk < k && bc < n) ? b[bk * n + bc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < B2_BK; i++) {
#pragma unroll
            for (int r = 0; r < B2_TM; r++)
                ra[r] = s_a[(t_row * B2_TM + r) * B2_BK + i];
#pragma unroll
            for (int q = 0; q < B2_TN; q++)
                rb[q] = s_b[i * B2_BN + t_col * B2_TN + q];
#pragma unroll
            for (int r = 0; r < B2_TM; r++)
#pragma unroll
                for (int q = 0; q < B2_TN; q++)
                    acc[r][q] += ra[r] * rb[q];
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < B2_TM; r++) {
        const int row = row0 + t_row * B2_TM + r;
#pragma unroll
        for (int q = 0; q < B2_TN; q++) {
            const int col = col0 + t_col * B2_TN + q;
            if (row < m && col < n)
                c[row * n + col] = acc[r][q];
        }
    }
}

void matmul_blocked_2d(const float *d_a, const float *d_b, float *d_c, int m, int k, int n)
{
    dim3 grid(cdiv(n, B2_BN), cdiv(m, B2_BM));
    matmul_blocked_2d_kernel<<<grid, B2_THREADS>>>(d_a, d_b, d_c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

/* ---- rung 4: float4 loads, A transposed in shared memory ---------------------------------
 * Change from rung 3: each thread loads one float4 of A and one of B from global memory (one
 * 16-byte load where rung 3 issued four 4-byte loads), and stores A's tile transposed,
 * s_a[k][m], so that the 8 values of A a thread needs for one step of k are contiguous: the
 * 16 shared loads of a step become 4 LDS.128.
 * A float4 load needs a 16-byte aligned address: A's rows start every k floats and B's every
 * n, so the vector path runs only when k % 4 == 0 and n % 4 == 0; other shapes take the
 * scalar path (same tiles, four guarded scalar loads).
 * Expect: faster than rung 3 at large sizes, with a quarter of its shared load instructions;
 * at odd shapes (the scalar path) no faster than rung 3, and a little slower for the guards
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
__device__ __forceinline__ float4 load4(const float *__restrict__ p, int r, int c, int rows,
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
__global__ void __launch_bounds__(V_THREADS)
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

const struct tiled_rung TILED_RUNGS[] = {
    { "naive",      matmul_naive },
    { "tiled",      matmul_tiled },
    { "blocked_1d", matmul_blocked_1d },
    { "blocked_2d", matmul_blocked_2d },
    { "vectorized", matmul_vectorized },
    { "warptiled",  matmul_warptiled },
    { "tuned",      matmul_tuned },
};
const int TILED_NUM_RUNGS = sizeof TILED_RUNGS / sizeof TILED_RUNGS[0];
