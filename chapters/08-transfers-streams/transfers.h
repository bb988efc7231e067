/* transfers.h: the contract of chapter 08, host-device transfers and streams: four steps.
 *
 *   step 1  a user's buffer at pinned speed   upload_open, upload_copy, upload_close
 *                                             (step1_pinned.cu)
 *   step 2  a chunked pipeline over K streams pipeline_create, pipeline_run, pipeline_destroy
 *                                             (step2_pipeline.cu)
 *   step 3  both directions at once           exchange (step3_duplex.cu)
 *   step 4  a CUDA graph of a launch-bound loop  graph_loop (step4_graph.cu)
 *
 * Given (transfers_given.cu): the copy every step starts from (upload_pageable), the kernel of
 * the pipeline (affine_chunk, y = 3x + 1 on ints), and the loop of three small kernels that
 * step 4 captures (plain_loop, over chapter 06's blur, bias and copy).
 *
 * Host code, so library code: nothing here may exit() or abort(); every failure is returned,
 * after what the function took (streams, events, registrations, pinned and device buffers) has
 * been given back. A function handed bad arguments (a size of 0, a NULL pointer, K < 1, a chunk
 * of 0) returns cudaErrorInvalidValue and takes nothing.
 *
 * The grader, the bench and the book call only what is declared here. */
#ifndef TRANSFERS_H
#define TRANSFERS_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- given ---------------------------------------------------------------------------------- */

/* cudaMemcpy(d_dst, h_src, bytes, cudaMemcpyHostToDevice): what every program starts with. From
 * pageable memory (malloc's) the driver copies through a pinned bounce buffer of its own. */
cudaError_t upload_pageable(void *d_dst, const void *h_src, size_t bytes);

/* What the grader asks of a pipeline run, passed through untouched to affine_chunk (NULL: no
 * fault, nobody watching). */
struct pipe_test {
    long long fail_chunk;      /* affine_chunk launches this chunk with 2048 threads a block, a
                                  configuration every GPU refuses (not sticky); -1: none */
    void (*on_launch)(void *ctx, long long chunk);  /* called as each chunk's kernel is launched */
    void *ctx;
};

/* d_y[i] = 3 * d_x[i] + 1 for i < count, on `stream`: chunk number `chunk` of a pipeline (0, 1,
 * ... in the order the chunks cover the input). Launches only: no check, no synchronisation (as
 * chapter 06's launchers: checking is the caller's job). Inputs stay within +-2^28, so no value
 * overflows and every result is exact. */
void affine_chunk(const int *d_x, int *d_y, size_t count, long long chunk,
                  const struct pipe_test *t, cudaStream_t stream);

/* ---- step 1: a user's buffer at pinned speed --------------------------------------------------
 *
 * A training loop uploads the same host buffer, which its caller allocated with malloc, every
 * iteration. upload_open takes the buffer (it may not reallocate it, and must not keep it pinned
 * after upload_close); upload_copy copies all of it to d_dst (device memory of at least `bytes`)
 * and returns once it has landed; upload_close gives back everything upload_open took. On a
 * failure upload_open returns the error holding nothing (upload_close is then not called). */
struct upload {
    const void *h_src;
    size_t bytes;
    cudaStream_t stream;       /* yours to use, or not */
    int registered;            /* yours to use, or not */
    void *h_stage;             /* yours to use, or not */
};
cudaError_t upload_open(struct upload *u, const void *h_src, size_t bytes);
cudaError_t upload_copy(struct upload *u, void *d_dst);
cudaError_t upload_close(struct upload *u);

/* ---- step 2: a chunked pipeline over K streams ------------------------------------------------
 *
 * pipeline_run(p, h_in, h_out, n, t): h_out[i] = 3 * h_in[i] + 1 for i < n, by chunks of
 * p->chunk ints (the last one shorter), each copied to the device, run through affine_chunk and
 * copied back, the chunks spread over the p->nstreams streams so that the copies of one chunk
 * overlap the kernel and the copies of others. h_in and h_out are the caller's memory, pageable
 * as a rule: the copies then go through pinned staging buffers that pipeline_create allocated.
 * Where both are pinned already (cudaMallocHost, or registered as step 1 does: ask
 * cudaPointerGetAttributes), copy them directly: staging would only add two host copies of
 * every byte. Returns once
 * h_out holds the result. On a failure it returns the first error, with no work of its own still
 * running, and the pipeline can run again.
 *
 * pipeline_create(p, chunk, nstreams): streams, events, pinned staging buffers and device
 * buffers for `nstreams` chunks in flight (1 <= nstreams <= PIPE_MAX_STREAMS); on a failure it
 * returns the error holding nothing. pipeline_destroy gives it all back. */
#define PIPE_MAX_STREAMS 16
struct pipe_slot {
    cudaStream_t stream;
    cudaEvent_t in_free;       /* recorded after the copy out of h_stage_in */
    cudaEvent_t out_ready;     /* recorded after the copy into h_stage_out */
    int *h_stage_in, *h_stage_out;  /* pinned, chunk ints each */
    int *d_in, *d_out;              /* device, chunk ints each */
    long long pending;         /* the chunk whose result waits in h_stage_out, -1 none */
};
struct pipeline {
    size_t chunk;              /* ints a chunk */
    int nstreams;
    struct pipe_slot slot[PIPE_MAX_STREAMS];
};
cudaError_t pipeline_create(struct pipeline *p, size_t chunk, int nstreams);
cudaError_t pipeline_run(struct pipeline *p, const int *h_in, int *h_out, size_t n,
                         const struct pipe_test *t);
cudaError_t pipeline_destroy(struct pipeline *p);

/* ---- step 3: both directions at once ----------------------------------------------------------
 *
 * Copy up_bytes from h_up to d_up and, at the same time, down_bytes from d_down to h_down; return
 * once both have landed. h_up and h_down are pinned (cudaMallocHost); d_up and d_down do not
 * overlap. Either size may be 0 (that copy is then not made); both 0 is cudaErrorInvalidValue. */
cudaError_t exchange(void *d_up, const void *h_up, size_t up_bytes, void *h_down,
                     const void *d_down, size_t down_bytes);

/* ---- step 4: a CUDA graph ---------------------------------------------------------------------
 *
 * Chapter 06's three kernels (blur, bias, copy) over two buffers of n floats, `iterations` times:
 * each iteration adds 1 to every element and smooths them. loop_launches (given) launches them one
 * by one on `stream`, checking each launch, and returns without waiting (while the stream
 * captures, the launches are recorded into its graph instead of run); plain_loop (given) is
 * loop_launches and a wait for the stream. graph_loop does the same work by capturing one
 * iteration (or several) into a CUDA graph once and launching the graph, and destroys the graph
 * and its executable before it returns. Both return once the work is done; `stream` is a stream
 * the caller created. */
cudaError_t loop_launches(float *d_a, float *d_b, int n, int iterations, cudaStream_t stream);
cudaError_t plain_loop(float *d_a, float *d_b, int n, int iterations, cudaStream_t stream);
cudaError_t graph_loop(float *d_a, float *d_b, int n, int iterations, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
