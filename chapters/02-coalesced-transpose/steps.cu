/* steps.cu: chapter 02's ladder, in order. Given: the grader, the bench, the plots and the
 * profile driver all read this table, and the build links a second copy of it over the
 * references (ref_TRANSPOSE_STEPS), whose entry k - 1 is the baseline of step k. */
#include "transpose.h"

const struct transpose_step TRANSPOSE_STEPS[] = {
    { "naive",    "the given baseline",                transpose_naive },
    { "tiled",    "shared-memory tile",                transpose_tiled },
    { "padded",   "padded tile",                       transpose_padded },
    { "swizzled", "XOR swizzle",                       transpose_swizzled },
    { "padded_8", "more bytes in flight a thread",     transpose_padded_8 },
    { "vec4",     "16-byte vectors, 4x4 in registers", transpose_vec4 },
};
const int TRANSPOSE_NUM_STEPS = sizeof TRANSPOSE_STEPS / sizeof TRANSPOSE_STEPS[0];
