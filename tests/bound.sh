#!/usr/bin/env bash
# bound.sh: every grade is bounded from outside (scripts/bound.sh), and one cut short is marked
# partial. Stand-in graders, small scripts: one whose test stops it (kill(getppid(), SIGSTOP),
# which no limit of its own survives), one that stops its whole process group (timeout's too),
# one killed by a signal, one that ends without its tally line; each must end within its bound
# and leave a PARTIAL row that make progress shows; one that ends as a grader does, and one that
# refuses to start, leave none. A few seconds. Fails with what it saw.
set -uo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t=$'\t'
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"
GRADE_LIMIT=1 GRADE_GRACE=1
# shellcheck source=scripts/bound.sh
source scripts/bound.sh

# a stand-in grader: records one test's row, then does what its name says
stub() { # stub NAME BODY
    printf '#!/usr/bin/env bash\nprintf "01-naive-matmul\\temu\\tchapters\\t-\\tcorrect 1x1x1\\tPASS\\t\\t7\\n" >> "$GRADE_TSV"\n%s\n' \
        "$2" > "$tmp/$1"
    chmod +x "$tmp/$1"
}
stub stops-parent "sh -c 'kill -STOP \$PPID'; sleep 60"
stub stops-group "sh -c 'kill -STOP 0'; sleep 60"
stub killed 'kill -KILL $$'
stub no-tally 'exit 1'
stub clean "printf '01-naive-matmul\\temu\\t0\\t1\\n' >> \"\$GRADE_COUNTS\"; exit 1"
printf '#!/usr/bin/env bash\nexit 2\n' > "$tmp/refuses"; chmod +x "$tmp/refuses"

run() { # run NAME [STEP]: the stand-in graded as make grade grades; its output, rc and seconds
    local t0=$SECONDS
    printf 'chapter\tbackend\tside\tstep\ttest\tverdict\tmessage\tseed\n' > "$tmp/$1.tsv"
    : > "$tmp/$1.counts"
    graded 01-naive-matmul "$tmp/$1.tsv" "$tmp/$1.counts" "${2:-}" chapters emu \
        env GRADE_TSV="$tmp/$1.tsv" GRADE_COUNTS="$tmp/$1.counts" "$tmp/$1" > "$tmp/$1.out" 2>&1
    echo "rc $? in $((SECONDS - t0)) s" >> "$tmp/$1.out"
}

run stops-parent
out=$(cat "$tmp/stops-parent.out")
expect "a grader its test stopped is stopped at the limit" \
    "01-naive-matmul: the grade did not end within 1 s and was stopped" "$out"
expect "within the limit and its grace" "rc 124 in [1-3] s" "$out"
expect "its rows are marked partial" \
    "^01-naive-matmul${t}emu${t}chapters${t}-${t}\(the grade was cut short\)${t}PARTIAL${t}stopped at the outer time limit of 1 s.*${t}7$" \
    "$(cat "$tmp/stops-parent.tsv")"
expect "make progress shows it partial, with the tests recorded" \
    "01-naive-matmul +chapters +emu +PARTIAL: the grade was cut short \(stopped at the outer time limit .*1 of 1 tests recorded passed" \
    "$(scripts/progress.sh "$tmp/stops-parent.tsv")"
refute "and not as a clean result" "PASS \(graded whole\)" "$(scripts/progress.sh "$tmp/stops-parent.tsv")"

run stops-group
expect "a grader that stopped timeout with it is killed from outside its group" \
    "did not end within 1 s(.|$)*" "$(cat "$tmp/stops-group.out")"
expect "a few seconds after the limit" "rc 137 in [1-7] s" "$(cat "$tmp/stops-group.out")"
expect "and its rows are marked partial" "PARTIAL" "$(cat "$tmp/stops-group.tsv")"
if pgrep -f "$tmp/stops-" > /dev/null; then
    echo "FAIL  a stopped stand-in outlived its bound: $(pgrep -af "$tmp/stops-")"; fail=1
else
    echo "ok    nothing outlives the bound"
fi

run killed
expect "a grader killed by a signal: partial, with the signal" "PARTIAL${t}the grader was killed by SIGKILL" \
    "$(cat "$tmp/killed.tsv")"
run no-tally
expect "a grader that ends without its final line: partial" \
    "PARTIAL${t}the grader ended \(exit status 1\) without its final line" "$(cat "$tmp/no-tally.tsv")"
run clean
refute "a grader that ends with its tally: no partial row" "PARTIAL" "$(cat "$tmp/clean.tsv")"
expect "and its status stays" "rc 1 in" "$(cat "$tmp/clean.out")"
run refuses
refute "a grader that refused to start: no partial row" "PARTIAL" "$(cat "$tmp/refuses.tsv")"

# STEP=2 cut short: the ladder shows step 2 partial, and a grade of step 2 drops the mark
run stops-parent 2
{
    cat "$tmp/stops-parent.tsv"
    echo "01-naive-matmul${t}emu${t}chapters${t}1/3${t}one${t}PASS${t}ok${t}7"
    echo "01-naive-matmul${t}emu${t}chapters${t}3/3${t}three${t}FAIL${t}no${t}7"
} > "$tmp/step.tsv"
expect "a step cut short shows PART in the ladder" "1 of 3 steps  1 PASS  2 PART  3 FAIL" \
    "$(scripts/progress.sh "$tmp/step.tsv")"
expect "with the reason" "step 2 PART: cut short \(stopped at the outer time limit" \
    "$(scripts/progress.sh "$tmp/step.tsv")"
scripts/progress.sh --drop "$tmp/step.tsv" 01-naive-matmul chapters emu 2
refute "a grade of that step drops the mark" "PARTIAL" "$(cat "$tmp/step.tsv")"
exit $fail
