# predict.awk: the time model of `make predict` (scripts/predict.sh gathers its inputs).
#
#   awk -f scripts/predict.awk CEILINGS.tsv COUNTS.tsv BENCH.tsv...
#
# CEILINGS.tsv is plots/data/h200/ceilings.tsv (name, value, unit, source); COUNTS.tsv the
# CPU backend's counts of each rung at a small shape (chapter, rung, bench shape, small
# shape, threads a block, then a profile driver's --tsv row); the BENCH files the committed
# benches (chapter kernel shape ms gbs gflops device, and in files written since rows carry
# them sm_mhz and watts). The SM clock of a row is its own sm_mhz where it has one, else its
# file's "# clocks:" line's median, else the ceilings' clock. For every bench row whose rung has
# counts (chapters 01 to 04) or is a graded rung of chapter 05, it prints
#     chapter  rung  shape  predicted_ms  measured_ms  ratio  bound  roofline_ms  roofline_ratio
# (ratio = predicted / measured), then the median absolute error |predicted - measured| /
# measured and the worst ratio (the larger of ratio and 1 / ratio) of both models.
# With -v summary=FILE it also writes those figures as a table (model, stat, value: rows,
# median_error_pct, worst_off, misses_2x, and rows_counts and median_error_counts_pct for the
# rows with counts), with -v misses_file=FILE the rows the model misses by more than 2x (chapter,
# rung, shape, predicted_ms, measured_ms, ratio, bound): what the book's appendix quotes.
#
# The model. Counts scale from the small shape by the work ratio (the product of the shape's
# dimensions); a GEMM's blocks by the ratio of m x n. A rung's time is the longest of these,
# each a count over the rate that serves it:
#   dram     the bytes the bench counts for the rung (gbs x ms: the fewest bytes the operation
#            moves) over the copy kernel's bandwidth
#   fp32     the bench's FLOPs over the FP32 FMA rate, times 1 + divergent branches a warp, at
#            most 2 (a divergent branch runs both sides, one after the other)
#   issue    FMAs / 32 + every warp memory instruction (global and shared requests), over
#            four warp instructions a clock an SM
#   l1       the 128-byte lines of global accesses, one a clock an SM: a request's lines are
#            width / 4 when it is coalesced (at most `width` sectors for `width` bytes a lane),
#            else one a sector
#   shared   shared load and store wavefronts, one a clock an SM
#   l2_store the sectors of scattered stores (more sectors a request than a coalesced store
#            touches), at the rate the naive transpose reaches
#   atomic   global atomic operations, at the rate of atomics into one address
#   launch   one launch interval a kernel launched
# The per-SM terms use the SMs the grid fills: with B blocks, B / ceil(B / SMs) of them (a
# grid of 64 blocks uses 64 of 132 SMs). Chapter 05 has no counts: its mma.sync rungs are
# given the measured mma.sync rate, its TMA and wgmma rungs cuBLAS's time at the same shape
# (measured in the same run), and the dram term.
# The plain roofline beside it: max(bytes / copy bandwidth, FLOPs / datasheet peak), FP32
# for chapters 01 to 04, BF16 for 05.
BEGIN { FS = "\t"; OFS = "\t" }

# the ceilings: value by name
FILENAME == ARGV[1] {
    if ($0 !~ /^#/ && $1 != "name") ceil[$1] = $2
    next
}

# the counts: a row by chapter, rung and bench shape, columns by the header's names
FILENAME == ARGV[2] {
    if ($1 == "chapter") { for (i = 1; i <= NF; i++) col[$i] = i; next }
    key = $1 SUBSEP $2 SUBSEP $3
    for (i = 1; i <= NF; i++) cnt[key, i] = $i
    has[key] = 1
    next
}

FNR == 1 {
    clock = ceil["clock"] * 1e6; mhz_col = 0
    if (!("sms" in ceil) || !clock || !ceil["dram"]) {
        print "predict: the ceilings table lacks sms, clock or dram" > "/dev/stderr"
        bad = 1; exit 1
    }
}
/^# clocks: SM [0-9]+ MHz/ { split($0, cw, " "); clock = cw[4] * 1e6; next }
/^#/ { next }
$1 == "chapter" { for (i = 1; i <= NF; i++) if ($i == "sm_mhz") mhz_col = i; next }

function c(name) { return cnt[key, col[name]] }
function product(shape,    d, n, i, p) {
    n = split(shape, d, "x"); p = 1
    for (i = 1; i <= n; i++) p *= d[i]
    return p
}
function mn(shape,    d) { split(shape, d, "x"); return d[1] * d[3] }
function term(name, t) { if (t > best) { best = t; bound = name } }

# cuBLAS's time at each shape of chapter 05 (its row comes first a shape)
$2 == "cublas" { lib[$1, "cublas", $3] = $4 }

{
    ch = $1; rung = $2; shape = $3; ms = $4 + 0
    row_clock = (mhz_col && $mhz_col ~ /^[0-9.]+$/ && $mhz_col > 0) ? $mhz_col * 1e6 : clock
    key = ch SUBSEP rung SUBSEP shape
    bytes = $5 * ms * 1e6; flops = $6 * ms * 1e6
    sms = ceil["sms"]
    best = bytes / (ceil["dram"] * 1e9); bound = "dram"
    if (ch ~ /^05-/) {
        if (rung !~ /^(sync|pipelined|ring|tma|wgmma)$/) next
        if (rung ~ /^(tma|wgmma)$/) {
            if (!((ch, "cublas", shape) in lib)) next
            term("cublas", lib[ch, "cublas", shape] / 1e3)
        } else {
            term("mma_sync", flops / (ceil["bf16_mma_sync"] * 1e9))
        }
        peak = ceil["bf16_peak"] * 1e9
    } else {
        if (!(key in has)) next
        small = c("small")
        scale = product(shape) / product(small)
        blocks = c("warps") * 32 / c("threads")
        blocks *= (ch ~ /^0[14]-/) ? mn(shape) / mn(small) : scale
        blocks = blocks < 1 ? 1 : blocks
        waves = int(blocks / sms); if (waves < blocks / sms) waves++
        used = blocks / waves; if (used > sms) used = sms
        rate = used * row_clock
        gld_req = c("gld_requests") * scale; gld_sec = c("gld_sectors") * scale
        gst_req = c("gst_requests") * scale; gst_sec = c("gst_sectors") * scale
        wl = c("global_load_width"); ws = c("global_store_width")
        if (wl < 4) wl = 4
        if (ws < 4) ws = 4
        lines = (gld_req && gld_sec / gld_req > wl) ? gld_sec : gld_req * wl / 4
        scattered = (gst_req && gst_sec / gst_req > ws)
        lines += scattered ? gst_sec : gst_req * ws / 4
        sh_req = (c("shld_requests") + c("shst_requests")) * scale
        sh_wf = (c("shld_wavefronts") + c("shst_wavefronts")) * scale
        fmas = (ch ~ /^0[14]-/) ? product(shape) : 0
        div = c("divergent_per_warp"); if (div > 1) div = 1
        term("fp32", flops * (1 + div) / (2 * ceil["fp32_fma"] * rate))
        term("issue", (fmas / 32 + gld_req + gst_req + sh_req) / (ceil["issue"] * rate))
        term("l1", lines / (ceil["l1"] * rate))
        term("shared", sh_wf / (ceil["shared"] * rate))
        if (scattered) term("l2_store", gst_sec / (ceil["l2_store"] * 1e9))
        term("atomic", c("global_atomic_ops") * scale / (ceil["atomic"] * 1e6))
        term("launch", c("launches") * ceil["launch"] / 1e6)
        peak = 2 * ceil["fp32_fma"] * sms * row_clock
    }
    roof = bytes / (ceil["dram"] * 1e9)
    if (flops / peak > roof) roof = flops / peak
    n++
    pred_ms = best * 1e3; roof_ms = roof * 1e3
    row[n] = sprintf("%s\t%s\t%s\t%.4g\t%.4g\t%.2f\t%s\t%.4g\t%.2f", ch, rung, shape, pred_ms, ms,
                     pred_ms / ms, bound, roof_ms, roof_ms / ms)
    err[n] = abs(pred_ms / ms - 1); rerr[n] = abs(roof_ms / ms - 1)
    off[n] = pred_ms > ms ? pred_ms / ms : ms / pred_ms
    roff[n] = roof_ms > ms ? roof_ms / ms : ms / roof_ms
    name[n] = ch "/" rung " " shape
    if (ch !~ /^05-/) { nc++; cerr[nc] = err[n]; crerr[nc] = rerr[n] }
}
function abs(x) { return x < 0 ? -x : x }
function median(a, m,    i, j, v, s) {
    for (i = 1; i <= m; i++) s[i] = a[i]
    for (i = 2; i <= m; i++) {
        v = s[i]
        for (j = i - 1; j > 0 && s[j] > v; j--) s[j + 1] = s[j]
        s[j + 1] = v
    }
    return m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
}
function worst(a, m,    i, w) { w = 1; for (i = 2; i <= m; i++) if (a[i] > a[w]) w = i; return w }

END {
    if (bad) exit 1
    if (!n) { print "predict: no bench row had counts" > "/dev/stderr"; exit 1 }
    print "chapter", "rung", "shape", "predicted_ms", "measured_ms", "ratio", "bound",
          "roofline_ms", "roofline_ratio"
    for (i = 1; i <= n; i++) print row[i]
    w = worst(off, n); rw = worst(roff, n)
    for (i = 1; i <= n; i++) if (off[i] > 2) { misses++; missed = missed "\n#   " name[i] }
    printf "# %d rows: the model's median absolute error %.1f%%, worst %s off %.2fx\n", n,
           100 * median(err, n), name[w], off[w]
    printf "# the plain roofline's median absolute error %.1f%%, worst %s off %.2fx\n",
           100 * median(rerr, n), name[rw], roff[rw]
    if (nc) printf "# the %d rows with counts (chapters 01 to 04): the model %.1f%%, " \
                   "the roofline %.1f%%\n", nc, 100 * median(cerr, nc), 100 * median(crerr, nc)
    printf "# rows the model misses by more than 2x: %d%s\n", misses, missed
    if (summary != "") {
        print "model", "stat", "value" > summary
        print "model", "rows", n > summary
        print "model", "median_error_pct", sprintf("%.2f", 100 * median(err, n)) > summary
        print "model", "worst_off", sprintf("%.3f", off[w]) > summary
        print "model", "misses_2x", misses + 0 > summary
        print "roofline", "rows", n > summary
        print "roofline", "median_error_pct", sprintf("%.2f", 100 * median(rerr, n)) > summary
        print "roofline", "worst_off", sprintf("%.3f", roff[rw]) > summary
        rm = 0; for (i = 1; i <= n; i++) if (roff[i] > 2) rm++
        print "roofline", "misses_2x", rm > summary
        if (nc) {
            print "model", "rows_counts", nc > summary
            print "model", "median_error_counts_pct", sprintf("%.2f", 100 * median(cerr, nc)) \
                > summary
            print "roofline", "median_error_counts_pct", sprintf("%.2f", 100 * median(crerr, nc)) \
                > summary
        }
        close(summary)
    }
    if (misses_file != "") {
        print "chapter", "rung", "shape", "predicted_ms", "measured_ms", "ratio", "bound" \
            > misses_file
        for (i = 1; i <= n; i++) if (off[i] > 2) {
            split(row[i], f, "\t")
            print f[1], f[2], f[3], f[4], f[5], f[6], f[7] > misses_file
        }
        close(misses_file)
    }
}
