/* step4_graph.cu: chapter 08, step 4 of 4, the solution.
 *
 * One batch of GRAPH_BATCH iterations (3 kernels each) is captured from the stream into a graph
 * once, instantiated once, and launched iterations / GRAPH_BATCH times; the iterations left over
 * are launched one by one. A graph launch hands the whole batch to the GPU in one call, and the
 * GPU walks the graph's kernels with far less work per kernel than a launch from the host: the
 * loop goes from a few microseconds a kernel to about one. Every path destroys what it made.
 * Expect: 2x to 4x plain_loop at a small n; nothing at a large n, where the kernels' own time
 * hides the launches anyway. */
#include "transfers.h"

#define GRAPH_BATCH 20 /* iterations a graph holds: 60 kernels */

cudaError_t graph_loop(float *d_a, float *d_b, int n, int iterations, cudaStream_t stream)
{
    if (!d_a || !d_b || n < 1 || iterations < 0)
        return cudaErrorInvalidValue;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t err = cudaSuccess, e;
    int batch = iterations < GRAPH_BATCH ? iterations : GRAPH_BATCH;
    int launches = batch ? iterations / batch : 0, left = iterations - launches * batch;
    if (launches > 0) {
        err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
        if (err != cudaSuccess)
            goto done;
        /* captured, not run: the launches become the graph's nodes, in stream order */
        err = loop_launches(d_a, d_b, n, batch, stream);
        /* ends the capture on every path, or the stream stays capturing */
        e = cudaStreamEndCapture(stream, &graph);
        if (err == cudaSuccess)
            err = e;
        if (err != cudaSuccess)
            goto done;
        err = cudaGraphInstantiate(&exec, graph, 0);
        if (err != cudaSuccess)
            goto done;
        for (int l = 0; l < launches && err == cudaSuccess; l++)
            err = cudaGraphLaunch(exec, stream);
        if (err != cudaSuccess)
            goto done;
    }
    err = loop_launches(d_a, d_b, n, left, stream);
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(stream);
done:
    if (err != cudaSuccess) {
        (void)cudaStreamSynchronize(stream);
        (void)cudaGetLastError();
    }
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    return err;
}
