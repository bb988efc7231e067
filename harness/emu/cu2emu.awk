# cu2emu.awk: rewrites the two pieces of CUDA syntax that g++ cannot parse, so that a .cu file
# stays pure CUDA (it still builds with nvcc) and compiles for the emu backend:
#
#   k<<<grid, block[, smem[, stream]]>>>(args)
#       ->  k ^ emu::cfg(grid, block[, smem[, stream]]) ^ emu::args(args)
#   extern __shared__ [__align__(n)] T name[];
#       ->  extern __thread [__align__(n)] T name[] __asm__("emu_dyn_smem");
#
# The kernel expression before <<< is left as written (a name, k<float, 32>, a table entry):
# emu/device.h overloads ^ for it. A launch may span lines; `<<<` and its `>>>` are paired in
# order. An extern __shared__ declaration must be on one line. Lines are never added or
# removed, and the output starts with #line, so compiler messages name the .cu file's lines.
#
# usage: awk -f cu2emu.awk file.cu > file.emu.cpp
NR == 1 {
    name = FILENAME
    gsub(/\\/, "\\\\", name)
    gsub(/"/, "\\\"", name)
    printf "#line 1 \"%s\"\n", name
}
{
    rest = $0
    out = ""
    for (;;) {
        if (!in_launch) {
            i = index(rest, "<<<")
            if (i == 0)
                break
            out = out substr(rest, 1, i - 1) " ^ emu::cfg("
            rest = substr(rest, i + 3)
            in_launch = 1
        } else {
            i = index(rest, ">>>")
            if (i == 0)
                break
            out = out substr(rest, 1, i - 1) ") ^ emu::args"
            rest = substr(rest, i + 3)
            in_launch = 0
        }
    }
    line = out rest
    if (line ~ /extern[ \t]+__shared__[ \t]/ && line ~ /\[[ \t]*\][ \t]*;/) {
        sub(/extern[ \t]+__shared__[ \t]+/, "extern __thread ", line)
        sub(/[ \t]*\[[ \t]*\][ \t]*;/, "[] __asm__(\"emu_dyn_smem\");", line)
    }
    print line
}
END {
    if (in_launch) {
        printf "%s: a kernel launch's <<< has no matching >>>\n", FILENAME > "/dev/stderr"
        exit 1
    }
}
