/* step1_occupancy.cu: chapter 09, step 1 of 4, an occupancy calculator. Your file.
 *
 * The contract (occupancy.h): blocks_per_sm(k, d) returns the most blocks of kernel k that one SM
 * of device d holds at once, exactly what cudaOccupancyMaxActiveBlocksPerMultiprocessor answers;
 * 0 when a block of k cannot run on d at all. k gives a block's threads, a thread's registers, a
 * block's static and dynamic shared memory, the most dynamic shared memory the kernel may launch
 * with, and its preferred carveout; d gives the SM's limits and allocation units (devices.cu says
 * where each figure comes from). Pure host code: no CUDA call.
 *
 * What the grader checks (make grade CH=09 STEP=1):
 *   exact    your answer against the CUDA toolkit's own calculator (cuda_occupancy.h's
 *            cudaOccMaxActiveBlocksPerMultiprocessor) on 37 kernels, on each of the four
 *            devices' limits: H200 (9.0), A100 (8.0), L4 (8.9), T4 (7.5); every configuration
 *            exact, each wrong one named with what limits it
 *   runtime  against the runtime's cudaOccupancyMaxActiveBlocksPerMultiprocessor for the real
 *            kernels of occupancy_kernels.cu (their registers the compiler's), on the GPU it runs
 *            on, or on the CPU backend under each of EMU_DEVICE=h200, a100, l4 and t4
 *
 * The lesson is README.md beside this file; its hints for step 1 are there too. */
#include "occupancy.h"

int blocks_per_sm(const struct occ_kernel *k, const struct occ_device *d)
{
    /* TODO: the smallest of the four limits (warps, registers, shared memory, blocks an SM),
     * each rounded the way the hardware allocates; 0 when one block does not fit. */
    (void)k;
    (void)d;
    return -1;
}
