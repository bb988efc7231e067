// mxfp4_reads.cu: plain reads of step 4's bytes (read_bytes.cuh, the probe's own read), built
// as variants of the step for tests/probes/mxfp4_gemv_variants.sh (the step's launcher's
// signature, its y left alone), on a grid of 8 CTAs of 256 threads an SM. Two choices, as -D
// flags:
//   READ_U   the loads of the codes a thread has in flight (1, as the probe's own read, or more);
//   READ_EF  1: the codes' loads carry an L2 evict-first policy; 0: plain loads (__ldg).
// Example: tests/probes/mxfp4_gemv_variants.sh reference: \
//            read_ef:-DREAD_EF=1@tests/probes/mxfp4_reads.cu
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#include "quant.h"
#include "read_bytes.cuh"

#ifndef READ_U
#define READ_U 1
#endif
#ifndef READ_EF
#define READ_EF 0
#endif

void gemm_mxfp4_bf16(const uint16_t *d_x, const uint8_t *d_w, const uint8_t *d_ws, float *d_y,
                     int m, int k, int n)
{
    (void)d_x, (void)m;
    read_bytes_launch<READ_U, READ_EF != 0>(d_w, (size_t)n * k / 2, d_ws, (size_t)n * k / MX_BLOCK,
                                            reinterpret_cast<unsigned *>(d_y));
}
