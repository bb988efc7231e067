/* steps.cu: chapter 07's ladder, one row a step, in order. Given, and shared with the
 * solution: the grader, the bench, the plot and the profile driver read this table, and the
 * build links the same table over the references as ref_MEMBOUND_STEPS (membound.h). The names
 * are the rungs' names in the bench's rows and in plots/07-memory-bound.gp. */
#include "membound.h"

const struct membound_step MEMBOUND_STEPS[] = {
    { "tree",        "sum: shared-memory tree",         MB_SUM, sum_tree,
      NULL, NULL, NULL, NULL, NULL, NULL },
    { "shuffle",     "sum: shuffles, float4, in flight", MB_SUM, sum_shuffle,
      NULL, NULL, NULL, NULL, NULL, NULL },
    { "single_pass", "sum: one launch, last block done", MB_SUM, sum_single_pass,
      NULL, NULL, NULL, NULL, NULL, NULL },
    { "softmax",     "softmax: one pass, online max",    MB_SOFTMAX, NULL,
      softmax_f32, softmax_bf16, NULL, NULL, NULL, NULL },
    { "norms",       "RMSNorm and LayerNorm, Welford",   MB_NORM, NULL,
      NULL, NULL, rmsnorm_f32, rmsnorm_bf16, layernorm_f32, layernorm_bf16 },
};
const int MEMBOUND_NUM_STEPS = sizeof MEMBOUND_STEPS / sizeof MEMBOUND_STEPS[0];
