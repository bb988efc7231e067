/* step1_pinned.cu: chapter 08, step 1 of 4, a user's buffer at pinned speed.
 * Your file.
 *
 * The contract (transfers.h): upload_open(u, h_src, bytes) takes a host buffer that its caller
 * allocated with malloc (pageable memory); upload_copy(u, d_dst) copies all of it to the device
 * and returns once it has landed; upload_close(u) gives back what upload_open took. As given,
 * upload_copy is upload_pageable: cudaMemcpy from pageable memory, which the driver stages
 * through a pinned bounce buffer of its own, a few megabytes at a time, at a fraction of what
 * the link can carry.
 *
 * TODO: make the copy run at pinned speed from memory you did not allocate. Either pin the
 * user's pages where they are (cudaHostRegister in upload_open, cudaHostUnregister in
 * upload_close), or stage through a pinned buffer of your own; copy with cudaMemcpyAsync on a
 * stream of your own (not the legacy stream 0) and wait for that stream. Check every call, and
 * on every failure give back what was taken before it (a stream created, a buffer registered)
 * and return the error. Bad arguments (bytes 0, a NULL pointer): cudaErrorInvalidValue, nothing
 * taken.
 *
 * What the grader measures (make grade CH=08 STEP=1):
 *   correct  256 MiB (1 MiB + 13 bytes on the CPU backend) and 1, 4099 and 1000003 bytes of
 *            fresh random bytes, copied three times into a poisoned device buffer, bit-exact
 *   concept  on the CPU backend, the schedule of the copies: every host-to-device copy on a
 *            stream of your own and from pinned memory (not "pageable"); after upload_close the
 *            user's buffer is no longer registered and no stream, event or pinned buffer is
 *            left; when the user's buffer is already registered by someone else, upload_open
 *            fails with the runtime's error, holds nothing and leaves that registration alone
 *   speed    on a GPU, upload_copy at least 5x upload_pageable over 256 MiB, timed in the same
 *            run (measured on the H200: about 8x)
 *
 * The lesson is README.md beside this file; its hints for step 1 are there too. */
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
    return cudaSuccess;
}

cudaError_t upload_copy(struct upload *u, void *d_dst)
{
    if (!u || !d_dst)
        return cudaErrorInvalidValue;
    return upload_pageable(d_dst, u->h_src, u->bytes);
}

cudaError_t upload_close(struct upload *u)
{
    if (!u)
        return cudaErrorInvalidValue;
    return cudaSuccess;
}
