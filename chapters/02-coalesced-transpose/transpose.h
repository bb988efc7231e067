/* transpose.h: the contract of chapter 02.
 *
 * out = transpose(in) in fp32, both row-major and in device memory:
 *   in  is rows x cols (element (r, c) at d_in[r * cols + c]),
 *   out is cols x rows (element (c, r) at d_out[c * rows + r]), and out(c, r) = in(r, c).
 * Any rows, cols >= 1 with rows * cols < 2^31: nothing is a multiple of the tile. Each launcher
 * launches its kernel(s) on the default stream, checks the launch, and returns without
 * synchronising.
 *
 * The grader, the bench and the book call only what is declared here. */
#ifndef TRANSPOSE_H
#define TRANSPOSE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*transpose_fn)(const float *d_in, float *d_out, int rows, int cols);

/* ---- yours: one launcher a step, each in its own file, in the order of the ladder ---------- */

/* Step 1, step1_tiled.cu: global reads AND global writes both coalesced. */
void transpose_tiled(const float *d_in, float *d_out, int rows, int cols);
/* Step 2, step2_padded.cu: step 1, with shared-memory accesses free of bank conflicts. */
void transpose_padded(const float *d_in, float *d_out, int rows, int cols);
/* Step 3, step3_swizzled.cu: step 2, conflict-free with a 32 x 32 float tile and no more
 * shared memory than that. */
void transpose_swizzled(const float *d_in, float *d_out, int rows, int cols);
/* Step 4, step4_padded_8.cu: step 2's kernel, each thread moving at least 8 elements. */
void transpose_padded_8(const float *d_in, float *d_out, int rows, int cols);
/* Step 5, step5_vec4.cu: every global load and store a 16-byte vector (float4) wherever rows,
 * cols and both pointers allow it (rows and cols multiples of 4, pointers 16-byte aligned);
 * correct on every other shape too. */
void transpose_vec4(const float *d_in, float *d_out, int rows, int cols);

/* ---- given, in transpose_naive.cu ------------------------------------------------------------ */

/* The baseline: one thread per element, consecutive threadIdx.x on consecutive columns of in.
 * Its reads are coalesced and its writes are not. */
void transpose_naive(const float *d_in, float *d_out, int rows, int cols);

/* The ceiling: a copy that moves the same bytes as a transpose (rows * cols floats read,
 * rows * cols floats written, d_out[i] = d_in[i]) with the same grid. Not a transpose: no
 * transpose can move these bytes faster than this copy does. */
void copy_same_bytes(const float *d_in, float *d_out, int rows, int cols);

/* ---- the ladder ------------------------------------------------------------------------------
 * The step table (steps.cu): entry 0 is the given baseline, entry k (1 to
 * TRANSPOSE_NUM_STEPS - 1) is step k's launcher, named as the bench and the plots name its
 * rung. The grader grades entry k as step k against the reference of entry k - 1; the bench
 * measures every entry and the copy kernel; the profile driver runs an entry by name. */
struct transpose_step {
    const char *name;   /* the rung: "naive", "tiled", ... */
    const char *title;  /* the ladder's line: "shared-memory tile" */
    transpose_fn fn;
};
extern const struct transpose_step TRANSPOSE_STEPS[];
extern const int TRANSPOSE_NUM_STEPS;
/* The same table over the references (solutions/02-coalesced-transpose/), which the build links
 * into every grader of this chapter under the prefix ref_: the baseline of each step. */
extern const struct transpose_step ref_TRANSPOSE_STEPS[];

#ifdef __cplusplus
}
#endif

#endif
