/* cooperative_groups/reduce.h for the emu backend: reduce() over a thread_block_tile, by a
 * butterfly of shfl_xor, so every thread of the tile gets the result as in CUDA. */
#ifndef EMU_COOPERATIVE_GROUPS_REDUCE_H
#define EMU_COOPERATIVE_GROUPS_REDUCE_H

#include <cooperative_groups.h>

namespace cooperative_groups {

template <class T> struct plus {
    T operator()(T a, T b) const { return a + b; }
};
template <class T> struct less {
    T operator()(T a, T b) const { return b < a ? b : a; }
};
template <class T> struct greater {
    T operator()(T a, T b) const { return a < b ? b : a; }
};
template <class T> struct bit_and {
    T operator()(T a, T b) const { return a & b; }
};
template <class T> struct bit_or {
    T operator()(T a, T b) const { return a | b; }
};
template <class T> struct bit_xor {
    T operator()(T a, T b) const { return a ^ b; }
};

template <unsigned N, class T, class Op>
inline T reduce(const thread_block_tile<N> &tile, T value, Op op)
{
    for (unsigned offset = N / 2; offset > 0; offset /= 2)
        value = op(value, tile.shfl_xor(value, (int)offset));
    return value;
}

} /* namespace cooperative_groups */

#endif
