/* rungs.cu: the ladder of chapter 05, in order, for the grader, the bench and the plot: the
 * five steps, then the stage-count sweep of step 3.
 *
 * A build links the steps it has: the chapter's own files (the starter) have steps 1 and 2,
 * solutions/ adds steps 3 to 5, and the CPU backend leaves out the *_sm90.cu and *_sm90a.cu
 * files (TMA, mbarrier and wgmma are PTX it cannot run). The launchers a build may lack are
 * weak here, so a step that is not linked is NULL in the table, and the grader skips it by
 * name, saying why. */
#include "gemm.h"

extern "C" {
void gemm_ring(const gemm_bf16 *, const gemm_bf16 *, float *, int, int, int)
    __attribute__((weak));
void gemm_ring_2(const gemm_bf16 *, const gemm_bf16 *, float *, int, int, int)
    __attribute__((weak));
void gemm_ring_4(const gemm_bf16 *, const gemm_bf16 *, float *, int, int, int)
    __attribute__((weak));
void gemm_tma(const gemm_bf16 *, const gemm_bf16 *, float *, int, int, int)
    __attribute__((weak));
void gemm_wgmma(const gemm_bf16 *, const gemm_bf16 *, float *, int, int, int)
    __attribute__((weak));
}

const struct gemm_rung GEMM_RUNGS[] = {
    /* name        launcher        min_cc sweep arch_specific */
    { "sync",      gemm_sync,      80,    0,    0 },  /* step 1: step1_sync.cu */
    { "pipelined", gemm_pipelined, 80,    0,    0 },  /* step 2: step2_pipelined.cu */
    { "ring",      gemm_ring,      80,    0,    0 },  /* step 3: step3_ring.cu */
    { "tma",       gemm_tma,       90,    0,    0 },  /* step 4: step4_tma_sm90.cu */
    { "wgmma",     gemm_wgmma,     90,    0,    1 },  /* step 5: step5_wgmma_sm90a.cu */
    { "stages:2",  gemm_ring_2,    80,    1,    0 },  /* step 3 with 2, 3 and 4 stages */
    { "stages:3",  gemm_ring,      80,    1,    0 },
    { "stages:4",  gemm_ring_4,    80,    1,    0 },
};
const int GEMM_NUM_RUNGS = sizeof GEMM_RUNGS / sizeof GEMM_RUNGS[0];
