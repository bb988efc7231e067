/* transpose.h: the contract of chapter 02.
 *
 * out = transpose(in) in fp32, both row-major and in device memory:
 *   in  is rows x cols (element (r, c) at d_in[r * cols + c]),
 *   out is cols x rows (element (c, r) at d_out[c * rows + r]), and out(c, r) = in(r, c).
 * Any rows, cols >= 1 with rows * cols < 2^31: nothing is a multiple of the tile. Each launcher
 * launches its kernel on the default stream, checks the launch, and returns without
 * synchronising.
 *
 * The grader, the bench and the book call only what is declared here. */
#ifndef TRANSPOSE_H
#define TRANSPOSE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Yours: a transpose whose global reads AND writes are both coalesced. */
void transpose(const float *d_in, float *d_out, int rows, int cols);

/* The baseline, given: one thread per element, consecutive threadIdx.x on consecutive columns
 * of in. Its reads are coalesced and its writes are not. */
void transpose_naive(const float *d_in, float *d_out, int rows, int cols);

/* The ceiling, given: a copy that moves the same bytes as a transpose (rows * cols floats read,
 * rows * cols floats written, d_out[i] = d_in[i]) with the same grid. Not a transpose: no
 * transpose can move these bytes faster than this copy does. */
void copy_same_bytes(const float *d_in, float *d_out, int rows, int cols);

/* The rungs a file offers, in order, for the bench and the plot. Each one is a transpose; the
 * bench measures copy_same_bytes beside them as the ceiling. */
typedef void (*transpose_fn)(const float *d_in, float *d_out, int rows, int cols);
struct transpose_rung {
    const char *name;
    transpose_fn fn;
};
extern const struct transpose_rung TRANSPOSE_RUNGS[];
extern const int TRANSPOSE_NUM_RUNGS;

#ifdef __cplusplus
}
#endif

#endif
