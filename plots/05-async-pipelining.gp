# 05-async-pipelining.gp: TFLOP/s of each rung against size with cuBLAS BF16 (left), each rung's
# speedup over the synchronous baseline (middle), and the stage-count sweep at 4096^3 (right).
# Square shapes only on the first two panels; the odd shapes are in the lesson's table.
load "plots/style.gp"

ceiling = "cublas"
# the sweep's rows ("stages:N") are not rungs, nor are the roof of the mma.sync path and the
# padded copies that steps 2 to 5 make at odd shapes (pad_rows)
stats data using (strstrt(strcol(KERNEL), "stages:") || strcol(KERNEL) eq "mma_sync_peak" || \
    strcol(KERNEL) eq "pad_rows" ? 0 : _add(strcol(KERNEL))) nooutput
mma_peak = NaN
stats data using (strcol(KERNEL) eq "mma_sync_peak" ? (mma_peak = column(GFLOPS) / 1000, 0) : 0) \
    nooutput
# m = k = n: a square problem
square(s) = (strstrt(s, "x") == 0) ? 0 : \
    (size(s) == size(s[strstrt(s, "x") + 1:]) && \
     size(s) == (s[strstrt(s, "x") + 1 + strstrt(s[strstrt(s, "x") + 1:], "x"):]) + 0)
sq(col) = square(strcol(SHAPE)) ? column(col) : NaN
array base[16]
stats data using (strcol(KERNEL) eq "sync" && square(strcol(SHAPE)) ? \
    (base[int(log(size(strcol(SHAPE))) / log(2) + 0.5)] = column(MS), 0) : 0) nooutput
speedup(s) = base[int(log(s) / log(2) + 0.5)] / column(MS)
stages(k) = strstrt(k, "stages:") ? (k[8:]) + 0 : NaN

set terminal pdfcairo size 6in,2.4in font "Latin Modern Roman,9" fontscale 0.8 enhanced
set output out
set datafile missing NaN
set multiplot layout 1,3
set logscale x 2
set xlabel "m = k = n"
set ylabel "TFLOP/s"
set yrange [0:*]
set format y "%g"
set title "bf16 in, fp32 accumulate"
# six rungs, cuBLAS and the roof: no corner of the panel is free of lines, so the y range
# leaves room above them (cuBLAS's 800 or so) for a key of two columns
set key top left Left reverse maxrows 4 samplen 1 width -1 font ",7"
set yrange [0:1900]
plot for [i = 1:words(rungs)] data using (sq(0) == sq(0) ? size(strcol(SHAPE)) : NaN):\
         (strcol(KERNEL) eq word(rungs, i) ? sq(GFLOPS) / 1000 : NaN) \
         with linespoints lt i title word(rungs, i), \
     data using (size(strcol(SHAPE))):(strcol(KERNEL) eq "cublas" ? sq(GFLOPS) / 1000 : NaN) \
         with linespoints lt 8 title "cuBLAS BF16", \
     mma_peak with lines dt 2 lt 8 title "mma.sync roof"

set key top left Left reverse maxrows 3 samplen 1 width -1 font ",7"
set yrange [0:15]
set ylabel "speedup over sync"
set title "the same math, overlapped"
plot for [i = 2:words(rungs)] data using (size(strcol(SHAPE))):\
         (strcol(KERNEL) eq word(rungs, i) && square(strcol(SHAPE)) ? \
          speedup(size(strcol(SHAPE))) : NaN) \
         with linespoints lt i title word(rungs, i)

unset logscale x
set yrange [0:*]
set xlabel "stages"
set ylabel "TFLOP/s at 4096^3"
set xrange [1.5:4.5]
set xtics 1
set title "the stage-count sweep"
plot data using (stages(strcol(KERNEL))):(column(GFLOPS) / 1000) with linespoints lt 3 notitle
unset multiplot
