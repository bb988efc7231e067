#!/usr/bin/env bash
# progress.sh: `make progress` (scripts/progress.sh) on a results file written here by hand,
# and the rule `make grade` keeps in build/grade.tsv (scripts/grade.sh): a grade replaces the
# rows of what it grades and keeps the others. Fails with what it saw.
set -uo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t=$'\t'
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"
{
    echo "chapter${t}backend${t}side${t}step${t}test${t}verdict${t}message${t}seed"
    echo "04-shared-memory-tiling${t}emu${t}chapters${t}1${t}correct 1x1x1${t}PASS${t}${t}7"
    echo "04-shared-memory-tiling${t}emu${t}chapters${t}1/6${t}32x32 shared tile${t}PASS${t}ok${t}7"
    echo "04-shared-memory-tiling${t}emu${t}chapters${t}2/6${t}1D register blocking${t}FAIL${t}wrong${t}7"
    echo "04-shared-memory-tiling${t}emu${t}chapters${t}3/6${t}2D register blocking${t}PASS${t}ok${t}7"
    echo "01-naive-matmul${t}emu${t}chapters${t}-${t}correct 1x1x1${t}PASS${t}${t}7"
    echo "06-error-checking${t}emu${t}chapters${t}-${t}a test${t}FAIL${t}no${t}7"
} > "$tmp/grade.tsv"
out=$(scripts/progress.sh "$tmp/grade.tsv")
expect "a chapter with steps: the steps passed of all, each step's verdict" \
    "04-shared-memory-tiling +chapters +emu +2 of 6 steps  1 PASS  2 FAIL  3 PASS  4 ----  5 ----  6 ----" "$out"
expect "a chapter graded whole" "01-naive-matmul +chapters +emu +PASS \\(graded whole\\)" "$out"
expect "a chapter graded whole that failed" "06-error-checking +chapters +emu +FAIL" "$out"
out=$(scripts/progress.sh "$tmp/none.tsv")
expect "nothing graded yet" "nothing graded yet" "$out"

# the rule `make grade` keeps (progress.sh --drop, which scripts/grade.sh runs): a grade of
# step 2 of chapter 04 drops that step's rows only; a grade of chapter 04 all of its rows; the
# other chapters' rows stay
cp "$tmp/grade.tsv" "$tmp/step2.tsv"
scripts/progress.sh --drop "$tmp/step2.tsv" "04-shared-memory-tiling" chapters emu 2
out=$(cat "$tmp/step2.tsv")
expect "STEP=2 keeps step 1's rows" "1/6${t}32x32 shared tile" "$out"
if grep -q "1D register blocking" <<<"$out"; then
    echo "FAIL  STEP=2 kept step 2's old row"; fail=1
else
    echo "ok    STEP=2 drops step 2's old row"
fi
cp "$tmp/grade.tsv" "$tmp/whole.tsv"
scripts/progress.sh --drop "$tmp/whole.tsv" "02-coalesced-transpose 04-shared-memory-tiling" chapters emu
out=$(cat "$tmp/whole.tsv")
if grep -q "04-shared" <<<"$out"; then
    echo "FAIL  a grade of chapter 04 kept its old rows"; fail=1
else
    echo "ok    a grade of chapter 04 drops all its old rows"
fi
expect "and keeps the other chapters'" "01-naive-matmul" "$out"
expect "and the header" "^chapter${t}backend" "$out"
cp "$tmp/grade.tsv" "$tmp/other.tsv"
scripts/progress.sh --drop "$tmp/other.tsv" "04-shared-memory-tiling" solutions emu
expect "a grade of the solutions keeps the chapters' rows" "1/6" "$(cat "$tmp/other.tsv")"
exit $fail
