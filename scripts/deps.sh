#!/usr/bin/env bash
# deps.sh grade|test|book: install what the target needs and this machine lacks.
#
# Debian's packages through apt-get (as root, or through sudo); nothing is installed when
# everything is there, so a second run is silent and quick. Where nothing can be installed
# (no apt-get, no root and no sudo), it prints the exact command to run and fails.
set -euo pipefail

what=${1:-test}
case $what in
    grade) pkgs=(check) ;;
    test)  pkgs=(check patch gnuplot-nox pandoc poppler-utils texlive-latex-recommended
                 texlive-fonts-recommended lmodern) ;;
    book)  pkgs=(gnuplot-nox pandoc poppler-utils texlive-latex-recommended
                 texlive-fonts-recommended lmodern) ;;
    *) echo "deps.sh: unknown target '$what' (grade, test or book)" >&2; exit 2 ;;
esac

# The compilers come first: everything else is useless without them.
for tool in gcc g++ make; do
    command -v "$tool" >/dev/null || pkgs+=(build-essential)
done

missing=()
if command -v dpkg-query >/dev/null; then
    for p in $(printf '%s\n' "${pkgs[@]}" | sort -u); do
        status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
        [[ $status == "install ok installed" ]] || missing+=("$p")
    done
else
    # Not Debian: check for the commands and files instead, and say what to install.
    need() { command -v "$1" >/dev/null || missing+=("$2"); }
    for p in "${pkgs[@]}"; do
        case $p in
            check) [[ -e /usr/include/check.h || -e /usr/local/include/check.h ]] || missing+=(check) ;;
            gnuplot-nox) need gnuplot gnuplot ;;
            pandoc) need pandoc pandoc ;;
            poppler-utils) need pdftotext poppler-utils ;;
            texlive-*|lmodern) need pdflatex "$p" ;;
            build-essential) need gcc build-essential ;;
        esac
    done
    if ((${#missing[@]})); then
        echo "deps: missing ${missing[*]}; this machine has no dpkg, so install them with your" \
             "package manager (the Debian names are: ${missing[*]})" >&2
        exit 1
    fi
fi

if ((${#missing[@]})); then
    cmd=(apt-get install -y -q --no-install-recommends "${missing[@]}")
    if [[ $(id -u) -eq 0 ]]; then
        sudo=()
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo=(sudo)
    else
        echo "deps: missing Debian packages: ${missing[*]}" >&2
        echo "deps: run this as root (or with sudo), then the make command again:" >&2
        echo "    apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
        exit 1
    fi
    echo "deps: installing ${missing[*]} (about a minute and 400 MB for the full set)"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -q >/dev/null
    "${sudo[@]}" "${cmd[@]}" >/dev/null
    echo "deps: installed ${missing[*]}"
fi

# nvcc is not a Debian package we install: it comes with NVIDIA's CUDA Toolkit.
if [[ $what != book ]]; then
    nvcc=${NVCC:-}
    if [[ -z $nvcc ]]; then
        nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    fi
    if [[ ! -x $nvcc ]]; then
        echo "deps: nvcc not found (looked on PATH and in /usr/local/cuda/bin)." >&2
        echo "deps: install NVIDIA's CUDA Toolkit 12 or later (https://developer.nvidia.com/cuda-downloads;" >&2
        echo "      no GPU is needed to install it), then put its bin/ on PATH or pass NVCC=/path/to/nvcc." >&2
        exit 1
    fi
fi
