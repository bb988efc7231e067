/* launches.c: the table of what a graded call launched (launches.h). */
#include "launches.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef HARNESS_EMU
#include <cuda_runtime_api.h>
#endif

/* set by launch_wrap.c's constructor: this program's launch calls are wrapped */
int launches_wrapped;

static struct {
    int open;
    const void *func[LAUNCH_KINDS];
    struct launch_log log;
} T;

int launches_recorded(void)
{
    return launches_wrapped;
}

void launches_begin(void)
{
    memset(&T, 0, sizeof T);
    T.open = 1;
}

void launches_note(const void *func, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned long long smem)
{
    if (!T.open)
        return;
    struct launch_log *l = &T.log;
    l->total++;
    int i = 0;
    while (i < l->n && T.func[i] != func)
        i++;
    if (i == l->n) {
        if (l->n == LAUNCH_KINDS) {
            l->dropped++;
            return;
        }
        T.func[l->n++] = func;
    }
    struct launch_rec *r = &l->r[i];
    r->grid[0] = gx, r->grid[1] = gy, r->grid[2] = gz;
    r->block[0] = bx, r->block[1] = by, r->block[2] = bz;
    r->smem = smem;
    r->count++;
}

void launches_end(struct launch_log *out)
{
    T.open = 0;
    T.log.recorded = launches_wrapped;
    for (int i = 0; i < T.log.n; i++) {
        char *name = T.log.r[i].name;
        name[0] = 0;
#ifndef HARNESS_EMU
        const char *got = NULL;
        if (cudaFuncGetName(&got, T.func[i]) == cudaSuccess && got)
            snprintf(name, LAUNCH_NAME, "%s", got);
        else
            (void)cudaGetLastError(); /* the query's own error is not the code's */
#endif
    }
    *out = T.log;
}

void launches_sanitize(struct launch_log *log)
{
    if (log->n < 0)
        log->n = 0;
    if (log->n > LAUNCH_KINDS)
        log->n = LAUNCH_KINDS;
    if (log->dropped < 0)
        log->dropped = 0;
    for (int i = 0; i < LAUNCH_KINDS; i++)
        log->r[i].name[LAUNCH_NAME - 1] = 0;
}

/* "_Z12sgemm_tiledPKfS0_Pfiii" -> "sgemm_tiled"; anything else as it is */
static void plain_name(const char *m, char *out, size_t len)
{
    if (m[0] == '_' && m[1] == 'Z') {
        const char *p = m + 2;
        if (*p == 'L') /* internal linkage: _ZL12name... */
            p++;
        char *end;
        long n = strtol(p, &end, 10);
        if (end != p && n > 0 && (size_t)n < len && (long)strlen(end) >= n) {
            memcpy(out, end, (size_t)n);
            out[n] = 0;
            return;
        }
    }
    snprintf(out, len, "%s", m[0] ? m : "(a kernel the runtime did not name)");
}

void launches_describe(const struct launch_log *log, double work, const char *unit, int sms,
                       char *buf, unsigned long len)
{
    size_t at = 0;
    buf[0] = 0;
#define PUT(...)                                                                               \
    do {                                                                                       \
        if (at < len) {                                                                        \
            int w_ = snprintf(buf + at, len - at, __VA_ARGS__);                                \
            at += w_ > 0 ? (size_t)w_ : 0;                                                     \
        }                                                                                      \
    } while (0)
    if (!log->recorded) {
        PUT("(the launches are not recorded on this backend)");
        return;
    }
    if (log->n == 0) {
        PUT("no kernel launch was seen (a launch through the driver API, or none at all)");
        return;
    }
    for (int i = 0; i < log->n; i++) {
        const struct launch_rec *r = &log->r[i];
        char name[96];
        plain_name(r->name, name, sizeof name);
        double blocks = (double)r->grid[0] * r->grid[1] * r->grid[2];
        double threads_per_block = (double)r->block[0] * r->block[1] * r->block[2];
        PUT("%s%s", i ? "; " : "", name);
        if (r->count > 1)
            PUT(" (launched %u times, the last)", r->count);
        PUT(": ");
        if (r->grid[1] > 1 || r->grid[2] > 1)
            PUT("%u x %u x %u = %.0f blocks", r->grid[0], r->grid[1], r->grid[2], blocks);
        else
            PUT("%.0f block%s", blocks, blocks == 1 ? "" : "s");
        if (r->block[1] > 1 || r->block[2] > 1)
            PUT(" of %u x %u x %u = %.0f threads", r->block[0], r->block[1], r->block[2],
                threads_per_block);
        else
            PUT(" of %.0f threads", threads_per_block);
        if (sms > 0)
            PUT(" (%.1f blocks an SM of %d)", blocks / sms, sms);
        if (r->smem)
            PUT(", %llu bytes of dynamic shared memory", r->smem);
        if (work > 0 && log->n == 1 && blocks * threads_per_block > 0)
            PUT("; %.0f threads for %.3g %s: %.1f a thread", blocks * threads_per_block, work,
                unit, work / (blocks * threads_per_block));
    }
    if (log->dropped)
        PUT("; and %d more kernels", log->dropped);
#undef PUT
}
