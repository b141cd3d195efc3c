#!/usr/bin/env python3
"""Print kernels/common/sm90_registers.inc: registers per thread of each kernel instantiation
that a launch plan asks the occupancy of, as ptxas reports them for sm_90.

Usage: compile each kernel file with the build's flags plus `-Xptxas -v` and pipe the logs in:
  nvcc <build flags> -Xptxas -v -c kernels/concat_mla_k/optimized.cu 2> concat.log
  nvcc <build flags> -Xptxas -v -c kernels/cache_write/optimized.cu 2> cache.log
  cat concat.log cache.log | scripts/sm90_registers.py > kernels/common/sm90_registers.inc
(scripts/sm90_registers.sh does exactly this from build/.)
"""
import re
import subprocess
import sys

TYPES = {"float": "f32", "__half": "f16", "__nv_bfloat16": "bf16",
         "kvbench::kernels::fp8_e4m3_t": "fp8_e4m3", "kvbench::kernels::fp8_e5m2_t": "fp8_e5m2",
         "long": "int64", "int": "int32", "true": "1", "false": "0"}
# The instantiations the plans ask about (kernels/common/device_props.hpp, KernelRef::name).
WANTED = {
    "concat_2d": lambda a: a[3] == "1" and a[4] == "int64",
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
            name = subprocess.run(["c++filt", entry], capture_output=True, text=True).stdout
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
