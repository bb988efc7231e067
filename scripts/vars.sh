#!/usr/bin/env bash
# vars.sh: the variables a learner types (make grade CH=... SOLUTIONS=... SEED=...), checked
# before anything is installed, built or graded, so that a typo is refused with the forms each
# takes and build/grade.tsv is left as it was.
#
# vars.sh chapters "CH" "CHAPTERS_ALL": the chapters CH names, in the book's order, one line; or
# a message naming CH and the chapters (stderr) and exit status 2. The Makefile takes CHAPTERS
# from it. CH holds one or more chapters, apart by spaces or commas, each given as its number
# (4 or 04), its name (04-shared-memory-tiling) or the start of its name that no other chapter
# shares (04-shared).
#
# vars.sh check: every variable, from the environment the Makefile hands it: CH (as above, with
# CHAPTERS_ALL), STEP (a step number, with one chapter), SOLUTIONS (0 or 1, no or yes, false or
# true; empty is 0), BACKEND (auto, cuda or emu), SEED (empty, or the form harness_seed takes:
# decimal digits, or 0x and hex digits, below 2^64), GRADE_LIMIT and GRADE_GRACE (seconds,
# scripts/bound.sh). Exit status 0, or 2 after one line per variable refused.
set -uo pipefail

chapters() { # chapters CH CHAPTERS_ALL
    local want=${1//,/ } all=$2 w c n matches picked=" " bad=0
    for w in $want; do
        matches=
        if [[ $w =~ ^[0-9]{1,2}$ ]]; then
            printf -v n '%02d' "$((10#$w))"
            for c in $all; do [[ $c == "$n"-* ]] && matches+=" $c"; done
        else
            for c in $all; do [[ $c == "$w" ]] && matches=" $c"; done
            if [[ -z $matches ]]; then
                for c in $all; do [[ $c == "$w"* ]] && matches+=" $c"; done
            fi
        fi
        read -ra matches <<< "$matches"
        if ((${#matches[@]} == 1)); then
            picked+="${matches[0]} "
        elif ((${#matches[@]} == 0)); then
            echo "CH=\"$1\": no chapter is named $w" >&2; bad=1
        else
            echo "CH=\"$1\": $w names ${#matches[@]} chapters (${matches[*]}): give its number" >&2
            bad=1
        fi
    done
    if ((bad)); then
        echo "  CH takes one or more chapters, apart by spaces: each its number (CH=4 or CH=04)," \
             "its name or the start of it (CH=04-shared); the chapters are:" >&2
        for c in $all; do echo "    $c   (CH=${c%%-*})" >&2; done
        return 2
    fi
    # in the book's order, each once
    local out=
    for c in $all; do [[ $picked == *" $c "* ]] && out+=" $c"; done
    echo "${out# }"
}

# seed_ok S: S is a seed as harness_seed reads it (harness/harness.c): decimal digits, or 0x (or
# 0X) and hex digits, and its value below 2^64
seed_ok() {
    local d
    if [[ $1 =~ ^0[xX]([0-9a-fA-F]+)$ ]]; then
        d=${BASH_REMATCH[1]}
        while [[ $d == 0?* ]]; do d=${d#0}; done
        ((${#d} <= 16))
    elif [[ $1 =~ ^[0-9]+$ ]]; then
        d=$1
        while [[ $d == 0?* ]]; do d=${d#0}; done
        # 20 digits: as strings of one length compare, so do their values (bash's own
        # arithmetic stops at 2^63)
        # shellcheck disable=SC2071
        ((${#d} < 20)) || { ((${#d} == 20)) && [[ ! $d > 18446744073709551615 ]]; }
    else
        return 1
    fi
}

check() {
    local bad=0 chosen
    local CH=${CH:-}
    if [[ -n ${CH// /} ]]; then
        chosen=$(chapters "$CH" "${CHAPTERS_ALL:-}") || bad=1
        if [[ -n ${STEP:-} && $bad -eq 0 && $chosen == *" "* ]]; then
            echo "STEP=$STEP: a step is of one chapter, and CH=\"$CH\" names several" \
                 "(make grade CH=04 STEP=$STEP)" >&2
            bad=1
        fi
    fi
    if [[ -n ${STEP:-} && ! $STEP =~ ^[1-9][0-9]?$ ]]; then
        echo "STEP=$STEP: a step is a number (make grade CH=04 STEP=3)" >&2; bad=1
    fi
    case ${SOLUTIONS:-} in
        ''|0|1|no|yes|false|true) ;;
        *) echo "SOLUTIONS=$SOLUTIONS: give SOLUTIONS=1 (or yes, true) to grade the solutions," \
                "SOLUTIONS=0 (or no, false) for your files in chapters/" >&2; bad=1 ;;
    esac
    case ${BACKEND:-auto} in
        auto|cuda|emu) ;;
        *) echo "BACKEND=$BACKEND: choose auto (a GPU where one answers, else the CPU), cuda" \
                "or emu (the CPU backend)" >&2; bad=1 ;;
    esac
    if [[ -n ${SEED:-} ]] && ! seed_ok "$SEED"; then
        echo "SEED=$SEED: not a seed: give the decimal number an earlier run printed" \
             "(SEED=1234), or 0x and hex digits (SEED=0x4d2), below 2^64" >&2; bad=1
    fi
    local v
    for v in GRADE_LIMIT GRADE_GRACE; do
        if [[ -n ${!v:-} && ! ${!v} =~ ^[1-9][0-9]{0,6}$ ]]; then
            echo "$v=${!v}: give a whole number of seconds ($v=900)" >&2; bad=1
        fi
    done
    ((bad == 0)) || return 2
}

case ${1:-} in
    chapters) chapters "$2" "$3" ;;
    check) check ;;
    *) echo "usage: scripts/vars.sh chapters \"CH\" \"CHAPTERS_ALL\" | check" >&2; exit 2 ;;
esac
