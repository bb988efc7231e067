/* gpu.c: device query, guarded and poisoned buffers, event timing (see gpu.h).
 * Compiled twice: against the CUDA runtime (build/cuda) and against the CPU backend's runtime
 * (build/emu, with HARNESS_EMU defined). */
#define _POSIX_C_SOURCE 200809L
#include "gpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef HARNESS_EMU
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#endif

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
    info->devices = count;
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

/* ---- clocks: NVML, loaded at run time ------------------------------------------------------ */

#ifndef HARNESS_EMU
/* The few declarations of the driver's nvml.h used here (the toolkit does not always ship the
 * header): every call returns 0 (NVML_SUCCESS) or an error code; a device is an opaque handle. */
typedef int nvml_return;
typedef struct nvml_device_st *nvml_device;
#define NVML_CLOCK_SM 1
#define NVML_FI_DEV_POWER_INSTANT 186
struct nvml_field_value {           /* nvmlFieldValue_t */
    unsigned field_id, scope_id;
    long long timestamp, latency_usec;
    int value_type;                 /* nvmlValueType_t: 0 double, 1 unsigned, 2 unsigned long,
                                     * 3 unsigned long long, 4 long long, 5 int, 6 short */
    nvml_return ret;
    union { double d; unsigned ui; unsigned long ul; unsigned long long ull; long long sll;
            int si; unsigned short us; } value;
};

static struct {
    int tried, ok;
    pid_t pid;                      /* the process that initialised NVML */
    int device;                     /* the CUDA device whose handle `dev` is; -1: none */
    nvml_device dev;
    int instant;                    /* NVML_FI_DEV_POWER_INSTANT answers: 1, no: 0, untried: -1 */
    nvml_return (*init)(void);
    nvml_return (*shutdown)(void);
    nvml_return (*by_bus_id)(const char *bus_id, nvml_device *dev);
    nvml_return (*clock)(nvml_device dev, int type, unsigned *mhz);
    nvml_return (*power)(nvml_device dev, unsigned *milliwatts);
    nvml_return (*fields)(nvml_device dev, int n, struct nvml_field_value *values);
} nvml = { .device = -1, .instant = -1 };

static void nvml_close(void)
{
    if (getpid() == nvml.pid) /* not in a child forked after: the library is its parent's */
        nvml.shutdown();
}

/* 1 when NVML answers for the current CUDA device (its handle in nvml.dev), else 0: no driver
 * library, a library without these calls, a device it does not know */
static int nvml_open(void)
{
    if (!nvml.tried) {
        nvml.tried = 1;
        void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            return 0;
        /* a data pointer from dlsym cast to a function pointer: what POSIX promises works */
        nvml.init = (nvml_return (*)(void))dlsym(lib, "nvmlInit_v2");
        nvml.shutdown = (nvml_return (*)(void))dlsym(lib, "nvmlShutdown");
        nvml.by_bus_id = (nvml_return (*)(const char *, nvml_device *))
            dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
        nvml.clock = (nvml_return (*)(nvml_device, int, unsigned *))
            dlsym(lib, "nvmlDeviceGetClockInfo");
        nvml.power = (nvml_return (*)(nvml_device, unsigned *))
            dlsym(lib, "nvmlDeviceGetPowerUsage");
        nvml.fields = (nvml_return (*)(nvml_device, int, struct nvml_field_value *))
            dlsym(lib, "nvmlDeviceGetFieldValues");
        if (!nvml.init || !nvml.shutdown || !nvml.by_bus_id || !nvml.clock || !nvml.power ||
            nvml.init() != 0) {
            dlclose(lib);
            return 0;
        }
        nvml.pid = getpid();
        atexit(nvml_close);
        nvml.ok = 1;
    }
    /* a process forked after NVML was initialised shares its parent's handles: not sampled */
    if (!nvml.ok || getpid() != nvml.pid)
        return 0;
    int d;
    if (cudaGetDevice(&d) != cudaSuccess)
        return 0;
    if (d != nvml.device) {
        char bus_id[32];
        nvml.device = -1;
        if (cudaDeviceGetPCIBusId(bus_id, (int)sizeof bus_id, d) != cudaSuccess ||
            nvml.by_bus_id(bus_id, &nvml.dev) != 0)
            return 0;
        nvml.device = d;
    }
    return 1;
}

/* the board's power now, in W: the instantaneous field where the driver has it, else
 * nvmlDeviceGetPowerUsage; -1 when neither answers */
static double nvml_watts(void)
{
    if (nvml.instant != 0 && nvml.fields) {
        /* once the instantaneous field has answered, a reading it misses is missed, not taken
         * from the averaged one */
        struct nvml_field_value v;
        memset(&v, 0, sizeof v);
        v.field_id = NVML_FI_DEV_POWER_INSTANT;
        if (nvml.fields(nvml.dev, 1, &v) == 0 && v.ret == 0) {
            double mw = -1;
            switch (v.value_type) {
            case 0: mw = v.value.d; break;
            case 1: mw = v.value.ui; break;
            case 2: mw = (double)v.value.ul; break;
            case 3: mw = (double)v.value.ull; break;
            case 4: mw = (double)v.value.sll; break;
            case 5: mw = v.value.si; break;
            case 6: mw = v.value.us; break;
            }
            if (mw >= 0) {
                nvml.instant = 1;
                return mw / 1000.0;
            }
        }
        if (nvml.instant > 0)
            return -1;
        nvml.instant = 0; /* never answered: the averaged reading from now on */
    }
    unsigned mw;
    return nvml.power(nvml.dev, &mw) == 0 ? mw / 1000.0 : -1;
}

/* The sampler: its thread reads both every GPU_CLOCKS_PERIOD_MS until told to stop, then once
 * more. The readings grow in place (the thread alone writes them until it is joined). */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int ready, running, stop;
    pthread_t thread;
    double *mhz, *watts;
    int n, nw, cap;
} sampler = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void sample_once(void)
{
    if (sampler.n == sampler.cap || sampler.nw == sampler.cap) {
        int cap = sampler.cap ? 2 * sampler.cap : 1024;
        double *m = realloc(sampler.mhz, (size_t)cap * sizeof *m);
        if (m)
            sampler.mhz = m;
        double *w = realloc(sampler.watts, (size_t)cap * sizeof *w);
        if (w)
            sampler.watts = w;
        if (!m || !w)
            return; /* no room: this reading is lost, the ones before it stand */
        sampler.cap = cap;
    }
    unsigned mhz;
    if (nvml.clock(nvml.dev, NVML_CLOCK_SM, &mhz) == 0)
        sampler.mhz[sampler.n++] = mhz;
    double w = nvml_watts();
    if (w >= 0)
        sampler.watts[sampler.nw++] = w;
}

static void *sampler_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&sampler.lock);
    for (;;) {
        sample_once(); /* the first at the start, the last after the stop */
        if (sampler.stop)
            break;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += GPU_CLOCKS_PERIOD_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!sampler.stop &&
               pthread_cond_timedwait(&sampler.wake, &sampler.lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&sampler.lock);
    return NULL;
}
#endif

void gpu_clocks_start(void)
{
#ifndef HARNESS_EMU
    if (sampler.running || !nvml_open())
        return;
    if (!sampler.ready) {
        pthread_condattr_t a;
        pthread_condattr_init(&a);
        pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        pthread_cond_init(&sampler.wake, &a);
        pthread_condattr_destroy(&a);
        sampler.ready = 1;
    }
    sampler.n = sampler.nw = 0;
    sampler.stop = 0;
    sampler.running = pthread_create(&sampler.thread, NULL, sampler_main, NULL) == 0;
#endif
}

struct clocks gpu_clocks_stop(void)
{
    struct clocks c;
    memset(&c, 0, sizeof c);
#ifndef HARNESS_EMU
    if (sampler.running) {
        pthread_mutex_lock(&sampler.lock);
        sampler.stop = 1;
        pthread_cond_signal(&sampler.wake);
        pthread_mutex_unlock(&sampler.lock);
        pthread_join(sampler.thread, NULL);
        sampler.running = 0;
        c = clocks_summary(sampler.mhz, sampler.n, sampler.watts, sampler.nw);
    }
#endif
    results_set_clocks(&c);
    return c;
}

/* ---- timing ----------------------------------------------------------------------------- */

static gpu_flush_step after_flush;

void gpu_time_after_flush(gpu_flush_step step)
{
    after_flush = step;
}

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
    gpu_clocks_start();
    for (int i = 0; i < reps; i++) {
        CUDA_CHECK(cudaMemsetAsync(d_flush, i & 0xFF, flush_bytes, 0));
        if (after_flush)
            after_flush(d_flush, flush_bytes);
        CUDA_CHECK(cudaEventRecord(start, 0));
        fn(ctx);
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float t;
        CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
        ms[i] = t;
    }
    struct clocks clocks = gpu_clocks_stop();
    CUDA_CHECK(cudaGetLastError());

    struct timing r = { 0, ms[0], ms[0], reps, clocks };
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
