#!/usr/bin/env bash
# calibrate.sh [OUT.tsv]: what `make calibrate` runs, on a GPU with Nsight Compute. Every rung
# of the solutions of PROFILE_CHAPTERS (default 01-04) runs twice on the same small shape: in
# the CPU backend's instrumented build (the model: the emu profile driver of the chapter's
# solutions, --tsv, on this machine's processor) and in the GPU build under ncu (the cuda profile
# driver, scripts/ncu-run.sh); build/programs.tsv says where each lies. The two are joined by the rung's name (scripts/calibration.awk, which
# also checks that both ran the same kernels) into OUT.tsv (default
# build/results/profile-calibration.tsv): a header of device, driver, date, ncu and compiler,
# then one row per rung and metric,
#     chapter  rung  kernel  metric  model  ncu  ratio        (ratio = ncu / model)
# The book shows plots/data/h200/profile-calibration.tsv, a copy of the reference H200's.
#
# Nothing is built here: the drivers come from `make profile-build` (part of `make gpu-build`)
# on the development machine, so the model's numbers are those of its pinned compiler. A rung
# that one side cannot run, or whose kernels differ between the two, is left out with a "#"
# line saying why; the exit status is 1 if a rung failed on either side.
#   NCU=path, GPU_PROBE=command   as for scripts/profile.sh
set -uo pipefail
out=${1:-build/results/profile-calibration.tsv}
chapters=${PROFILE_CHAPTERS:-01-naive-matmul 02-coalesced-transpose 03-warp-divergence 04-shared-memory-tiling}

# shellcheck source=scripts/probe.sh
source scripts/probe.sh
if [[ -n ${GPU_PROBE:-} ]]; then
    device=$($GPU_PROBE 2>&1); gpu=$?
elif [[ -x build/cuda/probe ]]; then
    device=$(build/cuda/probe 2>&1); gpu=$?
else
    device="no build/cuda/probe (make gpu-build builds it)"; gpu=1
fi
ncu=$(scripts/ncu-run.sh --which 2>/dev/null); ncu_ok=$?
if [[ $gpu -ne 0 || $ncu_ok -ne 0 ]]; then
    [[ $gpu -eq 0 ]] || echo "calibrate: no GPU answered: $device" >&2
    [[ $ncu_ok -eq 0 ]] || scripts/ncu-run.sh --which 2>&1 >/dev/null | sed 's/^ncu-run/calibrate/' >&2
    echo "calibrate: the calibration compares the model with Nsight Compute on a GPU: run it where" \
         "both are" >&2
    exit 1
fi
# shellcheck source=scripts/programs.sh
source scripts/programs.sh
missing=
for c in $chapters; do
    for b in emu cuda; do
        p=$(program_path profile solution "$c" - "$b")
        [[ -n $p && -x $p ]] || missing+=" ${p:-the $b profile driver of $c}"
    done
done
if [[ -n $missing ]]; then
    echo "calibrate: missing profile drivers:$missing (make profile-build builds them)" >&2
    exit 1
fi

# the header: where and when, with what
# the probe's fields (scripts/probe.sh)
gpu_name=$(probe_field "$device" name)
driver=
[[ -n $(probe_field "$device" cuda_driver) ]] && driver=$(probe_driver "$device")
[[ -n $driver ]] || driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
ncu_version=$("$ncu" --version 2>/dev/null | tail -n 1)
model_build=$(scripts/model-build.sh "$(program_path profile solution "${chapters%% *}" - emu)")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows=$work/rows.tsv notes=$work/notes
: > "$rows"; : > "$notes"
status=0 compared=0
for c in $chapters; do
    model=$(program_path profile solution "$c" - emu) cuda=$(program_path profile solution "$c" - cuda)
    for r in $("$cuda" --list); do
        key=${r//\//-}
        if ! EMU_PROFILE_QUIET=1 "$model" --tsv "$r" > "$work/$c-$key.model" 2> "$work/err"; then
            echo "# $c/$r: the model did not run it: $(head -c 200 "$work/err" | tr '\n' ' ')" >> "$notes"
            echo "calibrate: $c/$r: the model did not run it" >&2
            status=1
            continue
        fi
        csv=build/ncu/calibrate/$c/$key.csv
        if ! scripts/ncu-run.sh "$cuda" "$r" "$csv" > /dev/null; then
            echo "# $c/$r: Nsight Compute did not run it (see ${csv%.csv}.log)" >> "$notes"
            status=1
            continue
        fi
        if ! awk -f scripts/kernel-name.awk -f scripts/ncu-table.awk -v mode=sum -v rung="$r" "$csv" > "$work/$c-$key.ncu"; then
            echo "# $c/$r: its Nsight Compute CSV could not be read ($csv)" >> "$notes"
            status=1
            continue
        fi
        awk -f scripts/kernel-name.awk -f scripts/calibration.awk -v chapter="$c" -v rung="$r" "$work/$c-$key.model" \
            "$work/$c-$key.ncu" >> "$rows" 2> "$work/err"
        case $? in
            0) compared=$((compared + 1)); echo "calibrate: $c/$r" ;;
            3) echo "# $(sed 's/^calibration: //' "$work/err")" >> "$notes"; cat "$work/err" >&2 ;;
            *) echo "# $c/$r: $(cat "$work/err")" >> "$notes"; cat "$work/err" >&2; status=1 ;;
        esac
    done
done

mkdir -p "$(dirname "$out")"
{
    echo "# device: $gpu_name"
    echo "# driver: ${driver:-unknown}"
    echo "# date: $(date -u +%Y-%m-%d)"
    echo "# ncu: ${ncu_version:-unknown} (--clock-control none)"
    echo "# model: the instrumented emu build ($model_build)"
    echo "# shapes: 128x128x128 (01, 04), 256x256 (02), 16384 elements (03); ratio = ncu / model"
    cat "$notes"
    printf 'chapter\trung\tkernel\tmetric\tmodel\tncu\tratio\n'
    cat "$rows"
} > "$out.tmp" && mv "$out.tmp" "$out"
echo "calibrate: $compared rungs compared, $(grep -c . "$notes") left out; wrote $out"
exit $status
