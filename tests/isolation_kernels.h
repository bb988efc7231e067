/* isolation_kernels.h: kernels that go wrong on purpose, for tests/isolation.c.
 *
 * Each launcher launches on the default stream, checks the launch, and returns without
 * synchronising, as a chapter's launchers do; the fault shows where a grader looks for it. */
#ifndef ISOLATION_KERNELS_H
#define ISOLATION_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

/* What copy_faulty does besides d_out[i] = d_in[i] for i in [0, n). */
enum fault {
    FAULT_NONE,      /* a correct copy */
    FAULT_NAN,       /* d_out[at] = NaN (a quiet NaN, not the grader's poison pattern) */
    FAULT_INF,       /* d_out[at] = +Inf */
    FAULT_SKIP,      /* d_out[at] is never written */
    FAULT_PAST_END,  /* also writes d_out[n]: one element past the end */
    FAULT_READ_PAST, /* d_out[i] = d_in[i] + 0 * d_in[i + 1]: reads one past the end of d_in,
                        which changes nothing unless what lies there is NaN */
};
void copy_faulty(const float *d_in, float *d_out, int n, enum fault fault, int at);

/* One thread waits for a flag in device memory that nobody sets: it never ends. */
void spin_forever(void);

/* Stores through a null pointer plus an offset: an illegal address. */
void write_illegal_address(void);

#ifdef __cplusplus
}
#endif

#endif
