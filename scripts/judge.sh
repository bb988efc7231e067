#!/usr/bin/env bash
# judge.sh BACKEND [CHAPTER...]: the one rule every grader is held to, for `make test` and for a
# visit to a GPU (scripts/gpu-run.sh): every solution passes its grader, every starter fails it
# (by failing tests, not by crashing), and every known-bug kernel fails it with the symptom its
# patch names.
#
# The graders are the manifest's (build/programs.tsv, which make writes; the Makefile says what its
# columns are): its rows of program "grade" for BACKEND (cuda or emu), of the chapters named, or
# of every chapter when none is. PROGRAMS=FILE reads another manifest of the same form
# (scripts/programs.sh).
#
# A known-bug kernel's patch may name its symptom, an extended regex that its grader's output
# must match: "Symptom-BACKEND: " where that backend shows it otherwise (a concept test on the CPU
# backend, the speed test on a GPU), else "Symptom: ".
#
# In a chapter with steps, the rule holds step by step: the solution passes every step (a step
# graded on a GPU only says SKIP on the CPU backend), and the starter passes none. A known-bug
# kernel's patch names the step it breaks ("Step: k"), and its grader grades that step alone
# (GRADE_STEP), which must fail; "Backends: cuda" marks a bug in a step that only a GPU grades
# (TMA, wgmma), judged there only. A grader that ran no test at all (every one skipped, saying
# why: chapter 12's on a machine of one GPU; it then says SKIP and exits 0) holds no solution to
# pass it and no starter or known-bug kernel to fail it, and the verdict line says so.
#
# One verdict line per binary ("ok    ..." or "FAIL  ...", with the grader's whole output before
# a FAIL), then "judge: N passed, N failed". Exit status 0 only when every binary was judged ok.
#   JUDGE_JOBS=n      graders run n at a time (default: 1 on a GPU; the number of processors on
#                     the CPU backend). On a GPU with n > 1, a grader whose verdict rests on a
#                     timing (every solution, and every known-bug kernel whose symptom there is a
#                     speed ratio, or that names none) runs alone, after the others: timings
#                     must not share the GPU, and the rest fail by what they compute whoever
#                     shares it. Lines stay in order, the alone ones last.
#   JUDGE_TIMEOUT=s   each grader's time limit in seconds (default: GRADE_LIMIT's, 1800); every
#                     grader runs bounded from outside (scripts/bound.sh), so that one stopped
#                     by the code it grades ends all the same
#   JUDGE_LOG=DIR     each grader's output also into DIR/KIND-CHAPTER[-NAME].log
#   JUDGE_KINDS="solution starter"   only those kinds (default: all three)
# The graders' per-test rows go to GRADE_TSV if set, else build/judge-grade.tsv: a judged
# known-bug kernel is no step of the learner's, so build/grade.tsv (make progress) never sees it.
set -uo pipefail
want=${1:?usage: scripts/judge.sh BACKEND [CHAPTER...]}
export GRADE_TSV=${GRADE_TSV:-build/judge-grade.tsv}
shift
# shellcheck source=scripts/programs.sh
source "$(dirname "$0")/programs.sh"
GRADE_LIMIT=${JUDGE_TIMEOUT:-${GRADE_LIMIT:-}}
# shellcheck source=scripts/bound.sh
source "$(dirname "$0")/bound.sh"
manifest=$programs
[[ -r $manifest ]] || { echo "judge: $manifest: no such manifest (make writes it with the graders)" >&2; exit 2; }
only=" $* "

rows=()
while IFS=$'\t' read -r program kind chapter name backend binary; do
    [[ $program == grade && $backend == "$want" ]] || continue
    [[ $# -eq 0 || $only == *" $chapter "* ]] || continue
    [[ " ${JUDGE_KINDS:-solution starter mutant} " == *" $kind "* ]] || continue
    if [[ $kind == mutant ]]; then # "Backends: cuda": a bug in a step graded on a GPU only
        on=$(sed -n 's/^Backends: *//p' "tests/mutants/$chapter/$name.patch" | head -n 1)
        [[ -z $on || " $on " == *" $want "* ]] || continue
    fi
    rows+=("$kind"$'\t'"$chapter"$'\t'"$name"$'\t'"$backend"$'\t'"$binary")
done < "$manifest"
if ((${#rows[@]} == 0)); then
    echo "judge: nothing to judge in $manifest for $want${*:+, $*}" >&2
    exit 2
fi

jobs=${JUDGE_JOBS:-}
if [[ -z $jobs ]]; then
    [[ $want == cuda ]] && jobs=1 || jobs=$(nproc 2>/dev/null || echo 1)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[[ -n ${JUDGE_LOG:-} ]] && mkdir -p "$JUDGE_LOG"

step_of() { # step_of PATCH: the step a known-bug kernel breaks ("Step: k"), or ""
    sed -n 's/^Step: *\([0-9][0-9]*\).*/\1/p' "$1" | head -n 1
}

run_one() { # run_one INDEX BINARY [STEP]: output, exit status and seconds into $tmp/INDEX.{out,rc,s}
    local rc t0=$SECONDS
    export GRADE_STEP=${3:-}
    if [[ ! -x $2 ]]; then # a grader the manifest names but make did not build
        echo "judge: $2 is not built (make builds it)" > "$tmp/$1.out"; echo 127 > "$tmp/$1.rc"
        return
    fi
    bounded "$2" "$2" > "$tmp/$1.out" 2>&1
    rc=$?
    echo "$rc" > "$tmp/$1.rc"
    echo $((SECONDS - t0)) > "$tmp/$1.s"
}

symptom_of() { # symptom_of PATCH BACKEND: the regex the output must match, or ""
    local s
    s=$(sed -n "s/^Symptom-$2: //p" "$1" | head -n 1)
    [[ -n $s ]] || s=$(sed -n 's/^Symptom: //p' "$1" | head -n 1)
    printf '%s' "$s"
}

passed=0 failed=0
verdict() { # verdict INDEX: judge row INDEX from its output
    local kind chapter name backend binary
    IFS=$'\t' read -r kind chapter name backend binary <<<"${rows[$1]}"
    local out rc first
    out=$(cat "$tmp/$1.out"); rc=$(cat "$tmp/$1.rc")
    if [[ -n ${JUDGE_LOG:-} ]]; then
        local log=$JUDGE_LOG/$kind-$chapter
        [[ $name != - ]] && log+=-$name
        cp "$tmp/$1.out" "$log.log"
    fi
    local timed_out=
    grep -q ": the grade did not end within" "$tmp/$1.out" && timed_out=" (stopped at the limit of $grade_limit s)"
    first=$(grep -m1 '^  FAIL  ' <<<"$out" | sed 's/^ *FAIL  //' | cut -c1-150)
    local ok=0 line steps_passed ran
    steps_passed=$(grep -Ec "^  [0-9]+ step [0-9]+ of [0-9]+  .* PASS  " <<<"$out")
    # a grader that ran no test here (each one skipped, saying why: chapter 12's on a machine of
    # one GPU; it says SKIP and exits 0) judges nothing: the solution is not held to pass it,
    # nor a starter or a known-bug kernel to fail it
    ran=$(grep -Ec '^  (PASS|FAIL)  ' <<<"$out")
    if [[ $rc -eq 0 && $ran -eq 0 ]] && grep -q '^  SKIP  ' <<<"$out"; then
        local who="$chapter: the starter"
        [[ $kind == mutant ]] && who="mutant $chapter/$name"
        [[ $kind == solution ]] && who="$chapter: the solution"
        kind=skipped
        line="$who is not graded here, every test skipped ($backend): $(grep -m1 '^  SKIP  ' <<<"$out" | sed 's/^ *SKIP  //' | cut -c1-120)"
    fi
    case $kind in
        skipped)
            ok=1 ;;
        solution)
            if [[ $rc -eq 0 ]]; then
                ok=1 line="$chapter: the solution passes ($backend)"
            else
                line="$chapter: the solution fails its grader ($backend, exit $rc$timed_out)"
            fi ;;
        starter)
            # a starter must fail by failing tests, not by crashing the grader itself
            if [[ $rc -eq 1 && $steps_passed -gt 0 ]]; then
                line="$chapter: the starter passes $steps_passed step(s) it should fail ($backend): $(grep -E "^  [0-9]+ step .* PASS  " <<<"$out" | head -n 3 | tr -s ' ')"
            elif [[ $rc -eq 1 ]] && grep -q "^$chapter  FAIL" <<<"$out"; then
                ok=1 line="$chapter: the starter fails ($backend): FAIL  $first"
            else
                line="$chapter: the starter does not fail its grader as it should ($backend, exit $rc$timed_out)"
            fi ;;
        mutant)
            local patch=tests/mutants/$chapter/$name.patch symptom
            symptom=$(symptom_of "$patch" "$backend")
            if [[ $rc -eq 1 ]] && grep -q '^  FAIL  ' <<<"$out"; then
                if [[ -z $symptom ]] || grep -Eq -- "$symptom" <<<"$out"; then
                    ok=1 line="mutant $chapter/$name fails ($backend): $first"
                else
                    line="mutant $chapter/$name fails, but not with its symptom /$symptom/ ($backend)"
                fi
            else
                line="mutant $chapter/$name passes its grader ($backend, exit $rc$timed_out): $(head -n 1 "$patch")"
            fi ;;
        *)
            line="$binary: unknown kind '$kind' in $manifest" ;;
    esac
    local secs
    secs=$(cat "$tmp/$1.s" 2>/dev/null)
    if ((ok)); then
        echo "ok    [${secs:-?} s] $line"; passed=$((passed + 1))
    else
        echo "$out"; echo "FAIL  [${secs:-?} s] $line"; failed=$((failed + 1))
    fi
}

# A speed verdict: what a symptom says when it is a ratio against a bound ("needs 1\.6x",
# "at most 1.10x", "at least 50%"); a symptom that says so of something else only costs time
SPEED_SYMPTOM='needs|at most|at least'

timed() { # timed INDEX: 0 when row INDEX's verdict rests on a timing (see JUDGE_JOBS)
    local kind chapter name symptom
    IFS=$'\t' read -r kind chapter name _ <<<"${rows[$1]}"
    case $kind in
        solution) return 0 ;;
        mutant)
            symptom=$(symptom_of "tests/mutants/$chapter/$name.patch" "$want")
            [[ -z $symptom ]] || grep -Eq -- "$SPEED_SYMPTOM" <<<"$symptom" ;;
        *) return 1 ;;
    esac
}

# The order the rows run in: as listed; on a GPU with jobs > 1, the timed ones last, each alone.
order=() alone=()
later=()
for ((i = 0; i < ${#rows[@]}; i++)); do
    if [[ $want == cuda ]] && ((jobs > 1)) && timed "$i"; then
        later+=("$i"); alone[i]=1
    else
        order+=("$i"); alone[i]=0
    fi
done
order+=("${later[@]}")

# up to $jobs graders at a time (an alone one by itself); verdicts printed in that order as
# they come in
pids=() next=0 n=${#order[@]}
for ((p = 0; p < n; p++)); do
    while ((next < n && next - p < jobs)); do
        # an alone grader starts only when every one before it has ended, and nothing starts
        # beside it
        ((next != p)) && ((alone[order[next]] || alone[order[p]])) && break
        r=${order[next]}
        IFS=$'\t' read -r kind_ chapter_ name_ _ binary <<<"${rows[$r]}"
        step_=
        [[ $kind_ == mutant ]] && step_=$(step_of "tests/mutants/$chapter_/$name_.patch")
        run_one "$r" "$binary" "$step_" &
        pids[r]=$!
        next=$((next + 1))
    done
    wait "${pids[order[p]]}"
    verdict "${order[p]}"
done
echo "judge: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
