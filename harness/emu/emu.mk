# harness/emu/emu.mk: the emu backend's build, included by the top-level Makefile
# (include harness/emu/emu.mk) and usable alone: make -f harness/emu/emu.mk emu-test
#
# Defines, for the Makefile:
#   EMU_CPPFLAGS   flags for C or C++ code compiled against the emu's CUDA headers
#   EMU_LIB        the runtime archive (build/emu/libemu.a), with its rule
#   EMU_LDLIBS     what a program linking EMU_LIB needs after it
#   build/emu/%.o: %.cu   any CUDA source, rewritten (cu2emu.awk) and compiled by g++;
#                  $(CU_INC) (-Iharness -I<chapter dir>) is used as the Makefile sets it
#   emu-test       builds and runs the emulator's own Check suites (tests/emu.c, the
#                  stream scheduler's, tests/emu_streams.c, and the several devices',
#                  tests/emu_devices.c)
#   EMU_RESOURCE_USAGE  the .cu files (make patterns: chapters/09-%.cu) whose objects carry
#                  the GPU compiler's registers, static shared memory and launch bounds of
#                  each kernel (README.md, "Kernel resources"); add to it with +=
# Everything it generates is under build/emu/. harness/emu/README.md describes the backend.

CUDA_HOME ?= /usr/local/cuda
CU_INC ?= -Iharness
EMU_CXX ?= g++
EMU_AWK ?= awk

EMU_DIR := harness/emu
EMU_BUILD := build/emu
EMU_CPPFLAGS := -I$(EMU_DIR)/include -isystem $(CUDA_HOME)/include -DHARNESS_EMU
EMU_LIB := $(EMU_BUILD)/libemu.a
EMU_LDLIBS := -lstdc++ -lpthread -lm

EMU_HEADERS := $(wildcard $(EMU_DIR)/include/*.h $(EMU_DIR)/include/*/*.h)
EMU_REWRITE := $(EMU_DIR)/cu2emu.awk
EMU_RT_OBJS := $(patsubst $(EMU_DIR)/src/%.cpp,$(EMU_BUILD)/runtime/%.o,$(wildcard $(EMU_DIR)/src/*.cpp)) \
               $(EMU_BUILD)/runtime/switch_x86_64.o
# The runtime: warnings are errors.
EMU_RT_CXXFLAGS := -std=c++17 -O2 -g -Wall -Wextra -Werror -fno-strict-aliasing
# Kernel files: -g for the source lines of fault reports (DWARF 4: binutils 2.40's addr2line
# misnames the file of some functions under DWARF 5's #line handling); stack-clash protection probes every
# page of a large frame, so a fiber stack overflow always hits the guard page; no -Werror, as a
# learner's half-written kernel must still build.
EMU_CU_CXXFLAGS := -std=c++17 -O2 -g -Wno-unknown-pragmas -gdwarf-4 -fno-strict-aliasing -fstack-clash-protection \
                   -Wall -Wno-unused-parameter -Wno-unused-variable -Wno-unused-function

# ---- kernel resources (README.md, "Kernel resources"). A file in EMU_RESOURCE_USAGE is also
# compiled by nvcc, for each profile's architecture, when its object is built: resources.sh
# turns ptxas's report into BUILD/FILE.res.h, which the object's compile includes and which
# registers its rows with the runtime before main. Opt-in, as it costs an nvcc compile (about
# 1 to 4 s a file) on top of g++'s. The variable is read when an object is built, so the
# including Makefile may add to it after this line.
EMU_RESOURCE_USAGE += tests/emu_resources_kernels.cu
# one per device profile's compute capability: t4, a100, l4, h200 and the default
EMU_RESOURCE_ARCHS := 75 80 89 90
EMU_NVCC ?= $(or $(NVCC),$(CUDA_HOME)/bin/nvcc)
EMU_RESOURCE_NVCCFLAGS := -std=c++17 -O3
EMU_RESOURCE_TOOLS := $(EMU_DIR)/resources.sh $(EMU_DIR)/resources.awk
# $(call emu_resources,SOURCE,TABLE): the recipe line that makes TABLE, if SOURCE opted in
emu_resources = $(if $(filter $(EMU_RESOURCE_USAGE),$1),$(EMU_DIR)/resources.sh $2 $1 \
                  "$(EMU_RESOURCE_ARCHS)" $(EMU_NVCC) $(EMU_RESOURCE_NVCCFLAGS) $(CU_INC))
# $(call emu_resource_include,SOURCE,TABLE): the compile's flag that includes it
emu_resource_include = $(if $(filter $(EMU_RESOURCE_USAGE),$1),-include $2)

$(EMU_LIB): $(EMU_RT_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(EMU_BUILD)/runtime/%.o: $(EMU_DIR)/src/%.cpp $(EMU_DIR)/src/internal.h $(EMU_HEADERS) $(EMU_DIR)/emu.mk
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_RT_CXXFLAGS) $(EMU_CPPFLAGS) -c $< -o $@

$(EMU_BUILD)/runtime/%.o: $(EMU_DIR)/src/%.S
	@mkdir -p $(dir $@)
	$(EMU_CXX) -c $< -o $@

# A CUDA source for the CPU: rewrite (keeping the .cu's line numbers), then g++ with the
# emu headers force-included as nvcc force-includes cuda_runtime.h. -iquote keeps the .cu's
# own directory first for "..." includes, as if it were compiled where it lies. Then what the
# including Makefile adds after every compile (EMU_AFTER_COMPILE: the top one's content stamps).
$(EMU_BUILD)/%.o: %.cu $(EMU_REWRITE) $(EMU_RESOURCE_TOOLS) $(EMU_HEADERS) $(EMU_DIR)/emu.mk
	@mkdir -p $(dir $@)
	$(EMU_AWK) -f $(EMU_REWRITE) $< > $(EMU_BUILD)/$*.emu.cpp
	$(call emu_resources,$<,$(EMU_BUILD)/$*.res.h)
	$(EMU_CXX) $(EMU_CU_CXXFLAGS) $(EMU_CPPFLAGS) -iquote $(dir $<) $(CU_INC) \
	    -include cuda_runtime.h $(call emu_resource_include,$<,$(EMU_BUILD)/$*.res.h) \
	    -MMD -MP -MT $@ -MF $(EMU_BUILD)/$*.d -c $(EMU_BUILD)/$*.emu.cpp -o $@
	$(EMU_AFTER_COMPILE)

# (the top-level Makefile includes every build/**/*.d itself)
ifndef EMU_INCLUDED_BY_TOP
-include $(shell find $(EMU_BUILD) -name '*.d' 2>/dev/null)
endif

# The emulator's own tests: a Check suite in C (the runtime API from gcc-compiled code) over
# kernels in tests/emu_kernels.cu. Check links statically, as for every grader.
EMU_TEST_BIN := $(EMU_BUILD)/tests/emu
EMU_CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)

# (tests/emu_resources_kernels.cu opted in to its resource table, above)
$(EMU_BUILD)/tests/emu.o: tests/emu.c tests/capture.h tests/emu_kernels.h tests/emu_resources_kernels.h \
                          $(EMU_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror $(EMU_CPPFLAGS) $(EMU_CHECK_CFLAGS) -c $< -o $@

EMU_TEST_KERNELS := $(EMU_BUILD)/tests/emu_kernels.o $(EMU_BUILD)/tests/emu_resources_kernels.o
$(EMU_TEST_BIN): $(EMU_BUILD)/tests/emu.o $(EMU_TEST_KERNELS) $(EMU_LIB)
	$(CC) -o $@ $(EMU_BUILD)/tests/emu.o $(EMU_TEST_KERNELS) $(EMU_LIB) \
	    -Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic -lm -lrt -lpthread $(EMU_LDLIBS)

# The stream scheduler's tests (README.md, "Streams"), over kernels of their own.
EMU_STREAMS_TEST_BIN := $(EMU_BUILD)/tests/emu_streams

$(EMU_BUILD)/tests/emu_streams.o: tests/emu_streams.c tests/capture.h tests/emu_streams_kernels.h \
                                  tests/emu_schedule.h $(EMU_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror $(EMU_CPPFLAGS) $(EMU_CHECK_CFLAGS) -c $< -o $@

$(EMU_STREAMS_TEST_BIN): $(EMU_BUILD)/tests/emu_streams.o $(EMU_BUILD)/tests/emu_streams_kernels.o $(EMU_LIB)
	$(CC) -o $@ $(EMU_BUILD)/tests/emu_streams.o $(EMU_BUILD)/tests/emu_streams_kernels.o $(EMU_LIB) \
	    -Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic -lm -lrt -lpthread $(EMU_LDLIBS)

# The several devices' tests (README.md, "Several devices"), over kernels of their own.
EMU_DEVICES_TEST_BIN := $(EMU_BUILD)/tests/emu_devices

$(EMU_BUILD)/tests/emu_devices.o: tests/emu_devices.c tests/capture.h tests/emu_devices_kernels.h \
                                  tests/emu_schedule.h $(EMU_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror $(EMU_CPPFLAGS) $(EMU_CHECK_CFLAGS) -c $< -o $@

$(EMU_DEVICES_TEST_BIN): $(EMU_BUILD)/tests/emu_devices.o $(EMU_BUILD)/tests/emu_devices_kernels.o $(EMU_LIB)
	$(CC) -o $@ $(EMU_BUILD)/tests/emu_devices.o $(EMU_BUILD)/tests/emu_devices_kernels.o $(EMU_LIB) \
	    -Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic -lm -lrt -lpthread $(EMU_LDLIBS)

.PHONY: emu-test
emu-test: $(EMU_TEST_BIN) $(EMU_STREAMS_TEST_BIN) $(EMU_DEVICES_TEST_BIN)
	$(EMU_TEST_BIN)
	$(EMU_STREAMS_TEST_BIN)
	$(EMU_DEVICES_TEST_BIN)

# ---- the instrumented build (README.md, "Profiling"): everything under build/emu-prof/ -----
# Kernel files compiled with GCC's ThreadSanitizer hooks on every load and store and
# SanitizerCoverage's hook on every basic block; prof/prof.cpp is the hooks' runtime (libtsan is
# never linked). The numbers are a model pinned to one compiler and one optimisation level:
# -O3 (loop unswitching, vectorisation) changes the branches and the accesses the model sees,
# and without -fno-tree-sra GCC splits a float4 load used part by part into four float loads
# (nvcc issues one LDS.128 or LDG.128).
#   EMU_PROF_LIB             the runtime with the profiler: build/emu-prof/libemu_prof.a
#   build/emu-prof/%.o: %.cu  any CUDA source, instrumented
#   emu-profile-test         the profiler's own Check suite (tests/emu_profile.c)
EMU_PROF_BUILD := build/emu-prof
EMU_PROF_CXX ?= g++
# the compiler the model's numbers were taken with (README.md): another one warns
EMU_PROF_GCC_MAJOR := 12
EMU_PROF_LIB := $(EMU_PROF_BUILD)/libemu_prof.a
EMU_PROF_RT_OBJS := $(patsubst $(EMU_DIR)/src/%.cpp,$(EMU_PROF_BUILD)/runtime/%.o,$(wildcard $(EMU_DIR)/src/*.cpp)) \
                    $(EMU_PROF_BUILD)/runtime/prof.o $(EMU_BUILD)/runtime/switch_x86_64.o
# (-Wno-tsan: the emu's __threadfence is a C++ fence, which ThreadSanitizer does not model; this
# build uses its instrumentation to count accesses, not to look for races)
EMU_PROF_CU_CXXFLAGS := -std=c++17 -O1 -fno-tree-vectorize -fno-tree-sra -g -gdwarf-4 -fno-strict-aliasing \
                        -fstack-clash-protection -fsanitize=thread -fsanitize-coverage=trace-pc \
                        --param=tsan-instrument-func-entry-exit=0 -Wno-unknown-pragmas -Wall \
                        -Wno-unused-parameter -Wno-unused-variable -Wno-unused-function \
                        -Wno-tsan

$(EMU_PROF_LIB): $(EMU_PROF_RT_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(EMU_PROF_BUILD)/runtime/%.o: $(EMU_DIR)/src/%.cpp $(EMU_DIR)/src/internal.h $(EMU_HEADERS) $(EMU_DIR)/emu.mk
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_RT_CXXFLAGS) -DEMU_PROFILE $(EMU_CPPFLAGS) -c $< -o $@

$(EMU_PROF_BUILD)/runtime/prof.o: $(EMU_DIR)/prof/prof.cpp $(EMU_DIR)/src/internal.h $(EMU_HEADERS) $(EMU_DIR)/emu.mk
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_RT_CXXFLAGS) -DEMU_PROFILE $(EMU_CPPFLAGS) -c $< -o $@

$(EMU_PROF_BUILD)/%.o: %.cu $(EMU_REWRITE) $(EMU_RESOURCE_TOOLS) $(EMU_HEADERS) $(EMU_DIR)/emu.mk
	@mkdir -p $(dir $@)
	@v=$$($(EMU_PROF_CXX) -dumpversion); [ "$${v%%.*}" = "$(EMU_PROF_GCC_MAJOR)" ] || \
	  echo "emu-profile: warning: $(EMU_PROF_CXX) is gcc $$v; the model's numbers were taken with gcc $(EMU_PROF_GCC_MAJOR) (they may differ)" >&2
	$(EMU_AWK) -f $(EMU_REWRITE) $< > $(EMU_PROF_BUILD)/$*.emu.cpp
	$(call emu_resources,$<,$(EMU_PROF_BUILD)/$*.res.h)
	$(EMU_PROF_CXX) $(EMU_PROF_CU_CXXFLAGS) $(EMU_CPPFLAGS) -iquote $(dir $<) $(CU_INC) \
	    -include cuda_runtime.h $(call emu_resource_include,$<,$(EMU_PROF_BUILD)/$*.res.h) \
	    -MMD -MP -MT $@ -MF $(EMU_PROF_BUILD)/$*.d -c $(EMU_PROF_BUILD)/$*.emu.cpp -o $@
	$(EMU_AFTER_COMPILE)

ifndef EMU_INCLUDED_BY_TOP
-include $(shell find $(EMU_PROF_BUILD) -name '*.d' 2>/dev/null)
endif

# The profiler's own tests: planted kernels (tests/emu_profile_kernels.cu) whose numbers are
# known, built instrumented; a Check suite in C asks the runtime for each launch's totals.
EMU_PROF_TEST_BIN := $(EMU_PROF_BUILD)/tests/emu_profile

# (it judges its planted kernels with the concept tests' limits, graders/concept.h)
$(EMU_PROF_BUILD)/tests/emu_profile.o: tests/emu_profile.c tests/capture.h tests/emu_profile_kernels.h \
                                       tests/shared_patterns.h graders/concept.h $(EMU_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror $(EMU_CPPFLAGS) -Igraders $(EMU_CHECK_CFLAGS) -c $< -o $@

$(EMU_PROF_TEST_BIN): $(EMU_PROF_BUILD)/tests/emu_profile.o $(EMU_PROF_BUILD)/tests/emu_profile_kernels.o $(EMU_PROF_LIB)
	$(CC) -o $@ $(EMU_PROF_BUILD)/tests/emu_profile.o $(EMU_PROF_BUILD)/tests/emu_profile_kernels.o \
	    $(EMU_PROF_LIB) -Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic -lm -lrt -lpthread $(EMU_LDLIBS)

.PHONY: emu-profile-test
emu-profile-test: $(EMU_PROF_TEST_BIN)
	$(EMU_PROF_TEST_BIN)
