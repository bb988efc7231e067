/* sass.h: what the machine code of this very program holds, through cuobjdump (GPU only).
 *
 * A grader that checks an instruction is really there (chapter 05: LDGSTS for cp.async,
 * UTMALDG for TMA, HGMMA for wgmma) asks sass_count for the SASS of one kernel in the cubin of
 * one architecture of its own fat binary. The pure pieces (quoting, matching an arch line) are
 * separate so tests/harness.c can test them without a GPU. */
#ifndef SASS_H
#define SASS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when `prog` is an executable file in a directory of PATH. */
int sass_on_path(const char *prog);

/* The path of this program's own executable, resolved in this process. It cannot be left to
 * cuobjdump: "cuobjdump -sass /proc/self/exe" run through popen makes /proc/self/exe name the
 * shell's or cuobjdump's own executable when they open it, not this program. Returns 0, or -1
 * with `why` filled. */
int sass_own_path(char *buf, size_t size, char *why, size_t len);

/* `path` in single quotes for sh, each ' written as '\'' so that no path can end the quoting.
 * Returns 0, or -1 when it does not fit in `size` bytes. */
int sass_shell_quote(const char *path, char *out, size_t size);

/* For a line of cuobjdump's output: -1 when it names no arch ("arch = sm_..."), else 1 when it
 * names exactly `arch` ("sm_90" is neither "sm_90a" nor the start of "sm_900"), else 0. */
int sass_arch_line(const char *line, const char *arch);

/* For the text of a `cuobjdump -sass` dump: in the cubin for `arch`, how many functions have a
 * name containing `kernel` (*nfn), and how many of those hold `opcode` on some line (*nwith).
 * The pure part of sass_count. */
void sass_scan(const char *text, const char *kernel, const char *opcode, const char *arch,
               int *nfn, int *nwith);

/* Read this program's whole SASS once, now, and answer every later sass_count from it. A grader
 * calls it in its own process before its tests fork (when it registers a test that reads
 * machine code): disassembling a grader takes cuobjdump about ten seconds on the H200's host,
 * once a test before; and the dump is then taken before any code under grading has run, so
 * nothing that code does to the file on disk reaches it. Returns 0, or -1 with `why` filled
 * (why may be NULL, len 0: sass_count then runs cuobjdump itself and says why there). */
int sass_preload(char *why, size_t len);

/* The SASS of this very program (found by its resolved path), in the cubin for `arch`
 * ("sm_90", "sm_90a"): how many functions have a name containing `kernel` (*nfn), and how many
 * of those hold `opcode` on some line (*nwith). A grader of a chapter with steps links the
 * references beside the learner's kernels (given.o), under the same kernel names, so "some
 * function has it" would pass on the reference alone: such a grader asks for two functions
 * (yours and the reference's) and for every one of them to hold it. Returns 0, or -1 with
 * `why` filled when cuobjdump could not run or finish. */
int sass_count(const char *kernel, const char *opcode, const char *arch, int *nfn, int *nwith,
               char *why, size_t len);

/* For the text of a `cuobjdump -sass` dump: for each function of the cubin for `arch` whose name
 * contains `kernel` (up to `max` of them, in the dump's order), how many of its instructions
 * have each of the `nops` mnemonics ops[j]: counts[f * nops + j]. The mnemonic is an
 * instruction's opcode without its modifiers and predicate ("@!P1 LDS.128 R4, [R2]" is LDS, never
 * LDSM; "FFMA.FTZ" is FFMA). Returns the number of such functions (all of them, even past max).
 * The pure part of sass_tally. */
int sass_scan_ops(const char *text, const char *kernel, const char *arch, const char *const *ops,
                  int nops, int *counts, int max);

/* sass_scan_ops over this very program's SASS (sass_preload's, else a fresh dump): 0 with *nfn
 * set, or -1 with `why` filled when cuobjdump could not run or finish. A grader that needs a
 * ratio of instructions in the machine code of what ran (FFMAs per shared load) or their absence
 * (LDL and STL: local memory, a spill) counts here. */
int sass_tally(const char *kernel, const char *arch, const char *const *ops, int nops,
               int *counts, int max, int *nfn, char *why, size_t len);

#ifdef __cplusplus
}
#endif

#endif
