# shellcheck shell=bash
# variants.sh: sourced by the probes' build scripts (fp8_gemm_variants.sh,
# mxfp4_gemv_variants.sh). build_variants SPEC... builds the driver tests/probes/$V_NAME.cu with
# one variant of a step for each SPEC, NAME:[DEFS][@SOURCE]: SOURCE ($V_SRC when left out)
# compiled with the -D flags DEFS (space-separated) and its launcher $V_LAUNCHER renamed NAME,
# into build/cuda/probes/$V_NAME. The caller sets V_NAME, V_LAUNCHER, V_SRC, and the arrays
# V_FLAGS (nvcc's flags for every file), V_NEED (objects linked in, built by make B=cuda) and
# V_LIBS (libraries). V_CUBIN, where set (the caller's, or the environment's: an exported
# function or a command), is run as `$V_CUBIN NAME CUBIN` on each variant's machine code before
# it is linked (compile_variant): a probe of what the compiler's output would do if changed.
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
        compile_variant "$name" "$defs" "$src" "$dir/${V_NAME}_$name.o" &
        pids+=($!) objs+=("$dir/${V_NAME}_$name.o") variants="$variants V($name)"
    done
    for p in "${pids[@]}"; do
        wait "$p" || { echo "$0: a variant did not compile" >&2; exit 1; }
    done
    "$nvcc" "${V_FLAGS[@]}" "-DVARIANTS=$variants" -c "tests/probes/$V_NAME.cu" -o "$dir/$V_NAME.o"
    "$nvcc" -o "$dir/$V_NAME" "$dir/$V_NAME.o" "${objs[@]}" "${V_NEED[@]}" "${V_LIBS[@]}"
    echo "built $dir/$V_NAME:$variants"
}

# compile_variant NAME DEFS SOURCE OBJECT: SOURCE compiled with the -D flags DEFS and the launcher
# renamed NAME. With V_CUBIN, through nvcc's intermediate files, kept beside OBJECT (in
# OBJECT without .o, plus .keep): the one cubin handed to V_CUBIN, then nvcc's own last two
# steps (fatbinary, the host compile), as `nvcc -dryrun` lists them, run again on it.
compile_variant() {
    local name=$1 src=$3 obj=$4 keep cubins
    # shellcheck disable=SC2206 # DEFS is a list of -D flags
    local f=("${V_FLAGS[@]}" $2 "-D$V_LAUNCHER=$name")
    if [[ -z ${V_CUBIN:-} ]]; then
        "$nvcc" "${f[@]}" -c "$src" -o "$obj"
        return
    fi
    keep=${obj%.o}.keep
    rm -rf "$keep" && mkdir -p "$keep"
    "$nvcc" "${f[@]}" -keep -keep-dir "$keep" -c "$src" -o "$obj"
    cubins=("$keep"/*.cubin)
    [[ ${#cubins[@]} == 1 && -f ${cubins[0]} ]] ||
        { echo "$0: $name: not one cubin in $keep (one architecture a variant)" >&2; return 1; }
    "$V_CUBIN" "$name" "${cubins[0]}"
    "$nvcc" "${f[@]}" -dryrun -keep -keep-dir "$keep" -c "$src" -o "$obj" 2>&1 |
        sed 's/^#\$ //' | grep -E '^fatbinary |^gcc .* -c -x c\+\+ ' > "$keep/redo.sh"
    [[ $(wc -l < "$keep/redo.sh") == 2 ]] ||
        { echo "$0: nvcc -dryrun did not list fatbinary and the host compile" >&2; return 1; }
    bash "$keep/redo.sh"
}
