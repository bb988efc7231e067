/* sandbox.h: what a test process that runs a learner's code may not do to the processes around
 * it.
 *
 * A grader's parent process keeps every verdict and enforces every time limit; its tests run in
 * forked children, and a learner's launcher runs there as the same user. Without a rule it could
 * stop the parent (kill(getppid(), SIGSTOP)) and hang the grade for good, or read and write the
 * parent's memory through ptrace or /proc/PID/mem. So:
 *
 *   sandbox_parent()   in the parent, once: no process of the same user may attach to it or
 *                      open its memory (PR_SET_DUMPABLE 0; the Linux kernel then requires
 *                      CAP_SYS_PTRACE)
 *   sandbox_child()    in each test child, before the test: a seccomp filter (inherited by
 *                      every process the test starts) that allows a signal only to the child
 *                      itself (kill, tkill, tgkill, rt_sigqueueinfo and rt_tgsigqueueinfo with
 *                      the child's own process id; pidfd_send_signal never), and no ptrace,
 *                      process_vm_readv or process_vm_writev. A call outside the rule ends the
 *                      child at once with SIGSYS: sandbox_refused() says what that means.
 *
 * On Linux on x86-64 and aarch64; elsewhere both are no-ops that say so once (returning -1). */
#ifndef SANDBOX_H
#define SANDBOX_H

/* 0 on success; -1 (with a line on stderr) when the platform has no such mechanism. */
int sandbox_parent(void);
int sandbox_child(void);

/* One more process the caller (and every process it starts) may not signal, on top of
 * sandbox_child's rule: a split test's runner guards its judge (grade.h). 0, or -1. */
#include <sys/types.h>
int sandbox_guard(pid_t pid);

/* Process pid's state letter (R, S, Z, ...) and parent, from /proc/PID/stat: 0, or -1 when
 * there is no such process (or no /proc). */
int sandbox_proc_stat(int pid, char *state, int *ppid);

/* The line a report shows for a test process ended by signal `sig`: for SIGSYS, what the
 * sandbox refused; NULL for any other signal. */
const char *sandbox_refused(int sig);

#endif
