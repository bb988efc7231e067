/* cuda_pipeline.h for the emu backend: the pipeline primitives, with copies done at once.
 *
 * __pipeline_memcpy_async(dst, src, size, zfill) copies size - zfill bytes and zero-fills the
 * remaining zfill, as the asynchronous copy would, but before it returns; __pipeline_commit()
 * and __pipeline_wait_prior() have nothing left to wait for. So results are right, and a
 * missing __pipeline_wait_prior() is not caught here (it is on a GPU, by wrong results). */
#ifndef _CUDA_PIPELINE_H_
#define _CUDA_PIPELINE_H_ /* the toolkit's guard */
#define EMU_CUDA_PIPELINE_H

#include <cuda_runtime.h>

inline void __pipeline_memcpy_async(void *dst_shared, const void *src_global,
                                    size_t size_and_align, size_t zfill = 0)
{
    if (zfill > size_and_align)
        zfill = size_and_align;
    std::memcpy(dst_shared, src_global, size_and_align - zfill);
    std::memset((char *)dst_shared + (size_and_align - zfill), 0, zfill);
}
inline void __pipeline_commit() {}
inline void __pipeline_wait_prior(size_t prior) { (void)prior; }

#endif
