# The GPU Kernel Workbook.
#
#   make grade                 grade your kernels in chapters/ (installs what is missing first)
#   make test                  the project's own tests
#   make bench | plots | book  measure on a GPU, plot, build build/book.pdf
#   make tune CH=04            on a GPU, measure the tile configurations the launchers pick from
#
# Variables choose, not edits: CH=01 (one chapter), SOLUTIONS=1 (grade solutions/),
# BACKEND=auto|cuda|emu, ARCH="75 80 86 89 90" (the SM versions to build for), SEED=n.
# Everything generated goes under build/. README.md says more.

SHELL := /bin/bash
.DEFAULT_GOAL := grade
.SUFFIXES:
.DELETE_ON_ERROR:
.SECONDEXPANSION:

CH        ?=
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
# (chapters/, solutions/, a mutant under build/): one copy of each contract.
CU_INC     = -Iharness -Ichapters/$(firstword $(filter $(CHAPTERS_ALL),$(subst /, ,$<)))

CHECK_LIBS := -Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic -lrt -lm -lpthread
LDLIBS_cuda := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,--as-needed -lcublas -lcudart_static \
               $(CHECK_LIBS) -ldl
CPPFLAGS_cuda := -I$(CUDA_HOME)/include

-include harness/emu/emu.mk
CPPFLAGS_emu := $(EMU_CPPFLAGS)
LDLIBS_emu   := $(EMU_LIB) $(CHECK_LIBS) $(EMU_LDLIBS)
LIBDEP_emu   := $(EMU_LIB)

# ---- chapters ----------------------------------------------------------------------------

CHAPTERS_ALL := $(patsubst chapters/%/,%,$(sort $(dir $(wildcard chapters/[0-9][0-9]-*/))))
CH_NORM      := $(shell case '$(CH)' in ([0-9]) echo 0$(CH);; (*) echo '$(CH)';; esac)
CHAPTERS     := $(if $(CH),$(filter $(CH_NORM) $(CH_NORM)-%,$(CHAPTERS_ALL)),$(CHAPTERS_ALL))
SIDE         := $(if $(filter 1 yes true,$(SOLUTIONS)),solutions,chapters)

# The kernel sources of chapter $2 on side $1: a solution directory replaces the chapter's
# files of the same name and shares the rest (the given baseline, say).
cu_sources = $(if $(filter solutions,$1),$(wildcard solutions/$2/*.cu) \
               $(filter-out $(patsubst solutions/%,chapters/%,$(wildcard solutions/$2/*.cu)),$(wildcard chapters/$2/*.cu)),\
               $(wildcard chapters/$2/*.cu))

# Kernel files that only a GPU can run (inline PTX, TMA, wgmma): named *_sm90.cu or *_sm90a.cu,
# left out of CPU-backend builds; their graders say such rungs are graded on a GPU only.
EMU_EXCLUDE := %_sm90.cu %_sm90a.cu
backend_sources = $(if $(filter emu,$1),$(filter-out $(EMU_EXCLUDE),$2),$2)

HARNESS_OBJS = $(patsubst harness/%.c,build/$1/harness/%.o,$(filter-out harness/probe.c,$(wildcard harness/*.c)))
# the grading families the chapter graders share (graders/*.c but the graders and the profile driver)
GRADERLIB_OBJS = $(patsubst graders/%.c,build/$1/graders/%.o,$(filter-out graders/[0-9][0-9]-%.c graders/profile_main.c,$(wildcard graders/*.c)))

# ---- compiling ---------------------------------------------------------------------------

# Objects are rebuilt when the flags change (ARCH=90 for a quick GPU visit, then the full set).
build/cuda/.nvccflags: FORCE
	@mkdir -p $(@D)
	@echo '$(NVCC) $(NVCCFLAGS)' | cmp -s - $@ || echo '$(NVCC) $(NVCCFLAGS)' > $@
.PHONY: FORCE

build/cuda/%.o: %.cu build/cuda/.nvccflags
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) $(CU_INC) -c $< -o $@

# wgmma and setmaxnreg exist only in sm_90a code, which runs on compute capability 9.0 alone:
# the files that use them (*_sm90a.cu) are built for sm_90a in place of sm_90 when ARCH has 90,
# cubin and PTX alike, so that a 9.0 device finds no sm_90 image to pick instead; for every other
# target their kernels compile to a trap.
comma := ,
to_90a = $(subst arch=compute_90$(comma)code=$1_90,arch=compute_90a$(comma)code=$1_90a,$2)
SM90A_NVCCFLAGS := $(call to_90a,sm,$(call to_90a,compute,$(NVCCFLAGS)))
build/cuda/%_sm90a.o: private NVCCFLAGS := $(SM90A_NVCCFLAGS)

build/cuda/harness/%.o: harness/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_cuda) -c $< -o $@

build/emu/harness/%.o: harness/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_emu) -c $< -o $@

# a grader sees its chapter's contract header
build/cuda/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_cuda) -Ichapters/$* -c $< -o $@

build/emu/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_emu) -Ichapters/$* -c $< -o $@

build/cuda/graders/%.o: graders/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_cuda) -Ichapters/$* -c $< -o $@

build/emu/graders/%.o: graders/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_emu) -Ichapters/$* -c $< -o $@

build/cuda/libharness.a: $(call HARNESS_OBJS,cuda)
	$(AR) rcs $@ $^

build/emu/libharness.a: $(call HARNESS_OBJS,emu)
	$(AR) rcs $@ $^

build/%/libgraders.a: $$(call GRADERLIB_OBJS,$$*)
	@mkdir -p $(@D)
	rm -f $@; $(AR) rcs $@ $^

# build/BACKEND/SIDE/CHAPTER/grade: the chapter's grader linked with one side's kernels
define grader_rule
build/$1/$2/$3/grade: build/$1/graders/$3.o $(patsubst %.cu,build/$1/%.o,$(call backend_sources,$1,$(call cu_sources,$2,$3))) build/$1/libgraders.a build/$1/libharness.a $(LIBDEP_$1)
	@mkdir -p $$(@D)
	$(CXX) -o $$@ $$(filter %.o,$$^) build/$1/libgraders.a build/$1/libharness.a $(LDLIBS_$1)
endef
$(foreach b,cuda emu,$(foreach s,chapters solutions,$(foreach c,$(CHAPTERS_ALL),\
  $(eval $(call grader_rule,$b,$s,$c)))))

# Known-bug kernels: tests/mutants/CHAPTER/NAME.patch applied to a solution file. Each one's
# grader links the patched file in place of the original, and `make test` requires it to fail.
MUTANTS := $(patsubst tests/mutants/%.patch,%,$(wildcard tests/mutants/*/*.patch))
mutant_path = $(shell sed -n 's|^+++ b/||p' tests/mutants/$1.patch | head -n 1)
mutant_file = $(notdir $(call mutant_path,$1))

# the patched copy is remade when the patch or the file it patches changes
define mutant_src
build/mutants/$1/$(notdir $2): tests/mutants/$1.patch $2 scripts/mutate.sh
	scripts/mutate.sh $$< $$(@D)
endef
$(foreach m,$(MUTANTS),$(eval $(call mutant_src,$m,$(call mutant_path,$m))))

mutant_chapter = $(firstword $(subst /, ,$1))
define mutant_rule
build/$1/mutants/$2/grade: build/$1/graders/$(call mutant_chapter,$2).o build/$1/build/mutants/$2/$(3:.cu=.o) $(patsubst %.cu,build/$1/%.o,$(call backend_sources,$1,$(filter-out %/$3,$(call cu_sources,solutions,$(call mutant_chapter,$2))))) build/$1/libgraders.a build/$1/libharness.a $(LIBDEP_$1)
	@mkdir -p $$(@D)
	$(CXX) -o $$@ $$(filter %.o,$$^) build/$1/libgraders.a build/$1/libharness.a $(LDLIBS_$1)
endef
$(foreach b,cuda emu,$(foreach m,$(MUTANTS),$(eval $(call mutant_rule,$b,$m,$(call mutant_file,$m)))))

build/cuda/probe: build/cuda/harness/probe.o build/cuda/libharness.a
	$(CXX) -o $@ $^ $(LDLIBS_cuda)

build/cuda/tests/harness: build/cuda/tests/harness.o build/cuda/harness/harness.o
	$(CC) -o $@ $^ $(CHECK_LIBS)

# The probe that measured the shared-memory wavefronts the CPU backend's model is checked
# against (tests/ncu/shared_wavefronts.cu says how to run it under ncu on a GPU)
build/cuda/tests/shared_wavefronts: build/cuda/tests/ncu/shared_wavefronts.o
	$(CXX) -o $@ $^ $(LDLIBS_cuda)

-include $(shell find build -name '*.d' 2>/dev/null)

# ---- isolation: the grade glue against a hang, a crash, NaN, Inf, an unwritten element and an
# overrun (tests/isolation.c, kernels in tests/isolation_kernels.cu); `make isolation-test B=emu`
define isolation_rule
build/$1/tests/isolation: build/$1/tests/isolation.o build/$1/tests/isolation_kernels.o build/$1/libharness.a $(LIBDEP_$1)
	$(CXX) -o $$@ $$(filter %.o,$$^) build/$1/libharness.a $(LDLIBS_$1)
endef
$(foreach b,cuda emu,$(eval $(call isolation_rule,$b)))

.PHONY: isolation-test
isolation-test: build/$(B)/tests/isolation
	build/$(B)/tests/isolation

# ---- what the targets build --------------------------------------------------------------

# graders B=cuda|emu SIDES="chapters solutions" CHAPTERS="...": build graders, run nothing
B     ?= cuda
SIDES ?= $(SIDE)
.PHONY: graders
graders: $(foreach s,$(SIDES),$(foreach c,$(CHAPTERS),build/$(B)/$s/$c/grade))

# every kernel file, built for every ARCH with warnings as errors
CU_ALL := $(wildcard chapters/*/*.cu solutions/*/*.cu)
.PHONY: compile-all
compile-all: $(patsubst %.cu,build/cuda/%.o,$(CU_ALL))

# Everything a visit to a GPU needs, built here: run it there with scripts/gpu-run.sh.
.PHONY: gpu-build
gpu-build:
	$(MAKE) --no-print-directory B=cuda SIDES="chapters solutions" CHAPTERS="$(CHAPTERS_ALL)" \
	  graders mutants build/cuda/probe build/cuda/tests/harness build/cuda/tests/isolation \
	  build/cuda/tests/shared_wavefronts

# build/BACKEND/graders.tsv: every grader binary of that backend and what it must do, the table
# scripts/judge.sh judges (make test, and scripts/gpu-run.sh on a GPU); rewritten when it changes
empty :=
tab := $(empty)	$(empty)
define newline


endef
manifest_row = $1$(tab)$2$(tab)$3$(tab)$4$(tab)$5$(newline)
manifest_rows = $(call manifest_row,kind,chapter,name,backend,binary)$(foreach c,$(CHAPTERS_ALL),$(call \
  manifest_row,solution,$c,-,$1,build/$1/solutions/$c/grade)$(call \
  manifest_row,starter,$c,-,$1,build/$1/chapters/$c/grade))$(foreach m,$(MUTANTS),$(call \
  manifest_row,mutant,$(call mutant_chapter,$m),$(notdir $m),$1,build/$1/mutants/$m/grade))
build/cuda/graders.tsv build/emu/graders.tsv: build/%/graders.tsv: FORCE
	@mkdir -p $(@D)
	$(file >$@.new,$(subst $(newline) ,$(newline),$(call manifest_rows,$*)))
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@

.PHONY: mutants
mutants: $(foreach m,$(MUTANTS),build/$(B)/mutants/$m/grade)

# ---- the targets -------------------------------------------------------------------------

.PHONY: deps deps-grade deps-test deps-book
deps: deps-test
deps-grade deps-test deps-book: deps-%:
	@scripts/deps.sh $*

.PHONY: grade
grade: deps-grade
	@CHAPTERS="$(CHAPTERS)" CHAPTERS_ALL="$(CHAPTERS_ALL)" CH="$(CH)" SIDE="$(SIDE)" \
	  BACKEND="$(BACKEND)" MAKE="$(MAKE)" scripts/grade.sh

.PHONY: bench
bench: deps-grade
	@CHAPTERS="$(CHAPTERS)" CHAPTERS_ALL="$(CHAPTERS_ALL)" CH="$(CH)" SIDE="$(SIDE)" \
	  BACKEND="$(BACKEND)" MAKE="$(MAKE)" scripts/grade.sh --bench

# on a GPU: measure each candidate configuration of the chapters that have them (04)
.PHONY: tune
tune: deps-grade
	@CHAPTERS="$(CHAPTERS)" CHAPTERS_ALL="$(CHAPTERS_ALL)" CH="$(CH)" SIDE=solutions \
	  BACKEND="$(BACKEND)" MAKE="$(MAKE)" scripts/grade.sh --tune

.PHONY: test
test: deps-test
	@CHAPTERS_ALL="$(CHAPTERS_ALL)" MAKE="$(MAKE)" scripts/test.sh

# ---- plots and the book ------------------------------------------------------------------

# Each figure is drawn from its chapter's committed measurements, $(PLOT_DATA)/NN.tsv, unless
# `make bench` left fresher ones from this machine in $(FRESH_DATA)/NN.tsv: then from those.
# The rule writes the file it used beside the figure (build/plots/NN.data), and the book's
# caption names the device, driver and date of that file, "measured on this machine" if fresh.
PLOT_DATA  ?= plots/data/h200
FRESH_DATA ?= build/results
PLOT_NAMES := $(patsubst plots/%.gp,%,$(filter-out plots/style.gp plots/roofline.gp,$(wildcard plots/*.gp)))
PLOTS      := $(patsubst %,build/plots/%.pdf,$(PLOT_NAMES)) $(if $(wildcard plots/roofline.gp),build/plots/roofline.pdf)

plot_data = $(if $(shell [ -f $(FRESH_DATA)/$1.tsv ] && [ $(FRESH_DATA)/$1.tsv -nt $(PLOT_DATA)/$1.tsv ] && echo y),$(FRESH_DATA)/$1.tsv,$(PLOT_DATA)/$1.tsv)

# build/plots/NN.data names the file the figure is drawn from; it changes (and the figure is
# redrawn) when the choice does, say when build/results/ is cleaned away
define data_rule
build/plots/$1.data: FORCE
	@mkdir -p $$(@D)
	@echo '$2' | cmp -s - $$@ || echo '$2' > $$@
endef

define plot_rule
$(call data_rule,$1,$(call plot_data,$1))
build/plots/$1.pdf: plots/$1.gp plots/style.gp $(call plot_data,$1) build/plots/$1.data
	gnuplot -e "data='$(call plot_data,$1)'; out='$$@'" $$<
endef
$(foreach p,$(PLOT_NAMES),$(eval $(call plot_rule,$p)))

# the roofline: every chapter's rows on one figure, under the ceilings measured in chapters
# 01/04 (cuBLAS SGEMM), 02 (the copy kernel) and 05 (cuBLAS BF16)
ROOFLINE_DATA := $(foreach p,$(PLOT_NAMES),$(call plot_data,$p))
$(eval $(call data_rule,roofline,$(ROOFLINE_DATA)))
build/plots/roofline.pdf: plots/roofline.gp plots/style.gp $(ROOFLINE_DATA) build/plots/roofline.data
	gnuplot -e "files='$(ROOFLINE_DATA)'; out='$@'" $<

.PHONY: plots
plots: deps-book $(PLOTS)

# the chapters, then matter that reads as part of the book (the roofline), then appendices
# (book/appendices.lua adds the interview questions and the hints before the drills)
BOOK_SRC := book/metadata.yaml book/front.md $(wildcard chapters/*/README.md) \
            book/roofline.md book/drills.md book/solutions.md book/back.md
BOOK_FILTERS := book/include.lua book/measured.lua book/appendices.lua

# pandoc writes LaTeX, pdflatex runs twice (the contents need the page numbers); the log stays
# in build/book/ for tests/book.sh, which looks for code that runs off the page.
# book/measured.lua reads the same data files the figures were drawn from (the .data files).
export PLOT_DATA
build/book.pdf: $(BOOK_SRC) book/header.tex $(BOOK_FILTERS) $(PLOTS) $(CU_ALL) \
                $(wildcard chapters/*/*.h chapters/*/*.cuh) $(ROOFLINE_DATA)
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
PROFILE_CHAPTERS := $(filter 01-% 02-% 03-% 04-%,$(CHAPTERS_ALL))

define profile_rule
build/emu-prof/$1/$2/profile: build/emu-prof/$1/$2/profile_main.o $(patsubst %.cu,build/emu-prof/%.o,$(call backend_sources,emu,$(call cu_sources,$1,$2))) $(EMU_PROF_LIB)
	$(CXX) -o $$@ $$(filter %.o,$$^) $(EMU_PROF_LIB) $(EMU_LDLIBS)
build/emu-prof/$1/$2/profile_main.o: graders/profile_main.c chapters/$2/*.h $(EMU_HEADERS)
	@mkdir -p $$(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_emu) -Ichapters/$2 -c $$< -o $$@
endef
$(foreach s,chapters solutions,$(foreach c,$(PROFILE_CHAPTERS),$(eval $(call profile_rule,$s,$c))))

# the same driver for the GPU: the chapter's kernel objects (as the graders use them) and the
# CUDA runtime, nothing else (no Check: it runs where nothing but the driver is installed)
define profile_cuda_rule
build/cuda/$1/$2/profile: build/cuda/$1/$2/profile_main.o $(patsubst %.cu,build/cuda/%.o,$(call cu_sources,$1,$2))
	$(CXX) -o $$@ $$(filter %.o,$$^) -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread
build/cuda/$1/$2/profile_main.o: graders/profile_main.c chapters/$2/*.h
	@mkdir -p $$(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS_cuda) -Ichapters/$2 -c $$< -o $$@
endef
$(foreach s,chapters solutions,$(foreach c,$(PROFILE_CHAPTERS),$(eval $(call profile_cuda_rule,$s,$c))))

# every profile driver, both backends and sides: what a GPU visit needs for `make profile
# BACKEND=cuda` and `make calibrate` without building there (`make gpu-build` includes it)
PROFILE_DRIVERS := $(foreach b,cuda emu-prof,$(foreach s,chapters solutions,\
                     $(foreach c,$(PROFILE_CHAPTERS),build/$b/$s/$c/profile)))
.PHONY: profile-build
profile-build: $(PROFILE_DRIVERS)
gpu-build: profile-build

# The concept tests of chapters 02-04 (graders/concept.h): on the CPU backend the grader
# build/emu/X/grade runs the profile driver build/emu-prof/X/profile --tsv yours, so each emu
# grader of those chapters, and each of their known-bug kernels', gets its driver built first.
CONCEPT_CHAPTERS := $(filter 02-% 03-% 04-%,$(PROFILE_CHAPTERS))
$(foreach s,chapters solutions,$(foreach c,$(CONCEPT_CHAPTERS),\
  $(eval build/emu/$s/$c/grade: | build/emu-prof/$s/$c/profile)))
define profile_mutant_rule
build/emu-prof/mutants/$1/profile: build/emu-prof/solutions/$2/profile_main.o build/emu-prof/build/mutants/$1/$(3:.cu=.o) $(patsubst %.cu,build/emu-prof/%.o,$(call backend_sources,emu,$(filter-out %/$3,$(call cu_sources,solutions,$2)))) $(EMU_PROF_LIB)
	@mkdir -p $$(@D)
	$(CXX) -o $$@ $$(filter %.o,$$^) $(EMU_PROF_LIB) $(EMU_LDLIBS)
build/emu/mutants/$1/grade: | build/emu-prof/mutants/$1/profile
endef
$(foreach m,$(filter $(addsuffix /%,$(CONCEPT_CHAPTERS)),$(MUTANTS)),\
  $(eval $(call profile_mutant_rule,$m,$(call mutant_chapter,$m),$(call mutant_file,$m))))

.PHONY: profile
profile:
	@CHAPTERS="$(CHAPTERS)" PROFILE_CHAPTERS="$(PROFILE_CHAPTERS)" SIDE="$(SIDE)" \
	  BACKEND="$(BACKEND)" KERNEL="$(KERNEL)" MAKE="$(MAKE)" scripts/profile.sh

# make calibrate, on a GPU with Nsight Compute: every rung of the solutions of chapters 01-04,
# the model's counts against ncu's, into CALIBRATION (one row per rung and metric, with the
# device, driver and date); the book's copy is plots/data/h200/profile-calibration.tsv.
# scripts/calibrate.sh runs it; it needs no make on the GPU machine (make profile-build here).
CALIBRATION ?= build/results/profile-calibration.tsv
.PHONY: calibrate
calibrate: profile-build
	@PROFILE_CHAPTERS="$(PROFILE_CHAPTERS)" scripts/calibrate.sh $(CALIBRATION)

# the book shows the committed calibration (book/measured.lua), or says it was not measured
build/book.pdf: $(wildcard $(PLOT_DATA)/profile-calibration.tsv)

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

# The instrumented CPU-backend graders: a chapter's grader linked with its kernel files built
# instrumented (build/emu-prof/...o) and the instrumented runtime. They live under
# build/emu/sanitize/, so that the concept tests of 02-04 find a profile driver beside them
# (graders/concept.h: build/emu/X/grade runs build/emu-prof/X/profile): a copy of the plain one.
define sanitize_emu_rule
build/emu/sanitize/$1/$2/grade: build/emu/graders/$2.o $(patsubst %.cu,build/emu-prof/%.o,$(call backend_sources,emu,$(call cu_sources,$1,$2))) build/emu/libharness.a $(EMU_PROF_LIB)
	@mkdir -p $$(@D)
	$(CXX) -o $$@ $$(filter %.o,$$^) build/emu/libharness.a $(EMU_PROF_LIB) $(CHECK_LIBS) $(EMU_LDLIBS)
endef
$(foreach s,chapters solutions,$(foreach c,$(CHAPTERS_ALL),$(eval $(call sanitize_emu_rule,$s,$c))))
define sanitize_emu_mutant_rule
build/emu/sanitize/mutants/$1/grade: build/emu/graders/$2.o build/emu-prof/build/mutants/$1/$(3:.cu=.o) $(patsubst %.cu,build/emu-prof/%.o,$(call backend_sources,emu,$(filter-out %/$3,$(call cu_sources,solutions,$2)))) build/emu/libharness.a $(EMU_PROF_LIB)
	@mkdir -p $$(@D)
	$(CXX) -o $$@ $$(filter %.o,$$^) build/emu/libharness.a $(EMU_PROF_LIB) $(CHECK_LIBS) $(EMU_LDLIBS)
endef
$(foreach m,$(MUTANTS),$(eval $(call sanitize_emu_mutant_rule,$m,$(call mutant_chapter,$m),$(call mutant_file,$m))))
build/emu-prof/sanitize/%/profile: build/emu-prof/%/profile
	@mkdir -p $(@D)
	cp $< $@
$(foreach s,chapters solutions,$(foreach c,$(CONCEPT_CHAPTERS),\
  $(eval build/emu/sanitize/$s/$c/grade: | build/emu-prof/sanitize/$s/$c/profile)))
$(foreach m,$(filter $(addsuffix /%,$(CONCEPT_CHAPTERS)),$(MUTANTS)),\
  $(eval build/emu/sanitize/mutants/$m/grade: | build/emu-prof/sanitize/mutants/$m/profile))

.PHONY: sanitize sanitize-record
sanitize: deps-grade
	@CHAPTERS="$(CHAPTERS)" CHAPTERS_ALL="$(CHAPTERS_ALL)" CH="$(CH)" SIDE="$(SIDE)" \
	  BACKEND="$(BACKEND)" MUTANT="$(MUTANT)" TOOLS="$(TOOLS)" MAKE="$(MAKE)" scripts/sanitize.sh
# every solution, then the canary: a known-bug kernel that memcheck must catch
sanitize-record: deps-grade
	@rm -f build/results/sanitize.tsv; \
	CHAPTERS="$(CHAPTERS_ALL)" SIDE=solutions MUTANT= BACKEND="$(BACKEND)" TOOLS="$(TOOLS)" \
	  MAKE="$(MAKE)" scripts/sanitize.sh --record build/results/sanitize.tsv; s=$$?; \
	CHAPTERS=01-naive-matmul MUTANT=no-bounds-check BACKEND="$(BACKEND)" TOOLS=memcheck \
	  MAKE="$(MAKE)" scripts/sanitize.sh --record build/results/sanitize.tsv && exit $$s
