#!/usr/bin/env bash
# report.sh: `make report` on the CPU backend, for one small step (chapter 03's step 1, the
# references): the PDF is built, holds every section (the run's facts on its first page, the
# grader's verdicts, the profile labelled as the model, the GPU-only timings said so, the
# step's source listing, the request for the missing notes), the terminal says where to write
# the notes, nothing lands outside build/; and a bad CH or STEP is refused before anything is
# built. About 15 s once the chapter's graders are built (make test has built them by then).
set -uo pipefail
make_=${MAKE:-make}
status=0
ok()   { echo "ok    $*"; }
fail() { echo "FAIL  $*"; status=1; }

ch=03 c=03-warp-divergence step=1
pdf=build/report-$ch.pdf
src=solutions/$c/step1_remapped.cu
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# what lies outside build/ before and after: the same (git's view, ignored files included)
outside() { git status --porcelain --ignored --untracked-files=all 2>/dev/null | grep -v ' build/' ; }
before=$(outside)

# ---- a bad CH or STEP: refused, with a message, before anything is built -----------------------
refused() { # refused WHAT MESSAGE-PART VAR=VALUE...
    local what=$1 want=$2; shift 2
    local out rc stamp
    stamp=$(stat -c %Y "$pdf" 2>/dev/null || echo none)
    out=$($make_ --no-print-directory -s report BACKEND=emu SOLUTIONS=1 "$@" 2>&1); rc=$?
    if ((rc == 0)); then
        fail "$what: make report $* succeeded"
    elif [[ $out != *"$want"* ]]; then
        fail "$what: make report $* did not say \"$want\":"; echo "$out" | sed 's/^/      /'
    elif [[ $out == *"grade: building"* || $out == *"report: [1/"* ]]; then
        fail "$what: make report $* built or graded before refusing"
    elif [[ $(stat -c %Y "$pdf" 2>/dev/null || echo none) != "$stamp" ]]; then
        fail "$what: make report $* touched $pdf"
    else
        ok "$what refused: $(grep -m1 -F "$want" <<<"$out" | cut -c1-90)"
    fi
}
refused "no CH" "which chapter?" CH=
refused "an unknown CH" "no chapter is named 99" CH=99
refused "two chapters" "a report is of one chapter" CH="03 04"
refused "a STEP past the last" "has steps 1 to 2" CH=$ch STEP=3
refused "STEP=0" "a step is a number" CH=$ch STEP=0
refused "a STEP of a chapter graded whole" "graded whole" CH=01 STEP=1

# ---- one step's report, on the CPU backend ------------------------------------------------------
rm -f "$pdf"
if $make_ --no-print-directory -s report CH=$ch STEP=$step SOLUTIONS=1 BACKEND=emu > "$log" 2>&1; then
    ok "make report CH=$ch STEP=$step SOLUTIONS=1 BACKEND=emu"
else
    fail "make report CH=$ch STEP=$step SOLUTIONS=1 BACKEND=emu failed:"; tail -n 30 "$log"
fi
grep -q '^report: \[1/2\] grading' "$log" && grep -q 'PASS  correct n = 1' "$log" &&
    grep -q '^report: \[2/2\] profiling' "$log" && grep -q '== rung process/remapped' "$log" &&
    ok "progress shown while the grader and the profile run" ||
    fail "the terminal did not show the grader's and the profile's progress"
if grep -qF "write it in solutions/$c/NOTES-step$step.md" "$log"; then ok "the terminal says where to write the notes"
else fail "the terminal does not say where the notes go (solutions/$c/NOTES-step$step.md)"; fi

[[ -s $pdf ]] || { fail "$pdf is missing"; exit 1; }
ok "$pdf ($(pdfinfo "$pdf" 2>/dev/null | awk '/^Pages:/ { print $2 }') pages)"
text=$(pdftotext -layout "$pdf" - | tr -s ' \n' ' ')
page1=$(pdftotext -layout -f 1 -l 1 "$pdf" - | tr -s ' \n' ' ')
has() { # has WHAT TEXT-TO-FIND [in page1]
    local hay=$text
    [[ ${3:-} == page1 ]] && hay=$page1
    if grep -qF -- "$2" <<<"$hay"; then ok "$1"; else fail "the report lacks $1 (\"$2\")"; fi
}

# the first page: device, backend, date, seed (the grade's own, from its rows)
seed=$(awk -F'\t' 'NR == 2 { print $8 }' build/report/$ch/grade.tsv 2>/dev/null)
has "the title" "Kernel report: $c, step $step" page1
has "the backend on the first page" "backend emu, the CPU backend" page1
has "the device on the first page" "device none: the CPU backend (emu)" page1
has "the date on the first page" "date $(date +%Y-%m-)" page1
if [[ -n $seed ]]; then has "the grade's seed on the first page" "seed $seed" page1
else fail "build/report/$ch/grade.tsv holds no seed"; fi

# the sections, in order
order=$(pdftotext "$pdf" - | grep -nxE 'Correctness|The ladder|Every test|Profile|Time and speedup|Source|Rationale|The grader.s output' |
        cut -d: -f2 | tr '\n' '|')
if [[ $order == "Correctness|The ladder|Every test|Profile|Time and speedup|Source|Rationale|The grader"?"s output|" ]]
then ok "the sections, in order: ${order//|/, }"
else fail "the sections are not all there, in order: $order"; fi

# correctness: every per-test verdict of the step, and the step's line
n=0 missing=0
while IFS=$'\t' read -r _ _ _ st test _; do
    [[ $st == "$step" ]] || continue
    n=$((n + 1))
    grep -qF -- "$(cut -c1-30 <<<"$test")" <<<"$text" || { missing=$((missing + 1)); echo "      missing: $test"; }
done < build/report/$ch/grade.tsv
if ((n > 0 && missing == 0)); then ok "all $n per-test verdicts of step $step"
else fail "$missing of the $n per-test verdicts of step $step are not in the report"; fi
has "the step's line" "1/2 warp-uniform remap PASS"

# the profile: the CPU backend's counts, labelled as a model; no timings, and why
has "the profile, labelled a model" "A model, not a measurement."
has "the profile's table" "== rung process/remapped"
has "the step's rung in the profile" "step1_remapped.cu"
has "no timings on the CPU backend, and why" "Timings are only real on a GPU; this report shows none."

# the source: the step's file, all of it (its first and its last non-blank lines)
first=$(grep -m1 -v '^[[:space:]]*$' "$src" | tr -s ' ' ' ' | cut -c1-40)
last=$(grep -v '^[[:space:]]*$' "$src" | tail -n 1 | tr -s ' ' ' ' | cut -c1-40)
has "the source listing's heading" "$src"
has "the listing's first line" "$first"
has "the listing's last line" "$last"

# the notes: missing here (solutions/ keeps none), so the report asks for them
has "the request for the missing notes" "Your rationale is missing: write it in solutions/$c/NOTES-step$step.md"
for what in "The bottleneck:" "The change:" "Predicted and measured:"; do
    has "the request asks for \"$what\"" "$what"
done

# notes that are there: book/report.lua reads them as Markdown, their headings below the report's
mkdir -p build/report/test
printf '# My bottleneck\n\nThe loads were *strided*: 32 sectors a request.\n' > build/report/test/NOTES.md
notes=$(printf '# Rationale\n\n::: {.notes file="build/report/test/NOTES.md"}\n:::\n' |
        pandoc --lua-filter book/report.lua -t markdown 2>&1)
if grep -qx '### My bottleneck' <<<"$notes" && grep -qF '*strided*' <<<"$notes"; then
    ok "the notes, when there, go in as Markdown under the report's heading"
else fail "book/report.lua does not set the notes in:"; echo "$notes" | sed 's/^/      /'; fi
rm -rf build/report/test

# nothing generated outside build/
after=$(outside)
if [[ $before == "$after" ]]; then ok "nothing written outside build/"
else fail "make report changed files outside build/:"; diff <(echo "$before") <(echo "$after") | sed 's/^/      /'; fi
exit $status
