#!/usr/bin/env bash
# gpu-run.sh OUTDIR: on a machine with a GPU, run what `make gpu-build` built, without
# rebuilding (the machine needs no Check, gnuplot or network): the probe, the harness tests, the
# isolation demo, the judge (scripts/judge.sh: every solution's grader must pass, every
# starter's must fail, every known-bug kernel's must fail with its symptom; a verdict line per
# grader and the closing count), every solution's bench (its file's header gets the SM clock
# and power sampled while it ran: scripts/clocks.sh), the tuning of chapters whose grader
# tunes (as it says with --describe), and with SANITIZE=1 every solution's grader under
# compute-sanitizer. The programs are found in build/programs.tsv.
#
# Everything goes to OUTDIR as it happens: one log (run.log), each grader's output
# (graders/KIND-CHAPTER[-NAME].log) and one table per bench or tuning run, so that a run cut
# short keeps what it finished. Each step, and each grader the judge runs, has a time limit.
#   CHAPTERS="02-... 04-..."   only these chapters (default: every one built)
#   SKIP_BENCH=1, SKIP_TUNE=1, SKIP_MUTANTS=1, SKIP_STARTERS=1   leave those steps out
#   BENCH_CHAPTERS="01-... 05-..."   bench (and tune) only these (default: the chapters run)
#   SANITIZE=1                 also the sanitizer record (scripts/sanitize.sh --record): each
#                              solution's grader, in quick mode, under compute-sanitizer's
#                              memcheck, racecheck, synccheck and initcheck, one step each, rows
#                              into OUTDIR/sanitize.tsv (commit it as plots/data/h200/sanitize.tsv)
#                              and logs under OUTDIR/sanitize/; then the canary, a known-bug kernel
#                              memcheck must catch (01's no-bounds-check). SANITIZE=only: only that
#   STEP_TIMEOUT=300           seconds for one step or one grader
#   JUDGE_JOBS=8               the judge's graders 8 at a time, those whose verdict rests on a
#                              timing alone, after the others (scripts/judge.sh). On the H200
#                              more graders at once buy little: each test creates two CUDA
#                              contexts (its judge's and its runner's), and those start one at
#                              a time. GRADE_TRACE measured a test's context and inputs at
#                              0.22 s alone and 1.6 s with six graders at once (two seconds a
#                              test against 0.4): chapter 07 whole, starter and 18 known-bug
#                              kernels, took 491 s at six at a time, its solution 175 s alone.
#                              Give JUDGE_TIMEOUT room for that (a grader stopped at its limit
#                              counts as passing, which fails a known-bug kernel's verdict)
#   PROBE=build/cuda/probe     the device check (a dry run without a GPU gives a stand-in)
# After the benches, each bench's rows are compared with the committed measurement of the same
# device and shape (scripts/regress.sh): a rung more than 5% slower is printed with both runs'
# clocks, and the visit exits 1 unless REGRESSION_OK=1 (a slowdown that is understood: a new
# driver, a lower clock, a rung changed on purpose).
#   REGRESSION_ONLY=1          only that comparison, over the benches already in OUTDIR
set -uo pipefail
out=${1:?usage: scripts/gpu-run.sh OUTDIR}
mkdir -p "$out"
log=$out/run.log
limit=${STEP_TIMEOUT:-300}
summary=()
note() { summary+=("$*"); echo "$*" | tee -a "$log"; }

# the benches in OUTDIR against the committed measurements: 0 when none is slower, or when
# REGRESSION_OK=1 allows it
regressions() {
    local files=() f rc
    for f in "$out"/[0-9][0-9]-*.tsv; do
        [[ -s $f && $f != *-tune.tsv ]] && files+=("$f")
    done
    [[ ${#files[@]} -gt 0 ]] || return 0
    echo "== the benches against the committed measurements" >> "$log"
    scripts/regress.sh "${files[@]}" 2>&1 | tee -a "$log" | grep -Ev '^(new|unmatched) '
    rc=${PIPESTATUS[0]}
    if [[ $rc -ne 0 && ${REGRESSION_OK:-0} == 1 ]]; then
        note "regressions: rungs more than 5% slower than committed (REGRESSION_OK=1: allowed)"
        return 0
    fi
    if [[ $rc -eq 0 ]]; then
        note "regressions: none"
    else
        note "regressions: rungs more than 5% slower than committed (REGRESSION_OK=1 allows it)"
    fi
    return "$rc"
}
if [[ ${REGRESSION_ONLY:-0} == 1 ]]; then
    regressions
    exit
fi
step() { # step TITLE COMMAND...: run with a time limit, output into the log
    local title=$1; shift
    echo "== $title" >> "$log"
    local t0=$SECONDS
    timeout "$limit" "$@" >> "$log" 2>&1
    local rc=$?
    note "$title: exit $rc$([[ $rc -eq 124 ]] && echo ' (timed out)') in $((SECONDS - t0)) s"
    return $rc
}

sanitize=${SANITIZE:-0}
{ ${PROBE:-build/cuda/probe} || { echo "no GPU answered"; exit 1; }
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv 2>&1
  date -u +%Y-%m-%dT%H:%MZ; } | tee -a "$log"

# shellcheck source=scripts/programs.sh
source scripts/programs.sh
chapters=${CHAPTERS:-$(awk -F'\t' '$1 == "grade" && $2 == "solution" && $5 == "cuda" { print $3 }' "$programs")}
if [[ $sanitize != only ]]; then
    [[ -x build/cuda/tests/harness ]] && step "harness tests" build/cuda/tests/harness
    [[ -x build/cuda/tests/isolation ]] && step "isolation: a hang, a crash, NaN, Inf, an unwritten element, an overrun" build/cuda/tests/isolation

    # the judge: every solution passes, every starter fails, every known-bug kernel fails with its
    # symptom; a verdict line per grader as it ends, each grader's output under graders/
    kinds="solution"
    [[ ${SKIP_STARTERS:-0} == 1 ]] || kinds+=" starter"
    [[ ${SKIP_MUTANTS:-0} == 1 ]] || kinds+=" mutant"
    echo "== the judge ($kinds)" >> "$log"
    # a CUDA context held while the graders run (scripts/grade.sh says why), ended after them
    build/cuda/probe --hold > /dev/null 2>&1 &
    holder=$!
    t0=$SECONDS
    JUDGE_KINDS=$kinds JUDGE_TIMEOUT=$limit JUDGE_LOG=$out/graders scripts/judge.sh cuda $chapters 2>&1 |
        tee -a "$log" | grep -E '^(ok|FAIL)  |^judge: '
    rc=${PIPESTATUS[0]}
    kill "$holder" 2>/dev/null
    note "the judge: $(tail -n 1 "$log") (exit $rc in $((SECONDS - t0)) s)"

    if [[ ${SKIP_BENCH:-0} != 1 ]]; then
        for c in ${BENCH_CHAPTERS:-$chapters}; do
            g=$(program_path grade solution "$c" - cuda) || continue
            modes=" $(grader_modes "$g") "
            [[ $modes == *" bench "* ]] && step "$c bench" scripts/clocks.sh "$out/$c.tsv" "$g" --bench "$out/$c.tsv"
            [[ $modes == *" tune "* && ${SKIP_TUNE:-0} != 1 ]] && step "$c tune" "$g" --tune "$out/$c-tune.tsv"
        done
    fi
fi

# the sanitizer record: one step per chapter and tool, each row on disk as its step ends; the
# tool's own time limit leaves the step time to write its row
if [[ $sanitize == 1 || $sanitize == only ]]; then
    inner=$((limit > 60 ? limit - 20 : limit))
    sanitize_env=(env SANITIZE_PREBUILT=1 BACKEND=cuda SIDE=solutions SANITIZE_OUT="$out/sanitize"
                  SANITIZE_TIMEOUT="$inner")
    for c in $chapters; do
        for tool in memcheck racecheck synccheck initcheck; do
            step "$c sanitize $tool" "${sanitize_env[@]}" CHAPTERS="$c" TOOLS="$tool" MUTANT= \
                scripts/sanitize.sh --record "$out/sanitize.tsv"
        done
    done
    step "sanitize canary: memcheck must catch 01-naive-matmul's no-bounds-check" \
        "${sanitize_env[@]}" CHAPTERS=01-naive-matmul TOOLS=memcheck MUTANT=no-bounds-check \
        scripts/sanitize.sh --record "$out/sanitize.tsv"
fi
regressed=0
if [[ $sanitize != only && ${SKIP_BENCH:-0} != 1 ]]; then
    regressions || regressed=1
fi
echo
printf '%s\n' "${summary[@]}"
exit "$regressed"
