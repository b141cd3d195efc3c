#!/usr/bin/env python3
"""Code size of each GPU kernel in a binary, with no CUDA tool: the `.text.<kernel>` sections of
every CUDA ELF (cubin) a file holds, embedded uncompressed in a host binary's fatbin (kvbench,
libkvbench.so) or alone (a .cubin, such as Triton's cache keeps). On sm_70 and later every SASS
instruction is 16 bytes, so bytes / 16 is the kernel's instruction count, alignment padding
included. A fatbin may hold some images compressed (nvcc compresses large ones); those are not
read: compile the kernel's file with `nvcc -cubin` and the build's flags, and read the cubin.

  tools/sass_size.py FILE... [--match REGEX]

One line per kernel: bytes, instructions, sm architecture, the demangled name (c++filt when it is
there), sorted by name. Exit 1 when no kernel matches (or FILE holds no CUDA ELF), 2 on bad usage.
"""
import argparse
import re
import shutil
import struct
import subprocess
import sys

EM_CUDA = 190


def cuda_elfs(data):
    """Offsets of the 64-bit little-endian CUDA ELF images inside `data`."""
    for m in re.finditer(b"\x7fELF", data):
        i = m.start()
        if len(data) >= i + 64 and data[i + 4] == 2 and data[i + 5] == 1 and \
                struct.unpack_from("<H", data, i + 18)[0] == EM_CUDA:
            yield i


def kernels(data, at):
    """(name, bytes, sm) of each .text.<name> section of the ELF at offset `at`."""
    flags = struct.unpack_from("<I", data, at + 0x30)[0]
    shoff = struct.unpack_from("<Q", data, at + 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, at + 0x3A)
    if shnum == 0 or shstrndx >= shnum or at + shoff + shnum * shentsize > len(data):
        return
    sections = [struct.unpack_from("<IIQQQQ", data, at + shoff + k * shentsize)
                for k in range(shnum)]
    strtab = at + sections[shstrndx][4]

    def name(offset):
        start = strtab + offset
        return data[start:data.index(b"\0", start)].decode(errors="replace")

    for s in sections:
        n = name(s[0])
        if n.startswith(".text."):
            # The architecture: bits 8-15 of e_flags in the current ELF ABI, bits 0-7 before.
            sm = (flags >> 8) & 0xFF if (flags >> 8) & 0xFF >= 50 else flags & 0xFF
            yield n[len(".text."):], s[5], sm


def demangle(names):
    tool = shutil.which("c++filt")
    if not tool or not names:
        return names
    done = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True)
    out = done.stdout.splitlines()
    return out if done.returncode == 0 and len(out) == len(names) else names


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--match", default="", help="only kernels whose demangled name matches REGEX")
    args = ap.parse_args(argv)
    try:
        pattern = re.compile(args.match)
    except re.error as e:
        ap.error(f"--match {args.match!r}: {e}")
    found = []
    for path in args.files:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            print(f"sass_size.py: {path}: {e.strerror}", file=sys.stderr)
            return 2
        for at in cuda_elfs(data):
            found += list(kernels(data, at))
    names = demangle([n for n, _, _ in found])
    rows = sorted((d, size, sm) for d, (_, size, sm) in zip(names, found) if pattern.search(d))
    if not rows:
        print(f"sass_size.py: no kernel{' matching ' + repr(args.match) if args.match else ''} in "
              f"{', '.join(args.files)}", file=sys.stderr)
        return 1
    for d, size, sm in rows:
        print(f"{size:7d} B {size // 16:6d} instr  sm_{sm}  {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
