"""kvbench for Python kernels: a Python function joins kvbench's harness as a variant of one of
its operations, and kvbench validates it bit for bit, rotates its buffers, times its launches in
its CUDA graphs and writes its rows and sidecar, as for its own kernels (docs/python.md).

    import kvbench

    @kvbench.variant("mine", op="reshape_and_cache_flash", why="...", supports=None)
    def launch(args, stream):
        ...   # enqueue the work on `stream` (a cudaStream_t, as an int)

    if __name__ == "__main__":
        sys.exit(kvbench.main(["run", "configs/smoke.yaml", "--variants", "mine"]))

Pure Python over libkvbench.so (ctypes; kvbench._abi finds the library). Importing this package
imports neither torch nor the library; torch only in torch_view().

Each case runs in a worker process, which is this interpreter again: it imports the files that
define the variants (not as __main__), so variants must be defined at a module's top level and
the program's own work must sit under `if __name__ == "__main__":`, as with multiprocessing's
spawn (kvbench.worker).
"""
import ctypes
import os
import sys

from . import _abi
from ._abi import LibraryNotFound, OPS

__all__ = ["variant", "main", "torch_view", "Buffer", "CaseArgs", "LibraryNotFound", "OPS"]

EXIT_BAD_INPUT = 3  # kvbench's exit code for bad input (docs/cli.md)
EXIT_INTERRUPTED = 130  # kvbench's exit code after SIGINT (docs/cli.md)

# numpy/torch typestrs have no bf16 or fp8: those buffers are 2- and 1-byte unsigned integers,
# and Buffer.dtype says what they hold (torch_view reinterprets them).
_TYPESTR = {"f32": "<f4", "f16": "<f2", "bf16": "<u2", "fp8_e4m3": "|u1", "fp8_e5m2": "|u1",
            "i64": "<i8"}
_ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "i64": 8}
_TORCH_DTYPE = {"f32": "float32", "f16": "float16", "bf16": "bfloat16",
                "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2", "i64": "int64"}


class Buffer:
    """A device buffer of a case: `ptr` (an int), `shape` and `strides` in elements, `dtype`
    (kvbench's name: f32, f16, bf16, fp8_e4m3, fp8_e5m2, i64). It exposes
    __cuda_array_interface__ (version 3), so torch.as_tensor(buf, device="cuda"), CuPy or Numba
    view it without a copy; bf16 and fp8 appear there as '<u2' and '|u1' (torch_view gives the
    real dtype)."""

    __slots__ = ("ptr", "shape", "strides", "dtype")

    def __init__(self, ptr, shape, strides, dtype):
        self.ptr, self.shape, self.strides, self.dtype = ptr, tuple(shape), tuple(strides), dtype

    @property
    def __cuda_array_interface__(self):
        size = _ITEMSIZE[self.dtype]
        return {"shape": self.shape, "strides": tuple(s * size for s in self.strides),
                "typestr": _TYPESTR[self.dtype], "data": (self.ptr, False), "version": 3}

    def __repr__(self):
        return (f"Buffer(0x{self.ptr:x}, shape={self.shape}, strides={self.strides}, "
                f"dtype={self.dtype})")


def torch_view(buf):
    """The torch tensor over `buf` (no copy), of its real dtype (torch.bfloat16,
    torch.float8_e4m3fn, ...). Imports torch."""
    import torch
    t = torch.as_tensor(buf, device="cuda")
    want = getattr(torch, _TORCH_DTYPE[buf.dtype])
    return t if t.dtype == want else t.view(want)


class CaseArgs:
    """What a variant receives: the case's arguments as the C struct of its operation
    (include/kvbench/kvbench.h) holds them. `op` is the operation's name; every integer field of
    the struct is an attribute of the same name (sizes and strides in elements); in_dtype,
    out_dtype and scale_mode are names ("bf16", "per_tensor"); each device pointer is a Buffer,
    or None where the struct holds NULL.

    concat_and_cast_mha_k: k_nope [T, H, NOPE], k_rope [T, 1, ROPE], k [T, H, NOPE + ROPE].
    reshape_and_cache_flash: key, value [T, H, D]; key_cache, value_cache [NB, BS, H, D] indexed
    (block, slot, head, d) whatever the layout (the strides carry it; `layout` is "hnd" when the
    head stride exceeds the slot stride, else "nhd": with one head or one slot per block the two
    are the same bytes);
    slot_mapping [T] (i64); swa_slot_mapping [2 * num_slots] (i64: kvbench's SWA table has two
    logical slots per physical one) or None; k_scale, v_scale [1] or [H] (f32) or None."""

    def __init__(self, args):
        a = args.contents
        if a.op == _abi.KVB_OP_CONCAT_MLA_K:
            self.op = "concat_and_cast_mha_k"
            self._read(a.concat_mla_k.contents)
            T, H, N, R = self.num_tokens, self.num_heads, self.nope_dim, self.rope_dim
            s = a.concat_mla_k.contents
            self.k_nope = _buffer(s.k_nope, (T, H, N), (self.nope_s0, self.nope_s1, 1), self.in_dtype)
            self.k_rope = _buffer(s.k_rope, (T, 1, R), (self.rope_s0, R, 1), self.in_dtype)
            self.k = _buffer(s.k, (T, H, N + R), (self.k_s0, self.k_s1, 1), self.out_dtype)
        elif a.op == _abi.KVB_OP_CACHE_WRITE:
            self.op = "reshape_and_cache_flash"
            s = a.cache_write.contents
            self._read(s)
            T, H, D, BS = self.num_tokens, self.num_heads, self.head_size, self.block_size
            self.layout = "hnd" if self.head_stride > self.slot_stride else "nhd"
            cache = ((self.num_slots // BS, BS, H, D),
                     (self.block_stride, self.slot_stride, self.head_stride, 1))
            self.key = _buffer(s.key, (T, H, D), (self.key_s0, self.key_s1, 1), self.in_dtype)
            self.value = _buffer(s.value, (T, H, D), (self.value_s0, self.value_s1, 1),
                                 self.in_dtype)
            self.key_cache = _buffer(s.key_cache, *cache, self.out_dtype)
            self.value_cache = _buffer(s.value_cache, *cache, self.out_dtype)
            self.slot_mapping = _buffer(s.slot_mapping, (T,), (1,), "i64")
            self.swa_slot_mapping = _buffer(s.swa_slot_mapping, (2 * self.num_slots,), (1,), "i64")
            scales = {"none": 0, "per_tensor": 1, "per_head": H}[self.scale_mode]
            self.k_scale = _buffer(s.k_scale, (scales,), (1,), "f32")
            self.v_scale = _buffer(s.v_scale, (scales,), (1,), "f32")
        else:
            raise ValueError(f"operation {a.op} is not one this package knows")

    def _read(self, struct):
        for name, ctype in struct._fields_:
            if ctype is ctypes.c_void_p:
                continue
            value = getattr(struct, name)
            if name in ("in_dtype", "out_dtype"):
                value = _abi.DTYPES[value]
            elif name == "scale_mode":
                value = _abi.SCALE_MODES[value]
            setattr(self, name, value)

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"CaseArgs({fields})"


def _buffer(ptr, shape, strides, dtype):
    return Buffer(ptr, shape, strides, dtype) if ptr else None


def _one_line(error):
    try:
        text = " ".join(str(error).split())
    except BaseException:  # noqa: BLE001 - a __str__ that raises: the type alone
        text = ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _shown(value):
    """repr(value) for a message, or its type when its __repr__ raises."""
    try:
        return repr(value)
    except BaseException:  # noqa: BLE001
        return f"a {type(value).__name__}"


# Where a KeyboardInterrupt reached a callback during this process's kvbench_main: kvbench goes
# on (C cannot be unwound by a Python exception), and kvbench.main then returns 130 (_run).
_interrupts = []
# Callbacks that called os._exit (which ends the process with no word, whatever kvbench was
# doing: `list --plan` would exit 0 with nothing printed): stopped, named, and exit 3 at the end.
_exits = []


class _ExitCalled(BaseException):
    """os._exit called in a callback: raised instead of ending the process."""


def _no_exit(status):
    raise _ExitCalled(f"called os._exit({status!r}), which would end kvbench")


def _guarded(fn, *args):
    """fn(*args) with os._exit raising _ExitCalled instead of ending the process."""
    real = os._exit
    os._exit = _no_exit
    try:
        return fn(*args)
    finally:
        os._exit = real

# What a callback answers when even its error handling fails (it must answer C something valid).
_SUPPORTS_FAILED = ctypes.c_char_p(b"supports() failed")
_SUPPORTS_FAILED_PTR = ctypes.cast(_SUPPORTS_FAILED, ctypes.c_void_p).value


class _Variant:
    """A registered Python variant and the ctypes callbacks kvbench calls (kept alive here)."""

    def __init__(self, name, op, why, launch, supports, source, module):
        self.name, self.op, self.why = name, op, why
        self.launch, self.supports = launch, supports
        self.path, self.module = source, module  # the file's absolute path
        self.reason = None  # the last supports() reason: kvbench copies it before the next call
        self.c_supports = _abi.SUPPORTS(self._supports) if supports else _abi.SUPPORTS()
        self.c_launch = _abi.LAUNCH(self._launch)
        self.registered = False

    @property
    def source(self):
        """The file, relative to the working directory when it lies below it (the sidecar records
        it as given), else absolute: computed when asked, so a program that changes directory
        after defining its variants still names their file."""
        rel = os.path.relpath(self.path)
        return rel if not rel.startswith(os.pardir + os.sep) else self.path

    # The callbacks answer C whatever happens: an exception escaping a ctypes callback is printed
    # and C gets an undefined value (a garbage pointer from supports). So each catches
    # BaseException (SystemExit and KeyboardInterrupt too), and its handler is guarded as well.

    def _supports(self, args):
        try:
            try:
                why = _guarded(self.supports, CaseArgs(args))
                if why is None or (isinstance(why, str) and why == ""):
                    return None
                if not isinstance(why, str):
                    why = f"supports() returned {_shown(why)}, not a str or None"
            except _ExitCalled as e:
                why = f"supports() {e}"
                _exits.append(f"supports() of variant {_shown(self.name)} ({self.source}) {e}")
            except BaseException as e:  # noqa: BLE001 - any error is the case's reason
                if isinstance(e, KeyboardInterrupt):
                    _interrupts.append(f"supports() of variant {_shown(self.name)} ({self.source})")
                why = f"supports() raised {_one_line(e)}"
            self.reason = str.encode(why, "utf-8", "replace")
            return ctypes.cast(ctypes.c_char_p(self.reason), ctypes.c_void_p).value
        except BaseException:  # noqa: BLE001
            return _SUPPORTS_FAILED_PTR

    def _launch(self, args, stream, message, size):
        try:
            try:
                self.launch(CaseArgs(args), stream or 0)
                return 0
            except BaseException as e:  # noqa: BLE001 - the case fails, the worker goes on
                if isinstance(e, KeyboardInterrupt):
                    _interrupts.append(f"launch of variant {_shown(self.name)} ({self.source})")
                text = _one_line(e).encode("utf-8", "replace")[:max(size - 1, 0)]
                text = text.decode("utf-8", "ignore").encode()  # no cut-off character at the end
                if size:
                    ctypes.memmove(message, text + b"\0", len(text) + 1)
                return 1
        except BaseException:  # noqa: BLE001 - the case fails, perhaps without its message
            return 1


_variants = []  # every variant defined in this process, in order
_lib = None


def _library():
    global _lib
    if _lib is None:
        _lib = _abi.load()
    return _lib


def _source_of(fn):
    """(module name, absolute path of the file) of the module that defines fn."""
    module = sys.modules.get(fn.__module__)
    path = getattr(module, "__file__", None) or fn.__code__.co_filename
    if not path or path.startswith("<") or not os.path.isfile(path):
        raise ValueError(f"variant function {fn.__qualname__} is defined in {path or 'no file'}; "
                         f"a variant must be defined in a file (its workers import it)")
    return fn.__module__, os.path.abspath(path)


def variant(name, op, why="", supports=None):
    """Decorator: registers `launch(args, stream)` as variant `name` of operation `op`
    ("concat_and_cast_mha_k" or "reshape_and_cache_flash"). `args` is a CaseArgs; `stream` the
    case's cudaStream_t as an int. launch enqueues its work on that stream and returns; it must
    not synchronize or allocate device memory (kvbench captures its launches into CUDA graphs).
    An exception makes the case `failed` with "ExceptionType: message".

    `supports(args)`, optional, returns None when the case is supported, else the reason (the
    case is then `not_supported` with it); it runs before anything is allocated, so its Buffers'
    pointers are not real: decide on sizes, strides and dtypes. An exception in it makes the
    case `not_supported` with "supports() raised ExceptionType: message".

    The name's rules and clashes are kvbench's, checked when kvbench.main runs."""
    def register(launch):
        module, source = _source_of(launch)
        _variants.append(_Variant(name, op, why, launch, supports, source, module))
        return launch
    return register


def _c_text(value):
    """value as the UTF-8 of a C string, or None when it is not a str, holds a NUL (C would see
    it cut there) or cannot be UTF-8 (a lone surrogate)."""
    if not isinstance(value, str) or "\0" in value:
        return None
    try:
        return value.encode("utf-8")
    except UnicodeError:
        return None


def _check(v):
    """Why variant v cannot be handed to C as it is (one line), or None. The name's rules and
    clashes are kvbench's; what C cannot see (a NUL, a lone surrogate, not a str) is checked
    here."""
    where = f"{v.source}: variant {_shown(v.name)}"
    if "<locals>" in v.launch.__qualname__:
        return (f"{where}: {v.launch.__qualname__} is defined inside a function; a variant is "
                f"defined at its module's top level (each worker imports the module, which does "
                f"not call that function)")
    if not isinstance(v.name, str):
        return f"{where}: a name is a str, not {type(v.name).__name__}"
    if _c_text(v.name) is None:
        return f"{where}: a name is 1 to 32 of [a-z0-9_]"  # kvbench's words for a bad name
    if not isinstance(v.op, str) or v.op not in OPS:
        op = _shown(v.op) if isinstance(v.op, str) else f"{_shown(v.op)} (a {type(v.op).__name__})"
        return f"{where}: unknown operation {op} (one of {', '.join(OPS)})"
    if v.why is not None and _c_text(v.why) is None:
        problem = (f"not a str ({type(v.why).__name__})" if not isinstance(v.why, str) else
                   "it holds a NUL" if "\0" in v.why else
                   "it is not valid UTF-8 (a lone surrogate)")
        return f"{where}: why {_shown(v.why)}: {problem}"
    return None


def _register_all():
    """Hands the variants not yet registered to the library; the error's line, or None."""
    lib = _library()
    for v in _variants:
        if v.registered:
            continue
        error = _check(v)
        if error:
            return error
        c = _abi.Variant(_c_text(v.name), _c_text(v.why or ""), OPS[v.op], v.c_supports,
                         v.c_launch)
        message = ctypes.create_string_buffer(512)
        if lib.kvbench_add_variant(ctypes.byref(c), os.fsencode(v.source), message,
                                   len(message)):
            return message.value.decode("utf-8", "replace")
        v.registered = True
    return None


def _worker_command():
    """This interpreter as kvbench's worker: kvbench.worker with the variants' sources and this
    process's sys.path (so the worker imports what this process imports)."""
    import json
    sources = []
    for v in _variants:
        if [v.module, v.source] not in sources:
            sources.append([v.module, v.source])
    spec = json.dumps({"path": [os.path.abspath(p) if p else os.getcwd() for p in sys.path],
                       "sources": sources, "variants": [[v.name, v.source] for v in _variants]})
    prelude = ("import json, sys; spec = json.loads(sys.argv[1]); "
               "sys.path[:0] = [p for p in spec['path'] if p not in sys.path]; "
               "from kvbench.worker import main; sys.exit(main(spec, sys.argv[2:]))")
    return [sys.executable, "-c", prelude, spec]


def main(argv=None):
    """Runs kvbench's command line (["run", CONFIG, ...], ["list", CONFIG, ...]; docs/cli.md)
    with this process's variants; returns its exit code. Errors are one line on stderr."""
    return _run(list(sys.argv[1:] if argv is None else argv), worker=False)


def _run(argv, worker):
    """kvbench_main over argv after registering the variants; `worker`: this process is a
    worker (kvbench.worker), which starts none of its own."""
    try:
        lib = _library()
    except LibraryNotFound as e:
        print(f"kvbench: {e}", file=sys.stderr, flush=True)
        return EXIT_BAD_INPUT
    for i, a in enumerate(argv):  # str or bytes (docs/python.md): 5 is no path
        if not isinstance(a, (str, bytes)):
            print(f"kvbench: argument {i + 1} is {type(a).__name__} {a!r}, not str or bytes",
                  file=sys.stderr, flush=True)
            return EXIT_BAD_INPUT
    error = _register_all()
    if error:
        print(f"kvbench: {error}", file=sys.stderr, flush=True)
        return EXIT_BAD_INPUT
    try:
        args, keep = _abi.c_strings(["kvbench", *argv])
    except ValueError as e:
        print(f"kvbench: argument {e}", file=sys.stderr, flush=True)
        return EXIT_BAD_INPUT
    if not worker:  # kvbench's own executable is not this process's (that is the interpreter)
        command, keep_command = _abi.c_strings(_worker_command())
        lib.kvbench_set_worker_command(len(keep_command), command)
    sys.stdout.flush()
    sys.stderr.flush()
    del _interrupts[:]
    del _exits[:]
    code = lib.kvbench_main(len(keep), args)
    if _exits:
        print(f"kvbench: {_exits[0]}; a supports() returns its answer", file=sys.stderr,
              flush=True)
        return EXIT_BAD_INPUT
    # A KeyboardInterrupt in a callback was that case's reason (or failure); the command then
    # ends as kvbench ends after SIGINT. A worker leaves it to the case: its parent run owns
    # SIGINT and ends the run itself.
    if _interrupts and not worker:
        print(f"kvbench: interrupted by KeyboardInterrupt in {_interrupts[0]}", file=sys.stderr,
              flush=True)
        return EXIT_INTERRUPTED
    return code
