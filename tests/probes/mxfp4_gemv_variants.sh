#!/usr/bin/env bash
# mxfp4_gemv_variants.sh NAME:[DEFS][@SOURCE] ...: build tests/probes/mxfp4_gemv_variants.cu
# with one variant of chapter 11's step 4 a NAME, into build/cuda/probes/mxfp4_gemv_variants.
# Each is SOURCE (solutions/11-mixed-precision/step4_mxfp4_gemv.cu when left out) compiled with
# the -D flags DEFS (space-separated) and its launcher renamed NAME. ARCH (90 unless set) is the
# SM version compiled for. Needs the harness's objects built first (make B=cuda
# build/cuda/chapters/11-mixed-precision/grade). Example:
#   tests/probes/mxfp4_gemv_variants.sh reference: other:@my_step4.cu
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/probes/variants.sh
source tests/probes/variants.sh
ARCH=${ARCH:-90}
V_NAME=mxfp4_gemv_variants V_LAUNCHER=gemm_mxfp4_bf16
V_SRC=solutions/11-mixed-precision/step4_mxfp4_gemv.cu
V_FLAGS=(-std=c++17 -O3 -lineinfo -gencode "arch=compute_$ARCH,code=sm_$ARCH" -Iharness
         -Ichapters/11-mixed-precision -Isolutions/11-mixed-precision)
V_NEED=(build/cuda/harness/gpu.o build/cuda/harness/harness.o build/cuda/harness/blas.o)
V_LIBS=(-lcublas -lcuda)
build_variants "$@"
