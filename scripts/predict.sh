#!/usr/bin/env bash
# predict.sh [COUNTS.tsv]: what `make predict` runs. A time model for every graded rung of
# chapters 01 to 05, checked against the committed H200 benches (plots/data/h200/0N-*.tsv):
# for each rung and bench shape, the predicted time, the measured one and their ratio, then
# the median absolute error and the worst ratio, beside those of a plain roofline on the same
# rows. scripts/predict.awk holds the model and says what each term is; the ceilings it
# divides by are plots/data/h200/ceilings.tsv, each with its source.
#
# The counts come from the CPU backend's instrumented build (the solutions' profile drivers,
# `--tsv RUNG SHAPE`, under EMU_DEVICE=h200): global requests and sectors, shared requests and
# wavefronts, warps, divergent branches, atomics. A bench shape is too large to run there, so
# each rung runs on a smaller shape with the same remainders (each dimension over 256 becomes
# 256 plus its remainder modulo 128; a length over 16384 in chapter 03 becomes 16384 plus its
# remainder modulo 4096), and the model scales the counts by the work ratio. That is exact
# where every dimension is a multiple of the tile (and of 128); on other shapes it leaves out
# the edge tiles' share. Chapter 04's tuned rung picks its tile by device and shape from
# solutions/04-shared-memory-tiling/tune.tsv: it runs on the small shape with the tile the
# H200 picked for the bench shape (a table of that one row, TUNE_TABLE). Chapter 05's rungs
# (TMA, wgmma) do not run on the CPU backend: the model gives them the tensor-core rates
# measured beside them, no counts. The block size of each rung (for the share of the SMs its
# grid fills) comes from a `--run` of the rung.
#
# COUNTS.tsv (default build/predict/counts.tsv) is rewritten each run; PREDICT_COUNTS=keep
# reads it as it is (to try the model without running the counts again: the Makefile does so
# with the committed counts, $PLOT_DATA/predict-counts.tsv, where they are committed).
# The table goes to stdout and to PREDICT_OUT (default build/predict/predict.tsv, headed by
# the benches' device, driver and latest date: the correlation plot, plots/predict.gp, draws
# it), with summary.tsv (the error figures) and misses.tsv (the rows off by more than 2x)
# beside it: what the book's appendix quotes.
#
#   scripts/predict.sh --appendix TEMPLATE OUT
# writes the book's appendix OUT from TEMPLATE (book/predict.md), each line that is a marker
# replaced by a table: <!-- predict: ceilings --> the ceilings with their units and sources
# ($PREDICT_DATA/ceilings.tsv); <!-- predict: errors --> both models' median error, worst row
# and rows off by more than 2x; <!-- predict: misses --> the rows the model misses by more
# than 2x (from the summary.tsv and misses.tsv beside PREDICT_OUT).
# Environment: MAKE; PREDICT_DATA (default plots/data/h200).
set -uo pipefail
counts=${1:-build/predict/counts.tsv}
data=${PREDICT_DATA:-plots/data/h200}
make_=${MAKE:-make}
chapters="01-naive-matmul 02-coalesced-transpose 03-warp-divergence 04-shared-memory-tiling"

if [[ ${1:-} == --appendix ]]; then
    template=${2:?usage: scripts/predict.sh --appendix TEMPLATE OUT} out=${3:?}
    dir=$(dirname "${PREDICT_OUT:-build/predict/predict.tsv}")
    for f in "$data/ceilings.tsv" "$dir/summary.tsv" "$dir/misses.tsv" "$template"; do
        [[ -s $f ]] || { echo "predict: $f is missing (make predict writes it)" >&2; exit 1; }
    done
    mkdir -p "$(dirname "$out")" || exit 1
    awk -F'\t' -v ceilings="$data/ceilings.tsv" -v summary="$dir/summary.tsv" \
        -v misses="$dir/misses.tsv" '
        function rows(file, f,    line, n) {   # the rows of a table, header dropped
            n = 0
            while ((getline line < file) > 0)
                if (line !~ /^#/ && ++n > 1) { f[n - 1] = line }
            close(file)
            return n > 0 ? n - 1 : 0
        }
        function md(s) { gsub(/\|/, "\\|", s); gsub(/\*/, "\\*", s); return s }
        function pct(x) { return sprintf("%.1f%%", x) }
        $0 == "<!-- predict: ceilings -->" {
            n = rows(ceilings, c)
            print "| ceiling | value | unit | source |"
            print "|------|----:|--------|--------------------------|"
            for (i = 1; i <= n; i++) {
                split(c[i], x, "\t")
                printf "| `%s` | %s | %s | %s |\n", x[1], x[2], md(x[3]), md(x[4])
            }
            next
        }
        $0 == "<!-- predict: errors -->" {
            n = rows(summary, s)
            for (i = 1; i <= n; i++) { split(s[i], x, "\t"); v[x[1], x[2]] = x[3] }
            print "| | the model | the plain roofline |"
            print "|---|---:|---:|"
            printf "| rows (rung and shape) | %d | %d |\n", v["model", "rows"],
                   v["roofline", "rows"]
            printf "| median absolute error | %s | %s |\n", pct(v["model", "median_error_pct"]),
                   pct(v["roofline", "median_error_pct"])
            if (("model", "rows_counts") in v)
                printf "| median absolute error, the %d rows with counts (chapters 01-04) " \
                       "| %s | %s |\n", v["model", "rows_counts"],
                       pct(v["model", "median_error_counts_pct"]),
                       pct(v["roofline", "median_error_counts_pct"])
            printf "| worst row, off by | %.2fx | %.2fx |\n", v["model", "worst_off"],
                   v["roofline", "worst_off"]
            printf "| rows off by more than 2x | %d | %d |\n", v["model", "misses_2x"],
                   v["roofline", "misses_2x"]
            next
        }
        $0 == "<!-- predict: misses -->" {
            n = rows(misses, m)
            if (!n) { print "*No row is off by more than 2x.*"; next }
            print "| rung | shape | predicted ms | measured ms | ratio | bound |"
            print "|----------------|------------|------:|------:|----:|------|"
            for (i = 1; i <= n; i++) {
                split(m[i], x, "\t")
                printf "| %s %s | %s | %s | %s | %s | %s |\n", substr(x[1], 1, 2), x[2],
                       x[3], x[4], x[5], x[6], x[7]
            }
            next
        }
        { print }' "$template" > "$out.tmp" && mv "$out.tmp" "$out" || exit 1
    exit 0
fi

# the shape a rung's counts are gathered on, for bench shape $2 of chapter $1
small_shape() {
    awk -v c="$1" -v s="$2" 'BEGIN {
        n = split(s, d, "x"); out = ""
        for (i = 1; i <= n; i++) {
            if (c ~ /^03/) v = d[i] > 16384 ? 16384 + d[i] % 4096 : d[i]
            else v = d[i] > 256 ? 256 + d[i] % 128 : d[i]
            out = out (i > 1 ? "x" : "") v
        }
        print out }'
}

# the bench's rungs of chapter $1 that its profile driver $2 runs, as "bench-name shape" lines
bench_rows() {
    local list
    list=$("$2" --list | tr '\n' ' ')
    awk -F'\t' -v list=" $list " '!/^#/ && $1 != "chapter" {
        r = $2; gsub(":", "/", r)
        if (index(list, " " r " ")) print $2 "\t" $3 }' "$data/$1.tsv"
}

# the threads of a block of the rung's first kernel, from its table at the default shape
block_threads() {
    awk '/ kernel .*: grid / {
        if (match($0, /block \([0-9]+,[0-9]+,[0-9]+\)/)) {
            split(substr($0, RSTART + 7, RLENGTH - 8), b, ",")
            print b[1] * b[2] * b[3]; exit
        } }'
}

if [[ ${PREDICT_COUNTS:-} != keep ]]; then
    $make_ --no-print-directory -s build/programs.tsv || exit 1
    # shellcheck source=scripts/programs.sh
    source scripts/programs.sh
    bins=()
    for c in $chapters; do
        bin=$(program_path profile solution "$c" - emu) || {
            echo "predict: no profile driver for $c in build/programs.tsv" >&2; exit 1; }
        bins+=("$bin")
    done
    $make_ --no-print-directory -s "${bins[@]}" || {
        echo "predict: the profile drivers did not build" >&2; exit 1; }
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$(dirname "$counts")"
    status=0
    {
        printf 'chapter\trung\tshape\tsmall\tthreads\t'
        printf '%s\n' "$("${bins[0]}" --tsv coalesced 2>/dev/null | head -n 1)"
        for c in $chapters; do
            bin=$(program_path profile solution "$c" - emu)
            while IFS=$'\t' read -r rung shape; do
                r=${rung//:/\/} small=$(small_shape "$c" "$shape") env=(env EMU_DEVICE=h200)
                if [[ $c == 04-* && $r == tuned ]]; then
                    # the tile the H200 picked at the bench shape (MxKxN is m, k, n), on the
                    # small shape and on the default one
                    awk -F'\t' -v s="$shape" -v g="$small" '
                        BEGIN { split(s, d, "x"); split(g, e, "x") }
                        /^#/ { next }
                        $1 == "device" { print; next }
                        $1 == "NVIDIA H200" && $2 == d[1] && $3 == d[3] && $4 == d[2] && $8 == 1 {
                            OFS = "\t"; $2 = e[1]; $3 = e[3]; $4 = e[2]; print
                            $2 = $3 = $4 = 128; print }' \
                        solutions/04-shared-memory-tiling/tune.tsv > "$work/tune.tsv"
                    env+=(TUNE_TABLE="$work/tune.tsv")
                fi
                row=$(EMU_PROFILE_QUIET=1 "${env[@]}" "$bin" --tsv "$r" "$small" 2>"$work/err" |
                      tail -n 1)
                threads=$("${env[@]}" "$bin" --run "$r" 2>/dev/null | block_threads)
                if [[ -z $row || -z $threads || $row != "$r"$'\t'* ]]; then
                    echo "predict: $c/$r on $small did not run: $(head -c 200 "$work/err")" >&2
                    status=1
                    continue
                fi
                printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$rung" "$shape" "$small" "$threads" "$row"
            done < <(bench_rows "$c" "$bin")
        done
    } > "$counts.tmp" && mv "$counts.tmp" "$counts"
    [[ $status -eq 0 ]] || exit 1
fi
[[ -s $counts ]] || { echo "predict: no counts in $counts" >&2; exit 1; }
table=${PREDICT_OUT:-build/predict/predict.tsv}
dir=$(dirname "$table")
mkdir -p "$dir" || exit 1
benches=("$data"/0[1-5]-*.tsv)
{
    # where the measured times come from: the benches' device and driver, their latest date
    awk '/^# device: / && !d { print; d = 1 } /^# driver: / && !r { print; r = 1 }
         /^# date: / && $3 > date { date = $3 }
         END { if (date) print "# date: " date }' "${benches[@]}"
    echo "# the model (scripts/predict.awk) of each rung against its committed bench:" \
         "counts from $counts, ceilings from $data/ceilings.tsv"
    awk -v summary="$dir/summary.tsv" -v misses_file="$dir/misses.tsv" -f scripts/predict.awk \
        "$data/ceilings.tsv" "$counts" "${benches[@]}" || exit 1
} > "$table.tmp" || { rm -f "$table.tmp"; exit 1; }
mv "$table.tmp" "$table" || exit 1
grep -v '^# \(device\|driver\|date\|the model\)' "$table"
