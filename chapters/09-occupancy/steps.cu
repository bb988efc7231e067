/* steps.cu: chapter 09's ladder, one row a step, in order, and step 2's count of the bytes in
 * flight an SM. Given, and shared with the solution: the grader, the bench and the book read
 * them. */
#include "occupancy.h"

const struct occ_step OCC_STEPS[] = {
    { "calculator", "an occupancy calculator" },
    { "inflight",   "Little's law: bytes in flight" },
    { "budget",     "a launcher that reads its budget" },
    { "slices",     "smaller GPUs inside the GPU" },
};
const int OCC_NUM_STEPS = sizeof OCC_STEPS / sizeof OCC_STEPS[0];

/* blocks an SM x threads x loads x floats a load x 4 bytes */
double inflight_bytes_per_sm(const struct inflight *c)
{
    return (double)c->blocks_per_sm * c->threads * c->loads * c->vec * sizeof(float);
}
