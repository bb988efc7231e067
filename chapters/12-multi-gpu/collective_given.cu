/* collective_given.cu: chapter 12's given code: the all-reduce through the host, and step 4's
 * model, GEMM and stream-ordered all-reduce.
 * Given: you do not need to change it.
 *
 * allreduce_host: every buffer comes to the host, the host adds them, and the sum goes back to
 * every device: 2 x ndev x count x 4 bytes over the host's links, one after the other, and an
 * add on one CPU core. It is the baseline the rings of steps 2 and 3 are measured against, and
 * what their starters call. */
#include <stdlib.h>
#include <string.h>

#include "collective.h"

/* err, or the restore's error where err is success; nothing left for cudaGetLastError */
static cudaError_t restore_device(int was, cudaError_t err)
{
    cudaError_t e = cudaSetDevice(was);
    if (err == cudaSuccess)
        err = e;
    if (err != cudaSuccess)
        (void)cudaGetLastError();
    return err;
}

cudaError_t allreduce_host(float *const buf[], int ndev, size_t count)
{
    if (!buf || ndev < 1 || ndev > MGPU_MAX || count == 0)
        return cudaErrorInvalidValue;
    for (int d = 0; d < ndev; d++)
        if (!buf[d])
            return cudaErrorInvalidValue;
    int was = 0;
    cudaError_t err = cudaGetDevice(&was);
    if (err != cudaSuccess)
        return err;
    float *sum = (float *)malloc(count * sizeof *sum);
    float *part = (float *)malloc(count * sizeof *part);
    if (!sum || !part)
        err = cudaErrorMemoryAllocation;
    /* cudaMemcpy with a device pointer works from any current device (unified addressing); the
     * device is set anyway, as the copy is that device's work */
    for (int d = 0; d < ndev && err == cudaSuccess; d++) {
        err = cudaSetDevice(d);
        if (err == cudaSuccess)
            err = cudaMemcpy(d == 0 ? sum : part, buf[d], count * sizeof *sum,
                             cudaMemcpyDeviceToHost);
        if (err == cudaSuccess && d > 0)
            for (size_t i = 0; i < count; i++)
                sum[i] += part[i];
    }
    for (int d = 0; d < ndev && err == cudaSuccess; d++) {
        err = cudaSetDevice(d);
        if (err == cudaSuccess)
            err = cudaMemcpy(buf[d], sum, count * sizeof *sum, cudaMemcpyHostToDevice);
    }
    free(sum);
    free(part);
    return restore_device(was, err);
}

/* ---- step 4: the model, its GEMM and its all-reduce ------------------------------------------ */

#define GG_TILE 16 /* grad_gemm: a block makes a 16 x 16 tile of dW, 16 rows of the batch a turn */
#define GA_BLOCKS 16 /* grad_allreduce's adds: few blocks, to leave the SMs to the GEMMs */

/* dW (rows x cols) = A^T G, A batch x rows and G batch x cols, row-major: thread (tx, ty) of the
 * block at (bx, by) makes dW[16 by + ty][16 bx + tx], the batch in order, 16 rows of it at a
 * time through shared memory (A's 16 x 16 tile read along its rows: coalesced) */
__global__ void grad_gemm_kernel(float *dw, const float *a, const float *g, int batch, int rows,
                                 int cols)
{
    __shared__ float sa[GG_TILE][GG_TILE + 1], sg[GG_TILE][GG_TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int r = blockIdx.y * GG_TILE + ty, c = blockIdx.x * GG_TILE + tx;
    float acc = 0.0f;
    for (int b0 = 0; b0 < batch; b0 += GG_TILE) {
        /* row b0 + ty of the batch: A's columns 16 by .. and G's 16 bx .. */
        const int b = b0 + ty, ar = blockIdx.y * GG_TILE + tx;
        sa[ty][tx] = b < batch && ar < rows ? a[(size_t)b * rows + ar] : 0.0f;
        sg[ty][tx] = b < batch && c < cols ? g[(size_t)b * cols + c] : 0.0f;
        __syncthreads();
        for (int i = 0; i < GG_TILE; i++)
            acc += sa[i][ty] * sg[i][tx];
        __syncthreads();
    }
    if (r < rows && c < cols)
        dw[(size_t)r * cols + c] = acc;
}

/* out[i] += in[i], grid-stride */
__global__ void grad_add_kernel(float *out, const float *in, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] += in[i];
}

cudaError_t dp_destroy(struct dp *s)
{
    if (!s)
        return cudaErrorInvalidValue;
    int was = 0;
    cudaError_t err = cudaGetDevice(&was);
    if (err != cudaSuccess)
        return err;
    for (int d = 0; d < s->ndev && d < MGPU_MAX; d++) {
        cudaError_t e = cudaSetDevice(d);
        if (e != cudaSuccess) {
            err = err == cudaSuccess ? e : err;
            continue;
        }
        /* what runs on the streams finishes before what it uses is freed */
        if (s->compute[d] && (e = cudaStreamSynchronize(s->compute[d])) != cudaSuccess && !err)
            err = e;
        if (s->comm[d] && (e = cudaStreamSynchronize(s->comm[d])) != cudaSuccess && !err)
            err = e;
        for (int i = 0; s->ev[d] && i < DP_EVENTS * s->layers; i++)
            if (s->ev[d][i] && (e = cudaEventDestroy(s->ev[d][i])) != cudaSuccess && !err)
                err = e;
        free(s->ev[d]);
        for (int b = 0; b < DP_BUCKETS; b++)
            if (s->bucket[d][b] && (e = cudaFree(s->bucket[d][b])) != cudaSuccess && !err)
                err = e;
        if (s->scratch[d] && (e = cudaFree(s->scratch[d])) != cudaSuccess && !err)
            err = e;
        if (s->compute[d] && (e = cudaStreamDestroy(s->compute[d])) != cudaSuccess && !err)
            err = e;
        if (s->comm[d] && (e = cudaStreamDestroy(s->comm[d])) != cudaSuccess && !err)
            err = e;
    }
    memset(s, 0, sizeof *s);
    return restore_device(was, err);
}

cudaError_t dp_create(struct dp *s, int ndev, int layers, int batch, int rows, int cols)
{
    int have = 0;
    if (!s || ndev < 1 || ndev > MGPU_MAX || layers < 1 || layers > DP_MAX_LAYERS || batch < 1 ||
        rows < 1 || cols < 1)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaGetDeviceCount(&have);
    if (err != cudaSuccess)
        return err;
    if (ndev > have)
        return cudaErrorInvalidValue;
    int was = 0;
    if ((err = cudaGetDevice(&was)) != cudaSuccess)
        return err;
    memset(s, 0, sizeof *s);
    s->ndev = ndev, s->layers = layers, s->batch = batch, s->rows = rows, s->cols = cols;
    const size_t bytes = (size_t)rows * cols * sizeof(float);
    for (int d = 0; d < ndev && err == cudaSuccess; d++) {
        if ((err = cudaSetDevice(d)) != cudaSuccess)
            break;
        /* non-blocking: nothing on the legacy stream orders them */
        if ((err = cudaStreamCreateWithFlags(&s->compute[d], cudaStreamNonBlocking)) ||
            (err = cudaStreamCreateWithFlags(&s->comm[d], cudaStreamNonBlocking)))
            break;
        for (int b = 0; b < DP_BUCKETS && err == cudaSuccess; b++)
            err = cudaMalloc((void **)&s->bucket[d][b], bytes);
        if (err == cudaSuccess)
            err = cudaMalloc((void **)&s->scratch[d], bytes);
        if (err != cudaSuccess)
            break;
        s->ev[d] = (cudaEvent_t *)calloc((size_t)DP_EVENTS * layers, sizeof(cudaEvent_t));
        if (!s->ev[d]) {
            err = cudaErrorMemoryAllocation;
            break;
        }
        for (int i = 0; i < DP_EVENTS * layers && err == cudaSuccess; i++)
            err = cudaEventCreateWithFlags(&s->ev[d][i], cudaEventDisableTiming);
    }
    if (err != cudaSuccess) {
        (void)dp_destroy(s);
        return restore_device(was, err);
    }
    return restore_device(was, cudaSuccess);
}

cudaError_t grad_gemm(const struct dp *s, int d, int bucket, const float *a, const float *g,
                      cudaStream_t stream)
{
    if (!s || d < 0 || d >= s->ndev || bucket < 0 || bucket >= DP_BUCKETS || !a || !g)
        return cudaErrorInvalidValue;
    int was = 0;
    cudaError_t err = cudaGetDevice(&was);
    if (err != cudaSuccess)
        return err;
    if ((err = cudaSetDevice(d)) != cudaSuccess)
        return restore_device(was, err);
    const dim3 block(GG_TILE, GG_TILE);
    const dim3 grid((unsigned)((s->cols + GG_TILE - 1) / GG_TILE),
                    (unsigned)((s->rows + GG_TILE - 1) / GG_TILE));
    grad_gemm_kernel<<<grid, block, 0, stream>>>(s->bucket[d][bucket], a, g, s->batch, s->rows,
                                                 s->cols);
    return restore_device(was, cudaGetLastError());
}

cudaError_t grad_allreduce(const struct dp *s, int bucket, float *const out[],
                           const cudaStream_t stream[])
{
    if (!s || bucket < 0 || bucket >= DP_BUCKETS || !out || !stream)
        return cudaErrorInvalidValue;
    for (int d = 0; d < s->ndev; d++)
        if (!out[d])
            return cudaErrorInvalidValue;
    int was = 0;
    cudaError_t err = cudaGetDevice(&was);
    if (err != cudaSuccess)
        return err;
    const size_t n = (size_t)s->rows * s->cols, bytes = n * sizeof(float);
    const unsigned blocks = (unsigned)(n / 256 + 1 < GA_BLOCKS ? n / 256 + 1 : GA_BLOCKS);
    for (int d = 0; d < s->ndev && err == cudaSuccess; d++) {
        if ((err = cudaSetDevice(d)) != cudaSuccess)
            break;
        /* its own bucket first, then every other device's, starting with the next one round */
        err = cudaMemcpyAsync(out[d], s->bucket[d][bucket], bytes, cudaMemcpyDeviceToDevice,
                              stream[d]);
        for (int j = 1; j < s->ndev && err == cudaSuccess; j++) {
            const int e = (d + j) % s->ndev;
            err = cudaMemcpyPeerAsync(s->scratch[d], d, s->bucket[e][bucket], e, bytes,
                                      stream[d]);
            if (err == cudaSuccess) {
                grad_add_kernel<<<blocks, 256, 0, stream[d]>>>(out[d], s->scratch[d], n);
                err = cudaGetLastError();
            }
        }
    }
    return restore_device(was, err);
}
