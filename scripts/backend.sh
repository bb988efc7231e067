# backend.sh: sourced by scripts/grade.sh and scripts/sanitize.sh: which backend a run takes.
# Both read $backend (from BACKEND: auto, cuda or emu) and $make_.
#   check_backend_name NAME   anything but auto, cuda or emu: says so as NAME, exits 2
#   choose_backend NAME       auto or cuda: builds build/cuda/probe and asks it; where a GPU
#                             answers, backend=cuda, probe_out holds the probe's fields
#                             (scripts/probe.sh reads them) and device names it in a line
#                             (return 0); BACKEND=cuda without one: says so, exits 1; auto
#                             without one: backend=emu, device says why, a line saying so, and
#                             return 1, so that the caller can add what the CPU backend means for
#                             it. emu: return 0.

# shellcheck source=scripts/probe.sh
source scripts/probe.sh

check_backend_name() {
    case $backend in
        auto|cuda|emu) ;;
        *) echo "$1: BACKEND=$backend: choose auto, cuda or emu" >&2; exit 2 ;;
    esac
}

choose_backend() {
    check_backend_name "$1"
    [[ $backend == emu ]] && return 0
    $make_ --no-print-directory -s build/cuda/probe || exit 1
    if probe_out=$(build/cuda/probe); then
        backend=cuda
        device=$(probe_describe "$probe_out")
        return 0
    fi
    device=$probe_out
    if [[ $backend == cuda ]]; then
        echo "$1: BACKEND=cuda, but no GPU answered: $device" >&2
        exit 1
    fi
    backend=emu
    echo "$1: no GPU answered: $device."
    return 1
}
