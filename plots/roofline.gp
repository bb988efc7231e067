# roofline.gp: every measured rung of every chapter under the ceilings measured on the same GPU.
#   gnuplot -e "files='plots/data/h200/01-naive-matmul.tsv ...'; out='build/plots/roofline.pdf'" plots/roofline.gp
#
# The ceilings are measured, not from a data sheet: the copy kernel of chapter 02 (GB/s, its
# best size), cuBLAS SGEMM of chapters 01 and 04 (fp32 without tensor cores) and cuBLAS BF16 of
# chapter 05 (GFLOP/s, their best sizes). A rung is placed at x = gflops / gbs, its FLOPs per
# compulsory byte (the bytes its bench counted: each input read once, each output written once),
# and y = gflops. Rows with no FLOPs (transposes, copies, reductions, chapter 06's loop) or no
# bytes counted (chapter 03's arithmetic kernels) have no intensity and are left out: the
# book's caption says so.
load "plots/style.gp"
set terminal pdfcairo size 6.3in,4.4in font "Latin Modern Roman,10" fontscale 0.8 enhanced
set output out

CHAPTER = 1
all = "< cat ".files

# ---- the ceilings: the best of each baseline's rows ------------------------------------------
copy_bw = 0; sgemm = 0; bf16 = 0
is(c, k) = strcol(CHAPTER) eq c && strcol(KERNEL) eq k
stats all using (is("02-coalesced-transpose", "copy") && column(GBS) > copy_bw ? \
                 (copy_bw = column(GBS), 0) : 0) nooutput
stats all using ((is("01-naive-matmul", "cublas") || is("04-shared-memory-tiling", "cublas")) \
                 && column(GFLOPS) > sgemm ? (sgemm = column(GFLOPS), 0) : 0) nooutput
stats all using (is("05-async-pipelining", "cublas") && column(GFLOPS) > bf16 ? \
                 (bf16 = column(GFLOPS), 0) : 0) nooutput
if (copy_bw <= 0) { exit error "roofline.gp: no copy rows of chapter 02 in ".files }
if (sgemm <= 0)   { exit error "roofline.gp: no cublas rows of chapter 01 or 04 in ".files }
if (bf16 <= 0)    { exit error "roofline.gp: no cublas rows of chapter 05 in ".files }

# ---- the rungs that can be placed: FLOPs and bytes both counted, baselines left out ------------
rungs = ""
key(d) = strcol(CHAPTER)[1:2].":".strcol(KERNEL)
placeable(d) = strcol(KERNEL) ne "kernel" && strcol(KERNEL) ne "cublas" && strcol(KERNEL) ne "copy" \
              && column(GBS) > 0 && column(GFLOPS) > 0
_addr(k) = strstrt(rungs, " ".k." ") == 0 ? (rungs = rungs." ".k." ", 0) : 0
stats all using (placeable(0) ? _addr(key(0)) : 0) nooutput
n = words(rungs)
if (n == 0) { exit error "roofline.gp: no row has both GFLOP/s and GB/s in ".files }

# a colour per chapter, a point type per rung within its chapter
colour(k) = k[1:2] eq "01" ? "#b2182b" : k[1:2] eq "04" ? "#2166ac" : \
            k[1:2] eq "05" ? "#1b7837" : "#e08214"
array pt[n]
PTS = "7 5 9 11 13 15 4 6 8 10 12 14 1 2 3 16 17 18 19"
j = 0
do for [i = 1:n] {
    j = (i > 1 && word(rungs, i)[1:2] eq word(rungs, i - 1)[1:2]) ? j + 1 : 1
    pt[i] = word(PTS, j) + 0
}
label(k) = "ch ".k[1:2]." ".k[4:]

# ---- the figure --------------------------------------------------------------------------------
set logscale xy 10
# room at the right, past the largest intensity measured, for the ceilings' labels
set xrange [2:100000]
set yrange [0.1:3000]
set format x "%g"
set format y "%g"
set xlabel "arithmetic intensity: FLOPs per compulsory byte (log scale)"
set ylabel "TFLOP/s (log scale)"
set key outside below center horizontal Left reverse maxcols 5 width 1 samplen 1 noenhanced
set border 3
set grid xtics ytics lc rgb "#e4e4e4"

# GB/s x FLOP/B = GFLOP/s; the axis is in TFLOP/s
roof_fp32(x) = (copy_bw * x < sgemm ? copy_bw * x : sgemm) / 1000
roof_bf16(x) = (copy_bw * x < bf16 ? copy_bw * x : bf16) / 1000
ridge32 = sgemm / copy_bw; ridge16 = bf16 / copy_bw

set label 1 sprintf("cuBLAS BF16 (ch 05)\n%.0f TFLOP/s, ridge %.0f", bf16 / 1000, ridge16) at 90000, bf16 / 1000 * 0.45 right font ",9"
set label 2 sprintf("cuBLAS SGEMM fp32 (ch 01, 04)\n%.1f TFLOP/s, ridge %.0f", sgemm / 1000, ridge32) \
    at 90000, sgemm / 1000 * 0.45 right font ",9"
set label 3 sprintf("copy kernel (ch 02): %.0f GB/s", copy_bw) at 2.3, copy_bw * 2.3 * 1.9 / 1000 \
    left rotate by 36 font ",9"
set samples 400

plot roof_bf16(x) with lines lw 2 lc rgb "#1b7837" dt 1 notitle, \
     roof_fp32(x) with lines lw 2 lc rgb "#404040" dt 1 notitle, \
     for [i = 1:n] all using (key(0) eq word(rungs, i) && placeable(0) ? column(GFLOPS) / column(GBS) : NaN):\
         (column(GFLOPS) / 1000) with points pt pt[i] ps 0.8 lc rgb colour(word(rungs, i)) \
         title label(word(rungs, i))
