#!/usr/bin/env bash
# vars.sh: the variables a learner types are checked before anything is built (make check-vars,
# scripts/vars.sh): the forms CH takes and those it refuses, SOLUTIONS, BACKEND, STEP, and SEED
# in exactly the form harness_seed reads (tests/harness.c refuses the same list); and a refused
# grade leaves build/grade.tsv as it was. Fails with what it saw.
set -uo pipefail
make_=${MAKE:-make}
all="01-naive-matmul 02-coalesced-transpose 04-shared-memory-tiling"
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"
status() { # status WHAT WANT COMMAND...: COMMAND exits WANT
    local rc
    "${@:3}" > /dev/null 2>&1
    rc=$?
    if [[ $rc -ne $2 ]]; then
        echo "FAIL  $1: exit status $rc, not $2"; fail=1
    else
        echo "ok    $1"
    fi
}

for ch in 4 04 04-shared-memory-tiling 04-sh; do
    expect "CH=$ch names chapter 04" "^04-shared-memory-tiling$" "$(scripts/vars.sh chapters "$ch" "$all")"
done
expect 'CH="1 4" names both, in order' "^01-naive-matmul 04-shared-memory-tiling$" \
    "$(scripts/vars.sh chapters "4 1" "$all")"
expect "CH=1,04 names both" "^01-naive-matmul 04-shared-memory-tiling$" "$(scripts/vars.sh chapters "1,04" "$all")"
expect 'CH="1 01" names one, once' "^01-naive-matmul$" "$(scripts/vars.sh chapters "1 01" "$all")"
for ch in 3 0 xyz "1 9" 0-; do
    status "CH=\"$ch\" is refused" 2 scripts/vars.sh chapters "$ch" "$all"
done
out=$(scripts/vars.sh chapters "1 9" "$all" 2>&1)
expect "a refused CH names the word" '^CH="1 9": no chapter is named 9$' "$out"
expect "and lists the chapters" '^ +02-coalesced-transpose +\(CH=02\)$' "$out"
expect "a start of two names says so" "0 names 3 chapters|names 2 chapters" \
    "$(scripts/vars.sh chapters "0-" "01-a 01-b" 2>&1; scripts/vars.sh chapters "01-" "01-a 01-b" 2>&1)"

checked() { env -i PATH="$PATH" CHAPTERS_ALL="$all" "$@" scripts/vars.sh check; }
for v in "" 0 1 no yes false true; do status "SOLUTIONS=$v is taken" 0 checked SOLUTIONS="$v"; done
status "SOLUTIONS=2 is refused" 2 checked SOLUTIONS=2
expect "and says the forms" "SOLUTIONS=2: give SOLUTIONS=1 .*SOLUTIONS=0" "$(checked SOLUTIONS=2 2>&1)"
for v in auto cuda emu; do status "BACKEND=$v is taken" 0 checked BACKEND=$v; done
status "BACKEND=gpu is refused" 2 checked BACKEND=gpu
status "STEP=2 with one chapter is taken" 0 checked CH=4 STEP=2
status 'STEP=2 with CH="1 4" is refused' 2 checked CH="1 4" STEP=2
status "STEP=x is refused" 2 checked CH=4 STEP=x
status "GRADE_LIMIT=soon is refused" 2 checked GRADE_LIMIT=soon

# the seeds harness_seed takes and refuses (tests/harness.c: BAD_SEEDS)
for s in 0 7 010 3453983699 18446744073709551615 0x1f 0XFF 0xffffffffffffffff; do
    status "SEED=$s is taken" 0 checked SEED="$s"
done
for s in 12abc -1 +1 " 1" "1 " 0x 0xg 1e3 18446744073709551616 0x10000000000000000; do
    status "SEED='$s' is refused" 2 checked SEED="$s"
done

# a refused grade builds nothing and leaves build/grade.tsv as it was
mkdir -p build
before=$(cat build/grade.tsv 2>/dev/null || echo "(none)")
for args in "SEED=12abc" "SOLUTIONS=2" "CH=99" "BACKEND=gpu" 'CH=1 2 STEP=1'; do
    if [[ $args == 'CH=1 2 STEP=1' ]]; then
        out=$($make_ --no-print-directory grade CH="1 2" STEP=1 2>&1)
    else
        out=$($make_ --no-print-directory grade "$args" 2>&1)
    fi
    rc=$?
    if [[ $rc -ne 2 || $out == *building* ]]; then
        echo "FAIL  make grade $args: exit status $rc (not 2), or it built:"; echo "$out"; fail=1
    else
        echo "ok    make grade $args is refused before building"
    fi
done
expect "make grade SEED=12abc names SEED and its forms" "^SEED=12abc: not a seed: .*0x" \
    "$($make_ --no-print-directory grade SEED=12abc 2>&1)"
if [[ $(cat build/grade.tsv 2>/dev/null || echo "(none)") != "$before" ]]; then
    echo "FAIL  a refused grade changed build/grade.tsv"; fail=1
else
    echo "ok    a refused grade leaves build/grade.tsv as it was"
fi
exit $fail
