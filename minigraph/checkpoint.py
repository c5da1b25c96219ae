"""Variable checkpoints in the safetensors format: ``g.save_variables`` / ``g.load_variables``.

safetensors (Hugging Face) is a header and raw bytes, nothing executable: 8 bytes of header length
(little-endian u64), a JSON header ``{name: {"dtype", "shape", "data_offsets"}}`` and the tensors'
little-endian C-order bytes. PyTorch (``safetensors.torch.load_file``), JAX
(``safetensors.flax.load_file``), MLX (``mx.load``) and NumPy (``safetensors.numpy``) read the
files this module writes, and it reads theirs, with no dependency of its own. Entries are keyed by
variable name (the variable op's unique, scoped name). MPSGraph has no counterpart: its variables
live in the graph, and a checkpoint is the app's own business.
"""
from __future__ import annotations

import json
import os
import struct
import tempfile
from typing import Any, Optional, Sequence

import numpy as np

from .errors import DTypeError, SerializationError, ShapeError

# safetensors dtype names <-> NumPy dtypes (the ones minigraph has)
DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
          "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?"}
_NAMES = {np.dtype(v).newbyteorder("=").str: k for k, v in DTYPES.items()}
MAX_HEADER = 100 * 2 ** 20  # safetensors' own limit on the JSON header


class CheckpointShapeError(SerializationError, ShapeError):
    """An entry's shape is not its variable's."""


class CheckpointDTypeError(SerializationError, DTypeError):
    """An entry's dtype is not its variable's."""


def _variables(g: Any, variables: Optional[Sequence[Any]], label: str) -> list:
    """The variable ops to save or load (default: all of the graph's), by unique name."""
    items = g.variables if variables is None else list(variables)
    return [g.variable_operation(v, label) for v in items]


def save_variables(g: Any, path: Any, variables: Optional[Sequence[Any]] = None) -> str:
    """Write the variables' current values to ``path`` (safetensors); returns the path."""
    ops = _variables(g, variables, "save_variables")
    values = g.variable_store.values
    header: dict = {"__metadata__": {"format": "np", "writer": "minigraph"}}
    blobs, offset = [], 0
    for op in ops:
        arr = np.asarray(values[op], order="C")  # (ascontiguousarray would make a 0-d value 1-d)
        name = _NAMES[arr.dtype.newbyteorder("=").str]
        data = arr.astype(DTYPES[name], copy=False).tobytes()
        header[op.name] = {"dtype": name, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the data starts 8-byte aligned
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".minigraph-", suffix=".safetensors")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(head)) + head)
            for b in blobs:
                f.write(b)
        os.replace(tmp, path)  # a reader never sees half a file
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path


def read(path: Any) -> dict:
    """``{name: ndarray}`` of a safetensors file, checked (header size, JSON, dtypes, offsets)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise SerializationError(f"cannot read checkpoint {path!r}: {e.strerror or e}") from None
    where = f"checkpoint {path!r}"
    if len(raw) < 8:
        raise SerializationError(f"{where} is not a safetensors file ({len(raw)} bytes)")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > min(MAX_HEADER, len(raw) - 8):
        raise SerializationError(f"{where} is not a safetensors file (header length {n} of a {len(raw)}-byte file)")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise SerializationError(f"{where}: the header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise SerializationError(f"{where}: the header is not a JSON object")
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        out[name] = _entry(where, name, entry, data)
    return out


def _entry(where: str, name: str, entry: Any, data: memoryview) -> np.ndarray:
    try:
        dt, shape, (begin, end) = entry["dtype"], [int(d) for d in entry["shape"]], entry["data_offsets"]
    except (KeyError, TypeError, ValueError):
        raise SerializationError(f"{where}: entry {name!r} needs dtype, shape and data_offsets, got {entry!r:.100}") from None
    if dt not in DTYPES:
        raise SerializationError(f"{where}: entry {name!r} has dtype {dt!r}, which minigraph has no dtype for "
                                 f"(it reads {', '.join(DTYPES)})")
    npd = np.dtype(DTYPES[dt])
    count = int(np.prod(shape)) if shape else 1
    if any(d < 0 for d in shape) or not (isinstance(begin, int) and isinstance(end, int)) \
            or not 0 <= begin <= end <= len(data) or end - begin != count * npd.itemsize:
        raise SerializationError(f"{where}: entry {name!r} ({dt} {shape}) has data_offsets [{begin}, {end}] that do "
                                 f"not hold its {count * npd.itemsize} bytes within the {len(data)} bytes of data")
    arr = np.frombuffer(data[begin:end], dtype=npd).reshape(shape)
    return arr.astype(npd.newbyteorder("="))  # a native-order copy, independent of the file's bytes


def load_variables(g: Any, path: Any, variables: Optional[Sequence[Any]] = None, strict: bool = True) -> list:
    """Set variables from a safetensors file by name; returns the variables set.

    All entries are checked before any variable changes: with ``strict``, a variable without an
    entry (missing) and an entry that names no variable of the graph (extra) are errors; a shape
    or dtype that is not the variable's always is.
    """
    ops = _variables(g, variables, "load_variables")
    entries = read(path)
    where = f"checkpoint {os.fspath(path)!r}"
    by_name = {op.name: op for op in ops}
    known = {t.operation.name for t in g.variables}  # an entry of another variable of the graph is not extra
    missing = [n for n in by_name if n not in entries]
    extra = [n for n in entries if n not in by_name and n not in known]
    if strict and (missing or extra):
        parts = []
        if missing:
            parts.append(f"no entry for the variable{'s' if len(missing) > 1 else ''} {_names(missing)}")
        if extra:
            parts.append(f"entr{'ies' if len(extra) > 1 else 'y'} {_names(extra)} match{'' if len(extra) > 1 else 'es'} "
                         "no variable of the graph")
        raise SerializationError(f"{where}: {'; '.join(parts)} (the graph's variables: {_names(list(by_name))}); "
                                 "give strict=False to load only the names both have")
    new = {}
    for name, op in by_name.items():
        if name not in entries:
            continue
        arr, t = entries[name], op.outputs[0]
        if tuple(arr.shape) != tuple(t.shape):
            raise CheckpointShapeError(f"{where}: entry {name!r} has shape {list(arr.shape)}, but the variable is "
                                       f"{list(t.shape)} {t.dtype.name}")
        if arr.dtype != t.dtype.np_dtype:
            raise CheckpointDTypeError(f"{where}: entry {name!r} is {arr.dtype}, but the variable is {t.dtype.name}")
        arr.setflags(write=False)
        new[op] = arr
    for op, arr in new.items():
        g.variable_store.set(op, arr)
    return [op.outputs[0] for op in new]


def _names(names: list, most: int = 8) -> str:
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


__all__ = ["save_variables", "load_variables", "read"]
