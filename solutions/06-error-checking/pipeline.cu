/* pipeline.cu: chapter 06, the solution.
 *
 * CUDA_TRY records the first failing call (error, file, line, the call's text) and jumps to
 * the function's cleanup, which frees everything and returns the error: one exit path, taken
 * on success and on every failure, so nothing can leak on a path nobody tested.
 *
 * run_pipeline checks every launch with cudaGetLastError (a launch returns nothing; a refused
 * launch is only reported there, and cudaGetLastError also clears it, so it cannot surface
 * again in the next, innocent check), synchronises every PIPELINE_SYNC_EVERY iterations to
 * collect the faults of kernels that ran, and once more after the last copy. When something
 * failed, one more synchronisation tells a sticky error (it is returned again: the context is
 * gone) from one that only refused a launch (the device still answers). */
#include <stddef.h>

#include "pipeline.h"

/* Synchronise after every 10th iteration. Each synchronisation drains the stream: the GPU
 * idles while the host wakes up and launches again (about one launch latency). Expect: once
 * per iteration adds that idle time to every iteration's 3 kernels; once per 10, a tenth of
 * it. The price: a fault inside a kernel is pinned to a window of up to 10 iterations. */
#define PIPELINE_SYNC_EVERY 10

/* Needs, in scope, `struct cuda_failure *fail` and a label `cleanup`. Records only the first
 * failure: what cleanup's calls return after it is not the cause. */
#define CUDA_TRY(expr) do {                                                       \
    cudaError_t err_ = (expr);                                                    \
    if (err_ != cudaSuccess) {                                                    \
        if (fail->err == cudaSuccess) {                                           \
            fail->err = err_;                                                     \
            fail->file = __FILE__;                                                \
            fail->line = __LINE__;                                                \
            fail->call = #expr;                                                   \
        }                                                                         \
        goto cleanup;                                                             \
    }                                                                             \
} while (0)

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
    size_t bytes = (size_t)spec->n * sizeof(float);
    float *d_a = NULL, *d_b = NULL;
    cudaStream_t stream = NULL;
    int every = spec->sync_every > 0 ? spec->sync_every : PIPELINE_SYNC_EVERY;
    int at_iteration = -1, at_stage = -1; /* where the loop is: what a failure is pinned to */
    int last_synced = -1;                 /* every iteration up to here is known good */

    const struct loop_report clean = { { cudaSuccess, NULL, 0, NULL }, every, -1, -1, -1, 0 };
    *report = clean;

    CUDA_TRY(cudaMalloc((void **)&d_a, bytes));
    CUDA_TRY(cudaMalloc((void **)&d_b, bytes));
    CUDA_TRY(cudaStreamCreate(&stream));
    CUDA_TRY(cudaMemcpyAsync(d_a, spec->h_in, bytes, cudaMemcpyHostToDevice, stream));

    for (int it = 0; it < spec->iterations; it++) {
        at_iteration = it;
        for (int s = 0; s < PIPELINE_NUM_STAGES; s++) {
            at_stage = s;
            PIPELINE_STAGES[s].launch(d_a, d_b, spec->n, it, &spec->fault, stream);
            /* catches a refused launch now; a fault of a kernel that already ran may show up
             * here too, on a GPU, if it happened before this launch */
            CUDA_TRY(cudaGetLastError());
        }
        at_stage = -1;
        if ((it + 1) % every == 0) {
            CUDA_TRY(cudaStreamSynchronize(stream));
            last_synced = it;
        }
    }
    /* the copy is queued behind the last kernels; the synchronisation both waits for it (the
     * host must not read h_out before) and collects the faults of the last, partial window */
    CUDA_TRY(cudaMemcpyAsync(spec->h_out, d_a, bytes, cudaMemcpyDeviceToHost, stream));
    CUDA_TRY(cudaStreamSynchronize(stream));

cleanup:
    if (fail->err != cudaSuccess) {
        /* sticky or not: a lost context returns its error to every later call, even this one */
        report->device_lost = cudaDeviceSynchronize() != cudaSuccess;
        report->detected = at_iteration;
        if (report->device_lost) {
            /* a fault inside a kernel: any iteration since the last good synchronisation */
            report->first_possible = at_iteration < 0 ? -1 : last_synced + 1;
            report->stage = -1;
        } else {
            /* refused on its own arguments: this launch, this kernel */
            report->first_possible = at_iteration;
            report->stage = at_stage;
            (void)cudaGetLastError(); /* reported in *report: do not let it surface again */
        }
    }
    /* on every path; their errors do not replace the first one (after a sticky error they
     * all fail, and the process must end anyway: the driver frees what it held then) */
    if (stream)
        cudaStreamDestroy(stream);
    cudaFree(d_b);
    cudaFree(d_a);
    return fail->err;
}
