/* mma.h for the emu backend: the WMMA subset (nvcuda::wmma) that the tensor-core chapters use.
 *
 *   fragment<matrix_a | matrix_b | accumulator, M, N, K, T, row_major | col_major>
 *   fill_fragment, load_matrix_sync, mma_sync, store_matrix_sync (mem_row_major/mem_col_major)
 *
 * Any M, N, K (m16n16k16, m32n8k16, m8n32k16 on a GPU) with __nv_bfloat16 or __half inputs and
 * float (or __half) accumulators. tf32, the integer and sub-byte types are not here.
 *
 * The model: on a GPU a fragment is spread over the 32 lanes of a warp (each lane holds
 * num_elements of the tile, in an order NVIDIA does not document). Here every lane holds the
 * WHOLE tile, in row-major order: x[r * cols + c] is element (r, c), and num_elements is
 * rows * cols (256 for a 16x16 fragment; a GPU's lane holds 8 of a bf16 16x16 matrix_a and 8 of
 * a float accumulator). Code that treats x[] element-wise (scale every element, apply a ReLU)
 * works the same in both models; code that assumes a GPU's lane-to-element mapping does not,
 * and should not be written anyway.
 *
 * Every lane loads the whole tile, computes the whole product (in float, products exact for
 * bf16 and half inputs, the K terms added in order) and stores the whole tile: 32 times the
 * work, no lane exchange, the same result in every lane. Each operation is warp-collective, as
 * on a GPU: it starts with a __syncwarp(), so a warp whose lanes do not all call it is reported
 * (as a deadlock naming the line) instead of silently passing. Misuse a GPU leaves undefined is
 * a kernel fault here: a pointer that is not 256-bit (32-byte) aligned, an ldm that is not a
 * multiple of 16 bytes. */
#ifndef EMU_MMA_H
#define EMU_MMA_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};

enum layout_t { mem_row_major, mem_col_major };

namespace emu_detail {

/* rows x cols of each use */
template <class Use, int M, int N, int K> struct dims;
template <int M, int N, int K> struct dims<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K> struct dims<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K> struct dims<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };

inline float to_f(float v) { return v; }
inline float to_f(__half v) { return __half2float(v); }
inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> inline T from_f(float v);
template <> inline float from_f<float>(float v) { return v; }
template <> inline __half from_f<__half>(float v) { return __float2half(v); }
template <> inline __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

/* What a GPU requires of load_matrix_sync and store_matrix_sync, checked. */
template <class T>
inline void check_ptr(const void *p, unsigned ldm, const char *op, const char *file, int line)
{
    if ((reinterpret_cast<uintptr_t>(p) & 31) != 0) {
        std::printf("emu: %s at %s:%d: pointer %p is not 256-bit (32-byte) aligned\n", op, file,
                    line, p);
        __trap(file, line);
    }
    if ((ldm * sizeof(T)) % 16 != 0) {
        std::printf("emu: %s at %s:%d: ldm %u is not a multiple of 16 bytes (%d elements)\n", op,
                    file, line, ldm, (int)(16 / sizeof(T)));
        __trap(file, line);
    }
}

} /* namespace emu_detail */

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
public:
    static constexpr int rows = emu_detail::dims<Use, M, N, K>::rows;
    static constexpr int cols = emu_detail::dims<Use, M, N, K>::cols;
    static constexpr int num_elements = rows * cols; /* the whole tile: see the top */
    typedef T element_type;
    typedef T storage_element_type;
    T x[num_elements];
};

template <class Use, int M, int N, int K, class T, class L>
inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, const T &v)
{
    for (int i = 0; i < f.num_elements; i++)
        f.x[i] = v;
}
/* fill_fragment(acc, 0.0f) on a half accumulator, and the like */
template <class Use, int M, int N, int K, class T, class L, class V,
          class = typename std::enable_if<!std::is_same<T, V>::value>::type>
inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, const V &v)
{
    fill_fragment(f, emu_detail::from_f<T>(emu_detail::to_f(v)));
}

/* matrix_a and matrix_b: the layout is the fragment's own. */
template <class Use, int M, int N, int K, class T, class L>
inline void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const T *p, unsigned ldm,
                             EMU_SITE)
{
    static_assert(std::is_same<L, row_major>::value || std::is_same<L, col_major>::value,
                  "load_matrix_sync without a layout is for accumulators only");
    __syncwarp(emu::FULL_MASK, emu_file_, emu_line_);
    emu_detail::check_ptr<T>(p, ldm, "load_matrix_sync", emu_file_, emu_line_);
    typedef fragment<Use, M, N, K, T, L> F;
    const bool row = std::is_same<L, row_major>::value;
    for (int r = 0; r < F::rows; r++)
        for (int c = 0; c < F::cols; c++)
            f.x[r * F::cols + c] = row ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
}

/* accumulators: the layout is an argument. */
template <int M, int N, int K, class T>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const T *p, unsigned ldm,
                             layout_t layout, EMU_SITE)
{
    __syncwarp(emu::FULL_MASK, emu_file_, emu_line_);
    emu_detail::check_ptr<T>(p, ldm, "load_matrix_sync", emu_file_, emu_line_);
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++)
            f.x[r * N + c] = layout == mem_row_major ? p[(size_t)r * ldm + c]
                                                     : p[(size_t)c * ldm + r];
}

template <int M, int N, int K, class T>
inline void store_matrix_sync(T *p, const fragment<accumulator, M, N, K, T> &f, unsigned ldm,
                              layout_t layout, EMU_SITE)
{
    __syncwarp(emu::FULL_MASK, emu_file_, emu_line_);
    emu_detail::check_ptr<T>(p, ldm, "store_matrix_sync", emu_file_, emu_line_);
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            T *q = layout == mem_row_major ? &p[(size_t)r * ldm + c] : &p[(size_t)c * ldm + r];
            *q = f.x[r * N + c];
        }
}

/* d = a b + c, in float: the products of two bf16 or half values are exact in float. d may be
 * the same fragment as c. */
template <int M, int N, int K, class Tab, class LA, class LB, class Tc, class Td>
inline void mma_sync(fragment<accumulator, M, N, K, Td> &d,
                     const fragment<matrix_a, M, N, K, Tab, LA> &a,
                     const fragment<matrix_b, M, N, K, Tab, LB> &b,
                     const fragment<accumulator, M, N, K, Tc> &c, bool satf = false, EMU_SITE)
{
    (void)satf;
    __syncwarp(emu::FULL_MASK, emu_file_, emu_line_);
    float fa[M * K], fb[K * N], out[M * N];
    for (int i = 0; i < M * K; i++)
        fa[i] = emu_detail::to_f(a.x[i]);
    for (int i = 0; i < K * N; i++)
        fb[i] = emu_detail::to_f(b.x[i]);
    for (int i = 0; i < M * N; i++)
        out[i] = emu_detail::to_f(c.x[i]);
    for (int r = 0; r < M; r++)
        for (int kk = 0; kk < K; kk++) {
            const float av = fa[r * K + kk];
            for (int col = 0; col < N; col++)
                out[r * N + col] += av * fb[kk * N + col];
        }
    for (int i = 0; i < M * N; i++)
        d.x[i] = emu_detail::from_f<Td>(out[i]);
}

} /* namespace wmma */
} /* namespace nvcuda */

#endif
