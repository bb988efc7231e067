#!/usr/bin/env bash
# model-build.sh DRIVER: how an instrumented profile driver's kernel files were compiled, read
# from its own debug information (the DW_AT_producer of the units built with
# -fsanitize=thread), as "GCC 12.2.0 -O1 -fno-tree-vectorize -fno-tree-sra": the compiler and
# the options the model's numbers depend on (harness/emu/emu.mk, EMU_PROF_CU_CXXFLAGS). For the
# headers of `make profile` and `make calibrate`, so that they say what was built, not what was
# meant to be. Prints "compiler unknown" (and exits 1) where readelf or the information is
# missing.
set -uo pipefail
producer=$(readelf --debug-dump=info "${1:?usage: model-build.sh DRIVER}" 2>/dev/null |
           sed -n 's/.*DW_AT_producer *:.*: \(GNU .*-fsanitize=thread.*\)$/\1/p' | head -n 1)
if [[ -z $producer ]]; then
    echo "compiler unknown"
    exit 1
fi
# "GNU C++17 12.2.0 -mtune=... -O1 ...": the version, then the options that shape the accesses
read -r _ _ version rest <<<"$producer"
opts=$(tr ' ' '\n' <<<"$rest" | grep -E '^-(O[0-9sg]?|fno-tree-[a-z-]+|ftree-[a-z-]+)$' | tr '\n' ' ')
echo "GCC $version ${opts% }"
