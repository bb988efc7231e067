/* pad_rows.h: the padded copies that let steps 2 to 4 take any k and n (given; pad_rows.cu).
 *
 * A 16-byte copy (cp.async.cg, TMA) needs every row of A and B to start on a 16-byte boundary:
 * the base 16-byte aligned and k (for A) or n (for B) a multiple of 8 bf16. Where a matrix's
 * rows are not, gemm_pad_rows copies it, in one kernel on the default stream, into a workspace
 * whose rows are padded to a multiple of 8 bf16 with zeros, and hands back what the GEMM
 * should read instead: its base and its row pitch. Where they are, it hands the matrix back as
 * it is, and copies nothing.
 *
 *   struct gemm_padded p;
 *   gemm_pad_rows(d_a, d_b, m, k, n, &p);      A' at p.a, rows p.lda apart; B' at p.b, p.ldb
 *   ... launch the GEMM on p.a, p.lda, p.b, p.ldb, with C's rows still n apart ...
 *   gemm_pad_rows_free(&p);                     the workspace back, after the GEMM in stream
 *                                               order: call it right after the launch
 *
 * In a copy, columns k .. lda - 1 of A' (and n .. ldb - 1 of B') are zero: a 16-byte piece that
 * starts before column k ends in them, and contributes 0 to C. Every call is checked: a
 * failure, the workspace's allocation included, is reported as CUDA_CHECK reports it. */
#ifndef PAD_ROWS_H
#define PAD_ROWS_H

#include "gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gemm_padded {
    const gemm_bf16 *a, *b; /* what the GEMM reads: the caller's matrices, or padded copies */
    int lda, ldb;           /* their row pitches in elements: k and n, or rounded up to 8 */
    void *d_work;           /* the copies' workspace, or NULL where nothing was copied */
};

void gemm_pad_rows(const gemm_bf16 *d_a, const gemm_bf16 *d_b, int m, int k, int n,
                   struct gemm_padded *p);
void gemm_pad_rows_free(struct gemm_padded *p);

#ifdef __cplusplus
}
#endif

#endif
