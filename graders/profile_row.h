/* profile_row.h: the one tab-separated row a profile driver prints for `--tsv NAME` (the
 * concept tests read it: graders/concept.h; so does the calibration), from the emu's
 * instrumented build: the totals of every launch since emu_profile_reset(), summed
 * (emu_profile_sum), the derived ratios, the access widths, the work done and the kernels
 * launched. Shared by graders/profile_main.c and graders/profile_membound.c. emu only. */
#ifndef PROFILE_ROW_H
#define PROFILE_ROW_H

#include <stdio.h>
#include "emu_profile.h"
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

/* The most memory a concept test's instrumented run may take: its shapes are small (a few MiB
 * of buffers, a block's fibers' stacks), so a run that reaches this is allocating without end */
#define PROFILE_DRIVER_MAX_BYTES (8ull << 30)

/* First thing in --tsv, where a concept test runs the learner's code once more: the run ends
 * with the test that started it (PR_SET_PDEATHSIG), so that a kernel that spins here does not
 * outlive a test that timed out; and its address space is capped (RLIMIT_AS, never above what
 * it was given), so that one that allocates without end fails here instead of filling the
 * machine. */
static inline void profile_driver_limits(void)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        perror("profile: prctl(PR_SET_PDEATHSIG)");
    if (getppid() == 1)
        _exit(EXIT_FAILURE); /* the test that started it is gone already */
    struct rlimit lim = { (rlim_t)PROFILE_DRIVER_MAX_BYTES, (rlim_t)PROFILE_DRIVER_MAX_BYTES };
    struct rlimit now;
    if (getrlimit(RLIMIT_AS, &now) == 0 && now.rlim_max != RLIM_INFINITY &&
        now.rlim_max < lim.rlim_max)
        lim.rlim_cur = lim.rlim_max = now.rlim_max;
    if (setrlimit(RLIMIT_AS, &lim) != 0)
        perror("profile: setrlimit(RLIMIT_AS)");
}

static inline double profile_ratio(unsigned long long a, unsigned long long b)
{
    return b ? (double)a / b : 0.0;
}

/* the header line and the row of rung `name`, which did `work` and whose result was `ok` */
static inline void profile_print_row(const char *name, double work, int ok)
{
    struct emu_profile_totals t;
    int launches = emu_profile_sum(&t);
    static char kernels[4096];
    emu_profile_kernels(kernels, sizeof kernels);
    printf("kernel\tlaunches\twarps\tgld_requests\tgld_sectors\tgst_requests\tgst_sectors\t"
           "shld_requests\tshld_wavefronts\tshst_requests\tshst_wavefronts\tdivergent_branches\t"
           "global_load_sectors_per_req\tglobal_store_sectors_per_req\t"
           "shared_load_wavefronts_per_req\tdivergent_per_warp\twork\tresult_ok\t"
           "shared_store_wavefronts_per_req\tglobal_load_bytes_per_req\tglobal_store_bytes_per_req\t"
           "global_load_width\tglobal_store_width\tshared_load_width\tshared_store_width\t"
           "kernels"
           "\tshared_bytes\tglobal_atomic_requests\tglobal_atomic_ops"
           "\n");
    printf("%s\t%d\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%.4f\t%.4f\t%.4f\t"
           "%.4f\t%.0f\t%d\t%.4f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s"
           "\t%llu\t%llu\t%llu"
           "\n",
           name, launches, t.warps, t.gld_requests, t.gld_sectors, t.gst_requests, t.gst_sectors,
           t.shld_requests, t.shld_wavefronts, t.shst_requests, t.shst_wavefronts,
           t.divergent_branches, profile_ratio(t.gld_sectors, t.gld_requests),
           profile_ratio(t.gst_sectors, t.gst_requests), profile_ratio(t.shld_wavefronts, t.shld_requests),
           profile_ratio(t.divergent_branches, t.warps), work, ok,
           profile_ratio(t.shst_wavefronts, t.shst_requests), profile_ratio(t.gld_bytes, t.gld_requests),
           profile_ratio(t.gst_bytes, t.gst_requests), profile_ratio(t.gld_bytes, t.gld_lanes),
           profile_ratio(t.gst_bytes, t.gst_lanes), profile_ratio(t.shld_bytes, t.shld_lanes),
           profile_ratio(t.shst_bytes, t.shst_lanes), *kernels ? kernels : "-",
           t.shared_bytes, t.gatom_requests, t.gatom_lanes);
}

#endif
