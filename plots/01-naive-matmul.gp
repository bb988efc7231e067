# 01-naive-matmul.gp: GFLOP/s of each rung against size, with cuBLAS as the ceiling (left),
# and each rung's speedup over the uncoalesced kernel at the same size (right).
load "plots/style.gp"

ceiling = "cublas"
stats data using (_add(strcol(KERNEL))) nooutput
# uncoalesced time per size, indexed by log2(size), for the speedup panel
array base[16]
stats data using (strcol(KERNEL) eq "uncoalesced" ? \
    (base[int(log(size(strcol(SHAPE))) / log(2) + 0.5)] = column(MS), 0) : 0) nooutput
speedup(s) = base[int(log(s) / log(2) + 0.5)] / column(MS)

set datafile missing NaN
set multiplot layout 1,2
set logscale x 2
set logscale y 10
set xlabel "m = k = n"
set ylabel "GFLOP/s"
set format y "%g"
set title "fp32 matmul"
plot for [i = 1:words(rungs)] data using (size(strcol(SHAPE))):(only(word(rungs, i), GFLOPS)) \
         with linespoints lt i title word(rungs, i), \
     data using (size(strcol(SHAPE))):(only("cublas", GFLOPS)) with linespoints lt 8 \
         title "cuBLAS SGEMM"

unset logscale y
set ylabel "speedup over uncoalesced"
set yrange [0:*]
set title "the same arithmetic, coalesced"
plot for [i = 2:words(rungs)] data using (size(strcol(SHAPE))):\
         (strcol(KERNEL) eq word(rungs, i) ? speedup(size(strcol(SHAPE))) : NaN) \
         with linespoints lt i title word(rungs, i)
unset multiplot
