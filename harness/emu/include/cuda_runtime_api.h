/* cuda_runtime_api.h for the emu backend: the CUDA runtime API subset that the CPU runtime
 * (build/emu/libemu.a) implements, with the toolkit's own types (driver_types.h, vector_types.h),
 * so that error codes, cudaDeviceProp and dim3 are the real ones.
 *
 * C and C++: the functions have C linkage, so gcc-compiled harness code calls them directly.
 * A function the emulator does not implement is not declared here, so using it fails at compile
 * time instead of misbehaving at run time. harness/emu/README.md lists what each call does. */
#ifndef __CUDA_RUNTIME_API_H__
#define __CUDA_RUNTIME_API_H__ /* the toolkit's guard: its own copy of this header is then skipped */
#define EMU_CUDA_RUNTIME_API_H

#include <stddef.h>

#include <driver_types.h>
#include <vector_types.h>

#define CUDART_VERSION 13000
#define __CUDART_API_VERSION CUDART_VERSION

#ifdef __cplusplus
#define EMU_DV(v) = v
extern "C" {
#else
#define EMU_DV(v)
#endif

/* Errors. A kernel fault (illegal address, deadlock) is sticky: once it has surfaced at a
 * synchronising call, every call returns it until the process ends, as on a GPU. */
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);

/* Devices: 1 by default, up to 8 (EMU_DEVICES, emu_devices.h), every one with the same
 * profile (see harness/emu/README.md for its limits, and "Several devices"). The current device
 * is per host thread; allocations, streams and events belong to the device current when they
 * were made. */
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaDriverGetVersion(int *version);
cudaError_t cudaRuntimeGetVersion(int *version);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
/* Peer access: which pairs can is the topology (EMU_PEERS); enabling is one-directional, from
 * the current device to peer, and lets the current device's kernels touch peer's memory. */
cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice);
cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags);
cudaError_t cudaDeviceDisablePeerAccess(int peerDevice);

/* Memory. Device allocations are guarded (README: "Illegal addresses"). */
cudaError_t cudaMalloc(void **dev_ptr, size_t size);
cudaError_t cudaMallocManaged(void **dev_ptr, size_t size, unsigned int flags EMU_DV(cudaMemAttachGlobal));
cudaError_t cudaFree(void *dev_ptr);
cudaError_t cudaMallocHost(void **ptr, size_t size);
cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags);
cudaError_t cudaFreeHost(void *ptr);
/* Pins (page-locks) host memory for the copies: what a copy on a stream needs to be asynchronous. */
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void *ptr);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream EMU_DV(0));
/* Copies between the memory of two devices, with or without peer access. */
cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count);
cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                cudaStream_t stream EMU_DV(0));
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemset(void *dev_ptr, int value, size_t count);
cudaError_t cudaMemsetAsync(void *dev_ptr, int value, size_t count, cudaStream_t stream EMU_DV(0));
cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count,
                               size_t offset EMU_DV(0),
                               enum cudaMemcpyKind kind EMU_DV(cudaMemcpyHostToDevice));
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset EMU_DV(0),
                                 enum cudaMemcpyKind kind EMU_DV(cudaMemcpyDeviceToHost));
cudaError_t cudaGetSymbolAddress(void **dev_ptr, const void *symbol);
/* emu only: lets cudaMemcpy accept [symbol, symbol + size) as device memory. The C++ forms of
 * the symbol calls below register the variable they are given. */
void emu_register_symbol(const void *symbol, size_t size);

/* Streams and events. Work on the legacy default stream (0) is done when it is issued, after
 * what the blocking streams have queued; work on a created stream waits in its queue until a
 * synchronising call, and then runs in an order that respects only stream order, events and
 * the legacy stream (harness/emu/README.md, "Streams"; emu_streams.h for the schedule it ran).
 * Event times are host time (CLOCK_MONOTONIC), never a GPU timing. */
typedef void (CUDART_CB *cudaStreamCallback_t)(cudaStream_t stream, cudaError_t status, void *userData);
cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags EMU_DV(0));
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                  unsigned int flags);
cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream EMU_DV(0));
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

/* Stream capture and graphs (harness/emu/README.md, "Graphs"). While a stream captures, what it
 * is given becomes a node of a graph (kernel arguments copied then); cudaEventRecord and
 * cudaStreamWaitEvent fork and join other streams into the capture. A graph launch runs its
 * nodes as the stream scheduler runs any work, in an order that respects only the graph's
 * dependencies, after the launch stream's earlier work and before its later work. */
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus);
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                     unsigned long long *id_out EMU_DV(0), cudaGraph_t *graph_out EMU_DV(0),
                                     const cudaGraphNode_t **dependencies_out EMU_DV(0),
                                     const cudaGraphEdgeData **edgeData_out EMU_DV(0),
                                     size_t *numDependencies_out EMU_DV(0));
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                 unsigned long long flags EMU_DV(0));
cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes);
cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *pType);

/* Kernels, by their address. numRegs, sharedSizeBytes, localSizeBytes and a maxThreadsPerBlock
 * below 1024 come from the GPU compiler, for a kernel whose file opted in (emu_resources.h;
 * harness/emu/README.md, "Kernel resources"); without, they are 0, 0, 0 and 1024. */
cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value);
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func);

/* Occupancy on the running device profile, by the CUDA toolkit's calculator (cuda_occupancy.h)
 * over the kernel's attributes above. */
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize,
                                                          size_t dynamicSMemSize);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func,
                                                                   int blockSize, size_t dynamicSMemSize,
                                                                   unsigned int flags);
cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, const void *func,
                                                      int numBlocks, int blockSize);

/* emu only (HARNESS_EMU builds): 1, so that code can say which backend ran it. */
int emu_is_emulator(void);

#ifdef __cplusplus
} /* extern "C" */

/* The C++ forms the toolkit offers for kernels and symbols. */
template <class T>
static inline cudaError_t cudaMalloc(T **dev_ptr, size_t size)
{
    return cudaMalloc(reinterpret_cast<void **>(dev_ptr), size);
}
template <class T>
static inline cudaError_t cudaMallocManaged(T **dev_ptr, size_t size,
                                            unsigned int flags = cudaMemAttachGlobal)
{
    return cudaMallocManaged(reinterpret_cast<void **>(dev_ptr), size, flags);
}
template <class T>
static inline cudaError_t cudaMallocHost(T **ptr, size_t size)
{
    return cudaMallocHost(reinterpret_cast<void **>(ptr), size);
}
template <class T>
static inline cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src, size_t count,
                                             size_t offset = 0,
                                             cudaMemcpyKind kind = cudaMemcpyHostToDevice)
{
    return cudaMemcpyToSymbol(static_cast<const void *>(&symbol), src, count, offset, kind);
}
template <class T>
static inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t count,
                                               size_t offset = 0,
                                               cudaMemcpyKind kind = cudaMemcpyDeviceToHost)
{
    return cudaMemcpyFromSymbol(dst, static_cast<const void *>(&symbol), count, offset, kind);
}
template <class T>
static inline cudaError_t cudaGetSymbolAddress(void **dev_ptr, const T &symbol)
{
    emu_register_symbol(static_cast<const void *>(&symbol), sizeof(T));
    return cudaGetSymbolAddress(dev_ptr, static_cast<const void *>(&symbol));
}
template <class T>
static inline cudaError_t cudaFuncSetAttribute(T *func, cudaFuncAttribute attr, int value)
{
    return cudaFuncSetAttribute(reinterpret_cast<const void *>(func), attr, value);
}
template <class T>
static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, T *func)
{
    return cudaFuncGetAttributes(attr, reinterpret_cast<const void *>(func));
}
template <class T>
static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, T *func,
                                                                        int blockSize, size_t dynamicSMemSize)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        numBlocks, reinterpret_cast<const void *>(func), blockSize, dynamicSMemSize, cudaOccupancyDefault);
}
template <class T>
static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, T *func,
                                                                                 int blockSize,
                                                                                 size_t dynamicSMemSize,
                                                                                 unsigned int flags)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        numBlocks, reinterpret_cast<const void *>(func), blockSize, dynamicSMemSize, flags);
}
template <class T>
static inline cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, T *func,
                                                                    int numBlocks, int blockSize)
{
    return cudaOccupancyAvailableDynamicSMemPerBlock(dynamicSmemSize, reinterpret_cast<const void *>(func),
                                                     numBlocks, blockSize);
}

/* The block size that gives `func` the most threads resident on an SM, and the grid that fills
 * the device with it (*minGridSize: that many blocks on every SM), as the toolkit's C++ API
 * offers it: every block size from the largest allowed down, a warp at a time, each with the
 * dynamic shared memory blockSizeToDynamicSMemSize(size) asks for; ties go to the larger block.
 * blockSizeLimit, when not 0, caps the block. */
template <class UnaryFunction, class T>
static inline cudaError_t cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags(
    int *minGridSize, int *blockSize, T func, UnaryFunction blockSizeToDynamicSMemSize,
    int blockSizeLimit = 0, unsigned int flags = 0)
{
    if (!minGridSize || !blockSize || !func)
        return cudaErrorInvalidValue;
    int device_max = 0, sm_threads = 0, sms = 0, warp = 0;
    cudaFuncAttributes attr;
    cudaError_t e;
    if ((e = cudaDeviceGetAttribute(&device_max, cudaDevAttrMaxThreadsPerBlock, 0)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&sm_threads, cudaDevAttrMaxThreadsPerMultiProcessor, 0)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, 0)) != cudaSuccess ||
        (e = cudaFuncGetAttributes(&attr, func)) != cudaSuccess)
        return e;
    int limit = device_max < attr.maxThreadsPerBlock ? device_max : attr.maxThreadsPerBlock;
    if (blockSizeLimit > 0 && blockSizeLimit < limit)
        limit = blockSizeLimit;
    int best_size = 0, best_blocks = 0;
    for (int aligned = (limit + warp - 1) / warp * warp; aligned > 0; aligned -= warp) {
        const int size = aligned < limit ? aligned : limit;
        int blocks = 0;
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
            &blocks, reinterpret_cast<const void *>(func), size,
            static_cast<size_t>(blockSizeToDynamicSMemSize(size)), flags);
        if (e != cudaSuccess)
            return e;
        if (blocks * size > best_blocks * best_size) {
            best_size = size;
            best_blocks = blocks;
        }
        if (best_blocks * best_size == sm_threads)
            break; /* the SM is full: no smaller block does better */
    }
    *minGridSize = best_blocks * sms;
    *blockSize = best_size;
    return cudaSuccess;
}
template <class UnaryFunction, class T>
static inline cudaError_t cudaOccupancyMaxPotentialBlockSizeVariableSMem(
    int *minGridSize, int *blockSize, T func, UnaryFunction blockSizeToDynamicSMemSize,
    int blockSizeLimit = 0)
{
    return cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags(minGridSize, blockSize, func,
                                                                   blockSizeToDynamicSMemSize,
                                                                   blockSizeLimit, 0);
}
template <class T>
static inline cudaError_t cudaOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize,
                                                                      T func, size_t dynamicSMemSize = 0,
                                                                      int blockSizeLimit = 0,
                                                                      unsigned int flags = 0)
{
    return cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags(
        minGridSize, blockSize, func, [dynamicSMemSize](int) { return dynamicSMemSize; }, blockSizeLimit,
        flags);
}
template <class T>
static inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, T func,
                                                             size_t dynamicSMemSize = 0,
                                                             int blockSizeLimit = 0)
{
    return cudaOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func, dynamicSMemSize,
                                                       blockSizeLimit, 0);
}
#endif /* __cplusplus */

#endif /* __CUDA_RUNTIME_API_H__ */
