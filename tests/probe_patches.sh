#!/usr/bin/env bash
# probe_patches.sh: every design a lesson measures that is kept as a patch in tests/probes/ (a
# step with one change, timed against its reference by a probe) still applies to the file it
# names, so that the measured design can be rebuilt from the tree: patch's dry run, each patch
# against its file. And the check can fail: each patch against its file with the first line of
# its first hunk's context changed must be refused.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
for p in tests/probes/*.patch; do
    [[ -e $p ]] || continue
    n=$((n + 1))
    target=$(sed -n 's|^--- a/\([^[:space:]]*\).*|\1|p' "$p" | head -1)
    if [[ -z $target || ! -f $target ]]; then
        echo "FAIL  $p names no file of the tree (--- a/${target:-?})"
        bad=1
        continue
    fi
    if ! out=$(patch --dry-run -f -s -o "$tmp/out" "$target" < "$p" 2>&1); then
        echo "FAIL  $p no longer applies to $target: $out"
        bad=1
        continue
    fi
    # the same patch against the file with its first hunk's first context line changed
    line=$(awk '/^@@ /{split($2, a, ","); print substr(a[1], 2); exit}' "$p")
    awk -v l="$line" 'NR == l { print "/* changed */ " $0; next } { print }' "$target" \
        > "$tmp/changed"
    if patch --dry-run -f -s -F 0 -o "$tmp/out" "$tmp/changed" < "$p" > /dev/null 2>&1; then
        echo "FAIL  $p applies even to $target with line $line changed: the check cannot fail"
        bad=1
        continue
    fi
    echo "ok    $p applies to $target (and not to it with line $line changed)"
done
echo "$n patches in tests/probes/, $bad failing"
((n > 0 && bad == 0))
