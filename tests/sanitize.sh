#!/usr/bin/env bash
# sanitize.sh: the tests of `make sanitize`'s plumbing, without a GPU (scripts/test.sh runs them).
#
#   1. the summary of compute-sanitizer logs: the samples in tests/sanitize/ (written in the
#      tool's documented output format: "========= COMPUTE-SANITIZER" first, "========= ERROR
#      SUMMARY: N errors" last), clean, with errors of each tool, of two processes, and cut off
#   2. the CPU backend: chapter 02's solution is clean under the instrumented build, and its
#      known-bug kernel no-write-bounds-check (a transpose that stores past the end of `out`)
#      makes `make sanitize` fail, naming the illegal write
#   3. a dry run of the GPU side: scripts/sanitize.sh --record with a stand-in for
#      compute-sanitizer (tests/sanitize/fake-compute-sanitizer) over the CPU backend's
#      graders: the options it passes, quick mode, the verdicts, the exit status and the rows;
#      then scripts/gpu-run.sh SANITIZE=only, with a stand-in probe
# Exit status 0 only when every check passed.
set -uo pipefail
make_=${MAKE:-make}
samples=tests/sanitize
fake=$samples/fake-compute-sanitizer
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

ok() { echo "ok    $*"; passed=$((passed + 1)); }
bad() { echo "FAIL  $*"; failed=$((failed + 1)); }
# expect NAME STATUS PATTERN... -- COMMAND...: COMMAND exits STATUS ("nonzero": anything but
# 0) and its output matches every extended regex PATTERN
expect() {
    local name=$1 want=$2 patterns=() p out rc miss=
    shift 2
    while [[ $1 != -- ]]; do patterns+=("$1"); shift; done
    shift
    out=$("$@" 2>&1)
    rc=$?
    for p in "${patterns[@]}"; do
        grep -Eq -- "$p" <<<"$out" || miss+=" /$p/"
    done
    if { [[ $want == nonzero && $rc -ne 0 ]] || [[ $want == "$rc" ]]; } && [[ -z $miss ]]; then
        ok "$name"
    else
        echo "$out" | tail -n 30
        bad "$name (exit $rc, want $want${miss:+; no line matches$miss})"
    fi
}

echo "-- the summary of compute-sanitizer's logs"
sum=(scripts/sanitize.sh --summary)
expect "a clean memcheck log: 0 errors" 0 '^clean: 0 errors' -- "${sum[@]}" $samples/memcheck-clean.log
expect "memcheck errors: counted, leaks too, the first reports with their kernel and line" 1 \
    '^3 errors \(leaks: 4096 bytes leaked in 1 allocations\)' \
    'Invalid __global__ read of size 4 bytes  at matmul_kernel.* in matmul.cu:26' \
    'Program hit cudaErrorLaunchFailure' -- "${sum[@]}" $samples/memcheck-errors.log
expect "a summary per process: they add up" 1 '^1 error$' 'transpose.cu:40' \
    -- "${sum[@]}" $samples/memcheck-two-processes.log
expect "racecheck: its own summary counts where there is no ERROR SUMMARY" 1 '^1 error$' \
    'Race reported between Write access .*transpose.cu:62  and Read access .*transpose.cu:74' \
    -- "${sum[@]}" $samples/racecheck-errors.log
expect "synccheck errors" 1 '^1 error$' 'Barrier error detected.*reduce.cu:12' \
    -- "${sum[@]}" $samples/synccheck-errors.log
expect "initcheck errors" 1 '^1 error$' 'Uninitialized __global__ memory read.*pipeline.cu:41' \
    -- "${sum[@]}" $samples/initcheck-errors.log
expect "a log cut off before its summary is not clean" 3 '^no summary' 'transpose.cu:58' \
    -- "${sum[@]}" $samples/incomplete.log

echo
echo "-- the CPU backend (instrumented build)"
expect "make sanitize CH=02 BACKEND=emu SOLUTIONS=1: clean" 0 '^  memcheck +clean ' \
    '^  synccheck +clean ' 'no errors$' \
    -- $make_ --no-print-directory sanitize CH=02 BACKEND=emu SOLUTIONS=1 TOOLS="memcheck synccheck"
expect "make sanitize CH=02 BACKEND=emu MUTANT=no-write-bounds-check: fails, naming the write" \
    nonzero '^  memcheck +errors ' 'made an illegal write of 4 bytes .*step2_padded.cu:[0-9]+' \
    'not clean: 02-coalesced-transpose memcheck' \
    -- $make_ --no-print-directory sanitize CH=02 BACKEND=emu MUTANT=no-write-bounds-check \
    TOOLS="memcheck synccheck"
expect "racecheck and initcheck say they need a GPU, and alone check nothing" nonzero \
    '^  racecheck +needs a GPU' '^  initcheck +needs a GPU' 'nothing was checked' \
    -- $make_ --no-print-directory sanitize CH=02 BACKEND=emu SOLUTIONS=1 \
    TOOLS="racecheck initcheck"

echo
echo "-- a dry run of the GPU side, with a stand-in for compute-sanitizer"
dry=(env SANITIZER=$fake SANITIZE_PREBUILT=1 SANITIZE_ROWS=emu BACKEND=cuda
     SANITIZE_OUT=$tmp/logs SIDE=solutions CHAPTERS=02-coalesced-transpose MUTANT=)
$make_ --no-print-directory -s B=emu SIDES=solutions \
    CHAPTERS="01-naive-matmul 02-coalesced-transpose" graders mutants >/dev/null ||
    bad "the CPU backend's graders of chapters 01 and 02 do not build"
expect "every tool clean: exit 0" 0 '^  memcheck +clean ' '^  initcheck +clean ' \
    'no errors; rows in' -- "${dry[@]}" scripts/sanitize.sh --record "$tmp/clean.tsv"
rows=$(grep -c $'^02-coalesced-transpose\tsolutions\t' "$tmp/clean.tsv" 2>/dev/null)
if head -n 1 "$tmp/clean.tsv" | grep -q '^# device: ' &&
    grep -q '^# sanitizer: compute-sanitizer Version 0000.0.0 (dry run)' "$tmp/clean.tsv" &&
    grep -q $'^chapter\tside\ttool\terrors\tverdict\tgrade\tseconds$' "$tmp/clean.tsv" &&
    [[ $rows -eq 4 ]] && ! grep '^02' "$tmp/clean.tsv" | cut -f5 | grep -vqx clean; then
    ok "the record: device, driver, sanitizer and date on top, a clean row per tool"
else
    cat "$tmp/clean.tsv"; bad "the record is not what it should be"
fi
expect "racecheck reports a race: exit 1, the report shown" 1 '^  racecheck +errors +1 error' \
    'Race reported between Write access' -- env FAKE_SANITIZER_ERRORS=racecheck "${dry[@]}" \
    scripts/sanitize.sh --record "$tmp/race.tsv"
if grep -q $'\tracecheck\t1\terrors\t' "$tmp/race.tsv" &&
    grep -q $'\tmemcheck\t0\tclean\t' "$tmp/race.tsv"; then
    ok "the record names the tool that found errors"
else
    cat "$tmp/race.tsv"; bad "the record's racecheck row"
fi
expect "the canary: a known-bug kernel that memcheck catches is 'caught', exit 0" 0 \
    '^  memcheck +caught ' -- env FAKE_SANITIZER_ERRORS=memcheck "${dry[@]}" TOOLS=memcheck \
    MUTANT=no-write-bounds-check scripts/sanitize.sh --record "$tmp/canary.tsv"
expect "the canary missed is a failure" 1 '^  memcheck +MISSED ' \
    -- "${dry[@]}" TOOLS=memcheck MUTANT=no-write-bounds-check \
    scripts/sanitize.sh --record "$tmp/missed.tsv"
expect "a grader that is not built is not clean" 1 '^  memcheck +not built ' \
    -- "${dry[@]}" PROGRAMS="$tmp/none.tsv" TOOLS=memcheck scripts/sanitize.sh
expect "no compute-sanitizer: an error that says where it comes from" 1 'CUDA Toolkit' \
    -- env SANITIZER= PATH=/usr/bin:/bin CUDA_HOME="$tmp/none" SANITIZE_PREBUILT=1 \
    BACKEND=cuda CHAPTERS=02-coalesced-transpose scripts/sanitize.sh

mkdir -p "$tmp/gpu-run"
# the stand-in answers as build/cuda/probe does: a header line and a row of tab-separated fields
printf '#!/bin/sh\nprintf "name\\tcc\\tsms\\tdriver\\tcuda_driver\\truntime\\tmemory_mib\\tl2_kib\\n"\nprintf "stand-in GPU\\t9.0\\t132\\tdry-run\\t0.0\\t0.0\\t0\\t0\\n"\n' \
    > "$tmp/probe"
chmod +x "$tmp/probe"
expect "scripts/gpu-run.sh SANITIZE=only: a step per tool, then the canary" 0 \
    '02-coalesced-transpose sanitize initcheck: exit 0' 'sanitize canary.*: exit 0' \
    -- env PROBE="$tmp/probe" SANITIZER=$fake SANITIZE_ROWS=emu \
    FAKE_SANITIZER_ERRORS=memcheck CHAPTERS=02-coalesced-transpose SANITIZE=only \
    STEP_TIMEOUT=120 scripts/gpu-run.sh "$tmp/gpu-run"
# the stand-in reports memcheck errors for every run: the solution's row says errors, the
# canary's says caught
if grep -q '^# device: stand-in GPU$' "$tmp/gpu-run/sanitize.tsv" &&
    grep -q '^# driver: dry-run, CUDA driver 0.0, runtime 0.0$' "$tmp/gpu-run/sanitize.tsv" &&
    grep -q $'^02-coalesced-transpose\tsolutions\tmemcheck\t3\terrors\t' "$tmp/gpu-run/sanitize.tsv" &&
    grep -q $'^02-coalesced-transpose\tsolutions\tinitcheck\t0\tclean\t' "$tmp/gpu-run/sanitize.tsv" &&
    grep -q $'^01-naive-matmul\tmutant no-bounds-check\tmemcheck\t3\tcaught\t' "$tmp/gpu-run/sanitize.tsv"; then
    ok "gpu-run.sh's record: the probe's device and driver on top, a row per step, as it goes"
else
    cat "$tmp/gpu-run/sanitize.tsv" "$tmp/gpu-run/run.log"
    bad "gpu-run.sh's record"
fi

echo
echo "sanitize tests: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
