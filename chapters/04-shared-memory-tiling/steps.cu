/* steps.cu: chapter 04's ladder, one row a step, in order. Given, and shared with the
 * solution: the grader, the bench, the plot and the profile driver read this table, and the
 * build links the same table over the references as ref_TILED_STEPS (tiled.h). The names are
 * the rungs' names in the bench's rows and in plots/04-shared-memory-tiling.gp. */
#include "tiled.h"

const struct tiled_step TILED_STEPS[] = {
    { "tiled",      "32x32 shared tile",                 matmul_tiled },
    { "blocked_1d", "1D register blocking",              matmul_blocked_1d },
    { "blocked_2d", "2D register blocking",              matmul_blocked_2d },
    { "vectorized", "float4 loads, transposed A tile",   matmul_vectorized },
    { "warptiled",  "warp tiling",                       matmul_warptiled },
    { "tuned",      "split-K and the configuration table", matmul_tuned },
    { "multistage", "cp.async ring, register double buffering", matmul_multistage },
};
const int TILED_NUM_STEPS = sizeof TILED_STEPS / sizeof TILED_STEPS[0];
