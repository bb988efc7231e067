/* streams.cpp: streams, events, and the order in which the work of different streams runs
 * (README.md, "Streams").
 *
 * The legacy default stream (0) keeps the runtime's first model: an operation on it runs when
 * it is issued, once the work the blocking streams have queued has run (the legacy stream waits
 * for them, and they for it: what they are given later runs later anyway). Work issued to a
 * stream the program created waits in that stream's queue. A synchronising call says what the
 * host waits for (one stream, one event's record, the blocking streams, everything); the
 * runtime then runs that and what it depends on, one operation at a time, choosing among the
 * ready ones (the head of a queue, unless it waits for an event whose record has not run): the
 * first issued by default, one drawn from a seed with EMU_STREAM_ORDER=shuffle:SEED or
 * emu_shuffle_streams. Nothing but what the program declared orders two streams, so a
 * missing cudaStreamWaitEvent gives a wrong answer under some seed, as it may on a GPU.
 *
 * Stream capture (README.md, "Graphs"): while a stream captures, what it is given becomes a node
 * of a graph instead of an operation in its queue, depending on the nodes the stream's previous
 * work made (its dependency set); an event recorded there carries that set to the streams that
 * wait for it, which join the capture. A graph launch queues one operation per node, each on a
 * lane of its executable graph (a hidden queue, one per chain of the graph) and waiting for the
 * nodes it depends on in other lanes, between two operations on the launch's stream: the first
 * (the launch, recorded) that the roots wait for, the last (not recorded) that waits for the
 * lanes. So the launch is ordered in its stream, and two branches of a graph run in an order
 * drawn like two streams'.
 *
 * Every operation that runs, on any stream, is recorded (kind, stream, issue and run order, host
 * times) for emu_streams.h. One recursive mutex guards the queues, the handles' state, the
 * captures and the record; the work runs under it (a host function that calls the runtime, which
 * CUDA forbids, issues into the queues instead of deadlocking). */
#include "internal.h"
#include "emu_streams.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace emu {
struct Mark;
struct Capture;
}

/* The handles: small host objects, checked against their magic number. The state the
 * scheduler needs outlives them (a destroyed stream's work still runs, a destroyed event's
 * record still completes). */
struct CUstream_st {
    unsigned magic;
    int queue;                             /* its queue (and state) in the scheduler */
};
struct CUevent_st {
    unsigned magic;
    int index;
    unsigned flags;
    std::shared_ptr<emu::Mark> last;       /* the latest record; null: never recorded, or
                                              recorded in a capture */
    bool answered_not_ready;
    std::shared_ptr<emu::Capture> captured; /* the latest record was captured there */
    std::vector<size_t> captured_deps;      /* the capturing stream's dependency set then */
    int device;                             /* current when it was created */
};

/* A graph: nodes in the order they were captured, each after the nodes it depends on. Graphs
 * and executable graphs are checked against the set of live ones (so that a destroyed one is
 * refused), a node against its magic number. */
struct CUgraphNode_st {
    unsigned magic;
    emu::OpDesc desc;
    std::function<void()> work;            /* with the arguments of the capture */
    std::vector<size_t> deps;              /* indices of the nodes it depends on, sorted */
};
struct CUgraph_st {
    bool owned;                            /* handed to the program; false while captured */
    std::vector<std::unique_ptr<CUgraphNode_st>> nodes;
};

/* An executable graph: a copy of the graph's nodes, laid out on lanes (chains of the graph: a
 * node follows the one before it on its lane, and waits for its other dependencies). */
struct CUgraphExec_st {
    struct Node {
        emu::OpDesc desc;
        std::function<void()> work;
        std::vector<size_t> deps;          /* as in the graph */
        std::vector<size_t> cross;         /* the dependencies on other lanes */
        size_t lane;
    };
    int index;                             /* 1, 2, ... in creation order */
    std::vector<Node> nodes;
    std::vector<size_t> lanes;             /* their queues */
    std::shared_ptr<emu::Mark> last_end;   /* the end of the latest launch */
};

namespace emu {

/* One cudaEventRecord: complete once the record has run, that is once everything its stream
 * was given before it has run. An event points at its latest record; a cudaStreamWaitEvent keeps
 * the record that was the latest when it was issued, as CUDA's does. Graph nodes and the ends
 * of graph launches complete one too, for what depends on them. (Outside the anonymous
 * namespace: the event handle, a global type, holds one.) */
struct Mark {
    size_t queue = 0;
    uint64_t issue = 0;
    bool done = false;
    double ms = 0;
};

/* One capture sequence, from cudaStreamBeginCapture to cudaStreamEndCapture: the graph it
 * builds and the streams in it (the origin, and those that joined it by waiting for an event
 * recorded in it). */
struct Capture {
    unsigned long long id = 0;
    CUgraph_st *graph = nullptr;
    size_t origin = 0;                    /* the queue of the stream that began it */
    cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
    std::thread::id thread;               /* that began it */
    bool invalidated = false, ended = false;
    std::vector<size_t> streams;          /* their queues, the origin first */
};

namespace {

constexpr size_t SCHEDULE_LIMIT = 262144;
constexpr unsigned STREAM_MAGIC = 0x57e4a3u, EVENT_MAGIC = 0xe7e47u, NODE_MAGIC = 0x90de5u;

struct Op {
    OpDesc desc;
    size_t queue = 0;                 /* the queue it waits in */
    int stream = 0;                   /* its stream's number in the record */
    int device = 0;                   /* its stream's device (the legacy stream: the current
                                         device when it was issued) */
    int graph = 0;                    /* from a graph launch: the executable graph's index */
    uint64_t issue = 0;
    std::function<void()> work;
    std::shared_ptr<Mark> completes;  /* EVENT_RECORD, graph nodes, a graph launch's ends */
    std::vector<std::shared_ptr<Mark>> waits; /* it runs once these are done: EVENT_WAIT's record
                                                 (none: never recorded), a graph node's
                                                 dependencies, the end of a launch's lanes */
    int event = 0;
    bool runs_after_fault = false;    /* cudaStreamAddCallback: called with the error */
    bool recorded = true;             /* false: the end of a graph launch, not an operation */
    bool host_sync = false;           /* a node of a graph launched on the legacy stream */
};

struct Stream {
    int number = 0;                   /* in the record: 0 the legacy stream, 1, 2, ... the
                                         program's in creation order, -1 a graph's lane */
    bool blocking = true;             /* synchronises with the legacy stream */
    int device = 0;                   /* current when it was created */
    bool live = true;                 /* its handle is not destroyed (its work still runs) */
    std::deque<Op> queue;
    bool answered_not_ready = false;  /* cudaStreamQuery said NotReady: the next query runs it */
    std::shared_ptr<Capture> capture; /* it is capturing into this one (queues nothing) */
    std::vector<size_t> deps;         /* the nodes its next captured work depends on */
    std::vector<cudaGraphNode_t> info_deps;    /* cudaStreamGetCaptureInfo's arrays */
    std::vector<cudaGraphEdgeData> info_edges;
};

/* The record of one operation that ran (emu_op without the name, which is looked up when asked
 * for: a kernel's name costs an addr2line). */
struct Entry {
    OpKind kind;
    cudaMemcpyKind copy;
    bool host_sync, pageable, skipped;
    int stream, event, graph;
    int device, src_device, dst_device;
    unsigned long long blocks;
    unsigned threads;
    const void *kernel;
    size_t bytes;
    uint64_t issue, run;
    long long after;
    double start, end;
};

std::recursive_mutex g_mutex;
std::deque<Stream> g_streams(1);       /* by queue, stable references; 0 is the legacy stream,
                                          whose queue stays empty; the program's streams and the
                                          lanes of executable graphs */
std::set<size_t> g_queued;             /* the queues that are not empty: a program may create
                                          thousands of streams, each pick looks at these */
int g_live_streams, g_live_events, g_events_made, g_streams_made;
std::vector<std::shared_ptr<Capture>> g_captures; /* begun, not yet ended */
unsigned long long g_captures_made;
std::set<const CUgraph_st *> g_graphs;     /* live, captured ones included: a destroyed
                                              handle is refused, never read */
std::set<const CUgraphExec_st *> g_execs;
int g_live_graphs, g_execs_made;
std::vector<size_t> g_free_lanes;      /* lanes of destroyed executable graphs */
uint64_t g_issued, g_ran;
std::vector<Entry> g_schedule;
size_t g_dropped;
std::vector<unsigned long long> g_host_waits; /* g_issued at each wait of the host that ran work */
constexpr size_t HOST_WAITS_KEPT = 262144;   /* as many as the schedule keeps */
std::map<const void *, std::string> g_kernel_names;

/* the order: EMU_STREAM_ORDER, read again whenever it changes, unless emu_shuffle_streams set it */
bool g_shuffle, g_forced, g_env_read;
std::string g_env_seen;
uint64_t g_rng;

using Lock = std::lock_guard<std::recursive_mutex>;

double now_ms()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void read_order()
{
    if (g_forced)
        return;
    const char *e = std::getenv("EMU_STREAM_ORDER");
    std::string v = e ? e : "";
    if (g_env_read && v == g_env_seen)
        return;
    g_env_read = true;
    g_env_seen = v;
    g_shuffle = false;
    if (v.empty() || v == "inorder")
        return;
    if (v.compare(0, 8, "shuffle:") == 0 && v.size() > 8) {
        char *end;
        errno = 0;
        unsigned long long seed = std::strtoull(v.c_str() + 8, &end, 10);
        if (!*end && !errno && v[8] != '-') {
            g_shuffle = true;
            g_rng = splitmix(seed);
            return;
        }
    }
    std::fprintf(stderr, "emu: EMU_STREAM_ORDER=%s: expected inorder or shuffle:SEED (a decimal seed)\n",
                 v.c_str());
    std::exit(EXIT_FAILURE);
}

size_t queue_of(cudaStream_t s)
{
    return is_legacy(s) ? 0 : (size_t)s->queue;
}

/* the device of the work issued to queue q now: the legacy stream is every device's */
int queue_device(size_t q)
{
    return q == 0 ? current_device() : g_streams[q].device;
}

/* What a synchronisation waits for: the operations of queue i whose issue number is below
 * need[i]. */
using Need = std::vector<uint64_t>;
constexpr uint64_t ALL = std::numeric_limits<uint64_t>::max();

Need nothing_needed()
{
    return Need(g_streams.size(), 0);
}

void need_blocking(Need &n)
{
    for (size_t i : g_queued) /* the others have nothing to run */
        if (g_streams[i].blocking)
            n[i] = ALL;
}

bool need_mark(Need &n, const std::shared_ptr<Mark> &m)
{
    if (!m || m->done || n[m->queue] >= m->issue + 1)
        return false;
    n[m->queue] = m->issue + 1;
    return true;
}

bool runnable(const Op &op)
{
    for (const std::shared_ptr<Mark> &m : op.waits)
        if (!m->done)
            return false;
    return true;
}

/* Adds what the needed operations wait for, until nothing more is added. A wait points at a
 * mark issued before it, so this ends, and the needed set can always be run. */
void close_over_waits(Need &n)
{
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t i : g_queued)
            for (const Op &op : g_streams[i].queue) {
                if (op.issue >= n[i])
                    break;
                for (const std::shared_ptr<Mark> &m : op.waits)
                    grew |= need_mark(n, m);
            }
    }
}

bool anything_pending(const Need &n)
{
    for (size_t i : g_queued)
        if (g_streams[i].queue.front().issue < n[i])
            return true;
    return false;
}

void execute(Op &op, bool host_sync)
{
    if (!op.recorded) {
        op.completes->done = true;
        op.completes->ms = now_ms();
        return;
    }
    Entry e{};
    e.kind = op.desc.kind;
    e.copy = op.desc.copy;
    e.host_sync = host_sync || op.host_sync;
    e.pageable = op.desc.pageable;
    e.stream = op.stream;
    e.event = op.event;
    e.graph = op.graph;
    e.device = op.device;
    e.src_device = op.desc.src_device;
    e.dst_device = op.desc.dst_device;
    e.blocks = op.desc.blocks;
    e.threads = op.desc.threads;
    e.kernel = op.desc.kernel;
    e.bytes = op.desc.bytes;
    e.issue = op.issue;
    e.after = op.desc.kind == OpKind::EVENT_WAIT && !op.waits.empty() ? (long long)op.waits[0]->issue
                                                                       : -1;
    /* after a fault the device runs nothing and copies nothing; events and graph launches still
     * complete, so that nothing waits for ever */
    e.skipped = device_failed() && !op.runs_after_fault && op.desc.kind != OpKind::EVENT_RECORD &&
                op.desc.kind != OpKind::EVENT_WAIT && op.desc.kind != OpKind::GRAPH_LAUNCH;
    e.start = now_ms();
    if (!e.skipped && op.work)
        op.work();
    e.end = now_ms();
    if (op.completes) {
        op.completes->done = true;
        op.completes->ms = e.start;
    }
    e.run = g_ran++;
    if (g_schedule.size() < SCHEDULE_LIMIT)
        g_schedule.push_back(e);
    else
        ++g_dropped;
}

/* Runs what n needs, one ready operation at a time. */
void drain(Need n)
{
    read_order();
    close_over_waits(n);
    std::vector<size_t> ready;
    bool ran = false;
    for (;;) {
        ready.clear();
        bool left = false;
        n.resize(g_streams.size(), 0); /* a host function may have made a queue: not needed */
        for (size_t i : g_queued) {
            const std::deque<Op> &q = g_streams[i].queue;
            if (q.front().issue >= n[i])
                continue;
            left = true;
            if (runnable(q.front()))
                ready.push_back(i);
        }
        if (ready.empty()) {
            if (left) {
                std::fprintf(stderr, "emu: internal error: queued stream work that can never run\n");
                std::abort();
            }
            if (ran && g_host_waits.size() < HOST_WAITS_KEPT) /* the host waited for work */
                g_host_waits.push_back(g_issued);
            return;
        }
        size_t pick = 0;
        if (g_shuffle) {
            g_rng = splitmix(g_rng);
            pick = ready[g_rng % ready.size()];
        } else {
            pick = ready[0];
            for (size_t i : ready)
                if (g_streams[i].queue.front().issue < g_streams[pick].queue.front().issue)
                    pick = i;
        }
        Op op = std::move(g_streams[pick].queue.front());
        g_streams[pick].queue.pop_front();
        if (g_streams[pick].queue.empty())
            g_queued.erase(pick);
        execute(op, false);
        ran = true;
    }
}

/* Gives op its queue and issue number. */
void stamp(size_t q, Op &op)
{
    op.queue = q;
    op.issue = g_issued++;
    if (op.completes) {
        op.completes->queue = q;
        op.completes->issue = op.issue;
    }
}

void enqueue(size_t q, Op op)
{
    stamp(q, op);
    g_queued.insert(q);
    g_streams[q].queue.push_back(std::move(op));
}

void capture_node(Stream &st, Op op);

/* Queues op on its stream, or runs it now (the legacy stream, or the host waits) after what it
 * must follow; on a capturing stream it becomes a node of the graph instead. */
void issue(cudaStream_t s, Op op, bool host_waits)
{
    Lock lock(g_mutex);
    const size_t q = queue_of(s);
    if (g_streams[q].capture) {
        capture_node(g_streams[q], std::move(op));
        return;
    }
    op.stream = g_streams[q].number;
    op.device = queue_device(q);
    if (q != 0 && !host_waits) {
        enqueue(q, std::move(op));
        return;
    }
    stamp(q, op);
    Need n = nothing_needed();
    if (q == 0)
        need_blocking(n);
    else
        n[q] = ALL;
    for (const std::shared_ptr<Mark> &m : op.waits)
        need_mark(n, m);
    drain(n);
    execute(op, true);
    if (g_host_waits.size() < HOST_WAITS_KEPT) /* the host waited for the operation itself */
        g_host_waits.push_back(g_issued);
}

/* cudaStreamQuery and cudaEventQuery: the first query that finds work pending answers
 * cudaErrorNotReady and runs nothing; the next one runs the work and answers its status. So a
 * polling loop ends, and a program that reads results after one NotReady reads them unwritten. */
cudaError_t query(Need n, bool *answered)
{
    if (cudaError_t e = api_check())
        return e;
    close_over_waits(n);
    if (anything_pending(n) && !*answered) {
        *answered = true;
        return cudaErrorNotReady; /* not an error: cudaGetLastError does not see it */
    }
    drain(n);
    *answered = false;
    return sync_check();
}

const char *kind_word(OpKind k)
{
    switch (k) {
    case OpKind::KERNEL: return "kernel";
    case OpKind::MEMCPY: return "memcpy";
    case OpKind::MEMSET: return "memset";
    case OpKind::EVENT_RECORD: return "record";
    case OpKind::EVENT_WAIT: return "wait";
    case OpKind::HOST_FUNC: return "host";
    case OpKind::GRAPH_LAUNCH: return "graph";
    }
    return "?";
}

std::string op_name(const Entry &e)
{
    switch (e.kind) {
    case OpKind::KERNEL: {
        auto it = g_kernel_names.find(e.kernel);
        if (it == g_kernel_names.end())
            it = g_kernel_names.emplace(e.kernel, symbol_name(e.kernel)).first;
        return it->second;
    }
    case OpKind::MEMCPY:
        if (e.src_device >= 0 && e.dst_device >= 0 && e.src_device != e.dst_device)
            return "P2P"; /* between the memory of two devices */
        switch (e.copy) {
        case cudaMemcpyHostToDevice: return "H2D";
        case cudaMemcpyDeviceToHost: return "D2H";
        case cudaMemcpyDeviceToDevice: return "D2D";
        default: return "H2H";
        }
    default:
        return kind_word(e.kind);
    }
}

void fill(const Entry &e, emu_op *out)
{
    std::memset(out, 0, sizeof *out);
    switch (e.kind) {
    case OpKind::KERNEL: out->kind = EMU_OP_KERNEL; break;
    case OpKind::MEMCPY: out->kind = EMU_OP_MEMCPY; break;
    case OpKind::MEMSET: out->kind = EMU_OP_MEMSET; break;
    case OpKind::EVENT_RECORD: out->kind = EMU_OP_EVENT_RECORD; break;
    case OpKind::EVENT_WAIT: out->kind = EMU_OP_EVENT_WAIT; break;
    case OpKind::HOST_FUNC: out->kind = EMU_OP_HOST_FUNC; break;
    case OpKind::GRAPH_LAUNCH: out->kind = EMU_OP_GRAPH_LAUNCH; break;
    }
    std::snprintf(out->name, sizeof out->name, "%s", op_name(e).c_str());
    out->bytes = e.bytes;
    out->stream = e.stream;
    out->issue = e.issue;
    out->run = e.run;
    out->start_ms = e.start;
    out->end_ms = e.end;
    out->host_sync = e.host_sync;
    out->pageable = e.pageable;
    out->skipped = e.skipped;
    out->event = e.event;
    out->after = e.after;
    out->graph = e.graph;
    out->device = e.device;
    out->src_device = e.src_device;
    out->dst_device = e.dst_device;
    out->blocks = e.blocks;
    out->threads = e.threads;
}

/* ---- stream capture */

bool has_blocking_stream(const Capture &c)
{
    for (size_t q : c.streams)
        if (g_streams[q].blocking)
            return true;
    return false;
}

/* The legacy stream synchronises with the blocking streams: while one of them captures, work
 * on the legacy stream would depend on captured work (or the reverse), which CUDA refuses. */
cudaError_t legacy_capture_check(bool invalidate)
{
    cudaError_t e = cudaSuccess;
    for (const std::shared_ptr<Capture> &c : g_captures)
        if (has_blocking_stream(*c)) {
            e = cudaErrorStreamCaptureImplicit;
            if (invalidate)
                c->invalidated = true;
        }
    return e;
}

void delete_graph(CUgraph_st *g)
{
    for (std::unique_ptr<CUgraphNode_st> &n : g->nodes)
        n->magic = 0;
    g_graphs.erase(g);
    delete g;
}

/* Takes every stream of c out of capture. */
void end_capture(const std::shared_ptr<Capture> &c)
{
    for (size_t q : c->streams) {
        Stream &st = g_streams[q];
        st.capture.reset();
        st.deps.clear();
        st.info_deps.clear();
        st.info_edges.clear();
    }
    c->ended = true;
    g_captures.erase(std::find(g_captures.begin(), g_captures.end(), c));
}

void add_deps(std::vector<size_t> &to, const std::vector<size_t> &from)
{
    to.insert(to.end(), from.begin(), from.end());
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
}

/* The work given to a capturing stream: a node that depends on the stream's dependency set,
 * which it then replaces. A kernel's arguments are already copied into its work. */
void capture_node(Stream &st, Op op)
{
    CUgraph_st *g = st.capture->graph;
    auto node = std::make_unique<CUgraphNode_st>();
    node->magic = NODE_MAGIC;
    node->desc = op.desc;
    node->work = std::move(op.work);
    node->deps = std::move(st.deps);
    st.deps.assign(1, g->nodes.size());
    g->nodes.push_back(std::move(node));
}

/* Every node is one that the origin's dependency set depends on (or is in it): else a stream
 * that joined the capture has work the origin never waited for. */
bool all_joined(const CUgraph_st &g, const std::vector<size_t> &ends)
{
    std::vector<char> seen(g.nodes.size(), 0);
    std::vector<size_t> todo(ends);
    size_t reached = 0;
    while (!todo.empty()) {
        size_t i = todo.back();
        todo.pop_back();
        if (seen[i])
            continue;
        seen[i] = 1;
        ++reached;
        todo.insert(todo.end(), g.nodes[i]->deps.begin(), g.nodes[i]->deps.end());
    }
    return reached == g.nodes.size();
}

/* ---- executable graphs */

size_t take_lane()
{
    for (size_t k = 0; k < g_free_lanes.size(); ++k) {
        size_t q = g_free_lanes[k];
        if (g_streams[q].queue.empty()) { /* a destroyed graph's launch may still be queued */
            g_free_lanes.erase(g_free_lanes.begin() + (long)k);
            return q;
        }
    }
    g_streams.emplace_back();
    Stream &lane = g_streams.back();
    lane.number = -1;
    lane.blocking = false; /* the launch's end, on the launch's stream, waits for it */
    lane.live = false;
    return g_streams.size() - 1;
}

/* Lays the nodes out on lanes: a node goes on the lane of the first node it depends on that
 * is the last on its lane so far, or on a new lane, so that every lane is a chain of the
 * graph; what a node depends on elsewhere it waits for. */
CUgraphExec_st *instantiate(const CUgraph_st &g)
{
    auto x = new CUgraphExec_st{};
    x->index = ++g_execs_made;
    std::vector<size_t> tails; /* the last node on each lane */
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const CUgraphNode_st &n = *g.nodes[i];
        CUgraphExec_st::Node xn{n.desc, n.work, n.deps, {}, tails.size()};
        for (size_t d : n.deps)
            if (tails[x->nodes[d].lane] == d) {
                xn.lane = x->nodes[d].lane;
                break;
            }
        if (xn.lane == tails.size())
            tails.push_back(i);
        else
            tails[xn.lane] = i;
        for (size_t d : n.deps)
            if (x->nodes[d].lane != xn.lane)
                xn.cross.push_back(d);
        x->nodes.push_back(std::move(xn));
    }
    for (size_t l = 0; l < tails.size(); ++l)
        x->lanes.push_back(take_lane());
    return x;
}

/* One launch of x on queue q: a recorded GRAPH_LAUNCH on q (after the previous launch of x),
 * the nodes on x's lanes, the roots after the launch, and an end on q that waits for the lanes.
 * On the legacy stream all of it runs before this returns. */
void launch_graph(CUgraphExec_st &x, cudaStream_t s)
{
    const size_t q = queue_of(s);
    const int number = g_streams[q].number;
    const int device = queue_device(q);
    Op start;
    start.desc = OpDesc{OpKind::GRAPH_LAUNCH, nullptr, cudaMemcpyDefault, 0, false};
    start.graph = x.index;
    start.completes = std::make_shared<Mark>();
    if (x.last_end)
        start.waits.push_back(x.last_end);
    std::shared_ptr<Mark> started = start.completes;
    issue(s, std::move(start), false);

    std::vector<std::shared_ptr<Mark>> done(x.nodes.size()), tails(x.lanes.size());
    for (size_t i = 0; i < x.nodes.size(); ++i) {
        const CUgraphExec_st::Node &n = x.nodes[i];
        Op op;
        op.desc = n.desc;
        op.work = n.work;
        op.stream = number;
        op.device = device;
        op.graph = x.index;
        op.host_sync = q == 0;
        op.completes = done[i] = tails[n.lane] = std::make_shared<Mark>();
        if (n.deps.empty())
            op.waits.push_back(started);
        for (size_t d : n.cross)
            op.waits.push_back(done[d]);
        enqueue(x.lanes[n.lane], std::move(op));
    }

    Op end;
    end.desc = OpDesc{OpKind::GRAPH_LAUNCH, nullptr, cudaMemcpyDefault, 0, false};
    end.recorded = false;
    end.completes = x.last_end = std::make_shared<Mark>();
    end.waits = std::move(tails);
    issue(s, std::move(end), false);
}

/* A graph launched into a capturing stream: its nodes are captured there, as a child graph's
 * would run (CUDA adds one child-graph node). */
void capture_graph(Stream &st, const CUgraphExec_st &x)
{
    CUgraph_st *g = st.capture->graph;
    const size_t first = g->nodes.size();
    std::vector<char> has_dependent(x.nodes.size(), 0);
    for (const CUgraphExec_st::Node &n : x.nodes) {
        auto node = std::make_unique<CUgraphNode_st>();
        node->magic = NODE_MAGIC;
        node->desc = n.desc;
        node->work = n.work;
        if (n.deps.empty())
            node->deps = st.deps;
        for (size_t d : n.deps) {
            node->deps.push_back(first + d);
            has_dependent[d] = 1;
        }
        std::sort(node->deps.begin(), node->deps.end());
        g->nodes.push_back(std::move(node));
    }
    if (x.nodes.empty())
        return;
    st.deps.clear();
    for (size_t i = 0; i < x.nodes.size(); ++i)
        if (!has_dependent[i])
            st.deps.push_back(first + i);
}

cudaGraphNodeType node_type(OpKind k)
{
    switch (k) {
    case OpKind::KERNEL: return cudaGraphNodeTypeKernel;
    case OpKind::MEMCPY: return cudaGraphNodeTypeMemcpy;
    case OpKind::MEMSET: return cudaGraphNodeTypeMemset;
    case OpKind::HOST_FUNC: return cudaGraphNodeTypeHost;
    default: return cudaGraphNodeTypeEmpty;
    }
}

} /* namespace */

bool is_legacy(cudaStream_t s)
{
    return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

} /* namespace emu */

using namespace emu;

namespace emu {

bool valid_stream(cudaStream_t s)
{
    return is_legacy(s) || s->magic == STREAM_MAGIC;
}

int stream_device(cudaStream_t s)
{
    Lock lock(g_mutex);
    return queue_device(queue_of(s));
}

void submit(cudaStream_t stream, const OpDesc &d, std::function<void()> work, bool host_waits)
{
    Op op;
    op.desc = d;
    op.work = std::move(work);
    issue(stream, std::move(op), host_waits);
}

void drain_all()
{
    Lock lock(g_mutex);
    drain(Need(g_streams.size(), ALL));
}

void drain_legacy()
{
    Lock lock(g_mutex);
    Need n = nothing_needed();
    need_blocking(n);
    drain(n);
}

cudaError_t capture_check(cudaStream_t stream)
{
    Lock lock(g_mutex);
    if (is_legacy(stream))
        return legacy_capture_check(true);
    const Stream &st = g_streams[queue_of(stream)];
    return st.capture && st.capture->invalidated ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
}

cudaError_t capture_sync_check()
{
    Lock lock(g_mutex);
    for (const std::shared_ptr<Capture> &c : g_captures)
        c->invalidated = true;
    return g_captures.empty() ? cudaSuccess : cudaErrorStreamCaptureUnsupported;
}

bool capturing(cudaStream_t stream)
{
    Lock lock(g_mutex);
    return !is_legacy(stream) && g_streams[queue_of(stream)].capture != nullptr;
}

} /* namespace emu */

using namespace emu;

static bool valid_event(cudaEvent_t e)
{
    return e && e->magic == EVENT_MAGIC;
}

/* The host may not wait for a capturing stream (its work is not going to run), nor for the
 * legacy stream while a blocking stream captures: cudaStreamSynchronize and cudaStreamQuery. */
static cudaError_t stream_sync_capture_check(cudaStream_t stream)
{
    if (is_legacy(stream))
        return legacy_capture_check(true);
    Stream &st = g_streams[queue_of(stream)];
    if (!st.capture)
        return cudaSuccess;
    st.capture->invalidated = true;
    return cudaErrorStreamCaptureUnsupported;
}

/* An event whose latest record was captured, in a capture still under way, stands for no work
 * that will run: the host may not wait for it or time it. */
static cudaError_t event_capture_check(cudaEvent_t event)
{
    if (!event->captured || event->captured->ended)
        return cudaSuccess;
    event->captured->invalidated = true;
    return cudaErrorCapturedEvent;
}

static bool valid_graph(cudaGraph_t g)
{
    Lock lock(g_mutex);
    return g_graphs.count(g) != 0;
}

static bool valid_exec(cudaGraphExec_t x)
{
    Lock lock(g_mutex);
    return g_execs.count(x) != 0;
}

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
    return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags)
{
    if (!stream || (flags & ~(unsigned)cudaStreamNonBlocking))
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    g_streams.emplace_back();
    g_streams.back().number = ++g_streams_made;
    g_streams.back().blocking = !(flags & cudaStreamNonBlocking);
    g_streams.back().device = current_device();
    ++g_live_streams;
    *stream = new CUstream_st{STREAM_MAGIC, (int)g_streams.size() - 1};
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    if (is_legacy(stream) || !valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    {
        /* as on a GPU, it returns at once: the queued work runs at a later synchronisation */
        Lock lock(g_mutex);
        const size_t q = queue_of(stream);
        Stream &st = g_streams[q];
        if (std::shared_ptr<Capture> c = st.capture) {
            /* its capture can no longer be what the program meant; without its origin it
             * cannot even be ended */
            c->invalidated = true;
            if (c->origin == q) {
                end_capture(c);
                delete_graph(c->graph);
                c->graph = nullptr;
            } else {
                c->streams.erase(std::find(c->streams.begin(), c->streams.end(), q));
                st.capture.reset();
                st.deps.clear();
            }
        }
        st.live = false;
        --g_live_streams;
    }
    stream->magic = 0;
    delete stream;
    return api_check();
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    {
        Lock lock(g_mutex);
        if (cudaError_t e = stream_sync_capture_check(stream))
            return record(e);
    }
    if (is_legacy(stream)) {
        drain_legacy();
    } else {
        Lock lock(g_mutex);
        Need n = nothing_needed();
        n[queue_of(stream)] = ALL;
        drain(n);
    }
    return sync_check();
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    Lock lock(g_mutex);
    if (cudaError_t e = stream_sync_capture_check(stream))
        return record(e);
    Need n = nothing_needed();
    if (is_legacy(stream))
        need_blocking(n);
    else
        n[queue_of(stream)] = ALL;
    return query(n, &g_streams[queue_of(stream)].answered_not_ready);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    if (!valid_stream(stream) || !valid_event(event))
        return record(cudaErrorInvalidResourceHandle);
    if (flags != 0)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    if (cudaError_t e = capture_check(stream))
        return record(e);
    const std::shared_ptr<Capture> captured =
        event->captured && !event->captured->ended ? event->captured : nullptr;
    Stream &st = g_streams[queue_of(stream)];
    if (st.capture) {
        if (captured == st.capture) { /* a join, or a wait within one stream */
            add_deps(st.deps, event->captured_deps);
            return cudaSuccess;
        }
        if (captured) { /* two captures would become one */
            st.capture->invalidated = captured->invalidated = true;
            return record(cudaErrorStreamCaptureMerge);
        }
        if (event->last) { /* work that is not in the graph */
            st.capture->invalidated = true;
            return record(cudaErrorStreamCaptureIsolation);
        }
        return cudaSuccess; /* never recorded: nothing to wait for */
    }
    if (captured) {
        if (is_legacy(stream)) { /* the legacy stream cannot join a capture */
            captured->invalidated = true;
            return record(cudaErrorStreamCaptureUnsupported);
        }
        if (captured->invalidated)
            return record(cudaErrorInvalidValue);
        /* a fork: the stream joins the capture, its next work after the record's */
        st.capture = captured;
        st.deps = event->captured_deps;
        captured->streams.push_back(queue_of(stream));
        return cudaSuccess;
    }
    Op op;
    op.desc = OpDesc{OpKind::EVENT_WAIT, nullptr, cudaMemcpyDefault, 0, false};
    if (event->last) /* never recorded: the wait is met at once (CUDA's rule) */
        op.waits.push_back(event->last);
    op.event = event->index;
    issue(stream, std::move(op), false);
    return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *user_data)
{
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    if (!fn)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    if (cudaError_t e = capture_check(stream))
        return record(e);
    /* not called once a fault is pending, as CUDA does not call it after an error */
    submit(stream, OpDesc{OpKind::HOST_FUNC, nullptr, cudaMemcpyDefault, 0, false},
           [fn, user_data] { fn(user_data); });
    return cudaSuccess;
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                  void *user_data, unsigned int flags)
{
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    if (!callback || flags != 0)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    if (cudaError_t e = capture_check(stream))
        return record(e);
    if (capturing(stream)) { /* CUDA does not capture it (cudaLaunchHostFunc is captured) */
        g_streams[queue_of(stream)].capture->invalidated = true;
        return record(cudaErrorStreamCaptureUnsupported);
    }
    Op op;
    op.desc = OpDesc{OpKind::HOST_FUNC, nullptr, cudaMemcpyDefault, 0, false};
    op.work = [stream, callback, user_data] { callback(stream, device_error(), user_data); };
    op.runs_after_fault = true; /* called with the error, as CUDA calls it */
    issue(stream, std::move(op), false);
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    if (!event || (flags & ~(unsigned)(cudaEventBlockingSync | cudaEventDisableTiming |
                                       cudaEventInterprocess)))
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    ++g_live_events;
    *event = new CUevent_st{EVENT_MAGIC, ++g_events_made, flags, nullptr, false, nullptr, {},
                            current_device()};
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    if (!valid_event(event))
        return record(cudaErrorInvalidResourceHandle);
    {
        Lock lock(g_mutex);
        --g_live_events;
        event->magic = 0;
        delete event; /* a queued record keeps its Mark: it still completes */
    }
    return api_check();
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    if (!valid_event(event) || !valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    if (event->device != queue_device(queue_of(stream)))
        return record(cudaErrorInvalidResourceHandle); /* an event and a stream of two devices */
    if (cudaError_t e = capture_check(stream))
        return record(e);
    event->answered_not_ready = false;
    Stream &st = g_streams[queue_of(stream)];
    if (st.capture) { /* no node: the event carries the stream's dependency set */
        event->last = nullptr;
        event->captured = st.capture;
        event->captured_deps = st.deps;
        return cudaSuccess;
    }
    event->captured.reset();
    event->captured_deps.clear();
    Op op;
    op.desc = OpDesc{OpKind::EVENT_RECORD, nullptr, cudaMemcpyDefault, 0, false};
    op.completes = std::make_shared<Mark>();
    op.event = event->index;
    event->last = op.completes;
    issue(stream, std::move(op), false);
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    if (!valid_event(event))
        return record(cudaErrorInvalidResourceHandle);
    {
        Lock lock(g_mutex);
        if (cudaError_t e = event_capture_check(event))
            return record(e);
        Need n = nothing_needed();
        need_mark(n, event->last);
        drain(n);
    }
    return sync_check();
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    if (!valid_event(event))
        return record(cudaErrorInvalidResourceHandle);
    Lock lock(g_mutex);
    if (cudaError_t e = event_capture_check(event))
        return record(e);
    Need n = nothing_needed();
    need_mark(n, event->last);
    return query(n, &event->answered_not_ready);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms)
        return record(cudaErrorInvalidValue);
    if (!valid_event(start) || !valid_event(end) || start->device != end->device)
        return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    cudaError_t captured = event_capture_check(start);
    if (cudaError_t e = event_capture_check(end))
        captured = e;
    if (captured)
        return record(captured);
    if (!start->last || !end->last || ((start->flags | end->flags) & cudaEventDisableTiming))
        return record(cudaErrorInvalidResourceHandle);
    if (!start->last->done || !end->last->done)
        return cudaErrorNotReady; /* recorded, not yet run: as CUDA answers, not an error */
    *ms = (float)(end->last->ms - start->last->ms);
    return cudaSuccess;
}

/* ---- stream capture */

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode)
{
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    if (is_legacy(stream))
        return record(cudaErrorStreamCaptureUnsupported); /* CUDA's rule for the legacy stream */
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    const size_t q = queue_of(stream);
    Stream &st = g_streams[q];
    if (st.capture)
        return record(cudaErrorIllegalState);
    auto c = std::make_shared<Capture>();
    c->id = ++g_captures_made;
    c->graph = new CUgraph_st{false, {}};
    g_graphs.insert(c->graph);
    c->origin = q;
    c->mode = mode;
    c->thread = std::this_thread::get_id();
    c->streams.push_back(q);
    st.capture = c;
    st.deps.clear();
    g_captures.push_back(std::move(c));
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    if (!graph)
        return record(cudaErrorInvalidValue);
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    const size_t q = queue_of(stream);
    const std::shared_ptr<Capture> c = is_legacy(stream) ? nullptr : g_streams[q].capture;
    if (!c)
        return record(cudaErrorIllegalState); /* not capturing */
    if (c->origin != q)
        return record(cudaErrorStreamCaptureUnmatched);
    if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id())
        return record(cudaErrorStreamCaptureWrongThread);
    const bool joined = all_joined(*c->graph, g_streams[q].deps);
    end_capture(c);
    CUgraph_st *g = c->graph;
    c->graph = nullptr;
    if (c->invalidated || !joined) {
        delete_graph(g);
        *graph = nullptr;
        return record(c->invalidated ? cudaErrorStreamCaptureInvalidated
                                     : cudaErrorStreamCaptureUnjoined);
    }
    g->owned = true;
    ++g_live_graphs;
    *graph = g;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status)
{
    if (!status)
        return record(cudaErrorInvalidValue);
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    if (is_legacy(stream)) {
        if (cudaError_t e = legacy_capture_check(false)) /* the capture goes on */
            return record(e);
        *status = cudaStreamCaptureStatusNone;
        return cudaSuccess;
    }
    const Stream &st = g_streams[queue_of(stream)];
    *status = !st.capture                ? cudaStreamCaptureStatusNone
              : st.capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                        : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus *status,
                                     unsigned long long *id, cudaGraph_t *graph,
                                     const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                     size_t *num_deps)
{
    if (edges && !deps)
        return record(cudaErrorInvalidValue);
    cudaError_t e = cudaStreamIsCapturing(stream, status);
    if (e != cudaSuccess || *status != cudaStreamCaptureStatusActive)
        return e; /* the rest is valid only for an active capture */
    Lock lock(g_mutex);
    Stream &st = g_streams[queue_of(stream)];
    const CUgraph_st *g = st.capture->graph;
    st.info_deps.clear();
    for (size_t d : st.deps)
        st.info_deps.push_back(g->nodes[d].get());
    st.info_edges.assign(st.deps.size(), cudaGraphEdgeData{});
    if (id)
        *id = st.capture->id;
    if (graph)
        *graph = st.capture->graph;
    if (deps)
        *deps = st.info_deps.data();
    if (edges)
        *edges = st.info_edges.data();
    if (num_deps)
        *num_deps = st.deps.size();
    return cudaSuccess;
}

/* ---- graphs */

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags)
{
    /* auto-free and node priorities change nothing here; upload and device launch are not
     * modelled (upload is cudaGraphInstantiateWithParams's) */
    const unsigned long long known = cudaGraphInstantiateFlagAutoFreeOnLaunch |
                                     cudaGraphInstantiateFlagUseNodePriority;
    if (!exec || !valid_graph(graph) || (flags & ~known))
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    *exec = instantiate(*graph);
    g_execs.insert(*exec);
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    if (!valid_exec(exec))
        return record(cudaErrorInvalidValue);
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    if (cudaError_t e = capture_check(stream))
        return record(e);
    Stream &st = g_streams[queue_of(stream)];
    if (st.capture)
        capture_graph(st, *exec);
    else
        launch_graph(*exec, stream);
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    if (!valid_exec(exec))
        return record(cudaErrorInvalidValue);
    {
        /* a launch still queued runs: its operations hold their own copies */
        Lock lock(g_mutex);
        g_free_lanes.insert(g_free_lanes.end(), exec->lanes.begin(), exec->lanes.end());
        g_execs.erase(exec);
        delete exec;
    }
    return api_check();
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    if (!valid_graph(graph))
        return record(cudaErrorInvalidValue);
    {
        Lock lock(g_mutex);
        if (!graph->owned)
            return record(cudaErrorIllegalState); /* still being captured */
        --g_live_graphs;
        delete_graph(graph);
    }
    return api_check();
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *num_nodes)
{
    if (!valid_graph(graph) || !num_nodes)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    const size_t count = graph->nodes.size();
    if (!nodes) {
        *num_nodes = count;
        return cudaSuccess;
    }
    for (size_t i = 0; i < *num_nodes; ++i)
        nodes[i] = i < count ? graph->nodes[i].get() : nullptr;
    *num_nodes = std::min(*num_nodes, count);
    return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType *type)
{
    if (!node || node->magic != NODE_MAGIC || !type)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    *type = node_type(node->desc.kind);
    return cudaSuccess;
}

/* ---- emu_streams.h */

void emu_shuffle_streams(unsigned long long seed)
{
    Lock lock(g_mutex);
    g_forced = true;
    g_shuffle = true;
    g_rng = splitmix(seed);
}

int emu_live_streams(void)
{
    Lock lock(g_mutex);
    return g_live_streams;
}

int emu_live_events(void)
{
    Lock lock(g_mutex);
    return g_live_events;
}

int emu_live_graphs(void)
{
    Lock lock(g_mutex);
    return g_live_graphs;
}

int emu_live_graph_execs(void)
{
    Lock lock(g_mutex);
    return (int)g_execs.size();
}

int emu_stream_index(cudaStream_t stream)
{
    if (is_legacy(stream))
        return 0;
    Lock lock(g_mutex);
    if (stream->magic != STREAM_MAGIC)
        return -1;
    const Stream &st = g_streams[queue_of(stream)];
    return st.live ? st.number : -1;
}

int emu_graph_exec_index(cudaGraphExec_t exec)
{
    Lock lock(g_mutex);
    return valid_exec(exec) ? exec->index : -1;
}

size_t emu_schedule_count(void)
{
    Lock lock(g_mutex);
    return g_schedule.size();
}

size_t emu_schedule_dropped(void)
{
    Lock lock(g_mutex);
    return g_dropped;
}

int emu_schedule_get(size_t i, struct emu_op *out)
{
    Lock lock(g_mutex);
    if (!out || i >= g_schedule.size())
        return -1;
    fill(g_schedule[i], out);
    return 0;
}

void emu_schedule_reset(void)
{
    Lock lock(g_mutex);
    g_schedule.clear();
    g_dropped = 0;
    g_host_waits.clear();
}

size_t emu_host_wait_count(void)
{
    Lock lock(g_mutex);
    return g_host_waits.size();
}

unsigned long long emu_host_wait_issued(size_t i)
{
    Lock lock(g_mutex);
    return i < g_host_waits.size() ? g_host_waits[i] : 0;
}

int emu_schedule_write_tsv(const char *path)
{
    Lock lock(g_mutex);
    FILE *f = path ? std::fopen(path, "w") : nullptr;
    if (!f)
        return -1;
    std::fprintf(f, "issue\trun\tstream\tkind\tname\tbytes\tstart_ms\tend_ms\thost_sync\tpageable\t"
                    "skipped\tevent\tafter\tgraph\tdevice\tsrc_device\tdst_device\tblocks\t"
                    "threads\n");
    for (const Entry &e : g_schedule)
        std::fprintf(f, "%llu\t%llu\t%d\t%s\t%s\t%zu\t%.6f\t%.6f\t%d\t%d\t%d\t%d\t%lld\t%d\t%d\t%d\t%d"
                        "\t%llu\t%u\n",
                     (unsigned long long)e.issue, (unsigned long long)e.run, e.stream,
                     kind_word(e.kind), op_name(e).c_str(), e.bytes, e.start, e.end, e.host_sync,
                     e.pageable, e.skipped, e.event, e.after, e.graph, e.device, e.src_device,
                     e.dst_device, e.blocks, e.threads);
    return std::fclose(f) == 0 ? 0 : -1;
}

} /* extern "C" */
