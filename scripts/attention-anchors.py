#!/usr/bin/env python3
"""attention-anchors.py FILE: the outside anchors of chapter 10's bench, on a GPU machine that has
PyTorch (the workbook itself needs no Python): PyTorch's scaled_dot_product_attention forced onto
one backend at a time, cuDNN's fused attention and FlashAttention-2 (PyTorch's "flash" backend),
at the bench's shapes (graders/10-fused-attention.c: bf16, batch 2, hidden size 2048, so 32 heads
of 64 or 16 of 128, sequence lengths 512 to 8192, causal and not), timed with CUDA events.

FILE gets the bench's table (chapter, kernel, shape, ms, gbs, gflops, device) with the same
conventions: shape "2xHxLENxDIM" with "c" for causal, GFLOP/s counted as 4 len^2 dim a head
(halved for causal: the work the mask leaves), GB/s of q, k and v read and o written once.
Kernels: torch_cudnn_bf16, torch_flash2_bf16. A backend PyTorch cannot run at a shape is left out
and said so on stderr. Run it under scripts/clocks.sh so that the header carries the clocks:

    scripts/clocks.sh plots/data/h200/anchors-10-fused-attention.tsv \\
        python3 scripts/attention-anchors.py plots/data/h200/anchors-10-fused-attention.tsv
"""
import datetime
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

LENS = (512, 1024, 2048, 4096, 8192)
DIMS = (64, 128)
BATCH, HIDDEN = 2, 2048
BACKENDS = (("torch_cudnn_bf16", SDPBackend.CUDNN_ATTENTION),
            ("torch_flash2_bf16", SDPBackend.FLASH_ATTENTION))


def driver():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True).stdout
        return out.strip().splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


def time_ms(fn, warmup=3, reps=10):
    """the median of reps timings of fn, each between two CUDA events"""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: attention-anchors.py FILE")
    if not torch.cuda.is_available():
        sys.exit("attention-anchors: no CUDA device")
    name = torch.cuda.get_device_name()
    rows = []
    for dim in DIMS:
        heads = HIDDEN // dim
        for causal in (False, True):
            for length in LENS:
                torch.manual_seed(length * dim + causal)
                q, k, v = (torch.randn(BATCH, heads, length, dim, device="cuda",
                                       dtype=torch.bfloat16) for _ in range(3))
                ref = None
                shape = "%dx%dx%dx%d%s" % (BATCH, heads, length, dim, "c" if causal else "")
                flops = 4.0 * BATCH * heads * length * length * dim * (0.5 if causal else 1.0)
                nbytes = 4.0 * q.numel() * 2
                for kernel, backend in BACKENDS:
                    def run():
                        with sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    try:
                        out = run()
                    except RuntimeError as err:  # the backend does not take this shape here
                        print("attention-anchors: %s at %s: not run (%s)"
                              % (kernel, shape, str(err).splitlines()[0]), file=sys.stderr)
                        continue
                    if ref is None:
                        ref = out.float()
                    elif not torch.allclose(out.float(), ref, atol=2e-2, rtol=2e-2):
                        sys.exit("attention-anchors: %s at %s disagrees with %s"
                                 % (kernel, shape, BACKENDS[0][0]))
                    ms = time_ms(run, reps=5 if length >= 4096 else 10)
                    rows.append((kernel, shape, ms, nbytes / (ms * 1e6), flops / (ms * 1e6)))
                    print("%-20s %-18s %10.3f ms %8.1f TFLOP/s"
                          % (shape, kernel, ms, flops / (ms * 1e9)), flush=True)
    with open(sys.argv[1], "w") as f:
        f.write("# device: %s\n# driver: %s, PyTorch %s, CUDA %s, cuDNN %s\n# date: %s\n"
                % (name, driver(), torch.__version__, torch.version.cuda,
                   torch.backends.cudnn.version(), datetime.date.today().isoformat()))
        f.write("# scripts/attention-anchors.py: torch.nn.functional.scaled_dot_product_attention "
                "on one backend at a time (cuDNN's fused attention; FlashAttention-2), bf16, at "
                "chapter 10's bench shapes; GFLOP/s as the bench counts them\n")
        f.write("chapter\tkernel\tshape\tms\tgbs\tgflops\tdevice\n")
        for kernel, shape, ms, gbs, gflops in rows:
            f.write("10-fused-attention\t%s\t%s\t%g\t%g\t%g\t%s\n"
                    % (kernel, shape, ms, gbs, gflops, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
