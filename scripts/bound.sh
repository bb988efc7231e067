# bound.sh: sourced by the scripts that run graders (grade.sh, judge.sh, test.sh): a bound from
# outside on every run, which nothing the graded code does can lift. A grader's own limits (each
# test's timeout) are kept by the grader; code under test can stop the grader itself
# (kill(getppid(), SIGSTOP)), and then none of them fires. So each grader runs under coreutils'
# timeout, in a process group of its own that timeout leads: at the limit the whole group is sent
# SIGTERM and SIGCONT, and SIGKILL (which reaches a stopped process) GRADE_GRACE seconds later;
# should timeout itself be stopped (a signal to the whole group), a watch outside the group kills
# the group a little after that.
#   GRADE_LIMIT=s   the most seconds one grader may run (default 1800: a chapter whose every
#                   test ran to its own timeout stays inside it)
#   GRADE_GRACE=s   the seconds between SIGTERM and SIGKILL (default 10)
#
#   bounded LABEL COMMAND...   runs COMMAND so bounded and returns its exit status; where the
#                   limit stopped it, after a line that says so (LABEL: the grade did not end
#                   within N s and was stopped: ...), 124 or 137. Ctrl-C (SIGINT, SIGTERM to the
#                   script) stops the group too.
#   graded LABEL TSV TALLY STEP SIDE BACKEND COMMAND...   bounded, for a grader that appends its
#                   rows to TSV and, as it ends, its tally line to TALLY (GRADE_COUNTS): where
#                   the grade was cut short (a signal, the limit, or an end without its tally
#                   line), a last row marks it partial: chapter LABEL, BACKEND, SIDE, STEP (or
#                   "-"), test "(the grade was cut short)", verdict PARTIAL, the reason
#                   (scripts/progress.sh shows it). A grader that refused to start (exit status
#                   2, no row) is no partial grade.
grade_limit=${GRADE_LIMIT:-1800}
grade_grace=${GRADE_GRACE:-10}
bounded_stopped=

bounded() {
    local label=$1 pid watch rc t0=$SECONDS
    shift
    bounded_stopped=
    timeout -k "$grade_grace" "$grade_limit" "$@" &
    pid=$!
    # the watch: in this script's process group, outside the grader's
    (
        trap 'kill "$s" 2>/dev/null; exit 0' TERM
        sleep $((grade_limit + 2 * grade_grace + 2)) &
        s=$!
        wait "$s" && kill -KILL -- "-$pid"
    ) > /dev/null 2>&1 &
    watch=$!
    trap 'kill -TERM -- "-$pid" 2>/dev/null; kill -CONT -- "-$pid" 2>/dev/null; kill "$watch" 2>/dev/null; exit 130' INT TERM
    wait "$pid"
    rc=$?
    trap - INT TERM
    kill "$watch" 2>/dev/null
    wait "$watch" 2>/dev/null
    if ((SECONDS - t0 >= grade_limit && (rc == 124 || rc == 137))); then
        bounded_stopped=1
        echo "$label: the grade did not end within $grade_limit s and was stopped: code under" \
             "test may have stopped or stalled the grader itself (GRADE_LIMIT=s sets the limit)" >&2
    fi
    return $rc
}

graded() {
    local label=$1 tsv=$2 tally=$3 step=${4:--} side=$5 backend=$6 rows0=0 tally0=0 rc why seed
    shift 6
    [[ -f $tsv ]] && rows0=$(wc -l < "$tsv")
    [[ -f $tally ]] && tally0=$(wc -l < "$tally")
    bounded "$label" "$@"
    rc=$?
    local rows=0 tallied=0
    [[ -f $tsv ]] && rows=$(($(wc -l < "$tsv") - rows0))
    [[ -f $tally ]] && tallied=$(tail -n +$((tally0 + 1)) "$tally" | awk -F'\t' -v c="$label" '$1 == c' | wc -l)
    if [[ -n $bounded_stopped ]]; then
        why="stopped at the outer time limit of $grade_limit s (GRADE_LIMIT)"
    elif ((rc > 128)); then
        why="the grader was killed by SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))"
    elif ((rc == 2 && rows <= 0)); then
        return $rc # it refused to start: nothing graded, nothing to mark
    elif ((rc > 1 || tallied == 0)); then
        why="the grader ended (exit status $rc) without its final line"
    else
        return $rc
    fi
    echo "$label: the grade was cut short: $why; its results are marked partial" >&2
    [[ -n $tsv ]] || return $rc
    if [[ ! -s $tsv ]]; then
        printf 'chapter\tbackend\tside\tstep\ttest\tverdict\tmessage\tseed\n' > "$tsv"
    fi
    seed=$(tail -n +$((rows0 + 1)) "$tsv" | awk -F'\t' 'NF >= 8 && $1 != "chapter" { s = $8 } END { print s }')
    [[ -n $seed ]] || seed=${SEED:--}
    printf '%s\t%s\t%s\t%s\t(the grade was cut short)\tPARTIAL\t%s\t%s\n' \
        "$label" "$backend" "$side" "$step" "$why" "$seed" >> "$tsv"
    ((rc == 0)) && rc=1
    return $rc
}
