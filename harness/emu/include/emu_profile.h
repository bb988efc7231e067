/* emu_profile.h: the instrumented emu build's C API (harness/emu/README.md, "Profiling").
 * Only programs linked with build/emu-prof/libemu_prof.a have these functions. */
#ifndef EMU_PROFILE_H
#define EMU_PROFILE_H

#ifdef __cplusplus
extern "C" {
#endif

/* What one kernel launch did, summed over its warps. Stores include atomics. The lanes and
 * bytes of each kind of request give the access width the model saw: bytes / lanes is 4 for
 * floats, 16 for float4s; bytes / requests is what a warp request moved (128 for a full warp
 * of floats). */
struct emu_profile_totals {
    unsigned long long warps;
    unsigned long long gld_requests, gld_sectors;         /* global loads: 32-byte sectors */
    unsigned long long gst_requests, gst_sectors;         /* global stores and atomics */
    unsigned long long shld_requests, shld_wavefronts;    /* shared loads: bank wavefronts */
    unsigned long long shst_requests, shst_wavefronts;    /* shared stores */
    unsigned long long divergent_branches;
    unsigned long long gld_lanes, gld_bytes, gst_lanes, gst_bytes; /* lane accesses, their bytes */
    unsigned long long shld_lanes, shld_bytes, shst_lanes, shst_bytes;
    /* the shared memory a block of the launch touched: the declared bytes of each __shared__
     * variable its accesses reached (the dynamic shared memory the launch gave, if it reached
     * that); emu_profile_sum gives the largest over its launches, not their sum */
    unsigned long long shared_bytes;
    unsigned long long gatom_requests, gatom_lanes; /* global atomics alone (also in gst_*):
                                                       warp requests, lane operations */
};

/* Record (1, the default) or ignore (0) the launches that follow; the bounds checks run
 * either way. */
void emu_profile_record(int on);
/* Print each recorded launch's table on stdout (1, the default unless EMU_PROFILE_QUIET is
 * set) or not (0). */
void emu_profile_print(int on);
/* The totals of the last recorded launch that completed; 0 if there is none. */
int emu_profile_last(struct emu_profile_totals *t);
/* The totals of every recorded launch that completed since emu_profile_reset() (or the
 * start), summed into *t; returns how many launches that is. */
int emu_profile_sum(struct emu_profile_totals *t);
void emu_profile_reset(void);
/* The kernels of those launches, in launch order, as "name+name+..." (template arguments kept,
 * parameters and return type dropped: "matmul_vectorized_kernel<true>"), truncated to fit n
 * bytes; returns how many launches that is. */
int emu_profile_kernels(char *buf, unsigned long n);

#ifdef __cplusplus
}
#endif

#endif
