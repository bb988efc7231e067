#!/usr/bin/env bash
# book.sh: build/book.pdf holds every chapter's lesson and every figure the lessons name, the two
# appendices hold every question and every chapter's hints, and no code listing runs off the page.
set -euo pipefail
pdf=build/book.pdf
[[ -s $pdf ]] || { echo "book: $pdf is missing"; exit 1; }
raw=$(pdftotext "$pdf" -)
text=$(pdftotext -layout "$pdf" - | tr -s ' \n' ' ')
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
