/* gpu.h: the device side of the harness, in C11 over the CUDA runtime API.
 *
 *   device    which backend and device answered, and what it is
 *   buffers   device buffers poisoned with NaN and wrapped in guard zones
 *   timing    CUDA-event timing: warm-up, L2 flushed before each run, median of many
 *   clocks    the SM clock and the board's power, sampled through NVML while the timed runs ran
 *
 * Everything here exits with a message on a CUDA error (CUDA_CHECK): a grader test runs in a
 * forked child, so that fails the one test and the grade goes on. Never call any of this in a
 * grader's parent process before its tests have run: a CUDA context does not survive fork(). */
#ifndef GPU_H
#define GPU_H

#include <stddef.h>

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

struct device_info {
    char backend[8];          /* "cuda" or "emu" */
    char name[256];
    int cc_major, cc_minor;
    int sms;
    int devices;              /* cudaGetDeviceCount's answer: the GPUs one process can drive */
    size_t l2_bytes;
    size_t smem_per_block_optin;
    size_t global_bytes;
    int driver_version;       /* e.g. 13000; 0 on emu */
    int runtime_version;
    char driver[96];          /* "580.159.04, CUDA driver 13.0, runtime 13.0" or "CPU backend" */
    char driver_module[32];   /* the kernel module's version, "580.159.04"; "" where unknown */
};

/* The backend this program was built for: "cuda" or "emu". */
const char *gpu_backend(void);

/* 1 when timings from this backend are GPU timings (cuda); 0 on emu, where they never are. */
int gpu_times_are_real(void);

/* Fill *info for device 0. Returns 0, or -1 with a one-line reason in `why` (no device, no
 * driver, ...). Does not exit. */
int gpu_probe(struct device_info *info, char *why, size_t why_len);

/* On the CPU backend, make the launches that follow resume the threads of a block in a
 * shuffled order at every barrier (EMU_SCHEDULE=shuffle:SEED), which turns a missing
 * __syncthreads into a wrong answer, and run the work of different streams in a shuffled order
 * that respects only stream order and events (emu_shuffle_streams), which turns a missing
 * cudaStreamWaitEvent into one. Returns 1 there; on a GPU, whose schedule nobody picks,
 * it does nothing and returns 0. */
int gpu_shuffle_schedule(unsigned long long seed);

/* ---- buffers ---------------------------------------------------------------------------- */

/* Bytes of guard zone before and after every buffer: 1 MiB on a GPU, where nothing else
 * catches a store that lands in another allocation (a fault comes only past the 2 MiB page);
 * 64 KiB on the CPU backend, whose guard pages catch the next 256 KiB. */
#ifdef HARNESS_EMU
#define DBUF_GUARD (64 * 1024)
#else
#define DBUF_GUARD (1024 * 1024)
#endif

/* A device buffer of `bytes`, with guard zones on both sides filled with a known pattern and
 * the buffer itself filled with 0xFF bytes (NaN as float, -1 as int). `name` is used in
 * messages ("d_c"). */
void *dbuf_alloc(size_t bytes, const char *name);
/* The same for a kernel's input: its guard zones hold 0xFF bytes, NaN in every floating-point
 * format, so that a read past either end changes the answer (NaN x 0 is NaN); a write there is
 * still reported by dbuf_check_guards. */
void *dbuf_alloc_input(size_t bytes, const char *name);
void dbuf_free(void *d);
/* The table of live buffers, for the grade's judge and runner (grade.h): slot i's device
 * memory from its front guard (base: DBUF_GUARD + bytes + DBUF_GUARD bytes), whether it is an
 * input (dbuf_alloc_input); 1 when slot i is live, else 0. Slots are taken in allocation order,
 * so two processes that allocate alike hold alike slots. */
int dbuf_slots(void);
int dbuf_slot(int i, unsigned char **base, size_t *bytes, int *input);
/* Refill with NaN, before each launch whose every output element must be written. */
void dbuf_poison(void *d);
/* Check both guard zones: returns 0 when intact, else -1 with a message naming the buffer,
 * the side and the first overwritten byte's offset. */
int dbuf_check_guards(const void *d, char *msg, size_t len);

void to_device(void *d_dst, const void *h_src, size_t bytes);
void to_host(void *h_dst, const void *d_src, size_t bytes);
/* cudaDeviceSynchronize and cudaGetLastError, checked. */
void gpu_sync(void);

/* ---- timing ----------------------------------------------------------------------------- */

struct timing {
    double median_ms, min_ms, max_ms;
    int reps;
    struct clocks clocks;     /* the SM clock and power while the timed runs ran */
};

/* Time fn(ctx) with CUDA events: `warmup` untimed runs, then `reps` timed runs, each after
 * the L2 has been flushed by writing a buffer twice its size, so that every run reads its
 * inputs from device memory. Returns the median; every launch is checked. The timed runs are
 * bracketed by gpu_clocks_start and gpu_clocks_stop: the timing carries their clocks, and so
 * do the results rows written after it (results_row). */
struct timing gpu_time(void (*fn)(void *ctx), void *ctx, int warmup, int reps);

/* A step gpu_time takes after each flush's memset and before its start event (NULL, the
 * default: none), given the flush buffer. The memset leaves L2 full of dirty lines, which the
 * timed kernel's reads must write back as they evict them; a probe that wants L2 left clean
 * instead sets a function that reads the buffer back (tests/probes/mxfp4_gemv_variants.cu). */
typedef void (*gpu_flush_step)(void *buf, size_t bytes);
void gpu_time_after_flush(gpu_flush_step step);

/* ---- clocks ----------------------------------------------------------------------------- */

/* Sample the current device's SM clock and board power through NVML on a helper thread: once
 * at gpu_clocks_start, every GPU_CLOCKS_PERIOD_MS after, and once at gpu_clocks_stop, which
 * returns their summary and makes it the stamp of the results rows that follow
 * (results_set_clocks). A bench that times a loop without gpu_time brackets it with these two.
 * One window at a time.
 *
 * The clock is nvmlDeviceGetClockInfo(NVML_CLOCK_SM). The power is the board's instantaneous
 * draw (the field NVML_FI_DEV_POWER_INSTANT), or where the driver lacks that field
 * nvmlDeviceGetPowerUsage, which on Ampere and newer is an average over the last second: over
 * a loop of a few ms that mostly says what ran before it. NVML is loaded when first needed
 * (dlopen of the driver's libnvidia-ml.so.1): nothing is linked, and where it is missing or
 * does not answer for this device, as on the CPU backend, the summary says "not sampled"
 * (samples 0) and the rows NA. */
#define GPU_CLOCKS_PERIOD_MS 2
void gpu_clocks_start(void);
struct clocks gpu_clocks_stop(void);

#ifdef __cplusplus
}
#endif

#endif
