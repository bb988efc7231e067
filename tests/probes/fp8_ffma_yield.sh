#!/usr/bin/env bash
# fp8_ffma_yield.sh: build tests/probes/fp8_gemm_variants.cu with chapter 11's step 3 three
# times, its promotion's FFMAs as nvcc left them (reference) and with their scheduling bits
# rewritten by tests/probes/ffma_yield.py (y_all: every one yields; y_none: none does), into
# build/cuda/probes/fp8_gemm_variants. Each variant is compiled keeping nvcc's intermediate
# files; its cubin is rewritten (the reference's too, with nothing changed, so that all three
# take the same path); then nvcc's own last two steps (fatbinary, the host compile), as
# `nvcc -dryrun` lists them, are run again on it. Needs the harness's objects (make B=cuda
# build/cuda/chapters/11-mixed-precision/grade), python3 and the toolkit's cuobjdump. Run:
#   build/cuda/probes/fp8_gemm_variants out.tsv [runs, 9] [sizes, "4096 8192"]
set -euo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-nvcc}
CUOBJDUMP=${CUOBJDUMP:-$(dirname "$(command -v "$NVCC")")/cuobjdump}
SRC=solutions/11-mixed-precision/step3_fp8_gemm_sm90a.cu
FLAGS=(-std=c++17 -O3 -lineinfo -gencode "arch=compute_90a,code=sm_90a" -Iharness
       -Ichapters/11-mixed-precision -Isolutions/11-mixed-precision)
NEED=(build/cuda/chapters/11-mixed-precision/cublaslt_fp8_gpu.o build/cuda/harness/gpu.o
      build/cuda/harness/harness.o)
for f in "${NEED[@]}"; do
    [[ -f $f ]] || { echo "$0: $f is missing: make B=cuda build/cuda/chapters/11-mixed-precision/grade" >&2; exit 1; }
done
dir=build/cuda/probes
mkdir -p "$dir"
objs=()
for spec in reference:keep y_all:all y_none:none; do
    name=${spec%%:*} mode=${spec#*:} keep=$dir/ffma_yield_$name
    rm -rf "$keep" && mkdir -p "$keep"
    f=("${FLAGS[@]}" "-Dgemm_fp8_blockscaled=$name")
    "$NVCC" "${f[@]}" -keep -keep-dir "$keep" -c "$SRC" -o "$keep/$name.o"
    python3 tests/probes/ffma_yield.py "$keep"/*.cubin "$mode" "$CUOBJDUMP"
    "$NVCC" "${f[@]}" -dryrun -keep -keep-dir "$keep" -c "$SRC" -o "$keep/$name.o" 2>&1 |
        sed 's/^#\$ //' | grep -E '^fatbinary |^gcc .* -c -x c\+\+ ' > "$keep/redo.sh"
    [[ $(wc -l < "$keep/redo.sh") == 2 ]] || { echo "$0: nvcc -dryrun did not list fatbinary and the host compile" >&2; exit 1; }
    bash "$keep/redo.sh"
    objs+=("$keep/$name.o")
done
"$NVCC" "${FLAGS[@]}" "-DVARIANTS=V(reference) V(y_all) V(y_none)" -c tests/probes/fp8_gemm_variants.cu \
    -o "$dir/fp8_gemm_variants.o"
"$NVCC" -o "$dir/fp8_gemm_variants" "$dir/fp8_gemm_variants.o" "${objs[@]}" "${NEED[@]}" \
    -lcublasLt -lcublas -lcuda
echo "built $dir/fp8_gemm_variants: V(reference) V(y_all) V(y_none)"
