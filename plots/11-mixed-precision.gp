# 11-mixed-precision.gp: chapter 11, on four panels where the bench has run on a GPU:
#   formats  each format's range of positive magnitudes, log2 of its smallest positive value to
#            log2 of its largest finite one, with the bits an element takes (scales included):
#            rows "format:NAME", columns 8 to 10 (lo_log2, hi_log2, bits), which the grader's
#            `grade --bench F` computes from the formats' definitions on any backend
#   steps 1, 2  each quantiser's and dequantiser's GB/s (the bytes its operation must move) as
#            a share of the copy kernel's (row "copy") in the same run
#   step 3   the block-scaled FP8 GEMM's TFLOP/s beside cuBLASLt's FP8 GEMM (per-tensor
#            scales) at each shape, with the ratio and the SM clock (column 11) while the
#            block-scaled one ran: the largest shapes run power-capped
#   step 4   the MXFP4 GEMV's time and cuBLAS's BF16 GEMM's against the batch m (k = n = 8192),
#            and the speedup (right axis) under the bound the bytes set: 16 bits a bf16 weight
#            against MXFP4's 4.25
# The CPU backend's file holds the formats alone: then two panels, the second saying so.
load "plots/style.gp"

LO = 8; HI = 9; BITS = 10; MHZ = 11
FORMATS = "fp32 bf16 fp16 e5m2 e4m3 e2m1 mxfp8 mxfp4 nvfp4"
NAMES = "fp32 bf16 fp16 e5m2 e4m3 e2m1 MXFP8 MXFP4 NVFP4^{*}"
idx(k) = sum [i = 1:words(FORMATS)] ("format:".word(FORMATS, i) eq k ? i : 0)
is_format(k) = strstrt(k, "format:") == 1
# a column on the rows of kernel k at shape s, NaN elsewhere (for stats: STATS_max)
pick(k, s, col) = (strcol(KERNEL) eq k && strcol(SHAPE) eq s) ? column(col) : NaN

# the copy's GB/s, and the quantisers' rows in the order they come (the GEMM rows of steps 3
# and 4 carry GFLOP/s and have panels of their own)
copy_bw = 0
stats data using (strcol(KERNEL) eq "copy" ? (copy_bw = column(GBS), 0) : 0) nooutput
rungs = ""
_add(k) = strstrt(rungs, " ".k." ") == 0 ? (rungs = rungs." ".k." ", 0) : 0
stats data using ((!is_format(strcol(KERNEL)) && strcol(KERNEL) ne "copy" && \
                   strcol(KERNEL) ne "kernel" && column(GBS) > 0 && column(GFLOPS) == 0) ? \
                  _add(strcol(KERNEL)) : 0) nooutput
rank(k) = sum [i = 1:words(rungs)] (word(rungs, i) eq k ? i : 0)
# the shapes of steps 3 and 4, in the order they come
shapes3 = ""; shapes4 = ""
_add3(s) = strstrt(shapes3, " ".s." ") == 0 ? (shapes3 = shapes3." ".s." ", 0) : 0
_add4(s) = strstrt(shapes4, " ".s." ") == 0 ? (shapes4 = shapes4." ".s." ", 0) : 0
stats data using (strcol(KERNEL) eq "fp8_blockscaled" ? _add3(strcol(SHAPE)) : \
                  strcol(KERNEL) eq "mxfp4_gemv" ? _add4(strcol(SHAPE)) : 0) nooutput
gpu = copy_bw > 0 && words(rungs) > 0

if (gpu) {
    set terminal pdfcairo size 6in,5.4in font "Latin Modern Roman,9" fontscale 0.8 enhanced
    set output out
    set multiplot layout 2, 2
} else {
    set terminal pdfcairo size 6in,2.7in font "Latin Modern Roman,9" fontscale 0.8 enhanced
    set output out
    set multiplot layout 1, 2
}

set title "positive magnitudes each format holds (log_2)"
set yrange [words(FORMATS) + 0.7:0.3]
set ytics () font ",8"
do for [i = 1:words(FORMATS)] { set ytics add (word(NAMES, i) i) }
set xrange [-160:190]
set xtics 64
set xlabel "log_2 |x|   (^{*} NVFP4: relative to its fp32 tensor scale)"
plot data using ((column(LO) + column(HI)) / 2):(idx(strcol(KERNEL))):(column(LO)):(column(HI)): \
         (idx(strcol(KERNEL)) - 0.3):(idx(strcol(KERNEL)) + 0.3) \
         with boxxyerror fs solid 0.5 lc rgb "#2166ac" notitle, \
     data using (column(HI) + 4):(idx(strcol(KERNEL))):(sprintf("%g bits", column(BITS))) \
         with labels left font ",7" notitle

if (!gpu) {
    set title ""
    unset border; unset xtics; unset ytics; unset grid; unset xlabel
    set xrange [0:1]; set yrange [0:1]
    set label 1 "not measured on the H200 yet:\nmake bench CH=11 writes\nbuild/results/11-mixed-precision.tsv" \
        at 0.5, 0.5 center font ",9"
    plot NaN notitle
    unset multiplot
    exit
}

set title "steps 1, 2: the quantisers"
set yrange [0:words(rungs) + 1]
set ytics () font ",7" noenhanced
do for [i = 1:words(rungs)] { set ytics add (word(rungs, i) i) }
set xrange [0:110]
set xtics 20
set xlabel "% of the copy's GB/s"
plot data using (!is_format(strcol(KERNEL)) && rank(strcol(KERNEL)) > 0 ? \
         50 * column(GBS) / copy_bw : NaN):(rank(strcol(KERNEL))): \
         (50 * column(GBS) / copy_bw):(0.3) with boxxyerror fs solid 0.5 lc rgb "#4dac26" notitle, \
     100 with lines lt 8 notitle
set ytics enhanced

# step 3: a pair of bars a shape, the ratio and the clock above them
n3 = words(shapes3)
array F3[n3 > 0 ? n3 : 1]; array L3[n3 > 0 ? n3 : 1]; array M3[n3 > 0 ? n3 : 1]
set autoscale xy # stats keeps to the ranges set: the last panel's would leave out every value
do for [i = 1:n3] {
    stats data using (pick("fp8_blockscaled", word(shapes3, i), GFLOPS)) nooutput
    F3[i] = STATS_max / 1000
    stats data using (pick("fp8_blockscaled", word(shapes3, i), MHZ)) nooutput
    M3[i] = STATS_max
    stats data using (pick("cublaslt_fp8", word(shapes3, i), GFLOPS)) nooutput
    L3[i] = STATS_max / 1000
}
set title "step 3: the FP8 GEMM"
set xrange [0.4:n3 + 0.6]
set yrange [0:2300]
set xtics () font ",8"
do for [i = 1:n3] {
    set xtics add (sprintf("%d^3", size(word(shapes3, i))) i)
    set label 10 + i sprintf("%.0f%%, %.0f MHz", 100 * F3[i] / L3[i], M3[i]) \
        at i, (F3[i] > L3[i] ? F3[i] : L3[i]) + 110 center front font ",7"
}
set ytics 400
set xlabel "m = k = n (e4m3, D in bf16)"
set ylabel "TFLOP/s"
set key top center reverse Left samplen 1 maxrows 2
set style fill solid 0.6
set boxwidth 0.3
plot L3 using ($1 - 0.16):(L3[$1]) with boxes lc rgb "#404040" title "cuBLASLt FP8 (per-tensor scales)", \
     F3 using ($1 + 0.16):(F3[$1]) with boxes lc rgb "#2166ac" title "block-scaled (1x128, 128x128)"
do for [i = 1:n3] { unset label 10 + i }
unset ylabel

# step 4: the times against m, and the speedup
n4 = words(shapes4)
array T4[n4 > 0 ? n4 : 1]; array TB[n4 > 0 ? n4 : 1]; array MM[n4 > 0 ? n4 : 1]
set autoscale xy
do for [i = 1:n4] {
    MM[i] = size(word(shapes4, i))
    stats data using (pick("mxfp4_gemv", word(shapes4, i), MS)) nooutput
    T4[i] = STATS_max * 1000
    stats data using (pick("cublas_bf16", word(shapes4, i), MS)) nooutput
    TB[i] = STATS_max * 1000
}
set title "step 4: MXFP4 at small batch"
set logscale x 2
set xrange [0.8:20]
set xtics (1, 2, 4, 8, 16) font ",8"
set xlabel "m, the batch (k = n = 8192)"
set ylabel "µs"
set yrange [0:120]
set ytics 20 nomirror
set y2label "speedup"
set y2range [0:9]
set y2tics 1
set key top left reverse Left samplen 1 maxrows auto
plot TB using (MM[$1]):(TB[$1]) with linespoints lt 8 title "cuBLAS BF16", \
     T4 using (MM[$1]):(T4[$1]) with linespoints lt 2 title "MXFP4, decoded in registers", \
     T4 using (MM[$1]):(TB[$1] / T4[$1]) axes x1y2 with linespoints lt 3 title "speedup (right)", \
     16 / 4.25 axes x1y2 with lines lt 8 dt 3 title sprintf("the bytes' bound, %.2fx (right)", 16 / 4.25)
unset multiplot
