/* pad_rows.cu: the padded copies of A and B (given; pad_rows.h is the manual). Steps 2 to 4
 * run them where k or n is not a multiple of 8 (or a base is not 16-byte aligned), then
 * multiply the copies with the same 16-byte copies (cp.async, TMA) as every other shape.
 *
 * The cost is one pass over A and B: 2 (m k + k n) bytes read and about as many written, a
 * memory-bound copy beside a compute-bound GEMM of 2 m k n FLOPs (README.md, "Rows that do
 * not start on 16 bytes", has what it costs on the H200).
 *
 * One block a row of a padded copy, 128 threads, each writing 16 bytes (8 bf16) of the row
 * with one store: the stores are coalesced and 16-byte aligned (the pitch is a multiple of 8).
 * The 8 bf16 a thread reads start anywhere on a 2-byte boundary, so it loads the one or two
 * aligned 16-byte words that hold them and shifts them into place (gather8): 16-byte loads,
 * which neighbouring threads share through L1, instead of 8 loads of 2 bytes. Only a word that
 * would reach outside the matrix (its first or last bytes) goes one bf16 at a time. */
#include <stdint.h>

#include "tile.cuh"     /* bf16, rows_are_16b_aligned */
#include "pad_rows.h"

#define PAD_THREADS 128

namespace {

/* one matrix to copy: rows x cols bf16 at src (rows cols apart) into dst (rows pitch apart) */
struct pad_job {
    const bf16 *src;
    bf16 *dst;
    int rows, cols, pitch;
};

/* 8 bf16 of src from element f on, the first `valid` of them (1 to 8) and zeros after, packed
 * as a 16-byte word. src holds `total` elements; nothing outside them is read. */
__device__ __forceinline__ uint4 gather8(const bf16 *src, size_t total, size_t f, int valid)
{
    const uintptr_t lo = reinterpret_cast<uintptr_t>(src), hi = lo + 2 * total;
    const uintptr_t at = reinterpret_cast<uintptr_t>(src + f);
    const uintptr_t w = at & ~(uintptr_t)15;           /* the aligned word that `at` is in */
    const unsigned o = (unsigned)(at & 15);            /* where in it: 0, 2, .., 14 */
    const bool two = o + 2 * valid > 16;               /* the bytes wanted spill into the next */
    uint32_t out[4];
    if (w >= lo && w + (two ? 32 : 16) <= hi) {
        const uint4 *p = reinterpret_cast<const uint4 *>(w);
        const uint4 v0 = p[0], v1 = two ? p[1] : make_uint4(0, 0, 0, 0);
        const uint32_t word[8] = { v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w };
        /* element e of the result is 16-bit half o / 2 + e of the 32 bytes: skip o / 4 whole
         * words (selected, so that the array stays in registers), then half a word if o % 4 */
        const unsigned q = o / 4, shift = (o & 2) * 8;
        uint32_t u[5];
#pragma unroll
        for (int t = 0; t < 5; t++)
            u[t] = q == 0 ? word[t] : q == 1 ? word[t + 1] : q == 2 ? word[t + 2] : word[t + 3];
#pragma unroll
        for (int t = 0; t < 4; t++)
            out[t] = __funnelshift_r(u[t], u[t + 1], shift);
    } else {
        const uint16_t *s = reinterpret_cast<const uint16_t *>(src) + f;
#pragma unroll
        for (int t = 0; t < 4; t++)
            out[t] = (2 * t < valid ? s[2 * t] : 0u) |
                     (2 * t + 1 < valid ? (uint32_t)s[2 * t + 1] << 16 : 0u);
    }
    /* the elements past `valid` (the next row's, or the matrix's end) become the pad's zeros */
#pragma unroll
    for (int t = 0; t < 4; t++) {
        if (2 * t >= valid)
            out[t] = 0;
        else if (2 * t + 1 >= valid)
            out[t] &= 0xffffu;
    }
    return make_uint4(out[0], out[1], out[2], out[3]);
}

} /* namespace */

/* block r: row r of A' (r < a.rows), else row r - a.rows of B'. A job with no rows copies
 * nothing. */
static __global__ void __launch_bounds__(PAD_THREADS)
pad_rows_kernel(pad_job a, pad_job b)
{
    const bool in_a = blockIdx.x < (unsigned)a.rows;
    const pad_job j = in_a ? a : b;
    const int r = in_a ? (int)blockIdx.x : (int)blockIdx.x - a.rows;
    const size_t total = (size_t)j.rows * j.cols, first = (size_t)r * j.cols;
    bf16 *dst = j.dst + (size_t)r * j.pitch;
    for (int c = threadIdx.x * 8; c < j.pitch; c += PAD_THREADS * 8)
        *reinterpret_cast<uint4 *>(dst + c) = gather8(j.src, total, first + c, min(8, j.cols - c));
}

/* The workspace, stream-ordered on the default stream: cudaMallocAsync takes it from the
 * device's default memory pool, cudaFreeAsync gives it back after the GEMM that reads it, and
 * the next call's allocation finds it there, with no cudaMalloc. That pool hands what it holds
 * back to the driver at every synchronisation while its release threshold is 0, its default:
 * each call after one would map the memory afresh, on the host, while the GPU waits. So the
 * threshold is raised once, as NVIDIA advises for a pool that is reused: the pool keeps what
 * it has grown to. The CPU backend has no memory pools: there cudaMalloc, and cudaFree, which
 * waits for the GEMM, as a GPU's does. */
static void *work_alloc(size_t bytes)
{
    void *p = NULL;
#ifdef HARNESS_EMU
    CUDA_CHECK(cudaMalloc(&p, bytes));
#else
    int dev;
    cudaMemPool_t pool;
    uint64_t keep = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev));
    CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    if (keep != UINT64_MAX) {
        keep = UINT64_MAX;
        CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    }
    CUDA_CHECK(cudaMallocAsync(&p, bytes, 0));
#endif
    return p;
}

static void work_free(void *p)
{
#ifdef HARNESS_EMU
    CUDA_CHECK(cudaFree(p));
#else
    CUDA_CHECK(cudaFreeAsync(p, 0));
#endif
}

/* a pitch of whole 16-byte words: cols rounded up to a multiple of 8 bf16 */
static int padded_pitch(int cols)
{
    return cols + (8 - cols % 8) % 8;
}

extern "C" void gemm_pad_rows(const gemm_bf16 *d_a, const gemm_bf16 *d_b, int m, int k, int n,
                              struct gemm_padded *p)
{
    const bf16 *a = reinterpret_cast<const bf16 *>(d_a), *b = reinterpret_cast<const bf16 *>(d_b);
    p->a = d_a;
    p->b = d_b;
    p->lda = k;
    p->ldb = n;
    p->d_work = NULL;
    const bool copy_a = !rows_are_16b_aligned(a, k), copy_b = !rows_are_16b_aligned(b, n);
    if (!copy_a && !copy_b)
        return;
    pad_job ja = { a, NULL, 0, k, padded_pitch(k) }, jb = { b, NULL, 0, n, padded_pitch(n) };
    /* A' first, B' on the next 256-byte boundary after it */
    const size_t a_bytes = copy_a ? ((size_t)m * ja.pitch * sizeof(bf16) + 255) / 256 * 256 : 0;
    const size_t b_bytes = copy_b ? (size_t)k * jb.pitch * sizeof(bf16) : 0;
    p->d_work = work_alloc(a_bytes + b_bytes);
    if (copy_a) {
        ja.dst = static_cast<bf16 *>(p->d_work);
        ja.rows = m;
        p->a = reinterpret_cast<const gemm_bf16 *>(ja.dst);
        p->lda = ja.pitch;
    }
    if (copy_b) {
        jb.dst = reinterpret_cast<bf16 *>(static_cast<char *>(p->d_work) + a_bytes);
        jb.rows = k;
        p->b = reinterpret_cast<const gemm_bf16 *>(jb.dst);
        p->ldb = jb.pitch;
    }
    pad_rows_kernel<<<ja.rows + jb.rows, PAD_THREADS>>>(ja, jb);
    CUDA_CHECK(cudaGetLastError());
}

extern "C" void gemm_pad_rows_free(struct gemm_padded *p)
{
    if (p->d_work)
        work_free(p->d_work);
    p->d_work = NULL;
}
