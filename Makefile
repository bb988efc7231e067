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

# Kernel files that only a GPU can run (inline PTX, TMA, wgmma): named *_sm90.cu, left out of
# CPU-backend builds; their graders say such rungs are graded on a GPU only.
EMU_EXCLUDE := %_sm90.cu
backend_sources = $(if $(filter emu,$1),$(filter-out $(EMU_EXCLUDE),$2),$2)

HARNESS_OBJS = $(patsubst harness/%.c,build/$1/harness/%.o,harness/harness.c harness/gpu.c harness/grade.c harness/blas.c)

# ---- compiling ---------------------------------------------------------------------------

# Objects are rebuilt when the flags change (ARCH=90 for a quick GPU visit, then the full set).
build/cuda/.nvccflags: FORCE
	@mkdir -p $(@D)
	@echo '$(NVCC) $(NVCCFLAGS)' | cmp -s - $@ || echo '$(NVCC) $(NVCCFLAGS)' > $@
.PHONY: FORCE

build/cuda/%.o: %.cu build/cuda/.nvccflags
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) $(CU_INC) -c $< -o $@

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

build/cuda/libharness.a: $(call HARNESS_OBJS,cuda)
	$(AR) rcs $@ $^

build/emu/libharness.a: $(call HARNESS_OBJS,emu)
	$(AR) rcs $@ $^

# build/BACKEND/SIDE/CHAPTER/grade: the chapter's grader linked with one side's kernels
define grader_rule
build/$1/$2/$3/grade: build/$1/tests/$3.o $(patsubst %.cu,build/$1/%.o,$(call backend_sources,$1,$(call cu_sources,$2,$3))) build/$1/libharness.a $(LIBDEP_$1)
	@mkdir -p $$(@D)
	$(CXX) -o $$@ $$(filter %.o,$$^) build/$1/libharness.a $(LDLIBS_$1)
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
build/mutants/$1/$(notdir $2): tests/mutants/$1.patch $2 harness/mutate.sh
	harness/mutate.sh $$< $$(@D)
endef
$(foreach m,$(MUTANTS),$(eval $(call mutant_src,$m,$(call mutant_path,$m))))

mutant_chapter = $(firstword $(subst /, ,$1))
define mutant_rule
build/$1/mutants/$2/grade: build/$1/tests/$(call mutant_chapter,$2).o build/$1/build/mutants/$2/$(3:.cu=.o) $(patsubst %.cu,build/$1/%.o,$(call backend_sources,$1,$(filter-out %/$3,$(call cu_sources,solutions,$(call mutant_chapter,$2))))) build/$1/libharness.a $(LIBDEP_$1)
	@mkdir -p $$(@D)
	$(CXX) -o $$@ $$(filter %.o,$$^) build/$1/libharness.a $(LDLIBS_$1)
endef
$(foreach b,cuda emu,$(foreach m,$(MUTANTS),$(eval $(call mutant_rule,$b,$m,$(call mutant_file,$m)))))

build/cuda/probe: build/cuda/harness/probe.o build/cuda/libharness.a
	$(CXX) -o $@ $^ $(LDLIBS_cuda)

build/cuda/tests/harness: build/cuda/tests/harness.o build/cuda/harness/harness.o
	$(CC) -o $@ $^ $(CHECK_LIBS)

-include $(shell find build -name '*.d' 2>/dev/null)

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

# Everything a visit to a GPU needs, built here: run it there with harness/gpu-run.sh.
.PHONY: gpu-build
gpu-build:
	$(MAKE) --no-print-directory B=cuda SIDES="chapters solutions" CHAPTERS="$(CHAPTERS_ALL)" \
	  graders mutants build/cuda/probe build/cuda/tests/harness

.PHONY: mutants
mutants: $(foreach m,$(MUTANTS),build/$(B)/mutants/$m/grade)

# ---- the targets -------------------------------------------------------------------------

.PHONY: deps deps-grade deps-test deps-book
deps: deps-test
deps-grade deps-test deps-book: deps-%:
	@harness/deps.sh $*

.PHONY: grade
grade: deps-grade
	@CHAPTERS="$(CHAPTERS)" CHAPTERS_ALL="$(CHAPTERS_ALL)" CH="$(CH)" SIDE="$(SIDE)" \
	  BACKEND="$(BACKEND)" MAKE="$(MAKE)" harness/grade.sh

.PHONY: bench
bench: deps-grade
	@CHAPTERS="$(CHAPTERS)" CHAPTERS_ALL="$(CHAPTERS_ALL)" CH="$(CH)" SIDE="$(SIDE)" \
	  BACKEND="$(BACKEND)" MAKE="$(MAKE)" harness/grade.sh --bench

# on a GPU: measure each candidate configuration of the chapters that have them (04)
.PHONY: tune
tune: deps-grade
	@CHAPTERS="$(CHAPTERS)" CHAPTERS_ALL="$(CHAPTERS_ALL)" CH="$(CH)" SIDE=solutions \
	  BACKEND="$(BACKEND)" MAKE="$(MAKE)" harness/grade.sh --tune

.PHONY: test
test: deps-test
	@CHAPTERS_ALL="$(CHAPTERS_ALL)" MAKE="$(MAKE)" tests/run.sh

# ---- plots and the book ------------------------------------------------------------------

PLOT_DATA ?= plots/data/h200
PLOTS     := $(patsubst plots/%.gp,build/plots/%.pdf,$(filter-out plots/style.gp,$(wildcard plots/*.gp)))

build/plots/%.pdf: plots/%.gp plots/style.gp $(PLOT_DATA)/%.tsv
	@mkdir -p $(@D)
	gnuplot -e "data='$(PLOT_DATA)/$*.tsv'; out='$@'" $<

.PHONY: plots
plots: deps-book $(PLOTS)

BOOK_SRC := book/metadata.yaml book/front.md $(wildcard chapters/*/README.md) book/back.md

# pandoc writes LaTeX, pdflatex runs twice (the contents need the page numbers); the log stays
# in build/book/ for tests/book.sh, which looks for code that runs off the page
export PLOT_DATA
build/book.pdf: $(BOOK_SRC) book/header.tex book/include.lua book/appendices.lua $(PLOTS) $(CU_ALL)
	@mkdir -p build/book
	pandoc $(BOOK_SRC) --from markdown --standalone --listings \
	  --lua-filter book/include.lua --lua-filter book/appendices.lua \
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
