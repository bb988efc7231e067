/* cooperative_groups/memcpy_async.h for the emu backend: memcpy_async() copies at once, each
 * thread of the group its share of the bytes; wait() is the group's barrier, after which every
 * thread sees the whole copy. A missing wait() is therefore not caught here. */
#ifndef EMU_COOPERATIVE_GROUPS_MEMCPY_ASYNC_H
#define EMU_COOPERATIVE_GROUPS_MEMCPY_ASYNC_H

#include <cooperative_groups.h>

namespace cooperative_groups {

template <class Group> inline void memcpy_async(const Group &group, void *dst, const void *src, size_t bytes)
{
    const size_t n = group.size(), r = group.thread_rank();
    const size_t chunk = (bytes + n - 1) / n, begin = std::min(bytes, r * chunk),
                 end = std::min(bytes, begin + chunk);
    std::memcpy((char *)dst + begin, (const char *)src + begin, end - begin);
}

template <class Group> inline void wait(const Group &group) { group.sync(); }
template <class Group> inline void wait_prior(const Group &group) { group.sync(); }

} /* namespace cooperative_groups */

#endif
