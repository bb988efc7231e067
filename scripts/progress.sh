#!/usr/bin/env bash
# progress.sh [FILE]: where a learner stands, from the rows `make grade` wrote (build/grade.tsv):
# per chapter, side and backend graded, the steps passed and each step's last verdict. A chapter
# without steps shows its verdict whole. A grade that was cut short (scripts/bound.sh: its
# grader killed, stopped at the outer time limit, or ended without its final line; a row of
# verdict PARTIAL says so) shows as PARTIAL with the reason and the tests it recorded, never as a
# clean result: the whole chapter's, or the one step's (STEP=k). Prints nothing but a hint when
# nothing was graded yet.
#
# progress.sh --drop FILE "CHAPTERS" SIDE BACKEND [STEP]: what `make grade` does before it
# grades: removes from FILE the rows of what it is about to grade (those chapters, or that one
# step of them, on that side and backend) and keeps the rest.
set -euo pipefail
if [[ ${1:-} == --drop ]]; then
    file=$2
    awk -F'\t' -v chs=" $3 " -v side="$4" -v be="$5" -v step="${6:-}" '
        NR == 1 { print; next }
        { k = $4; sub(/\/.*/, "", k) }
        index(chs, " " $1 " ") && $3 == side && $2 == be && (step == "" || k == step) { next }
        { print }' "$file" > "$file.new"
    mv "$file.new" "$file"
    exit 0
fi
file=${1:-build/grade.tsv}
if [[ ! -s $file ]]; then
    echo "progress: nothing graded yet: run make grade (or make grade CH=04 STEP=1)"
    exit 0
fi
if [[ $(head -1 "$file") != *$'\tstep\t'* ]]; then
    echo "progress: $file is from an older grade, without steps: run make grade again" >&2
    exit 1
fi
awk -F'\t' '
    NR == 1 { next }
    {
        key = $1 "\t" $3 "\t" $2
        if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    }
    $6 == "PARTIAL" {                   # a grade cut short: of the chapter, or of step k
        if ($4 == "-") partial[key] = $7
        else { partial_step[key, $4] = $7; partial_any[key] = 1 }
        next
    }
    $4 !~ /\// { tests[key]++; if ($6 == "PASS") tests_passed[key]++ }
    $4 ~ /\// {                         # a step row: "k/N", its name, its verdict
        split($4, kn, "/")
        total[key] = kn[2]
        verdict[key, kn[1]] = $6
        name[key, kn[1]] = $5
        next
    }
    $4 == "-" && $6 == "FAIL" { whole_failed[key] = 1 }
    $4 == "-" && $6 == "PASS" { whole_passed[key] = 1 }
    END {
        printf "progress (%s):\n", FILENAME
        for (i = 1; i <= n; i++) {
            key = order[i]
            split(key, f, "\t")
            label = sprintf("  %-26s %-9s %-4s", f[1], f[2], f[3])
            recorded = tests[key] ? sprintf("%d of %d tests recorded passed", tests_passed[key],
                                            tests[key]) : "no test recorded"
            if (key in partial) {
                printf "%s  PARTIAL: the grade was cut short (%s); %s\n", label, partial[key],
                       recorded
                continue
            }
            if (!(key in total) && (key in partial_any)) {
                for (k = 1; k <= 99; k++)
                    if ((key SUBSEP k) in partial_step)
                        printf "%s  PARTIAL: step %d was cut short (%s); %s\n", label, k,
                               partial_step[key, k], recorded
                continue
            }
            if (!(key in total)) {
                printf "%s  %s (graded whole)\n", label,
                       whole_failed[key] ? "FAIL" : whole_passed[key] ? "PASS" : "----"
                continue
            }
            passed = 0; line = ""
            for (k = 1; k <= total[key]; k++) {
                v = (key SUBSEP k) in verdict ? verdict[key, k] : "----"
                if ((key SUBSEP k) in partial_step) v = "PART"
                if (v == "PASS") passed++
                line = line sprintf("  %d %s", k, v)
            }
            printf "%s  %d of %d steps%s\n", label, passed, total[key], line
            for (k = 1; k <= total[key]; k++)
                if ((key SUBSEP k) in partial_step)
                    printf "      step %d PART: cut short (%s)\n", k, partial_step[key, k]
        }
    }' "$file"
