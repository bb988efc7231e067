# 08-transfers-streams.gp: chapter 08 on four panels.
#   top left      the timeline of one pipeline run (the bench's gantt-08-transfers-streams.tsv
#                 beside the data file): a row a lane, the host's copies into and out of staging
#                 above the streams, a bar an operation, coloured by what it is
#   top right     GB/s of a 256 MiB copy each way from pageable (malloc), pinned (cudaMallocHost)
#                 and registered (cudaHostRegister) memory, and the copy up of step 1
#   bottom left   the pipeline: ms against the chunk size for K = 1, 2 and 4 streams, with the
#                 floor's parts (the host's staging, the link both ways, the kernel) as lines,
#                 and the pipeline on pinned buffers (copied directly) as points at its chunk
#   bottom right  both directions alone and at once (step 3), and the loop of three kernels
#                 plain and as a graph (step 4), as GB/s
# Rows: kernel names as the bench writes them ("h2d_pinned", "pipeline_k4", "part_link", ...);
# shapes are bytes ("268435456"), a chunk's bytes for the pipeline, "4096x10000" for the loop.
load "plots/style.gp"
set terminal pdfcairo size 6in,4.8in font "Latin Modern Roman,9" fontscale 0.8 enhanced
set output out

# the timeline sits beside the data file: DIR/08-transfers-streams.tsv, DIR/gantt-08-...
base = "08-transfers-streams.tsv"
dir = data[1:strlen(data) - strlen(base)]
gantt = dir."gantt-08-transfers-streams.tsv"

set datafile missing NaN
set multiplot layout 2,2

# ---- the timeline ---------------------------------------------------------------------------
OPS = "stage_in h2d kernel d2h stage_out"
OPNAMES = "host\\_in copy\\_up kernel copy\\_down host\\_out"
op_index(o) = sum [j = 1:words(OPS)] (o eq word(OPS, j) ? j : 0)
set style fill solid 0.9 noborder
stats gantt using 1 nooutput
lanes = STATS_max
stats gantt using 6 nooutput
tmax = STATS_max
set yrange [lanes + 0.6:-0.6]
set ytics ("host" 0) scale 0
set for [l = 1:lanes] ytics add (sprintf("stream %d", l) l)
set xrange [0:tmax * 1.02]
set xlabel "ms from the first operation"
unset title
set linetype 11 lc rgb "#999999"
set linetype 12 lc rgb "#2166ac"
set linetype 13 lc rgb "#4dac26"
set linetype 14 lc rgb "#e08214"
set linetype 15 lc rgb "#666666"
set key outside top center horizontal samplen 1 font ",7" maxrows 1
plot for [j = 1:words(OPS)] gantt using \
       (strcol(3) eq word(OPS, j) ? ($5 + $6) / 2 : NaN):1:(($6 - $5) / 2):(0.35) \
       with boxxyerror lt 10 + j title word(OPNAMES, j)
unset key

# ---- step 1: host memory kinds --------------------------------------------------------------
set autoscale
set yrange [0:*]
set xrange [0.4:4.6]
set ytics auto
set xtics ("pageable" 1, "pinned" 2, "registered" 3, "step 1" 4) scale 0
set xlabel ""
set ylabel "GB/s, one copy"
unset title
set boxwidth 0.38
set key top left reverse Left samplen 1
KINDS = "pageable pinned registered"
kidx(k) = k eq "upload_copy" ? 4 : \
          sum [j = 1:3] ((k eq "h2d_".word(KINDS, j) || k eq "d2h_".word(KINDS, j)) ? j : 0)
plot data using (strcol(KERNEL)[1:4] eq "h2d_" || strcol(KERNEL) eq "upload_copy" ? \
                 kidx(strcol(KERNEL)) - 0.2 : NaN):(column(GBS)) with boxes lt 2 title "up", \
     data using (strcol(KERNEL)[1:4] eq "d2h_" ? kidx(strcol(KERNEL)) + 0.2 : NaN):(column(GBS)) \
         with boxes lt 4 title "down", \
     data using (kidx(strcol(KERNEL)) > 0 && strcol(KERNEL) ne "register" ? \
                 kidx(strcol(KERNEL)) + (strcol(KERNEL)[1:4] eq "d2h_" ? 0.2 : -0.2) : NaN):\
         (column(GBS)):(sprintf("%.1f", column(GBS))) with labels offset 0,0.5 font ",7"
unset key

# ---- step 2: the pipeline against its floor --------------------------------------------------
set autoscale
set logscale x 2
set xrange [*:*]
set yrange [0:*]
set xtics 4
set format x "%g"
set xlabel "chunk, MiB"
set ylabel "ms, the pipeline"
unset title
mib(s) = (s + 0) / 1048576.0
stats data using (strcol(KERNEL) eq "part_host" ? column(MS) : NaN) nooutput
host_ms = STATS_max
stats data using (strcol(KERNEL) eq "part_link" ? column(MS) : NaN) nooutput
link_ms = STATS_max
stats data using (strcol(KERNEL) eq "part_kernel" ? column(MS) : NaN) nooutput
kernel_ms = STATS_max
set key inside top right vertical samplen 2 font ",6" opaque maxrows 3
plot for [k in "1 2 4"] data using (strcol(KERNEL) eq "pipeline_k".k ? mib(strcol(SHAPE)) : NaN):\
         (column(MS)) with linespoints lt (k eq "1" ? 1 : k eq "2" ? 4 : 2) title "K = ".k, \
     host_ms with lines lt 8 title "host alone", \
     link_ms with lines lt 3 dt 3 title "link alone", \
     kernel_ms with lines lt 5 dt 4 title "kernel alone", \
     for [k in "1 2 4"] data using (strcol(KERNEL) eq "pinned_pipeline_k".k ? mib(strcol(SHAPE)) : NaN):\
         (column(MS)) with points pt (k eq "1" ? 6 : k eq "2" ? 8 : 4) ps 0.7 \
         lt (k eq "1" ? 1 : k eq "2" ? 4 : 2) title "pinned K=".k
unset logscale x
unset key

# ---- steps 3 and 4 ---------------------------------------------------------------------------
set autoscale
set yrange [0:*]
set xrange [0.4:5.6]
set xtics ("up" 1, "down" 2, "both" 3, "plain" 4.5, "graph" 5.5) scale 0
set xrange [0.4:6.1]
set xlabel ""
set ylabel "GB/s, steps 3 and 4"
unset title
set boxwidth 0.6
pos(k) = k eq "up_alone" ? 1 : k eq "down_alone" ? 2 : k eq "both_ways" ? 3 : \
         k eq "plain_loop" ? 4.5 : k eq "graph_loop" ? 5.5 : NaN
plot data using (pos(strcol(KERNEL)) < 4 ? pos(strcol(KERNEL)) : NaN):(column(GBS)) \
         with boxes lt 2, \
     data using (pos(strcol(KERNEL)) > 4 ? pos(strcol(KERNEL)) : NaN):(column(GBS)) \
         with boxes lt 3, \
     data using (pos(strcol(KERNEL))):(column(GBS)):(sprintf("%.1f", column(GBS))) \
         with labels offset 0,0.5 font ",7"
unset multiplot
