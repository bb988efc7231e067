#!/usr/bin/env bash
# profile.sh: what `make profile` runs. For each chapter of CHAPTERS that has a profile driver
# (PROFILE_CHAPTERS), build its rungs on SIDE (chapters or solutions) with the emu backend's
# instrumented build and run them once on a small shape (harness/emu/prof/profile_main.c):
# per kernel and source line, global requests and sectors per request, shared wavefronts per
# request, divergent branches per warp (harness/emu/README.md, "Profiling").
#   KERNEL=name   only that rung (names as in the chapter's rung table)
#   BACKEND=cuda  not yet: Nsight Compute's side of the table is to come
set -uo pipefail
make_=${MAKE:-make}
side=${SIDE:-chapters}
if [[ ${BACKEND:-auto} == cuda ]]; then
    echo "profile: BACKEND=cuda (Nsight Compute) is not written yet; this runs the CPU model" >&2
fi
status=0 ran=0
for c in ${CHAPTERS:-}; do
    if [[ " ${PROFILE_CHAPTERS:-} " != *" $c "* ]]; then
        [[ -n ${KERNEL:-} || $(wc -w <<<"${CHAPTERS:-}") -eq 1 ]] &&
            echo "profile: $c has no profile driver (chapters 01-04 have one)" >&2
        continue
    fi
    bin=build/emu-prof/$side/$c/profile
    if ! $make_ --no-print-directory -s "$bin"; then
        echo "profile: $c ($side) does not build" >&2
        status=1
        continue
    fi
    echo "# $c ($side), instrumented emu build (g++ -O1 -fno-tree-vectorize): a model, not a GPU measurement"
    KERNEL=${KERNEL:-} "$bin" || status=1
    ran=$((ran + 1))
done
[[ $ran -gt 0 ]] || { echo "profile: nothing to profile in '${CHAPTERS:-}'" >&2; exit 1; }
exit $status
