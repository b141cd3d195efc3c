#!/usr/bin/env python3
"""CPU test of the Python package (python/kvbench, docs/python.md) over libkvbench.so: the
library exports only include/kvbench/host.h; importing the package needs neither torch nor the
library; a Python variant lists exactly the cases of kvbench's own variants of its operation;
bad names, clashes and unknown operations are refused with exit 3 and one line; `run` starts
its workers with this interpreter (kvbench.worker), which imports the variants' files (not as
__main__) and refuses a file that changed; the sidecar records each file as it records a plugin;
the callbacks turn a launch's exception into its message and a supports() reason into the
case's, whatever is raised (a KeyboardInterrupt also makes the command exit 130); names, whys and
operations C cannot take (a NUL, a lone surrogate, not a str), a library without the host API
and an argument that cannot be encoded are one line and exit 3, and an argument that is not
UTF-8 reaches kvbench as its bytes; Buffers expose __cuda_array_interface__ version 3 with byte
strides. Without a GPU a run ends with exit 4 and one line; with one (the GPU host), the same
test checks the rows instead.
Usage: test_python.py OUT_DIR KVBENCH LIBKVBENCH"""
import csv
import ctypes
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else "python_test_out")
KVBENCH = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "kvbench"))
LIB = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "libkvbench.so"))
SMOKE = os.path.join(ROOT, "configs", "smoke.yaml")
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ["KVBENCH_LIB"] = LIB
import kvbench  # noqa: E402
from kvbench import _abi  # noqa: E402

PROGRAM = """\
import os
import sys

import kvbench

{body}

if __name__ == "__main__":
    sys.exit(kvbench.main(sys.argv[1:]))
"""


def env(**extra):
    e = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), KVBENCH_LIB=LIB)
    e.pop("KVBENCH_WORKER", None)
    e.update(extra)
    return e


def program(name, body):
    """A Python program defining variants, written under OUT."""
    path = os.path.join(OUT, name + ".py")
    with open(path, "w") as f:
        f.write(PROGRAM.format(body=textwrap.dedent(body)))
    return path


def run_program(path, *args, **extra):
    return subprocess.run([sys.executable, path, *args], capture_output=True, text=True,
                          env=env(**extra), cwd=OUT, timeout=300)


def kvbench_cli(*args):
    return subprocess.run([KVBENCH, *args], capture_output=True, text=True, check=True).stdout


def one_line(test, done, code, pattern):
    test.assertEqual(done.returncode, code, done.stdout + done.stderr)
    lines = done.stderr.splitlines()
    test.assertEqual(len(lines), 1, done.stderr)
    test.assertRegex(lines[0], pattern)


VARIANT = """\
def supports(args):
    return None if args.num_tokens < 1000 else f"tokens {args.num_tokens}"

@kvbench.variant("pyvar", op="reshape_and_cache_flash", why="test variant", supports=supports)
def launch(args, stream):
    raise RuntimeError("launch refused on purpose")

@kvbench.variant("pyconcat", op="concat_and_cast_mha_k", why="test variant")
def launch_concat(args, stream):
    raise RuntimeError("launch refused on purpose")

if os.environ.get("MARK"):  # who imported this file, and as what
    with open(os.environ["MARK"], "a") as f:
        f.write(f"{__name__} {sys.argv[0]} {'kvbench.worker' in sys.modules}\\n")
"""


class Library(unittest.TestCase):
    def test_exports_only_the_host_api(self):
        if not shutil.which("nm"):
            self.skipTest("no nm")
        out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True,
                             check=True).stdout
        names = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
        self.assertEqual(names, ["kvbench_add_variant", "kvbench_main",
                                 "kvbench_set_worker_command"])

    def test_main_is_the_executables_command_line(self):
        done = subprocess.run([sys.executable, "-c", "import sys, kvbench; "
                               "sys.exit(kvbench.main(['schema']))"],
                              capture_output=True, text=True, env=env())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, kvbench_cli("schema"))
        done = subprocess.run([sys.executable, "-c", "import sys, kvbench; "
                               "sys.exit(kvbench.main(['lst']))"],
                              capture_output=True, text=True, env=env())
        one_line(self, done, 3, r"^kvbench: unknown subcommand 'lst'")

    def test_import_needs_no_torch_and_no_library(self):
        fake = os.path.join(OUT, "fake_torch")
        os.makedirs(fake, exist_ok=True)
        with open(os.path.join(fake, "torch.py"), "w") as f:
            f.write("raise ImportError('torch imported')\n")
        done = subprocess.run(
            [sys.executable, "-c", "import kvbench, sys; assert 'torch' not in sys.modules; "
             "print(kvbench.OPS['reshape_and_cache_flash'])"],
            capture_output=True, text=True,
            env=env(PYTHONPATH=fake + os.pathsep + os.path.join(ROOT, "python"),
                    KVBENCH_LIB=os.path.join(OUT, "none.so")))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "2")

    def test_missing_library_is_one_line(self):
        path = program("uses_missing_lib", VARIANT)
        missing = os.path.join(OUT, "no_such_libkvbench.so")
        done = run_program(path, "list", SMOKE, KVBENCH_LIB=missing)
        one_line(self, done, 3, "^kvbench: cannot load libkvbench.so: tried " + missing +
                 r" \(no such file\).*KVBENCH_LIB")

    def test_library_without_the_functions_is_one_line(self):
        """Another shared object (or a stale libkvbench.so): its path and what it lacks."""
        import _ctypes
        other = getattr(_ctypes, "__file__", None)
        if not other or not other.endswith(".so"):
            self.skipTest("_ctypes is built into " + sys.executable)
        path = program("uses_other_lib", VARIANT)
        done = run_program(path, "list", SMOKE, KVBENCH_LIB=other)
        one_line(self, done, 3, "^kvbench: cannot load libkvbench.so: tried " + other +
                 r" \(no kvbench_main, kvbench_add_variant, kvbench_set_worker_command: not "
                 r"libkvbench.so, or one older than this package\); .*KVBENCH_LIB$")


class Arguments(unittest.TestCase):
    """kvbench.main's arguments reach kvbench as bytes, as the executable's do."""

    def test_argument_not_utf8_is_its_bytes(self):
        config = os.path.join(os.fsencode(OUT), b"\xff.yaml")
        shutil.copyfile(SMOKE, config)
        path = program("not_utf8", VARIANT)
        done = run_program(path, "list", config, "--format", "csv")
        self.assertEqual(done.returncode, 0, done.stderr)
        own = subprocess.run([KVBENCH, "list", config, "--format", "csv"], capture_output=True,
                             text=True, check=True).stdout
        self.assertEqual(done.stdout, own)
        os.remove(config)  # gone: the line is kvbench's own, naming the same bytes
        done = subprocess.run([sys.executable, path, "list", config], capture_output=True,
                              env=env(), cwd=OUT)
        own = subprocess.run([KVBENCH, "list", config], capture_output=True)
        self.assertEqual((done.returncode, done.stderr), (3, own.stderr))
        self.assertIn(b"\xff.yaml", own.stderr)

    def test_argument_that_cannot_reach_c(self):
        for arg, problem in (("'x\\ud800'", r"'x\\ud800' cannot be encoded \(surrogates not "
                                            r"allowed\)"),
                             ("b'a\\0b'", r"b'a\\x00b' holds a NUL byte"),
                             ("'a\\0b'", r"'a\\x00b' holds a NUL byte"),
                             ("5", r"2 is int 5, not str or bytes"),
                             ("None", r"2 is NoneType None, not str or bytes")):
            done = subprocess.run([sys.executable, "-c", "import sys, kvbench; "
                                   f"sys.exit(kvbench.main(['list', {arg}]))"],
                                  capture_output=True, text=True, env=env())
            one_line(self, done, 3, "^kvbench: argument " + problem + "$")


class List(unittest.TestCase):
    """`list` through the package: the cases of kvbench's own variants, under the new name."""

    def listing(self, *args):
        return self.listing_of(SMOKE, *args)

    def listing_of(self, config, *args):
        rows = list(csv.reader(io.StringIO(kvbench_cli("list", config, "--format", "csv", *args))))
        return rows[0], rows[1:]

    def test_cases_are_kvbenchs(self):
        path = program("lists", VARIANT)
        done = run_program(path, "list", SMOKE, "--variants", "pyvar,pyconcat", "--format", "csv")
        self.assertEqual(done.returncode, 0, done.stderr)
        got = list(csv.reader(io.StringIO(done.stdout)))
        header, own = self.listing("--variants", "optimized")
        self.assertEqual(got[0], header)  # the binary's columns, in its order
        col = header.index("variant")
        kernel = header.index("kernel")
        rename = {"reshape_and_cache_flash": "pyvar", "concat_and_cast_mha_k": "pyconcat"}
        want = [r[:col] + [rename[r[kernel]]] + r[col + 1:] for r in own]
        self.assertGreater(len(want), 0)
        self.assertEqual(got[1:], want)
        self.assertEqual({r[kernel] for r in got[1:]}, set(rename))

    def test_plan_names_the_source_and_the_reason(self):
        path = program("plans", VARIANT)
        done = run_program(path, "list", SMOKE, "--variants", "pyvar", "--plan",
                           "--device-profile", "h200")
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = [line for line in done.stdout.splitlines() if " pyvar " in line]
        self.assertTrue(lines)
        for line in lines:
            tokens = int(line.split(" T=")[1].split()[0])
            if tokens < 1000:
                self.assertTrue(line.endswith("| none: a variant from plans.py"), line)
            else:
                self.assertTrue(line.endswith(f"| not supported: tokens {tokens}"), line)


    def test_supports_raising_base_exceptions(self):
        """SystemExit is the case's reason; KeyboardInterrupt too, and the command exits 130."""
        for raised, code, reason in (("SystemExit(5)", 0, "SystemExit: 5"),
                                     ("KeyboardInterrupt", 130, "KeyboardInterrupt")):
            path = program("raises_base", f"""\
                def supports(args):
                    raise {raised}

                @kvbench.variant("pyraise", op="reshape_and_cache_flash", supports=supports)
                def launch(args, stream):
                    pass
                """)
            done = run_program(path, "list", SMOKE, "--variants", "pyraise", "--plan",
                               "--device-profile", "h100")
            self.assertEqual(done.returncode, code, done.stderr)
            lines = [line for line in done.stdout.splitlines() if " pyraise " in line]
            self.assertTrue(lines, done.stdout)
            for line in lines:
                self.assertTrue(line.endswith(f"| not supported: supports() raised {reason}"),
                                line)
            if code:
                one_line(self, done, code, r"^kvbench: interrupted by KeyboardInterrupt in "
                         r"supports\(\) of variant 'pyraise' \(raises_base.py\)$")
            else:
                self.assertEqual(done.stderr, "")

    def test_supports_calling_os_exit(self):
        """os._exit in supports() does not end `list --plan` with exit 0 and no word: the case
        says so, and the command exits 3 naming the variant."""
        path = program("exits", """\
            import os

            def supports(args):
                os._exit(0)

            @kvbench.variant("pyexit", op="reshape_and_cache_flash", supports=supports)
            def launch(args, stream):
                pass
            """)
        done = run_program(path, "list", SMOKE, "--variants", "pyexit", "--plan",
                           "--device-profile", "h100")
        lines = [line for line in done.stdout.splitlines() if " pyexit " in line]
        self.assertTrue(lines and all(line.endswith(
            "| not supported: supports() called os._exit(0), which would end kvbench")
            for line in lines), done.stdout)
        one_line(self, done, 3, r"^kvbench: supports\(\) of variant 'pyexit' \(exits.py\) called "
                 r"os._exit\(0\), which would end kvbench; a supports\(\) returns its answer$")


class Example(unittest.TestCase):
    """examples/python/torch_concat.py (docs/python.md's example) registers and plans: every
    concat case of validation.yaml, the fp8 outputs not_supported with its reason."""

    def test_example_lists_every_concat_case(self):
        example = os.path.join(ROOT, "examples", "python", "torch_concat.py")
        config = os.path.join(ROOT, "configs", "validation.yaml")
        done = run_program(example, "list", config, "--variants", "torch_concat", "--plan",
                           "--device-profile", "h200")
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = [line for line in done.stdout.splitlines() if " torch_concat " in line]
        header, own = List().listing_of(config, "--variants", "optimized")
        concat = [r for r in own if r[header.index("kernel")] == "concat_and_cast_mha_k"]
        self.assertEqual(len(lines), len(concat))
        fp8 = [r for r in concat if r[header.index("out_dtype")].startswith("fp8")]
        refused = [line for line in lines if line.endswith(
            "| not supported: torch's fp8 casts do not saturate (SPEC.md §3 asks for satfinite)")]
        self.assertEqual(len(refused), len(fp8))
        self.assertGreater(len(fp8), 0)
        self.assertGreater(len(lines), len(fp8))
        for line in lines:
            if line not in refused:
                self.assertRegex(line, r"\| none: a variant from \S*examples/python/torch_concat\.py$")


class Refusals(unittest.TestCase):
    def test_bad_name(self):
        path = program("bad_name", """\
            @kvbench.variant("Bad-Name", op="reshape_and_cache_flash")
            def launch(args, stream):
                pass
            """)
        one_line(self, run_program(path, "list", SMOKE), 3,
                 r"^kvbench: bad_name.py: variant 'Bad-Name': a name is 1 to 32 of \[a-z0-9_\]$")

    def test_clash_with_kvbench(self):
        path = program("clash_own", """\
            @kvbench.variant("optimized", op="concat_and_cast_mha_k")
            def launch(args, stream):
                pass
            """)
        one_line(self, run_program(path, "list", SMOKE), 3,
                 r"^kvbench: clash_own.py: variant 'optimized' clashes with kvbench's own")

    def test_clash_between_variants(self):
        path = program("clash_twice", """\
            @kvbench.variant("twice", op="reshape_and_cache_flash")
            def launch(args, stream):
                pass

            @kvbench.variant("twice", op="reshape_and_cache_flash")
            def launch2(args, stream):
                pass
            """)
        one_line(self, run_program(path, "list", SMOKE), 3,
                 r"^kvbench: clash_twice.py: variant 'twice' clashes with the one it registered")

    def test_one_name_for_each_operation(self):
        """As kvbench's own `optimized`: one name, a variant of each operation."""
        path = program("one_name", """\
            @kvbench.variant("both", op="concat_and_cast_mha_k")
            def launch(args, stream):
                pass

            @kvbench.variant("both", op="reshape_and_cache_flash")
            def launch2(args, stream):
                pass
            """)
        done = run_program(path, "list", SMOKE, "--variants", "both", "--format", "csv")
        self.assertEqual(done.returncode, 0, done.stderr)
        got = list(csv.DictReader(io.StringIO(done.stdout)))
        own = list(csv.DictReader(io.StringIO(kvbench_cli("list", SMOKE, "--format", "csv",
                                                          "--variants", "optimized"))))
        self.assertEqual([(r["kernel"], r["variant"]) for r in got],
                         [(r["kernel"], "both") for r in own
                          if r["kernel"] in ("concat_and_cast_mha_k", "reshape_and_cache_flash")])
        self.assertEqual({r["kernel"] for r in got},
                         {"concat_and_cast_mha_k", "reshape_and_cache_flash"})

    def test_another_file_may_not_take_a_name(self):
        other = os.path.join(OUT, "other_owner.py")
        with open(other, "w") as f:
            f.write("import kvbench\n\n@kvbench.variant('taken', op='concat_and_cast_mha_k')\n"
                    "def launch(args, stream):\n    pass\n")
        path = program("takes", """\
            import other_owner

            @kvbench.variant("taken", op="reshape_and_cache_flash")
            def launch(args, stream):
                pass
            """)
        one_line(self, run_program(path, "list", SMOKE), 3,
                 r"^kvbench: takes.py: variant 'taken' clashes with the one registered by "
                 r"other_owner.py$")

    def test_unknown_operation(self):
        path = program("bad_op", """\
            @kvbench.variant("fine", op="concat_and_cache_mla")
            def launch(args, stream):
                pass
            """)
        one_line(self, run_program(path, "list", SMOKE), 3,
                 r"^kvbench: bad_op.py: variant 'fine': unknown operation 'concat_and_cache_mla' "
                 r"\(one of concat_and_cast_mha_k, reshape_and_cache_flash\)$")

    def test_name_with_nul(self):
        """C would see the name cut at the NUL: 'pyv'."""
        path = program("nul_name", """\
            @kvbench.variant("pyv\\0evil", op="reshape_and_cache_flash")
            def launch(args, stream):
                pass
            """)
        one_line(self, run_program(path, "list", SMOKE, "--variants", "pyv"), 3,
                 r"^kvbench: nul_name.py: variant 'pyv\\x00evil': a name is 1 to 32 of "
                 r"\[a-z0-9_\]$")

    def test_name_with_lone_surrogate(self):
        path = program("surrogate_name", """\
            @kvbench.variant("py\\udcffv", op="reshape_and_cache_flash")
            def launch(args, stream):
                pass
            """)
        one_line(self, run_program(path, "list", SMOKE), 3,
                 r"^kvbench: surrogate_name.py: variant 'py\\udcffv': a name is 1 to 32 of "
                 r"\[a-z0-9_\]$")

    def test_bad_why(self):
        for why, problem in (('"w\\udcff"', r"'w\\udcff': it is not valid UTF-8 \(a lone "
                                            r"surrogate\)"),
                             ('"w\\0x"', r"'w\\x00x': it holds a NUL"),
                             ("7", r"7: not a str \(int\)")):
            path = program("bad_why", f"""\
                @kvbench.variant("pyv", op="reshape_and_cache_flash", why={why})
                def launch(args, stream):
                    pass
                """)
            one_line(self, run_program(path, "list", SMOKE), 3,
                     r"^kvbench: bad_why.py: variant 'pyv': why " + problem + "$")

    def test_op_not_a_str(self):
        path = program("list_op", """\
            @kvbench.variant("pyv", op=["reshape_and_cache_flash"])
            def launch(args, stream):
                pass
            """)
        one_line(self, run_program(path, "list", SMOKE), 3,
                 r"^kvbench: list_op.py: variant 'pyv': unknown operation "
                 r"\['reshape_and_cache_flash'\] \(a list\) \(one of concat_and_cast_mha_k, "
                 r"reshape_and_cache_flash\)$")

    def test_name_not_a_str(self):
        path = program("int_name", """\
            @kvbench.variant(7, op="reshape_and_cache_flash")
            def launch(args, stream):
                pass
            """)
        one_line(self, run_program(path, "list", SMOKE), 3,
                 r"^kvbench: int_name.py: variant 7: a name is a str, not int$")

    def test_config_needs_the_variant(self):
        path = program("no_variants", "")
        one_line(self, run_program(path, "list", SMOKE, "--variants", "pyvar"), 3,
                 r"^kvbench: --variants: unknown variant 'pyvar'")

    def test_variant_defined_in_a_function(self):
        path = program("in_function", """\
            def define():
                @kvbench.variant("pyvar", op="reshape_and_cache_flash")
                def launch(args, stream):
                    pass

            define()
            """)
        one_line(self, run_program(path, "list", SMOKE, "--variants", "pyvar"), 3,
                 r"^kvbench: in_function.py: variant 'pyvar': define.<locals>.launch is defined "
                 r"inside a function; a variant is defined at its module's top level")

    def test_variant_defined_in_the_main_block(self):
        """The worker imports the file, which then defines no variant: named, not a mismatch."""
        path = program("in_main", """\
            if __name__ == "__main__":
                @kvbench.variant("pyvar", op="reshape_and_cache_flash")
                def launch(args, stream):
                    pass
            """)
        done = run_program(path, "run", SMOKE, "--variants", "pyvar", "--case", "0", "-o",
                           os.path.join(OUT, "in_main.csv"))
        one_line(self, done, 3, r"^kvbench: .*in_main.py: variant pyvar is not defined when the "
                                r"worker imports in_main.py: define it at the module's top level, "
                                r"not under `if __name__ == \"__main__\":`$")

    def test_function_outside_a_file(self):
        done = subprocess.run(
            [sys.executable, "-c", "import kvbench\n"
             "try:\n"
             "    kvbench.variant('x', op='concat_and_cast_mha_k')(eval('lambda a, s: None'))\n"
             "except ValueError as e:\n"
             "    print(e)\n"],
            capture_output=True, text=True, env=env())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("a variant must be defined in a file", done.stdout)


def cases_of(path, *args):
    """Indices of `list` through the program at path (numbers as `run --case` takes them)."""
    done = run_program(path, "list", SMOKE, "--format", "csv", *args)
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    return rows


class Run(unittest.TestCase):
    """`run` through the package: its workers are this interpreter running kvbench.worker."""

    def test_run_uses_the_python_worker(self):
        path = program("runs", VARIANT)
        mark = os.path.join(OUT, "runs.mark")
        if os.path.exists(mark):
            os.remove(mark)
        rows = cases_of(path, "--variants", "pyvar")
        small = next(r["case"] for r in rows if int(r["num_tokens"]) < 1000)
        large = next(r["case"] for r in rows if int(r["num_tokens"]) >= 1000)
        out = os.path.join(OUT, "runs.csv")
        done = run_program(path, "run", SMOKE, "--variants", "pyvar", "--case", small, "--case",
                           large, "-o", out, MARK=mark)
        with open(mark) as f:
            imports = f.read().splitlines()
        # The program marks itself as __main__; its worker imports the file under another name
        # (so its main block does not run), from kvbench.worker started by `python -c`.
        self.assertEqual(imports[0], f"__main__ {path} False")
        self.assertEqual(imports[1:], ["__kvbench_main__ -c True"], done.stderr)
        if done.returncode == 4:  # no GPU here: the worker's fatal line is the run's
            one_line(self, done, 4, r"^kvbench: no CUDA device")
            self.assertFalse(os.path.exists(out))
            return
        # A GPU: the launch's exception fails its case, supports() refuses the other.
        self.assertEqual(done.returncode, 2, done.stderr)
        with open(out) as f:
            got = {r["num_tokens"]: r for r in csv.DictReader(f)}
        for r in got.values():
            if int(r["num_tokens"]) < 1000:
                self.assertEqual(r["status"], "failed")
                self.assertIn("RuntimeError: launch refused on purpose", r["reason"])
            else:
                self.assertEqual((r["status"], r["reason"]),
                                 ("not_supported", f"tokens {r['num_tokens']}"))

    def test_without_variants_the_worker_is_python_too(self):
        """/proc/self/exe is the interpreter here: the package's worker runs kvbench's worker."""
        path = program("no_own_variants", "")
        out = os.path.join(OUT, "no_own_variants.csv")
        done = run_program(path, "run", SMOKE, "--case", "0", "-o", out,
                           KVBENCH_MEMORY_REPORT="")
        if done.returncode == 4:
            one_line(self, done, 4, r"^kvbench: no CUDA device")
        else:  # a GPU: kvbench's own variant of case 0 runs and passes
            self.assertEqual(done.returncode, 0, done.stderr)

    def test_worker_refuses_a_changed_source(self):
        path = program("changes", VARIANT + textwrap.dedent("""\
            if __name__ != "__main__":  # the worker's import changes the file
                with open(__file__, "a") as f:
                    f.write("# changed\\n")
            """))
        rows = cases_of(path, "--variants", "pyvar")
        done = run_program(path, "run", SMOKE, "--variants", "pyvar", "--case", rows[0]["case"],
                           "-o", os.path.join(OUT, "changes.csv"))
        one_line(self, done, 3, r"^kvbench: .*not the files the run started with .*changes.py")

    def test_sidecar_records_the_source(self):
        """With the stand-in worker (tests/workers/standin_worker.py), which needs no GPU."""
        path = program("recorded", VARIANT)
        out = os.path.join(OUT, "recorded.csv")
        for p in (out, out + ".json"):
            if os.path.exists(p):
                os.remove(p)
        stand_in = {"KVBENCH_WORKER": sys.executable + " " +
                    os.path.join(ROOT, "tests", "workers", "standin_worker.py"),
                    "STANDIN_KVBENCH": KVBENCH,
                    "STANDIN_VARIANT_OPS": "pyvar=reshape_and_cache_flash,"
                                           "pyconcat=concat_and_cast_mha_k"}
        done = run_program(path, "run", SMOKE, "--variants", "pyvar,pyconcat", "--case", "0",
                           "-o", out, **stand_in)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(out + ".json") as f:
            plugins = json.load(f)["plugins"]
        with open(path, "rb") as f:
            data = f.read()
        self.assertEqual(plugins, [{"path": "recorded.py", "size": len(data),
                                    "sha256": hashlib.sha256(data).hexdigest(),
                                    "variants": ["pyvar", "pyconcat"],
                                    "kernels": ["reshape_and_cache_flash",
                                                "concat_and_cast_mha_k"],
                                    "in_process": True}])
        with open(path, "a") as f:
            f.write("# changed\n")
        done = run_program(path, "run", SMOKE, "--variants", "pyvar,pyconcat", "--case", "0",
                           "-o", out, "--resume", **stand_in)
        one_line(self, done, 3, r"^kvbench: --resume: .*--plugin \(plugins\)")


    def test_shards_of_python_variants_merge(self):
        """Shards of a run of Python variants (stand-in worker) merge, by the plain binary and
        without the program, into what the unsharded run wrote."""
        path = program("sharded", VARIANT)
        stand_in = {"KVBENCH_WORKER": sys.executable + " " +
                    os.path.join(ROOT, "tests", "workers", "standin_worker.py"),
                    "STANDIN_KVBENCH": KVBENCH,
                    "STANDIN_VARIANT_OPS": "pyvar=reshape_and_cache_flash,"
                                           "pyconcat=concat_and_cast_mha_k"}
        outs = []
        for shard in ("", "0/2", "1/2"):
            out = os.path.join(OUT, "sharded%s.csv" % shard.replace("/", "_"))
            for p in (out, out + ".json"):
                if os.path.exists(p):
                    os.remove(p)
            done = run_program(path, "run", SMOKE, "--variants", "pyconcat,optimized,pyvar",
                               "-o", out, *(["--shard", shard] if shard else []), **stand_in)
            self.assertEqual(done.returncode, 0, done.stderr)
            outs.append(out)
        merged = os.path.join(OUT, "sharded_merged.csv")

        def merge(*shards):
            return subprocess.run([KVBENCH, "merge", merged, *shards], capture_output=True,
                                  text=True, cwd=OUT)

        def set_plugins(change, shards=outs[1:]):
            """Each shard's sidecar with its plugins record passed through change."""
            for out in shards:
                with open(out + ".json") as f:
                    side = json.load(f)
                change(side["plugins"][0])
                with open(out + ".json", "w") as f:
                    json.dump(side, f)

        done = merge(outs[2], outs[1])
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(merged) as f, open(outs[0]) as g:
            self.assertEqual(f.read(), g.read())
        # The same program recorded under another path (run from another directory): merged.
        set_plugins(lambda p: p.update(path=path), outs[2:])
        done = merge(outs[2], outs[1])
        self.assertEqual(done.returncode, 0, done.stderr)
        # A shard whose program changed since is another plugin file: refused, naming both.
        set_plugins(lambda p: p.update(sha256="0" * 64), outs[2:])
        one_line(self, merge(outs[1], outs[2]), 3,
                 r"--plugin \(plugins\) is \S*sharded.py \(sha256 000000000000\), "
                 r".*shards of other plugin files ran other kernels")
        set_plugins(lambda p: p.update(sha256="1" * 64, path="sharded.py"))
        # A recorded name that no variant may have: refused, not matched against the rows.
        set_plugins(lambda p: p["variants"].__setitem__(0, "no way"))
        one_line(self, merge(outs[1], outs[2]), 3,
                 r"sharded0_2.csv.json: key 'plugins': 'no way' is not a variant name")
        # A sidecar of a build that recorded no operations: said so (merge has no --plugin).
        set_plugins(lambda p: (p["variants"].__setitem__(0, "pyvar"), p.pop("kernels")))
        one_line(self, merge(outs[1], outs[2]), 3,
                 r"sharded0_2.csv.json: key 'variants': 'pyconcat' is neither "
                 r"kvbench's variant nor one its plugins record with an operation")

    def test_shards_of_a_config_naming_a_python_variant_merge(self):
        """A config that names the variant itself (no --variants): its shards merge too."""
        path = program("named", VARIANT)
        config = os.path.join(OUT, "named.yaml")
        with open(config, "w") as f:
            f.write("sweeps:\n  - kernel: reshape_and_cache_flash\n"
                    "    axes: {variant: [pyvar, optimized], num_tokens: [1, 16, 128]}\n")
        stand_in = {"KVBENCH_WORKER": sys.executable + " " +
                    os.path.join(ROOT, "tests", "workers", "standin_worker.py"),
                    "STANDIN_KVBENCH": KVBENCH}
        outs = []
        for shard in ("0/2", "1/2"):
            out = os.path.join(OUT, "named%s.csv" % shard.replace("/", "_"))
            for p in (out, out + ".json"):
                if os.path.exists(p):
                    os.remove(p)
            done = run_program(path, "run", config, "-o", out, "--shard", shard, **stand_in)
            self.assertEqual(done.returncode, 0, done.stderr)
            outs.append(out)
        done = subprocess.run([KVBENCH, "merge", os.path.join(OUT, "named_merged.csv"), *outs],
                              capture_output=True, text=True, cwd=OUT)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("6 rows from 2 shards; 0 of 6 cases missing", done.stdout)

    def test_a_program_that_changes_directory_names_its_file(self):
        """Variants defined, then os.chdir before kvbench.main: the sidecar records the file that
        defined them (absolute now, as it is no longer below the working directory)."""
        path = program("moves", VARIANT.replace("if os.environ.get", "os.makedirs('elsewhere', "
                                                "exist_ok=True)\nif os.environ.get") +
                       "\nif __name__ == '__main__':\n    os.chdir('elsewhere')\n")
        out = os.path.join(OUT, "moves.csv")
        done = run_program(path, "run", SMOKE, "--variants", "pyvar", "--case", "0", "-o", out,
                           KVBENCH_WORKER=sys.executable + " " +
                           os.path.join(ROOT, "tests", "workers", "standin_worker.py"),
                           STANDIN_KVBENCH=KVBENCH, STANDIN_VARIANT_OPS="pyvar=reshape_and_cache_flash")
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(out + ".json") as f:
            self.assertEqual(json.load(f)["plugins"][0]["path"], path)


def args_struct(op):
    """A kvb_args of op with made-up sizes and pointers (never dereferenced here)."""
    a = _abi.Args(struct_size=ctypes.sizeof(_abi.Args), op=op)
    if op == _abi.KVB_OP_CACHE_WRITE:
        s = _abi.CacheWriteArgs(key=0x1000, value=0x2000, key_cache=0x3000, value_cache=0x4000,
                                slot_mapping=0x5000, swa_slot_mapping=None, k_scale=0x6000,
                                v_scale=0x7000, num_tokens=5, num_heads=4, head_size=80,
                                block_size=16, key_s0=400, key_s1=80, value_s0=336, value_s1=84,
                                block_stride=2 * 16 * 4 * 80, slot_stride=80, head_stride=16 * 80,
                                num_slots=64, skip_slot=-1, scale_mode=2, in_dtype=2, out_dtype=3)
        a.cache_write = ctypes.pointer(s)
    else:
        s = _abi.ConcatMlaKArgs(k_nope=0x1000, k_rope=0x2000, k=0x3000, num_tokens=3, num_heads=2,
                                nope_dim=128, rope_dim=64, nope_s0=512, nope_s1=256, rope_s0=576,
                                k_s0=384, k_s1=192, in_dtype=0, out_dtype=4)
        a.concat_mla_k = ctypes.pointer(s)
    return a, s


class Callbacks(unittest.TestCase):
    """The ctypes callbacks kvbench calls, called here as kvbench would."""

    def make(self, launch, supports=None):
        before = len(kvbench._variants)
        kvbench.variant("cb", op="reshape_and_cache_flash", supports=supports)(launch)
        v = kvbench._variants.pop()
        self.assertEqual(len(kvbench._variants), before)
        return v

    def test_case_args_mirror_the_struct(self):
        seen = []
        v = self.make(lambda args, stream: seen.append((args, stream)))
        a, s = args_struct(_abi.KVB_OP_CACHE_WRITE)
        message = ctypes.create_string_buffer(64)
        self.assertEqual(v.c_launch(ctypes.pointer(a), 0xABC, message, 64), 0)
        args, stream = seen[0]
        self.assertEqual(stream, 0xABC)
        self.assertEqual(args.op, "reshape_and_cache_flash")
        for name, _ in _abi.CacheWriteArgs._fields_[8:21]:
            self.assertEqual(getattr(args, name), getattr(s, name), name)
        self.assertEqual((args.in_dtype, args.out_dtype, args.scale_mode, args.layout),
                         ("bf16", "fp8_e4m3", "per_head", "hnd"))
        self.assertEqual(args.value.__cuda_array_interface__,
                         {"shape": (5, 4, 80), "strides": (672, 168, 2), "typestr": "<u2",
                          "data": (0x2000, False), "version": 3})
        self.assertEqual(args.key_cache.__cuda_array_interface__,
                         {"shape": (4, 16, 4, 80), "strides": (10240, 80, 1280, 1),
                          "typestr": "|u1", "data": (0x3000, False), "version": 3})
        self.assertEqual(args.key_cache.dtype, "fp8_e4m3")
        self.assertEqual(args.k_scale.__cuda_array_interface__["shape"], (4,))
        self.assertEqual(args.slot_mapping.__cuda_array_interface__["typestr"], "<i8")
        self.assertIsNone(args.swa_slot_mapping)

    def test_concat_args(self):
        seen = []
        v = self.make(lambda args, stream: seen.append(args))
        a, s = args_struct(_abi.KVB_OP_CONCAT_MLA_K)
        self.assertEqual(v.c_launch(ctypes.pointer(a), None, None, 0), 0)
        args = seen[0]
        self.assertEqual((args.op, args.in_dtype, args.out_dtype),
                         ("concat_and_cast_mha_k", "f32", "fp8_e5m2"))
        self.assertEqual(args.k_nope.__cuda_array_interface__["strides"], (2048, 1024, 4))
        self.assertEqual(args.k_rope.__cuda_array_interface__["shape"], (3, 1, 64))
        self.assertEqual(args.k.__cuda_array_interface__["shape"], (3, 2, 192))

    def test_launch_exception_is_the_message(self):
        def launch(args, stream):
            raise ValueError("bad\nthing happened")
        v = self.make(launch)
        a, _ = args_struct(_abi.KVB_OP_CACHE_WRITE)
        message = ctypes.create_string_buffer(b"\xff" * 64)
        self.assertEqual(v.c_launch(ctypes.pointer(a), 1, message, 64), 1)
        self.assertEqual(message.value, b"ValueError: bad thing happened")
        short = ctypes.create_string_buffer(b"\xff" * 9)
        self.assertEqual(v.c_launch(ctypes.pointer(a), 1, short, 8), 1)
        self.assertEqual(short.raw, b"ValueEr\0\xff\0")  # cut to 8 bytes, NUL-terminated

    def test_supports_reasons(self):
        answers = iter([None, "", "too wide", 7])

        def supports(args):
            value = next(answers, None)
            if value == 7:
                raise KeyError("head_size")
            return value
        v = self.make(lambda a, s: None, supports)
        a, _ = args_struct(_abi.KVB_OP_CACHE_WRITE)
        got = []
        for _ in range(4):
            p = v.c_supports(ctypes.pointer(a))
            got.append(ctypes.string_at(p).decode() if p else None)
        self.assertEqual(got, [None, None, "too wide", "supports() raised KeyError: 'head_size'"])
        v = self.make(lambda a, s: None, lambda args: 3)
        p = v.c_supports(ctypes.pointer(a))
        self.assertEqual(ctypes.string_at(p), b"supports() returned 3, not a str or None")

    def test_callbacks_answer_whatever_is_raised(self):
        """Nothing crosses into C: BaseExceptions, a __str__ or a __repr__ that raises."""
        class Unprintable(Exception):
            def __str__(self):
                raise RuntimeError("no str")

        class NoRepr:
            def __repr__(self):
                raise RuntimeError("no repr")

        a, _ = args_struct(_abi.KVB_OP_CACHE_WRITE)
        cases = ((SystemExit(2), "supports() raised SystemExit: 2"),
                 (GeneratorExit(), "supports() raised GeneratorExit"),
                 (KeyboardInterrupt(), "supports() raised KeyboardInterrupt"),
                 (Unprintable("x"), "supports() raised Unprintable"))
        try:
            for error, reason in cases:
                def supports(args, error=error):
                    raise error
                v = self.make(lambda a, s: None, supports)
                self.assertEqual(ctypes.string_at(v.c_supports(ctypes.pointer(a))).decode(),
                                 reason)
                def launch(args, stream, error=error):
                    raise error
                v = self.make(launch)
                message = ctypes.create_string_buffer(64)
                self.assertEqual(v.c_launch(ctypes.pointer(a), 1, message, 64), 1)
                self.assertEqual(message.value.decode(), reason[len("supports() raised "):])
            self.assertEqual(len(kvbench._interrupts), 2)  # the KeyboardInterrupts, noted
            v = self.make(lambda a, s: None, lambda args: NoRepr())
            self.assertEqual(ctypes.string_at(v.c_supports(ctypes.pointer(a))),
                             b"supports() returned a NoRepr, not a str or None")
        finally:
            del kvbench._interrupts[:]

    def test_no_supports_is_a_null_pointer(self):
        v = self.make(lambda a, s: None)
        self.assertFalse(v.c_supports)


class Install(unittest.TestCase):
    def test_pip_installs_the_pure_python_package(self):
        """Offline: the build backend is in the tree and requires nothing."""
        try:
            import pip  # noqa: F401
        except ImportError:
            self.skipTest("no pip in " + sys.executable)
        target = os.path.join(OUT, "site")
        shutil.rmtree(target, ignore_errors=True)
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--quiet",
                               "--disable-pip-version-check", "--target", target,
                               os.path.join(ROOT, "python")],
                              capture_output=True, text=True, cwd=OUT)
        self.assertEqual(done.returncode, 0, done.stderr)
        files = sorted(os.listdir(os.path.join(target, "kvbench")))
        self.assertTrue({"__init__.py", "_abi.py", "worker.py"} <= set(files), files)
        self.assertFalse([f for f in files if f.endswith(".so")])  # pure Python
        done = subprocess.run([sys.executable, "-c", "import sys, kvbench; "
                               "sys.exit(kvbench.main(['schema']))"],
                              capture_output=True, text=True, cwd=OUT,
                              env=dict(env(), PYTHONPATH=target))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, kvbench_cli("schema"))


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    unittest.main(verbosity=2)
