#!/usr/bin/env python3
"""ffma_yield.py CUBIN MODE [CUOBJDUMP]: rewrite, in place, the scheduling bits of the FFMAs in
every run of 16 or more consecutive FFMAs of a cubin (in chapter 11's step 3, the promotion's).

Each SASS instruction of sm_90 is 128 bits: the low 64 the operation, the high 64 its operands'
tail and the control bits the compiler sets for the warp scheduler. Two matter here (their
places as read off `cuobjdump -sass`, which prints both words): bit 45 of the high word, clear
when the scheduler may switch to another warp after this instruction ("yield"), and bits 58-61,
the operand reuse flags (keep an operand in the reuse cache for the next instruction, which a
switch of warp would invalidate). nvcc 13 already alternates the promotion's FFMAs: one that
yields, one that does not and reuses the scale. DeepGEMM reported gains (10% and more in some
shapes, under nvcc 12) from making more of them yield; this script tests both directions:

  all    every FFMA of a run yields and reuses nothing
  none   no FFMA of a run yields (reuse flags as they were)
  keep   nothing changed (the same build path, for a like-for-like reference)

The cubin's instructions are found through `cuobjdump -sass` (function names and offsets) and
the ELF section `.text.FUNCTION`; every instruction is checked against the disassembly's words
before it is changed. Prints how many were changed."""
import re
import struct
import subprocess
import sys

YIELD = 1 << 45
REUSE = 0xF << 58


def sections(data):
    """name -> file offset of every ELF64 section"""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    hdr = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = hdr[shstrndx][4]
    out = {}
    for h in hdr:
        end = data.index(b"\0", strtab + h[0])
        out[data[strtab + h[0]:end].decode()] = h[4]
    return out


def instructions(sass):
    """(function, offset, opcode, low word, high word) for every instruction of the listing"""
    func, lines, out = None, sass.splitlines(), []
    for i, line in enumerate(lines):
        m = re.search(r"Function : (\S+)", line)
        if m:
            func = m.group(1)
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);\s+/\* (0x[0-9a-f]{16}) \*/", line)
        if m and func:
            hi = re.search(r"/\* (0x[0-9a-f]{16}) \*/", lines[i + 1])
            words = m.group(2).split()
            opcode = words[1] if words[0].startswith("@") else words[0]
            out.append((func, int(m.group(1), 16), opcode, int(m.group(3), 16),
                        int(hi.group(1), 16)))
    return out


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("all", "none", "keep"):
        sys.exit("usage: ffma_yield.py CUBIN all|none|keep [CUOBJDUMP]")
    path, mode = sys.argv[1], sys.argv[2]
    cuobjdump = sys.argv[3] if len(sys.argv) > 3 else "cuobjdump"
    data = bytearray(open(path, "rb").read())
    where = sections(data)
    sass = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True,
                          check=True).stdout
    ins = instructions(sass)
    if not ins:
        sys.exit(f"{path}: no instructions in cuobjdump's listing")
    changed = total = 0
    j = 0
    while j < len(ins):
        k = j
        while k < len(ins) and ins[k][2] == "FFMA" and ins[k][0] == ins[j][0]:
            k += 1
        if k - j >= 16:
            for func, off, _, lo, hi in ins[j:k]:
                pos = where[".text." + func] + off
                if struct.unpack_from("<QQ", data, pos) != (lo, hi):
                    sys.exit(f"{path}: {func}+{off:#x} is not what cuobjdump printed")
                new = hi
                if mode == "all":
                    new = hi & ~YIELD & ~REUSE
                elif mode == "none":
                    new = hi | YIELD
                total += 1
                if new != hi:
                    changed += 1
                    struct.pack_into("<Q", data, pos + 8, new)
        j = max(k, j + 1)
    if total == 0:
        sys.exit(f"{path}: no run of 16 FFMAs")
    open(path, "wb").write(data)
    print(f"{path}: {mode}: {changed} of the {total} FFMAs in runs of 16 or more changed")


main()
