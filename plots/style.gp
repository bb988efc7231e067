# style.gp: what every chapter's plot shares. Each script is run as
#   gnuplot -e "data='plots/data/h200/NN.tsv'; out='build/plots/NN.pdf'" plots/NN.gp
# on the rows that `make bench` writes: chapter, kernel, shape, ms, gbs, gflops, device, then
# a chapter's own columns if any, then sm_mhz and watts (the SM clock and power while the row
# ran; files written before the rows carried them end at device or at the chapter's columns).
# Columns are named by number here, and the new ones come last, so both kinds plot alike.

set terminal pdfcairo size 6in,2.6in font "Latin Modern Roman,9" fontscale 0.8 enhanced
set output out
set datafile separator "\t"
set datafile commentschars "#"
set grid lc rgb "#dddddd"
set border 3
set tics nomirror
set key top left reverse Left noautotitle samplen 2

# columns
KERNEL = 2; SHAPE = 3; MS = 4; GBS = 5; GFLOPS = 6

# the first number of a shape such as "1024x1024x1024" (NaN on the header row)
size(s) = strstrt(s, "x") ? (s[1:strstrt(s, "x") - 1]) + 0 : NaN
# a column's value on the rows of one kernel, NaN elsewhere (gnuplot skips NaN)
only(k, col) = strcol(KERNEL) eq k ? column(col) : NaN

# one colour per role, the same in every chapter: baseline, rungs, ceiling
set linetype 1 lc rgb "#b2182b" pt 7 ps 0.6 lw 1.5
set linetype 2 lc rgb "#2166ac" pt 5 ps 0.6 lw 1.5
set linetype 3 lc rgb "#4dac26" pt 9 ps 0.7 lw 1.5
set linetype 4 lc rgb "#e08214" pt 11 ps 0.7 lw 1.5
set linetype 5 lc rgb "#8073ac" pt 13 ps 0.7 lw 1.5
set linetype 8 lc rgb "#404040" dt 2 pt 1 ps 0.8 lw 1.5

# The kernels of a data file in the order they first appear, the ceiling ("cublas", "copy")
# left out: `rungs_of(data)` then words(rungs), word(rungs, i).
rungs = ""
_add(k) = (k ne "kernel" && k ne ceiling && strstrt(rungs, " ".k." ") == 0) ? \
          (rungs = rungs." ".k." ", 0) : 0
