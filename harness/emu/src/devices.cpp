/* devices.cpp: the emu backend's several devices (README.md, "Several devices").
 *
 * N devices (EMU_DEVICES, or emu_set_devices), each with the running profile: a number that
 * allocations, streams and events carry from the device current when they were made, and that
 * the launch, the copies and the schedule record check and report. All of them run on the same
 * CPU and share one address space, as a GPU's unified addressing lets them appear; what keeps
 * them apart is the peer-access model: the topology says which ordered pairs can reach each other
 * (cudaDeviceCanAccessPeer), cudaDeviceEnablePeerAccess opens one direction, and a kernel given a
 * pointer into another device's allocation without it faults (sched.cpp). The current device is
 * per host thread, as in CUDA. */
#include "internal.h"
#include "emu_devices.h"
#include "emu_memory.h"
#include "emu_streams.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace emu {
namespace {

struct Topology {
    bool pair[MAX_DEVICES][MAX_DEVICES]; /* [d][p]: d can access p's memory (d != p) */
};

std::mutex g_mutex;                      /* the count, the topology, the enablements */
std::atomic<int> g_count{1};
Topology g_topology;
bool g_enabled[MAX_DEVICES][MAX_DEVICES]; /* [from][to]: cudaDeviceEnablePeerAccess(to) on from */
/* emu_set_devices makes every thread's current device 0: a thread's own setting counts only
 * while it was made in the current generation */
std::atomic<unsigned> g_generation{0};
thread_local unsigned t_generation = 0;
thread_local int t_current = 0;

void every_pair(Topology *t, int n)
{
    std::memset(t, 0, sizeof *t);
    for (int d = 0; d < n; ++d)
        for (int p = 0; p < n; ++p)
            t->pair[d][p] = d != p;
}

/* "0-1,2-3": each pair of two different devices below n, both ways; "" is no pair. */
bool parse_peers(const char *s, int n, Topology *t)
{
    std::memset(t, 0, sizeof *t);
    if (!*s)
        return true;
    for (;;) {
        char *end;
        errno = 0;
        if (*s < '0' || *s > '9')
            return false;
        long a = std::strtol(s, &end, 10);
        if (errno || *end != '-' || end[1] < '0' || end[1] > '9')
            return false;
        long b = std::strtol(end + 1, &end, 10);
        if (errno || a >= n || b >= n || a == b)
            return false;
        t->pair[a][b] = t->pair[b][a] = true;
        if (!*end)
            return true;
        if (*end != ',')
            return false;
        s = end + 1;
    }
}

/* EMU_DEVICES and EMU_PEERS, once, at the first question about devices */
bool read_environment()
{
    const char *count = std::getenv("EMU_DEVICES");
    int n = 1;
    if (count && *count) {
        if (count[0] < '1' || count[0] > '8' || count[1]) {
            std::fprintf(stderr, "emu: EMU_DEVICES=%s: expected a number of devices, 1, 2, 3, 4, "
                                 "5, 6, 7 or 8 (unset or empty: 1)\n", count);
            std::exit(2);
        }
        n = count[0] - '0';
    }
    const char *peers = std::getenv("EMU_PEERS");
    Topology t;
    if (!peers) {
        every_pair(&t, n);
    } else if (!parse_peers(peers, n, &t)) {
        std::fprintf(stderr, "emu: EMU_PEERS=%s: expected pairs of two different devices below "
                             "%d, as 0-1,2-3 (empty: no pair; unset: every pair)\n", peers, n);
        std::exit(2);
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    g_count = n;
    g_topology = t;
    return true;
}

void ready()
{
    static const bool once = read_environment(); /* thread-safe, once */
    (void)once;
}

/* the calling thread's current device, reset to 0 by a later emu_set_devices */
int &current()
{
    unsigned g = g_generation.load();
    if (t_generation != g) {
        t_generation = g;
        t_current = 0;
    }
    return t_current;
}

} /* namespace */

int device_count()
{
    ready();
    return g_count.load();
}

bool valid_device(int d)
{
    return d >= 0 && d < device_count();
}

int current_device()
{
    ready();
    return current();
}

bool peer_enabled(int from, int to)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    return from >= 0 && from < MAX_DEVICES && to >= 0 && to < MAX_DEVICES && g_enabled[from][to];
}

void reset_peer_access(int d)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    for (int p = 0; p < MAX_DEVICES; ++p)
        g_enabled[d][p] = g_enabled[p][d] = false;
}

} /* namespace emu */

using namespace emu;

extern "C" {

int emu_set_devices(int n, const char *peers)
{
    ready(); /* the environment is read first, so that it never overrides this later */
    if (n < 1 || n > MAX_DEVICES)
        return -1;
    Topology t;
    if (!peers)
        every_pair(&t, n);
    else if (!parse_peers(peers, n, &t))
        return -1;
    if (emu_live_allocations(0) != 0 || emu_live_streams() != 0 || emu_live_events() != 0)
        return -1;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_count = n;
    g_topology = t;
    std::memset(g_enabled, 0, sizeof g_enabled);
    ++g_generation;
    return 0;
}

int emu_device_of(const void *ptr)
{
    return owner_of(ptr);
}

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return record(cudaErrorInvalidValue);
    *count = device_count();
    return api_check();
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return record(cudaErrorInvalidValue);
    *device = current_device();
    return api_check();
}

cudaError_t cudaSetDevice(int device)
{
    if (!valid_device(device))
        return record(cudaErrorInvalidDevice);
    current() = device;
    return api_check();
}

cudaError_t cudaDeviceCanAccessPeer(int *can_access, int device, int peer)
{
    if (!can_access)
        return record(cudaErrorInvalidValue);
    if (!valid_device(device) || !valid_device(peer))
        return record(cudaErrorInvalidDevice);
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        *can_access = g_topology.pair[device][peer];
    }
    return api_check();
}

/* The errors of these two are the call's own (cudaGetLastError reads them once), never sticky. */
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    if (flags != 0)
        return record(cudaErrorInvalidValue);
    const int d = current_device();
    if (!valid_device(peer) || peer == d)
        return record(cudaErrorInvalidDevice);
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (!g_topology.pair[d][peer])
            return record(cudaErrorPeerAccessUnsupported);
        if (g_enabled[d][peer])
            return record(cudaErrorPeerAccessAlreadyEnabled);
        g_enabled[d][peer] = true;
    }
    return api_check();
}

cudaError_t cudaDeviceDisablePeerAccess(int peer)
{
    const int d = current_device();
    if (!valid_device(peer))
        return record(cudaErrorInvalidDevice);
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (!g_enabled[d][peer])
            return record(cudaErrorPeerAccessNotEnabled);
        g_enabled[d][peer] = false;
    }
    return api_check();
}

} /* extern "C" */
