#!/usr/bin/env bash
# grade.sh [--bench|--tune]: what `make grade` (and `make bench`, `make tune`) run after the
# set-up.
# Chooses the backend, builds the graders of the chosen chapters, runs each one (a crash in one
# does not stop the others) and prints an overall line. Exit status 0 only when all passed.
# Environment, from the Makefile: CHAPTERS, CHAPTERS_ALL, CH, STEP, SIDE, BACKEND, MAKE.
# STEP=k grades step k of the one chapter CH names. The variables were checked before anything
# was built (make check-vars: scripts/vars.sh); they are checked again here, before build/grade.tsv
# is touched. Each grader runs bounded from outside (scripts/bound.sh: GRADE_LIMIT, GRADE_GRACE),
# and one that is cut short leaves its rows marked partial. GRADE_TSV names another results file
# than build/grade.tsv, as it does for the graders.
set -uo pipefail

mode=grade
case ${1:-} in
    --bench) mode=bench ;;
    --tune) mode=tune ;;
esac
make_=${MAKE:-make}
scripts/vars.sh check || exit 2
# shellcheck source=scripts/bound.sh
source scripts/bound.sh

if [[ -z ${CHAPTERS// } ]]; then
    echo "$mode: no chapter matches CH=$CH. The chapters are:" >&2
    for c in $CHAPTERS_ALL; do echo "    $c   (make $mode CH=${c%%-*})" >&2; done
    exit 2
fi

step=${STEP:-}
if [[ -n $step ]]; then
    if [[ ! $step =~ ^[1-9][0-9]?$ ]]; then
        echo "$mode: STEP=$step: a step is a number: make grade CH=04 STEP=3" >&2
        exit 2
    fi
    read -ra chosen <<< "$CHAPTERS"
    if [[ $mode != grade || ${#chosen[@]} -ne 1 ]]; then
        echo "$mode: STEP=$step needs one chapter: make grade CH=04 STEP=$step" >&2
        exit 2
    fi
fi

# ---- backend -------------------------------------------------------------------------------
backend=$BACKEND
# shellcheck source=scripts/backend.sh
source scripts/backend.sh
if choose_backend "$mode"; then
    [[ $backend == cuda ]] && echo "$mode: GPU: $device"
elif [[ $mode == grade ]]; then
    echo "grade: grading on the CPU backend: your kernels run on this processor, their" \
         "results are graded for real on smaller shapes, and speed is graded on a GPU only."
fi
if [[ $mode != grade && $backend != cuda ]]; then
    echo "$mode: timings on the CPU backend are not GPU timings; \`make $mode\` needs a GPU" >&2
    exit 1
fi
# ---- build ---------------------------------------------------------------------------------
echo "$mode: building the $SIDE of ${CHAPTERS// /, } for the $backend backend"
$make_ --no-print-directory -s graders B="$backend" SIDES="$SIDE" CHAPTERS="$CHAPTERS" || {
    echo "$mode: the build failed; the compiler's messages above name the file and line" >&2
    exit 1
}
# shellcheck source=scripts/programs.sh
source scripts/programs.sh
kind=$(side_kind "$SIDE")
if [[ $mode == tune ]]; then
    # only chapters whose grader has a tuning mode, as each grader says (--describe)
    tunable=
    for c in $CHAPTERS; do
        [[ " $(grader_modes "$(program_path grade "$kind" "$c" - "$backend")") " == *" tune "* ]] &&
            tunable+=" $c"
    done
    if [[ -z $tunable ]]; then
        echo "tune: none of ${CHAPTERS// /, } has configurations to tune" >&2
        exit 2
    fi
    CHAPTERS=${tunable# }
fi

# ---- run -----------------------------------------------------------------------------------
mkdir -p build/results
counts=build/$backend/grade-counts.tsv
# build/grade.tsv: the verdicts, test by test, written as each test ends, and a row a step.
# A grade replaces the rows of what it grades (these chapters, or this one step, on this side
# and backend) and keeps the rest, so that `make progress` shows the whole ladder climbed.
results=${GRADE_TSV-build/grade.tsv}
if [[ $mode == grade && -n $results ]]; then
    if [[ -s $results && $(head -1 "$results") == *$'\tstep\t'* ]]; then
        scripts/progress.sh --drop "$results" "$CHAPTERS" "$SIDE" "$backend" "$step"
    else
        : > "$results"
    fi
fi
: > "$counts"
# On a GPU, one process holds a CUDA context while the graders run (`probe --hold`, which ends
# with this script): each test makes two contexts, and with one held each takes about 0.01 s
# instead of 0.25 (the H200's host).
if [[ $backend == cuda && -x build/cuda/probe ]]; then
    build/cuda/probe --hold > /dev/null 2>&1 &
    holder=$!
fi
passed=0 failed=0 unjudged=0
for c in $CHAPTERS; do
    bin=$(program_path grade "$kind" "$c" - "$backend")
    echo
    if [[ $mode == bench ]]; then
        bounded "$c" env GRADE_COUNTS="$counts" "$bin" --bench "build/results/$c.tsv"
    elif [[ $mode == tune ]]; then
        bounded "$c" env GRADE_COUNTS="$counts" "$bin" --tune "build/results/$c-tune.tsv"
    else
        graded "$c" "$results" "$counts" "$step" "$SIDE" "$backend" \
            env GRADE_COUNTS="$counts" GRADE_STEP="$step" "$bin"
    fi
    if [[ $? -ne 0 ]]; then
        failed=$((failed + 1))
    elif [[ $mode == grade ]] && awk -F'\t' -v c="$c" '$1 == c { last = $3 + $4 } END { exit !(last == 0) }' "$counts"; then
        unjudged=$((unjudged + 1)) # every test skipped, saying why: nothing graded here
    else
        passed=$((passed + 1))
    fi
done
[[ -n ${holder:-} ]] && kill "$holder" 2>/dev/null
echo
total=$((passed + failed + unjudged))
if [[ $mode == tune ]]; then
    echo "tune: $passed of $total chapters tuned; tables in build/results/*-tune.tsv (add its rows to solutions/CHAPTER/tune.tsv, where each device reads only the rows that name it)"
elif [[ $mode == bench ]]; then
    echo "bench: $passed of $total chapters measured; rows in build/results/ (make plots draws from them)"
else
    echo "grade: $passed of $total chapters passed ($SIDE, $backend backend)$( ((unjudged)) && echo "; $unjudged not graded on this machine (every test skipped, saying why)")"
    if [[ -n $results ]]; then
        echo
        scripts/progress.sh "$results"
    fi
fi
[[ $failed -eq 0 ]]
