#!/usr/bin/env bash
# stamps.sh: objects rebuild from content, not times (scripts/stamp.sh): a learner's file put
# back from an older copy with its old time (cp -p) is rebuilt, a header of the chapter too, and
# nothing is rebuilt when nothing changed. On one object of chapter 01 for the CPU backend; the
# chapter's files are put back as they were whatever happens. Fails with what it saw.
set -uo pipefail
make_=${MAKE:-make}
src=chapters/01-naive-matmul/matmul.cu
hdr=chapters/01-naive-matmul/matmul.h
obj=build/emu/chapters/01-naive-matmul/matmul.o
tmp=$(mktemp -d)
cp -p "$src" "$tmp/src"
cp -p "$hdr" "$tmp/hdr"
trap 'cp -p "$tmp/src" "$src"; cp -p "$tmp/hdr" "$hdr"; rm -rf "$tmp"' EXIT
fail=0
build() { $make_ --no-print-directory -s "$obj" || { echo "FAIL  make $obj"; exit 1; }; }
when() { stat -c %y "$obj"; }
rebuilt() { # rebuilt WHAT yes|no: after a build, whether the object was remade
    local before now
    before=$(when)
    build
    now=$(when)
    if [[ ($2 == yes && $now == "$before") || ($2 == no && $now != "$before") ]]; then
        echo "FAIL  $1: rebuilt? want $2 (object from $before, now $now)"; fail=1
    else
        echo "ok    $1"
    fi
}

build
rebuilt "nothing changed: nothing is rebuilt" no
echo "/* an edit */" >> "$src"
rebuilt "an edited file is rebuilt" yes
cp -p "$tmp/src" "$src"
[[ $src -ot $obj ]] || { echo "FAIL  the restored copy is not older than the object"; fail=1; }
rebuilt "an older copy put back with its time (cp -p) is rebuilt" yes
rebuilt "and then nothing again" no
echo "/* an edit */" >> "$hdr"
rebuilt "an edited header of the chapter rebuilds the object" yes
cp -p "$tmp/hdr" "$hdr"
rebuilt "its older copy put back (cp -p) too" yes
cp "$tmp/src" "$tmp/older" && echo "/* older */" >> "$tmp/older" && touch -d @1000000000 "$tmp/older"
mv "$tmp/older" "$src"
rebuilt "an older file moved in (mv) is rebuilt" yes
cp -p "$tmp/src" "$tmp/again" && mv "$tmp/again" "$src"
rebuilt "and the original moved back, too" yes
cp -p "$tmp/src" "$tmp/again" && mv "$tmp/again" "$src"
rebuilt "the same content moved in again is not rebuilt" no
exit $fail
