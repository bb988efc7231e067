/* emu_resources.h: the registers, static shared memory and launch bounds that the GPU compiler
 * gives each kernel, as the CPU backend knows them (emu only; the functions are in
 * build/emu/libemu.a, harness/emu/src/resources.cpp; harness/emu/README.md, "Kernel resources").
 *
 * A kernel file that opts in (EMU_RESOURCE_USAGE, harness/emu/emu.mk) is compiled a second time
 * at build time, by nvcc for the architecture of every device profile (sm_75, sm_80, sm_89,
 * sm_90), and what ptxas reports for each kernel becomes a table, build/emu/FILE.res.h, that
 * the emu build includes into the file's own object. The table registers itself before main;
 * from then on cudaFuncGetAttributes, the occupancy calls and the launch checks answer with the
 * row of the running profile's architecture. A kernel without a row keeps the defaults: no
 * registers, no static shared memory, 1024 threads a block. */
#ifndef EMU_RESOURCES_H
#define EMU_RESOURCES_H

#ifdef __cplusplus
extern "C" {
#endif

/* One kernel on one architecture, as ptxas compiled it. */
struct emu_kernel_resources {
    const char *name;  /* the kernel's mangled name, in g++'s spelling */
    int sm;            /* the architecture: 90 for sm_90 */
    int regs;          /* registers a thread */
    int shared;        /* static shared memory a block, bytes */
    int local;         /* local memory (stack frame) a thread, bytes */
    int max_threads;   /* __launch_bounds__' threads a block (.maxntid's product), 0 if none */
};

/* A kernel file's table; `next` belongs to the runtime. */
struct emu_resource_table {
    const struct emu_kernel_resources *rows;
    unsigned count;
    const char *source;  /* the .cu file it was made from */
    struct emu_resource_table *next;
};

/* Called by the generated table, before main. */
void emu_register_resources(struct emu_resource_table *table);

/* 1 when the running profile's architecture has a row for kernel `func` (its file opted in and
 * nvcc compiled the kernel), else 0: then cudaFuncGetAttributes reports numRegs 0 and the
 * launch checks count no registers. So a grader can tell "fits" from "not measured". */
int emu_kernel_resources_known(const void *func);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EMU_RESOURCES_H */
