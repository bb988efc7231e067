#!/usr/bin/env bash
# mutate.sh PATCH OUTDIR: apply a known-bug patch (tests/mutants/CHAPTER/NAME.patch) to the
# solution file it names, writing the patched copy into OUTDIR; the solution is not touched.
# A patch that no longer applies is an error: the mutant would silently test nothing.
set -euo pipefail
patch_file=$1 out=$2
target=$(sed -n 's|^+++ b/||p' "$patch_file" | head -n 1)
[[ -n $target && -f $target ]] || { echo "mutate: $patch_file names no file of this tree" >&2; exit 1; }
mkdir -p "$out"
patch --quiet --force -o "$out/$(basename "$target")" "$target" < "$patch_file"
cmp -s "$target" "$out/$(basename "$target")" && { echo "mutate: $patch_file changed nothing" >&2; exit 1; }
exit 0
