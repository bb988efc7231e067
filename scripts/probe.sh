# shellcheck shell=bash
# probe.sh: sourced by the scripts that ask build/cuda/probe whether a GPU answers. The probe
# prints a header line and one row of tab-separated fields (harness/probe.c lists them) and
# exits 0, or one line saying why no GPU answered and exits 1. These read its output, as
# captured: out=$(build/cuda/probe).
#   probe_field OUT NAME   the field NAME of the row ("name", "cc", "sms", "driver", ...);
#                          empty when OUT has no such column
#   probe_driver OUT       the driver and runtime as the records write them:
#                          "580.159.04, CUDA driver 13.0, runtime 13.0"
#   probe_describe OUT     one line for a person: "NVIDIA H200 (compute capability 9.0,
#                          132 SMs, 580.159.04, CUDA driver 13.0, runtime 13.0)"

probe_field() {
    awk -F'\t' -v want="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == want) col = i }
                             NR == 2 && col { print $col }' <<<"$1"
}

probe_driver() {
    local module cuda runtime
    module=$(probe_field "$1" driver)
    cuda=$(probe_field "$1" cuda_driver)
    runtime=$(probe_field "$1" runtime)
    echo "${module:+$module, }CUDA driver $cuda, runtime $runtime"
}

probe_describe() {
    echo "$(probe_field "$1" name) (compute capability $(probe_field "$1" cc)," \
         "$(probe_field "$1" sms) SMs, $(probe_driver "$1"))"
}
