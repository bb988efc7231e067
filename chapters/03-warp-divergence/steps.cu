/* steps.cu: the ladder of chapter 03, in order, and the rungs the bench and the plot measure.
 * Given, and the same for your files and the references (solutions/ does not replace it).
 *
 *   step 1  warp-uniform remap      process    (step1_remapped.cu), against process_divergent
 *   step 2  stream compaction       compact    (step2_compact.cu), against compact_atomic
 *
 * The rungs: the three demo pairs of demos.cu, then each step's pair, the given baseline
 * first. The library (cub::DeviceSelect::If, compact_cub_gpu.cu) is not a rung: the bench
 * times it beside compaction's pair where the build has it. */
#include "divergence.h"

const struct divergence_step DIVERGENCE_STEPS[] = {
    { "remapped", process, NULL },
    { "compact",  NULL,    compact },
};
const int DIVERGENCE_NUM_STEPS = sizeof DIVERGENCE_STEPS / sizeof DIVERGENCE_STEPS[0];

/* Each pair: the divergent (or contended) way first, the warp-uniform (or aggregated) way
 * second. */
const struct divergence_rung DIVERGENCE_RUNGS[] = {
    { "parity",  "lane",        process_divergent,  OUT_PROCESS,     0, NULL },
    { "parity",  "warp",        parity_warp,        OUT_WARP_PARITY, 0, NULL },
    { "keys",    "unsorted",    branch_on_key,      OUT_KEY_BRANCH,  0, NULL },
    { "keys",    "sorted",      branch_on_key,      OUT_KEY_BRANCH,  1, NULL },
    { "reduce",  "interleaved", reduce_interleaved, OUT_BLOCK_SUMS,  0, NULL },
    { "reduce",  "sequential",  reduce_sequential,  OUT_BLOCK_SUMS,  0, NULL },
    { "process", "divergent",   process_divergent,  OUT_PROCESS,     0, NULL },
    { "process", "remapped",    process,            OUT_PROCESS,     0, NULL },   /* step 1 */
    { "compact", "atomic",      NULL,               OUT_COMPACT,     0, compact_atomic },
    { "compact", "warp",        NULL,               OUT_COMPACT,     0, compact }, /* step 2 */
};
const int DIVERGENCE_NUM_RUNGS = sizeof DIVERGENCE_RUNGS / sizeof DIVERGENCE_RUNGS[0];
