/* emu_memory.h: what the emu backend's allocator can tell about device memory (emu only; the
 * functions are in build/emu/libemu.a, harness/emu/src/memory.cpp).
 *
 * A GPU answers "how much is in use" through cudaMemGetInfo, and only while its context lives:
 * after a sticky error that call returns the error, as the emu's does. These ask the
 * allocator's own table instead, which answers in every state, so that a test can see whether
 * code freed what it allocated even after a fault. */
#ifndef EMU_MEMORY_H
#define EMU_MEMORY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How many device allocations (cudaMalloc, cudaMallocManaged) of exactly `bytes` requested
 * bytes are live: made and not yet passed to cudaFree. 0 for `bytes` counts every live one,
 * whatever its size. */
int emu_live_allocations(size_t bytes);

/* The requested bytes of every live device allocation, summed. */
size_t emu_live_bytes(void);

/* Bytes copied from device memory to the host since the process began, by any copy call
 * (cudaMemcpy, cudaMemcpyAsync, cudaMemcpyFromSymbol, ...), counted when the copy is issued.
 * A grade reads it around a graded call that has no reason to copy anything to the host: a
 * launcher that moves its inputs to the host to compute there shows here. */
unsigned long long emu_bytes_to_host(void);

/* Pinned host memory still held: with registered 0, the buffers from cudaMallocHost or
 * cudaHostAlloc not yet passed to cudaFreeHost; with registered 1, the ranges given to
 * cudaHostRegister and not yet to cudaHostUnregister. A GPU has no such count. */
int emu_live_pinned(int registered);

#ifdef __cplusplus
}
#endif

#endif
