#!/usr/bin/env bash
# lessons.sh: make lessons and make lessons-check (scripts/lessons.lua) on lessons written here:
# a number between markers is rewritten from the data, a number typed by hand over it fails the
# check naming its file and line, a row the data lacks fails, a marker left open fails; then the
# check over the real lessons. Fails with what it saw.
set -uo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
run() { # run CHECK FILE...: the filter as make runs it; output into $tmp/out
    LESSONS_FILES="${*:2}" LESSONS_CHECK=$1 pandoc --lua-filter scripts/lessons.lua \
        -f markdown -t plain -o /dev/null /dev/null > "$tmp/out" 2>&1
}
verdict() { # verdict WHAT OK(0|1)
    if [[ $2 -eq 0 ]]; then echo "ok    $1"; else echo "FAIL  $1:"; cat "$tmp/out"; fail=1; fi
}
copy='gbs("02", "copy", "8192x8192")'
want=$(awk -F'\t' '$2 == "copy" && $3 == "8192x8192" { printf "%.0f", $5 }' plots/data/h200/02-coalesced-transpose.tsv)
printf 'A copy moves <!--m:%%.0f %s-->1<!--/m--> GB/s.\n' "$copy" > "$tmp/a.md"
run 0 "$tmp/a.md"
grep -q "moves <!--m:%.0f $copy-->$want<!--/m--> GB/s" "$tmp/a.md"
verdict "make lessons writes the number the data gives ($want)" $?
run 1 "$tmp/a.md"
verdict "and the check then passes" $?
sed -i "s/-->$want</-->4100</" "$tmp/a.md"
run 1 "$tmp/a.md"; rc=$?
grep -q "a.md:1: says 4100, the data gives $want" "$tmp/out"
verdict "a number typed over it fails the check, naming the file and line" $((rc == 0 || $? != 0))
grep -q -- "-->4100<" "$tmp/a.md"
verdict "and the check writes nothing" $?
printf 'x <!--m gbs("02", "copy", "1x2")-->1<!--/m-->\n' > "$tmp/b.md"
run 0 "$tmp/b.md"; rc=$?
grep -q "has no row copy 1x2" "$tmp/out"
verdict "a row the data lacks fails" $((rc == 0 || $? != 0))
printf 'x <!--m gbs("02", "copy", "8192x8192")-->1\n' > "$tmp/c.md"
run 0 "$tmp/c.md"; rc=$?
grep -q "without its <!--/m-->" "$tmp/out"
verdict "a marker left open fails" $((rc == 0 || $? != 0))
printf 'w <!--m:%%.0f cell("profile-calibration", {chapter = "01-naive-matmul", rung = "uncoalesced", metric = "warps"}, "ncu")-->0<!--/m-->\n' > "$tmp/d.md"
run 0 "$tmp/d.md"
want=$(awk -F'\t' '$1 == "01-naive-matmul" && $2 == "uncoalesced" && $4 == "warps" { print $6 }' plots/data/h200/profile-calibration.tsv)
grep -q -- "-->$want<!--/m-->" "$tmp/d.md"
verdict "cell() reads one row of another table by its columns ($want)" $?
printf 'w <!--m cell("profile-calibration", {chapter = "01-naive-matmul", rung = "nope", metric = "warps"}, "ncu")-->0<!--/m-->\n' > "$tmp/e.md"
run 0 "$tmp/e.md"; rc=$?
grep -q "has no row with" "$tmp/out"
verdict "and fails where no row matches" $((rc == 0 || $? != 0))
files="README.md $(ls chapters/*/README.md book/*.md | tr '\n' ' ')"
run 1 $files
verdict "every lesson's measured numbers match the committed data ($(tail -n 1 "$tmp/out"))" $?
exit $fail
