/* emu_devices_kernels.h: the kernels of the several-devices tests (tests/emu_devices.c), behind
 * C launchers that only launch, on the stream they are given (the current device's, or the
 * legacy one). */
#ifndef EMU_DEVICES_KERNELS_H
#define EMU_DEVICES_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = a * in[i] + b for i < n */
void edk_affine(const float *in, float *out, int n, float a, float b, cudaStream_t stream);
/* out[i] += in[i] for i < n, with n, the scale 1 and a host function pointer among the
 * arguments (only the pointers to objects are checked for their device) */
void edk_accumulate(const float *in, float *out, int n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
