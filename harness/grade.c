/* grade.c: registering, running and reporting a chapter's Check tests (see grade.h). */
#define _GNU_SOURCE
#include "grade.h"
#include "sandbox.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h> /* cudaDeviceReset, under a sanitizer */

struct slot {
    char note[GRADE_TEXT];
    char hint[GRADE_TEXT];
    char launched[GRADE_TEXT]; /* what the code under grading launched (grade_launched) */
    char skipped[GRADE_TEXT]; /* why, when the test skipped itself (grade_quick_skip) */
    /* a test passes only when it reached its end: the teardown after it returned sets ended;
     * an exit() before that sets exited and the status it was given */
    int ended, exited, exit_status;
    int second_run;           /* 1: the test's second run had begun, 2: and it was shuffled */
};

/* Shared between the parent and every forked test: made before the first fork. */
struct shared {
    struct device_info device;
    char summary[GRADE_TEXT];
    char step_summary[GRADE_MAX_STEPS][GRADE_TEXT];
    struct slot slots[GRADE_MAX_TESTS];
    /* each forked test's stderr goes to one file, from its own offset on, so that a test
     * that dies (a CUDA error, an emulator's fault report) can be shown with its last words */
    int capture;                 /* fork mode: redirect the children's stderr */
    int started;                 /* tests started so far: the index of the next one */
    long err_start[GRADE_MAX_TESTS + 1];
};

static FILE *errfile;

static struct shared *sh;
static const char *chapter_name;
static char titles[GRADE_MAX_TESTS][160];
static char tcases[GRADE_MAX_TESTS][64];
/* each test is its own Check test case, named "tcase#index", so that grader_run can run them
 * one at a time and report each as soon as it ends (Check keeps the name's pointer) */
static char tcnames[GRADE_MAX_TESTS][80];
static int ntests;
static char skips[GRADE_MAX_TESTS][GRADE_TEXT];
static int skip_step[GRADE_MAX_TESTS];
static int skip_pos[GRADE_MAX_TESTS];   /* shown before test skip_pos[i] runs: where it was added */
static int nskips;

/* the ladder (grade.h): the steps in the order they were opened, each test's step (an index
 * into steps, -1 for none) and context, and what each test ended with */
static struct step {
    int k;
    char name[96];
    int selected;               /* registered: no GRADE_STEP, or GRADE_STEP=k */
    int passed, failed, skipped;
    char failure[GRADE_TEXT];   /* the first failure: "wrong: TITLE: MESSAGE" or its message */
    int wrong;                  /* that failure was a correctness test's */
    char hint[GRADE_TEXT];      /* and its hint */
    char skipped_why[GRADE_TEXT];   /* the first skip's reason */
} steps[GRADE_MAX_STEPS];
static int nsteps;
static int step_now = -1;       /* the step tests are being added to */
static int step_of[GRADE_MAX_TESTS];
static const void *ctx_of[GRADE_MAX_TESTS];
static int running = -1;        /* the test being run (its child inherits it) */
static int tests_fork;          /* Check forks each test (its children inherit it) */

/* the judge and the runner of a split test (grade.h) */
static enum grade_role role = GRADE_SOLO;
static int channel = -1;        /* the judge's or the runner's end of their socket */
static pid_t runner_pid;        /* the judge's: its runner */

static int tty(void)
{
    static int v = -1;
    if (v < 0)
        v = isatty(STDOUT_FILENO);
    return v;
}

/* ---- GRADE_TRACE=FILE: where a test's seconds go ----------------------------------------------
 * One line a milestone of each test, appended to FILE: the monotonic clock, the process's role
 * and pid, the test, and what was reached (a test's start, the runner's fork, its run handed
 * over, the judge's check, the end). Opened before the test's sandbox, so that the runner can
 * still write it. For finding what a grade spends its time on; no verdict reads it. */
static int trace_fd = -1;

static void trace(const char *what)
{
    if (trace_fd < 0)
        return;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    static const char *const ROLE[] = { "solo", "judge", "runner" };
    char line[160];
    int n = snprintf(line, sizeof line, "%ld.%06ld %s %d test %d: %s\n", (long)t.tv_sec,
                     t.tv_nsec / 1000, ROLE[role == GRADE_JUDGE ? 1 : role == GRADE_RUNNER ? 2 : 0],
                     (int)getpid(), running, what);
    if (n > 0 && write(trace_fd, line, (size_t)n) < 0)
        trace_fd = -1;
}

static void trace_open(void)
{
    const char *path = getenv("GRADE_TRACE");
    if (trace_fd < 0 && path && *path)
        trace_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

/* ---- quick mode and sanitizers (grade.h) ---------------------------------------------------- */

static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true"));
}

int grade_quick(void)
{
    return env_flag("GRADE_QUICK");
}

int grade_sanitizing(void)
{
    return env_flag("GRADE_SANITIZE");
}

/* GRADE_QUICK_WORK, or 1e8; exits on a malformed value before anything runs */
static double quick_cap(void)
{
    const char *v = getenv("GRADE_QUICK_WORK");
    if (!v || !*v)
        return 1e8;
    char *end;
    double cap = strtod(v, &end);
    if (*end || !(cap > 0)) {
        fprintf(stderr, "GRADE_QUICK_WORK=%s: not a positive number (the most work a shape may "
                        "do in quick mode, say 1e8)\n", v);
        exit(2);
    }
    return cap;
}

int grade_quick_skip(int slot, double work, const char *unit)
{
    if (!grade_quick() || work <= quick_cap())
        return 0;
    if (role == GRADE_RUNNER)
        return 1;
    snprintf(sh->slots[slot].skipped, GRADE_TEXT, "quick mode (GRADE_QUICK=1): %.3g %s, over "
             "the cap of %.3g (GRADE_QUICK_WORK)", work, unit, quick_cap());
    return 1;
}

void grader_init(const char *chapter)
{
    chapter_name = chapter;
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("mmap");
        exit(EXIT_FAILURE);
    }
    memset(sh, 0, sizeof *sh);
    uint64_t seed = harness_seed(); /* exits on a malformed SEED before anything runs */
    /* no test's code may trace this process, open its memory or signal it (sandbox.h) */
    sandbox_parent();

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(EXIT_FAILURE);
    }
    if (pid == 0) {
        char why[200];
        if (gpu_probe(&sh->device, why, sizeof why) != 0) {
            snprintf(sh->device.backend, sizeof sh->device.backend, "none");
            snprintf(sh->device.name, sizeof sh->device.name, "%s", why);
        }
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        !sh->device.backend[0]) {
        snprintf(sh->device.backend, sizeof sh->device.backend, "none");
        snprintf(sh->device.name, sizeof sh->device.name, "the device query crashed");
    }
    if (strcmp(sh->device.backend, "none") == 0) {
        printf("%s  [%s: no device answered: %s]\n", chapter, gpu_backend(), sh->device.name);
        printf("%s  FAIL  nothing graded: this grader was built for the %s backend; without a "
               "GPU, grade with BACKEND=emu\n", chapter, gpu_backend());
        exit(EXIT_FAILURE);
    }
    printf("%s  [%s: %s]  seed %llu\n", chapter, sh->device.backend, sh->device.name,
               (unsigned long long)seed);
    if (grade_quick())
        printf("  quick mode (GRADE_QUICK=1): no timed tests, and no shape over %.3g units of "
               "work (GRADE_QUICK_WORK); the edge shapes stay\n", quick_cap());
    if (grade_sanitizing())
        printf("  under a sanitizer (GRADE_SANITIZE=1): tests that make errors on purpose are "
               "left out; each passing test resets the device, for the leak check\n");
    fflush(stdout);
}

const struct device_info *grader_device(void)
{
    return &sh->device;
}

/* A checked fixture: runs in each test's child before the test. Tests run one at a time, in
 * the order they were added, so a shared counter names the test. */
int grader_cc(void)
{
    const struct device_info *d = grader_device();
    return d->cc_major * 10 + d->cc_minor;
}

static void exit_seen(int status, void *arg)
{
    (void)arg;
    if (role == GRADE_RUNNER)
        return; /* the runner has no records: the judge mirrors how it ended */
    if (running >= 0 && running < GRADE_MAX_TESTS && !sh->slots[running].ended) {
        sh->slots[running].exited = 1;
        sh->slots[running].exit_status = status;
    }
}

static void child_setup(void)
{
    if (running >= 0 && running < GRADE_MAX_TESTS) {
        /* a test's process ends with its grader: a grader killed half-way leaves no test of
         * its running on (a spinning kernel would spin on for good) */
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() == 1)
            _exit(EXIT_FAILURE); /* the grader died before the line above */
        on_exit(exit_seen, NULL);
        trace_open();
        trace("test start");
        /* under a sanitizer the tool's own processes talk to the test's: no filter there */
        if (!grade_sanitizing())
            sandbox_child();
    }
    if (!sh->capture || sh->started >= GRADE_MAX_TESTS)
        return;
    fflush(stderr);
    int fd = fileno(errfile);
    sh->err_start[sh->started++] = lseek(fd, 0, SEEK_END);
    dup2(fd, STDERR_FILENO);
}

/* Its pair, after a test that returned: the test reached its end (a PASS needs it: Check counts
 * a child that exits with status 0 as passed wherever it exits); and under a sanitizer, destroy
 * the context, so that memcheck's leak check (run when a context is destroyed) sees what the
 * test left allocated. */
static void child_teardown(void)
{
    if (running >= 0 && running < GRADE_MAX_TESTS)
        sh->slots[running].ended = 1;
    trace("test end");
    if (grade_sanitizing())
        cudaDeviceReset();
}

/* 1 while tests are added to a step that GRADE_STEP leaves out */
static int step_dropped(void)
{
    return step_now >= 0 && !steps[step_now].selected;
}

int grader_add(Suite *s, const char *tcase, const TTest *fn, const char *const *t, int n,
               double timeout_s)
{
    return grader_add_ctx(s, tcase, fn, t, n, timeout_s, NULL);
}

int grader_add_ctx(Suite *s, const char *tcase, const TTest *fn, const char *const *t, int n,
                   double timeout_s, const void *ctx)
{
    if (step_dropped())
        return -1;
    if (ntests + n > GRADE_MAX_TESTS) {
        fprintf(stderr, "grade: more than %d tests\n", GRADE_MAX_TESTS);
        exit(EXIT_FAILURE);
    }
    int base = ntests;
    for (int i = 0; i < n; i++, ntests++) {
        snprintf(titles[ntests], sizeof titles[ntests], "%s", t[i]);
        snprintf(tcases[ntests], sizeof tcases[ntests], "%s", tcase);
        snprintf(tcnames[ntests], sizeof tcnames[ntests], "%s#%d", tcase, ntests);
        step_of[ntests] = step_now;
        ctx_of[ntests] = ctx;
        TCase *tc = tcase_create(tcnames[ntests]);
        tcase_set_timeout(tc, timeout_s);
        tcase_add_checked_fixture(tc, child_setup, child_teardown);
        tcase_add_loop_test(tc, fn, i, i + 1); /* _i = i, as one loop over 0..n-1 gives */
        suite_add_tcase(s, tc);
    }
    return base;
}

void grader_skip(const char *title, const char *why)
{
    if (step_dropped())
        return;
    if (nskips < (int)(sizeof skips / sizeof skips[0])) {
        skip_step[nskips] = step_now;
        skip_pos[nskips] = ntests;
        snprintf(skips[nskips++], GRADE_TEXT, "%s: %s", title, why);
    }
}

const void *grade_ctx(void)
{
    return running >= 0 && running < ntests ? ctx_of[running] : NULL;
}

int grade_slot(void)
{
    return running;
}

/* GRADE_STEP: 0 when unset or empty; exits on a malformed value before anything runs */
static int wanted_step(void)
{
    const char *v = getenv("GRADE_STEP");
    if (!v || !*v)
        return 0;
    char *end;
    long k = strtol(v, &end, 10);
    if (*end || k < 1 || k > 99) {
        fprintf(stderr, "STEP=%s: not a step number (1, 2, ...)\n", v);
        exit(2);
    }
    return (int)k;
}

int grader_step(int k, const char *name)
{
    if (nsteps == GRADE_MAX_STEPS) {
        fprintf(stderr, "grade: more than %d steps\n", GRADE_MAX_STEPS);
        exit(EXIT_FAILURE);
    }
    struct step *st = &steps[nsteps];
    memset(st, 0, sizeof *st);
    st->k = k;
    snprintf(st->name, sizeof st->name, "%s", name);
    int want = wanted_step();
    st->selected = want == 0 || want == k;
    step_now = nsteps++;
    return st->selected;
}

static void put(char *dst, const char *fmt, va_list ap)
{
    vsnprintf(dst, GRADE_TEXT, fmt, ap);
}

void grade_note(int slot, const char *fmt, ...)
{
    if (role == GRADE_RUNNER)
        return;
    va_list ap;
    va_start(ap, fmt);
    put(sh->slots[slot].note, fmt, ap);
    va_end(ap);
}

void grade_second_run(int slot, int shuffled)
{
    if (role == GRADE_RUNNER)
        return;
    if (slot >= 0 && slot < GRADE_MAX_TESTS)
        sh->slots[slot].second_run = shuffled < 0 ? 0 : shuffled ? 2 : 1;
}

/* What a failure in a second run says besides its hint: the first run, on the same shape,
 * passed. */
static const char *second_run_note(int how)
{
    return how == 2 ? "right on the first run and wrong on the second, where the threads met "
                      "their barriers in another order, the blocks ran in another order and "
                      "the streams' work interleaved differently: the signature of a race (a "
                      "__syncthreads() missing between a write to shared memory and the reads "
                      "of it, a block that reads what another block writes, a missing event "
                      "between streams), or of a result kept from the first run"
                    : "right on the first run and wrong on the second, on fresh inputs into a "
                      "freshly poisoned output: a result kept from the first run (a static, a "
                      "cached pointer), or a race that this run's timing exposed";
}

void grade_hint(int slot, const char *fmt, ...)
{
    if (role == GRADE_RUNNER)
        return;
    va_list ap;
    va_start(ap, fmt);
    put(sh->slots[slot].hint, fmt, ap);
    va_end(ap);
}

void grade_launched(int slot, const char *fmt, ...)
{
    if (role == GRADE_RUNNER)
        return;
    va_list ap;
    va_start(ap, fmt);
    put(sh->slots[slot].launched, fmt, ap);
    va_end(ap);
}

void grade_summary(const char *fmt, ...)
{
    if (role == GRADE_RUNNER)
        return;
    va_list ap;
    va_start(ap, fmt);
    int st = running >= 0 && running < ntests ? step_of[running] : -1;
    put(st >= 0 ? sh->step_summary[st] : sh->summary, fmt, ap);
    va_end(ap);
}

struct rng grade_rng(int slot)
{
    struct rng r;
    rng_init(&r, harness_seed() * 0x9e3779b97f4a7c15ull + (uint64_t)slot);
    if (tty() && role != GRADE_RUNNER) {
        printf("\r\033[K  ..    %s", titles[slot]);
        fflush(stdout);
    }
    return r;
}

static void print_block(const char *label, const char *text)
{
    /* continuation lines line up under the message */
    printf("        %s%s\n", label, text);
}

enum { KEEP = 2048 };

/* The last (up to KEEP) bytes test i wrote to stderr, from the start of a line, into buf
 * (KEEP + 1 bytes); NULL when it wrote nothing. */
static char *stderr_of(int i, char *buf)
{
    if (!sh->capture || i >= sh->started)
        return NULL;
    long from = sh->err_start[i];
    long to = i + 1 < sh->started ? sh->err_start[i + 1] : lseek(fileno(errfile), 0, SEEK_END);
    if (to <= from)
        return NULL;
    if (to - from > KEEP)
        from = to - KEEP;
    ssize_t got = pread(fileno(errfile), buf, (size_t)(to - from), from);
    if (got <= 0)
        return NULL;
    buf[got] = '\0';
    char *line = buf, *nl;
    if (from > sh->err_start[i] && (nl = strchr(line, '\n')))
        line = nl + 1; /* start on a whole line */
    return *line ? line : NULL;
}

/* The last line test i wrote to stderr ("...: cudaDeviceSynchronize() failed: an illegal
 * memory access ..."), into buf; "" when none. */
static void last_stderr_line(int i, char *out, size_t len)
{
    char buf[KEEP + 1];
    char *text = stderr_of(i, buf);
    out[0] = '\0';
    if (!text)
        return;
    size_t n = strlen(text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
        text[--n] = '\0';
    char *last = strrchr(text, '\n');
    snprintf(out, len, "%s", last ? last + 1 : text);
}

/* The last lines test i wrote to stderr, indented, when it wrote any. */
static void print_stderr_of(int i)
{
    char buf[KEEP + 1];
    char *line = stderr_of(i, buf), *nl;
    if (!line)
        return;
    printf("        it printed:\n");
    for (; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        printf("          %s\n", line);
        if (!nl)
            break;
    }
}

/* ---- the judge and the runner (grade.h) ------------------------------------------------------ */

enum { MSG_BUFFERS = 0x42554653, MSG_TIMING = 0x54494d45, MSG_DONE = 0x444f4e45,
       MSG_BYTES = 0x42595445 };
enum { CHUNK = 4 << 20 }; /* bytes a buffer moves through the host at a time */

enum grade_role grade_role(void)
{
    return role;
}

static FILE *tsv; /* the results file (below): the runner may not keep its descriptor */

void grade_split(void)
{
    if (!tests_fork || running < 0 || role != GRADE_SOLO)
        return; /* one process: Check's no-fork mode, or outside a test */
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("grade: socketpair");
        exit(EXIT_FAILURE);
    }
    fflush(NULL);
    pid_t judge = getpid(), pid = fork();
    if (pid < 0) {
        perror("grade: fork");
        exit(EXIT_FAILURE);
    }
    if (pid == 0) {
        role = GRADE_RUNNER;
        close(sv[0]);
        channel = sv[1];
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != judge)
            _exit(EXIT_FAILURE);
        if (!grade_sanitizing())
            sandbox_guard(judge); /* the judge is as out of reach as the grader */
        /* nothing of the judge's: its records, the results file, the grade's stdout (what the
         * code under grading prints goes with its stderr, into the test's captured output) */
        struct shared *own = xmalloc(sizeof *sh); /* a private copy: what it reads stays */
        memcpy(own, sh, sizeof *sh);
        munmap(sh, sizeof *sh);
        sh = own;
        if (tsv)
            close(fileno(tsv));
        dup2(STDERR_FILENO, STDOUT_FILENO);
        trace("forked");
        return;
    }
    role = GRADE_JUDGE;
    close(sv[1]);
    channel = sv[0];
    runner_pid = pid;
    trace("forked its runner");
    /* no process of this user, the runner included, may trace or read the judge */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* the hint of a test that ended with status 0 before its end, in its own process or its runner */
static const char EARLY_EXIT_HINT[] =
    "a graded call must return to its caller: report an error with its return value (or a "
    "checking macro that returns), never by ending the process; a process that ends early "
    "grades nothing";

/* The judge's, when its runner is gone before it said so: end as it ended. */
static void runner_died(void)
{
    int st = 0;
    while (waitpid(runner_pid, &st, 0) < 0 && errno == EINTR)
        ;
    fflush(NULL);
    if (WIFSIGNALED(st)) {
        signal(WTERMSIG(st), SIG_DFL);
        raise(WTERMSIG(st));
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
        exit(WEXITSTATUS(st));
    grade_hint(running, "%s", EARLY_EXIT_HINT);
    ck_abort_msg("the test stopped before its end: the code it graded ended its process with "
                 "status 0 (exit(0) or _exit(0)) before the graded call returned");
}

static void send_all(const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(channel, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(EXIT_FAILURE); /* the judge is gone: nothing to report to */
        p += w;
        n -= (size_t)w;
    }
}

static void recv_all(void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = read(channel, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            runner_died();
        p += r;
        n -= (size_t)r;
    }
}

/* the runner waits for the judge between exchanges: the two never use the device at once */
static void send_ack(void)
{
    char a = 1;
    ssize_t w;
    do
        w = write(channel, &a, 1);
    while (w < 0 && errno == EINTR);
}

static void wait_ack(void)
{
    char a;
    ssize_t r;
    do
        r = read(channel, &a, 1);
    while (r < 0 && errno == EINTR);
    if (r != 1)
        _exit(EXIT_FAILURE);
}

struct buffer_head { uint32_t slot, input; uint64_t bytes; };

/* The parts of slot's device memory that travel: an output whole, guards included; an input's
 * two guard zones (its contents are the judge's own, from the same seed). */
static void buffer_parts(unsigned char *base, size_t bytes, int input, unsigned char **at,
                         size_t *len, int *nparts)
{
    if (input) {
        at[0] = base, len[0] = DBUF_GUARD;
        at[1] = base + DBUF_GUARD + bytes, len[1] = DBUF_GUARD;
        *nparts = 2;
    } else {
        at[0] = base, len[0] = 2 * (size_t)DBUF_GUARD + bytes;
        *nparts = 1;
    }
}

void grade_exchange_buffers(void)
{
    grade_exchange_run(NULL);
}

void grade_exchange_run(unsigned long long *host_bytes)
{
    if (role == GRADE_SOLO)
        return;
    unsigned char *chunk = xmalloc(CHUNK);
    uint32_t head[2] = { MSG_BUFFERS, 0 };
    uint64_t copied = host_bytes ? *host_bytes : 0;
    int slots = dbuf_slots();
    if (role == GRADE_RUNNER) {
        trace("ran the code under grading: sending its buffers");
        for (int i = 0; i < slots; i++) {
            unsigned char *base;
            size_t bytes;
            int input;
            head[1] += (uint32_t)dbuf_slot(i, &base, &bytes, &input);
        }
        send_all(head, sizeof head);
        send_all(&copied, sizeof copied);
        for (int i = 0; i < slots; i++) {
            unsigned char *base, *at[2];
            size_t bytes, len[2];
            int input, nparts;
            if (!dbuf_slot(i, &base, &bytes, &input))
                continue;
            struct buffer_head bh = { (uint32_t)i, (uint32_t)input, bytes };
            send_all(&bh, sizeof bh);
            buffer_parts(base, bytes, input, at, len, &nparts);
            for (int part = 0; part < nparts; part++)
                for (size_t off = 0; off < len[part]; off += CHUNK) {
                    size_t n = len[part] - off < CHUNK ? len[part] - off : CHUNK;
                    to_host(chunk, at[part] + off, n);
                    send_all(chunk, n);
                }
        }
        wait_ack();
        free(chunk);
        return;
    }
    uint32_t got[2];
    trace("made its inputs and reference: waiting for the runner");
    recv_all(got, sizeof got);
    trace("the runner's run is in");
    recv_all(&copied, sizeof copied);
    if (host_bytes)
        *host_bytes = copied;
    int live = 0;
    for (int i = 0; i < slots; i++) {
        unsigned char *base;
        size_t bytes;
        int input;
        live += dbuf_slot(i, &base, &bytes, &input);
    }
    if (got[0] != MSG_BUFFERS || (int)got[1] != live)
        ck_abort_msg("the grade lost step with the code it runs: %u buffers came back where %d "
                     "are live (the code under grading wrote to the grade's channel?)", got[1],
                     live);
    for (uint32_t b = 0; b < got[1]; b++) {
        struct buffer_head bh;
        recv_all(&bh, sizeof bh);
        unsigned char *base, *at[2];
        size_t bytes, len[2];
        int input, nparts;
        if (!dbuf_slot((int)bh.slot, &base, &bytes, &input) || bytes != bh.bytes ||
            (uint32_t)input != bh.input)
            ck_abort_msg("the grade lost step with the code it runs: buffer %u came back with "
                         "%llu bytes", bh.slot, (unsigned long long)bh.bytes);
        buffer_parts(base, bytes, input, at, len, &nparts);
        for (int part = 0; part < nparts; part++)
            for (size_t off = 0; off < len[part]; off += CHUNK) {
                size_t n = len[part] - off < CHUNK ? len[part] - off : CHUNK;
                recv_all(chunk, n);
                to_device(at[part] + off, chunk, n);
            }
    }
    free(chunk);
    send_ack();
    trace("buffers in place");
}

void grade_exchange_timing(struct timing *t)
{
    uint32_t head = MSG_TIMING;
    if (role == GRADE_RUNNER) {
        send_all(&head, sizeof head);
        send_all(t, sizeof *t);
        wait_ack();
    } else if (role == GRADE_JUDGE) {
        uint32_t got;
        recv_all(&got, sizeof got);
        recv_all(t, sizeof *t);
        if (got != MSG_TIMING || !(t->median_ms >= 0) || t->reps < 0)
            ck_abort_msg("the grade lost step with the code it runs: no timing came back");
        send_ack();
    }
}

void grade_exchange_bytes(void *p, size_t n)
{
    uint32_t head[2] = { MSG_BYTES, (uint32_t)n };
    if (role == GRADE_RUNNER) {
        send_all(head, sizeof head);
        send_all(p, n);
        wait_ack();
    } else if (role == GRADE_JUDGE) {
        uint32_t got[2];
        recv_all(got, sizeof got);
        if (got[0] != MSG_BYTES || got[1] != (uint32_t)n)
            ck_abort_msg("the grade lost step with the code it runs: %u bytes of facts came "
                         "back where %zu were due", got[1], n);
        recv_all(p, n);
        send_ack();
    }
}

void grade_split_end(void)
{
    uint32_t head = MSG_DONE;
    if (role == GRADE_RUNNER) {
        send_all(&head, sizeof head);
        wait_ack();
        /* under a sanitizer, the runner's context is the one the learner's code allocated in:
         * destroy it, so that memcheck's leak check sees what it left (child_teardown) */
        if (grade_sanitizing())
            cudaDeviceReset();
        fflush(NULL);
        _exit(0);
    }
    if (role != GRADE_JUDGE)
        return;
    uint32_t got;
    trace("checked: waiting for the runner's end");
    recv_all(&got, sizeof got);
    if (got != MSG_DONE)
        ck_abort_msg("the grade lost step with the code it runs: it did not end where the "
                     "grade did");
    send_ack();
    int st;
    while (waitpid(runner_pid, &st, 0) < 0 && errno == EINTR)
        ;
    close(channel);
    channel = -1;
    role = GRADE_SOLO;
}

/* ---- build/grade.tsv: one row per test, written as each test ends ------------------------ */

static const char *tsv_side;
static int self_skipped; /* tests that ran and skipped themselves (quick mode) */
static int cut_short;    /* tests Check passed that never reached their end: failed here */

/* Which side of the chapter this grader was built from, as the build tells it (ident.h), unless
 * GRADE_SIDE says (make sanitize tags its runs). */
static const char *find_side(void)
{
    const char *env = getenv("GRADE_SIDE");
    return env ? env : GRADE_BUILD.side;
}

/* GRADE_TSV names the file ("" for none); unset, build/grade.tsv when ./build exists (a grader
 * run from the repository's root, as `make grade` runs it). Appended to; the header is written
 * when the file is empty. */
static void tsv_open(void)
{
    const char *path = getenv("GRADE_TSV");
    if (!path) {
        if (access("build", W_OK) != 0)
            return;
        path = "build/grade.tsv";
    }
    if (!*path)
        return;
    tsv = fopen(path, "a");
    if (!tsv) {
        fprintf(stderr, "grade: %s: cannot append the results (continuing without)\n", path);
        return;
    }
    if (ftell(tsv) == 0)
        fprintf(tsv, "chapter\tbackend\tside\tstep\ttest\tverdict\tmessage\tseed\n");
    fflush(tsv);
    tsv_side = find_side();
}

/* One field: up to the first newline, with tabs turned into spaces. */
static void tsv_field(const char *text)
{
    for (const char *c = text ? text : ""; *c && *c != '\n'; c++)
        fputc(*c == '\t' || *c == '\r' ? ' ' : *c, tsv);
}

/* A test's row (step: "k", or "-" outside a step), or a step's ("k/N", its name). */
static void tsv_row(const char *step, const char *title, const char *verdict, const char *message)
{
    if (!tsv)
        return;
    const char *fields[] = { chapter_name, gpu_backend(), tsv_side, step, title, verdict,
                             message };
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        tsv_field(fields[f]);
        fputc('\t', tsv);
    }
    fprintf(tsv, "%llu\n", (unsigned long long)harness_seed());
    fflush(tsv); /* on disk before the next test starts: a grader that dies keeps it */
}

/* test i's step column: "k", or "-" */
static const char *step_col(int st)
{
    static char buf[8];
    if (st < 0)
        return "-";
    snprintf(buf, sizeof buf, "%d", steps[st].k);
    return buf;
}

/* What the ladder needs of test i's end: its verdict counted in its step, and the step's first
 * failure kept, with its hint. */
static void step_count(int i, const char *tcase, const char *title, const char *verdict,
                       const char *msg, const char *hint)
{
    int st = i < ntests ? step_of[i] : -1;
    if (st < 0)
        return;
    struct step *p = &steps[st];
    if (verdict[0] == 'P')
        p->passed++;
    else if (verdict[0] == 'S')
        p->skipped++;
    else if (p->failed++ == 0) {
        p->wrong = strncmp(tcase, "correct", 7) == 0;
        snprintf(p->failure, sizeof p->failure, "%s%s: %s", p->wrong ? "wrong: " : "", title,
                 msg);
        snprintf(p->hint, sizeof p->hint, "%s", hint ? hint : "");
    }
}

/* the hint for a test that the sandbox ended (sandbox.h) */
static const char *sigsys_hint(void)
{
    static char h[GRADE_TEXT];
    snprintf(h, sizeof h, "hint: %s", sandbox_refused(SIGSYS));
    return h;
}

/* The lines of test i, which ended with result r. */
static void report(int i, TestResult *r)
{
    const char *title = i < ntests ? titles[i] : tr_tcname(r);
    struct slot *sl = i < ntests ? &sh->slots[i] : NULL;
    int rtype = tr_rtype(r);
    char cut[GRADE_TEXT];
    if (rtype == CK_PASS && sl && !sl->ended) {
        /* the child exited 0 before its end: a launcher or a checking macro that exits */
        if (sl->exited)
            snprintf(cut, sizeof cut, "the test stopped before its end: exit(%d) was called "
                     "inside it, by the code it graded", sl->exit_status);
        else
            snprintf(cut, sizeof cut, "the test stopped before its end: its process ended with "
                     "status 0 (_exit, or a thread that called exit_group) in the code it graded");
        printf("  FAIL  %s: %s\n", title, cut);
        print_block("hint: ", EARLY_EXIT_HINT);
        tsv_row(step_col(step_of[i]), title, "FAIL", cut);
        step_count(i, tcases[i], title, "FAIL", cut, NULL);
        print_stderr_of(i);
        cut_short++;
        fflush(stdout);
        return;
    }
    switch (rtype) {
    case CK_PASS:
        if (sl && sl->skipped[0]) { /* it skipped itself: grade_quick_skip */
            printf("  SKIP  %s: %s\n", title, sl->skipped);
            tsv_row(step_col(step_of[i]), title, "SKIP", sl->skipped);
            step_count(i, tcases[i], title, "SKIP", sl->skipped, NULL);
            self_skipped++;
            break;
        }
        printf("  PASS  %s%s%s\n", title, sl && sl->note[0] ? ": " : "", sl ? sl->note : "");
        tsv_row(step_col(i < ntests ? step_of[i] : -1), title, "PASS", sl ? sl->note : "");
        step_count(i, tcases[i], title, "PASS", "", NULL);
        break;
    case CK_FAILURE:
        printf("  FAIL  %s: %s\n", title, tr_msg(r));
        tsv_row(step_col(i < ntests ? step_of[i] : -1), title, "FAIL", tr_msg(r));
        step_count(i, tcases[i], title, "FAIL", tr_msg(r), sl ? sl->hint : NULL);
        if (sl && sl->hint[0])
            print_block("hint: ", sl->hint);
        if (sl && sl->launched[0])
            print_block("launched: ", sl->launched);
        if (sl && sl->second_run)
            print_block("note: ", second_run_note(sl->second_run));
        print_stderr_of(i);
        break;
    default: {
        printf("  FAIL  %s: %s\n", title, tr_msg(r));
        /* the file's row carries what the test said last, a CUDA error say */
        char last[GRADE_TEXT], msg[GRADE_TEXT + 160];
        last_stderr_line(i, last, sizeof last);
        snprintf(msg, sizeof msg, "%s%s%s", tr_msg(r), last[0] ? ": " : "", last);
        tsv_row(step_col(i < ntests ? step_of[i] : -1), title, "FAIL", msg);
        step_count(i, tcases[i], title, "FAIL", msg, NULL);
        print_stderr_of(i);
        print_block("", strstr(tr_msg(r), "timeout")
                            ? "hint: the kernel did not finish in time: a loop that never "
                              "ends, or a barrier that not every thread reaches?"
                        : strstr(tr_msg(r), "signal 31") || strstr(tr_msg(r), "Bad system call")
                            ? sigsys_hint()
                        : strstr(last, "cudaErrorLaunchOutOfResources")
                            ? "hint: the block asks for more registers than an SM has: "
                              "threads a block x registers a thread must fit in 65,536 (64 "
                              "a thread for 1,024 threads); __launch_bounds__(threads) on "
                              "the kernel makes the compiler keep to it"
                        : strstr(last, "cudaErrorInvalidConfiguration")
                            ? "hint: a launch was refused for its configuration: a block of "
                              "more than 1024 threads or of none, a grid dimension of 0 or "
                              "past its limit (2^31 - 1 for x, 65535 for y and z), or more "
                              "shared memory than a block may have; check each launch's "
                              "cudaGetLastError to see which"
                            : "hint: the test stopped early: a CUDA error names the call "
                              "that saw it; an illegal address is an index past the end of "
                              "a buffer: a missing bounds check, or a stride, an offset or a "
                              "grid that reaches too far");
        break;
    }
    }
    fflush(stdout);
}

/* The skips added before test `upto` (all of them for ntests) not shown yet: their lines, their
 * rows, and their steps' counts. */
static void show_skips(int upto)
{
    static int shown;
    for (; shown < nskips && skip_pos[shown] <= upto; shown++) {
        int i = shown;
        printf("  SKIP  %s\n", skips[i]);
        char title[GRADE_TEXT];
        memcpy(title, skips[i], sizeof title); /* "title: why" */
        char *colon = strstr(title, ": ");
        if (colon)
            *colon = '\0';
        tsv_row(step_col(skip_step[i]), title, "SKIP", colon ? colon + 2 : "");
        if (skip_step[i] >= 0) {
            struct step *p = &steps[skip_step[i]];
            if (p->skipped++ == 0)
                snprintf(p->skipped_why, sizeof p->skipped_why, "%s", colon ? colon + 2 : "");
        }
    }
}

/* STEP=k names no step of this chapter: say which there are, and stop */
static void check_wanted_step(void)
{
    int want = wanted_step();
    if (!want)
        return;
    for (int i = 0; i < nsteps; i++)
        if (steps[i].k == want)
            return;
    if (nsteps == 0) {
        printf("%s  FAIL  STEP=%d: this chapter is graded whole; it has no steps (leave STEP "
               "out)\n", chapter_name, want);
        exit(2);
    }
    printf("%s  FAIL  STEP=%d: no such step; the steps are:\n", chapter_name, want);
    for (int i = 0; i < nsteps; i++)
        printf("    %d  %s\n", steps[i].k, steps[i].name);
    exit(2);
}

/* The number a chapter's name starts with ("04"), for the ladder's lines; the whole name when
 * it starts with none. */
static void chapter_number(char *buf, size_t len)
{
    size_t digits = strspn(chapter_name, "0123456789");
    snprintf(buf, len, "%.*s", digits ? (int)digits : (int)strlen(chapter_name), chapter_name);
}

/* text into dst (len bytes), cut after its last whole word that fits, with "..." */
static void cut_words(char *dst, size_t len, const char *text)
{
    size_t tl = strlen(text);
    if (tl < len) {
        memcpy(dst, text, tl + 1);
        return;
    }
    size_t keep = len - 4;
    while (keep > len / 2 && text[keep] != ' ')
        keep--;
    memcpy(dst, text, keep);
    memcpy(dst + keep, "...", 4);
}

/* One line a step that ran, and its row in the results file; returns the steps that passed. */
static int print_ladder(int *graded)
{
    char num[64];
    chapter_number(num, sizeof num);
    int passed = 0;
    *graded = 0;
    printf("\n");
    for (int i = 0; i < nsteps; i++) {
        struct step *p = &steps[i];
        if (!p->selected)
            continue;
        const char *verdict = p->failed ? "FAIL" : p->passed ? "PASS" : "SKIP";
        char text[GRADE_TEXT + 16];
        const char *summary = sh->step_summary[i];
        if (p->failed && p->wrong)
            snprintf(text, sizeof text, "%s", p->failure);
        else if (p->failed)
            snprintf(text, sizeof text, "correct; %s", summary[0] ? summary : p->failure);
        else if (p->passed)
            snprintf(text, sizeof text, "%s", summary[0] ? summary : "correct on every shape");
        else
            snprintf(text, sizeof text, "%s", p->skipped_why[0] ? p->skipped_why : "nothing ran");
        if (p->passed && !p->failed)
            passed++;
        if (p->passed || p->failed)
            (*graded)++;
        /* one screen line: long messages are cut, the file keeps them whole */
        char shown[112];
        cut_words(shown, sizeof shown, text);
        printf("  %s step %d of %d  %-36s %s  %s\n", num, p->k, nsteps, p->name, verdict, shown);
        if (p->failed && p->hint[0]) {
            char h[112];
            cut_words(h, sizeof h, p->hint);
            printf("        hint: %s\n", h);
        }
        char col[16];
        snprintf(col, sizeof col, "%d/%d", p->k, nsteps);
        tsv_row(col, p->name, verdict, text);
    }
    return passed;
}

int grader_run(Suite *s)
{
    check_wanted_step();
    SRunner *sr = srunner_create(s);
    errfile = tmpfile();
    tests_fork = srunner_fork_status(sr) == CK_FORK;
    sh->capture = errfile && tests_fork;
    if (sh->capture)
        fcntl(fileno(errfile), F_SETFL, O_APPEND);
    tsv_open();

    /* One test at a time, in the order they were added, each reported as soon as it ends: a
     * grader that is itself killed half-way keeps every verdict before it, on the screen and
     * in the results file. CK_RUN_CASE=NAME runs only the tests grader_add named NAME. */
    const char *only = getenv("CK_RUN_CASE");
    int seen = 0;
    for (int i = 0; i < ntests; i++) {
        if (only && *only && strcmp(only, tcases[i]) != 0) {
            if (sh->capture && sh->started == i)
                sh->err_start[sh->started++] = lseek(fileno(errfile), 0, SEEK_END);
            continue;
        }
        show_skips(i);
        running = i;
        srunner_run(sr, NULL, tcnames[i], CK_SILENT);
        running = -1;
        if (tty())
            printf("\r\033[K");
        int now = srunner_ntests_run(sr);
        if (now > seen) {
            TestResult **res = srunner_results(sr);
            for (int j = seen; j < now; j++)
                report(i, res[j]);
            free(res);
            seen = now;
        }
        /* a test whose child died before its fixture ran still takes its place */
        if (sh->capture && sh->started == i)
            sh->err_start[sh->started++] = lseek(fileno(errfile), 0, SEEK_END);
    }
    show_skips(ntests);
    int steps_passed = 0, steps_graded = 0;
    if (nsteps)
        steps_passed = print_ladder(&steps_graded);
    if (tsv) {
        fclose(tsv);
        tsv = NULL;
    }

    /* a test that skipped itself is neither passed nor failed */
    int n = srunner_ntests_run(sr) - self_skipped;
    int failed = srunner_ntests_failed(sr) + cut_short;
    int passed = n - failed;
    char skipped[64] = "";
    if (self_skipped)
        snprintf(skipped, sizeof skipped, " (quick mode: %d shape%s skipped)", self_skipped,
                 self_skipped == 1 ? "" : "s");
    char ladder[96] = "";
    int nsel = 0, sel = 0;
    for (int i = 0; i < nsteps; i++)
        if (steps[i].selected) {
            nsel++;
            sel = i + 1;
        }
    /* one step asked for (STEP=k) shows which; a ladder of one step graded whole counts it */
    if (nsteps && nsel == 1 && wanted_step())
        snprintf(ladder, sizeof ladder, "  step %d of %d", sel, nsteps);
    else if (nsteps)
        snprintf(ladder, sizeof ladder, "  %d of %d steps passed", steps_passed, nsteps);
    if (nsteps && nsel > 1 && steps_graded < nsel)
        snprintf(ladder + strlen(ladder), sizeof ladder - strlen(ladder),
                 " (%d not graded here)", nsel - steps_graded);
    /* nothing ran, and every test said why it skipped (a chapter this machine cannot grade, as
     * chapter 12 on one GPU): neither a pass nor a failure */
    const int none_ran = n == 0 && failed == 0 && nskips > 0;
    printf("%s  %s  %d/%d passed on %s%s%s%s%s\n", chapter_name,
           failed == 0 && n > 0 ? "PASS" : none_ran ? "SKIP" : "FAIL", passed, n, gpu_backend(),
           skipped, ladder, sh->summary[0] ? "  " : "", sh->summary);
    fflush(stdout);
    srunner_print(sr, CK_MINIMAL); /* Check's own closing line */
    if (cut_short)
        printf("(Check counts the %d test%s that stopped before %s end as passed; this grade "
               "does not)\n", cut_short, cut_short == 1 ? "" : "s", cut_short == 1 ? "its" : "their");

    const char *counts = getenv("GRADE_COUNTS");
    if (counts && *counts) {
        FILE *f = fopen(counts, "a");
        if (f) {
            fprintf(f, "%s\t%s\t%d\t%d\n", chapter_name, gpu_backend(), passed, failed);
            fclose(f);
        }
    }
    srunner_free(sr);
    return (failed == 0 && n > 0) || none_ran ? EXIT_SUCCESS : EXIT_FAILURE;
}

int grader_add_timed(Suite *s, const char *tcase, const TTest *fn, const char *title,
                     double timeout_s)
{
    return grader_add_timed_ctx(s, tcase, fn, title, timeout_s, NULL);
}

int grader_add_timed_ctx(Suite *s, const char *tcase, const TTest *fn, const char *title,
                         double timeout_s, const void *ctx)
{
    if (!gpu_times_are_real()) {
        grader_skip(tcase, "timings are real on a GPU only; on the CPU backend only "
                           "correctness is graded");
        return -1;
    }
    if (grade_quick()) {
        grader_skip(tcase, "quick mode (GRADE_QUICK=1): timed tests are left out");
        return -1;
    }
    return grader_add_ctx(s, tcase, fn, &title, 1, timeout_s, ctx);
}

/* --describe: what the build told this grader, and its modes, one "key<TAB>value" a line, for
 * the scripts (scripts/programs.sh), which ask instead of reading a grader's source. */
static int grader_describe(const struct grader_spec *spec)
{
    printf("chapter\t%s\n", spec->chapter);
    printf("side\t%s\n", GRADE_BUILD.side);
    printf("backend\t%s\n", gpu_backend());
    printf("modes\tgrade%s%s\n", spec->bench ? " bench" : "", spec->tune ? " tune" : "");
    return strcmp(spec->chapter, GRADE_BUILD.chapter) == 0 ? 0 : 1;
}

int grader_main(const struct grader_spec *spec, int argc, char **argv)
{
    if (argc == 1) {
        grader_init(spec->chapter);
        Suite *s = suite_create(spec->chapter);
        spec->add_tests(s);
        return grader_run(s);
    }
    if (argc == 2 && strcmp(argv[1], "--describe") == 0)
        return grader_describe(spec);
    if (argc == 3 && strcmp(argv[1], "--bench") == 0 && spec->bench)
        return spec->bench(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--tune") == 0 && spec->tune)
        return spec->tune(argv[2]);
    fprintf(stderr, "usage: %s            grade chapter %s\n", argv[0], spec->chapter);
    fprintf(stderr, "       %s --describe what this grader is and can do, tab-separated\n",
            argv[0]);
    if (spec->bench)
        fprintf(stderr, "       %s --bench F  measure every rung, rows into F\n", argv[0]);
    if (spec->tune)
        fprintf(stderr, "       %s --tune F   measure every candidate configuration, rows "
                        "into F\n", argv[0]);
    return 2;
}

int measure_begin(const char *mode, struct device_info *info)
{
    char why[256];
    if (gpu_probe(info, why, sizeof why) != 0) {
        fprintf(stderr, "%s: no GPU answered (%s): nothing to measure\n", mode, why);
        return -1;
    }
    if (!gpu_times_are_real()) {
        fprintf(stderr, "%s: the CPU backend's timings are not GPU timings; measure on a "
                        "GPU (BACKEND=cuda)\n", mode);
        return -1;
    }
    return 0;
}

int bench_begin_extra(const char *path, const char *extra, struct results *out,
                      struct device_info *info)
{
    if (measure_begin("bench", info) != 0)
        return -1;
    if (results_open_extra(out, path, info->name, info->driver, extra) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int bench_begin(const char *path, struct results *out, struct device_info *info)
{
    return bench_begin_extra(path, NULL, out, info);
}
