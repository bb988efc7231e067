#!/usr/bin/env bash
# report.sh: `make report` on the CPU backend, for one small step (chapter 03's step 1, the
# references): the PDF is built, holds every section (the run's facts on its first page, the
# grader's verdicts, the profile labelled as the model, the GPU-only timings said so, the
# step's source listing, the request for the missing notes), the terminal says where to write
# the notes, nothing lands outside build/; a bad CH or STEP is refused before anything is
# built; and the GPU path as a dry run (a stand-in probe and a stand-in bench, the grade on the
# CPU backend): the bench under scripts/clocks.sh, its speedups and each row's clocks, the
# rungs against the library and the roof, the figure's caption with the device, driver, date
# and clocks. About 30 s once the chapter's graders are built (make test has built them by
# then).
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

# ---- the GPU path, as a dry run: a stand-in GPU, a stand-in bench ------------------------------
# the probe answers as build/cuda/probe does; the chapter's grader for the GPU is a script that
# says it has a bench and writes rows; the grade itself runs on the CPU backend
gpu=build/report/test-gpu
rm -rf "$gpu" && mkdir -p "$gpu"
printf '%s\n' '#!/bin/sh' \
    'printf "name\tcc\tsms\tdriver\tcuda_driver\truntime\tmemory_mib\tl2_kib\n"' \
    'printf "Stand-in GPU\t9.0\t132\tnot-a-driver\t0.0\t0.0\t0\t0\n"' > "$gpu/probe"
cat > "$gpu/grade" <<'STANDIN'
#!/usr/bin/env bash
# a stand-in grader for the GPU: --describe says it benches, --bench FILE writes rows
t=$'\t'
case $1 in
    --describe) printf 'chapter\t03-warp-divergence\nmodes\tgrade bench\n' ;;
    --bench)
        {
            echo "# device: Stand-in GPU"
            echo "# driver: not-a-driver, CUDA driver 0.0, runtime 0.0"
            echo "# date: 2000-01-01"
            echo "chapter${t}kernel${t}shape${t}ms${t}gbs${t}gflops${t}device${t}sm_mhz${t}watts"
            for r in "process:divergent 2.000 100 50 1980 402" \
                     "process:remapped 1.000 200 100 1755 NA" "copy 0.500 400 0 NA NA"; do
                read -r k ms g f mhz w <<<"$r"
                printf '%s\t' 03-warp-divergence "$k" 4096 "$ms" "$g" "$f" "Stand-in GPU" "$mhz"
                echo "$w"
            done
        } > "$2" ;;
    *) exit 2 ;;
esac
STANDIN
chmod +x "$gpu/probe" "$gpu/grade"
awk -F'\t' -v OFS='\t' -v g="$gpu/grade" \
    '$1 == "grade" && $2 == "solution" && $3 == "03-warp-divergence" && $5 == "cuda" { $6 = g }
     { print }' build/programs.tsv > "$gpu/programs.tsv"
rm -f "$pdf"
if GPU_PROBE=$gpu/probe PROGRAMS=$gpu/programs.tsv REPORT_NO_PROFILE=1 \
   REPORT_GRADE="env BACKEND=emu scripts/grade.sh" \
   $make_ --no-print-directory -s report CH=$ch STEP=$step SOLUTIONS=1 BACKEND=cuda > "$log" 2>&1
then ok "the GPU path, dry run: make report CH=$ch STEP=$step SOLUTIONS=1 BACKEND=cuda"
else fail "the GPU path's dry run failed:"; tail -n 30 "$log"; fi
if grep -q "^report: \[3/3\] measuring every rung ($gpu/grade --bench" "$log"; then
    ok "the GPU path runs the chapter's bench"
else fail "the GPU path did not run the bench:"; tail -n 20 "$log"; fi
if grep -q '^# clocks: ' build/report/$ch/bench.tsv 2>/dev/null; then
    ok "the bench ran under scripts/clocks.sh: $(grep '^# clocks' build/report/$ch/bench.tsv)"
else fail "build/report/$ch/bench.tsv has no clocks line"; fi
if [[ -s $pdf ]]; then
    text=$(pdftotext -layout "$pdf" - | tr -s ' \n' ' ')
    page1=$(pdftotext -layout -f 1 -l 1 "$pdf" - | tr -s ' \n' ' ')
    has "the GPU backend on the first page" "backend cuda: the kernels ran on a GPU" page1
    has "the stand-in GPU on the first page" "device Stand-in GPU" page1
    has "the bench's section, not the CPU backend's note" "bench on this GPU (grade --bench"
    has "each rung's speedup over the first" "2.00x over process:divergent"
    has "each rung's SM clock and power while it ran" "process:divergent 4096 2.000 100 50 1980 402"
    has "a power not read: NA" "process:remapped 4096 1.000 200 100 1755 NA 2.00x"
    has "the rungs against the library" "process:divergent 4096 2.000 0.25x copy"
    has "a rung without FLOPs: its share of the bandwidth" "100% of bandwidth"
    has "a rung with FLOPs: its share of the roof (200 GB/s x 0.5 FLOP/B of 400)" \
        "process:remapped 4096 1.000 0.50x copy 50%"
    has "the roof's source" "The roof: 400 GB/s (this run)"
    if pdftotext "$pdf" - | tr -s ' \n' ' ' |
       grep -qE "The rungs measured on Stand-in GPU, driver not-a-driver.*2000-01-01; clocks:"
    then ok "the figure's caption names the device, driver, date and clocks"
    else fail "the figure's caption lacks the device, driver, date or clocks"; fi
else
    fail "the GPU path's dry run wrote no $pdf"
fi
# the same report made in two places: REPORT_COLLECT=1 where the GPU is (no pandoc needed, no
# PDF), then REPORT_FROM=DIR on a machine with pandoc, which runs nothing
rm -f "$pdf"
if GPU_PROBE=$gpu/probe PROGRAMS=$gpu/programs.tsv REPORT_NO_PROFILE=1 REPORT_COLLECT=1 \
   REPORT_GRADE="env BACKEND=emu scripts/grade.sh" \
   $make_ --no-print-directory -s report CH=$ch STEP=$step SOLUTIONS=1 BACKEND=cuda > "$log" 2>&1 &&
   [[ ! -e $pdf && -s build/report/$ch/state.sh && -s build/report/$ch/bench.tsv ]] &&
   grep -q "REPORT_FROM=DIR" "$log"; then
    ok "REPORT_COLLECT=1: graded and benched, the state kept, no PDF, and the terminal says what next"
else fail "REPORT_COLLECT=1 did not collect as it should:"; tail -n 20 "$log"; fi
rm -rf "$gpu/collected" && mv build/report/$ch "$gpu/collected"
if REPORT_GRADE=false GPU_PROBE=false \
   $make_ --no-print-directory -s report CH=$ch STEP=$step SOLUTIONS=1 REPORT_FROM="$gpu/collected" \
   > "$log" 2>&1 && [[ -s $pdf ]] && ! grep -q '^report: \[1/' "$log"; then
    text=$(pdftotext -layout "$pdf" - | tr -s ' \n' ' ')
    page1=$(pdftotext -layout -f 1 -l 1 "$pdf" - | tr -s ' \n' ' ')
    ok "REPORT_FROM=DIR: the PDF from what was collected, nothing graded or measured again"
    has "REPORT_FROM: the GPU backend on the first page" "backend cuda: the kernels ran on a GPU" page1
    has "REPORT_FROM: the rungs against the library" "process:divergent 4096 2.000 0.25x copy"
else fail "REPORT_FROM=DIR did not write the PDF from the collected files:"; tail -n 20 "$log"; fi
rm -rf "$gpu"

# nothing generated outside build/
after=$(outside)
if [[ $before == "$after" ]]; then ok "nothing written outside build/"
else fail "make report changed files outside build/:"; diff <(echo "$before") <(echo "$after") | sed 's/^/      /'; fi
exit $status
