/* emu_streams_kernels.h: the kernels of the stream scheduler's tests (tests/emu_streams.c),
 * behind C launchers that only launch, on the stream they are given. */
#ifndef EMU_STREAMS_KERNELS_H
#define EMU_STREAMS_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = a * in[i] + b for i < n */
void esk_affine(const float *in, float *out, int n, float a, float b, cudaStream_t stream);
/* out[i] += s * in[i] for i < n */
void esk_add(const float *in, float *out, int n, float s, cudaStream_t stream);
/* one thread writes d[n + 1024]: an illegal address; returns the line of the write */
int esk_out_of_bounds(float *d, int n, cudaStream_t stream);
/* a launch of 2048 threads a block: refused */
void esk_bad_config(float *d, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
