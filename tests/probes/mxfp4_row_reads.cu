// mxfp4_row_reads.cu: plain reads of step 4's bytes in the order and with the concurrency of
// the step's kernel, built as variants of the step for tests/probes/mxfp4_gemv_variants.sh (the
// step's launcher's signature, its y left alone). The probe's own read (read_bytes.cuh) walks
// the bytes flat, grid-stride, so that at any moment the GPU reads one contiguous window; the
// kernel's CTA takes 16 rows of W and its warps take turns along k, each turn 64 bytes of each
// of the 16 rows (rows k / 2 bytes apart), one turn a warp in flight. A read in the kernel's
// order that is as slow as the kernel says the order and the turns cost the time, not the
// decode; a read of the same turns laid out contiguously says what repacking W would give.
// As -D flags:
//   ROWREAD_TILED  0: W row-major, as the step takes it (a turn: 16 pieces of 64 bytes, one a
//                  row); 1: the same bytes as if each CTA's 16 rows were stored turn by turn
//                  (a turn: 1 KB contiguous, a CTA's 64 KB contiguous), a permutation of them
//   ROWREAD_U      turns a warp has in flight: 1 (as the kernel) or 2
// Each lane loads 16 bytes of two rows a turn, and the turn's two scale codes of those rows, as
// the kernel's copies and scale loads do; the grid is the kernel's, n / 16 CTAs of 256 threads,
// 4 an SM. Example:
//   tests/probes/mxfp4_gemv_variants.sh reference: rows:@tests/probes/mxfp4_row_reads.cu \
//       tiled:-DROWREAD_TILED=1@tests/probes/mxfp4_row_reads.cu
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

#include "cuda_check.h"
#include "quant.h"

#ifndef ROWREAD_TILED
#define ROWREAD_TILED 0
#endif
#ifndef ROWREAD_U
#define ROWREAD_U 1
#endif

#define RR_ROWS 16 /* rows of W a CTA */
#define RR_WARPS 8
#define RR_T 4     /* scale blocks a turn: 64 bytes of each row */

template <bool TILED, int U>
static __global__ void __launch_bounds__(RR_WARPS * 32, 4)
read_rows(const uint8_t *__restrict__ wq, const uint8_t *__restrict__ ws, int k, unsigned *sink)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, q = lane % 4;
    const int kblocks = k / MX_BLOCK, turns = kblocks / RR_T, mine = turns / RR_WARPS;
    const size_t c0 = (size_t)blockIdx.x * RR_ROWS;
    unsigned acc = 0;
#pragma unroll 1 /* U turns in flight, not more: the compiler would hoist the next turns' loads */
    for (int i = 0; i < mine; i += U) {
        uint4 va[U], vb[U];
        uint8_t sa[U], sb[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int t = (i + u) * RR_WARPS + warp; /* the CTA's turn */
            const uint8_t *pa, *pb, *qa, *qb;
            if (TILED) { /* turn t of the CTA: 1 KB at t KB of its 64 KB; 64 scale codes */
                pa = wq + c0 * (k / 2) + (size_t)t * 1024 + 32 * lane, pb = pa + 16;
                qa = ws + c0 * kblocks + (size_t)t * 64 + 2 * lane, qb = qa + 1;
            } else { /* block j = 4 t + q of rows c0 + g and c0 + g + 8 */
                const size_t j = (size_t)RR_T * t + q;
                pa = wq + (c0 + g) * (k / 2) + 16 * j, pb = pa + (size_t)8 * (k / 2);
                qa = ws + (c0 + g) * kblocks + j, qb = qa + (size_t)8 * kblocks;
            }
            va[u] = __ldg(reinterpret_cast<const uint4 *>(pa));
            vb[u] = __ldg(reinterpret_cast<const uint4 *>(pb));
            sa[u] = __ldg(qa), sb[u] = __ldg(qb);
        }
#pragma unroll
        for (int u = 0; u < U; u++)
            acc ^= va[u].x ^ va[u].y ^ va[u].z ^ va[u].w ^ vb[u].x ^ vb[u].y ^ vb[u].z ^ vb[u].w ^
                   ((unsigned)sa[u] << 8 | sb[u]);
    }
    if (acc == 0x9e3779b9u)
        *sink = acc;
}

void gemm_mxfp4_bf16(const uint16_t *d_x, const uint8_t *d_w, const uint8_t *d_ws, float *d_y,
                     int m, int k, int n)
{
    (void)d_x, (void)m;
    if (n % RR_ROWS != 0 || k % (MX_BLOCK * RR_T * RR_WARPS * ROWREAD_U) != 0) {
        fprintf(stderr, "mxfp4_row_reads: n = %d must be a multiple of %d and k = %d of %d\n", n,
                RR_ROWS, k, MX_BLOCK * RR_T * RR_WARPS * ROWREAD_U);
        exit(2);
    }
    /* y is not computed: its first word, poisoned by the probe, is the sink */
    read_rows<ROWREAD_TILED != 0, ROWREAD_U><<<n / RR_ROWS, RR_WARPS * 32>>>(
        d_w, d_ws, k, reinterpret_cast<unsigned *>(d_y));
    CUDA_CHECK(cudaGetLastError());
}
