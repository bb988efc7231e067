# 09-occupancy.gp: the warps an SM holds of a block of 256 threads with no shared memory, against
# the registers a thread, on each of the four devices (H200, A100, L4, T4): the answers of the
# toolkit's occupancy calculator (cuda_occupancy.h), which the chapter's grader writes with
# `grade --bench F` from the limits of chapters/09-occupancy/devices.cu. Arithmetic, not a
# measurement. Kernels are named "occupancy:DEVICE", shapes "256xREGS"; column 9 is the warps.
load "plots/style.gp"

WARPS = 9
DEVICES = "h200 a100 l4 t4"
LABELS = "H200 A100 L4 T4"
regs(s) = strstrt(s, "x") ? (s[strstrt(s, "x") + 1:]) + 0 : NaN
warps_of(dev) = strcol(KERNEL) eq "occupancy:".dev ? column(WARPS) : NaN

set key top right noreverse Right
set xlabel "registers a thread (block of 256 threads, no shared memory)"
set ylabel "warps resident an SM"
set xrange [0:260]
set yrange [0:70]
set xtics 32
set ytics 16
plot for [i = 1:words(DEVICES)] data using (regs(strcol(SHAPE))):(warps_of(word(DEVICES, i))) \
     with steps lt i title word(LABELS, i)
