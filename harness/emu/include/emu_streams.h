/* emu_streams.h: the emu backend's stream scheduler, as a grader sees it (emu only; the
 * functions are in build/emu/libemu.a, harness/emu/src/streams.cpp; harness/emu/README.md,
 * "Streams", says what is modelled).
 *
 * Work issued to a stream made with cudaStreamCreate* waits in that stream's queue until the
 * program synchronises; then the runtime runs, one at a time, operations whose declared
 * dependencies (stream order, cudaStreamWaitEvent, the legacy default stream) are met: in
 * issue order by default, or picked at random from a seed, so that a dependency the program
 * forgot to declare gives a wrong answer. Every operation that runs, on any stream, is
 * recorded, so that a grader can check the order and a lesson can draw it. A graph launch
 * (cudaGraphLaunch, README.md "Graphs") is recorded once, as EMU_OP_GRAPH_LAUNCH, and its nodes
 * as the operations they are, each marked with the launch's executable graph. */
#ifndef EMU_STREAMS_H
#define EMU_STREAMS_H

#include <stddef.h>

#include <driver_types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* From now on, run the ready work of different streams in an order drawn from `seed` (the
 * same seed and the same program give the same order), as EMU_STREAM_ORDER=shuffle:SEED
 * does; it overrides the environment for the rest of the process. The harness's
 * gpu_shuffle_schedule() calls it, so a grader's second run shuffles streams too. */
void emu_shuffle_streams(unsigned long long seed);

/* Streams and events whose handles are live: created and not yet destroyed (the work of a
 * destroyed stream still runs, as on a GPU). They answer in every state, after a sticky
 * error too, as emu_live_allocations does. */
int emu_live_streams(void);
int emu_live_events(void);
/* Graphs (from cudaStreamEndCapture, until cudaGraphDestroy) and executable graphs (from
 * cudaGraphInstantiate, until cudaGraphExecDestroy) whose handles are live, likewise. */
int emu_live_graphs(void);
int emu_live_graph_execs(void);

/* The index the schedule gives `stream`: 1, 2, ... in creation order; 0 for the legacy default
 * stream (0, cudaStreamLegacy) and cudaStreamPerThread, which is treated as it; -1 for a handle
 * that is not a live stream. */
int emu_stream_index(cudaStream_t stream);

/* The index the schedule gives an executable graph (struct emu_op's graph): 1, 2, ... in
 * creation order; -1 for a handle that is not a live executable graph. */
int emu_graph_exec_index(cudaGraphExec_t exec);

enum emu_op_kind {
    EMU_OP_KERNEL,
    EMU_OP_MEMCPY,
    EMU_OP_MEMSET,
    EMU_OP_EVENT_RECORD,  /* cudaEventRecord */
    EMU_OP_EVENT_WAIT,    /* cudaStreamWaitEvent */
    EMU_OP_HOST_FUNC,     /* cudaLaunchHostFunc, cudaStreamAddCallback */
    EMU_OP_GRAPH_LAUNCH,  /* cudaGraphLaunch, once a launch: it runs when the work its stream
                             was given before has run, and the graph's roots run after it. So
                             the host issued as many graph launches as there are of these, and
                             as many kernel launches of its own as EMU_OP_KERNEL ops with
                             graph == 0 */
};

/* One operation that ran. Times are host time (CLOCK_MONOTONIC, milliseconds), never a GPU's. */
struct emu_op {
    enum emu_op_kind kind;
    char name[128];            /* the kernel's name; "H2D", "D2H", "D2D", "H2H", "P2P" (between
                                  the memory of two devices) for copies;
                                  "memset", "record", "wait", "host"; "graph" */
    size_t bytes;              /* copies and memsets */
    int stream;                /* emu_stream_index's numbering: 0 the legacy stream; a graph's
                                  node and its launch: the stream it was launched on */
    unsigned long long issue;  /* the order the program issued it in, from 0 (every stream) */
    unsigned long long run;    /* the order it ran in, from 0 */
    double start_ms, end_ms;
    int host_sync;             /* 1: it ran when it was issued, the host waiting for it (the
                                  legacy stream; a copy to pageable host memory) */
    int pageable;              /* copies: the host side was pageable memory (not from
                                  cudaMallocHost/cudaHostAlloc, not cudaHostRegister'ed): to the
                                  host, the host waited; from the host, the source was staged
                                  when the copy was issued */
    int skipped;               /* 1: a kernel fault was pending, so it did nothing */
    int event;                 /* record and wait: the event, 1, 2, ... in creation order */
    long long after;           /* wait: the issue number of the record it waited for; -1 when
                                  the event had never been recorded (the wait is then met) */
    int graph;                 /* a graph launch and the nodes it ran: the executable graph,
                                  emu_graph_exec_index's numbering; 0 for everything else */
    int device;                /* the device of the stream it ran on (the legacy stream, one for
                                  every device: the current device when it was issued); a
                                  kernel: the device it ran on (emu_devices.h) */
    int src_device, dst_device; /* copies: the devices of the source and the destination, -1
                                  for host memory (a copy between two devices is named "P2P");
                                  -1 for every other operation */
    unsigned long long blocks; /* a kernel: the blocks of its grid; 0 for everything else */
    unsigned threads;          /* a kernel: the threads of a block; 0 for everything else */
};

/* The operations recorded since the start or the last emu_schedule_reset, in the order they
 * ran (entry i has run == i + the number run before the reset). At most 262144 are kept;
 * emu_schedule_dropped() counts those that ran after the record was full. */
size_t emu_schedule_count(void);
size_t emu_schedule_dropped(void);
/* The host's waits since the start or the last emu_schedule_reset: each time the host blocked
 * until device work had run (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize,
 * the cudaStreamQuery or cudaEventQuery that runs what it finds pending, an operation on the
 * legacy stream or one the host waits for, such as a copy to pageable memory) and some had to
 * run. emu_host_wait_issued(i) is the count of operations issued, on every stream, when wait i
 * ended: an operation whose issue number (struct emu_op) is at least that was issued after the
 * host had waited. 0 for i past the count. The first 262144 are kept. */
size_t emu_host_wait_count(void);
unsigned long long emu_host_wait_issued(size_t i);
/* Fills *out with entry i; 0, or -1 when i >= emu_schedule_count(). */
int emu_schedule_get(size_t i, struct emu_op *out);
void emu_schedule_reset(void);
/* Writes the record as a header line and one tab-separated row an operation (the fields of
 * struct emu_op, kind as a word); 0, or -1 when the file cannot be written. */
int emu_schedule_write_tsv(const char *path);

#ifdef __cplusplus
}
#endif

#endif
