/* emu_devices.c: the tests of the emu's several devices (make emu-test; harness/emu/README.md,
 * "Several devices"; emu_devices.h): the count (EMU_DEVICES, emu_set_devices), the current device
 * per host thread, the device that owns an allocation, a stream, an event, the peer-access calls
 * and their errors, peer copies, the launch's checks (a stream of another device; a pointer into
 * another device's memory without peer access), cross-device ordering by events under the
 * shuffled stream order, and the schedule record's device fields.
 *
 * Check runs every test in its own process, so a count set by emu_set_devices, a current device
 * or a sticky error of one test never reaches the next; the environment is read at the first
 * question about devices, so a test that sets EMU_DEVICES does it before any runtime call. */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <emu_devices.h>
#include <emu_memory.h>
#include <emu_streams.h>

#include "capture.h"
#include "emu_schedule.h"
#include "emu_devices_kernels.h"

/* the call returns `want`, which cudaGetLastError then reads once: not sticky */
#define CK_ONCE(call, want)                                                                   \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        ck_assert_msg(e_ == (want), "%s: got %s, want %s", #call, cudaGetErrorName(e_),       \
                      cudaGetErrorName(want));                                                \
        e_ = cudaGetLastError();                                                              \
        ck_assert_msg(e_ == (want), "%s: cudaGetLastError got %s, want %s", #call,            \
                      cudaGetErrorName(e_), cudaGetErrorName(want));                          \
        e_ = cudaGetLastError();                                                              \
        ck_assert_msg(e_ == cudaSuccess, "%s: sticky: %s", #call, cudaGetErrorName(e_));      \
    } while (0)

#define N 1000
#define BYTES (N * sizeof(float))

static int device_count(void)
{
    int n = -1;
    CK_CUDA(cudaGetDeviceCount(&n));
    return n;
}

static int current(void)
{
    int d = -1;
    CK_CUDA(cudaGetDevice(&d));
    return d;
}

static float *alloc_on(int device, size_t bytes)
{
    float *p = NULL;
    CK_CUDA(cudaSetDevice(device));
    CK_CUDA(cudaMalloc((void **)&p, bytes));
    return p;
}

/* ---------------------------------------------------------------- the count */

START_TEST(count_is_one_by_default_and_set_at_run_time)
{
    unsetenv("EMU_DEVICES");
    unsetenv("EMU_PEERS");
    ck_assert_int_eq(device_count(), 1);
    ck_assert_int_eq(current(), 0);
    CK_CUDA(cudaSetDevice(0));
    CK_ONCE(cudaSetDevice(1), cudaErrorInvalidDevice);
    CK_ONCE(cudaSetDevice(-1), cudaErrorInvalidDevice);
    int can = -1;
    CK_ONCE(cudaDeviceCanAccessPeer(&can, 0, 1), cudaErrorInvalidDevice);
    CK_CUDA(cudaDeviceCanAccessPeer(&can, 0, 0));
    ck_assert_int_eq(can, 0);

    ck_assert_int_eq(emu_set_devices(4, NULL), 0);
    ck_assert_int_eq(device_count(), 4);
    for (int d = 3; d >= 0; --d) {
        CK_CUDA(cudaSetDevice(d));
        ck_assert_int_eq(current(), d);
        struct cudaDeviceProp p;
        CK_CUDA(cudaGetDeviceProperties(&p, d));
        ck_assert_str_eq(p.name, "emu (CPU)");
        ck_assert_int_eq(p.pciBusID, d);
        int sms = 0;
        CK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d));
        ck_assert_int_eq(sms, p.multiProcessorCount);
    }
    CK_ONCE(cudaSetDevice(4), cudaErrorInvalidDevice);
    ck_assert_int_eq(current(), 0); /* a refused cudaSetDevice changes nothing */
    struct cudaDeviceProp p;
    CK_ONCE(cudaGetDeviceProperties(&p, 4), cudaErrorInvalidDevice);
    CK_ONCE(cudaGetDeviceProperties(&p, -1), cudaErrorInvalidDevice);
    int v = 0;
    CK_ONCE(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 4), cudaErrorInvalidDevice);
    CK_ONCE(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, -1), cudaErrorInvalidDevice);
    CK_ONCE(cudaDeviceCanAccessPeer(&can, 4, 0), cudaErrorInvalidDevice);
    CK_ONCE(cudaDeviceCanAccessPeer(&can, 0, -1), cudaErrorInvalidDevice);
    CK_ONCE(cudaDeviceCanAccessPeer(NULL, 0, 1), cudaErrorInvalidValue);
    /* back to one device: 1 is gone again */
    ck_assert_int_eq(emu_set_devices(1, NULL), 0);
    ck_assert_int_eq(device_count(), 1);
    CK_ONCE(cudaSetDevice(1), cudaErrorInvalidDevice);
}
END_TEST

static void three_devices_child(void)
{
    setenv("EMU_DEVICES", "3", 1);
    setenv("EMU_PEERS", "0-1", 1);
    int n = 0, can01 = -1, can10 = -1, can02 = -1, can12 = -1;
    if (cudaGetDeviceCount(&n) || cudaDeviceCanAccessPeer(&can01, 0, 1) ||
        cudaDeviceCanAccessPeer(&can10, 1, 0) || cudaDeviceCanAccessPeer(&can02, 0, 2) ||
        cudaDeviceCanAccessPeer(&can12, 1, 2))
        _exit(1);
    fprintf(stderr, "count %d peers %d %d %d %d\n", n, can01, can10, can02, can12);
}

static const char *g_bad_value;

static void bad_count_child(void)
{
    setenv("EMU_DEVICES", g_bad_value, 1);
    int n = 0;
    cudaGetDeviceCount(&n);
    fprintf(stderr, "ran on with %d devices\n", n);
}

static void bad_peers_child(void)
{
    setenv("EMU_DEVICES", "2", 1);
    setenv("EMU_PEERS", g_bad_value, 1);
    int n = 0;
    cudaGetDeviceCount(&n);
    fprintf(stderr, "ran on with %d devices\n", n);
}

START_TEST(environment_sets_count_and_peers)
{
    char out[4096];
    int status = run_captured(three_devices_child, out, sizeof out);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, out);
    ck_assert_str_eq(out, "count 3 peers 1 1 0 0\n");

    const char *bad_counts[] = {"0", "9", "10", "two", "2x", "-1"};
    for (size_t i = 0; i < sizeof bad_counts / sizeof *bad_counts; ++i) {
        g_bad_value = bad_counts[i];
        status = run_captured(bad_count_child, out, sizeof out);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "EMU_DEVICES=%s: status %d: %s",
                      g_bad_value, status, out);
        char want[64];
        snprintf(want, sizeof want, "EMU_DEVICES=%s:", g_bad_value);
        ck_assert_msg(strstr(out, want) && strstr(out, "1, 2, 3, 4, 5, 6, 7 or 8"), "%s", out);
    }
    const char *bad_peers[] = {"0-2", "0-0", "0-1,", "0-", "a-b", "0-1 ", ",0-1", "01"};
    for (size_t i = 0; i < sizeof bad_peers / sizeof *bad_peers; ++i) {
        g_bad_value = bad_peers[i];
        status = run_captured(bad_peers_child, out, sizeof out);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "EMU_PEERS=%s: status %d: %s",
                      g_bad_value, status, out);
        ck_assert_msg(strstr(out, "EMU_PEERS=") && strstr(out, "0-1,2-3"), "%s", out);
    }
}
END_TEST

START_TEST(set_devices_refuses_what_it_cannot_do)
{
    ck_assert_int_eq(emu_set_devices(0, NULL), -1);
    ck_assert_int_eq(emu_set_devices(9, NULL), -1);
    ck_assert_int_eq(emu_set_devices(-3, ""), -1);
    ck_assert_int_eq(emu_set_devices(4, "0-4"), -1); /* no device 4 */
    ck_assert_int_eq(emu_set_devices(4, "1-1"), -1);
    ck_assert_int_eq(emu_set_devices(4, "0-1,"), -1);
    ck_assert_int_eq(emu_set_devices(4, "0-1;2-3"), -1);
    ck_assert_int_eq(device_count(), 1); /* none of them changed anything */
    ck_assert_int_eq(emu_set_devices(4, "0-1,2-3"), 0);
    int can = -1;
    CK_CUDA(cudaDeviceCanAccessPeer(&can, 3, 2));
    ck_assert_int_eq(can, 1);
    CK_CUDA(cudaDeviceCanAccessPeer(&can, 1, 2));
    ck_assert_int_eq(can, 0);
    ck_assert_int_eq(emu_set_devices(2, ""), 0);
    CK_CUDA(cudaDeviceCanAccessPeer(&can, 0, 1));
    ck_assert_int_eq(can, 0);

    /* not under a live allocation, stream or event */
    ck_assert_int_eq(emu_set_devices(4, NULL), 0);
    float *d = alloc_on(3, BYTES);
    ck_assert_int_eq(emu_set_devices(2, NULL), -1);
    ck_assert_int_eq(device_count(), 4);
    ck_assert_int_eq(current(), 3);
    CK_CUDA(cudaFree(d));
    cudaStream_t s;
    CK_CUDA(cudaStreamCreate(&s));
    ck_assert_int_eq(emu_set_devices(2, NULL), -1);
    CK_CUDA(cudaStreamDestroy(s));
    cudaEvent_t e;
    CK_CUDA(cudaEventCreate(&e));
    ck_assert_int_eq(emu_set_devices(2, NULL), -1);
    CK_CUDA(cudaEventDestroy(e));
    ck_assert_int_eq(device_count(), 4);

    /* it resets the current device and every enablement */
    CK_CUDA(cudaSetDevice(2));
    CK_CUDA(cudaDeviceEnablePeerAccess(3, 0));
    ck_assert_int_eq(emu_set_devices(4, NULL), 0);
    ck_assert_int_eq(current(), 0);
    CK_CUDA(cudaSetDevice(2));
    CK_CUDA(cudaDeviceEnablePeerAccess(3, 0)); /* not AlreadyEnabled */
}
END_TEST

static void *thread_device(void *arg)
{
    int *seen = arg;
    if (cudaGetDevice(&seen[0]) || cudaSetDevice(1) || cudaGetDevice(&seen[1]))
        seen[0] = seen[1] = -2;
    return NULL;
}

START_TEST(current_device_is_per_host_thread)
{
    ck_assert_int_eq(emu_set_devices(3, NULL), 0);
    CK_CUDA(cudaSetDevice(2));
    int seen[2] = {-1, -1};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, thread_device, seen), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(seen[0], 0); /* a new thread starts on device 0 */
    ck_assert_int_eq(seen[1], 1);
    ck_assert_int_eq(current(), 2); /* its cudaSetDevice is its own */
}
END_TEST

/* ---------------------------------------------------------------- ownership */

START_TEST(allocations_belong_to_the_current_device)
{
    ck_assert_int_eq(emu_set_devices(3, NULL), 0);
    float *d[3];
    for (int i = 0; i < 3; ++i)
        d[i] = alloc_on(i, BYTES);
    float *managed = NULL;
    CK_CUDA(cudaSetDevice(1));
    CK_CUDA(cudaMallocManaged((void **)&managed, BYTES, cudaMemAttachGlobal));
    float host[4] = {0};
    float *pinned = NULL;
    CK_CUDA(cudaMallocHost((void **)&pinned, BYTES));
    for (int i = 0; i < 3; ++i) {
        ck_assert_int_eq(emu_device_of(d[i]), i);
        ck_assert_int_eq(emu_device_of(d[i] + N - 1), i);
        struct cudaPointerAttributes a;
        CK_CUDA(cudaPointerGetAttributes(&a, d[i] + 17));
        ck_assert_int_eq(a.type, cudaMemoryTypeDevice);
        ck_assert_int_eq(a.device, i);
        ck_assert_ptr_eq(a.devicePointer, d[i] + 17);
    }
    ck_assert_int_eq(emu_device_of(managed), 1);
    struct cudaPointerAttributes a;
    CK_CUDA(cudaPointerGetAttributes(&a, managed));
    ck_assert_int_eq(a.device, 1);
    ck_assert_int_eq(emu_device_of(host), -1);
    ck_assert_int_eq(emu_device_of(pinned), -1);
    ck_assert_int_eq(emu_device_of(NULL), -1);
    CK_CUDA(cudaPointerGetAttributes(&a, pinned));
    ck_assert_int_eq(a.type, cudaMemoryTypeHost);
    /* cudaFree from any current device (one address space) */
    CK_CUDA(cudaSetDevice(2));
    CK_CUDA(cudaFree(d[0]));
    CK_CUDA(cudaFree(d[1]));
    CK_CUDA(cudaSetDevice(0));
    CK_CUDA(cudaFree(d[2]));
    CK_CUDA(cudaFree(managed));
    CK_CUDA(cudaFreeHost(pinned));
    ck_assert_int_eq(emu_live_allocations(0), 0);
    ck_assert_int_eq(emu_device_of(d[2]), -1); /* freed */
}
END_TEST

/* ---------------------------------------------------------------- peer access */

START_TEST(peer_access_error_codes)
{
    ck_assert_int_eq(emu_set_devices(3, "0-1"), 0);
    int can = -1;
    CK_CUDA(cudaDeviceCanAccessPeer(&can, 0, 1));
    ck_assert_int_eq(can, 1);
    CK_CUDA(cudaDeviceCanAccessPeer(&can, 1, 0));
    ck_assert_int_eq(can, 1);
    CK_CUDA(cudaDeviceCanAccessPeer(&can, 0, 2));
    ck_assert_int_eq(can, 0);
    CK_CUDA(cudaDeviceCanAccessPeer(&can, 1, 1));
    ck_assert_int_eq(can, 0);

    CK_CUDA(cudaSetDevice(0));
    CK_ONCE(cudaDeviceEnablePeerAccess(1, 1), cudaErrorInvalidValue);
    CK_ONCE(cudaDeviceEnablePeerAccess(3, 0), cudaErrorInvalidDevice);
    CK_ONCE(cudaDeviceEnablePeerAccess(-1, 0), cudaErrorInvalidDevice);
    CK_ONCE(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice); /* itself */
    CK_ONCE(cudaDeviceEnablePeerAccess(2, 0), cudaErrorPeerAccessUnsupported);
    CK_ONCE(cudaDeviceDisablePeerAccess(1), cudaErrorPeerAccessNotEnabled);
    CK_CUDA(cudaDeviceEnablePeerAccess(1, 0));
    CK_ONCE(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
    CK_CUDA(cudaSetDevice(1));
    CK_ONCE(cudaDeviceDisablePeerAccess(0), cudaErrorPeerAccessNotEnabled); /* 1 to 0: never */
    CK_CUDA(cudaDeviceEnablePeerAccess(0, 0));
    CK_CUDA(cudaSetDevice(0));
    CK_ONCE(cudaDeviceDisablePeerAccess(5), cudaErrorInvalidDevice);
    CK_ONCE(cudaDeviceDisablePeerAccess(2), cudaErrorPeerAccessNotEnabled);
    CK_CUDA(cudaDeviceDisablePeerAccess(1));
    CK_ONCE(cudaDeviceDisablePeerAccess(1), cudaErrorPeerAccessNotEnabled);
    CK_CUDA(cudaDeviceEnablePeerAccess(1, 0)); /* again, after the disable */
    ck_assert_str_eq(cudaGetErrorName(cudaErrorPeerAccessUnsupported), "cudaErrorPeerAccessUnsupported");
    ck_assert_str_eq(cudaGetErrorName(cudaErrorPeerAccessAlreadyEnabled),
                     "cudaErrorPeerAccessAlreadyEnabled");
    ck_assert_str_eq(cudaGetErrorName(cudaErrorPeerAccessNotEnabled), "cudaErrorPeerAccessNotEnabled");
    ck_assert_str_eq(cudaGetErrorString(cudaErrorPeerAccessNotEnabled), "peer access has not been enabled");
    CK_CUDA(cudaDeviceSynchronize()); /* and nothing is sticky */
}
END_TEST

/* Two buffers, a on device 0 (its values 1, 2, 3, ...) and b on device 1 (zeros); a kernel on
 * device `on` adds one into the other: b += a on device 1, a += b on device 0. */
struct two {
    float *a, *b;
};

static struct two two_buffers(void)
{
    struct two t;
    float h[N];
    for (int i = 0; i < N; ++i)
        h[i] = (float)(i + 1);
    t.a = alloc_on(0, BYTES);
    CK_CUDA(cudaMemcpy(t.a, h, BYTES, cudaMemcpyHostToDevice));
    t.b = alloc_on(1, BYTES);
    CK_CUDA(cudaMemset(t.b, 0, BYTES));
    return t;
}

static int wrong_sums(const float *d, float scale)
{
    float h[N];
    CK_CUDA(cudaMemcpy(h, d, BYTES, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < N; ++i)
        wrong += h[i] != scale * (float)(i + 1);
    return wrong;
}

static struct two g_two;

/* device 0 given a pointer into device 1's b: a += b */
static void reverse_access_child(void)
{
    if (cudaSetDevice(0))
        _exit(3);
    edk_accumulate(g_two.b, g_two.a, N, 0); /* on device 0: a += b, b on device 1 */
    cudaError_t launched = cudaGetLastError();
    cudaError_t synced = cudaDeviceSynchronize();
    cudaError_t after = cudaGetLastError();
    cudaError_t malloc_after = cudaMalloc((void **)&g_two.b, 4);
    fprintf(stderr, "\n%s %s %s %s %g\n", cudaGetErrorName(launched), cudaGetErrorName(synced),
            cudaGetErrorName(after), cudaGetErrorName(malloc_after), g_two.a[N - 1]);
}

START_TEST(peer_access_is_one_directional)
{
    ck_assert_int_eq(emu_set_devices(2, NULL), 0);
    struct two t = two_buffers();
    CK_CUDA(cudaSetDevice(1));
    CK_CUDA(cudaDeviceEnablePeerAccess(0, 0)); /* device 1 may touch device 0's memory */
    edk_accumulate(t.a, t.b, N, 0);            /* on device 1: b += a */
    CK_CUDA(cudaGetLastError());
    CK_CUDA(cudaDeviceSynchronize());
    ck_assert_int_eq(wrong_sums(t.b, 1.0f), 0);
    /* not the reverse: device 0 given b faults (in a child: the fault is sticky) */
    g_two = t;
    char out[8192];
    int status = run_captured(reverse_access_child, out, sizeof out);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, "\ncudaSuccess cudaErrorIllegalAddress"), "%s", out);
    CK_CUDA(cudaSetDevice(0));
    int can = 0;
    CK_CUDA(cudaDeviceCanAccessPeer(&can, 0, 1));
    ck_assert_int_eq(can, 1); /* it could, but did not enable it */
    CK_ONCE(cudaDeviceDisablePeerAccess(1), cudaErrorPeerAccessNotEnabled);
}
END_TEST
START_TEST(kernel_given_a_peer_pointer_faults_without_access)
{
    ck_assert_int_eq(emu_set_devices(2, NULL), 0);
    g_two = two_buffers();
    char out[8192];
    int status = run_captured(reverse_access_child, out, sizeof out);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, out);
    /* launch accepted; the fault at the synchronisation, sticky; the kernel did nothing */
    ck_assert_msg(strstr(out, "\ncudaSuccess cudaErrorIllegalAddress cudaErrorIllegalAddress "
                              "cudaErrorIllegalAddress 1000\n"), "%s", out);
    char want[256];
    snprintf(want, sizeof want, "emu: kernel accumulate_kernel on device 0: argument 2 (%p) points "
             "into the %zu-byte allocation at %p of device 1", (void *)g_two.b, BYTES, (void *)g_two.b);
    ck_assert_msg(strstr(out, want), "want \"%s\" in:\n%s", want, out);
    ck_assert_msg(strstr(out, "device 0 has no peer access to device 1"), "%s", out);
    /* with the access enabled it runs on device 0: b = a (a peer copy), then a += b */
    CK_CUDA(cudaMemcpyPeer(g_two.b, 1, g_two.a, 0, BYTES));
    CK_CUDA(cudaSetDevice(0));
    CK_CUDA(cudaDeviceEnablePeerAccess(1, 0));
    edk_accumulate(g_two.b, g_two.a, N, 0);
    CK_CUDA(cudaGetLastError());
    CK_CUDA(cudaDeviceSynchronize());
    ck_assert_int_eq(wrong_sums(g_two.a, 2.0f), 0);
}
END_TEST

static void stream_fault_child(void)
{
    cudaStream_t s;
    if (cudaSetDevice(0) || cudaStreamCreate(&s))
        _exit(3);
    edk_affine(g_two.b, g_two.a, N, 2.0f, 0.0f, s); /* argument 1 on device 1 */
    cudaError_t launched = cudaGetLastError();
    cudaError_t synced = cudaStreamSynchronize(s);
    fprintf(stderr, "\n%s %s %g\n", cudaGetErrorName(launched), cudaGetErrorName(synced), g_two.a[0]);
}

START_TEST(peer_fault_on_a_stream_surfaces_at_its_synchronisation)
{
    ck_assert_int_eq(emu_set_devices(2, NULL), 0);
    g_two = two_buffers();
    char out[8192];
    int status = run_captured(stream_fault_child, out, sizeof out);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, "\ncudaSuccess cudaErrorIllegalAddress 1\n"), "%s", out);
    ck_assert_msg(strstr(out, "emu: kernel affine_kernel on device 0: argument 1 ("), "%s", out);
    /* a pointer into device 0's own memory and a host function pointer are fine on one device */
    CK_CUDA(cudaSetDevice(0));
    edk_accumulate(g_two.a, g_two.a, N, 0);
    CK_CUDA(cudaDeviceSynchronize());
    ck_assert_int_eq(wrong_sums(g_two.a, 2.0f), 0);
}
END_TEST

/* ---------------------------------------------------------------- peer copies */

static void fill_bytes(unsigned char *h, size_t n, unsigned seed)
{
    unsigned x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        h[i] = (unsigned char)(x >> 16);
    }
}

/* copies 4099 bytes of a pattern from device 0 to device 1 by `how`, then back to the host */
enum copy_how {
    PEER,                  /* cudaMemcpyPeer */
    PEER_ASYNC_SRC_STREAM, /* cudaMemcpyPeerAsync on a stream of device 0 */
    PEER_ASYNC_DST_STREAM, /* ... of device 1 */
    MEMCPY_D2D,            /* cudaMemcpy, cudaMemcpyDeviceToDevice */
    MEMCPY_DEFAULT,        /* cudaMemcpy, cudaMemcpyDefault */
    MEMCPY_ASYNC,          /* cudaMemcpyAsync, cudaMemcpyDefault, on a stream of device 0 */
};

static void peer_copy_round(enum copy_how how, unsigned seed)
{
    enum { BYTES_ODD = 4099 }; /* not a multiple of anything */
    unsigned char src[BYTES_ODD], got[BYTES_ODD];
    fill_bytes(src, sizeof src, seed);
    unsigned char *d0 = (unsigned char *)alloc_on(0, sizeof src);
    unsigned char *d1 = (unsigned char *)alloc_on(1, sizeof src);
    CK_CUDA(cudaMemset(d1, 0, sizeof src));
    CK_CUDA(cudaSetDevice(0));
    CK_CUDA(cudaMemcpy(d0, src, sizeof src, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CK_CUDA(cudaSetDevice(how == PEER_ASYNC_DST_STREAM ? 1 : 0));
    CK_CUDA(cudaStreamCreate(&s));
    switch (how) {
    case PEER: CK_CUDA(cudaMemcpyPeer(d1, 1, d0, 0, sizeof src)); break;
    case PEER_ASYNC_SRC_STREAM:
    case PEER_ASYNC_DST_STREAM: CK_CUDA(cudaMemcpyPeerAsync(d1, 1, d0, 0, sizeof src, s)); break;
    case MEMCPY_D2D: CK_CUDA(cudaMemcpy(d1, d0, sizeof src, cudaMemcpyDeviceToDevice)); break;
    case MEMCPY_DEFAULT: CK_CUDA(cudaMemcpy(d1, d0, sizeof src, cudaMemcpyDefault)); break;
    case MEMCPY_ASYNC: CK_CUDA(cudaMemcpyAsync(d1, d0, sizeof src, cudaMemcpyDefault, s)); break;
    }
    CK_CUDA(cudaStreamSynchronize(s));
    CK_CUDA(cudaMemcpy(got, d1, sizeof got, cudaMemcpyDeviceToHost));
    ck_assert_msg(!memcmp(got, src, sizeof src), "copy %d, seed %u: not bit-exact", (int)how, seed);
    CK_CUDA(cudaStreamDestroy(s));
    CK_CUDA(cudaFree(d0));
    CK_CUDA(cudaFree(d1));
}

START_TEST(peer_copies_are_bit_exact_with_and_without_access)
{
    ck_assert_int_eq(emu_set_devices(2, ""), 0); /* no pair can access the other */
    for (int how = PEER; how <= MEMCPY_ASYNC; ++how)
        peer_copy_round((enum copy_how)how, (unsigned)how + 1);
    ck_assert_int_eq(emu_set_devices(2, NULL), 0);
    CK_CUDA(cudaSetDevice(0));
    CK_CUDA(cudaDeviceEnablePeerAccess(1, 0));
    CK_CUDA(cudaSetDevice(1));
    CK_CUDA(cudaDeviceEnablePeerAccess(0, 0));
    for (int how = PEER; how <= MEMCPY_ASYNC; ++how)
        peer_copy_round((enum copy_how)how, (unsigned)how + 11);
}
END_TEST

START_TEST(peer_copy_errors)
{
    ck_assert_int_eq(emu_set_devices(3, NULL), 0);
    float *d0 = alloc_on(0, BYTES), *d1 = alloc_on(1, BYTES);
    float host[N] = {0};
    cudaStream_t s;
    CK_CUDA(cudaStreamCreate(&s));
    CK_ONCE(cudaMemcpyPeer(d1, 0, d0, 0, BYTES), cudaErrorInvalidValue);   /* d1 is not 0's */
    CK_ONCE(cudaMemcpyPeer(d1, 1, d0, 2, BYTES), cudaErrorInvalidValue);   /* d0 is not 2's */
    CK_ONCE(cudaMemcpyPeer(d1, 1, host, 0, BYTES), cudaErrorInvalidValue); /* host memory */
    CK_ONCE(cudaMemcpyPeer(d1, 1, d0, 0, BYTES + 4), cudaErrorInvalidValue); /* past the end */
    CK_ONCE(cudaMemcpyPeer(d1, 3, d0, 0, BYTES), cudaErrorInvalidDevice);
    CK_ONCE(cudaMemcpyPeer(d1, 1, d0, -1, BYTES), cudaErrorInvalidDevice);
    CK_ONCE(cudaMemcpyPeerAsync(d1, 1, d0, 1, BYTES, s), cudaErrorInvalidValue);
    CK_ONCE(cudaMemcpyPeerAsync(d1, 1, d0, 7, BYTES, s), cudaErrorInvalidDevice);
    CK_CUDA(cudaMemcpyPeer(d1, 1, d0, 0, 0));
    CK_CUDA(cudaMemcpyPeer(d0 + 10, 0, d0, 0, 40)); /* within one device: a D2D */
    CK_CUDA(cudaStreamDestroy(s));
    CK_CUDA(cudaFree(d0));
    CK_CUDA(cudaFree(d1));
}
END_TEST

/* ---------------------------------------------------------------- streams and events */

START_TEST(streams_and_events_belong_to_their_device)
{
    ck_assert_int_eq(emu_set_devices(2, NULL), 0);
    float *d0 = alloc_on(0, BYTES);
    CK_CUDA(cudaMemset(d0, 0, BYTES));
    cudaStream_t s0, s1;
    cudaEvent_t e0, e1;
    CK_CUDA(cudaStreamCreate(&s0));
    CK_CUDA(cudaEventCreate(&e0));
    CK_CUDA(cudaSetDevice(1));
    CK_CUDA(cudaStreamCreate(&s1));
    CK_CUDA(cudaEventCreate(&e1));
    emu_schedule_reset();

    /* a launch into device 1's stream from device 0: refused, nothing runs */
    CK_CUDA(cudaSetDevice(0));
    edk_affine(d0, d0, N, 1.0f, 5.0f, s1);
    CK_ONCE(cudaPeekAtLastError(), cudaErrorInvalidResourceHandle);
    CK_CUDA(cudaDeviceSynchronize());
    ck_assert_uint_eq(emu_schedule_count(), 0);
    ck_assert_int_eq(wrong_sums(d0, 0.0f), 0); /* zeros: the launch would have written 5s */
    emu_schedule_reset();
    /* an event and a stream of two devices: refused, whatever the current device */
    CK_ONCE(cudaEventRecord(e0, s1), cudaErrorInvalidResourceHandle);
    CK_ONCE(cudaEventRecord(e1, s0), cudaErrorInvalidResourceHandle);
    CK_ONCE(cudaEventRecord(e1, 0), cudaErrorInvalidResourceHandle); /* the legacy stream is 0's now */
    CK_CUDA(cudaEventRecord(e0, 0));
    CK_CUDA(cudaEventRecord(e0, s0));
    CK_CUDA(cudaSetDevice(1));
    CK_CUDA(cudaEventRecord(e1, s1));
    float ms = 0;
    CK_CUDA(cudaEventSynchronize(e0)); /* another device's event: legal */
    CK_CUDA(cudaEventSynchronize(e1));
    CK_ONCE(cudaEventElapsedTime(&ms, e0, e1), cudaErrorInvalidResourceHandle);
    /* a copy, a memset and a wait into another device's stream are legal (the programming
     * guide: a memory copy succeeds on a stream of another device) */
    CK_CUDA(cudaStreamWaitEvent(s0, e1, 0));
    CK_CUDA(cudaMemsetAsync(d0, 0, BYTES, s0));
    CK_CUDA(cudaMemcpyAsync(d0, d0 + 1, 4, cudaMemcpyDeviceToDevice, s0));
    CK_CUDA(cudaStreamSynchronize(s0)); /* another device's stream: legal */
    CK_CUDA(cudaStreamQuery(s0));
    size_t n = 0;
    struct emu_op *ops = schedule(&n);
    int memsets = 0, copies = 0;
    for (size_t i = 0; i < n; ++i) {
        if (ops[i].kind == EMU_OP_MEMSET) {
            ++memsets;
            ck_assert_int_eq(ops[i].device, 0); /* s0's */
            ck_assert_int_eq(ops[i].src_device, -1);
            ck_assert_int_eq(ops[i].dst_device, -1);
        }
        if (ops[i].kind == EMU_OP_MEMCPY) {
            ++copies;
            ck_assert_int_eq(ops[i].device, 0);
            ck_assert_str_eq(ops[i].name, "D2D");
            ck_assert_int_eq(ops[i].src_device, 0);
            ck_assert_int_eq(ops[i].dst_device, 0);
        }
        if (ops[i].kind == EMU_OP_EVENT_RECORD)
            ck_assert_int_eq(ops[i].device, ops[i].event == 1 ? 0 : 1);
    }
    ck_assert_int_eq(memsets, 1);
    ck_assert_int_eq(copies, 1);
    free(ops);
    CK_CUDA(cudaEventDestroy(e0));
    CK_CUDA(cudaEventDestroy(e1));
    CK_CUDA(cudaStreamDestroy(s0));
    CK_CUDA(cudaStreamDestroy(s1));
    CK_CUDA(cudaFree(d0));
}
END_TEST

/* The ring's step in small: device 0 copies the input in and scales it (x0 = 2 in + 1) on its
 * stream, and records an event; device 1, on its own stream, waits for it (when with_wait),
 * reads x0 through peer access (y1 = 3 x0) and copies y1 back. The host synchronises the device,
 * so all of it runs, in the shuffled order. Returns how many results are wrong. */
static int producer_consumer(int with_wait)
{
    float *h_in, *h_out;
    CK_CUDA(cudaMallocHost((void **)&h_in, BYTES));
    CK_CUDA(cudaMallocHost((void **)&h_out, BYTES));
    for (int i = 0; i < N; ++i)
        h_in[i] = (float)(i + 1);
    float *x0 = alloc_on(0, BYTES);
    CK_CUDA(cudaMemset(x0, 0, BYTES));
    cudaStream_t s0, s1;
    cudaEvent_t produced;
    CK_CUDA(cudaStreamCreate(&s0));
    CK_CUDA(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
    float *y1 = alloc_on(1, BYTES);
    CK_CUDA(cudaStreamCreate(&s1));

    CK_CUDA(cudaSetDevice(0));
    CK_CUDA(cudaMemcpyAsync(x0, h_in, BYTES, cudaMemcpyHostToDevice, s0));
    edk_affine(x0, x0, N, 2.0f, 1.0f, s0);
    CK_CUDA(cudaGetLastError());
    CK_CUDA(cudaEventRecord(produced, s0));
    CK_CUDA(cudaSetDevice(1));
    if (with_wait)
        CK_CUDA(cudaStreamWaitEvent(s1, produced, 0));
    edk_affine(x0, y1, N, 3.0f, 0.0f, s1);
    CK_CUDA(cudaGetLastError());
    CK_CUDA(cudaMemcpyAsync(h_out, y1, BYTES, cudaMemcpyDeviceToHost, s1));
    CK_CUDA(cudaDeviceSynchronize());
    int wrong = 0;
    for (int i = 0; i < N; ++i)
        wrong += h_out[i] != 3.0f * (2.0f * (float)(i + 1) + 1.0f);
    CK_CUDA(cudaEventDestroy(produced));
    CK_CUDA(cudaStreamDestroy(s0));
    CK_CUDA(cudaStreamDestroy(s1));
    CK_CUDA(cudaFree(x0));
    CK_CUDA(cudaFree(y1));
    CK_CUDA(cudaFreeHost(h_in));
    CK_CUDA(cudaFreeHost(h_out));
    return wrong;
}

START_TEST(cross_device_wait_orders_two_devices_under_shuffle)
{
    ck_assert_int_eq(emu_set_devices(2, NULL), 0);
    CK_CUDA(cudaSetDevice(1));
    CK_CUDA(cudaDeviceEnablePeerAccess(0, 0));
    setenv("EMU_STREAM_ORDER", "inorder", 1);
    ck_assert_int_eq(producer_consumer(1), 0);
    ck_assert_int_eq(producer_consumer(0), 0); /* in issue order the missing wait is hidden */
    for (unsigned seed = 1; seed <= 20; ++seed) {
        emu_shuffle_streams(seed);
        ck_assert_msg(producer_consumer(1) == 0, "shuffle %u: wrong with the wait", seed);
    }
    int failing = 0;
    for (unsigned seed = 1; seed <= 6; ++seed) {
        emu_shuffle_streams(seed);
        failing += producer_consumer(0) != 0;
    }
    ck_assert_msg(failing > 0, "without the cross-device wait, no seed of 6 gave a wrong answer");

    /* the record: the producer on device 0, the wait, the consumer and its copy on device 1 */
    emu_shuffle_streams(3);
    emu_schedule_reset();
    ck_assert_int_eq(producer_consumer(1), 0);
    size_t n = 0;
    struct emu_op *ops = schedule(&n);
    int kernels = 0, waits = 0;
    for (size_t i = 0; i < n; ++i) {
        const struct emu_op *o = &ops[i];
        if (o->kind == EMU_OP_KERNEL) {
            ck_assert_str_eq(o->name, "affine_kernel");
            ck_assert_int_eq(o->device, kernels == 0 ? 0 : 1); /* producer first: it waited */
            ++kernels;
        } else if (o->kind == EMU_OP_EVENT_WAIT) {
            ck_assert_int_eq(o->device, 1);
            ++waits;
        } else if (o->kind == EMU_OP_MEMCPY && o->stream != 0) {
            if (!strcmp(o->name, "H2D")) {
                ck_assert_int_eq(o->device, 0);
                ck_assert_int_eq(o->src_device, -1);
                ck_assert_int_eq(o->dst_device, 0);
            } else {
                ck_assert_str_eq(o->name, "D2H");
                ck_assert_int_eq(o->device, 1);
                ck_assert_int_eq(o->src_device, 1);
                ck_assert_int_eq(o->dst_device, -1);
            }
        } else if (o->kind == EMU_OP_MEMSET) {
            ck_assert_int_eq(o->stream, 0);
            ck_assert_int_eq(o->device, 0); /* the legacy stream, issued on device 0 */
        }
    }
    ck_assert_int_eq(kernels, 2);
    ck_assert_int_eq(waits, 1);
    free(ops);
}
END_TEST

START_TEST(schedule_names_peer_copies_and_writes_devices)
{
    ck_assert_int_eq(emu_set_devices(3, NULL), 0);
    float *d0 = alloc_on(0, BYTES), *d2 = alloc_on(2, BYTES);
    CK_CUDA(cudaSetDevice(1));
    cudaStream_t s1;
    CK_CUDA(cudaStreamCreate(&s1));
    emu_schedule_reset();
    CK_CUDA(cudaMemcpyPeer(d2, 2, d0, 0, BYTES));                       /* legacy, on device 1 */
    CK_CUDA(cudaMemcpyPeerAsync(d0, 0, d2, 2, 64, s1));                 /* on s1, device 1 */
    CK_CUDA(cudaMemcpy(d0, d2, 128, cudaMemcpyDeviceToDevice));          /* UVA, between devices */
    CK_CUDA(cudaStreamSynchronize(s1));
    size_t n = 0;
    struct emu_op *ops = schedule(&n);
    ck_assert_uint_eq(n, 3);
    for (size_t i = 0; i < n; ++i) {
        ck_assert_str_eq(ops[i].name, "P2P");
        ck_assert_int_eq(ops[i].device, 1);
    }
    ck_assert_int_eq(ops[0].src_device, 0);
    ck_assert_int_eq(ops[0].dst_device, 2);
    ck_assert_int_eq(ops[0].stream, 0);
    ck_assert_uint_eq(ops[0].bytes, BYTES);
    /* the last two ran in some order: the async one on s1 is 64 bytes */
    const struct emu_op *async = ops[1].bytes == 64 ? &ops[1] : &ops[2];
    ck_assert_int_eq(async->stream, emu_stream_index(s1));
    ck_assert_int_eq(async->src_device, 2);
    ck_assert_int_eq(async->dst_device, 0);
    free(ops);

    char path[] = "/tmp/emu_devices_schedule_XXXXXX";
    FILE *f = schedule_tsv(path);
    char line[512];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_msg(strstr(line, "\tgraph\tdevice\tsrc_device\tdst_device\tblocks\tthreads\n"),
                  "%s", line);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_msg(strstr(line, "\tP2P\t") && strstr(line, "\t0\t1\t0\t2\t0\t0\n"), "%s", line);
    fclose(f);
    unlink(path);

    /* a kernel's row: its device, and its grid's blocks and a block's threads (1000 floats in
     * blocks of 128: 8 of them) */
    emu_schedule_reset();
    CK_CUDA(cudaSetDevice(2));
    edk_affine(d2, d2, 1000, 2.0f, 1.0f, 0);
    CK_CUDA(cudaGetLastError());
    CK_CUDA(cudaDeviceSynchronize());
    ops = schedule(&n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(ops[0].kind, EMU_OP_KERNEL);
    ck_assert_int_eq(ops[0].device, 2);
    ck_assert_uint_eq(ops[0].blocks, 8);
    ck_assert_uint_eq(ops[0].threads, 128);
    free(ops);
    CK_CUDA(cudaSetDevice(1));
    CK_CUDA(cudaStreamDestroy(s1));
    CK_CUDA(cudaFree(d0));
    CK_CUDA(cudaFree(d2));
}
END_TEST

static Suite *devices_suite(void)
{
    Suite *s = suite_create("emu-devices");
    TCase *count = tcase_create("count");
    tcase_add_test(count, count_is_one_by_default_and_set_at_run_time);
    tcase_add_test(count, environment_sets_count_and_peers);
    tcase_add_test(count, set_devices_refuses_what_it_cannot_do);
    tcase_add_test(count, current_device_is_per_host_thread);
    suite_add_tcase(s, count);
    TCase *memory = tcase_create("memory");
    tcase_add_test(memory, allocations_belong_to_the_current_device);
    tcase_add_test(memory, peer_access_error_codes);
    tcase_add_test(memory, peer_access_is_one_directional);
    tcase_add_test(memory, kernel_given_a_peer_pointer_faults_without_access);
    tcase_add_test(memory, peer_fault_on_a_stream_surfaces_at_its_synchronisation);
    tcase_add_test(memory, peer_copies_are_bit_exact_with_and_without_access);
    tcase_add_test(memory, peer_copy_errors);
    suite_add_tcase(s, memory);
    TCase *streams = tcase_create("streams");
    tcase_add_test(streams, streams_and_events_belong_to_their_device);
    tcase_add_test(streams, cross_device_wait_orders_two_devices_under_shuffle);
    tcase_add_test(streams, schedule_names_peer_copies_and_writes_devices);
    suite_add_tcase(s, streams);
    return s;
}

int main(void)
{
    /* the suite sets the count itself: the caller's environment must not decide it */
    unsetenv("EMU_DEVICES");
    unsetenv("EMU_PEERS");
    unsetenv("EMU_STREAM_ORDER");
    SRunner *sr = srunner_create(devices_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
