# harness/emu/emu.mk: the emu backend's build, included by the top-level Makefile
# (-include harness/emu/emu.mk) and usable alone: make -f harness/emu/emu.mk emu-test
#
# Defines, for the Makefile:
#   EMU_CPPFLAGS   flags for C or C++ code compiled against the emu's CUDA headers
#   EMU_LIB        the runtime archive (build/emu/libemu.a), with its rule
#   EMU_LDLIBS     what a program linking EMU_LIB needs after it
#   build/emu/%.o: %.cu   any CUDA source, rewritten (cu2emu.awk) and compiled by g++;
#                  $(CU_INC) (-Iharness -I<chapter dir>) is used as the Makefile sets it
#   emu-test       builds and runs the emulator's own Check suite (tests/emu.c)
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
# own directory first for "..." includes, as if it were compiled where it lies.
$(EMU_BUILD)/%.o: %.cu $(EMU_REWRITE) $(EMU_HEADERS) $(EMU_DIR)/emu.mk
	@mkdir -p $(dir $@)
	$(EMU_AWK) -f $(EMU_REWRITE) $< > $(EMU_BUILD)/$*.emu.cpp
	$(EMU_CXX) $(EMU_CU_CXXFLAGS) $(EMU_CPPFLAGS) -iquote $(dir $<) $(CU_INC) \
	    -include cuda_runtime.h -MMD -MP -MT $@ -MF $(EMU_BUILD)/$*.d \
	    -c $(EMU_BUILD)/$*.emu.cpp -o $@

-include $(shell find $(EMU_BUILD) -name '*.d' 2>/dev/null)

# The emulator's own tests: a Check suite in C (the runtime API from gcc-compiled code) over
# kernels in tests/emu_kernels.cu. Check links statically, as for every grader.
EMU_TEST_BIN := $(EMU_BUILD)/tests/emu
EMU_CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)

$(EMU_BUILD)/tests/emu.o: tests/emu.c tests/emu_kernels.h $(EMU_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror $(EMU_CPPFLAGS) $(EMU_CHECK_CFLAGS) -c $< -o $@

$(EMU_TEST_BIN): $(EMU_BUILD)/tests/emu.o $(EMU_BUILD)/tests/emu_kernels.o $(EMU_LIB)
	$(CC) -o $@ $(EMU_BUILD)/tests/emu.o $(EMU_BUILD)/tests/emu_kernels.o $(EMU_LIB) \
	    -Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic -lm -lrt -lpthread $(EMU_LDLIBS)

.PHONY: emu-test
emu-test: $(EMU_TEST_BIN)
	$(EMU_TEST_BIN)
