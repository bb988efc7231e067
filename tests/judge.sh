#!/usr/bin/env bash
# judge.sh: the judge's schedule. Stand-in graders, small scripts that log when they start and
# end, on a manifest of one made-up chapter: on a GPU with JUDGE_JOBS=3, those whose verdict
# rests on a timing (the solution, a known-bug kernel whose symptom is a speed ratio, one that
# names no symptom) each run with nothing beside them, after the others, which share; on the
# CPU backend all of them share. Every verdict is still the rule's; a starter or known-bug kernel
# whose every test skipped is not graded, one that passed a test is. A few seconds.
set -uo pipefail
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"
ch=99-made-up

mkdir -p "$tmp/tests/mutants/$ch" "$tmp/bin"
patch_of() { # patch_of NAME SYMPTOM-LINES
    printf 'Bug: a stand-in.\nStep: 1\n%s\n\n--- a/x\n+++ b/x\n' "$2" > "$tmp/tests/mutants/$ch/$1.patch"
}
patch_of speedy $'Symptom: speed: [0-9.]+x\nSymptom-cuda: 1\\.0[0-9]x, needs 1\\.6x'
patch_of wrong 'Symptom: [0-9]+ of 9 wrong'
patch_of wrong-too 'Symptom: [0-9]+ of 9 wrong'
patch_of unnamed ''
# stand_in NAME RC LINES: logs "start NAME T" and "end NAME T" (ns) around a second's work
stand_in() {
    printf '#!/usr/bin/env bash\necho "start %s $(date +%%s%%N)" >> "%s/log"\nsleep 1\nprintf "%%s\\n" "%s"\necho "end %s $(date +%%s%%N)" >> "%s/log"\nexit %s\n' \
        "$1" "$tmp" "$3" "$1" "$tmp" "$2" > "$tmp/bin/$1"
    chmod +x "$tmp/bin/$1"
}
stand_in solution 0 "  PASS  correct 1x1"
stand_in starter 1 "  FAIL  correct 1x1: 1 of 1 wrong
$ch  FAIL  0/1 passed"
stand_in speedy 1 "  FAIL  speed: 1.02x, needs 1.6x"
stand_in wrong 1 "  FAIL  correct 3x3: 3 of 9 wrong"
stand_in wrong-too 1 "  FAIL  correct 3x3: 4 of 9 wrong"
stand_in unnamed 1 "  FAIL  something"

manifest() { # manifest BACKEND: the stand-ins' rows, in the order make writes them
    printf 'program\tkind\tchapter\tname\tbackend\tpath\n'
    printf 'grade\tstarter\t%s\t-\t%s\t%s\n' "$ch" "$1" "$tmp/bin/starter"
    printf 'grade\tsolution\t%s\t-\t%s\t%s\n' "$ch" "$1" "$tmp/bin/solution"
    for m in speedy wrong unnamed wrong-too; do
        printf 'grade\tmutant\t%s\t%s\t%s\t%s\n' "$ch" "$m" "$1" "$tmp/bin/$m"
    done
}

# overlaps A B: 0 when the runs of stand-ins A and B overlapped in time
overlaps() {
    awk -v a="$1" -v b="$2" '
        $1 == "start" { s[$2] = $3 } $1 == "end" { e[$2] = $3 }
        END { exit !(s[a] < e[b] && s[b] < e[a]) }' "$tmp/log"
}

judged() { # judged BACKEND: the judge over the stand-ins, 3 at a time
    manifest "$1" > "$tmp/programs.tsv"
    : > "$tmp/log"
    (cd "$tmp" && PROGRAMS="$tmp/programs.tsv" JUDGE_JOBS=3 GRADE_TSV="$tmp/grade.tsv" \
        "$root/scripts/judge.sh" "$1" 2>&1)
}

out=$(judged cuda)
expect "on a GPU every verdict is the rule's" "^judge: 6 passed, 0 failed$" "$out"
for a in solution speedy unnamed; do
    for b in starter solution speedy wrong unnamed wrong-too; do
        [[ $a == "$b" ]] && continue
        if overlaps "$a" "$b"; then
            echo "FAIL  on a GPU, $a (timed) ran beside $b:"; cat "$tmp/log"; fail=1
        fi
    done
done
((fail)) || echo "ok    on a GPU, the timed graders (the solution, a speed symptom, none named) ran alone"
if overlaps wrong wrong-too && overlaps starter wrong; then
    echo "ok    on a GPU, the others shared it, 3 at a time"
else
    echo "FAIL  on a GPU, the untimed graders did not share it:"; cat "$tmp/log"; fail=1
fi
# the order of the verdict lines, a word each
order_of() { grep -oE "the starter|the solution|mutant $ch/[a-z-]+" <<<"$1" | sed 's|.*/||; s|the ||' | tr '\n' ' '; }
expect "the timed ones are judged last, in the manifest's order" \
    "^starter wrong wrong-too solution speedy unnamed $" "$(order_of "$out")"

out=$(judged emu)
expect "on the CPU backend every verdict is the rule's" "^judge: 6 passed, 0 failed$" "$out"
if overlaps solution starter && overlaps solution speedy; then
    echo "ok    on the CPU backend, every grader shares the machine"
else
    echo "FAIL  on the CPU backend, graders ran alone:"; cat "$tmp/log"; fail=1
fi
expect "there, in the manifest's order" \
    "^starter solution speedy wrong unnamed wrong-too $" "$(order_of "$out")"

# a solution, a starter and a known-bug kernel whose graders ran no test here (every one
# skipped: the grader then says SKIP and exits 0) are not held to pass or to fail; one that
# skipped some and passed the rest still is; a solution whose every test skipped but that exits 1
# still fails
stand_in solution 0 "  SKIP  correct: needs two GPUs of one host
$ch  SKIP  0/0 passed on cuda"
stand_in starter 0 "  SKIP  correct: needs two GPUs of one host"
stand_in wrong 0 "  SKIP  correct: needs two GPUs of one host"
stand_in wrong-too 0 "  SKIP  correct: needs two GPUs
  PASS  correct 1x1"
out=$(judged cuda)
expect "a solution whose every test skipped is not graded there" \
    "the solution is not graded here, every test skipped \(cuda\)" "$out"
expect "nor a starter" \
    "the starter is not graded here, every test skipped \(cuda\): correct: needs two GPUs" "$out"
expect "nor a known-bug kernel" "wrong is not graded here, every test skipped" "$out"
expect "but one that passed a test still fails the judge" "^judge: 5 passed, 1 failed$" "$out"
stand_in solution 1 "  SKIP  correct: needs two GPUs of one host"
out=$(judged cuda)
expect "a solution whose grader exits 1 fails the judge, skips or not" \
    "the solution fails its grader \(cuda, exit 1\)" "$out"
exit $fail
