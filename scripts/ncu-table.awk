# ncu-table.awk: Nsight Compute's CSV, as `make profile BACKEND=cuda` prints it and as
# `make calibrate` sums it (harness/emu/README.md, "Profiling").
#
#   awk -f scripts/ncu-table.awk [-v mode=table|sum] [-v rung=NAME] FILE.csv
#
# FILE.csv is what scripts/ncu-run.sh writes: `ncu --import R.ncu-rep --csv --page raw
# --print-units base`, one row per kernel launch with a column per metric (a header row, then a
# row of units); the long layout of `--page details --csv` (one row per metric, "Metric Name",
# "Metric Unit", "Metric Value") is read too, and lines before the header (==PROF== lines, the
# program's own output) are skipped. Numbers may carry thousands separators ("1,048,576"); a
# unit with a prefix (Ksector) is scaled.
#
#   mode=table   per kernel launch, the columns of the CPU backend's model, per kernel instead
#                of per source line: global load and store requests and sectors per request,
#                shared load and store requests and wavefronts per request, divergent branches,
#                and the model's "total:" line, word for word
#   mode=sum     one header line and one tab-separated row: every launch summed, under the
#                column names of the profile driver's --tsv row (launches, warps, gld_requests,
#                ... kernels), so that scripts/calibration.awk can join the two by name
#
# The metrics (scripts/ncu-run.sh asks for these; a missing one is an error, not a zero):
#   global loads     l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum, ..._sectors_...
#   global stores    the same, op_st; atomics (op_atom, op_red) add to stores, as in the model
#   shared loads     smsp__inst_executed_op_shared_ld.sum (requests: warp instructions),
#                    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
#   shared stores    the same, _st; l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
#                    and _st, where collected, mark a row "N bank conflicts"
#   divergence       smsp__sass_branch_targets_threads_divergent.sum
#   warps            smsp__warps_launched.sum
# and, where the CSV holds them (mode=table prints a line "occupancy and stalls:" of those
# present, nothing when none is): achieved occupancy (sm__warps_active...pct_of_peak_sustained_
# active), the SM's, the L2's and DRAM's throughput as a share of peak (..._throughput.avg.pct_of_
# peak_sustained_elapsed), and the three largest stall reasons, warps stalled per issued
# instruction (smsp__average_warps_issue_stalled_REASON_per_issue_active.ratio)
# Exit status: 0; 1 if the file holds no header or no launch, or lacks a metric.

function csv_split(line, out,    n, i, c, field, inq, len) {
    n = 0; field = ""; inq = 0; len = length(line)
    for (i = 1; i <= len; i++) {
        c = substr(line, i, 1)
        if (inq) {
            if (c == "\"") {
                if (substr(line, i + 1, 1) == "\"") { field = field "\""; i++ }
                else inq = 0
            } else field = field c
        } else if (c == "\"") inq = 1
        else if (c == ",") { out[++n] = field; field = "" }
        else field = field c
    }
    out[++n] = field
    return n
}

# "1,048,576" -> 1048576; "n/a", "" -> "" (missing); a unit prefix K, M, G scales
function number(v, unit,    x) {
    gsub(/[ ,]/, "", v)
    if (v == "" || v !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/) return ""
    x = v + 0
    if (unit ~ /^K[a-z]/) x *= 1e3
    else if (unit ~ /^M[a-z]/) x *= 1e6
    else if (unit ~ /^G[a-z]/) x *= 1e9
    return x
}

# fn_name(): scripts/kernel-name.awk

function dims(s) { gsub(/[ ()]/, "", s); return "(" s ")" }

function need(id, m) {
    if (!((id, m) in val)) {
        printf "ncu-table: %s: kernel %s (launch %s) has no value of %s: was it collected " \
               "(scripts/ncu-run.sh asks for it)?\n", FILENAME, kname[id], id, m > "/dev/stderr"
        failed = 1
        exit 1
    }
    return val[id, m]
}

function opt(id, m) { return ((id, m) in val) ? val[id, m] : 0 }

function ratio(a, b) { return b ? a / b : 0 }

# the line "occupancy and stalls:" of launch id, from the metrics of it the CSV holds ("" if none)
function occupancy_line(id,    s, m, r, k, j, n, t, top, reason, v, used) {
    s = ""
    if ((id, OCC) in val) s = sprintf("achieved occupancy %.1f%% of peak", val[id, OCC])
    t = ""
    if ((id, SM_T) in val) t = t sprintf("%sSM %.0f%%", t == "" ? "" : ", ", val[id, SM_T])
    if ((id, L2_T) in val) t = t sprintf("%sL2 %.0f%%", t == "" ? "" : ", ", val[id, L2_T])
    if ((id, DRAM_T) in val) t = t sprintf("%sDRAM %.0f%%", t == "" ? "" : ", ", val[id, DRAM_T])
    if (t != "") s = s (s == "" ? "" : "; ") "throughput " t " of peak"
    n = 0
    for (k = 1; k <= NSTALL; k++) {
        m = STALL_PRE STALL[k] STALL_POST
        if ((id, m) in val) { n++; reason[n] = STALL[k]; v[n] = val[id, m] }
    }
    if (n > 0) {
        # the three largest, largest first (ties: the order of STALL)
        top = ""
        for (j = 1; j <= 3 && j <= n; j++) {
            r = 0
            for (k = 1; k <= n; k++)
                if (!(k in used) && (r == 0 || v[k] > v[r])) r = k
            used[r] = 1
            top = top sprintf("%s%s %.2f", j > 1 ? ", " : "", reason[r], v[r])
        }
        s = s (s == "" ? "" : "; ") "stalls per issued instruction: " top
    }
    return s
}

# ncu's own count of bank conflicts where it was collected, else a guess from the wavefronts
# (more than 1 a request, which a wider access than 4 bytes also needs)
function conflicts(id, m, per) {
    if ((id, m) in val) return val[id, m] > 0 ? sprintf("  %.0f bank conflicts", val[id, m]) : ""
    return per > 1.05 ? "  bank conflicts?" : ""
}

BEGIN {
    if (mode == "") mode = "table"
    if (mode != "table" && mode != "sum") {
        print "ncu-table: mode=" mode ": choose table or sum" > "/dev/stderr"; failed = 1; exit 1
    }
    G_LD_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
    G_LD_SEC = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    G_ST_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
    G_ST_SEC = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
    G_AT_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"
    G_AT_SEC = "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum"
    G_RD_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"
    G_RD_SEC = "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum"
    S_LD_REQ = "smsp__inst_executed_op_shared_ld.sum"
    S_LD_WAV = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
    S_ST_REQ = "smsp__inst_executed_op_shared_st.sum"
    S_ST_WAV = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
    S_LD_CONF = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
    S_ST_CONF = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
    DIV = "smsp__sass_branch_targets_threads_divergent.sum"
    WARPS = "smsp__warps_launched.sum"
    OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
    SM_T = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    L2_T = "lts__throughput.avg.pct_of_peak_sustained_elapsed"
    DRAM_T = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
    STALL_PRE = "smsp__average_warps_issue_stalled_"; STALL_POST = "_per_issue_active.ratio"
    NSTALL = split("long_scoreboard short_scoreboard barrier mio_throttle lg_throttle " \
                   "math_pipe_throttle wait not_selected membar", STALL, " ")
    nid = 0; layout = ""
}

{ sub(/\r$/, "") }

# the header: the first line whose fields include "ID" and "Kernel Name"
layout == "" {
    if ($0 !~ /^"/) next
    n = csv_split($0, f)
    for (i = 1; i <= n; i++) col[f[i]] = i
    if (!("ID" in col) || !("Kernel Name" in col)) { delete col; next }
    ncol = n
    for (i = 1; i <= n; i++) name[i] = f[i]
    layout = ("Metric Name" in col && "Metric Value" in col) ? "long" : "wide"
    next
}

{
    if ($0 !~ /^"/) next
    n = csv_split($0, f)
    id = f[col["ID"]]
    if (id == "") {             # the wide layout's row of units
        if (layout == "wide") for (i = 1; i <= n; i++) unit[i] = f[i]
        next
    }
    if (!(id in seen)) {
        seen[id] = 1; order[++nid] = id
        kname[id] = f[col["Kernel Name"]]
        grid[id] = ("Grid Size" in col) ? dims(f[col["Grid Size"]]) : ""
        block[id] = ("Block Size" in col) ? dims(f[col["Block Size"]]) : ""
    }
    if (layout == "long") {
        u = ("Metric Unit" in col) ? f[col["Metric Unit"]] : ""
        x = number(f[col["Metric Value"]], u)
        if (x != "") val[id, f[col["Metric Name"]]] = x
    } else {
        for (i = 1; i <= n && i <= ncol; i++) {
            if (name[i] !~ /__/) continue   # ID, Kernel Name, ...: not metrics
            x = number(f[i], unit[i])
            if (x != "") val[id, name[i]] = x
        }
    }
}

END {
    if (failed) exit 1
    if (layout == "") {
        printf "ncu-table: %s holds no Nsight Compute CSV header (\"ID\",...,\"Kernel Name\",...)\n",
               FILENAME > "/dev/stderr"
        exit 1
    }
    if (nid == 0) {
        printf "ncu-table: %s holds no kernel launch: Nsight Compute profiled nothing\n",
               FILENAME > "/dev/stderr"
        exit 1
    }
    for (k = 1; k <= nid; k++) {
        id = order[k]
        w[id] = need(id, WARPS)
        gl_r[id] = need(id, G_LD_REQ); gl_s[id] = need(id, G_LD_SEC)
        gs_r[id] = need(id, G_ST_REQ) + opt(id, G_AT_REQ) + opt(id, G_RD_REQ)
        gs_s[id] = need(id, G_ST_SEC) + opt(id, G_AT_SEC) + opt(id, G_RD_SEC)
        sl_r[id] = need(id, S_LD_REQ); sl_w[id] = need(id, S_LD_WAV)
        ss_r[id] = need(id, S_ST_REQ); ss_w[id] = need(id, S_ST_WAV)
        dv[id] = need(id, DIV)
    }
    if (mode == "sum") {
        kernels = ""
        for (k = 1; k <= nid; k++) {
            id = order[k]
            T["warps"] += w[id]
            T["gld_requests"] += gl_r[id]; T["gld_sectors"] += gl_s[id]
            T["gst_requests"] += gs_r[id]; T["gst_sectors"] += gs_s[id]
            T["shld_requests"] += sl_r[id]; T["shld_wavefronts"] += sl_w[id]
            T["shst_requests"] += ss_r[id]; T["shst_wavefronts"] += ss_w[id]
            T["divergent_branches"] += dv[id]
            kernels = kernels (k > 1 ? "+" : "") fn_name(kname[id])
        }
        printf "kernel\tlaunches\twarps\tgld_requests\tgld_sectors\tgst_requests\tgst_sectors\t" \
               "shld_requests\tshld_wavefronts\tshst_requests\tshst_wavefronts\t" \
               "divergent_branches\tkernels\n"
        printf "%s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%s\n",
               (rung == "" ? "-" : rung), nid, T["warps"], T["gld_requests"], T["gld_sectors"],
               T["gst_requests"], T["gst_sectors"], T["shld_requests"], T["shld_wavefronts"],
               T["shst_requests"], T["shst_wavefronts"], T["divergent_branches"], kernels
        exit 0
    }
    # mode=table: the model's layout (harness/emu/prof/prof.cpp, report()), a kernel at a time
    where = "(whole kernel, Nsight Compute)"
    W = "    %-" length(where) "s  %-13s %-17s "  # source line, what, memory
    for (k = 1; k <= nid; k++) {
        id = order[k]
        printf "  kernel %s: grid %s block %s, %.0f warps\n", kname[id], grid[id], block[id], w[id]
        printf W "%9s %9s %10s %12s %14s\n", "source line", "what", "memory", "requests",
               "lanes/req", "bytes/lane", "sectors/req", "wavefronts/req"
        if (gl_r[id] > 0)
            printf W "%9.0f %9s %10s %12.2f\n", where, "global load", "", gl_r[id], "-", "-",
                   gl_s[id] / gl_r[id]
        if (gs_r[id] > 0)
            printf W "%9.0f %9s %10s %12.2f\n", where, "global store", "", gs_r[id], "-", "-",
                   gs_s[id] / gs_r[id]
        if (sl_r[id] > 0)
            printf W "%9.0f %9s %10s %12s %14.2f%s\n", where, "shared load", "", sl_r[id], "-", "-",
                   "", sl_w[id] / sl_r[id], conflicts(id, S_LD_CONF, sl_w[id] / sl_r[id])
        if (ss_r[id] > 0)
            printf W "%9.0f %9s %10s %12s %14.2f%s\n", where, "shared store", "", ss_r[id], "-", "-",
                   "", ss_w[id] / ss_r[id], conflicts(id, S_ST_CONF, ss_w[id] / ss_r[id])
        if (dv[id] > 0)
            printf W "%9.0f  (%.3f per warp)\n", where, "divergent br", "", dv[id],
                   ratio(dv[id], w[id])
        printf "    total: global load %.2f sectors/req (%.0f req), global store %.2f (%.0f), " \
               "shared load %.2f wavefronts/req (%.0f), shared store %.2f (%.0f), " \
               "divergent branches %.3f per warp (%.0f)\n",
               ratio(gl_s[id], gl_r[id]), gl_r[id], ratio(gs_s[id], gs_r[id]), gs_r[id],
               ratio(sl_w[id], sl_r[id]), sl_r[id], ratio(ss_w[id], ss_r[id]), ss_r[id],
               ratio(dv[id], w[id]), dv[id]
        line = occupancy_line(id)
        if (line != "")
            printf "    occupancy and stalls: %s\n", line
    }
}
