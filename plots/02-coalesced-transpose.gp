# 02-coalesced-transpose.gp: GB/s of each rung against size, with the copy kernel of the same
# bytes as the ceiling (left), and each rung's speedup over the naive transpose, with the
# copy's speedup as the ceiling there too (right).
load "plots/style.gp"
# style.gp styles five rungs; the sixth and seventh get their own: step 5's vec4 (or, in a
# file measured before it, the solution's grouped rung) and then grouped. Titles are
# noenhanced: a rung named padded_8 is not "padded" with a subscript 8
set linetype 6 lc rgb "#01665e" pt 15 ps 0.7 lw 1.5
set linetype 7 lc rgb "#bf812d" pt 3 ps 0.7 lw 1.5

ceiling = "copy"
stats data using (_add(strcol(KERNEL))) nooutput
# naive time per size, indexed by log2(size), for the speedup panel
array base[32]
stats data using (strcol(KERNEL) eq "naive" ? \
    (base[int(log(size(strcol(SHAPE))) / log(2) + 0.5)] = column(MS), 0) : 0) nooutput
speedup(s) = base[int(log(s) / log(2) + 0.5)] / column(MS)

set datafile missing NaN
# one key for both panels, in a strip of its own below them: eight entries do not fit inside
# either panel without covering a line
set multiplot
set size 0.5, 0.87
set origin 0, 0.13
unset key
set logscale x 2
set xlabel "rows = cols"
set ylabel "GB/s (8 x rows x cols bytes / time)"
set format y "%g"
set yrange [0:*]
set title "fp32 transpose against a copy of the same bytes"
plot for [i = 1:words(rungs)] data using (size(strcol(SHAPE))):(only(word(rungs, i), GBS)) \
         with linespoints lt i, \
     data using (size(strcol(SHAPE))):(only("copy", GBS)) with linespoints lt 8

set origin 0.5, 0.13
set ylabel "speedup over naive"
set title "the same bytes, coalesced"
plot for [i = 2:words(rungs)] data using (size(strcol(SHAPE))):\
         (strcol(KERNEL) eq word(rungs, i) ? speedup(size(strcol(SHAPE))) : NaN) \
         with linespoints lt i, \
     data using (size(strcol(SHAPE))):\
         (strcol(KERNEL) eq "copy" ? speedup(size(strcol(SHAPE))) : NaN) \
         with linespoints lt 8

# the key: the same lines, drawn with no data on an empty plot the width of the figure
set size 1, 0.13
set origin 0, 0
unset border
unset tics
unset xlabel
unset ylabel
unset title
unset logscale
set xrange [0:1]
set yrange [0:1]
set margins 0, 0, 0, 0
set key center center horizontal maxcols 4 width -3
plot for [i = 1:words(rungs)] NaN with linespoints lt i title word(rungs, i) noenhanced, \
     NaN with linespoints lt 8 title "copy (the ceiling)"
unset multiplot
