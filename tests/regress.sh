#!/usr/bin/env bash
# regress.sh: scripts/regress.sh, the comparison of a bench's rows with the committed
# measurement of the same device and shape, on bench files written here by hand: a rung 10%
# slower is measured again (by a stand-in bench that writes the rows it is told to) and flagged
# with the clocks of all three runs when the second run is slower too (the clocks sampled
# while the row ran where the rows carry them, else the files' "# clocks:" lines), and not
# flagged when the second run is within 5%; one 3% slower is not measured again; a row the
# committed file lacks is reported as new; a second run that fails or lacks the row leaves the
# flag on the first measurement, and says so; the default second run is the chapter's grader
# from the manifest, `--bench FILE`; scripts/gpu-run.sh's rule: a regression fails the visit
# unless REGRESSION_OK=1; and --planted: a known-bug kernel's slow bench is flagged. Fails with
# what it saw.
set -uo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t=$'\t'
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"
exits() { # exits WHAT WANT GOT: the exit status GOT is WANT ("nonzero" for any but 0)
    if [[ $3 == "$2" || ($2 == nonzero && $3 != 0) ]]; then
        echo "ok    $1"
    else
        echo "FAIL  $1: exit status $3, not $2"; fail=1
    fi
}
fresh=$tmp/fresh/02-coalesced-transpose.tsv
mkdir -p "$tmp/data/h200" "$tmp/fresh"
header="chapter${t}kernel${t}shape${t}ms${t}gbs${t}gflops${t}device"
{
    echo "# device: NVIDIA H200"
    echo "# clocks: SM 1980 MHz median (1980-1980) over 99 samples while it ran; power 130 W mean"
    echo "$header"
    echo "02-coalesced-transpose${t}naive${t}8192x8192${t}1.000${t}540${t}0${t}NVIDIA H200"
    echo "02-coalesced-transpose${t}tiled${t}8192x8192${t}0.300${t}1630${t}0${t}NVIDIA H200"
    echo "02-coalesced-transpose${t}padded${t}8192x8192${t}0.150${t}3554${t}0${t}NVIDIA H200"
} > "$tmp/data/h200/02-coalesced-transpose.tsv"
{
    echo "# device: NVIDIA H200"
    echo "# clocks: SM 1755 MHz median (1755-1980) over 80 samples while it ran; power 300 W mean"
    echo "$header"
    echo "02-coalesced-transpose${t}naive${t}8192x8192${t}1.100${t}491${t}0${t}NVIDIA H200"
    echo "02-coalesced-transpose${t}tiled${t}8192x8192${t}0.309${t}1583${t}0${t}NVIDIA H200"
    echo "02-coalesced-transpose${t}padded${t}8192x8192${t}0.140${t}3800${t}0${t}NVIDIA H200"
    echo "02-coalesced-transpose${t}grouped${t}8192x8192${t}0.148${t}3600${t}0${t}NVIDIA H200"
    echo "02-coalesced-transpose${t}naive${t}8192x8192${t}2.000${t}270${t}0${t}NVIDIA A100"
} > "$tmp/fresh/02-coalesced-transpose.tsv"

# the stand-in bench: `bench CHAPTER FILE` writes the naive rung at $NAIVE_MS (none when it is
# empty) and the tiled one at 0.300 into FILE, after a clocks line, and notes in $RUNS each run
# and the rows GRADE_BENCH_ONLY asked for; BENCH_FAILS=1 makes it fail; ROW_CLOCKS=1 gives its
# rows the columns sm_mhz and watts (1410 MHz, 690 W)
cat > "$tmp/bench" <<'STANDIN'
#!/usr/bin/env bash
printf '%s %s [%s]\n' "$1" "$(basename "$2")" "${GRADE_BENCH_ONLY//$'\t'/ }" >> "$RUNS"
[[ ${BENCH_FAILS:-0} == 1 ]] && { echo "bench: no GPU answered" >&2; exit 1; }
t=$'\t' c=
[[ ${ROW_CLOCKS:-0} == 1 ]] && c="${t}1410${t}690"
{
    echo "# device: NVIDIA H200"
    echo "# clocks: SM 1500 MHz median (1500-1500) over 50 samples while it ran; power 90 W mean"
    echo "chapter${t}kernel${t}shape${t}ms${t}gbs${t}gflops${t}device${c:+${t}sm_mhz${t}watts}"
    [[ -n ${NAIVE_MS:-} ]] &&
        echo "$1${t}naive${t}8192x8192${t}$NAIVE_MS${t}500${t}0${t}NVIDIA H200$c"
    echo "$1${t}tiled${t}8192x8192${t}0.300${t}1630${t}0${t}NVIDIA H200$c"
} > "$2"
STANDIN
chmod +x "$tmp/bench"
export RUNS=$tmp/runs REGRESSION_REMEASURE=$tmp/bench
: > "$RUNS"

# measured again, and slower again: flagged, with the clocks of the three runs
out=$(REGRESSION_DATA=$tmp/data NAIVE_MS=1.090 scripts/regress.sh "$fresh")
rc=$?
expect "a rung 10% slower is flagged" \
    "^SLOWER +02-coalesced-transpose +naive +8192x8192 +1.000 -> 1.100 ms \\(\\+10.0%\\)" "$out"
expect "after a second run, slower too" \
    "1.100 ms \\(\\+10.0%\\), re-measured 1.090 ms \\(\\+9.0%\\)$" "$out"
expect "it says the row is measured again" "1 row\\(s\\) more than 5% slower: measuring" "$out"
expect "with the committed run's clocks" "committed .*: SM 1980 MHz median" "$out"
expect "and this run's" "this run: SM 1755 MHz median" "$out"
expect "and the second run's" "re-measured: SM 1500 MHz median" "$out"
refute "a rung 3% slower is not flagged" "SLOWER.*tiled" "$out"
refute "a faster rung is not flagged" "SLOWER.*padded" "$out"
expect "a row the committed file lacks is new" "^new +02-coalesced-transpose +grouped" "$out"
expect "a device no committed file holds is unmatched" "^unmatched .*NVIDIA A100" "$out"
expect "the tally" "2 rows within 5% of the committed, 1 slower$" "$out"
exits "a regression exits 1" 1 "$rc"
expect "the chapter's bench ran, asked for the slower row alone" \
    "^02-coalesced-transpose again.tsv \\[naive 8192x8192\\]$" "$(cat "$RUNS")"
expect "once" "^1$" "$(wc -l < "$RUNS")"

# measured again, and within 5% the second time: not flagged
out=$(REGRESSION_DATA=$tmp/data NAIVE_MS=1.010 scripts/regress.sh "$fresh")
rc=$?
expect "a row within 5% the second time is noise" \
    "^noise +02-coalesced-transpose +naive .*re-measured 1.010 ms \\(\\+1.0%\\): within 5%" "$out"
refute "and not flagged" "^SLOWER" "$out"
expect "the tally counts it" \
    "3 rows within 5% of the committed, 0 slower \\(1 slower at first, within 5% when" "$out"
exits "noise alone exits 0" 0 "$rc"

# a second run that fails, or that lacks the row: the first measurement flags it, and says so
out=$(REGRESSION_DATA=$tmp/data BENCH_FAILS=1 scripts/regress.sh "$fresh")
rc=$?
expect "a failed second run is said" "measuring 02-coalesced-transpose again failed.*no GPU" "$out"
expect "and the row is flagged on one measurement" \
    "^SLOWER +02-coalesced-transpose +naive .*not re-measured: flagged on one measurement" "$out"
exits "and it exits 1" 1 "$rc"
out=$(REGRESSION_DATA=$tmp/data NAIVE_MS= scripts/regress.sh "$fresh")
rc=$?
expect "a second run without the row: flagged on the first" \
    "^SLOWER +02-coalesced-transpose +naive .*not in the second run: flagged" "$out"
exits "and it exits 1" 1 "$rc"
: > "$RUNS"
out=$(REGRESSION_DATA=$tmp/data REGRESSION_REMEASURE=none scripts/regress.sh "$fresh")
rc=$?
expect "REGRESSION_REMEASURE=none: no second run" "REGRESSION_REMEASURE=none" "$out"
expect "and none ran" "^0$" "$(wc -l < "$RUNS")"
exits "and the row is flagged" 1 "$rc"

# the default second run: the chapter's grader for the GPU from the manifest (PROGRAMS),
# `--bench FILE` under scripts/clocks.sh; the solution's unless SIDE=chapters names the
# learner's
mkdir -p "$tmp/bin"
for kind in solution starter; do
    ms=1.002
    [[ $kind == starter ]] && ms=1.200
    printf '#!/usr/bin/env bash\n[[ $1 == --bench ]] || exit 2\nNAIVE_MS=%s %s %s "$2"\n' \
        "$ms" "$tmp/bench" 02-coalesced-transpose > "$tmp/bin/$kind"
    chmod +x "$tmp/bin/$kind"
done
{
    echo "program${t}kind${t}chapter${t}name${t}backend${t}path"
    echo "grade${t}solution${t}02-coalesced-transpose${t}-${t}cuda${t}$tmp/bin/solution"
    echo "grade${t}starter${t}02-coalesced-transpose${t}-${t}cuda${t}$tmp/bin/starter"
} > "$tmp/programs.tsv"
out=$(REGRESSION_REMEASURE='' PROGRAMS=$tmp/programs.tsv REGRESSION_DATA=$tmp/data SIDE='' \
      scripts/regress.sh "$fresh")
rc=$?
expect "by default the solution's grader measures again" \
    "^noise +02-coalesced-transpose +naive .*re-measured 1.002 ms" "$out"
exits "and it exits 0" 0 "$rc"
out=$(REGRESSION_REMEASURE='' PROGRAMS=$tmp/programs.tsv REGRESSION_DATA=$tmp/data \
      SIDE=chapters scripts/regress.sh "$fresh")
rc=$?
expect "SIDE=chapters: the learner's grader measures again" \
    "^SLOWER +02-coalesced-transpose +naive .*re-measured 1.200 ms \\(\\+20.0%\\)" "$out"
expect "under scripts/clocks.sh, whose line it shows" "re-measured: (SM|not sampled)" "$out"
exits "and it exits 1" 1 "$rc"
out=$(REGRESSION_REMEASURE='' PROGRAMS=$tmp/none.tsv REGRESSION_DATA=$tmp/data SIDE='' \
      scripts/regress.sh "$fresh")
rc=$?
expect "no grader built: said" "no solution grader of 02-coalesced-transpose built" "$out"
exits "and the row is flagged" 1 "$rc"

# rows that carry the clocks sampled while each ran (columns sm_mhz and watts, after device):
# a flagged row shows its own clocks in all three runs, not the files' lines; where the
# committed row lacks them (a file from before), the files' lines as above
mkdir -p "$tmp/rowdata/h200" "$tmp/rowfresh"
rowfresh=$tmp/rowfresh/02-coalesced-transpose.tsv
row() { # row KERNEL MS GBS SM_MHZ WATTS: a row of chapter 02 at 8192x8192 on the H200
    echo "02-coalesced-transpose${t}$1${t}8192x8192${t}$2${t}$3${t}0${t}NVIDIA H200${t}$4${t}$5"
}
{
    echo "# device: NVIDIA H200"
    echo "# clocks: SM 1980 MHz median (1980-1980) over 99 samples while it ran; power 130 W mean"
    echo "$header${t}sm_mhz${t}watts"
    row naive 1.000 540 1980 402
    row tiled 0.250 1950 NA NA
} > "$tmp/rowdata/h200/02-coalesced-transpose.tsv"
{
    echo "# device: NVIDIA H200"
    echo "# clocks: SM 1755 MHz median (1410-1980) over 80 samples while it ran; power 300 W mean"
    echo "$header${t}sm_mhz${t}watts"
    row naive 1.100 491 1455 NA
    row tiled 0.400 1200 1500 600
} > "$rowfresh"
out=$(REGRESSION_DATA=$tmp/rowdata NAIVE_MS=1.090 ROW_CLOCKS=1 REGRESSION_TOLERANCE=5 \
      scripts/regress.sh "$rowfresh")
rc=$?
expect "per-row clocks: the row is flagged" "^SLOWER +02-coalesced-transpose +naive .*re-measured" \
    "$out"
expect "with the committed row's own clocks" \
    "committed .*: SM 1980 MHz, 402 W while the row ran$" "$out"
expect "and this run's row's, the power not read said" \
    "this run: SM 1455 MHz, power not read while the row ran$" "$out"
expect "and the second run's row's" "re-measured: SM 1410 MHz, 690 W while the row ran$" "$out"
naive=$(sed -n '/^SLOWER .* naive /,/re-measured:/p' <<<"$out")
refute "not the files' lines" "median" "$naive"
expect "a committed row with NA clocks: the files' lines" "committed .*: SM 1980 MHz median" "$out"
expect "and this run's file's" "this run: SM 1755 MHz median" "$out"
expect "both rows flagged" "2 slower$" "$out"
exits "and it exits 1" 1 "$rc"
out=$(REGRESSION_DATA=$tmp/data NAIVE_MS=1.090 ROW_CLOCKS=1 scripts/regress.sh "$rowfresh")
expect "a committed file without the columns: the files' lines" \
    "this run: SM 1755 MHz median" "$out"
refute "and no row's clocks" "while the row ran" "$out"

# the rest with a second run as slow as the first
export NAIVE_MS=1.090
out=$(REGRESSION_DATA=$tmp/data REGRESSION_TOLERANCE=15 scripts/regress.sh "$fresh")
rc=$?
refute "REGRESSION_TOLERANCE=15: nothing flagged" "SLOWER" "$out"
exits "no regression exits 0" 0 "$rc"

# a file no committed file shares a name with: every row new, exit 0
cp "$fresh" "$tmp/fresh/99-none.tsv"
out=$(REGRESSION_DATA=$tmp/data scripts/regress.sh "$tmp/fresh/99-none.tsv")
rc=$?
expect "a bench with no committed file: every row new" "99-none.tsv: no committed" "$out"
exits "and it exits 0" 0 "$rc"

# gpu-run.sh's rule (scripts/gpu-run.sh, regression_verdict): fails the visit, unless
# REGRESSION_OK=1
out=$(REGRESSION_DATA=$tmp/data REGRESSION_ONLY=1 scripts/gpu-run.sh "$tmp/fresh" 2>&1)
rc=$?
expect "gpu-run.sh prints the flags" "SLOWER +02-coalesced-transpose +naive" "$out"
exits "gpu-run.sh fails on a regression" nonzero "$rc"
out=$(REGRESSION_DATA=$tmp/data REGRESSION_ONLY=1 REGRESSION_OK=1 scripts/gpu-run.sh "$tmp/fresh" \
    2>&1)
rc=$?
expect "REGRESSION_OK=1 says it was allowed" "REGRESSION_OK=1" "$out"
exits "REGRESSION_OK=1 lets it pass" 0 "$rc"
# the planted slowdown (--planted OUTDIR): the known-bug kernel's grader from the manifest
# benches, the comparison flags it (exit 0); a grader as fast as the committed rows is not
# flagged (exit 1); none built: exit 2
printf '#!/usr/bin/env bash\n[[ $1 == --bench ]] || exit 2\nNAIVE_MS=$PLANT_MS %s %s "$2"\n' \
    "$tmp/bench" 02-coalesced-transpose > "$tmp/bin/mutant"
chmod +x "$tmp/bin/mutant"
echo "grade${t}mutant${t}02-coalesced-transpose${t}slow${t}cuda${t}$tmp/bin/mutant" \
    >> "$tmp/programs.tsv"
out=$(PROGRAMS=$tmp/programs.tsv REGRESSION_DATA=$tmp/data PLANTED_MUTANT=slow PLANT_MS=3.000 \
      scripts/regress.sh --planted "$tmp/planted" 2>&1)
rc=$?
expect "--planted: the known-bug kernel's rung flagged after a second run" \
    "^SLOWER +02-coalesced-transpose +naive .*1.000 -> 3.000 ms .*re-measured 3.000 ms" "$out"
expect "--planted: it says it is caught" "the planted slowdown is caught: 1 rung" "$out"
exits "--planted: caught exits 0" 0 "$rc"
out=$(PROGRAMS=$tmp/programs.tsv REGRESSION_DATA=$tmp/data PLANTED_MUTANT=slow PLANT_MS=1.000 \
      scripts/regress.sh --planted "$tmp/planted" 2>&1)
rc=$?
expect "--planted: a kernel as fast as the committed is not flagged, and says so" \
    "NOT flagged" "$out"
exits "--planted: not caught exits 1" 1 "$rc"
out=$(PROGRAMS=$tmp/programs.tsv REGRESSION_DATA=$tmp/data PLANTED_MUTANT=none \
      scripts/regress.sh --planted "$tmp/planted" 2>&1)
rc=$?
expect "--planted: no grader built, said" "no grader of the known-bug kernel" "$out"
exits "--planted: exits 2" 2 "$rc"
exit "$fail"
