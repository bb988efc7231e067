/* step2_ring.cu: chapter 12, step 2 of 3, the solution.
 *
 * The buffer is cut into ndev segments of seg floats (count / ndev rounded up to a multiple of
 * 4, so that every segment and chunk starts 16 bytes into a buffer's alignment; the last
 * segments may be short or empty), each segment into chunks. Device d reads from its left
 * neighbour L = d - 1 (mod ndev), through the link step 1 opened, with a kernel of its own:
 *
 *   reduce-scatter, step s = 0 .. ndev - 2:  segment x = d - 1 - s:  mine[x] += L's[x]
 *   all-gather,     step s = ndev - 1 .. 2 ndev - 3, t = s - (ndev - 1):
 *                                             segment x = d - t:      mine[x]  = L's[x]
 *
 * At step s device d reads the segment L wrote at step s - 1 (L's segment index one step behind
 * is d - 1 - (s - 1) - 1 = d - 1 - s), so after ndev - 1 steps device d holds the whole sum of
 * segment d + 1, which the all-gather then hands round. Every device moves 2 (ndev - 1) / ndev of
 * the buffer over its link, whatever ndev: the ring's bandwidth does not fall as it grows.
 *
 * The order between devices is declared chunk by chunk: after its kernel for (step s, chunk c)
 * device d records an event, and device d + 1 waits for it (cudaStreamWaitEvent: the device
 * waits, not the host) before its kernel for (s + 1, c). So chunk c of step s + 1 starts as soon
 * as chunk c of step s has landed next door, and the steps of different chunks overlap. The
 * events alternate between two sets by the step's parity: the record a wait names is the latest
 * one when the wait is issued, and a set is recorded again two steps later, after every wait
 * for its last records has been issued. Writes that could race a neighbour's read (the
 * all-gather overwrites segments that the reduce-scatter read) are ordered by the same chain:
 * the write comes after a wait on a record that comes after the read, round the ring.
 *
 * The kernel is a grid-stride loop of float4s over a chunk, at most RING_MAX_BLOCKS blocks of
 * 512 threads: enough loads in flight to fill a link (NVLink 4 moves 450 GB/s each way on an
 * H100 or H200; a block of 512 threads with a float4 each has 8 KB in flight), few enough SMs
 * that the rest of the GPU can compute meanwhile. */
#include <stdlib.h>
#include <string.h>

#include "collective.h"

#define RING_THREADS 512

/* dst[i] (+)= src[i] for i < n; dst and src 16-byte aligned. src is the neighbour's memory. */
template <bool ADD>
static __global__ void __launch_bounds__(RING_THREADS)
ring_step(float *__restrict__ dst, const float *__restrict__ src, size_t n)
{
    const size_t n4 = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float4 *d4 = reinterpret_cast<float4 *>(dst);
    const float4 *s4 = reinterpret_cast<const float4 *>(src);
    for (size_t i = first; i < n4; i += stride) {
        float4 v = s4[i];
        if (ADD) {
            const float4 m = d4[i];
            v.x += m.x, v.y += m.y, v.z += m.z, v.w += m.w;
        }
        d4[i] = v;
    }
    for (size_t i = 4 * n4 + first; i < n; i += stride)
        dst[i] = ADD ? dst[i] + src[i] : src[i];
}

static size_t ceil_div(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

static size_t round4(size_t n)
{
    return ceil_div(n, 4) * 4;
}

/* the layout: floats a segment and a chunk (multiples of 4), chunks a segment */
struct layout {
    size_t seg, chunk;
    int nchunk;
};

static int layout_of(int ndev, size_t count, size_t chunk, struct layout *o)
{
    o->seg = round4(ceil_div(count, (size_t)ndev));
    o->chunk = round4(chunk);
    size_t n = ceil_div(o->seg, o->chunk);
    if (n > RING_MAX_CHUNKS)
        return -1;
    o->nchunk = (int)n;
    return 0;
}

/* gives back what r holds, from device 0 up (with each device current); the first error */
static cudaError_t release(struct ring *r)
{
    cudaError_t err = cudaSuccess, e;
    for (int d = 0; d < r->ndev; d++) {
        if (!r->stream[d] && !r->ready[d])
            continue;
        if ((e = cudaSetDevice(d)) != cudaSuccess) {
            if (err == cudaSuccess)
                err = e;
            continue;
        }
        for (int i = 0; r->ready[d] && i < r->nready; i++)
            if (r->ready[d][i] && (e = cudaEventDestroy(r->ready[d][i])) != cudaSuccess &&
                err == cudaSuccess)
                err = e;
        free(r->ready[d]);
        r->ready[d] = NULL;
        if (r->stream[d] && (e = cudaStreamDestroy(r->stream[d])) != cudaSuccess &&
            err == cudaSuccess)
            err = e;
        r->stream[d] = NULL;
    }
    return err;
}

cudaError_t ring_create(struct ring *r, const struct links *l, size_t count, size_t chunk)
{
    struct layout lay;
    if (!r || !l || l->ndev < 1 || l->ndev > MGPU_MAX || count == 0 || chunk == 0 ||
        layout_of(l->ndev, count, chunk, &lay) != 0)
        return cudaErrorInvalidValue;
    const int n = l->ndev;
    for (int d = 0; d < n && n > 1; d++)
        if (!l->peer[d][(d + n - 1) % n])
            return cudaErrorPeerAccessNotEnabled;
    int was = 0;
    cudaError_t err = cudaGetDevice(&was);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return err;
    }
    memset(r, 0, sizeof *r);
    r->ndev = n;
    r->count = count;
    r->chunk = chunk;
    /* two sets of events a device, one for each parity of the step (one device needs none) */
    r->nready = n > 1 ? 2 * lay.nchunk : 0;
    for (int d = 0; d < n && err == cudaSuccess; d++) {
        err = cudaSetDevice(d);
        if (err == cudaSuccess)
            err = cudaStreamCreateWithFlags(&r->stream[d], cudaStreamNonBlocking);
        if (err == cudaSuccess && r->nready > 0 &&
            !(r->ready[d] = (cudaEvent_t *)calloc((size_t)r->nready, sizeof(cudaEvent_t))))
            err = cudaErrorMemoryAllocation;
        for (int i = 0; i < r->nready && err == cudaSuccess; i++)
            err = cudaEventCreateWithFlags(&r->ready[d][i], cudaEventDisableTiming);
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
static cudaError_t issue(struct ring *r, float *const buf[], const struct layout *lay)
{
    const int n = r->ndev;
    const size_t count = r->count;
    for (int s = 0; s < 2 * (n - 1); s++) {
        const int rs = s < n - 1; /* reduce-scatter, else all-gather */
        for (int c = 0; c < lay->nchunk; c++) {
            for (int d = 0; d < n; d++) {
                const int left = (d + n - 1) % n;
                const int x = rs ? ((d - 1 - s) % n + 2 * n) % n : ((d - (s - (n - 1))) % n + n) % n;
                const size_t seg_lo = (size_t)x * lay->seg;
                const size_t seg_hi = seg_lo + lay->seg < count ? seg_lo + lay->seg : count;
                const size_t lo = seg_lo + (size_t)c * lay->chunk;
                if (lo >= seg_hi)
                    continue; /* past the end: empty here, and all the way round */
                const size_t len = seg_hi - lo < lay->chunk ? seg_hi - lo : lay->chunk;
                cudaError_t err = cudaSetDevice(d);
                /* chunk c of the step before, done next door */
                if (err == cudaSuccess && s > 0)
                    err = cudaStreamWaitEvent(r->stream[d],
                                              r->ready[left][(s - 1) % 2 * lay->nchunk + c], 0);
                if (err != cudaSuccess)
                    return err;
                const size_t want = ceil_div(len, (size_t)4 * RING_THREADS);
                const unsigned blocks = (unsigned)(want < RING_MAX_BLOCKS ? want : RING_MAX_BLOCKS);
                if (rs)
                    ring_step<true><<<blocks, RING_THREADS, 0, r->stream[d]>>>(buf[d] + lo,
                                                                               buf[left] + lo, len);
                else
                    ring_step<false><<<blocks, RING_THREADS, 0, r->stream[d]>>>(buf[d] + lo,
                                                                                buf[left] + lo, len);
                if ((err = cudaGetLastError()) != cudaSuccess ||
                    (err = cudaEventRecord(r->ready[d][s % 2 * lay->nchunk + c],
                                           r->stream[d])) != cudaSuccess)
                    return err;
            }
        }
    }
    return cudaSuccess;
}

cudaError_t ring_allreduce(struct ring *r, float *const buf[])
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
        return cudaSuccess; /* the sum of one buffer is that buffer */
    int was = 0;
    cudaError_t err = cudaGetDevice(&was);
    if (err == cudaSuccess)
        err = issue(r, buf, &lay);
    /* whatever was issued runs out before we return, on a failure too */
    for (int d = 0; d < r->ndev; d++) {
        cudaError_t e = cudaStreamSynchronize(r->stream[d]);
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

cudaError_t ring_destroy(struct ring *r)
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
