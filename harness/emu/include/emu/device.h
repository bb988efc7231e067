/* emu/device.h: the device side of a CUDA C++ file compiled by g++ for the emu backend.
 *
 * Every CUDA thread is a fiber; the runtime (harness/emu/src/sched.cpp) runs the fibers of one
 * block on one OS thread and switches between them at __syncthreads() and at warp operations.
 * So a CUDA thread's index lives in per-OS-thread variables that the scheduler sets before it
 * resumes a fiber, and __shared__ variables are thread_local: one copy per OS thread, which runs
 * one block at a time.
 *
 * Included through cuda_runtime.h; never include it directly. */
#ifndef EMU_DEVICE_H
#define EMU_DEVICE_H

#ifndef __cplusplus
#error "emu/device.h is C++ only"
#endif

/* Standard headers first: after this point __noinline__ is a macro, which libstdc++'s own
 * __attribute__((__noinline__)) (in <memory>) would trip over if it were included later. */
#include <algorithm>
#include <atomic>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <math.h>

#include <vector_functions.h>

/* ---- qualifiers. host_defines.h (through driver_types.h) already made __host__, __device__,
 * __global__, __constant__ and __managed__ empty outside nvcc; __shared__ becomes per-OS-thread
 * storage, and an extern __shared__ array is renamed by the launch rewrite (cu2emu.awk) to the
 * runtime's dynamic shared memory. */
#undef __shared__
#define __shared__ thread_local
#undef __forceinline__
#define __forceinline__ inline __attribute__((always_inline))
#undef __noinline__
#define __noinline__ __attribute__((noinline))
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __grid_constant__
#define __grid_constant__
static constexpr int warpSize = 32; /* a variable, as in CUDA: cudaDeviceProp has a field of that name */

/* ---- the current CUDA thread, set by the scheduler before it resumes a fiber */
extern "C" {
extern __thread uint3 emu_thread_idx __attribute__((tls_model("initial-exec")));
extern __thread uint3 emu_block_idx __attribute__((tls_model("initial-exec")));
extern __thread dim3 emu_block_dim __attribute__((tls_model("initial-exec")));
extern __thread dim3 emu_grid_dim __attribute__((tls_model("initial-exec")));
}
#define threadIdx (static_cast<const uint3 &>(emu_thread_idx))
#define blockIdx (static_cast<const uint3 &>(emu_block_idx))
#define blockDim (static_cast<const dim3 &>(emu_block_dim))
#define gridDim (static_cast<const dim3 &>(emu_grid_dim))

namespace emu {

constexpr unsigned FULL_MASK = 0xffffffffu;

/* ---- the runtime's entry points (harness/emu/src/sched.cpp); file and line name the call
 * site in the reports of a deadlock or a divergent barrier. */
enum BarrierKind { BAR_SYNC, BAR_COUNT, BAR_AND, BAR_OR };
int block_barrier(BarrierKind kind, int pred, const char *file, int line);

enum WarpOp {
    WOP_SYNC,
    WOP_SHFL_IDX,
    WOP_SHFL_UP,
    WOP_SHFL_DOWN,
    WOP_SHFL_XOR,
    WOP_BALLOT,
    WOP_REDUCE_ADD,
    WOP_REDUCE_MIN,
    WOP_REDUCE_MAX,
    WOP_REDUCE_UMIN,
    WOP_REDUCE_UMAX,
    WOP_REDUCE_AND,
    WOP_REDUCE_OR,
    WOP_REDUCE_XOR,
    WOP_MATCH_ANY,
    WOP_MATCH_ALL,
    WOP_ACTIVEMASK,
};
/* The calling lane waits until every lane of `mask` that has not exited reaches a warp
 * operation; the result is then computed for all of them at once. `value` carries the operand
 * (up to 8 bytes), `arg` the source lane, delta or lane mask, `width` the shuffle width. For
 * WOP_MATCH_ALL, *pred receives whether all values matched. */
uint64_t warp_op(WarpOp op, unsigned mask, uint64_t value, int arg, int width, int *pred,
                 const char *what, const char *file, int line);
unsigned active_mask();
unsigned lane_id();
[[noreturn]] void trap(const char *file, int line);

template <class T> inline uint64_t to_bits(T v)
{
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                  "warp shuffles move values of up to 8 bytes");
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T> inline T from_bits(uint64_t b)
{
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}

/* ---- launches. The rewrite turns  k<<<g, b, smem, stream>>>(a, b)  into
 *   k ^ emu::cfg(g, b, smem, stream) ^ emu::args(a, b)
 * which keeps the kernel expression (a name, a template-id, a table entry) as it is written. */
struct Cfg {
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
};
inline Cfg cfg(dim3 grid, dim3 block, size_t smem = 0, cudaStream_t stream = 0)
{
    return Cfg{grid, block, smem, stream};
}
/* Runs body(pack) once for every CUDA thread of the launch; records a launch error for
 * cudaGetLastError. `kernel` is the kernel's address: its identity for cudaFuncSetAttribute
 * and its name in reports. A launch on a stream of the program's own is queued, to run at a
 * later synchronisation: it keeps clone(pack), a copy of the parameters made at the launch
 * as on a GPU, and frees it with drop. pointers[i] is parameter i's value when it is a pointer
 * to an object, else null (nparams of them): with several devices, one that points into
 * another device's memory needs peer access (README.md, "Several devices"). */
void launch(const void *kernel, const Cfg &cfg, void (*body)(void *), void *pack,
            void *(*clone)(const void *), void (*drop)(void *), const void *const *pointers,
            int nparams);

template <class T> inline const void *pointer_param(const T &)
{
    return nullptr;
}
template <class T> inline const void *pointer_param(T *const &p)
{
    if constexpr (std::is_object<T>::value)
        return (const void *)p;
    else
        return nullptr; /* a function pointer */
}
template <class Tuple, size_t... I>
inline void pointer_params(const Tuple &t, const void **out, std::index_sequence<I...>)
{
    ((out[I] = pointer_param(std::get<I>(t))), ...);
    (void)t;
    (void)out;
}

template <class... P> struct Pending {
    void (*kernel)(P...);
    Cfg cfg;
};
template <class... P> inline Pending<P...> operator^(void (*kernel)(P...), const Cfg &c)
{
    return Pending<P...>{kernel, c};
}
template <class... A> struct Args {
    std::tuple<A &&...> refs;
};
template <class... A> inline Args<A...> args(A &&...a)
{
    return Args<A...>{std::forward_as_tuple(std::forward<A>(a)...)};
}
template <class... P, class... A> inline void operator^(const Pending<P...> &p, Args<A...> &&a)
{
    static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
    /* the parameters, converted once as a GPU launch does; each CUDA thread gets a copy */
    struct Pack {
        void (*kernel)(P...);
        std::tuple<std::decay_t<P>...> params;
    };
    Pack pack{p.kernel, std::make_from_tuple<std::tuple<std::decay_t<P>...>>(std::move(a.refs))};
    const void *pointers[sizeof...(P) + 1] = {};
    pointer_params(pack.params, pointers, std::index_sequence_for<P...>{});
    launch(reinterpret_cast<const void *>(p.kernel), p.cfg,
           [](void *v) {
               Pack *pk = static_cast<Pack *>(v);
               std::apply(pk->kernel, pk->params);
           },
           &pack, [](const void *v) -> void * { return new Pack(*static_cast<const Pack *>(v)); },
           [](void *v) { delete static_cast<Pack *>(v); }, pointers, (int)sizeof...(P));
}

} /* namespace emu */

/* ---- barriers */
#define EMU_SITE const char *emu_file_ = __builtin_FILE(), int emu_line_ = __builtin_LINE()
inline void __syncthreads(EMU_SITE)
{
    emu::block_barrier(emu::BAR_SYNC, 0, emu_file_, emu_line_);
}
inline int __syncthreads_count(int pred, EMU_SITE)
{
    return emu::block_barrier(emu::BAR_COUNT, pred, emu_file_, emu_line_);
}
inline int __syncthreads_and(int pred, EMU_SITE)
{
    return emu::block_barrier(emu::BAR_AND, pred, emu_file_, emu_line_);
}
inline int __syncthreads_or(int pred, EMU_SITE)
{
    return emu::block_barrier(emu::BAR_OR, pred, emu_file_, emu_line_);
}

/* ---- warp operations */
inline void __syncwarp(unsigned mask = emu::FULL_MASK, EMU_SITE)
{
    emu::warp_op(emu::WOP_SYNC, mask, 0, 0, 32, nullptr, "__syncwarp", emu_file_, emu_line_);
}
template <class T> inline T __shfl_sync(unsigned mask, T v, int src, int width = 32, EMU_SITE)
{
    return emu::from_bits<T>(emu::warp_op(emu::WOP_SHFL_IDX, mask, emu::to_bits(v), src, width,
                                          nullptr, "__shfl_sync", emu_file_, emu_line_));
}
template <class T> inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32, EMU_SITE)
{
    return emu::from_bits<T>(emu::warp_op(emu::WOP_SHFL_UP, mask, emu::to_bits(v), (int)delta,
                                          width, nullptr, "__shfl_up_sync", emu_file_, emu_line_));
}
template <class T> inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32, EMU_SITE)
{
    return emu::from_bits<T>(emu::warp_op(emu::WOP_SHFL_DOWN, mask, emu::to_bits(v), (int)delta,
                                          width, nullptr, "__shfl_down_sync", emu_file_, emu_line_));
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32, EMU_SITE)
{
    return emu::from_bits<T>(emu::warp_op(emu::WOP_SHFL_XOR, mask, emu::to_bits(v), lane_mask,
                                          width, nullptr, "__shfl_xor_sync", emu_file_, emu_line_));
}
inline unsigned __ballot_sync(unsigned mask, int pred, EMU_SITE)
{
    return (unsigned)emu::warp_op(emu::WOP_BALLOT, mask, pred != 0, 0, 32, nullptr, "__ballot_sync",
                                  emu_file_, emu_line_);
}
inline int __any_sync(unsigned mask, int pred, EMU_SITE)
{
    return (unsigned)emu::warp_op(emu::WOP_BALLOT, mask, pred != 0, 0, 32, nullptr, "__any_sync",
                                  emu_file_, emu_line_) != 0;
}
inline int __all_sync(unsigned mask, int pred, EMU_SITE)
{
    /* all lanes of mask that take part have pred set: nobody voted "not pred" */
    return (unsigned)emu::warp_op(emu::WOP_BALLOT, mask, pred == 0, 0, 32, nullptr, "__all_sync",
                                  emu_file_, emu_line_) == 0;
}
inline unsigned __activemask()
{
    return emu::active_mask();
}
#define EMU_REDUCE(name, op, T)                                                                 \
    inline T name(unsigned mask, T v, EMU_SITE)                                                 \
    {                                                                                           \
        return (T)emu::warp_op(op, mask, (uint64_t)(uint32_t)v, 0, 32, nullptr, #name, emu_file_, \
                               emu_line_);                                                      \
    }
EMU_REDUCE(__reduce_add_sync, emu::WOP_REDUCE_ADD, unsigned)
EMU_REDUCE(__reduce_add_sync, emu::WOP_REDUCE_ADD, int)
EMU_REDUCE(__reduce_min_sync, emu::WOP_REDUCE_UMIN, unsigned)
EMU_REDUCE(__reduce_min_sync, emu::WOP_REDUCE_MIN, int)
EMU_REDUCE(__reduce_max_sync, emu::WOP_REDUCE_UMAX, unsigned)
EMU_REDUCE(__reduce_max_sync, emu::WOP_REDUCE_MAX, int)
EMU_REDUCE(__reduce_and_sync, emu::WOP_REDUCE_AND, unsigned)
EMU_REDUCE(__reduce_or_sync, emu::WOP_REDUCE_OR, unsigned)
EMU_REDUCE(__reduce_xor_sync, emu::WOP_REDUCE_XOR, unsigned)
#undef EMU_REDUCE
template <class T> inline unsigned __match_any_sync(unsigned mask, T v, EMU_SITE)
{
    return (unsigned)emu::warp_op(emu::WOP_MATCH_ANY, mask, emu::to_bits(v), 0, 32, nullptr,
                                  "__match_any_sync", emu_file_, emu_line_);
}
template <class T> inline unsigned __match_all_sync(unsigned mask, T v, int *pred, EMU_SITE)
{
    return (unsigned)emu::warp_op(emu::WOP_MATCH_ALL, mask, emu::to_bits(v), 0, 32, pred,
                                  "__match_all_sync", emu_file_, emu_line_);
}

/* ---- memory order. Fibers of a block share one OS thread; blocks on other OS threads
 * (EMU_THREADS) see each other's writes through these fences and the atomics below. */
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_signal_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __nanosleep(unsigned) {}
inline long long clock64() { return (long long)__builtin_ia32_rdtsc(); }
inline void __trap(EMU_SITE) { emu::trap(emu_file_, emu_line_); }
inline void __brkpt() {}

/* ---- cache-hinted loads and stores: plain accesses here */
#define EMU_LOAD(name) template <class T> inline T name(const T *p) { return *p; }
EMU_LOAD(__ldg)
EMU_LOAD(__ldca)
EMU_LOAD(__ldcg)
EMU_LOAD(__ldcs)
EMU_LOAD(__ldlu)
EMU_LOAD(__ldcv)
#undef EMU_LOAD
#define EMU_STORE(name) template <class T> inline void name(T *p, T v) { *p = v; }
EMU_STORE(__stwb)
EMU_STORE(__stcg)
EMU_STORE(__stcs)
EMU_STORE(__stwt)
#undef EMU_STORE

/* ---- atomics: GCC builtins, relaxed like CUDA's; real atomics because blocks may run on
 * several OS threads (EMU_THREADS). The overloads are CUDA's, so that atomicAdd(&u, 1) converts
 * as it does under nvcc. */
namespace emu {
template <class T, class F> inline T atomic_update(T *p, F f)
{
    T old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    T next = f(old);
    while (!__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        next = f(old);
    return old;
}
} /* namespace emu */
#define EMU_ATOMIC_INT(T)                                                                        \
    inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }          \
    inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }        \
    inline T atomicMin(T *p, T v) { return emu::atomic_update(p, [v](T o) { return v < o ? v : o; }); } \
    inline T atomicMax(T *p, T v) { return emu::atomic_update(p, [v](T o) { return v > o ? v : o; }); } \
    inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }          \
    inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }            \
    inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }          \
    inline T atomicCAS(T *p, T cmp, T v)                                                          \
    {                                                                                             \
        __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);       \
        return cmp;                                                                               \
    }
EMU_ATOMIC_INT(int)
EMU_ATOMIC_INT(unsigned int)
EMU_ATOMIC_INT(unsigned long long)
#undef EMU_ATOMIC_INT
inline int atomicSub(int *p, int v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicSub(unsigned *p, unsigned v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
inline long long atomicMin(long long *p, long long v)
{
    return emu::atomic_update(p, [v](long long o) { return v < o ? v : o; });
}
inline long long atomicMax(long long *p, long long v)
{
    return emu::atomic_update(p, [v](long long o) { return v > o ? v : o; });
}
inline unsigned short atomicCAS(unsigned short *p, unsigned short cmp, unsigned short v)
{
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp;
}
inline unsigned atomicInc(unsigned *p, unsigned limit)
{
    return emu::atomic_update(p, [limit](unsigned o) { return o >= limit ? 0u : o + 1; });
}
inline unsigned atomicDec(unsigned *p, unsigned limit)
{
    return emu::atomic_update(p, [limit](unsigned o) { return (o == 0 || o > limit) ? limit : o - 1; });
}
inline float atomicAdd(float *p, float v) { return emu::atomic_update(p, [v](float o) { return o + v; }); }
inline double atomicAdd(double *p, double v) { return emu::atomic_update(p, [v](double o) { return o + v; }); }
inline float atomicExch(float *p, float v)
{
    float old;
    __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
    return old;
}
#define EMU_ATOMIC_SCOPES(name)                                                                  \
    template <class... A> inline auto name##_block(A... a)->decltype(name(a...)) { return name(a...); } \
    template <class... A> inline auto name##_system(A... a)->decltype(name(a...)) { return name(a...); }
EMU_ATOMIC_SCOPES(atomicAdd)
EMU_ATOMIC_SCOPES(atomicSub)
EMU_ATOMIC_SCOPES(atomicExch)
EMU_ATOMIC_SCOPES(atomicMin)
EMU_ATOMIC_SCOPES(atomicMax)
EMU_ATOMIC_SCOPES(atomicInc)
EMU_ATOMIC_SCOPES(atomicDec)
EMU_ATOMIC_SCOPES(atomicCAS)
EMU_ATOMIC_SCOPES(atomicAnd)
EMU_ATOMIC_SCOPES(atomicOr)
EMU_ATOMIC_SCOPES(atomicXor)
#undef EMU_ATOMIC_SCOPES

/* ---- integer intrinsics */
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x)
{
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x)
{
    return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s)
{
    const uint64_t v = ((uint64_t)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i)
        r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s)
{
    return (unsigned)(((((uint64_t)hi << 32) | lo) << (s & 31)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s)
{
    return (unsigned)(((((uint64_t)hi << 32) | lo) << (s > 32 ? 32 : s)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s)
{
    return (unsigned)((((uint64_t)hi << 32) | lo) >> (s & 31));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s)
{
    return (unsigned)((((uint64_t)hi << 32) | lo) >> (s > 32 ? 32 : s));
}
inline int __mul24(int a, int b) { return (int)(((int64_t)(a << 8) >> 8) * ((int64_t)(b << 8) >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline int __mulhi(int a, int b) { return (int)(((int64_t)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((uint64_t)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b)
{
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline unsigned __sad(int a, int b, unsigned c) { return c + (unsigned)(a > b ? a - b : b - a); }
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return c + (a > b ? a - b : b - a); }

/* ---- min and max as CUDA overloads them (plain functions, so mixed int/unsigned and
 * float/double calls resolve as under nvcc) */
#define EMU_MINMAX(R, A, B)                                                                      \
    inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }                                 \
    inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
EMU_MINMAX(int, int, int)
EMU_MINMAX(unsigned, unsigned, unsigned)
EMU_MINMAX(unsigned, int, unsigned)
EMU_MINMAX(unsigned, unsigned, int)
EMU_MINMAX(long, long, long)
EMU_MINMAX(unsigned long, unsigned long, unsigned long)
EMU_MINMAX(long long, long long, long long)
EMU_MINMAX(unsigned long long, unsigned long long, unsigned long long)
EMU_MINMAX(unsigned long long, long long, unsigned long long)
EMU_MINMAX(unsigned long long, unsigned long long, long long)
#undef EMU_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
inline double max(double a, float b) { return fmax(a, b); }
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

/* ---- float intrinsics: the fast-math forms compute the accurate result here */
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float *s, float *c) { sincosf(x, s, c); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rd(float x) { return (int)floorf(x); }
inline int __float2int_ru(float x) { return (int)ceilf(x); }
inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline float __double2float_rn(double x) { return (float)x; }
inline int __double2int_rn(double x) { return (int)nearbyint(x); }
inline int __float_as_int(float x) { return emu::from_bits<int>(emu::to_bits(x)); }
inline unsigned __float_as_uint(float x) { return emu::from_bits<unsigned>(emu::to_bits(x)); }
inline float __int_as_float(int x) { return emu::from_bits<float>(emu::to_bits(x)); }
inline float __uint_as_float(unsigned x) { return emu::from_bits<float>(emu::to_bits(x)); }
inline long long __double_as_longlong(double x) { return emu::from_bits<long long>(emu::to_bits(x)); }
inline double __longlong_as_double(long long x) { return emu::from_bits<double>(emu::to_bits(x)); }
inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
inline int __double2loint(double x) { return (int)__double_as_longlong(x); }
inline double __hiloint2double(int hi, int lo)
{
    return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}

#endif /* EMU_DEVICE_H */
