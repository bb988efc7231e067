# kernel-name.awk: a kernel's name as the model's rows and Nsight Compute's both can be compared,
# for scripts/ncu-table.awk and scripts/calibration.awk (awk -f scripts/kernel-name.awk -f ...).

# "void f<32, true>(const float *, int)" -> "f<32, true>": without return type and parameters
function fn_name(s,    i, c, depth, out) {
    sub(/^void /, "", s)
    out = ""; depth = 0
    for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "<") depth++
        else if (c == ">") depth--
        else if (c == "(" && depth == 0) break
        out = out c
    }
    gsub(/^ +| +$/, "", out)
    return out
}

# fn_name, then one spelling for template arguments: "k<(int)4, (bool)1>" and "k<4, true>" both
# become "k<4,1>" (a bool argument is written true, (bool)1 or plain 1 depending on the tool: the
# H200's ncu printed plain 0 and 1 in its raw page), without casts and spaces
function norm(s,    out) {
    out = fn_name(s)
    gsub(/\(bool\)1/, "1", out); gsub(/\(bool\)0/, "0", out)
    gsub(/true/, "1", out); gsub(/false/, "0", out)
    gsub(/\((unsigned |signed |long |short )*(int|long|char|short|bool)\)/, "", out)
    gsub(/ /, "", out)
    return out
}
