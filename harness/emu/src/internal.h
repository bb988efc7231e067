/* internal.h: what the parts of the emu runtime share. Not installed; kernel code sees only
 * include/. */
#ifndef EMU_INTERNAL_H
#define EMU_INTERNAL_H

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace emu {

/* The emulated device (README.md, "The emulated device"). */
constexpr int MAX_THREADS_PER_BLOCK = 1024;
constexpr unsigned MAX_BLOCK_X = 1024, MAX_BLOCK_Y = 1024, MAX_BLOCK_Z = 64;
constexpr unsigned MAX_GRID_X = 2147483647u, MAX_GRID_Y = 65535, MAX_GRID_Z = 65535;
constexpr size_t SHARED_PER_BLOCK = 48 * 1024;        /* static, and dynamic without opt-in */
constexpr size_t SHARED_PER_BLOCK_OPTIN = 227 * 1024; /* cudaFuncSetAttribute's ceiling */
constexpr size_t SHARED_PER_SM = 228 * 1024;
constexpr int WARP = 32;
constexpr int SM_COUNT = 16;
constexpr int CC_MAJOR = 9, CC_MINOR = 0;

/* The device the runtime reports: the default above, or a named profile (EMU_DEVICE=h200, a100,
 * l4, t4: README.md, "The emulated device"), whose limits its queries report and its launches
 * and attributes are held to. Kernels still run the same way: a profile changes what the code
 * is told and allowed, not how fast anything runs. */
struct Device {
    const char *key;             /* "h200"; "" for the default */
    const char *name;
    int cc_major, cc_minor;
    int sms, threads_per_sm, blocks_per_sm, regs_per_sm, regs_per_block;
    size_t smem_per_sm, smem_per_block_optin, smem_reserved_per_block;
    int l2_bytes;
};
const Device &device();          /* chosen at the first call; an unknown name ends the program */

/* Several devices (devices.cpp, README.md "Several devices"): how many there are (EMU_DEVICES,
 * or emu_set_devices), the calling host thread's current device, and which device may read
 * which one's memory (the topology, EMU_PEERS, and what cudaDeviceEnablePeerAccess enabled).
 * Every device has the profile above. */
constexpr int MAX_DEVICES = 8;
int device_count();
bool valid_device(int d);            /* 0 <= d < device_count() */
int current_device();                /* this host thread's; 0 until cudaSetDevice */
bool peer_enabled(int from, int to); /* `from`'s kernels may touch `to`'s memory */
void reset_peer_access(int d);       /* cudaDeviceReset: d's enablements, both ways, are gone */

/* errors (runtime.cpp) */
cudaError_t record(cudaError_t e);   /* remembers e for cudaGetLastError; returns it */
cudaError_t api_check();             /* the sticky error, recorded, or cudaSuccess */
cudaError_t sync_check();            /* a synchronising call: surfaces a pending kernel fault */
bool device_failed();                /* a kernel fault is pending or sticky: run no more kernels */
cudaError_t device_error();          /* that fault (sticky first), or cudaSuccess */
void kernel_failed(cudaError_t e);   /* a kernel stopped: e surfaces at the next synchronisation */
/* the running profile's properties, as cudaGetDeviceProperties reports them */
void device_properties(cudaDeviceProp *p);
/* a kernel's dynamic shared memory ceiling: what cudaFuncSetAttribute set, else 48 KiB less its
 * static shared memory; its shared memory carveout preference (-1 unless set) */
int max_dynamic_shared(const void *kernel);
int preferred_carveout(const void *kernel);

/* kernel resources (resources.cpp, README.md "Kernel resources"): what the GPU compiler gave a
 * kernel whose file opted in, on the running profile's architecture; zeros and 1024 threads for
 * any other. launch_resources_error: cudaErrorLaunchOutOfResources for a block over the
 * kernel's maxThreadsPerBlock (its __launch_bounds__, or the registers a block allow), else
 * cudaSuccess. */
int static_shared(const void *kernel);
void kernel_attributes(const void *kernel, cudaFuncAttributes *attr);
cudaError_t launch_resources_error(const void *kernel, unsigned long long threads);

/* memory (memory.cpp) */
enum class Where { HOST, DEVICE, DEVICE_OVERRUN };
Where classify(const void *p, size_t n);
/* The first damaged padding byte around a live allocation, described; empty if none. The
 * padding is repaired, so each damage is reported once. */
std::string check_padding();
/* Where an address lies relative to the allocations: "8 bytes past the end of ...". */
std::string describe_address(uintptr_t addr);

/* memory (memory.cpp): host memory from cudaMallocHost/cudaHostAlloc or cudaHostRegister'ed
 * holds all of [p, p + n) */
bool is_pinned(const void *p, size_t n);
/* The device of the device allocation whose mapping (guards included, as classify sees it)
 * holds p: the device current when it was made; -1 for anything else (host memory, a
 * __device__ variable). *managed: it came from cudaMallocManaged; *base, *size: the allocation
 * (each may be null). */
int owner_of(const void *p, bool *managed = nullptr, uintptr_t *base = nullptr, size_t *size = nullptr);

/* kernel launches (sched.cpp): check_launch records a bad configuration (cudaGetLastError)
 * and says whether the launch may go on; run_kernel runs it now, unless a fault is pending */
bool check_launch(const void *kernel, const Cfg &c);
void run_kernel(const void *kernel, const Cfg &c, void (*body)(void *), void *pack);

/* streams (streams.cpp, README.md "Streams"). Every operation on device memory goes through
 * submit, which runs it at once on the legacy default stream (after the work the blocking
 * streams have queued) and queues it on any other stream; queued work runs at the
 * synchronising calls, in an order that respects only what the program declared. */
enum class OpKind : uint8_t { KERNEL, MEMCPY, MEMSET, EVENT_RECORD, EVENT_WAIT, HOST_FUNC, GRAPH_LAUNCH };
struct OpDesc {
    OpKind kind;
    const void *kernel;    /* KERNEL: its address (its name in the schedule) */
    cudaMemcpyKind copy;   /* MEMCPY: the direction, cudaMemcpyDefault resolved */
    size_t bytes;          /* MEMCPY, MEMSET */
    bool pageable;         /* MEMCPY: the host side is pageable */
    int src_device = -1;   /* MEMCPY: the devices of the two sides, -1 for host memory */
    int dst_device = -1;
    unsigned long long blocks = 0; /* KERNEL: the grid's blocks and a block's threads */
    unsigned threads = 0;
};
bool valid_stream(cudaStream_t s);   /* 0, the two default streams, or a live stream */
bool is_legacy(cudaStream_t s);      /* 0, cudaStreamLegacy, cudaStreamPerThread */
/* the device a stream was created on; the legacy stream (one for every device): the calling
 * thread's current device */
int stream_device(cudaStream_t s);
/* Issues `work` to `stream`. host_waits: run it now, after what the stream has queued and what
 * that depends on (a copy to pageable memory). The caller has checked the arguments; work is
 * not called while a kernel fault is pending (the op is recorded as skipped). */
void submit(cudaStream_t stream, const OpDesc &d, std::function<void()> work, bool host_waits = false);
void drain_all();      /* everything queued: cudaDeviceSynchronize, cudaFree */
void drain_legacy();   /* what a legacy-stream operation waits for: the blocking streams' work */
/* Stream capture (streams.cpp, README.md "Graphs"). capture_check says whether work may be
 * issued to `stream` now: cudaErrorStreamCaptureImplicit for the legacy stream while a blocking
 * stream captures (that capture is invalidated), cudaErrorStreamCaptureInvalidated for a stream
 * whose capture was invalidated, else cudaSuccess; the caller records the error. Work that
 * submit is given for a capturing stream becomes a node of the graph being captured.
 * capture_sync_check is the device-wide synchronisation's: cudaErrorStreamCaptureUnsupported
 * (every capture invalidated) while any capture is under way. */
cudaError_t capture_check(cudaStream_t stream);
cudaError_t capture_sync_check();
bool capturing(cudaStream_t stream);

/* the running CUDA thread's linear index in its block (sched.cpp) */
unsigned current_thread();

/* cuda_pipeline.h's copies in flight (pipeline.cpp): the scheduler empties every thread's
 * queue when a block starts, and lands what a thread left in flight when it exits */
void pipeline_block_begin(unsigned nthreads);
void pipeline_thread_exit(unsigned lin);

/* symbolisation of code addresses (sched.cpp) */
std::string symbol_name(const void *code);       /* "matmul_kernel" */
std::string source_location(const void *code);   /* "chapters/01-matmul/matmul.cu:42" */

#ifdef EMU_PROFILE
/* The instrumented build (harness/emu/prof/prof.cpp, README.md "Profiling"): the scheduler
 * calls these, and the profiler asks it for the running CUDA thread. Not in libemu.a. */
struct ProfThread {
    unsigned lin;                 /* linear thread index in the block */
    uintptr_t stack_lo, stack_hi; /* its fiber stack */
};
bool prof_current(ProfThread *t);          /* false outside a CUDA thread */
/* stop the kernel with cudaErrorIllegalAddress; the report names the thread, then message,
 * then the source line of pc (a return address in the access's code) */
[[noreturn]] void prof_fail(const char *message, uintptr_t pc);
void prof_launch_begin(const void *kernel, const Cfg &c, const void *pack);
void prof_launch_end(const void *kernel, bool ok);
void prof_block_begin(unsigned nthreads);
void prof_block_end(bool ok);
void prof_barrier();
void prof_thread_exit(unsigned lin);
/* the live allocations, (base, size), sorted by base (memory.cpp) */
void live_allocations(std::vector<std::pair<uintptr_t, size_t>> &out);
#endif

} /* namespace emu */

#endif /* EMU_INTERNAL_H */
