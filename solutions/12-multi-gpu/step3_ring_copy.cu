/* step3_ring_copy.cu: chapter 12, step 3 of 3, the solution.
 *
 * Step 2's ring, segments and chunks, with the bytes between devices moved by the copy engines
 * instead of by kernels reading the neighbour's memory. Device d has two streams: `copy`, where
 * its cudaMemcpyPeerAsync calls pull chunks from its left neighbour, and `add`, where its
 * kernels add a landed chunk into its buffer. A GPU's copy engines run beside its SMs, so the
 * copy of one chunk overlaps the add of the chunk before, and the kernels touch local memory
 * only: the ring runs with no peer access at all (the driver then stages every copy through the
 * host, slowly), and where the links are open it leaves the SMs nearly free.
 *
 *   reduce-scatter, step s, chunk c of segment x = d - 1 - s:
 *     copy:  wait for the neighbour's (s - 1, c); wait for the add that last read slot k;
 *            neighbour's chunk -> slot k; record landed[k]
 *     add:   wait for landed[k]; mine += slot k; record drained[k]; record ready(s, c)
 *   all-gather, step t = s - (ndev - 1), chunk c of segment x = d - t:
 *     copy:  wait for the neighbour's (s - 1, c); neighbour's chunk -> mine; record ready(s, c)
 *
 * Three kinds of order, each an event: the neighbour's chunk is final (ready, as in step 2),
 * the chunk has landed in the slot before the add reads it (landed), and the add has read the
 * slot before the next copy overwrites it (drained). The slots alternate, k = 0, 1, 0, ... in the
 * order a device's reduce-scatter copies are issued, so that two chunks are in flight a device.
 * The all-gather writes segments the neighbour's copies read before; as in step 2, the chain of
 * ready events round the ring orders those. */
#include <stdlib.h>
#include <string.h>

#include "collective.h"

#define ADD_THREADS 512

/* dst[i] += src[i] for i < n; both local, 16-byte aligned */
static __global__ void __launch_bounds__(ADD_THREADS)
add_chunk(float *__restrict__ dst, const float *__restrict__ src, size_t n)
{
    const size_t n4 = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float4 *d4 = reinterpret_cast<float4 *>(dst);
    const float4 *s4 = reinterpret_cast<const float4 *>(src);
    for (size_t i = first; i < n4; i += stride) {
        float4 v = d4[i];
        const float4 w = s4[i];
        v.x += w.x, v.y += w.y, v.z += w.z, v.w += w.w;
        d4[i] = v;
    }
    for (size_t i = 4 * n4 + first; i < n; i += stride)
        dst[i] += src[i];
}

static size_t ceil_div(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

static size_t round4(size_t n)
{
    return ceil_div(n, 4) * 4;
}

/* floats a segment and a chunk (multiples of 4: every chunk starts 16 bytes aligned), chunks a
 * segment, floats a receive slot */
struct layout {
    size_t seg, chunk, slot;
    int nchunk;
};

static int layout_of(int ndev, size_t count, size_t chunk, struct layout *o)
{
    o->seg = round4(ceil_div(count, (size_t)ndev));
    o->chunk = round4(chunk);
    o->slot = o->chunk < o->seg ? o->chunk : o->seg;
    size_t n = ceil_div(o->seg, o->chunk);
    if (n > RING_MAX_CHUNKS)
        return -1;
    o->nchunk = (int)n;
    return 0;
}

/* gives back what r holds, each device's with that device current; the first error */
static cudaError_t release(struct ring_copy *r)
{
    cudaError_t err = cudaSuccess, e;
#define KEEP(call) do { if ((e = (call)) != cudaSuccess && err == cudaSuccess) err = e; } while (0)
    for (int d = 0; d < r->ndev; d++) {
        if ((e = cudaSetDevice(d)) != cudaSuccess) {
            if (err == cudaSuccess)
                err = e;
            continue;
        }
        for (int i = 0; r->ready[d] && i < r->nready; i++)
            if (r->ready[d][i])
                KEEP(cudaEventDestroy(r->ready[d][i]));
        free(r->ready[d]);
        r->ready[d] = NULL;
        for (int k = 0; k < RING_SLOTS; k++) {
            if (r->landed[d][k])
                KEEP(cudaEventDestroy(r->landed[d][k]));
            if (r->drained[d][k])
                KEEP(cudaEventDestroy(r->drained[d][k]));
            r->landed[d][k] = r->drained[d][k] = NULL;
        }
        if (r->recv[d])
            KEEP(cudaFree(r->recv[d]));
        if (r->copy[d])
            KEEP(cudaStreamDestroy(r->copy[d]));
        if (r->add[d])
            KEEP(cudaStreamDestroy(r->add[d]));
        r->recv[d] = NULL;
        r->copy[d] = r->add[d] = NULL;
    }
#undef KEEP
    return err;
}

cudaError_t ring_copy_create(struct ring_copy *r, int ndev, size_t count, size_t chunk)
{
    struct layout lay;
    int devices = 0, was = 0;
    if (!r || ndev < 1 || ndev > MGPU_MAX || count == 0 || chunk == 0 ||
        layout_of(ndev, count, chunk, &lay) != 0)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err == cudaSuccess && ndev > devices)
        err = cudaErrorInvalidValue;
    if (err == cudaSuccess)
        err = cudaGetDevice(&was);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return err;
    }
    memset(r, 0, sizeof *r);
    r->ndev = ndev;
    r->count = count;
    r->chunk = chunk;
    r->nready = ndev > 1 ? 2 * lay.nchunk : 0; /* two sets, by the step's parity, as in step 2 */
    for (int d = 0; d < ndev && err == cudaSuccess; d++) {
        err = cudaSetDevice(d);
        if (err == cudaSuccess)
            err = cudaStreamCreateWithFlags(&r->copy[d], cudaStreamNonBlocking);
        if (err == cudaSuccess)
            err = cudaStreamCreateWithFlags(&r->add[d], cudaStreamNonBlocking);
        if (ndev == 1)
            continue; /* one device: nothing moves */
        if (err == cudaSuccess)
            err = cudaMalloc((void **)&r->recv[d], RING_SLOTS * lay.slot * sizeof(float));
        if (err == cudaSuccess &&
            !(r->ready[d] = (cudaEvent_t *)calloc((size_t)r->nready, sizeof(cudaEvent_t))))
            err = cudaErrorMemoryAllocation;
        for (int i = 0; i < r->nready && err == cudaSuccess; i++)
            err = cudaEventCreateWithFlags(&r->ready[d][i], cudaEventDisableTiming);
        for (int k = 0; k < RING_SLOTS && err == cudaSuccess; k++) {
            err = cudaEventCreateWithFlags(&r->landed[d][k], cudaEventDisableTiming);
            if (err == cudaSuccess)
                err = cudaEventCreateWithFlags(&r->drained[d][k], cudaEventDisableTiming);
        }
    }
    if (err != cudaSuccess) {
        (void)release(r);
        memset(r, 0, sizeof *r);
    }
    cudaError_t e = cudaSetDevice(was);
    if (err == cudaSuccess)
        err = e;
    if (err != cudaSuccess)
        (void)cudaGetLastError();
    return err;
}

/* the ring's work, issued; the first error */
static cudaError_t issue(struct ring_copy *r, float *const buf[], const struct layout *lay)
{
    const int n = r->ndev;
    int used[MGPU_MAX] = { 0 }; /* reduce-scatter copies issued on each device: the next slot */
#define TRY(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) return e_; } while (0)
    for (int s = 0; s < 2 * (n - 1); s++) {
        const int rs = s < n - 1;
        for (int c = 0; c < lay->nchunk; c++) {
            for (int d = 0; d < n; d++) {
                const int left = (d + n - 1) % n;
                const int x = rs ? ((d - 1 - s) % n + 2 * n) % n : ((d - (s - (n - 1))) % n + n) % n;
                const size_t seg_lo = (size_t)x * lay->seg;
                const size_t seg_hi = seg_lo + lay->seg < r->count ? seg_lo + lay->seg : r->count;
                const size_t lo = seg_lo + (size_t)c * lay->chunk;
                if (lo >= seg_hi)
                    continue; /* empty here, and all the way round */
                const size_t len = seg_hi - lo < lay->chunk ? seg_hi - lo : lay->chunk;
                cudaEvent_t *const ready = &r->ready[d][s % 2 * lay->nchunk + c];
                TRY(cudaSetDevice(d));
                /* the neighbour's chunk c is final after its step s - 1 */
                if (s > 0)
                    TRY(cudaStreamWaitEvent(r->copy[d],
                                            r->ready[left][(s - 1) % 2 * lay->nchunk + c], 0));
                if (!rs) {
                    TRY(cudaMemcpyPeerAsync(buf[d] + lo, d, buf[left] + lo, left,
                                            len * sizeof(float), r->copy[d]));
                    TRY(cudaEventRecord(*ready, r->copy[d]));
                    continue;
                }
                const int k = used[d]++ % RING_SLOTS;
                float *slot = r->recv[d] + (size_t)k * lay->slot;
                /* the add that last read slot k is done with it */
                TRY(cudaStreamWaitEvent(r->copy[d], r->drained[d][k], 0));
                TRY(cudaMemcpyPeerAsync(slot, d, buf[left] + lo, left, len * sizeof(float),
                                        r->copy[d]));
                TRY(cudaEventRecord(r->landed[d][k], r->copy[d]));
                TRY(cudaStreamWaitEvent(r->add[d], r->landed[d][k], 0));
                const size_t want = ceil_div(len, (size_t)4 * ADD_THREADS);
                const unsigned blocks = (unsigned)(want < RING_MAX_BLOCKS ? want : RING_MAX_BLOCKS);
                add_chunk<<<blocks, ADD_THREADS, 0, r->add[d]>>>(buf[d] + lo, slot, len);
                TRY(cudaGetLastError());
                TRY(cudaEventRecord(r->drained[d][k], r->add[d]));
                TRY(cudaEventRecord(*ready, r->add[d]));
            }
        }
    }
#undef TRY
    return cudaSuccess;
}

cudaError_t ring_copy_allreduce(struct ring_copy *r, float *const buf[])
{
    struct layout lay;
    if (!r || !buf || r->ndev < 1 || r->ndev > MGPU_MAX ||
        layout_of(r->ndev, r->count, r->chunk, &lay) != 0 ||
        (r->ndev > 1 && r->nready != 2 * lay.nchunk))
        return cudaErrorInvalidValue;
    for (int d = 0; d < r->ndev; d++)
        if (!buf[d])
            return cudaErrorInvalidValue;
    if (r->ndev == 1)
        return cudaSuccess;
    int was = 0;
    cudaError_t err = cudaGetDevice(&was);
    if (err == cudaSuccess)
        err = issue(r, buf, &lay);
    /* whatever was issued runs out before we return, on a failure too */
    for (int d = 0; d < r->ndev; d++) {
        cudaError_t e = cudaStreamSynchronize(r->copy[d]);
        if (err == cudaSuccess)
            err = e;
        e = cudaStreamSynchronize(r->add[d]);
        if (err == cudaSuccess)
            err = e;
    }
    cudaError_t e = cudaSetDevice(was);
    if (err == cudaSuccess)
        err = e;
    if (err != cudaSuccess)
        (void)cudaGetLastError();
    return err;
}

cudaError_t ring_copy_destroy(struct ring_copy *r)
{
    int was = 0;
    if (!r || r->ndev < 0 || r->ndev > MGPU_MAX)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaGetDevice(&was);
    cudaError_t e = release(r);
    if (err == cudaSuccess)
        err = e;
    memset(r, 0, sizeof *r);
    e = cudaSetDevice(was);
    if (err == cudaSuccess)
        err = e;
    if (err != cudaSuccess)
        (void)cudaGetLastError();
    return err;
}
