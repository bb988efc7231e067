/* step4_graph.cu: chapter 08, step 4 of 4, a CUDA graph of a launch-bound loop.
 * Your file.
 *
 * The contract (transfers.h): graph_loop(d_a, d_b, n, iterations, stream) does what plain_loop
 * (given) does, chapter 06's blur, bias and copy `iterations` times on `stream`, and returns
 * once the work is done. At the small n the grader uses, each kernel runs for a microsecond or
 * two and the loop is bound by the launches: the CPU takes a few microseconds to launch each.
 * As given, graph_loop is plain_loop.
 *
 * TODO: capture the launches once into a CUDA graph (cudaStreamBeginCapture on `stream`, the
 * launches: loop_launches, given, launches a number of iterations without waiting,
 * cudaStreamEndCapture), instantiate it (cudaGraphInstantiate(&exec, graph, 0)),
 * launch the executable graph as many times as the loop needs (cudaGraphLaunch), wait for the
 * stream, and destroy the executable and the graph on every path. Capture several iterations at
 * once: one graph launch then stands for dozens of kernels. Check every call.
 *
 * What the grader measures (make grade CH=08 STEP=4):
 *   correct  n of 1, 4097 and 40009 floats, 1, 7 and 1000 iterations, bit-exact against
 *            plain_loop on the same inputs, twice (the second time, on the CPU backend, the
 *            graph's nodes and the streams run in a shuffled order)
 *   concept  on the CPU backend, from the schedule: 1000 iterations ran as graph launches
 *            (at least 90% of the kernels inside one), of one executable graph, instantiated
 *            once; afterwards no graph and no executable graph left
 *   speed    on a GPU, at n = 4096, 10000 iterations (30000 kernels): at least 1.5x plain_loop,
 *            timed in the same run
 *
 * The lesson is README.md beside this file; its hints for step 4 are there too. */
#include "transfers.h"

cudaError_t graph_loop(float *d_a, float *d_b, int n, int iterations, cudaStream_t stream)
{
    return plain_loop(d_a, d_b, n, iterations, stream);
}
