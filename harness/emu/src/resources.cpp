/* resources.cpp: what the GPU compiler gave each kernel, and what follows from it on the
 * running device profile (README.md, "Kernel resources").
 *
 * A kernel file that opted in carries a table (include/emu_resources.h), one row per kernel and
 * architecture, keyed by the kernel's mangled name; it registers itself before main. A kernel is
 * known to the runtime by its address, so the address is named through the program's symbol
 * table (each loaded object's, read once), and the name through the tables. From the row of the
 * running profile's architecture come:
 *  - the kernel's attributes (cudaFuncGetAttributes): numRegs, sharedSizeBytes, localSizeBytes,
 *    and maxThreadsPerBlock, the largest block a launch may have: __launch_bounds__' threads, and
 *    no more than the registers a block allow;
 *  - its occupancy (cudaOccupancy*), by the CUDA toolkit's own calculator, cuda_occupancy.h,
 *    given the profile's limits: the rules the CUDA runtime itself follows;
 *  - the launch's check: a block over maxThreadsPerBlock is refused with
 *    cudaErrorLaunchOutOfResources, as a GPU refuses it. */
#include "internal.h"

#include <cuda_occupancy.h>
#include <emu_resources.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace emu {

namespace {

std::atomic<emu_resource_table *> g_tables{nullptr}; /* pushed by the tables' constructors */
std::mutex g_mutex;                                  /* everything below */

struct Known {
    const emu_kernel_resources *row; /* the running profile's, or null */
    int max_threads;                 /* the largest block a launch may have */
};
std::unordered_map<const void *, Known> g_kernels;   /* the kernels asked about so far */

/* The rows of the running profile's architecture by name, built from the tables registered
 * when it is first needed (all of them: they register before main). */
std::unordered_map<std::string, const emu_kernel_resources *> g_by_name;
const emu_resource_table *g_indexed; /* the list's head when g_by_name was built */

/* Per loaded object: the addresses of its functions that have a row. */
struct Object {
    bool read;
    std::unordered_map<uintptr_t, const emu_kernel_resources *> functions;
};
std::unordered_map<std::string, Object> g_objects;

int profile_sm()
{
    return device().cc_major * 10 + device().cc_minor;
}

void index_names()
{
    const emu_resource_table *head = g_tables.load();
    if (head == g_indexed)
        return;
    g_by_name.clear();
    const int sm = profile_sm();
    for (const emu_resource_table *t = head; t; t = t->next)
        for (unsigned i = 0; i < t->count; ++i)
            if (t->rows[i].sm == sm)
                g_by_name.emplace(t->rows[i].name, &t->rows[i]);
    g_indexed = head;
}

/* The row a function symbol's name stands for. g++ and nvcc spell a static kernel differently
 * (_ZL1kPf and _Z1kPf), and the references a grader links carry their symbols renamed ref_NAME
 * (the top Makefile's given.o). */
const emu_kernel_resources *row_of_symbol(const char *name)
{
    std::string candidates[4];
    int n = 0;
    candidates[n++] = name;
    if (std::strncmp(name, "ref_", 4) == 0)
        candidates[n++] = name + 4;
    for (int i = 0, m = n; i < m; ++i)
        if (candidates[i].compare(0, 3, "_ZL") == 0)
            candidates[n++] = "_Z" + candidates[i].substr(3);
    for (int i = 0; i < n; ++i) {
        auto it = g_by_name.find(candidates[i]);
        if (it != g_by_name.end())
            return it->second;
    }
    return nullptr;
}

/* Reads the symbol table of the object at `path`, loaded at `bias`: its functions that have a
 * row. Says so once if the file cannot be read (a stripped program: the rows go unused). */
void read_object(const std::string &path, uintptr_t bias, Object &obj)
{
    obj.read = true;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(ElfW(Ehdr))) {
        std::fprintf(stderr, "emu: cannot read %s to find its kernels' resource rows (%s); "
                             "their registers and launch bounds go unchecked\n",
                     path.c_str(), std::strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    const size_t size = (size_t)st.st_size;
    void *map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        std::fprintf(stderr, "emu: cannot map %s to find its kernels' resource rows (%s)\n",
                     path.c_str(), std::strerror(errno));
        return;
    }
    const unsigned char *base = (const unsigned char *)map;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
    bool ok = std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_shoff > 0 &&
              eh->e_shentsize == sizeof(ElfW(Shdr)) &&
              eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) <= size;
    bool found_table = false;
    for (int pass = 0; ok && pass < 2 && !found_table; ++pass) {
        /* the full symbol table, or, in a stripped object, the dynamic one */
        const ElfW(Word) want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
        const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
        for (int i = 0; i < eh->e_shnum; ++i) {
            if (sh[i].sh_type != want || sh[i].sh_link >= eh->e_shnum)
                continue;
            const ElfW(Shdr) &strs = sh[sh[i].sh_link];
            if (sh[i].sh_offset + sh[i].sh_size > size || strs.sh_offset + strs.sh_size > size)
                continue;
            found_table = true;
            const ElfW(Sym) *sym = (const ElfW(Sym) *)(base + sh[i].sh_offset);
            const char *str = (const char *)(base + strs.sh_offset);
            const size_t n = sh[i].sh_size / sizeof(ElfW(Sym));
            for (size_t j = 0; j < n; ++j) {
                if (ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC || sym[j].st_shndx == SHN_UNDEF ||
                    sym[j].st_name >= strs.sh_size)
                    continue;
                if (const emu_kernel_resources *row = row_of_symbol(str + sym[j].st_name))
                    obj.functions.emplace(bias + sym[j].st_value, row);
            }
        }
    }
    munmap(map, size);
    if (!found_table)
        std::fprintf(stderr, "emu: %s has no symbol table (was it stripped?): its kernels' "
                             "registers and launch bounds go unchecked\n", path.c_str());
}

struct Where {
    uintptr_t addr, bias;
    std::string path;
    bool found;
};

int find_where(dl_phdr_info *info, size_t, void *data)
{
    Where *w = (Where *)data;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type == PT_LOAD && w->addr >= lo && w->addr < lo + ph.p_memsz) {
            w->bias = info->dlpi_addr;
            if (info->dlpi_name && *info->dlpi_name) {
                w->path = info->dlpi_name;
            } else { /* the program itself */
                char exe[4096];
                ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
                w->path = n > 0 ? std::string(exe, (size_t)n) : std::string();
            }
            w->found = true;
            return 1;
        }
    }
    return 0;
}

/* The calculator's device, from the running profile. */
cudaOccDeviceProp occ_device()
{
    cudaDeviceProp p;
    device_properties(&p);
    return cudaOccDeviceProp(p);
}

/* Whether a block of `threads` threads of `regs` registers each fits the registers a block
 * allow: the calculator's rule, which is the hardware's (a warp's registers allocated in units
 * of 256, the warps of a block rounded up to the SM's four partitions). */
bool registers_fit(int regs, int threads)
{
    cudaOccDeviceProp prop = occ_device();
    cudaOccFuncAttributes attr;
    attr.maxThreadsPerBlock = MAX_THREADS_PER_BLOCK;
    attr.numRegs = regs;
    attr.numBlockBarriers = 1;
    cudaOccDeviceState state;
    cudaOccResult r;
    std::memset(&r, 0, sizeof r);
    if (cudaOccMaxActiveBlocksPerMultiprocessor(&r, &prop, &attr, &state, threads, 0) != CUDA_OCC_SUCCESS)
        return false;
    return r.blockLimitRegs > 0;
}

/* The largest block a launch of a kernel with this row may have. */
int max_threads_of(const emu_kernel_resources *row)
{
    int limit = MAX_THREADS_PER_BLOCK;
    if (!row)
        return limit;
    if (row->max_threads > 0 && row->max_threads < limit)
        limit = row->max_threads;
    if (row->regs > 0)
        while (limit > 0 && !registers_fit(row->regs, limit))
            limit = (limit - 1) / WARP * WARP; /* the next smaller whole number of warps */
    return limit;
}

Known lookup(const void *kernel)
{
    if (!g_tables.load())
        return Known{nullptr, MAX_THREADS_PER_BLOCK}; /* no file opted in */
    std::lock_guard<std::mutex> lock(g_mutex);
    auto known = g_kernels.find(kernel);
    if (known != g_kernels.end())
        return known->second;
    index_names();
    const emu_kernel_resources *row = nullptr;
    Where w{(uintptr_t)kernel, 0, std::string(), false};
    dl_iterate_phdr(find_where, &w);
    if (w.found && !w.path.empty()) {
        Object &obj = g_objects[w.path];
        if (!obj.read)
            read_object(w.path, w.bias, obj);
        auto f = obj.functions.find((uintptr_t)kernel);
        if (f != obj.functions.end())
            row = f->second;
    }
    Known k{row, max_threads_of(row)};
    g_kernels.emplace(kernel, k);
    return k;
}

} /* namespace */

int static_shared(const void *kernel)
{
    Known k = lookup(kernel);
    return k.row ? k.row->shared : 0;
}

void kernel_attributes(const void *kernel, cudaFuncAttributes *a)
{
    Known k = lookup(kernel);
    std::memset(a, 0, sizeof *a);
    a->maxThreadsPerBlock = k.max_threads;
    if (k.row) {
        a->numRegs = k.row->regs;
        a->sharedSizeBytes = (size_t)k.row->shared;
        a->localSizeBytes = (size_t)k.row->local;
    }
    a->maxDynamicSharedSizeBytes = max_dynamic_shared(kernel);
    a->preferredShmemCarveout = preferred_carveout(kernel);
    a->ptxVersion = device().cc_major * 10 + device().cc_minor;
    a->binaryVersion = a->ptxVersion;
}

cudaError_t launch_resources_error(const void *kernel, unsigned long long threads)
{
    Known k = lookup(kernel);
    return threads > (unsigned long long)k.max_threads ? cudaErrorLaunchOutOfResources : cudaSuccess;
}

} /* namespace emu */

using namespace emu;

namespace {

/* The calculator's inputs for `func` on the running profile; cudaSuccess or the error to return
 * (recorded). */
cudaError_t occupancy_inputs(const void *func, unsigned int flags, cudaOccDeviceProp *prop,
                             cudaOccFuncAttributes *attr, cudaFuncAttributes *fa)
{
    if (!func)
        return record(cudaErrorInvalidDeviceFunction);
    if (flags & ~(unsigned)cudaOccupancyDisableCachingOverride)
        return record(cudaErrorInvalidValue);
    if (cudaError_t e = api_check())
        return e;
    kernel_attributes(func, fa);
    *prop = occ_device();
    *attr = cudaOccFuncAttributes(*fa);
    if (flags & cudaOccupancyDisableCachingOverride)
        attr->partitionedGCConfig = PARTITIONED_GC_ON_STRICT; /* caching stays on (sm_52, sm_6x) */
    return cudaSuccess;
}

} /* namespace */

extern "C" {

void emu_register_resources(emu_resource_table *table)
{
    emu_resource_table *head = g_tables.load();
    do
        table->next = head;
    while (!g_tables.compare_exchange_weak(head, table));
}

int emu_kernel_resources_known(const void *func)
{
    return func && lookup(func).row ? 1 : 0;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func,
                                                                   int blockSize, size_t dynamicSMemSize,
                                                                   unsigned int flags)
{
    if (!numBlocks)
        return record(cudaErrorInvalidValue);
    cudaOccDeviceProp prop;
    cudaOccFuncAttributes attr;
    cudaFuncAttributes fa;
    if (cudaError_t e = occupancy_inputs(func, flags, &prop, &attr, &fa))
        return e;
    if (blockSize <= 0)
        return record(cudaErrorInvalidValue);
    if (blockSize > fa.maxThreadsPerBlock) {
        *numBlocks = 0; /* such a block cannot be launched at all */
        return cudaSuccess;
    }
    cudaOccDeviceState state;
    cudaOccResult r;
    std::memset(&r, 0, sizeof r);
    if (cudaOccMaxActiveBlocksPerMultiprocessor(&r, &prop, &attr, &state, blockSize, dynamicSMemSize) !=
        CUDA_OCC_SUCCESS)
        return record(cudaErrorInvalidValue);
    *numBlocks = r.activeBlocksPerMultiprocessor;
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize,
                                                          size_t dynamicSMemSize)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                  dynamicSMemSize, cudaOccupancyDefault);
}

cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, const void *func,
                                                      int numBlocks, int blockSize)
{
    if (!dynamicSmemSize)
        return record(cudaErrorInvalidValue);
    cudaOccDeviceProp prop;
    cudaOccFuncAttributes attr;
    cudaFuncAttributes fa;
    if (cudaError_t e = occupancy_inputs(func, cudaOccupancyDefault, &prop, &attr, &fa))
        return e;
    if (numBlocks <= 0 || blockSize <= 0 || blockSize > fa.maxThreadsPerBlock)
        return record(cudaErrorInvalidValue);
    cudaOccDeviceState state;
    size_t bytes = 0;
    if (cudaOccAvailableDynamicSMemPerBlock(&bytes, &prop, &attr, &state, numBlocks, blockSize) !=
        CUDA_OCC_SUCCESS)
        return record(cudaErrorInvalidValue); /* that many such blocks never fit an SM */
    *dynamicSmemSize = bytes;
    return cudaSuccess;
}

} /* extern "C" */
