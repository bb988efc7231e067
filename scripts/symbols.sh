#!/usr/bin/env bash
# symbols.sh: no kernel file may define a function or a variable that the grader's own libraries
# define (the harness, the grading families, the CUDA runtime or the CPU backend's, cuBLAS,
# Check, the C and C++ runtimes). A definition in a kernel file's object wins over an archive's
# member that nothing else pulls in, and over every shared library's, for every caller in the
# program: a kernel file that defined cublasSgemm_v2, waitpid or a harness function would run in
# place of it, in the process that judges too. The linker refuses only a clash with an object it
# links whole; this refuses them all, before the link, naming the file and the symbol.
#
#   symbols.sh reserved OUT FILE...   the global symbols each FILE (an archive, an object or a
#                                     shared library) defines, "SYMBOL<TAB>FILE's name", into OUT
#   symbols.sh check RESERVED OBJ...  exit 1, saying which, when an OBJ defines (strongly: a
#                                     weak definition, an inline function's, yields) a symbol
#                                     RESERVED lists; 0 when none does
set -euo pipefail

case ${1:-} in
    reserved)
        out=${2:?usage: symbols.sh reserved OUT FILE...}
        shift 2
        tmp=$(mktemp)
        trap 'rm -f "$tmp"' EXIT
        for f in "$@"; do
            [[ -e $f ]] || { echo "symbols: $f: no such file" >&2; exit 2; }
            case $f in
                *.so|*.so.*) nm -D --defined-only "$f" ;;
                *) nm -g --defined-only "$f" ;;
            esac | awk -v lib="$(basename "$f")" 'NF == 3 && $2 !~ /^[NUw]$/ {
                       s = $3; sub(/@.*/, "", s); print s "\t" lib }' >> "$tmp"
        done
        sort -t$'\t' -k1,1 -u "$tmp" > "$out.tmp"
        mv "$out.tmp" "$out"
        ;;
    check)
        reserved=${2:?usage: symbols.sh check RESERVED OBJ...}
        shift 2
        bad=0
        for o in "$@"; do
            clashes=$(nm -g --defined-only "$o" | awk '$2 ~ /^[TDBRGSC]$/ { print $3 }' |
                      awk -F'\t' 'NR == FNR { lib[$1] = $2; next }
                                   ($1 in lib) { print $1 "\t" lib[$1] }' "$reserved" -)
            [[ -z $clashes ]] && continue
            # the kernel file the object was built from: build/BACKEND/PATH.o is PATH.cu
            src=${o#build/*/}
            src=${src%.o}.cu
            while IFS=$'\t' read -r sym lib; do
                echo "symbols: $src defines $sym, which $lib defines too: a kernel file may not" \
                     "replace a function of the harness, the runtime or the libraries the grader" \
                     "calls (it would run in their place, for the grader too); rename yours" >&2
            done <<<"$clashes"
            bad=1
        done
        exit $bad
        ;;
    *)
        echo "usage: symbols.sh reserved OUT FILE... | symbols.sh check RESERVED OBJ..." >&2
        exit 2
        ;;
esac
