/* pipeline.cu: chapter 06, yours. The contract is pipeline.h; the kernels and their launchers
 * are given in pipeline_kernels.cu.
 *
 * Two things to write:
 *   1. CUDA_TRY(expr): run a CUDA call; if it failed, record the first failure (error, file,
 *      line, the call's text) in *fail and jump to the function's `cleanup` label.
 *   2. run_pipeline: the host loop, checked, synchronised at a cadence you choose, freeing
 *      everything on every path.
 * Nothing in this file may exit(): it is library code, and its caller decides. */
#include <stddef.h>

#include "pipeline.h"

/* Your cadence: synchronise after every PIPELINE_SYNC_EVERY iterations (when the spec says 0).
 * TODO: choose it, and write here what it costs and what it buys (see the lesson). */
#define PIPELINE_SYNC_EVERY 1

/* Needs, in scope, `struct cuda_failure *fail` and a label `cleanup`.
 * TODO: record err_ in *fail, with __FILE__, __LINE__ and the call's text (#expr), unless a
 * failure is already recorded there (the first one is the cause). Now it only jumps. */
#define CUDA_TRY(expr) do {                                                       \
    cudaError_t err_ = (expr);                                                    \
    if (err_ != cudaSuccess) {                                                    \
        goto cleanup;                                                             \
    }                                                                             \
} while (0)

/* Given: the planted failure the grader runs your macro on. */
cudaError_t cuda_try_demo(struct cuda_failure *fail, int *line)
{
    void *d_small = NULL, *d_huge = NULL;
    fail->err = cudaSuccess;
    CUDA_TRY(cudaMalloc(&d_small, 4096));
    *line = __LINE__ + 1;
    CUDA_TRY(cudaMalloc(&d_huge, (size_t)1 << 62));
cleanup:
    cudaFree(d_huge);
    cudaFree(d_small);
    /* a refused cudaMalloc also sits in the last-error slot: it is handled, so consume it */
    (void)cudaGetLastError();
    return fail->err;
}

cudaError_t run_pipeline(const struct pipeline_spec *spec, struct loop_report *report)
{
    struct cuda_failure *fail = &report->failure;
    int every = spec->sync_every > 0 ? spec->sync_every : PIPELINE_SYNC_EVERY;
    const struct loop_report clean = { { cudaSuccess, NULL, 0, NULL }, every, -1, -1, -1, 0 };
    *report = clean;

    /* TODO 1: allocate d_a and d_b (spec->n floats each), create a stream, and copy spec->h_in
     *         to d_a on it, each through CUDA_TRY.
     * TODO 2: for each iteration, launch every stage in order:
     *             PIPELINE_STAGES[s].launch(d_a, d_b, spec->n, it, &spec->fault, stream);
     *         check each launch, and synchronise the stream after every `every` iterations.
     *         Keep track of where you are (iteration, stage) and of the last iteration a
     *         synchronisation vouched for.
     * TODO 3: copy d_a to spec->h_out on the stream, and synchronise before returning.
     * TODO 4: cleanup (one label, reached on success and on every failure): when something
     *         failed, fill report->detected, first_possible, stage and device_lost (is the
     *         error sticky? ask the device once more); then destroy the stream and free both
     *         buffers, whatever happened. Return fail->err. */
    fail->err = cudaErrorNotYetImplemented;
    fail->file = __FILE__;
    fail->line = __LINE__;
    fail->call = "run_pipeline: TODO";
    return fail->err;
}
