/* grade.c: registering, running and reporting a chapter's Check tests (see grade.h). */
#define _GNU_SOURCE
#include "grade.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

struct slot {
    char note[GRADE_TEXT];
    char hint[GRADE_TEXT];
};

/* Shared between the parent and every forked test: made before the first fork. */
struct shared {
    struct device_info device;
    char summary[GRADE_TEXT];
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
static int ntests;
static char skips[8][GRADE_TEXT];
static int nskips;

static int tty(void)
{
    static int v = -1;
    if (v < 0)
        v = isatty(STDOUT_FILENO);
    return v;
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
    fflush(stdout);
}

const struct device_info *grader_device(void)
{
    return &sh->device;
}

/* A checked fixture: runs in each test's child before the test. Tests run one at a time, in
 * the order they were added, so a shared counter names the test. */
static void child_setup(void)
{
    if (!sh->capture || sh->started >= GRADE_MAX_TESTS)
        return;
    fflush(stderr);
    int fd = fileno(errfile);
    sh->err_start[sh->started++] = lseek(fd, 0, SEEK_END);
    dup2(fd, STDERR_FILENO);
}

int grader_add(Suite *s, const char *tcase, const TTest *fn, const char *const *t, int n,
               double timeout_s)
{
    if (ntests + n > GRADE_MAX_TESTS) {
        fprintf(stderr, "grade: more than %d tests\n", GRADE_MAX_TESTS);
        exit(EXIT_FAILURE);
    }
    TCase *tc = tcase_create(tcase);
    tcase_set_timeout(tc, timeout_s);
    tcase_add_checked_fixture(tc, child_setup, NULL);
    tcase_add_loop_test(tc, fn, 0, n);
    suite_add_tcase(s, tc);
    int base = ntests;
    for (int i = 0; i < n; i++, ntests++) {
        snprintf(titles[ntests], sizeof titles[ntests], "%s", t[i]);
        snprintf(tcases[ntests], sizeof tcases[ntests], "%s", tcase);
    }
    return base;
}

void grader_skip(const char *title, const char *why)
{
    if (nskips < 8)
        snprintf(skips[nskips++], GRADE_TEXT, "%s: %s", title, why);
}

static void put(char *dst, const char *fmt, va_list ap)
{
    vsnprintf(dst, GRADE_TEXT, fmt, ap);
}

void grade_note(int slot, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put(sh->slots[slot].note, fmt, ap);
    va_end(ap);
}

void grade_hint(int slot, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put(sh->slots[slot].hint, fmt, ap);
    va_end(ap);
}

void grade_summary(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put(sh->summary, fmt, ap);
    va_end(ap);
}

struct rng grade_rng(int slot)
{
    struct rng r;
    rng_init(&r, harness_seed() * 0x9e3779b97f4a7c15ull + (uint64_t)slot);
    if (tty()) {
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

/* The last lines test i wrote to stderr, indented, when it wrote any. */
static void print_stderr_of(int i)
{
    if (!sh->capture || i >= sh->started)
        return;
    long from = sh->err_start[i];
    long to = i + 1 < sh->started ? sh->err_start[i + 1] : lseek(fileno(errfile), 0, SEEK_END);
    if (to <= from)
        return;
    enum { KEEP = 2048 };
    if (to - from > KEEP)
        from = to - KEEP;
    char buf[KEEP + 1];
    ssize_t got = pread(fileno(errfile), buf, (size_t)(to - from), from);
    if (got <= 0)
        return;
    buf[got] = '\0';
    char *line = buf, *nl;
    if (from > sh->err_start[i] && (nl = strchr(line, '\n')))
        line = nl + 1; /* start on a whole line */
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

int grader_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    errfile = tmpfile();
    sh->capture = errfile && srunner_fork_status(sr) == CK_FORK;
    if (sh->capture)
        fcntl(fileno(errfile), F_SETFL, O_APPEND);
    srunner_run_all(sr, CK_SILENT);
    if (tty())
        printf("\r\033[K");

    int n = srunner_ntests_run(sr), failed = srunner_ntests_failed(sr);
    TestResult **res = srunner_results(sr);
    for (int i = 0; i < n; i++) {
        TestResult *r = res[i];
        /* Check runs test cases, and loop iterations, in the order they were added */
        const char *title = i < ntests && strcmp(tcases[i], tr_tcname(r)) == 0
                                ? titles[i] : tr_tcname(r);
        struct slot *sl = i < ntests ? &sh->slots[i] : NULL;
        switch (tr_rtype(r)) {
        case CK_PASS:
            printf("  PASS  %s%s%s\n", title, sl && sl->note[0] ? ": " : "",
                   sl ? sl->note : "");
            break;
        case CK_FAILURE:
            printf("  FAIL  %s: %s\n", title, tr_msg(r));
            if (sl && sl->hint[0])
                print_block("hint: ", sl->hint);
            break;
        default:
            printf("  FAIL  %s: %s\n", title, tr_msg(r));
            print_stderr_of(i);
            print_block("", strstr(tr_msg(r), "timeout")
                                ? "hint: the kernel did not finish in time: a loop that never "
                                  "ends, or a barrier that not every thread reaches?"
                                : "hint: the test stopped early: a CUDA error names the call "
                                  "that saw it; an illegal address is usually an index past "
                                  "the end of a buffer (a missing bounds check)");
            break;
        }
        if (tr_rtype(r) == CK_FAILURE)
            print_stderr_of(i);
    }
    for (int i = 0; i < nskips; i++)
        printf("  SKIP  %s\n", skips[i]);

    int passed = n - failed;
    printf("%s  %s  %d/%d passed on %s%s%s\n", chapter_name,
           failed == 0 && n > 0 ? "PASS" : "FAIL", passed, n, gpu_backend(),
           sh->summary[0] ? "  " : "", sh->summary);
    fflush(stdout);
    srunner_print(sr, CK_MINIMAL); /* Check's own closing line */

    const char *counts = getenv("GRADE_COUNTS");
    if (counts && *counts) {
        FILE *f = fopen(counts, "a");
        if (f) {
            fprintf(f, "%s\t%s\t%d\t%d\n", chapter_name, gpu_backend(), passed, failed);
            fclose(f);
        }
    }
    srunner_free(sr);
    return failed == 0 && n > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int grader_add_timed(Suite *s, const char *tcase, const TTest *fn, const char *title,
                     double timeout_s)
{
    if (!gpu_times_are_real()) {
        grader_skip(tcase, "timings are real on a GPU only; on the CPU backend only "
                           "correctness is graded");
        return -1;
    }
    return grader_add(s, tcase, fn, &title, 1, timeout_s);
}

int grader_main(const struct grader_spec *spec, int argc, char **argv)
{
    if (argc == 1) {
        grader_init(spec->chapter);
        Suite *s = suite_create(spec->chapter);
        spec->add_tests(s);
        return grader_run(s);
    }
    if (argc == 3 && strcmp(argv[1], "--bench") == 0 && spec->bench)
        return spec->bench(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--tune") == 0 && spec->tune)
        return spec->tune(argv[2]);
    fprintf(stderr, "usage: %s            grade chapter %s\n", argv[0], spec->chapter);
    if (spec->bench)
        fprintf(stderr, "       %s --bench F  measure every rung, rows into F\n", argv[0]);
    if (spec->tune)
        fprintf(stderr, "       %s --tune F   measure every candidate configuration, rows "
                        "into F\n", argv[0]);
    return 2;
}

int bench_begin(const char *path, struct results *out, struct device_info *info)
{
    char why[256];
    if (gpu_probe(info, why, sizeof why) != 0) {
        fprintf(stderr, "bench: no GPU answered (%s): nothing to measure\n", why);
        return -1;
    }
    if (!gpu_times_are_real()) {
        fprintf(stderr, "bench: the CPU backend's timings are not GPU timings; measure on a "
                        "GPU (BACKEND=cuda)\n");
        return -1;
    }
    if (results_open(out, path, info->name, info->driver) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}
