#!/usr/bin/env python3
"""Machine code of the compute pipelines the NVIDIA Vulkan driver built, from its shader cache.

The driver compiles each pipeline's SPIR-V to SASS and, with its disk cache on, keeps the result
in `.bin` files of zstd frames. Each frame that holds a compiled shader starts with `NVDA`
`NVVM` `NVuc`; its section record at byte 0x48 (type 1: code) gives the code's size and offset,
and the instructions start 8 bytes past that offset; the word 8 bytes before that offset is the
number of registers each invocation takes (which decides how many workgroups share an SM: 64K
registers each on an H100). This script writes each shader's code to `OUT/shaderNNN.bin`, a
line per shader to `OUT/summary.txt` (code size, registers, and the tensor-core multiply-adds,
fragment loads and barriers counted from the instructions' encoding, which tells the kernels
apart) and, given `nvdisasm`, the disassembly to `OUT/shaderNNN.sass` with instruction counts
that matter for the GEMMs on its summary line (tensor-core multiply-adds, fragment loads,
global loads, shared stores, barriers, moves).

On the GPU machine (CUDA's nvdisasm is at /usr/local/cuda-13.0/bin there; zstd may not be, so
copy the cache back and extract here, then disassemble there):

    mkdir -p /tmp/glc
    __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=/tmp/glc \\
    __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 TESSERA_AUTOTUNE=off \\
        bash .gpu/run.sh .gpu/bin/bench --gemm --tensor-cores --only "M=4096 N=4096"
    python3 bench/driver_sass.py /tmp/glc OUT [--nvdisasm PATH]

The container layout is what driver 580 writes (found by reading its files, not documented);
another driver may differ.
"""

import argparse
import glob
import os
import re
import struct
import subprocess
import sys

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
SHADER_MAGIC = b"NVDANVVMNVuc"


def frames(data):
    """The zstd frames of a cache file, each running to the next frame's start."""
    starts = []
    at = data.find(ZSTD_MAGIC)
    while at >= 0:
        starts.append(at)
        at = data.find(ZSTD_MAGIC, at + 4)
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(data)
        yield data[start:end]


def decompress(frame):
    """The frame's contents (zstd stops at the frame's end and complains about the rest)."""
    run = subprocess.run(["zstd", "-d", "-c"], input=frame, capture_output=True)
    return run.stdout


def code(shader):
    """The instructions of a decompressed shader and its registers per invocation, or None
    when it is not one."""
    if not shader.startswith(SHADER_MAGIC) or len(shader) < 0x54:
        return None
    kind, size, offset = struct.unpack_from("<III", shader, 0x48)
    if kind != 1 or offset < 8:
        return None
    (registers,) = struct.unpack_from("<I", shader, offset - 8)
    body = shader[offset + 8 : offset + size]
    return body[: len(body) // 16 * 16], registers


def summary(sass):
    """Counts of the instructions that say where a GEMM's steps go."""
    ops = [
        ("hmma", r"\bHMMA"),
        ("ldsm", r"\bLDSM"),
        ("ldg", r"\bLDG"),
        ("sts", r"\bSTS"),
        ("bar", r"\bBAR\.SYNC"),
        ("mov", r"\b(MOV|IMAD\.MOV\.U32)\b"),
    ]
    counts = [f"{name}={len(re.findall(pattern, sass))}" for name, pattern in ops]
    registers = [int(r) for r in re.findall(r"\bR(\d+)\b", sass)]
    counts.append(f"highest_register=R{max(registers, default=0)}")
    return " ".join(counts)


# Opcodes (the low 12 bits of an sm_90 instruction's first word) that tell the kernels apart
# without a disassembler, found by matching counts against the kernels' source: 0x23c is
# HMMA (two per 16 x 16 x 16 fragment product), 0x83b LDSM (one per fragment load), 0xb1d
# BAR (a workgroup barrier).
OPCODES = [("hmma", 0x23C), ("ldsm", 0x83B), ("bar", 0xB1D)]


def opcode_counts(body):
    """Counts of the `OPCODES` in a shader's instructions, read from their encoding."""
    opcodes = [struct.unpack_from("<Q", body, at)[0] & 0xFFF for at in range(0, len(body), 16)]
    return " ".join(f"{name}={opcodes.count(op)}" for name, op in OPCODES)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cache", help="the __GL_SHADER_DISK_CACHE_PATH directory")
    parser.add_argument("out", help="where the shaders' code (and disassembly) go")
    parser.add_argument("--nvdisasm", help="CUDA's nvdisasm, to disassemble for sm_90")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    written = []
    for path in sorted(glob.glob(os.path.join(args.cache, "**", "*.bin"), recursive=True)):
        with open(path, "rb") as f:
            data = f.read()
        for frame in frames(data):
            shader = code(decompress(frame))
            if shader is None:
                continue
            body, registers = shader
            name = os.path.join(args.out, f"shader{len(written):03d}")
            with open(name + ".bin", "wb") as f:
                f.write(body)
            line = f"bytes={len(body)} registers={registers}"
            written.append((name, f"{line} encoded: {opcode_counts(body)}"))
    lines = []
    for name, line in written:
        if args.nvdisasm:
            run = subprocess.run(
                [args.nvdisasm, "-b", "SM90", name + ".bin"], capture_output=True, text=True
            )
            with open(name + ".sass", "w") as f:
                f.write(run.stdout + run.stderr)
            line += " " + "disassembled: " + summary(run.stdout)
        lines.append(f"{os.path.basename(name)} {line}")
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(written)} shaders", file=sys.stderr)


if __name__ == "__main__":
    main()
