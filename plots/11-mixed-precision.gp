# 11-mixed-precision.gp: chapter 11 on two panels.
#   left   each format's range of positive magnitudes, log2 of its smallest positive value to
#          log2 of its largest finite one, with the bits an element takes (scales included):
#          rows "format:NAME", columns 8 to 10 (lo_log2, hi_log2, bits), which the grader's
#          `grade --bench F` computes from the formats' definitions on any backend
#   right  on a GPU's rows: each launcher's GB/s (the bytes its operation must move) as a share
#          of the copy kernel's (row "copy") in the same run; until the H200 has run the bench
#          (plots/data/h200/11-mixed-precision.tsv), the panel says so
load "plots/style.gp"
set terminal pdfcairo size 6in,2.9in font "Latin Modern Roman,9" fontscale 0.8 enhanced
set output out

LO = 8; HI = 9; BITS = 10
FORMATS = "fp32 bf16 fp16 e5m2 e4m3 e2m1 mxfp8 mxfp4 nvfp4"
NAMES = "fp32 bf16 fp16 e5m2 e4m3 e2m1 MXFP8 MXFP4 NVFP4^{*}"
idx(k) = sum [i = 1:words(FORMATS)] ("format:".word(FORMATS, i) eq k ? i : 0)
is_format(k) = strstrt(k, "format:") == 1

# the copy's GB/s, and the measured rungs in the order they come
copy_bw = 0
stats data using (strcol(KERNEL) eq "copy" ? (copy_bw = column(GBS), 0) : 0) nooutput
rungs = ""
_add(k) = strstrt(rungs, " ".k." ") == 0 ? (rungs = rungs." ".k." ", 0) : 0
# (the GEMM rows of steps 3 and 4, which carry GFLOP/s, are a pair against their library each,
# not a share of the copy: the grader's bench prints their ratios)
stats data using ((!is_format(strcol(KERNEL)) && strcol(KERNEL) ne "copy" && \
                   strcol(KERNEL) ne "kernel" && column(GBS) > 0 && column(GFLOPS) == 0) ? \
                  _add(strcol(KERNEL)) : 0) nooutput
rank(k) = sum [i = 1:words(rungs)] (word(rungs, i) eq k ? i : 0)

set multiplot layout 1, 2

set title "positive magnitudes each format holds (log_2)"
set yrange [words(FORMATS) + 0.7:0.3]
set ytics () font ",8"
do for [i = 1:words(FORMATS)] { set ytics add (word(NAMES, i) i) }
set xrange [-160:160]
set xtics 32
set xlabel "log_2 |x|   (^{*} NVFP4: relative to its fp32 tensor scale)"
plot data using ((column(LO) + column(HI)) / 2):(idx(strcol(KERNEL))):(column(LO)):(column(HI)): \
         (idx(strcol(KERNEL)) - 0.3):(idx(strcol(KERNEL)) + 0.3) \
         with boxxyerror fs solid 0.5 lc rgb "#2166ac" notitle, \
     data using (column(HI) + 4):(idx(strcol(KERNEL))):(sprintf("%g bits", column(BITS))) \
         with labels left font ",7" notitle

set title "share of the copy kernel's GB/s (H200)"
unset ytics
set ytics
set xlabel ""
if (copy_bw > 0 && words(rungs) > 0) {
    set yrange [0:words(rungs) + 1]
    set ytics () font ",7"
    do for [i = 1:words(rungs)] { set ytics add (word(rungs, i) i) }
    set xrange [0:120]
    set xtics 20
    set xlabel "% of the copy's GB/s, same run"
    plot data using (!is_format(strcol(KERNEL)) && rank(strcol(KERNEL)) > 0 ? \
             50 * column(GBS) / copy_bw : NaN):(rank(strcol(KERNEL))): \
             (50 * column(GBS) / copy_bw):(0.3) with boxxyerror fs solid 0.5 lc rgb "#4dac26" notitle, \
         100 with lines lt 8 notitle
} else {
    unset border; unset xtics; unset ytics; unset grid
    set xrange [0:1]; set yrange [0:1]
    set label 1 "not measured on the H200 yet:\nmake bench CH=11 writes\nbuild/results/11-mixed-precision.tsv" \
        at 0.5, 0.5 center font ",9"
    plot NaN notitle
}
unset multiplot
