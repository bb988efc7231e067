# 09-occupancy.gp: the warps an SM holds of a block of 256 threads with no shared memory, against
# the registers a thread, on each of the four devices (H200, A100, L4, T4): the answers of the
# toolkit's occupancy calculator (cuda_occupancy.h), which the chapter's grader writes with
# `grade --bench F` from the limits of chapters/09-occupancy/devices.cu. Arithmetic, not a
# measurement. Kernels are named "occupancy:DEVICE", shapes "256xREGS"; column 9 is the warps.
# On a GPU the bench adds measured rows (steps 2 to 4) to the same file, and the figure a panel
# for each step it finds: step 2's bandwidth against the bytes in flight an SM, with the knee
# measured and the one Little's law predicted; step 3's rows at 4096^3 and 1024^3, the
# launcher's choice circled; step 4's slices (three panels).
load "plots/style.gp"

WARPS = 9
DEVICES = "h200 a100 l4 t4"
LABELS = "H200 A100 L4 T4"
regs(s) = strstrt(s, "x") ? (s[strstrt(s, "x") + 1:]) + 0 : NaN
# only the calculator's rows: on a GPU the same file holds measured rows of other shapes
on(dev) = strcol(KERNEL) eq "occupancy:".dev
regs_of(dev) = on(dev) ? regs(strcol(SHAPE)) : NaN
warps_of(dev) = on(dev) ? column(WARPS) : NaN

# the measured rows' own columns: the SMs it ran on, the bytes in flight an SM, the row chosen
SMS = 10; BYTES = 11; CHOSEN = 12
# the rows of one kernel alone (a series drawn with lines must hold no other row)
rows(k) = "< awk -F'\t' '$2 == \"".k."\"' '".data."'"
rows_at(k, shape) = "< awk -F'\t' '$2 == \"".k."\" && $3 == \"".shape."\"' '".data."'"
count(k) = system("grep -c '".k."' '".data."' || true") + 0
swept = count("inflight:sweep")       # step 2
budgeted = count("	budget:chosen")   # step 3, on the whole GPU
measured = count("slice:copy")        # step 4: a panel of the slices' scaling
rungs = count("slice:rung:")          # and chapter 04's ladder in each slice: two panels more
panels = 1 + (swept > 0) + (budgeted > 0) + (measured > 0) + 2 * (rungs > 0)
if (panels > 1) {
    ROWS = (panels + 1) / 2
    set terminal pdfcairo size 6, 2.5 * ROWS font "Latin Modern Roman,9" fontscale 0.8 enhanced
    set output out
    set multiplot layout ROWS, 2
}

set key top right noreverse Right
set xlabel "registers a thread (256-thread block)"
set ylabel "warps resident an SM"
set xrange [0:260]
set yrange [0:70]
set xtics 32
set ytics 16
plot for [i = 1:words(DEVICES)] data \
     using (regs_of(word(DEVICES, i))):(warps_of(word(DEVICES, i))) \
     with steps lt i title word(LABELS, i)

if (swept > 0) {
    # step 2: stream_sum's GB/s against the KB in flight an SM (blocks x threads x loads x vec x
    # 4 bytes), and the knee (where the curve first reaches 80% of its top) beside Little's
    # law's prediction from the top and the unloaded latency
    set autoscale xy
    stats data using (strcol(KERNEL) eq "inflight:knee" ? column(BYTES) : NaN) nooutput
    KNEE = STATS_max / 1024
    stats data using (strcol(KERNEL) eq "inflight:knee" ? column(GBS) : NaN) nooutput
    AT = STATS_max # the knee's GB/s: 80% of the top
    stats data using (strcol(KERNEL) eq "inflight:predicted" ? column(BYTES) : NaN) nooutput
    PRED = STATS_max / 1024
    stats data using (strcol(KERNEL) eq "inflight:sweep" ? column(GBS) : NaN) nooutput
    TOP = STATS_max
    set xlabel "KB in flight an SM"
    set ylabel "GB/s"
    set logscale x 2
    set xrange [0.75:192]
    set xtics (1, 2, 4, 8, 16, 32, 64, 128)
    set ytics autofreq
    set key top left reverse Left samplen 2
    set yrange [0:1.3 * TOP] # headroom above the curve for the key
    set arrow 1 from KNEE, 0 to KNEE, AT nohead lt 1 dt 2
    set arrow 2 from PRED, 0 to PRED, AT nohead lt 8 dt 3
    plot rows("inflight:sweep") using (column(BYTES) / 1024):GBS smooth unique \
              with linespoints lt 2 title "stream\\_sum", \
         NaN with lines lt 1 dt 2 title sprintf("knee: %.1f KB", KNEE), \
         NaN with lines lt 8 dt 3 title sprintf("predicted: %.1f KB", PRED)
    unset arrow 1; unset arrow 2; unset logscale x
}

if (budgeted > 0) {
    # step 3: every row of BUDGET_CONFIGS the device holds, TFLOP/s at 4096^3 and 1024^3 on the
    # whole GPU, in the table's order; the launcher's choice (chosen 1 or 3) circled
    candidates(shape) = "< awk -F'\t' '$2 ~ /^budget:/ && $2 != \"budget:chosen\" && $3 == \"".shape."\"' '".data."'"
    picked(c) = (int(c) % 2 == 1)
    set xlabel "row (BM x BN x BK, stages)"
    set ylabel "TFLOP/s"
    set xrange [-0.6:4.4]
    set yrange [0:*]
    set xtics rotate by 30 right noenhanced
    set key bottom right noreverse Right samplen 1
    plot candidates("4096x4096x4096") using 0:(column(GFLOPS) / 1000):xtic(strcol(KERNEL)[8:]) \
              with linespoints lt 2 title "4096^3", \
         candidates("1024x1024x1024") using 0:(column(GFLOPS) / 1000) \
              with linespoints lt 4 title "1024^3", \
         candidates("4096x4096x4096") using 0:(picked(column(CHOSEN)) ? column(GFLOPS) / 1000 : NaN) \
              with points lt 8 pt 6 ps 2 title "budget\\_choose", \
         candidates("1024x1024x1024") using 0:(picked(column(CHOSEN)) ? column(GFLOPS) / 1000 : NaN) \
              with points lt 8 pt 6 ps 2 notitle
    set xtics norotate enhanced
    unset xrange; set xtics autofreq
}

if (measured > 0) {
    # step 4: in slices of 8 to all SMs (the SMs granted, column 10), the copy on the slice's
    # stream and stream_sum at 32 KB in flight an SM (GB/s, left axis), and the launcher's GEMM
    # at 4096^3 (TFLOP/s, right axis)
    unset xrange; unset yrange; unset xtics; unset ytics
    set xlabel "SMs in the slice (green context)"
    set ylabel "GB/s"
    set y2label "TFLOP/s"
    set xrange [0:140]
    set xtics 32
    set ytics autofreq nomirror
    set y2tics autofreq
    set yrange [0:*]
    set y2range [0:*]
    set key top left reverse Left samplen 1
    plot rows("slice:copy") using SMS:GBS with linespoints lt 1 title "copy", \
         rows("slice:inflight") using SMS:GBS with linespoints lt 2 title "stream\\_sum", \
         rows_at("slice:budget:chosen", "4096x4096x4096") using SMS:(column(GFLOPS) / 1000) \
              axes x1y2 with linespoints lt 3 title "GEMM 4096^3 (right)"
    unset y2label; unset y2tics; set y2range [*:*]
}

if (rungs > 0) {
    # chapter 04's ladder (slice:rung:NAME, TFLOP/s at 4096^3) against the SMs of the slice:
    # the rate itself on log axes, with the line of perfect scaling through cuBLAS's rate on
    # the smallest slice; then each rung's rate an SM over its rate an SM on the smallest slice
    # (1: linear; a memory-bound kernel falls where the copy stops scaling, drawn beside it)
    RUNGS = "naive tiled blocked_1d blocked_2d vectorized warptiled tuned cublas"
    NR = words(RUNGS)
    rung_on(i) = strcol(KERNEL) eq "slice:rung:".word(RUNGS, i)
    stats data using (strcol(KERNEL) eq "slice:copy" ? column(SMS) : NaN) nooutput
    SMALL = STATS_min
    array BASE[NR + 1]
    do for [i = 1:NR] {
        stats data using ((rung_on(i) && column(SMS) == SMALL) ? column(GFLOPS) : NaN) nooutput
        BASE[i] = STATS_max
    }
    stats data using ((strcol(KERNEL) eq "slice:copy" && column(SMS) == SMALL) ? column(GBS) : NaN) nooutput
    BASE[NR + 1] = STATS_max

    set xlabel "SMs in the slice (green context)"
    set ylabel "TFLOP/s, 4096^3 SGEMM"
    unset y2label; unset y2tics
    set logscale xy 2
    set xrange [6:170]
    set yrange [0.25:1024]
    set xtics (8, 16, 32, 64, 132)
    set ytics autofreq mirror
    set format y "%g"
    set key top left reverse Left samplen 1 maxrows 3 width -1 spacing 0.9
    plot for [i = 1:NR] rows("slice:rung:".word(RUNGS, i)) using SMS:(column(GFLOPS) / 1000) \
              with linespoints lt i title word(RUNGS, i) noenhanced, \
         BASE[NR] / 1000 * x / SMALL with lines lt 8 title "linear"

    unset logscale; set xrange [0:140]; set xtics 32
    set ylabel "rate an SM / that on ".sprintf("%d", SMALL)." SMs"
    set yrange [0:1.2]
    set ytics 0.2
    set key bottom left reverse Left samplen 1
    plot for [i = 1:NR] rows("slice:rung:".word(RUNGS, i)) \
              using SMS:(column(GFLOPS) / column(SMS) / (BASE[i] / SMALL)) \
              with linespoints lt i notitle, \
         rows("slice:copy") using SMS:(column(GBS) / column(SMS) / (BASE[NR + 1] / SMALL)) \
              with linespoints lt 8 title "copy", \
         0.9 with lines lt 8 dt 3 title "90%"
}
if (panels > 1) { unset multiplot }
