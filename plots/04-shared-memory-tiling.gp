# 04-shared-memory-tiling.gp: the ladder of chapter 04 on four panels.
#   top left      GFLOP/s of each rung against m = k = n, with cuBLAS SGEMM as the ceiling
#   top right     each rung's speedup over the naive kernel at the same size
#   bottom left   every rung and cuBLAS at the two odd shapes, 1000x999x1001 and 4096x4096x72
#                 (m x k x n: the second is a C 72 columns wide)
#   bottom right  the tuning table: every tile configuration at 4096^3, the best one marked,
#                 cuBLAS as the ceiling
# The Makefile passes only data= (the bench's rows); the tuning table is read from
# solutions/04-shared-memory-tiling/tune.tsv (written by `grade --tune`, committed per device),
# relative to the repository root where make runs gnuplot. Without it that panel says so.
load "plots/style.gp"
set terminal pdfcairo size 6in,5.8in font "Latin Modern Roman,9" fontscale 0.8 noenhanced
set output out
# style.gp styles five rungs and the ceiling (8); this ladder has eight rungs, so the ceiling
# moves to 9 here
set linetype 6 lc rgb "#01665e" pt 15 ps 0.7 lw 1.5
set linetype 7 lc rgb "#c51b7d" pt 3 ps 0.8 lw 1.5
set linetype 8 lc rgb "#542788" dt 1 pt 6 ps 0.7 lw 1.5
set linetype 9 lc rgb "#404040" dt 2 pt 1 ps 0.8 lw 1.5

tune = "solutions/04-shared-memory-tiling/tune.tsv"
have_tune = system("test -r '".tune."' && echo 1 || echo 0") + 0

ceiling = "cublas"
stats data using (_add(strcol(KERNEL))) nooutput
# a square shape ("2048x2048x2048") gives its size, any other NaN
square(s) = (size(s) == size(s) && s eq sprintf("%dx%dx%d", size(s), size(s), size(s))) ? size(s) : NaN
# naive time per square size, indexed by log2(size), for the speedup panel
array base[32]
stats data using (strcol(KERNEL) eq "naive" && square(strcol(SHAPE)) == square(strcol(SHAPE)) ? \
    (base[int(log(square(strcol(SHAPE))) / log(2) + 0.5)] = column(MS), 0) : 0) nooutput
speedup(s) = s == s ? base[int(log(s) / log(2) + 0.5)] / column(MS) : NaN
# position of a kernel in the ladder (1 = naive); cuBLAS last
pos(k) = k eq ceiling ? words(rungs) + 1 : sum [i = 1:words(rungs)] (word(rungs, i) eq k ? i : 0)

set datafile missing NaN
set multiplot layout 2,2

set logscale x 2
set xlabel "m = k = n"
set xtics (1024, 2048, 4096)
set xrange [900:4600]
set ylabel "GFLOP/s"
set format y "%g"
set yrange [0:*]
set key top left maxrows 5 width 1
# headroom above the lines for the key (two columns of five)
set offsets 0, 0, graph 1.5, 0
set title "fp32 matmul, square"
plot for [i = 1:words(rungs)] data using (square(strcol(SHAPE))):(only(word(rungs, i), GFLOPS)) \
         with linespoints lt i title word(rungs, i), \
     data using (square(strcol(SHAPE))):(only(ceiling, GFLOPS)) with linespoints lt 9 \
         title "cuBLAS"

set ylabel "speedup over naive"
set title "each rung over the naive kernel"
set key top left maxrows 4 width 1
set offsets 0, 0, graph 1.1, 0
plot for [i = 2:words(rungs)] data using (square(strcol(SHAPE))):\
         (strcol(KERNEL) eq word(rungs, i) ? speedup(square(strcol(SHAPE))) : NaN) \
         with linespoints lt i title word(rungs, i)

unset logscale x
set offsets 0, 0, graph 0.15, 0
set xrange [0.3:words(rungs) + 1.7]
unset xlabel
set xtics rotate by 30 right font ",7"
set xtics ("" 1)
do for [i = 1:words(rungs)] { set xtics add (word(rungs, i) i) }
set xtics add ("cuBLAS" words(rungs) + 1)
set ylabel "GFLOP/s"
set title "odd shapes (m x k x n)"
set style fill solid 0.8 noborder
set boxwidth 0.38
set key top left
plot data using (strcol(SHAPE) eq "1000x999x1001" ? pos(strcol(KERNEL)) - 0.2 : NaN):(column(GFLOPS)) \
         with boxes lt 2 title "1000x999x1001", \
     data using (strcol(SHAPE) eq "4096x4096x72" ? pos(strcol(KERNEL)) + 0.2 : NaN):(column(GFLOPS)) \
         with boxes lt 4 title "4096x4096x72"

set title "tile configurations at 4096x4096x4096"
if (have_tune) {
    stats data using (strcol(KERNEL) eq ceiling && strcol(SHAPE) eq "4096x4096x4096" ? \
        column(GFLOPS) : NaN) nooutput
    cublas4096 = STATS_records > 0 ? STATS_max : NaN
    # the candidates measured at 4096^3, in the table's order
    array cfg[64]
    ncfg = 0
    is4096(r) = column(2) == 4096 && column(3) == 4096 && column(4) == 4096
    stats tune using (is4096(0) ? (ncfg = ncfg + 1, cfg[ncfg] = strcol(5), 0) : 0) nooutput
    cfgpos(name) = sum [i = 1:ncfg] (cfg[i] eq name ? i : 0)
    set xrange [0.3:ncfg + 0.7]
    # too many candidates to name under the bars: their place in the table
    set xtics 1, 4 norotate font ""
    set xlabel "candidate, in tune.tsv's order"
    set boxwidth 0.7
    # the best candidates come within 10% of cuBLAS: room above its line for the key
    set offsets 0, 0, graph 0.45, 0
    set key top left
    plot tune using (is4096(0) && column(8) == 0 ? cfgpos(strcol(5)) : NaN):7 with boxes lt 2 \
             title "candidate", \
         tune using (is4096(0) && column(8) == 1 ? cfgpos(strcol(5)) : NaN):7 with boxes lt 3 \
             title "best (what tuned picks)", \
         cublas4096 with lines lt 9 title "cuBLAS SGEMM"
} else {
    unset xtics
    unset ytics
    set xrange [0:1]
    set yrange [0:1]
    set label 1 "no tuning table yet: run make tune CH=04" at 0.5, 0.5 center
    plot NaN notitle
}
unset multiplot
