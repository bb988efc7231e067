/* runtime.cpp: error state, the emulated device's properties and kernel attributes of the emu
 * backend (streams and events: streams.cpp; what the GPU compiler gave a kernel, the occupancy
 * calls and the launch's resource check: resources.cpp).
 *
 * Error model, as on a GPU:
 *  - A call that fails on its own arguments (a bad launch configuration, a bad pointer) returns
 *    its error and leaves it for cudaGetLastError, which returns it once and clears it.
 *  - A kernel that stops (illegal address, deadlock, trap) leaves a pending fault. Launches are
 *    run when their stream is synchronised (or at once, on the legacy default stream), and the
 *    fault is not visible to cudaGetLastError right after the launch:
 *    it surfaces at the next synchronising call (cudaDeviceSynchronize, cudaStreamSynchronize,
 *    cudaEventSynchronize, a blocking cudaMemcpy, cudaFree, ...), exactly where a GPU would
 *    report it. From then on it is sticky: every call returns it until the process ends. */
#include "internal.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unistd.h>

namespace emu {

namespace {
thread_local cudaError_t g_last = cudaSuccess; /* per host thread, as in CUDA */
std::atomic<int> g_pending{cudaSuccess};       /* a kernel fault not yet surfaced */
std::atomic<int> g_sticky{cudaSuccess};        /* a surfaced kernel fault */
std::mutex g_attr_mutex;
std::map<const void *, int> g_max_dyn_smem;    /* cudaFuncAttributeMaxDynamicSharedMemorySize */
std::map<const void *, int> g_carveout;        /* cudaFuncAttributePreferredSharedMemoryCarveout */
} /* namespace */

cudaError_t record(cudaError_t e)
{
    if (e != cudaSuccess)
        g_last = e;
    return e;
}

cudaError_t api_check()
{
    return record((cudaError_t)g_sticky.load());
}

cudaError_t sync_check()
{
    int pending = g_pending.exchange(cudaSuccess);
    if (pending != cudaSuccess) {
        int expected = cudaSuccess;
        g_sticky.compare_exchange_strong(expected, pending);
    }
    return api_check();
}

bool device_failed()
{
    return g_pending.load() != cudaSuccess || g_sticky.load() != cudaSuccess;
}

cudaError_t device_error()
{
    int sticky = g_sticky.load();
    return (cudaError_t)(sticky != cudaSuccess ? sticky : g_pending.load());
}

void kernel_failed(cudaError_t e)
{
    int expected = cudaSuccess;
    g_pending.compare_exchange_strong(expected, e);
}

int max_dynamic_shared(const void *kernel)
{
    const int fixed = static_shared(kernel); /* (resources.cpp, before this lock) */
    std::lock_guard<std::mutex> lock(g_attr_mutex);
    auto it = g_max_dyn_smem.find(kernel);
    if (it != g_max_dyn_smem.end())
        return it->second;
    return fixed < (int)SHARED_PER_BLOCK ? (int)SHARED_PER_BLOCK - fixed : 0;
}

int preferred_carveout(const void *kernel)
{
    std::lock_guard<std::mutex> lock(g_attr_mutex);
    auto it = g_carveout.find(kernel);
    return it == g_carveout.end() ? -1 : it->second;
}

namespace {

struct ErrorText {
    cudaError_t code;
    const char *name, *text;
};
/* The runtime's own wording, so messages read the same on both backends. */
const ErrorText ERROR_TEXTS[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorPeerAccessUnsupported, "cudaErrorPeerAccessUnsupported",
     "peer access is not supported between these two devices"},
    {cudaErrorPeerAccessAlreadyEnabled, "cudaErrorPeerAccessAlreadyEnabled",
     "peer access is already enabled"},
    {cudaErrorPeerAccessNotEnabled, "cudaErrorPeerAccessNotEnabled", "peer access has not been enabled"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge",
     "operation would result in a merge of separate capture sequences"},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched",
     "capture was not ended in the same stream as it began"},
    {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined", "capturing stream has unjoined work"},
    {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation",
     "dependency created on uncaptured work in another stream"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent",
     "operation not permitted on an event last recorded in a capturing stream"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText *find_error(cudaError_t e)
{
    for (const ErrorText &t : ERROR_TEXTS)
        if (t.code == e)
            return &t;
    return nullptr;
}

size_t physical_memory()
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : (size_t)8 << 30;
}

/* The named profiles: compute capability, threads, blocks, registers and shared memory an SM
 * and a block from the CUDA C++ Programming Guide's table of technical specifications per
 * compute capability (9.0, 8.0, 8.9, 7.5); the SMs and the L2 of one product of each (NVIDIA's
 * data sheets: H200 SXM, A100 SXM4, L4, T4; the H200's L2 as its runtime reports it). The
 * default is this backend's own device of 16 SMs, shared memory as the H200's. */
const Device PROFILES[] = {
    { "", "emu (CPU)", CC_MAJOR, CC_MINOR, SM_COUNT, 2048, 32, 65536, 65536, SHARED_PER_SM,
      SHARED_PER_BLOCK_OPTIN, 0, 0 },
    { "h200", "emu (CPU) as NVIDIA H200", 9, 0, 132, 2048, 32, 65536, 65536, 228 * 1024,
      227 * 1024, 1024, 60 << 20 },
    { "a100", "emu (CPU) as NVIDIA A100-SXM4", 8, 0, 108, 2048, 32, 65536, 65536, 164 * 1024,
      163 * 1024, 1024, 40 << 20 },
    { "l4", "emu (CPU) as NVIDIA L4", 8, 9, 58, 1536, 24, 65536, 65536, 100 * 1024,
      99 * 1024, 1024, 48 << 20 },
    { "t4", "emu (CPU) as Tesla T4", 7, 5, 40, 1024, 16, 65536, 65536, 64 * 1024, 64 * 1024,
      0, 4 << 20 },
};

const Device &pick_device()
{
    const char *want = std::getenv("EMU_DEVICE");
    if (!want)
        want = "";
    for (const Device &d : PROFILES)
        if (std::strcmp(d.key, want) == 0)
            return d;
    std::fprintf(stderr, "emu: EMU_DEVICE=%s names no device profile; h200, a100, l4 and t4 "
                         "do, and unset (or empty) is the default\n", want);
    std::exit(2);
}

void fill_properties(cudaDeviceProp *p)
{
    const Device &d = device();
    std::memset(p, 0, sizeof *p);
    std::snprintf(p->name, sizeof p->name, "%s", d.name);
    p->totalGlobalMem = physical_memory();
    p->sharedMemPerBlock = SHARED_PER_BLOCK;
    p->sharedMemPerBlockOptin = d.smem_per_block_optin;
    p->sharedMemPerMultiprocessor = d.smem_per_sm;
    p->regsPerBlock = d.regs_per_block;
    p->regsPerMultiprocessor = d.regs_per_sm;
    p->warpSize = WARP;
    p->memPitch = (size_t)INT32_MAX;
    p->maxThreadsPerBlock = MAX_THREADS_PER_BLOCK;
    p->maxThreadsDim[0] = (int)MAX_BLOCK_X;
    p->maxThreadsDim[1] = (int)MAX_BLOCK_Y;
    p->maxThreadsDim[2] = (int)MAX_BLOCK_Z;
    p->maxGridSize[0] = (int)MAX_GRID_X;
    p->maxGridSize[1] = (int)MAX_GRID_Y;
    p->maxGridSize[2] = (int)MAX_GRID_Z;
    p->totalConstMem = 64 * 1024;
    p->major = d.cc_major;
    p->minor = d.cc_minor;
    p->textureAlignment = 512;
    p->texturePitchAlignment = 32;
    p->multiProcessorCount = d.sms;
    p->integrated = 0;
    p->canMapHostMemory = 1;
    p->concurrentKernels = 0;
    p->unifiedAddressing = 1;
    p->managedMemory = 1;
    p->l2CacheSize = d.l2_bytes;
    p->maxThreadsPerMultiProcessor = d.threads_per_sm;
    p->maxBlocksPerMultiProcessor = d.blocks_per_sm;
    p->memoryBusWidth = 64;
    p->asyncEngineCount = 0;
    p->pciBusID = 0;
    p->reservedSharedMemPerBlock = d.smem_reserved_per_block;
}

} /* namespace */

const Device &device()
{
    static const Device &d = pick_device(); /* once, thread-safe */
    return d;
}

void device_properties(cudaDeviceProp *p)
{
    fill_properties(p);
}

} /* namespace emu */

using namespace emu;

extern "C" {

cudaError_t cudaGetLastError(void)
{
    if (g_sticky.load() != cudaSuccess)
        return (cudaError_t)g_sticky.load();
    cudaError_t e = g_last;
    g_last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    if (g_sticky.load() != cudaSuccess)
        return (cudaError_t)g_sticky.load();
    return g_last;
}

const char *cudaGetErrorString(cudaError_t error)
{
    const ErrorText *t = find_error(error);
    return t ? t->text : "unrecognized error code";
}

const char *cudaGetErrorName(cudaError_t error)
{
    const ErrorText *t = find_error(error);
    return t ? t->name : "cudaErrorUnknown";
}

int emu_is_emulator(void)
{
    return 1;
}

/* cudaGetDeviceCount, cudaGetDevice, cudaSetDevice, peer access: devices.cpp */

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (!prop)
        return record(cudaErrorInvalidValue);
    if (!valid_device(device))
        return record(cudaErrorInvalidDevice);
    fill_properties(prop);
    prop->pciBusID = device; /* the devices share the profile; this tells them apart */
    return api_check();
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
{
    if (!value)
        return record(cudaErrorInvalidValue);
    if (!valid_device(device))
        return record(cudaErrorInvalidDevice);
    cudaDeviceProp p;
    fill_properties(&p);
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p.sharedMemPerBlockOptin; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrTotalConstantMemory: *value = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p.maxBlocksPerMultiProcessor; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = p.memoryBusWidth; break;
    case cudaDevAttrConcurrentKernels: *value = p.concurrentKernels; break;
    case cudaDevAttrUnifiedAddressing: *value = p.unifiedAddressing; break;
    case cudaDevAttrManagedMemory: *value = p.managedMemory; break;
    case cudaDevAttrIntegrated: *value = p.integrated; break;
    case cudaDevAttrAsyncEngineCount: *value = p.asyncEngineCount; break;
    default: return record(cudaErrorInvalidValue);
    }
    return api_check();
}

cudaError_t cudaDriverGetVersion(int *version)
{
    if (!version)
        return record(cudaErrorInvalidValue);
    *version = CUDART_VERSION;
    return api_check();
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
    if (!version)
        return record(cudaErrorInvalidValue);
    *version = CUDART_VERSION;
    return api_check();
}

cudaError_t cudaDeviceSynchronize(void)
{
    if (cudaError_t e = capture_sync_check()) /* it would wait for work that is being captured */
        return record(e);
    drain_all();
    return sync_check();
}

cudaError_t cudaDeviceReset(void)
{
    /* A fault poisons the process here, as a sticky error does on a GPU: only a new process
     * (each Check test is one) starts clean. */
    if (cudaError_t e = capture_sync_check())
        return record(e);
    drain_all();
    reset_peer_access(current_device()); /* its context, and the peer mappings, are gone */
    return sync_check();
}

cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr, int value)
{
    if (!func)
        return record(cudaErrorInvalidDeviceFunction);
    if (cudaError_t e = api_check())
        return e;
    switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
        /* with the kernel's static shared memory, at most what the device lets a block opt in to */
        if (value < 0 || (size_t)value + (size_t)static_shared(func) > device().smem_per_block_optin)
            return record(cudaErrorInvalidValue);
        {
            std::lock_guard<std::mutex> lock(g_attr_mutex);
            g_max_dyn_smem[func] = value;
        }
        return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
        if (value < -1 || value > 100)
            return record(cudaErrorInvalidValue);
        {
            std::lock_guard<std::mutex> lock(g_attr_mutex);
            g_carveout[func] = value;
        }
        return cudaSuccess;
    default:
        return record(cudaErrorInvalidValue);
    }
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, const void *func)
{
    if (!attr)
        return record(cudaErrorInvalidValue);
    if (!func)
        return record(cudaErrorInvalidDeviceFunction);
    if (cudaError_t e = api_check())
        return e;
    kernel_attributes(func, attr); /* (resources.cpp) */
    return cudaSuccess;
}

} /* extern "C" */
