"""The C structs of include/kvbench/kvbench.h and the functions of include/kvbench/host.h, in
ctypes; and where libkvbench.so is found. Field order and types follow the header exactly."""
import ctypes
import os

KVB_OP_CONCAT_MLA_K = 1
KVB_OP_CACHE_WRITE = 2
# Operation names as kvbench's configs and CSV spell them.
OPS = {"concat_and_cast_mha_k": KVB_OP_CONCAT_MLA_K, "reshape_and_cache_flash": KVB_OP_CACHE_WRITE}
DTYPES = ("f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2")  # enum kvb_dtype, in order
SCALE_MODES = ("none", "per_tensor", "per_head")  # enum kvb_scale_mode, in order

_i64, _i32, _ptr = ctypes.c_int64, ctypes.c_int32, ctypes.c_void_p


class ConcatMlaKArgs(ctypes.Structure):
    _fields_ = [("k_nope", _ptr), ("k_rope", _ptr), ("k", _ptr),
                ("num_tokens", _i64), ("num_heads", _i64), ("nope_dim", _i64), ("rope_dim", _i64),
                ("nope_s0", _i64), ("nope_s1", _i64), ("rope_s0", _i64), ("k_s0", _i64),
                ("k_s1", _i64), ("in_dtype", _i32), ("out_dtype", _i32)]


class CacheWriteArgs(ctypes.Structure):
    _fields_ = [("key", _ptr), ("value", _ptr), ("key_cache", _ptr), ("value_cache", _ptr),
                ("slot_mapping", _ptr), ("swa_slot_mapping", _ptr), ("k_scale", _ptr),
                ("v_scale", _ptr),
                ("num_tokens", _i64), ("num_heads", _i64), ("head_size", _i64),
                ("block_size", _i64), ("key_s0", _i64), ("key_s1", _i64), ("value_s0", _i64),
                ("value_s1", _i64), ("block_stride", _i64), ("slot_stride", _i64),
                ("head_stride", _i64), ("num_slots", _i64), ("skip_slot", _i64),
                ("scale_mode", _i32), ("in_dtype", _i32), ("out_dtype", _i32)]


class Args(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("op", _i32),
                ("concat_mla_k", ctypes.POINTER(ConcatMlaKArgs)),
                ("cache_write", ctypes.POINTER(CacheWriteArgs))]


SUPPORTS = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(Args))
LAUNCH = ctypes.CFUNCTYPE(_i32, ctypes.POINTER(Args), ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_size_t)


class Variant(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("why", ctypes.c_char_p), ("op", _i32),
                ("supports", SUPPORTS), ("launch", LAUNCH)]


LIBRARY = "libkvbench.so"
SYMBOLS = ("kvbench_main", "kvbench_add_variant", "kvbench_set_worker_command")  # host.h's


class LibraryNotFound(OSError):
    """libkvbench.so cannot be loaded; str() is one line naming every place tried."""


def candidates():
    """Where the library is looked for, in order: $KVBENCH_LIB; $KVBENCH_BUILD/libkvbench.so;
    the build tree of the repository this package sits in (python/kvbench -> build/); then the
    dynamic loader's search path (LD_LIBRARY_PATH, ldconfig's cache)."""
    if os.environ.get("KVBENCH_LIB"):
        return [os.environ["KVBENCH_LIB"]]  # named: nothing else is tried
    found = []
    if os.environ.get("KVBENCH_BUILD"):
        found.append(os.path.join(os.environ["KVBENCH_BUILD"], LIBRARY))
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found.append(os.path.join(repo, "build", LIBRARY))
    found.append(LIBRARY)
    return found


def load():
    """The library with its functions typed; LibraryNotFound when no candidate loads."""
    tried = []
    for path in candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except (OSError, ValueError) as e:  # ValueError: a NUL in the path
            tried.append(f"{path} ({' '.join(str(e).split())})")
            continue
        # Another library, or a libkvbench.so older than this package: name what it lacks.
        missing = [name for name in SYMBOLS if not hasattr(lib, name)]
        if missing:
            tried.append(f"{path} (no {', '.join(missing)}: not libkvbench.so, or one older "
                         f"than this package)")
            continue
        lib.kvbench_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.kvbench_main.restype = ctypes.c_int
        lib.kvbench_add_variant.argtypes = [ctypes.POINTER(Variant), ctypes.c_char_p,
                                            ctypes.c_char_p, ctypes.c_size_t]
        lib.kvbench_add_variant.restype = _i32
        lib.kvbench_set_worker_command.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.kvbench_set_worker_command.restype = _i32
        return lib
    raise LibraryNotFound(
        f"cannot load {LIBRARY}: tried {'; '.join(tried)}; build it (cmake --build build "
        f"--target kvbench_shared) or name it with $KVBENCH_LIB")


def c_strings(items):
    """A char*[] of `items` (str or bytes), and the bytes it points into (keep both alive). A str
    is encoded as the file system encodes it (os.fsencode), so a command-line argument that was
    not UTF-8 reaches kvbench as the bytes it was; ValueError when one cannot be encoded or holds
    a NUL (C would see it cut there)."""
    data = []
    for item in items:
        try:
            b = os.fsencode(item)
        except UnicodeError as e:
            raise ValueError(f"{item!r} cannot be encoded ({e.reason})") from None
        if b"\0" in b:
            raise ValueError(f"{item!r} holds a NUL byte")
        data.append(b)
    return (ctypes.c_char_p * (len(data) + 1))(*data, None), data
