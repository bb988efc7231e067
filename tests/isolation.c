/* isolation.c: what the grade glue (harness/grade.c) promises when a kernel goes wrong,
 * demonstrated with the real glue on whichever backend this is built for.
 *
 *   isolation          the suite: runs the demo below as a separate process (this program
 *                      with --demo, its results file in a temporary file) and checks its
 *                      lines, its exit status and its rows, one test per promise
 *   isolation --demo   a grader of nine tests, seven of which fail on purpose:
 *                        a kernel that spins on a flag nobody sets (2 s timeout)
 *                        a correct kernel after it, which must still run and pass
 *                        a kernel that stores to an illegal address
 *                        NaN in the output, Inf in the output, an element never written
 *                        a store one element past the end of the output buffer
 *                        a read one element past the end of the input, times zero
 *                        a correct kernel at the end
 *   isolation --demo-killed
 *                      a grader whose second test stalls, and which the suite kills from
 *                      outside once the first test's verdict is out: that verdict must already
 *                      be in its results file, and the stalled test's process must end with it
 *   isolation --demo-escape
 *                      a grader of tests whose code tries to end the grade or its own test
 *                      early: exit(0), _exit(0), a SIGSTOP to the grader, a signal to its
 *                      process group; each must fail its own test, and a correct test after
 *                      them still pass
 *   isolation --demo-steps
 *                      a grader of three steps: the first passes, the second is correct and
 *                      misses its gate, the third only skips; run whole, with GRADE_STEP=2,
 *                      and with GRADE_STEP=7 (no such step)
 *
 * The suite's parent process touches no CUDA (the demo is another process), as a grader's must
 * not before its tests fork. Most of its time is the 2 s timeout. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grade.h"
#include "sandbox.h"
#include "isolation_kernels.h"

#define DEMO "isolation-demo"
#define N 1000        /* elements of the demo's output: not a multiple of its block */
#define AT 517        /* where a faulty kernel puts its fault */
#define HANG_TIMEOUT_S 2.0

/* ---- the demo grader ---------------------------------------------------------------------- */

static const char *const T_HANG = "a kernel that spins on a flag nobody sets";
static const char *const T_AFTER = "a correct kernel after the hang";
static const char *const T_CRASH = "a kernel that stores to an illegal address";
static const char *const T_NAN = "a kernel that writes NaN";
static const char *const T_INF = "a kernel that writes Inf";
static const char *const T_SKIP = "a kernel that leaves one element unwritten";
static const char *const T_PAST = "a kernel that stores one past the end of d_out";
static const char *const T_READ = "a kernel that reads one past the end of d_in, times zero";
static const char *const T_LAST = "a correct kernel at the end";
static const char *const T_STALL = "a test that stalls until its grader is killed";
static const char *const T_EXIT = "a launcher that calls exit(0)";
static const char *const T__EXIT = "a launcher that calls _exit(0)";
static const char *const T_STOP = "a launcher that stops its grader with SIGSTOP";
static const char *const T_GROUP = "a launcher that signals its process group";

static int SLOT_AFTER, SLOT_NAN, SLOT_INF, SLOT_SKIP, SLOT_PAST, SLOT_READ, SLOT_LAST;

/* Run copy_faulty on fresh inputs into a poisoned, guarded d_out and grade it as a chapter's
 * grader does: guard zones first, then every element against the input. */
static void copy_and_check(int slot, enum fault fault)
{
    struct rng r = grade_rng(slot);
    float h_in[N], h_out[N];
    double ref[N];
    rng_fill_f32(&r, h_in, N, -1.0f, 1.0f);
    for (int i = 0; i < N; i++)
        ref[i] = h_in[i];
    float *d_in = dbuf_alloc_input(sizeof h_in, "d_in");
    float *d_out = dbuf_alloc(sizeof h_out, "d_out");
    to_device(d_in, h_in, sizeof h_in);
    dbuf_poison(d_out);
    copy_faulty(d_in, d_out, N, fault, AT);
    gpu_sync();
    char guard[256];
    if (dbuf_check_guards(d_out, guard, sizeof guard) != 0)
        ck_abort_msg("n = %d: %s", N, guard);
    to_host(h_out, d_out, sizeof h_out);
    struct cmp_result c = compare_f32(h_out, ref, NULL, N, 0, 0.0, 0.0);
    char desc[512];
    cmp_describe(&c, 0, desc, sizeof desc);
    ck_assert_msg(c.bad == 0, "n = %d: %s", N, desc);
    dbuf_free(d_in);
    dbuf_free(d_out);
}

START_TEST(hang)
{
    spin_forever();
    gpu_sync(); /* never returns: Check's timer kills this test's process */
}
END_TEST

START_TEST(crash)
{
    write_illegal_address();
    gpu_sync(); /* the illegal address surfaces here: CUDA_CHECK prints it and exits */
}
END_TEST

START_TEST(after) { copy_and_check(SLOT_AFTER, FAULT_NONE); }
END_TEST
START_TEST(nan_out) { copy_and_check(SLOT_NAN, FAULT_NAN); }
END_TEST
START_TEST(inf_out) { copy_and_check(SLOT_INF, FAULT_INF); }
END_TEST
START_TEST(skip_out) { copy_and_check(SLOT_SKIP, FAULT_SKIP); }
END_TEST
START_TEST(past_end) { copy_and_check(SLOT_PAST, FAULT_PAST_END); }
END_TEST
START_TEST(read_past) { copy_and_check(SLOT_READ, FAULT_READ_PAST); }
END_TEST
START_TEST(last) { copy_and_check(SLOT_LAST, FAULT_NONE); }
END_TEST

#define STALLING "isolation-demo: the stalled test runs"

/* its pid, in a file the suite reads: it must be gone once its grader is killed */
START_TEST(stall)
{
    const char *path = getenv("ISOLATION_STALL_PID");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }
    printf("%s\n", STALLING); /* the suite kills the grader when it reads this */
    fflush(stdout);
    for (int i = 0; i < 600; i++)
        sleep(1);
}
END_TEST

/* Launchers that end the test early, as a learner's checking macro might: each must fail. The
 * ones that signal are stopped by the sandbox (harness/sandbox.h) before the signal is sent. */
START_TEST(exit_zero)
{
    exit(0); /* a launcher, or its checking macro, that gives up this way */
}
END_TEST
START_TEST(underscore_exit_zero)
{
    fflush(NULL);
    _exit(0);
}
END_TEST
START_TEST(stop_grader)
{
    kill(getppid(), SIGSTOP); /* the grader's own process, not this test's */
}
END_TEST
START_TEST(signal_group)
{
    kill(0, SIGTERM); /* this test's process group, and anything above it that shares it */
}
END_TEST

static void add_demo(Suite *s)
{
    grader_add(s, "hang", hang, &T_HANG, 1, HANG_TIMEOUT_S);
    SLOT_AFTER = grader_add(s, "after", after, &T_AFTER, 1, 30);
    grader_add(s, "crash", crash, &T_CRASH, 1, 30);
    SLOT_NAN = grader_add(s, "nan", nan_out, &T_NAN, 1, 30);
    SLOT_INF = grader_add(s, "inf", inf_out, &T_INF, 1, 30);
    SLOT_SKIP = grader_add(s, "skip", skip_out, &T_SKIP, 1, 30);
    SLOT_PAST = grader_add(s, "past", past_end, &T_PAST, 1, 30);
    SLOT_READ = grader_add(s, "read", read_past, &T_READ, 1, 30);
    SLOT_LAST = grader_add(s, "last", last, &T_LAST, 1, 30);
}

/* the steps demo: correctness tests named "correct", a gate named "gate" */
static const char *const T_S1 = "correct, step 1";
static const char *const T_S1_GATE = "the gate of step 1";
static const char *const T_S2 = "correct, step 2";
static const char *const T_S2_GATE = "the gate of step 2";
static int SLOT_S1, SLOT_S2;

START_TEST(s1_correct) { copy_and_check(SLOT_S1, FAULT_NONE); }
END_TEST
START_TEST(s2_correct) { copy_and_check(SLOT_S2, FAULT_NONE); }
END_TEST
START_TEST(s1_gate)
{
    grade_summary("2.50x the baseline (needs 2x)");
}
END_TEST
START_TEST(s2_gate)
{
    grade_summary("1.10x step 1 (needs 1.5x)");
    ck_abort_msg("1.10x step 1, needs 1.5x");
}
END_TEST

static void add_demo_steps(Suite *s)
{
    if (grader_step(1, "the first step")) {
        SLOT_S1 = grader_add(s, "correct", s1_correct, &T_S1, 1, 30);
        grader_add(s, "gate", s1_gate, &T_S1_GATE, 1, 30);
    }
    if (grader_step(2, "the second step")) {
        SLOT_S2 = grader_add(s, "correct", s2_correct, &T_S2, 1, 30);
        grader_add(s, "gate", s2_gate, &T_S2_GATE, 1, 30);
    }
    grader_step(3, "a step for a GPU only");
    grader_skip("the third step's test", "graded on a GPU only");
}

static void add_demo_killed(Suite *s)
{
    SLOT_AFTER = grader_add(s, "after", after, &T_AFTER, 1, 30);
    grader_add(s, "stall", stall, &T_STALL, 1, 900);
    SLOT_LAST = grader_add(s, "last", last, &T_LAST, 1, 30);
}

static void add_demo_escape(Suite *s)
{
    grader_add(s, "exit", exit_zero, &T_EXIT, 1, 30);
    grader_add(s, "_exit", underscore_exit_zero, &T__EXIT, 1, 30);
    grader_add(s, "stop", stop_grader, &T_STOP, 1, 30);
    grader_add(s, "group", signal_group, &T_GROUP, 1, 30);
    SLOT_LAST = grader_add(s, "last", last, &T_LAST, 1, 30);
}

/* ---- running a demo and keeping what it said ---------------------------------------------- */

struct demo {
    char out[64 * 1024];  /* stdout and stderr together */
    char rows[16 * 1024]; /* its results file */
    int status;           /* from waitpid */
};
static struct demo RUN, KILLED, STEPS, STEP2, STEP3, STEP7, ESCAPE;
static char stall_pid_file[] = "/tmp/isolation-stall-XXXXXX";

/* Run this program with `mode` as a separate process, its results into a fresh file, with
 * GRADE_STEP=step where step is not NULL; and where kill_at is not NULL, killed (SIGKILL, from
 * outside) as soon as what it printed contains kill_at. */
static void run_demo_killed(const char *mode, struct demo *d, const char *step,
                            const char *kill_at)
{
    char tsv[] = "/tmp/isolation-XXXXXX";
    int tfd = mkstemp(tsv);
    int fds[2];
    if (tfd < 0 || pipe(fds) != 0) {
        perror("isolation");
        exit(EXIT_FAILURE);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(EXIT_FAILURE);
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        setenv("GRADE_TSV", tsv, 1);
        setenv("GRADE_SIDE", "demo", 1);
        unsetenv("GRADE_COUNTS"); /* its failures are on purpose: not make test's to count */
        unsetenv("CK_RUN_CASE");
        unsetenv("CK_FORK");
        if (step)
            setenv("GRADE_STEP", step, 1);
        else
            unsetenv("GRADE_STEP");
        execl("/proc/self/exe", "isolation", mode, (char *)NULL);
        perror("exec");
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t n;
    int killed = 0;
    while ((n = read(fds[0], d->out + got, sizeof d->out - 1 - got)) > 0) {
        got += (size_t)n;
        d->out[got] = '\0';
        if (kill_at && !killed && strstr(d->out, kill_at)) {
            kill(pid, SIGKILL);
            killed = 1;
        }
    }
    d->out[got] = '\0';
    close(fds[0]);
    waitpid(pid, &d->status, 0);
    n = pread(tfd, d->rows, sizeof d->rows - 1, 0);
    d->rows[n > 0 ? n : 0] = '\0';
    close(tfd);
    unlink(tsv);
}

static void run_demo(const char *mode, struct demo *d, const char *step)
{
    run_demo_killed(mode, d, step, NULL);
}

/* The line that starts with `prefix`, and what the demo printed under it up to its next
 * test's line, as a string of its own; fails the test when there is none. */
static const char *block_of(const struct demo *d, const char *prefix)
{
    static char block[8192];
    const char *p = d->out;
    size_t len = strlen(prefix);
    while (p && strncmp(p, prefix, len) != 0) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    ck_assert_msg(p != NULL, "the demo printed no line \"%s...\"; it printed:\n%s", prefix,
                  d->out);
    const char *end = strchr(p, '\n');
    while (end && end[1] == ' ' && end[2] == ' ' && end[3] == ' ') /* continuation lines */
        end = strchr(end + 1, '\n');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n >= sizeof block)
        n = sizeof block - 1;
    memcpy(block, p, n);
    block[n] = '\0';
    return block;
}

static const char *fail_block(const char *title)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, "  FAIL  %s: ", title);
    return block_of(&RUN, prefix);
}

#define ASSERT_HAS(text, what)                                                               \
    ck_assert_msg(strstr((text), (what)) != NULL, "\"%s\" not in:\n%s", (what), (text))

/* ---- the suite ---------------------------------------------------------------------------- */

START_TEST(hang_is_one_failed_test)
{
    const char *b = fail_block(T_HANG);
    ASSERT_HAS(b, "timeout");
    ASSERT_HAS(b, "did not finish in time");
}
END_TEST

START_TEST(next_test_still_runs)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, "  PASS  %s", T_AFTER);
    block_of(&RUN, prefix);
    snprintf(prefix, sizeof prefix, "  PASS  %s", T_LAST);
    block_of(&RUN, prefix);
}
END_TEST

START_TEST(crash_shows_cuda_error)
{
    const char *b = fail_block(T_CRASH);
    ASSERT_HAS(b, "it printed:");
    ASSERT_HAS(b, "cudaErrorIllegalAddress");
}
END_TEST

START_TEST(nan_fails)
{
    const char *b = fail_block(T_NAN);
    ASSERT_HAS(b, "1 of 1000 wrong");
    ASSERT_HAS(b, "[517]: got nan");
}
END_TEST

START_TEST(inf_fails)
{
    const char *b = fail_block(T_INF);
    ASSERT_HAS(b, "1 of 1000 wrong");
    ASSERT_HAS(b, "[517]: got inf");
}
END_TEST

START_TEST(unwritten_fails)
{
    const char *b = fail_block(T_SKIP);
    ASSERT_HAS(b, "1 of 1000 wrong");
    ASSERT_HAS(b, "[517]: got -nan"); /* the poison, all bits set */
}
END_TEST

START_TEST(overrun_names_buffer)
{
    const char *b = fail_block(T_PAST);
    ASSERT_HAS(b, "past the end of d_out");
}
END_TEST

START_TEST(read_past_fails)
{
    const char *b = fail_block(T_READ);
    ASSERT_HAS(b, "1 of 1000 wrong");
    ASSERT_HAS(b, "[999]: got -nan"); /* the guard zone's NaN, all bits set */
}
END_TEST

START_TEST(demo_verdict)
{
    ck_assert_msg(WIFEXITED(RUN.status) && WEXITSTATUS(RUN.status) == 1,
                  "the demo grader should exit 1 (status 0x%x)", RUN.status);
    block_of(&RUN, DEMO "  FAIL  2/9 passed on ");
}
END_TEST

/* One row per test, in order, with its verdict and the seed, under the header. */
START_TEST(rows_per_test)
{
    static const struct { const char *const *title; const char *verdict, *says; } want[] = {
        { &T_HANG, "FAIL", "timeout" },          { &T_AFTER, "PASS", "" },
        { &T_CRASH, "FAIL", "cudaErrorIllegalAddress" },
        { &T_NAN, "FAIL", "got nan" },           { &T_INF, "FAIL", "got inf" },
        { &T_SKIP, "FAIL", "got -nan" },         { &T_PAST, "FAIL", "d_out" },
        { &T_READ, "FAIL", "got -nan" },         { &T_LAST, "PASS", "" },
    };
    const char *p = RUN.rows;
    static const char header[] = "chapter\tbackend\tside\tstep\ttest\tverdict\tmessage\tseed\n";
    ck_assert_msg(strncmp(p, header, strlen(header)) == 0, "no header in the results:\n%s",
                  RUN.rows);
    p = strchr(p, '\n') + 1;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char head[256];
        snprintf(head, sizeof head, DEMO "\t%s\tdemo\t-\t%s\t%s\t", gpu_backend(),
                 *want[i].title, want[i].verdict);
        const char *end = strchr(p, '\n');
        ck_assert_msg(end && strncmp(p, head, strlen(head)) == 0,
                      "row %zu should start \"%s\"; the results are:\n%s", i + 1, head,
                      RUN.rows);
        char row[1024];
        snprintf(row, sizeof row, "%.*s", (int)(end - p), p);
        ASSERT_HAS(row, want[i].says);
        p = end + 1;
    }
}
END_TEST

/* 1 while process pid runs (a zombie, or no such process: 0) */
static int process_runs(int pid)
{
    char state;
    int ppid;
    return sandbox_proc_stat(pid, &state, &ppid) == 0 && state != 'Z' && state != 'X';
}

START_TEST(killed_grader_keeps_verdicts)
{
    ck_assert_msg(WIFSIGNALED(KILLED.status) && WTERMSIG(KILLED.status) == SIGKILL,
                  "the demo grader should have been killed (status 0x%x); it printed:\n%s",
                  KILLED.status, KILLED.out);
    /* the stalled test's process ends with its grader (PR_SET_PDEATHSIG), not 600 s later */
    FILE *f = fopen(stall_pid_file, "r");
    int pid = 0;
    ck_assert_msg(f && fscanf(f, "%d", &pid) == 1 && pid > 0, "the stalled test wrote no pid");
    fclose(f);
    for (int i = 0; i < 50 && process_runs(pid); i++)
        usleep(100 * 1000);
    ck_assert_msg(!process_runs(pid), "the stalled test's process %d still runs after its "
                  "grader was killed", pid);
    char prefix[256];
    snprintf(prefix, sizeof prefix, "  PASS  %s", T_AFTER);
    block_of(&KILLED, prefix);
    snprintf(prefix, sizeof prefix, DEMO "\t%s\tdemo\t-\t%s\tPASS\t", gpu_backend(), T_AFTER);
    ASSERT_HAS(KILLED.rows, prefix);
    ck_assert_msg(strstr(KILLED.rows, T_LAST) == NULL, "a test after the kill has a row:\n%s",
                  KILLED.rows);
}
END_TEST

/* Each escape fails its own test with what happened; the grade goes on to its last test. */
START_TEST(escapes_fail_their_tests)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, "  FAIL  %s: ", T_EXIT);
    ASSERT_HAS(block_of(&ESCAPE, prefix), "exit(0) was called inside it");
    snprintf(prefix, sizeof prefix, "  FAIL  %s: ", T__EXIT);
    ASSERT_HAS(block_of(&ESCAPE, prefix), "stopped before its end");
    snprintf(prefix, sizeof prefix, "  FAIL  %s: ", T_STOP);
    ASSERT_HAS(block_of(&ESCAPE, prefix), "a signal to the grader");
    snprintf(prefix, sizeof prefix, "  FAIL  %s: ", T_GROUP);
    ASSERT_HAS(block_of(&ESCAPE, prefix), "a process group");
    snprintf(prefix, sizeof prefix, "  PASS  %s", T_LAST);
    block_of(&ESCAPE, prefix);
    block_of(&ESCAPE, DEMO "  FAIL  1/5 passed on ");
    ck_assert_msg(WIFEXITED(ESCAPE.status) && WEXITSTATUS(ESCAPE.status) == 1,
                  "the escape demo should exit 1 (status 0x%x); it printed:\n%s", ESCAPE.status,
                  ESCAPE.out);
    snprintf(prefix, sizeof prefix, DEMO "\t%s\tdemo\t-\t%s\tFAIL\t", gpu_backend(), T_EXIT);
    ASSERT_HAS(ESCAPE.rows, prefix);
}
END_TEST

/* A line a step, in order, with its verdict and what it says; the chapter line counts steps. */
START_TEST(ladder_lines)
{
    const char *b = block_of(&STEPS, "  " DEMO " step 1 of 3  the first step");
    ASSERT_HAS(b, " PASS  2.50x the baseline (needs 2x)");
    b = block_of(&STEPS, "  " DEMO " step 2 of 3  the second step");
    ASSERT_HAS(b, " FAIL  correct; 1.10x step 1 (needs 1.5x)");
    b = block_of(&STEPS, "  " DEMO " step 3 of 3  a step for a GPU only");
    ASSERT_HAS(b, " SKIP  graded on a GPU only");
    b = block_of(&STEPS, DEMO "  FAIL  3/4 passed on ");
    ASSERT_HAS(b, "1 of 3 steps passed");
    ck_assert_msg(WIFEXITED(STEPS.status) && WEXITSTATUS(STEPS.status) == 1,
                  "the steps demo should exit 1 (status 0x%x)", STEPS.status);
}
END_TEST

/* Each test's row carries its step; each step has a row "k/N" with its verdict. */
START_TEST(ladder_rows)
{
    char want[256];
    snprintf(want, sizeof want, DEMO "\t%s\tdemo\t1\t%s\tPASS\t", gpu_backend(), T_S1);
    ASSERT_HAS(STEPS.rows, want);
    snprintf(want, sizeof want, DEMO "\t%s\tdemo\t2\t%s\tFAIL\t", gpu_backend(), T_S2_GATE);
    ASSERT_HAS(STEPS.rows, want);
    snprintf(want, sizeof want, DEMO "\t%s\tdemo\t1/3\tthe first step\tPASS\t", gpu_backend());
    ASSERT_HAS(STEPS.rows, want);
    snprintf(want, sizeof want, DEMO "\t%s\tdemo\t2/3\tthe second step\tFAIL\tcorrect; 1.10x",
             gpu_backend());
    ASSERT_HAS(STEPS.rows, want);
    snprintf(want, sizeof want, DEMO "\t%s\tdemo\t3/3\ta step for a GPU only\tSKIP\t",
             gpu_backend());
    ASSERT_HAS(STEPS.rows, want);
}
END_TEST

/* GRADE_STEP=2 runs step 2's tests and no other's; GRADE_STEP=7 lists the steps, exit 2. */
START_TEST(one_step)
{
    block_of(&STEP2, "  " DEMO " step 2 of 3  the second step");
    ck_assert_msg(strstr(STEP2.out, T_S1) == NULL && strstr(STEP2.out, "the third") == NULL,
                  "GRADE_STEP=2 ran another step's test:\n%s", STEP2.out);
    ck_assert_msg(strstr(STEP2.out, "step 1 of 3") == NULL, "GRADE_STEP=2 showed step 1:\n%s",
                  STEP2.out);
    block_of(&STEP2, DEMO "  FAIL  1/2 passed on ");
    ck_assert_msg(WIFEXITED(STEP7.status) && WEXITSTATUS(STEP7.status) == 2,
                  "GRADE_STEP=7 should exit 2 (status 0x%x)", STEP7.status);
    ASSERT_HAS(block_of(&STEP7, DEMO "  FAIL  STEP=7: no such step"), "no such step");
    block_of(&STEP7, "    2  the second step");
}
END_TEST

/* a grade in which every test skipped, saying why, neither passes nor fails: SKIP, exit 0 */
START_TEST(nothing_ran_skips)
{
    block_of(&STEP3, "  SKIP  the third step's test: graded on a GPU only");
    block_of(&STEP3, DEMO "  SKIP  0/0 passed on ");
    ck_assert_msg(WIFEXITED(STEP3.status) && WEXITSTATUS(STEP3.status) == 0,
                  "GRADE_STEP=3, every test skipped, should exit 0 (status 0x%x)", STEP3.status);
}
END_TEST

static void add_suite(Suite *s)
{
    /* START_TEST makes each test a pointer variable, so the table is built here */
    const struct { const char *title; const TTest *fn; } tests[] = {
        { "a hanging kernel fails its own test by timeout", hang_is_one_failed_test },
        { "the tests after the hang still run and pass", next_test_still_runs },
        { "a crashing kernel fails its test with the CUDA error shown", crash_shows_cuda_error },
        { "NaN in the output fails", nan_fails },
        { "Inf in the output fails", inf_fails },
        { "an unwritten element fails", unwritten_fails },
        { "a store past the end fails, naming the buffer", overrun_names_buffer },
        { "a read past the end of an input fails, even times zero", read_past_fails },
        { "the demo grader's verdict: 2/9 passed, exit status 1", demo_verdict },
        { "one row per test in the results file, in order", rows_per_test },
        { "a grader killed half-way keeps its earlier verdicts, and its test's process ends",
          killed_grader_keeps_verdicts },
        { "exit(0), _exit(0), a SIGSTOP to the grader, a signal to its group: each fails its "
          "test, and the grade goes on", escapes_fail_their_tests },
        { "a line a step: PASS, FAIL with its summary, SKIP with why", ladder_lines },
        { "a row a test with its step, and a row a step", ladder_rows },
        { "GRADE_STEP grades one step, and names the steps when it matches none", one_step },
        { "a grade whose every test skipped says SKIP and exits 0", nothing_ran_skips },
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        grader_add(s, "isolation", tests[i].fn, &tests[i].title, 1, 10);
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--demo") == 0 || strcmp(argv[1], "--demo-killed") == 0 ||
                      strcmp(argv[1], "--demo-steps") == 0 ||
                      strcmp(argv[1], "--demo-escape") == 0)) {
        grader_init(DEMO);
        Suite *s = suite_create(DEMO);
        (strcmp(argv[1], "--demo") == 0          ? add_demo
         : strcmp(argv[1], "--demo-killed") == 0 ? add_demo_killed
         : strcmp(argv[1], "--demo-escape") == 0 ? add_demo_escape
                                                 : add_demo_steps)(s);
        return grader_run(s);
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--demo | --demo-killed | --demo-steps | --demo-escape]\n",
                argv[0]);
        return 2;
    }
    run_demo("--demo", &RUN, NULL);
    int sfd = mkstemp(stall_pid_file);
    if (sfd < 0) {
        perror("isolation");
        return EXIT_FAILURE;
    }
    close(sfd);
    setenv("ISOLATION_STALL_PID", stall_pid_file, 1);
    run_demo_killed("--demo-killed", &KILLED, NULL, STALLING);
    run_demo("--demo-escape", &ESCAPE, NULL);
    run_demo("--demo-steps", &STEPS, NULL);
    run_demo("--demo-steps", &STEP2, "2");
    run_demo("--demo-steps", &STEP3, "3");
    run_demo("--demo-steps", &STEP7, "7");
    grader_init("isolation");
    Suite *s = suite_create("isolation");
    add_suite(s);
    int rc = grader_run(s);
    unlink(stall_pid_file);
    if (rc != EXIT_SUCCESS)
        printf("the demo printed:\n%s", RUN.out);
    return rc;
}
