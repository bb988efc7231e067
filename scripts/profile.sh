#!/usr/bin/env bash
# profile.sh: what `make profile` runs. For each chapter of CHAPTERS that has a profile driver
# (PROFILE_CHAPTERS), build its rungs on SIDE (chapters or solutions) and run each once on a
# small shape (graders/profile_main.c), on one of two backends:
#   emu    the CPU backend's instrumented build: per kernel and source line, global requests
#          and sectors per request, shared wavefronts per request, divergent branches per warp
#          (a model: harness/emu/README.md, "Profiling")
#   cuda   the same driver built for the GPU, each rung under Nsight Compute
#          (scripts/ncu-run.sh): the same columns and the same total line, per kernel
#          (scripts/ncu-table.awk). Needs a GPU and ncu; says which is missing, and fails.
#   auto   (the default) cuda where a GPU answers and ncu is installed, else emu
# Environment, from the Makefile: CHAPTERS, PROFILE_CHAPTERS, SIDE, BACKEND, KERNEL, MAKE.
#   KERNEL=name        only that rung (names as in the chapter's rung table; in chapter 03
#                      "pair/name", or either half)
#   NCU=path           the ncu to run (scripts/ncu-run.sh --which says which one it finds)
#   GPU_PROBE=command  how to ask whether a GPU answers (default build/cuda/probe): its exit
#                      status says, its output is the probe's (harness/probe.c: a header and a
#                      row of tab-separated fields, or why not)
#   NO_BUILD=1         run the drivers (and the probe) as they are, build nothing: on a GPU
#                      machine, what `make gpu-build` built on the development machine
#                      (scripts/profile.sh can run without make: set CHAPTERS, PROFILE_CHAPTERS,
#                      SIDE and BACKEND as the Makefile would)
set -uo pipefail
make_=${MAKE:-make}
[[ ${NO_BUILD:-0} == 1 ]] && make_=true
side=${SIDE:-chapters}
backend=${BACKEND:-auto}
case $backend in
    auto|cuda|emu) ;;
    *) echo "profile: BACKEND=$backend: choose auto, cuda or emu" >&2; exit 2 ;;
esac

# shellcheck source=scripts/probe.sh
source scripts/probe.sh

# does a GPU answer? sets device (its name and what it is, in a line, or why not)
gpu_answers() {
    local probe=${GPU_PROBE:-}
    if [[ -z $probe ]]; then
        $make_ --no-print-directory -s build/cuda/probe >/dev/null 2>&1
        if [[ ! -x build/cuda/probe ]]; then
            device="build/cuda/probe does not build here (make gpu-build builds it)"
            return 1
        fi
        probe=build/cuda/probe
    fi
    local out
    out=$($probe 2>&1) || { device=$out; return 1; }
    device=$(probe_describe "$out")
}

if [[ $backend != emu ]]; then
    gpu=0
    gpu_answers && gpu=1
    ncu_ok=0
    scripts/ncu-run.sh --which >/dev/null 2>&1 && ncu_ok=1
    if [[ $gpu == 1 && $ncu_ok == 1 ]]; then
        backend=cuda
    elif [[ $backend == cuda ]]; then
        [[ $gpu == 1 ]] || echo "profile: BACKEND=cuda, but no GPU answered: $device" >&2
        [[ $ncu_ok == 1 ]] || scripts/ncu-run.sh --which 2>&1 >/dev/null | sed 's/^ncu-run/profile/' >&2
        echo "profile: Nsight Compute's counts need both; \`make profile\` without BACKEND=cuda" \
             "runs the CPU backend's model" >&2
        exit 1
    else
        [[ $gpu == 1 ]] && echo "profile: a GPU answered ($device), but Nsight Compute (ncu) is" \
                                "not installed: the CPU backend's model instead"
        backend=emu
    fi
fi

# the rungs of a driver that KERNEL selects (all without KERNEL)
rungs_of() {
    local r
    for r in $("$1" --list); do
        if [[ -z ${KERNEL:-} || $r == "$KERNEL" || $r == "$KERNEL"/* || $r == */"$KERNEL" ]]; then
            echo "$r"
        fi
    done
}

# shellcheck source=scripts/programs.sh
source scripts/programs.sh
status=0 ran=0
for c in ${CHAPTERS:-}; do
    if [[ " ${PROFILE_CHAPTERS:-} " != *" $c "* ]]; then
        [[ -n ${KERNEL:-} || $(wc -w <<<"${CHAPTERS:-}") -eq 1 ]] &&
            echo "profile: $c has no profile driver (chapters 01-04 have one)" >&2
        continue
    fi
    bin=$(program_path profile "$(side_kind "$side")" "$c" - "$backend")
    if ! $make_ --no-print-directory -s "$bin" || [[ ! -x $bin ]]; then
        echo "profile: $c ($side) does not build$([[ ${NO_BUILD:-0} == 1 ]] && echo ": NO_BUILD=1, and there is no $bin")" >&2
        status=1
        continue
    fi
    ran=$((ran + 1))
    if [[ $backend == emu ]]; then
        echo "# $c ($side), instrumented emu build ($(scripts/model-build.sh "$bin")): a model, not a GPU measurement"
        KERNEL=${KERNEL:-} "$bin" || status=1
        continue
    fi
    rungs=$(rungs_of "$bin")
    if [[ -z $rungs ]]; then
        echo "profile: $c has no rung named '$KERNEL'; the rungs are: $("$bin" --list | tr '\n' ' ')" >&2
        status=1
        continue
    fi
    echo "# $c ($side), Nsight Compute on $device: per kernel, counted on the GPU (--clock-control none)"
    for r in $rungs; do
        csv=build/ncu/$side/$c/${r//\//-}.csv
        if scripts/ncu-run.sh "$bin" "$r" "$csv"; then
            awk -f scripts/kernel-name.awk -f scripts/ncu-table.awk -v mode=table "$csv" || status=1
        else
            status=1
        fi
    done
done
[[ $ran -gt 0 ]] || { echo "profile: nothing to profile in '${CHAPTERS:-}'" >&2; exit 1; }
exit $status
