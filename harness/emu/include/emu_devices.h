/* emu_devices.h: how many devices the emu backend emulates, and which of them can reach each
 * other's memory (emu only; the functions are in build/emu/libemu.a, harness/emu/src/devices.cpp;
 * harness/emu/README.md, "Several devices", says what is modelled).
 *
 * At start-up EMU_DEVICES (1 to 8; unset: 1) sets the count and EMU_PEERS the pairs that can
 * access each other (the syntax of `peers` below; unset: every pair). A grader that runs its
 * tests on 1, 2, 3 and 4 devices in turn calls emu_set_devices at the start of each test. */
#ifndef EMU_DEVICES_H
#define EMU_DEVICES_H

#ifdef __cplusplus
extern "C" {
#endif

/* Makes n devices (1 to 8), every one with the same profile (EMU_DEVICE), and sets which pairs
 * cudaDeviceCanAccessPeer says can access each other: peers NULL, every pair of different
 * devices; "", none; or a list of pairs such as "0-1,2-3", each pair both ways. Every peer access
 * enabled so far is disabled, and every host thread's current device becomes 0. Returns 0, or -1
 * changing nothing when n is not in 1..8, the list does not parse (or names a device >= n, or a
 * device paired with itself), or device allocations, streams or events are still live: a count
 * cannot change under them. */
int emu_set_devices(int n, const char *peers);

/* The device that owns the device allocation (cudaMalloc, cudaMallocManaged) containing ptr: the
 * one current when it was made; -1 for anything else (host memory, a __device__ variable, an
 * address outside every allocation). */
int emu_device_of(const void *ptr);

#ifdef __cplusplus
}
#endif

#endif
