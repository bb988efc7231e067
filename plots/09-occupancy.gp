# 09-occupancy.gp: the warps an SM holds of a block of 256 threads with no shared memory, against
# the registers a thread, on each of the four devices (H200, A100, L4, T4): the answers of the
# toolkit's occupancy calculator (cuda_occupancy.h), which the chapter's grader writes with
# `grade --bench F` from the limits of chapters/09-occupancy/devices.cu. Arithmetic, not a
# measurement. Kernels are named "occupancy:DEVICE", shapes "256xREGS"; column 9 is the warps.
# On a GPU the bench adds measured rows (steps 2 to 4) to the same file; this figure skips them.
load "plots/style.gp"

WARPS = 9
DEVICES = "h200 a100 l4 t4"
LABELS = "H200 A100 L4 T4"
regs(s) = strstrt(s, "x") ? (s[strstrt(s, "x") + 1:]) + 0 : NaN
# only the calculator's rows: on a GPU the same file holds measured rows of other shapes
on(dev) = strcol(KERNEL) eq "occupancy:".dev
regs_of(dev) = on(dev) ? regs(strcol(SHAPE)) : NaN
warps_of(dev) = on(dev) ? column(WARPS) : NaN

# A file measured on a GPU also holds step 4's rows: then a second panel, the slices' scaling
SMS = 10
measured = system("grep -c 'slice:copy' '".data."' || true") + 0
if (measured > 0) { set multiplot layout 1, 2 }

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
    gemm_on(x) = strcol(KERNEL) eq "slice:budget:chosen" && strcol(SHAPE) eq "4096x4096x4096"
    gemm_sms(x) = gemm_on(0) ? column(SMS) : NaN
    gemm_tflops(x) = gemm_on(0) ? column(GFLOPS) / 1000 : NaN
    plot data using (only("slice:copy", SMS)):(only("slice:copy", GBS)) smooth unique \
              with linespoints lt 1 title "copy", \
         data using (only("slice:inflight", SMS)):(only("slice:inflight", GBS)) \
              smooth unique with linespoints lt 2 title "stream\\_sum", \
         data using (gemm_sms(0)):(gemm_tflops(0)) axes x1y2 smooth unique \
              with linespoints lt 3 title "GEMM 4096^3 (right)"
    unset multiplot
}
