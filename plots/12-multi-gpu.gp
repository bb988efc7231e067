# 12-multi-gpu.gp: chapter 12 on three panels.
#   left   the links: GB/s of a 256 MiB copy from one GPU to another (p2p_one_way), of two at once
#          in opposite directions (p2p_both_ways, both directions counted), and of the same bytes
#          through pinned host memory (through_host); rows only a machine of two GPUs writes
#   right  the all-reduce: algorithm bandwidth (a device's bytes over the time) against the
#          bytes a device holds, the ring of step 2 (kernels reading the neighbour), the ring of
#          step 3 (the copy engines), NCCL's ncclAllReduce (where the bench found the library)
#          and allreduce_host, a line for each device count
#   third  the data-parallel step (step 4): its GEMMs alone, its all-reduces alone, one after the
#          other (their sum) and the step, in ms; rows only a machine of two GPUs writes
# Rows: kernel "p2p_one_way", "p2p_both_ways", "through_host" at a shape of bytes; "ring",
# "ring_copy", "nccl" and "host" at a shape "NxCOUNT" (N devices, COUNT floats each); "dp_gemms",
# "dp_allreduces" and "dp_step" at a shape "NxLAYERSxBATCHxROWSxCOLS". The CPU backend's file holds ring
# and host rows in host time, which says nothing about a GPU: the left panel then says so.
load "plots/style.gp"
set terminal pdfcairo size 6in,3.4in font "Latin Modern Roman,9" fontscale 0.8 enhanced
set output out
set datafile missing NaN
set multiplot layout 1, 3

LINKS = "p2p_one_way p2p_both_ways through_host"
LINKNAMES = "one\\_way both\\_ways via\\_host"
lidx(k) = sum [i = 1:words(LINKS)] (word(LINKS, i) eq k ? i : 0)
# the device count and the floats of a shape "NxCOUNT"
devs(s) = strstrt(s, "x") ? (s[1:strstrt(s, "x") - 1]) + 0 : NaN
floats(s) = strstrt(s, "x") ? (s[strstrt(s, "x") + 1:strlen(s)]) + 0 : NaN

nlinks = 0; nnccl = 0; ncopy = 0; ndp = 0
stats data using (lidx(strcol(KERNEL)) > 0 ? (nlinks = nlinks + 1, 0) : \
                  strcol(KERNEL) eq "nccl" ? (nnccl = nnccl + 1, 0) : \
                  strcol(KERNEL) eq "ring_copy" ? (ncopy = ncopy + 1, 0) : \
                  strcol(KERNEL) eq "dp_step" ? (ndp = ndp + 1, 0) : 0) nooutput
# step 4's times: the GEMMs alone, the all-reduces alone, the step (the first row of each)
dp_g = NaN; dp_a = NaN; dp_s = NaN
stats data using (strcol(KERNEL) eq "dp_gemms" && dp_g != dp_g ? (dp_g = column(MS), 0) : \
                  strcol(KERNEL) eq "dp_allreduces" && dp_a != dp_a ? (dp_a = column(MS), 0) : \
                  strcol(KERNEL) eq "dp_step" && dp_s != dp_s ? (dp_s = column(MS), 0) : 0) nooutput
# the device counts of the ring rows, in the order they come
ns = ""
_addn(n) = strstrt(ns, sprintf(" %d ", n)) == 0 ? (ns = ns.sprintf(" %d ", n), 0) : 0
stats data using (strcol(KERNEL) eq "ring" ? _addn(devs(strcol(SHAPE))) : 0) nooutput
if (words(ns) == 0) { exit error "12-multi-gpu.gp: no ring rows in ".data }

if (nlinks > 0) {
    set title "the links, 256 MiB"
    set style fill solid 0.7 noborder
    set boxwidth 0.6
    set yrange [0:*]
    set xrange [0.4:words(LINKS) + 0.6]
    set xtics () scale 0
    do for [i = 1:words(LINKS)] { set xtics add (word(LINKNAMES, i) i) }
    set ylabel "GB/s"
    plot data using (lidx(strcol(KERNEL)) > 0 ? lidx(strcol(KERNEL)) : NaN):(column(GBS)) \
              with boxes lt 2 notitle, \
         data using (lidx(strcol(KERNEL)) > 0 ? lidx(strcol(KERNEL)) : NaN):(column(GBS)): \
              (sprintf("%.0f", column(GBS))) with labels offset 0, 0.6 font ",7" notitle
} else {
    unset border; unset xtics; unset ytics; unset grid
    set xrange [0:1]; set yrange [0:1]
    set label 1 "no GPU measurement here:\nthe links are measured\non a machine of two GPUs\n(make bench CH=12);\nthe middle panel is the\nCPU backend's host time" \
        at 0.5, 0.5 center font ",8"
    plot NaN notitle
    unset label 1
    set border 3; set xtics; set ytics; set grid
}

set title "the all-reduce"
set autoscale
set logscale x 2
set logscale y 10
set xtics 8
set format x "2^{%L}"
set xlabel "bytes a device"
set ylabel "algorithm GB/s (log)"
set key below maxrows 4 width -4 samplen 2 font ",7"
# x of a row of kernel k on the i-th device count, NaN elsewhere; a series a kernel the data has
sel(k, i) = strcol(KERNEL) eq k && devs(strcol(SHAPE)) == word(ns, i) + 0 ? \
            4 * floats(strcol(SHAPE)) : NaN
series(k, lt, name) = sprintf(', for [i = 1:words(ns)] data using (sel("%s", i)):(column(GBS)) ', k) . \
    sprintf('with linespoints lt %d dt i title sprintf("%s, %%s devices", word(ns, i))', lt, name)
PLOT = 'plot NaN notitle' . series("ring", 2, "ring")
if (ncopy > 0) { PLOT = PLOT . series("ring_copy", 3, "copy engines") }
if (nnccl > 0) { PLOT = PLOT . series("nccl", 4, "NCCL") }
PLOT = PLOT . series("host", 1, "through the host")
eval PLOT

unset logscale
set autoscale
set format x "% g"
unset xlabel
set title "the data-parallel step"
# the four bars: the GEMMs, the all-reduces, their sum, the step
$DP << EOD
1
2
3
4
EOD
if (ndp > 0) {
    set style fill solid 0.7 noborder
    set boxwidth 0.6
    set yrange [0:*]
    set xrange [0.4:4.6]
    set xtics ("GEMMs" 1, "all-reduces" 2, "both, in turn" 3, "the step" 4) scale 0 \
        rotate by 30 right font ",7"
    set ylabel "ms"
    set key off
    dpv(i) = i == 1 ? dp_g : i == 2 ? dp_a : i == 3 ? dp_g + dp_a : dp_s
    plot $DP using 1:(dpv($1)) with boxes lt 2 notitle, \
         $DP using 1:(dpv($1)):(sprintf("%.2f", dpv($1))) with labels offset 0, 0.6 font ",7" \
             notitle
} else {
    unset border; unset xtics; unset ytics; unset grid; unset key; unset ylabel
    set xrange [0:1]; set yrange [0:1]
    set label 2 "measured on a machine\nof two GPUs\n(make bench CH=12)" at 0.5, 0.5 center \
        font ",8"
    plot NaN notitle
    unset label 2
}
unset multiplot
