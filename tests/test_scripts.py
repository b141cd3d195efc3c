#!/usr/bin/env python3
"""CPU test of scripts/plot.py (headless; its tick labels and timing lines), each script under an
interpreter without matplotlib or torch (scripts/kvbench_python.py), scripts/perf_report.py and
tools/perf_targets.py on the committed perf run, tools/remote/tables.py,
tools/remote/gpu_sass.sh and pdl_order.sh (with a fake cuobjdump), `proof.sh context`'s board check
(with a fake nvidia-smi), scripts/triton_baseline.py without a GPU (its cases, support rules and
rows against kvbench's), scripts/kvbench_schema.py against the binary, every script and tool
reading a CSV through its reader, and scripts/kvbench_operations.py's row labels against
kvbench's own (`kvbench compare`).
Fails, not skips, when matplotlib is missing: scripts/setup.sh installs python3-matplotlib.
Usage: test_scripts.py OUT_DIR KVBENCH_BINARY"""
import os
import shutil
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import contextlib  # noqa: E402
import csv  # noqa: E402
import hashlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import tarfile  # noqa: E402

import plot  # noqa: E402  (imports matplotlib: an ImportError fails the test)

DATA = os.path.join(ROOT, "tests", "data")
OUT = sys.argv.pop(1) if len(sys.argv) > 1 else "plot_test_out"
KVBENCH = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "kvbench")
# The scripts read the case key from this binary (scripts/kvbench_schema.py), in-process and in
# the subprocesses below alike.
os.environ["KVBENCH"] = os.path.abspath(KVBENCH)
import kvbench_operations  # noqa: E402
import kvbench_schema  # noqa: E402
KEY_COLUMNS = kvbench_schema.case_key_columns()


def write_stand_in(path, text):
    """An executable script at path standing in for a tool (nvidia-smi, cuobjdump, a binary)."""
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


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
        # One file holding both variants (a run with --variants A,B), one variant against the other.
        both = os.path.join(OUT, "both.csv")
        with open(both, "w") as f:
            with open(os.path.join(DATA, "plot", "cuda.csv")) as a:
                f.write(a.read())
            with open(os.path.join(DATA, "plot", "triton.csv")) as b:
                f.writelines(b.readlines()[1:])
        with self.assertRaisesRegex(plot.InputError, "two variants of one case"):
            plot.plot_compare(both, both, out_dir=OUT, ignore_variant=True)
        p = plot.plot_compare(both, both, out_dir=OUT, variants=("triton", "seed_port"))
        self.assertTrue(is_png(p))
        with self.assertRaisesRegex(plot.InputError, r"variant nope against triton"):
            plot.plot_compare(both, both, out_dir=OUT, variants=("triton", "nope"))
        with self.assertRaises(SystemExit) as bad:  # a bad pair is a bad command line (exit 3)
            plot.main(["compare", both, both, "--variants", "triton"])
        self.assertEqual(bad.exception.code, 3)

    def test_decode_plot(self):
        p = plot.plot_decode([os.path.join(DATA, "plot", "cuda.csv"),
                              os.path.join(DATA, "plot", "triton.csv")],
                             variants=("seed_port", "triton"), out_dir=OUT)
        self.assertEqual(os.path.basename(p), "cuda_decode.png")
        self.assertTrue(is_png(p))
        with self.assertRaisesRegex(plot.InputError, "no shape timed for every one of seed_port, nope"):
            plot.plot_decode([os.path.join(DATA, "plot", "cuda.csv")], variants=("seed_port", "nope"),
                             out_dir=OUT)

    def test_decode_plot_per_context(self):
        # Rows of two contexts: one line per variant and context, shapes kept where every
        # variant was timed in some context.
        with open(os.path.join(DATA, "plot", "cuda.csv")) as f:
            lines = f.read().splitlines()
        paths = []
        for ctx in ("back_to_back", "after_producer"):
            path = os.path.join(OUT, f"ctx_{ctx}.csv")
            with open(path, "w") as f:
                f.write(lines[0] + ",context,timer\n")
                f.writelines(line + f",{ctx},cupti\n" for line in lines[1:])
            paths.append(path)
        p = plot.plot_decode(paths, variants=("seed_port",), out_dir=OUT)
        self.assertTrue(is_png(p))
        self.assertIn("context after_producer, cupti timer",
                      plot.timing_line(paths[1], plot.read_rows(paths[1])))

    def two_boards(self):
        """cuda.csv under two directories, the second's sidecar with another board's peaks."""
        paths = []
        for board, peaks in (("h200", (4240.0, 4800.0)), ("h100", (3009.0, 3352.0))):
            os.makedirs(os.path.join(OUT, "boards", board), exist_ok=True)
            path = os.path.join(OUT, "boards", board, "cuda.csv")
            shutil.copyfile(os.path.join(DATA, "plot", "cuda.csv"), path)
            with open(path + ".json", "w") as f:
                json.dump({"measured_peak_gbps": peaks[0], "theoretical_peak_gbps": peaks[1]}, f)
            paths.append(path)
        return paths

    def test_a_linked_csv_reads_its_targets_sidecar(self):
        # As kvbench writes it: beside the target of a link (core/file_io.hpp, sidecar_path).
        d = os.path.join(OUT, "linked")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        real = os.path.join(d, "real.csv")
        shutil.copyfile(os.path.join(DATA, "plot", "cuda.csv"), real)
        shutil.copyfile(os.path.join(DATA, "plot", "cuda.csv.json"), real + ".json")
        os.symlink("real.csv", os.path.join(d, "latest.csv"))
        os.symlink(os.path.join("..", "linked", "latest.csv"), os.path.join(d, "chain.csv"))
        for name in ("real.csv", "latest.csv", "chain.csv"):
            self.assertEqual(kvbench_schema.sidecar_path(os.path.join(d, name)), real + ".json")
            self.assertEqual(plot.peaks(os.path.join(d, name), None, None), (4240.0, 4800.0))
        self.assertEqual(kvbench_schema.sidecar_path(os.path.join(d, "none.csv")),
                         os.path.join(d, "none.csv") + ".json")

    def test_csvs_are_named_apart(self):
        self.assertEqual(plot.source_names(["results/h200/smoke.csv", "results/smoke.csv"]),
                         ["h200/smoke.csv", "results/smoke.csv"])
        self.assertEqual(plot.source_names(["a/x/cuda.csv", "b/x/cuda.csv", "c/triton.csv"]),
                         ["a/x/cuda.csv", "b/x/cuda.csv", "triton.csv"])
        self.assertEqual(plot.source_names(["a/cuda.csv", "a/cuda.csv"]), ["cuda.csv"] * 2)

    def test_one_variant_of_two_csvs_is_two_lines(self):
        h200, h100 = self.two_boards()
        series, drawn = plot.bandwidth_series([h200, h100])
        shape, lines = sorted(series["reshape_and_cache_flash"].items())[0]
        self.assertEqual(sorted(lines), [("seed_port", h100), ("seed_port", h200)])
        self.assertEqual(lines[("seed_port", h200)], lines[("seed_port", h100)])  # each whole
        self.assertEqual(len({t for t, _ in lines[("seed_port", h200)]}),
                         len(lines[("seed_port", h200)]))  # one point a token count
        names = dict(zip([h200, h100], plot.source_names([h200, h100])))
        self.assertEqual(plot.line_labels({("optimized", h200), ("optimized", h100)}, names),
                         {("optimized", h200): "optimized (h200/cuda.csv)",
                          ("optimized", h100): "optimized (h100/cuda.csv)"})
        triton = os.path.join(DATA, "plot", "triton.csv")  # variants apart: no names
        self.assertEqual(plot.line_labels({("optimized", h200), ("triton", triton)}, names),
                         {("optimized", h200): "optimized", ("triton", triton): "triton"})
        # Each board's peaks, named; one board's alone, as before.
        self.assertEqual(plot.peak_lines([h200, h100], names, None, None),
                         [(3009.0, "measured copy peak 3009 GB/s (h100/cuda.csv)", "--"),
                          (4240.0, "measured copy peak 4240 GB/s (h200/cuda.csv)", "--"),
                          (3352.0, "theoretical peak 3352 GB/s (h100/cuda.csv)", ":"),
                          (4800.0, "theoretical peak 4800 GB/s (h200/cuda.csv)", ":")])
        self.assertEqual(plot.peak_lines([h200, triton], names | {triton: "triton.csv"}, None,
                                         None),
                         [(4240.0, "measured copy peak 4240 GB/s", "--"),
                          (4800.0, "theoretical peak 4800 GB/s", ":")])
        # What the figures carry: the legend and the timing lines name each CSV.
        seen = []
        original = plot.finish

        def record(fig, axes, n, title, lines, handles, labels, path):
            seen.append((labels, lines))
            return original(fig, axes, n, title, lines, handles, labels, path)

        plot.finish = record
        try:
            plot.plot_bandwidth([h200, h100], out_dir=OUT)
            plot.plot_decode([h200, h100], variants=("seed_port",), out_dir=OUT)
        finally:
            plot.finish = original
        for labels, lines in seen:
            self.assertIn("seed_port (h200/cuda.csv)", labels)
            self.assertIn("seed_port (h100/cuda.csv)", labels)
            self.assertEqual([line.split(":")[0] for line in lines],
                             ["h200/cuda.csv", "h100/cuda.csv"])
        self.assertEqual(len(seen), 3)  # two bandwidth PNGs, decode

    def test_compare_of_one_stem_names_the_baseline(self):
        h200, h100 = self.two_boards()
        p = plot.plot_compare(h200, h100)
        self.assertEqual(p, os.path.join(OUT, "boards", "h100", "cuda_vs_h200_cuda.png"))
        self.assertTrue(is_png(p))

    def test_bad_input(self):
        with self.assertRaisesRegex(plot.InputError, r"schema5.csv:2: schema_version '5'"):
            plot.read_rows(os.path.join(DATA, "gate", "schema5.csv"))
        with self.assertRaisesRegex(plot.InputError, r"empty.csv:1: missing column 'schema_version'"):
            plot.read_rows(os.path.join(DATA, "gate", "empty.csv"))
        with self.assertRaisesRegex(plot.InputError, r"truncated.csv:6: too few columns"):
            plot.read_rows(os.path.join(DATA, "gate", "truncated.csv"))
        with self.assertRaisesRegex(plot.InputError, r"bad_type.csv:4: column 'gbps'|bad_type.csv:4: column 'median_us'"):
            plot.plot_compare(os.path.join(DATA, "gate", "baseline.csv"),
                              os.path.join(DATA, "gate", "bad_type.csv"), out_dir=OUT)
        self.assertEqual(plot.main(["bandwidth", os.path.join(DATA, "gate", "empty.csv"),
                                    "--out-dir", OUT]), 3)


class Axes(unittest.TestCase):
    """Tick labels a person reads at a glance, and the line saying how a figure was timed."""

    def labels(self, axis):
        axis.figure.canvas.draw()
        return [t.get_text() for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]

    def test_tokens_are_numbers(self):
        self.assertEqual([plot.format_tokens(v) for v in (1, 16, 128, 1024, 8192, 32768, 131072,
                                                          1 << 20, 1536, 0.5)],
                         ["1", "16", "128", "1K", "8K", "32K", "128K", "1M", "1536", "0.5"])
        fig, ax = plot.plt.subplots()
        tokens = [1, 16, 128, 1024, 32768]
        ax.plot(tokens, [1, 2, 3, 4, 5])
        plot.tokens_axis(ax, tokens)
        self.assertEqual(self.labels(ax.xaxis), ["1", "16", "128", "1K", "32K"])
        plot.plt.close(fig)

    def test_microseconds_are_plain_numbers(self):
        self.assertEqual([plot.plain_number(v) for v in (1, 2.0, 0.85, 1500, 0.30000000000000004)],
                         ["1", "2", "0.85", "1500", "0.3"])
        # (data, labels): 1-2-5, round steps inside a narrow range, decades; the lowest point
        # on or above a labelled tick when one is within 25% below it (not for 0.93 here).
        for values, want in (([1.16, 1.5, 4.7], ["1", "2", "5"]),
                             ([0.82, 0.9, 0.98], ["0.8", "0.85", "0.9", "0.95", "1"]),
                             ([1.0, 40.0, 700.0], ["1", "10", "100"]),
                             ([0.93, 1.4, 2.6], ["1", "1.5", "2", "2.5"])):
            fig, ax = plot.plt.subplots()
            ax.plot([1, 16, 128], values)
            plot.microseconds_axis(ax, values)
            got = self.labels(ax.yaxis)
            self.assertEqual(got, want, values)
            if values[0] != 0.93:
                self.assertLessEqual(float(got[0]), min(values))
            for label in got:
                self.assertRegex(label, r"^[0-9.]+$")  # never 2×10⁰ or $10^{0}$
            plot.plt.close(fig)

    def write_csv(self, name, sidecar, rows):
        path = os.path.join(OUT, name)
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(DATA, "plot", "cuda.csv"), newline="") as f:
            source = list(csv.DictReader(f))
        header = list(source[0].keys()) + ["buffer_sets"]
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header)
            w.writeheader()
            for row, sets in zip(source, rows):
                w.writerow(dict(row, schema_version="2", buffer_sets=sets))
        if sidecar is not None:
            with open(path + ".json", "w") as f:
                json.dump(sidecar, f)
        return path

    def test_timing_line_from_the_sidecar(self):
        sidecar = {"git_sha": "54935d3a741a", "git_dirty": False,
                   "device": {"name": "NVIDIA H200"},
                   "settings": {"mode": "graph", "rotate": "auto", "hot_inputs": True,
                                "l2_flush": "read"}}
        path = self.write_csv("timed.csv", sidecar, ["13", "4096", "61"])
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))[:3]
        self.assertEqual(plot.timing_line(path, rows),
                         "timed.csv: NVIDIA H200, commit 54935d3; graph mode, 13–4096 buffer "
                         "sets per case (--rotate auto), hot inputs (caches cold)")
        sidecar["settings"].update(mode="cold", rotate="1", hot_inputs=False)
        sidecar["git_dirty"] = True
        path = self.write_csv("cold.csv", sidecar, ["1", "1"])
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))[:2]
        self.assertEqual(plot.timing_line(path, rows),
                         "cold.csv: NVIDIA H200, commit 54935d3 (uncommitted changes); cold mode "
                         "(L2 flushed by read), 1 buffer set per case")
        sidecar["settings"].update(mode="graph")
        sidecar["device"]["l2_bytes"] = 62914560
        path = self.write_csv("hot.csv", sidecar, ["1", "1"])
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))[:2]
        self.assertEqual(plot.timing_line(path, rows),
                         "hot.csv: NVIDIA H200, commit 54935d3 (uncommitted changes); graph mode, "
                         "1 buffer set per case (unrotated: a case under the 60 MiB L2 runs hot "
                         "in it)")

    def test_timing_line_without_sidecar_reads_the_rows(self):
        path = os.path.join(DATA, "plot", "triton.csv")
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        line = plot.timing_line(path, rows)
        self.assertTrue(line.startswith("triton.csv (no sidecar: from the rows): "), line)
        self.assertIn(f"{rows[0]['device']}, commit {rows[0]['git_sha'][:7]}; "
                      f"{rows[0]['mode']} mode", line)

    def test_every_figure_carries_its_timing_lines(self):
        seen = []
        original = plot.add_timing_lines

        def record(fig, lines):
            seen.append(lines)
            return original(fig, lines)

        plot.add_timing_lines = record
        try:
            cuda, triton = (os.path.join(DATA, "plot", n) for n in ("cuda.csv", "triton.csv"))
            plot.plot_bandwidth([cuda, triton], out_dir=OUT)
            plot.plot_compare(triton, cuda, out_dir=OUT, ignore_variant=True)
            plot.plot_decode([cuda, triton], variants=("seed_port", "triton"), out_dir=OUT)
        finally:
            plot.add_timing_lines = original
        self.assertEqual(len(seen), 4)  # two bandwidth PNGs, compare, decode
        for lines in seen:
            self.assertTrue(lines)
            for line in lines:
                self.assertRegex(line, r"^(cuda|triton)\.csv.*: NVIDIA H200, commit [0-9a-f]{7}; "
                                       r"graph mode, 1 buffer set per case \(unrotated: a case "
                                       r"under the L2 runs hot in it\)$")
        self.assertEqual([line.split(" ")[0].rstrip(":") for line in seen[2]],
                         ["triton.csv", "cuda.csv"])  # compare: baseline, then current

    def test_output_names_the_png(self):
        path = os.path.join(OUT, "named", "decode_step.png")
        self.assertEqual(plot.main(["decode", os.path.join(DATA, "plot", "cuda.csv"),
                                    os.path.join(DATA, "plot", "triton.csv"),
                                    "--variants", "seed_port,triton", "-o", path]), 0)
        self.assertTrue(is_png(path))


class Interpreters(unittest.TestCase):
    """Each entry point under an interpreter without matplotlib, torch or triton (a venv of this
    one without its site-packages): it runs, re-runs itself under the provisioned interpreter
    ($KVBENCH_PYTHON), or prints one line naming the interpreter, the module and the two fixes,
    and exits 3. Never a traceback."""

    @classmethod
    def setUpClass(cls):
        cls.venv = os.path.join(os.path.abspath(OUT), "bare_venv")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--clear", cls.venv],
                       check=True)
        cls.python = os.path.join(cls.venv, "bin", "python3")

    def run_script(self, script, *args, provisioned=None, stdin=""):
        env = dict(os.environ, KVBENCH_PYTHON=provisioned or self.python)
        env.pop("KVBENCH_PYTHON_RERUN", None)
        return subprocess.run([self.python, os.path.join(ROOT, "scripts", script), *args],
                              capture_output=True, text=True, env=env, input=stdin)

    def assert_missing(self, done, script, module):
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
        self.assertTrue(done.stderr.startswith(f"{script}: {self.python} has no module "
                                               f"'{module}'; either "), done.stderr)
        self.assertIn(f"{self.python} -m pip install {module}", done.stderr)

    def test_plot_says_what_to_do(self):
        done = self.run_script("plot.py", "bandwidth", os.path.join(DATA, "plot", "cuda.csv"),
                               "--out-dir", os.path.join(OUT, "bare"))
        self.assert_missing(done, "plot.py", "matplotlib")
        self.assertIn("run it with /usr/bin/python3 after scripts/setup.sh (which installs "
                      "python3-matplotlib for it)", done.stderr)
        self.assertFalse(os.path.exists(os.path.join(OUT, "bare")))

    def test_a_broken_module_is_one_line_too(self):
        fake = os.path.join(os.path.abspath(OUT), "broken_site", "matplotlib")
        os.makedirs(fake, exist_ok=True)
        with open(os.path.join(fake, "__init__.py"), "w") as f:
            f.write("raise ImportError('built against another numpy')\n")
        env_path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.path.dirname(fake)
        try:
            done = self.run_script("plot.py", "bandwidth", os.path.join(DATA, "plot", "cuda.csv"))
        finally:
            if env_path is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = env_path
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
        self.assertTrue(done.stderr.startswith(
            f"plot.py: {self.python} cannot import 'matplotlib' (ImportError: built against "
            f"another numpy); either "), done.stderr)

    def test_plot_reruns_under_the_provisioned_interpreter(self):
        out = os.path.join(OUT, "rerun")
        done = self.run_script("plot.py", "bandwidth", os.path.join(DATA, "plot", "cuda.csv"),
                               "--out-dir", out, provisioned=sys.executable)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr.strip(),
                         f"plot.py: {self.python} has no module 'matplotlib'; running under "
                         f"{sys.executable}, which has it")
        self.assertEqual(done.stdout.split(), [
            os.path.join(out, "cuda_bandwidth_concat_and_cast_mha_k.png"),
            os.path.join(out, "cuda_bandwidth_reshape_and_cache_flash.png")])

    def test_triton_scripts_say_what_to_do(self):
        done = self.run_script("triton_baseline.py", os.path.join(ROOT, "configs", "smoke.yaml"),
                               "-o", os.path.join(OUT, "bare_triton.csv"))
        self.assert_missing(done, "triton_baseline.py", "torch")
        self.assertIn("scripts/setup.sh does not install torch", done.stderr)
        self.assert_missing(self.run_script("seed_triton.py"), "seed_triton.py", "torch")

    def test_standard_library_scripts_run(self):
        done = self.run_script("perf_report.py", os.path.join(ROOT, "results", "h200", "perf.csv"))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("|", done.stdout)
        done = self.run_script("sm90_registers.py")
        self.assertEqual((done.returncode, done.stdout, done.stderr), (0, "", ""))
        done = self.run_script("triton_baseline.py", "--help")
        self.assertEqual(done.returncode, 0, done.stderr)
        done = self.run_script("kvbench_schema.py", KVBENCH)
        table = subprocess.run([KVBENCH, "schema", "--columns"], capture_output=True, text=True,
                               check=True).stdout.splitlines()[1:]
        key = [line.split(",")[0] for line in table if line.endswith(",case_key")]
        self.assertEqual(done.stdout.strip().split(","), key, done.stderr)
        done = self.run_script("kvbench_schema.py", "/nonexistent/kvbench")
        self.assertEqual((done.returncode, len(done.stderr.splitlines())), (1, 1), done.stderr)


class CaseKey(unittest.TestCase):
    """scripts/kvbench_schema.py: the case key the scripts use is the binary's."""

    def test_columns_are_the_header_with_roles(self):
        import kvbench_schema
        header = subprocess.run([KVBENCH, "schema"], capture_output=True, text=True,
                                check=True).stdout.strip().split(",")
        table = subprocess.run([KVBENCH, "schema", "--columns"], capture_output=True, text=True,
                               check=True).stdout.splitlines()
        self.assertEqual(table[0], "column,role")
        rows = [line.split(",") for line in table[1:]]
        self.assertEqual([r[0] for r in rows], header)
        self.assertEqual(kvbench_schema.columns(KVBENCH), header)
        roles = {r[1] for r in rows}
        self.assertEqual(roles, {"case_key", "result", "metadata"})
        self.assertEqual(kvbench_schema.columns(KVBENCH, "case_key"),
                         kvbench_schema.case_key_columns(KVBENCH))
        # The case key is one run of adjacent columns, after schema_version.
        key = kvbench_schema.case_key_columns(KVBENCH)
        start = header.index(key[0])
        self.assertEqual(header[start:start + len(key)], key)
        done = subprocess.run([KVBENCH, "schema", "--columns", "--case-key"], capture_output=True,
                              text=True)
        self.assertEqual(done.returncode, 3, done.stderr)

    def test_case_key_is_the_case_list_header(self):
        import kvbench_schema
        done = subprocess.run([KVBENCH, "list", os.path.join(ROOT, "configs", "smoke.yaml"),
                               "--format", "csv"], capture_output=True, text=True, check=True)
        header = done.stdout.splitlines()[0].split(",")
        self.assertEqual(header[0], "case")
        self.assertEqual(kvbench_schema.case_key_columns(KVBENCH), header[1:])
        self.assertEqual(plot.case_columns(), header[1:])

    def test_missing_binary_is_named(self):
        import kvbench_schema
        with self.assertRaisesRegex(kvbench_schema.SchemaError, "/nonexistent/kvbench: no kvbench"):
            kvbench_schema.case_key_columns("/nonexistent/kvbench")


TRITON_OPS = ("concat_and_cast_mha_k", "reshape_and_cache_flash")
INT32_MAX = 2**31 - 1


def seed_reason(c):
    """Why the seed's kernels cannot run case c (a row of `kvbench list --format csv`), from its
    axes: the rules scripts/triton_baseline.py's supports() applies to the case's arguments.
    "32-bit" stands for the offset rule, which needs the strides."""
    T, H, D, R = (int(c[k]) for k in ("num_tokens", "num_heads", "head_dim", "rope_dim"))
    if c["kernel"] == "concat_and_cast_mha_k":
        for name, v in (("num_heads", H), ("nope_dim", D), ("rope_dim", R)):
            if v & (v - 1):
                return f"seed: {name}={v} is not a power of two (unmasked tl.arange)"
        return "32-bit" if T * H * (D + R) > INT32_MAX // 4 else None
    if c["scale"] == "per_token_head":  # kvbench's refusal, before supports() is asked
        return "the plugin ABI (version 1) has no per_token_head scale"
    # One head, or one slot per block: HND is NHD's bytes, and the seed runs it.
    if c["layout"] != "nhd" and H > 1 and int(c["block_size"]) > 1:
        return f"seed: layout {c['layout']} (the seed writes NHD only)"
    if c["strides"] != "contiguous":
        return f"seed: strides {c['strides']} (the seed assumes head stride = head_size)"
    if c["scale"] == "per_head":
        return "seed: per_head scale (the seed loads one scale per tensor)"
    if c["slots"] == "skip":
        return "seed: skip slot (the seed has no reserved skip index)"
    return "32-bit" if T * H * D > INT32_MAX // 4 else None


class TritonAdapter(unittest.TestCase):
    """scripts/triton_baseline.py hands the seed's kernels to the kvbench package (variant
    `triton`): its cases are kvbench's, its rows kvbench's run writes them, and its supports()
    refuses the cases the seed cannot run faithfully, with the seed's reasons."""

    SCRIPT = os.path.join(ROOT, "scripts", "triton_baseline.py")

    def adapter(self, *args, **env):
        e = dict(os.environ, KVBENCH_LIB=os.path.join(os.path.dirname(KVBENCH), "libkvbench.so"))
        e.update(env)
        return subprocess.run([sys.executable, self.SCRIPT, *args], capture_output=True,
                              text=True, env=e, cwd=ROOT, timeout=600)

    def cases(self, config, *args):
        done = subprocess.run([KVBENCH, "list", config, "--format", "csv", *args],
                              capture_output=True, text=True, check=True)
        return list(csv.reader(io.StringIO(done.stdout)))

    def test_cases_are_kvbenchs(self):
        for name in ("validation.yaml", "perf.yaml"):
            config = os.path.join(ROOT, "configs", name)
            done = self.adapter("list", config, "--format", "csv")
            self.assertEqual(done.returncode, 0, done.stderr)
            got = list(csv.reader(io.StringIO(done.stdout)))
            own = self.cases(config, "--variants", "optimized")
            self.assertEqual(got[0], own[0])  # the binary's columns
            # Case keys: every column but the index (the operations without `triton` are left
            # out, so the numbers differ) and the variant.
            index, kernel, variant = (own[0].index(c) for c in ("case", "kernel", "variant"))
            self.assertEqual(index, 0)
            want = [r[1:variant] + ["triton"] + r[variant + 1:] for r in own[1:]
                    if r[kernel] in TRITON_OPS]
            self.assertGreater(len(want), 100)
            self.assertEqual([r[1:] for r in got[1:]], want, name)
            self.assertEqual([r[0] for r in got[1:]], [str(i) for i in range(len(want))])

    def test_not_supported_follows_the_seed(self):
        config = os.path.join(ROOT, "configs", "validation.yaml")
        done = self.adapter("list", config, "--plan", "--device-profile", "h200")
        self.assertEqual(done.returncode, 0, done.stderr)
        plans = {}
        for line in done.stdout.splitlines():
            if not line.startswith("#"):
                plans[line.split()[0]] = line.rsplit(" | ", 1)[1]
        rows = list(csv.DictReader(io.StringIO(self.adapter("list", config, "--format",
                                                            "csv").stdout)))
        self.assertEqual(sorted(plans), sorted(r["case"] for r in rows))
        seen = set()
        for r in rows:
            want, got = seed_reason(r), plans[r["case"]]
            if got.startswith("not supported: seed: 32-bit offsets overflow"):
                self.assertEqual(want, "32-bit", r)
            elif want in (None, "32-bit"):
                self.assertEqual(got, "none: a variant from scripts/triton_baseline.py", r)
            else:
                self.assertEqual(got, "not supported: " + want, r)
            seen.add(want.split(" ")[1] if want and " " in want else want)
        # Every rule but the offsets' has cases in validation.yaml.
        self.assertTrue({None, "layout", "strides", "per_head", "skip", "num_heads=12",
                         "plugin"} <= seen, seen)

    def test_rows_are_kvbench_runs(self):
        """A run through the adapter, its worker a stand-in (tests/workers/standin_worker.py)
        and torch and triton empty modules: the CSV's header is `kvbench schema`, the sidecar
        records the adapter as the variant's source, and every case runs as variant triton."""
        fake = os.path.join(os.path.abspath(OUT), "fake_torch_triton")
        os.makedirs(fake, exist_ok=True)
        for module in ("torch", "triton"):
            with open(os.path.join(fake, module + ".py"), "w") as f:
                f.write("")
        out = os.path.join(os.path.abspath(OUT), "adapter_run.csv")
        for p in (out, out + ".json"):
            if os.path.exists(p):
                os.remove(p)
        smoke = os.path.join(ROOT, "configs", "smoke.yaml")
        done = self.adapter(smoke, "-o", out, "--case", "0", "--rotate", "auto",
                            PYTHONPATH=fake, STANDIN_KVBENCH=KVBENCH,
                            KVBENCH_WORKER=sys.executable + " " +
                            os.path.join(ROOT, "tests", "workers", "standin_worker.py"))
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(out) as f:
            header = f.readline().strip().split(",")
        schema = subprocess.run([KVBENCH, "schema"], capture_output=True, text=True,
                                check=True).stdout.strip().split(",")
        self.assertEqual(header, schema)
        with open(out + ".json") as f:
            sidecar = json.load(f)
        self.assertEqual(sidecar["variants"], ["triton"])
        self.assertEqual(sidecar["settings"]["rotate"], "auto")
        with open(self.SCRIPT, "rb") as f:
            data = f.read()
        self.assertEqual(sidecar["plugins"], [{
            "path": "scripts/triton_baseline.py", "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "variants": ["triton", "triton"],
            "kernels": ["concat_and_cast_mha_k", "reshape_and_cache_flash"], "in_process": True}])

    def test_help_and_bad_flags(self):
        done = self.adapter("--help")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("triton_baseline.py CONFIG -o OUT.csv [kvbench run flags]", done.stdout)
        done = self.adapter("list", os.path.join(ROOT, "configs", "smoke.yaml"), "--samples", "3")
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)


PERF_REPORT = os.path.join(ROOT, "scripts", "perf_report.py")
PERF_TARGETS = os.path.join(ROOT, "tools", "perf_targets.py")


class Operations(unittest.TestCase):
    """scripts/kvbench_operations.py: each operation's rows read as kvbench describes them (the
    `case` column of `kvbench compare`), a kernel no entry names as kvbench names it, and the
    plot's and tables' labels come from the row's operation."""

    MLA = os.path.join(ROOT, "results", "h100", "perf_mla_cache.csv")

    def compare_cases(self, path):
        """The `case` cells of `kvbench compare PATH PATH` (kvbench's describe_key)."""
        done = subprocess.run([KVBENCH, "compare", path, path], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        cells = [line.split(" | ") for line in done.stdout.splitlines()
                 if line.startswith("| ") and not line.startswith("| verdict |")]
        return {c[4] for c in cells if len(c) > 4}

    def assert_described_as_kvbench(self, path):
        cases = self.compare_cases(path)
        _, rows = kvbench_schema.read_result_rows(path)
        self.assertTrue(rows)
        for _, row in rows:
            text = kvbench_operations.describe(row)
            # compare shortens a long cell to its start and "...".
            self.assertTrue(text in cases or any(c.endswith("...") and text.startswith(c[:-3])
                                                 for c in cases), f"{text!r} not in {cases}")

    def test_every_operation_reads_as_kvbench_describes_it(self):
        for path in (os.path.join(DATA, "gate", "baseline.csv"), self.MLA):
            self.assert_described_as_kvbench(path)
        kernels = {r["kernel"] for _, r in kvbench_schema.read_result_rows(self.MLA)[1]}
        kernels |= {r["kernel"] for _, r in kvbench_schema.read_result_rows(
            os.path.join(DATA, "gate", "baseline.csv"))[1]}
        self.assertEqual(kernels, set(kvbench_operations.OPERATIONS))

    def test_an_unknown_kernel_reads_by_its_columns(self):
        os.makedirs(OUT, exist_ok=True)
        path = os.path.join(OUT, "future_op.csv")
        with open(self.MLA) as f:
            lines = f.read().splitlines(True)[:3]
        with open(path, "w") as f:
            f.writelines([lines[0]] + [line.replace(",concat_and_cache_mla,", ",future_op,", 1)
                                       for line in lines[1:]])
        self.assert_described_as_kvbench(path)
        _, rows = kvbench_schema.read_result_rows(path)
        row = rows[0][1]
        self.assertEqual(kvbench_operations.name(row), "future_op")
        label = plot.shape_label(tuple(row[c] for c in plot.shape_columns()))
        self.assertTrue(label.startswith("num_heads=1 head_dim=512 rope_dim=64"), label)
        self.assertNotIn("D=", label)

    def test_plot_and_tables_label_an_mla_row_as_its_operation(self):
        _, rows = kvbench_schema.read_result_rows(self.MLA)
        row = next(r for _, r in rows if r["kernel"] == "concat_and_cache_mla"
                   and r["scale"] == "tile_raw")
        self.assertEqual(plot.shape_label(tuple(row[c] for c in plot.shape_columns())),
                         "L=512 R=64 BS=64 fp8_ds_mla\nbf16->fp8_e4m3 strides=contiguous "
                         "scale=tile_raw slots=random")
        import perf_report
        self.assertEqual(perf_report.shape_name(row),
                         "mla_cache L=512 R=64 BS=64 bf16->fp8_e4m3 fp8_ds_mla scale=tile_raw")
        # The two tile scales are two shapes of the MLA table, under its own heading.
        done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "perf_report.py"),
                               self.MLA], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("| mla_cache: µs optimized (% of copy peak) |", done.stdout)
        for scale in ("tile_raw", "tile_pow2"):
            self.assertIn(f"| mla_cache L=512 R=64 BS=64 bf16->fp8_e4m3 fp8_ds_mla scale={scale} |",
                          done.stdout)
        self.assertNotIn("concat H=1", done.stdout)


class SharedReader(unittest.TestCase):
    """Every script and tool reads a result CSV through kvbench_schema.read_result_rows: a CSV
    whose last row is cut short gets the shared one-line error from each."""

    def test_each_reader_refuses_a_cut_row_with_the_shared_error(self):
        d = os.path.join(OUT, "shared_reader")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(DATA, "gate", "baseline.csv")) as f:
            text = f.read()
        cut = text[:-5]  # the last row without its end
        for name in ("bad.csv", "A.1.csv", "after_producer.csv"):
            with open(os.path.join(d, name), "w") as f:
                f.write(cut)
        bad = os.path.join(d, "bad.csv")
        with self.assertRaises(kvbench_schema.InputError) as shared:
            kvbench_schema.read_result_rows(bad)
        message = str(shared.exception)
        self.assertIn("no newline at the end of the last line", message)
        run_json = os.path.join(d, "run.csv.json")
        with open(run_json, "w") as f:
            json.dump({"config": {}, "device": {}}, f)
        tool = lambda *p: [sys.executable, os.path.join(ROOT, *p)]  # noqa: E731
        for argv, code, who in (
                (tool("scripts", "plot.py") + ["bandwidth", bad, "--out-dir", d], 3, "plot.py"),
                (tool("scripts", "perf_report.py") + [bad], 3, "perf_report.py"),
                # perf_targets.py reads through perf_report.py's readers, which say so.
                (tool("tools", "perf_targets.py") + [bad], 3, "perf_report.py"),
                (tool("tools", "results_sidecars.py") + ["derive", bad, "--from", run_json,
                                                         "--tool", "t"], 1, "results_sidecars.py"),
                (tool("tools", "remote", "tables.py") + ["delays", bad, "5", "slower"], 2,
                 "tables.py")):
            done = subprocess.run(argv, capture_output=True, text=True)
            self.assertEqual(done.returncode, code, argv)
            self.assertEqual(done.stderr.splitlines(), [f"{who}: {message}"], argv)
        for argv, path in ((tool("tools", "remote", "tables.py") + ["ab", d, "A"], "A.1.csv"),
                           (tool("tools", "remote", "tables.py") + ["context", d],
                            "after_producer.csv")):
            done = subprocess.run(argv, capture_output=True, text=True)
            self.assertEqual(done.returncode, 2, argv)
            self.assertEqual(done.stderr.splitlines(),
                             ["tables.py: " + message.replace(bad, os.path.join(d, path))])


class ContextTable(unittest.TestCase):
    """`tools/remote/tables.py context` on what `proof.sh context` leaves: each context's CSV, its
    bounds, the cross-check CSVs and logs (here written by hand)."""

    COLS = ["kernel", "variant", "sweep", "num_tokens", "num_heads", "head_dim", "rope_dim",
            "block_size", "in_dtype", "out_dtype", "layout", "scale", "swa", "kv_interleaved",
            "strides", "slots", "status", "reason", "median_us", "span_us",
            "launches_per_sample"]

    def write(self, d, name, rows, extra=()):
        with open(os.path.join(d, name), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.COLS + list(extra))
            w.writeheader()
            for r in rows:
                w.writerow(r)

    def row(self, variant, us, tokens="1", kernel="reshape_and_cache_flash", span=""):
        return dict(kernel=kernel, variant=variant, sweep="ctx_cache", num_tokens=tokens,
                    num_heads="8", head_dim="128", rope_dim="0", block_size="16", in_dtype="bf16",
                    out_dtype="bf16", layout="nhd", scale="none", swa="false",
                    kv_interleaved="false", strides="contiguous", slots="random",
                    status="passed", reason="", median_us=us, span_us=span,
                    launches_per_sample="20")

    def mla_row(self, variant, us):
        return dict(self.row(variant, us, kernel="concat_and_cache_mla"), sweep="ctx_mla",
                    num_heads="1", head_dim="512", rope_dim="64", block_size="64")

    def test_tables(self):
        d = os.path.join(OUT, "context_table")
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(d):
            os.remove(os.path.join(d, name))
        self.write(d, "after_producer.csv", [self.row("triton", "1.536"), self.row("optimized", "1.280"),
                                            self.row("seed_port", "3.072"),
                                            self.mla_row("optimized", "1.100")])
        bound = dict(self.row("optimized", "1.280"), plain_move_us="1.024")
        self.write(d, "bounds_after_producer.csv", [bound], extra=["plain_move_us"])
        self.write(d, "xc_events.csv", [self.row("optimized", "100.000", "16384")])
        self.write(d, "xc_cupti.csv", [self.row("optimized", "101.000", "16384", span="2030.000")])
        with open(os.path.join(d, "xc_cupti.log"), "w") as f:
            f.write("kvbench: cupti: CASE: launch 101.000 us, gap before it 0.100 us, replay span "
                    "2030.000 us, producer 0.000 us, window by events 101.600 us per launch (9 "
                    "replays, 0 incomplete, 0 invalid records)\n")
        with open(os.path.join(d, "ncu_0.log"), "w") as f:
            f.write('"ID","Kernel Name","gpu__time_duration.sum"\n"","","nsecond"\n')
            f.writelines(f'"{i}","cache_write_optimized","{v}"\n' for i, v in
                         enumerate(("100500", "100000", "101000")))
        done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "remote",
                                                            "tables.py"), "context", d],
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        out = done.stdout
        # cupti over events +1.00%, span per launch 101.5, windows by events 101.6, ncu 100.5.
        self.assertIn("| 101.000 | 101.500 | 101.600 | 100.500 | +1.00% | +0.50% |", out)
        self.assertIn("| cache H=8 D=128 BS=16 bf16->bf16 nhd T=1 | - / - / - / - | "
                      "- / - / - / - | 1.54 / 3.07 / 1.28 / 1.02 | - / - / - / - |", out)
        # A row of the MLA cache write is named as its own operation, never as the cache write.
        self.assertIn("| mla_cache L=512 R=64 BS=64 bf16->bf16 nhd T=1 | - / - / - / - | "
                      "- / - / - / - | - / - / 1.10 / - | - / - / - / - |", out)
        self.assertIn("| after_producer | 1.200 (1) | 1 / 0 / 0 | 0.256 |", out)


class ContextProofBoard(unittest.TestCase):
    """`tools/remote/proof.sh context`'s GPU_NAME: on another board it stops before anything runs or
    is written; on the named one it goes on. A stand-in nvidia-smi names the board."""

    def run_proof(self, board, gpu_name):
        work = os.path.join(OUT, "context_proof_board")
        shutil.rmtree(work, ignore_errors=True)
        bin_dir, out_dir = os.path.join(work, "bin"), os.path.join(work, "out")
        os.makedirs(bin_dir)
        log = os.path.join(work, "calls.log")
        for name, text in (("nvidia-smi", f"#!/bin/sh\necho '{board}'\n"),
                           ("kvbench", f"#!/bin/sh\necho \"kvbench $*\" >>'{log}'\n")):
            write_stand_in(os.path.join(bin_dir, name), text)
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], GPU_NAME=gpu_name,
                   KVBENCH_BIN=bin_dir, OUT_DIR=out_dir, STAGES="none", PYTHON=sys.executable)
        done = subprocess.run(["bash", os.path.join(ROOT, "tools", "remote", "proof.sh"), "context"],
                              env=env, capture_output=True, text=True)
        return done, out_dir, log

    def test_another_board_runs_nothing(self):
        done, out_dir, log = self.run_proof("NVIDIA H100 80GB HBM3", "H200")
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertIn("GPU_NAME=H200, but this board is 'NVIDIA H100 80GB HBM3': nothing run",
                      done.stderr)
        self.assertFalse(os.path.exists(out_dir))
        self.assertFalse(os.path.exists(log))

    def test_the_named_board_goes_on(self):
        done, out_dir, log = self.run_proof("NVIDIA H200", "H200")
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(os.path.join(out_dir, "gpu.txt")) as f:
            self.assertIn("NVIDIA H200", f.read())
        with open(log) as f:
            self.assertEqual(f.read(), "kvbench --version\n")
        self.assertTrue(os.path.exists(os.path.join(out_dir, "context_proof.tgz")))


class SassSize(unittest.TestCase):
    """tools/sass_size.py on the built library: its kernels, 16 bytes an instruction."""

    def test_kernels_of_the_library(self):
        lib = os.path.join(os.path.dirname(KVBENCH), "libkvbench.so")
        tool = os.path.join(ROOT, "tools", "sass_size.py")
        done = subprocess.run([sys.executable, tool, lib, "--match", r"empty_kernel\(\)"],
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        self.assertEqual(len(lines), 1, done.stdout)
        size, _, instr = lines[0].split()[:3]
        self.assertEqual(int(size) // 16, int(instr))
        self.assertGreater(int(instr), 0)
        self.assertIn("sm_", lines[0])
        done = subprocess.run([sys.executable, tool, lib, "--match", "no_such_kernel"],
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 1)
        self.assertIn("no kernel matching 'no_such_kernel'", done.stderr)


class ContextTargets(unittest.TestCase):
    """tools/perf_targets.py on a run after a producer that holds both variants: the in-context
    targets only, their figures those of the CSV."""

    CSV = os.path.join(ROOT, "results", "h100", "context", "after_producer_cupti.csv")

    def test_triton_in_the_same_context(self):
        done = subprocess.run([sys.executable, PERF_TARGETS, self.CSV, "--triton", self.CSV],
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(self.CSV, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["status"] == "passed"]
        key = lambda r: tuple(r[c] for c in r if c in (
            "kernel", "sweep", "num_tokens", "num_heads", "head_dim", "rope_dim", "block_size",
            "in_dtype", "out_dtype", "layout", "scale", "swa", "kv_interleaved", "strides", "slots"))
        tri = {key(r): float(r["median_us"]) for r in rows if r["variant"] == "triton"}
        ratios = [tri[key(r)] / float(r["median_us"]) for r in rows
                  if r["variant"] == "optimized" and key(r) in tri and int(r["num_tokens"]) <= 128]
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        faster, ties = sum(x > 1 for x in ratios), sum(x == 1 for x in ratios)
        out = done.stdout
        self.assertIn(f"| faster than the seed's Triton | {faster}/{len(ratios)} hold ({ties} tie) |",
                      out)
        self.assertIn(f"| geometric mean over the seed's Triton at least 1.5x | {len(ratios)} cases "
                      f"| | {geo:.3f}x | {'yes' if geo >= 1.5 else 'no'} |", out)
        self.assertNotIn("launch floor (", out)  # no unrotated targets for a run in context
        tri_mean = {key(r): float(r["mean_us"]) for r in rows if r["variant"] == "triton"}
        by_mean = [tri_mean[key(r)] / float(r["mean_us"]) for r in rows
                   if r["variant"] == "optimized" and key(r) in tri_mean
                   and int(r["num_tokens"]) <= 128]
        self.assertEqual(len(by_mean), len(ratios))
        self.assertIn(f"| faster than the seed's Triton, by the mean of the samples | "
                      f"{sum(x > 1 for x in by_mean)}/{len(by_mean)} hold |", out)
        self.assertIn(f"| geometric mean over the seed's Triton at least 1.5x, by the mean of the samples "
                      f"| {len(by_mean)} cases "
                      f"| | {math.exp(sum(map(math.log, by_mean)) / len(by_mean)):.3f}x |", out)

    def test_plain_move_by_the_mean(self):
        # The committed bounds' `plain_move_mean_us` against the run's mean_us: the by-the-mean
        # row; a copy without the column (a CSV of an earlier build) has no such row.
        bounds = os.path.join(ROOT, "results", "h100", "context", "bounds_after_producer_cupti.csv")
        os.makedirs(OUT, exist_ok=True)
        without = os.path.join(OUT, "bounds_without_mean.csv")
        with open(bounds, newline="") as f:
            rows = list(csv.DictReader(f))
        with open(without, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=[c for c in rows[0] if c != "plain_move_mean_us"],
                               lineterminator="\n", extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
        with open(self.CSV, newline="") as f:
            means = {tuple(r[c] for c in KEY_COLUMNS): float(r["mean_us"])
                     for r in csv.DictReader(f) if r["status"] == "passed" and r["mean_us"]}
        over = [means[tuple(r[c] for c in KEY_COLUMNS)] - float(r["plain_move_mean_us"])
                for r in rows if int(r["num_tokens"]) <= 128]
        self.assertEqual(len(over), 138)
        label = "| within 0.3 µs of its plain-move reference, by the mean of the samples |"
        for given, expected in ((without, None), (bounds, over)):
            done = subprocess.run([sys.executable, PERF_TARGETS, self.CSV, "--bounds", given],
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            if expected is None:
                self.assertNotIn(label, done.stdout)
                self.assertIn("| within 0.3 µs of its plain-move reference |", done.stdout)
                continue
            line = next(x for x in done.stdout.splitlines() if x.startswith(label))
            held = sum(x <= 0.3 for x in expected)
            self.assertIn(f" {held}/{len(expected)} hold |", line)
            self.assertIn(f"| {max(expected):+.3f} µs |", line)


class PerfReport(unittest.TestCase):
    """scripts/perf_report.py and tools/perf_targets.py on the committed H200 perf run: their
    tables carry the CSV's numbers."""

    CSV = os.path.join(ROOT, "results", "h200", "perf.csv")

    @classmethod
    def setUpClass(cls):
        done = subprocess.run([sys.executable, PERF_REPORT, cls.CSV], capture_output=True, text=True)
        if done.returncode != 0:
            raise AssertionError(f"perf_report.py exit {done.returncode}: {done.stderr}")
        cls.lines = done.stdout.splitlines()
        done = subprocess.run([sys.executable, PERF_TARGETS, cls.CSV, "--peers"], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise AssertionError(f"perf_targets.py exit {done.returncode}: {done.stderr}")
        cls.target_lines = done.stdout.splitlines()
        with open(cls.CSV, newline="") as f:
            cls.rows = list(csv.DictReader(f))

    def cell(self, title, shape, tokens):
        """The cell of `shape`'s row under column T=`tokens` in the table headed `title`."""
        header = [i for i, line in enumerate(self.lines) if line.startswith(f"| {title} |")]
        self.assertEqual(len(header), 1, title)
        columns = [c.strip() for c in self.lines[header[0]].strip("|").split("|")]
        for line in self.lines[header[0] + 2:]:
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[0] == shape:
                return cells[columns.index(f"T={tokens}")]
        self.fail(f"no row {shape!r} in table {title!r}")

    def csv_row(self, variant, **axes):
        found = [r for r in self.rows if r["variant"] == variant and all(r[k] == v for k, v in axes.items())]
        self.assertEqual(len(found), 1, (variant, axes))
        return found[0]

    def test_summary_line_and_targets_table(self):
        with open(self.CSV + ".json") as f:
            peak = json.load(f)["measured_peak_gbps"]
        passed = sum(r["status"] == "passed" for r in self.rows)
        self.assertEqual(self.lines[0].split(";")[0], f"{len(self.rows)} rows, {passed} passed")
        self.assertIn(f"measured copy peak {peak:.0f} GB/s", self.lines[0])
        self.assertEqual(self.target_lines[0], self.lines[0])
        self.assertIn("| target | cases | worst case | value | holds |", self.target_lines)
        self.assertTrue(any(line.startswith("| optimized never slower than seed_port |")
                            for line in self.target_lines))
        self.assertFalse(any(line.startswith("| target") for line in self.lines))

    def test_cells_equal_the_csv(self):
        checks = [
            ("cache: µs seed_port → optimized (% of copy peak)", "cache H=8 D=128 BS=16 bf16->bf16 nhd",
             dict(sweep="cache_d128", num_heads="8", head_dim="128", block_size="16",
                  num_tokens="131072")),
            ("concat: µs seed_port → optimized (% of copy peak)", "concat H=128 bf16->fp8_e4m3 sglang",
             dict(sweep="concat_bf16_fp8", num_heads="128", strides="sglang", num_tokens="8192")),
        ]
        for title, shape, axes in checks:
            seed = self.csv_row("seed_port", **axes)
            opt = self.csv_row("optimized", **axes)
            m = re.fullmatch(r"([0-9.]+) → \*\*([0-9.]+)\*\* \(([0-9]+\.[0-9])%\)",
                             self.cell(title, shape, axes["num_tokens"]))
            self.assertIsNotNone(m, shape)
            self.assertEqual(float(m.group(1)), round(float(seed["median_us"]), 1), shape)
            self.assertEqual(float(m.group(2)), round(float(opt["median_us"]), 2), shape)
            self.assertEqual(float(m.group(3)), round(float(opt["pct_of_measured_peak"]), 1), shape)

    def test_floor_misses_against_the_model(self):
        """Every T <= 128 miss, recomputed from the CSV: its shape's T=1 row (same sweep and
        axes), bytes at the measured peak, their sum, and the summary line's counts."""
        with open(self.CSV + ".json") as f:
            meta = json.load(f)
        bar = meta["launch_floor_us"]["graph"]["median_us"] + 0.5
        peak = meta["measured_peak_gbps"]
        opt = [r for r in self.rows if r["variant"] == "optimized" and r["status"] == "passed"]
        axes = [c for c in KEY_COLUMNS if c not in ("variant", "num_tokens")]  # a shape
        one = {tuple(r[c] for c in axes): float(r["median_us"]) for r in opt if r["num_tokens"] == "1"}
        expected, above, faster = [], 0, 0
        for r in opt:
            us = float(r["median_us"])
            if int(r["num_tokens"]) > 128 or us <= bar:
                continue
            t1, xfer = one[tuple(r[c] for c in axes)], float(r["bytes"]) / (peak * 1e3)
            above += t1 + xfer > bar
            faster += us < t1 + xfer
            expected.append([r["num_tokens"], f"{us:.2f}", f"{t1:.2f}", f"{xfer:.2f}",
                             f"{t1 + xfer:.2f}", f"{us - t1 - xfer:+.2f}"])
        title = [i for i, line in enumerate(self.target_lines) if line.startswith("| T ≤ 128 miss (bar ")]
        self.assertEqual(len(title), 1)
        table = []
        for line in self.target_lines[title[0] + 2:]:
            if not line.startswith("|"):
                break
            table.append([c.strip() for c in line.strip("|").split("|")][1:])
        self.assertGreater(len(expected), 0)
        self.assertEqual(sorted(table), sorted(expected))
        summary = [line for line in self.target_lines if " misses: " in line]
        self.assertEqual(len(summary), 1)
        head = f"{len(expected)} misses: {above} have T=1 + bytes above the bar"
        below = len(expected) - above  # the clause is left out when none is below
        self.assertTrue(summary[0].startswith(head + (f", {below} below it" if below else ";")),
                        summary[0])
        self.assertIn(f"; {faster} run faster than T=1 + bytes", summary[0])


class PerfReportBounds(unittest.TestCase):
    """perf_targets.py --bounds: the committed `kvbench bounds` run beside the small cases it was
    timed with."""

    CSV = os.path.join(ROOT, "results", "h200", "perf_small.csv")
    BOUNDS = os.path.join(ROOT, "results", "h200", "bounds.csv")

    def report(self, *extra):
        return subprocess.run([sys.executable, PERF_TARGETS, self.CSV, *extra], capture_output=True,
                              text=True)

    def test_floor_cells_and_counts_equal_the_bounds_csv(self):
        done = self.report("--bounds", self.BOUNDS)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        with open(self.BOUNDS, newline="") as f:
            bounds = {(r["sweep"], r["num_tokens"], r["num_heads"], r["head_dim"], r["in_dtype"],
                       r["out_dtype"], r["layout"], r["scale"], r["swa"], r["strides"],
                       r["block_size"]): r
                      for r in csv.DictReader(f) if r["variant"] == "optimized"}
        with open(self.CSV + ".json") as f:
            bar = json.load(f)["launch_floor_us"]["graph"]["median_us"] + 0.5
        with open(self.CSV, newline="") as f:
            misses = [r for r in csv.DictReader(f) if r["variant"] == "optimized"
                      and r["status"] == "passed" and float(r["median_us"]) > bar]
        expected, write_over, move_over = [], 0, 0
        for r in misses:
            b = bounds[(r["sweep"], r["num_tokens"], r["num_heads"], r["head_dim"], r["in_dtype"],
                        r["out_dtype"], r["layout"], r["scale"], r["swa"], r["strides"],
                        r["block_size"])]
            own_bar = float(b["launch_floor_us"]) + 0.5
            write_over += float(b["write_floor_us"]) > own_bar
            move_over += float(b["move_floor_us"]) > own_bar
            expected.append((r["num_tokens"], f"{float(r['median_us']):.2f}",
                             f"{float(b['write_floor_us']):.2f}", f"{float(b['move_floor_us']):.2f}"))
        title = [i for i, line in enumerate(lines) if line.startswith("| T ≤ 128 miss (bar ")]
        self.assertEqual(len(title), 1, done.stdout)
        table = []
        for line in lines[title[0] + 2:]:
            if not line.startswith("|"):
                break
            c = [x.strip() for x in line.strip("|").split("|")]
            table.append((c[1], c[2], c[-2], c[-1]))
        self.assertGreater(len(expected), 0)
        self.assertEqual(sorted(table), sorted(expected))
        summary = [line for line in lines if line.startswith("Floors (")]
        self.assertEqual(len(summary), 1)
        self.assertIn(f": {len(expected)} of {len(expected)} misses found; for {write_over} the "
                      f"fastest write", summary[0])
        self.assertIn(f"for {move_over} the fastest move", summary[0])

    def test_a_file_that_is_not_a_bounds_csv_is_refused_by_name(self):
        done = self.report("--bounds", self.CSV)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("perf_small.csv: not a kvbench bounds CSV (missing column launch_floor_us)",
                      done.stderr)


class PerfReportPerCase(unittest.TestCase):
    """--bounds, --triton, --previous: each optimized case against its plain-move reference, the
    seed's Triton
    and the previous run, on CSVs derived from the committed perf run with known ratios."""

    CSV = os.path.join(ROOT, "results", "h200", "perf.csv")

    def write(self, name, header, rows):
        path = os.path.join(OUT, name)
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        return path

    def run_report(self, *extra, script=PERF_REPORT):
        done = subprocess.run([sys.executable, script, self.CSV, *extra], capture_output=True,
                              text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_targets_carry_the_known_ratios(self):
        os.makedirs(OUT, exist_ok=True)
        with open(self.CSV, newline="") as f:
            reader = csv.DictReader(f)
            header, rows = reader.fieldnames, list(reader)
        opt = [r for r in rows if r["variant"] == "optimized" and r["status"] == "passed"]
        # Triton 1.5x slower everywhere but one case, where it is 0.9x (the worst).
        worst = opt[7]
        tri = [dict(r, variant="triton", median_us=f"{float(r['median_us']) * (0.9 if r is worst else 1.5):.3f}")
               for r in opt]
        triton = self.write("per_case_triton.csv", header, tri)
        # Bounds at 98% of each case's time, one at 90%.
        # This build's column name; test_a_miss_never_prints_as_the_target keeps the earlier one.
        bheader = KEY_COLUMNS + ["median_us", "launch_floor_us", "write_floor_us", "move_floor_us",
                                 "plain_move_us"]
        brows = [dict({c: r[c] for c in KEY_COLUMNS}, median_us=r["median_us"], launch_floor_us="0.6",
                      write_floor_us="", move_floor_us="1",
                      plain_move_us=f"{float(r['median_us']) * (0.9 if r is opt[3] else 0.98):.6f}")
                 for r in opt]
        bounds = self.write("per_case_bounds.csv", bheader, brows)
        out = self.run_report("--bounds", bounds, "--triton", triton, "--previous", self.CSV,
                              script=PERF_TARGETS)
        n = len(opt)
        self.assertIn(f"| at least 97% of its plain-move reference | {n - 1}/{n} hold |", out)
        self.assertIn("| 90.0% | no |", out)
        self.assertIn(f"| faster than the seed's Triton | {n - 1}/{n} hold |", out)
        self.assertIn("| 0.90x | no |", out)
        g = math.exp(((n - 1) * math.log(1.5) + math.log(0.9)) / n)
        self.assertIn(f"| {g:.3f}x | yes |", out)
        self.assertRegex(out, r"\| large \(>= 4x L2\) same or faster than the previous run \(5%\) \| "
                              r"(\d+)/\1 hold \|")
        report = self.run_report("--bounds", bounds, "--triton", triton, "--previous", self.CSV,
                                 "--cases")
        self.assertIn("| 1.000 |", report)  # this / previous of a run against itself
        self.assertNotIn("| target", report)
        # The summary's last row: every case, the geometric means and ranges of the ratios.
        last = [line for line in report.splitlines() if line.startswith("| all |")]
        self.assertEqual(len(last), 1, report[:500])
        cells = [c.strip() for c in last[0].strip("|").split("|")]
        self.assertEqual(cells[1], str(n))
        b = math.exp(((n - 1) * math.log(98.0) + math.log(90.0)) / n)
        self.assertEqual(cells[3], f"{b:.1f}% (90.0%–98.0%)")
        self.assertEqual(cells[4], f"{g:.2f}x (0.90x–1.50x)")
        self.assertEqual(cells[5], "1.000 (1.000–1.000)")

    def test_a_miss_never_prints_as_the_target(self):
        # One case at 96.96% of its plain move: one decimal would print it as 97.0%, the target.
        os.makedirs(OUT, exist_ok=True)
        with open(self.CSV, newline="") as f:
            opt = [r for r in csv.DictReader(f) if r["variant"] == "optimized" and r["status"] == "passed"]
        bheader = KEY_COLUMNS + ["median_us", "launch_floor_us", "write_floor_us", "move_floor_us",
                                 "bound_us"]
        brows = [dict({c: r[c] for c in KEY_COLUMNS}, median_us=r["median_us"], launch_floor_us="0.6",
                      write_floor_us="", move_floor_us="1",
                      bound_us=repr(float(r["median_us"]) * (0.9696 if r is opt[3] else 0.98)))
                 for r in opt]
        bounds = self.write("near_target_bounds.csv", bheader, brows)
        out = self.run_report("--bounds", bounds, script=PERF_TARGETS)
        n = len(opt)
        self.assertIn(f"| at least 97% of its plain-move reference | {n - 1}/{n} hold |", out)
        self.assertIn("| 96.96% | no |", out)
        self.assertNotIn("| 97.0% | no |", out)

    def test_rows_timed_otherwise_are_not_set_beside(self):
        # The seed's Triton of another context, floors of another board, a CSV without an
        # optimized row: one line naming both rows (or the file), exit 3.
        ctx = os.path.join(ROOT, "results", "h100", "context")
        os.makedirs(OUT, exist_ok=True)
        bounds = os.path.join(ctx, "bounds_after_producer_cupti.csv")
        other_board = os.path.join(OUT, "bounds_other_board.csv")
        with open(bounds, newline="") as f:
            rows = list(csv.DictReader(f))
        with open(other_board, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows([dict(r, device="NVIDIA H200") for r in rows])
        for args, message in (
                ([os.path.join(ctx, "back_to_back.csv"), "--triton", os.path.join(ctx, "cold.csv")],
                 r"cold.csv:\d+: context 'cold', but .*back_to_back.csv:\d+'s is 'back_to_back' "
                 r"\(--triton rows must be timed as the rows they are set beside\)"),
                ([os.path.join(ctx, "after_producer_cupti.csv"), "--bounds", other_board],
                 r"bounds_other_board.csv:2: device 'NVIDIA H200', but .*after_producer_cupti.csv:"
                 r"\d+'s is 'NVIDIA H100 80GB HBM3'"),
                ([os.path.join(ROOT, "results", "h100", "triton", "perf_rotated.csv"), "--triton",
                  os.path.join(ROOT, "results", "h100", "triton", "perf_rotated.csv")],
                 r"perf_rotated.csv: no passed row of variant optimized to set beside")):
            done = subprocess.run([sys.executable, PERF_REPORT] + args, capture_output=True,
                                  text=True)
            self.assertEqual(done.returncode, 3, done.stderr)
            self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
            self.assertRegex(done.stderr, r"^perf_report.py: .*" + message)
        # The same context and board: the tables.
        done = subprocess.run([sys.executable, PERF_REPORT, os.path.join(ctx, "after_producer_cupti.csv"),
                               "--bounds", bounds], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_bad_triton_csv_is_one_line_error(self):
        done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "perf_report.py"),
                               self.CSV, "--triton", os.path.join(DATA, "gate", "empty.csv")],
                              capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("not a result CSV for --triton", done.stderr)


class PerfReportPair(unittest.TestCase):
    """--pair: the tables of the committed slot_order run, optimized beside slot_order."""

    CSV = os.path.join(ROOT, "results", "h200", "slot_order.csv")

    def report(self, *extra):
        return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "perf_report.py"),
                               self.CSV, *extra], capture_output=True, text=True)

    def test_cells_equal_the_csv(self):
        done = self.report("--pair", "optimized,slot_order")
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        title = "| cache: µs optimized → slot_order (% of copy peak) |"
        header = [i for i, line in enumerate(lines) if line.startswith(title)]
        self.assertEqual(len(header), 1, done.stdout[:500])
        self.assertFalse(any(line.startswith("| concat:") for line in lines))  # no concat rows
        columns = [c.strip() for c in lines[header[0]].strip("|").split("|")]
        row = next(line for line in lines[header[0] + 2:]
                   if line.startswith("| cache H=8 D=80 BS=16 bf16->bf16 hnd |"))
        cell = [c.strip() for c in row.strip("|").split("|")][columns.index("T=32768")]
        with open(self.CSV, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["sweep"] == "cache_hnd_d80" and r["num_tokens"] == "32768"]
        us = {r["variant"]: float(r["median_us"]) for r in rows}
        m = re.fullmatch(r"([0-9.]+) → \*\*([0-9.]+)\*\* \(([0-9]+\.[0-9])%\)", cell)
        self.assertIsNotNone(m, cell)
        self.assertEqual(float(m.group(1)), round(us["optimized"], 1))
        self.assertEqual(float(m.group(2)), round(us["slot_order"], 2))

    def test_one_variant_csv_fills_every_cell(self):
        """A run of `optimized` alone (the rotated perf run): its cells, not empty ones."""
        csv_path = os.path.join(ROOT, "results", "h200", "rotated", "perf_rotated.csv")
        done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "perf_report.py"),
                               csv_path], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        header = [i for i, line in enumerate(lines) if line.startswith("| cache: µs optimized (% of copy peak) |")]
        self.assertEqual(len(header), 1, done.stdout[:500])
        columns = [c.strip() for c in lines[header[0]].strip("|").split("|")]
        row = next(line for line in lines[header[0] + 2:]
                   if line.startswith("| cache H=8 D=80 BS=16 bf16->bf16 hnd |"))
        cell = [c.strip() for c in row.strip("|").split("|")][columns.index("T=1024")]
        with open(csv_path, newline="") as f:
            us = next(float(r["median_us"]) for r in csv.DictReader(f)
                      if r["sweep"] == "cache_hnd_d80" and r["num_tokens"] == "1024")
        m = re.fullmatch(r"\*\*([0-9.]+)\*\* \(([0-9]+\.[0-9])%\)", cell)
        self.assertIsNotNone(m, cell)
        self.assertEqual(float(m.group(1)), round(us, 2))

    def test_bad_pair_is_one_line_error(self):
        done = self.report("--pair", "optimized")
        self.assertEqual(done.returncode, 3)
        self.assertIn("--pair: 'optimized' is not two variant names", done.stderr)


class BadInputIsExit3(unittest.TestCase):
    """plot.py and perf_report.py on a bad CSV, sidecar, flag or output: one line on stderr naming
    the file (line, column) or flag, exit 3, never a traceback and never the bad data read on
    (scripts/kvbench_schema.py reads every CSV). Inputs are written to a temporary folder."""

    SMOKE = os.path.join(ROOT, "results", "h200", "smoke.csv")

    def setUp(self):
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="kvbench_bad_input_")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def write(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    @staticmethod
    def read(path):
        with open(path, "rb") as f:
            return f.read()

    def smoke(self):
        return self.read(self.SMOKE)

    def run_script(self, script, *args, in_process=True):
        """The script's exit code, stdout and stderr; plot.py in this process unless asked (an
        exception it lets through fails the test as a traceback would), perf_report.py and
        plot.py with in_process=False as a command."""
        if script == "plot.py" and in_process:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = plot.main(list(args))
                except SystemExit as e:
                    code = e.code
            return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())
        return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script), *args],
                              capture_output=True, text=True)

    def assert_refused(self, done, message, one_line=True):
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        self.assertIn(message, done.stderr)
        if one_line:
            self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)

    def assert_every_reader_refuses(self, path, message, in_process=True):
        """perf_report.py CSV and --previous CSV, plot.py bandwidth CSV and compare BASE CSV."""
        out = os.path.join(self.tmp, "png")
        for script, args in (("perf_report.py", [path]),
                             ("perf_report.py", [self.SMOKE, "--previous", path]),
                             ("plot.py", ["bandwidth", path, "--out-dir", out]),
                             ("plot.py", ["compare", self.SMOKE, path, "--out-dir", out])):
            with self.subTest(script=script, args=args[:2]):
                done = self.run_script(script, *args, in_process=in_process)
                self.assert_refused(done, message)
                self.assertEqual(done.stdout, "")
        self.assertFalse(os.path.exists(out))

    def test_a_byte_that_is_not_utf8_is_named(self):
        lines = self.smoke().split(b"\n")
        lines[2] = lines[2].replace(b"NVIDIA", b"NVID\xffA", 1)
        path = self.write("latin.csv", b"\n".join(lines))
        column = lines[2].index(b"\xff") + 1
        self.assert_every_reader_refuses(path, f"latin.csv:3:{column}: byte 0xff is not UTF-8",
                                         in_process=False)

    def test_a_last_row_cut_short_is_refused(self):
        path = self.write("cut.csv", self.smoke()[:-50])  # head -c -50
        self.assert_every_reader_refuses(
            path, "cut.csv:65: no newline at the end of the last line (a row cut short?)")

    def test_a_file_of_one_carriage_return_has_no_header(self):
        # kvbench says "no header line" of it; the scripts said a row was cut short.
        path = self.write("cr.csv", b"\r")
        self.assert_every_reader_refuses(path, "cr.csv:1: no header line (is this a result CSV?)")

    def test_a_median_of_nan_or_below_zero_is_refused(self):
        for value in ("nan", "-1", "inf"):
            lines = self.smoke().split(b"\n")
            self.assertIn(b",43.920,43.920,", lines[1])
            lines[1] = lines[1].replace(b",43.920,43.920,", f",{value},43.920,".encode(), 1)
            path = self.write(f"median_{value}.csv", b"\n".join(lines))
            self.assert_every_reader_refuses(
                path, f"median_{value}.csv:2: column 'median_us': '{value}' is not a "
                      f"non-negative number")

    def edited(self, name, edit):
        """smoke.csv with edit(header, rows) applied to its rows (lists of fields), as `name`."""
        header, *rows = list(csv.reader(io.StringIO(self.smoke().decode())))
        edit(header, rows)
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([header] + rows)
        return self.write(name, out.getvalue().encode())

    def test_what_kvbench_refuses_across_rows_is_refused(self):
        """A median of 0, an integer key column in another notation, one case twice and rows of
        two GPU models: kvbench's readers refuse each, and so does every script."""
        def set_field(column, value, row=0):
            def edit(header, rows):
                rows[row][header.index(column)] = value
                if column == "median_us":
                    for c in ("p10_us", "min_us", "mean_us"):
                        rows[row][header.index(c)] = value
            return edit

        def duplicate(header, rows):
            rows.append(list(rows[0]))

        for name, edit, message in (
                ("zero.csv", set_field("median_us", "0"), "zero.csv:2: column 'median_us': 0 in a timed row"),
                ("tokens.csv", set_field("num_tokens", "1e3"), "tokens.csv:2: column 'num_tokens': '1e3' is not an integer"),
                ("twice.csv", duplicate, "twice.csv: lines 2 and 66 are one case"),
                ("two_gpus.csv", set_field("device", "NVIDIA H100 80GB HBM3", row=5),
                 "two_gpus.csv:7: column 'device' is 'NVIDIA H100 80GB HBM3', line 2's is 'NVIDIA H200'")):
            with self.subTest(name=name):
                self.assert_every_reader_refuses(self.edited(name, edit), message)

    def test_perf_report_without_a_peak_prints_the_times(self):
        """An optimized row without pct_of_measured_peak (no calibrated peak): no percent."""
        def no_pct(header, rows):
            for r in rows:
                r[header.index("pct_of_measured_peak")] = ""
        path = self.edited("nopct.csv", no_pct)
        done = self.run_script("perf_report.py", path)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("**", done.stdout)
        self.assertNotIn("%)", done.stdout)

    def test_plot_edges(self):
        """decode --max-tokens 0 keeps no size (it is not "no limit"); compare of medians whose
        ratio leaves a float's range is refused."""
        out = os.path.join(self.tmp, "png")
        done = self.run_script("plot.py", "decode", self.SMOKE, "--variants", "seed_port,optimized",
                               "--max-tokens", "0", "--out-dir", out)
        self.assert_refused(done, "no shape")
        big = self.edited("big.csv", lambda h, rows: [r.__setitem__(h.index(c), "1e300") for r in rows
                                                       if r[h.index("median_us")]
                                                       for c in ("median_us", "p90_us", "max_us", "mean_us")])
        small = self.edited("small.csv", lambda h, rows: [r.__setitem__(h.index(c), "1e-300") for r in rows
                                                           if r[h.index("median_us")]
                                                           for c in ("median_us", "p10_us", "min_us", "mean_us")])
        done = self.run_script("plot.py", "compare", small, big, "--out-dir", out)
        self.assert_refused(done, "a ratio beyond a float's range")

    def test_a_directory_is_not_a_csv(self):
        folder = os.path.join(self.tmp, "run.csv")
        os.mkdir(folder)
        self.assert_every_reader_refuses(folder, "run.csv: Is a directory")

    def test_lines_up_to_kvbench_limit_are_read(self):
        # A 200 KiB field (over the csv module's default 128 KiB) reads; a line over 1 MiB
        # (kvbench's kMaxResultLine) is refused by line number.
        lines = self.smoke().split(b"\n")
        self.assertIn(b",passed,,", lines[1])
        long_reason = lines[1].replace(b",passed,,", b",passed," + b"r" * (200 << 10) + b",", 1)
        path = self.write("long_reason.csv", b"\n".join([lines[0], long_reason] + lines[2:]))
        done = self.run_script("perf_report.py", path)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(done.stdout.startswith("64 rows, "), done.stdout[:200])
        self.assertEqual(plot.read_rows(path)[0]["reason"], "r" * (200 << 10))
        too_long = lines[1].replace(b",passed,,", b",passed," + b"r" * (1 << 20) + b",", 1)
        path = self.write("too_long.csv", b"\n".join([lines[0], too_long] + lines[2:]))
        self.assert_every_reader_refuses(path, "too_long.csv:2: line longer than 1048576 bytes")

    def test_a_csv_without_rows_is_refused_by_perf_report(self):
        for name, data in (("empty.csv", b""), ("header.csv", self.smoke().split(b"\n")[0] + b"\n")):
            path = self.write(name, data)
            self.assert_refused(self.run_script("perf_report.py", path),
                                f"{name}: not a result CSV (no rows)")

    def test_an_output_that_is_an_input_is_refused_unwritten(self):
        a = self.write("a.csv", self.read(os.path.join(DATA, "plot", "cuda.csv")))
        b = self.write("b.csv", self.read(os.path.join(DATA, "plot", "triton.csv")))
        sidecar = self.write("a.csv.json", self.read(os.path.join(DATA, "plot", "cuda.csv.json")))
        link = os.path.join(self.tmp, "link.png")
        os.symlink("b.csv", link)
        before = {p: self.read(p) for p in (a, b, sidecar)}
        for output, message in ((a, f"-o {a}: the same file as the input {a}"),
                                (b, f"-o {b}: the same file as the input {b}"),
                                (sidecar, f"-o {sidecar}: the same file as the input {sidecar}"),
                                (link, f"-o {link}: the same file as the input {b}")):
            with self.subTest(output=output):
                self.assert_refused(self.run_script("plot.py", "compare", a, b, "--ignore-variant",
                                                    "-o", output, in_process=False), message)
                self.assert_refused(self.run_script("plot.py", "decode", a, b, "--variants",
                                                    "seed_port,triton", "-o", output), message)
        self.assert_refused(self.run_script("plot.py", "compare", a, b, "--ignore-variant", "-o",
                                            os.path.join(self.tmp, "cmp.pdf")),
                            "cmp.pdf: not a .png")
        self.assertEqual({p: self.read(p) for p in before}, before)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["a.csv", "a.csv.json", "b.csv", "link.png"])

    def test_a_bad_sidecar_is_refused(self):
        a = self.write("a.csv", self.read(os.path.join(DATA, "plot", "cuda.csv")))
        out = os.path.join(self.tmp, "png")
        for text, message in (("[1]", "a.csv.json: not a JSON object"),
                              ('{"measured_peak_gbps": -5}',
                               "a.csv.json: key 'measured_peak_gbps': -5 is not a non-negative "
                               "number"),
                              ('{"measured_peak_gbps": NaN}', "key 'measured_peak_gbps': NaN"),
                              ('{"theoretical_peak_gbps": "4800"}',
                               "key 'theoretical_peak_gbps': \"4800\""),
                              ('{"theoretical_peak_gbps": true}', "key 'theoretical_peak_gbps': true"),
                              ("{", "a.csv.json: not JSON")):
            with self.subTest(sidecar=text):
                self.write("a.csv.json", text.encode())
                self.assert_refused(self.run_script("plot.py", "bandwidth", a, "--out-dir", out),
                                    message)
        self.assertFalse(os.path.exists(out))
        smoke = self.write("smoke.csv", self.smoke())
        self.write("smoke.csv.json", b"[1]")
        self.assert_refused(self.run_script("perf_report.py", smoke),
                            "smoke.csv.json: not a JSON object")
        # No sidecar, or one without the peaks (older runs): plotted, without the peak lines.
        self.write("a.csv.json", b'{"git_sha": "0123456789ab"}')
        self.assertEqual(plot.peaks(a, None, None), (None, None))
        os.remove(os.path.join(self.tmp, "a.csv.json"))
        self.assertEqual(plot.peaks(a, None, None), (None, None))

    def test_bad_flags_are_exit_3(self):
        csv_path = os.path.join(DATA, "plot", "cuda.csv")
        out = os.path.join(self.tmp, "png")
        for flag, value in (("--peak-gbps", "nan"), ("--peak-gbps", "-1"),
                            ("--theoretical-gbps", "inf")):
            with self.subTest(flag=flag, value=value):
                done = self.run_script("plot.py", "bandwidth", csv_path, "--out-dir", out,
                                       f"{flag}={value}")
                self.assert_refused(done, f"argument {flag}: '{value}' is not a finite number "
                                          f"above 0", one_line=False)
                self.assertRegex(done.stderr, r"^usage: \S+ bandwidth ")
        self.assertFalse(os.path.exists(out))
        self.assert_refused(self.run_script("plot.py", "bogus"), "invalid choice: 'bogus'",
                            one_line=False)
        self.assert_refused(self.run_script("perf_report.py", self.SMOKE, "--bogus"),
                            "unrecognized arguments: --bogus", one_line=False)


class RotateProof(unittest.TestCase):
    """`tools/remote/proof.sh rotate`'s plumbing, with stand-ins for the GPU binaries and for
    torch: which cases each stage runs, with which flags, and the table it prints last."""

    FAKE_KVBENCH = """#!/usr/bin/env bash
echo "$@" >>"$FAKE_LOG"
case "$1" in
  --version) echo "kvbench 0.0.0 (git fake)";;
  list|schema) exec "$REAL_KVBENCH" "$@";;
  run|bounds)
    out=""; prev=""
    for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
    "$FAKE_PY_REAL" "$FAKE_ROWS" "$1" "$out";;
esac
"""
    FAKE_ROWS = """import csv, os, subprocess, sys
kind, out = sys.argv[1], sys.argv[2]
with open("results/h200/perf.csv", newline="") as f:
    reader = csv.DictReader(f)
    rows = [r for r in reader if r["status"] == "passed"]
    header = reader.fieldnames
if kind == "bounds":
    key = subprocess.check_output([os.environ["REAL_KVBENCH"], "schema", "--case-key"],
                                  text=True).strip().split(",")
    header = key + ["median_us", "launch_floor_us", "write_floor_us", "move_floor_us", "bound_us"]
    rows = [dict({c: r[c] for c in key}, median_us=r["median_us"], launch_floor_us="0.6",
                 write_floor_us="", move_floor_us="1", bound_us=f"{float(r['median_us']) * 0.99:.4f}")
            for r in rows if r["variant"] == "optimized"]
elif kind == "triton":
    rows = [dict(r, variant="triton", median_us=f"{float(r['median_us']) * 1.5:.3f}")
            for r in rows if r["variant"] == "optimized"]
with open(out, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore", lineterminator="\\n")
    w.writeheader()
    w.writerows(rows)
"""
    FAKE_PYTHON = """#!/usr/bin/env bash
echo "python $*" >>"$FAKE_LOG"
[ "$1" = -c ] && exit 1  # no matplotlib
[ "$1" = scripts/triton_baseline.py ] && [ "$2" = list ] && exec "$FAKE_PY_REAL" "$@"
if [ "$1" = scripts/triton_baseline.py ]; then
  out=""; prev=""
  for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
  exec "$FAKE_PY_REAL" "$FAKE_ROWS" triton "$out"
fi
"""

    def test_stages_flags_and_the_last_table(self):
        work = os.path.join(OUT, "rotate_proof")
        shutil.rmtree(work, ignore_errors=True)
        bin_dir, out_dir = os.path.join(work, "bin"), os.path.join(work, "out")
        os.makedirs(bin_dir)
        for name, text in (("kvbench", self.FAKE_KVBENCH), ("python", self.FAKE_PYTHON),
                           ("test_gpu", "#!/bin/sh\necho '[  PASSED  ] 2 tests.'\n"),
                           ("test_planted_gpu", "#!/bin/sh\necho '[  PASSED  ] 3 tests.'\n")):
            write_stand_in(os.path.join(bin_dir, name), text)
        rows = os.path.join(work, "rows.py")
        with open(rows, "w") as f:
            f.write(self.FAKE_ROWS)
        log = os.path.join(work, "calls.log")
        env = dict(os.environ, FAKE_LOG=log, REAL_KVBENCH=KVBENCH, FAKE_ROWS=rows,
                   KVBENCH_LIB=os.path.join(os.path.dirname(KVBENCH), "libkvbench.so"),
                   FAKE_PY_REAL=sys.executable, PYTHON=os.path.join(bin_dir, "python"),
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
                   KVBENCH_BIN=bin_dir, OUT_DIR=out_dir)
        proof = ["bash", os.path.join(ROOT, "tools", "remote", "proof.sh"), "rotate"]
        done = subprocess.run(proof, capture_output=True, text=True, env=env, cwd=ROOT)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        out = done.stdout
        for stage in ("gpu_tests", "perf_rotated", "bounds", "triton", "decode_cold",
                      "decode_hot_inputs", "decode_61"):
            self.assertIn(f"{stage}: rc=0", out)
        self.assertIn("== decode, cache write (optimized): median µs per layer", out)
        self.assertRegex(out, r"\ncache_d128 +8 +128 +16 +1 +[0-9.]+ +[0-9.]+ \( +1\) +[0-9.]+ +[0-9.]+\n")
        self.assertIn("| at least 97% of its plain-move reference |", out)
        self.assertIn("| faster than the seed's Triton |", out)
        self.assertTrue(os.path.exists(os.path.join(out_dir, "rotate_proof.tar")))
        self.assertTrue(os.path.exists(os.path.join(out_dir, "perf_rotated.csv")))
        with open(log) as f:
            calls = f.read().splitlines()
        listing = subprocess.run([KVBENCH, "list", "configs/perf.yaml", "--format", "csv"],
                                 capture_output=True, text=True, cwd=ROOT).stdout
        cases = list(csv.DictReader(listing.splitlines()))
        by_tokens = sorted(cases, key=lambda c: int(c["num_tokens"]))  # stable: list order within
        optimized = [c["case"] for c in by_tokens if c["variant"] == "optimized"]
        decode = [c["case"] for c in by_tokens if c["variant"] == "optimized" and
                  c["kernel"] == "reshape_and_cache_flash" and int(c["num_tokens"]) <= 128]

        def picked(call):
            words = call.split()
            return [words[i + 1] for i, w in enumerate(words) if w == "--case"]
        runs = [c for c in calls if c.startswith("run ")]
        self.assertEqual(len(runs), 4, runs)
        self.assertIn("--rotate auto", runs[0])
        self.assertEqual(picked(runs[0]), optimized)
        self.assertEqual([picked(r) for r in runs[1:]], [decode] * 3)
        self.assertIn("--hot-inputs", runs[2])
        self.assertIn("--rotate 61", runs[3])
        bounds = [c for c in calls if c.startswith("bounds ")]
        self.assertEqual(len(bounds), 1)
        self.assertIn("--variant optimized", bounds[0])
        triton = [c for c in calls if "triton_baseline.py" in c and " list " not in c]
        self.assertEqual(len(triton), 1)
        self.assertIn("--rotate auto", triton[0])
        # The adapter's cases (its own numbers: variant triton, of its two operations), fewest
        # tokens first.
        tri_listing = subprocess.run([sys.executable, "scripts/triton_baseline.py", "list",
                                      "configs/perf.yaml", "--format", "csv"],
                                     capture_output=True, text=True, cwd=ROOT, env=env).stdout
        tri = sorted(csv.DictReader(tri_listing.splitlines()), key=lambda c: int(c["num_tokens"]))
        self.assertEqual(picked(triton[0]), [c["case"] for c in tri])
        self.assertEqual(len(tri), len([c for c in cases if c["variant"] == "optimized" and
                                        c["kernel"] in TRITON_OPS]))

        # A second call with some stages: the others' CSVs come from OUT_DIR, the table from all.
        os.remove(log)
        env["STAGES"] = "decode"
        again = subprocess.run(proof, capture_output=True, text=True, env=env, cwd=ROOT)
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        with open(log) as f:
            second = [c for c in f.read().splitlines() if c.startswith(("run ", "bounds ")) or
                      "triton_baseline.py" in c]
        self.assertEqual(len(second), 3, second)  # the three decode runs only
        self.assertNotIn("perf_rotated: rc", again.stdout)
        self.assertIn("| faster than the seed's Triton |", again.stdout)
        self.assertIn("| at least 97% of its plain-move reference |", again.stdout)


class ABTable(unittest.TestCase):
    """`tools/remote/tables.py ab` (tools/remote/gpu_ab.sh's table) on the gate test's CSVs as two builds."""

    def setUp(self):
        self.dir = os.path.join(OUT, "ab")
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)

    def write(self, name, source, edit=None):
        with open(os.path.join(DATA, "gate", source), newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["status"] == "passed"]
        if edit:
            rows = edit(rows)
        with open(os.path.join(self.dir, name), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        return rows

    def table(self, *names):
        return subprocess.run([sys.executable, os.path.join(ROOT, "tools", "remote", "tables.py"), "ab", self.dir,
                               *names], capture_output=True, text=True)

    def test_ratios_are_the_medians_ratios(self):
        base = self.write("A.1.csv", "baseline.csv")
        self.write("A.2.csv", "baseline.csv")
        new = self.write("B.1.csv", "slower.csv")
        done = self.table("A", "B")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        lines = done.stdout.splitlines()
        self.assertEqual(lines[0], "| case | A | B | B/A | spread |")
        cases = [line for line in lines[2:] if line.startswith(("| concat ", "| cache "))]
        self.assertEqual(len(cases), len(base))
        for line, b, n in zip(cases, base, new):
            cells = [c.strip() for c in line.strip("|").split("|")]
            self.assertIn(f"num_tokens={b['num_tokens']}", cells[0])
            self.assertEqual(cells[1:4], [f"{float(b['median_us']):.3f}", f"{float(n['median_us']):.3f}",
                                          f"{float(n['median_us']) / float(b['median_us']):.3f}"])
        self.assertTrue(any(line.startswith(f"| **all** |  | {len(base)} | ") for line in lines))

    def test_gpu_ab_runs_builds_interleaved_and_packs(self):
        """tools/remote/gpu_ab.sh with two fake builds that write a gate CSV where kvbench run would."""
        fake = {}
        for name, source in (("A", "baseline.csv"), ("B", "slower.csv")):
            self.write(f"{name}.src.csv", source)
            fake[name] = os.path.join(self.dir, f"fake_{name}.sh")
            write_stand_in(fake[name],
                           f'#!/bin/sh\ncp "{self.dir}/{name}.src.csv" "$4"\necho "{name} done"\n')
        out = os.path.join(self.dir, "out")
        done = subprocess.run(["bash", os.path.join(ROOT, "tools", "remote", "gpu_ab.sh"),
                               os.path.join(ROOT, "configs", "smoke.yaml"), f"A={fake['A']}",
                               f"B={fake['B']}"], capture_output=True, text=True,
                              env=dict(os.environ, OUT_DIR=out, ROUNDS="2"))
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        runs = [line.split(":")[0] for line in done.stdout.splitlines() if " round " in line]
        self.assertEqual(runs, ["A round 1", "B round 1", "B round 2", "A round 2"])
        with open(os.path.join(out, "table.md")) as f:
            self.assertTrue(f.readline().startswith("| case | A | B | B/A | spread |"))
        self.assertEqual(sorted(os.listdir(out)), ["ab.tar", "table.md"])
        with tarfile.open(os.path.join(out, "ab.tar")) as tar:
            self.assertEqual(sorted(tar.getnames()),
                             ["ab"] + [f"ab/{n}.{r}.{x}" for n in "AB" for r in (1, 2)
                                       for x in ("csv", "log")] + ["ab/table.md"])
        bad = subprocess.run(["bash", os.path.join(ROOT, "tools", "remote", "gpu_ab.sh"),
                              os.path.join(ROOT, "configs", "smoke.yaml"), f"A={fake['A']}",
                              f"A={fake['B']}"], capture_output=True, text=True)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("NAME A given twice", bad.stderr)

    def test_failed_or_missing_cases_fail_it(self):
        self.write("A.1.csv", "baseline.csv")

        def incorrect(rows):
            rows[0]["status"], rows[0]["median_us"] = "incorrect", ""
            return rows[:-1]
        self.write("B.1.csv", "baseline.csv", incorrect)
        done = self.table("A", "B")
        self.assertEqual(done.returncode, 1)
        self.assertIn("B.1.csv: ", done.stdout)
        self.assertIn(": incorrect", done.stdout)
        self.assertIn(": missing", done.stdout)

    def test_no_csv_is_usage_error(self):
        done = self.table("nothing")
        self.assertEqual(done.returncode, 2)
        self.assertIn("no nothing.N.csv in", done.stderr)


class ResultsSidecars(unittest.TestCase):
    """tools/results_sidecars.py check: passes on a tree whose CSVs all have a full sidecar, and
    names each problem of a tree that has not."""

    TOOL = os.path.join(ROOT, "tools", "results_sidecars.py")

    def tree(self, name, sidecars):
        root = os.path.join(OUT, "sidecars", name)
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(os.path.join(root, "results", "h200"))
        os.makedirs(os.path.join(root, "configs"))
        with open(os.path.join(root, "configs", "smoke.yaml"), "w") as f:
            f.write("sweeps: []\n")
        for csv_name, doc in sidecars.items():
            path = os.path.join(root, "results", "h200", csv_name)
            with open(path, "w") as f:
                f.write("kernel,variant\n")
            if doc is not None:
                with open(path + ".json", "w") as f:
                    json.dump(doc, f)
        return root

    def check(self, root):
        return subprocess.run([sys.executable, self.TOOL, "check", root], capture_output=True,
                              text=True)

    @staticmethod
    def good(csv_name, **changes):
        doc = {"git_sha": "0123456789ab", "config": {"path": "configs/smoke.yaml", "fnv1a64": "00"},
               "csv": f"results/h200/{csv_name}",
               "device": {"name": "NVIDIA H200", "uuid": "GPU-00000000-0000-0000-0000-000000000000"}}
        doc.update(changes)
        return doc

    def test_put_makes_the_csv_path_the_repositorys(self):
        root = self.tree("put", {})
        src = os.path.join(OUT, "sidecars", "run.csv")
        with open(src, "w") as f:
            f.write("kernel,variant\n")
        with open(src + ".json", "w") as f:
            json.dump(self.good("x.csv", csv="/root/out/run.csv"), f)
        dest = os.path.join(root, "results", "h200", "context", "run.csv")
        done = subprocess.run([sys.executable, self.TOOL, "put", src, dest, "--root", root],
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        with open(dest + ".json") as f:
            self.assertEqual(json.load(f)["csv"], "results/h200/context/run.csv")
        self.assertEqual(self.check(root).returncode, 0)
        # An absolute path elsewhere in the sidecar is named, not rewritten.
        with open(src + ".json", "w") as f:
            json.dump(self.good("x.csv", plugins=["/opt/p.so"]), f)
        done = subprocess.run([sys.executable, self.TOOL, "put", src, dest, "--root", root],
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 1)
        self.assertIn("plugins[0] is an absolute path ('/opt/p.so')", done.stdout)

    def test_a_full_tree_passes(self):
        done = self.check(self.tree("good", {"a.csv": self.good("a.csv")}))
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertIn("1 result CSVs, 0 problem(s)", done.stdout)

    def test_each_problem_is_named(self):
        unknown = self.good("c.csv", device={"name": "NVIDIA H200", "uuid": None})
        explained = self.good("d.csv", device={"name": "NVIDIA H200", "uuid": None},
                              notes=["device.uuid: not recorded by the tool that wrote it"])
        root = self.tree("bad", {
            "a.csv": None,
            "b.csv": self.good("b.csv", csv="/somewhere/else/b.csv"),
            "c.csv": unknown,
            "d.csv": explained,
            "e.csv": self.good("e.csv", config={"path": "gone.yaml", "fnv1a64": "00"}),
            "f.csv": {k: v for k, v in self.good("f.csv").items() if k != "git_sha"},
        })
        done = self.check(root)
        self.assertEqual(done.returncode, 1, done.stdout)
        out = done.stdout
        self.assertIn("results/h200/a.csv: no sidecar results/h200/a.csv.json", out)
        self.assertIn("results/h200/b.csv.json: csv is an absolute path ('/somewhere/else/b.csv')", out)
        self.assertIn("results/h200/c.csv.json: device.uuid is empty and no note says why", out)
        self.assertNotIn("d.csv", out)
        self.assertIn("results/h200/e.csv.json: config.path 'gone.yaml' is not a file of the "
                      "repository", out)
        self.assertIn("results/h200/f.csv.json: missing key git_sha", out)


class PerfDoc(unittest.TestCase):
    """tools/perf_doc.py: a generated section that differs from its command's output fails
    --check with a diff; --write makes it equal; a command that is not a repository script is
    refused."""

    TOOL = os.path.join(ROOT, "tools", "perf_doc.py")
    COMMAND = "python3 scripts/perf_report.py results/h200/smoke.csv"

    def doc(self, body):
        path = os.path.join(OUT, "perf_doc", "doc.md")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(body)
        return path

    def tool(self, *args):
        return subprocess.run([sys.executable, self.TOOL, *args], capture_output=True, text=True,
                              env=dict(os.environ, KVBENCH=KVBENCH))

    def test_a_changed_cell_fails_until_rewritten(self):
        printed = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "perf_report.py"),
                                  os.path.join(ROOT, "results", "h200", "smoke.csv")],
                                 capture_output=True, text=True, env=dict(os.environ, KVBENCH=KVBENCH),
                                 check=True).stdout.strip("\n")
        cell = re.search(r"\*\*([0-9.]+)\*\*", printed).group(1)
        typed = printed.replace(f"**{cell}**", f"**{float(cell) + 1:.2f}**", 1)
        path = self.doc(f"# t\n\n<!-- generated: {self.COMMAND} -->\n\n{typed}\n\n"
                        "<!-- end generated -->\n\nprose\n")
        done = self.tool("--check", path)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        changed = [(a, b) for a, b in zip(typed.splitlines(), printed.splitlines()) if a != b]
        self.assertEqual(len(changed), 1)
        self.assertIn(f"-{changed[0][0]}\n+{changed[0][1]}\n", done.stdout)
        self.assertIn("1 generated sections, 1 differ", done.stdout)
        self.assertEqual(self.tool("--write", path).returncode, 0)
        done = self.tool("--check", path)
        self.assertEqual(done.returncode, 0, done.stdout)
        with open(path) as f:
            text = f.read()
        self.assertIn(printed, text)
        self.assertTrue(text.endswith("<!-- end generated -->\n\nprose\n"))

    def test_only_repository_scripts_run(self):
        path = self.doc("<!-- generated: sh -c true -->\n<!-- end generated -->\n")
        done = self.tool("--check", path)
        self.assertEqual(done.returncode, 2)
        self.assertIn("'sh -c true' is not `python3 scripts/X.py ...`", done.stderr)

    def test_an_unclosed_section_is_named(self):
        path = self.doc(f"x\n<!-- generated: {self.COMMAND} -->\n")
        done = self.tool("--check", path)
        self.assertEqual(done.returncode, 2)
        self.assertIn(":2: generated section without '<!-- end generated -->'", done.stderr)


class GpuSass(unittest.TestCase):
    """tools/remote/gpu_sass.sh with a fake cuobjdump that prints two small functions."""
    SASS = """
\t\tFunction : _Z4copyILb1EEvPf
        /*0000*/                   LDC R1, c[0x0][0x28] ;        /* 0x00000a00ff017b82 */
        /*0010*/                   ACQBULK ;                     /* 0x000000000000782e */
        /*0020*/                   LDG.E.128 R4, desc[UR6][R2.64] ;  /* 0x0000000602047981 */
        /*0030*/                   STG.E.128 desc[UR6][R8.64], R4 ;  /* 0x0000000408007986 */
        /*0040*/                   EXIT ;                        /* 0x000000000000794d */
\t\tFunction : _Z4copyILb0EEvPf
        /*0000*/                   LDG.E R4, desc[UR6][R2.64] ;  /* 0x0000000602047981 */
"""

    def setUp(self):
        self.dir = os.path.join(OUT, "gpu_sass")
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(os.path.join(self.dir, "bin"))
        with open(os.path.join(self.dir, "k.sass"), "w") as f:
            f.write(self.SASS)
        fake = os.path.join(self.dir, "bin", "cuobjdump")
        write_stand_in(fake,
                       f'#!/bin/sh\n[ "$1" = -sass ] && [ -f "$2" ] && cat "{self.dir}/k.sass"\n')
        self.obj = os.path.join(self.dir, "k.o")
        open(self.obj, "w").close()

    def sass(self, *args):
        env = dict(os.environ, OUT_DIR=os.path.join(self.dir, "out"),
                   PATH=os.path.join(self.dir, "bin") + os.pathsep + os.environ["PATH"])
        return subprocess.run(["bash", os.path.join(ROOT, "tools", "remote", "gpu_sass.sh"), *args],
                              capture_output=True, text=True, env=env)

    def test_skeleton_of_the_matching_function_only(self):
        done = self.sass(self.obj, "ILb1E")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.splitlines(), [
            "== _Z4copyILb1EEvPf", " /*0010*/ ACQBULK ;",
            " /*0020*/ LDG.E.128 R4, desc[UR6][R2.64] ;",
            " /*0030*/ STG.E.128 desc[UR6][R8.64], R4 ;", " /*0040*/ EXIT ;"])
        self.assertTrue(os.path.getsize(os.path.join(self.dir, "out", "k.o.sass.xz")) > 0)

    def test_a_pattern_without_match_fails_and_bad_usage_is_2(self):
        done = self.sass(self.obj, "copy", "nothing")
        self.assertEqual(done.returncode, 1)
        self.assertEqual(done.stdout.count("== "), 2)
        self.assertIn("no function matches nothing", done.stderr)
        self.assertEqual(self.sass(self.obj).returncode, 2)
        self.assertEqual(self.sass(os.path.join(self.dir, "none.o"), "copy").returncode, 2)


class PdlOrder(unittest.TestCase):
    """tools/remote/pdl_order.sh with a fake cuobjdump: a kernel that loads after its PDL wait, one
    that loads before it, and one without a wait (not counted)."""
    SASS = """
\t\tFunction : kafter
        /*0000*/                   ULDC.64 UR4, c[0x0][0x208] ;
        /*0010*/                   ACQBULK ;
        /*0020*/                   LDG.E.64 R4, desc[UR4][R2.64] ;
\t\tFunction : kbefore
        /*0000*/                   LDG.E.64.CONSTANT R4, desc[UR4][R2.64] ;
        /*0010*/                   LD.E R6, desc[UR4][R8.64] ;
        /*0020*/                   ACQBULK ;
\t\tFunction : knowait
        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;
"""

    def run_tool(self, sass, *args):
        d = os.path.join(OUT, "pdl_order")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.join(d, "bin"))
        with open(os.path.join(d, "k.sass"), "w") as f:
            f.write(sass)
        fake = os.path.join(d, "bin", "cuobjdump")
        write_stand_in(fake, f'#!/bin/sh\n[ "$1" = -sass ] && [ -f "$2" ] && cat "{d}/k.sass"\n')
        obj = os.path.join(d, "k.o")
        open(obj, "w").close()
        env = dict(os.environ, PATH=os.path.join(d, "bin") + os.pathsep + os.environ["PATH"])
        return subprocess.run(["bash", os.path.join(ROOT, "tools", "remote", "pdl_order.sh"),
                               *(args or (obj,))], capture_output=True, text=True, env=env)

    def test_a_load_before_the_wait_fails(self):
        done = self.run_tool(self.SASS)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertEqual(done.stdout.splitlines(), ["2\tkbefore", "0\tkafter"])
        self.assertIn("2 kernels with a PDL wait, 1 load before it", done.stderr)

    def test_every_load_after_the_wait_passes_and_bad_usage_is_2(self):
        done = self.run_tool(self.SASS.split("\t\tFunction : kbefore")[0])
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.splitlines(), ["0\tkafter"])
        self.assertEqual(self.run_tool(self.SASS, "/nonexistent.o").returncode, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
