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
 * Every operation that runs, on any stream, is recorded (kind, stream, issue and run order, host
 * times) for emu_streams.h. One recursive mutex guards the queues, the handles' state and the
 * record; the work runs under it (a host function that calls the runtime, which CUDA forbids,
 * issues into the queues instead of deadlocking). */
#include "internal.h"
#include "emu_streams.h"

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
#include <vector>

namespace emu {
struct Mark;
}

/* The handles: small host objects, checked against their magic number. The state the
 * scheduler needs outlives them (a destroyed stream's work still runs, a destroyed event's
 * record still completes). */
struct CUstream_st {
    unsigned magic;
    int index;
};
struct CUevent_st {
    unsigned magic;
    int index;
    unsigned flags;
    std::shared_ptr<emu::Mark> last;       /* the latest record; null: never recorded */
    bool answered_not_ready;
};

namespace emu {

/* One cudaEventRecord: complete once the record has run, that is once everything its stream
 * was given before it has run. An event points at its latest record; a cudaStreamWaitEvent keeps
 * the record that was the latest when it was issued, as CUDA's does. (Outside the anonymous
 * namespace: the event handle, a global type, holds one.) */
struct Mark {
    int stream = 0;
    uint64_t issue = 0;
    bool done = false;
    double ms = 0;
};

namespace {

constexpr size_t SCHEDULE_LIMIT = 262144;
constexpr unsigned STREAM_MAGIC = 0x57e4a3u, EVENT_MAGIC = 0xe7e47u;

struct Op {
    OpDesc desc;
    int stream = 0;
    uint64_t issue = 0;
    std::function<void()> work;
    std::shared_ptr<Mark> completes;  /* EVENT_RECORD */
    std::shared_ptr<Mark> waits;      /* EVENT_WAIT; null when the event was never recorded */
    int event = 0;
    bool runs_after_fault = false;    /* cudaStreamAddCallback: called with the error */
};

struct Stream {
    bool blocking = true;             /* synchronises with the legacy stream */
    bool live = true;                 /* its handle is not destroyed (its work still runs) */
    std::deque<Op> queue;
    bool answered_not_ready = false;  /* cudaStreamQuery said NotReady: the next query runs it */
};

/* The record of one operation that ran (emu_op without the name, which is looked up when asked
 * for: a kernel's name costs an addr2line). */
struct Entry {
    OpKind kind;
    cudaMemcpyKind copy;
    bool host_sync, pageable, skipped;
    int stream, event;
    const void *kernel;
    size_t bytes;
    uint64_t issue, run;
    long long after;
    double start, end;
};

std::recursive_mutex g_mutex;
std::deque<Stream> g_streams(1);       /* by index, stable references; 0 is the legacy stream,
                                          whose queue stays empty */
std::set<size_t> g_queued;             /* the streams whose queue is not empty: a program may
                                          create thousands of streams, each pick looks at these */
int g_live_streams, g_live_events, g_events_made;
uint64_t g_issued, g_ran;
std::vector<Entry> g_schedule;
size_t g_dropped;
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

int index_of(cudaStream_t s)
{
    return is_legacy(s) ? 0 : s->index;
}

/* What a synchronisation waits for: the operations of stream i whose issue number is below
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

void need_mark(Need &n, const std::shared_ptr<Mark> &m)
{
    if (m && !m->done && n[(size_t)m->stream] < m->issue + 1)
        n[(size_t)m->stream] = m->issue + 1;
}

/* Adds what the needed operations wait for, until nothing more is added. A wait points at a
 * record issued before it, so this ends, and the needed set can always be run. */
void close_over_waits(Need &n)
{
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t i : g_queued)
            for (const Op &op : g_streams[i].queue) {
                if (op.issue >= n[i])
                    break;
                if (op.waits && !op.waits->done && n[(size_t)op.waits->stream] < op.waits->issue + 1) {
                    n[(size_t)op.waits->stream] = op.waits->issue + 1;
                    grew = true;
                }
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
    Entry e{};
    e.kind = op.desc.kind;
    e.copy = op.desc.copy;
    e.host_sync = host_sync;
    e.pageable = op.desc.pageable;
    e.stream = op.stream;
    e.event = op.event;
    e.kernel = op.desc.kernel;
    e.bytes = op.desc.bytes;
    e.issue = op.issue;
    e.after = op.desc.kind == OpKind::EVENT_WAIT && op.waits ? (long long)op.waits->issue : -1;
    /* after a fault the device runs nothing and copies nothing; events still complete, so that
     * nothing waits for ever */
    e.skipped = device_failed() && !op.runs_after_fault && op.desc.kind != OpKind::EVENT_RECORD &&
                op.desc.kind != OpKind::EVENT_WAIT;
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
    for (;;) {
        ready.clear();
        bool left = false;
        for (size_t i : g_queued) {
            const std::deque<Op> &q = g_streams[i].queue;
            if (q.front().issue >= n[i])
                continue;
            left = true;
            if (!q.front().waits || q.front().waits->done)
                ready.push_back(i);
        }
        if (ready.empty()) {
            if (left) {
                std::fprintf(stderr, "emu: internal error: queued stream work that can never run\n");
                std::abort();
            }
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
    }
}

/* Gives op its stream and issue number; queues it, or runs it now (the legacy stream, or the
 * host waits) after what it must follow. */
void issue(cudaStream_t s, Op op, bool host_waits)
{
    Lock lock(g_mutex);
    op.stream = index_of(s);
    op.issue = g_issued++;
    if (op.completes) {
        op.completes->stream = op.stream;
        op.completes->issue = op.issue;
    }
    if (op.stream != 0 && !host_waits) {
        g_queued.insert((size_t)op.stream);
        g_streams[(size_t)op.stream].queue.push_back(std::move(op));
        return;
    }
    Need n = nothing_needed();
    if (op.stream == 0)
        need_blocking(n);
    else
        n[(size_t)op.stream] = ALL;
    need_mark(n, op.waits);
    drain(n);
    execute(op, true);
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

} /* namespace emu */

using namespace emu;

static bool valid_event(cudaEvent_t e)
{
    return e && e->magic == EVENT_MAGIC;
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
    g_streams.back().blocking = !(flags & cudaStreamNonBlocking);
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
        g_streams[(size_t)stream->index].live = false;
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
    if (is_legacy(stream)) {
        drain_legacy();
    } else {
        Lock lock(g_mutex);
        Need n = nothing_needed();
        n[(size_t)stream->index] = ALL;
        drain(n);
    }
    return sync_check();
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    if (!valid_stream(stream))
        return record(cudaErrorInvalidResourceHandle);
    Lock lock(g_mutex);
    Need n = nothing_needed();
    if (is_legacy(stream))
        need_blocking(n);
    else
        n[(size_t)stream->index] = ALL;
    return query(n, &g_streams[(size_t)index_of(stream)].answered_not_ready);
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
    Op op;
    op.desc = OpDesc{OpKind::EVENT_WAIT, nullptr, cudaMemcpyDefault, 0, false};
    op.waits = event->last; /* never recorded: the wait is met at once (CUDA's rule) */
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
    *event = new CUevent_st{EVENT_MAGIC, ++g_events_made, flags, nullptr, false};
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
    Op op;
    op.desc = OpDesc{OpKind::EVENT_RECORD, nullptr, cudaMemcpyDefault, 0, false};
    op.completes = std::make_shared<Mark>();
    op.event = event->index;
    event->last = op.completes;
    event->answered_not_ready = false;
    issue(stream, std::move(op), false);
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    if (!valid_event(event))
        return record(cudaErrorInvalidResourceHandle);
    {
        Lock lock(g_mutex);
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
    Need n = nothing_needed();
    need_mark(n, event->last);
    return query(n, &event->answered_not_ready);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms)
        return record(cudaErrorInvalidValue);
    if (!valid_event(start) || !valid_event(end))
        return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t e = api_check())
        return e;
    Lock lock(g_mutex);
    if (!start->last || !end->last || ((start->flags | end->flags) & cudaEventDisableTiming))
        return record(cudaErrorInvalidResourceHandle);
    if (!start->last->done || !end->last->done)
        return cudaErrorNotReady; /* recorded, not yet run: as CUDA answers, not an error */
    *ms = (float)(end->last->ms - start->last->ms);
    return cudaSuccess;
}

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

int emu_stream_index(cudaStream_t stream)
{
    if (is_legacy(stream))
        return 0;
    Lock lock(g_mutex);
    return stream->magic == STREAM_MAGIC && g_streams[(size_t)stream->index].live ? stream->index : -1;
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
}

int emu_schedule_write_tsv(const char *path)
{
    Lock lock(g_mutex);
    FILE *f = path ? std::fopen(path, "w") : nullptr;
    if (!f)
        return -1;
    std::fprintf(f, "issue\trun\tstream\tkind\tname\tbytes\tstart_ms\tend_ms\thost_sync\tpageable\t"
                    "skipped\tevent\tafter\n");
    for (const Entry &e : g_schedule)
        std::fprintf(f, "%llu\t%llu\t%d\t%s\t%s\t%zu\t%.6f\t%.6f\t%d\t%d\t%d\t%d\t%lld\n",
                     (unsigned long long)e.issue, (unsigned long long)e.run, e.stream,
                     kind_word(e.kind), op_name(e).c_str(), e.bytes, e.start, e.end, e.host_sync,
                     e.pageable, e.skipped, e.event, e.after);
    return std::fclose(f) == 0 ? 0 : -1;
}

} /* extern "C" */
