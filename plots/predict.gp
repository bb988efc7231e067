# predict.gp: the time model of `make predict` against the measurement, one point a rung and
# shape, a colour a chapter.
#   gnuplot -e "data='build/predict/predict.tsv'; out='build/plots/predict.pdf'" plots/predict.gp
# data is what scripts/predict.sh writes: chapter, rung, shape, predicted_ms, measured_ms,
# ratio, bound, roofline_ms, roofline_ratio. A point on the diagonal y = x is a perfect
# prediction; between the dashed lines it is within 2x of the measurement.
load "plots/style.gp"
set terminal pdfcairo size 6in,3.6in font "Latin Modern Roman,10" fontscale 0.8 enhanced
set output out

CHAPTER = 1; PRED = 4; MEAS = 5

# the range: a decade-aligned box around every point, both axes the same
lo = 1e30; hi = 0
stats data using (column(PRED) > 0 && column(MEAS) > 0 ? \
                  (lo = column(PRED) < lo ? column(PRED) : lo, \
                   lo = column(MEAS) < lo ? column(MEAS) : lo, \
                   hi = column(PRED) > hi ? column(PRED) : hi, \
                   hi = column(MEAS) > hi ? column(MEAS) : hi, 0) : 0) nooutput
if (hi <= 0) { exit error "predict.gp: no row with a predicted and a measured time in ".data }
lo = 10 ** floor(log10(lo)); hi = 10 ** ceil(log10(hi))

set logscale xy 10
set xrange [lo:hi]
set yrange [lo:hi]
set size ratio -1
set format x "10^{%L}"
set format y "10^{%L}"
set xlabel "measured time, ms (log scale)"
set ylabel "predicted time, ms (log scale)"
set key outside right center vertical Left reverse samplen 1 noenhanced
set border 3
set grid xtics ytics lc rgb "#e4e4e4"

# a chapter's rows, NaN elsewhere
of(c, col) = strcol(CHAPTER)[1:2] eq c ? column(col) : NaN
set samples 200

plot x * 2 with lines lc rgb "#888888" dt 2 lw 1 title "2x off", \
     x / 2 with lines lc rgb "#888888" dt 2 lw 1 notitle, \
     x with lines lc rgb "#404040" lw 1.5 title "predicted = measured", \
     data using (of("01", MEAS)):(of("01", PRED)) with points lt 1 title "ch 01 naive matmul", \
     data using (of("02", MEAS)):(of("02", PRED)) with points lt 2 title "ch 02 transpose", \
     data using (of("03", MEAS)):(of("03", PRED)) with points lt 3 title "ch 03 divergence", \
     data using (of("04", MEAS)):(of("04", PRED)) with points lt 4 title "ch 04 tiling", \
     data using (of("05", MEAS)):(of("05", PRED)) with points lt 5 \
         title "ch 05 tensor cores (no counts)"
