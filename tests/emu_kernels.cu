/* emu_kernels.cu: kernels for the emulator's own tests (tests/emu.c). Pure CUDA: it builds
 * with nvcc too, and the emu build compiles it exactly as it compiles a chapter's file. */
#include <assert.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "emu_kernels.h"

namespace cg = cooperative_groups;

#define FULL 0xffffffffu

/* a launch's own error, else the synchronisation's */
static cudaError_t finish(void)
{
    cudaError_t e = cudaGetLastError();
    return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

template <class T> static T *device_alloc(size_t n)
{
    T *d = nullptr;
    cudaMalloc(&d, n * sizeof(T));
    cudaMemset(d, 0, n * sizeof(T));
    return d;
}

template <class T> static cudaError_t fetch(T *h, T *d, size_t n, cudaError_t e)
{
    if (e == cudaSuccess)
        e = cudaMemcpy(h, d, n * sizeof(T), cudaMemcpyDeviceToHost);
    cudaFree(d);
    return e;
}

/* ---------------------------------------------------------------- barriers */

__global__ void rotate_kernel(int *out)
{
    __shared__ int s[1024];
    int t = threadIdx.x;
    s[t] = t;
    __syncthreads();
    out[t] = s[(t + 1) % blockDim.x];
}

cudaError_t ek_barrier_rotate(int n, int *out)
{
    int *d = device_alloc<int>(n);
    rotate_kernel<<<1, n>>>(d);
    return fetch(out, d, n, finish());
}

__global__ void votes_kernel(int *out, int modulo)
{
    int pred = threadIdx.x % modulo == 0;
    int count = __syncthreads_count(pred);
    int all = __syncthreads_and(pred);
    int any = __syncthreads_or(pred);
    if (threadIdx.x == blockDim.x - 1) {
        out[0] = count;
        out[1] = all;
        out[2] = any;
    }
}

cudaError_t ek_barrier_votes(int n, int modulo, int *count, int *all, int *any)
{
    int *d = device_alloc<int>(3), h[3] = {0, 0, 0};
    votes_kernel<<<1, n>>>(d, modulo);
    cudaError_t e = fetch(h, d, 3, finish());
    *count = h[0];
    *all = h[1];
    *any = h[2];
    return e;
}

__global__ void early_exit_kernel(int *out, int live)
{
    __shared__ int s[1024];
    int t = threadIdx.x;
    if (t >= live)
        return; /* counts as arrived at the barriers below, as on sm_70+ */
    s[t] = t * 2;
    __syncthreads();
    out[t] = s[(t + 1) % live];
}

cudaError_t ek_early_exit(int n, int live, int *out)
{
    int *d = device_alloc<int>(n);
    early_exit_kernel<<<1, n>>>(d, live);
    return fetch(out, d, n, finish());
}

/* out[i] = in[i - 1]: correct without the barrier only if thread i - 1 ran first */
__global__ void neighbour_kernel(const int *in, int *out, int with_barrier)
{
    __shared__ int s[1024];
    int t = threadIdx.x;
    s[t] = in[t];
    if (with_barrier)
        __syncthreads();
    out[t] = t > 0 ? s[t - 1] : -1;
}

cudaError_t ek_missing_barrier(int n, int base, int with_barrier, int *out)
{
    int *h = new int[n], *din = device_alloc<int>(n), *dout = device_alloc<int>(n);
    for (int i = 0; i < n; ++i)
        h[i] = base + i;
    cudaMemcpy(din, h, n * sizeof(int), cudaMemcpyHostToDevice);
    neighbour_kernel<<<1, n>>>(din, dout, with_barrier);
    cudaError_t e = fetch(out, dout, n, finish());
    cudaFree(din);
    delete[] h;
    return e;
}

__global__ void divergent_kernel(int *out)
{
    if (threadIdx.x < 16)
        __syncthreads();
    else
        __syncthreads();
    out[threadIdx.x] = 1;
}

void ek_launch_divergent_barriers(void)
{
    int *d = device_alloc<int>(64);
    divergent_kernel<<<1, 64>>>(d);
}

__global__ void split_warp_kernel(int *out)
{
    int v = threadIdx.x;
    if (threadIdx.x < 16)
        v = __shfl_down_sync(FULL, v, 1); /* lanes 16..31 never come */
    else
        __syncthreads();
    out[threadIdx.x] = v;
}

void ek_launch_warp_op_without_lanes(void)
{
    int *d = device_alloc<int>(32);
    split_warp_kernel<<<1, 32>>>(d);
}

/* ---------------------------------------------------------------- warp operations */

__global__ void shfl_kernel(long long *out, int kind, int arg, int width)
{
    unsigned lane = threadIdx.x;
    long long v = lane * 10 + 1, r = 0;
    switch (kind) {
    case EK_SHFL_IDX: r = __shfl_sync(FULL, v, arg, width); break;
    case EK_SHFL_UP: r = __shfl_up_sync(FULL, v, (unsigned)arg, width); break;
    case EK_SHFL_DOWN: r = __shfl_down_sync(FULL, v, (unsigned)arg, width); break;
    default: r = __shfl_xor_sync(FULL, v, arg, width); break;
    }
    out[lane] = r;
}

cudaError_t ek_shfl(enum ek_shfl_kind kind, int arg, int width, long long out[32])
{
    long long *d = device_alloc<long long>(32);
    shfl_kernel<<<1, 32>>>(d, (int)kind, arg, width);
    return fetch(out, d, 32, finish());
}

__global__ void shfl_float_kernel(float *out, int src)
{
    out[threadIdx.x] = __shfl_sync(FULL, threadIdx.x * 0.5f, src);
}

cudaError_t ek_shfl_float(int src, float out[32])
{
    float *d = device_alloc<float>(32);
    shfl_float_kernel<<<1, 32>>>(d, src);
    return fetch(out, d, 32, finish());
}

__global__ void votes_warp_kernel(unsigned *ballot, int *any, int *all, unsigned mask, int modulo)
{
    unsigned lane = threadIdx.x;
    if (!(mask >> lane & 1))
        return;
    int pred = lane % modulo == 0;
    ballot[lane] = __ballot_sync(mask, pred);
    any[lane] = __any_sync(mask, pred);
    all[lane] = __all_sync(mask, pred);
}

cudaError_t ek_votes(unsigned mask, int modulo, unsigned ballot[32], int any[32], int all[32])
{
    unsigned *db = device_alloc<unsigned>(32);
    int *dany = device_alloc<int>(32), *dall = device_alloc<int>(32);
    votes_warp_kernel<<<1, 32>>>(db, dany, dall, mask, modulo);
    cudaError_t e = finish();
    e = fetch(ballot, db, 32, e);
    e = fetch(any, dany, 32, e);
    return fetch(all, dall, 32, e);
}

__global__ void reduce_kernel(int *si, unsigned *su)
{
    unsigned lane = threadIdx.x;
    int v = (int)(lane * 7) % 11 - 3;
    int add = __reduce_add_sync(FULL, v), mn = __reduce_min_sync(FULL, v),
        mx = __reduce_max_sync(FULL, v);
    unsigned umax = __reduce_max_sync(FULL, (unsigned)v), a = __reduce_and_sync(FULL, (unsigned)v),
             o = __reduce_or_sync(FULL, (unsigned)v), x = __reduce_xor_sync(FULL, (unsigned)v);
    if (lane == 5) {
        si[0] = add;
        si[1] = mn;
        si[2] = mx;
        su[0] = umax;
        su[1] = a;
        su[2] = o;
        su[3] = x;
    }
}

cudaError_t ek_warp_reduce(int *add, int *min, int *max, unsigned *umax, unsigned *and_,
                           unsigned *or_, unsigned *xor_)
{
    int *di = device_alloc<int>(3), hi[3];
    unsigned *du = device_alloc<unsigned>(4), hu[4];
    reduce_kernel<<<1, 32>>>(di, du);
    cudaError_t e = fetch(hi, di, 3, finish());
    e = fetch(hu, du, 4, e);
    *add = hi[0];
    *min = hi[1];
    *max = hi[2];
    *umax = hu[0];
    *and_ = hu[1];
    *or_ = hu[2];
    *xor_ = hu[3];
    return e;
}

__global__ void match_kernel(unsigned *out)
{
    out[threadIdx.x] = __match_any_sync(FULL, (int)(threadIdx.x % 4));
}

cudaError_t ek_match_any(unsigned out[32])
{
    unsigned *d = device_alloc<unsigned>(32);
    match_kernel<<<1, 32>>>(d);
    return fetch(out, d, 32, finish());
}

/* A warp sum that is right in a partial warp: the mask names the lanes that exist, and a lane
 * adds only values from lanes that exist (a shuffle from a missing lane is undefined). */
__device__ int warp_sum(int v)
{
    unsigned mask = __activemask(), lane = threadIdx.x % 32;
    for (unsigned offset = 16; offset > 0; offset /= 2) {
        int other = __shfl_down_sync(mask, v, offset);
        if (lane + offset < 32 && (mask >> (lane + offset) & 1))
            v += other;
    }
    return v;
}

/* the second warp has 16 lanes: its missing lanes neither block nor contribute */
__global__ void partial_warp_kernel(int *out)
{
    __shared__ int sums[32];
    int v = warp_sum((int)threadIdx.x + 1);
    if (threadIdx.x % 32 == 0)
        sums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        int total = 0;
        for (unsigned w = 0; w < (blockDim.x + 31) / 32; ++w)
            total += sums[w];
        *out = total;
    }
}

cudaError_t ek_partial_warp_sum(int nthreads, int *sum)
{
    int *d = device_alloc<int>(1);
    partial_warp_kernel<<<1, nthreads>>>(d);
    return fetch(sum, d, 1, finish());
}

__global__ void active_mask_kernel(unsigned *out, int live)
{
    if ((int)threadIdx.x >= live)
        return;
    unsigned mask = __activemask(); /* the 20 lanes that did not exit */
    __syncwarp(mask);
    if (threadIdx.x == 0)
        *out = mask;
}

cudaError_t ek_active_mask(int live, unsigned *mask)
{
    unsigned *d = device_alloc<unsigned>(1);
    active_mask_kernel<<<1, 32>>>(d, live);
    return fetch(mask, d, 1, finish());
}

__global__ void syncwarp_kernel(int *out)
{
    __shared__ int s[32];
    unsigned lane = threadIdx.x;
    s[lane] = (int)lane * 3;
    __syncwarp();
    out[lane] = s[31 - lane];
}

cudaError_t ek_syncwarp_exchange(int out[32])
{
    int *d = device_alloc<int>(32);
    syncwarp_kernel<<<1, 32>>>(d);
    return fetch(out, d, 32, finish());
}

/* ---------------------------------------------------------------- atomics */

__global__ void atomics_kernel(struct ek_atomics *a)
{
    int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    atomicAdd(&a->add_i, 1);
    atomicSub(&a->sub_i, 2);
    atomicMin(&a->min_i, -t);
    atomicMax(&a->max_i, t);
    atomicAnd(&a->and_i, ~(1 << (t % 31)));
    atomicOr(&a->or_i, 1 << (t % 31));
    atomicXor(&a->xor_i, 1 << (t % 8));
    int old = atomicCAS(&a->cas_i, 0, 0), seen;
    while ((seen = atomicCAS(&a->cas_i, old, old + 3)) != old) /* an increment by CAS */
        old = seen;
    if (atomicExch(&a->exch_seen, t) < 0)
        atomicAdd(&a->add_u, 0u); /* never: every value exchanged in is >= 0 */
    atomicAdd(&a->add_u, 2u);
    atomicInc(&a->inc_u, 99u);
    atomicDec(&a->dec_u, 99u);
    atomicMax(&a->max_u, (unsigned)t * 3u);
    atomicAdd(&a->add_ull, 1ull << 33);
    atomicMin(&a->min_ull, 1000000000000ull - (unsigned long long)t);
    atomicAdd(&a->add_f, 0.5f);
    atomicAdd(&a->add_d, 0.25);
}

cudaError_t ek_atomics(int blocks, struct ek_atomics *out)
{
    struct ek_atomics init = {};
    init.and_i = -1;
    init.min_i = 1 << 30;
    init.min_ull = ~0ull;
    struct ek_atomics *d = device_alloc<struct ek_atomics>(1);
    cudaMemcpy(d, &init, sizeof init, cudaMemcpyHostToDevice);
    atomics_kernel<<<blocks, 256>>>(d);
    return fetch(out, d, 1, finish());
}

/* ---------------------------------------------------------------- shared memory */

__global__ void reverse_kernel(int *out)
{
    extern __shared__ __align__(16) int s_buf[];
    int t = threadIdx.x;
    s_buf[t] = t + 7;
    __syncthreads();
    out[t] = s_buf[blockDim.x - 1 - t];
}

cudaError_t ek_dynamic_smem_reverse(int n, size_t smem_bytes, int *out)
{
    int *d = device_alloc<int>(n);
    reverse_kernel<<<1, n, smem_bytes>>>(d);
    return fetch(out, d, n, finish());
}

extern __shared__ unsigned s_words[];

__global__ void first_read_kernel(unsigned *out)
{
    out[threadIdx.x] = s_words[threadIdx.x];
}

cudaError_t ek_dynamic_smem_first_read(unsigned *bits)
{
    unsigned *d = device_alloc<unsigned>(1);
    first_read_kernel<<<1, 1, 64>>>(d);
    return fetch(bits, d, 1, finish());
}

__global__ void big_smem_kernel(int *out, int n)
{
    extern __shared__ int s_big[];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        s_big[i] = i;
    __syncthreads();
    if (threadIdx.x == 0)
        *out = s_big[n - 1];
}

cudaError_t ek_raise_dynamic_smem(int bytes)
{
    cudaError_t e = cudaFuncSetAttribute(big_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e != cudaSuccess)
        return e;
    int *d = device_alloc<int>(1), h = 0;
    big_smem_kernel<<<2, 128, bytes>>>(d, bytes / 4);
    e = fetch(&h, d, 1, finish());
    return e == cudaSuccess && h != bytes / 4 - 1 ? cudaErrorUnknown : e;
}

__global__ void static_smem_kernel(int *out)
{
    __shared__ int s_tile[64];
    s_tile[threadIdx.x] = (int)(blockIdx.x * 1000 + threadIdx.x);
    __syncthreads();
    out[blockIdx.x * 64 + threadIdx.x] = s_tile[63 - threadIdx.x];
}

cudaError_t ek_static_smem_blocks(int blocks, int *out)
{
    int *d = device_alloc<int>(blocks * 64);
    static_smem_kernel<<<blocks, 64>>>(d);
    return fetch(out, d, blocks * 64, finish());
}

/* ---------------------------------------------------------------- grids */

__device__ unsigned linear_thread(void) /* threadIdx in a __device__ helper */
{
    return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}

__global__ void grid_ids_kernel(unsigned *out)
{
    unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    unsigned id = block * threads + linear_thread();
    out[id] = id + 1;
}

cudaError_t ek_grid_ids(dim3 grid, dim3 block, unsigned *out)
{
    size_t n = (size_t)grid.x * grid.y * grid.z * block.x * block.y * block.z;
    unsigned *d = device_alloc<unsigned>(n);
    grid_ids_kernel<<<grid, block>>>(d);
    return fetch(out, d, n, finish());
}

__global__ void block_order_kernel(int *counter, int *order)
{
    if (threadIdx.x == 0)
        order[blockIdx.x] = atomicAdd(counter, 1);
}

cudaError_t ek_block_order(int blocks, int *order)
{
    int *counter = device_alloc<int>(1), *d = device_alloc<int>(blocks);
    block_order_kernel<<<blocks, 32>>>(counter, d);
    cudaError_t e = fetch(order, d, blocks, finish());
    cudaFree(counter);
    return e;
}

/* ---------------------------------------------------------------- launch forms */

template <class T, int SCALE> __global__ void scale_kernel(T *out, T v)
{
    out[threadIdx.x] = v * (T)SCALE;
}

__global__ void plus_kernel(int *out, int v) { out[threadIdx.x] = v + 1; }
__global__ void minus_kernel(int *out, int v) { out[threadIdx.x] = v - 1; }

cudaError_t ek_launch_forms(int out[4])
{
    int *d = device_alloc<int>(4);
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    scale_kernel<int, 3><<<1, 1>>>(d, 5);
    void (*const table[])(int *, int) = {plus_kernel, minus_kernel};
    table[1]<<<dim3(1), dim3(1), 0, stream>>>(d + 1, 10);
    plus_kernel<<<1,
                  1,
                  0,
                  stream>>>(d + 2,
                            20);
    scale_kernel<int, 2><<<1, 1, 0, 0>>>(d + 3, 'a' - 'a' + 21);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    return fetch(out, d, 4, e);
}

__constant__ float c_values[16];

__global__ void constant_kernel(float *out, int n)
{
    if ((int)threadIdx.x < n)
        out[threadIdx.x] = c_values[threadIdx.x] * 2.0f;
}

cudaError_t ek_constant_symbol(const float *values, int n, float *out)
{
    cudaError_t e = cudaMemcpyToSymbol(c_values, values, n * sizeof(float));
    if (e != cudaSuccess)
        return e;
    float back[16];
    e = cudaMemcpyFromSymbol(back, c_values, n * sizeof(float));
    if (e != cudaSuccess || back[n - 1] != values[n - 1])
        return e != cudaSuccess ? e : cudaErrorUnknown;
    float *d = device_alloc<float>(n);
    constant_kernel<<<1, 16>>>(d, n);
    return fetch(out, d, n, finish());
}

/* ---------------------------------------------------------------- cooperative groups */

__global__ void groups_kernel(ek_groups *g)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
    cg::thread_group dyn = cg::tiled_partition(block, 8);
    unsigned r = block.thread_rank();
    g->rank[r] = r;
    g->tile_rank[r] = tile.thread_rank();
    g->meta_rank[r] = tile.meta_group_rank();
    g->tile_ballot[r] = tile.ballot(tile.thread_rank() % 2 == 1);
    int v = (int)r;
    for (unsigned offset = tile.size() / 2; offset > 0; offset /= 2)
        v += tile.shfl_down(v, offset);
    g->tile_sum[r] = tile.shfl(v, 0);
    g->reduce_sum[r] = cg::reduce(tile, (int)r, cg::plus<int>());
    dyn.sync();
    g->dyn_rank[r] = (int)dyn.thread_rank();
    block.sync();
    if (r == 0)
        g->block_size = (int)block.size();
}

cudaError_t ek_cooperative_groups(struct ek_groups *out)
{
    ek_groups *d = device_alloc<ek_groups>(1);
    groups_kernel<<<1, dim3(16, 4)>>>(d);
    return fetch(out, d, 1, finish());
}

__global__ void pipeline_kernel(const float *in, float *out, int n, int zfill)
{
    __shared__ __align__(16) float s[256];
    int t = threadIdx.x;
    /* 4 floats a thread, the last zfill floats of the last chunk zero-filled */
    size_t fill = t == (int)blockDim.x - 1 ? (size_t)zfill * sizeof(float) : 0;
    __pipeline_memcpy_async(&s[4 * t], &in[4 * t], 16, fill);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    if (t == 0)
        for (int i = 0; i < n; ++i)
            out[i] = s[i];
}

cudaError_t ek_pipeline_copy(const float *in, int n, int zfill_floats, float *out)
{
    float *din = device_alloc<float>(n), *dout = device_alloc<float>(n);
    cudaMemcpy(din, in, n * sizeof(float), cudaMemcpyHostToDevice);
    pipeline_kernel<<<1, n / 4>>>(din, dout, n, zfill_floats);
    cudaError_t e = fetch(out, dout, n, finish());
    cudaFree(din);
    return e;
}

/* The asynchrony of cuda_pipeline.h: each of 32 threads issues one 16-byte copy into each of
 * three stages, one group a stage, then waits as `mode` says and reads all three stages back
 * (thread t reads the words it copied itself, so no barrier is needed):
 *   0  reads before any wait               every stage still holds the poison
 *   1  __pipeline_wait_prior(1)            stages 0 and 1 landed, stage 2 (the newest) not
 *   2  __pipeline_wait_prior(0)            all three landed
 *   3  wait_prior(0) with stage 2's copy issued after the last commit: it stays in flight
 * Thread 31's copy into stage 2 zero-fills its last two floats (out[382], out[383]).
 * and out[3 * 128 ...] gets what thread 0 sees of thread 1's stage 0 after its own wait_prior(0)
 * and a barrier, thread 1 having waited for nothing (its copies land when it exits). */
__global__ void pipeline_stages_kernel(const float *in, float *out, int mode)
{
    __shared__ __align__(16) float s[3][128];
    int t = threadIdx.x;
    for (int st = 0; st < 3; ++st) {
        /* thread 31's copy into stage 2 zero-fills its last 8 bytes */
        __pipeline_memcpy_async(&s[st][4 * t], &in[st * 128 + 4 * t], 16,
                                st == 2 && t == 31 ? 8 : 0);
        if (mode != 3 || st < 2)
            __pipeline_commit();
    }
    if (mode == 1)
        __pipeline_wait_prior(1);
    else if (mode >= 2)
        __pipeline_wait_prior(0);
    for (int st = 0; st < 3; ++st)
        for (int i = 0; i < 4; ++i)
            out[st * 128 + 4 * t + i] = s[st][4 * t + i];
    if (t != 1)
        __pipeline_wait_prior(0);
    __syncthreads();
    if (t == 0)
        for (int i = 0; i < 4; ++i)
            out[3 * 128 + i] = s[0][4 + i];
    __syncthreads(); /* thread 1 is still running (its copies in flight) while thread 0 reads */
}

cudaError_t ek_pipeline_stages(const float *in, int mode, float *out)
{
    float *din = device_alloc<float>(3 * 128), *dout = device_alloc<float>(3 * 128 + 4);
    cudaMemcpy(din, in, 3 * 128 * sizeof(float), cudaMemcpyHostToDevice);
    pipeline_stages_kernel<<<1, 32>>>(din, dout, mode);
    cudaError_t e = fetch(out, dout, 3 * 128 + 4, finish());
    cudaFree(din);
    return e;
}

/* ---------------------------------------------------------------- wmma */

template <class LayoutB>
__global__ void wmma_kernel(const float *a, const float *b, float *c, int c_col_major)
{
    namespace wmma = nvcuda::wmma;
    __shared__ __align__(32) __nv_bfloat16 s_a[256], s_b[256];
    for (int i = threadIdx.x; i < 256; i += 32) {
        s_a[i] = __float2bfloat16(a[i]);
        s_b[i] = __float2bfloat16(b[i]);
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, LayoutB> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 1.0f);
    wmma::load_matrix_sync(fa, s_a, 16);
    wmma::load_matrix_sync(fb, s_b, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(c, acc, 16, c_col_major ? wmma::mem_col_major : wmma::mem_row_major);
}

cudaError_t ek_wmma_bf16(const float *a, const float *b, int b_col_major, int c_col_major,
                         float *c)
{
    float *da = device_alloc<float>(256), *db = device_alloc<float>(256);
    float *dc = device_alloc<float>(256);
    cudaMemcpy(da, a, 256 * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, 256 * sizeof(float), cudaMemcpyHostToDevice);
    if (b_col_major)
        wmma_kernel<nvcuda::wmma::col_major><<<1, 32>>>(da, db, dc, c_col_major);
    else
        wmma_kernel<nvcuda::wmma::row_major><<<1, 32>>>(da, db, dc, c_col_major);
    cudaError_t e = fetch(c, dc, 256, finish());
    cudaFree(da);
    cudaFree(db);
    return e;
}

/* ---------------------------------------------------------------- half and bfloat16 */

__global__ void half_kernel(float *out, float a, float b)
{
    __half ha = __float2half(a), hb = __float2half(b);
    __nv_bfloat16 ba = __float2bfloat16(a), bb = __float2bfloat16(b);
    __half2 h2 = __floats2half2_rn(a, b);
    out[0] = __half2float(__hadd(ha, hb));
    out[1] = __bfloat162float(__hmul(ba, bb));
    out[2] = __low2float(__hmul2(h2, h2));
}

cudaError_t ek_half_bf16(float a, float b, float *half_sum, float *bf16_product, float *half2_low)
{
    float *d = device_alloc<float>(3), h[3];
    half_kernel<<<1, 1>>>(d, a, b);
    cudaError_t e = fetch(h, d, 3, finish());
    *half_sum = h[0];
    *bf16_product = h[1];
    *half2_low = h[2];
    return e;
}

/* ---------------------------------------------------------------- errors */

__global__ void nothing_kernel(int *out)
{
    if (out)
        *out = 1;
}

void ek_launch_config(dim3 grid, dim3 block, size_t smem)
{
    nothing_kernel<<<grid, block, smem>>>(nullptr);
}

__device__ int g_oob_line;

__global__ void out_of_bounds_kernel(float *d, int n, int offset)
{
    if (blockIdx.x == 2 && threadIdx.x == 5) {
        g_oob_line = __LINE__; d[n + offset] = 1.0f; /* the faulting store: same line */
    }
}

const void *ek_out_of_bounds_kernel(void)
{
    return (const void *)out_of_bounds_kernel;
}

int ek_launch_out_of_bounds(float *d, int n, int offset)
{
    out_of_bounds_kernel<<<4, 32>>>(d, n, offset);
    return g_oob_line;
}

__global__ void read_kernel(const float *d, float *out)
{
    out[0] = d[0];
}

void ek_launch_read(const float *d, float *out)
{
    read_kernel<<<1, 1>>>(d, out);
}

__global__ void trap_kernel(void)
{
    if (threadIdx.x == 3)
        __trap();
}

void ek_launch_trap(void)
{
    trap_kernel<<<1, 8>>>();
}

__global__ void assert_kernel(int value)
{
    assert(value + (int)threadIdx.x != 7);
}

void ek_launch_assert(int value)
{
    assert_kernel<<<1, 4>>>(value);
}

__global__ void big_frame_kernel(float *out)
{
    volatile float local[64 * 1024]; /* 256 KiB: more than the default fiber stack */
    for (int i = 0; i < 64 * 1024; i += 512)
        local[i] = (float)i;
    out[threadIdx.x] = local[512 * threadIdx.x];
}

void ek_launch_big_frame(float *out)
{
    big_frame_kernel<<<1, 2>>>(out);
}

__global__ void divide_kernel(int *out, int divisor)
{
    out[threadIdx.x] = 100 / (divisor + (int)threadIdx.x - 1);
}

void ek_launch_divide(int *out, int divisor)
{
    divide_kernel<<<1, 2>>>(out, divisor);
}
