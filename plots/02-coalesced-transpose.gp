# 02-coalesced-transpose.gp: GB/s of each rung against size, with the copy kernel of the same
# bytes as the ceiling (left), and each rung's speedup over the naive transpose, with the
# copy's speedup as the ceiling there too (right).
load "plots/style.gp"
# style.gp styles five rungs; the solution's sixth (grouped) gets its own. Titles are
# noenhanced: a rung named padded_8 is not "padded" with a subscript 8
set linetype 6 lc rgb "#01665e" pt 15 ps 0.7 lw 1.5

ceiling = "copy"
stats data using (_add(strcol(KERNEL))) nooutput
# naive time per size, indexed by log2(size), for the speedup panel
array base[32]
stats data using (strcol(KERNEL) eq "naive" ? \
    (base[int(log(size(strcol(SHAPE))) / log(2) + 0.5)] = column(MS), 0) : 0) nooutput
speedup(s) = base[int(log(s) / log(2) + 0.5)] / column(MS)

set datafile missing NaN
set multiplot layout 1,2
set logscale x 2
set xlabel "rows = cols"
set ylabel "GB/s (8 x rows x cols bytes / time)"
# headroom above the lines for the key: small sizes sit low at the left, the copy high at the right
set offsets 0, 0, graph 0.5, 0
set key top left
set format y "%g"
set yrange [0:*]
set title "fp32 transpose against a copy of the same bytes"
plot for [i = 1:words(rungs)] data using (size(strcol(SHAPE))):(only(word(rungs, i), GBS)) \
         with linespoints lt i title word(rungs, i) noenhanced, \
     data using (size(strcol(SHAPE))):(only("copy", GBS)) with linespoints lt 8 \
         title "copy (the ceiling)"

set ylabel "speedup over naive"
set title "the same bytes, coalesced"
set offsets 0, 0, 0, 0
# six entries in two columns: one column would climb into the tiled line
set key bottom right maxrows 3
plot for [i = 2:words(rungs)] data using (size(strcol(SHAPE))):\
         (strcol(KERNEL) eq word(rungs, i) ? speedup(size(strcol(SHAPE))) : NaN) \
         with linespoints lt i title word(rungs, i) noenhanced, \
     data using (size(strcol(SHAPE))):\
         (strcol(KERNEL) eq "copy" ? speedup(size(strcol(SHAPE))) : NaN) \
         with linespoints lt 8 title "copy (the ceiling)"
unset multiplot
