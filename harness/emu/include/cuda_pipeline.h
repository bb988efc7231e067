/* cuda_pipeline.h for the emu backend: the pipeline primitives, asynchronous as on a GPU.
 *
 * __pipeline_memcpy_async(dst, src, size, zfill) starts a copy of size - zfill bytes from src
 * to dst, the remaining zfill bytes of dst to be zeros, and returns before the copy lands: dst
 * holds the poison (0xff bytes: a NaN as a float or a bf16) until it does. The copy joins the
 * calling thread's open group; __pipeline_commit() closes that group; __pipeline_wait_prior(n)
 * lands every copy of the thread's committed groups but the newest n (copies issued after the
 * last commit stay in flight, as cp.async.wait_group leaves them). A copy never waited for
 * lands when its thread exits. So a kernel that reads a stage before waiting for it, or that
 * waits for too few groups, reads NaN here, as it would read stale or half-written data on a
 * GPU. Waits are per thread: another thread's copies are visible only after that thread has
 * waited for them and a barrier orders the two.
 *
 * The source is read when the copy is issued (so the instrumented build checks its bounds
 * there), and the destination written with the poison then; the runtime (src/pipeline.cpp)
 * keeps the bytes until the wait. size must be 4, 8 or 16, as for cp.async. */
#ifndef _CUDA_PIPELINE_H_
#define _CUDA_PIPELINE_H_ /* the toolkit's guard */
#define EMU_CUDA_PIPELINE_H

#include <cuda_runtime.h>

namespace emu {
/* queue a copy for the running CUDA thread: at landing, dst gets `bytes` bytes of data (up to
 * 16), then zeros up to `size` bytes */
void pipeline_issue(void *dst, const void *data, size_t bytes, size_t size);
void pipeline_commit();
void pipeline_wait_prior(size_t prior);
[[noreturn]] void pipeline_bad_size(size_t size, const char *file, int line);
} /* namespace emu */

inline void __pipeline_memcpy_async(void *dst_shared, const void *src_global,
                                    size_t size_and_align, size_t zfill = 0, EMU_SITE)
{
    if (size_and_align != 4 && size_and_align != 8 && size_and_align != 16)
        emu::pipeline_bad_size(size_and_align, emu_file_, emu_line_);
    if (zfill > size_and_align)
        zfill = size_and_align;
    unsigned char data[16];
    std::memcpy(data, src_global, size_and_align - zfill);
    std::memset(dst_shared, 0xff, size_and_align); /* the poison, until the copy lands */
    emu::pipeline_issue(dst_shared, data, size_and_align - zfill, size_and_align);
}
inline void __pipeline_commit() { emu::pipeline_commit(); }
inline void __pipeline_wait_prior(size_t prior) { emu::pipeline_wait_prior(prior); }

#endif
