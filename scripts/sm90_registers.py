#!/usr/bin/env python3
"""Print kernels/common/sm90_registers.inc: registers per thread of each kernel instantiation
that a launch plan asks the occupancy of, as ptxas reports them for sm_90.

Usage: compile both optimized.cu files as the build does (sm_90, -O3), adding `-Xptxas -v`, and
pipe the logs in:
  for op in concat_mha_k cache_write; do
    nvcc -I. -Isrc -O3 -DNDEBUG -gencode arch=compute_90,code=sm_90 --expt-relaxed-constexpr \
         -std=c++17 -Xptxas -v -c kernels/$op/optimized.cu -o /dev/null 2>&1
  done | scripts/sm90_registers.py > kernels/common/sm90_registers.inc
The profiles turn these counts into blocks per SM (kernels/common/device_props.cpp,
sm90_resident_blocks); the GPU test Gpu.ProfileMatchesTheDevice compares the result with the
occupancy API on an H200 or an H100.
"""
import re
import subprocess
import sys

TYPES = {"float": "f32", "__half": "f16", "__nv_bfloat16": "bf16",
         "kvbench::kernels::fp8_e4m3_t": "fp8_e4m3", "kvbench::kernels::fp8_e5m2_t": "fp8_e5m2",
         "long": "int64", "int": "int32", "true": "1", "false": "0"}
# The instantiations the plans ask about (kernels/common/device_props.hpp, KernelRef::name).
WANTED = {
    "concat_2d": lambda a: a[3] in ("1", "2") and a[4] == "int64",
    "concat_walk": lambda a: a[4] == "0",
    "concat_optimized": lambda a: True,
    "cache_write_optimized": lambda a: a[3] == "1" and a[5:] == ["0", "0", "int64"],
}


def main():
    entry, rows = None, {}
    for line in sys.stdin:
        m = re.search(r"Compiling entry function '(\w+)' for 'sm_90'", line)
        if m:
            entry = m.group(1)
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and entry:
            try:
                name = subprocess.run(["c++filt", entry], capture_output=True, text=True).stdout
            except OSError as e:
                sys.exit(f"sm90_registers.py: c++filt: {e.strerror} (binutils provides it)")
            t = re.search(r"::(\w+)<(.*)>\(", name)
            if t and t.group(1) in WANTED:
                args = [TYPES.get(x.strip(), x.strip()) for x in t.group(2).split(",")]
                if WANTED[t.group(1)](args):
                    rows[f"{t.group(1)}<{','.join(args)}>"] = int(m.group(1))
            entry = None
    for k in sorted(rows):
        print(f'{{"{k}", {rows[k]}}},')


if __name__ == "__main__":
    main()
