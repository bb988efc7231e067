/* cdiv.h: ceiling division, the one the whole project uses to size grids.
 * cdiv(1000, 32) == 32 blocks: the last one is partial, so every kernel needs its bounds check. */
#ifndef CDIV_H
#define CDIV_H

#ifdef __CUDACC__
#define CDIV_QUALIFIERS __host__ __device__ static inline
#else
#define CDIV_QUALIFIERS static inline
#endif

CDIV_QUALIFIERS int cdiv(int a, int b) { return (a + b - 1) / b; }

#endif
