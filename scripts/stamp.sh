#!/usr/bin/env bash
# stamp.sh: content stamps, so that the objects built from the learner's files (chapters/) and
# the references (solutions/) are rebuilt when a file's content changes, whatever its time: a
# file put back with an older time (cp -p, mv, a checkout) is rebuilt all the same.
#
# stamp.sh FILE STAMP: STAMP (build/stamps/FILE.sha256, which the Makefile remakes on every run)
# holds FILE's checksum; it is rewritten, and so its time moves on, only when the checksum
# changed: nothing changed, nothing is rebuilt. A stamp made for the first time takes FILE's own
# time, so that what was built from FILE before stays built. FILE gone: STAMP is removed (the
# object that listed it is remade, and lists it no more).
#
# stamp.sh --deps OBJECT DEPFILE SOURCE: run after OBJECT was compiled from SOURCE: writes
# OBJECT's stamps.d beside it (the Makefile includes every build/**/*.d), making OBJECT depend on
# the stamps of SOURCE and of every file under chapters/ or solutions/ that the compiler's
# dependency file DEPFILE lists (the headers it read), and makes those stamps that are missing
# or out of date (an out-of-date one dated as OBJECT: older objects built from the file are
# remade, OBJECT is not).
set -uo pipefail

stamp() { # stamp FILE STAMP [AS_OF]: AS_OF, an object just built, dates a rewritten stamp
    local sum
    if [[ ! -e $1 ]]; then
        rm -f "$2"
        return 0
    fi
    sum=$(sha256sum < "$1") || return 1
    if [[ -e $2 ]]; then
        [[ $(< "$2") == "$sum" ]] && return 0
        echo "$sum" > "$2" && { [[ -z ${3:-} ]] || touch -r "$3" "$2"; }
    else
        mkdir -p "$(dirname "$2")" && echo "$sum" > "$2" && touch -r "$1" "$2"
    fi
}

if [[ ${1:-} != --deps ]]; then
    stamp "$1" "$2"
    exit
fi
obj=$2 depfile=$3 source=$4
out=${obj%.o}.stamps.d
# the words of the dependency file that name a learner's or a reference's file, once each
files=$( { echo "$source"; [[ -r $depfile ]] && tr -s ' \\' '\n\n' < "$depfile"; } |
    grep -E '^(chapters|solutions)/[^:]*$' | awk '!seen[$0]++')
if [[ -z $files ]]; then
    rm -f "$out"
    exit 0
fi
stamps=
for f in $files; do
    stamp "$f" "build/stamps/$f.sha256" "$obj" || exit 1
    stamps+=" build/stamps/$f.sha256"
done
echo "$obj:$stamps" > "$out"
