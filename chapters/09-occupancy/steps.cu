/* steps.cu: chapter 09's ladder, one row a step, in order. Given, and shared with the solution:
 * the grader, the bench and the book read this table. */
#include "occupancy.h"

const struct occ_step OCC_STEPS[] = {
    { "calculator", "an occupancy calculator" },
};
const int OCC_NUM_STEPS = sizeof OCC_STEPS / sizeof OCC_STEPS[0];
