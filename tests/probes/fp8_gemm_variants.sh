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
# shellcheck source=tests/probes/variants.sh
source tests/probes/variants.sh
V_NAME=fp8_gemm_variants V_LAUNCHER=gemm_fp8_blockscaled
V_SRC=solutions/11-mixed-precision/step3_fp8_gemm_sm90a.cu
V_FLAGS=(-std=c++17 -O3 -lineinfo -gencode "arch=compute_90a,code=sm_90a" -Iharness
         -Ichapters/11-mixed-precision -Isolutions/11-mixed-precision)
V_NEED=(build/cuda/chapters/11-mixed-precision/cublaslt_fp8_gpu.o build/cuda/harness/gpu.o
        build/cuda/harness/harness.o)
V_LIBS=(-lcublasLt -lcublas -lcuda)
build_variants "$@"
