#!/usr/bin/env bash
# book.sh: build/book.pdf holds the preface, every chapter's lesson and every figure the lessons
# name, the roofline, the appendices (every question, every chapter's hints, the napkin-math
# drills with their measured answers filled in, the solutions' key kernels), and no code listing
# runs off the page.
set -euo pipefail
pdf=build/book.pdf
[[ -s $pdf ]] || { echo "book: $pdf is missing"; exit 1; }
raw=$(pdftotext "$pdf" -)
# (pandoc sets a caption's ' as a typographic ’: read back as the lessons write it)
text=$(pdftotext -layout "$pdf" - | tr -s ' \n' ' ' | sed "s/’/'/g")
status=0
ok()   { echo "ok    $*"; }
fail() { echo "FAIL  $*"; status=1; }

figures=0 questions=0
for readme in chapters/*/README.md; do
    title=$(sed -n '1s/^# *//p' "$readme" | tr -d '`*_')
    if grep -qF "$title" <<<"$text"; then ok "$title"; else fail "the book lacks the chapter \"$title\" ($readme)"; fi
    # each figure: its caption in the text, the plot itself built
    while IFS= read -r fig; do
        figures=$((figures + 1))
        caption=${fig#*\[}; caption=${caption%%\]*}
        caption=$(sed 's/²/2/g; s/³/3/g' <<<"$caption" | tr -d '`*_') # as pdftotext reads them
        name=$(sed -E 's/.*\/([^/]+)\.gp\).*/\1/' <<<"$fig")
        if grep -qF "$caption" <<<"$text" && [[ -s build/plots/$name.pdf ]]; then ok "figure $name"
        else fail "the book lacks the figure $name of $readme"; fi
    done < <(grep -E '^!\[.*\]\(.*\.gp\)' "$readme")
    questions=$((questions + $(awk '/^## Interview/{p=1; next} /^## /{p=0} p && /^\*\*Q:/' "$readme" | wc -l)))
done

# the book's own figures (book/*.md): the roofline
for md in book/*.md; do
    while IFS= read -r fig; do
        figures=$((figures + 1))
        name=$(sed -E 's/.*\/([^/]+)\.gp\).*/\1/' <<<"$fig")
        if [[ -s build/plots/$name.pdf ]]; then ok "figure $name ($md)"; else fail "no build/plots/$name.pdf for $md"; fi
    done < <(grep -oE '\]\([^)]*\.gp\)' "$md")
done
if grep -qE "^Figure [0-9]+: The H200.s roofline" <<<"$raw"; then ok "the roofline figure and its caption"
else fail "no roofline figure in the book"; fi
# the roofline is drawn from every chapter's measurements, and says which rungs it cannot place
if [[ -s build/plots/roofline.data ]] && [[ $(wc -w < build/plots/roofline.data) -eq $(ls -d chapters/[0-9][0-9]-*/ | wc -l) ]]
then ok "the roofline reads every chapter's data ($(wc -w < build/plots/roofline.data) files)"
else fail "the roofline does not read one data file per chapter (build/plots/roofline.data)"; fi
if grep -qF "Not placed:" <<<"$text"; then ok "the roofline's caption names the rungs it cannot place"
else fail "the roofline's caption does not say which rungs are not placed"; fi

# every figure is a numbered, captioned float: count the captions
captions=$(grep -cE '^Figure [0-9]+:' <<<"$raw" || true)
if [[ $captions -eq $figures ]]; then ok "$captions figure captions, one per figure"
else fail "$captions figure captions in the book, $figures figures in the lessons"; fi

# the interview appendix holds every question once, each with where it came from
from=$(grep -c '^From chapter' <<<"$raw" || true)
if [[ $from -eq $questions ]]; then ok "the interview appendix holds all $questions questions"
else fail "the interview appendix holds $from questions, the chapters $questions"; fi
# the appendices' own opening lines (the chapters have sections of the same names)
for appendix in "Every question of the chapters" "hints, gentlest first"; do
    if grep -qF "$appendix" <<<"$text"; then ok "appendix: $appendix ..."; else fail "no appendix \"$appendix ...\""; fi
done

# the napkin-math drills: all of book/drills.md's drills, every measured number filled in (the
# filter fails the build on a missing row; here: nothing of the placeholder syntax got through)
drills=$(grep -cE '^\*\*Drill [0-9]+\.' book/drills.md || true)
in_book=$(grep -cE '^Drill [0-9]+\.' <<<"$raw" || true)
if [[ $drills -ge 6 && $in_book -eq $drills ]]; then ok "appendix: $drills napkin-math drills"
else fail "the book holds $in_book drills, book/drills.md $drills (6 or more wanted)"; fi
# (pdftotext starts a page with a form feed: no ^ anchors)
drills_text=$(sed -n '/Napkin-math drills$/,/The solutions, line by line$/p' <<<"$raw")
if grep -q '^Drill 1\.' <<<"$drills_text" && ! grep -qE '\{\.m|(tsv|gbs|gflops|ms|best)\("' <<<"$drills_text" &&
   ! grep -qE 'lstinline.(tsv|gbs|gflops|ms|best)\(' build/book/book.tex
then ok "every measured number in the drills is filled in"
else fail "the drills appendix is missing or shows a placeholder"; fi
# drill 1's floor is the copy kernel's time at 8192^2 (the same bytes), read here from the table
floor=$(awk -F'\t' '$2 == "copy" && $3 == "8192x8192" { printf "%.0f", 1000 * $4 }' \
        "${PLOT_DATA:-plots/data/h200}/02-coalesced-transpose.tsv")
if [[ -n $floor ]] && grep -qF "the floor is $floor µs" <<<"$drills_text"; then ok "drill 1's floor, $floor µs, is the measured copy's"
else fail "drill 1 does not give the copy kernel's measured $floor µs as the floor"; fi
# and a drill that names a row nobody measured stops the build
if echo '`gbs("02", "copy", "3x3")`{.m}' | pandoc --lua-filter book/measured.lua -t plain >/dev/null 2>&1
then fail "book/measured.lua accepts a row that is not in the data"
else ok "book/measured.lua refuses a row that is not in the data"; fi

# chapter 02's calibration table (book/measured.lua), or, until make calibrate has run on the
# reference GPU, the sentence that says it has not been measured
cal=${PLOT_DATA:-plots/data/h200}/profile-calibration.tsv
if [[ -f $cal ]]; then
    if grep -qF "the same rung on the same shape" <<<"$text"; then ok "the calibration table, from $cal"
    else fail "$cal exists, but the book shows no calibration table"; fi
elif grep -qF "The calibration has not been measured yet" <<<"$text"; then
    ok "the calibration is not measured yet, and the book says so"
else
    fail "the book neither shows the calibration table nor says it is not measured"
fi

# the solutions appendix: each chapter's key kernel, read from solutions/
for fn in matmul_coalesced_kernel transpose_padded_kernel process_remapped_kernel \
          matmul_tiled_kernel gemm_pipelined_kernel run_pipeline; do
    if grep -qF "$fn(" <<<"$(sed -n '/The solutions, line by line$/,$p' <<<"$raw")"; then ok "solution listing: $fn"
    else fail "the solutions appendix lacks $fn"; fi
done

# the preface: who it is for, the two commands, both backends, a grader's message
for words in "Who this book is for" "make grade" "make test" "CPU backend" "How to read a grader"; do
    grep -qF "$words" <<<"$text" || fail "the preface lacks \"$words\""
done

# no overfull box inside a code listing (log lines "Overfull \hbox ... at lines A--B", A inside
# a lstlisting environment of the LaTeX source)
tex=build/book/book.tex log=build/book/book.log
if [[ -s $tex && -s $log ]]; then
    overfull=$(awk 'NR == FNR {
                        if ($0 ~ /\\begin\{lstlisting\}/) inlst = 1
                        if (inlst) lst[FNR] = 1
                        if ($0 ~ /\\end\{lstlisting\}/) inlst = 0
                        next }
                    /^Overfull \\hbox/ && match($0, /lines [0-9]+/) {
                        n = substr($0, RSTART + 6, RLENGTH - 6) + 0
                        if (n in lst) print }' "$tex" "$log")
    if [[ -z $overfull ]]; then ok "no code listing runs off the page"
    else fail "code listings run off the page:"; echo "$overfull"; fi
else
    fail "no LaTeX source and log under build/book/"
fi
exit $status
