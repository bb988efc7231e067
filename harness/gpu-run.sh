#!/usr/bin/env bash
# gpu-run.sh OUTDIR: on a machine with a GPU, run what `make gpu-build` built, without
# rebuilding (the machine needs no Check, gnuplot or network): the probe, the harness tests,
# every solution's grader (must pass), every starter's grader (must fail), every known-bug
# kernel's grader (must fail), every solution's bench, and the tuning of chapters that tune. Logs and results go to OUTDIR; the last lines are a summary.
set -uo pipefail
out=${1:?usage: harness/gpu-run.sh OUTDIR}
mkdir -p "$out"
summary=()
note() { summary+=("$*"); echo "$*"; }

build/cuda/probe | tee "$out/device.txt" || { echo "no GPU answered"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv \
    >> "$out/device.txt" 2>&1 || true
date -u +%Y-%m-%dT%H:%MZ >> "$out/device.txt"

if build/cuda/tests/harness > "$out/harness.log" 2>&1; then note "harness tests: pass"
else note "harness tests: FAIL (harness.log)"; fi

for dir in build/cuda/solutions/*/; do
    c=$(basename "$dir")
    build/cuda/solutions/$c/grade > "$out/$c-solution.log" 2>&1
    note "$c solution: exit $? ($(tail -n 2 "$out/$c-solution.log" | head -n 1))"
    build/cuda/chapters/$c/grade > "$out/$c-starter.log" 2>&1
    note "$c starter: exit $? ($(tail -n 2 "$out/$c-starter.log" | head -n 1))"
    if [[ ${SKIP_BENCH:-0} != 1 ]]; then
        build/cuda/solutions/$c/grade --bench "$out/$c.tsv" > "$out/$c-bench.log" 2>&1
        note "$c bench: exit $?"
        if grep -q -- '"--tune"' "tests/$c.c"; then
            build/cuda/solutions/$c/grade --tune "$out/$c-tune.tsv" > "$out/$c-tune.log" 2>&1
            note "$c tune: exit $?"
        fi
    fi
done
for g in build/cuda/mutants/*/*/grade; do
    m=${g#build/cuda/mutants/}; m=${m%/grade}
    res=$("$g" 2>&1); rc=$?
    printf '== %s\n%s\n' "$m" "$res" >> "$out/mutants.log"
    note "mutant $m: exit $rc ($(grep -m1 '^  FAIL  ' <<<"$res" | cut -c1-120))"
done
echo
printf '%s\n' "${summary[@]}"
