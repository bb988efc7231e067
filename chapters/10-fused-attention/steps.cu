/* steps.cu: chapter 10's ladder, one row a step, in order. Given, and shared with the
 * solution: the grader, the bench, the plot and the profile driver read this table. The names
 * are the rungs' names in the bench's rows ("unfused_bf16", "fused_simt_f16") and in
 * plots/10-fused-attention.gp.
 *
 * The CPU backend leaves out step4_wgmma_sm90a.cu (TMA, mbarrier and wgmma are PTX it cannot
 * run), so step 4's launchers are weak (attention.h): NULL there, where the grader says why it
 * skips the step. */
#include "attention.h"

const struct attention_step ATTENTION_STEPS[] = {
    { "unfused", "unfused (given): cuBLAS, softmax, cuBLAS", 1, 0, attention_unfused_bf16,
      attention_unfused_f16, 0 },
    { "fused_simt", "fused, SIMT: online softmax", 0, 1, attention_fused_bf16,
      attention_fused_f16, 0 },
    { "fused_mma", "fused, tensor cores: ldmatrix, mma.sync, cp.async", 0, 1,
      attention_mma_bf16, attention_mma_f16, 0 },
    { "fused_wgmma", "fused, Hopper: wgmma, TMA, warp specialisation", 0, 1,
      attention_wgmma_bf16, attention_wgmma_f16, 1 },
};
const int ATTENTION_NUM_STEPS = sizeof ATTENTION_STEPS / sizeof ATTENTION_STEPS[0];
