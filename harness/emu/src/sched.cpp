/* sched.cpp: kernel launches on the CPU. One fiber per CUDA thread, one block at a time per OS
 * thread.
 *
 * A block's fibers run in a schedule order (EMU_SCHEDULE: in order, reversed, or shuffled with
 * a seed). A fiber runs until it waits (at __syncthreads or a warp operation) or exits, and then
 * hands the OS thread straight to the next ready fiber in that order; when the order is used up
 * and some fiber is ready again, a new pass starts (reshuffled). Control returns to the
 * scheduler only when no fiber is ready: the block is finished, or it is stuck (a deadlock,
 * reported with the lines involved), or a fiber failed (a fault, a trap, an assert).
 *
 * Barriers: a thread that has exited counts as arrived, as on sm_70 and later. Threads that wait
 * at different __syncthreads() calls are an error. Warp operations: the caller waits until every
 * lane of its mask that has not exited waits in a warp operation; then the results of all the
 * lanes whose masks are complete are computed at once.
 *
 * Faults: SIGSEGV, SIGBUS and SIGFPE raised by a fiber are caught; the handler makes the fiber
 * return into emu_fault_exit on a fresh stack, which switches back to the scheduler. The fault
 * is reported (kernel, block, thread, source line) and the kernel stops; the error surfaces at
 * the next synchronising call (runtime.cpp). A fault outside a kernel is left to its default
 * action. */
#include "internal.h"

#include <atomic>
#include <cassert>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <link.h>
#include <memory>
#include <mutex>
#include <spawn.h>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <ucontext.h>
#include <unistd.h>
#include <vector>

#if !defined(__x86_64__)
#error "the emu backend's context switch and fault handler are written for x86-64"
#endif

extern "C" {
/* the current CUDA thread, read by threadIdx & co. (emu/device.h) */
__thread uint3 emu_thread_idx __attribute__((tls_model("initial-exec")));
__thread uint3 emu_block_idx __attribute__((tls_model("initial-exec")));
__thread dim3 emu_block_dim __attribute__((tls_model("initial-exec")));
__thread dim3 emu_grid_dim __attribute__((tls_model("initial-exec")));
/* dynamic shared memory: every `extern __shared__ T name[]` is renamed to this (cu2emu.awk) */
__thread unsigned char emu_dyn_smem[emu::SHARED_PER_BLOCK_OPTIN]
    __attribute__((aligned(128), tls_model("initial-exec")));

void emu_switch(void **save_sp, void *to_sp); /* switch_x86_64.S */
[[noreturn]] void emu_fiber_entry(void);
[[noreturn]] void emu_fault_exit(void);
extern char *program_invocation_short_name;
extern char **environ;
}

namespace emu {
namespace {

constexpr size_t STACK_GUARD = 64 * 1024;
enum State : uint8_t { READY, AT_BARRIER, AT_WARP, DONE };

struct Fiber {
    void *sp;
    char *stack_lo, *stack_hi;
    uint3 tid;
    unsigned lin;
    State state;
    /* where it waits */
    const char *what, *file;
    int line;
    /* a warp operation */
    WarpOp op;
    unsigned mask;
    uint64_t value;
    int arg, width;
    uint64_t result;
    int result_pred;
};

enum Failure { NONE, SIGNAL, DIVERGENT_BARRIER, TRAP, ASSERT,
#ifdef EMU_PROFILE
               PROFILE_ACCESS, /* the instrumented build caught a bad access (prof.cpp) */
#endif
};

struct Launch;

/* One per OS thread that runs blocks. Plain data, reached through a __thread pointer, so the
 * signal handler may read it. */
struct Worker {
    Fiber fib[MAX_THREADS_PER_BLOCK];
    unsigned order[MAX_THREADS_PER_BLOCK];
    unsigned stacks;        /* fibers that have a stack */
    dim3 shape;             /* block shape the fibers' tids were computed for */
    void *sched_sp;         /* the scheduler's context */
    Fiber *cur;             /* the running fiber, or null in scheduler code */
    const Launch *launch;
    uint3 bid;
    unsigned n, live, ready;
    int pos;                /* in order[] */
    uint64_t rng;
    /* the barrier being filled */
    unsigned at_barrier, bar_pred;
    Fiber *bar_first, *bar_other;
    unsigned bar_count, bar_arrived; /* of the last completed barrier */
    /* a failure, reported by the scheduler */
    bool aborted;
    Failure failure;
    Fiber *failed;
    int sig, sig_code;
    uintptr_t addr, pc;
    bool write, overflow;
    const char *fail_file, *fail_func, *fail_expr;
    int fail_line;
    char *altstack;
};

__thread Worker *tls_worker __attribute__((tls_model("initial-exec")));

enum Mode { IN_ORDER, REVERSE, SHUFFLE };

struct Launch {
    const void *kernel;
    Cfg cfg;
    void (*body)(void *);
    void *pack;
    unsigned nthreads;
    unsigned long long nblocks;
    Mode mode;
    uint64_t seed;
    std::atomic<unsigned long long> next{0};
    std::atomic<bool> stop{false};
    std::atomic<bool> reported{false};
    cudaError_t error = cudaSuccess;
    std::mutex mutex;
};

size_t g_stack_bytes;
std::atomic<uint64_t> g_launches{0};
struct sigaction g_old_action[NSIG];

/* ---------------------------------------------------------------- configuration */

[[noreturn]] void config_error(const char *var, const char *value, const char *expected)
{
    std::fprintf(stderr, "emu: %s=%s: expected %s\n", var, value, expected);
    std::exit(EXIT_FAILURE);
}

size_t stack_bytes()
{
    if (!g_stack_bytes) {
        const char *e = std::getenv("EMU_STACK_KB");
        long kb = 64;
        if (e && *e) {
            char *end;
            kb = std::strtol(e, &end, 10);
            if (*end || kb < 16 || kb > 1024 * 1024)
                config_error("EMU_STACK_KB", e, "a size in KiB from 16 to 1048576");
        }
        g_stack_bytes = (size_t)kb * 1024;
    }
    return g_stack_bytes;
}

void read_schedule(Mode *mode, uint64_t *seed)
{
    const char *e = std::getenv("EMU_SCHEDULE");
    *mode = IN_ORDER;
    *seed = 0;
    if (!e || !*e || !std::strcmp(e, "inorder") || !std::strcmp(e, "in-order"))
        return;
    if (!std::strcmp(e, "reverse")) {
        *mode = REVERSE;
        return;
    }
    if (!std::strncmp(e, "shuffle", 7) && (e[7] == 0 || e[7] == ':')) {
        *mode = SHUFFLE;
        *seed = 1;
        if (e[7] == ':') {
            char *end;
            errno = 0;
            *seed = std::strtoull(e + 8, &end, 10);
            if (!e[8] || *end || errno)
                config_error("EMU_SCHEDULE", e, "inorder, reverse or shuffle:SEED (a decimal seed)");
        }
        return;
    }
    config_error("EMU_SCHEDULE", e, "inorder, reverse or shuffle:SEED");
}

unsigned os_threads(unsigned long long nblocks)
{
    const char *e = std::getenv("EMU_THREADS");
    long n = 1;
    if (e && *e) {
        char *end;
        n = std::strtol(e, &end, 10);
        if (*end || n < 1 || n > 256)
            config_error("EMU_THREADS", e, "a number of OS threads from 1 to 256");
    }
    return (unsigned)std::min<unsigned long long>((unsigned long long)n, nblocks);
}

uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The b-th block to run: a bijection on [0, n), so that any OS thread can take the next block
 * from one counter. Shuffled, the last block always runs first and the others follow in a
 * shuffled order (cycle walking over a bijection on [0, 2^k)): a kernel that needs its blocks
 * in index order (block j reading what block j + 1 overwrites, or a flag that block 0 sets)
 * sees that order broken on every seed, not on most. */
unsigned long long block_order(const Launch &l, unsigned long long b)
{
    if (l.mode == IN_ORDER)
        return b;
    if (l.mode == REVERSE)
        return l.nblocks - 1 - b;
    if (b == 0)
        return l.nblocks - 1;
    const unsigned long long rest = l.nblocks - 1; /* blocks 0 .. n - 2, at positions 1 .. n - 1 */
    b -= 1;
    unsigned bits = 1;
    while ((1ull << bits) < rest)
        ++bits;
    const uint64_t mask = (1ull << bits) - 1, k = splitmix(l.seed) | 1;
    uint64_t x = b;
    do {
        for (int round = 0; round < 3; ++round) {
            x = (x * (k | 1) + (k >> 17)) & mask;
            x ^= x >> (bits / 2 + 1);
        }
    } while (x >= rest);
    return x;
}

/* ---------------------------------------------------------------- fibers */

void worker_init(Worker &w)
{
    /* the fault handler runs on its own stack: a fiber that overflowed has none left */
    const size_t alt = 64 * 1024;
    w.altstack = (char *)std::malloc(alt);
    stack_t ss{};
    ss.ss_sp = w.altstack;
    ss.ss_size = alt;
    if (!w.altstack || sigaltstack(&ss, nullptr) != 0) {
        std::perror("emu: sigaltstack");
        std::abort();
    }
}

Worker &this_worker()
{
    if (!tls_worker) {
        Worker *w = new Worker();
        worker_init(*w);
        tls_worker = w;
    }
    return *tls_worker;
}

void ensure_stacks(Worker &w, unsigned n)
{
    const size_t bytes = stack_bytes();
    for (; w.stacks < n; ++w.stacks) {
        char *m = (char *)mmap(nullptr, STACK_GUARD + bytes, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED || mprotect(m, STACK_GUARD, PROT_NONE) != 0) {
            std::perror("emu: fiber stacks");
            std::abort();
        }
        w.fib[w.stacks].stack_lo = m + STACK_GUARD;
        w.fib[w.stacks].stack_hi = m + STACK_GUARD + bytes;
    }
}

/* A fresh context that starts in emu_fiber_entry. The stack tops are staggered by 64 bytes
 * so that a thousand stacks do not all map to the same cache sets. */
void fiber_prepare(Fiber &f)
{
    void **sp = (void **)(f.stack_hi - (f.lin % 64) * 64);
    *--sp = nullptr;                       /* emu_fiber_entry's return address: none */
    *--sp = (void *)&emu_fiber_entry;      /* where emu_switch's ret goes */
    for (int i = 0; i < 6; ++i)
        *--sp = nullptr;                   /* rbp rbx r12 r13 r14 r15 */
    f.sp = sp;
    f.state = READY;
}

void new_pass(Worker &w, Mode mode)
{
    w.pos = -1;
    if (mode == SHUFFLE)
        for (unsigned i = w.n - 1; i > 0; --i) {
            w.rng = splitmix(w.rng);
            std::swap(w.order[i], w.order[w.rng % (i + 1)]);
        }
}

inline void enter(Worker &w, Fiber *g)
{
    w.cur = g;
    emu_thread_idx = g->tid;
}

Fiber *find_next(Worker &w)
{
    for (;;) {
        while (++w.pos < (int)w.n) {
            Fiber *g = &w.fib[w.order[w.pos]];
            if (g->state == READY)
                return g;
        }
        if (w.ready == 0)
            return nullptr;
        new_pass(w, w.launch->mode);
    }
}

/* The running fiber f stops being ready: run the next ready one, or go back to the
 * scheduler. Returns when f is resumed. */
void leave(Worker &w, Fiber *f)
{
    if (Fiber *g = find_next(w)) {
        enter(w, g);
        emu_switch(&f->sp, g->sp);
    } else {
        w.cur = nullptr;
        emu_switch(&f->sp, w.sched_sp);
    }
}

[[noreturn]] void fail(Worker &w, Failure what)
{
    Fiber *f = w.cur;
    w.failure = what;
    w.failed = f;
    w.aborted = true;
    w.cur = nullptr;
    emu_switch(&f->sp, w.sched_sp);
    __builtin_unreachable();
}

bool same_site(const Fiber *a, const Fiber *b)
{
    return a->line == b->line && (a->file == b->file || !std::strcmp(a->file, b->file));
}

void release_barrier(Worker &w)
{
    if (w.bar_other)
        fail(w, DIVERGENT_BARRIER);
#ifdef EMU_PROFILE
    prof_barrier();
#endif
    w.bar_count = w.bar_pred;
    w.bar_arrived = w.at_barrier;
    for (unsigned i = 0; i < w.n; ++i)
        if (w.fib[i].state == AT_BARRIER)
            w.fib[i].state = READY;
    w.ready += w.at_barrier;
    w.at_barrier = w.bar_pred = 0;
    w.bar_first = w.bar_other = nullptr;
}

uint64_t warp_result(const Worker &w, const Fiber &f, unsigned base, unsigned nl, unsigned waiting)
{
    const unsigned lane = f.lin - base, part = f.mask & waiting;
    const int width = f.width;
    int src = -1;
    switch (f.op) {
    case WOP_SYNC:
        return 0;
    case WOP_ACTIVEMASK: {
        unsigned r = 0;
        for (unsigned j = 0; j < nl; ++j)
            if ((waiting >> j & 1) && w.fib[base + j].op == WOP_ACTIVEMASK)
                r |= 1u << j;
        return r;
    }
    case WOP_SHFL_IDX:
        src = (int)((lane & ~(unsigned)(width - 1)) | ((unsigned)f.arg & (unsigned)(width - 1)));
        break;
    case WOP_SHFL_UP:
        src = (int)(lane & (unsigned)(width - 1)) >= f.arg ? (int)lane - f.arg : -1;
        break;
    case WOP_SHFL_DOWN:
        src = (int)(lane & (unsigned)(width - 1)) + f.arg < width ? (int)lane + f.arg : -1;
        break;
    case WOP_SHFL_XOR: {
        /* a lane may read from an earlier group of `width` lanes, not from a later one */
        unsigned s = lane ^ (unsigned)f.arg;
        src = s < (lane & ~(unsigned)(width - 1)) + (unsigned)width ? (int)s : -1;
        break;
    }
    case WOP_BALLOT: {
        unsigned r = 0;
        for (unsigned j = 0; j < nl; ++j)
            if ((part >> j & 1) && w.fib[base + j].value)
                r |= 1u << j;
        return r;
    }
    case WOP_MATCH_ANY:
    case WOP_MATCH_ALL: {
        unsigned r = 0;
        for (unsigned j = 0; j < nl; ++j)
            if ((part >> j & 1) && w.fib[base + j].value == f.value)
                r |= 1u << j;
        if (f.op == WOP_MATCH_ANY)
            return r;
        return r == part ? part : 0;
    }
    default: { /* the __reduce_*_sync family, on 32-bit values */
        uint32_t acc = (uint32_t)f.value;
        for (unsigned j = 0; j < nl; ++j) {
            if (!(part >> j & 1) || j == lane)
                continue;
            uint32_t v = (uint32_t)w.fib[base + j].value;
            switch (f.op) {
            case WOP_REDUCE_ADD: acc += v; break;
            case WOP_REDUCE_MIN: acc = (int32_t)v < (int32_t)acc ? v : acc; break;
            case WOP_REDUCE_MAX: acc = (int32_t)v > (int32_t)acc ? v : acc; break;
            case WOP_REDUCE_UMIN: acc = v < acc ? v : acc; break;
            case WOP_REDUCE_UMAX: acc = v > acc ? v : acc; break;
            case WOP_REDUCE_AND: acc &= v; break;
            case WOP_REDUCE_OR: acc |= v; break;
            default: acc ^= v; break;
            }
        }
        return acc;
    }
    }
    /* a shuffle: the source's value if it takes part, else the caller's own (undefined on a
     * GPU) */
    if (src >= 0 && (unsigned)src < nl && (waiting >> src & 1))
        return w.fib[base + (unsigned)src].value;
    return f.value;
}

/* Completes the warp operations of warp `warp` whose masks are complete. */
void try_warp(Worker &w, unsigned warp)
{
    const unsigned base = warp * WARP, nl = std::min<unsigned>(WARP, w.n - base);
    unsigned waiting = 0, gone = nl == 32 ? 0u : ~0u << nl;
    for (unsigned l = 0; l < nl; ++l) {
        State s = w.fib[base + l].state;
        if (s == AT_WARP)
            waiting |= 1u << l;
        else if (s == DONE)
            gone |= 1u << l;
    }
    unsigned complete = 0;
    for (unsigned l = 0; l < nl; ++l)
        if ((waiting >> l & 1) && !(w.fib[base + l].mask & ~gone & ~waiting))
            complete |= 1u << l;
    if (!complete)
        return;
    for (unsigned l = 0; l < nl; ++l)
        if (complete >> l & 1) {
            Fiber &f = w.fib[base + l];
            f.result = warp_result(w, f, base, nl, waiting);
            f.result_pred = f.op == WOP_MATCH_ALL && f.result != 0;
        }
    for (unsigned l = 0; l < nl; ++l)
        if (complete >> l & 1)
            w.fib[base + l].state = READY;
    w.ready += (unsigned)__builtin_popcount(complete);
}

/* No fiber is ready: complete the __activemask() calls with the lanes that reached them.
 * Returns whether any fiber became ready. */
bool force_active_masks(Worker &w)
{
    bool any = false;
    for (unsigned base = 0; base < w.n; base += WARP) {
        const unsigned nl = std::min<unsigned>(WARP, w.n - base);
        unsigned waiting = 0;
        for (unsigned l = 0; l < nl; ++l)
            if (w.fib[base + l].state == AT_WARP && w.fib[base + l].op == WOP_ACTIVEMASK)
                waiting |= 1u << l;
        for (unsigned l = 0; l < nl; ++l)
            if (waiting >> l & 1) {
                w.fib[base + l].result = waiting;
                w.fib[base + l].state = READY;
                ++w.ready;
                any = true;
            }
    }
    return any;
}

/* ---------------------------------------------------------------- reports */

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

std::string dim(uint3 v)
{
    return format("(%u,%u,%u)", v.x, v.y, v.z);
}

struct Frame {
    std::string function, location;
};

struct ObjectLookup {
    uintptr_t addr;
    uintptr_t bias;
    std::string path;
    bool found;
};

int find_object(dl_phdr_info *info, size_t, void *data)
{
    ObjectLookup *l = (ObjectLookup *)data;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type == PT_LOAD && l->addr >= lo && l->addr < lo + ph.p_memsz) {
            l->bias = info->dlpi_addr;
            if (info->dlpi_name && *info->dlpi_name) {
                l->path = info->dlpi_name;
            } else { /* the program itself; /proc/self/exe would name addr2line there */
                char exe[4096];
                ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
                l->path = n > 0 ? std::string(exe, (size_t)n) : std::string();
            }
            l->found = true;
            return 1;
        }
    }
    return 0;
}

/* The source frames of a code address, innermost first, from addr2line (binutils, which g++
 * needs anyway). Kernel files are compiled with -g. */
std::vector<Frame> symbolize(const void *code)
{
    std::vector<Frame> frames;
    ObjectLookup l{(uintptr_t)code, 0, std::string(), false};
    dl_iterate_phdr(find_object, &l);
    if (!l.found || l.path.empty())
        return frames;
    std::string addr = format("%#lx", (unsigned long)(l.addr - l.bias));
    const char *argv[] = {"addr2line", "-C", "-f", "-i", "-e", l.path.c_str(), addr.c_str(), nullptr};
    int out[2];
    if (pipe(out) != 0)
        return frames;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, "addr2line", &fa, nullptr, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    std::string text;
    char buf[4096];
    ssize_t got;
    while (rc == 0 && (got = read(out[0], buf, sizeof buf)) > 0)
        text.append(buf, (size_t)got);
    close(out[0]);
    if (rc == 0)
        waitpid(pid, nullptr, 0);
    size_t at = 0;
    std::vector<std::string> lines;
    while (at < text.size()) {
        size_t nl = text.find('\n', at);
        if (nl == std::string::npos)
            nl = text.size();
        lines.push_back(text.substr(at, nl - at));
        at = nl + 1;
    }
    for (size_t i = 0; i + 1 < lines.size(); i += 2) {
        std::string loc = lines[i + 1];
        size_t disc = loc.find(" (discriminator");
        if (disc != std::string::npos)
            loc.erase(disc);
        /* relative to the working directory, as make names the sources */
        char cwd[4096];
        if (getcwd(cwd, sizeof cwd)) {
            size_t n = std::strlen(cwd);
            if (loc.compare(0, n, cwd) == 0 && loc.size() > n && loc[n] == '/')
                loc.erase(0, n + 1);
        }
        frames.push_back(Frame{lines[i], loc});
    }
    return frames;
}

/* "void foo<float, 32>(float*, int)" -> "foo<float, 32>" */
std::string short_name(std::string s)
{
    int depth = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '<')
            ++depth;
        else if (s[i] == '>')
            --depth;
        else if (s[i] == '(' && depth == 0) {
            s.erase(i);
            break;
        }
    }
    if (s.compare(0, 5, "void ") == 0)
        s.erase(0, 5);
    return s;
}

std::string where_in_source(const void *pc)
{
    std::vector<Frame> frames = symbolize(pc);
    if (frames.empty() || frames[0].location.compare(0, 2, "??") == 0)
        return format("at %p (no line information: was this file compiled with -g?)", pc);
    /* the innermost frame, then its callers inlined into the same code, as far as they are
     * the program's own (not the emu's launch machinery or the C++ library) */
    std::string s = "at " + frames[0].location + " in " + short_name(frames[0].function);
    for (size_t i = 1; i < frames.size(); ++i) {
        const std::string &loc = frames[i].location;
        if (loc.find("emu/device.h") != std::string::npos || loc.find("include/c++") != std::string::npos)
            break;
        if (frames[i].function == frames[i - 1].function)
            continue; /* a lexical block of the same function */
        s += ", called from " + loc + " in " + short_name(frames[i].function);
    }
    return s;
}

const char *signal_text(int sig, int code)
{
    if (sig == SIGFPE)
        return code == FPE_INTDIV ? "an integer division by zero (a GPU returns an unspecified "
                                    "value; the CPU stops)"
                                  : "an arithmetic exception";
    if (sig == SIGBUS)
        return "a bus error";
    return nullptr;
}

std::string site(const Fiber &f)
{
    return format("%s() at %s:%d", f.what, f.file, f.line);
}

/* The deadlock of a block that has no ready thread left. */
std::string deadlock_report(const Worker &w)
{
    unsigned at_bar = 0;
    const Fiber *bar = nullptr;
    for (unsigned i = 0; i < w.n; ++i)
        if (w.fib[i].state == AT_BARRIER) {
            ++at_bar;
            if (!bar)
                bar = &w.fib[i];
        }
    for (unsigned i = 0; i < w.n; ++i) {
        const Fiber &f = w.fib[i];
        if (f.state != AT_WARP)
            continue;
        const unsigned base = f.lin / WARP * WARP;
        for (unsigned l = 0; l < WARP && base + l < w.n; ++l) {
            const Fiber &g = w.fib[base + l];
            if ((f.mask >> l & 1) && g.state == AT_BARRIER)
                return format("deadlock: thread %s waits in %s for lane %u of its warp, "
                              "but thread %s waits in %s and the barrier waits for thread %s: "
                              "a warp operation that not every lane of its mask reaches (on a "
                              "GPU the kernel hangs)",
                              dim(f.tid).c_str(), site(f).c_str(), l, dim(g.tid).c_str(),
                              site(g).c_str(), dim(f.tid).c_str());
        }
    }
    return format("deadlock: %u thread(s) wait, the first in %s, and none can go on", at_bar,
                  bar ? site(*bar).c_str() : "a warp operation");
}

/* Prints the report of a failed block; returns the error the launch leaves pending. */
cudaError_t report_failure(Worker &w)
{
    const Launch &l = *w.launch;
    std::string kernel = symbol_name(l.kernel);
    std::string head = format("emu: kernel %s, block %s", kernel.c_str(), dim(w.bid).c_str());
    std::string body;
    cudaError_t err = cudaErrorLaunchFailure;
    const Fiber *f = w.failed;
    if (w.failure == NONE) {
        body = deadlock_report(w);
    } else if (w.failure == DIVERGENT_BARRIER) {
        body = format("threads wait at different barriers: thread %s in %s, thread %s in %s. "
                      "Every thread of a block must reach the same __syncthreads() (a "
                      "__syncthreads() inside a branch or loop that not all threads take?)",
                      dim(w.bar_first->tid).c_str(), site(*w.bar_first).c_str(),
                      dim(w.bar_other->tid).c_str(), site(*w.bar_other).c_str());
    } else if (w.failure == TRAP) {
        body = format("thread %s called __trap() at %s:%d", dim(f->tid).c_str(), w.fail_file,
                      w.fail_line);
#ifdef EMU_PROFILE
    } else if (w.failure == PROFILE_ACCESS) {
        body = format("thread %s %s %s", dim(f->tid).c_str(), w.fail_expr,
                      where_in_source((const void *)w.pc).c_str());
        err = cudaErrorIllegalAddress;
#endif
    } else if (w.failure == ASSERT) {
        body = format("thread %s: %s:%d: %s: Assertion `%s' failed", dim(f->tid).c_str(),
                      w.fail_file, w.fail_line, w.fail_func, w.fail_expr);
        err = cudaErrorAssert;
    } else if (w.overflow) {
        std::fprintf(stderr,
                     "%s, thread %s: the thread overflowed its %zu KiB stack %s.\n"
                     "emu: large local arrays or deep recursion need a larger fiber stack: run "
                     "again with EMU_STACK_KB=%zu (or more) in the environment.\n",
                     head.c_str(), dim(f->tid).c_str(), stack_bytes() / 1024,
                     where_in_source((const void *)w.pc).c_str(), stack_bytes() / 1024 * 4);
        std::abort();
    } else if (const char *what = signal_text(w.sig, w.sig_code)) {
        body = format("thread %s raised %s %s", dim(f->tid).c_str(), what,
                      where_in_source((const void *)w.pc).c_str());
    } else {
        body = format("thread %s made an illegal %s of address %s %s", dim(f->tid).c_str(),
                      w.write ? "write" : "read", describe_address(w.addr).c_str(),
                      where_in_source((const void *)w.pc).c_str());
        err = cudaErrorIllegalAddress;
    }
    std::fprintf(stderr, "%s: %s\n", head.c_str(), body.c_str());
    return err;
}

/* ---------------------------------------------------------------- running blocks */

/* Runs one block; false if it failed (reported, and the launch's error set). */
bool run_block(Worker &w, Launch &l, unsigned long long b)
{
    const dim3 g = l.cfg.grid;
    w.bid = uint3{(unsigned)(b % g.x), (unsigned)(b / g.x % g.y), (unsigned)(b / g.x / g.y)};
    emu_block_idx = w.bid;
    /* dynamic shared memory starts as NaNs (0xff bytes), so a read before the first write
     * shows up in the results */
    if (l.cfg.smem)
        std::memset(emu_dyn_smem, 0xff, l.cfg.smem);
    for (unsigned i = 0; i < w.n; ++i) {
        fiber_prepare(w.fib[i]);
        w.order[i] = l.mode == REVERSE ? w.n - 1 - i : i;
    }
    w.live = w.ready = w.n;
    w.at_barrier = w.bar_pred = 0;
    w.bar_first = w.bar_other = nullptr;
    w.aborted = false;
    w.failure = NONE;
    w.failed = nullptr;
    w.overflow = false;
    w.rng = splitmix(l.seed ^ splitmix(b + 1));
    new_pass(w, l.mode);
    pipeline_block_begin(w.n);
#ifdef EMU_PROFILE
    prof_block_begin(w.n);
#endif
    Fiber *next = find_next(w);
    for (;;) {
        enter(w, next);
        emu_switch(&w.sched_sp, next->sp);
        w.cur = nullptr;
        if (w.aborted || w.live == 0 || !force_active_masks(w) || !(next = find_next(w)))
            break;
    }
#ifdef EMU_PROFILE
    prof_block_end(!w.aborted && w.live == 0);
#endif
    if (!w.aborted && w.live == 0)
        return true;
    bool first_report = !l.reported.exchange(true);
    if (first_report) {
        std::lock_guard<std::mutex> lock(l.mutex);
        l.error = report_failure(w);
    }
    return false;
}

void run_blocks(Launch &l)
{
    Worker &w = this_worker();
    w.launch = &l;
    w.n = l.nthreads;
    ensure_stacks(w, w.n);
    const dim3 bd = l.cfg.block;
    if (w.shape.x != bd.x || w.shape.y != bd.y || w.shape.z != bd.z) {
        for (unsigned i = 0; i < MAX_THREADS_PER_BLOCK; ++i) {
            w.fib[i].lin = i;
            w.fib[i].tid = uint3{i % bd.x, i / bd.x % bd.y, i / (bd.x * bd.y)};
        }
        w.shape = bd;
    }
    emu_block_dim = bd;
    emu_grid_dim = l.cfg.grid;
    while (!l.stop.load(std::memory_order_relaxed)) {
        unsigned long long b = l.next.fetch_add(1, std::memory_order_relaxed);
        if (b >= l.nblocks)
            break;
        if (!run_block(w, l, block_order(l, b)))
            l.stop = true;
    }
    w.launch = nullptr;
}

/* OS threads for EMU_THREADS > 1: started once, kept for the process. */
struct Pool {
    std::mutex mutex;
    std::condition_variable start, done;
    Launch *job = nullptr;
    unsigned wanted = 0, busy = 0, started = 0;
    uint64_t generation = 0;
    pid_t pid = getpid();

    void loop(unsigned id)
    {
        uint64_t seen = 0;
        for (;;) {
            std::unique_lock<std::mutex> lock(mutex);
            start.wait(lock, [&] { return generation != seen; });
            seen = generation;
            if (id >= wanted)
                continue;
            Launch *l = job;
            lock.unlock();
            run_blocks(*l);
            lock.lock();
            if (--busy == 0)
                done.notify_all();
        }
    }
    void run(Launch &l, unsigned helpers)
    {
        {
            std::lock_guard<std::mutex> lock(mutex);
            for (; started < helpers; ++started)
                std::thread([this, id = started] { loop(id); }).detach();
            job = &l;
            wanted = busy = helpers;
            ++generation;
        }
        start.notify_all();
        run_blocks(l);
        std::unique_lock<std::mutex> lock(mutex);
        done.wait(lock, [&] { return busy == 0; });
    }
};
Pool *g_pool;

/* ---------------------------------------------------------------- faults */

void on_fault(int sig, siginfo_t *si, void *ctx)
{
    Worker *w = tls_worker;
    Fiber *f = w ? w->cur : nullptr;
    if (!f) {
        /* not a CUDA thread: let the fault take its usual course when the instruction reruns */
        sigaction(sig, &g_old_action[sig], nullptr);
        return;
    }
    ucontext_t *uc = (ucontext_t *)ctx;
    greg_t *regs = uc->uc_mcontext.gregs;
    const uintptr_t addr = (uintptr_t)si->si_addr, sp = (uintptr_t)regs[REG_RSP];
    const uintptr_t lo = (uintptr_t)f->stack_lo;
    w->failure = SIGNAL;
    w->failed = f;
    w->sig = sig;
    w->sig_code = si->si_code;
    w->addr = addr;
    w->pc = (uintptr_t)regs[REG_RIP];
    w->write = (regs[REG_ERR] & 2) != 0; /* page-fault error code: bit 1 = write */
    w->overflow = sig == SIGSEGV && ((addr < lo && addr >= lo - STACK_GUARD) || sp < lo + 256);
    /* return from the handler into emu_fault_exit, on the top of the dead fiber's stack */
    regs[REG_RSP] = (greg_t)(((uintptr_t)f->stack_hi - 256) & ~(uintptr_t)15) - 8;
    regs[REG_RIP] = (greg_t)&emu_fault_exit;
}

void install_fault_handler()
{
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa{};
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE})
            sigaction(sig, &sa, &g_old_action[sig]);
    });
}

} /* namespace */

/* ---------------------------------------------------------------- entry points (device.h) */

int block_barrier(BarrierKind kind, int pred, const char *file, int line)
{
    Worker &w = *tls_worker;
    Fiber *f = w.cur;
    f->state = AT_BARRIER;
    f->what = kind == BAR_SYNC ? "__syncthreads"
              : kind == BAR_COUNT ? "__syncthreads_count"
              : kind == BAR_AND   ? "__syncthreads_and"
                                  : "__syncthreads_or";
    f->file = file;
    f->line = line;
    --w.ready;
    ++w.at_barrier;
    w.bar_pred += pred != 0;
    if (!w.bar_first)
        w.bar_first = f;
    else if (!w.bar_other && !same_site(w.bar_first, f))
        w.bar_other = f;
    if (w.at_barrier == w.live)
        release_barrier(w);
    if (f->state != READY)
        leave(w, f);
    switch (kind) {
    case BAR_COUNT: return (int)w.bar_count;
    case BAR_AND: return w.bar_count == w.bar_arrived;
    case BAR_OR: return w.bar_count != 0;
    default: return 0;
    }
}

uint64_t warp_op(WarpOp op, unsigned mask, uint64_t value, int arg, int width, int *pred,
                 const char *what, const char *file, int line)
{
    Worker &w = *tls_worker;
    Fiber *f = w.cur;
    const unsigned lane = f->lin % WARP;
    f->op = op;
    f->mask = mask | 1u << lane;
    f->value = value;
    f->arg = arg;
    f->width = width >= 1 && width <= WARP && !(width & (width - 1)) ? width : WARP;
    f->what = what;
    f->file = file;
    f->line = line;
    f->state = AT_WARP;
    --w.ready;
    try_warp(w, f->lin / WARP);
    if (f->state != READY)
        leave(w, f);
    if (pred)
        *pred = f->result_pred;
    return f->result;
}

unsigned current_thread()
{
    return tls_worker->cur->lin;
}

unsigned lane_id()
{
    return tls_worker->cur->lin % WARP;
}

unsigned active_mask()
{
    /* The lanes that reach __activemask() together: the caller waits like a warp operation
     * over all lanes that have not exited, but if some never come (they wait at a barrier),
     * the scheduler completes it with the lanes that did (force_active_masks). */
    return (unsigned)warp_op(WOP_ACTIVEMASK, FULL_MASK, 0, 0, WARP, nullptr, "__activemask",
                             "", 0);
}

#ifdef EMU_PROFILE
bool prof_current(ProfThread *t)
{
    Worker *w = tls_worker;
    Fiber *f = w ? w->cur : nullptr;
    if (!f)
        return false;
    t->lin = f->lin;
    t->stack_lo = (uintptr_t)f->stack_lo;
    t->stack_hi = (uintptr_t)f->stack_hi;
    return true;
}

void prof_fail(const char *message, uintptr_t pc)
{
    Worker &w = *tls_worker;
    w.fail_expr = message;
    w.pc = pc - 1; /* a return address: the call's own line */
    fail(w, PROFILE_ACCESS);
}
#endif

void trap(const char *file, int line)
{
    Worker *w = tls_worker;
    if (!w || !w->cur) {
        std::fprintf(stderr, "emu: __trap() outside a kernel at %s:%d\n", file, line);
        std::abort();
    }
    w->fail_file = file;
    w->fail_line = line;
    fail(*w, TRAP);
}

bool check_launch(const void *kernel, const Cfg &c)
{
    const dim3 b = c.block, g = c.grid;
    const unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
    if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > MAX_BLOCK_X || b.y > MAX_BLOCK_Y ||
        b.z > MAX_BLOCK_Z || threads > (unsigned long long)MAX_THREADS_PER_BLOCK || g.x == 0 ||
        g.y == 0 || g.z == 0 || g.x > MAX_GRID_X || g.y > MAX_GRID_Y || g.z > MAX_GRID_Z) {
        record(cudaErrorInvalidConfiguration);
        return false;
    }
    if (c.smem > (size_t)max_dynamic_shared(kernel)) {
        record(cudaErrorInvalidValue);
        return false;
    }
    /* a block over the kernel's __launch_bounds__ or over the registers a block allow, when the
     * kernel's file opted in to its resource table (resources.cpp) */
    if (cudaError_t e = launch_resources_error(kernel, threads)) {
        record(e);
        return false;
    }
    if (!valid_stream(c.stream)) {
        record(cudaErrorInvalidResourceHandle);
        return false;
    }
    /* a stream of another device than the current one (README.md, "Several devices") */
    if (!is_legacy(c.stream) && stream_device(c.stream) != current_device()) {
        record(cudaErrorInvalidResourceHandle);
        return false;
    }
    return true;
}

namespace {

/* A kernel's pointer parameters, by their position from 1 (several devices only). */
using PointerParams = std::vector<std::pair<int, const void *>>;

/* A kernel of `device` given a pointer into another device's allocation, without peer access
 * from `device` to that one: on a GPU, an illegal address at the first access. Here the launch
 * does nothing and leaves the fault a kernel's leaves, reported as sched's reports are. Managed
 * memory is every device's. */
bool peer_fault(const void *kernel, int device, const PointerParams &params)
{
    for (const auto &param : params) {
        bool managed = false;
        uintptr_t base = 0;
        size_t size = 0;
        const int owner = owner_of(param.second, &managed, &base, &size);
        if (owner < 0 || owner == device || managed || peer_enabled(device, owner))
            continue;
        std::string kernel_name = symbol_name(kernel);
        std::fprintf(stderr,
                     "emu: kernel %s on device %d: argument %d (%p) points into the %zu-byte "
                     "allocation at %p of device %d, and device %d has no peer access to device "
                     "%d (cudaSetDevice(%d); cudaDeviceEnablePeerAccess(%d, 0)): an illegal "
                     "address on a GPU; the kernel did not run\n",
                     kernel_name.c_str(), device, param.first, param.second, size, (void *)base,
                     owner, device, owner, device, owner);
        kernel_failed(cudaErrorIllegalAddress);
        return true;
    }
    return false;
}

} /* namespace */

/* The launch as written: refused now on its own arguments (as a GPU refuses it), or by the
 * rules of stream capture, then run now on the legacy stream, queued on the program's stream or
 * captured into its graph (streams.cpp). A queued or captured launch owns a copy of the
 * parameters, since the caller's pack dies with the launch expression. */
void launch(const void *kernel, const Cfg &c, void (*body)(void *), void *pack,
            void *(*clone)(const void *), void (*drop)(void *), const void *const *pointers,
            int nparams)
{
    if (api_check() != cudaSuccess || !check_launch(kernel, c))
        return;
    if (cudaError_t e = capture_check(c.stream)) {
        record(e);
        return;
    }
    OpDesc d{OpKind::KERNEL, kernel, cudaMemcpyDefault, 0, false};
    d.blocks = (unsigned long long)c.grid.x * c.grid.y * c.grid.z;
    d.threads = c.block.x * c.block.y * c.block.z;
    if (device_count() > 1) {
        /* the pointers are checked when the kernel runs, against the peer access then */
        const int device = current_device();
        PointerParams params;
        for (int i = 0; i < nparams; ++i)
            if (pointers[i])
                params.emplace_back(i + 1, pointers[i]);
        if (is_legacy(c.stream)) {
            submit(c.stream, d, [&] {
                if (!device_failed() && !peer_fault(kernel, device, params))
                    run_kernel(kernel, c, body, pack);
            });
            return;
        }
        std::shared_ptr<void> owned(clone(pack), drop);
        submit(c.stream, d, [kernel, c, body, owned, device, params] {
            if (!device_failed() && !peer_fault(kernel, device, params))
                run_kernel(kernel, c, body, owned.get());
        });
        return;
    }
    if (is_legacy(c.stream)) {
        submit(c.stream, d, [&] { run_kernel(kernel, c, body, pack); });
        return;
    }
    std::shared_ptr<void> owned(clone(pack), drop);
    submit(c.stream, d, [kernel, c, body, owned] { run_kernel(kernel, c, body, owned.get()); });
}

void run_kernel(const void *kernel, const Cfg &c, void (*body)(void *), void *pack)
{
    if (device_failed())
        return; /* a fault is pending: the device runs nothing more */
    const dim3 b = c.block, g = c.grid;
    install_fault_handler();
    Launch l;
    l.kernel = kernel;
    l.cfg = c;
    l.body = body;
    l.pack = pack;
    l.nthreads = b.x * b.y * b.z;
    l.nblocks = (unsigned long long)g.x * g.y * g.z;
    read_schedule(&l.mode, &l.seed);
    l.seed = splitmix(l.seed ^ g_launches.fetch_add(1));
#ifdef EMU_PROFILE
    (void)os_threads(l.nblocks); /* checked, then ignored: the profile's accounting is one
                                    OS thread's */
    const unsigned helpers = 0;
    prof_launch_begin(kernel, c, pack);
#else
    const unsigned helpers = os_threads(l.nblocks) - 1;
#endif
    if (helpers == 0) {
        run_blocks(l);
    } else {
        if (!g_pool || g_pool->pid != getpid())
            g_pool = new Pool(); /* after a fork the old pool's threads are gone */
        g_pool->run(l, helpers);
    }
#ifdef EMU_PROFILE
    prof_launch_end(kernel, l.error == cudaSuccess);
#endif
    if (l.error != cudaSuccess) {
        kernel_failed(l.error);
        return;
    }
    std::string padding = check_padding();
    if (!padding.empty()) {
        std::string kernel_name = symbol_name(kernel);
        std::fprintf(stderr,
                     "emu: kernel %s: %s (found after the kernel, in the padding of the "
                     "allocation: the thread and line are unknown)\n",
                     kernel_name.c_str(), padding.c_str());
        kernel_failed(cudaErrorIllegalAddress);
    }
}

std::string symbol_name(const void *code)
{
    std::vector<Frame> f = symbolize(code);
    return f.empty() ? format("%p", code) : short_name(f[0].function);
}

std::string source_location(const void *code)
{
    std::vector<Frame> f = symbolize(code);
    return f.empty() ? std::string("??") : f[0].location;
}

} /* namespace emu */

using namespace emu;

extern "C" {

void emu_fiber_entry(void)
{
    Worker &w = *tls_worker;
    w.launch->body(w.launch->pack);
    Fiber *f = w.cur;
    pipeline_thread_exit(f->lin); /* its copies never waited for land now */
#ifdef EMU_PROFILE
    prof_thread_exit(f->lin);
#endif
    f->state = DONE;
    --w.ready;
    --w.live;
    if (w.at_barrier && w.at_barrier == w.live)
        release_barrier(w); /* exited threads count as arrived */
    try_warp(w, f->lin / WARP);
    leave(w, f);
    __builtin_unreachable();
}

void emu_fault_exit(void)
{
    Worker &w = *tls_worker;
    Fiber *f = w.cur;
    w.aborted = true;
    w.cur = nullptr;
    emu_switch(&f->sp, w.sched_sp);
    __builtin_unreachable();
}

/* assert() in a kernel stops the kernel with cudaErrorAssert, as on a GPU; elsewhere it is
 * glibc's assert. Defining it here overrides glibc's for the program. */
void __assert_fail(const char *expr, const char *file, unsigned int line, const char *func) noexcept
{
    Worker *w = tls_worker;
    if (w && w->cur) {
        w->fail_expr = expr;
        w->fail_file = file;
        w->fail_line = (int)line;
        w->fail_func = func;
        fail(*w, ASSERT);
    }
    std::fprintf(stderr, "%s: %s:%u: %s: Assertion `%s' failed.\n", program_invocation_short_name,
                 file, line, func, expr);
    std::abort();
}

} /* extern "C" */
