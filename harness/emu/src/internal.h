/* internal.h: what the parts of the emu runtime share. Not installed; kernel code sees only
 * include/. */
#ifndef EMU_INTERNAL_H
#define EMU_INTERNAL_H

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace emu {

/* The emulated device (README.md, "The emulated device"). */
constexpr int MAX_THREADS_PER_BLOCK = 1024;
constexpr unsigned MAX_BLOCK_X = 1024, MAX_BLOCK_Y = 1024, MAX_BLOCK_Z = 64;
constexpr unsigned MAX_GRID_X = 2147483647u, MAX_GRID_Y = 65535, MAX_GRID_Z = 65535;
constexpr size_t SHARED_PER_BLOCK = 48 * 1024;        /* static, and dynamic without opt-in */
constexpr size_t SHARED_PER_BLOCK_OPTIN = 227 * 1024; /* cudaFuncSetAttribute's ceiling */
constexpr size_t SHARED_PER_SM = 228 * 1024;
constexpr int WARP = 32;
constexpr int SM_COUNT = 16;
constexpr int CC_MAJOR = 9, CC_MINOR = 0;

/* errors (runtime.cpp) */
cudaError_t record(cudaError_t e);   /* remembers e for cudaGetLastError; returns it */
cudaError_t api_check();             /* the sticky error, recorded, or cudaSuccess */
cudaError_t sync_check();            /* a synchronising call: surfaces a pending kernel fault */
bool device_failed();                /* a kernel fault is pending or sticky: run no more kernels */
void kernel_failed(cudaError_t e);   /* a kernel stopped: e surfaces at the next synchronisation */
int max_dynamic_shared(const void *kernel);

/* memory (memory.cpp) */
enum class Where { HOST, DEVICE, DEVICE_OVERRUN };
Where classify(const void *p, size_t n);
/* The first damaged padding byte around a live allocation, described; empty if none. The
 * padding is repaired, so each damage is reported once. */
std::string check_padding();
/* Where an address lies relative to the allocations: "8 bytes past the end of ...". */
std::string describe_address(uintptr_t addr);

/* the running CUDA thread's linear index in its block (sched.cpp) */
unsigned current_thread();

/* cuda_pipeline.h's copies in flight (pipeline.cpp): the scheduler empties every thread's
 * queue when a block starts, and lands what a thread left in flight when it exits */
void pipeline_block_begin(unsigned nthreads);
void pipeline_thread_exit(unsigned lin);

/* symbolisation of code addresses (sched.cpp) */
std::string symbol_name(const void *code);       /* "matmul_kernel" */
std::string source_location(const void *code);   /* "chapters/01-matmul/matmul.cu:42" */

#ifdef EMU_PROFILE
/* The instrumented build (harness/emu/prof/prof.cpp, README.md "Profiling"): the scheduler
 * calls these, and the profiler asks it for the running CUDA thread. Not in libemu.a. */
struct ProfThread {
    unsigned lin;                 /* linear thread index in the block */
    uintptr_t stack_lo, stack_hi; /* its fiber stack */
};
bool prof_current(ProfThread *t);          /* false outside a CUDA thread */
/* stop the kernel with cudaErrorIllegalAddress; the report names the thread, then message,
 * then the source line of pc (a return address in the access's code) */
[[noreturn]] void prof_fail(const char *message, uintptr_t pc);
void prof_launch_begin(const void *kernel, const Cfg &c);
void prof_launch_end(const void *kernel, bool ok);
void prof_block_begin(unsigned nthreads);
void prof_block_end(bool ok);
void prof_barrier();
void prof_thread_exit(unsigned lin);
/* the live allocations, (base, size), sorted by base (memory.cpp) */
void live_allocations(std::vector<std::pair<uintptr_t, size_t>> &out);
#endif

} /* namespace emu */

#endif /* EMU_INTERNAL_H */
