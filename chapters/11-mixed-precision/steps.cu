/* steps.cu: chapter 11's ladder, one row a step, in order. Given, and shared with the
 * solution: the grader, the bench and the plot read this table. The names are the rungs'
 * names in the bench's rows and in plots/11-mixed-precision.gp. */
#include "quant.h"

const struct quant_step QUANT_STEPS[] = {
    { "fp8", "FP8: amax, scale, round, and back" },
    { "mx",  "MXFP8, MXFP4, NVFP4: pack and unpack" },
    { "fp8_gemm", "block-scaled FP8 GEMM on wgmma" },           /* step3_fp8_gemm_sm90a.cu */
    { "mxfp4_gemv", "weight-only MXFP4, small batch" },         /* step4_mxfp4_gemv.cu */
};
const int QUANT_NUM_STEPS = sizeof QUANT_STEPS / sizeof QUANT_STEPS[0];
