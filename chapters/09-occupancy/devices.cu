/* devices.cu: chapter 09, given. The limits of the four devices of the book, and of the GPU this
 * runs on.
 *
 * Where each figure comes from:
 *   - threads, warps and blocks an SM, registers an SM, a block and a thread, shared memory an SM
 *     and the most a block may opt in to, and the carveouts an SM's shared memory can be set to:
 *     the CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" (the
 *     table, columns 7.5, 8.0, 8.9 and 9.0) and its sections "Compute Capability 7.x" ("Shared
 *     Memory": 32 or 64 KB on 7.5), "8.x" (0, 8, 16, 32, 64, 100, 132 or 164 KB on 8.0; up to
 *     100 KB on 8.6 and 8.9) and "9.0" (up to 228 KB); the 48 KiB a block has without opting in
 *     is the same table's;
 *   - the 1 KB of shared memory the driver reserves for every block from compute capability 8.0
 *     on: the same sections (the 1 KB of an SM's shared memory that a block cannot have is
 *     reserved for system use), and cudaDeviceProp.reservedSharedMemPerBlock on those GPUs; 0
 *     on 7.5;
 *   - the allocation units (registers a warp in 256s; shared memory in 128-byte units from 8.0
 *     on, 256 before) and the four sub-partitions an SM's register file is split over: the
 *     toolkit's occupancy calculator, cuda_occupancy.h (cudaOccRegAllocationGranularity,
 *     cudaOccSMemAllocationGranularity, cudaOccSubPartitionsPerMultiprocessor), and the
 *     Programming Guide's "4 warp schedulers" an SM from 7.x on;
 *   - the SM counts: the products' data sheets (H200 SXM 132, A100 SXM4 108, L4 58, T4 40).
 * The CPU backend's EMU_DEVICE profiles (harness/emu/README.md) are the same four devices. */
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"
#include "occupancy.h"

#define KIB ((size_t)1024)

const struct occ_device OCC_DEVICES[OCC_NUM_DEVICES] = {
    /* OCC_H200: Hopper, compute capability 9.0 */
    { "NVIDIA H200", 9, 0, 132, 32, 1024, 2048, 32, 4, 65536, 65536, 255, 256,
      228 * KIB, 48 * KIB, 227 * KIB, 1 * KIB, 128,
      10, { 0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB, 132 * KIB, 164 * KIB,
            196 * KIB, 228 * KIB } },
    /* OCC_A100: Ampere GA100, 8.0 */
    { "NVIDIA A100-SXM4", 8, 0, 108, 32, 1024, 2048, 32, 4, 65536, 65536, 255, 256,
      164 * KIB, 48 * KIB, 163 * KIB, 1 * KIB, 128,
      8, { 0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB, 132 * KIB, 164 * KIB } },
    /* OCC_L4: Ada AD104, 8.9 */
    { "NVIDIA L4", 8, 9, 58, 32, 1024, 1536, 24, 4, 65536, 65536, 255, 256,
      100 * KIB, 48 * KIB, 99 * KIB, 1 * KIB, 128,
      6, { 0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB } },
    /* OCC_T4: Turing TU104, 7.5 */
    { "Tesla T4", 7, 5, 40, 32, 1024, 1024, 16, 4, 65536, 65536, 255, 256,
      64 * KIB, 48 * KIB, 64 * KIB, 0, 256,
      2, { 32 * KIB, 64 * KIB } },
};

const char *const OCC_DEVICE_KEYS[OCC_NUM_DEVICES] = { "h200", "a100", "l4", "t4" };

/* The table's row of the same compute capability, for what cudaDeviceProp does not say (the
 * allocation units, the carveouts); 8.6 shares 8.9's carveouts and units. */
static const struct occ_device *same_family(int major, int minor)
{
    for (int i = 0; i < OCC_NUM_DEVICES; i++)
        if (OCC_DEVICES[i].cc_major == major && OCC_DEVICES[i].cc_minor == minor)
            return &OCC_DEVICES[i];
    if (major == 8 && minor == 6)
        return &OCC_DEVICES[OCC_L4];
    return NULL;
}

int occ_device_query(struct occ_device *d)
{
    static char name[256];
    int device;
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    memset(d, 0, sizeof *d);
    snprintf(name, sizeof name, "%s", p.name);
    d->name = name;
    d->cc_major = p.major;
    d->cc_minor = p.minor;
    d->sms = p.multiProcessorCount;
    d->warp_size = p.warpSize;
    d->max_threads_per_block = p.maxThreadsPerBlock;
    d->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    d->max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
    d->regs_per_sm = p.regsPerMultiprocessor;
    d->regs_per_block = p.regsPerBlock;
    d->smem_per_sm = p.sharedMemPerMultiprocessor;
    d->smem_per_block = p.sharedMemPerBlock;
    d->smem_per_block_optin = p.sharedMemPerBlockOptin;
    d->smem_reserved_per_block = p.reservedSharedMemPerBlock;
    const struct occ_device *f = same_family(p.major, p.minor);
    if (!f)
        return -1;
    d->sub_partitions = f->sub_partitions;
    d->max_regs_per_thread = f->max_regs_per_thread;
    d->reg_alloc_unit = f->reg_alloc_unit;
    d->smem_alloc_unit = f->smem_alloc_unit;
    d->n_smem_configs = f->n_smem_configs;
    memcpy(d->smem_configs, f->smem_configs, sizeof d->smem_configs);
    return 0;
}
