#!/usr/bin/env bash
# regress.sh FRESH.tsv... : each bench row that `make bench` (or scripts/gpu-run.sh) wrote,
# against the committed measurement of the same chapter, rung, shape and device
# (plots/data/DEVICE/NN-slug.tsv of the same file name whose rows name that device). A row more
# than 5% slower than the committed one is measured again before it is flagged: the chapter's
# bench runs once more (one run for all of a file's slower rows) and a row is flagged only when
# the second measurement is slower too:
#     SLOWER  chapter  kernel  shape  committed ms -> fresh ms (+x%), re-measured ms (+y%)
# with the clocks of every run beside it, since a lower clock alone makes a row slower: the SM
# clock and power sampled while the row itself ran (its sm_mhz and watts columns) where both the
# committed and the fresh row carry them, else each file's "# clocks:" line (scripts/clocks.sh),
# the whole run's. A row the second run finds within the tolerance is printed as
# "noise" and not flagged; one the second run could not measure is flagged on the first
# measurement alone, and says so. A row the committed file lacks is reported as new, one no
# committed file of its device holds at all as unmatched. Exit status 1 when a row is flagged,
# else 0.
#   REGRESSION_TOLERANCE=5       the percent slower that is flagged
#   REGRESSION_DATA=plots/data   where the committed measurements lie
#   REGRESSION_REMEASURE=CMD     how to measure again: CMD CHAPTER FILE runs CHAPTER's bench
#                                into FILE (its words split on blanks, CHAPTER and FILE added).
#                                GRADE_BENCH_ONLY in its environment lists the rows wanted,
#                                "kernel<TAB>shape" a line: a bench that can measure single
#                                rungs measures those; the graders' benches measure every rung,
#                                and only those rows are read. "none": no second measurement.
#                                Unset: the chapter's grader from build/programs.tsv (PROGRAMS)
#                                on the GPU, `grade --bench FILE`, under scripts/clocks.sh; of
#                                the solutions, or of the side REGRESSION_SIDE (or SIDE, as make
#                                sets it: chapters or solutions) names.
#
#   scripts/regress.sh --planted OUTDIR
# the check checked, on a GPU: a known-bug kernel that is right but slow (PLANTED_CHAPTER,
# default 02-coalesced-transpose; PLANTED_MUTANT, default naive-transpose-as-yours: step 1's
# launcher runs the naive kernel) has its grader, built by `make gpu-build` and found in the
# manifest, bench the chapter into OUTDIR/CHAPTER.tsv (under scripts/clocks.sh), and the
# comparison above runs on those rows, measuring again with the same grader. Exit status 0 when
# it flags a rung (the planted slowdown is caught), 1 when it flags none, 2 when the grader is
# not built or its bench fails.
set -uo pipefail
if [[ ${1:-} == --bench-with ]]; then # --bench-with GRADER CHAPTER FILE: a second measurement
    exec scripts/clocks.sh "$4" "$2" --bench "$4"
fi
if [[ ${1:-} == --planted ]]; then
    out=${2:?usage: scripts/regress.sh --planted OUTDIR}
    chapter=${PLANTED_CHAPTER:-02-coalesced-transpose}
    mutant=${PLANTED_MUTANT:-naive-transpose-as-yours}
    # shellcheck source=scripts/programs.sh
    source scripts/programs.sh
    bin=$(program_path grade mutant "$chapter" "$mutant" cuda) && [[ -x $bin ]] || {
        echo "regress: no grader of the known-bug kernel $chapter/$mutant built for the GPU" \
             "(make gpu-build builds it)" >&2
        exit 2
    }
    mkdir -p "$out" || exit 2
    echo "regress: a planted slowdown: $chapter with tests/mutants/$chapter/$mutant.patch"
    sed -n 's/^Bug: /  /p' "tests/mutants/$chapter/$mutant.patch" 2>/dev/null | cut -c1-100
    scripts/clocks.sh "$out/$chapter.tsv" "$bin" --bench "$out/$chapter.tsv" \
        > "$out/bench.log" 2>&1 && [[ -s $out/$chapter.tsv ]] || {
        echo "regress: the known-bug kernel's bench failed: $(tail -n 3 "$out/bench.log")" >&2
        exit 2
    }
    report=$(REGRESSION_REMEASURE="scripts/regress.sh --bench-with $bin" \
             scripts/regress.sh "$out/$chapter.tsv")
    echo "$report"
    if grep -q '^SLOWER ' <<<"$report"; then
        echo "regress: the planted slowdown is caught: $(grep -c '^SLOWER ' <<<"$report")" \
             "rung(s) flagged"
        exit 0
    fi
    echo "regress: the planted slowdown was NOT flagged"
    exit 1
fi
tolerance=${REGRESSION_TOLERANCE:-5}
data=${REGRESSION_DATA:-plots/data}
remeasure=${REGRESSION_REMEASURE:-}
[[ $# -gt 0 ]] || { echo "usage: scripts/regress.sh FRESH.tsv..." >&2; exit 2; }
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT

# measure CHAPTER FILE: the chapter's bench once more, rows into FILE; 1, with a line on
# stdout saying why, when it cannot
measure() {
    local chapter=$1 file=$2 bin kind
    if [[ $remeasure == none ]]; then
        echo "regress: REGRESSION_REMEASURE=none: the slower rows are not measured again"
        return 1
    fi
    if [[ -n $remeasure ]]; then
        # shellcheck disable=SC2086 # the command's words, split on purpose
        $remeasure "$chapter" "$file" > "$work/remeasure.log" 2>&1 || {
            echo "regress: measuring $chapter again failed ($remeasure):" \
                 "$(tail -n 2 "$work/remeasure.log" | tr '\n' ' ' | cut -c1-200)"
            return 1
        }
        return 0
    fi
    # shellcheck source=scripts/programs.sh
    source scripts/programs.sh
    case ${REGRESSION_SIDE:-${SIDE:-solutions}} in
        chapters) kind=starter ;;
        *) kind=solution ;;
    esac
    bin=$(program_path grade "$kind" "$chapter" - cuda) && [[ -x $bin ]] || {
        echo "regress: no $kind grader of $chapter built for the GPU (make gpu-build):" \
             "the slower rows are not measured again"
        return 1
    }
    scripts/clocks.sh "$file" "$bin" --bench "$file" > "$work/remeasure.log" 2>&1 || {
        echo "regress: measuring $chapter again failed ($bin --bench):" \
             "$(tail -n 2 "$work/remeasure.log" | tr '\n' ' ' | cut -c1-200)"
        return 1
    }
}

# awk functions both passes share: clock_columns() on a header line finds its sm_mhz and watts
# columns (none in a file written before rows carried them); row_clocks() on a row says its
# clocks, "SM 1980 MHz, 402 W", or "" where it has none (NA: not sampled)
# shellcheck disable=SC2016 # awk's own $, not the shell's
row_clocks_awk='
    function clock_columns(   i) {
        mhz_col[FILENAME] = w_col[FILENAME] = 0
        for (i = 1; i <= NF; i++) {
            if ($i == "sm_mhz") mhz_col[FILENAME] = i
            if ($i == "watts") w_col[FILENAME] = i
        }
    }
    function row_clocks(   m, w) {
        m = mhz_col[FILENAME] ? $(mhz_col[FILENAME]) : ""
        w = w_col[FILENAME] ? $(w_col[FILENAME]) : ""
        if (m !~ /^[0-9.]+$/) return ""
        return "SM " m " MHz, " (w ~ /^[0-9.]+$/ ? w " W" : "power not read")
    }'

status=0
for fresh in "$@"; do
    [[ -s $fresh ]] || continue
    name=$(basename "$fresh")
    # the committed files of this name (one a device)
    committed=()
    for f in "$data"/*/"$name"; do
        [[ -f $f && $f -ef $fresh ]] && continue
        [[ -f $f ]] && committed+=("$f")
    done
    if [[ ${#committed[@]} -eq 0 ]]; then
        echo "regress: $name: no committed measurement of that name under $data/: every row new"
        continue
    fi
    # first pass: every row against the committed one; the slower rows into suspects
    # (chapter kernel shape device committed_ms fresh_ms committed_file, then the committed and
    # the fresh row's own clocks, "SM 1980 MHz, 402 W", empty where a row has none)
    suspects=$work/suspects
    awk -F'\t' -v OFS='\t' -v tol="$tolerance" -v fresh="$fresh" -v suspects="$suspects" '
        '"$row_clocks_awk"'
        /^#/ { next }
        $1 == "chapter" { clock_columns(); next }
        FILENAME != fresh { ms[$1, $2, $3, $7] = $4; where[$1, $2, $3, $7] = FILENAME
                            clk[$1, $2, $3, $7] = row_clocks(); dev[$7] = 1; next }
        {
            k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $7
            if (!($7 in dev)) {
                printf "unmatched  %s  %s  %s: no committed file holds %s\n", $1, $2, $3, $7
                next
            }
            if (!(k in ms)) {
                printf "new      %s  %s  %s  %s ms (no committed row)\n", $1, $2, $3, $4
                next
            }
            if (100 * ($4 / ms[k] - 1) > tol)
                print $1, $2, $3, $7, ms[k], $4, where[k], clk[k], row_clocks() > suspects
            else same++
        }
        END { print same + 0 > (suspects ".same") }' "${committed[@]}" "$fresh"
    same=$(cat "$suspects.same" 2>/dev/null || echo 0)
    again=$work/again.tsv
    rm -f "$again"
    if [[ -s $suspects ]]; then
        chapter=$(head -n 1 "$suspects" | cut -f1)
        n=$(wc -l < "$suspects")
        echo "regress: $name: $n row(s) more than $tolerance% slower: measuring $chapter again"
        GRADE_BENCH_ONLY=$(cut -f2,3 "$suspects") measure "$chapter" "$again" ||
            rm -f "$again"
    fi
    # second pass: each suspect against its second measurement
    [[ -s $suspects ]] || : > "$suspects"
    second=()
    [[ -s $again ]] && second=("$again")
    awk -F'\t' -v tol="$tolerance" -v fresh="$fresh" -v again="$again" -v same="$same" '
        '"$row_clocks_awk"'
        function clocks_of(line) { sub(/^# clocks: */, "", line); return line }
        FILENAME == ARGV[1] { sus[++ns] = $0; next }
        /^# clocks:/ {
            if (FILENAME == fresh) fclk = clocks_of($0)
            else if (FILENAME == again) aclk = clocks_of($0)
            else cclk[FILENAME] = clocks_of($0)
            next
        }
        /^#/ { next }
        $1 == "chapter" { clock_columns(); next }
        FILENAME == again { re[$1, $2, $3, $7] = $4; reclk[$1, $2, $3, $7] = row_clocks()
                            have_again = 1 }
        END {
            for (i = 1; i <= ns; i++) {
                split(sus[i], s, "\t")
                k = s[1] SUBSEP s[2] SUBSEP s[3] SUBSEP s[4]
                pct = 100 * (s[6] / s[5] - 1)
                line = sprintf("%s  %s  %s  %s -> %s ms (%+.1f%%)", s[1], s[2], s[3], s[5], s[6],
                               pct)
                if (k in re) {
                    rpct = 100 * (re[k] / s[5] - 1)
                    line = line sprintf(", re-measured %s ms (%+.1f%%)", re[k], rpct)
                    if (rpct <= tol) {
                        printf "noise    %s: within %s%% the second time, not flagged\n", line,
                               tol
                        noise++
                        continue
                    }
                } else {
                    line = line (have_again ? ", not in the second run" : ", not re-measured") \
                           ": flagged on one measurement"
                }
                printf "SLOWER   %s\n", line
                if (s[8] != "" && s[9] != "") {
                    # both rows carry the clocks sampled while they ran
                    printf "         committed (%s): %s while the row ran\n", s[7], s[8]
                    printf "         this run: %s while the row ran\n", s[9]
                    if (have_again)
                        printf "         re-measured: %s\n", reclk[k] != "" ? \
                               reclk[k] " while the row ran" : (aclk ? aclk : "clocks not recorded")
                } else {
                    printf "         committed (%s): %s\n", s[7],
                           cclk[s[7]] ? cclk[s[7]] : "clocks not recorded"
                    printf "         this run: %s\n", fclk ? fclk : "clocks not recorded"
                    if (have_again)
                        printf "         re-measured: %s\n", aclk ? aclk : "clocks not recorded"
                }
                slower++
            }
            printf "regress: %s: %d rows within %s%% of the committed, %d slower", fresh,
                   same + noise, tol, slower
            if (noise) printf " (%d slower at first, within %s%% when measured again)", noise, tol
            printf "\n"
            exit slower > 0
        }' "$suspects" "${committed[@]}" "$fresh" "${second[@]}" ||
        status=1
    rm -f "$suspects" "$suspects.same"
done
exit $status
