#!/usr/bin/env bash
# book.sh: build/book.pdf holds every chapter's lesson and every figure the lessons name.
set -euo pipefail
pdf=build/book.pdf
[[ -s $pdf ]] || { echo "book: $pdf is missing"; exit 1; }
text=$(pdftotext -layout "$pdf" - | tr -s ' \n' ' ')
status=0
for readme in chapters/*/README.md; do
    title=$(sed -n '1s/^# *//p' "$readme" | tr -d '`*_')
    if grep -qF "$title" <<<"$text"; then
        echo "ok    $title"
    else
        echo "FAIL  the book lacks the chapter \"$title\" ($readme)"; status=1
    fi
    # each figure: its caption in the text, the plot's own words on the page
    while IFS= read -r fig; do
        caption=${fig#*\[}; caption=${caption%%\]*}
        name=$(sed -E 's/.*\/([^/]+)\.gp\).*/\1/' <<<"$fig")
        if grep -qF "$caption" <<<"$text" && [[ -s build/plots/$name.pdf ]]; then
            echo "ok    figure $name"
        else
            echo "FAIL  the book lacks the figure $name of $readme"; status=1
        fi
    done < <(grep -E '^!\[.*\]\(.*\.gp\)' "$readme")
done
exit $status
