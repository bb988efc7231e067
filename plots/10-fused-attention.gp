# 10-fused-attention.gp: chapter 10, fused attention against the unfused baseline.
#   From the H200's bench (plots/data/h200/10-fused-attention.tsv: rows "unfused_bf16",
#   "fused_simt_bf16", "fused_mma_bf16" and "fused_wgmma_bf16", shapes "2xHxLENxDIM" with "c" for causal): TFLOP/s
#   against the sequence length, one panel for each of dim 64 and 128, causal and not drawn apart.
#   Beside them, where it is committed, the outside anchors measured in the same GPU visit
#   (plots/data/h200/anchors-10-fused-attention.tsv, scripts/attention-anchors.py: PyTorch's
#   scaled_dot_product_attention on cuDNN's fused attention and on FlashAttention-2).
#   Until that file is measured, from the CPU backend's (plots/data/emu/10-fused-attention.tsv):
#   the global bytes of one head against the sequence length (columns 8 and 9: loads, stores), the
#   fused kernel's counted by the instrumented build, the unfused step's computed from its design.
load "plots/style.gp"
set terminal pdfcairo size 6in,3.2in font "Latin Modern Roman,9" fontscale 0.8 enhanced
set output out

# the shape's length and dim ("2x32x4096x64c"), and whether it is causal
# (NaN for the header's "shape")
len_of(s) = strstrt(s, "x") == 0 ? NaN : (t = s, t = t[strstrt(t, "x") + 1:], t = t[strstrt(t, "x") + 1:], t[1:strstrt(t, "x") - 1] + 0)
dim_of(s) = strstrt(s, "x") == 0 ? NaN : (t = s, t = t[strstrt(t, "x") + 1:], t = t[strstrt(t, "x") + 1:], t = t[strstrt(t, "x") + 1:], \
             (t[strlen(t):strlen(t)] eq "c" ? t[1:strlen(t) - 1] : t) + 0)
causal_of(s) = s[strlen(s):strlen(s)] eq "c"
set datafile missing NaN
set logscale x 2
set xlabel "sequence length (log scale)"
set key top left

# a file of timings has rows whose ms is above 0
stats data using (column(MS)) nooutput
timed = STATS_max > 0

if (timed) {
    # the anchors sit beside the bench's file (the GPU's data directory), when they were measured
    anchors = data[1:strstrt(data, "/10-fused-attention.tsv")] . "anchors-10-fused-attention.tsv"
    has_anchors = strstrt(data, "/10-fused-attention.tsv") > 0 && \
                  system("test -r '" . anchors . "' && echo 1 || echo 0") + 0
    anchors = has_anchors ? anchors : data
    set terminal pdfcairo size 6in,4.4in font "Latin Modern Roman,9" fontscale 0.8 enhanced
    set key below maxcols 2 font ",7" spacing 0.9
    set multiplot layout 1,2
    do for [d in "64 128"] {
        set title "dim ".d.", bf16, batch 2, hidden 2048"
        set ylabel "TFLOP/s (causal: the unmasked half)"
        sel(k, c) = strcol(KERNEL) eq k && dim_of(strcol(SHAPE)) == d + 0 && \
                    causal_of(strcol(SHAPE)) == c ? column(GFLOPS) / 1000 : NaN
        plot data using (len_of(strcol(SHAPE))):(sel("unfused_bf16", 0)) with linespoints lt 1 title "unfused (step 1)", \
             data using (len_of(strcol(SHAPE))):(sel("fused_simt_bf16", 0)) with linespoints lt 2 title "fused SIMT (step 2)", \
             data using (len_of(strcol(SHAPE))):(sel("unfused_bf16", 1)) with linespoints lt 1 dt 2 title "unfused, causal", \
             data using (len_of(strcol(SHAPE))):(sel("fused_simt_bf16", 1)) with linespoints lt 2 dt 2 title "fused SIMT, causal", \
             data using (len_of(strcol(SHAPE))):(sel("fused_mma_bf16", 0)) with linespoints lt 3 title "fused mma.sync (step 3)", \
             data using (len_of(strcol(SHAPE))):(sel("fused_mma_bf16", 1)) with linespoints lt 3 dt 2 title "fused mma.sync, causal", \
             data using (len_of(strcol(SHAPE))):(sel("fused_wgmma_bf16", 0)) with linespoints lt 4 title "fused wgmma, TMA (step 4)", \
             data using (len_of(strcol(SHAPE))):(sel("fused_wgmma_bf16", 1)) with linespoints lt 4 dt 2 title "fused wgmma, causal", \
             for [i = 1:has_anchors] anchors using (len_of(strcol(SHAPE))):(sel("torch_cudnn_bf16", 0)) with linespoints lt 5 title "cuDNN (PyTorch)", \
             for [i = 1:has_anchors] anchors using (len_of(strcol(SHAPE))):(sel("torch_flash2_bf16", 0)) with linespoints lt 6 title "FlashAttention-2 (PyTorch)"
    }
    unset multiplot
} else {
    set logscale y 10
    set title "global memory traffic of one head, dim 64 (CPU backend's count; unfused computed)"
    set ylabel "bytes (log scale)"
    sel(k, col) = strcol(KERNEL) eq k ? column(col) : NaN
    plot data using (len_of(strcol(SHAPE))):(sel("unfused_bf16", 8) + sel("unfused_bf16", 9)) \
              with linespoints lt 1 title "unfused (step 1): loads + stores", \
         data using (len_of(strcol(SHAPE))):(sel("fused_simt_bf16", 8) + sel("fused_simt_bf16", 9)) \
              with linespoints lt 2 title "fused (step 2): loads + stores"
}
