/* collective.h: the contract of chapter 12, more than one GPU: four steps.
 *
 *   step 1  the links between the GPUs          links_open, links_close (step1_links.cu)
 *   step 2  a ring all-reduce by hand           ring_create, ring_allreduce, ring_destroy
 *                                               (step2_ring.cu)
 *   step 3  the ring on the copy engines        ring_copy_create, ring_copy_allreduce,
 *                                               ring_copy_destroy (step3_ring_copy.cu)
 *   step 4  a data-parallel step                dp_backward (step4_data_parallel.cu)
 *
 * Given (collective_given.cu): the all-reduce every program starts from, through the host
 * (allreduce_host), which the starters of steps 2 and 3 call and the grader and bench measure
 * beside the rings; and step 4's model (dp_create, dp_destroy), its GEMM (grad_gemm) and its
 * stream-ordered all-reduce (grad_allreduce).
 *
 * One process drives every GPU: cudaSetDevice(d) makes device d current for the calling host
 * thread, and what is made then (buffers, streams, events) belongs to device d. A kernel runs
 * on the current device, on a stream of that device. With unified addressing every device
 * pointer names its device, so a copy between two devices' buffers needs no device number
 * (cudaMemcpyPeerAsync names them anyway), and a kernel may read or write another device's
 * memory directly once that device is a peer of its own (cudaDeviceEnablePeerAccess).
 *
 * Host code, so library code: nothing here may exit() or abort(); every failure is returned,
 * after what the function took (streams, events, buffers, peer access) has been given back. A
 * function handed bad arguments (a NULL pointer, a device count out of range, a size of 0)
 * returns cudaErrorInvalidValue and takes nothing. Every function leaves the calling thread's
 * current device as it found it, and leaves no error behind for cudaGetLastError to find.
 *
 * The grader, the bench and the book call only what is declared here. */
#ifndef COLLECTIVE_H
#define COLLECTIVE_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MGPU_MAX 8 /* the most devices a ring spans here */

/* ---- given ---------------------------------------------------------------------------------- */

/* The all-reduce through the host: each of the ndev buffers (buf[d], count floats on device d)
 * copied to the host, summed there in device order, and the sum copied back into every buffer.
 * Correct and simple; every byte crosses the host link twice, and the host adds. Returns once
 * every buffer holds the sum. */
cudaError_t allreduce_host(float *const buf[], int ndev, size_t count);

/* ---- step 1: the links between the GPUs -------------------------------------------------------
 *
 * links_open(l, ndev) opens every link the machine has among devices 0 .. ndev - 1: for each
 * ordered pair (i, j), i != j, that cudaDeviceCanAccessPeer allows, access from device i to
 * device j's memory (cudaDeviceEnablePeerAccess(j, 0) with device i current). Access is one way:
 * enabling it from i to j lets i's kernels reach j's memory, not the reverse. On return
 * l->peer[i][j] is 1 where device i reaches device j directly, whether links_open enabled it or
 * it was enabled before (cudaErrorPeerAccessAlreadyEnabled: not a failure, and not left for
 * cudaGetLastError either), and 0 elsewhere (the diagonal included); l->opened[i][j] is 1 where
 * links_open itself enabled it. ndev < 1, or more than cudaGetDeviceCount's or MGPU_MAX:
 * cudaErrorInvalidValue. On a failure it disables what it had enabled and returns the error.
 *
 * links_close(l) disables exactly what links_open enabled (l->opened), and leaves l with
 * ndev 0 and no link. */
struct links {
    int ndev;
    int peer[MGPU_MAX][MGPU_MAX];    /* 1: device i's kernels and copies reach device j's memory */
    int opened[MGPU_MAX][MGPU_MAX];  /* 1: links_open enabled that access (links_close undoes it) */
};
cudaError_t links_open(struct links *l, int ndev);
cudaError_t links_close(struct links *l);

/* ---- step 2: a ring all-reduce by hand --------------------------------------------------------
 *
 * ring_allreduce(r, buf): buf[d] is device d's buffer of r->count floats, for d < r->ndev, with
 * no work pending on it. On return every buf[d][i] holds the sum over the devices of what
 * buf[e][i] held on entry. The devices form a ring, each reading from the one before it (device
 * d from device d - 1, device 0 from device ndev - 1) through the link step 1 opened, by kernels
 * of its own that read the neighbour's memory directly: a reduce-scatter (ndev - 1 steps, after
 * which each device holds the whole sum of one segment of the buffer) then an all-gather
 * (ndev - 1 steps, which hand every segment round the ring). Each segment goes in chunks of
 * r->chunk floats, so that a device starts a step on a chunk as soon as its neighbour has
 * finished the step before on that chunk, not on the whole segment. Nothing goes through the
 * host. Each kernel launches at most RING_MAX_BLOCKS blocks: the ring leaves the rest of each
 * GPU to the work it overlaps. Returns once every buffer holds the sum. One device: nothing to
 * do.
 *
 * ring_create(r, l, count, chunk): the streams and events for buffers of `count` floats and
 * chunks of `chunk`, on the l->ndev devices of l (l stays open while the ring is used). Every
 * device must reach the one before it in the ring (l->peer[d][d - 1]), else
 * cudaErrorPeerAccessNotEnabled; count or chunk 0, or a chunk so small that a segment
 * (count / ndev floats, rounded up) would take more than RING_MAX_CHUNKS of them:
 * cudaErrorInvalidValue. On a failure it returns the error holding nothing. ring_destroy gives
 * it all back. */
#define RING_MAX_BLOCKS 32
#define RING_MAX_CHUNKS 4096
struct ring {
    int ndev;
    size_t count;                    /* floats a buffer */
    size_t chunk;                    /* floats a chunk */
    cudaStream_t stream[MGPU_MAX];   /* one a device, made on it */
    cudaEvent_t *ready[MGPU_MAX];    /* yours to use: events made on each device */
    int nready;                      /* how many events each ready[d] holds */
};
cudaError_t ring_create(struct ring *r, const struct links *l, size_t count, size_t chunk);
cudaError_t ring_allreduce(struct ring *r, float *const buf[]);
cudaError_t ring_destroy(struct ring *r);

/* ---- step 3: the ring on the copy engines -----------------------------------------------------
 *
 * ring_copy_allreduce(r, buf): the same all-reduce as step 2, over the same ring, segments and
 * chunks, with every byte between two devices moved by a copy (cudaMemcpyPeerAsync) on a stream
 * of its own on the receiving device (r->copy[d]), which the GPU's copy engines carry, and no
 * kernel that touches another device's memory: so it runs with no peer access at all (the
 * driver then stages each copy through the host), and where the links are open the SMs only
 * add. Each reduce-scatter step copies the neighbour's chunk into one of the RING_SLOTS receive
 * slots on the receiving device (r->recv[d], RING_SLOTS chunks of r->chunk floats), and a kernel
 * on the device's other stream (r->add[d]) adds the slot into its buffer, at most
 * RING_MAX_BLOCKS blocks; each all-gather step copies the neighbour's chunk straight into the
 * buffer. A copy into a slot waits for the add that last read that slot, so that the copy of one
 * chunk overlaps the add of the one before it. Returns once every buffer holds the sum.
 *
 * ring_copy_create(r, ndev, count, chunk): the streams, receive slots and events on devices
 * 0 .. ndev - 1 (each made with its device current); ndev out of 1 .. MGPU_MAX or more than the
 * machine has, count or chunk 0, or more than RING_MAX_CHUNKS chunks a segment:
 * cudaErrorInvalidValue. On a failure it returns the error holding nothing. ring_copy_destroy
 * gives it all back. */
#define RING_SLOTS 2
struct ring_copy {
    int ndev;
    size_t count, chunk;
    cudaStream_t copy[MGPU_MAX], add[MGPU_MAX]; /* two a device, made on it */
    float *recv[MGPU_MAX];           /* RING_SLOTS chunks on each device */
    cudaEvent_t *ready[MGPU_MAX];    /* yours to use: events made on each device */
    int nready;
    cudaEvent_t landed[MGPU_MAX][RING_SLOTS], drained[MGPU_MAX][RING_SLOTS]; /* yours to use */
};
cudaError_t ring_copy_create(struct ring_copy *r, int ndev, size_t count, size_t chunk);
cudaError_t ring_copy_allreduce(struct ring_copy *r, float *const buf[]);
cudaError_t ring_copy_destroy(struct ring_copy *r);

/* ---- step 4: a data-parallel step -------------------------------------------------------------
 *
 * The weight gradients of a stack of `layers` linear layers, data parallel over ndev devices:
 * every device holds the whole model and its own shard of the batch, and layer l's weight
 * gradient is the sum over the devices of each device's dW = A^T G over its shard (A: batch x
 * rows, G: batch x cols, both row-major; dW: rows x cols). A backward pass makes the layers'
 * gradients from the last layer to the first, and each is summed over the devices (an
 * all-reduce) as soon as every device has made it, while the devices go on to the layers below:
 * the communication of one layer overlaps the computation of the next.
 *
 * Given (collective_given.cu):
 *   dp_create(s, ndev, layers, batch, rows, cols) makes, on each device d, two streams
 *     (s->compute[d] and s->comm[d]), DP_BUCKETS buckets of rows x cols floats (where a layer's
 *     gradient waits for its all-reduce), the all-reduce's scratch, and DP_EVENTS events a
 *     layer (s->ev[d], yours to use); dp_destroy gives them back.
 *   grad_gemm(s, d, bucket, a, g, stream): bucket `bucket` of device d = A^T G, one kernel on
 *     `stream` (a stream of device d; the current device is set and restored).
 *   grad_allreduce(s, bucket, out, stream): on each device d, on stream[d], out[d] = the sum
 *     over the devices e of bucket `bucket` of device e: peer copies into device d's scratch
 *     and adds. So device d's all-reduce reads every device's bucket.
 *
 * dp_backward(s, a, g, grad): a[l][d] and g[l][d] are layer l's A and G on device d, for
 * l < s->layers and d < s->ndev; grad[l][d] is where layer l's summed gradient goes on device
 * d. For l from s->layers - 1 down to 0: on every device, grad_gemm of layer l into bucket
 * l % DP_BUCKETS on s->compute[d]; then grad_allreduce of that bucket into grad[l], on the
 * s->comm streams. Between them, the order the data needs, declared with events
 * (cudaEventRecord, cudaStreamWaitEvent), and no other:
 *   - layer l's all-reduce on any device reads every device's bucket: it starts after layer
 *     l's GEMM on every device;
 *   - the GEMM of layer l - DP_BUCKETS overwrites the bucket that layer l's all-reduces read on
 *     every device: it starts after layer l's all-reduce on every device;
 *   - layer l - 1's GEMM does not wait for layer l's all-reduce (while DP_BUCKETS >= 2), so that
 *     the two overlap: a host wait between them, or the all-reduce on the compute stream, or a
 *     wait declared where none is needed, serialises them.
 * The host waits for nothing until every layer's work is issued. Returns once every grad[l][d]
 * holds its sum, with the current device as it found it. NULL arguments: cudaErrorInvalidValue.
 */
#define DP_BUCKETS 2
#define DP_EVENTS 2 /* events a device a layer in s->ev */
#define DP_MAX_LAYERS 64
struct dp {
    int ndev, layers;
    int batch, rows, cols;
    cudaStream_t compute[MGPU_MAX], comm[MGPU_MAX]; /* made on device d */
    float *bucket[MGPU_MAX][DP_BUCKETS];            /* rows x cols floats each, on device d */
    float *scratch[MGPU_MAX];                       /* grad_allreduce's, on device d */
    cudaEvent_t *ev[MGPU_MAX];                      /* DP_EVENTS x layers, made on device d */
};
cudaError_t dp_create(struct dp *s, int ndev, int layers, int batch, int rows, int cols);
cudaError_t dp_destroy(struct dp *s);
cudaError_t grad_gemm(const struct dp *s, int d, int bucket, const float *a, const float *g,
                      cudaStream_t stream);
cudaError_t grad_allreduce(const struct dp *s, int bucket, float *const out[],
                           const cudaStream_t stream[]);
cudaError_t dp_backward(struct dp *s, const float *a[][MGPU_MAX], const float *g[][MGPU_MAX],
                        float *grad[][MGPU_MAX]);

#ifdef __cplusplus
}
#endif

#endif
