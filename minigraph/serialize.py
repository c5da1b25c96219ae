"""Save and load graphs safely: JSON for the structure, ``.npz`` for the arrays.

``g.save("model.json")`` writes ``model.json`` and ``model.npz``; ``mg.load("model.json")``
rebuilds the graph through ``add_op``, op by op, so every shape and dtype is inferred and
checked again exactly as when the graph was built. Loading is ``read`` (parse the JSON, check
every op entry and the variables, read the arrays; nothing is built until all of it passed),
then ``rebuild``. Nothing is unpickled or evaluated: the JSON is read by a strict decoder (a
closed set of tagged values; descriptor and enum classes from a whitelist), and the arrays
without pickle, after their headers were checked against the declared shapes and dtypes and
their total against the load budget (``minigraph.limits.MAX_LOAD_BYTES``). Both files must be
regular files, and every read is bounded. A constant filled from a scalar is stored as the
scalar. Any problem raises ``SerializationError`` that names the op and the field.

MPSGraph's nearest equivalent is ``MPSGraphExecutable.serialize(package:descriptor:)``, which
writes a compiled ``.mpsgraphpackage``; this saves the (uncompiled) graph instead.
"""
from __future__ import annotations

import contextlib

import dataclasses
import enum
import hashlib
import json
import math
import os
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from typing import Any, NamedTuple, NoReturn, Optional

import numpy as np

from . import descriptors as _descriptors
from . import limits
from .errors import MiniGraphError, SerializationError
from .builder import block_captures
from .ir import OPS, Block
from .limits import MAX_ELEMENTS, MAX_RANK
from .listing import UNSAFE_CHARS, escape
from .ops.memory import filled_scalar, variable_operand_problem
from .types import FOUR_BIT, ALL_DTYPES, DataType, ShapedType, as_dtype, check_four_bit, feed_dtype, num_elements

FORMAT = "minigraph.graph"
VERSION = 2  # 2: a constant filled from a scalar is stored as {"$": "fill"}
READABLE_VERSIONS = (1, 2)
MAX_JSON_BYTES = 1 << 30
MAX_DEPTH = 16  # nesting of attribute values
DEFAULT_CACHE_SIZE = 64  # a loaded graph's run cache where the file says null (unbounded) or nothing
MAX_CACHE_SIZE = 1 << 20  # the largest run-cache bound a file may give
_DTYPES = {d.name: d for d in ALL_DTYPES}


def _classes(base) -> dict:
    return {n: c for n, c in vars(_descriptors).items() if isinstance(c, type) and issubclass(c, base)
            and c is not base and c.__module__ == _descriptors.__name__}


# Whitelists: only these classes are ever constructed on load. Op modules that add descriptor or
# enum classes elsewhere register them here (``register_class``).
DESCRIPTOR_CLASSES: dict = {n: c for n, c in _classes(_descriptors._Descriptor).items()
                            if dataclasses.is_dataclass(c)}
ENUM_CLASSES: dict = _classes(enum.Enum)
for _n in ("IntEnum", "Enum"):
    ENUM_CLASSES.pop(_n, None)


def register_class(cls: type) -> type:
    """Allow a descriptor dataclass or an Enum defined outside ``minigraph.descriptors``."""
    if isinstance(cls, type) and issubclass(cls, enum.Enum):
        ENUM_CLASSES[cls.__name__] = cls
    elif dataclasses.is_dataclass(cls) and hasattr(cls, "validate"):
        DESCRIPTOR_CLASSES[cls.__name__] = cls
    else:
        raise TypeError(f"{cls!r} is neither an Enum nor a descriptor dataclass with validate()")
    return cls


def file_path(path: Any, kind: str, what: str = "") -> str:
    """A path given by the user as a str: a str, bytes or os.PathLike without NUL characters, else
    a SerializationError naming the ``kind`` of file (and ``what`` asked for it)."""
    prefix = f"{what}: " if what else ""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise SerializationError(f"{prefix}a {kind} path must be a str, bytes or os.PathLike, got "
                                 f"{type(path).__name__} {_short(path)}")
    try:
        p = os.fsdecode(os.fspath(path))
    except (TypeError, ValueError) as e:  # a PathLike whose __fspath__ returns something else
        raise SerializationError(f"{prefix}invalid {kind} path {_short(path)}: {e}") from None
    if "\0" in p:
        raise SerializationError(f"{prefix}invalid {kind} path {_short(p)}: it holds a NUL character")
    return p


def _paths(path) -> tuple:
    p = file_path(path, "graph file")
    if os.path.isdir(p):  # a directory holds graph.json and graph.npz
        p = os.path.join(p, "graph.json")
    root, ext = os.path.splitext(p)
    if ext.lower() == ".npz":
        raise SerializationError(f"{p!r}: give the path of the .json file; the arrays go next to it "
                                 f"in {root + '.npz'!r}")
    return p, root + ".npz"



# ------------------------------------------------------------------------------------ encoding
class _Encoder:
    def __init__(self):
        self.arrays: dict = {}
        self.by_id: dict = {}

    def array(self, a: np.ndarray, where: str) -> dict:
        a = np.asarray(a)
        if a.dtype.name not in _DTYPES or a.dtype.hasobject:
            raise SerializationError(f"{where}: arrays of dtype {a.dtype} cannot be saved; "
                                     f"valid: {', '.join(_DTYPES)}")
        key = self.by_id.get(id(a))  # a variable's unchanged value is its initial value: store once
        if key is None:
            key = f"a{len(self.arrays)}"
            self.arrays[key] = (a, np.asarray(a, order="C"))  # keeps `a` alive, so its id stays unique
            self.by_id[id(a)] = key
        return {"$": "array", "key": key, "dtype": a.dtype.name, "shape": list(a.shape)}

    def constant_value(self, a: np.ndarray, where: str) -> dict:
        """A constant's value: its one element and shape if it was filled from a scalar, else an array."""
        x = filled_scalar(a)
        if x is None or x.dtype.kind == "c":  # JSON has no complex numbers: a complex fill is stored whole
            return self.array(a, where)
        if x.dtype.name not in _DTYPES:
            raise SerializationError(f"{where}: arrays of dtype {x.dtype} cannot be saved")
        return {"$": "fill", "dtype": x.dtype.name, "shape": list(a.shape), "v": self.value(x.item(), where, 1)}

    def value(self, v: Any, where: str, depth: int = 0) -> Any:
        """The JSON form of an attribute value: the first entry of ``_ENCODERS`` that ``v`` is an
        instance of encodes it; descriptor dataclasses after those."""
        if depth > MAX_DEPTH:
            raise SerializationError(f"{where}: value nested deeper than {MAX_DEPTH}")
        for typ, encode in _ENCODERS.items():
            if isinstance(v, typ):
                return encode(self, v, where, depth)
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return _encode_descriptor(self, v, where, depth)
        raise SerializationError(f"{where}: a value of type {type(v).__name__} cannot be saved "
                                 "(supported: None, bool, int, float, str, tuple, list, dict, ndarray, "
                                 "DataType, ShapedType, registered enums and descriptors)")


def _encode_plain(enc: _Encoder, v: Any, where: str, depth: int) -> Any:
    return v


def _encode_float(enc: _Encoder, v: float, where: str, depth: int) -> Any:
    return v if math.isfinite(v) else {"$": "float", "v": repr(v)}


def _encode_array(enc: _Encoder, v: np.ndarray, where: str, depth: int) -> dict:
    return enc.array(v, where)


def _encode_scalar(enc: _Encoder, v: np.generic, where: str, depth: int) -> dict:
    if v.dtype.name not in _DTYPES:
        raise SerializationError(f"{where}: scalars of dtype {v.dtype} cannot be saved")
    return {"$": "scalar", "dtype": v.dtype.name, "v": enc.value(v.item(), where, depth + 1)}


def _encode_dtype(enc: _Encoder, v: DataType, where: str, depth: int) -> dict:
    return {"$": "dtype", "v": v.name}


def _encode_shaped_type(enc: _Encoder, v: ShapedType, where: str, depth: int) -> dict:
    return {"$": "shaped_type", "shape": list(v.shape), "dtype": v.dtype.name}


def _encode_enum(enc: _Encoder, v: enum.Enum, where: str, depth: int) -> dict:
    cls = type(v)
    if ENUM_CLASSES.get(cls.__name__) is not cls:
        raise SerializationError(f"{where}: enum {cls.__name__} is not registered for saving "
                                 "(minigraph.serialize.register_class)")
    return {"$": "enum", "class": cls.__name__, "v": v.name}


def _encode_descriptor(enc: _Encoder, v: Any, where: str, depth: int) -> dict:
    cls = type(v)
    if DESCRIPTOR_CLASSES.get(cls.__name__) is not cls:
        raise SerializationError(f"{where}: descriptor class {cls.__name__} is not registered for "
                                 "saving (minigraph.serialize.register_class)")
    return {"$": "descriptor", "class": cls.__name__,
            "fields": {f.name: enc.value(getattr(v, f.name), f"{where}.{f.name}", depth + 1)
                       for f in dataclasses.fields(v)}}


def _encode_tuple(enc: _Encoder, v: tuple, where: str, depth: int) -> list:
    return [enc.value(x, where, depth + 1) for x in v]


def _encode_list(enc: _Encoder, v: list, where: str, depth: int) -> dict:
    return {"$": "list", "v": [enc.value(x, where, depth + 1) for x in v]}


def _encode_dict(enc: _Encoder, v: dict, where: str, depth: int) -> dict:
    if not all(isinstance(k, str) for k in v):
        raise SerializationError(f"{where}: only dicts with string keys can be saved")
    return {"$": "dict", "v": {k: enc.value(x, f"{where}.{k}", depth + 1) for k, x in v.items()}}


# type -> encoder, tried in this order (the first isinstance match wins): bool before int, float
# before enums (a float enum stays a float), enums before int (an IntEnum is tagged), numpy floats
# (float subclasses) are plain floats, other numpy scalars are tagged.
_ENCODERS: dict = {
    type(None): _encode_plain,
    bool: _encode_plain,
    str: _encode_plain,
    float: _encode_float,
    enum.Enum: _encode_enum,
    int: _encode_plain,
    np.ndarray: _encode_array,
    np.generic: _encode_scalar,
    DataType: _encode_dtype,
    ShapedType: _encode_shaped_type,
    tuple: _encode_tuple,
    list: _encode_list,
    dict: _encode_dict,
}


def to_json_dict(g) -> tuple:
    """(the JSON document without the npz checksum, {key: array}) for a graph."""
    enc = _Encoder()
    ops = []
    block_key = {id(b): f"{op.name}#{i}" for op in g.operations for i, b in enumerate(op.blocks)}
    for op in _saved_ops(g, block_key):
        where = f"{op.type} op {op.name!r}"
        _check_saved_names(op, g.user_name_of(op), where)
        ops.append({
            "name": op.name,
            "type": op.type,
            "requested_name": op.requested_name,
            "user_name": g.user_name_of(op),
            "from_gradients": op.from_gradients,
            "inputs": [[t.operation.name, t.index] for t in op.inputs],
            "control_dependencies": [d.name for d in op.control_dependencies],
            "attrs": {k: enc.constant_value(v, f"{where} attribute {k!r}") if (op.type, k) == ("constant", "value")
                      else enc.value(v, f"{where} attribute {k!r}") for k, v in op.attrs.items() if k != "blocks"},
            **({"block": block_key[id(op.block)]} if op.block is not None else {}),
            **({"blocks": [_block_entry(b) for b in op.blocks]} if op.blocks else {}),
            "outputs": [{"shape": list(t.shape), "dtype": t.dtype.name} for t in op.outputs],
            "location": escape(op.location) if isinstance(op.location, str) else op.location,  # informative only
            **({"trainable": False} if op.type == "variable" and not _trainable(g, op) else {}),  # optimizer state
        })
    variables = {}
    for op, v in g.variable_store.values.items():
        variables[op.name] = enc.array(v, f"variable {op.name!r} value")["key"]
    cache_size = g.cache_size if g.cache_size is None else min(g.cache_size, MAX_CACHE_SIZE)  # load's bound
    doc = {"format": FORMAT, "version": VERSION, "cache_size": cache_size,
           "ops": ops, "variables": variables}
    return doc, {k: a for k, (_, a) in enc.arrays.items()}


def _saved_ops(g: Any, block_key: dict) -> list:
    """The graph's ops but those left in a block whose control-flow op was never built (its
    builder raised): nothing else can read them."""
    owner = {id(b): op for op in g.operations for b in op.blocks}

    def kept(op) -> bool:
        while op.block is not None:
            if id(op.block) not in block_key:
                return False
            op = owner[id(op.block)]
        return True
    return [op for op in g.operations if kept(op)]


def _block_entry(b: Block) -> dict:
    """A control-flow block as saved: its name, argument ops and result tensors (its ops say
    which block they are in; its captures are found again from them)."""
    return {"name": b.name, "arguments": [a.operation.name for a in b.arguments],
            "results": [[t.operation.name, t.index] for t in b.results]}


def _trainable(g: Any, op: Any) -> bool:
    """Whether a variable op is in ``g.trainable_variables`` (by identity: ``==`` on tensors builds ops)."""
    return any(t is op.outputs[0] for t in g.trainable_variables)


def _check_saved_names(op: Any, user_name: Optional[str], where: str) -> None:
    """Names with control characters would make a file that load refuses: refuse them now."""
    for what, v in (("name", op.name), ("requested name", op.requested_name), ("user name", user_name)):
        if isinstance(v, str) and UNSAFE_CHARS.search(v):
            raise SerializationError(f"{escape(where)}: its {what} {escape(repr(v))} holds a control or "
                                     "bidirectional character, which a graph file cannot hold; rename the op")


def _atomic_write(path: str, write) -> None:
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".minigraph-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save(g, path) -> str:
    """Write the graph to ``path`` (JSON) and its constant and variable values next to it
    (same name, ``.npz``). Variables are saved with their current values. Returns the JSON path.

    MPSGraph saves compiled executables instead (``serialize(package:descriptor:)``).

    Args:
        path: The JSON file to write; the arrays go to the same name with ``.npz``.
    """
    json_path, npz_path = _paths(path)
    doc, arrays = to_json_dict(g)
    try:
        _atomic_write(npz_path, lambda f: np.savez(f, **arrays))
        with open(npz_path, "rb") as f:
            doc["npz_sha256"] = _sha256(f, os.fstat(f.fileno()).st_size, repr(npz_path))
        text = json.dumps(doc, indent=1, allow_nan=False)
        _atomic_write(json_path, lambda f: f.write(text.encode("utf-8")))
    except OSError as e:
        raise SerializationError(f"cannot save the graph to {json_path!r}: {e}") from None
    return json_path


# ------------------------------------------------------------------------------------ decoding
def _fail(where: str, msg: str) -> NoReturn:
    raise SerializationError(f"{where}: {msg}")


def _want(obj: Any, typ, where: str, what: str):
    if typ is int:
        ok = isinstance(obj, int) and not isinstance(obj, bool)
    else:
        ok = isinstance(obj, typ)
    if not ok:
        name = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
        _fail(where, f"{what} must be a {name}, got {type(obj).__name__} {_short(obj)}")
    return obj


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _keys(d: dict, required: set, optional: set, where: str) -> None:
    missing = required - set(d)
    extra = set(d) - required - optional
    if missing:
        _fail(where, f"missing field(s) {sorted(missing)}")
    if extra:
        _fail(where, f"unknown field(s) {sorted(extra)}")


def _dtype(name: Any, where: str) -> DataType:
    if not isinstance(name, str) or name not in _DTYPES:
        _fail(where, f"unknown dtype {_short(name)}; valid: {', '.join(_DTYPES)}")
    return _DTYPES[name]


def _shape(v: Any, where: str, dynamic: bool = True) -> tuple:
    _want(v, list, where, "shape")
    if len(v) > MAX_RANK:
        _fail(where, f"shape has rank {len(v)}, more than {MAX_RANK}")
    for d in v:
        if isinstance(d, bool) or not isinstance(d, int) or d < (-1 if dynamic else 0):
            _fail(where, f"shape {_short(v)} must hold ints >= {-1 if dynamic else 0}")
    n = num_elements([d for d in v if d > 0])
    if n > MAX_ELEMENTS:
        _fail(where, f"declared shape {v} has {n} elements, more than the limit {MAX_ELEMENTS}")
    return tuple(v)


class _Decoder:
    def __init__(self, arrays: dict):
        self.arrays = arrays  # key -> (dtype, shape), filled with ndarrays after the npz is read
        self.used: set = set()
        self.fill_ok = False  # a fill is a constant's value, nothing else (a huge lazy array elsewhere is a trap)

    def value(self, v: Any, where: str, depth: int = 0) -> Any:
        """The Python value of a JSON attribute value: plain JSON by its type (``_PLAIN``), an
        object by its ``"$"`` tag (``_DECODERS``)."""
        if depth > MAX_DEPTH:
            _fail(where, f"value nested deeper than {MAX_DEPTH}")
        plain = _PLAIN.get(type(v))
        if plain is not None:
            return plain(self, v, where, depth)
        if not isinstance(v, dict):
            _fail(where, f"unexpected value {_short(v)}")
        tag = v.get("$")
        decode = _DECODERS.get(tag) if isinstance(tag, str) else None
        if decode is None:
            _fail(where, f"unknown value tag {_short(tag)}")
        return decode(self, v, where, depth)

    def array_ref(self, v: dict, where: str) -> Any:
        key = v["key"]
        if not isinstance(key, str) or not key.isidentifier() or len(key) > 64:
            _fail(where, f"invalid array key {_short(key)}")
        spec = (_dtype(v["dtype"], where), _shape(v["shape"], where, dynamic=False))
        prev = self.arrays.get(key)
        if prev is not None and (prev[0], prev[1]) != spec:
            _fail(where, f"array {key!r} is declared twice with different types")
        self.arrays[key] = spec
        self.used.add(key)
        return _ArrayRef(key)


class _ArrayRef:
    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key


# ---- plain JSON values, by type
def _decode_plain(dec: _Decoder, v: Any, where: str, depth: int) -> Any:
    return v


def _decode_float(dec: _Decoder, v: float, where: str, depth: int) -> float:
    if not math.isfinite(v):
        _fail(where, "non-finite numbers must be tagged {\"$\": \"float\"}")
    return v


def _decode_tuple(dec: _Decoder, v: list, where: str, depth: int) -> tuple:
    return tuple(dec.value(x, where, depth + 1) for x in v)


_PLAIN: dict = {type(None): _decode_plain, bool: _decode_plain, str: _decode_plain, int: _decode_plain,
                float: _decode_float, list: _decode_tuple}


# ---- tagged values {"$": tag, ...}, by tag
def _decode_tagged_float(dec: _Decoder, v: dict, where: str, depth: int) -> float:
    _keys(v, {"$", "v"}, set(), where)
    if v["v"] not in ("nan", "inf", "-inf"):
        _fail(where, f"tagged float must be 'nan', 'inf' or '-inf', got {_short(v['v'])}")
    return float(v["v"])


def _decode_list(dec: _Decoder, v: dict, where: str, depth: int) -> list:
    _keys(v, {"$", "v"}, set(), where)
    return [dec.value(x, where, depth + 1) for x in _want(v["v"], list, where, "list value")]


def _decode_dict(dec: _Decoder, v: dict, where: str, depth: int) -> dict:
    _keys(v, {"$", "v"}, set(), where)
    return {k: dec.value(x, f"{where}.{k}", depth + 1)
            for k, x in _want(v["v"], dict, where, "dict value").items()}


def _decode_dtype(dec: _Decoder, v: dict, where: str, depth: int) -> DataType:
    _keys(v, {"$", "v"}, set(), where)
    return _dtype(v["v"], where)


def _decode_shaped_type(dec: _Decoder, v: dict, where: str, depth: int) -> ShapedType:
    _keys(v, {"$", "shape", "dtype"}, set(), where)
    return ShapedType(_shape(v["shape"], where), _dtype(v["dtype"], where))


def _decode_scalar(dec: _Decoder, v: dict, where: str, depth: int) -> Any:
    _keys(v, {"$", "dtype", "v"}, set(), where)
    return _scalar(dec, _dtype(v["dtype"], where), v["v"], where, depth)


def _decode_fill(dec: _Decoder, v: dict, where: str, depth: int) -> np.ndarray:
    """A constant filled from a scalar: a read-only broadcast view of the one element."""
    _keys(v, {"$", "dtype", "shape", "v"}, set(), where)
    if not (dec.fill_ok and depth == 0):
        _fail(where, "a fill is only valid as the value of a constant op")
    dt = _dtype(v["dtype"], where)
    shape = _shape(v["shape"], where, dynamic=False)
    return np.broadcast_to(np.array(_scalar(dec, dt, v["v"], where, depth), dt.np_dtype), shape)


def _scalar(dec: _Decoder, dt: DataType, raw: Any, where: str, depth: int) -> Any:
    """The value ``raw`` as a NumPy scalar of ``dt``; refused if it does not fit exactly."""
    x = dec.value(raw, where, depth + 1)
    if isinstance(x, (tuple, list, dict)) or x is None or isinstance(x, str):
        _fail(where, f"scalar value must be a number or bool, got {_short(raw)}")
    if (dt.np_dtype.kind == "b" and not isinstance(x, bool)) or (dt.np_dtype.kind in "iu" and not isinstance(x, int)):
        _fail(where, f"{_short(x)} is not a {dt.name} value")
    try:
        with np.errstate(all="raise"):
            return dt.np_dtype.type(x)
    except (OverflowError, ValueError, TypeError, FloatingPointError):
        _fail(where, f"{_short(x)} does not fit {dt.name}")


def _decode_enum(dec: _Decoder, v: dict, where: str, depth: int) -> enum.Enum:
    _keys(v, {"$", "class", "v"}, set(), where)
    cls = ENUM_CLASSES.get(v["class"]) if isinstance(v["class"], str) else None
    if cls is None:
        _fail(where, f"unknown enum class {_short(v['class'])}; known: {', '.join(sorted(ENUM_CLASSES))}")
    if not isinstance(v["v"], str) or v["v"] not in cls.__members__:
        _fail(where, f"{_short(v['v'])} is not a {cls.__name__}; valid: {', '.join(cls.__members__)}")
    return cls[v["v"]]


def _decode_descriptor(dec: _Decoder, v: dict, where: str, depth: int) -> Any:
    _keys(v, {"$", "class", "fields"}, set(), where)
    cls = DESCRIPTOR_CLASSES.get(v["class"]) if isinstance(v["class"], str) else None
    if cls is None:
        _fail(where, f"unknown descriptor class {_short(v['class'])}; known: "
              f"{', '.join(sorted(DESCRIPTOR_CLASSES))}")
    fields = _want(v["fields"], dict, where, "descriptor fields")
    _keys(fields, {f.name for f in dataclasses.fields(cls)}, set(), f"{where} ({cls.__name__})")
    kw = {k: dec.value(x, f"{where}.{k}", depth + 1) for k, x in fields.items()}
    for k, x in kw.items():
        if isinstance(x, (dict, list, str, _ArrayRef)) or x is None:
            _fail(where, f"descriptor field {k} has an invalid value {_short(x)}")
    return _make_descriptor(cls, kw, where)


def _make_descriptor(cls: type, kw: dict, where: str) -> Any:
    """``cls(**kw)``, validated, with every field already in its canonical form."""
    try:
        d = cls(**kw)
        d.validate()  # type: ignore[attr-defined]  # every whitelisted descriptor has validate()
    except MiniGraphError as e:
        _fail(where, f"invalid {cls.__name__}: {e}")
    except Exception as e:  # hostile field types must not escape as raw errors
        _fail(where, f"invalid {cls.__name__}: {type(e).__name__}: {e}")
    for k, x in kw.items():  # validate() normalises types; the values must be unchanged
        if getattr(d, k) != x:
            _fail(where, f"descriptor field {k}={_short(x)} is not in its canonical form")
    return d


def _decode_array(dec: _Decoder, v: dict, where: str, depth: int) -> _ArrayRef:
    _keys(v, {"$", "key", "dtype", "shape"}, set(), where)
    return dec.array_ref(v, where)


_DECODERS: dict = {
    "float": _decode_tagged_float,
    "list": _decode_list,
    "dict": _decode_dict,
    "dtype": _decode_dtype,
    "shaped_type": _decode_shaped_type,
    "scalar": _decode_scalar,
    "enum": _decode_enum,
    "descriptor": _decode_descriptor,
    "array": _decode_array,
    "fill": _decode_fill,
}


# ------------------------------------------------------------------------------------ the arrays
_NPZ_MEMBER_OVERHEAD = 1 << 17  # per array: the .npy header (at most 64 KiB here) and zip headers
_ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}


def _read_npz(npz_path: str, specs: dict, sha256: Any, budget: int) -> dict:
    """The arrays of the npz, each checked against its declared dtype and shape before reading.

    The declared sizes must fit ``budget`` and the file must be no larger than they need; the
    file is hashed and read in place (never whole in memory), and each array is read into the
    one array that is returned.
    """
    if not specs:
        return {}
    where = f"{npz_path!r}"
    declared = sum(dt.itemsize * num_elements(shape) for dt, shape in specs.values())
    if declared > budget:
        _fail(where, f"the .json declares {len(specs)} arrays of {declared} bytes in total, more than the "
              f"load budget of {budget} bytes (minigraph.limits.MAX_LOAD_BYTES; this machine's memory "
              "by default)")
    missing = (f"missing: the .json refers to {len(specs)} arrays (constants and variables) that are "
               "stored in this .npz next to it")
    with _open_regular(npz_path, where, missing) as f:
        limit = declared + declared // 1024 + _NPZ_MEMBER_OVERHEAD * (len(specs) + 1)
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            _fail(where, f"is {size} bytes, more than its {len(specs)} declared arrays can take ({limit} bytes)")
        if sha256 is not None and _sha256(f, limit, where) != sha256:
            _fail(where, "does not match its .json (checksum differs): the two files were not saved together, "
                  "or one was modified")
        try:
            f.seek(0)
            with zipfile.ZipFile(f) as zf:
                _check_members(zf, specs, where)
                return _load_arrays(zf, specs, where)
        except SerializationError:
            raise
        except Exception as e:  # hostile bytes (bad zip, bad header, short data) never escape raw
            _fail(where, f"corrupt or truncated .npz: {type(e).__name__}: {e}")


def _sha256(f: Any, limit: int, where: str) -> str:
    """The SHA-256 of the file's bytes, read in 1 MiB blocks (at most ``limit`` of them)."""
    h = hashlib.sha256()
    total = 0
    try:
        while True:
            block = f.read(1 << 20)
            if not block:
                return h.hexdigest()
            total += len(block)
            if total > limit:
                _fail(where, f"is more than its declared arrays can take ({limit} bytes)")
            h.update(block)
    except OSError as e:
        _fail(where, f"cannot read: {e}")


def _check_members(zf: zipfile.ZipFile, specs: dict, where: str) -> None:
    """Exactly the declared arrays, each with the declared dtype and shape in its .npy header."""
    names = set(zf.namelist())
    extra = names - {k + ".npy" for k in specs}
    if extra:
        _fail(where, f"unexpected arrays {sorted(extra)[:5]} (not referenced by the .json)")
    for key, (dt, shape) in specs.items():
        _check_member(zf, names, key, dt, shape, where)


def _check_member(zf: zipfile.ZipFile, names: set, key: str, dt: DataType, shape: tuple, where: str) -> None:
    member = key + ".npy"
    if member not in names:
        _fail(where, f"array {key!r} is missing")
    info = zf.getinfo(member)
    if info.flag_bits & 0x1:
        _fail(where, f"array {key!r} is encrypted; graph files hold plain (stored or deflated) arrays")
    if info.compress_type not in _ZIP_METHODS:
        _fail(where, f"array {key!r} uses zip compression method {info.compress_type}; graph files "
              f"hold {' or '.join(_ZIP_METHODS.values())} arrays")
    nbytes = dt.itemsize * num_elements(shape)
    if info.file_size > nbytes + 65536:
        _fail(where, f"array {key!r} declares {info.file_size} bytes, but a {dt.name}{list(shape)} "
              f"array needs {nbytes}")
    with zf.open(member) as f:
        hshape, hdtype = _npy_header(f, key, where)
    if hdtype.hasobject or hdtype != dt.np_dtype or tuple(hshape) != tuple(shape):
        _fail(where, f"array {key!r} is {hdtype}{list(hshape)}, but the .json declares "
              f"{dt.name}{list(shape)}")


def _npy_header(f: Any, key: str, where: str) -> tuple:
    """(shape, dtype) from a .npy header of a version this loader reads."""
    version = np.lib.format.read_magic(f)
    read_header = _NPY_HEADER_READERS.get(version)
    if read_header is None:
        _fail(where, f"array {key!r} has an unsupported .npy version {version}")
    hshape, _fortran, hdtype = read_header(f)
    return hshape, hdtype


_NPY_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0,
                       (2, 0): np.lib.format.read_array_header_2_0}


def _load_arrays(zf: zipfile.ZipFile, specs: dict, where: str) -> dict:
    """The checked arrays, read without pickle straight into the arrays returned, read-only."""
    out = {}
    for key, (dt, shape) in specs.items():
        with zf.open(key + ".npy") as f:
            a = np.lib.format.read_array(f, allow_pickle=False)
        if a.dtype != dt.np_dtype or a.shape != tuple(shape):
            _fail(where, f"array {key!r} is {a.dtype}{list(a.shape)}, expected {dt.name}{list(shape)}")
        if not a.flags.c_contiguous:  # a Fortran-order array (save never writes one) becomes C order
            a = a.copy(order="C")
        a.setflags(write=False)
        out[key] = a
    return out


def _resolve(v: Any, arrays: dict) -> Any:
    if isinstance(v, _ArrayRef):
        return arrays[v.key]
    if isinstance(v, tuple):
        return tuple(_resolve(x, arrays) for x in v)
    if isinstance(v, list):
        return [_resolve(x, arrays) for x in v]
    if isinstance(v, dict):
        return {k: _resolve(x, arrays) for k, x in v.items()}
    return v


def _no_constants(c: str):
    raise SerializationError(f"invalid JSON constant {c} (non-finite numbers must be tagged)")


@dataclass
class Document:
    """A checked graph file: its op entries, variable array keys and arrays, ready to rebuild."""

    where: str  # the JSON path, for messages
    cache_size: int  # never None: a loaded graph's run cache is bounded
    entries: list
    var_keys: dict
    arrays: dict


def read(path: Any, max_bytes: Optional[int] = None) -> Document:
    """Read and check a graph saved with ``g.save(path)``; ``SerializationError`` on any bad input.

    Parse the JSON, check every op entry and the variables (decoding attributes into values with
    array references), then read the arrays those references declare. Nothing is built.

    Args:
        path: The JSON file ``g.save`` wrote (its ``.npz`` must sit next to it).
        max_bytes: The most bytes the arrays may declare in total (default:
            ``minigraph.limits.load_budget()``), checked before any is read.
    """
    json_path, npz_path = _paths(path)
    where = repr(json_path)
    doc = _parse_document(json_path, where)
    dec = _Decoder({})
    entries, seen = _check_ops(doc["ops"], dec, where)
    var_keys = _check_variables(doc["variables"], entries, seen, dec, where)
    budget = limits.load_budget() if max_bytes is None else max_bytes
    arrays = _read_npz(npz_path, {k: dec.arrays[k] for k in sorted(dec.used)}, doc.get("npz_sha256"), budget)
    return Document(where, _cache_size(doc), entries, var_keys, arrays)


def _cache_size(doc: dict) -> int:
    """The loaded graph's run-cache bound: the file's, where null (an unbounded cache where the
    file was saved) or absent is the default; a file never makes a graph's cache unbounded."""
    size = doc.get("cache_size")
    return DEFAULT_CACHE_SIZE if size is None else size


# ------------------------------------------------------------------------------------ parse
def _parse_document(json_path: str, where: str) -> dict:
    """The JSON document, within the size limit, of our format and version, with its top-level
    fields checked (``ops``, ``variables``, ``cache_size``, ``npz_sha256``)."""
    doc = _parse_json(_read_json_bytes(json_path, where), where)
    _check_format(doc, where)
    _keys(doc, {"format", "version", "ops", "variables"}, {"cache_size", "npz_sha256"}, where)
    _want(doc["ops"], list, where, "ops")
    _want(doc["variables"], dict, where, "variables")
    cache_size = doc.get("cache_size", DEFAULT_CACHE_SIZE)
    if cache_size is not None and (isinstance(cache_size, bool) or not isinstance(cache_size, int)
                                   or not 0 <= cache_size <= MAX_CACHE_SIZE):
        _fail(where, f"cache_size must be null or an int in 0..{MAX_CACHE_SIZE}, got {_short(cache_size)}")
    sha = doc.get("npz_sha256")
    if sha is not None and not (isinstance(sha, str) and len(sha) == 64):
        _fail(where, "npz_sha256 must be a 64-character hex string")
    return doc


def _read_json_bytes(json_path: str, where: str) -> bytes:
    with _open_regular(json_path, where, "no such file") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_JSON_BYTES:
            _fail(where, f"is {size} bytes, more than the limit {MAX_JSON_BYTES}")
        data = _read_at_most(f, MAX_JSON_BYTES, where)
    if len(data) > MAX_JSON_BYTES:
        _fail(where, f"is more than the limit {MAX_JSON_BYTES} bytes")
    return data


def _open_regular(path: str, where: str, missing: str, kind: str = "graph files") -> Any:
    """``path`` opened for reading, which must be a regular file (after following links): a
    device such as /dev/zero never ends, and a FIFO blocks, so neither is opened for reading.
    ``kind`` names the files in the message (checkpoints are read through it too)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            _fail(where, f"is not a regular file ({_file_kind(st.st_mode)}); {kind} are regular files")
        # O_NONBLOCK: a FIFO swapped in since the stat cannot block the open; fstat then refuses it
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except SerializationError:
        raise
    except FileNotFoundError:
        _fail(where, missing)
    except (OSError, ValueError) as e:
        _fail(where, f"cannot read: {e}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _fail(where, f"is not a regular file ({_file_kind(st.st_mode)}); {kind} are regular files")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


open_regular = _open_regular  # checkpoint.read opens its files the same way


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a plain file"


def _read_at_most(f: Any, limit: int, where: str) -> bytes:
    """Up to ``limit + 1`` bytes of ``f`` (one more than allowed tells the caller it is too long),
    read in 1 MiB blocks so that memory follows the file's real size."""
    blocks, total = [], 0
    try:
        while total <= limit:
            block = f.read(min(1 << 20, limit + 1 - total))
            if not block:
                break
            blocks.append(block)
            total += len(block)
    except OSError as e:
        _fail(where, f"cannot read: {e}")
    return b"".join(blocks)


def _parse_json(raw: bytes, where: str) -> dict:
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
    except SerializationError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        _fail(where, f"not valid JSON (corrupt or truncated?): {e}")
    return _want(doc, dict, where, "the document")


def _check_format(doc: dict, where: str) -> None:
    if doc.get("format") != FORMAT:
        _fail(where, f"not a minigraph graph file (format {_short(doc.get('format'))}, expected {FORMAT!r})")
    version = doc.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        _fail(where, f"version must be an int, got {_short(version)}")
    if version not in READABLE_VERSIONS:
        _fail(where, f"schema version {version} is not supported by this minigraph (it reads versions "
              f"{', '.join(map(str, READABLE_VERSIONS))}){'; upgrade minigraph' if version > VERSION else ''}")


# ------------------------------------------------------------------------------------ check
class _Entry(NamedTuple):
    """One checked op entry of the file, its attributes decoded (arrays as ``_ArrayRef``)."""

    name: str
    type: str
    inputs: list  # [(op name, output index)]
    deps: list  # op names
    attrs: dict
    outputs: list  # [(shape, DataType)]
    raw: dict  # the entry as read (its optional string fields)


def _array_attr(typ: str) -> Optional[str]:
    """The attribute holding a source op's array (its declared hidden attribute); None for the
    placeholder, which is fed, so its declared shape may be dynamic."""
    return next(iter(OPS[typ].hidden_attrs), None)


def _check_ops(ops: list, dec: _Decoder, where: str) -> tuple:
    """(the checked entries, {op name: index}): structure checked, attributes decoded, every
    edge to an earlier op."""
    seen: dict = {}
    entries: list = []
    for i, e in enumerate(ops):
        entry = _check_entry(i, e, ops, seen, dec, where)
        seen[entry.name] = i
        entries.append(entry)
    return entries, seen


def _check_entry(i: int, e: Any, ops: list, seen: dict, dec: _Decoder, where: str) -> _Entry:
    w = f"{where}: op #{i}"
    _want(e, dict, w, "op entry")
    _keys(e, {"name", "type", "inputs", "control_dependencies", "attrs", "outputs"},
          {"requested_name", "user_name", "location", "from_gradients", "trainable", "block", "blocks"}, w)
    if "trainable" in e and not isinstance(e["trainable"], bool):
        _fail(w, f"trainable must be true or false, got {e['trainable']!r:.40}")
    name, typ, w = _check_name_and_type(e, seen, w, where, i)
    opdef = OPS[typ]
    inputs = _check_inputs(e, ops, seen, w)
    _check_operands(opdef, inputs, ops, seen, w)
    deps = _check_deps(e, seen, w)
    attrs = _check_attrs(opdef, _want(e["attrs"], dict, w, "attrs"), dec, w)
    outs = _check_outputs(e, w)
    _check_strings(e, w)
    if opdef.internal and not opdef.inputs:  # placeholder, constant, variable: a declared type
        _check_source_attrs(typ, attrs, dec, w)
    return _Entry(name, typ, inputs, deps, attrs, outs, e)


def _check_name_and_type(e: dict, seen: dict, w: str, where: str, i: int) -> tuple:
    """(name, type, the op's label for messages): a new name and a known op type."""
    name = _want(e["name"], str, w, "name")
    if not name or len(name) > 1024:
        _fail(w, "name must be a non-empty string of at most 1024 characters")
    _printable(name, w, "name")
    w = f"{where}: op #{i} {name!r}"
    typ = _want(e["type"], str, w, "type")
    if typ not in OPS:
        _fail(w, f"unknown op type {_short(typ)} (this minigraph knows {len(OPS)} op types; "
              "was the file written by a newer version, or with an extension module not imported?)")
    w = f"{where}: {typ} op #{i} {name!r}"
    if name in seen:
        _fail(w, f"duplicate op name {name!r} (op names are unique)")
    return name, typ, w


def _check_inputs(e: dict, ops: list, seen: dict, w: str) -> list:
    inputs = []
    for j, ref in enumerate(_want(e["inputs"], list, w, "inputs")):
        if not (isinstance(ref, list) and len(ref) == 2 and isinstance(ref[0], str)
                and isinstance(ref[1], int) and not isinstance(ref[1], bool)):
            _fail(w, f"input {j} must be [op name, output index], got {_short(ref)}")
        src = seen.get(ref[0])
        if src is None:
            _fail(w, f"input {j} refers to {ref[0]!r}, which is not an earlier op (dangling edge)")
        if not 0 <= ref[1] < len(ops[src]["outputs"]):
            _fail(w, f"input {j} refers to output {ref[1]} of {ref[0]!r}, which has "
                  f"{len(ops[src]['outputs'])} output(s)")
        inputs.append((ref[0], ref[1]))
    return inputs


def _check_operands(opdef: Any, inputs: list, ops: list, seen: dict, w: str) -> None:
    """As many inputs as the op declares (one or more for a list of ``tensors``, as concat takes),
    each of a kind the op accepts (read and assign take a variable)."""
    if opdef.inputs == ("tensors",):
        if not inputs:
            _fail(w, f"has no inputs; {opdef.type} takes a non-empty list of tensors")
    elif len(inputs) != len(opdef.inputs):
        _fail(w, f"has {len(inputs)} input(s), but {opdef.type} takes {len(opdef.inputs)}"
              + (f" ({', '.join(opdef.inputs)})" if opdef.inputs else ""))
    if inputs:
        problem = variable_operand_problem(opdef.type, ops[seen[inputs[0][0]]]["type"])
        if problem:
            _fail(w, f"input 0 ({inputs[0][0]!r}): {problem}")


def _check_attrs(opdef: Any, raw: dict, dec: _Decoder, w: str) -> dict:
    """The decoded attributes, whose names the op declares (a constant's value may be a fill)."""
    known = set(opdef.attr_names)
    unknown = sorted(set(raw) - known)
    if unknown:
        _fail(w, f"unknown attribute(s) {_short(unknown)}; {opdef.type} has "
              + (", ".join(sorted(known)) if known else "none"))
    attrs = {}
    for k, x in raw.items():
        dec.fill_ok = (opdef.type, k) == ("constant", "value")
        try:
            attrs[k] = dec.value(x, f"{w} attribute {k!r}")
        finally:
            dec.fill_ok = False
    return attrs


def _check_deps(e: dict, seen: dict, w: str) -> list:
    deps = []
    for d in _want(e["control_dependencies"], list, w, "control_dependencies"):
        if not isinstance(d, str) or d not in seen:
            _fail(w, f"control dependency {_short(d)} is not an earlier op (dangling edge)")
        deps.append(d)
    return deps


def _check_outputs(e: dict, w: str) -> list:
    outs = []
    for j, o in enumerate(_want(e["outputs"], list, w, "outputs")):
        _want(o, dict, w, f"output {j}")
        _keys(o, {"shape", "dtype"}, set(), f"{w} output {j}")
        outs.append((_shape(o["shape"], f"{w} output {j}"), _dtype(o["dtype"], f"{w} output {j}")))
    return outs


def _check_strings(e: dict, w: str) -> None:
    for k in ("requested_name", "user_name", "location"):
        if e.get(k) is not None:
            _want(e[k], str, w, k)
            if len(e[k]) > 4096:
                _fail(w, f"{k} is longer than 4096 characters")
            _printable(e[k], w, k)


def _printable(text: str, w: str, what: str) -> None:
    """Names and locations reach listings and messages: no control or bidirectional characters."""
    m = UNSAFE_CHARS.search(text)
    if m:
        _fail(w, f"{what} {escape(repr(text))[:80]} holds the control character {ascii(m[0])}; "
              "names and locations must be printable")


def _check_source_attrs(typ: str, attrs: dict, dec: _Decoder, w: str) -> None:
    """A source op's declared shape and dtype, and its array's declared type matching them."""
    for k in ("shape", "dtype"):
        if k not in attrs:
            _fail(w, f"missing attribute {k!r}")
    _want(attrs["dtype"], DataType, w, "attribute 'dtype'")
    key = _array_attr(typ)
    _shape(list(_want(attrs["shape"], tuple, w, "attribute 'shape'")), w, dynamic=key is None)
    if key is None:
        return
    ref = attrs.get(key)
    if isinstance(ref, np.ndarray):  # a constant filled from a scalar
        if feed_dtype(attrs["dtype"], ref.dtype) != attrs["dtype"] or ref.shape != attrs["shape"]:
            _fail(w, f"the fill is {ref.dtype.name}{list(ref.shape)} but the op is "
                  f"{attrs['dtype'].name}{list(attrs['shape'])}")
        return
    if not isinstance(ref, _ArrayRef):
        _fail(w, f"attribute {key!r} must be an array reference")
    dt, shp = dec.arrays[ref.key]
    # complex32 is held in complex64 arrays, int4 / uint4 in int8 / uint8 ones
    held = as_dtype(attrs["dtype"].np_dtype) if attrs["dtype"].name in ("complex32", "int4", "uint4") else attrs["dtype"]
    if dt != held or shp != attrs["shape"]:
        _fail(w, f"array {ref.key!r} is declared {dt.name}{list(shp)} but the op is "
              f"{attrs['dtype'].name}{list(attrs['shape'])}")


def _check_variables(variables: dict, entries: list, seen: dict, dec: _Decoder, where: str) -> dict:
    """{variable op name: array key} of the saved values, each declared like its variable."""
    var_keys = {}
    for vname, key in variables.items():
        i = seen.get(vname)
        if i is None or entries[i].type != "variable":
            _fail(where, f"variables: {vname!r} is not a variable op of the graph")
        attrs = entries[i].attrs
        ref = dec.value({"$": "array", "key": key, "dtype": attrs["dtype"].name, "shape": list(attrs["shape"])},
                        f"{where}: variable {vname!r} value")
        var_keys[vname] = ref.key
    return var_keys


def rebuild(g: Any, doc: Document) -> None:
    """Add the document's ops to the empty graph ``g`` through ``add_op``, which re-infers and
    re-checks every op, then set the variables' saved values."""
    by_name: dict = {}
    blocks: dict = {}  # "<control-flow op>#<i>" -> its Block, opened by the first op built in it
    for i, entry in enumerate(doc.entries):
        w = f"{doc.where}: {entry.type} op #{i} {entry.name!r}"
        key = entry.raw.get("block")
        if key is not None and (not isinstance(key, str) or "#" not in key):
            _fail(w, f"block must be '<control-flow op name>#<index>', got {_short(key)}")
        block = None if key is None else blocks.setdefault(key, Block("", key, None, str(entry.raw.get("location"))))
        with g.open_block(block) if block is not None else contextlib.nullcontext():
            if entry.raw.get("blocks") is not None:
                entry = entry._replace(attrs={**entry.attrs, "blocks": _rebuilt_blocks(g, entry, blocks, by_name, w)})
            by_name[entry.name] = _rebuild_op(g, entry, by_name, doc.arrays, w)
    for vname, key in doc.var_keys.items():
        g.variable_store.set(by_name[vname], doc.arrays[key])


def _rebuilt_blocks(g: Any, entry: _Entry, blocks: dict, by_name: dict, w: str) -> tuple:
    """A control-flow op's blocks as saved, their ops rebuilt already (earlier in the file)."""
    out = []
    for i, b in enumerate(_want(entry.raw["blocks"], list, w, "blocks")):
        _want(b, dict, w, f"block {i}")
        _keys(b, {"name", "arguments", "results"}, set(), f"{w} block {i}")
        key = f"{entry.name}#{i}"
        block = blocks.pop(key, None) or Block("", key, None, str(entry.raw.get("location")))
        block.name = _want(b["name"], str, w, f"block {i} name")
        block.parent = g.current_block()
        block.label = f"the {block.name} block of {entry.type} op {entry.name!r}"
        try:
            block.arguments = tuple(by_name[n].outputs[0] for n in _want(b["arguments"], list, w, "arguments"))
            block.results = tuple(by_name[n].outputs[k] for n, k in _want(b["results"], list, w, "results"))
        except (KeyError, IndexError, TypeError, ValueError):
            _fail(w, f"block {i} names arguments or results that are not earlier ops of the block")
        if any(a.operation.block is not block or a.operation.type != "block_argument" for a in block.arguments):
            _fail(w, f"block {i}: its arguments must be block_argument ops built in it")
        block.captures = tuple(block_captures(block))
        out.append(block)
    return tuple(out)


def _rebuild_op(g: Any, entry: _Entry, by_name: dict, arrays: dict, w: str) -> Any:
    """The op of one checked entry, added through ``g.add_op`` and compared with the file."""
    name, typ, inputs, deps, attrs, outs, e = entry
    ins = []
    for src, k in inputs:
        op = by_name[src]
        if k >= len(op.outputs):
            _fail(w, f"refers to output {k} of {src!r}, which has {len(op.outputs)} output(s)")
        ins.append(op.outputs[k])
    resolved = _resolve(attrs, arrays)
    if typ == "constant" and isinstance(resolved.get("value"), np.ndarray) and \
            getattr(resolved.get("dtype"), "name", None) in FOUR_BIT:  # codes kept in the 4-bit range
        try:
            check_four_bit(resolved["value"], resolved["dtype"], "its value")
        except MiniGraphError as err:
            _fail(w, f"cannot be rebuilt: {err}")
    try:
        with g.non_trainable() if e.get("trainable") is False else contextlib.nullcontext():
            op = g.add_op(typ, ins, resolved, name, control_dependencies=[by_name[d] for d in deps],
                          location=e.get("location"), requested_name=e.get("requested_name"),
                          user_name=e.get("user_name"), from_gradients=bool(e.get("from_gradients")))
    except SerializationError:
        raise
    except MiniGraphError as err:
        _fail(w, f"cannot be rebuilt: {err}")
    except Exception as err:  # an infer rule fed hostile attributes; never let it escape raw
        _fail(w, f"cannot be rebuilt from its attributes: {type(err).__name__}: {err}")
    _check_rebuilt(op, entry, w)
    return op


def _check_rebuilt(op: Any, entry: _Entry, w: str) -> None:
    """The rebuilt op has the file's name and declared outputs, within the size limit."""
    if op.name != entry.name:
        _fail(w, f"was rebuilt under the name {op.name!r}")
    got = [(tuple(t.shape), t.dtype) for t in op.outputs]
    if got != [(s, d) for s, d in entry.outputs]:
        _fail(w, f"rebuilt with outputs {[(list(s), d.name) for s, d in got]}, but the file declares "
              f"{[(list(s), d.name) for s, d in entry.outputs]}")
    for t in op.outputs:
        if num_elements([d for d in t.shape if d > 0]) > MAX_ELEMENTS:
            _fail(w, f"output shape {t.shape} is larger than the limit {MAX_ELEMENTS} elements")
