#!/usr/bin/env bash
# ncu_table.sh: Nsight Compute's side of `make profile BACKEND=cuda` and `make calibrate`,
# tested without a GPU (make test runs it):
#   1. scripts/ncu-table.awk on saved CSV samples (tests/ncu/*.csv, in ncu's two layouts; their
#      counts are the model's, not measurements): the table is tests/ncu/transpose-raw.table
#      exactly, and its "total:" lines are the model's own for the same kernels; both layouts
#      sum the same; a missing metric and a file that is not ncu's fail, naming what is wrong
#   2. a dry run of both commands with a stand-in ncu (tests/ncu/fake-ncu.sh, which answers
#      with the model's counts) and a stand-in GPU: every rung of chapter 02 profiled and
#      tabled; a calibration table with its header, 15 rows a rung, every ratio 1, and a rung
#      whose kernels differ on the two sides left out
#   3. without a GPU or without ncu, BACKEND=cuda and the calibration say so and fail, and
#      BACKEND=auto runs the model
# Needs the profile drivers of chapter 02's solution (make profile-build, which make test's
# gpu-build step includes).
set -uo pipefail
make_=${MAKE:-make}
status=0
ok()   { echo "ok    $*"; }
fail() { echo "FAIL  $*"; status=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
table=scripts/ncu-table.awk
fake="$PWD/tests/ncu/fake-ncu.sh"
ch=02-coalesced-transpose

# ---- 1. the CSV samples --------------------------------------------------------------------
if awk -f scripts/kernel-name.awk -f $table tests/ncu/transpose-raw.csv > "$tmp/raw.table" &&
   diff -u tests/ncu/transpose-raw.table "$tmp/raw.table" > "$tmp/diff"; then
    ok "ncu-table.awk: the raw layout's table is tests/ncu/transpose-raw.table"
else
    fail "ncu-table.awk: the raw layout's table differs:"; cat "$tmp/diff"
fi
# the model's total lines for the same rungs: the same words and numbers
# shellcheck source=scripts/programs.sh
source scripts/programs.sh
model=$(program_path profile solution "$ch" - emu)
if [[ -x $model ]]; then
    for r in naive tiled; do
        KERNEL=$r "$model" | grep '^    total:'
    done > "$tmp/model.totals"
    grep '^    total:' "$tmp/raw.table" > "$tmp/ncu.totals"
    if [[ -s $tmp/model.totals ]] && cmp -s "$tmp/model.totals" "$tmp/ncu.totals"; then
        ok "ncu-table.awk: its total lines are the model's, word for word, for the same counts"
    else
        fail "ncu-table.awk: its total lines differ from the model's:"
        diff "$tmp/model.totals" "$tmp/ncu.totals"
    fi
else
    fail "no $model (make profile-build builds it)"
fi
awk -f scripts/kernel-name.awk -f $table -v mode=sum -v rung=r tests/ncu/transpose-raw.csv > "$tmp/raw.sum"
awk -f scripts/kernel-name.awk -f $table -v mode=sum -v rung=r tests/ncu/transpose-details.csv > "$tmp/details.sum"
want=$'r\t2\t1024\t4096\t16384\t4096\t73728\t2048\t65536\t2048\t2048\t0\ttranspose_naive_kernel+transpose_tiled_kernel'
if [[ $(sed -n 2p "$tmp/raw.sum") == "$want" ]] && cmp -s "$tmp/raw.sum" "$tmp/details.sum"; then
    ok "ncu-table.awk: both layouts (thousands separators, a Ksector unit) sum to the same row"
else
    fail "ncu-table.awk: the sums differ from the expected row:"; cat "$tmp/raw.sum" "$tmp/details.sum"
fi
grep -v smsp__warps_launched tests/ncu/transpose-details.csv > "$tmp/short.csv"
if ! awk -f scripts/kernel-name.awk -f $table "$tmp/short.csv" > /dev/null 2> "$tmp/err" && grep -q smsp__warps_launched.sum "$tmp/err"; then
    ok "ncu-table.awk: a missing metric fails, naming it"
else
    fail "ncu-table.awk: a CSV without smsp__warps_launched.sum did not fail as it should: $(cat "$tmp/err")"
fi
# the occupancy and stall metrics, where collected: one line a launch, the three largest stalls
# first; a launch without them prints none (the table above has no such line)
{ cat tests/ncu/transpose-details.csv
  pre='"0","4242","profile","127.0.0.1","transpose_naive_kernel(const float *, float *, int, int)","1","7","(32, 8, 1)","(8, 8, 1)","0","9.0","Command line profiler metrics"'
  printf '%s,"%s","%s","%s"\n' "$pre" sm__warps_active.avg.pct_of_peak_sustained_active "%" 48.25 \
      "$pre" gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed "%" 77.7 \
      "$pre" sm__throughput.avg.pct_of_peak_sustained_elapsed "%" 12.4 \
      "$pre" smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio "" 0.5 \
      "$pre" smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio "" 20.83 \
      "$pre" smsp__average_warps_issue_stalled_wait_per_issue_active.ratio "" 1.25 \
      "$pre" smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio "" 0.14
} > "$tmp/occ.csv"
awk -f scripts/kernel-name.awk -f $table "$tmp/occ.csv" > "$tmp/occ.table" 2> "$tmp/err"
want_occ='    occupancy and stalls: achieved occupancy 48.2% of peak; throughput SM 12%, DRAM 78% of peak; stalls per issued instruction: long_scoreboard 20.83, wait 1.25, barrier 0.50'
if [[ $(grep -c 'occupancy and stalls' "$tmp/occ.table") -eq 1 ]] &&
   [[ $(grep 'occupancy and stalls' "$tmp/occ.table") == "$want_occ" ]]; then
    ok "ncu-table.awk: achieved occupancy, throughput and the top three stalls, for the launch that has them only"
else
    fail "ncu-table.awk: the occupancy and stalls line is not the expected one:"; grep -A1 total "$tmp/occ.table"; cat "$tmp/err"
fi
printf '==ERROR== the user does not have permission\n' > "$tmp/none.csv"
if ! awk -f scripts/kernel-name.awk -f $table "$tmp/none.csv" > /dev/null 2> "$tmp/err" && grep -q "no Nsight Compute CSV header" "$tmp/err"; then
    ok "ncu-table.awk: a file that is not ncu's CSV fails, saying so"
else
    fail "ncu-table.awk: a file without a header did not fail as it should"
fi

# ---- 2. dry runs with a stand-in ncu and GPU ----------------------------------------------
# the stand-in GPU answers as build/cuda/probe does: a header line and a row of tab-separated
# fields (harness/probe.c)
printf '#!/bin/sh\nprintf "name\\tcc\\tsms\\tdriver\\tcuda_driver\\truntime\\tmemory_mib\\tl2_kib\\n"\nprintf "Stand-in GPU\\t9.0\\t132\\tnot-a-driver\\t0.0\\t0.0\\t0\\t0\\n"\n' \
    > "$tmp/probe"
chmod +x "$tmp/probe"
export GPU_PROBE=$tmp/probe
out=$(NCU=$fake $make_ --no-print-directory -s profile CH=02 SOLUTIONS=1 BACKEND=cuda 2>&1); rc=$?
kernels=$(grep -c '^  kernel void transpose_.*_kernel(' <<<"$out")
if [[ $rc -eq 0 && $kernels -eq 7 ]] && grep -q '^# 02-coalesced-transpose (solutions), Nsight Compute on Stand-in GPU' <<<"$out"; then
    ok "make profile BACKEND=cuda, dry run: chapter 02's 7 rungs under the stand-in ncu, a table each"
else
    fail "make profile BACKEND=cuda, dry run (exit $rc, $kernels kernel tables):"; echo "$out"
fi
# on a GPU machine that builds nothing: MAKE=false would fail the run if it were called
one=$(NO_BUILD=1 MAKE=false NCU=$fake CHAPTERS=$ch PROFILE_CHAPTERS=$ch SIDE=solutions BACKEND=cuda \
      KERNEL=padded scripts/profile.sh 2>&1); rc=$?
if [[ $rc -eq 0 ]] && [[ $(grep -c '^  kernel void transpose_padded_kernel(' <<<"$one") -eq 1 ]]; then
    ok "scripts/profile.sh NO_BUILD=1 KERNEL=padded, dry run: one rung, nothing built"
else
    fail "scripts/profile.sh NO_BUILD=1 KERNEL=padded, dry run (exit $rc):"; echo "$one"
fi
emu_totals=$($make_ --no-print-directory -s profile CH=02 SOLUTIONS=1 BACKEND=emu | grep '^    total:')
if [[ -n $emu_totals && $(grep '^    total:' <<<"$out") == "$emu_totals" ]]; then
    ok "make profile BACKEND=cuda, dry run: the total lines are BACKEND=emu's (the stand-in answers with the model)"
else
    fail "make profile BACKEND=cuda, dry run: the total lines are not the model's"
fi
cal=$tmp/calibration.tsv
NCU=$fake PROFILE_CHAPTERS=$ch scripts/calibrate.sh "$cal" > "$tmp/cal.out" 2>&1; rc=$?
rows=$(grep -c "^$ch	" "$cal" 2>/dev/null)
bad=$(awk -F'\t' -v c=$ch '$1 == c && $7 != "1.000"' "$cal" 2>/dev/null | head -n 3)
if [[ $rc -eq 0 && $rows -eq 105 && -z $bad ]] && grep -q '^# device: Stand-in GPU$' "$cal" &&
   grep -q '^# driver: not-a-driver, CUDA driver 0.0, runtime 0.0$' "$cal" && grep -q '^# date: ' "$cal" &&
   grep -q $'^chapter\trung\tkernel\tmetric\tmodel\tncu\tratio$' "$cal" &&
   grep -q $'^02-coalesced-transpose\tpadded\ttranspose_padded_kernel\tshared_load_wavefronts_per_request\t1.0000\t1.0000\t1.000$' "$cal"
then
    ok "calibrate, dry run: device, driver and date, 15 rows for each of chapter 02's 7 rungs, ratio 1 throughout"
else
    fail "calibrate, dry run (exit $rc, $rows rows; ratios not 1: $bad):"; cat "$tmp/cal.out"; head -n 12 "$cal" 2>/dev/null
fi
# the join refuses two different kernels
printf 'kernel\tlaunches\twarps\tgld_requests\tgld_sectors\tgst_requests\tgst_sectors\tshld_requests\tshld_wavefronts\tshst_requests\tshst_wavefronts\tdivergent_branches\tkernels\n' > "$tmp/m.tsv"
cp "$tmp/m.tsv" "$tmp/n.tsv"
printf 'k\t1\t8\t1\t4\t1\t4\t0\t0\t0\t0\t0\tk<64, 64, true>\n' >> "$tmp/m.tsv"
printf 'k\t1\t8\t1\t4\t1\t4\t0\t0\t0\t0\t0\tk<(int)128, (int)64, (bool)1>\n' >> "$tmp/n.tsv"
awk -f scripts/kernel-name.awk -f scripts/calibration.awk -v chapter=c -v rung=k "$tmp/m.tsv" "$tmp/n.tsv" > "$tmp/rows" 2> "$tmp/err"; rc=$?
if [[ $rc -eq 3 && ! -s $tmp/rows ]] && grep -q "not compared" "$tmp/err"; then
    ok "calibration.awk: a rung whose kernels differ on the two sides is not compared"
else
    fail "calibration.awk: k<64, ...> was joined with k<(int)128, ...> (exit $rc)"
fi
sed -i 's/(int)128/(int)64/' "$tmp/n.tsv"
if awk -f scripts/kernel-name.awk -f scripts/calibration.awk -v chapter=c -v rung=k "$tmp/m.tsv" "$tmp/n.tsv" > "$tmp/rows" 2>&1 &&
   [[ $(wc -l < "$tmp/rows") -eq 15 ]]; then
    ok "calibration.awk: k<64, 64, true> and Nsight Compute's k<(int)64, (int)64, (bool)1> are one kernel"
else
    fail "calibration.awk: the same kernel in the two spellings was not joined: $(cat "$tmp/rows")"
fi

# ---- 3. no GPU, no ncu ---------------------------------------------------------------------
export GPU_PROBE=false
out=$(NCU=/nonexistent/ncu $make_ --no-print-directory -s profile CH=02 BACKEND=cuda 2>&1); rc=$?
if [[ $rc -ne 0 ]] && grep -q "no GPU answered" <<<"$out" && grep -q "NCU=/nonexistent/ncu is not an executable" <<<"$out"; then
    ok "make profile BACKEND=cuda without a GPU and ncu: says both, fails"
else
    fail "make profile BACKEND=cuda without a GPU and ncu (exit $rc):"; echo "$out"
fi
out=$(NCU=/nonexistent/ncu $make_ --no-print-directory -s profile CH=02 KERNEL=naive 2>&1); rc=$?
if [[ $rc -eq 0 ]] && grep -q "instrumented emu build" <<<"$out"; then
    ok "make profile (BACKEND=auto) without a GPU: the model"
else
    fail "make profile (BACKEND=auto) without a GPU did not run the model (exit $rc):"; echo "$out"
fi
out=$(GPU_PROBE="echo Stand-in GPU" NCU=/nonexistent/ncu scripts/calibrate.sh "$tmp/none.tsv" 2>&1); rc=$?
if [[ $rc -ne 0 && ! -e $tmp/none.tsv ]] && grep -q "NCU=/nonexistent/ncu is not an executable" <<<"$out"; then
    ok "calibrate without ncu: says so, writes nothing, fails"
else
    fail "calibrate without ncu (exit $rc):"; echo "$out"
fi
exit $status
