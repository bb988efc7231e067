/* cooperative_groups.h for the emu backend: the subset the workbook uses, on top of the
 * emulator's barriers and warp operations.
 *
 *   this_thread_block(): sync(), thread_rank(), size(), num_threads(), group_index(),
 *     thread_index(), dim_threads(), group_dim()
 *   tiled_partition<N>(block) for N = 1, 2, 4, ..., 32: sync(), thread_rank(), size(),
 *     num_threads(), meta_group_rank(), meta_group_size(), shfl(), shfl_up(), shfl_down(),
 *     shfl_xor(), ballot(), any(), all()
 *   tiled_partition(block, n) with the same n: sync(), thread_rank(), size(), num_threads()
 *   cooperative_groups::sync(group); reduce() with plus, less, greater, bit_and, bit_or,
 *     bit_xor (cooperative_groups/reduce.h); memcpy_async() and wait() as synchronous copies
 *     (cooperative_groups/memcpy_async.h)
 *
 * Grid groups (this_grid().sync()) and clusters need a cooperative launch, which the emulator
 * does not offer. */
#ifndef _COOPERATIVE_GROUPS_H_
#define _COOPERATIVE_GROUPS_H_ /* the toolkit's guard */
#define EMU_COOPERATIVE_GROUPS_H

#include <cuda_runtime.h>

namespace cooperative_groups {

class thread_block {
public:
    void sync(EMU_SITE) const { __syncthreads(emu_file_, emu_line_); }
    static unsigned thread_rank()
    {
        return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    }
    static unsigned size() { return blockDim.x * blockDim.y * blockDim.z; }
    static unsigned num_threads() { return size(); }
    static dim3 group_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    static dim3 thread_index() { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    static dim3 dim_threads() { return blockDim; }
    static dim3 group_dim() { return blockDim; }
};

inline thread_block this_thread_block() { return thread_block(); }

namespace emu_detail {
/* the lanes of the calling thread's tile of `n` lanes, as a warp mask */
inline unsigned tile_mask(unsigned n)
{
    if (n >= 32)
        return 0xffffffffu;
    return ((1u << n) - 1) << (emu::lane_id() / n * n);
}
} /* namespace emu_detail */

/* a tile whose size is known only at run time: tiled_partition(block, n) */
class thread_group {
public:
    explicit thread_group(unsigned n) : n_(n) {}
    void sync(EMU_SITE) const { __syncwarp(emu_detail::tile_mask(n_), emu_file_, emu_line_); }
    unsigned thread_rank() const { return thread_block::thread_rank() % n_; }
    unsigned size() const { return n_; }
    unsigned num_threads() const { return n_; }

private:
    unsigned n_;
};

template <unsigned N> class thread_block_tile {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0,
                  "tiled_partition<N>: N must be a power of two up to 32");

public:
    void sync(EMU_SITE) const { __syncwarp(mask(), emu_file_, emu_line_); }
    unsigned thread_rank() const { return thread_block::thread_rank() % N; }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    unsigned meta_group_rank() const { return thread_block::thread_rank() / N; }
    unsigned meta_group_size() const { return (thread_block::size() + N - 1) / N; }
    template <class T> T shfl(T v, int src, EMU_SITE) const
    {
        return __shfl_sync(mask(), v, src, (int)N, emu_file_, emu_line_);
    }
    template <class T> T shfl_up(T v, unsigned delta, EMU_SITE) const
    {
        return __shfl_up_sync(mask(), v, delta, (int)N, emu_file_, emu_line_);
    }
    template <class T> T shfl_down(T v, unsigned delta, EMU_SITE) const
    {
        return __shfl_down_sync(mask(), v, delta, (int)N, emu_file_, emu_line_);
    }
    template <class T> T shfl_xor(T v, int lane_mask, EMU_SITE) const
    {
        return __shfl_xor_sync(mask(), v, lane_mask, (int)N, emu_file_, emu_line_);
    }
    /* bit i is the tile's thread of rank i */
    unsigned ballot(int pred, EMU_SITE) const
    {
        return __ballot_sync(mask(), pred, emu_file_, emu_line_) >> (emu::lane_id() / N * N);
    }
    int any(int pred, EMU_SITE) const { return __any_sync(mask(), pred, emu_file_, emu_line_); }
    int all(int pred, EMU_SITE) const { return __all_sync(mask(), pred, emu_file_, emu_line_); }

private:
    static unsigned mask() { return emu_detail::tile_mask(N); }
};

template <unsigned N, class Parent> inline thread_block_tile<N> tiled_partition(const Parent &)
{
    return thread_block_tile<N>();
}

inline thread_group tiled_partition(const thread_block &, unsigned n)
{
    if (n == 0 || n > 32 || (n & (n - 1)) != 0) {
        std::fprintf(stderr, "emu: tiled_partition(block, %u): the emulator supports tiles of "
                             "1 to 32 threads, a power of two\n", n);
        std::abort();
    }
    return thread_group(n);
}

template <class Group> inline void sync(const Group &g) { g.sync(); }

} /* namespace cooperative_groups */

#endif /* _COOPERATIVE_GROUPS_H_ */
