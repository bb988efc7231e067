#!/usr/bin/env bash
# predict.sh: make predict's model (scripts/predict.awk) on hand-written inputs whose answers
# are worked out here: a rung bound by DRAM, one by L1 lines (its counts scaled from a smaller
# shape), one by its launches, a grid of one block that leaves an SM idle, the SM clock read
# off the bench's "# clocks:" line (500 MHz, against the table's 1000) or off the row's own
# sm_mhz column where it has one, and the error summary.
# Fails with what it saw.
set -uo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t=$'\t'
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"
{   # 2 SMs at 1000 MHz, 100 GB/s: every rate a round number
    echo "name${t}value${t}unit${t}source"
    for row in "sms 2" "clock 1000" "dram 100" "fp32_fma 128" "issue 4" "shared 1" "l1 1" \
        "l2_store 1" "atomic 1" "launch 5" "bf16_mma_sync 1000" "bf16_peak 1000"; do
        read -r n v <<<"$row"
        echo "$n$t$v${t}u${t}a test's own"
    done
} > "$tmp/ceilings.tsv"
cols="kernel launches warps gld_requests gld_sectors gst_requests gst_sectors shld_requests"
cols+=" shld_wavefronts shst_requests shst_wavefronts divergent_branches divergent_per_warp"
cols+=" global_load_width global_store_width global_atomic_ops"
count_row() { # count_row RUNG SHAPE SMALL THREADS then the values of $cols in order
    local r=$1 s=$2 sm=$3 th=$4; shift 4
    local IFS=$t
    echo "02-test${t}$r${t}$s${t}$sm${t}$th${t}$*"
}
{
    printf 'chapter\trung\tshape\tsmall\tthreads\t%s\n' "$(tr ' ' '\t' <<<"$cols")"
    # dram: 1e8 bytes at 100 GB/s = 1 ms; 16 blocks of 256 threads fill both SMs
    count_row dram 1000 1000 256 k 1 128 0 0 0 0 0 0 0 0 0 0 16 16 0
    # l1: 4e6 scalar loads of 32 sectors each (uncoalesced), counted on a shape 4 times
    # smaller: 1.6e7 requests x 32 lines over 2 SMs x 5e8 lines/s = 512 ms
    count_row l1 4000 1000 256 k 1 128 4000000 128000000 0 0 0 0 0 0 0 0 4 4 0
    # launch: 1000 launches of 5 us = 5 ms
    count_row launch 1000 1000 256 k 1000 128 0 0 0 0 0 0 0 0 0 0 4 4 0
    # one block (8 warps of 256 threads): 1e6 requests x 32 lines on one SM at 5e8 = 64 ms
    count_row oneblock 1000 1000 256 k 1 8 1000000 32000000 0 0 0 0 0 0 0 0 4 4 0
} > "$tmp/counts.tsv"
{
    echo "# clocks: SM 500 MHz median (500-500) over 9 samples while it ran; power 1 W mean"
    echo "chapter${t}kernel${t}shape${t}ms${t}gbs${t}gflops${t}device"
    echo "02-test${t}dram${t}1000${t}2${t}50${t}0${t}X"
    echo "02-test${t}l1${t}4000${t}256${t}0.001${t}0${t}X"
    echo "02-test${t}launch${t}1000${t}5${t}0.001${t}0${t}X"
    echo "02-test${t}oneblock${t}1000${t}64${t}0.001${t}0${t}X"
    echo "02-test${t}unknown${t}1000${t}1${t}1${t}0${t}X"
} > "$tmp/bench.tsv"
out=$(awk -f scripts/predict.awk "$tmp/ceilings.tsv" "$tmp/counts.tsv" "$tmp/bench.tsv" 2>&1)
rc=$?
expect "the model runs" "^0$" "$rc"
expect "a DRAM-bound rung: 1e8 bytes at 100 GB/s is 1 ms, half the 2 ms measured" \
    "^02-test${t}dram${t}1000${t}1${t}2${t}0\.50${t}dram${t}1${t}0\.50$" "$out"
expect "an L1-bound rung, its counts scaled 4x, at the bench's clock: 512 ms, 2x the 256 measured" \
    "^02-test${t}l1${t}4000${t}512${t}256${t}2\.00${t}l1${t}" "$out"
expect "a launch-bound rung: 1000 launches of 5 us" \
    "^02-test${t}launch${t}1000${t}5${t}5${t}1\.00${t}launch${t}" "$out"
expect "one block: one SM's rate, 64 ms" \
    "^02-test${t}oneblock${t}1000${t}64${t}64${t}1\.00${t}l1${t}" "$out"
refute "a rung without counts is left out" "^02-test${t}unknown" "$out"
summary="^# 4 rows: the model's median absolute error 25\.0%, "
summary+="worst 02-test/(dram 1000|l1 4000) off 2\.00x$"
expect "the summary: the median error of 0.5, 1, 0 and 0 is 25%, the worst rung 2x off" \
    "$summary" "$out"
expect "rows off by more than 2x: none (2.00x is not more)" \
    "^# rows the model misses by more than 2x: 0$" "$out"
# the summary and the misses as tables (-v summary=, -v misses_file=), with one rung 4x off
sed 's/^\(02-test\tlaunch\t1000\t\)5\t/\120\t/' "$tmp/bench.tsv" > "$tmp/bench4.tsv"
mkdir -p "$tmp/predict"
awk -v summary="$tmp/predict/summary.tsv" -v misses_file="$tmp/predict/misses.tsv" \
    -f scripts/predict.awk "$tmp/ceilings.tsv" "$tmp/counts.tsv" "$tmp/bench4.tsv" > /dev/null
s=$(cat "$tmp/predict/summary.tsv" 2>/dev/null)
expect "summary.tsv: the rows" "^model${t}rows${t}4$" "$s"
expect "summary.tsv: the median error of 0.5, 1, 0 and 0.75 is 62.5%" \
    "^model${t}median_error_pct${t}62\.50$" "$s"
expect "summary.tsv: the worst row 4x off" "^model${t}worst_off${t}4\.000$" "$s"
expect "summary.tsv: one row off by more than 2x" "^model${t}misses_2x${t}1$" "$s"
expect "summary.tsv: the roofline beside it" "^roofline${t}median_error_pct${t}" "$s"
m=$(cat "$tmp/predict/misses.tsv" 2>/dev/null)
expect "misses.tsv: the launch-bound rung, 5 ms predicted for 20 measured" \
    "^02-test${t}launch${t}1000${t}5${t}20${t}0\.25${t}launch$" "$m"
expect "misses.tsv: that row alone" "^2$" "$(wc -l <<<"$m")"
# the appendix: each marker line replaced by its table, the rest as it was
printf '%s\n' "# A" "" "text" "<!-- predict: ceilings -->" "<!-- predict: errors -->" \
    "<!-- predict: misses -->" > "$tmp/template.md"
mkdir -p "$tmp/data" && cp "$tmp/ceilings.tsv" "$tmp/data/ceilings.tsv"
PREDICT_DATA=$tmp/data PREDICT_OUT=$tmp/predict/predict.tsv \
    scripts/predict.sh --appendix "$tmp/template.md" "$tmp/appendix.md"
expect "the appendix is written" "^0$" "$?"
a=$(cat "$tmp/appendix.md" 2>/dev/null)
expect "the text around the markers stays" "^text$" "$a"
refute "no marker is left" "<!-- predict" "$a"
expect "the ceilings: a row each, value, unit and source" \
    "^\| \`dram\` \| 100 \| u \| a test's own \|$" "$a"
expect "the errors: the median of both models" "^\| median absolute error \| 62\.5% \| " "$a"
expect "the errors: the rows off by more than 2x" "^\| rows off by more than 2x \| 1 \| " "$a"
expect "the misses: the launch-bound rung" \
    "^\| 02 launch \| 1000 \| 5 \| 20 \| 0\.25 \| launch \|$" "$a"
PREDICT_DATA=$tmp/none PREDICT_OUT=$tmp/predict/predict.tsv \
    scripts/predict.sh --appendix "$tmp/template.md" "$tmp/appendix2.md" 2>/dev/null
expect "without the ceilings the appendix is refused" "^1$" "$?"

# a row's own clock (its sm_mhz column) over the file's line: the L1-bound rung at 250 MHz
# takes twice the 512 ms; a row whose clock was not sampled (NA) takes the line's 500 MHz
{
    echo "# clocks: SM 500 MHz median (250-500) over 9 samples while it ran; power 1 W mean"
    echo "chapter${t}kernel${t}shape${t}ms${t}gbs${t}gflops${t}device${t}sm_mhz${t}watts"
    echo "02-test${t}l1${t}4000${t}256${t}0.001${t}0${t}X${t}250${t}700"
    echo "02-test${t}oneblock${t}1000${t}64${t}0.001${t}0${t}X${t}NA${t}NA"
} > "$tmp/bench-rows.tsv"
out=$(awk -f scripts/predict.awk "$tmp/ceilings.tsv" "$tmp/counts.tsv" "$tmp/bench-rows.tsv" 2>&1)
expect "a row's own SM clock: the L1-bound rung at 250 MHz, 1024 ms" \
    "^02-test${t}l1${t}4000${t}1024${t}256${t}4\.00${t}l1${t}" "$out"
expect "a row not sampled: the file's line, 64 ms" \
    "^02-test${t}oneblock${t}1000${t}64${t}64${t}1\.00${t}l1${t}" "$out"
# and the clock column of one file is not taken for the next, which has none
out=$(awk -f scripts/predict.awk "$tmp/ceilings.tsv" "$tmp/counts.tsv" "$tmp/bench-rows.tsv" \
      "$tmp/bench.tsv" 2>&1)
expect "a file without the column after one with it: its line's clock" \
    "^02-test${t}l1${t}4000${t}512${t}256${t}2\.00${t}l1${t}" "$out"

# a table without the SM count is refused
grep -v '^sms' "$tmp/ceilings.tsv" > "$tmp/bad.tsv"
out=$(awk -f scripts/predict.awk "$tmp/bad.tsv" "$tmp/counts.tsv" "$tmp/bench.tsv" 2>&1)
rc=$?
expect "a ceilings table without sms is refused" "lacks sms, clock or dram" "$out"
expect "and exits 1" "^1$" "$rc"
exit $fail
