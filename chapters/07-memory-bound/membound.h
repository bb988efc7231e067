/* membound.h: the contract of chapter 07, memory-bound kernels: a ladder of five steps.
 *
 *   step 1  sum, a shared-memory tree        sum_tree         (step1_tree.cu)
 *   step 2  sum, shuffles and float4 loads   sum_shuffle      (step2_shuffle.cu)
 *   step 3  sum in a single pass             sum_single_pass  (step3_single_pass.cu)
 *   step 4  row softmax, one pass            softmax_f32, softmax_bf16        (step4_softmax.cu)
 *   step 5  RMSNorm and LayerNorm            rmsnorm_*, layernorm_* (f32, bf16) (step5_norms.cu)
 *
 * Given: the baselines each step is measured against (sum_atomic.cu, softmax_three_pass.cu,
 * norms_two_moment.cu), the copy kernel that is every step's ceiling (copy.cu), and, on a GPU,
 * CUB's cub::DeviceReduce::Sum for scale (sum_cub_gpu.cu).
 *
 * Every launcher takes device pointers, launches on the default stream, checks the launch and
 * returns without synchronising. `d_scratch` is device memory of at least
 * membound_scratch_bytes(rows) bytes (rows = 1 for a sum) that the launcher may use as it likes;
 * it holds garbage on entry (the grader fills it with 0xff bytes), so a launcher that needs a
 * counter or an accumulator at zero sets it itself. Nothing else may be allocated.
 *
 * Sizes: a sum takes any n from 1 to 2^30; a row operation any rows >= 1 and cols from 1 to
 * 2^20, rows * cols <= 2^30. Nothing is a multiple of a warp, a block or a vector width, and a
 * row of bf16 starts on a 2-byte boundary only (cols odd): a kernel that loads 16 bytes at a
 * time handles the rows (or the arrays) that do not allow it.
 *
 * Arithmetic is fp32 throughout, for bf16 data too (load, widen, compute, round once on the
 * store). The grader, the bench and the book call only what is declared here. */
#ifndef MEMBOUND_H
#define MEMBOUND_H

#include <stddef.h>

#ifdef __cplusplus
#include <cuda_bf16.h>
typedef __nv_bfloat16 mb_bf16;
extern "C" {
#else
/* The C side (the grader) sees the same two bytes: the bits of a bfloat16. */
typedef struct { unsigned short bits; } mb_bf16;
#endif

/* The scratch every launcher is given: 8 bytes a row and 16 MiB more. The 16 MiB is set by
 * step 1, which keeps one float for every 512 elements of a sum and then for every 512 of
 * those: 8 MiB and 16 KiB at n = 2^30. */
static inline size_t membound_scratch_bytes(int rows)
{
    return (size_t)(rows > 0 ? rows : 1) * 8 + ((size_t)1 << 24);
}

/* ---- steps 1-3: the sum of n floats -------------------------------------------------------
 *
 * *d_out = d_in[0] + ... + d_in[n - 1], in fp32, in any order (the grader's tolerance allows
 * any order: the lesson derives it). *d_out holds garbage on entry. NaN anywhere gives NaN. */
typedef void (*sum_fn)(const float *d_in, int n, float *d_out, void *d_scratch);

/* Given (sum_atomic.cu): every thread atomicAdds its element into *d_out. */
void sum_atomic(const float *d_in, int n, float *d_out, void *d_scratch);
/* Step 1: each block sums its part in a shared-memory tree, one partial a block; the partials
 * are summed the same way (a second launch, or more). */
void sum_tree(const float *d_in, int n, float *d_out, void *d_scratch);
/* Step 2: a grid-stride loop of float4 loads, several in flight a thread; warp shuffles for
 * the last 32 values of every tree. */
void sum_shuffle(const float *d_in, int n, float *d_out, void *d_scratch);
/* Step 3: one launch: the last block to finish sums the blocks' partials. */
void sum_single_pass(const float *d_in, int n, float *d_out, void *d_scratch);
/* For scale, GPU builds only (sum_cub_gpu.cu): cub::DeviceReduce::Sum, its temporary storage
 * in d_scratch. Weak, so a build without it (the CPU backend) sees NULL. */
void sum_cub(const float *d_in, int n, float *d_out, void *d_scratch) __attribute__((weak));

/* ---- step 4: softmax over each row of a rows x cols row-major matrix ----------------------
 *
 * y[r][c] = exp(x[r][c] - m_r) / sum_j exp(x[r][j] - m_r), m_r = max_j x[r][j]. Rows of any
 * magnitude (+-1e4 included), -inf entries (exp gives 0; a row that is all -inf but one entry
 * gives 1 there), and NaN: a row holding a NaN is NaN throughout. */
typedef void (*softmax_f32_fn)(const float *d_in, float *d_out, int rows, int cols,
                               void *d_scratch);
typedef void (*softmax_bf16_fn)(const mb_bf16 *d_in, mb_bf16 *d_out, int rows, int cols,
                                void *d_scratch);
/* Given (softmax_three_pass.cu): three kernels, a block a row each: the row's max into the
 * scratch, the sum of exp(x - max) into the scratch, then each output. */
void softmax_three_pass_f32(const float *d_in, float *d_out, int rows, int cols, void *d_scratch);
void softmax_three_pass_bf16(const mb_bf16 *d_in, mb_bf16 *d_out, int rows, int cols,
                             void *d_scratch);
/* Step 4: one kernel, reading each row once from memory: the online max and sum, a warp a row
 * for short rows and a block a row for long ones, the launcher choosing from cols. */
void softmax_f32(const float *d_in, float *d_out, int rows, int cols, void *d_scratch);
void softmax_bf16(const mb_bf16 *d_in, mb_bf16 *d_out, int rows, int cols, void *d_scratch);

/* ---- step 5: RMSNorm and LayerNorm over each row, with the weight (and bias) fused --------
 *
 *   RMSNorm:   y[r][c] = x[r][c] / sqrt(mean_j x[r][j]^2 + eps) * w[c]
 *   LayerNorm: y[r][c] = (x[r][c] - mu_r) / sqrt(var_r + eps) * w[c] + b[c],
 *              mu_r = mean_j x[r][j], var_r = mean_j (x[r][j] - mu_r)^2 (the biased variance)
 * w and b hold cols values. A NaN in a row makes that row NaN. */
typedef void (*rmsnorm_f32_fn)(const float *d_x, const float *d_w, float *d_y, int rows,
                               int cols, float eps, void *d_scratch);
typedef void (*rmsnorm_bf16_fn)(const mb_bf16 *d_x, const mb_bf16 *d_w, mb_bf16 *d_y, int rows,
                                int cols, float eps, void *d_scratch);
typedef void (*layernorm_f32_fn)(const float *d_x, const float *d_w, const float *d_b,
                                 float *d_y, int rows, int cols, float eps, void *d_scratch);
typedef void (*layernorm_bf16_fn)(const mb_bf16 *d_x, const mb_bf16 *d_w, const mb_bf16 *d_b,
                                  mb_bf16 *d_y, int rows, int cols, float eps, void *d_scratch);
/* Given (norms_two_moment.cu): a block a row, one pass accumulating sum x and sum x^2, and the
 * variance as E[x^2] - E[x]^2. Fast, and wrong where the mean is large against the spread:
 * the subtraction cancels. The RMSNorm beside it is right (it needs only sum x^2). */
void rmsnorm_two_moment_f32(const float *d_x, const float *d_w, float *d_y, int rows, int cols,
                            float eps, void *d_scratch);
void rmsnorm_two_moment_bf16(const mb_bf16 *d_x, const mb_bf16 *d_w, mb_bf16 *d_y, int rows,
                             int cols, float eps, void *d_scratch);
void layernorm_two_moment_f32(const float *d_x, const float *d_w, const float *d_b, float *d_y,
                              int rows, int cols, float eps, void *d_scratch);
void layernorm_two_moment_bf16(const mb_bf16 *d_x, const mb_bf16 *d_w, const mb_bf16 *d_b,
                               mb_bf16 *d_y, int rows, int cols, float eps, void *d_scratch);
/* Step 5: each row read once from memory (kept in registers, or in shared memory for long
 * rows), the variance by Welford's update or by a second pass over what is held. */
void rmsnorm_f32(const float *d_x, const float *d_w, float *d_y, int rows, int cols, float eps,
                 void *d_scratch);
void rmsnorm_bf16(const mb_bf16 *d_x, const mb_bf16 *d_w, mb_bf16 *d_y, int rows, int cols,
                  float eps, void *d_scratch);
void layernorm_f32(const float *d_x, const float *d_w, const float *d_b, float *d_y, int rows,
                   int cols, float eps, void *d_scratch);
void layernorm_bf16(const mb_bf16 *d_x, const mb_bf16 *d_w, const mb_bf16 *d_b, mb_bf16 *d_y,
                    int rows, int cols, float eps, void *d_scratch);

/* ---- the ceiling: a copy (copy.cu, given) --------------------------------------------------
 * d_out[0 .. bytes) = d_in[0 .. bytes): 16-byte loads and stores in a grid-stride loop (the
 * bytes before the first 16-byte boundary and after the last one byte by byte). What a kernel
 * that reads its input once and writes its output once can hope for. */
void copy_bytes(const void *d_in, void *d_out, size_t bytes);

/* ---- the steps, in order (steps.cu) --------------------------------------------------------
 * One row a step: its kind and its launchers (the others NULL). */
enum membound_kind { MB_SUM, MB_SOFTMAX, MB_NORM };
struct membound_step {
    const char *name;               /* the rung's name in the bench: "tree", "softmax" */
    const char *title;              /* the ladder's line: "shared-memory tree" */
    enum membound_kind kind;
    sum_fn sum;
    softmax_f32_fn softmax_f32;
    softmax_bf16_fn softmax_bf16;
    rmsnorm_f32_fn rmsnorm_f32;
    rmsnorm_bf16_fn rmsnorm_bf16;
    layernorm_f32_fn layernorm_f32;
    layernorm_bf16_fn layernorm_bf16;
};
extern const struct membound_step MEMBOUND_STEPS[];
extern const int MEMBOUND_NUM_STEPS;
/* The same table over the references, which the build links into every grader of this chapter
 * under the prefix ref_: step k is timed against the reference of step k - 1 (steps 1, 4 and 5
 * against their given baselines). */
extern const struct membound_step ref_MEMBOUND_STEPS[];
extern const int ref_MEMBOUND_NUM_STEPS;

#ifdef __cplusplus
}
#endif

#endif
