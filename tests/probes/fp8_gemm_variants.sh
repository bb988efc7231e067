#!/usr/bin/env bash
# fp8_gemm_variants.sh NAME:[DEFS][@SOURCE] ...: build tests/probes/fp8_gemm_variants.cu with
# one variant of chapter 11's step 3 a NAME, into build/cuda/probes/fp8_gemm_variants. Each is
# SOURCE (solutions/11-mixed-precision/step3_fp8_gemm_sm90a.cu when left out) compiled with
# the -D flags DEFS (space-separated) and its launcher renamed NAME; the first is the one the
# others' outputs are compared with. Needs build/cuda/chapters/11-mixed-precision/grade built
# first (make B=cuda), for cuBLASLt's launcher and the harness objects. Example:
#   tests/probes/fp8_gemm_variants.sh reference: pdl:@my_step3.cu
set -euo pipefail
cd "$(dirname "$0")/../.."
if (($# == 0)); then
    echo "usage: $0 NAME:[DEFS][@SOURCE] ..." >&2
    exit 2
fi
NVCC=${NVCC:-nvcc}
dir=build/cuda/probes
need=(build/cuda/chapters/11-mixed-precision/cublaslt_fp8_gpu.o build/cuda/harness/gpu.o
      build/cuda/harness/harness.o)
for f in "${need[@]}"; do
    [[ -f $f ]] || { echo "$0: $f is missing: make B=cuda build/cuda/chapters/11-mixed-precision/grade" >&2; exit 1; }
done
mkdir -p "$dir"
flags=(-std=c++17 -O3 -lineinfo -gencode "arch=compute_90a,code=sm_90a" -Iharness
       -Ichapters/11-mixed-precision -Isolutions/11-mixed-precision)
objs=() variants="" pids=()
for spec in "$@"; do
    name=${spec%%:*}
    [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ && $spec == *:* ]] ||
        { echo "$0: '$spec' is not NAME:[DEFS][@SOURCE] with NAME a C identifier" >&2; exit 2; }
    rest=${spec#*:} src=solutions/11-mixed-precision/step3_fp8_gemm_sm90a.cu
    defs=${rest%%@*}
    [[ $rest == *@* ]] && src=${rest#*@}
    [[ -f $src ]] || { echo "$0: no such source: $src" >&2; exit 1; }
    # shellcheck disable=SC2086 # DEFS is a list of -D flags
    "$NVCC" "${flags[@]}" $defs "-Dgemm_fp8_blockscaled=$name" -c "$src" -o "$dir/$name.o" &
    pids+=($!) objs+=("$dir/$name.o") variants="$variants V($name)"
done
for p in "${pids[@]}"; do
    wait "$p"
done
"$NVCC" "${flags[@]}" "-DVARIANTS=$variants" -c tests/probes/fp8_gemm_variants.cu \
    -o "$dir/fp8_gemm_variants.o"
"$NVCC" -o "$dir/fp8_gemm_variants" "$dir/fp8_gemm_variants.o" "${objs[@]}" "${need[@]}" \
    -lcublasLt -lcublas -lcuda
echo "built $dir/fp8_gemm_variants:$variants"
