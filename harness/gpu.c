/* gpu.c: device query, guarded and poisoned buffers, event timing (see gpu.h).
 * Compiled twice: against the CUDA runtime (build/cuda) and against the CPU backend's runtime
 * (build/emu, with HARNESS_EMU defined). */
#define _POSIX_C_SOURCE 200809L
#include "gpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "harness.h"
#ifdef HARNESS_EMU
#include <emu_streams.h>
#endif

/* An output's guards hold a pattern no kernel computes; an input's hold all bits set, NaN in
 * every floating-point format the workbook reads (fp32, bf16, fp16, fp8), so that a stray read
 * of one changes the answer even where it is multiplied by zero (NaN x 0 is NaN). */
#define GUARD_BYTE 0xA5
#define INPUT_GUARD_BYTE 0xFF
#define MAX_BUFFERS 64

struct dbuf {
    unsigned char *base;   /* start of the front guard */
    size_t bytes;          /* the user's part */
    unsigned char guard;   /* the guard zones' byte */
    char name[32];
};

static struct dbuf buffers[MAX_BUFFERS];

const char *gpu_backend(void)
{
#ifdef HARNESS_EMU
    return "emu";
#else
    return "cuda";
#endif
}

int gpu_times_are_real(void)
{
#ifdef HARNESS_EMU
    return 0;
#else
    return 1;
#endif
}

int gpu_shuffle_schedule(unsigned long long seed)
{
#ifdef HARNESS_EMU
    char v[40];
    snprintf(v, sizeof v, "shuffle:%llu", seed);
    if (setenv("EMU_SCHEDULE", v, 1) != 0) {
        perror("setenv");
        exit(EXIT_FAILURE);
    }
    /* and the order of the work of different streams: a missing event dependency shows */
    emu_shuffle_streams(seed);
    return 1;
#else
    (void)seed;
    return 0;
#endif
}

/* Why cudaGetDeviceCount found no GPU, as a learner needs it: the runtime's own sentence for
 * the commonest case ("CUDA driver version is insufficient for CUDA runtime version") says the
 * same whether there is no driver at all or an old one. cudaDriverGetVersion tells them apart
 * (0: no driver). The runtime's name for the error follows in parentheses. */
static void no_device_reason(cudaError_t err, char *why, size_t why_len)
{
    const char *name = cudaGetErrorName(err);
    int driver = 0, runtime = 0;
    switch (err) {
    case cudaErrorInsufficientDriver:
        if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
            snprintf(why, why_len, "no NVIDIA driver on this machine (%s)", name);
            return;
        }
        cudaRuntimeGetVersion(&runtime);
        snprintf(why, why_len, "the NVIDIA driver supports CUDA %d.%d, older than this program's "
                 "CUDA runtime %d.%d: update the driver (%s)", driver / 1000, driver % 1000 / 10,
                 runtime / 1000, runtime % 1000 / 10, name);
        return;
    case cudaErrorNoDevice:
        snprintf(why, why_len, "no CUDA device on this machine (%s)", name);
        return;
    default:
        snprintf(why, why_len, "%s (%s)", cudaGetErrorString(err), name);
        return;
    }
}

int gpu_probe(struct device_info *info, char *why, size_t why_len)
{
    memset(info, 0, sizeof *info);
    snprintf(info->backend, sizeof info->backend, "%s", gpu_backend());
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        no_device_reason(err, why, why_len);
        return -1;
    }
    if (count == 0) {
        snprintf(why, why_len, "no CUDA device on this machine (the driver lists none)");
        return -1;
    }
    struct cudaDeviceProp p;
    err = cudaGetDeviceProperties(&p, 0);
    if (err != cudaSuccess) {
        snprintf(why, why_len, "cudaGetDeviceProperties: %s", cudaGetErrorString(err));
        return -1;
    }
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->sms = p.multiProcessorCount;
    info->l2_bytes = (size_t)p.l2CacheSize;
    info->smem_per_block_optin = p.sharedMemPerBlockOptin;
    info->global_bytes = p.totalGlobalMem;
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
#ifdef HARNESS_EMU
    snprintf(info->driver, sizeof info->driver, "CPU backend");
#else
    /* the kernel module's own version (580.159.04) says more than the CUDA version it
     * supports; Linux shows it in /proc: "NVRM version: NVIDIA UNIX ... Kernel Module for
     * x86_64  580.159.04  Release Build ..." (the first word with two dots) */
    char module[32] = "";
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f) {
        char line[512];
        if (fgets(line, sizeof line, f))
            for (char *w = strtok(line, " \t\n"); w; w = strtok(NULL, " \t\n")) {
                unsigned a, b, c;
                char tail;
                if (sscanf(w, "%u.%u.%u%c", &a, &b, &c, &tail) == 3 ||
                    sscanf(w, "%u.%u%c", &a, &b, &tail) == 2) {
                    snprintf(module, sizeof module, "%s", w);
                    break;
                }
            }
        fclose(f);
    }
    snprintf(info->driver_module, sizeof info->driver_module, "%s", module);
    snprintf(info->driver, sizeof info->driver, "%s%sCUDA driver %d.%d, runtime %d.%d", module,
             module[0] ? ", " : "", info->driver_version / 1000,
             info->driver_version % 1000 / 10, info->runtime_version / 1000,
             info->runtime_version % 1000 / 10);
#endif
    return 0;
}

/* ---- buffers ---------------------------------------------------------------------------- */

static struct dbuf *find(const void *d)
{
    for (int i = 0; i < MAX_BUFFERS; i++)
        if (buffers[i].base && buffers[i].base + DBUF_GUARD == d)
            return &buffers[i];
    fprintf(stderr, "harness: %p is not a buffer from dbuf_alloc\n", d);
    exit(EXIT_FAILURE);
}

static void *alloc_guarded(size_t bytes, const char *name, unsigned char guard)
{
    struct dbuf *b = NULL;
    for (int i = 0; i < MAX_BUFFERS && !b; i++)
        if (!buffers[i].base)
            b = &buffers[i];
    if (!b) {
        fprintf(stderr, "harness: more than %d live device buffers\n", MAX_BUFFERS);
        exit(EXIT_FAILURE);
    }
    void *base;
    CUDA_CHECK(cudaMalloc(&base, bytes + 2 * DBUF_GUARD));
    b->base = base;
    b->bytes = bytes;
    b->guard = guard;
    snprintf(b->name, sizeof b->name, "%s", name);
    CUDA_CHECK(cudaMemset(b->base, guard, DBUF_GUARD));
    CUDA_CHECK(cudaMemset(b->base + DBUF_GUARD + bytes, guard, DBUF_GUARD));
    void *d = b->base + DBUF_GUARD;
    dbuf_poison(d);
    return d;
}

void *dbuf_alloc(size_t bytes, const char *name)
{
    return alloc_guarded(bytes, name, GUARD_BYTE);
}

void *dbuf_alloc_input(size_t bytes, const char *name)
{
    return alloc_guarded(bytes, name, INPUT_GUARD_BYTE);
}

void dbuf_free(void *d)
{
    if (!d)
        return;
    struct dbuf *b = find(d);
    CUDA_CHECK(cudaFree(b->base));
    memset(b, 0, sizeof *b);
}

int dbuf_slots(void)
{
    return MAX_BUFFERS;
}

int dbuf_slot(int i, unsigned char **base, size_t *bytes, int *input)
{
    if (i < 0 || i >= MAX_BUFFERS || !buffers[i].base)
        return 0;
    *base = buffers[i].base;
    *bytes = buffers[i].bytes;
    *input = buffers[i].guard == INPUT_GUARD_BYTE;
    return 1;
}

void dbuf_poison(void *d)
{
    struct dbuf *b = find(d);
    CUDA_CHECK(cudaMemset(d, 0xFF, b->bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
}

int dbuf_check_guards(const void *d, char *msg, size_t len)
{
    struct dbuf *b = find(d);
    unsigned char *h = xmalloc(2 * DBUF_GUARD);
    CUDA_CHECK(cudaMemcpy(h, b->base, DBUF_GUARD, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h + DBUF_GUARD, b->base + DBUF_GUARD + b->bytes, DBUF_GUARD,
                          cudaMemcpyDeviceToHost));
    int rc = 0;
    /* front guard: report the write nearest the buffer, the one an off-by-one makes */
    for (int i = DBUF_GUARD - 1; i >= 0 && rc == 0; i--)
        if (h[i] != b->guard) {
            snprintf(msg, len, "a write before the start of %s: byte %d before element 0 was "
                               "overwritten", b->name, DBUF_GUARD - i);
            rc = -1;
        }
    for (int i = 0; i < DBUF_GUARD && rc == 0; i++)
        if (h[DBUF_GUARD + i] != b->guard) {
            snprintf(msg, len, "a write past the end of %s (%zu bytes): byte %d past its end "
                               "was overwritten", b->name, b->bytes, i);
            rc = -1;
        }
    free(h);
    return rc;
}

void to_device(void *d_dst, const void *h_src, size_t bytes)
{
    CUDA_CHECK(cudaMemcpy(d_dst, h_src, bytes, cudaMemcpyHostToDevice));
}

void to_host(void *h_dst, const void *d_src, size_t bytes)
{
    CUDA_CHECK(cudaMemcpy(h_dst, d_src, bytes, cudaMemcpyDeviceToHost));
}

void gpu_sync(void)
{
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaGetLastError());
}

/* ---- timing ----------------------------------------------------------------------------- */

struct timing gpu_time(void (*fn)(void *ctx), void *ctx, int warmup, int reps)
{
    struct device_info info;
    char why[256];
    if (gpu_probe(&info, why, sizeof why) != 0) {
        fprintf(stderr, "harness: no device to time on: %s\n", why);
        exit(EXIT_FAILURE);
    }
    size_t flush_bytes = 2 * (info.l2_bytes ? info.l2_bytes : (size_t)64 << 20);
    void *d_flush;
    CUDA_CHECK(cudaMalloc(&d_flush, flush_bytes));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));

    for (int i = 0; i < warmup; i++)
        fn(ctx);
    CUDA_CHECK(cudaDeviceSynchronize());

    double *ms = malloc((size_t)reps * sizeof *ms);
    if (!ms) {
        perror("malloc");
        exit(EXIT_FAILURE);
    }
    for (int i = 0; i < reps; i++) {
        CUDA_CHECK(cudaMemsetAsync(d_flush, i & 0xFF, flush_bytes, 0));
        CUDA_CHECK(cudaEventRecord(start, 0));
        fn(ctx);
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float t;
        CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
        ms[i] = t;
    }
    CUDA_CHECK(cudaGetLastError());

    struct timing r = { 0, ms[0], ms[0], reps };
    for (int i = 1; i < reps; i++) {
        if (ms[i] < r.min_ms) r.min_ms = ms[i];
        if (ms[i] > r.max_ms) r.max_ms = ms[i];
    }
    r.median_ms = median(ms, reps);
    free(ms);
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaFree(d_flush));
    return r;
}
