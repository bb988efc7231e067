#!/usr/bin/env bash
# regress.sh: scripts/regress.sh, the comparison of a bench's rows with the committed
# measurement of the same device and shape, on bench files written here by hand: a rung 10%
# slower is flagged with both runs' clocks, one 3% slower is not, a row the committed file
# lacks is reported as new; and scripts/gpu-run.sh's rule: a regression fails the visit unless
# REGRESSION_OK=1. Fails with what it saw.
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

out=$(REGRESSION_DATA=$tmp/data scripts/regress.sh "$fresh")
rc=$?
expect "a rung 10% slower is flagged" \
    "^SLOWER +02-coalesced-transpose +naive +8192x8192 +1.000 -> 1.100 ms \\(\\+10.0%\\)" "$out"
expect "with the committed run's clocks" "committed .*: SM 1980 MHz median" "$out"
expect "and this run's" "this run: SM 1755 MHz median" "$out"
refute "a rung 3% slower is not flagged" "SLOWER.*tiled" "$out"
refute "a faster rung is not flagged" "SLOWER.*padded" "$out"
expect "a row the committed file lacks is new" "^new +02-coalesced-transpose +grouped" "$out"
expect "a device no committed file holds is unmatched" "^unmatched .*NVIDIA A100" "$out"
expect "the tally" "2 rows within 5% of the committed, 1 slower" "$out"
exits "a regression exits 1" 1 "$rc"

# no regression: exit 0; a tolerance of 15% lets the 10% through
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
exit "$fail"
