#!/usr/bin/env bash
# ncu-run.sh: Nsight Compute's side of `make profile BACKEND=cuda` and `make calibrate`
# (harness/emu/README.md, "Profiling").
#
#   scripts/ncu-run.sh --which           the ncu it would run: NCU=path if set, else ncu on PATH,
#                                        else CUDA_HOME/bin/ncu, else the newest
#                                        /opt/nvidia/nsight-compute/*/ncu; exit 1, saying so,
#                                        when there is none
#   scripts/ncu-run.sh DRIVER RUNG CSV   runs `DRIVER --run RUNG` (a profile driver built for the
#                                        GPU, found in build/programs.tsv) under ncu with the
#                                        metrics below, writes the report (CSV with .ncu-rep for
#                                        .csv: open it in Nsight Compute's GUI) and ncu's log
#                                        (.log), then CSV itself: the report as `--csv --page raw
#                                        --print-units base`, one row per kernel launch, which
#                                        scripts/ncu-table.awk reads. The driver's own lines
#                                        ("== rung ...") are passed through to stdout.
#
# One process per rung: every kernel ncu sees in it is that rung's, so a rung's counts join the
# model's by the rung's name, whatever its kernels are called. Clocks are left alone
# (--clock-control none): these are counts, not times. NCU_ARGS adds options to the run.
set -uo pipefail

find_ncu() {
    if [[ -n ${NCU:-} ]]; then
        [[ -x $NCU ]] && { echo "$NCU"; return 0; }
        command -v "$NCU" 2>/dev/null && return 0
        echo "ncu-run: NCU=$NCU is not an executable" >&2
        return 1
    fi
    command -v ncu 2>/dev/null && return 0
    local c
    for c in "${CUDA_HOME:-/usr/local/cuda}/bin/ncu" /usr/local/cuda/bin/ncu; do
        [[ -x $c ]] && { echo "$c"; return 0; }
    done
    c=$(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | sort -V | tail -n 1)
    [[ -n $c && -x $c ]] && { echo "$c"; return 0; }
    echo "ncu-run: Nsight Compute (ncu) is not installed here: not on PATH, not in" \
         "${CUDA_HOME:-/usr/local/cuda}/bin, not under /opt/nvidia/nsight-compute" \
         "(install it with the CUDA Toolkit, or set NCU=/path/to/ncu)" >&2
    return 1
}

if [[ ${1:-} == --which ]]; then
    find_ncu
    exit
fi
if [[ $# -ne 3 ]]; then
    echo "usage: scripts/ncu-run.sh --which | DRIVER RUNG CSV" >&2
    exit 2
fi
driver=$1 rung=$2 csv=$3
ncu=$(find_ncu) || exit 1
[[ -x $driver ]] || { echo "ncu-run: no driver $driver (make profile-build builds it)" >&2; exit 1; }

# what scripts/ncu-table.awk reads (its header says which column of the model each one is)
metrics=(
    l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
    l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
    l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum
    l1tex__t_requests_pipe_lsu_mem_global_op_red.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum
    smsp__inst_executed_op_shared_ld.sum
    smsp__inst_executed_op_shared_st.sum
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
    l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
    l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
    smsp__sass_branch_targets.sum
    smsp__sass_branch_targets_threads_divergent.sum
    smsp__warps_launched.sum
    # what the report adds where collected (ncu-table.awk prints them when present): achieved
    # occupancy, the share of each unit's peak, and the stall reasons a warp waits on
    sm__warps_active.avg.pct_of_peak_sustained_active
    sm__throughput.avg.pct_of_peak_sustained_elapsed
    lts__throughput.avg.pct_of_peak_sustained_elapsed
    gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed
    smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
    smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio
    smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
    smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio
    smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
    smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio
    smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
    smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio
    smsp__average_warps_issue_stalled_membar_per_issue_active.ratio
)
list=$(IFS=,; echo "${metrics[*]}")

mkdir -p "$(dirname "$csv")"
rep=${csv%.csv}.ncu-rep log=${csv%.csv}.log
rm -f "$rep" "$csv"
# shellcheck disable=SC2086 # NCU_ARGS: words on purpose
"$ncu" --clock-control none --metrics "$list" --export "$rep" --force-overwrite ${NCU_ARGS:-} \
    "$driver" --run "$rung" > "$log" 2>&1
rc=$?
# the driver's lines on stdout, ncu's own complaints on stderr (but not its note that the
# clocks are left alone: --clock-control none asks for that, and counts do not depend on clocks)
grep -Ev '^==[A-Z]+==' "$log" || true
grep -E '^==(ERROR|WARNING)==' "$log" | grep -v 'Running with unmodified GPU clocks' >&2
if [[ $rc -ne 0 || ! -s $rep ]]; then
    echo "ncu-run: ncu on $driver --run $rung failed (exit $rc); its log is $log" >&2
    if grep -q ERR_NVGPUCTRPERM "$log"; then
        echo "ncu-run: this user may not read the GPU's performance counters: run as root, or" \
             "allow it (the NVIDIA driver's NVreg_RestrictProfilingToAdminUsers=0)" >&2
    fi
    exit 1
fi
if ! "$ncu" --import "$rep" --csv --page raw --print-units base --print-kernel-base demangled \
        > "$csv" 2> "$log.import"; then
    echo "ncu-run: ncu --import $rep failed: $(head -c 400 "$log.import")" >&2
    exit 1
fi
exit 0
