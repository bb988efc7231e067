# programs.sh: sourced by the scripts that run what make built. The manifest build/programs.tsv
# (make writes it; the Makefile says what its columns are) is where each program lies: no script
# spells a path under build/ for a grader or a profile driver.
#   program_path PROGRAM KIND CHAPTER NAME BACKEND   its path (PROGRAM grade, profile or
#                         sanitize; KIND solution, starter or mutant; NAME the known-bug
#                         kernel's, "-" for the others); prints nothing and returns 1 when the
#                         manifest has no such program
#   program_twin PATH BACKEND   the program of the same kind, chapter and name as PATH, on
#                         BACKEND (the CPU backend's model of the rung a GPU profile driver ran)
#   side_kind SIDE        a make SIDE's kind: solutions -> solution, chapters -> starter
#   grader_modes PATH     the modes a grader says it has (--describe): "grade bench tune"
# PROGRAMS=FILE reads another manifest of the same form.
programs=${PROGRAMS:-build/programs.tsv}

program_path() {
    [[ -r $programs ]] || return 1
    awk -F'\t' -v p="$1" -v k="$2" -v c="$3" -v n="${4:--}" -v b="$5" '
        $1 == p && $2 == k && $3 == c && $4 == n && $5 == b { print $6; found = 1; exit }
        END { exit !found }' "$programs"
}

program_twin() {
    [[ -r $programs ]] || return 1
    awk -F'\t' -v path="$1" -v b="$2" '
        NR == FNR { if ($6 == path) { p = $1; k = $2; c = $3; n = $4 } next }
        $1 == p && $2 == k && $3 == c && $4 == n && $5 == b { print $6; found = 1; exit }
        END { exit !found }' "$programs" "$programs"
}

side_kind() {
    case $1 in
        solutions) echo solution ;;
        chapters) echo starter ;;
        *) echo "$1" ;;
    esac
}

grader_modes() {
    "$1" --describe 2>/dev/null | awk -F'\t' '$1 == "modes" { print $2 }'
}
