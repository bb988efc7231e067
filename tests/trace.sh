#!/usr/bin/env bash
# trace.sh: GRADE_TRACE=FILE, on the CPU backend: a grade of chapter 11's step 1 (its solution)
# writes each test's milestones to FILE, in its judge and in its runner, and every test that
# starts ends. Fails with what it saw.
set -uo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"
grader=build/emu/solutions/11-mixed-precision/grade
[[ -x $grader ]] || { echo "FAIL  $grader is not built"; exit 1; }
GRADE_TRACE=$tmp/trace GRADE_STEP=1 GRADE_TSV=$tmp/grade.tsv "$grader" > "$tmp/out" 2>&1
rc=$?
out=$(cat "$tmp/trace" 2>/dev/null)
expect "the grade passes, traced" "^0$" "$rc"
expect "a test's start" "^[0-9]+\.[0-9]{6} solo [0-9]+ test 0: test start$" "$out"
expect "the judge forks its runner" " judge [0-9]+ test [0-9]+: forked its runner$" "$out"
expect "the runner hands its run over" \
    " runner [0-9]+ test [0-9]+: ran the code under grading" "$out"
expect "the judge's check" \
    " judge [0-9]+ test [0-9]+: checked: waiting for the runner's end$" "$out"
starts=$(grep -c ': test start$' <<<"$out")
ends=$(grep -c ': test end$' <<<"$out")
expect "every test that starts ends ($starts started, $ends ended)" "^[1-9][0-9]* [1-9][0-9]*$" \
    "$([[ $starts == "$ends" ]] && echo "$starts $ends")"
# the runner is another process than its judge
pids=$(awk '$2 == "judge" { j[$3] = 1 } $2 == "runner" { r[$3] = 1 }
    END { for (p in r) if (p in j) { print "shared " p; exit } print "apart" }' <<<"$out")
expect "runner and judge are two processes" "^apart$" "$pids"
exit $fail
