/* sandbox.c: a test process may not signal, trace or read the grader around it (sandbox.h). */
#define _GNU_SOURCE
#include "sandbox.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define SANDBOX_ARCH AUDIT_ARCH_X86_64
#else
#define SANDBOX_ARCH AUDIT_ARCH_AARCH64
#endif

/* The grader and the processes above it (the script that runs it, the time limit around it):
 * the ones a test must not signal. Filled by sandbox_parent, read by the children it forks. */
enum { GUARDED = 4 };
static pid_t guarded[GUARDED];
static int nguarded;

/* The parent of process `pid` (sandbox_proc_stat); 0 when unknown. */
static pid_t parent_of(pid_t pid)
{
    char state;
    int ppid;
    return sandbox_proc_stat((int)pid, &state, &ppid) == 0 ? (pid_t)ppid : 0;
}

int sandbox_parent(void)
{
    nguarded = 0;
    for (pid_t p = getpid(); p > 1 && nguarded < GUARDED; p = parent_of(p))
        guarded[nguarded++] = p;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        perror("sandbox: prctl(PR_SET_DUMPABLE)");
        return -1;
    }
    return 0;
}

/* BPF: the syscall's first argument as a 32-bit int (a pid, a tgid or a tid) */
#define ARG0_LO offsetof(struct seccomp_data, args[0])
#define LOAD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))

int sandbox_child(void)
{
    /* the child may look at itself again (core files, /proc/self): only the parent hides */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("sandbox: prctl(PR_SET_NO_NEW_PRIVS)");
        return -1;
    }
    struct sock_filter f[64];
    int n = 0;
    /* another architecture's calling convention (x32, a 32-bit binary): refused */
    f[n++] = (struct sock_filter)LOAD(offsetof(struct seccomp_data, arch));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_ARCH, 1, 0);
    f[n++] = (struct sock_filter)RET(SECCOMP_RET_KILL_PROCESS);
    f[n++] = (struct sock_filter)LOAD(offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
    f[n++] = (struct sock_filter)RET(SECCOMP_RET_KILL_PROCESS);
#endif
    /* never: tracing, another process's memory, a signal through a pidfd */
    static const unsigned never[] = { __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev,
#ifdef __NR_pidfd_send_signal
                                      __NR_pidfd_send_signal,
#endif
    };
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, never[i], 0, 1);
        f[n++] = (struct sock_filter)RET(SECCOMP_RET_KILL_PROCESS);
    }
    /* signals: checked on their first argument (below); everything else allowed */
    static const unsigned signals[] = { __NR_kill, __NR_tkill, __NR_tgkill, __NR_rt_sigqueueinfo,
                                        __NR_rt_tgsigqueueinfo };
    const int nsig = (int)(sizeof signals / sizeof signals[0]);
    for (int i = 0; i < nsig; i++)
        /* to the check when equal: it starts after the remaining nsig - 1 - i tests and the
         * allow that follows them */
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, signals[i],
                                              (unsigned char)(nsig - 1 - i + 1), 0);
    f[n++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
    /* the check: a pid of 0 or less (a process group, or every process) or a guarded one is
     * refused; the child's own, its threads' and its own children's are allowed */
    f[n++] = (struct sock_filter)LOAD(ARG0_LO);
    /* as a signed int: 0 and "negative" (>= 2^31 unsigned) */
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, nguarded + 2, 0);
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x80000000u, nguarded + 1, 0);
    for (int g = 0; g < nguarded; g++)
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)guarded[g],
                                              (unsigned char)(nguarded - g), 0);
    f[n++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
    f[n++] = (struct sock_filter)RET(SECCOMP_RET_KILL_PROCESS);
    struct sock_fprog prog = { (unsigned short)n, f };
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
        perror("sandbox: prctl(PR_SET_SECCOMP)");
        return -1;
    }
    return 0;
}

int sandbox_guard(pid_t pid)
{
    static const unsigned signals[] = { __NR_kill, __NR_tkill, __NR_tgkill, __NR_rt_sigqueueinfo,
                                        __NR_rt_tgsigqueueinfo };
    const int nsig = (int)(sizeof signals / sizeof signals[0]);
    struct sock_filter f[16];
    int n = 0;
    f[n++] = (struct sock_filter)LOAD(offsetof(struct seccomp_data, nr));
    for (int i = 0; i < nsig; i++)
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, signals[i],
                                              (unsigned char)(nsig - i), 0);
    f[n++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
    f[n++] = (struct sock_filter)LOAD(ARG0_LO);
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)pid, 1, 0);
    f[n++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
    f[n++] = (struct sock_filter)RET(SECCOMP_RET_KILL_PROCESS);
    struct sock_fprog prog = { (unsigned short)n, f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
        perror("sandbox: prctl(PR_SET_SECCOMP)");
        return -1;
    }
    return 0;
}

#else

int sandbox_guard(pid_t pid)
{
    (void)pid;
    return -1;
}

int sandbox_parent(void)
{
    return -1;
}

int sandbox_child(void)
{
    static int said;
    if (!said++)
        fprintf(stderr, "sandbox: no seccomp on this platform: a test's code could signal the "
                        "grader\n");
    return -1;
}

#endif

int sandbox_proc_stat(int pid, char *state, int *ppid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the
     * last ')' */
    const char *close = strrchr(buf, ')');
    if (!close || sscanf(close + 1, " %c %d", state, ppid) != 2)
        return -1;
    return 0;
}

const char *sandbox_refused(int sig)
{
    if (sig != SIGSYS)
        return NULL;
    return "the test's process was ended for a system call the grade does not allow: a signal "
           "to the grader or to the processes above it (kill(getppid(), ...), a process group, "
           "every process), ptrace, or another process's memory (process_vm_writev)";
}
