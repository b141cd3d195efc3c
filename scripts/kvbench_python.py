"""Which Python runs kvbench's scripts, and what a script says when a module is missing.

scripts/setup.sh provisions one interpreter: Debian's /usr/bin/python3, with python3-matplotlib
from apt. The python3 first on PATH is often another one (pyenv, conda, a venv) without it. A
script calls require() before it imports a module outside the standard library:

- the module imports here: nothing happens;
- it does not, and the provisioned interpreter ($KVBENCH_PYTHON, else /usr/bin/python3) has it:
  the script runs again under that interpreter with the same arguments (os.execv), after one
  line on stderr saying so;
- otherwise one line on stderr names this interpreter (sys.executable), the module and the two
  fixes (the provisioned interpreter, or `pip install` into this one), and the script exits 3.
  Never a traceback.

Why the script re-runs itself rather than only advising: the README's commands
(`python3 scripts/plot.py ...`) are copied into shells whose python3 is whatever PATH finds
first, and the provisioned interpreter is known, so running under it is exactly what the advice
would tell the user to type. A venv step would add a command to every quick start, and a
launcher would change every command the docs show. Re-running happens only when the script is
the program being run (`python3 scripts/X.py`); a module importing it gets MissingModule, an
ImportError carrying the same one-line message.

Standard library only, so that it works in every interpreter.
"""
import importlib
import os
import subprocess
import sys

EXIT_MISSING_MODULE = 3
DEFAULT_PROVISIONED = "/usr/bin/python3"
# Set in the environment of a re-run, so that a second miss reports instead of looping.
RERUN_MARK = "KVBENCH_PYTHON_RERUN"
# The modules scripts/setup.sh installs for the provisioned interpreter: their Debian package.
DEBIAN_PACKAGES = {"matplotlib": "python3-matplotlib"}
# What to `pip install` for a module, where its name alone says too little.
PIP_HINTS = {"torch": "torch (a CUDA build: pytorch.org)", "triton": "triton"}


class MissingModule(ImportError):
    """A required module cannot be imported; str() is the one-line message."""


def provisioned_interpreter():
    """The interpreter scripts/setup.sh provisions: $KVBENCH_PYTHON, else /usr/bin/python3."""
    return os.environ.get("KVBENCH_PYTHON") or DEFAULT_PROVISIONED


def _importable_by(python, modules):
    """Whether `python` imports every module in `modules` (imported, not only found: a broken
    install there must not earn a re-run that fails the same way)."""
    probe = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)"
    try:
        done = subprocess.run([python, "-c", probe, *modules], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _one_line(error):
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _what(module, error):
    """'<interpreter> has no module 'm'', or why an installed one does not import."""
    here = sys.executable or "this python"
    if isinstance(error, ModuleNotFoundError) and error.name == module:
        return f"{here} has no module '{module}'"
    return f"{here} cannot import '{module}' ({_one_line(error)})"


def message(script, module, error, provisioned=None):
    """The one line printed when `module` is missing: interpreter, module, the two fixes."""
    here = sys.executable or "this python"
    provisioned = provisioned or provisioned_interpreter()
    what = _what(module, error)
    package = DEBIAN_PACKAGES.get(module)
    if package:
        first = (f"run it with {DEFAULT_PROVISIONED} after scripts/setup.sh (which installs "
                 f"{package} for it)")
    else:
        first = (f"run it with an interpreter that has it, named by $KVBENCH_PYTHON "
                 f"(scripts/setup.sh does not install {module})")
    pip = PIP_HINTS.get(module, module)
    line = (f"{script}: {what}; either {first}, or install it into this interpreter: "
            f"{here} -m pip install {pip}")
    if os.environ.get("KVBENCH_PYTHON"):
        line += f" ($KVBENCH_PYTHON={provisioned} cannot import it either)"
    return line


def _is_program(script_file):
    """Whether `script_file` is the program this interpreter was started with."""
    main = sys.argv[0] if sys.argv else ""
    return bool(main) and os.path.abspath(main) == os.path.abspath(script_file)


def require(script_file, *modules):
    """Imports `modules` (top-level names) for the script at `script_file` (its __file__).

    When one fails: re-runs the script under the provisioned interpreter if that one has them
    all, else prints the one-line message and exits 3; when the script is not the program
    being run (a test imports it), raises MissingModule instead."""
    script = os.path.basename(script_file)
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as e:
            missing, error = module, e
            break
    else:
        return
    provisioned = provisioned_interpreter()
    if not _is_program(script_file):
        raise MissingModule(message(script, missing, error, provisioned))
    if not os.environ.get(RERUN_MARK) and _importable_by(provisioned, modules):
        print(f"{script}: {_what(missing, error)}; running under {provisioned}, which has it",
              file=sys.stderr, flush=True)
        env = dict(os.environ, **{RERUN_MARK: sys.executable or "1"})
        try:
            os.execve(provisioned, [provisioned, os.path.abspath(script_file), *sys.argv[1:]],
                      env)
        except OSError as e:
            print(f"{script}: cannot run {provisioned}: {e.strerror}", file=sys.stderr)
            sys.exit(EXIT_MISSING_MODULE)
    print(message(script, missing, error, provisioned), file=sys.stderr, flush=True)
    sys.exit(EXIT_MISSING_MODULE)
