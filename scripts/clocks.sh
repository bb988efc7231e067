#!/usr/bin/env bash
# clocks.sh FILE COMMAND...: run COMMAND (a bench writing FILE) while nvidia-smi samples the SM
# clock and the board power every 100 ms, then add to FILE's header the line
#   # clocks: SM 1980 MHz median (1755-1980) over 412 samples while it ran; power 402 W mean
# so that a measurement carries the clocks it was taken at. This is the whole run's view, set-up
# and idle gaps included; each row of a grader's bench carries its own in its last two columns,
# sm_mhz and watts, sampled through NVML while that row's timed loop ran (harness/gpu.h,
# gpu_clocks_start), since one run can hold rows at 1980 MHz and rows power-capped at 1410.
# Without nvidia-smi, the line says so. Exit status: COMMAND's.
set -uo pipefail
file=${1:?usage: scripts/clocks.sh FILE COMMAND...}
shift
samples=$(mktemp)
smi=
if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 \
        > "$samples" 2>/dev/null &
    smi=$!
fi
"$@"
rc=$?
if [[ -n $smi ]]; then
    kill "$smi" 2>/dev/null
    wait "$smi" 2>/dev/null
fi
if [[ -s $file ]]; then
    line=$(awk -F', *' '$1 ~ /^[0-9]+$/ { c[++n] = $1; p += $2 }
        END {
            if (!n) { print "# clocks: not sampled (no nvidia-smi, or it printed nothing)"; exit }
            # sort the samples (n is small: insertion sort)
            for (i = 2; i <= n; i++) { v = c[i]; for (j = i - 1; j > 0 && c[j] > v; j--) c[j + 1] = c[j]; c[j + 1] = v }
            printf "# clocks: SM %d MHz median (%d-%d) over %d samples while it ran; power %.0f W mean\n",
                   c[int((n + 1) / 2)], c[1], c[n], n, p / n
        }' "$samples")
    awk -v l="$line" '!done && !/^#/ { print l; done = 1 } { print }' "$file" > "$file.new" &&
        mv "$file.new" "$file"
fi
rm -f "$samples"
exit "$rc"
