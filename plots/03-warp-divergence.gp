# 03-warp-divergence.gp: each demo pair's time at the largest size, the divergent way against
# the warp-uniform way (left), and the speedup of each pair at every size measured (right).
# Kernels are named "pair:rung" ("parity:lane", "parity:warp", ...), the divergent rung first;
# compaction's pair is an atomic a kept element against one a warp.
load "plots/style.gp"

PAIRS = "parity keys reduce process compact"
label(j) = j == 1 ? "lane vs\nwarp parity" : j == 2 ? "unsorted vs\nsorted keys" : \
           j == 3 ? "reduce: interleaved\nvs sequential" : j == 4 ? "task: divergent\nvs remapped" : \
           "compaction: an atomic\na lane vs a warp"
pair(k) = strstrt(k, ":") ? k[1:strstrt(k, ":") - 1] : ""
rung(k) = strstrt(k, ":") ? k[strstrt(k, ":") + 1:] : ""
# 1-based position of a pair in PAIRS, 0 when it is not one
pidx(k) = sum [j = 1:words(PAIRS)] (pair(k) eq word(PAIRS, j) ? j : 0)
slow(k) = strstrt(" lane unsorted interleaved divergent atomic ", " ".rung(k)." ") > 0
# the library's rows (compact:cub) are scale, not a rung of a pair: left out of both panels
lib(k) = rung(k) eq "cub"

# the sizes measured: the largest, and each one's slot (sizes are powers of two)
stats data using (strcol(KERNEL) eq "kernel" ? NaN : column(SHAPE)) nooutput
nmax = STATS_max
nmin = STATS_min
slot(n) = int(log(n / nmin) / log(2) + 0.5)
# the divergent rung's time per pair and size, for the speedup
array base[words(PAIRS) * 16]
stats data using (slow(strcol(KERNEL)) && pidx(strcol(KERNEL)) > 0 ? \
    (base[1 + (pidx(strcol(KERNEL)) - 1) * 16 + slot(column(SHAPE))] = column(MS), 0) : 0) \
    nooutput
speedup(k, n) = pidx(k) > 0 ? base[1 + (pidx(k) - 1) * 16 + slot(n)] / column(MS) : NaN

set datafile missing NaN
set style fill solid 0.85 noborder
set boxwidth 0.38
set xrange [0.4:words(PAIRS) + 0.6]
set xtics () scale 0 font ",8"
set bmargin 3.5
set for [j = 1:words(PAIRS)] xtics add (label(j) j)
set multiplot layout 1,2

set logscale y 10
set format y "%g"
set ylabel "ms (log scale)"
set title sprintf("time at n = %.0f", nmax)
plot data using (strcol(KERNEL) ne "kernel" && column(SHAPE) == nmax && slow(strcol(KERNEL)) ? \
         pidx(strcol(KERNEL)) - 0.2 : NaN):(column(MS)) with boxes lt 1 title "divergent", \
     data using (strcol(KERNEL) ne "kernel" && column(SHAPE) == nmax && !slow(strcol(KERNEL)) && \
         !lib(strcol(KERNEL)) ? \
         pidx(strcol(KERNEL)) + 0.2 : NaN):(column(MS)) with boxes lt 2 title "warp-uniform"

unset logscale y
set ylabel "speedup of the warp-uniform rung"
set yrange [0:*]
set key bottom right
set title "the same work, warps that do not split"
plot data using (strcol(KERNEL) ne "kernel" && !slow(strcol(KERNEL)) && !lib(strcol(KERNEL)) && \
         column(SHAPE) < nmax ? \
         pidx(strcol(KERNEL)) - 0.12 : NaN):(speedup(strcol(KERNEL), column(SHAPE))) \
         with points lt 3 title sprintf("n = %.0f", nmin), \
     data using (strcol(KERNEL) ne "kernel" && !slow(strcol(KERNEL)) && !lib(strcol(KERNEL)) && \
         column(SHAPE) == nmax ? \
         pidx(strcol(KERNEL)) + 0.12 : NaN):(speedup(strcol(KERNEL), column(SHAPE))) \
         with points lt 2 title sprintf("n = %.0f", nmax), \
     1 with lines lt 8 title "no gain"
unset multiplot
