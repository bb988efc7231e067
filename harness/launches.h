/* launches.h: which kernels a graded call launched, and how (GPU builds).
 *
 * A CUDA 13 triple-chevron launch compiles to a call of __cudaLaunchKernel (a kernel handle);
 * cudaLaunchKernel, cudaLaunchKernelEx (an inline over cudaLaunchKernelExC) and
 * cudaLaunchCooperativeKernel are the spelled-out ways. The GPU build's graders are linked
 * with each of them wrapped (-Wl,--wrap=..., the Makefile's LAUNCH_CALLS; harness/launch_wrap.c),
 * so every launch of the learner's code passes through launches_note; between launches_begin
 * and launches_end the table keeps each distinct kernel once, with its last grid, block and
 * dynamic shared memory, and how many times it was launched. launches_end names each kernel
 * (cudaFuncGetName: the mangled name, as cuobjdump prints it), so that a grader can look at the
 * machine code of the kernels that really ran rather than of those whose name it guesses.
 *
 * What the table cannot see: a launch through the driver API (cuLaunchKernel), a graph, or a
 * library's own launches (cuBLAS). A grader that finds no launch where it needs one says so;
 * that is a failure, not a pass. The CPU backend launches through its own scheduler and is not
 * wrapped: there launches_recorded() is 0, and its counts come from the instrumented build. */
#ifndef LAUNCHES_H
#define LAUNCHES_H

#ifdef __cplusplus
extern "C" {
#endif

#define LAUNCH_KINDS 8    /* distinct kernels kept; more are counted in `dropped` */
#define LAUNCH_NAME 200

struct launch_rec {
    char name[LAUNCH_NAME];         /* mangled; "" when the runtime could not name it */
    unsigned grid[3], block[3];
    unsigned long long smem;        /* dynamic shared memory, bytes */
    unsigned count;                 /* launches of it in the window */
};

struct launch_log {
    int recorded;                   /* 1: this program's launches pass through the table */
    int n;                          /* distinct kernels in r */
    int dropped;                    /* distinct kernels past LAUNCH_KINDS */
    unsigned total;                 /* launches in the window, all kernels */
    struct launch_rec r[LAUNCH_KINDS];
};

/* 1 when this program was linked with the launch calls wrapped (a GPU grader). */
int launches_recorded(void);

/* Open the window (what was kept before is forgotten), and close it: the kernels launched
 * since, named, into *out. */
void launches_begin(void);
void launches_end(struct launch_log *out);

/* From the wraps: one launch of `func` (a host stub's address or a kernel handle). */
void launches_note(const void *func, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned long long smem);

/* The log as a learner reads it, into buf: "sgemm_tiled: 64 x 64 blocks of 256 threads (31.0
 * blocks an SM of 132), 8192 bytes of dynamic shared memory; 1048576 threads for 1.07e+09
 * multiply-adds: 1024 a thread"; names shown by their plain part where the mangled form is
 * _Z<len><name>. work > 0 adds the work a thread (in `unit`s), sms > 0 the blocks an SM. Where
 * several kernels ran, each is listed and the work a thread is left out. */
void launches_describe(const struct launch_log *log, double work, const char *unit, int sms,
                       char *buf, unsigned long len);

/* The threads the log's launches started: each kernel's grid times its block, times the
 * launches of it (a kernel launched again with another grid counts at its last). */
static inline double launches_threads(const struct launch_log *log)
{
    double threads = 0;
    for (int i = 0; i < log->n; i++) {
        const struct launch_rec *r = &log->r[i];
        threads += (double)r->count * r->grid[0] * r->grid[1] * r->grid[2] * r->block[0] *
                   r->block[1] * r->block[2];
    }
    return threads;
}

/* A received log made safe to read: counts bounded, every name terminated. */
void launches_sanitize(struct launch_log *log);

#ifdef __cplusplus
}
#endif

#endif
