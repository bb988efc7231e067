/* capture.h: what the emulator's Check suites share (tests/emu.c, tests/emu_profile.c,
 * tests/emu_streams.c, tests/emu_devices.c).
 *
 * CK_CUDA(call): the call returns cudaSuccess, or the test fails naming it and its error.
 * CK_ERROR(call, want): the call returns `want`.
 *
 * run_captured(fn, out, len): runs fn in a child process with its stderr captured into out
 * (NUL-terminated, cut at len - 1), and returns the child's wait status (WIFEXITED and
 * friends apply). A kernel that is meant to fail runs there, so that a sticky error or an
 * abort ends the child, not the test. */
#ifndef CAPTURE_H
#define CAPTURE_H

#include <check.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define CK_CUDA(call)                                                                         \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorName(e_));             \
    } while (0)

#define CK_ERROR(call, want)                                                                  \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        ck_assert_msg(e_ == (want), "%s: got %s, want %s", #call, cudaGetErrorName(e_),       \
                      cudaGetErrorName(want));                                                \
    } while (0)

static int run_captured(void (*fn)(void), char *out, size_t out_len)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ne(pid, -1);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        fn();
        fflush(NULL);
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < out_len && (r = read(fds[0], out + got, out_len - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

#endif
