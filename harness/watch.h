/* watch.h: what a program's CUDA runtime calls made and left behind, seen at link time.
 *
 * A grader linked with `-Wl,--wrap=cudaMalloc` (and so on for each call below) has every
 * reference to cudaMalloc, in every object of the link, sent to __wrap_cudaMalloc (watch.c),
 * which calls the runtime's own, __real_cudaMalloc, and keeps a table of what is live: each
 * device allocation, pinned host buffer, registered host range, stream and event, with its
 * bytes and the call that made it. A release of something not in the table (freed twice, never
 * allocated, or given to the wrong call: cudaFree of pinned memory) is told apart from a
 * release, and counted.
 *
 * The wrap rewrites the harness's references too, and the runtime's own calls between its
 * objects: so every call is entered in the table, but only what is made between watch_begin()
 * and watch_end() is watched (counted live, described), and a call made from inside another
 * watched call (the CPU backend's cudaStreamCreate calling cudaStreamCreateWithFlags) passes
 * straight through. A grader puts the window around the learner's call:
 *
 *   watch_reset();
 *   watch_begin();
 *   err = run_pipeline(&spec, &report);
 *   watch_end();
 *   if (watch_live(WATCH_ANY) > 0) { watch_describe(buf, sizeof buf); ...fail... }
 *
 * The calls (the Makefile's WATCH_CALLS lists the same): cudaMalloc, cudaMallocManaged,
 * cudaFree, cudaMallocHost, cudaHostAlloc, cudaFreeHost, cudaHostRegister, cudaHostUnregister,
 * cudaStreamCreate, cudaStreamCreateWithFlags, cudaStreamDestroy, cudaEventCreate,
 * cudaEventCreateWithFlags, cudaEventDestroy, cudaDeviceReset; on a GPU build also
 * cudaMallocAsync, cudaMallocFromPoolAsync, cudaFreeAsync and cudaStreamCreateWithPriority,
 * which the CPU backend does not declare (code that calls them does not compile there). The
 * C++ spellings of cuda_runtime.h (the templates, cudaMallocHost with flags, cudaEventCreate
 * with flags, cudaMallocAsync from a pool) are inline functions that call these C functions, so
 * they are caught too.
 *
 * A release is taken as done once it is called on a live object, whatever it returns: after a
 * sticky error every call fails, cudaFree included, and the process must end, which frees what
 * the context held; the code's duty was to call it. cudaDeviceReset destroys every object of
 * the process: the table forgets them all, and the reset is counted (watch_resets). */
#ifndef WATCH_H
#define WATCH_H

#include <stddef.h>

enum watch_kind {
    WATCH_DEVICE,      /* cudaMalloc, cudaMallocManaged, cudaMallocAsync, cudaMallocFromPoolAsync */
    WATCH_PINNED,      /* cudaMallocHost, cudaHostAlloc */
    WATCH_REGISTERED,  /* cudaHostRegister */
    WATCH_STREAM,      /* cudaStreamCreate, ...WithFlags, ...WithPriority */
    WATCH_EVENT,       /* cudaEventCreate, ...WithFlags */
    WATCH_KINDS,
    WATCH_ANY = WATCH_KINDS /* watch_live: every kind */
};

/* Forget what earlier windows saw: their objects still live are no longer watched, and the
 * resets and stray releases are cleared. The table of what is live stays. */
void watch_reset(void);

/* Open and close the window: what is made between them is watched. */
void watch_begin(void);
void watch_end(void);

/* Watched objects of `kind` (WATCH_ANY: all kinds) still live. */
int watch_live(enum watch_kind kind);

/* Bytes of the watched objects of `kind` still live (0 for streams and events). */
size_t watch_live_bytes(enum watch_kind kind);

/* cudaDeviceReset calls inside a window, and how many objects made outside every window (the
 * caller's) the first of them destroyed. */
int watch_resets(void);
int watch_reset_victims(void);

/* Releases inside a window of something not live (never made, released already, or made by
 * another kind of call); the first is described in watch_describe_stray. */
int watch_strays(void);

/* What is still live and watched, as a learner reads it, into buf:
 * "2 allocations (4096 and 64 bytes), 1 stream"; "nothing" when none is.
 * Returns watch_live(WATCH_ANY). */
int watch_describe(char *buf, size_t len);

/* The calls that made what is still live and watched, each named once, in the order first
 * made: "cudaMalloc, cudaStreamCreate"; "" when none is. */
void watch_describe_calls(char *buf, size_t len);

/* The first stray release: "cudaFree(0x7f0000001000): not live (freed already, or never
 * allocated)"; "" when there was none. */
void watch_describe_stray(char *buf, size_t len);

#endif
