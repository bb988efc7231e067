/* concept.h: what the concept tests of chapters 02-04 share (CPU backend only).
 *
 * A concept test grades how a kernel works, not what it computes: sectors per global request,
 * divergent branches per warp. The numbers come from the emu's instrumented build: the grader
 * build/emu/X/grade runs its profile driver build/emu-prof/X/profile --tsv yours (the Makefile
 * builds one beside every emu grader of these chapters, mutants included), which runs the
 * learner's entry point once on a small shape and prints one tab-separated row
 * (harness/emu/prof/profile_main.c). On a GPU these tests are not registered: there the
 * numbers need Nsight Compute (future work). */
#ifndef CONCEPT_H
#define CONCEPT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct concept_row {
    int launches;
    unsigned long long warps, gld_requests, gld_sectors, gst_requests, gst_sectors;
    unsigned long long shld_requests, shld_wavefronts, shst_requests, shst_wavefronts;
    unsigned long long divergent_branches;
    double gld_spr, gst_spr, shld_wpr, div_per_warp, work;
    int result_ok;
};

/* 1 where concept tests run: the CPU backend */
static inline int concept_here(void) { return strcmp(gpu_backend(), "emu") == 0; }

/* Runs the profile driver on NAME ("yours" or a rung); 0 and *r filled, or -1 with why. */
static inline int concept_profile(const char *name, struct concept_row *r, char *why, size_t n)
{
    char exe[1024], drv[1100];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        snprintf(why, n, "cannot find this grader's own path");
        return -1;
    }
    exe[len] = 0;
    /* build/emu/X/grade -> build/emu-prof/X/profile */
    char *at = NULL;
    for (char *p = strstr(exe, "/build/emu/"); p; p = strstr(p + 1, "/build/emu/"))
        at = p;
    char *slash = strrchr(exe, '/');
    if (!at || !slash || slash < at + 10) {
        snprintf(why, n, "this grader (%.300s) is not under build/emu/, so its profile driver "
                 "cannot be found", exe);
        return -1;
    }
    *slash = 0;
    at[10] = 0; /* "/build/emu" */
    snprintf(drv, sizeof drv, "%.500s-prof/%.500s/profile", exe, at + 11);
    if (access(drv, X_OK) != 0) {
        snprintf(why, n, "the profile driver %.300s is missing: `make grade` builds it", drv);
        return -1;
    }
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "'%.1100s' --tsv '%.200s'", drv, name);
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    if (!f) {
        snprintf(why, n, "cannot run %.300s", drv);
        return -1;
    }
    char line[1024], last[1024] = "";
    int found = 0;
    size_t nl = strlen(name);
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, name, nl) && line[nl] == '\t') {
            memcpy(last, line, sizeof last);
            found = 1;
        }
    }
    int st = pclose(f);
    if (!found || st != 0) {
        snprintf(why, n, "the instrumented run of %.100s failed (exit status %d): the kernel "
                 "faulted or hung; the correctness tests say where", name, st);
        return -1;
    }
    int got = sscanf(last + nl + 1, "%d %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %lf "
                     "%lf %lf %lf %lf %d", &r->launches, &r->warps, &r->gld_requests,
                     &r->gld_sectors, &r->gst_requests, &r->gst_sectors, &r->shld_requests,
                     &r->shld_wavefronts, &r->shst_requests, &r->shst_wavefronts,
                     &r->divergent_branches, &r->gld_spr, &r->gst_spr, &r->shld_wpr,
                     &r->div_per_warp, &r->work, &r->result_ok);
    if (got != 17) {
        snprintf(why, n, "the profile driver's row is not what this grader reads: %.300s", last);
        return -1;
    }
    return 0;
}

#endif
