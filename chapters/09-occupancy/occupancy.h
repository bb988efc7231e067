/* occupancy.h: the contract of chapter 09, occupancy and cross-architecture tuning.
 *
 *   step 1  an occupancy calculator         blocks_per_sm        (step1_occupancy.cu)
 *
 * Given: the limits of four devices (devices.cu: OCC_DEVICES, and occ_device_query for the GPU
 * this runs on) and the kernels the grader asks the CUDA runtime about (occupancy_kernels.cu).
 *
 * Step 1 is graded on both backends (on the CPU backend, the runtime's answers under each
 * EMU_DEVICE profile). The grader, the bench and the book call only what is declared here. */
#ifndef OCCUPANCY_H
#define OCCUPANCY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the device: what limits how many blocks an SM holds ----------------------------------
 *
 * Each field is a published figure: the CUDA C++ Programming Guide's table "Technical
 * Specifications per Compute Capability" (threads, blocks, warps and registers an SM and a block,
 * shared memory an SM and a block, the carveouts an SM's shared memory can be set to; its
 * sections "Compute Capability 7.x / 8.x / 9.0" for the 1 KB the driver reserves a block from
 * 8.0 on); the allocation units (256 registers, 128 or 256 bytes of shared memory) are those of
 * the toolkit's occupancy calculator, cuda_occupancy.h; the SM counts are the products' data
 * sheets. devices.cu says which figure came from where. */
#define OCC_MAX_SMEM_CONFIGS 12

struct occ_device {
    const char *name;              /* "NVIDIA H200" */
    int cc_major, cc_minor;        /* compute capability: 9.0 */
    int sms;                       /* streaming multiprocessors: 132 */
    int warp_size;                 /* 32 */
    int max_threads_per_block;     /* 1024 */
    int max_threads_per_sm;        /* 2048 on 9.0 and 8.0, 1536 on 8.9, 1024 on 7.5 */
    int max_blocks_per_sm;         /* 32 on 9.0 and 8.0, 24 on 8.9, 16 on 7.5 */
    int sub_partitions;            /* 4: an SM's quarters, each with its own warp scheduler and
                                    * its own quarter of the register file */
    int regs_per_sm;               /* 32-bit registers: 65536 */
    int regs_per_block;            /* 65536 */
    int max_regs_per_thread;       /* 255 */
    int reg_alloc_unit;            /* 256: a warp's registers are allocated in units of this */
    size_t smem_per_sm;            /* bytes of shared memory an SM at the largest carveout */
    size_t smem_per_block;         /* 48 KiB: the most a block may have without opting in */
    size_t smem_per_block_optin;   /* the most a block may opt in to
                                    * (cudaFuncAttributeMaxDynamicSharedMemorySize) */
    size_t smem_reserved_per_block; /* what the driver keeps for itself in every block's share:
                                    * 1 KiB from 8.0 on, 0 on 7.5 */
    int smem_alloc_unit;           /* a block's shared memory is allocated in units of this many
                                    * bytes: 128 from 8.0 on, 256 on 7.x */
    int n_smem_configs;            /* the carveouts an SM's unified L1 / shared memory can be */
    size_t smem_configs[OCC_MAX_SMEM_CONFIGS]; /* set to, in bytes, ascending */
};

/* The four devices of the book, in this order: NVIDIA H200 (9.0), A100 SXM4 (8.0), L4 (8.9),
 * Tesla T4 (7.5). The CPU backend's EMU_DEVICE=h200|a100|l4|t4 profiles are the same devices. */
enum { OCC_H200, OCC_A100, OCC_L4, OCC_T4, OCC_NUM_DEVICES };
extern const struct occ_device OCC_DEVICES[OCC_NUM_DEVICES];
/* OCC_DEVICES' key for EMU_DEVICE: "h200", "a100", "l4", "t4". */
extern const char *const OCC_DEVICE_KEYS[OCC_NUM_DEVICES];

/* The device this program runs on (cudaGetDeviceProperties), with the allocation units and the
 * carveouts of its compute capability from the same tables. Returns 0, or -1 when the compute
 * capability is not one the tables know (then *d holds what the runtime reported). */
int occ_device_query(struct occ_device *d);

/* ---- the kernel: what one block asks of an SM ---------------------------------------------- */
struct occ_kernel {
    int threads;                   /* a block */
    int regs;                      /* a thread: cudaFuncAttributes.numRegs */
    size_t smem_static;            /* a block's __shared__ arrays: .sharedSizeBytes */
    size_t smem_dynamic;           /* a block's dynamic shared memory: the launch's third
                                    * argument */
    size_t smem_max_dynamic;       /* the most dynamic shared memory the kernel may launch with:
                                    * .maxDynamicSharedSizeBytes, 48 KiB - smem_static unless
                                    * cudaFuncAttributeMaxDynamicSharedMemorySize raised it */
    int carveout;                  /* cudaFuncAttributePreferredSharedMemoryCarveout: -1 for no
                                    * preference, else the percent of smem_per_sm it prefers
                                    * as shared memory (the rest is L1) */
};

/* ---- step 1: an occupancy calculator (step1_occupancy.cu) ------------------------------------
 *
 * The most blocks of kernel k that one SM of device d holds at once: what
 * cudaOccupancyMaxActiveBlocksPerMultiprocessor answers, exactly, for every kernel and device.
 * 0 when a block cannot run on d at all (too many threads, registers or shared memory). Pure
 * host code: no CUDA call. */
int blocks_per_sm(const struct occ_kernel *k, const struct occ_device *d);

/* ---- the steps, in order ------------------------------------------------------------------- */
struct occ_step {
    const char *name;              /* the rung's name in the bench: "calculator" */
    const char *title;             /* the ladder's line */
};
extern const struct occ_step OCC_STEPS[];
extern const int OCC_NUM_STEPS;

/* ---- the real kernels the runtime is asked about (occupancy_kernels.cu, given) --------------
 *
 * Each with the launch its occupancy is asked for; opt_in > 0: the kernel's
 * cudaFuncAttributeMaxDynamicSharedMemorySize is set to it first. */
struct occ_real_kernel {
    const char *name;
    const void *fn;                /* the kernel, for cudaFuncGetAttributes and the runtime */
    int threads;
    size_t dynamic;
    size_t opt_in;
};
extern const struct occ_real_kernel OCC_REAL_KERNELS[];
extern const int OCC_NUM_REAL_KERNELS;

#ifdef __cplusplus
}
#endif

#endif
