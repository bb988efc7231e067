# calibration.awk: one rung's model against its Nsight Compute counts, as rows of the
# calibration table (scripts/calibrate.sh writes the table; harness/emu/README.md, "Profiling",
# says what each count is).
#
#   awk -f scripts/calibration.awk -v chapter=02-coalesced-transpose -v rung=padded \
#       MODEL.tsv NCU.tsv
#
# MODEL.tsv is the profile driver's `--tsv RUNG` output (a header line and a row), NCU.tsv is
# `awk -f scripts/ncu-table.awk -v mode=sum` of the rung's Nsight Compute CSV: the same column
# names. Prints, per metric, a row
#     chapter  rung  kernel  metric  model  ncu  ratio
# where ratio is ncu / model (1 where both are 0, "-" where only the model's is 0), and kernel
# the kernels the rung launched ("a+b"). The two runs are joined by the rung's name; their
# kernels must be the same ones: the model's names (c++filt: "k<4, true>") and Nsight Compute's
# ("void k<(int)4, (bool)1>(float *)") are compared without return type, parameters, casts and
# spaces. Where they differ, nothing is printed, a line on stderr says why, and the exit status
# is 3 (a launcher that picks its kernel by device, say, ran another kernel on each side).

function split_tsv(line, out) { return split(line, out, "\t") }

# norm(): scripts/kernel-name.awk

function kernels_of(list,    n, k, parts, out) {
    n = split(list, parts, "+")
    out = ""
    for (k = 1; k <= n; k++) out = out (k > 1 ? "+" : "") norm(parts[k])
    return out
}

function row(metric, a, b,    r) {
    if (a == 0 && b == 0) r = "1.000"
    else if (a == 0) r = "-"
    else r = sprintf("%.3f", b / a)
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", chapter, rung, kernel, metric, fmt(metric, a),
           fmt(metric, b), r
}

# counts as integers, ratios (".._per_..") with 4 decimals
function fmt(metric, x) { return metric ~ /_per_/ ? sprintf("%.4f", x) : sprintf("%.0f", x) }

function per(a, b) { return b ? a / b : 0 }

FNR == 1 { file++; nh = split_tsv($0, head); for (i = 1; i <= nh; i++) col[file, head[i]] = i; next }
FNR == 2 { split_tsv($0, cells); for (i = 1; i <= nh; i++) v[file, head[i]] = cells[i]; rows[file] = 1 }

END {
    if (!rows[1] || !rows[2]) {
        printf "calibration: %s/%s: %s has no row\n", chapter, rung,
               rows[1] ? "the Nsight Compute sum" : "the model's output" > "/dev/stderr"
        exit 2
    }
    split("launches warps gld_requests gld_sectors gst_requests gst_sectors shld_requests " \
          "shld_wavefronts shst_requests shst_wavefronts divergent_branches kernels", need, " ")
    for (i = 1; i <= 12; i++)
        for (f = 1; f <= 2; f++)
            if (!((f, need[i]) in col)) {
                printf "calibration: %s/%s: the %s has no column %s\n", chapter, rung,
                       f == 1 ? "model's row" : "Nsight Compute sum", need[i] > "/dev/stderr"
                exit 2
            }
    mk = kernels_of(v[1, "kernels"]); nk = kernels_of(v[2, "kernels"])
    if (mk != nk) {
        printf "calibration: %s/%s: not compared: the model ran %s, the GPU ran %s\n", chapter,
               rung, v[1, "kernels"], v[2, "kernels"] > "/dev/stderr"
        exit 3
    }
    kernel = v[1, "kernels"]
    m["warps"] = v[1, "warps"] + 0;                n["warps"] = v[2, "warps"] + 0
    row("warps", m["warps"], n["warps"])
    split("gld_requests:global_load_requests gld_sectors:global_load_sectors " \
          "gst_requests:global_store_requests gst_sectors:global_store_sectors " \
          "shld_requests:shared_load_requests shld_wavefronts:shared_load_wavefronts " \
          "shst_requests:shared_store_requests shst_wavefronts:shared_store_wavefronts " \
          "divergent_branches:divergent_branches", pairs, " ")
    for (i = 1; i <= 9; i++) {
        split(pairs[i], kv, ":")
        a = v[1, kv[1]] + 0; b = v[2, kv[1]] + 0
        row(kv[2], a, b)
        if (kv[1] ~ /_sectors$|_wavefronts$/) {
            req = kv[1]; sub(/_sectors$|_wavefronts$/, "_requests", req)
            unit = kv[1] ~ /_sectors$/ ? "sectors" : "wavefronts"
            name = kv[2]; sub(/_sectors$|_wavefronts$/, "", name)
            row(name "_" unit "_per_request", per(a, v[1, req] + 0), per(b, v[2, req] + 0))
        }
    }
    row("divergent_branches_per_warp", per(v[1, "divergent_branches"] + 0, m["warps"]),
        per(v[2, "divergent_branches"] + 0, n["warps"]))
}
