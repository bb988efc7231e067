/* step2_pipeline.cu: chapter 08, step 2 of 4, the solution.
 *
 * Chunk c goes to slot c % K: its own stream, pinned staging buffers and device buffers. On the
 * slot's stream, in order: the copy up from the staging buffer, the kernel, the copy down into
 * the other staging buffer; stream order is all the device needs. Two events tell the host what
 * it may touch: `in_free`, recorded after the copy up, says the input staging buffer has been
 * read (the copy engine reads it when the copy runs, not when it is issued); `out_ready`,
 * recorded after the copy down, says the result has landed in the output staging buffer.
 *
 * The host loop, chunk c: wait for the slot's in_free (chunk c - K's copy up), fill the staging
 * buffer, issue the three operations and the two records, and only then finish chunk c - 1
 * (wait for its out_ready, copy its result out of staging): so while the host copies, the copy
 * engines and the SMs work on the chunks already issued, and nothing waits for the whole device.
 * With K = 1 there is no other slot to work on, and each chunk is finished before the next.
 * Where the caller's buffers are pinned already (cudaMallocHost, or registered as step 1 does;
 * cudaPointerGetAttributes says), the copies use them directly: staging would only add two
 * host copies of every byte, and then the link, not the host, is the busiest resource.
 * Expect: the time of the busiest resource (here the host's copies in and out of staging, then
 * the link) plus one chunk's trip. */
#include <string.h>

#include "transfers.h"

/* Needs `err` and a label `fail` in scope: keeps the first error and jumps. */
#define TRY(expr) do {                                                            \
    cudaError_t e_ = (expr);                                                      \
    if (e_ != cudaSuccess) {                                                      \
        if (err == cudaSuccess)                                                   \
            err = e_;                                                             \
        goto fail;                                                                \
    }                                                                             \
} while (0)

/* Gives back whatever of p is held (NULL handles are skipped); the first error. */
static cudaError_t release(struct pipeline *p)
{
    cudaError_t first = cudaSuccess;
#define KEEP(expr) do { cudaError_t e_ = (expr); if (first == cudaSuccess) first = e_; } while (0)
    for (int i = 0; i < PIPE_MAX_STREAMS; i++) {
        struct pipe_slot *s = &p->slot[i];
        if (s->stream)
            KEEP(cudaStreamSynchronize(s->stream));
        if (s->in_free)
            KEEP(cudaEventDestroy(s->in_free));
        if (s->out_ready)
            KEEP(cudaEventDestroy(s->out_ready));
        if (s->stream)
            KEEP(cudaStreamDestroy(s->stream));
        if (s->h_stage_in)
            KEEP(cudaFreeHost(s->h_stage_in));
        if (s->h_stage_out)
            KEEP(cudaFreeHost(s->h_stage_out));
        if (s->d_in)
            KEEP(cudaFree(s->d_in));
        if (s->d_out)
            KEEP(cudaFree(s->d_out));
    }
#undef KEEP
    memset(p->slot, 0, sizeof p->slot);
    return first;
}

cudaError_t pipeline_create(struct pipeline *p, size_t chunk, int nstreams)
{
    if (!p)
        return cudaErrorInvalidValue;
    memset(p, 0, sizeof *p);
    if (chunk == 0 || nstreams < 1 || nstreams > PIPE_MAX_STREAMS)
        return cudaErrorInvalidValue;
    if (chunk > (size_t)-1 / sizeof(int))
        return cudaErrorMemoryAllocation;
    p->chunk = chunk;
    p->nstreams = nstreams;
    cudaError_t err = cudaSuccess;
    size_t bytes = chunk * sizeof(int);
    for (int i = 0; i < nstreams; i++) {
        struct pipe_slot *s = &p->slot[i];
        s->pending = -1;
        /* non-blocking: no implicit order with the legacy stream, whoever else uses it */
        TRY(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
        /* no timing: a record is then cheaper, and the host only ever waits on them */
        TRY(cudaEventCreateWithFlags(&s->in_free, cudaEventDisableTiming));
        TRY(cudaEventCreateWithFlags(&s->out_ready, cudaEventDisableTiming));
        TRY(cudaMallocHost((void **)&s->h_stage_in, bytes));
        TRY(cudaMallocHost((void **)&s->h_stage_out, bytes));
        TRY(cudaMalloc((void **)&s->d_in, bytes));
        TRY(cudaMalloc((void **)&s->d_out, bytes));
    }
    return cudaSuccess;
fail:
    (void)cudaGetLastError(); /* returned here: do not let it surface again */
    release(p);
    p->chunk = 0;
    p->nstreams = 0;
    return err;
}

/* 1 when the runtime knows p as pinned host memory (allocated or registered), else 0; the
 * query's own failure is returned through *err. */
static int pinned(const void *p, cudaError_t *err)
{
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        *err = e;
        return 0;
    }
    return a.type == cudaMemoryTypeHost;
}

/* Wait for chunk c's result and, staged, copy it out of staging into h_out. */
static cudaError_t finish(struct pipeline *p, long long c, int *h_out, size_t n, int direct)
{
    struct pipe_slot *s = &p->slot[c % p->nstreams];
    size_t off = (size_t)c * p->chunk, count = n - off < p->chunk ? n - off : p->chunk;
    cudaError_t err = cudaEventSynchronize(s->out_ready);
    if (err != cudaSuccess)
        return err;
    if (!direct)
        memcpy(h_out + off, s->h_stage_out, count * sizeof(int));
    s->pending = -1;
    return cudaSuccess;
}

cudaError_t pipeline_run(struct pipeline *p, const int *h_in, int *h_out, size_t n,
                         const struct pipe_test *t)
{
    if (!p || !h_in || !h_out || n == 0 || p->chunk == 0 || p->nstreams < 1)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaSuccess;
    const int k = p->nstreams;
    const long long nchunks = (long long)((n + p->chunk - 1) / p->chunk);
    /* the caller's buffers themselves when both are pinned: no staging */
    const int direct = pinned(h_in, &err) && pinned(h_out, &err);
    if (err != cudaSuccess)
        return err;
    /* How many chunks behind the host finishes. Staged, one, so that the next is issued
     * first: the host has the staging copies of chunk c - 1 to do anyway. Direct, K - 1: the
     * host has nothing to copy, and each wait costs the engines a wake-up of the host thread
     * before the next chunk is queued behind them; K - 1 chunks queued ahead keep both copy
     * engines fed through it. Always below K: chunk c - K's slot is finished before chunk c
     * takes it. */
    const long long lag = k >= 2 ? (direct ? k - 1 : 1) : 0;
    for (long long c = 0; c < nchunks; c++) {
        struct pipe_slot *s = &p->slot[c % k];
        size_t off = (size_t)c * p->chunk, count = n - off < p->chunk ? n - off : p->chunk;
        /* chunk c - K's copy up must have read the staging buffer before we overwrite it
         * (an event never recorded is complete) */
        TRY(cudaEventSynchronize(s->in_free));
        if (!direct)
            memcpy(s->h_stage_in, h_in + off, count * sizeof(int));
        TRY(cudaMemcpyAsync(s->d_in, direct ? h_in + off : s->h_stage_in, count * sizeof(int),
                            cudaMemcpyHostToDevice, s->stream));
        TRY(cudaEventRecord(s->in_free, s->stream));
        affine_chunk(s->d_in, s->d_out, count, c, t, s->stream);
        TRY(cudaGetLastError());
        /* chunk c - K's result left this staging buffer when it was finished (lag < K) */
        TRY(cudaMemcpyAsync(direct ? h_out + off : s->h_stage_out, s->d_out, count * sizeof(int),
                            cudaMemcpyDeviceToHost, s->stream));
        TRY(cudaEventRecord(s->out_ready, s->stream));
        s->pending = c;
        if (c - lag >= 0)
            TRY(finish(p, c - lag, h_out, n, direct));
    }
    for (long long c = nchunks - lag; c < nchunks; c++)
        if (c >= 0)
            TRY(finish(p, c, h_out, n, direct));
    return cudaSuccess;
fail:
    /* nothing of ours may still run when we return: the caller may free h_out, or run again */
    for (int i = 0; i < k; i++) {
        (void)cudaStreamSynchronize(p->slot[i].stream);
        p->slot[i].pending = -1;
    }
    (void)cudaGetLastError(); /* returned here: do not let it surface again */
    return err;
}

cudaError_t pipeline_destroy(struct pipeline *p)
{
    if (!p)
        return cudaErrorInvalidValue;
    cudaError_t err = release(p);
    p->chunk = 0;
    p->nstreams = 0;
    return err;
}
