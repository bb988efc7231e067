#!/usr/bin/env bash
# resources.sh: the table of what the GPU compiler gives each kernel of a .cu file (registers a
# thread, static shared memory, local memory, __launch_bounds__' threads), one row per kernel and
# architecture, written as a C++ header that the CPU backend's build includes into the file's
# object (harness/emu/README.md, "Kernel resources"; emu.mk runs it for EMU_RESOURCE_USAGE).
#
#   resources.sh OUT.res.h FILE.cu "75 80 89 90" NVCC [nvcc flags: -std, -O, -I...]
#
# nvcc compiles FILE.cu once, for every architecture (-fatbin, no GPU needed): ptxas's report
# (-Xptxas -v) gives the registers, shared and local memory of each entry, the PTX it leaves
# (--keep) its .maxntid. Nothing is written beside the sources: the work directory lies next to
# OUT and is removed. nvcc's failure is this script's, with nvcc's messages.
set -euo pipefail

if (($# < 4)); then
    echo "usage: resources.sh OUT.res.h FILE.cu \"ARCHS\" NVCC [nvcc flags]" >&2
    exit 2
fi
out=$1 src=$2 archs=$3 nvcc=$4
shift 4
here=$(dirname "${BASH_SOURCE[0]}")

if [[ ! -x $nvcc ]] && ! command -v "$nvcc" > /dev/null 2>&1; then
    echo "emu: $src asks for its kernels' resource table (EMU_RESOURCE_USAGE, harness/emu/README.md," >&2
    echo "     \"Kernel resources\"), which nvcc makes, and there is no nvcc at $nvcc (NVCC=path)." >&2
    exit 1
fi

mkdir -p "$(dirname "$out")"
work=$(mktemp -d "$(dirname "$out")/.res.XXXXXX")
trap 'rm -rf "$work"' EXIT

gencode=()
for a in $archs; do
    gencode+=(-gencode "arch=compute_$a,code=sm_$a")
done
if ! "$nvcc" "$@" -fatbin "${gencode[@]}" -Xptxas -v --keep --keep-dir "$work" \
        -o "$work/kernels.fatbin" "$src" > "$work/ptxas.txt" 2>&1; then
    echo "emu: nvcc failed on $src, which the CPU backend compiles for its kernels' resource table" >&2
    echo "     (EMU_RESOURCE_USAGE, harness/emu/README.md, \"Kernel resources\"):" >&2
    cat "$work/ptxas.txt" >&2
    exit 1
fi

# the PTX of each architecture, for its .maxntid (a kernel's launch bounds may depend on
# __CUDA_ARCH__); awk reads each after its sm=NN
inputs=("$work/ptxas.txt")
for a in $archs; do
    f=$(find "$work" -maxdepth 1 -name "*.compute_$a.ptx" | head -n 1)
    if [[ -z $f ]]; then
        echo "emu: nvcc left no PTX for compute_$a of $src in $work (resources.sh reads its .maxntid)" >&2
        exit 1
    fi
    inputs+=("sm=$a" "$f")
done

version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
awk -v src="$src" -v archs="$archs" -v nvcc_version="$version" -f "$here/resources.awk" \
    "${inputs[@]}" > "$work/table.h"
mv "$work/table.h" "$out"
