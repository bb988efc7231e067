#!/usr/bin/env bash
# regress.sh FRESH.tsv... : each bench row that `make bench` (or scripts/gpu-run.sh) wrote,
# against the committed measurement of the same chapter, rung, shape and device
# (plots/data/DEVICE/NN-slug.tsv of the same file name whose rows name that device). A row more
# than 5% slower than the committed one is flagged
#     SLOWER  chapter  kernel  shape  committed ms -> fresh ms (+x%)
# with both runs' clocks (their files' "# clocks:" lines) beside it, since a lower clock alone
# makes a row slower; a row the committed file lacks is reported as new, one no committed file
# of its device holds at all as unmatched. Exit status 1 when a row is flagged, else 0.
#   REGRESSION_TOLERANCE=5   the percent slower that is flagged
#   REGRESSION_DATA=plots/data   where the committed measurements lie
set -uo pipefail
tolerance=${REGRESSION_TOLERANCE:-5}
data=${REGRESSION_DATA:-plots/data}
[[ $# -gt 0 ]] || { echo "usage: scripts/regress.sh FRESH.tsv..." >&2; exit 2; }
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
    awk -F'\t' -v tol="$tolerance" -v fresh="$fresh" '
        function clocks_of(line) { sub(/^# clocks: */, "", line); return line }
        /^# clocks:/ {
            if (FILENAME == fresh) fclk = clocks_of($0); else cclk[FILENAME] = clocks_of($0)
            next
        }
        /^#/ || $1 == "chapter" { next }
        FILENAME != fresh { ms[$1, $2, $3, $7] = $4; where[$1, $2, $3, $7] = FILENAME
                            dev[$7] = 1; next }
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
            pct = 100 * ($4 / ms[k] - 1)
            if (pct > tol) {
                printf "SLOWER   %s  %s  %s  %s -> %s ms (%+.1f%%)\n", $1, $2, $3, ms[k], $4, pct
                printf "         committed (%s): %s\n", where[k],
                       cclk[where[k]] ? cclk[where[k]] : "clocks not recorded"
                printf "         this run: %s\n", fclk ? fclk : "clocks not recorded"
                slower++
            } else same++
        }
        END {
            printf "regress: %s: %d rows within %s%% of the committed, %d slower\n", fresh, same,
                   tol, slower
            exit slower > 0
        }' "${committed[@]}" "$fresh" || status=1
done
exit $status
