#!/usr/bin/env bash
# ncu-snapshot.sh OUT.tsv NOTE KERNEL_REGEX GRADER [ARG...]: what Nsight Compute reads for some
# kernels of a grader's bench, for a lesson that quotes a profile (plots/data/DEVICE/ncu-*.tsv).
#
# ncu profiles the first launch of each kernel matching KERNEL_REGEX at each launch
# configuration (grid and block; --filter-mode per-launch-config), so one bench gives one row per
# kernel and shape, with the full set of sections (--set full: every metric below is one of
# theirs; one this ncu lacks is written as -). Clocks are left alone (--clock-control none), as
# in the bench. OUT gets the device, driver and date, NOTE as a comment, then one row per
# launch: kernel (the name without its parameter list), grid, block, then one column per metric
# under the short name below.
# ARG... are the grader's arguments (default: --bench, into a scratch file; the one word
# "grade": none, so that it grades, GRADE_STEP=k one step, and ncu follows its tests' forks).
# The report is kept beside OUT (.ncu-rep, for Nsight Compute's GUI). NCU_FROM=REPORT makes the
# table from a report taken before (this script's, with the same KERNEL_REGEX), running nothing
# (GRADER is then only a placeholder). tensor_hmma_pipe_pct is the tensor pipe's busy share; on
# Hopper it counts wgmma as well as mma.sync.
#
#   scripts/ncu-snapshot.sh $OUT/ncu-01.tsv "ch01 bench" 'regex:matmul_' build/cuda/solutions/01-naive-matmul/grade
set -uo pipefail
if [[ $# -lt 4 ]]; then
    echo "usage: scripts/ncu-snapshot.sh OUT.tsv NOTE KERNEL_REGEX GRADER [ARG...]" >&2
    exit 2
fi
out=$1 note=$2 kernels=$3 grader=$4
shift 4
[[ -n ${NCU_FROM:-} || -x $grader ]] || { echo "ncu-snapshot: $grader: not an executable" >&2; exit 2; }
ncu=$("$(dirname "$0")/ncu-run.sh" --which) || exit 1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--bench "$scratch/bench.tsv")
[[ ${args[*]} == grade ]] && args=()

# short name = metric (the lessons' cells use the short names)
metrics=(
    duration_ns=gpu__time_duration.sum
    sm_hz=sm__cycles_elapsed.avg.per_second
    registers=launch__registers_per_thread
    achieved_occupancy_pct=sm__warps_active.avg.pct_of_peak_sustained_active
    issue_slots_busy_pct=smsp__issue_active.avg.pct_of_peak_sustained_active
    fma_pipe_pct=sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
    lsu_pipe_pct=sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active
    l1tex_throughput_pct=l1tex__throughput.avg.pct_of_peak_sustained_elapsed
    l2_throughput_pct=lts__throughput.avg.pct_of_peak_sustained_elapsed
    dram_throughput_pct=gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed
    global_load_requests=l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
    global_load_sectors=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
    l1_hit_rate_pct=l1tex__t_sector_hit_rate.pct
    l1_global_load_hit_rate_pct=l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct
    l2_read_sectors=lts__t_sectors_srcunit_tex_op_read.sum
    l2_hit_rate_pct=lts__t_sector_hit_rate.pct
    dram_read_bytes=dram__bytes_read.sum
    dram_write_bytes=dram__bytes_write.sum
    instructions=smsp__inst_executed.sum
    eligible_warps_per_scheduler=smsp__warps_eligible.avg.per_cycle_active
    shared_load_wavefronts=l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
    shared_load_requests=smsp__sass_inst_executed_op_shared_ld.sum
    stall_long_sb=smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
    stall_lg_throttle=smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
    stall_mio_throttle=smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio
    stall_short_sb=smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio
    stall_barrier=smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
    stall_math=smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio
    stall_wait=smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
    stall_dispatch=smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio
    stall_not_selected=smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio
    stall_selected=smsp__average_warps_issue_stalled_selected_per_issue_active.ratio
    stall_no_instruction=smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio
    stall_sleeping=smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio
    waves_per_sm=launch__waves_per_multiprocessor
    sm_active_cycles=sm__cycles_active.avg
    elapsed_cycles=sm__cycles_elapsed.avg
    tensor_hmma_pipe_pct=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
)
if [[ -n ${NCU_FROM:-} ]]; then
    # the table again from a report already taken (NCU_FROM=REPORT.ncu-rep): no profiling run
    cp "$NCU_FROM" "${out%.tsv}.ncu-rep" 2>/dev/null || [[ $NCU_FROM -ef ${out%.tsv}.ncu-rep ]]
    rc=$?
else
    "$ncu" --set full --clock-control none --filter-mode per-launch-config --launch-count 1 \
        -k "$kernels" --export "${out%.tsv}" --force-overwrite "$grader" ${args[@]+"${args[@]}"} \
        > "$scratch/ncu.log" 2>&1
    rc=$?
fi
if [[ $rc -ne 0 || ! -s ${out%.tsv}.ncu-rep ]]; then
    echo "ncu-snapshot: ncu exited $rc; the end of its output:" >&2
    tail -n 20 "$scratch/ncu.log" >&2
    exit 1
fi
"$ncu" --import "${out%.tsv}.ncu-rep" --csv --page raw --print-units base > "$scratch/raw.csv" ||
    { echo "ncu-snapshot: ncu could not read back ${out%.tsv}.ncu-rep" >&2; exit 1; }
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null |
        awk -F', ' '{ print "# device: " $1; print "# driver: " $2 }'
    echo "# date: $(date -u +%Y-%m-%d)"
    echo "# ncu --set full --clock-control none --filter-mode per-launch-config --launch-count 1 -k '$kernels': $note"
    echo "# stall_*: warps stalled for that reason per issued instruction (ncu's ..._per_issue_active.ratio)"
} > "$out"
python3 - "$scratch/raw.csv" "${metrics[@]}" >> "$out" <<'EOF' || { echo "ncu-snapshot: no rows in the report" >&2; exit 1; }
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
# ncu prints its own lines (==PROF==) before the table; the table starts at the "ID" header
start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
head, data = rows[start], rows[start + 2:]          # the row after the header holds the units
pairs = [m.split("=", 1) for m in sys.argv[2:]]
col = {h: i for i, h in enumerate(head)}
missing = [m for _, m in pairs if m not in col]
if missing:
    print("ncu-snapshot: not in this ncu's report (written as -): " + ", ".join(missing), file=sys.stderr)
print("\t".join(["kernel", "grid", "block"] + [s for s, _ in pairs]))
n = 0
for r in data:
    if len(r) != len(head):
        continue
    name = r[col["Kernel Name"]].split("(")[0].strip()
    grid = r[col["Grid Size"]].strip("()").replace(" ", "")
    block = r[col["Block Size"]].strip("()").replace(" ", "")
    print("\t".join([name, grid, block] + [r[col[m]].replace(",", "") if m in col else "-" for _, m in pairs]))
    n += 1
sys.exit(0 if n else 1)
EOF
