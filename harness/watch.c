/* watch.c: the CUDA runtime calls of a program linked with --wrap, watched (watch.h).
 *
 * Each __wrap_X calls the runtime's __real_X and, when it succeeded, enters what it made in
 * the table, or takes what it released out of it. Only the outermost watched call of a thread
 * counts: one the runtime makes from inside another (a CPU-backend call built on a sibling)
 * passes through. The same file serves both backends: __real_X is libemu.a's function on the
 * CPU backend and cudart_static's on a GPU. */
#define _POSIX_C_SOURCE 200809L /* pthread mutexes */
#include "watch.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "harness.h"

struct object {
    const void *handle;     /* the pointer, stream or event */
    enum watch_kind kind;
    size_t bytes;           /* 0 for streams and events */
    const char *call;       /* the call that made it */
    int watched;            /* made inside a window since the last watch_reset */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct object *g_objects;
static int g_count, g_cap;
static int g_window;                     /* 1 between watch_begin and watch_end */
static int g_resets, g_reset_victims, g_strays;
static char g_stray[160];                /* the first stray release, described */
static _Thread_local int t_depth;        /* watched calls of this thread under way */

static const char *const KIND_ONE[WATCH_KINDS] = {
    "allocation", "pinned host buffer", "registered host range", "stream", "event"
};
static const char *const KIND_MANY[WATCH_KINDS] = {
    "allocations", "pinned host buffers", "registered host ranges", "streams", "events"
};
/* what releases each kind: named when a release is given another kind's object */
static const char *const KIND_RELEASE[WATCH_KINDS] = {
    "cudaFree", "cudaFreeHost", "cudaHostUnregister", "cudaStreamDestroy", "cudaEventDestroy"
};

/* ---- the table ----------------------------------------------------------------------------- */

static int find(const void *handle, int kinds) /* kinds: a mask of 1 << kind */
{
    for (int i = 0; i < g_count; i++)
        if (g_objects[i].handle == handle && (kinds >> g_objects[i].kind & 1))
            return i;
    return -1;
}

static void made(enum watch_kind kind, const void *handle, size_t bytes, const char *call)
{
    if (!handle)
        return; /* a size of 0 makes nothing */
    pthread_mutex_lock(&g_lock);
    int i = find(handle, 1 << kind);
    if (i < 0) {
        /* a handle already in the table was released by a path the wrap does not see (a
         * shared library's own calls) and handed out again: the entry is replaced */
        if (g_count == g_cap) {
            int cap = g_cap ? 2 * g_cap : 64;
            struct object *grown = xmalloc((size_t)cap * sizeof *grown);
            if (g_count)
                memcpy(grown, g_objects, (size_t)g_count * sizeof *grown);
            free(g_objects);
            g_objects = grown;
            g_cap = cap;
        }
        i = g_count++;
    }
    g_objects[i] = (struct object){ handle, kind, bytes, call, g_window };
    pthread_mutex_unlock(&g_lock);
}

/* `call` released `handle`, which must be live as one of `kinds`. */
static void released(int kinds, const void *handle, const char *call)
{
    if (!handle)
        return; /* cudaFree(NULL) and the like do nothing, and are allowed */
    pthread_mutex_lock(&g_lock);
    int i = find(handle, kinds);
    if (i >= 0) {
        /* the order made stays: watch_describe lists in it */
        memmove(&g_objects[i], &g_objects[i + 1], (size_t)(g_count - i - 1) * sizeof *g_objects);
        g_count--;
    } else if (g_window && g_strays++ == 0) {
        int other = find(handle, (1 << WATCH_KINDS) - 1);
        if (other >= 0)
            snprintf(g_stray, sizeof g_stray, "%s(%p): a %s from %s, which %s releases", call,
                     handle, KIND_ONE[g_objects[other].kind], g_objects[other].call,
                     KIND_RELEASE[g_objects[other].kind]);
        else
            snprintf(g_stray, sizeof g_stray, "%s(%p): not live (released already, or never "
                     "made)", call, handle);
    }
    pthread_mutex_unlock(&g_lock);
}

/* cudaDeviceReset: every object of the process is gone. */
static void reset_all(void)
{
    pthread_mutex_lock(&g_lock);
    if (g_window && g_resets++ == 0)
        for (int i = 0; i < g_count; i++)
            g_reset_victims += !g_objects[i].watched;
    g_count = 0;
    pthread_mutex_unlock(&g_lock);
}

/* 1 for the outermost watched call of this thread; every call pairs it with leave(). */
static int enter(void)
{
    return t_depth++ == 0;
}

static void leave(void)
{
    t_depth--;
}

/* ---- the wrapped calls --------------------------------------------------------------------- */

#define ALLOC(kind, name, params, args, ptr, bytes)                                  \
    cudaError_t __real_##name params;                                               \
    cudaError_t __wrap_##name params;                                               \
    cudaError_t __wrap_##name params                                                \
    {                                                                               \
        int outer = enter();                                                        \
        cudaError_t err = __real_##name args;                                       \
        if (outer && err == cudaSuccess && (ptr))                                   \
            made(kind, *(ptr), bytes, #name);                                       \
        leave();                                                                    \
        return err;                                                                 \
    }

#define RELEASE(kinds, name, params, args, handle)                                  \
    cudaError_t __real_##name params;                                               \
    cudaError_t __wrap_##name params;                                               \
    cudaError_t __wrap_##name params                                                \
    {                                                                               \
        int outer = enter();                                                        \
        cudaError_t err = __real_##name args;                                       \
        if (outer)                                                                  \
            released(kinds, handle, #name);                                         \
        leave();                                                                    \
        return err;                                                                 \
    }

#define DEVICE_KINDS (1 << WATCH_DEVICE)

ALLOC(WATCH_DEVICE, cudaMalloc, (void **p, size_t size), (p, size), p, size)
ALLOC(WATCH_DEVICE, cudaMallocManaged, (void **p, size_t size, unsigned int flags),
      (p, size, flags), p, size)
RELEASE(DEVICE_KINDS, cudaFree, (void *p), (p), p)
ALLOC(WATCH_PINNED, cudaMallocHost, (void **p, size_t size), (p, size), p, size)
ALLOC(WATCH_PINNED, cudaHostAlloc, (void **p, size_t size, unsigned int flags),
      (p, size, flags), p, size)
RELEASE(1 << WATCH_PINNED, cudaFreeHost, (void *p), (p), p)
ALLOC(WATCH_STREAM, cudaStreamCreate, (cudaStream_t *s), (s), s, 0)
ALLOC(WATCH_STREAM, cudaStreamCreateWithFlags, (cudaStream_t *s, unsigned int flags), (s, flags),
      s, 0)
RELEASE(1 << WATCH_STREAM, cudaStreamDestroy, (cudaStream_t s), (s), s)
ALLOC(WATCH_EVENT, cudaEventCreate, (cudaEvent_t *e), (e), e, 0)
ALLOC(WATCH_EVENT, cudaEventCreateWithFlags, (cudaEvent_t *e, unsigned int flags), (e, flags),
      e, 0)
RELEASE(1 << WATCH_EVENT, cudaEventDestroy, (cudaEvent_t e), (e), e)

#ifndef HARNESS_EMU
/* the stream-ordered allocator and stream priorities: a GPU's runtime only */
ALLOC(WATCH_DEVICE, cudaMallocAsync, (void **p, size_t size, cudaStream_t s), (p, size, s), p,
      size)
ALLOC(WATCH_DEVICE, cudaMallocFromPoolAsync,
      (void **p, size_t size, cudaMemPool_t pool, cudaStream_t s), (p, size, pool, s), p, size)
RELEASE(DEVICE_KINDS, cudaFreeAsync, (void *p, cudaStream_t s), (p, s), p)
ALLOC(WATCH_STREAM, cudaStreamCreateWithPriority,
      (cudaStream_t *s, unsigned int flags, int priority), (s, flags, priority), s, 0)
#endif

/* a registered range is the caller's memory: its handle is the pointer given, not one made */
cudaError_t __real_cudaHostRegister(void *p, size_t size, unsigned int flags);
cudaError_t __wrap_cudaHostRegister(void *p, size_t size, unsigned int flags);
cudaError_t __wrap_cudaHostRegister(void *p, size_t size, unsigned int flags)
{
    int outer = enter();
    cudaError_t err = __real_cudaHostRegister(p, size, flags);
    if (outer && err == cudaSuccess)
        made(WATCH_REGISTERED, p, size, "cudaHostRegister");
    leave();
    return err;
}
RELEASE(1 << WATCH_REGISTERED, cudaHostUnregister, (void *p), (p), p)

cudaError_t __real_cudaDeviceReset(void);
cudaError_t __wrap_cudaDeviceReset(void);
cudaError_t __wrap_cudaDeviceReset(void)
{
    int outer = enter();
    cudaError_t err = __real_cudaDeviceReset();
    if (outer)
        reset_all();
    leave();
    return err;
}

/* ---- what a grader asks -------------------------------------------------------------------- */

void watch_reset(void)
{
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_count; i++)
        g_objects[i].watched = 0;
    g_resets = g_reset_victims = g_strays = 0;
    g_stray[0] = '\0';
    pthread_mutex_unlock(&g_lock);
}

void watch_begin(void)
{
    pthread_mutex_lock(&g_lock);
    g_window = 1;
    pthread_mutex_unlock(&g_lock);
}

void watch_end(void)
{
    pthread_mutex_lock(&g_lock);
    g_window = 0;
    pthread_mutex_unlock(&g_lock);
}

static int counts(const struct object *o, enum watch_kind kind)
{
    return o->watched && (kind == WATCH_ANY || o->kind == kind);
}

int watch_live(enum watch_kind kind)
{
    int n = 0;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_count; i++)
        n += counts(&g_objects[i], kind);
    pthread_mutex_unlock(&g_lock);
    return n;
}

size_t watch_live_bytes(enum watch_kind kind)
{
    size_t b = 0;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_count; i++)
        if (counts(&g_objects[i], kind))
            b += g_objects[i].bytes;
    pthread_mutex_unlock(&g_lock);
    return b;
}

int watch_resets(void)
{
    pthread_mutex_lock(&g_lock);
    int n = g_resets;
    pthread_mutex_unlock(&g_lock);
    return n;
}

int watch_reset_victims(void)
{
    pthread_mutex_lock(&g_lock);
    int n = g_reset_victims;
    pthread_mutex_unlock(&g_lock);
    return n;
}

int watch_strays(void)
{
    pthread_mutex_lock(&g_lock);
    int n = g_strays;
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* Append to the string in buf, truncating at len. */
static void append(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

#define LISTED 4 /* sizes named one by one; past them, a total */

int watch_describe(char *buf, size_t len)
{
    int total = 0;
    buf[0] = '\0';
    pthread_mutex_lock(&g_lock);
    for (int k = 0; k < WATCH_KINDS; k++) {
        int n = 0, shown = 0;
        size_t sum = 0;
        for (int i = 0; i < g_count; i++)
            if (counts(&g_objects[i], (enum watch_kind)k)) {
                n++;
                sum += g_objects[i].bytes;
            }
        if (n == 0)
            continue;
        append(buf, len, "%s%d %s", total ? ", " : "", n, n == 1 ? KIND_ONE[k] : KIND_MANY[k]);
        total += n;
        if (k == WATCH_STREAM || k == WATCH_EVENT)
            continue;
        append(buf, len, " (");
        for (int i = 0; i < g_count && shown < LISTED; i++) {
            if (!counts(&g_objects[i], (enum watch_kind)k))
                continue;
            shown++;
            const char *sep = shown == 1 ? "" : shown == n ? " and " : ", ";
            append(buf, len, "%s%zu", sep, g_objects[i].bytes);
        }
        if (shown < n)
            append(buf, len, " and %d more: %zu bytes in all)", n - shown, sum);
        else
            append(buf, len, " bytes)");
    }
    pthread_mutex_unlock(&g_lock);
    if (total == 0)
        snprintf(buf, len, "nothing");
    return total;
}

void watch_describe_calls(char *buf, size_t len)
{
    buf[0] = '\0';
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_count; i++) {
        if (!g_objects[i].watched)
            continue;
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = g_objects[j].watched && strcmp(g_objects[j].call, g_objects[i].call) == 0;
        if (!seen)
            append(buf, len, "%s%s", buf[0] ? ", " : "", g_objects[i].call);
    }
    pthread_mutex_unlock(&g_lock);
}

void watch_describe_stray(char *buf, size_t len)
{
    pthread_mutex_lock(&g_lock);
    snprintf(buf, len, "%s", g_stray);
    pthread_mutex_unlock(&g_lock);
}
