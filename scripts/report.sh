#!/usr/bin/env bash
# report.sh: what `make report CH=NN [STEP=k] [SOLUTIONS=1] [BACKEND=..] [SEED=n]` runs: a PDF
# about the learner's own kernel(s) of one chapter, build/report-NN.pdf, made from what the
# workbook already measures, through the book's machinery (book/metadata.yaml, book/header.tex,
# book/include.lua) and its own filter and header (book/report.lua, book/report-header.tex):
#
#   first page   the chapter, the step, the side (your files, or the references), the backend
#                and device, the date and the seed
#   correctness  the grader's verdicts, per test and per step: scripts/grade.sh, its rows
#                written to build/report/NN/grade.tsv (GRADE_TSV: build/grade.tsv, and so
#                `make progress`, stays as it was)
#   profile      scripts/profile.sh (`make profile`): on the CPU backend its counts, labelled as
#                the model they are; on a GPU Nsight Compute's, where make profile BACKEND=cuda
#                runs it (where ncu is missing, profile.sh says so and gives the model)
#   time         on a GPU only: the grader's bench (grade --bench) into build/report/NN/bench.tsv,
#                under scripts/clocks.sh (the SM clock and power sampled while it ran), a table
#                with each rung's speedup over the first rung of its shape, a table with each
#                rung against the library of its shape (cuBLAS, CUB, the copy kernel: the rows
#                the bench measures beside the rungs) and its share of the roof (the copy
#                kernel's bandwidth and the library's rate, the best of this run, else of the
#                committed H200 measurements), and the chapter's own plot script
#                (plots/NN-slug.gp) drawn from those rows, its caption naming the device, driver,
#                clocks and date; on the CPU backend the report says timings are real on a GPU
#                only and shows none
#   source       the step's file (stepK_*.cu), or every file the learner writes (the names in
#                solutions/NN-slug/), from chapters/ or, with SOLUTIONS=1, solutions/
#   rationale    the learner's notes beside the kernel: NOTES-stepK.md for STEP=k, NOTES.md
#                (and any NOTES-stepK.md) for the whole chapter; missing, a marked request for
#                them, and a line on the terminal saying where to write them
#
# Everything it writes lies under build/report/NN/ but the PDF, build/report-NN.pdf. The
# variables are checked before anything is built or installed: CH names one chapter, STEP one
# of its steps (the step files stepK_*.cu number them: "one numbered file per step").
# Environment, from the Makefile: CHAPTERS, CHAPTERS_ALL, CH, STEP, SIDE, BACKEND, MAKE,
# PROFILE_CHAPTERS, SEED. REPORT_NO_PROFILE=1 leaves the profile out (a faster report).
# A dry run of the GPU path on a machine without one (tests/report.sh) replaces its parts:
#   GPU_PROBE=command   whether a GPU answers, as build/cuda/probe does (its output is the
#                       probe's); passed on to scripts/profile.sh, as NCU=path is
#   PROGRAMS=manifest   where the graders lie (scripts/programs.sh): the bench's grader
#   REPORT_GRADE=cmd    the grade step (default scripts/grade.sh, given the same environment)
# Exit status: 0 when the PDF was built (whatever the grader's verdicts), 1 when it was not, 2
# for a variable refused.
set -uo pipefail
make_=${MAKE:-make}
side=${SIDE:-chapters}
step=${STEP:-}

# ---- the variables, before anything is built --------------------------------------------------
scripts/vars.sh check || exit 2
if [[ -z ${CH// /} ]]; then
    echo "report: which chapter? make report CH=04 (every step) or make report CH=04 STEP=3" \
         "(one step); the chapters are:" >&2
    for c in ${CHAPTERS_ALL:-}; do echo "    $c   (make report CH=${c%%-*})" >&2; done
    exit 2
fi
read -ra chosen <<< "${CHAPTERS:-}"
if ((${#chosen[@]} != 1)); then
    echo "report: CH=\"$CH\": a report is of one chapter (make report CH=04)" >&2
    exit 2
fi
c=${chosen[0]}
nn=${c%%-*}
sidedir=$side/$c

# the steps: the numbered files stepK_*.cu of the chapter (either side: a given step, such as
# chapter 10's step 1, has no file of its own but a later step numbers it)
nsteps=0
for f in chapters/"$c"/step*_*.cu solutions/"$c"/step*_*.cu; do
    [[ -e $f && $(basename "$f") =~ ^step([0-9]+)_ ]] || continue
    k=$((10#${BASH_REMATCH[1]}))
    ((k > nsteps)) && nsteps=$k
done
if [[ -n $step ]]; then
    if ((nsteps == 0)); then
        echo "report: STEP=$step: chapter $c is graded whole, it has no steps; leave STEP out" \
             "(make report CH=$nn)" >&2
        exit 2
    fi
    if ((10#$step < 1 || 10#$step > nsteps)); then
        echo "report: STEP=$step: chapter $c has steps 1 to $nsteps (make report CH=$nn STEP=1)" >&2
        exit 2
    fi
    step=$((10#$step))
fi

# the learner's files: the names the solutions give, read from the side's directory (a name the
# side lacks is the chapter's given copy, as the build links it)
learner_file() { # learner_file NAME: the file of that name on the side, or nothing
    if [[ -f $sidedir/$1 ]]; then echo "$sidedir/$1"
    elif [[ -f chapters/$c/$1 ]]; then echo "chapters/$c/$1"; fi
}
files=()
for f in solutions/"$c"/*.cu; do
    [[ -e $f ]] || continue
    name=$(basename "$f")
    if [[ -n $step ]]; then
        [[ $name =~ ^step([0-9]+)_ ]] && ((10#${BASH_REMATCH[1]} == step)) || continue
    fi
    p=$(learner_file "$name")
    [[ -n $p ]] && files+=("$p")
done

# the notes: one a step, or the chapter's
if [[ -n $step ]]; then
    notes_files=("$sidedir/NOTES-step$step.md")
else
    notes_files=("$sidedir/NOTES.md")
    for f in "$sidedir"/NOTES-step*.md; do [[ -e $f ]] && notes_files+=("$f"); done
fi
notes_present=()
for f in "${notes_files[@]}"; do [[ -f $f ]] && notes_present+=("$f"); done

# ---- what the report needs, installed; the backend --------------------------------------------
# REPORT_COLLECT=1 on a GPU machine without pandoc: grade, profile and bench there with the
# programs as built (MAKE=true NO_BUILD=1: nothing built, no Check needed), the work files into
# build/report/NN/ with the state the document needs, and no PDF; then, on a machine with
# pandoc, REPORT_FROM=DIR (that directory, copied back) writes the PDF from them, running
# nothing. One report, made in two places.
collect=${REPORT_COLLECT:-0}
from=${REPORT_FROM:-}
if [[ $collect == 1 && -n $from ]]; then
    echo "report: REPORT_COLLECT=1 runs the kernels and REPORT_FROM=DIR writes the PDF from what it" \
         "collected: one or the other" >&2
    exit 2
fi
[[ $collect == 1 ]] || scripts/deps.sh book || exit 1
work=build/report/$nn
pdf=build/report-$nn.pdf
if [[ -n $from ]]; then
    if [[ ! -f $from/state.sh ]]; then
        echo "report: REPORT_FROM=$from: no state.sh there (REPORT_COLLECT=1 writes it)" >&2
        exit 1
    fi
    if [[ $(realpath "$from") != $(realpath -m "$work") ]]; then
        rm -rf "$work"
        mkdir -p "$work"
        cp -R "$from"/. "$work"/
    fi
    # shellcheck source=/dev/null
    source "$work/state.sh"
    echo "report: $what ($side), collected on the $backend backend ($device_line), into $pdf"
    if [[ $bench == table && -f plots/$c.gp ]] && command -v gnuplot >/dev/null &&
       gnuplot -e "data='$work/bench.tsv'; out='$work/bench.pdf'" "plots/$c.gp" 2>"$work/gnuplot.err" &&
       [[ -s $work/bench.pdf ]]; then
        bench=plot
    fi
else
[[ $collect == 1 ]] || scripts/deps.sh grade || exit 1
# shellcheck source=scripts/backend.sh
source scripts/backend.sh
backend=${BACKEND:-auto}
device=
if [[ -n ${GPU_PROBE:-} && $backend != emu ]]; then
    check_backend_name report
    if probe_out=$($GPU_PROBE 2>&1); then
        backend=cuda
        device=$(probe_describe "$probe_out")
    elif [[ $backend == cuda ]]; then
        echo "report: BACKEND=cuda, but no GPU answered: $probe_out" >&2
        exit 1
    else
        backend=emu
        echo "report: no GPU answered: $probe_out."
    fi
elif choose_backend report; then
    :
fi
if [[ $backend == cuda ]]; then
    device_line="$device"
else
    cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
    device_line="none: the CPU backend (emu) runs the kernels on this machine's processor${cpu:+ ($cpu, $(nproc) cores)}"
fi

work=build/report/$nn
pdf=build/report-$nn.pdf
rm -rf "$work"
mkdir -p "$work"
what=${step:+step $step of $c}
what=${what:-every step of $c}
[[ $nsteps == 0 ]] && what=$c
echo "report: $what ($side) on the $backend backend, into $pdf"

# ---- 1. correctness: the grader ----------------------------------------------------------------
nparts=2
[[ $backend == cuda ]] && nparts=3
echo
echo "report: [1/$nparts] grading (make grade CH=$nn${step:+ STEP=$step}$([[ $side == solutions ]] && echo ' SOLUTIONS=1'))"
# shellcheck disable=SC2086 # REPORT_GRADE: a command's words
GRADE_TSV=$work/grade.tsv CHAPTERS=$c STEP=$step SIDE=$side BACKEND=$backend MAKE=$make_ \
    ${REPORT_GRADE:-scripts/grade.sh} 2>&1 | tee "$work/grade.log"
grade_status=${PIPESTATUS[0]}
[[ -s $work/grade.tsv ]] || : > "$work/grade.tsv"
seed=$(awk -F'\t' 'NR > 1 && $8 != "" { print $8; exit }' "$work/grade.tsv")
seed=${seed:-${SEED:-}}

# ---- 2. the profile ----------------------------------------------------------------------------
echo
profile=none
if [[ ${REPORT_NO_PROFILE:-0} == 1 ]]; then
    echo "report: [2/$nparts] profile left out (REPORT_NO_PROFILE=1)"
    profile=left-out
elif [[ " ${PROFILE_CHAPTERS:-} " == *" $c "* ]]; then
    echo "report: [2/$nparts] profiling (make profile CH=$nn$([[ $side == solutions ]] && echo ' SOLUTIONS=1')$([[ $backend == cuda ]] && echo ' BACKEND=cuda'))"
    # on a GPU, Nsight Compute where it is installed (profile.sh falls back to the model, and
    # says so, where it is not); on the CPU backend, the model
    pb=emu
    [[ $backend == cuda ]] && pb=auto
    # all of it into the file; the rungs on the terminal as they run
    CHAPTERS=$c PROFILE_CHAPTERS=${PROFILE_CHAPTERS:-} SIDE=$side BACKEND=$pb KERNEL='' MAKE=$make_ \
        scripts/profile.sh 2>&1 | tee "$work/profile.out" |
        grep --line-buffered -E '^(#|== rung|profile:|ncu-run:)' | sed -u 's/^/  /'
    profile_status=${PIPESTATUS[0]}
    if grep -q '^# .*Nsight Compute' "$work/profile.out"; then profile=ncu; else profile=model; fi
    ((profile_status == 0)) || echo "report: the profile stopped with status $profile_status; the report shows what it printed"
else
    pcs=${PROFILE_CHAPTERS:-none}
    echo "report: [2/$nparts] no profile: $c has no profile driver (make profile knows chapters ${pcs// /, })"
fi
# the profile's and the grader's output as listings: ASCII (listings sets no other characters)
to_ascii() { iconv -f UTF-8 -t ASCII//TRANSLIT 2>/dev/null || LC_ALL=C tr -cd '\11\12\15\40-\176'; }
[[ -f $work/profile.out ]] && to_ascii < "$work/profile.out" > "$work/profile.txt"
to_ascii < "$work/grade.log" > "$work/grade.txt"

# ---- 3. on a GPU: time and speedup ----------------------------------------------------------------
# library_table BENCH.tsv: Markdown, a row a rung: its time against the library row of its shape
# (kernel cublas, copy, cub or *_cub: what the bench measured beside it) and its share of the
# roof, min(bandwidth x intensity, peak) for a rung with FLOPs, the bandwidth for one without:
# the copy kernel's best GB/s and the library's best GFLOP/s in this run, else in the committed
# H200 measurements (PLOT_DATA)
library_table() {
    local data=${PLOT_DATA:-plots/data/h200}
    awk -F'\t' -v committed_copy="$data/02-coalesced-transpose.tsv" \
        -v committed_gemm="$data/04-shared-memory-tiling.tsv" '
        function lib(k) { return k == "cublas" || k == "cub" || k ~ /_cub$/ || k == "copy" ||
                                 k ~ /^copy_/ }
        function best_of(file, kernel, col,    line, f, b) {
            b = 0
            while ((getline line < file) > 0) {
                split(line, f, "\t")
                if (f[2] == kernel && f[col] + 0 > b) b = f[col] + 0
            }
            close(file)
            return b
        }
        /^#/ || $1 == "chapter" { next }
        {
            n++; k[n] = $2; s[n] = $3; ms[n] = $4; gbs[n] = $5; gf[n] = $6
            if (lib($2) && !(($3) in libms)) { libms[$3] = $4; libk[$3] = $2 }
            if ($2 ~ /^copy/ && $5 > bw) bw = $5
            if (lib($2) && $2 !~ /^copy/ && $6 > peak) peak = $6
        }
        END {
            bw_from = "this run"; peak_from = "this run"
            if (!bw) { bw = best_of(committed_copy, "copy", 5)
                       bw_from = "the committed H200 copy" }
            if (!peak) { peak = best_of(committed_gemm, "cublas", 6)
                         peak_from = "the committed H200 cuBLAS SGEMM" }
            print "| kernel | shape | ms | x library | share of the roof |"
            print "|------------|------------|------|----------------|----------|"
            for (i = 1; i <= n; i++) {
                x = (s[i] in libms && ms[i] > 0) ? sprintf("%.2fx %s", libms[s[i]] / ms[i],
                                                           libk[s[i]]) : "--"
                roof = ""
                if (gf[i] > 0 && gbs[i] > 0 && bw > 0 && peak > 0) {
                    r = bw * gf[i] / gbs[i]; if (r > peak) r = peak
                    roof = sprintf("%.0f%%", 100 * gf[i] / r)
                } else if (gbs[i] > 0 && bw > 0) roof = sprintf("%.0f%% of bandwidth",
                                                                100 * gbs[i] / bw)
                printf "| `%s` | %s | %s | %s | %s |\n", k[i], s[i], ms[i], x, roof ? roof : "--"
            }
            printf "\n*x library: the library row of the same shape, time over time (above 1, " \
                   "faster than it). The roof: %.0f GB/s (%s) and %.0f GFLOP/s (%s).*\n",
                   bw, bw_from, peak, peak_from
        }' "$1"
}
bench=none
if [[ $backend == cuda ]]; then
    # shellcheck source=scripts/programs.sh
    source scripts/programs.sh
    # shellcheck source=scripts/bound.sh
    source scripts/bound.sh
    bin=$(program_path grade "$(side_kind "$side")" "$c" - cuda)
    echo
    if [[ -n $bin && " $(grader_modes "$bin") " == *" bench "* ]]; then
        echo "report: [3/3] measuring every rung ($bin --bench $work/bench.tsv)"
        if bounded "$c" scripts/clocks.sh "$work/bench.tsv" "$bin" --bench "$work/bench.tsv" &&
           [[ -s $work/bench.tsv ]]; then
            bench=table
            library_table "$work/bench.tsv" > "$work/library.md"
            if [[ -f plots/$c.gp ]] && command -v gnuplot >/dev/null &&
               gnuplot -e "data='$work/bench.tsv'; out='$work/bench.pdf'" "plots/$c.gp" 2>"$work/gnuplot.err" &&
               [[ -s $work/bench.pdf ]]; then
                bench=plot
            else
                echo "report: the plot was not drawn ($(head -c 300 "$work/gnuplot.err" 2>/dev/null))"
            fi
        else
            echo "report: the bench did not finish; the report shows no timings"
            bench=failed
        fi
    else
        echo "report: [3/3] $c's grader has no bench mode: no timings"
        bench=no-mode
    fi
fi
fi # REPORT_FROM
if [[ $collect == 1 ]]; then
    { declare -p what side c backend device_line grade_status profile bench seed; } \
        > "$work/state.sh"
    echo "report: collected into $work (REPORT_COLLECT=1: no PDF here); copy that directory to a" \
         "machine with pandoc and run there: make report CH=$nn${step:+ STEP=$step}$([[ $side == solutions ]] && echo ' SOLUTIONS=1') REPORT_FROM=DIR"
    exit 0
fi

# ---- the document ---------------------------------------------------------------------------------
title=$(sed -n '1s/^# *//p' "chapters/$c/README.md" | tr -d '`*_')
side_words="your files (chapters/$c)"
[[ $side == solutions ]] && side_words="the reference solutions (solutions/$c), SOLUTIONS=1"
{
    printf 'chapter\t%s\n' "$c"
    printf 'step\t%s\n' "$([[ -n $step ]] && echo "step $step of $nsteps" || { ((nsteps)) && echo "every step (1 to $nsteps)" || echo "the chapter is graded whole"; })"
    printf 'kernels\t%s\n' "$side_words"
    printf 'backend\t%s\n' "$([[ $backend == cuda ]] && echo "cuda: the kernels ran on a GPU" || echo "emu, the CPU backend: correctness and the profile's model; no timings")"
    printf 'device\t%s\n' "$device_line"
    printf 'date\t%s\n' "$(date '+%Y-%m-%d %H:%M %Z')"
    printf 'seed\t%s\n' "${seed:-not recorded (the grader wrote no rows)}$([[ -n $seed ]] && echo " (SEED=$seed reproduces the grade's inputs)")"
    printf 'commit\t%s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$([[ -n $(git status --porcelain -- "$sidedir" 2>/dev/null) ]] && echo ", with changes in $sidedir")"
    printf 'command\t%s\n' "make report CH=$nn${step:+ STEP=$step}$([[ $side == solutions ]] && echo ' SOLUTIONS=1') BACKEND=$backend${SEED:+ SEED=$SEED}"
} > "$work/facts.tsv"

md=$work/report.md
scope="the chapter"
[[ -n $step ]] && scope="step $step"
step_file=
bq='`'
[[ -n $step && ${#files[@]} -gt 0 ]] && step_file="; step $step's rungs are those whose lines name $bq$(basename "${files[0]}")$bq"
passed=$(awk -F'\t' 'NR > 1 && $4 !~ /\// && $6 == "PASS"' "$work/grade.tsv" | wc -l)
failed=$(awk -F'\t' 'NR > 1 && $4 !~ /\// && $6 == "FAIL"' "$work/grade.tsv" | wc -l)
skipped=$(awk -F'\t' 'NR > 1 && $4 !~ /\// && $6 == "SKIP"' "$work/grade.tsv" | wc -l)
{
    cat <<EOF
::: {.facts tsv="$work/facts.tsv"}
:::

This report documents $what as graded and profiled by the workbook, in the form a take-home
asks for: is it correct, where does its time go, how fast is it, what is it, and why it is
written the way it is.

# Correctness

The chapter's grader (\`make grade CH=$nn${step:+ STEP=$step}\`) ran every test of
$scope on the $backend backend: inputs random from the seed
above, outputs poisoned before each run, guard zones after every buffer. $passed passed,
$failed failed, $skipped skipped$([[ $backend != cuda ]] && echo " (the timed tests skip themselves on the CPU backend: speed is graded on a GPU only)").
$([[ $grade_status -ne 0 ]] && echo "**The grade did not pass** (exit status $grade_status): the messages below say why, and the grader's output closes the report.")

## The ladder

::: {.verdicts tsv="$work/grade.tsv" ladder="1"}
:::

## Every test

::: {.verdicts tsv="$work/grade.tsv"}
:::

# Profile

EOF
    case $profile in
        model)
            cat <<EOF
**A model, not a measurement.** These counts come from the CPU backend's instrumented build
(\`make profile CH=$nn\`): each global and shared access your kernel made on the emulator, grouped
a warp at a time into the requests, sectors and shared-memory wavefronts a GPU's memory system
would see, and the branches on which a warp's lanes went different ways. They say whether the
access pattern is right (coalesced, conflict-free, warp-uniform), not how long anything takes on
a GPU. harness/emu/README.md ("Profiling") gives the model. Every rung of the chapter's table
runs once on a small shape, the given baselines beside your kernels$step_file. On a GPU with Nsight Compute, the same target shows
Nsight Compute's counts here instead.

\`\`\`{style="profile" include="$work/profile.txt"}
\`\`\`

EOF
            ;;
        ncu)
            cat <<EOF
Nsight Compute's counts on the GPU (\`make profile CH=$nn BACKEND=cuda\`, scripts/ncu-run.sh),
each rung of the chapter's table run once on a small shape, the given baselines beside your
kernels: per kernel, the requests, sectors and wavefronts of the model's table, then its
achieved occupancy, the SM's, the L2's and DRAM's throughput as a share of their peaks, and the
three stall reasons its warps waited on most (warps stalled per issued instruction: "long
scoreboard" is a wait on global or local memory, "barrier" on \`__syncthreads\`, "mio throttle"
a full shared-memory queue).

\`\`\`{style="profile" include="$work/profile.txt"}
\`\`\`

EOF
            ;;
        left-out) echo "The profile was left out of this report (REPORT_NO_PROFILE=1)." ;;
        *) pcs=${PROFILE_CHAPTERS:-none}
           echo "Chapter $c has no profile driver: \`make profile\` covers chapters ${pcs// /, }." ;;
    esac
    echo
    echo "# Time and speedup"
    echo
    case $bench in
        none)
            cat <<EOF
**Timings are only real on a GPU; this report shows none.** On the CPU backend the kernels run
on an emulator, whose times say nothing about a GPU. Run on a machine with an NVIDIA GPU, the
same \`make report\` runs the grader's bench (\`grade --bench\`) and adds each rung's time,
throughput and speedup here, with the chapter's plot drawn from those rows.
EOF
            ;;
        table|plot)
            cat <<EOF
The grader's bench on this GPU (\`grade --bench\`; the same rows \`make bench\` writes): each
rung's median time, its throughput, the SM clock and board power sampled while its timed loop
ran, and its speedup over the first rung measured at the same shape (the chapter's given
baseline where the rung table starts with it).

::: {.bench tsv="$work/bench.tsv"}
:::

EOF
            echo "Against the library and the roof:"
            echo
            cat "$work/library.md"
            echo
            # the caption: device, driver, clocks and date of the run, from the file's header
            where=$(awk '/^# device: / { d = substr($0, 11) } /^# driver: / { v = substr($0, 11) }
                         /^# date: / { t = substr($0, 9) } /^# clocks: / { c = substr($0, 11) }
                         !/^#/ { exit }
                         END { printf "%s, driver %s, %s; clocks: %s", d, v, t,
                                      c ? c : "not recorded" }' "$work/bench.tsv")
            [[ $bench == plot ]] && printf '![The rungs measured on %s, drawn by plots/%s.gp from this run'"'"'s rows.](%s)\n\n' \
                "$where" "$c" "$work/bench.pdf"
            ;;
        failed) echo "The bench did not finish on this GPU: no timings (the terminal's output says why)." ;;
        no-mode) echo "This chapter's grader has no bench: it measures nothing to compare." ;;
    esac
    echo
    echo "# Source"
    echo
    if ((${#files[@]} == 0)); then
        echo "Step $step is given: it has no file of yours (the chapter's README says what it runs)."
        echo
    else
        echo "The file$( ((${#files[@]} > 1)) && echo s) graded above, as the grader compiled $( ((${#files[@]} > 1)) && echo them || echo it)."
        echo
        for f in "${files[@]}"; do
            printf '## `%s`\n\n```{.c .numberLines include="%s"}\n```\n\n' "$f" "$f"
        done
    fi
    echo "# Rationale"
    echo
    if ((${#notes_present[@]})); then
        for f in "${notes_present[@]}"; do
            ((${#notes_present[@]} > 1)) && printf '## From `%s`\n\n' "$f"
            printf '::: {.notes file="%s"}\n:::\n\n' "$f"
        done
    else
        cat <<EOF
::: request
**Your rationale is missing: write it in \`${notes_files[0]}\`.** The report reads it from there
and puts it here. A few paragraphs of Markdown, for a reader who knows GPUs but not your code:

- **The bottleneck:** what limited the kernel before this change (memory bandwidth, latency,
  shared-memory bank conflicts, divergence, instruction issue), and the numbers that show it:
  the profile's sectors per request or wavefronts, the napkin math of the chapter's README.
- **The change:** what you did about it, and why that and not something else.
- **Predicted and measured:** what you expected the change to do to the counts and the time
  before you ran it, what the grader and the profile (and on a GPU the bench) then showed, and
  where the two differ, why.
:::
EOF
    fi
    echo
    echo "# The grader's output"
    echo
    echo "As the terminal showed it."
    echo
    printf '```{style="log" include="%s"}\n```\n' "$work/grade.txt"
} > "$md"

echo
echo "report: writing $pdf (pandoc, pdflatex)"
heading="Kernel report: $c"
[[ -n $step ]] && heading+=", step $step"
sub="$title$([[ $side == solutions ]] && echo ' (the reference solutions)')"
if ! pandoc "$md" --from markdown --standalone --listings \
        --metadata-file book/metadata.yaml -M title="$heading" -M subtitle="$sub" \
        -M toc=false -V secnumdepth=0 \
        --lua-filter book/include.lua --lua-filter book/report.lua \
        --include-in-header book/header.tex --include-in-header book/report-header.tex \
        --top-level-division=section -o "$work/report.tex" 2> "$work/pandoc.err"; then
    cat "$work/pandoc.err" >&2
    echo "report: pandoc failed; its input is $md" >&2
    exit 1
fi
for pass in 1 2; do
    if ! pdflatex -interaction=nonstopmode -halt-on-error -output-directory "$work" "$work/report.tex" \
            > "$work/pdflatex.out" 2>&1; then
        tail -n 30 "$work/pdflatex.out" >&2
        echo "report: pdflatex failed (pass $pass); its log is $work/report.log" >&2
        exit 1
    fi
done
cp "$work/report.pdf" "$pdf"

echo "report: $pdf ($(du -k "$pdf" | cut -f1) KB): the grade ($passed passed, $failed failed, $skipped skipped)," \
     "$([[ $profile == model ]] && echo "the CPU backend's profile model" || { [[ $profile == ncu ]] && echo "Nsight Compute's profile" || echo "no profile"; })," \
     "$([[ $bench == plot || $bench == table ]] && echo "the bench's timings" || echo "no timings (a GPU measures them)"), the source"
if ((${#notes_present[@]} == 0)); then
    echo "report: your rationale is missing: write it in ${notes_files[0]} (the bottleneck, the change," \
         "what you predicted and what was measured), then make report again; the report's" \
         "\"Rationale\" section says what it should hold"
fi
exit 0
