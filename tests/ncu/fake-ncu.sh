#!/usr/bin/env bash
# fake-ncu.sh: a stand-in for Nsight Compute's ncu, for tests/ncu_table.sh's dry run of
# `make profile BACKEND=cuda` and `make calibrate` on a machine without a GPU. It accepts the
# command lines scripts/ncu-run.sh gives ncu and answers in ncu's formats, with numbers that are
# NOT measured: for `ncu ... --export R.ncu-rep ... DRIVER --run RUNG` it runs the
# CPU backend's model of the same rung (the emu profile driver of the same side, --tsv RUNG) and writes, as
# "the report", that row in the layout of `ncu --import R --csv --page raw` (thousands
# separators, NVIDIA's spelling of template arguments: "<(int)4, (bool)1>"), one launch per
# kernel (the counts all on the first); `--import R ...` prints it back. So a dry run's
# calibration must come out at a ratio of 1 everywhere, and its tables must match the model's
# totals.
set -uo pipefail
args=("$@")
if [[ ${1:-} == --version ]]; then
    echo "fake ncu (tests/ncu/fake-ncu.sh): no GPU, the CPU backend's numbers"
    exit 0
fi
export_to= import_from= driver= rung= metrics=
for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
        --export|-o) export_to=${args[i + 1]} ;;
        --import|-i) import_from=${args[i + 1]} ;;
        --metrics) metrics=${args[i + 1]} ;;
        --run) rung=${args[i + 1]}; driver=${args[i - 1]} ;;
    esac
done
if [[ -n $import_from ]]; then
    cat "$import_from"
    exit
fi
[[ -n $export_to && -n $driver && -n $rung && -n $metrics ]] || {
    echo "==ERROR== fake-ncu: not a command line scripts/ncu-run.sh gives: $*" >&2; exit 2; }
for m in smsp__warps_launched.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum \
         l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum \
         smsp__sass_branch_targets_threads_divergent.sum; do
    [[ ,$metrics, == *",$m,"* ]] || { echo "==ERROR== fake-ncu: $m was not asked for" >&2; exit 2; }
done
# the CPU backend's model of the same rung: the twin of the driver in the manifest
# shellcheck source=scripts/programs.sh
source "$(dirname "$0")/../../scripts/programs.sh"
model=$(program_twin "$driver" emu)
echo "==PROF== Connected to process $$ ($driver)"
echo "== rung $rung (the stand-in ncu ran the CPU model: $model)"
EMU_PROFILE_QUIET=1 "$model" --tsv "$rung" | awk -F'\t' -v OFS=',' '
    function q(s) { return "\"" s "\"" }
    function sep(x,    s, out) {   # 1048576 -> 1,048,576
        s = sprintf("%.0f", x); out = ""
        while (length(s) > 3) {
            out = "," substr(s, length(s) - 2) out
            s = substr(s, 1, length(s) - 3)
        }
        return s out
    }
    function nv(name,    s) {  # "k<128, true>" -> "void k<(int)128, (bool)1>(float *)"
        s = name
        gsub(/true/, "(bool)1", s); gsub(/false/, "(bool)0", s)
        while (match(s, /[<, ][0-9]+[,>]/)) {
            s = substr(s, 1, RSTART) "(int)" substr(s, RSTART + 1)
        }
        return "void " s "(const float *, float *, int)"
    }
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    {
        n = split($c["kernels"], k, "+")
        print q("ID"), q("Process ID"), q("Process Name"), q("Host Name"), q("Kernel Name"),
              q("Context"), q("Stream"), q("Block Size"), q("Grid Size"), q("Device"), q("CC"),
              q("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
              q("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
              q("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
              q("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
              q("smsp__inst_executed_op_shared_ld.sum"),
              q("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
              q("smsp__inst_executed_op_shared_st.sum"),
              q("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
              q("smsp__sass_branch_targets_threads_divergent.sum"), q("smsp__warps_launched.sum")
        print q(""), q(""), q(""), q(""), q(""), q(""), q(""), q(""), q(""), q(""), q(""),
              q("request"), q("sector"), q("request"), q("sector"), q("inst"), q(""), q("inst"),
              q(""), q(""), q("warp")
        for (j = 1; j <= n; j++) {
            f = (j == 1)
            print q(j - 1), q("4242"), q("profile"), q("localhost"), q(nv(k[j])), q("1"), q("7"),
                  q("(32, 8, 1)"), q("(8, 8, 1)"), q("0"), q("9.0"),
                  q(sep(f * $c["gld_requests"])), q(sep(f * $c["gld_sectors"])),
                  q(sep(f * $c["gst_requests"])), q(sep(f * $c["gst_sectors"])),
                  q(sep(f * $c["shld_requests"])), q(sep(f * $c["shld_wavefronts"])),
                  q(sep(f * $c["shst_requests"])), q(sep(f * $c["shst_wavefronts"])),
                  q(sep(f * $c["divergent_branches"])), q(sep(f * $c["warps"]))
        }
    }' > "$export_to"
