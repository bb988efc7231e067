/* emu_profile_kernels.h: planted kernels whose profile is known (tests/emu_profile.c), built
 * with the emu's instrumented build. Each launcher launches and returns; pointers are device
 * pointers. */
#ifndef EMU_PROFILE_KERNELS_H
#define EMU_PROFILE_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = in[i], 256-thread blocks, n a multiple of 32: 4 sectors per fp32 warp request */
void prof_copy(const float *in, float *out, int n);
/* the same copy in float4s: out4[i] = in4[i], n floats (a multiple of 4 * 32), 16-byte accesses:
 * 16 sectors per warp request, which is coalesced for that width */
void prof_copy4(const float *in, float *out, int n);
/* out[i] = in[i * 32]: every lane in its own sector, 32 per request */
void prof_copy_strided(const float *in, float *out, int n);
/* one 32 x 32 block: tile[ty][tx] = in, then out = tile[tx][ty] (a column: 32 wavefronts, or
 * 1 with padded = 1, the tile 33 floats wide) */
void prof_shared_column(const float *in, float *out, int padded);
/* 256 threads; lanes of odd index take one path, even ones another (divergent), or (by_warp)
 * the odd warps one path and the even ones another (not divergent) */
void prof_branch(const float *in, float *out, int n, int by_warp);
/* 64 threads read in[threadIdx.x - 1]: thread 0 reads 4 bytes before the allocation, which
 * the plain emu build does not catch (the padding before a buffer is readable) */
void prof_read_before(const float *in, float *out);
/* 32 threads write a 32-float __shared__ array at [threadIdx.x * stride] */
void prof_shared_overrun(float *out, int stride);
/* one warp: lane l loads `bytes` bytes (4, 8 or 16: a float, float2 or float4) at element
 * index[l] of that width from a 16-byte aligned __shared__ array of SHARED_PATTERN_BYTES
 * (tests/shared_patterns.h); index: 32 ints in device memory */
void prof_shared_pattern(const int *index, float *out, int bytes);

#ifdef __cplusplus
}
#endif

#endif
