/* green.h: chapter 09, given. The driver API's green-context calls, for step 4's .cu files.
 *
 * Green contexts are a driver API (cuda.h; the runtime has no calls for them in CUDA 13.0). A
 * program linked with the runtime alone reaches the driver's functions through the runtime:
 * cudaGetDriverEntryPointByVersion returns the address of a driver function by name, for the ABI
 * of the CUDA version asked, from the driver the runtime itself loaded. green_driver() does that
 * once for every call step 4 needs, so that
 *
 *     const struct green_driver *cu = green_driver();
 *     CU_CHECK(cu->DeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
 *
 * is cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM) with its result checked. Each
 * field is the driver function of the same name without its "cu" prefix; cuda.h documents
 * each, in its section "Green Contexts". */
#ifndef GREEN_H
#define GREEN_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

struct green_driver {
    CUresult (*GetErrorString)(CUresult error, const char **text);
    CUresult (*DeviceGet)(CUdevice *device, int ordinal);
    /* the SMs of a device, a context or a green context, as a resource */
    CUresult (*DeviceGetDevResource)(CUdevice device, CUdevResource *resource,
                                     CUdevResourceType type);
    CUresult (*CtxGetDevResource)(CUcontext ctx, CUdevResource *resource, CUdevResourceType type);
    /* a resource of SMs cut into groups of at least min_count, the rest into *remaining */
    CUresult (*DevSmResourceSplitByCount)(CUdevResource *result, unsigned *groups,
                                          const CUdevResource *input, CUdevResource *remaining,
                                          unsigned flags, unsigned min_count);
    CUresult (*DevResourceGenerateDesc)(CUdevResourceDesc *desc, CUdevResource *resources,
                                        unsigned n);
    CUresult (*GreenCtxCreate)(CUgreenCtx *green, CUdevResourceDesc desc, CUdevice device,
                               unsigned flags);
    CUresult (*GreenCtxDestroy)(CUgreenCtx green);
    CUresult (*CtxFromGreenCtx)(CUcontext *ctx, CUgreenCtx green);
    CUresult (*GreenCtxStreamCreate)(CUstream *stream, CUgreenCtx green, unsigned flags,
                                     int priority);
    CUresult (*StreamDestroy)(CUstream stream);
    CUresult (*CtxPushCurrent)(CUcontext ctx);
    CUresult (*CtxPopCurrent)(CUcontext *ctx);
    CUresult (*CtxGetCurrent)(CUcontext *ctx);
};

/* The table, resolved on first use; NULL (the reason printed once) when the driver lacks a
 * call, as a driver older than CUDA 12.5 does. */
#ifdef __cplusplus
extern "C" {
#endif
const struct green_driver *green_driver(void);
#ifdef __cplusplus
}
#endif

/* A driver call, checked: on failure, the call, where, and the driver's words for the error. */
#define CU_CHECK(call)                                                                           \
    do {                                                                                         \
        CUresult cu_err_ = (call);                                                               \
        if (cu_err_ != CUDA_SUCCESS) {                                                           \
            const char *cu_text_ = "an unknown error";                                          \
            green_driver()->GetErrorString(cu_err_, &cu_text_);                                 \
            fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call, cu_text_, \
                    (int)cu_err_);                                                               \
            exit(EXIT_FAILURE);                                                                  \
        }                                                                                        \
    } while (0)

#endif
