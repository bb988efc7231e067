/* steps.cu: chapter 11's ladder, one row a step, in order. Given, and shared with the
 * solution: the grader, the bench and the plot read this table. The names are the rungs'
 * names in the bench's rows and in plots/11-mixed-precision.gp. */
#include "quant.h"

const struct quant_step QUANT_STEPS[] = {
    { "fp8", "FP8: amax, scale, round, and back" },
    { "mx",  "MXFP8, MXFP4, NVFP4: pack and unpack" },
};
const int QUANT_NUM_STEPS = sizeof QUANT_STEPS / sizeof QUANT_STEPS[0];
