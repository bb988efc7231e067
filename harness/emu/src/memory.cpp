/* memory.cpp: device memory of the emu backend.
 *
 * Every cudaMalloc gets its own mapping, laid out so that a kernel that steps outside it faults:
 *
 *   | guard (PROT_NONE) | padding | buffer, 16-byte aligned | <16 B padding | guard (PROT_NONE) |
 *                       ^ page boundary                             page boundary ^
 *
 * The buffer ends at most 15 bytes before the guard page that follows it, so an overrun (the
 * usual missing bounds check) faults on the first access past those bytes; the fault handler in
 * sched.cpp turns it into cudaErrorIllegalAddress with the thread and the source line. The
 * padding on both sides holds a pattern that is checked after every kernel, so a write into it
 * is reported too (without the thread: it did not fault). Freed mappings stay PROT_NONE for a
 * while (a quarantine), so a use after cudaFree faults as well.
 *
 * The price: cudaMalloc returns 16-byte aligned pointers, not 256-byte aligned ones as a GPU
 * does (enough for every vector type), and each allocation costs a system call and a page. */
#include <atomic>
#include "internal.h"
#include "emu_memory.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace emu {
namespace {

constexpr size_t PAGE = 4096;
constexpr size_t GUARD = 256 * 1024; /* a large stride past the end still lands in it */
constexpr size_t ALIGN = 16;
constexpr unsigned char PAD_BYTE = 0xeb;
constexpr size_t QUARANTINE = 64; /* freed mappings kept PROT_NONE */

struct Allocation {
    uintptr_t base;   /* what cudaMalloc returned */
    size_t size;      /* what was asked for */
    uintptr_t map;    /* the whole mapping, guards included */
    size_t map_len;
    uintptr_t data;   /* first readable byte (page aligned) */
    size_t data_len;  /* readable bytes */
    int device;       /* the device current when it was made (README.md, "Several devices") */
    bool managed;     /* cudaMallocManaged: every device may touch it */
};

std::mutex g_mutex;
std::map<uintptr_t, Allocation> g_live;  /* by base */
std::deque<Allocation> g_freed;          /* quarantine, oldest first */
std::map<uintptr_t, size_t> g_symbols;   /* __device__ variables seen through the symbol API */
size_t g_in_use;

/* Pinned host memory: what cudaMallocHost/cudaHostAlloc returned (ours to free) and what
 * cudaHostRegister was given, by base. Only the copies care: one whose host side is not in
 * here is a pageable-memory copy (README.md, "Streams"). */
struct Pinned {
    size_t size;
    bool allocated;
};
std::map<uintptr_t, Pinned> g_pinned;

/* The pinned range that overlaps [a, a + n), if any. */
std::map<uintptr_t, Pinned>::const_iterator pinned_overlap(uintptr_t a, size_t n)
{
    auto it = g_pinned.upper_bound(a + (n ? n - 1 : 0));
    if (it == g_pinned.begin())
        return g_pinned.end();
    --it;
    return a < it->first + it->second.size ? it : g_pinned.end();
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* The live allocation whose mapping (guards included) contains addr, if any. */
const Allocation *mapping_of(const std::map<uintptr_t, Allocation> &m, uintptr_t addr)
{
    auto it = m.upper_bound(addr + GUARD + PAGE);
    while (it != m.begin()) {
        --it;
        const Allocation &a = it->second;
        if (addr >= a.map && addr < a.map + a.map_len)
            return &a;
        if (a.map + a.map_len + 2 * GUARD + 2 * PAGE < addr)
            break;
    }
    return nullptr;
}

bool padding_intact(const Allocation &a, uintptr_t *bad)
{
    for (uintptr_t p = a.data; p < a.base; ++p)
        if (*(const unsigned char *)p != PAD_BYTE)
            return *bad = p, false;
    for (uintptr_t p = a.base + a.size; p < a.data + a.data_len; ++p)
        if (*(const unsigned char *)p != PAD_BYTE)
            return *bad = p, false;
    return true;
}

void fill_padding(const Allocation &a)
{
    std::memset((void *)a.data, PAD_BYTE, a.base - a.data);
    std::memset((void *)(a.base + a.size), PAD_BYTE, a.data + a.data_len - a.base - a.size);
}

cudaError_t allocate(void **ptr, size_t size, bool managed)
{
    if (!ptr)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    *ptr = nullptr;
    if (size == 0)
        return cudaSuccess;
    size_t total = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    if (size > total)
        return record(cudaErrorMemoryAllocation);
    Allocation a;
    a.data_len = round_up(round_up(size, ALIGN), PAGE);
    a.map_len = a.data_len + 2 * GUARD;
    void *m = mmap(nullptr, a.map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return record(cudaErrorMemoryAllocation);
    a.map = (uintptr_t)m;
    a.data = a.map + GUARD;
    if (mprotect((void *)a.data, a.data_len, PROT_READ | PROT_WRITE) != 0) {
        munmap(m, a.map_len);
        return record(cudaErrorMemoryAllocation);
    }
    a.base = a.data + a.data_len - round_up(size, ALIGN);
    a.size = size;
    a.device = current_device();
    a.managed = managed;
    fill_padding(a);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_live[a.base] = a;
    g_in_use += a.data_len;
    *ptr = (void *)a.base;
    return cudaSuccess;
}

cudaError_t release(void *ptr)
{
    if (!ptr)
        return sync_check();
    Allocation a;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        auto it = g_live.find((uintptr_t)ptr);
        if (it == g_live.end())
            return record(cudaErrorInvalidValue);
        a = it->second;
        g_live.erase(it);
        g_in_use -= a.data_len;
        mprotect((void *)a.data, a.data_len, PROT_NONE);
        g_freed.push_back(a);
        if (g_freed.size() > QUARANTINE) {
            munmap((void *)g_freed.front().map, g_freed.front().map_len);
            g_freed.pop_front();
        }
    }
    return sync_check(); /* cudaFree synchronises the device */
}

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

} /* namespace */

bool is_pinned(const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = pinned_overlap(a, n);
    return it != g_pinned.end() && a >= it->first && n <= it->second.size - (a - it->first);
}

int owner_of(const void *p, bool *managed, uintptr_t *base, size_t *size)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    const Allocation *a = mapping_of(g_live, (uintptr_t)p);
    if (!a)
        return -1;
    if (managed)
        *managed = a->managed;
    if (base)
        *base = a->base;
    if (size)
        *size = a->size;
    return a->device;
}

Where classify(const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (const Allocation *m = mapping_of(g_live, a)) {
        return a >= m->base && n <= m->size && a - m->base <= m->size - n ? Where::DEVICE
                                                                         : Where::DEVICE_OVERRUN;
    }
    auto s = g_symbols.upper_bound(a);
    if (s != g_symbols.begin()) {
        --s;
        if (a >= s->first && a - s->first < s->second)
            return n <= s->second - (a - s->first) ? Where::DEVICE : Where::DEVICE_OVERRUN;
    }
    return Where::HOST;
}

std::string check_padding()
{
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto &entry : g_live) {
        const Allocation &a = entry.second;
        uintptr_t bad;
        if (padding_intact(a, &bad))
            continue;
        fill_padding(a);
        return format("a write at byte offset %lld of the %zu-byte allocation at %p",
                      (long long)(bad - a.base), a.size, (void *)a.base);
    }
    return std::string();
}

#ifdef EMU_PROFILE
void live_allocations(std::vector<std::pair<uintptr_t, size_t>> &out)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    out.clear();
    for (auto &entry : g_live)
        out.emplace_back(entry.second.base, entry.second.size);
    for (auto &sym : g_symbols)
        out.emplace_back(sym.first, sym.second);
    std::sort(out.begin(), out.end());
}
#endif

std::string describe_address(uintptr_t addr)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    if (addr < 65536)
        return format("%#lx, a null pointer plus an offset", (unsigned long)addr);
    if (const Allocation *a = mapping_of(g_live, addr)) {
        if (addr >= a->base + a->size)
            return format("%#lx, byte %llu past the end of the %zu-byte allocation at %p",
                          (unsigned long)addr, (unsigned long long)(addr - a->base - a->size),
                          a->size, (void *)a->base);
        if (addr >= a->base)
            return format("%#lx, byte offset %lld of the %zu-byte allocation at %p",
                          (unsigned long)addr, (long long)(addr - a->base), a->size,
                          (void *)a->base);
        /* in the guard before a: far past the end of the allocation below it, more likely
         * than just before a's start; name both */
        auto below = g_live.lower_bound(a->base);
        if (below != g_live.begin()) {
            const Allocation &b = (--below)->second;
            return format("%#lx, byte %llu past the end of the %zu-byte allocation at %p (and "
                          "%llu bytes before the start of the %zu-byte allocation at %p)",
                          (unsigned long)addr, (unsigned long long)(addr - b.base - b.size),
                          b.size, (void *)b.base, (unsigned long long)(a->base - addr), a->size,
                          (void *)a->base);
        }
        return format("%#lx, %llu bytes before the start of the %zu-byte allocation at %p",
                      (unsigned long)addr, (unsigned long long)(a->base - addr), a->size,
                      (void *)a->base);
    }
    for (auto it = g_freed.rbegin(); it != g_freed.rend(); ++it)
        if (addr >= it->map && addr < it->map + it->map_len)
            return format("%#lx, byte offset %lld of the %zu-byte allocation at %p, which was "
                          "freed", (unsigned long)addr, (long long)(addr - it->base), it->size,
                          (void *)it->base);
    return format("%#lx, outside every allocation", (unsigned long)addr);
}

} /* namespace emu */

using namespace emu;

/* The direction of a valid copy, cudaMemcpyDefault resolved by where the pointers lie. */
static cudaMemcpyKind direction(const void *dst, const void *src, size_t count, cudaMemcpyKind kind)
{
    if (kind != cudaMemcpyDefault)
        return kind;
    bool d = classify(dst, count) == Where::DEVICE, s = classify(src, count) == Where::DEVICE;
    return d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
             : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
}

static std::atomic<unsigned long long> g_to_host{0}; /* emu_bytes_to_host */

/* The device of a copy's device side: its allocation's; a __device__ variable (which a GPU has
 * on every device, the CPU backend once), the current device's. */
static int side_device(const void *p)
{
    int owner = owner_of(p);
    return owner >= 0 ? owner : current_device();
}

/* every copy's description is made here, once, when it is issued */
static OpDesc copy_desc(cudaMemcpyKind dir, size_t count, bool pageable, void *dst, const void *src)
{
    if (dir == cudaMemcpyDeviceToHost)
        g_to_host += count;
    OpDesc d{OpKind::MEMCPY, nullptr, dir, count, pageable};
    if (dir == cudaMemcpyDeviceToHost || dir == cudaMemcpyDeviceToDevice)
        d.src_device = side_device(src);
    if (dir == cudaMemcpyHostToDevice || dir == cudaMemcpyDeviceToDevice)
        d.dst_device = side_device(dst);
    return d;
}

static cudaError_t check_copy(void *dst, const void *src, size_t count, cudaMemcpyKind kind)
{
    if (count == 0)
        return cudaSuccess;
    if (!dst || !src)
        return cudaErrorInvalidValue;
    Where d = classify(dst, count), s = classify(src, count);
    if (d == Where::DEVICE_OVERRUN || s == Where::DEVICE_OVERRUN)
        return cudaErrorInvalidValue;
    switch (kind) {
    case cudaMemcpyHostToHost: return cudaSuccess;
    case cudaMemcpyHostToDevice: return d == Where::DEVICE ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToHost: return s == Where::DEVICE ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToDevice:
        return d == Where::DEVICE && s == Where::DEVICE ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDefault: return cudaSuccess;
    }
    return cudaErrorInvalidMemcpyDirection;
}

extern "C" {

cudaError_t cudaMalloc(void **dev_ptr, size_t size)
{
    return allocate(dev_ptr, size, false);
}

cudaError_t cudaMallocManaged(void **dev_ptr, size_t size, unsigned int flags)
{
    (void)flags;
    return allocate(dev_ptr, size, true);
}

cudaError_t cudaFree(void *dev_ptr)
{
    drain_all(); /* cudaFree synchronises the device: no queued work may touch freed memory */
    return release(dev_ptr);
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    if (!ptr)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    *ptr = size ? std::aligned_alloc(256, round_up(size, 256)) : nullptr;
    if (size && !*ptr)
        return record(cudaErrorMemoryAllocation);
    if (*ptr) {
        std::lock_guard<std::mutex> lock(g_mutex);
        g_pinned[(uintptr_t)*ptr] = Pinned{size, true};
    }
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags)
{
    (void)flags;
    return cudaMallocHost(ptr, size);
}

cudaError_t cudaFreeHost(void *ptr)
{
    drain_all(); /* it synchronises the device, as cudaFree does */
    if (ptr) {
        std::lock_guard<std::mutex> lock(g_mutex);
        auto it = g_pinned.find((uintptr_t)ptr);
        if (it == g_pinned.end() || !it->second.allocated)
            return record(cudaErrorInvalidValue); /* not from cudaMallocHost/cudaHostAlloc */
        g_pinned.erase(it);
        std::free(ptr);
    }
    return sync_check();
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    (void)flags;
    if (!ptr || size == 0)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (pinned_overlap((uintptr_t)ptr, size) != g_pinned.end())
        return record(cudaErrorHostMemoryAlreadyRegistered);
    g_pinned[(uintptr_t)ptr] = Pinned{size, false};
    return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *ptr)
{
    drain_all(); /* queued copies may still read or write it */
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        auto it = g_pinned.find((uintptr_t)ptr);
        if (!ptr || it == g_pinned.end() || it->second.allocated)
            return record(cudaErrorHostMemoryNotRegistered);
        g_pinned.erase(it);
    }
    return api_check();
}

/* What the CUDA runtime says of a pointer since CUDA 11: device memory, pinned host memory
 * (allocated or registered), or neither (cudaMemoryTypeUnregistered, not an error). Managed
 * memory is reported as device memory, the CPU backend's cudaMallocManaged being cudaMalloc. */
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
    if (!attributes)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    *attributes = cudaPointerAttributes{};
    attributes->device = 0;
    if (classify(ptr, 1) != Where::HOST) {
        attributes->type = cudaMemoryTypeDevice;
        attributes->device = side_device(ptr); /* the allocation's device */
        attributes->devicePointer = const_cast<void *>(ptr);
    } else if (is_pinned(ptr, 1)) {
        attributes->type = cudaMemoryTypeHost;
        attributes->hostPointer = const_cast<void *>(ptr);
        attributes->devicePointer = const_cast<void *>(ptr); /* one address space */
    } else {
        attributes->type = cudaMemoryTypeUnregistered;
    }
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    if (!free_bytes || !total_bytes)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    size_t total = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    std::lock_guard<std::mutex> lock(g_mutex);
    *total_bytes = total;
    *free_bytes = g_in_use < total ? total - g_in_use : 0;
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind)
{
    if (cudaError_t e = capture_check(0))
        return record(e);
    drain_legacy(); /* a blocking copy, on the legacy stream: it waits for the work before it */
    if (cudaError_t e = sync_check())
        return e;
    if (cudaError_t e = check_copy(dst, src, count, kind))
        return record(e);
    if (count) {
        cudaMemcpyKind dir = direction(dst, src, count, kind);
        submit(0, copy_desc(dir, count, false, dst, src), [=] { std::memmove(dst, src, count); });
    }
    return cudaSuccess;
}

/* On a stream of the program's own the copy is queued and reads its source when it runs, as a
 * DMA engine does: a pinned buffer the host rewrites before then gives the copy the new data.
 * Pageable host memory is what CUDA cannot copy asynchronously: to it, the host waits for the
 * stream and the copy (a synchronising call, which reports a pending fault); from it, the data
 * is staged when the copy is issued, and lands in stream order. A captured copy becomes a node
 * that reads its source whenever the graph runs it, pageable or not. */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    if (cudaError_t e = api_check())
        return e;
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t e = capture_check(stream))
        return record(e);
    if (device_failed())
        return cudaSuccess; /* the stream is dead; the fault surfaces at the next sync */
    if (cudaError_t e = check_copy(dst, src, count, kind))
        return record(e);
    if (count == 0)
        return cudaSuccess;
    const cudaMemcpyKind dir = direction(dst, src, count, kind);
    const bool to_host = dir == cudaMemcpyDeviceToHost || dir == cudaMemcpyHostToHost;
    const bool from_host = dir == cudaMemcpyHostToDevice || dir == cudaMemcpyHostToHost;
    const bool pageable = (to_host && !is_pinned(dst, count)) || (from_host && !is_pinned(src, count));
    if (capturing(stream)) {
        submit(stream, copy_desc(dir, count, pageable, dst, src), [=] { std::memmove(dst, src, count); });
        return cudaSuccess;
    }
    if (is_legacy(stream)) {
        submit(stream, copy_desc(dir, count, pageable, dst, src), [=] { std::memmove(dst, src, count); });
        return pageable && to_host ? sync_check() : cudaSuccess;
    }
    if (to_host && (pageable || dir == cudaMemcpyHostToHost)) {
        /* the host waits: a copy to pageable memory, or between two host buffers */
        submit(stream, copy_desc(dir, count, pageable, dst, src), [=] { std::memmove(dst, src, count); },
               true);
        return sync_check();
    }
    if (pageable) {
        auto staged = std::make_shared<std::vector<unsigned char>>((const unsigned char *)src,
                                                                   (const unsigned char *)src + count);
        submit(stream, copy_desc(dir, count, true, dst, src),
               [=] { std::memcpy(dst, staged->data(), count); });
        return cudaSuccess;
    }
    submit(stream, copy_desc(dir, count, false, dst, src), [=] { std::memmove(dst, src, count); });
    return cudaSuccess;
}

/* A peer copy's side on device dev: [p, p + count) inside one allocation of dev, or a managed
 * one, or a __device__ variable (which a GPU has on every device). */
static bool on_device(const void *p, size_t count, int dev)
{
    if (!p || classify(p, count) != Where::DEVICE)
        return false;
    bool managed = false;
    const int owner = owner_of(p, &managed);
    return owner < 0 || owner == dev || managed;
}

static cudaError_t check_peer(void *dst, int dst_device, const void *src, int src_device, size_t count)
{
    if (!valid_device(dst_device) || !valid_device(src_device))
        return cudaErrorInvalidDevice;
    if (count && (!on_device(dst, count, dst_device) || !on_device(src, count, src_device)))
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

static OpDesc peer_desc(int dst_device, int src_device, size_t count)
{
    OpDesc d{OpKind::MEMCPY, nullptr, cudaMemcpyDeviceToDevice, count, false};
    d.src_device = src_device;
    d.dst_device = dst_device;
    return d;
}

/* Peer copies work with or without peer access, as on a GPU (whose driver then stages them
 * through the host). cudaMemcpyPeer is a legacy-stream copy, as cudaMemcpy is. */
cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
    if (cudaError_t e = capture_check(0))
        return record(e);
    drain_legacy();
    if (cudaError_t e = sync_check())
        return e;
    if (cudaError_t e = check_peer(dst, dstDevice, src, srcDevice, count))
        return record(e);
    if (count)
        submit(0, peer_desc(dstDevice, srcDevice, count), [=] { std::memmove(dst, src, count); });
    return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                cudaStream_t stream)
{
    if (cudaError_t e = api_check())
        return e;
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t e = capture_check(stream))
        return record(e);
    if (device_failed())
        return cudaSuccess; /* the stream is dead; the fault surfaces at the next sync */
    if (cudaError_t e = check_peer(dst, dstDevice, src, srcDevice, count))
        return record(e);
    if (count)
        submit(stream, peer_desc(dstDevice, srcDevice, count), [=] { std::memmove(dst, src, count); });
    return cudaSuccess;
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind)
{
    if (cudaError_t e = capture_check(0))
        return record(e);
    drain_legacy();
    if (cudaError_t e = sync_check())
        return e;
    if (width > dpitch || width > spitch)
        return record(cudaErrorInvalidPitchValue);
    if (height == 0 || width == 0)
        return cudaSuccess;
    size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
    Where d = classify(dst, dspan), s = classify(src, sspan);
    bool ok = d != Where::DEVICE_OVERRUN && s != Where::DEVICE_OVERRUN &&
              (kind != cudaMemcpyHostToDevice || d == Where::DEVICE) &&
              (kind != cudaMemcpyDeviceToHost || s == Where::DEVICE) &&
              (kind != cudaMemcpyDeviceToDevice || (d == Where::DEVICE && s == Where::DEVICE));
    if (!ok)
        return record(cudaErrorInvalidValue);
    cudaMemcpyKind dir = direction(dst, src, 1, kind);
    submit(0, copy_desc(dir, width * height, false, dst, src), [=] {
        for (size_t r = 0; r < height; ++r)
            std::memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    });
    return cudaSuccess;
}

cudaError_t cudaMemset(void *dev_ptr, int value, size_t count)
{
    return cudaMemsetAsync(dev_ptr, value, count, 0);
}

cudaError_t cudaMemsetAsync(void *dev_ptr, int value, size_t count, cudaStream_t stream)
{
    if (cudaError_t e = api_check())
        return e;
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t e = capture_check(stream))
        return record(e);
    if (count == 0)
        return cudaSuccess;
    if (classify(dev_ptr, count) != Where::DEVICE)
        return record(cudaErrorInvalidValue);
    submit(stream, OpDesc{OpKind::MEMSET, nullptr, cudaMemcpyDefault, count, false},
           [=] { std::memset(dev_ptr, value, count); });
    return cudaSuccess;
}

int emu_live_allocations(size_t bytes)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    int n = 0;
    for (auto &entry : g_live)
        n += bytes == 0 || entry.second.size == bytes;
    return n;
}

unsigned long long emu_bytes_to_host(void)
{
    return g_to_host.load();
}

size_t emu_live_bytes(void)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    size_t sum = 0;
    for (auto &entry : g_live)
        sum += entry.second.size;
    return sum;
}

int emu_live_pinned(int registered)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    int n = 0;
    for (auto &entry : g_pinned)
        n += entry.second.allocated != (registered != 0);
    return n;
}

void emu_register_symbol(const void *symbol, size_t size)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    g_symbols[(uintptr_t)symbol] = size;
}

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               cudaMemcpyKind kind)
{
    if (cudaError_t e = capture_check(0))
        return record(e);
    drain_legacy();
    if (cudaError_t e = sync_check())
        return e;
    if (!symbol || (!src && count))
        return record(cudaErrorInvalidValue);
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return record(cudaErrorInvalidMemcpyDirection);
    if (count) {
        void *dst = (char *)symbol + offset;
        submit(0,
               copy_desc(kind == cudaMemcpyDeviceToDevice ? kind : cudaMemcpyHostToDevice, count, false, dst, src),
               [=] { std::memmove(dst, src, count); });
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
                                 cudaMemcpyKind kind)
{
    if (cudaError_t e = capture_check(0))
        return record(e);
    drain_legacy();
    if (cudaError_t e = sync_check())
        return e;
    if (!symbol || (!dst && count))
        return record(cudaErrorInvalidValue);
    if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return record(cudaErrorInvalidMemcpyDirection);
    if (count) {
        const void *src = (const char *)symbol + offset;
        submit(0,
               copy_desc(kind == cudaMemcpyDeviceToDevice ? kind : cudaMemcpyDeviceToHost, count, false, dst, src),
               [=] { std::memmove(dst, src, count); });
    }
    return cudaSuccess;
}

cudaError_t cudaGetSymbolAddress(void **dev_ptr, const void *symbol)
{
    if (!dev_ptr || !symbol)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    *dev_ptr = const_cast<void *>(symbol);
    return cudaSuccess;
}

} /* extern "C" */
