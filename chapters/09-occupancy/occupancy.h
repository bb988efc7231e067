/* occupancy.h: the contract of chapter 09, occupancy and cross-architecture tuning.
 *
 *   step 1  an occupancy calculator         blocks_per_sm        (step1_occupancy.cu)
 *   step 2  Little's law                    stream_sum,          (step2_inflight.cu)
 *                                           knee_bytes_per_sm
 *   step 3  a launcher that reads its budget budget_choose,      (step3_budget.cu)
 *                                           matmul_budget
 *   step 4  smaller GPUs inside the GPU      slice_open,         (step4_slices_gpu.cu)
 *                                           slice_close
 *
 * Given: the limits of four devices (devices.cu: OCC_DEVICES, and occ_device_query for the GPU
 * this runs on), the kernels the grader asks the CUDA runtime about (occupancy_kernels.cu), and
 * the load latency the grader measures for step 2 (latency.cu), and for step 4 the driver's
 * green-context calls and the kernels the grader runs in a slice (green.h, slices_gpu.cu).
 *
 * Step 1 is graded on both backends (on the CPU backend, the runtime's answers under each
 * EMU_DEVICE profile); step 2 on a GPU only (it is a measurement); step 3 on both (on the CPU
 * backend under each EMU_DEVICE profile; its speed on a GPU only); step 4 on a GPU only (the CPU
 * backend has no SMs to partition, and builds no *_gpu.cu file). The grader, the bench and the
 * book call only what is declared here. */
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

/* ---- step 2: Little's law (step2_inflight.cu) -----------------------------------------------
 *
 * A streaming kernel whose bytes in flight an SM are its parameters. */
struct inflight {
    int loads;                     /* independent loads a thread issues before it uses any of
                                    * them: 1, 2, 4 or 8 */
    int vec;                       /* floats a load: 1, 2 or 4 (float, float2, float4) */
    int threads;                   /* a block: a multiple of 32, from 32 to 1024 */
    int blocks_per_sm;             /* the grid: this many blocks for each of the device's SMs */
};

/* What c keeps in flight on one SM: blocks_per_sm x threads x loads x vec x 4 bytes. Given. */
double inflight_bytes_per_sm(const struct inflight *c);

/* *d_sum = the sum of d_in[0..n-1], n >= 1, d_in 16-byte aligned. The grader's inputs are small
 * integers, so every order of summation gives the same exact sum. A grid of
 * blocks_per_sm x (the device's SMs) blocks of c->threads threads; each thread keeps c->loads
 * loads of c->vec floats in flight. The launcher sets *d_sum itself (it is NaN before), launches
 * on the default stream, checks the launch and returns without synchronising. */
void stream_sum(const float *d_in, size_t n, double *d_sum, const struct inflight *c);

/* Little's law: the bytes an SM must keep in flight to stream at gbs GB/s over the whole device
 * when a load takes latency_ns to come back, on a device of sms SMs. Pure host code. */
double knee_bytes_per_sm(double gbs, double latency_ns, int sms);

/* Given (latency.cu): the latency of one load from device memory, in ns, measured by a single
 * thread chasing pointers through a buffer larger than the L2, so that each load waits for the
 * one before it. On the CPU backend it measures nothing and returns -1. */
double load_latency_ns(void);

/* ---- step 3: a launcher that reads its budget (step3_budget.cu) -----------------------------
 *
 * C = A * B in fp32, row-major, in device memory, as in chapter 04 (A m x k, B k x n, C m x n,
 * any m, k, n >= 1), by chapter 04's 2D register-blocked kernel with its tile, its stages of
 * shared memory and its __launch_bounds__ as template parameters, one instantiation a row of
 * BUDGET_CONFIGS. */
typedef void (*budget_fn)(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);
struct budget_config {
    const char *name;              /* "128x128x16_s3": block tile BM x BN x BK, stages */
    int bm, bn, bk, stages;
    int threads;                   /* a block */
    int min_blocks;                /* __launch_bounds__(threads, min_blocks): the blocks an SM
                                    * the kernel was compiled to fit */
    size_t smem_bytes;             /* dynamic shared memory a block: stages x (BM + BN) x BK x 4 */
    const void *kernel;            /* for cudaFuncGetAttributes, cudaFuncSetAttribute and the
                                    * occupancy calls */
    budget_fn launch;              /* this configuration on any shape, opted in to its shared
                                    * memory first where it needs more than 48 KiB; to be called
                                    * only where the device holds it */
};
extern const struct budget_config BUDGET_CONFIGS[];
extern const int BUDGET_NUM_CONFIGS;

/* The row of BUDGET_CONFIGS that matmul_budget launches for this shape on the current device
 * (the CPU backend's EMU_DEVICE profile, or the GPU): one that the device holds, read from the
 * device (its SMs, shared memory a block with opt-in and an SM, registers), never assumed;
 * -1 when none fits. */
int budget_choose(int m, int k, int n);

/* C = A * B with the configuration budget_choose picks: launched on the default stream, the
 * launch checked, no synchronisation. */
void matmul_budget(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);

/* ---- step 4: smaller GPUs inside the GPU (step4_slices_gpu.cu; a GPU only) -----------------
 *
 * A slice: a green context that holds some of the device's SMs, and a stream of it. Work
 * launched on the stream runs on those SMs and no others; the rest of the GPU is not its. */
struct sm_slice {
    int sms;                       /* the SMs the slice holds: what the split granted */
    struct CUgreenCtx_st *green;   /* the green context (a CUgreenCtx) */
    struct CUstream_st *stream;    /* a stream of it (a CUstream, which is a cudaStream_t) */
};

/* Carve a slice of sms SMs out of the current device: at least sms, as few more as the
 * device's partition rules allow (on compute capability 9.0, multiples of 8, at least 8), and
 * all of them when sms is the device's SM count. Fills *s and returns 0; returns -1, *s zeroed,
 * when sms is below 1 or over the device's SMs, or the driver has no green contexts. A failed
 * driver call ends the program with its error (CU_CHECK, green.h). */
int slice_open(int sms, struct sm_slice *s);

/* Destroy the slice's stream, then its green context; *s zeroed. Given, in the same file. */
void slice_close(struct sm_slice *s);

/* Given (slices_gpu.cu). slice_enter makes the slice's green context current to the calling
 * thread, so that what launches on the default stream (stream_sum, matmul_budget) runs in the
 * slice, until slice_leave. slice_current_sms: the SMs of the context current now (the
 * device's outside a slice), or -1 without green contexts. */
void slice_enter(const struct sm_slice *s);
void slice_leave(void);
int slice_current_sms(void);

/* Given (slices_gpu.cu): kernels on a stream. slice_smids: `blocks` blocks of
 * SLICE_SMID_THREADS threads, each holding its SM SLICE_SMID_SPIN cycles, then writing the SM
 * it ran on (%smid) to d_ids[its block]. slice_copy: d_out = d_in, n floats (a multiple of 4). */
#define SLICE_SMID_THREADS 128
#define SLICE_SMID_SPIN 20000
void slice_smids(struct CUstream_st *stream, int *d_ids, int blocks);
void slice_copy(struct CUstream_st *stream, const float *d_in, float *d_out, size_t n);

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
