#!/usr/bin/env bash
# symbols.sh: a kernel file that defines what the grader's libraries define is refused before it
# is linked (scripts/symbols.sh check, which every grader's and profile driver's rule runs):
# objects that define cuBLAS's sgemm, the C library's waitpid, a harness function and the CUDA
# runtime's cudaEventElapsedTime are each refused, by file and symbol, against the lists make
# wrote (build/emu/reserved.syms, build/cuda/reserved.syms); an object that defines its own
# launcher and uses those functions without defining them, and one whose definition is weak
# (an inline function's), pass. Needs the lists: make test builds them with the graders.
set -uo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"

for b in emu cuda; do
    [[ -s build/$b/reserved.syms ]] || { echo "FAIL  build/$b/reserved.syms is missing (make builds it with the graders)"; exit 1; }
done

obj() { # obj NAME C-SOURCE: compiled to $tmp/build/cuda/x/NAME.o, laid out as make lays out
    # the object of kernel file x/NAME.cu
    mkdir -p "$tmp/build/cuda/x"
    printf '%s\n' "$2" > "$tmp/$1.c"
    gcc -c -o "$tmp/build/cuda/x/$1.o" "$tmp/$1.c" || { echo "FAIL  $1.c did not compile"; fail=1; }
}
obj sgemm 'int cublasSgemm_v2(void) { return 0; }'
obj waitpid 'int waitpid(int pid, int *status, int options) { (void)pid; (void)options; *status = 0; return 1; }'
obj harness 'unsigned long long harness_seed(void) { return 42; }'
obj elapsed 'int cudaEventElapsedTime(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 1e-3f; return 0; }'
obj clean 'int waitpid(int, int *, int); int matmul(int x) { int s; return waitpid(x, &s, 0); }'
obj weak '__attribute__((weak)) int cublasSgemm_v2(void) { return 0; } int matmul2(void) { return cublasSgemm_v2(); }'

check() { # check BACKEND OBJ...: symbols.sh's output and status
    (cd "$tmp" && "$OLDPWD/scripts/symbols.sh" check "$OLDPWD/build/$1/reserved.syms" "${@:2}" 2>&1; echo "rc $?")
}
out=$(check cuda build/cuda/x/sgemm.o)
expect "cuBLAS's sgemm, defined in a kernel file, is refused (GPU build)" \
    "x/sgemm.cu defines cublasSgemm_v2, which libcublas.so(.[0-9]+)? defines too.*rename yours" "$out"
expect "with a failing status" "^rc 1$" "$out"
out=$(check emu build/cuda/x/waitpid.o)
expect "the C library's waitpid is refused (CPU backend)" "x/waitpid.cu defines waitpid, which libc.so.6 defines" "$out"
out=$(check emu build/cuda/x/harness.o)
expect "a harness function is refused" "defines harness_seed, which libharness.a defines" "$out"
out=$(check cuda build/cuda/x/elapsed.o)
expect "the CUDA runtime's cudaEventElapsedTime is refused" \
    "defines cudaEventElapsedTime, which libcudart_static.a defines" "$out"
out=$(check emu build/cuda/x/elapsed.o)
expect "and the CPU backend's" "defines cudaEventElapsedTime, which libemu.a defines" "$out"
out=$(check cuda build/cuda/x/sgemm.o build/cuda/x/clean.o build/cuda/x/harness.o)
if [[ $(grep -c "defines" <<<"$out") -eq 2 && $out == *x/sgemm.cu* && $out == *x/harness.cu* ]]; then
    echo "ok    two of three objects refused, each by name"
else
    echo "FAIL  want two refusals, of x/sgemm.cu and x/harness.cu, in:"; echo "$out"; fail=1
fi
out=$(check cuda build/cuda/x/clean.o build/cuda/x/weak.o)
expect "a file that only calls them, or defines one weakly, passes" "^rc 0$" "$out"
refute "saying nothing" "defines" "$out"
exit $fail
