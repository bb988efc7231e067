/* copy.cu: chapter 07, the ceiling of every step. Given, and shared with the solution.
 *
 * copy_bytes(d_in, d_out, bytes) reads every byte once and writes it once: what a kernel
 * that reads its input once and writes its output once can hope for, and the top line of the
 * chapter's bandwidth plots (the sums only read, so their own ceiling is the read half of it).
 *
 * How it gets there:
 *   - 16-byte words (uint4): one LDG.128 and one STG.128 move what four 4-byte accesses
 *     would, so a warp's request is 512 contiguous bytes and the instructions issued per
 *     byte fall by four.
 *   - A grid-stride loop over a grid of a few blocks per SM, sized once from the SM count,
 *     not from n: every thread stays resident and walks the array, so no time goes into
 *     launching and retiring millions of short blocks.
 *   - UNROLL loads issued before the first store: four 16-byte loads in flight a thread,
 *     BLOCK x BLOCKS_PER_SM x 64 bytes an SM. DRAM is far away (several hundred ns), and
 *     only enough bytes in flight keep it busy (Little's law: bandwidth x latency).
 *
 * Alignment: a 16-byte access needs a 16-byte aligned address. cudaMalloc's pointers are
 * 256-aligned, but callers may pass offsets. When in and out sit at the same offset within
 * 16 bytes, the bytes before the first 16-byte boundary and after the last one go byte by
 * byte and the middle goes in uint4s; when they do not, no uint4 is aligned on both sides
 * and the whole copy goes byte by byte: correct, slow, and not a case the chapter measures. */
#include <stdint.h>

#include "cuda_check.h"
#include "sm_count.h" /* the grid is a few blocks an SM whatever the size */
#include "membound.h"

#define BLOCK 256
#define BLOCKS_PER_SM 4
#define UNROLL 4 /* 16-byte loads in flight a thread */

static __global__ void copy_bytes_kernel(const unsigned char *__restrict__ in,
                                         unsigned char *__restrict__ out, size_t head,
                                         size_t n16, size_t bytes)
{
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    /* in + head and out + head are 16-byte aligned (the launcher chose head so) */
    const uint4 *in16 = reinterpret_cast<const uint4 *>(in + head);
    uint4 *out16 = reinterpret_cast<uint4 *>(out + head);

    size_t i = tid;
    for (; i + (UNROLL - 1) * stride < n16; i += UNROLL * stride) {
        /* all loads first: they are independent, so they are in flight together; each one
         * is a warp reading 512 contiguous bytes */
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            v[u] = in16[i + u * stride];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            out16[i + u * stride] = v[u];
    }
    for (; i < n16; i += stride) /* the last round, fewer than UNROLL words a thread */
        out16[i] = in16[i];

    /* the unaligned head and tail, fewer than 16 bytes each (or the whole copy, bytes
     * apart, when the two pointers are not aligned alike) */
    for (size_t j = tid; j < head; j += stride)
        out[j] = in[j];
    for (size_t j = head + 16 * n16 + tid; j < bytes; j += stride)
        out[j] = in[j];
}

void copy_bytes(const void *d_in, void *d_out, size_t bytes)
{
    uintptr_t a = (uintptr_t)d_in, b = (uintptr_t)d_out;
    size_t head, n16;
    if ((a - b) % 16 == 0) {
        /* the same offset within 16 bytes: both reach a 16-byte boundary after `head` bytes */
        head = (16 - a % 16) % 16;
        if (head > bytes)
            head = bytes;
        n16 = (bytes - head) / 16;
    } else {
        head = bytes; /* never aligned on both sides at once: every byte is "head" */
        n16 = 0;
    }
    /* enough blocks for the work, at most BLOCKS_PER_SM an SM */
    size_t items = n16 > 0 ? n16 : bytes;
    size_t per_block = (size_t)BLOCK * UNROLL;
    size_t blocks = (items + per_block - 1) / per_block;
    size_t most = (size_t)sm_count() * BLOCKS_PER_SM;
    if (blocks > most)
        blocks = most;
    if (blocks == 0)
        blocks = 1; /* bytes == 0: one block, which copies nothing */
    copy_bytes_kernel<<<(unsigned)blocks, BLOCK>>>(static_cast<const unsigned char *>(d_in),
                                         static_cast<unsigned char *>(d_out), head, n16, bytes);
    CUDA_CHECK(cudaGetLastError());
}
