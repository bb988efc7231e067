/* cuda_runtime.h for the emu backend. nvcc includes the toolkit's header of this name in every
 * .cu file; the emu build force-includes this one (g++ -include cuda_runtime.h), so a kernel file
 * that includes only cuda_check.h still sees the device side.
 *
 * In C (harness code) it is the runtime API only. In C++ it adds what a kernel file needs: the
 * CUDA qualifiers, threadIdx and friends, the device intrinsics and the launch machinery
 * (emu/device.h). */
#ifndef __CUDA_RUNTIME_H__
#define __CUDA_RUNTIME_H__
#define EMU_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus
#include "emu/device.h"
#endif

#endif /* __CUDA_RUNTIME_H__ */
