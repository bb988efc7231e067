#!/usr/bin/env bash
# fp8_ffma_yield.sh: build tests/probes/fp8_gemm_variants.cu with chapter 11's step 3 three
# times, its promotion's FFMAs as nvcc left them (reference) and with their scheduling bits
# rewritten by tests/probes/ffma_yield.py (y_all: every one yields; y_none: none does), into
# build/cuda/probes/fp8_gemm_variants: fp8_gemm_variants.sh's build, with a rewrite of each
# variant's cubin (the reference's too, with nothing changed, so that all three take the same
# path: variants.sh's V_CUBIN). Needs what fp8_gemm_variants.sh needs, python3 and the
# toolkit's cuobjdump. Run:
#   build/cuda/probes/fp8_gemm_variants out.tsv [runs, 9] [sizes, "4096 8192"]
set -euo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-nvcc}
export CUOBJDUMP=${CUOBJDUMP:-$(dirname "$(command -v "$NVCC")")/cuobjdump}
# NAME CUBIN: the rewrite each variant's name stands for
ffma_rewrite() {
    local mode
    case $1 in
    reference) mode=keep ;;
    y_all) mode=all ;;
    y_none) mode=none ;;
    *) echo "fp8_ffma_yield.sh: no rewrite named $1" >&2; return 1 ;;
    esac
    python3 tests/probes/ffma_yield.py "$2" "$mode" "$CUOBJDUMP"
}
export -f ffma_rewrite
V_CUBIN=ffma_rewrite tests/probes/fp8_gemm_variants.sh reference: y_all: y_none:
