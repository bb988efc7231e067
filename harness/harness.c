/* harness.c: seed, random numbers, comparison, statistics and results (see harness.h). */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "out of host memory: %zu bytes\n", bytes);
        exit(EXIT_FAILURE);
    }
    return p;
}

/* ---- seed and random numbers ------------------------------------------------------------ */

uint64_t harness_seed(void)
{
    static int have;
    static uint64_t seed;
    if (have)
        return seed;
    const char *s = getenv("SEED");
    if (s && *s) {
        /* one form, which scripts/vars.sh checks before a grade builds anything: decimal
         * digits, or 0x and hex digits, below 2^64; no sign, no space, no octal */
        int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
        const char *digits = hex ? s + 2 : s;
        size_t n = strspn(digits, hex ? "0123456789abcdefABCDEF" : "0123456789");
        char *end;
        errno = 0;
        unsigned long long v = n ? strtoull(digits, &end, hex ? 16 : 10) : 0;
        if (n == 0 || digits[n] || errno || *end) {
            fprintf(stderr, "SEED=%s: not a seed: give the decimal number an earlier run "
                            "printed, or 0x and hex digits, below 2^64\n", s);
            exit(2);
        }
        seed = v;
    } else {
        /* 32 bits keep the printed seed short enough to retype */
        uint32_t v;
        if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
            perror("getrandom");
            exit(2);
        }
        seed = v;
    }
    have = 1;
    return seed;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void rng_init(struct rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double rng_uniform(struct rng *r, double lo, double hi)
{
    double u = (double)(rng_next(r) >> 11) * 0x1.0p-53; /* [0, 1) */
    return lo + (hi - lo) * u;
}

void rng_fill_f32(struct rng *r, float *dst, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) {
        float v = (float)rng_uniform(r, lo, hi);
        dst[i] = v < hi ? v : lo; /* rounding to float can reach hi */
    }
}

/* ---- comparison ------------------------------------------------------------------------- */

struct cmp_result compare_f32(const float *got, const double *want, const double *scale,
                              size_t n, size_t cols, double rtol, double atol)
{
    struct cmp_result c;
    memset(&c, 0, sizeof c);
    c.checked = n;
    c.min_bad_row = c.min_bad_col = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        double tol = atol + rtol * (scale ? scale[i] : fabs(w));
        int ok;
        if (!isfinite(g)) {
            ok = 0;
            c.nonfinite++;
            if (isnan(g))
                c.unwritten++;
        } else {
            double err = fabs(g - w);
            ok = err <= tol;
            double ratio = tol > 0 ? err / tol : (err > 0 ? INFINITY : 0);
            if (ratio > c.worst_ratio)
                c.worst_ratio = ratio;
        }
        if (ok)
            continue;
        if (c.nreport < CMP_MAX_REPORT)
            c.first[c.nreport++] = (struct mismatch){ i, g, w, tol };
        c.bad++;
        size_t row = cols ? i / cols : i, col = cols ? i % cols : 0;
        if (row < c.min_bad_row) c.min_bad_row = row;
        if (row > c.max_bad_row) c.max_bad_row = row;
        if (col < c.min_bad_col) c.min_bad_col = col;
        if (col > c.max_bad_col) c.max_bad_col = col;
    }
    return c;
}

void cmp_describe(const struct cmp_result *c, size_t cols, char *buf, size_t len)
{
    size_t used = 0;
#define PUT(...) do {                                                         \
        int n_ = snprintf(buf + used, used < len ? len - used : 0, __VA_ARGS__); \
        if (n_ > 0) used += (size_t)n_;                                       \
    } while (0)
    if (len)
        buf[0] = '\0';
    PUT("%zu of %zu wrong", c->bad, c->checked);
    for (int i = 0; i < c->nreport; i++) {
        const struct mismatch *m = &c->first[i];
        if (cols)
            PUT("%s (%zu,%zu): got %.7g, want %.7g", i ? ";" : ", first at",
                m->index / cols, m->index % cols, m->got, m->want);
        else
            PUT("%s [%zu]: got %.7g, want %.7g", i ? ";" : ", first at", m->index, m->got,
                m->want);
    }
#undef PUT
}

void cmp_hint(const struct cmp_result *c, size_t rows, size_t cols, char *buf, size_t len)
{
    if (len)
        buf[0] = '\0';
    if (c->bad == 0 || len == 0)
        return;
    if (c->unwritten == c->checked) {
        snprintf(buf, len, "every element is still NaN, the poison the grader wrote before "
                           "the launch: the kernel wrote nothing. Is the TODO done, and does "
                           "the launcher launch it?");
        return;
    }
    if (cols && c->unwritten == c->bad && c->min_bad_col > 0 && rows > 0) {
        snprintf(buf, len, "only columns from %zu on were never written: does the grid cover "
                           "all %zu columns (cdiv, not a plain division)?", c->min_bad_col, cols);
        return;
    }
    if (cols && c->unwritten == c->bad && c->min_bad_row > 0) {
        snprintf(buf, len, "only rows from %zu on were never written: does the grid cover all "
                           "%zu rows (cdiv, not a plain division)?", c->min_bad_row, rows);
        return;
    }
    if (c->unwritten == c->bad) {
        snprintf(buf, len, "%zu elements were never written (still NaN): does every output "
                           "element have a thread?", c->unwritten);
        return;
    }
    if (c->nonfinite > c->unwritten) {
        snprintf(buf, len, "Inf in the output: a read outside the inputs, or an overflow?");
        return;
    }
}

/* ---- references ------------------------------------------------------------------------ */

/* Rows [r0, r1) of ref_matmul: each element's sum in the order i = 0 .. k - 1, so that any split
 * of the rows gives the same bits. */
static void ref_matmul_rows(const float *a, const float *b, double *c, double *scale, int r0,
                            int r1, int k, int n)
{
    /* row, i, col order: the inner loop streams a row of B and a row of C */
    for (int row = r0; row < r1; row++) {
        if (c)
            memset(c + (size_t)row * n, 0, (size_t)n * sizeof *c);
        if (scale)
            memset(scale + (size_t)row * n, 0, (size_t)n * sizeof *scale);
        for (int i = 0; i < k; i++) {
            double av = a[(size_t)row * k + i];
            const float *brow = b + (size_t)i * n;
            if (c) {
                double *crow = c + (size_t)row * n;
                for (int col = 0; col < n; col++)
                    crow[col] += av * brow[col];
            }
            if (scale) {
                double *srow = scale + (size_t)row * n, aa = fabs(av);
                for (int col = 0; col < n; col++)
                    srow[col] += aa * fabs((double)brow[col]);
            }
        }
    }
}

struct ref_part {
    const float *a, *b;
    double *c, *scale;
    int r0, r1, k, n;
};

static void *ref_part_run(void *arg)
{
    struct ref_part *p = arg;
    ref_matmul_rows(p->a, p->b, p->c, p->scale, p->r0, p->r1, p->k, p->n);
    return NULL;
}

#define REF_MAX_THREADS 16
#define REF_THREAD_MACS 2e7 /* less work than this a thread is not worth a thread */

void ref_matmul(const float *a, const float *b, double *c, double *scale, int m, int k, int n)
{
    /* the rows split over the host's processors (a graded GEMM of 1000^3 is 2e9 multiply-adds
     * here, a few seconds on one core, and it runs before every check) */
    double macs = (double)m * k * n;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int t = cpus > 1 ? (int)(cpus < REF_MAX_THREADS ? cpus : REF_MAX_THREADS) : 1;
    if (macs / REF_THREAD_MACS < t)
        t = (int)(macs / REF_THREAD_MACS);
    if (t > m)
        t = m;
    if (t <= 1) {
        ref_matmul_rows(a, b, c, scale, 0, m, k, n);
        return;
    }
    pthread_t th[REF_MAX_THREADS];
    struct ref_part part[REF_MAX_THREADS];
    int started = 0;
    for (int i = 0; i < t; i++) {
        part[i] = (struct ref_part){ a, b, c, scale, (int)((long long)m * i / t),
                                     (int)((long long)m * (i + 1) / t), k, n };
        if (i > 0 && pthread_create(&th[i], NULL, ref_part_run, &part[i]) == 0)
            started |= 1 << i;
    }
    ref_part_run(&part[0]);
    for (int i = 1; i < t; i++) {
        if (started & (1 << i))
            pthread_join(th[i], NULL);
        else
            ref_part_run(&part[i]); /* no thread to be had: this one does it */
    }
}

double fp32_dot_rtol(int k)
{
    return (8.0 * sqrt((double)k) + 2.0) * 0x1.0p-24;
}

/* ---- statistics ------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* a round and its rank, for median_round */
struct round_rank {
    int round;
    double log_ratio;
};

static int cmp_round_rank(const void *a, const void *b)
{
    const struct round_rank *x = a, *y = b;
    if (x->log_ratio != y->log_ratio)
        return (x->log_ratio > y->log_ratio) - (x->log_ratio < y->log_ratio);
    return (x->round > y->round) - (x->round < y->round); /* ties: the earlier round first */
}

int median_round(const double *ms, int n, int rounds)
{
    struct round_rank *rank = xmalloc((size_t)rounds * sizeof *rank);
    for (int r = 0; r < rounds; r++) {
        rank[r].round = r;
        rank[r].log_ratio = 0.0;
        for (int i = 1; i < n; i++)
            rank[r].log_ratio += log(ms[i * rounds + r] / ms[r]);
    }
    qsort(rank, (size_t)rounds, sizeof *rank, cmp_round_rank);
    const int mid = rank[rounds / 2].round;
    free(rank);
    return mid;
}

double speed_gate(double needs, double share, double ceiling_gain, int *capped)
{
    int c = share > 0 && share * ceiling_gain < needs;
    if (capped)
        *capped = c;
    return c ? fmin(fmax(share * ceiling_gain, SPEED_GATE_FLOOR), needs) : needs;
}

double speed_gate_gap(double needs, double share, double ceiling_gain, int *capped)
{
    const double gap = 1 + share * (ceiling_gain - 1);
    int c = share > 0 && gap < needs;
    if (capped)
        *capped = c;
    return c ? gap : needs;
}

/* ---- clocks ----------------------------------------------------------------------------- */

struct clocks clocks_summary(double *sm_mhz, int n, const double *watts, int nw)
{
    struct clocks c = { 0, NAN, NAN, NAN, 0, NAN };
    if (n > 0) {
        c.samples = n;
        c.sm_mhz = median(sm_mhz, n); /* sorted now: the ends are the extremes */
        c.sm_mhz_min = sm_mhz[0];
        c.sm_mhz_max = sm_mhz[n - 1];
    }
    if (nw > 0) {
        double sum = 0.0;
        for (int i = 0; i < nw; i++)
            sum += watts[i];
        c.power_samples = nw;
        c.watts = sum / nw;
    }
    return c;
}

void clocks_columns(const struct clocks *c, char *buf, size_t len)
{
    char mhz[32] = "NA", w[32] = "NA";
    if (c && c->samples > 0)
        snprintf(mhz, sizeof mhz, "%.0f", c->sm_mhz);
    if (c && c->power_samples > 0)
        snprintf(w, sizeof w, "%.0f", c->watts);
    snprintf(buf, len, "%s\t%s", mhz, w);
}

/* ---- results ---------------------------------------------------------------------------- */

static int mkdir_parents(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

/* the clocks the next rows are stamped with: those of the last timed loop */
static struct clocks row_clocks;

void results_set_clocks(const struct clocks *c)
{
    if (c)
        row_clocks = *c;
    else
        memset(&row_clocks, 0, sizeof row_clocks);
}

void results_provenance(FILE *f, const char *device, const char *driver)
{
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    fprintf(f, "# device: %s\n# driver: %s\n# date: %s\n", device, driver, date);
}

int results_open_extra(struct results *r, const char *path, const char *device,
                       const char *driver, const char *extra)
{
    if (mkdir_parents(path) != 0)
        return -1;
    r->f = fopen(path, "w");
    if (!r->f)
        return -1;
    snprintf(r->device, sizeof r->device, "%s", device);
    r->extra = 0;
    if (extra && *extra) {
        r->extra = 1;
        for (const char *p = extra; *p; p++)
            r->extra += *p == '\t';
    }
    results_provenance(r->f, device, driver);
    fprintf(r->f, "chapter\tkernel\tshape\tms\tgbs\tgflops\tdevice\t%s%s%s\n",
            r->extra ? extra : "", r->extra ? "\t" : "", RESULTS_CLOCK_COLUMNS);
    return 0;
}

int results_open(struct results *r, const char *path, const char *device, const char *driver)
{
    return results_open_extra(r, path, device, driver, NULL);
}

void results_row(struct results *r, const char *chapter, const char *kernel, const char *shape,
                 double ms, double gbs, double gflops)
{
    char clocks[64];
    clocks_columns(&row_clocks, clocks, sizeof clocks);
    fprintf(r->f, "%s\t%s\t%s\t%.6g\t%.6g\t%.6g\t%s", chapter, kernel, shape, ms, gbs, gflops,
            r->device);
    for (int i = 0; i < r->extra; i++)
        fputs("\tNA", r->f);
    fprintf(r->f, "\t%s\n", clocks);
    fflush(r->f);
}

int results_close(struct results *r)
{
    int rc = fclose(r->f);
    r->f = NULL;
    return rc;
}
