/* emu_resources_kernels.h: kernels of known resource usage (tests/emu_resources_kernels.cu,
 * whose CPU-backend object carries the GPU compiler's resource table: EMU_RESOURCE_USAGE in
 * harness/emu/emu.mk), behind C functions for tests/emu.c.
 *
 * Each erk_* function returns the first error of what it does: a launch (cudaGetLastError),
 * the synchronisation after it, or the runtime call it makes. */
#ifndef EMU_RESOURCES_KERNELS_H
#define EMU_RESOURCES_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernels, by their address (for cudaFuncGetAttributes and the occupancy calls):
 *   ERK_BOUNDED  __launch_bounds__(256, 4) over more live values than 64 registers hold: ptxas
 *                gives it exactly 65536 / (256 x 4) = 64 registers and spills the rest to local
 *                memory, on every architecture
 *   ERK_TILE     __launch_bounds__(96), a 300-float __shared__ array: 1200 bytes of static
 *                shared memory, at most 96 threads a block
 *   ERK_LIGHT    a copy: few registers, no bounds
 *   ERK_ARCH     heavy (over 96 registers) where compiled for sm_75, light from sm_80 up, as a
 *                kernel with a code path per architecture is
 *   ERK_STATIC, ERK_ANON, ERK_TEMPLATE  a static kernel, one in an anonymous namespace and a
 *                template's instance (64 floats of shared memory), which g++ and nvcc name
 *                differently or in templates' terms */
enum erk_kernel { ERK_BOUNDED, ERK_TILE, ERK_LIGHT, ERK_ARCH, ERK_STATIC, ERK_ANON, ERK_TEMPLATE };
const void *erk_kernel(enum erk_kernel k);

/* Launches kernel k over one block of `threads` threads with `smem` bytes of dynamic shared
 * memory, synchronises, and copies the block's outputs (the first 1024 at most) to h_out (if
 * not NULL), also after a refused launch: they are 0 where no thread wrote. With
 * in[i] = i % 17, ERK_LIGHT and ERK_ARCH write out[i] = 2 in[i] + 1, ERK_TILE
 * out[i] = in[299 - i], ERK_STATIC 3, ERK_ANON 4, ERK_TEMPLATE 64. */
cudaError_t erk_launch(enum erk_kernel k, int threads, size_t smem, float *h_out);

/* cudaOccupancyMaxPotentialBlockSize(min_grid, block, kernel k, smem) (the C++ template) */
cudaError_t erk_potential_block_size(enum erk_kernel k, size_t smem, int *min_grid, int *block);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EMU_RESOURCES_KERNELS_H */
