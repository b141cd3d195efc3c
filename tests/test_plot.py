#!/usr/bin/env python3
"""CPU test of scripts/plot.py (headless) and the torch-free parts of scripts/triton_baseline.py.
Fails, not skips, when matplotlib is missing: scripts/setup.sh installs python3-matplotlib.
Usage: test_plot.py OUT_DIR"""
import os
import shutil
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import plot  # noqa: E402  (imports matplotlib: an ImportError fails the test)

DATA = os.path.join(ROOT, "tests", "data")
OUT = sys.argv.pop(1) if len(sys.argv) > 1 else "plot_test_out"


def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 1000


class Plot(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(OUT, ignore_errors=True)

    def test_bandwidth_one_png_per_kernel(self):
        paths = plot.plot_bandwidth([os.path.join(DATA, "plot", "cuda.csv"),
                                     os.path.join(DATA, "plot", "triton.csv")], out_dir=OUT)
        self.assertEqual([os.path.basename(p) for p in paths],
                         ["cuda_bandwidth_concat_and_cast_mha_k.png",
                          "cuda_bandwidth_reshape_and_cache_flash.png"])
        for p in paths:
            self.assertTrue(is_png(p), p)

    def test_peaks_from_sidecar_and_flags(self):
        csv_path = os.path.join(DATA, "plot", "cuda.csv")
        self.assertEqual(plot.peaks(csv_path, None, None), (4240.0, 4800.0))
        self.assertEqual(plot.peaks(csv_path, 1.0, None), (1.0, 4800.0))
        self.assertEqual(plot.peaks(os.path.join(DATA, "plot", "triton.csv"), None, None), (None, None))

    def test_compare_png(self):
        p = plot.plot_compare(os.path.join(DATA, "gate", "baseline.csv"),
                              os.path.join(DATA, "gate", "slower.csv"), out_dir=OUT)
        self.assertEqual(os.path.basename(p), "slower_vs_baseline.png")
        self.assertTrue(is_png(p))
        p = plot.plot_compare(os.path.join(DATA, "plot", "triton.csv"),
                              os.path.join(DATA, "plot", "cuda.csv"), out_dir=OUT, ignore_variant=True)
        self.assertTrue(is_png(p))
        with self.assertRaises(plot.InputError):  # different variants match only when asked
            plot.plot_compare(os.path.join(DATA, "plot", "triton.csv"),
                              os.path.join(DATA, "plot", "cuda.csv"), out_dir=OUT)

    def test_bad_input(self):
        with self.assertRaisesRegex(plot.InputError, r"schema2.csv:2: schema_version '2'"):
            plot.read_rows(os.path.join(DATA, "gate", "schema2.csv"))
        with self.assertRaisesRegex(plot.InputError, r"empty.csv:1: missing column 'schema_version'"):
            plot.read_rows(os.path.join(DATA, "gate", "empty.csv"))
        with self.assertRaisesRegex(plot.InputError, r"truncated.csv:6: too few columns"):
            plot.read_rows(os.path.join(DATA, "gate", "truncated.csv"))
        with self.assertRaisesRegex(plot.InputError, r"bad_type.csv:4: column 'gbps'|bad_type.csv:4: column 'median_us'"):
            plot.plot_compare(os.path.join(DATA, "gate", "baseline.csv"),
                              os.path.join(DATA, "gate", "bad_type.csv"), out_dir=OUT)
        self.assertEqual(plot.main(["bandwidth", os.path.join(DATA, "gate", "empty.csv"),
                                    "--out-dir", OUT]), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
