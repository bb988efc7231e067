/* prof.cpp: the emu backend's profiler and memory checker (README.md, "Profiling").
 *
 * Kernel files of the instrumented build are compiled with
 *     -fsanitize=thread               a call __tsan_readN / __tsan_writeN (and __tsan_atomic*)
 *                                     before every load and store the compiler cannot prove local
 *     -fsanitize-coverage=trace-pc    a call __sanitizer_cov_trace_pc at the start of every
 *                                     basic block
 * and linked with this file instead of libtsan: we are the sanitizer's runtime. Each call is
 * attributed to the running CUDA thread (the scheduler says which: prof_current) and logged per
 * lane. At every barrier and at the end of a block, the lanes' logs of each warp are aligned
 * (the k-th execution of one call site by the lanes of a warp is one warp request, or one
 * execution of one branch) and scored:
 *   global memory   distinct 32-byte sectors a request touches
 *   shared memory   wavefronts a request needs: per group of lanes that asks for 128 bytes, the
 *                   largest number of distinct 4-byte words that fall in one of the 32 banks (a
 *                   word read by several lanes of the group is a broadcast; shared_wavefronts)
 *   branches        a basic block whose executions by the lanes go on to different blocks
 *                   (or some lanes exit there) is one divergent branch of that warp
 * The same hook checks every access against the memory a kernel may touch, and stops the kernel
 * at the first one outside it, with thread and line (prof_fail).
 *
 * This file is compiled without instrumentation, and runs on one OS thread (the instrumented
 * build forces EMU_THREADS=1). Built only into build/emu-prof/libemu_prof.a. */
#include "../src/internal.h"
#include "emu_profile.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <map>
#include <malloc.h>
#include <pthread.h>
#include <spawn.h>
#include <string>
#include <tuple>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

extern "C" {
extern __thread uint3 emu_thread_idx;
extern __thread uint3 emu_block_idx;
extern __thread dim3 emu_block_dim;
extern __thread dim3 emu_grid_dim;
extern __thread unsigned char emu_dyn_smem[];
extern char **environ;
}

namespace emu {
namespace {

enum Space : uint8_t { GLOBAL, SHARED };
enum Kind : uint8_t { LOAD, STORE, ATOMIC };

struct Access {
    uintptr_t pc, addr;
    uint32_t size;
    uint16_t region; /* global: the buffer's number, in the order the launch first touched them;
                        shared: 1 + the variable's index, 0 for dynamic shared memory */
    uint8_t space, kind;
};
struct Branch {
    uintptr_t site, target; /* target 1: the thread exited */
};
struct Lane {
    std::vector<Access> acc;
    std::vector<Branch> br;
    uintptr_t prev; /* the basic block this lane is in */
};

struct MemKey {
    uintptr_t pc;
    uint16_t region;
    uint8_t space, kind;
    bool operator<(const MemKey &o) const
    {
        return std::tie(pc, region, space, kind) < std::tie(o.pc, o.region, o.space, o.kind);
    }
};
struct MemStat {
    uint64_t requests = 0, lanes = 0, units = 0, bytes = 0;
};

struct Region {
    uintptr_t lo, hi;
    std::string name;
};

/* ---- state: one OS thread runs every block of the profiled program */
Lane g_lane[MAX_THREADS_PER_BLOCK];
unsigned g_nthreads;
bool g_in_launch;                /* between launch begin and end */
int g_record = 1;                /* emu_profile_record() */
int g_print = -1;                /* emu_profile_print(); -1: not set, read EMU_PROFILE_QUIET */
std::map<MemKey, MemStat> g_mem; /* per call site, this launch */
std::map<uintptr_t, uint64_t> g_div;
uint64_t g_div_total;
emu_profile_totals g_last;
bool g_have_last;
emu_profile_totals g_sum;        /* emu_profile_sum(): every launch since emu_profile_reset() */
int g_nsum;
std::vector<const void *> g_kernels; /* emu_profile_kernels(): their kernels, named on demand */

/* where things are */
bool g_layout;
uintptr_t g_tls_lo, g_tls_hi;     /* the program's static TLS block (__shared__ variables) */
uintptr_t g_idx_lo[4], g_idx_hi[4]; /* threadIdx & co.: read by kernels, not shared memory */
uintptr_t g_dyn_lo;               /* dynamic shared memory */
size_t g_dyn_bytes;               /* ... this launch's */
std::vector<Region> g_shared_vars; /* static __shared__ variables, by address */
std::vector<char> g_shared_touched; /* per region (0: dynamic), this launch: reached by an access */
std::vector<Region> g_image;      /* the program's own loaded segments (__device__ variables) */
std::vector<std::pair<uintptr_t, size_t>> g_allocs; /* live allocations, at launch */
uintptr_t g_hit_lo = 1, g_hit_hi = 0; /* the allocation of the last access */
uint16_t g_hit_region;
std::vector<uint16_t> g_alloc_order; /* per allocation: 0 untouched, else its buffer number */
uint16_t g_touched;
uint16_t g_region;                    /* classify_access's answer besides the space */
uintptr_t g_host_lo, g_host_hi;   /* the launching OS thread's stack (the launch's argument pack) */
uintptr_t g_pack_lo, g_pack_hi;   /* a queued launch's own copy of its pack, on the heap */
char g_message[1024];

/* ---- the program's layout: TLS symbols from its ELF symbol table */

std::string exe_path()
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    return n > 0 ? std::string(exe, (size_t)n) : std::string();
}

std::string demangle_via_cxxfilt(const std::vector<std::string> &names);

void find_layout()
{
    g_layout = true;
    struct Ctx {
        uintptr_t tls_memsz;
        std::vector<Region> *image;
    } ctx{0, &g_image};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            Ctx *c = (Ctx *)data;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr) &ph = info->dlpi_phdr[i];
                if (ph.p_type == PT_TLS)
                    c->tls_memsz = ph.p_memsz;
                if (ph.p_type == PT_LOAD)
                    c->image->push_back(Region{info->dlpi_addr + ph.p_vaddr,
                                               info->dlpi_addr + ph.p_vaddr + ph.p_memsz, ""});
            }
            return 1; /* the program itself comes first */
        },
        &ctx);
    /* the TLS symbols, to find the block's start (from emu_thread_idx's offset) and the
     * __shared__ variables in it */
    std::string path = exe_path();
    int fd = open(path.c_str(), O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        std::fprintf(stderr, "emu-profile: cannot read %s\n", path.c_str());
        std::exit(EXIT_FAILURE);
    }
    void *map = mmap(nullptr, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    const unsigned char *base = (const unsigned char *)map;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
    struct Tls {
        uintptr_t off, size;
        std::string name;
    };
    std::vector<Tls> syms;
    long idx_off = -1;
    for (int i = 0; i < eh->e_shnum; ++i) {
        if (sh[i].sh_type != SHT_SYMTAB)
            continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)(base + sh[i].sh_offset);
        const char *str = (const char *)(base + sh[sh[i].sh_link].sh_offset);
        size_t n = sh[i].sh_size / sizeof(ElfW(Sym));
        for (size_t j = 0; j < n; ++j) {
            if (ELF64_ST_TYPE(sym[j].st_info) != STT_TLS || sym[j].st_shndx == SHN_UNDEF)
                continue;
            std::string name = str + sym[j].st_name;
            if (name == "emu_thread_idx")
                idx_off = (long)sym[j].st_value;
            /* the runtime's own thread-locals are not shared memory */
            if (name.compare(0, 4, "emu_") == 0 || name.find("3emu") != std::string::npos)
                continue;
            syms.push_back(Tls{sym[j].st_value, sym[j].st_size, name});
        }
    }
    munmap(map, (size_t)st.st_size);
    if (idx_off < 0) {
        std::fprintf(stderr, "emu-profile: no symbol table in %s (was it stripped?)\n", path.c_str());
        std::exit(EXIT_FAILURE);
    }
    const uintptr_t tls_base = (uintptr_t)&emu_thread_idx - (uintptr_t)idx_off;
    g_tls_lo = tls_base;
    g_tls_hi = tls_base + ctx.tls_memsz;
    std::vector<std::string> names;
    for (const Tls &t : syms)
        names.push_back(t.name);
    std::string demangled = demangle_via_cxxfilt(names);
    size_t at = 0;
    for (const Tls &t : syms) {
        size_t nl = demangled.find('\n', at);
        std::string nice = nl == std::string::npos ? t.name : demangled.substr(at, nl - at);
        at = nl == std::string::npos ? demangled.size() : nl + 1;
        g_shared_vars.push_back(Region{tls_base + t.off, tls_base + t.off + t.size, nice});
    }
    std::sort(g_shared_vars.begin(), g_shared_vars.end(),
              [](const Region &a, const Region &b) { return a.lo < b.lo; });
}

/* ---- running a helper program (addr2line, c++filt) */

std::string run_tool(std::vector<std::string> argv, const std::string &input)
{
    std::vector<char *> args;
    for (std::string &a : argv)
        args.push_back(&a[0]);
    args.push_back(nullptr);
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0)
        return std::string();
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    std::string text;
    if (rc == 0) {
        /* the tools answer line by line; a large input could fill the pipe both ways, so
         * write it from a child of our own */
        pid_t writer = fork();
        if (writer == 0) {
            close(out[0]);
            size_t done = 0;
            while (done < input.size()) {
                ssize_t k = write(in[1], input.data() + done, input.size() - done);
                if (k <= 0)
                    break;
                done += (size_t)k;
            }
            _exit(0);
        }
        close(in[1]);
        std::vector<char> buf(65536);
        ssize_t got;
        while ((got = read(out[0], buf.data(), buf.size())) > 0)
            text.append(buf.data(), (size_t)got);
        waitpid(writer, nullptr, 0);
        waitpid(pid, nullptr, 0);
    } else {
        close(in[1]);
    }
    close(out[0]);
    return text;
}

std::string demangle_via_cxxfilt(const std::vector<std::string> &names)
{
    std::string input;
    for (const std::string &n : names)
        input += n + "\n";
    if (names.empty())
        return input;
    std::string out = run_tool({"c++filt"}, input);
    return std::count(out.begin(), out.end(), '\n') == (long)names.size() ? out : input;
}

std::string relative(std::string loc)
{
    size_t disc = loc.find(" (discriminator");
    if (disc != std::string::npos)
        loc.erase(disc);
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) {
        size_t n = std::strlen(cwd);
        if (loc.compare(0, n, cwd) == 0 && loc.size() > n && loc[n] == '/')
            loc.erase(0, n + 1);
    }
    return loc;
}

bool runtime_frame(const std::string &loc)
{
    return loc.find("harness/emu/include") != std::string::npos ||
           loc.find("include/c++") != std::string::npos ||
           loc.compare(0, 9, "/usr/incl") == 0 || loc.compare(0, 2, "??") == 0;
}

/* file:line of each code address (a return address: the call is just before it), the
 * innermost frame that is the program's own code, not the emu's headers. One addr2line. */
std::map<uintptr_t, std::string> lines_of(const std::vector<uintptr_t> &pcs)
{
    std::map<uintptr_t, std::string> result;
    if (pcs.empty())
        return result;
    dl_phdr_info self{};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            *(dl_phdr_info *)data = *info;
            return 1;
        },
        &self);
    std::string input;
    char buf[64];
    for (uintptr_t pc : pcs) {
        std::snprintf(buf, sizeof buf, "%#lx\n", (unsigned long)(pc - 1 - self.dlpi_addr));
        input += buf;
    }
    /* -a: each address's frames follow a line with the address, so they can be told apart */
    std::string text = run_tool({"addr2line", "-a", "-i", "-e", exe_path()}, input);
    size_t at = 0, k = 0;
    std::vector<std::string> frames;
    auto finish = [&]() {
        if (k == 0 || k > pcs.size())
            return;
        std::string best = frames.empty() ? std::string("??") : relative(frames[0]);
        for (const std::string &f : frames)
            if (!runtime_frame(relative(f))) {
                best = relative(f);
                break;
            }
        result[pcs[k - 1]] = best;
    };
    while (at < text.size()) {
        size_t nl = text.find('\n', at);
        if (nl == std::string::npos)
            nl = text.size();
        std::string line = text.substr(at, nl - at);
        at = nl + 1;
        if (line.compare(0, 2, "0x") == 0) {
            finish();
            frames.clear();
            ++k;
        } else {
            frames.push_back(line);
        }
    }
    finish();
    for (uintptr_t pc : pcs)
        if (!result.count(pc))
            result[pc] = "??";
    return result;
}

/* ---- the hooks */

/* Runs on the fiber's stack: no symbolisation here (the scheduler's report adds the line). */
[[noreturn]] void bad_access(uintptr_t pc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bad_access(uintptr_t pc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(g_message, sizeof g_message, fmt, ap);
    va_end(ap);
    prof_fail(g_message, pc);
}

const char *verb(uint8_t kind)
{
    return kind == STORE ? "write" : kind == ATOMIC ? "atomic" : "read";
}

inline bool in(uintptr_t a, uintptr_t lo, uintptr_t hi) { return a >= lo && a < hi; }

/* Where an access goes: -1 nowhere to count (the thread's stack, threadIdx & co., the launch's
 * arguments), else GLOBAL or SHARED. Stops the kernel on an access outside every region. */
inline int classify_access(uintptr_t a, uint32_t size, uint8_t kind, uintptr_t pc,
                           const ProfThread &t)
{
    if (a >= t.stack_lo - 4096 && a < t.stack_hi)
        return -1; /* locals (the guard below the stack faults as an overflow) */
    if (a >= g_hit_lo && a + size <= g_hit_hi) {
        g_region = g_hit_region;
        return GLOBAL;
    }
    if (in(a, g_tls_lo, g_tls_hi)) {
        for (int i = 0; i < 4; ++i)
            if (in(a, g_idx_lo[i], g_idx_hi[i]))
                return -1;
        if (in(a, g_dyn_lo, g_dyn_lo + SHARED_PER_BLOCK_OPTIN)) {
            if (a + size <= g_dyn_lo + g_dyn_bytes) {
                g_region = 0;
                return SHARED;
            }
            bad_access(pc, "made an illegal %s of %u bytes at byte offset %zu of dynamic shared memory, "
                       "which this launch gave %zu bytes (the third <<<>>> argument)",
                       verb(kind), size, (size_t)(a - g_dyn_lo), g_dyn_bytes);
        }
        auto it = std::upper_bound(g_shared_vars.begin(), g_shared_vars.end(), a,
                                   [](uintptr_t x, const Region &r) { return x < r.lo; });
        if (it != g_shared_vars.begin()) {
            --it;
            if (a + size <= it->hi) {
                g_region = (uint16_t)(1 + (it - g_shared_vars.begin()));
                return SHARED;
            }
            bad_access(pc, "made an illegal %s of %u bytes of shared memory at byte offset %zu of %s, "
                       "a %zu-byte __shared__ variable,", verb(kind), size, (size_t)(a - it->lo),
                       it->name.c_str(), (size_t)(it->hi - it->lo));
        }
        bad_access(pc, "made an illegal %s of shared memory outside every __shared__ variable",
                   verb(kind));
    }
    /* a live allocation */
    auto al = std::upper_bound(g_allocs.begin(), g_allocs.end(), std::make_pair(a, (size_t)-1));
    if (al != g_allocs.begin()) {
        --al;
        if (a >= al->first && a + size <= al->first + al->second) {
            g_hit_lo = al->first;
            g_hit_hi = al->first + al->second;
            uint16_t &order = g_alloc_order[(size_t)(al - g_allocs.begin())];
            if (!order)
                order = ++g_touched;
            g_hit_region = g_region = order;
            return GLOBAL;
        }
    }
    if (in(a, g_host_lo, g_host_hi) || in(a, g_pack_lo, g_pack_hi))
        return -1; /* the launch's argument pack: on the launching thread's stack, or the copy a
                      launch queued on a stream or captured in a graph keeps on the heap */
    for (const Region &r : g_image)
        if (in(a, r.lo, r.hi)) {
            g_region = 0;
            return GLOBAL; /* __device__ and __constant__ variables */
        }
    bad_access(pc, "made an illegal %s of %u bytes at address %s", verb(kind), size,
               describe_address(a).c_str());
}

inline void record(const void *p, uint32_t size, uint8_t kind, void *ret)
{
    if (!g_in_launch)
        return;
    ProfThread t;
    if (!prof_current(&t))
        return;
    const uintptr_t pc = (uintptr_t)ret;
    const int space = classify_access((uintptr_t)p, size, kind, pc, t);
    if (space < 0 || !g_record)
        return;
    g_lane[t.lin].acc.push_back(Access{pc, (uintptr_t)p, size, g_region, (uint8_t)space, kind});
    if (space == SHARED && g_region < g_shared_touched.size())
        g_shared_touched[g_region] = 1;
}

/* ---- scoring a warp */

/* Shared memory returns 128 bytes a cycle: one 4-byte register for each of 32 lanes. So a
 * request is served in groups of lanes that together ask for 128 bytes: the whole warp for
 * 4-byte accesses, each half-warp for 8-byte ones, each quarter-warp for 16-byte ones; and
 * within a group, one wavefront per distinct 4-byte word in the busiest bank (a word read by
 * several lanes of the group is a broadcast). When every lane asks for the same address as its
 * neighbour l ^ 1, or every lane as l ^ 2, the returns pack two lanes into one slot and the
 * groups are twice as large. Measured on the H200 with Nsight Compute for 36 patterns of 4-,
 * 8- and 16-byte loads (tests/emu_profile.c, "the H200's wavefronts"); the rule is the one
 * NVIDIA's engineers give for sm_70 and later (NVIDIA developer forums, "Unexpected shared
 * memory bank conflict", 2019). */
static unsigned shared_wavefronts(const Access *const *v, const uint8_t *lane, unsigned n)
{
    const uint32_t size = v[0]->size;
    unsigned group = size >= 16 ? 8 : size >= 8 ? 16 : 32;
    if (size >= 8) {
        int at[WARP];
        for (unsigned l = 0; l < WARP; ++l)
            at[l] = -1;
        for (unsigned i = 0; i < n; ++i)
            at[lane[i]] = (int)i;
        for (unsigned mask = 1; mask <= 2; mask *= 2) {
            bool paired = true;
            for (unsigned l = 0; l < WARP && paired; ++l)
                if (at[l] >= 0 && at[l ^ mask] >= 0)
                    paired = v[at[l]]->addr == v[at[l ^ mask]]->addr;
            if (paired) {
                group *= 2;
                break;
            }
        }
    }
    unsigned total = 0;
    for (unsigned g0 = 0; g0 < WARP; g0 += group) {
        uint64_t u[WARP * 4];
        unsigned m = 0;
        for (unsigned i = 0; i < n; ++i)
            if (lane[i] >= g0 && lane[i] < g0 + group)
                for (uintptr_t x = v[i]->addr >> 2; x <= (v[i]->addr + v[i]->size - 1) >> 2 &&
                                                    m < WARP * 4; ++x)
                    u[m++] = x;
        if (m == 0)
            continue;
        std::sort(u, u + m);
        m = (unsigned)(std::unique(u, u + m) - u);
        unsigned per[32] = {}, worst = 0;
        for (unsigned i = 0; i < m; ++i)
            worst = std::max(worst, ++per[u[i] % 32]);
        total += worst;
    }
    return total;
}

/* one warp request: v[i] is the access of lane lane[i] */
void score(const Access *const *v, const uint8_t *lane, unsigned n)
{
    const Access &a0 = *v[0];
    MemStat &s = g_mem[MemKey{a0.pc, a0.region, a0.space, a0.kind}];
    s.requests++;
    s.lanes += n;
    for (unsigned i = 0; i < n; ++i)
        s.bytes += v[i]->size;
    if (a0.space != GLOBAL) {
        s.units += shared_wavefronts(v, lane, n);
        return;
    }
    uint64_t u[1024];
    unsigned m = 0;
    for (unsigned i = 0; i < n; ++i)
        for (uintptr_t x = v[i]->addr >> 5; x <= (v[i]->addr + v[i]->size - 1) >> 5 && m < 1024; ++x)
            u[m++] = x;
    std::sort(u, u + m);
    m = (unsigned)(std::unique(u, u + m) - u);
    s.units += m; /* 32-byte sectors */
}

void flush_memory(unsigned base, unsigned nl)
{
    const size_t len = g_lane[base].acc.size();
    bool uniform = true;
    for (unsigned l = 1; l < nl && uniform; ++l)
        uniform = g_lane[base + l].acc.size() == len;
    for (size_t i = 0; i < len && uniform; ++i)
        for (unsigned l = 1; l < nl && uniform; ++l)
            uniform = g_lane[base + l].acc[i].pc == g_lane[base].acc[i].pc &&
                      g_lane[base + l].acc[i].kind == g_lane[base].acc[i].kind;
    const Access *v[WARP];
    uint8_t lanes[WARP];
    for (unsigned l = 0; l < nl; ++l)
        lanes[l] = (uint8_t)l;
    if (uniform) { /* every lane made the same accesses: the i-th of each is one request */
        for (size_t i = 0; i < len; ++i) {
            for (unsigned l = 0; l < nl; ++l)
                v[l] = &g_lane[base + l].acc[i];
            score(v, lanes, nl);
        }
    } else { /* the k-th execution of a call site by each lane that reached it */
        std::map<std::pair<uintptr_t, uint32_t>, std::vector<std::pair<const Access *, uint8_t>>> req;
        std::unordered_map<uintptr_t, uint32_t> seen;
        for (unsigned l = 0; l < nl; ++l) {
            seen.clear();
            for (const Access &x : g_lane[base + l].acc)
                req[{x.pc * 4 + x.kind, seen[x.pc * 4 + x.kind]++}].push_back({&x, (uint8_t)l});
        }
        for (auto &r : req) {
            unsigned k = 0;
            for (auto &a : r.second) {
                v[k] = a.first;
                lanes[k++] = a.second;
            }
            score(v, lanes, k);
        }
    }
    for (unsigned l = 0; l < nl; ++l)
        g_lane[base + l].acc.clear();
}

void flush_branches(unsigned base, unsigned nl)
{
    const std::vector<Branch> &b0 = g_lane[base].br;
    bool same = true;
    for (unsigned l = 1; l < nl && same; ++l) {
        const std::vector<Branch> &b = g_lane[base + l].br;
        same = b.size() == b0.size() && (b.empty() || !std::memcmp(b.data(), b0.data(), b.size() * sizeof(Branch)));
    }
    if (!same) {
        /* the k-th execution of a basic block by each lane that reached it: divergent when
         * they do not all go on to the same block */
        struct Out {
            uintptr_t target;
            bool split;
        };
        std::map<std::pair<uintptr_t, uint32_t>, Out> exec;
        std::unordered_map<uintptr_t, uint32_t> seen;
        for (unsigned l = 0; l < nl; ++l) {
            seen.clear();
            for (const Branch &x : g_lane[base + l].br) {
                auto ins = exec.emplace(std::make_pair(x.site, seen[x.site]++), Out{x.target, false});
                if (!ins.second && ins.first->second.target != x.target)
                    ins.first->second.split = true;
            }
        }
        for (auto &e : exec)
            if (e.second.split) {
                g_div[e.first.first]++;
                g_div_total++;
            }
    }
    for (unsigned l = 0; l < nl; ++l)
        g_lane[base + l].br.clear();
}

void flush_block()
{
    for (unsigned base = 0; base < g_nthreads; base += WARP) {
        const unsigned nl = std::min<unsigned>(WARP, g_nthreads - base);
        flush_memory(base, nl);
        flush_branches(base, nl);
    }
}

/* "file:line" as a key that sorts by file, then by line number */
std::tuple<std::string, long, int, std::string> key(const std::string &loc, int what,
                                                     const std::string &region)
{
    size_t colon = loc.rfind(':');
    if (colon == std::string::npos)
        return std::make_tuple(loc, -1L, what, region);
    return std::make_tuple(loc.substr(0, colon), std::atol(loc.c_str() + colon + 1), what, region);
}

/* "buffer 2" (global: the second buffer the launch touched), "s_tile" (shared) */
std::string region_name(const MemKey &k)
{
    if (k.space == GLOBAL)
        return k.region ? "buffer " + std::to_string(k.region) : "__device__ var";
    if (k.region == 0)
        return "extern __shared__";
    std::string n = g_shared_vars[k.region - 1].name;
    size_t c = n.rfind("::");
    return c == std::string::npos ? n : n.substr(c + 2);
}

std::string loc_of(const std::tuple<std::string, long, int, std::string> &k)
{
    return std::get<1>(k) < 0 ? std::get<0>(k) : std::get<0>(k) + ":" + std::to_string(std::get<1>(k));
}

bool printing()
{
    if (g_print < 0) {
        const char *q = std::getenv("EMU_PROFILE_QUIET");
        g_print = !(q && *q && std::strcmp(q, "0"));
    }
    return g_print;
}

void report(const void *kernel, const Cfg &c)
{
    const unsigned long long blocks = (unsigned long long)c.grid.x * c.grid.y * c.grid.z;
    const unsigned threads = c.block.x * c.block.y * c.block.z;
    emu_profile_totals t{};
    t.warps = blocks * ((threads + WARP - 1) / WARP);
    for (auto &m : g_mem) {
        const MemStat &s = m.second;
        if (m.first.space == GLOBAL && m.first.kind == LOAD) {
            t.gld_requests += s.requests;
            t.gld_sectors += s.units;
            t.gld_lanes += s.lanes, t.gld_bytes += s.bytes;
        } else if (m.first.space == GLOBAL) { /* stores and atomics */
            t.gst_requests += s.requests;
            t.gst_sectors += s.units;
            t.gst_lanes += s.lanes, t.gst_bytes += s.bytes;
            if (m.first.kind == ATOMIC) /* and the atomics on their own */
                t.gatom_requests += s.requests, t.gatom_lanes += s.lanes;
        } else if (m.first.kind == LOAD) {
            t.shld_requests += s.requests;
            t.shld_wavefronts += s.units;
            t.shld_lanes += s.lanes, t.shld_bytes += s.bytes;
        } else {
            t.shst_requests += s.requests;
            t.shst_wavefronts += s.units;
            t.shst_lanes += s.lanes, t.shst_bytes += s.bytes;
        }
    }
    t.divergent_branches = g_div_total;
    /* the footprint: every __shared__ variable (and the dynamic shared memory) an access reached */
    for (size_t r = 0; r < g_shared_touched.size(); ++r)
        if (g_shared_touched[r])
            t.shared_bytes += r ? g_shared_vars[r - 1].hi - g_shared_vars[r - 1].lo : g_dyn_bytes;
    g_last = t;
    g_have_last = true;
    g_sum.warps += t.warps;
    g_sum.gld_requests += t.gld_requests, g_sum.gld_sectors += t.gld_sectors;
    g_sum.gst_requests += t.gst_requests, g_sum.gst_sectors += t.gst_sectors;
    g_sum.shld_requests += t.shld_requests, g_sum.shld_wavefronts += t.shld_wavefronts;
    g_sum.shst_requests += t.shst_requests, g_sum.shst_wavefronts += t.shst_wavefronts;
    g_sum.divergent_branches += t.divergent_branches;
    g_sum.gld_lanes += t.gld_lanes, g_sum.gld_bytes += t.gld_bytes;
    g_sum.gst_lanes += t.gst_lanes, g_sum.gst_bytes += t.gst_bytes;
    g_sum.shld_lanes += t.shld_lanes, g_sum.shld_bytes += t.shld_bytes;
    g_sum.shst_lanes += t.shst_lanes, g_sum.shst_bytes += t.shst_bytes;
    g_sum.shared_bytes = std::max(g_sum.shared_bytes, t.shared_bytes); /* a footprint: the largest */
    g_sum.gatom_requests += t.gatom_requests, g_sum.gatom_lanes += t.gatom_lanes;
    ++g_nsum;
    g_kernels.push_back(kernel);
    if (!printing())
        return;
    /* per source line */
    std::vector<uintptr_t> pcs;
    for (auto &m : g_mem)
        pcs.push_back(m.first.pc);
    for (auto &d : g_div)
        pcs.push_back(d.first);
    std::map<uintptr_t, std::string> line = lines_of(pcs);
    struct Row {
        MemStat s;
        uint64_t div = 0;
    };
    /* key: file, line, then 0 global load, 1 global store, 2 global atomic, 3-5 shared,
     * 6 branch */
    std::map<std::tuple<std::string, long, int, std::string>, Row> rows;
    for (auto &m : g_mem) {
        Row &r = rows[key(line[m.first.pc], m.first.space * 3 + m.first.kind, region_name(m.first))];
        r.s.requests += m.second.requests;
        r.s.lanes += m.second.lanes;
        r.s.units += m.second.units;
        r.s.bytes += m.second.bytes;
    }
    for (auto &d : g_div)
        rows[key(line[d.first], 6, "")].div += d.second;
    const std::string name = symbol_name(kernel);
    std::printf("  kernel %s: grid (%u,%u,%u) block (%u,%u,%u), %llu warps\n", name.c_str(),
                c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z, t.warps);
    size_t width = 24;
    for (auto &r : rows)
        width = std::max(width, loc_of(r.first).size());
    std::printf("    %-*s  %-13s %-17s %9s %9s %10s %12s %14s\n", (int)width, "source line", "what",
                "memory", "requests", "lanes/req", "bytes/lane", "sectors/req", "wavefronts/req");
    static const char *what[] = {"global load", "global store", "global atomic",
                                 "shared load", "shared store", "shared atomic"};
    for (auto &r : rows) {
        const std::string loc = loc_of(r.first);
        const int k = std::get<2>(r.first);
        if (k == 6) {
            std::printf("    %-*s  %-13s %-17s %9llu  (%.3f per warp)\n", (int)width, loc.c_str(),
                        "divergent br", "", (unsigned long long)r.second.div,
                        (double)r.second.div / (double)t.warps);
            continue;
        }
        const MemStat &s = r.second.s;
        const double per = (double)s.units / (double)s.requests;
        /* the access width: 4 for a float, 16 for a float4 (the lanes' mean) */
        const double lane_bytes = s.lanes ? (double)s.bytes / (double)s.lanes : 0.0;
        char sectors[32] = "", waves[32] = "";
        std::snprintf(k < 3 ? sectors : waves, 32, "%.2f", per);
        std::printf("    %-*s  %-13s %-17s %9llu %9.1f %10.1f %12s %14s%s\n", (int)width, loc.c_str(),
                    what[k], std::get<3>(r.first).c_str(), (unsigned long long)s.requests,
                    (double)s.lanes / (double)s.requests, lane_bytes, sectors, waves,
                    k >= 3 && per > 1.05 * (lane_bytes > 4 ? lane_bytes / 4 : 1.0) ? "  bank conflicts" : "");
    }
    auto ratio = [](unsigned long long a, unsigned long long b) { return b ? (double)a / (double)b : 0.0; };
    std::printf("    total: global load %.2f sectors/req (%llu req), global store %.2f (%llu), "
                "shared load %.2f wavefronts/req (%llu), shared store %.2f (%llu), "
                "divergent branches %.3f per warp (%llu)\n",
                ratio(t.gld_sectors, t.gld_requests), t.gld_requests,
                ratio(t.gst_sectors, t.gst_requests), t.gst_requests,
                ratio(t.shld_wavefronts, t.shld_requests), t.shld_requests,
                ratio(t.shst_wavefronts, t.shst_requests), t.shst_requests,
                ratio(t.divergent_branches, t.warps), t.divergent_branches);
    std::fflush(stdout);
}

Cfg g_cfg;

} /* namespace */

/* ---- the scheduler's calls */

void prof_launch_begin(const void *, const Cfg &c, const void *pack)
{
    if (!g_layout)
        find_layout();
    g_cfg = c;
    g_mem.clear();
    g_div.clear();
    g_div_total = 0;
    g_dyn_lo = (uintptr_t)emu_dyn_smem;
    g_dyn_bytes = c.smem;
    g_shared_touched.assign(g_shared_vars.size() + 1, 0);
    const void *idx[4] = {&emu_thread_idx, &emu_block_idx, &emu_block_dim, &emu_grid_dim};
    const size_t idx_size[4] = {sizeof(uint3), sizeof(uint3), sizeof(dim3), sizeof(dim3)};
    for (int i = 0; i < 4; ++i) {
        g_idx_lo[i] = (uintptr_t)idx[i];
        g_idx_hi[i] = (uintptr_t)idx[i] + idx_size[i];
    }
    live_allocations(g_allocs);
    g_alloc_order.assign(g_allocs.size(), 0);
    g_touched = 0;
    g_hit_lo = 1;
    g_hit_hi = 0;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *lo;
        size_t size;
        pthread_attr_getstack(&attr, &lo, &size);
        g_host_lo = (uintptr_t)lo;
        g_host_hi = (uintptr_t)lo + size;
        pthread_attr_destroy(&attr);
    }
    /* a pack off this stack is the copy a queued or captured launch made with new (the launch
     * templates of include/emu/device.h): the heap block malloc gave it */
    g_pack_lo = 1;
    g_pack_hi = 0;
    if (pack && !in((uintptr_t)pack, g_host_lo, g_host_hi)) {
        g_pack_lo = (uintptr_t)pack;
        g_pack_hi = (uintptr_t)pack + malloc_usable_size(const_cast<void *>(pack));
    }
    g_in_launch = true;
}

void prof_launch_end(const void *kernel, bool ok)
{
    g_in_launch = false;
    if (ok && g_record)
        report(kernel, g_cfg);
}

void prof_block_begin(unsigned nthreads)
{
    g_nthreads = nthreads;
    for (unsigned i = 0; i < nthreads; ++i) {
        g_lane[i].acc.clear();
        g_lane[i].br.clear();
        g_lane[i].prev = 0;
    }
}

void prof_block_end(bool ok)
{
    if (ok && g_record)
        flush_block();
}

void prof_barrier()
{
    if (g_record)
        flush_block();
}

void prof_thread_exit(unsigned lin)
{
    Lane &l = g_lane[lin];
    if (g_record && l.prev)
        l.br.push_back(Branch{l.prev, 1});
    l.prev = 0;
}

} /* namespace emu */

using emu::record;

/* ---- the public C API (emu_profile.h) */
extern "C" {

void emu_profile_record(int on) { emu::g_record = on; }
void emu_profile_print(int on) { emu::g_print = on; }
int emu_profile_last(struct emu_profile_totals *t)
{
    if (!emu::g_have_last)
        return 0;
    *t = emu::g_last;
    return 1;
}
int emu_profile_sum(struct emu_profile_totals *t)
{
    *t = emu::g_sum;
    return emu::g_nsum;
}
void emu_profile_reset(void)
{
    emu::g_sum = emu_profile_totals{};
    emu::g_nsum = 0;
    emu::g_kernels.clear();
}
int emu_profile_kernels(char *buf, unsigned long n)
{
    std::map<const void *, std::string> known; /* one addr2line per kernel, not per launch */
    std::string names;
    for (const void *k : emu::g_kernels) {
        auto it = known.find(k);
        if (it == known.end())
            it = known.emplace(k, emu::symbol_name(k)).first;
        names += (names.empty() ? "" : "+") + it->second;
    }
    if (n) {
        const size_t len = std::min<size_t>(names.size(), n - 1);
        std::memcpy(buf, names.data(), len);
        buf[len] = 0;
    }
    return emu::g_nsum;
}

/* ---- ThreadSanitizer's instrumentation ABI (GCC -fsanitize=thread). We are its runtime:
 * libtsan is not linked. */
#define EMU_RW(n)                                                                                 \
    void __tsan_read##n(void *p) { record(p, n, emu::LOAD, __builtin_return_address(0)); }        \
    void __tsan_write##n(void *p) { record(p, n, emu::STORE, __builtin_return_address(0)); }      \
    void __tsan_unaligned_read##n(void *p) { record(p, n, emu::LOAD, __builtin_return_address(0)); } \
    void __tsan_unaligned_write##n(void *p) { record(p, n, emu::STORE, __builtin_return_address(0)); } \
    void __tsan_volatile_read##n(void *p) { record(p, n, emu::LOAD, __builtin_return_address(0)); } \
    void __tsan_volatile_write##n(void *p) { record(p, n, emu::STORE, __builtin_return_address(0)); }
EMU_RW(1)
EMU_RW(2)
EMU_RW(4)
EMU_RW(8)
EMU_RW(16)
#undef EMU_RW
void __tsan_read_range(void *p, unsigned long n) { record(p, (uint32_t)n, emu::LOAD, __builtin_return_address(0)); }
void __tsan_write_range(void *p, unsigned long n) { record(p, (uint32_t)n, emu::STORE, __builtin_return_address(0)); }
void __tsan_init(void) {}
void __tsan_func_entry(void *) {}
void __tsan_func_exit(void) {}
void __tsan_vptr_update(void **, void *) {}
void __tsan_vptr_read(void **) {}
void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

#define EMU_AT(n, T)                                                                              \
    T __tsan_atomic##n##_load(const volatile T *a, int)                                           \
    {                                                                                             \
        record((const void *)a, n / 8, emu::LOAD, __builtin_return_address(0));                   \
        return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                              \
    }                                                                                             \
    void __tsan_atomic##n##_store(volatile T *a, T v, int)                                        \
    {                                                                                             \
        record((const void *)a, n / 8, emu::STORE, __builtin_return_address(0));                  \
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                 \
    }                                                                                             \
    T __tsan_atomic##n##_exchange(volatile T *a, T v, int)                                        \
    {                                                                                             \
        record((const void *)a, n / 8, emu::ATOMIC, __builtin_return_address(0));                 \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                       \
    }                                                                                             \
    T __tsan_atomic##n##_fetch_add(volatile T *a, T v, int)                                       \
    {                                                                                             \
        record((const void *)a, n / 8, emu::ATOMIC, __builtin_return_address(0));                 \
        return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                        \
    }                                                                                             \
    T __tsan_atomic##n##_fetch_sub(volatile T *a, T v, int)                                       \
    {                                                                                             \
        record((const void *)a, n / 8, emu::ATOMIC, __builtin_return_address(0));                 \
        return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                        \
    }                                                                                             \
    T __tsan_atomic##n##_fetch_and(volatile T *a, T v, int)                                       \
    {                                                                                             \
        record((const void *)a, n / 8, emu::ATOMIC, __builtin_return_address(0));                 \
        return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                        \
    }                                                                                             \
    T __tsan_atomic##n##_fetch_or(volatile T *a, T v, int)                                        \
    {                                                                                             \
        record((const void *)a, n / 8, emu::ATOMIC, __builtin_return_address(0));                 \
        return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                         \
    }                                                                                             \
    T __tsan_atomic##n##_fetch_xor(volatile T *a, T v, int)                                       \
    {                                                                                             \
        record((const void *)a, n / 8, emu::ATOMIC, __builtin_return_address(0));                 \
        return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                        \
    }                                                                                             \
    T __tsan_atomic##n##_fetch_nand(volatile T *a, T v, int)                                      \
    {                                                                                             \
        record((const void *)a, n / 8, emu::ATOMIC, __builtin_return_address(0));                 \
        return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                       \
    }                                                                                             \
    int __tsan_atomic##n##_compare_exchange_strong(volatile T *a, T *c, T v, int, int)            \
    {                                                                                             \
        record((const void *)a, n / 8, emu::ATOMIC, __builtin_return_address(0));                 \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);   \
    }                                                                                             \
    int __tsan_atomic##n##_compare_exchange_weak(volatile T *a, T *c, T v, int, int)              \
    {                                                                                             \
        record((const void *)a, n / 8, emu::ATOMIC, __builtin_return_address(0));                 \
        return __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
    }                                                                                             \
    T __tsan_atomic##n##_compare_exchange_val(volatile T *a, T c, T v, int, int)                  \
    {                                                                                             \
        record((const void *)a, n / 8, emu::ATOMIC, __builtin_return_address(0));                 \
        __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);         \
        return c;                                                                                 \
    }
EMU_AT(8, uint8_t)
EMU_AT(16, uint16_t)
EMU_AT(32, uint32_t)
EMU_AT(64, uint64_t)
#undef EMU_AT

/* ---- SanitizerCoverage (-fsanitize-coverage=trace-pc): a call at the start of every basic
 * block; its return address names the block */
void __sanitizer_cov_trace_pc(void)
{
    if (!emu::g_in_launch || !emu::g_record)
        return;
    emu::ProfThread t;
    if (!emu::prof_current(&t))
        return;
    emu::Lane &l = emu::g_lane[t.lin];
    const uintptr_t pc = (uintptr_t)__builtin_return_address(0);
    if (l.prev)
        l.br.push_back(emu::Branch{l.prev, pc});
    l.prev = pc;
}

} /* extern "C" */
