#!/usr/bin/env bash
# sanitize.sh: what `make sanitize` and `make sanitize-record` run, and scripts/gpu-run.sh with
# SANITIZE=1.
#
#   scripts/sanitize.sh                 each chapter of CHAPTERS (or the known-bug kernel MUTANT
#                                       of the one chapter) under each tool of TOOLS; a summary
#                                       per tool: clean, the errors and the first reports, or
#                                       why it did not finish
#   scripts/sanitize.sh --record FILE   the same, and one row per chapter and tool appended to
#                                       FILE, a table with the device, driver, sanitizer and
#                                       date on top (written when FILE is empty)
#   scripts/sanitize.sh --summary LOG   what one compute-sanitizer log says: its error count and
#                                       its first reports (exit 0 clean, 1 errors, 3 no summary)
#
# Each run is the chapter's grader in quick mode (GRADE_QUICK=1 GRADE_SANITIZE=1, see
# harness/grade.h): no timed tests, no shape over GRADE_QUICK_WORK, no test that makes errors on
# purpose, and a device reset after each passing test so that leaks are seen.
#
# On a GPU each tool is compute-sanitizer over the grader, whose tests are forked processes:
#   compute-sanitizer --tool TOOL --target-processes all --error-exitcode 86 --print-limit 100
#                     --log-file LOG [--leak-check full] [--kernel-name-exclude EXCLUDE] GRADER
# with --leak-check full for memcheck, and --kernel-name-exclude for racecheck and initcheck.
# On the CPU backend there is no compute-sanitizer: the grader is linked with its kernels built
# by the emu's instrumented build (program "sanitize" in build/programs.tsv; harness/emu/README.md, "Out-of-bounds
# accesses"), which checks every global and shared access before it happens and reports the
# first bad one with kernel, thread and line; with the emu's barrier checks that gives the rows
# memcheck (bounds only) and synccheck. racecheck, initcheck and the leak check need a GPU:
# their rows say so, and do not pass.
#
# Environment (the Makefile passes the first ones):
#   CHAPTERS, CH, SIDE, BACKEND, MAKE, MUTANT, TOOLS   as in the Makefile
#   SANITIZER          the compute-sanitizer to run (default: on PATH, else under $CUDA_HOME
#                      or /usr/local/cuda)
#   SANITIZE_TIMEOUT   seconds one tool's run may take (default 900)
#   SANITIZE_PREBUILT  1: build nothing and ask no probe, run what is there (gpu-run.sh)
#   SANITIZE_ROWS      whose graders stand for the GPU's in the manifest (default cuda; a dry run
#                      sets emu and SANITIZER to a stand-in, as tests/sanitize.sh does)
#   PROBE              with SANITIZE_PREBUILT=1, what names the device for the record (default
#                      build/cuda/probe)
#   SANITIZE_OUT       where each run's log and grader output go (default build/sanitize)
#   SANITIZE_EXCLUDE   the kernels racecheck and initcheck leave alone (default kns=cublas; in
#                      quick mode the graders launch no library kernel: cuBLAS runs only in the
#                      speed tests and the bench, and the references are computed on the CPU)
# Exit status: 0 when every run finished and found no error (with --record and a MUTANT: when
# each run found one); 1 otherwise; 2 on a usage error.
set -uo pipefail

# ---- the summary of one compute-sanitizer log ----------------------------------------------
# Prints "ERRORS<TAB>SUMMARY<TAB>LEAKS", SUMMARY 1 when the log has its closing summary (the
# tool ran to its end), then up to $2 report headlines, each with the line that places it.
# The error count is the sum of every "ERROR SUMMARY: N errors" line (one per process, or one
# for them all), else racecheck's "(N errors, M warnings)"; leaks count among the errors.
summarize() {
    awk -v show="${2:-3}" '
        function num(s) { sub(/^[^0-9]*/, "", s); sub(/[^0-9].*$/, "", s); return s + 0 }
        { sub(/\r$/, "") }
        /^========= ERROR SUMMARY: [0-9]+ error/ { errors += num($0); have = 1; pending = 0; next }
        /^========= RACECHECK SUMMARY:/ {
            if (match($0, /[(][0-9]+ error/)) { rc += num(substr($0, RSTART, RLENGTH)); rchave = 1 }
            pending = 0; next
        }
        /^========= LEAK SUMMARY:/ { leaks = $0; sub(/^========= LEAK SUMMARY: */, "", leaks); next }
        /^========= (COMPUTE-SANITIZER|Target application returned|Program finished)/ { next }
        /^=========     (at|and) / && pending { heads[nh] = heads[nh] "  " substr($0, 15); pending = 0; next }
        /^========= [^ ]/ {
            if (nh < show) { heads[++nh] = substr($0, 11); pending = 1 } else pending = 0
            next
        }
        END {
            if (!have && rchave) { errors = rc; have = 1 }
            printf "%d\t%d\t%s\n", errors, have, leaks
            for (i = 1; i <= nh; i++) print heads[i]
        }' "$1"
}

if [[ ${1:-} == --summary ]]; then
    [[ -r ${2:-} ]] || { echo "usage: $0 --summary LOG" >&2; exit 2; }
    { IFS=$'\t' read -r errors have leaks; mapfile -t heads; } < <(summarize "$2" 5)
    if [[ $have != 1 ]]; then
        echo "no summary: the tool did not run to its end"; status=3
    elif [[ $errors -gt 0 ]]; then
        echo "$errors error$([[ $errors -eq 1 ]] || echo s)${leaks:+ (leaks: $leaks)}"; status=1
    else
        echo "clean: 0 errors"; status=0
    fi
    for h in "${heads[@]}"; do echo "  $h"; done
    exit $status
fi

record=
if [[ ${1:-} == --record ]]; then
    record=${2:?usage: $0 --record FILE}
    mkdir -p "$(dirname "$record")"
fi

make_=${MAKE:-make}
tools=${TOOLS:-memcheck racecheck synccheck initcheck}
limit=${SANITIZE_TIMEOUT:-900}
outdir=${SANITIZE_OUT:-build/sanitize}
prebuilt=${SANITIZE_PREBUILT:-0}
mutant=${MUTANT:-}
side=${SIDE:-solutions}
chapters=${CHAPTERS:-}

for t in $tools; do
    case $t in
        memcheck|racecheck|synccheck|initcheck) ;;
        *) echo "sanitize: TOOLS has '$t': the tools are memcheck racecheck synccheck initcheck" >&2
           exit 2 ;;
    esac
done
if [[ -z ${chapters// } ]]; then
    echo "sanitize: no chapter matches CH=${CH:-}. The chapters are:" >&2
    for c in ${CHAPTERS_ALL:-}; do echo "    $c   (make sanitize CH=${c%%-*})" >&2; done
    exit 2
fi
if [[ -n $mutant ]]; then
    if [[ $(wc -w <<<"$chapters") -ne 1 ]]; then
        echo "sanitize: MUTANT=$mutant needs one chapter (CH=NN)" >&2; exit 2
    fi
    if [[ ! -f tests/mutants/$chapters/$mutant.patch ]]; then
        echo "sanitize: $chapters has no known-bug kernel '$mutant'; it has:" >&2
        for p in tests/mutants/"$chapters"/*.patch; do
            [[ -f $p ]] && echo "    $(basename "$p" .patch)" >&2
        done
        exit 2
    fi
fi

# ---- backend -------------------------------------------------------------------------------
backend=${BACKEND:-auto}
# shellcheck source=scripts/backend.sh
source scripts/backend.sh
check_backend_name sanitize
device=
if [[ $prebuilt == 1 ]]; then
    [[ $backend == auto ]] && backend=cuda
    if [[ $backend == cuda ]]; then
        probe=${PROBE:-build/cuda/probe}
        if probe_out=$($probe 2>&1); then
            device=$(probe_describe "$probe_out")
        else
            device="(no GPU answered: $probe_out)"
            probe_out=
        fi
    fi
elif ! choose_backend sanitize; then
    echo "sanitize: compute-sanitizer needs one; checking with the CPU backend's instrumented" \
         "build instead (the bounds of every access, and the barriers)"
fi
[[ $backend == emu ]] && device="CPU backend (emu), instrumented build"

sanitizer=
if [[ $backend == cuda ]]; then
    sanitizer=${SANITIZER:-}
    if [[ -z $sanitizer ]]; then
        for s in "$(command -v compute-sanitizer 2>/dev/null)" "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
                 /usr/local/cuda/bin/compute-sanitizer; do
            [[ -n $s && -x $s ]] && { sanitizer=$s; break; }
        done
    fi
    if [[ -z $sanitizer ]]; then
        echo "sanitize: compute-sanitizer is not on PATH nor under ${CUDA_HOME:-/usr/local/cuda}/bin:" \
             "it comes with the CUDA Toolkit (or set SANITIZER=/path/to/compute-sanitizer)" >&2
        exit 1
    fi
fi
# shellcheck source=scripts/programs.sh
source scripts/programs.sh
# the graders a GPU run takes: the manifest's cuda ones (SANITIZE_ROWS=emu: the CPU backend's,
# for a dry run of the GPU side without a GPU)
rows=${SANITIZE_ROWS:-cuda}

# the grader of chapter $1: its path, for this backend (empty when the manifest has none)
grader() {
    local c=$1 kind name=-
    kind=$(side_kind "$side")
    [[ -n $mutant ]] && kind=mutant name=$mutant
    if [[ $backend == emu ]]; then
        program_path sanitize "$kind" "$c" "$name" emu
    else
        program_path grade "$kind" "$c" "$name" "$rows"
    fi
}
# What the CPU backend's instrumented run of a chapter leaves out, where it must: chapter 05's
# tensor-core emulation is slow there (every lane of a warp computes each 16x16x16 product,
# and each of its accesses is checked), so only the correctness test of
# the learner's kernel runs, on shapes up to 1e6 multiply-adds; the other rungs: on a GPU.
emu_limits() {
    case $1 in
        05-*) echo "CK_RUN_CASE=correct GRADE_QUICK_WORK=1e6" ;;
    esac
}

what=${mutant:+known-bug kernel $mutant}
what=${what:-$side}
tag=${mutant:+mutant-$mutant}
tag=${tag:-$side}

# ---- build ---------------------------------------------------------------------------------
if [[ $prebuilt != 1 ]]; then
    targets=()
    for c in $chapters; do targets+=("$(grader "$c")"); done
    echo "sanitize: building the $what of ${chapters// /, } for the $backend backend$([[ $backend == emu ]] && echo ', instrumented')"
    $make_ --no-print-directory -s "${targets[@]}" || {
        echo "sanitize: the build failed; the compiler's messages above name the file and line" >&2
        exit 1
    }
fi

# ---- the record's header -------------------------------------------------------------------
if [[ -n $record && ! -s $record ]]; then
    name=$device driver=
    if [[ $backend == cuda && -n ${probe_out:-} ]]; then
        name=$(probe_field "$probe_out" name)
        driver=$(probe_driver "$probe_out")
    fi
    version=
    [[ -n $sanitizer ]] && version=$("$sanitizer" --version 2>&1 | grep -m1 -i '^version' || true)
    {
        echo "# device: ${name:-(none answered)}"
        echo "# driver: ${driver:-(unknown)}"
        if [[ -n $version ]]; then
            echo "# sanitizer: compute-sanitizer $version"
        else
            echo "# sanitizer: $([[ $backend == emu ]] && echo 'the emu instrumented build' || echo '(unknown)')"
        fi
        echo "# date: $(date -u +%Y-%m-%d)"
        echo "# graders in quick mode (GRADE_QUICK=1 GRADE_SANITIZE=1): no timed tests, no shape over ${GRADE_QUICK_WORK:-1e8} units of work, no planted faults"
        printf 'chapter\tside\ttool\terrors\tverdict\tgrade\tseconds\n'
    } > "$record"
fi

# ---- run -----------------------------------------------------------------------------------
checked=0 bad=() status=0
echo "sanitize: on ${device:-the $backend backend}"

# row CHAPTER TOOL ERRORS VERDICT GRADE SECONDS: one line of the record
row() {
    [[ -n $record ]] || return 0
    local who=$side
    [[ -n $mutant ]] && who="mutant $mutant"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$who" "$2" "$3" "$4" "$5" "$6" >> "$record"
}

# report CHAPTER TOOL VERDICT ERRORS DETAIL GRADE SECONDS [HEADLINE...]: the lines of one run
report() {
    local c=$1 tool=$2 verdict=$3 errors=$4 detail=$5 gline=$6 secs=$7
    shift 7
    # with --record, a known-bug kernel is the canary: it must be caught
    if [[ -n $record && -n $mutant ]]; then
        case $verdict in
            errors) verdict=caught ;;
            clean) verdict=MISSED; detail="$detail: the tool did not see the known bug" ;;
        esac
    fi
    printf '  %-10s %-12s %s  [%s%s s]\n' "$tool" "$verdict" "$detail" \
        "${gline:+grade $gline, }" "$secs"
    local h
    for h in "$@"; do printf '             %s\n' "$h"; done
    row "$c" "$tool" "$errors" "$verdict" "${gline:--}" "$secs"
    case $verdict in
        clean|caught|"needs a GPU") ;;
        *) bad+=("$c $tool ($verdict)"); status=1 ;;
    esac
}

for c in $chapters; do
    bin=$(grader "$c")
    dir=$outdir/$c/$tag
    mkdir -p "$dir"
    echo
    echo "$c ($what), $backend backend: $bin"
    if [[ ! -x $bin ]]; then
        for tool in $tools; do
            report "$c" "$tool" "not built" - "$bin is missing (make gpu-build builds it)" "" 0
        done
        continue
    fi
    quick=(env GRADE_QUICK=1 GRADE_SANITIZE=1 GRADE_TSV= GRADE_SIDE="$tag"
           CK_TIMEOUT_MULTIPLIER="${CK_TIMEOUT_MULTIPLIER:-4}")

    if [[ $backend == emu ]]; then
        # one instrumented run serves memcheck and synccheck
        out=$dir/emu.out
        read -r -a limits <<<"$(emu_limits "$c")"
        ((${#limits[@]})) && echo "  the CPU backend runs only ${limits[*]} here: its instrumented build is too slow" \
            "for the rest of this chapter, which make sanitize checks on a GPU"
        t0=$SECONDS
        timeout -k 10 "$limit" "${quick[@]}" "${limits[@]}" EMU_PROFILE_QUIET=1 "$bin" > "$out" 2>&1
        rc=$? secs=$((SECONDS - t0))
        gline=$(grep -E -m1 "^$c  (PASS|FAIL)  " "$out" | sed "s/^$c  //; s/  / /g; s/ passed on [a-z]*//")
        for tool in $tools; do
            case $tool in
                memcheck) pat='made an illegal|in the padding of the allocation|raised |__trap|Assertion' ;;
                synccheck) pat='threads wait at different barriers|deadlock' ;;
                *) report "$c" "$tool" "needs a GPU" - "compute-sanitizer's $tool has no CPU-backend counterpart: make sanitize on a GPU" "" 0
                   continue ;;
            esac
            checked=$((checked + 1))
            mapfile -t hits < <(grep -E 'emu: kernel ' "$out" | grep -E "$pat" | sed 's/^ *//')
            n=${#hits[@]}
            scope=$([[ $tool == memcheck ]] && echo "every global and shared access bounds-checked; leaks: on a GPU only" ||
                    echo "every barrier reached by every thread of its block")
            if [[ $rc -eq 124 || $rc -eq 137 ]]; then
                report "$c" "$tool" timeout "$n" "stopped after $limit s (SANITIZE_TIMEOUT); $n errors before" "$gline" "$secs" "${hits[@]:0:3}"
            elif [[ -z $gline ]]; then
                report "$c" "$tool" incomplete "$n" "the grader ended without its chapter line (exit $rc): $(tail -n 1 "$out")" "" "$secs" "${hits[@]:0:3}"
            elif [[ $n -gt 0 ]]; then
                report "$c" "$tool" errors "$n" "$n error$([[ $n -eq 1 ]] || echo s) ($scope)" "$gline" "$secs" "${hits[@]:0:3}"
            else
                report "$c" "$tool" clean 0 "0 errors ($scope)" "$gline" "$secs"
            fi
        done
        echo "  output: $out"
        continue
    fi

    for tool in $tools; do
        log=$dir/$tool.log out=$dir/$tool.out
        rm -f "$log"
        args=(--tool "$tool" --target-processes all --error-exitcode 86 --print-limit 100
              --log-file "$log")
        [[ $tool == memcheck ]] && args+=(--leak-check full)
        [[ ($tool == racecheck || $tool == initcheck) && -n ${SANITIZE_EXCLUDE-kns=cublas} ]] &&
            args+=(--kernel-name-exclude "${SANITIZE_EXCLUDE-kns=cublas}")
        t0=$SECONDS
        timeout -k 10 "$limit" "${quick[@]}" "$sanitizer" "${args[@]}" "$bin" > "$out" 2>&1
        rc=$? secs=$((SECONDS - t0))
        checked=$((checked + 1))
        gline=$(grep -E -m1 "^$c  (PASS|FAIL)  " "$out" | sed "s/^$c  //; s/  / /g; s/ passed on [a-z]*//")
        errors=0 have=0 leaks= heads=()
        if [[ -s $log ]]; then
            { IFS=$'\t' read -r errors have leaks; mapfile -t heads; } < <(summarize "$log" 3)
        fi
        if [[ $rc -eq 124 || $rc -eq 137 ]]; then
            report "$c" "$tool" timeout "$errors" "stopped after $limit s (SANITIZE_TIMEOUT)" "$gline" "$secs" "${heads[@]}"
        elif grep -q "nothing graded" "$out"; then
            report "$c" "$tool" "not run" "$errors" "$(grep -m1 'no device answered' "$out" | sed 's/^.*\[//; s/\]$//')" "" "$secs"
        elif [[ $errors -gt 0 || $rc -eq 86 ]]; then
            [[ $errors -gt 0 ]] || errors=1 # the exit status says so, the log does not count them
            report "$c" "$tool" errors "$errors" "$errors error$([[ $errors -eq 1 ]] || echo s)${leaks:+, leaks: $leaks}" "$gline" "$secs" "${heads[@]}"
        elif [[ $have != 1 ]]; then
            report "$c" "$tool" incomplete "$errors" "no ERROR SUMMARY in $log: the tool did not run to its end (exit $rc): $(tail -n 1 "$log" 2>/dev/null || tail -n 1 "$out")" "$gline" "$secs" "${heads[@]}"
        elif [[ -z $gline ]]; then
            report "$c" "$tool" incomplete "$errors" "the grader ended without its chapter line (exit $rc): $(tail -n 1 "$out")" "" "$secs"
        else
            report "$c" "$tool" clean 0 "0 errors${leaks:+, leaks: $leaks}" "$gline" "$secs"
        fi
    done
    echo "  logs: $dir/"
done

echo
n=$(wc -w <<<"$chapters")
if [[ $checked -eq 0 ]]; then
    echo "sanitize: nothing was checked: on the CPU backend only memcheck and synccheck have a" \
         "counterpart (TOOLS=\"$tools\")" >&2
    exit 1
fi
if ((${#bad[@]})); then
    echo "sanitize: $n chapter$([[ $n -eq 1 ]] || echo s) ($what), $backend backend: not clean: ${bad[*]}"
else
    echo "sanitize: $n chapter$([[ $n -eq 1 ]] || echo s) ($what), $backend backend: $([[ -n $record && -n $mutant ]] && echo 'every known bug caught' || echo 'no errors')${record:+; rows in $record}"
fi
exit $status
