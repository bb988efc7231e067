/* step1_pinned.cu: chapter 08, step 1 of 4, the solution.
 *
 * upload_open pins the user's pages where they are: cudaHostRegister locks them in memory and
 * maps them for the GPU, so a copy engine can read them by DMA with no bounce buffer and no CPU
 * copy in between. Registering costs about as much as one pageable copy of the same bytes (the
 * kernel walks and locks every page), so it pays from the second upload on: open once, copy
 * every iteration. upload_copy is then one cudaMemcpyAsync on a stream of our own and a wait
 * for that stream. Every failure after a resource was taken gives it back before returning.
 * Expect: about 8x upload_pageable on the H200 (55 GB/s against 6.6). */
#include "transfers.h"

cudaError_t upload_open(struct upload *u, const void *h_src, size_t bytes)
{
    if (!u || !h_src || bytes == 0)
        return cudaErrorInvalidValue;
    u->h_src = h_src;
    u->bytes = bytes;
    u->stream = NULL;
    u->registered = 0;
    u->h_stage = NULL;
    cudaError_t err = cudaStreamCreateWithFlags(&u->stream, cudaStreamNonBlocking);
    if (err != cudaSuccess) {
        u->stream = NULL;
        return err;
    }
    /* the pages stay the caller's; registering does not move or copy them. The runtime takes
     * a non-const pointer, but reads the memory only. */
    err = cudaHostRegister(const_cast<void *>(h_src), bytes, cudaHostRegisterDefault);
    if (err != cudaSuccess) {
        (void)cudaGetLastError(); /* returned here: do not let it surface again */
        cudaStreamDestroy(u->stream);
        u->stream = NULL;
        return err;
    }
    u->registered = 1;
    return cudaSuccess;
}

cudaError_t upload_copy(struct upload *u, void *d_dst)
{
    if (!u || !d_dst || !u->stream)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaMemcpyAsync(d_dst, u->h_src, u->bytes, cudaMemcpyHostToDevice, u->stream);
    if (err != cudaSuccess)
        return err;
    return cudaStreamSynchronize(u->stream);
}

cudaError_t upload_close(struct upload *u)
{
    if (!u)
        return cudaErrorInvalidValue;
    cudaError_t first = cudaSuccess, err;
    if (u->registered) {
        /* waits for copies still reading the pages, then unlocks them */
        err = cudaHostUnregister(const_cast<void *>(u->h_src));
        if (first == cudaSuccess)
            first = err;
        u->registered = 0;
    }
    if (u->stream) {
        err = cudaStreamDestroy(u->stream);
        if (first == cudaSuccess)
            first = err;
        u->stream = NULL;
    }
    return first;
}
