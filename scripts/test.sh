#!/usr/bin/env bash
# run.sh: what `make test` runs after the set-up. Each step prints its own output; the last
# line is the tally. Exit status 0 only when every step passed.
#
#   1. every kernel file compiles with nvcc for every ARCH, warnings as errors
#   2. the harness's own Check tests
#   3. every grader links, against the starters and against the solutions
#   4. the CPU backend's own tests, and its profiler's; Nsight Compute's side of the profiler
#      from saved CSV samples and a dry run with a stand-in ncu (tests/ncu_table.sh)
#   5. both directions, on the CPU backend and on a GPU when one answers (scripts/judge.sh):
#      each solution passes its grader (every step of it), each starter fails it (no step
#      passes), and each known-bug kernel (tests/mutants/) fails its step, with the symptom its
#      patch names; make progress and the rows a grade keeps (tests/progress.sh); make bench's
#      comparison with the committed measurements (tests/regress.sh); make predict's model
#      (tests/predict.sh); GRADE_TRACE's
#      milestones (tests/trace.sh); the variables
#      a grade is given, checked before it builds (tests/vars.sh); the bound from outside on
#      every grader, and the partial rows of a grade cut short (tests/bound.sh); the judge's
#      schedule on a GPU, where what it times runs alone (tests/judge.sh); kernel files that
#      define what the grader's libraries define, refused (tests/symbols.sh); objects rebuilt
#      from content, not times (tests/stamps.sh); the measured designs kept as patches still
#      apply to their steps (tests/probe_patches.sh)
#   6. isolation (tests/isolation.c): a hanging, a crashing, a NaN-, Inf- and unwritten-output,
#      and an overrunning kernel each fail one test of a demo grader, which goes on and keeps
#      its results file row by row; on the CPU backend, and on a GPU when one answers; and the
#      watch of chapter 06's graders (tests/watch.c), on the CPU backend
#   7. `make sanitize`'s plumbing (tests/sanitize.sh): compute-sanitizer log summaries, the CPU
#      backend's instrumented run (a solution clean, a known-bug kernel caught), and a dry run
#      of the GPU side with a stand-in for compute-sanitizer
#   8. the plots from the committed measurements, build/book.pdf, and the lessons' measured
#      numbers against the data (tests/lessons.sh: make lessons-check); make report's PDF for one
#      step on the CPU backend, and its refusals (tests/report.sh)
#
# The graders run here write their per-test rows to build/test-grade.tsv (GRADE_TSV), started
# fresh each run, so that build/grade.tsv stays what `make grade` wrote.
set -uo pipefail
make_=${MAKE:-make}
# the builds run a job a processor (make's own -j; the graders' verdicts stay independent)
jobs=-j$(nproc 2>/dev/null || echo 1)
counts=build/test-counts.tsv
mkdir -p build
: > "$counts"
export GRADE_TSV=build/test-grade.tsv
: > "$GRADE_TSV"
passed=0 failed=0 failures=()

# each step ends with its time and the time since the start: where a long run spends it
started=$SECONDS
took() { # took SINCE: "-- 12 s (at 3 min 4 s)"
    local all=$((SECONDS - started))
    echo "-- $((SECONDS - $1)) s (at $((all / 60)) min $((all % 60)) s)"
}

step() { # step NAME COMMAND...: run a step, count it
    local name=$1 t0=$SECONDS; shift
    echo
    echo "== $name"
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)); failures+=("$name")
        echo "== FAILED: $name"
    fi
    took "$t0"
}

# shellcheck source=scripts/bound.sh
source scripts/bound.sh

checks() { # checks NAME COMMAND...: a Check program; its own tests are tallied from $counts. A
    # program (not a make) runs bounded from outside, as every grader does (scripts/bound.sh).
    local name=$1 t0=$SECONDS; shift
    echo
    echo "== $name"
    local before run=()
    before=$(wc -l < "$counts")
    [[ $1 == "$make_" ]] || run=(bounded "$1")
    if ! GRADE_COUNTS=$counts "${run[@]}" "$@"; then
        echo "== FAILED: $name"
        failures+=("$name")
        # a program that died before its tally still counts as one failure
        [[ $(wc -l < "$counts") -gt $before ]] || failed=$((failed + 1))
    fi
    took "$t0"
}

# judged BACKEND: the one rule (scripts/judge.sh) over every grader make built for BACKEND: each
# solution passes, each starter fails, each known-bug kernel fails with its symptom; its
# verdicts are tallied one by one
judged() {
    local b=$1 out tally t0=$SECONDS
    $make_ --no-print-directory -s build/programs.tsv
    # each line to stderr as it comes, through the descriptor itself: `tee /dev/stderr` would
    # open the file anew where stderr is one (make test > log 2>&1), truncating what came before
    out=$(scripts/judge.sh "$b" | while IFS= read -r line || [[ -n $line ]]; do
        printf '%s\n' "$line" >&2
        printf '%s\n' "$line"
    done)
    tally=$(tail -n 1 <<<"$out")
    if [[ $tally =~ ^judge:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        passed=$((passed + BASH_REMATCH[1])); failed=$((failed + BASH_REMATCH[2]))
        ((BASH_REMATCH[2] == 0)) || failures+=("graders on $b")
    else
        failed=$((failed + 1)); failures+=("the judge on $b")
    fi
    took "$t0"
}

step "compile every kernel file for sm_${ARCH:-75 80 86 89 90} (nvcc, warnings as errors)" \
    $make_ --no-print-directory -s "$jobs" compile-all
# shellcheck source=scripts/probe.sh
source scripts/probe.sh
# the known-bug kernels compile for the GPU that answers, else for the newest SM version of
# ARCH (MUTANT_ARCH: the Makefile says why one is enough)
mutant_arch=$(last=; for a in ${ARCH:-75 80 86 89 90}; do last=$a; done; echo "$last")
if $make_ --no-print-directory -s build/cuda/probe && device=$(build/cuda/probe 2>/dev/null); then
    cc=$(probe_field "$device" cc)
    mutant_arch=${cc/./}
fi
step "build the harness tests and every grader (starters and solutions; the known-bug kernels for sm_$mutant_arch)" \
    $make_ --no-print-directory -s "$jobs" gpu-build MUTANT_ARCH="$mutant_arch"
checks "harness tests" build/cuda/tests/harness

echo
echo "(the CPU backend's tests provoke errors on purpose: the emu: lines below are expected)"
checks "the CPU backend's own tests" $make_ --no-print-directory -s emu-test
checks "the CPU backend's profiler: sectors, wavefronts, divergence, bounds" \
    $make_ --no-print-directory -s emu-profile-test
step "build every grader and known-bug kernel for the CPU backend" \
    $make_ --no-print-directory -s "$jobs" B=emu SIDES="chapters solutions" CHAPTERS="$CHAPTERS_ALL" \
    graders mutants build/emu/tests/isolation build/emu/tests/watch
# every grader of the manifest says it is what the manifest says (the build told it: ident.h)
described() {
    local program kind chapter name backend path side out bad=0 n=0
    while IFS=$'\t' read -r program kind chapter name backend path; do
        [[ $program == grade ]] || continue
        case $kind in
            solution) side=solutions ;;
            starter) side=chapters ;;
            *) side="mutant $name" ;;
        esac
        out=$("$path" --describe 2>&1)
        if [[ $out != *$'chapter\t'"$chapter"$'\n'*$'side\t'"$side"$'\n'*$'backend\t'"$backend"$'\n'*$'modes\tgrade'* ]]; then
            echo "$path --describe:"; echo "$out"; bad=$((bad + 1))
        fi
        n=$((n + 1))
    done < build/programs.tsv
    echo "$n graders described themselves, $bad of them not as the manifest says"
    ((n > 0 && bad == 0))
}

step "every grader describes itself as the manifest says (--describe)" described
step "make progress reads the ladder from the results; make grade keeps what it does not regrade" \
    tests/progress.sh
step "make grade refuses a bad CH, STEP, SOLUTIONS, BACKEND or SEED before it builds" tests/vars.sh
step "a bench's rows against the committed ones: a rung 5% slower flagged, with both clocks" \
    tests/regress.sh
step "make predict's model on inputs whose answers are worked out by hand" tests/predict.sh
step "every grader's tolerance from graders/tolerance.h, none over twice its derivation" \
    tests/tolerance.sh
step "GRADE_TRACE: each test's milestones, in its judge and its runner" tests/trace.sh
step "every grade is bounded from outside; a grade cut short is marked partial" tests/bound.sh
step "the judge on a GPU runs what it times alone, the rest several at a time" tests/judge.sh
step "a kernel file that defines a function of the grader's libraries is refused" tests/symbols.sh
step "objects rebuild from content: a file put back with an older time is rebuilt" tests/stamps.sh
step "the designs the lessons measure, kept as patches, still apply to their steps" \
    tests/probe_patches.sh
step "the profiler's Nsight Compute side: CSV samples, a dry run with a stand-in ncu" \
    tests/ncu_table.sh

echo
echo "== both directions on the CPU backend"
judged emu

checks "isolation: a hang, a crash, NaN, Inf, an unwritten element, an overrun (emu)" \
    build/emu/tests/isolation
checks "the watch of chapter 06's graders: what is made, released, left live, reset (emu)" \
    build/emu/tests/watch
step "make sanitize: log summaries, the CPU backend, a dry run of the GPU side" tests/sanitize.sh

echo
echo "== both directions on a GPU"
if device=$(build/cuda/probe); then
    echo "GPU: $(probe_describe "$device")"
    judged cuda
    step "build the isolation demo for the GPU" \
        $make_ --no-print-directory -s build/cuda/tests/isolation
    checks "isolation: a hang, a crash, NaN, Inf, an unwritten element, an overrun (cuda)" \
        build/cuda/tests/isolation
else
    echo "no GPU answered: $device; this part runs where one does"
fi

step "plots from the committed measurements" $make_ --no-print-directory -s plots
step "the book" $make_ --no-print-directory -s book
step "the book holds every chapter and its figure" tests/book.sh
step "the lessons' measured numbers come from the data (make lessons-check)" tests/lessons.sh
step "make report: one step's PDF on the CPU backend; a bad CH or STEP refused" tests/report.sh

# Check programs' own tallies
while IFS=$'\t' read -r _ _ p f; do
    passed=$((passed + p)); failed=$((failed + f))
done < "$counts"

echo
if ((${#failures[@]})); then
    echo "failed: ${failures[*]}"
fi
echo "test: $passed passed, $failed failed"
[[ $failed -eq 0 && ${#failures[@]} -eq 0 ]]
