"""A worker of `kvbench run` for Python variants: the command kvbench.main gives kvbench to start
its workers with (docs/workers.md). It imports the files that defined the parent's variants,
which registers the same variants again, then runs kvbench's `worker` subcommand with the
arguments kvbench gave it. kvbench then checks that each file is the one the run recorded (size
and SHA-256).

A file that was the parent's __main__ is imported under another name, so its
`if __name__ == "__main__":` block does not run here; any other module is imported by its name.
While they import, anything they print goes to stderr: stdout carries kvbench's protocol."""
import importlib
import importlib.util
import os
import sys

MAIN_NAME = "__kvbench_main__"  # the parent's __main__, imported here


def _import_source(module, path):
    if module != "__main__":
        try:
            m = importlib.import_module(module)
            if os.path.abspath(getattr(m, "__file__", "") or "") == os.path.abspath(path):
                return
        except ImportError:
            pass
    name = MAIN_NAME if module == "__main__" else module
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ImportError(f"cannot import {path}")
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)


def _fatal(stdout_fd, line):
    """Writes kvbench's fatal line (exit 3) on the protocol's stdout; returns 3."""
    os.dup2(stdout_fd, 1)
    os.write(1, f"fatal 3 {line}\n".encode("utf-8", "replace"))  # a path may not be UTF-8
    return 3


def main(spec, argv):
    """spec: {"path": the parent's sys.path, "sources": [[module, file], ...], "variants":
    [[name, file], ...]}; argv: kvbench's worker arguments. Returns the worker's exit code."""
    stdout_fd = os.dup(1)
    os.dup2(2, 1)  # what the imports print (Python or C) goes to stderr
    sys.stdout = sys.stderr
    try:
        for module, path in spec["sources"]:
            directory = os.path.dirname(os.path.abspath(path))
            if directory not in sys.path:
                sys.path.insert(0, directory)  # as when the parent ran it as a script
            _import_source(module, path)
    except BaseException as e:  # noqa: BLE001 - one line, and the parent reports it
        from . import _one_line
        return _fatal(stdout_fd, f"a variant's source cannot be imported in the worker: "
                                 f"{_one_line(e)}")
    finally:
        sys.stdout.flush()
    # A variant registered only when its file runs as the program (under
    # `if __name__ == "__main__":`) is not registered by the import.
    from . import _variants
    have = {v.name for v in _variants}
    for name, path in spec.get("variants", []):
        if name not in have:
            return _fatal(stdout_fd, f"{path}: variant {name} is not defined when the worker "
                                     f"imports {path}: define it at the module's top level, not "
                                     f"under `if __name__ == \"__main__\":`")
    os.dup2(stdout_fd, 1)
    os.close(stdout_fd)
    from . import _run
    return _run(argv, worker=True)
