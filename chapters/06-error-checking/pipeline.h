/* pipeline.h: the contract of chapter 06.
 *
 * A host loop that launches a small pipeline of kernels many times and survives its errors:
 * it finds them, says where they happened, frees what it holds, and hands the error back.
 *
 * The pipeline (given, pipeline_kernels.cu): two buffers of n floats, d_a and d_b; each
 * iteration runs PIPELINE_NUM_STAGES kernels, in order, on one stream:
 *     0 blur   d_b[i] = (d_a[i-1] + d_a[i] + d_a[i+1]) / 3   (the edges repeat their element)
 *     1 bias   d_b[i] = d_b[i] + 1
 *     2 copy   d_a[i] = d_b[i]
 * so every iteration adds 1 to every element (and smooths them): the result says how many
 * iterations ran.
 * The given launchers only launch: they do not check and do not synchronise (that is your job,
 * and the one place in this workbook where a launcher does not end with CUDA_CHECK).
 *
 * Faults: the grader asks a launcher to fail at one (iteration, stage) through the spec's
 * `fault`. An out-of-bounds write and a trap are sticky (the context is lost until the process
 * ends); an invalid launch configuration is not (the launch is refused and nothing runs).
 *
 * Yours, in pipeline.cu: the CUDA_TRY macro and run_pipeline. Library code: nothing here may
 * exit() or abort(); every failure is returned.
 *
 * The grader, the bench and the book call only what is declared here. */
#ifndef PIPELINE_H
#define PIPELINE_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- what CUDA_TRY records ---------------------------------------------------------------- */

/* The first CUDA call that failed: its error, where it is written, and the call as written. */
struct cuda_failure {
    cudaError_t err;       /* cudaSuccess while nothing has failed */
    const char *file;      /* __FILE__ at the call */
    int line;              /* __LINE__ at the call */
    const char *call;      /* the call's text, e.g. "cudaStreamSynchronize(stream)" */
};

/* Runs a planted failing call through CUDA_TRY (given, in pipeline.cu, so that the file and
 * line it records are in your file): a small cudaMalloc that succeeds, then a cudaMalloc of
 * 2^62 bytes that cannot. Sets *line to the line of the failing call, records the failure in
 * *fail, frees the small buffer, and returns the error. */
cudaError_t cuda_try_demo(struct cuda_failure *fail, int *line);

/* ---- the pipeline ------------------------------------------------------------------------- */

enum fault_kind {
    FAULT_NONE = 0,
    FAULT_OUT_OF_BOUNDS,  /* one thread writes 1 TiB past the stage's output: illegal address, sticky */
    FAULT_BAD_CONFIG,     /* the stage is launched with 2048 threads a block: refused, not sticky */
    FAULT_TRAP,           /* one thread calls __trap(): launch failure, sticky */
};

struct fault {
    enum fault_kind kind;
    int iteration;        /* 0-based */
    int stage;            /* 0 .. PIPELINE_NUM_STAGES - 1 */
};

struct pipeline_spec {
    int n;                /* floats in each buffer, >= 1 */
    int iterations;       /* >= 1 */
    int sync_every;       /* synchronise after every sync_every-th iteration; 0: your own
                             cadence (PIPELINE_SYNC_EVERY in pipeline.cu) */
    const float *h_in;    /* n floats, host memory: the initial d_a */
    float *h_out;         /* n floats, host memory: the final d_a, written only on success */
    struct fault fault;   /* FAULT_NONE for a run that should succeed */
};

/* What run_pipeline found. On success: failure.err == cudaSuccess, and first_possible,
 * detected and stage are -1. On failure, the iterations the failure can be pinned to:
 *
 *   first_possible <= the iteration that failed <= detected
 *
 * A launch refused on its own arguments is known at once: first_possible == detected, and
 * `stage` names the kernel. A fault inside a running kernel is only seen at the next
 * synchronisation (or a later call that reports it): first_possible is the iteration after
 * the last synchronisation that succeeded, detected the iteration of the call that saw it,
 * and `stage` is -1 (any kernel of those iterations may have done it). */
struct loop_report {
    struct cuda_failure failure;  /* the first failing call, as CUDA_TRY recorded it */
    int sync_every;               /* the cadence this run used (>= 1) */
    int first_possible;
    int detected;
    int stage;                    /* the failing kernel where it can be known, else -1 */
    int device_lost;              /* 1: the error is sticky, this process can use the GPU no more */
};

/* Yours: allocate d_a and d_b, create a stream, copy h_in to d_a, run spec->iterations
 * iterations of the pipeline on the stream checking every launch, synchronise every
 * sync_every iterations, copy d_a to h_out and synchronise; on the first failure stop and fill
 * *report. Every path frees both buffers and destroys the stream. Returns report->failure.err. */
cudaError_t run_pipeline(const struct pipeline_spec *spec, struct loop_report *report);

/* ---- given: the stages, and the loop with no checks ---------------------------------------- */

/* Launch one stage of one iteration on `stream` (injecting spec->fault when it names this
 * iteration and stage). Launches only: no check, no synchronisation. */
typedef void (*stage_fn)(float *d_a, float *d_b, int n, int iteration, const struct fault *fault,
                         cudaStream_t stream);
struct pipeline_stage {
    const char *name;
    stage_fn launch;
};
extern const struct pipeline_stage PIPELINE_STAGES[];
extern const int PIPELINE_NUM_STAGES;

/* The same work with no check until the end and one synchronisation, for the speed baseline:
 * allocation, copies and frees as run_pipeline's, CUDA_CHECKed (it exits on an error). */
void run_pipeline_unchecked(const struct pipeline_spec *spec);

#ifdef __cplusplus
}
#endif

#endif
