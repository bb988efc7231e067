# shellcheck shell=bash
# variants.sh: sourced by the probes' build scripts (fp8_gemm_variants.sh,
# mxfp4_gemv_variants.sh). build_variants SPEC... builds the driver tests/probes/$V_NAME.cu with
# one variant of a step for each SPEC, NAME:[DEFS][@SOURCE]: SOURCE ($V_SRC when left out)
# compiled with the -D flags DEFS (space-separated) and its launcher $V_LAUNCHER renamed NAME,
# into build/cuda/probes/$V_NAME. The caller sets V_NAME, V_LAUNCHER, V_SRC, and the arrays
# V_FLAGS (nvcc's flags for every file), V_NEED (objects linked in, built by make B=cuda) and
# V_LIBS (libraries).
build_variants() {
    if (($# == 0)); then
        echo "usage: $0 NAME:[DEFS][@SOURCE] ..." >&2
        exit 2
    fi
    local nvcc=${NVCC:-nvcc} dir=build/cuda/probes f spec name rest defs src p
    for f in "${V_NEED[@]}"; do
        [[ -f $f ]] || { echo "$0: $f is missing: make B=cuda build/cuda/chapters/11-mixed-precision/grade" >&2; exit 1; }
    done
    mkdir -p "$dir"
    local objs=() variants="" pids=()
    for spec in "$@"; do
        name=${spec%%:*}
        [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ && $name != main && $spec == *:* ]] ||
            { echo "$0: '$spec' is not NAME:[DEFS][@SOURCE] with NAME a C identifier other than main" >&2; exit 2; }
        rest=${spec#*:} src=$V_SRC
        defs=${rest%%@*}
        [[ $rest == *@* ]] && src=${rest#*@}
        [[ -f $src ]] || { echo "$0: no such source: $src" >&2; exit 1; }
        # shellcheck disable=SC2086 # DEFS is a list of -D flags
        "$nvcc" "${V_FLAGS[@]}" $defs "-D$V_LAUNCHER=$name" -c "$src" -o "$dir/${V_NAME}_$name.o" &
        pids+=($!) objs+=("$dir/${V_NAME}_$name.o") variants="$variants V($name)"
    done
    for p in "${pids[@]}"; do
        wait "$p" || { echo "$0: a variant did not compile" >&2; exit 1; }
    done
    "$nvcc" "${V_FLAGS[@]}" "-DVARIANTS=$variants" -c "tests/probes/$V_NAME.cu" -o "$dir/$V_NAME.o"
    "$nvcc" -o "$dir/$V_NAME" "$dir/$V_NAME.o" "${objs[@]}" "${V_NEED[@]}" "${V_LIBS[@]}"
    echo "built $dir/$V_NAME:$variants"
}
