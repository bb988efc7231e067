# The GPU Kernel Workbook.
#
#   make grade                 grade your kernels in chapters/ (installs what is missing first)
#   make test                  the project's own tests
#   make bench | plots | book  measure on a GPU, plot, build build/book.pdf
#   make tune CH=04            on a GPU, measure the tile configurations the launchers pick from
#   make report CH=04 [STEP=3] build/report-04.pdf: your kernel graded, profiled, listed, explained
#   make progress              the ladder climbed so far: each chapter's steps passed
#
# Variables choose, not edits: CH=01 (a chapter; CH="01 04" two), STEP=3 (one step of one
# chapter), SOLUTIONS=1 (grade solutions/), BACKEND=auto|cuda|emu, ARCH="75 80 86 89 90" (the
# SM versions to build for), SEED=n; each checked before anything is built (make check-vars).
# Everything generated goes under build/. README.md says more.
#
# How this file is laid out: tools and flags; the chapters and their sources; how one object is
# compiled (pattern rules); the programs (three families, each one static pattern rule over a
# list: graders, profile drivers, and the small test programs), each told what it is by an
# object made from harness/ident.c; the manifest build/programs.tsv, the only place that knows
# where each program lies; then the targets a learner types.

SHELL := /bin/bash
.DEFAULT_GOAL := grade
.SUFFIXES:
.DELETE_ON_ERROR:
.SECONDEXPANSION:
# intermediate files (the patched copies of known-bug kernels, say) stay: fault reports name them
.SECONDARY:

CH        ?=
STEP      ?=
SOLUTIONS ?= 0
BACKEND   ?= auto
ARCH      ?= 75 80 86 89 90

# ---- tools -------------------------------------------------------------------------------

NVCC_ON_PATH := $(shell command -v nvcc 2>/dev/null)
CUDA_HOME ?= $(if $(NVCC_ON_PATH),$(patsubst %/bin/nvcc,%,$(NVCC_ON_PATH)),/usr/local/cuda)
NVCC      ?= $(CUDA_HOME)/bin/nvcc
export NVCC
CC        := gcc
CXX       := g++

CFLAGS    := -std=c11 -O2 -g -Wall -Wextra -Werror -MMD -MP -Iharness
GENCODE   := $(foreach a,$(ARCH),-gencode arch=compute_$a,code=sm_$a) \
             -gencode arch=compute_$(lastword $(ARCH)),code=compute_$(lastword $(ARCH))
NVCCFLAGS := -std=c++17 -O3 -lineinfo $(GENCODE) -Werror all-warnings \
             -Xcompiler -Wall,-Wextra,-Werror -MMD -MP
# A kernel file sees the harness and its chapter's contract header, wherever it lives
# (chapters/, solutions/, a known-bug copy under build/mutants/): one copy of each contract.
CU_INC     = -Iharness -Ichapters/$(firstword $(filter $(CHAPTERS_ALL),$(subst /, ,$<)))

CHECK_LIBS := -Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic -lrt -lm -lpthread
CUDART_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread
LDLIBS_cuda := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,--as-needed -lcublas -lcublasLt -lcudart_static \
               $(CHECK_LIBS) -ldl
CPPFLAGS_cuda := -I$(CUDA_HOME)/include

# the CPU backend's build (EMU_* variables, its pattern rules, emu-test and emu-profile-test)
EMU_INCLUDED_BY_TOP := 1
include harness/emu/emu.mk
CPPFLAGS_emu := $(EMU_CPPFLAGS)
LDLIBS_emu   := $(EMU_LIB) $(CHECK_LIBS) $(EMU_LDLIBS)

# ---- chapters and their sources ----------------------------------------------------------

CHAPTERS_ALL := $(patsubst chapters/%/,%,$(sort $(dir $(wildcard chapters/[0-9][0-9]-*/))))
# CH names one or more chapters, each by its number, its name or the start of it
# (scripts/vars.sh, which `make check-vars` runs before a grade builds anything, says why a CH
# names none; here it is then empty)
CHAPTERS     := $(if $(strip $(CH)),$(shell scripts/vars.sh chapters '$(CH)' '$(CHAPTERS_ALL)' 2>/dev/null),$(CHAPTERS_ALL))
SIDE         := $(if $(filter 1 yes true,$(SOLUTIONS)),solutions,chapters)

# The kernel sources of chapter $2 on side $1: a solution directory replaces the chapter's
# files of the same name and shares the rest (the given baseline, say).
cu_sources = $(if $(filter solutions,$1),$(wildcard solutions/$2/*.cu) \
               $(filter-out $(patsubst solutions/%,chapters/%,$(wildcard solutions/$2/*.cu)),$(wildcard chapters/$2/*.cu)),\
               $(wildcard chapters/$2/*.cu)) $(GIVEN_FROM_$2)
# Given code a chapter borrows from an earlier one, linked as that chapter builds it: chapter
# 08's graph step captures chapter 06's three kernels.
GIVEN_FROM_08-transfers-streams := chapters/06-error-checking/pipeline_kernels.cu
# Chapter 10's given unfused attention runs chapter 07's step 4 reference softmax.
GIVEN_FROM_10-fused-attention := solutions/07-memory-bound/step4_softmax.cu
# Chapter 11 measures its steps against chapter 07's copy kernel.
GIVEN_FROM_11-mixed-precision := chapters/07-memory-bound/copy.cu
# Chapter 09's bench runs chapter 04's ladder (its references) inside slices of the GPU.
GIVEN_FROM_09-occupancy := $(call cu_sources,solutions,04-shared-memory-tiling)

# Kernel files whose CPU-backend objects carry the GPU compiler's registers, static shared
# memory and launch bounds of each kernel, for cudaFuncGetAttributes, the occupancy calls and
# the launch checks under EMU_DEVICE profiles (harness/emu/README.md, "Kernel resources"; each
# costs an nvcc run when its object is built): chapter 09's, its known-bug copies included.
EMU_RESOURCE_USAGE += chapters/09-%.cu solutions/09-%.cu build/mutants/09-%.cu

# Kernel files that only a GPU can run (inline PTX, TMA, wgmma): named *_sm90.cu or *_sm90a.cu,
# left out of CPU-backend builds; their graders say such rungs are graded on a GPU only. And
# *_gpu.cu: code over a library the CPU backend lacks (CUB), the scale a GPU measures beside.
EMU_EXCLUDE := %_sm90.cu %_sm90a.cu %_gpu.cu
backend_sources = $(if $(filter emu emu-prof,$1),$(filter-out $(EMU_EXCLUDE),$2),$2)

# Known-bug kernels: tests/mutants/CHAPTER/NAME.patch applied to the solution file it names
# (its "+++ b/PATH" line, read here without running anything). The grader of a known-bug kernel
# links the patched copy in place of that file, and `make test` requires it to fail.
MUTANTS := $(patsubst tests/mutants/%.patch,%,$(wildcard tests/mutants/*/*.patch))
mutant_target = $(patsubst b/%,%,$(firstword $(filter b/chapters/% b/solutions/%,$(file <tests/mutants/$1.patch))))

# The chapters whose graders run concept tests on the CPU backend's instrumented build, and
# those `make profile` knows (graders/profile_main.c picks the chapter's family)
PROFILE_CHAPTERS := $(filter 01-% 02-% 03-% 04-% 07-% 10-%,$(CHAPTERS_ALL))
CONCEPT_CHAPTERS := $(filter 02-% 03-% 04-% 07-% 10-%,$(PROFILE_CHAPTERS))

# ---- compiling one object ------------------------------------------------------------------

# Objects are rebuilt when a file they read changes content, not only time: after each compile,
# scripts/stamp.sh writes OBJECT.stamps.d (included with the other .d files), which makes the
# object depend on the content stamps (build/stamps/FILE.sha256) of its source and of the
# headers it read, of those under chapters/ and solutions/; every run remakes those stamps, and
# a stamp's time moves only when its file's checksum changed. So a learner's file put back with
# an older time (cp -p, mv) is rebuilt, and nothing is when nothing changed.
stamp_deps = @scripts/stamp.sh --deps $@ $(@:.o=.d) $<
EMU_AFTER_COMPILE = $(stamp_deps)
build/stamps/%.sha256: FORCE
	@scripts/stamp.sh $* $@

# Objects are rebuilt when the flags change (ARCH=90 for a quick GPU visit, then the full set).
build/cuda/.nvccflags: FORCE
	@mkdir -p $(@D)
	@echo '$(NVCC) $(NVCCFLAGS)' | cmp -s - $@ || echo '$(NVCC) $(NVCCFLAGS)' > $@
.PHONY: FORCE

build/cuda/%.o: %.cu build/cuda/.nvccflags
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) $(CU_INC) -c $< -o $@
	$(stamp_deps)

# wgmma and setmaxnreg exist only in sm_90a code, which runs on compute capability 9.0 alone:
# the files that use them (*_sm90a.cu) are built for sm_90a in place of sm_90 when ARCH has 90,
# cubin and PTX alike, so that a 9.0 device finds no sm_90 image to pick instead; for every
# other target their kernels compile to a trap.
comma := ,
to_90a = $(subst arch=compute_90$(comma)code=$1_90,arch=compute_90a$(comma)code=$1_90a,$2)
SM90A_NVCCFLAGS := $(call to_90a,sm,$(call to_90a,compute,$(NVCCFLAGS)))
build/cuda/%_sm90a.o: private NVCCFLAGS := $(SM90A_NVCCFLAGS)

# Known-bug copies (build/mutants/) compile for the SM versions MUTANT_ARCH, by default ARCH's.
# make test gives one: the GPU's, which it reads from the probe, else the newest of ARCH. A copy
# exists to be judged on the GPU at hand, and compile-all has compiled every file a patch
# changes for every ARCH; with one SM version in place of five, the known-bug kernels (some
# two hundred) compile in a third of the time.
MUTANT_ARCH    ?= $(ARCH)
MUTANT_GENCODE := $(foreach a,$(MUTANT_ARCH),-gencode arch=compute_$a,code=sm_$a) \
                  -gencode arch=compute_$(lastword $(MUTANT_ARCH)),code=compute_$(lastword $(MUTANT_ARCH))
mutant_nvccflags = $(filter-out -gencode arch=%,$(NVCCFLAGS)) \
                   $(if $(filter %_sm90a.o,$@),$(call to_90a,sm,$(call to_90a,compute,$(MUTANT_GENCODE))),$(MUTANT_GENCODE))
build/cuda/.mutantflags: FORCE
	@mkdir -p $(@D)
	@echo '$(MUTANT_GENCODE)' | cmp -s - $@ || echo '$(MUTANT_GENCODE)' > $@
build/cuda/build/mutants/%.o: build/mutants/%.cu build/cuda/.nvccflags build/cuda/.mutantflags
	@mkdir -p $(@D)
	$(NVCC) $(mutant_nvccflags) $(CU_INC) -c $< -o $@
	$(stamp_deps)

# C for either backend: the harness, the graders and their families, the project's tests. A
# grader sees its chapter's contract header (-Ichapters/NAME: harmless for the others).
build/cuda/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_cuda) -Ichapters/$(notdir $*) -c $< -o $@
	$(stamp_deps)

build/emu/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_emu) -Ichapters/$(notdir $*) -c $< -o $@
	$(stamp_deps)

# the profile driver, once per chapter and backend: graders/profile_main.c with that chapter's
# contract header; chapters 07 and 10, whose launchers take other arguments, have their own
# (graders/profile_membound.c, graders/10-fused-attention-profile.c)
profile_src = $(if $(filter 07-%,$1),graders/profile_membound.c,$(if $(filter 10-%,$1),graders/$1-profile.c,graders/profile_main.c))
build/cuda/profile/%.o: $$(call profile_src,$$*)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_cuda) -Ichapters/$* -c $< -o $@
	$(stamp_deps)

build/emu-prof/profile/%.o: $$(call profile_src,$$*)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_emu) -Ichapters/$* -c $< -o $@
	$(stamp_deps)

# The patched copy of a known-bug kernel, build/mutants/CHAPTER/NAME/FILE.cu, remade when the
# patch or the file it patches changes (its content stamp, as for an object); its objects come
# from the .cu rules above.
mutant_of_copy = $(patsubst %/,%,$(dir $1))
build/mutants/%.cu: tests/mutants/$$(call mutant_of_copy,$$*).patch $$(call mutant_target,$$(call mutant_of_copy,$$*)) \
    build/stamps/$$(call mutant_target,$$(call mutant_of_copy,$$*)).sha256 scripts/mutate.sh
	scripts/mutate.sh $< $(@D)

# the C libraries: the harness, and the grading families the chapter graders share
# (graders/*.c but the graders themselves and the profile driver)
HARNESS_SRC   := $(filter-out harness/probe.c harness/ident.c harness/launch_wrap.c,$(wildcard harness/*.c))
GRADERLIB_SRC := $(filter-out $(wildcard graders/[0-9][0-9]-*.c) graders/profile_main.c graders/profile_membound.c,$(wildcard graders/*.c))
# (no % may stand in a pattern rule's prerequisites but the stem's: these functions hold them)
objs_of     = $(patsubst %.c,build/$1/%.o,$2)
archives_of = $(filter %.a,$1)
build/cuda/libharness.a build/emu/libharness.a: build/%/libharness.a: $$(call objs_of,$$*,$(HARNESS_SRC))
	rm -f $@; $(AR) rcs $@ $^
build/cuda/libgraders.a build/emu/libgraders.a: build/%/libgraders.a: $$(call objs_of,$$*,$(GRADERLIB_SRC))
	rm -f $@; $(AR) rcs $@ $^

# ---- what a program is: told at build time --------------------------------------------------
#
# A program's directory under build/ says what it is, and only this file reads it: for
# build/BACKEND[/sanitize]/KIND/CHAPTER[/NAME]/PROGRAM, BACKEND is cuda, emu or emu-prof (the
# instrumented CPU backend), sanitize marks a CPU-backend grader linked with instrumented kernels
# (make sanitize), KIND is chapters, solutions, mutants or tests. Each program links
# DIR/ident.o, made from harness/ident.c with these facts as definitions (struct grade_build).
p_words   = $(subst /, ,$1)
p_backend = $(word 1,$(call p_words,$1))
p_sanit   = $(filter sanitize,$(word 2,$(call p_words,$1)))
p_rest    = $(wordlist $(if $(call p_sanit,$1),3,2),9,$(call p_words,$1))
p_kind    = $(word 1,$(call p_rest,$1))
p_chapter = $(word 2,$(call p_rest,$1))
p_name    = $(word 3,$(call p_rest,$1))
p_mutant  = $(p_chapter)/$(p_name)
# where its kernel objects are built: the instrumented build for a sanitize grader
p_kbuild  = $(if $(call p_sanit,$1),emu-prof,$(call p_backend,$1))
p_side    = $(if $(filter mutants,$(call p_kind,$1)),mutant $(call p_name,$1),$(call p_kind,$1))
# the side's place without the backend: solutions/CH, chapters/CH or mutants/CH/NAME
p_place   = $(call p_kind,$1)/$(call p_chapter,$1)$(if $(call p_name,$1),/$(call p_name,$1))

# its kernel objects: the side's sources, or a known-bug kernel's (the solution's, with the
# patched copy in place of the file its patch names)
p_sources = $(call backend_sources,$(call p_kbuild,$1),$(if $(filter mutants,$(call p_kind,$1)),\
              $(filter-out $(call mutant_target,$(call p_mutant,$1)),$(call cu_sources,solutions,$(call p_chapter,$1))) \
              build/mutants/$(call p_mutant,$1)/$(notdir $(call mutant_target,$(call p_mutant,$1))),\
              $(call cu_sources,$(call p_kind,$1),$(call p_chapter,$1))))
p_kernels = $(patsubst %.cu,build/$(call p_kbuild,$1)/%.o,$(call p_sources,$1))

# the profile driver a CPU-backend grader's concept tests run (graders/concept.h), if any
p_driver  = $(strip $(if $(and $(filter emu,$(call p_backend,$1)),$(filter $(CONCEPT_CHAPTERS),$(call p_chapter,$1))),\
              build/emu-prof/$(call p_place,$1)/profile))

# The references a chapter with steps gives each of its graders: the solution's kernel objects
# linked into one (ld -r), each symbol they define renamed ref_NAME, so that a step's speed is
# measured against the reference of the step before it whichever side is graded, and a
# learner's functions of the same names stay theirs. build/BACKEND/solutions/CHAPTER/given.o.
STEP_CHAPTERS := $(filter 02-% 03-% 04-% 05-% 07-%,$(CHAPTERS_ALL))
build/%/given.o: $$(call p_kernels,$$*)
	@mkdir -p $(@D)
	ld -r -o $@.all $^
	nm -g --defined-only $@.all | awk '$$2 ~ /^[TDRB]$$/ { print $$3, "ref_" $$3 }' > $@.syms
	objcopy --redefine-syms=$@.syms $@.all $@
	rm -f $@.all $@.syms
p_given   = $(if $(filter $(STEP_CHAPTERS),$(call p_chapter,$1)),build/$(call p_kbuild,$1)/solutions/$(call p_chapter,$1)/given.o)

build/%/ident.o: harness/ident.c harness/ident.h Makefile
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DGRADE_CHAPTER='"$(call p_chapter,$*)"' -DGRADE_SIDE='"$(call p_side,$*)"' \
	  -DGRADE_BACKEND='"$(call p_backend,$*)"' -DGRADE_PROFILE='"$(call p_driver,$*)"' -c $< -o $@

# ---- the programs ----------------------------------------------------------------------------

# 1. Graders: build/BACKEND/SIDE/CHAPTER/grade, build/BACKEND/mutants/CHAPTER/NAME/grade, and the
# CPU backend's instrumented ones under build/emu/sanitize/ (make sanitize): the chapter's grader
# linked with one side's kernels.
GRADERS   := $(foreach b,cuda emu,$(foreach s,chapters solutions,$(foreach c,$(CHAPTERS_ALL),build/$b/$s/$c/grade)) \
               $(foreach m,$(MUTANTS),build/$b/mutants/$m/grade))
SANITIZE_GRADERS := $(foreach s,chapters solutions,$(foreach c,$(CHAPTERS_ALL),build/emu/sanitize/$s/$c/grade)) \
                    $(foreach m,$(MUTANTS),build/emu/sanitize/mutants/$m/grade)
g_libs    = build/$1/libgraders.a build/$1/libharness.a

# What no kernel file may define (scripts/symbols.sh): every global symbol of the libraries a
# grader or a profile driver links, ours and the system's; each program's kernel objects are
# checked against its backend's list before it is linked. The system's libraries are found when
# the list is made, after make grade has installed Check.
RESERVED_SYSLIBS = $$(for l in libcheck.a libsubunit.a libc.so.6 libm.so.6 libgcc_s.so.1; do \
                     $(CC) -print-file-name=$$l; done) $$($(CXX) -print-file-name=libstdc++.so.6)
# each kernel build's runtime (the instrumented CPU backend's graders share the plain one's libs)
RESERVED_LIBS_cuda     := $(CUDA_HOME)/lib64/libcudart_static.a $(CUDA_HOME)/lib64/libcublas.so \
                          $(CUDA_HOME)/lib64/libcublasLt.so build/cuda/harness/launch_wrap.o
RESERVED_LIBS_emu      := $(EMU_LIB)
RESERVED_LIBS_emu-prof := $(EMU_PROF_LIB)
build/cuda/reserved.syms build/emu/reserved.syms build/emu-prof/reserved.syms: build/%/reserved.syms: \
    $$(call g_libs,$$(subst emu-prof,emu,$$*)) $$(RESERVED_LIBS_$$*) scripts/symbols.sh
	scripts/symbols.sh reserved $@ $(filter-out scripts/symbols.sh,$^) $(RESERVED_SYSLIBS)
# a program's list: that of the runtime its kernels are built for (the instrumented CPU
# backend's for a profile driver or a sanitize grader of the CPU backend)
p_reserved = build/$(call p_kbuild,$1)/reserved.syms

$(GRADERS) $(SANITIZE_GRADERS): build/%/grade: build/$$(call p_backend,$$*)/graders/$$(call p_chapter,$$*).o \
    $$(call p_kernels,$$*) $$(call p_given,$$*) build/$$*/ident.o $$(call g_libs,$$(call p_backend,$$*)) \
    $$(if $$(call p_sanit,$$*),$(EMU_PROF_LIB),$$(call archives_of,$$(LDLIBS_$$(call p_backend,$$*)))) \
    $$(call p_reserved,$$*) | $$(call p_driver,$$*)
	@mkdir -p $(@D)
	@scripts/symbols.sh check $(call p_reserved,$*) $(call p_kernels,$*)
	$(CXX) -o $@ $(WATCH_LDFLAGS) $(LAUNCH_LDFLAGS) $(filter %.o,$^) $(call g_libs,$(call p_backend,$*)) \
	  $(if $(call p_sanit,$*),$(EMU_PROF_LIB) $(CHECK_LIBS) $(EMU_LDLIBS),$(LDLIBS_$(call p_backend,$*)))

# Chapter 06 grades what run_pipeline leaves live on its error paths: its graders link every
# reference to these calls to harness/watch.c (-Wl,--wrap=cudaMalloc sends each reference to
# cudaMalloc to __wrap_cudaMalloc, which counts and calls the runtime's, __real_cudaMalloc).
# No other program is linked so, but the watch's own test. The CPU backend has no stream-ordered
# allocator and no stream priorities (its headers do not declare them); watch.h says more.
WATCH_CALLS_emu  := cudaMalloc cudaMallocManaged cudaFree cudaMallocHost cudaHostAlloc \
                    cudaFreeHost cudaHostRegister cudaHostUnregister cudaStreamCreate \
                    cudaStreamCreateWithFlags cudaStreamDestroy cudaEventCreate \
                    cudaEventCreateWithFlags cudaEventDestroy cudaDeviceReset
WATCH_CALLS_cuda := $(WATCH_CALLS_emu) cudaMallocAsync cudaMallocFromPoolAsync cudaFreeAsync \
                    cudaStreamCreateWithPriority
$(foreach g,$(GRADERS) $(SANITIZE_GRADERS),$(if $(findstring /06-error-checking/,$g),$g)): \
    WATCH_LDFLAGS = $(foreach f,$(WATCH_CALLS_$(word 2,$(subst /, ,$@))),-Wl,--wrap=$f)

# Every GPU grader records the kernels the code under grading launches (harness/launches.h): the
# launch calls are wrapped as chapter 06's allocations are, and harness/launch_wrap.o, which
# holds the wraps, is linked into them alone (a program without the flags would leave its
# __real_ references undefined).
LAUNCH_CALLS := __cudaLaunchKernel cudaLaunchKernel cudaLaunchKernelExC cudaLaunchCooperativeKernel
$(filter build/cuda/%,$(GRADERS)): build/cuda/harness/launch_wrap.o
$(filter build/cuda/%,$(GRADERS)): LAUNCH_LDFLAGS = $(foreach f,$(LAUNCH_CALLS),-Wl,--wrap=$f)

# 2. Profile drivers (make profile, make calibrate, and the concept tests): the chapter's kernels
# under the profile driver, instrumented for the CPU backend (build/emu-prof/...) or for the GPU,
# where Nsight Compute runs it (build/cuda/...: the CUDA runtime, no Check, nothing else).
CONCEPT_MUTANTS := $(filter $(addsuffix /%,$(CONCEPT_CHAPTERS)),$(MUTANTS))
PROFILES  := $(foreach b,cuda emu-prof,$(foreach s,chapters solutions,$(foreach c,$(PROFILE_CHAPTERS),build/$b/$s/$c/profile))) \
             $(foreach m,$(CONCEPT_MUTANTS),build/emu-prof/mutants/$m/profile)
$(PROFILES): build/%/profile: build/$$(call p_backend,$$*)/profile/$$(call p_chapter,$$*).o $$(call p_kernels,$$*) \
    $$(if $$(filter cuda,$$(call p_backend,$$*)),,$(EMU_PROF_LIB)) $$(call p_reserved,$$*)
	@mkdir -p $(@D)
	@scripts/symbols.sh check $(call p_reserved,$*) $(call p_kernels,$*)
	$(CXX) -o $@ $(filter %.o,$^) $(if $(filter cuda,$(call p_backend,$*)),$(CUDART_LIBS) $(PROFILE_LIBS),$(EMU_PROF_LIB) $(EMU_LDLIBS))
# chapter 10's given step 1 runs its products on cuBLAS (chapters/10-*/unfused_gemm_gpu.cu)
$(filter build/cuda/%,$(filter $(foreach c,$(filter 10-%,$(CHAPTERS_ALL)),%/$c/profile),$(PROFILES))): \
    PROFILE_LIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas

# 3. The small programs: the device probe, the harness's own tests, the isolation demo (a
# hang, a crash, NaN, Inf, an unwritten element and an overrun, each failing one test of a demo
# grader: tests/isolation.c), and the probe that measured the shared-memory wavefronts the CPU
# backend's model is checked against (tests/ncu/shared_wavefronts.cu says how to run it).
build/cuda/probe: build/cuda/harness/probe.o build/cuda/libharness.a
	$(CXX) -o $@ $^ $(LDLIBS_cuda)
build/cuda/tests/harness: build/cuda/tests/harness.o build/cuda/harness/harness.o build/cuda/harness/sass.o
	$(CC) -o $@ $^ $(CHECK_LIBS)
build/cuda/tests/isolation build/emu/tests/isolation: build/%/tests/isolation: build/%/tests/isolation.o \
    build/%/tests/isolation_kernels.o build/%/tests/ident.o build/%/libharness.a $$(call archives_of,$$(LDLIBS_$$*))
	$(CXX) -o $@ $(filter %.o,$^) build/$*/libharness.a $(LDLIBS_$*)
# the watch of chapter 06's graders (tests/watch.c), linked with their --wrap flags
build/emu/tests/watch: build/emu/tests/watch.o build/emu/libharness.a $(EMU_LIB)
	$(CXX) -o $@ $(foreach f,$(WATCH_CALLS_emu),-Wl,--wrap=$f) $(filter %.o,$^) \
	  build/emu/libharness.a $(LDLIBS_emu)
build/cuda/tests/shared_wavefronts: build/cuda/tests/ncu/shared_wavefronts.o
	$(CXX) -o $@ $^ $(LDLIBS_cuda)

-include $(shell find build -name '*.d' 2>/dev/null)

.PHONY: isolation-test
isolation-test: build/$(B)/tests/isolation
	build/$(B)/tests/isolation

# ---- the manifest: what each program is and where it lies ------------------------------------
#
# build/programs.tsv, one row per program make can build, tab-separated with a header:
#   program  grade, profile or sanitize (a CPU-backend grader over instrumented kernels)
#   kind     solution, starter or mutant
#   chapter  02-coalesced-transpose
#   name     the known-bug kernel's name (tests/mutants/CHAPTER/NAME.patch), "-" for the others
#   backend  cuda or emu
#   path     where it lies
# Scripts find programs here (scripts/programs.sh), never by spelling a path; scripts/judge.sh
# judges the graders in it. Rewritten only when it changes.
empty :=
tab := $(empty)	$(empty)
define newline


endef
row     = $1$(tab)$2$(tab)$3$(tab)$4$(tab)$5$(tab)$6$(newline)
k_of    = $(if $(filter mutants,$(call p_kind,$1)),mutant,$(if $(filter solutions,$(call p_kind,$1)),solution,starter))
n_of    = $(or $(call p_name,$1),-)
b_of    = $(patsubst emu-prof,emu,$(call p_backend,$1))
prog_row = $(call row,$2,$(call k_of,$1),$(call p_chapter,$1),$(call n_of,$1),$(call b_of,$1),build/$1/$3)
MANIFEST_ROWS = $(call row,program,kind,chapter,name,backend,path)$(foreach g,$(GRADERS),$(call \
  prog_row,$(patsubst build/%/grade,%,$g),grade,grade))$(foreach g,$(SANITIZE_GRADERS),$(call \
  prog_row,$(patsubst build/%/grade,%,$g),sanitize,grade))$(foreach g,$(PROFILES),$(call \
  prog_row,$(patsubst build/%/profile,%,$g),profile,profile))
build/programs.tsv: FORCE
	$(shell mkdir -p $(@D))$(file >$@.new,$(subst $(newline) ,$(newline),$(MANIFEST_ROWS)))
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@

# ---- what the targets build --------------------------------------------------------------

# graders B=cuda|emu SIDES="chapters solutions" CHAPTERS="...": build graders, run nothing
B     ?= cuda
SIDES ?= $(SIDE)
.PHONY: graders mutants
graders: build/programs.tsv $(foreach s,$(SIDES),$(foreach c,$(CHAPTERS),build/$(B)/$s/$c/grade))
mutants: build/programs.tsv $(foreach m,$(filter $(addsuffix /%,$(CHAPTERS)),$(MUTANTS)),build/$(B)/mutants/$m/grade)

# every kernel file, built for every ARCH with warnings as errors
CU_ALL := $(wildcard chapters/*/*.cu solutions/*/*.cu)
.PHONY: compile-all
compile-all: $(patsubst %.cu,build/cuda/%.o,$(CU_ALL))

# Everything a visit to a GPU needs, built here: run it there with scripts/gpu-run.sh.
.PHONY: gpu-build profile-build
gpu-build: build/programs.tsv $(filter build/cuda/%,$(GRADERS)) build/cuda/probe build/cuda/tests/harness \
    build/cuda/tests/isolation build/cuda/tests/shared_wavefronts profile-build
# every profile driver, both backends and sides: what a GPU visit needs for `make profile
# BACKEND=cuda` and `make calibrate` without building there
profile-build: build/programs.tsv $(PROFILES)

# ---- the targets -------------------------------------------------------------------------

.PHONY: deps deps-grade deps-test deps-book
deps: deps-test
deps-grade deps-test deps-book: deps-%:
	@scripts/deps.sh $*

# The variables a learner types, checked before anything is installed, built or graded (and
# build/grade.tsv left as it was): CH, STEP, SOLUTIONS, BACKEND, SEED, GRADE_LIMIT, GRADE_GRACE.
# Each refused says the forms it takes (scripts/vars.sh).
.PHONY: check-vars
check-vars:
	@CH='$(CH)' CHAPTERS_ALL='$(CHAPTERS_ALL)' STEP='$(STEP)' SOLUTIONS='$(SOLUTIONS)' \
	  BACKEND='$(BACKEND)' SEED='$(SEED)' GRADE_LIMIT='$(GRADE_LIMIT)' GRADE_GRACE='$(GRADE_GRACE)' \
	  scripts/vars.sh check
deps-grade: check-vars

# what the scripts are told, besides the environment they inherit
RUN_ENV = CHAPTERS="$(CHAPTERS)" CHAPTERS_ALL="$(CHAPTERS_ALL)" CH="$(CH)" SIDE="$(SIDE)" \
          BACKEND="$(BACKEND)" MAKE="$(MAKE)" STEP="$(STEP)"

# The lessons' measured numbers, each between markers naming the data it comes from
# (scripts/lessons.lua): make lessons rewrites them from plots/data/, make lessons-check fails
# on any that differs (make test runs it).
LESSON_FILES := README.md $(wildcard chapters/*/README.md) $(wildcard book/*.md)
.PHONY: lessons lessons-check
lessons lessons-check: deps-book
	@LESSONS_FILES="$(LESSON_FILES)" LESSONS_CHECK=$(if $(filter lessons-check,$@),1,0) \
	  pandoc --lua-filter scripts/lessons.lua -f markdown -t plain -o /dev/null /dev/null

.PHONY: grade bench tune test progress
grade: deps-grade
	@$(RUN_ENV) scripts/grade.sh
# then each chapter's rows against the committed measurement of the same device and shape
# (scripts/regress.sh): a rung more than 5% slower fails the bench unless REGRESSION_OK=1
bench: deps-grade
	@$(RUN_ENV) scripts/grade.sh --bench; s=$$?; \
	files=$$(for c in $(CHAPTERS); do [ -s build/results/$$c.tsv ] && echo build/results/$$c.tsv; done); \
	if [ -n "$$files" ] && ! SIDE="$(SIDE)" scripts/regress.sh $$files; then \
	  [ "$(REGRESSION_OK)" = 1 ] && echo "bench: REGRESSION_OK=1: the slower rungs allowed" || s=1; \
	fi; exit $$s
# on a GPU: measure each candidate configuration of the chapters that have them (04)
tune: deps-grade
	@$(RUN_ENV) SIDE=solutions scripts/grade.sh --tune
# where the learner stands: the steps passed, chapter by chapter, from build/grade.tsv
progress:
	@scripts/progress.sh build/grade.tsv
test: deps-test
	@CHAPTERS_ALL="$(CHAPTERS_ALL)" MAKE="$(MAKE)" scripts/test.sh

# ---- plots and the book ------------------------------------------------------------------

# Each figure is drawn from its chapter's committed measurements, $(PLOT_DATA)/NN.tsv, unless
# `make bench` left fresher ones from this machine in $(FRESH_DATA)/NN.tsv: then from those.
# The rule writes the file it used beside the figure (build/plots/NN.data), and the book's
# caption names the device, driver and date of that file, "measured on this machine" if fresh.
PLOT_DATA  ?= plots/data/h200
FRESH_DATA ?= build/results
# (plots/predict.gp draws make predict's table, not a bench: its rule is with make predict's)
PLOT_NAMES := $(patsubst plots/%.gp,%,$(filter-out plots/style.gp plots/roofline.gp plots/predict%.gp,\
                $(wildcard plots/*.gp)))
PLOTS      := $(patsubst %,build/plots/%.pdf,$(PLOT_NAMES)) \
              $(if $(wildcard plots/roofline.gp),build/plots/roofline.pdf) \
              $(if $(wildcard plots/predict.gp),build/plots/predict.pdf)

# the names whose fresh data is newer than the committed, in one shell for all of them
FRESHER := $(if $(wildcard $(FRESH_DATA)/*.tsv),$(shell for n in $(PLOT_NAMES); do \
             [ -f $(FRESH_DATA)/$$n.tsv ] && [ $(FRESH_DATA)/$$n.tsv -nt $(PLOT_DATA)/$$n.tsv ] && echo $$n; done))
# A chapter whose GPU measurements are not committed yet is drawn from the CPU backend's
# (plots/data/emu/NN.tsv: its schedule, host times that say nothing about a GPU).
plot_data = $(if $(filter $1,$(FRESHER)),$(FRESH_DATA)/$1.tsv,$(if $(wildcard $(PLOT_DATA)/$1.tsv),$(PLOT_DATA)/$1.tsv,$(firstword $(wildcard plots/data/emu/$1.tsv) $(PLOT_DATA)/$1.tsv)))

# build/plots/NAME.data names the file(s) the figure is drawn from; it changes (and the figure
# is redrawn) when the choice does, say when build/results/ is cleaned away
plot_sources = $(if $(filter roofline,$1),$(foreach p,$(PLOT_NAMES),$(call plot_data,$p)),$(call plot_data,$1))
build/plots/%.data: FORCE
	@mkdir -p $(@D)
	@echo '$(call plot_sources,$*)' | cmp -s - $@ || echo '$(call plot_sources,$*)' > $@

build/plots/%.pdf: plots/%.gp plots/style.gp $$(call plot_sources,$$*) build/plots/%.data
	gnuplot -e "data='$(call plot_data,$*)'; out='$@'" $<

# the roofline: every chapter's rows on one figure, under the ceilings measured in chapters
# 01/04 (cuBLAS SGEMM), 02 (the copy kernel) and 05 (cuBLAS BF16)
ROOFLINE_DATA := $(call plot_sources,roofline)
build/plots/roofline.pdf: plots/roofline.gp plots/style.gp $(ROOFLINE_DATA) build/plots/roofline.data
	gnuplot -e "files='$(ROOFLINE_DATA)'; out='$@'" $<

.PHONY: plots
plots: deps-book $(PLOTS)

# the chapters, then matter that reads as part of the book (the roofline), then appendices
# (book/appendices.lua adds the interview questions and the hints before the drills); the time
# model's appendix is book/predict.md with its tables filled in (build/book/predict.md)
BOOK_SRC := book/metadata.yaml book/front.md $(wildcard chapters/*/README.md) \
            book/roofline.md book/drills.md book/solutions.md build/book/predict.md book/back.md
BOOK_FILTERS := book/include.lua book/measured.lua book/measure.lua book/appendices.lua \
                book/design.lua

# pandoc writes LaTeX, pdflatex runs twice (the contents need the page numbers); the log stays
# in build/book/ for tests/book.sh, which looks for code that runs off the page.
# book/measured.lua reads the same data files the figures were drawn from (the .data files),
# and the committed calibration (or says it was not measured).
export PLOT_DATA
build/book.pdf: $(BOOK_SRC) book/header.tex $(BOOK_FILTERS) $(PLOTS) $(CU_ALL) \
                $(wildcard chapters/*/*.h chapters/*/*.cuh) $(ROOFLINE_DATA) \
                $(wildcard $(PLOT_DATA)/profile-calibration.tsv)
	@mkdir -p build/book
	pandoc $(BOOK_SRC) --from markdown --standalone --listings \
	  $(foreach f,$(BOOK_FILTERS),--lua-filter $f) \
	  --include-in-header book/header.tex --top-level-division=chapter --toc \
	  -o build/book/book.tex
	for pass in 1 2; do \
	  pdflatex -interaction=nonstopmode -halt-on-error -output-directory build/book \
	    build/book/book.tex > build/book/pdflatex.out || { tail -n 30 build/book/pdflatex.out; exit 1; }; \
	done
	cp build/book/book.pdf $@

.PHONY: book
book: deps-book build/book.pdf

.PHONY: clean
clean:
	rm -rf build

# ---- profile (CPU backend, and Nsight Compute on a GPU) ------------------------------------

# make profile CH=02 [KERNEL=name] [SOLUTIONS=1] [BACKEND=auto|emu|cuda]: the chapter's rungs,
# each run once on a small shape. On the CPU backend (emu), built with the emu's instrumented
# build: per kernel and source line, global requests and sectors per request, shared
# wavefronts per request, divergent branches per warp; the first out-of-bounds access stops
# the kernel with its thread and line. With BACKEND=cuda (or auto, where a GPU answers and
# Nsight Compute is installed), the same driver built for the GPU, each rung under ncu: the
# same columns per kernel. harness/emu/README.md ("Profiling") gives the model;
# scripts/profile.sh runs it, scripts/ncu-run.sh and scripts/ncu-table.awk are the ncu side.
.PHONY: profile
profile: check-vars build/programs.tsv
	@CHAPTERS="$(CHAPTERS)" PROFILE_CHAPTERS="$(PROFILE_CHAPTERS)" SIDE="$(SIDE)" \
	  BACKEND="$(BACKEND)" KERNEL="$(KERNEL)" MAKE="$(MAKE)" scripts/profile.sh

# make calibrate, on a GPU with Nsight Compute: every rung of the solutions of chapters 01-04,
# the model's counts against ncu's, into CALIBRATION (one row per rung and metric, with the
# device, driver and date); the book's copy is plots/data/h200/profile-calibration.tsv.
# scripts/calibrate.sh runs it; it needs no make on the GPU machine (make profile-build here).
CALIBRATION ?= build/results/profile-calibration.tsv
# the chapters calibrated so far (07 has its profile driver and concept tests, no calibration yet)
CALIBRATE_CHAPTERS := $(filter 01-% 02-% 03-% 04-%,$(PROFILE_CHAPTERS))
.PHONY: calibrate
calibrate: profile-build
	@PROFILE_CHAPTERS="$(CALIBRATE_CHAPTERS)" scripts/calibrate.sh $(CALIBRATION)

# make predict: the time model of every graded rung of chapters 01-05 at every shape of the
# committed H200 benches, from the CPU backend's counts (the solutions' profile drivers) and
# the ceilings in plots/data/h200/ceilings.tsv, against the measured times, beside a plain
# roofline's error (scripts/predict.sh runs it, scripts/predict.awk is the model).
# It writes the table to build/predict/predict.tsv (with summary.tsv and misses.tsv beside it)
# and draws it, predicted against measured, into build/plots/predict.pdf (plots/predict.gp).
PREDICT_CHAPTERS := $(filter 01-% 02-% 03-% 04-%,$(PROFILE_CHAPTERS))
.PHONY: predict
predict: build/programs.tsv $(foreach c,$(PREDICT_CHAPTERS),build/emu-prof/solutions/$c/profile)
	@MAKE="$(MAKE)" scripts/predict.sh
	@if command -v gnuplot > /dev/null; then \
	  $(MAKE) --no-print-directory -s build/plots/predict.pdf && \
	  echo "predict: the table in build/predict/predict.tsv, the plot in build/plots/predict.pdf"; \
	else echo "predict: no gnuplot here: make plots draws build/plots/predict.pdf"; fi

# The book's appendix and the plot read the model's table made from the committed counts,
# $(PLOT_DATA)/predict-counts.tsv (a copy of the build/predict/counts.tsv make predict wrote), or
# where none are committed, from those counts gathered here once (some minutes on the CPU).
PREDICT_COUNTS := $(or $(wildcard $(PLOT_DATA)/predict-counts.tsv),build/predict/counts.tsv)
build/predict/counts.tsv:
	@echo "predict: gathering the CPU backend's counts of every rung into $@"
	@MAKE="$(MAKE)" scripts/predict.sh $@ > /dev/null
build/predict/predict.tsv: scripts/predict.awk scripts/predict.sh $(PLOT_DATA)/ceilings.tsv \
    $(PREDICT_COUNTS) $(wildcard $(PLOT_DATA)/0[1-5]-*.tsv)
	@PREDICT_COUNTS=keep PREDICT_OUT=$@ PREDICT_DATA=$(PLOT_DATA) \
	  scripts/predict.sh $(PREDICT_COUNTS) > /dev/null
build/plots/predict.pdf: plots/predict.gp plots/style.gp build/predict/predict.tsv
	@mkdir -p $(@D)
	gnuplot -e "data='build/predict/predict.tsv'; out='$@'" $<
build/book/predict.md: book/predict.md scripts/predict.sh build/predict/predict.tsv
	@PREDICT_DATA=$(PLOT_DATA) scripts/predict.sh --appendix $< $@

# ---- report --------------------------------------------------------------------------------

# make report CH=NN [STEP=k] [SOLUTIONS=1] [BACKEND=auto|emu|cuda] [SEED=n]: build/report-NN.pdf,
# the learner's own kernel documented: the grader's verdicts, the profile (the CPU backend's
# model; Nsight Compute on a GPU), on a GPU the bench's times and speedups with a plot, the
# source, and the learner's notes (chapters/NN-slug/NOTES-stepK.md, or NOTES.md for the whole
# chapter), asked for when missing. Its work files lie in build/report/NN/. CH and STEP are
# checked before anything is built (scripts/report.sh, which says more).
.PHONY: report
report: check-vars
	@$(RUN_ENV) PROFILE_CHAPTERS="$(PROFILE_CHAPTERS)" SOLUTIONS="$(SOLUTIONS)" SEED="$(SEED)" \
	  scripts/report.sh

# ---- sanitize ------------------------------------------------------------------------------

# make sanitize CH=02 [SOLUTIONS=1] [MUTANT=name] [TOOLS="memcheck racecheck"]: the chapter's
# grader in quick mode (GRADE_QUICK=1: no timed tests, no shape over GRADE_QUICK_WORK) under
# compute-sanitizer's memcheck (--leak-check full), racecheck, synccheck and initcheck on a GPU;
# on the CPU backend under the emu's instrumented build, whose check of every global and shared
# access before it happens, and of every barrier, stands in for memcheck and synccheck. A
# summary per tool; exit status 0 only when no tool found an error. MUTANT=name sanitizes the
# known-bug kernel tests/mutants/CH/name.patch. `make sanitize-record` writes the table of every
# solution into build/results/sanitize.tsv (on a GPU; scripts/gpu-run.sh with SANITIZE=1 does the
# same from a `make gpu-build`). scripts/sanitize.sh runs both.
MUTANT ?=
TOOLS  ?= memcheck racecheck synccheck initcheck

.PHONY: sanitize sanitize-record
sanitize: deps-grade build/programs.tsv
	@$(RUN_ENV) MUTANT="$(MUTANT)" TOOLS="$(TOOLS)" scripts/sanitize.sh
# every solution, then the canary: a known-bug kernel that memcheck must catch
sanitize-record: deps-grade build/programs.tsv
	@rm -f build/results/sanitize.tsv; \
	CHAPTERS="$(CHAPTERS_ALL)" SIDE=solutions MUTANT= BACKEND="$(BACKEND)" TOOLS="$(TOOLS)" \
	  MAKE="$(MAKE)" scripts/sanitize.sh --record build/results/sanitize.tsv; s=$$?; \
	CHAPTERS=01-naive-matmul MUTANT=no-bounds-check BACKEND="$(BACKEND)" TOOLS=memcheck \
	  MAKE="$(MAKE)" scripts/sanitize.sh --record build/results/sanitize.tsv && exit $$s
