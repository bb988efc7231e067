/* concept.h: what the concept tests of chapters 02-04 share (CPU backend only).
 *
 * A concept test grades how a kernel works, not what it computes: sectors per global request,
 * wavefronts per shared-memory request, divergent branches per warp, global atomics. The numbers come from the
 * emu's instrumented build: the grader runs its profile driver, the same side's kernels built
 * instrumented, as `DRIVER --tsv yours` (the Makefile builds one for every CPU-backend grader of
 * these chapters, known-bug kernels included, and tells the grader its path: ident.h), which runs the learner's entry point once on a small shape
 * and prints a header line and one tab-separated row (graders/profile_main.c). On a
 * GPU these tests are not registered: there `make profile CH=NN BACKEND=cuda` shows the same
 * counts from Nsight Compute, and `make calibrate` compares the two.
 *
 * The limits scale with the access width the model saw (bytes per lane: 4 for a float, 16 for
 * a float4), so that a kernel that moves wider words is judged by what it could have done:
 *   sectors      a full warp's request of W-byte words touches 32 x W / 32 = W sectors at best
 *                (4 for floats, 16 for float4s); the limit is CONCEPT_SECTOR_MARGIN times that
 *   wavefronts   32 x W bytes, each lane its own word, pass the 32 banks of 4 bytes in
 *                32 x W / 128 wavefronts at best, and never fewer than 1 (1 for floats, 2 for
 *                8-byte words, 4 for float4s); lanes that share addresses can need fewer
 *
 * Defining CONCEPT_LIMITS_ONLY before including this file gives the limits alone, without the
 * grader's part (tests/emu_profile.c judges its planted kernels with them). */
#ifndef CONCEPT_H
#define CONCEPT_H

/* A margin over the ideal: 4.5 sectors for floats. It is for a tile whose edge warps are
 * partial or whose rows do not start on a 32-byte boundary (5 sectors for some requests);
 * anything that is not coalesced is far above it (2x for a stride of 2 words, 8x for a
 * column of floats). */
#define CONCEPT_SECTOR_MARGIN 1.125
/* Shared memory: 1.5 wavefronts for floats; a 2-way conflict on every request is 2. */
#define CONCEPT_WAVEFRONT_MARGIN 1.5

/* the width a row reports when it saw no access: a float */
static inline double concept_width(double width) { return width > 0 ? width : 4.0; }

/* the fewest sectors a full warp's request of `width`-byte words touches: 32 x width / 32 */
static inline double concept_ideal_sectors(double width)
{
    return 32.0 * concept_width(width) / 32.0;
}

static inline double concept_max_sectors(double width)
{
    return CONCEPT_SECTOR_MARGIN * concept_ideal_sectors(width);
}

/* the fewest wavefronts a full warp's shared request of `width`-byte words needs */
static inline double concept_ideal_wavefronts(double width)
{
    double w = 32.0 * concept_width(width) / 128.0;
    return w < 1.0 ? 1.0 : w;
}

static inline double concept_max_wavefronts(double width)
{
    return CONCEPT_WAVEFRONT_MARGIN * concept_ideal_wavefronts(width);
}

#ifndef CONCEPT_LIMITS_ONLY

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct concept_row {
    int launches;
    unsigned long long warps, gld_requests, gld_sectors, gst_requests, gst_sectors;
    unsigned long long shld_requests, shld_wavefronts, shst_requests, shst_wavefronts;
    unsigned long long divergent_branches;
    double gld_spr, gst_spr, shld_wpr, shst_wpr, div_per_warp, work;
    /* bytes per lane of each kind of request (0: none), and per global request */
    double gld_width, gst_width, shld_width, shst_width, gld_bpr, gst_bpr;
    int result_ok;
    /* the bytes of shared memory a block touched: the declared size of each __shared__ variable
     * its accesses reached (emu_profile_totals.shared_bytes) */
    unsigned long long shared_bytes;
    /* global atomics: the warp requests, and the lanes' operations (also in gst_*); where the
     * driver's row has them (has_atomics) */
    unsigned long long gatom_requests, gatom_ops;
    int has_atomics;
};

/* 1 where concept tests run: the CPU backend */
static inline int concept_here(void) { return strcmp(gpu_backend(), "emu") == 0; }

/* Splits a tab-separated line in place: up to max fields into f; returns how many. */
static inline int concept_split(char *line, char **f, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = 0;
    for (char *p = line; n < max;) {
        f[n++] = p;
        p = strchr(p, '\t');
        if (!p)
            break;
        *p++ = 0;
    }
    return n;
}

/* The cell of `name` in the row, or NULL. */
static inline const char *concept_cell(char **head, int nh, char **row, int nr, const char *name)
{
    for (int i = 0; i < nh && i < nr; i++)
        if (!strcmp(head[i], name))
            return row[i];
    return NULL;
}

/* Runs the profile driver on NAME ("yours" or a rung) at SHAPE (NULL: the driver's own); 0 and
 * *r filled, or -1 with why. */
static inline int concept_profile_at(const char *name, const char *shape, struct concept_row *r,
                                     char *why, size_t n)
{
    /* the build tells each CPU-backend grader of these chapters where its driver is */
    const char *drv = GRADE_BUILD.profile;
    if (!drv[0]) {
        snprintf(why, n, "this grader was built without a profile driver (the build gives one "
                 "to the CPU backend's graders of chapters 02-04)");
        return -1;
    }
    if (access(drv, X_OK) != 0) {
        snprintf(why, n, "the profile driver %.300s is missing: `make grade` builds it", drv);
        return -1;
    }
    char cmd[1400];
    /* exec: the driver is this test's own child, and ends with it (profile_driver_limits) */
    snprintf(cmd, sizeof cmd, "exec '%.1000s' --tsv '%.200s' %.60s", drv, name,
             shape ? shape : "");
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    if (!f) {
        snprintf(why, n, "cannot run %.300s", drv);
        return -1;
    }
    static char line[8192], head[8192], last[8192];
    int found = 0;
    size_t nl = strlen(name);
    head[0] = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "kernel\t", 7))
            memcpy(head, line, sizeof head);
        else if (!strncmp(line, name, nl) && line[nl] == '\t') {
            memcpy(last, line, sizeof last);
            found = 1;
        }
    }
    int st = pclose(f);
    if (!found || !head[0] || st != 0) {
        snprintf(why, n, "the instrumented run of %.100s failed (exit status %d): the kernel "
                 "faulted or hung; the correctness tests say where", name, st);
        return -1;
    }
    char *h[64], *v[64];
    int nh = concept_split(head, h, 64), nv = concept_split(last, v, 64);
    /* the columns this header reads, by name: the driver may add others */
    static const char *const need[] = {
        "launches", "warps", "gld_requests", "gld_sectors", "gst_requests", "gst_sectors",
        "shld_requests", "shld_wavefronts", "shst_requests", "shst_wavefronts",
        "divergent_branches", "global_load_sectors_per_req", "global_store_sectors_per_req",
        "shared_load_wavefronts_per_req", "shared_store_wavefronts_per_req", "divergent_per_warp",
        "work", "result_ok", "global_load_width", "global_store_width", "shared_load_width",
        "shared_store_width", "global_load_bytes_per_req", "global_store_bytes_per_req",
    };
    const char *c[sizeof need / sizeof need[0]];
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!(c[i] = concept_cell(h, nh, v, nv, need[i]))) {
            snprintf(why, n, "the profile driver's row has no column %s: is it older than this "
                     "grader? (make grade rebuilds both)", need[i]);
            return -1;
        }
    r->launches = atoi(c[0]);
    unsigned long long *u[] = { &r->warps, &r->gld_requests, &r->gld_sectors, &r->gst_requests,
                                &r->gst_sectors, &r->shld_requests, &r->shld_wavefronts,
                                &r->shst_requests, &r->shst_wavefronts, &r->divergent_branches };
    for (int i = 0; i < 10; i++)
        *u[i] = strtoull(c[1 + i], NULL, 10);
    double *d[] = { &r->gld_spr, &r->gst_spr, &r->shld_wpr, &r->shst_wpr, &r->div_per_warp,
                    &r->work };
    for (int i = 0; i < 6; i++)
        *d[i] = strtod(c[11 + i], NULL);
    r->result_ok = atoi(c[17]);
    double *w[] = { &r->gld_width, &r->gst_width, &r->shld_width, &r->shst_width, &r->gld_bpr,
                    &r->gst_bpr };
    for (int i = 0; i < 6; i++)
        *w[i] = strtod(c[18 + i], NULL);
    const char *sb = concept_cell(h, nh, v, nv, "shared_bytes");
    if (!sb) {
        snprintf(why, n, "the profile driver's row has no column shared_bytes: is it older than "
                 "this grader? (make grade rebuilds both)");
        return -1;
    }
    r->shared_bytes = strtoull(sb, NULL, 10);
    /* optional columns, read when the row has them */
    const char *ga = concept_cell(h, nh, v, nv, "global_atomic_requests");
    const char *go = concept_cell(h, nh, v, nv, "global_atomic_ops");
    r->has_atomics = ga && go;
    r->gatom_requests = ga ? strtoull(ga, NULL, 10) : 0;
    r->gatom_ops = go ? strtoull(go, NULL, 10) : 0;
    return 0;
}

/* The same, for a Check test: NAME's row at SHAPE (NULL: the driver's own), or the test fails
 * saying why it could not be had. */
static inline struct concept_row concept_profile_or_abort_at(const char *name, const char *shape)
{
    struct concept_row r;
    char why[512];
    if (concept_profile_at(name, shape, &r, why, sizeof why) != 0)
        ck_abort_msg("%s%s%s", why, shape ? " at " : "", shape ? shape : "");
    return r;
}

static inline struct concept_row concept_profile_or_abort(const char *name)
{
    return concept_profile_or_abort_at(name, NULL);
}

/* One of lo, lo + step, ..., hi (inclusive), drawn from r: the concept tests' shapes are drawn
 * from the test's seed, so that a launcher cannot keep its good kernel for one known shape. */
static inline int concept_pick(struct rng *r, int lo, int hi, int step)
{
    int count = (hi - lo) / step + 1;
    return lo + step * (int)(rng_next(r) % (uint64_t)count);
}

#endif /* CONCEPT_LIMITS_ONLY */
#endif
