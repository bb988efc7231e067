# 06-error-checking.gp: the time of one pipeline iteration (three ~20 us kernels) against how
# often the host loop synchronises, with and without a cudaGetLastError after every launch
# (left), and the cost of each loop over the unchecked loop that synchronises only at the end
# (right). Kernels are named "checked:N" and "unchecked:N", N = 1, 10, 100 or "never"; ms is
# per iteration. Each bar carries its value: on the H200 the cadences 100 and "never" cost
# 0.0%, which a bar alone does not show, and the checked and unchecked bars differ by the noise.
load "plots/style.gp"

CADENCES = "1 10 100 never"
kind(k) = strstrt(k, ":") ? k[1:strstrt(k, ":") - 1] : ""
cad(k) = strstrt(k, ":") ? k[strstrt(k, ":") + 1:] : ""
# 1-based position of a cadence on the x axis, 0 when it is not one
cidx(k) = sum [j = 1:words(CADENCES)] (cad(k) eq word(CADENCES, j) ? j : 0)

# the floor: the unchecked loop that synchronises once, at the end
stats data using (strcol(KERNEL) eq "unchecked:never" ? column(MS) : NaN) nooutput
floor_ms = STATS_min
stats data using (cad(strcol(KERNEL)) ne "" ? column(MS) : NaN) nooutput
top_us = 1e3 * STATS_max
pct(ms) = 100.0 * (ms / floor_ms - 1)
# one decimal, and no "-0.0" for a bar that is the floor within the noise
pct_label(ms) = sprintf("%.1f", abs(pct(ms)) < 0.05 ? 0.0 : pct(ms))

set datafile missing NaN
set style fill solid 0.85 noborder
set boxwidth 0.38
set xrange [0.4:words(CADENCES) + 0.6]
set xtics () scale 0
set for [j = 1:words(CADENCES)] xtics add (word(CADENCES, j) j)
set xlabel "synchronise every N iterations"
set multiplot layout 1,2

set ylabel "us per iteration"
set yrange [0:1.12 * top_us]   # room for the labels above the tallest bar
set title "one iteration: three launches"
unset key
plot data using (kind(strcol(KERNEL)) eq "unchecked" ? cidx(strcol(KERNEL)) - 0.2 : NaN):\
         (column(MS) * 1e3) with boxes lt 1, \
     data using (kind(strcol(KERNEL)) eq "checked" ? cidx(strcol(KERNEL)) + 0.2 : NaN):\
         (column(MS) * 1e3) with boxes lt 2, \
     data using (cidx(strcol(KERNEL)) > 0 ? \
                 cidx(strcol(KERNEL)) + (kind(strcol(KERNEL)) eq "checked" ? 0.2 : -0.2) : NaN):\
         (column(MS) * 1e3):(sprintf("%.1f", column(MS) * 1e3)) \
         with labels offset 0,0.5 font ",7"

set ylabel "% over unchecked, synchronised once"
set yrange [0:*]
set title "what the cadence costs"
set key top right reverse Left samplen 2
plot data using (kind(strcol(KERNEL)) eq "unchecked" ? cidx(strcol(KERNEL)) - 0.2 : NaN):\
         (pct(column(MS))) with boxes lt 1 title "no launch checks", \
     data using (kind(strcol(KERNEL)) eq "checked" ? cidx(strcol(KERNEL)) + 0.2 : NaN):\
         (pct(column(MS))) with boxes lt 2 \
         title "cudaGetLastError after each launch", \
     data using (cidx(strcol(KERNEL)) > 0 ? \
                 cidx(strcol(KERNEL)) + (kind(strcol(KERNEL)) eq "checked" ? 0.2 : -0.2) : NaN):\
         (pct(column(MS)) > 0 ? pct(column(MS)) : 0):(pct_label(column(MS))) \
         with labels offset 0,0.5 font ",7", \
     5 with lines lt 8 title "the goal: 5%"
unset multiplot
