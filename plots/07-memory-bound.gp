# 07-memory-bound.gp: chapter 07 on eight panels.
#   top two rows   GB/s of each row operation against the row length (log x), fp32 above and
#                  bf16 below, one panel for softmax, RMSNorm and LayerNorm each: the given
#                  baseline (three-pass softmax, two-moment norms), the step (4 or 5), and the
#                  copy kernel of the same bytes as the ceiling. Every shape holds 2^25
#                  elements (rows x cols), so only the row length changes along x.
#   bottom row     the sum: GB/s of each rung against n (log-log), with CUB's
#                  DeviceReduce::Sum as the ceiling, and each rung's share of CUB at each n.
# Rows: kernel names as in the bench ("softmax_f32", "copy_bf16", "sum_cub", ...); shapes
# "ROWSxCOLS" for the row operations and "N" for the sums.
load "plots/style.gp"
set terminal pdfcairo size 6in,6.4in font "Latin Modern Roman,9" fontscale 0.8 enhanced
set output out

# the row length of a "ROWSxCOLS" shape; NaN for a sum's "N" and the header
cols(s) = strstrt(s, "x") ? (s[strstrt(s, "x") + 1:]) + 0 : NaN
# n of a sum's shape; NaN for a row shape and the header
n_of(s) = (strstrt(s, "x") == 0 && s ne "shape") ? s + 0 : NaN
gbs_of(k) = strcol(KERNEL) eq k ? column(GBS) : NaN

# CUB's GB/s per n (indexed by log2 n), for the share panel
array cub[40]
stats data using (strcol(KERNEL) eq "sum_cub" ? \
    (cub[int(log(n_of(strcol(SHAPE))) / log(2) + 0.5)] = column(GBS), 0) : 0) nooutput
share_of_cub(k) = strcol(KERNEL) eq k ? \
    100 * column(GBS) / cub[int(log(n_of(strcol(SHAPE))) / log(2) + 0.5)] : NaN
# the atomic's largest GB/s, where its line's label goes
atomic_max = 0
stats data using (strcol(KERNEL) eq "sum_atomic" && column(GBS) > atomic_max ? \
    (atomic_max = column(GBS), 0) : 0) nooutput

set datafile missing NaN
set multiplot

# ---- the row operations: 2 rows of 3 panels ---------------------------------------------
OPS    = "softmax rmsnorm layernorm"
NAMES  = "softmax RMSNorm LayerNorm"
TYPES  = "f32 bf16"
# the given baseline of each op, and the step that replaces it
base(op, t) = op eq "softmax" ? "softmax_three_pass_".t : op."_two_moment_".t
step(op, t) = op."_".t
type_name(t) = t eq "f32" ? "fp32" : "bf16"

# the row panels share one y range, with room above the copy's line for the key
stats data using (strcol(KERNEL)[1:5] eq "copy_" ? column(GBS) : NaN) nooutput
ymax_rows = 1.15 * STATS_max
W = 1.0 / 3; H = 0.30; TOP = 0.955

# one key for the six panels, on a strip across the top: each panel draws the same three roles
# in the same styles (drawn here from points outside the strip's range, so only the key shows)
set origin 0, TOP
set size 1, 1 - TOP
unset border; unset tics; unset grid
set xrange [0:1]; set yrange [0:1]
set lmargin 0; set rmargin 0; set tmargin 0; set bmargin 0
set key center center horizontal maxrows 1 samplen 2 width 2
plot 2 with linespoints lt 1 title "given baseline", \
     2 with linespoints lt 2 title "the step (4 or 5)", \
     2 with linespoints lt 8 title "copy (the ceiling)"
unset key
set border 3; set tics nomirror; set grid
set logscale x 2
set xrange [181:370000]
set xtics ("256" 256, "1k" 1024, "4k" 4096, "16k" 16384, "64k" 65536, "256k" 262144) font ",7"
set format y "%g"
set yrange [0:ymax_rows]
set lmargin 9; set rmargin 1; set tmargin 1.5; set bmargin 1.8
do for [j = 1:2] {
    t = word(TYPES, j)
    do for [i = 1:3] {
        op = word(OPS, i)
        set origin (i - 1) * W, TOP - j * H
        set size W, H
        set title sprintf("%s, %s", word(NAMES, i), type_name(t))
        set ylabel i == 1 ? "GB/s (in + out)" : ""
        # one x label under the bottom row of the three, drawn with its middle panel
        if (j == 2 && i == 2) {
            set label 1 "row length (cols), at rows x cols = 2^{25} elements" \
                at screen 0.5, screen TOP - 2 * H - 0.006 center
        } else { unset label 1 }
        plot data using (cols(strcol(SHAPE))):(gbs_of(base(op, t))) with linespoints lt 1 \
                 notitle, \
             data using (cols(strcol(SHAPE))):(gbs_of(step(op, t))) with linespoints lt 2 \
                 notitle, \
             data using (cols(strcol(SHAPE))):(gbs_of("copy_".t)) with linespoints lt 8 \
                 notitle
    }
}

unset label 1

# ---- the sum: GB/s against n, and the share of CUB ---------------------------------------
SUMS = "sum_atomic sum_tree sum_shuffle sum_single_pass"
sum_title(i) = i == 2 ? "tree (step 1)" : i == 3 ? "shuffle (step 2)" : "single pass (step 3)"
set xtics ("2^{20}" 1048576, "2^{24}" 16777216, "2^{28}" 268435456) font ",9"
set xrange [600000:480000000]
set xlabel "n (floats summed; 4n bytes read)"
set tmargin 1.6; set bmargin 3

# the key of both sum panels is drawn on the right-hand one, where there is room above the
# lines; the atomic's line (on the left panel only) is named by a label just above it
set key default
set key samplen 2 reverse Left
unset key
set origin 0, 0
set size 0.5, TOP - 2 * H - 0.025
set logscale y 10
set yrange [1:10000]
set offsets 0, 0, 0, 0
set ylabel "GB/s read (log scale)"
if (atomic_max > 0) {
    set label 2 "atomic (given)" at 1200000, atomic_max * 2.2 left font ",8"
}
set title "sum of n floats against CUB"
plot data using (n_of(strcol(SHAPE))):(gbs_of(word(SUMS, 1))) with linespoints lt 1 notitle, \
     for [i = 2:words(SUMS)] data using (n_of(strcol(SHAPE))):(gbs_of(word(SUMS, i))) \
         with linespoints lt i title sum_title(i), \
     data using (n_of(strcol(SHAPE))):(gbs_of("sum_cub")) with linespoints lt 8 notitle

set origin 0.5, 0
unset label 2
unset logscale y
# room above the lines for the key: the largest share (or CUB's 100%) at 30% of the height
share_max = 100
do for [i = 2:words(SUMS)] {
    stats data using (share_of_cub(word(SUMS, i))) nooutput
    share_max = STATS_max > share_max ? STATS_max : share_max
}
set yrange [0:share_max / 0.3]
set offsets 0, 0, 0, 0
set ylabel "% of CUB's GB/s"
set key top left spacing 0.9
set title "each rung's share of CUB"
plot for [i = 2:words(SUMS)] data using (n_of(strcol(SHAPE))):(share_of_cub(word(SUMS, i))) \
         with linespoints lt i title sum_title(i), \
     100 with lines lt 8 title "CUB (the ceiling)"
unset multiplot
