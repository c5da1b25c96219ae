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
import math
import os
import struct
import tempfile
from typing import Any, Optional, Sequence

import numpy as np

from .errors import DTypeError, SerializationError, ShapeError
from .limits import MAX_RANK
from .serialize import file_path, open_regular

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


def _path(path: Any, what: str) -> str:
    """A checkpoint path as a str: a str, bytes or os.PathLike without NUL characters."""
    return file_path(path, "checkpoint", what)


def save_variables(g: Any, path: Any, variables: Optional[Sequence[Any]] = None) -> str:
    """Write the variables' current values to ``path`` (safetensors); returns the path."""
    path = _path(path, "save_variables")
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
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise SerializationError(f"cannot save the checkpoint to {path!r}: the folder {folder!r} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".minigraph-", suffix=".safetensors")
    except OSError as e:
        raise SerializationError(f"cannot save the checkpoint to {path!r}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(head)) + head)
            for b in blobs:
                f.write(b)
        os.replace(tmp, path)  # a reader never sees half a file
    except BaseException as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        if isinstance(e, OSError):
            raise SerializationError(f"cannot save the checkpoint to {path!r}: {e.strerror or e}") from None
        raise
    return path


def read(path: Any) -> dict:
    """``{name: ndarray}`` of a safetensors file, checked as the safetensors library checks it.

    The file must be a regular file. Its 8-byte header length is read first, then the header
    (at most ``MAX_HEADER`` bytes), which is checked whole (strict JSON, no key twice, each
    entry's dtype, shape and offsets, the offsets tiling the data exactly and in order, the data
    as long as the file's rest) before any tensor byte is read; then only the declared ranges.
    """
    path = _path(path, "load_variables")
    where = f"checkpoint {path!r}"
    with open_regular(path, where, "cannot read: no such file", "checkpoints") as f:
        size = os.fstat(f.fileno()).st_size
        try:
            first = f.read(8)
            if len(first) < 8:
                raise SerializationError(f"{where} is not a safetensors file ({size} bytes, less than the "
                                         "8-byte header length)")
            (n,) = struct.unpack("<Q", first)
            if n > MAX_HEADER or n > size - 8:
                raise SerializationError(f"{where} is not a safetensors file (header length {n} of a {size}-byte "
                                         f"file; the header is at most {MAX_HEADER} bytes and within the file)")
            raw_header = f.read(n)
            if len(raw_header) != n:
                raise SerializationError(f"{where}: the file ended inside its {n}-byte header")
            entries = _check_header(where, _parse_header(where, raw_header), size - 8 - n)
            out = {}
            for name, (npd, shape, begin, end) in entries.items():
                f.seek(8 + n + begin)
                data = f.read(end - begin)
                if len(data) != end - begin:
                    raise SerializationError(f"{where}: the file ended inside entry {name!r}")
                out[name] = _array(where, name, data, npd, shape)
        except OSError as e:
            raise SerializationError(f"{where}: cannot read: {e.strerror or e}") from None
    return out


def _parse_header(where: str, raw: bytes) -> dict:
    """The header's JSON object: UTF-8, strict (no NaN/Infinity), no key twice, not nested deeply."""
    def pairs(items: list) -> dict:
        d: dict = {}
        for k, v in items:
            if k in d:
                raise SerializationError(f"{where}: the header names the key {k!r:.80} twice (each key once)")
            d[k] = v
        return d

    def constant(c: str) -> Any:
        raise SerializationError(f"{where}: the header holds the JSON constant {c}, which JSON does not have")

    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)
    except SerializationError:
        raise
    except RecursionError:
        raise SerializationError(f"{where}: the header is nested too deeply to be a safetensors header "
                                 "(a JSON object of entries {dtype, shape, data_offsets})") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise SerializationError(f"{where}: the header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise SerializationError(f"{where}: the header is not a JSON object (it is {type(header).__name__})")
    return header


def _check_header(where: str, header: dict, data_size: int) -> dict:
    """``{name: (dtype, shape, begin, end)}``, every entry checked and the offsets tiling the
    ``data_size`` bytes after the header exactly, in the order of the entries' offsets."""
    meta = header.get("__metadata__")
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise SerializationError(f"{where}: __metadata__ must be an object of strings, got {meta!r:.80}")
    entries = {}
    for name, entry in header.items():
        if name != "__metadata__":
            entries[name] = _check_entry(where, name, entry)
    at = 0
    for name, (npd, shape, begin, end) in sorted(entries.items(), key=lambda kv: (kv[1][2], kv[1][3])):
        if begin != at:
            raise SerializationError(
                f"{where}: entry {name!r} starts at byte {begin} of the data, but the entries before it end at "
                f"{at}: the data_offsets must cover the data exactly, without overlaps or gaps")
        at = end
    if at != data_size:
        raise SerializationError(f"{where}: the entries' data_offsets cover {at} bytes, but the file holds "
                                 f"{data_size} bytes of data after the header (they must be equal)")
    return entries


def _check_entry(where: str, name: str, entry: Any) -> tuple:
    """(NumPy dtype, shape, begin, end) of one header entry, each field checked."""
    w = f"{where}: entry {name!r}"
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= set(entry):
        raise SerializationError(f"{w} needs dtype, shape and data_offsets, got {entry!r:.100}")
    dt, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dt, str) or dt not in DTYPES:
        raise SerializationError(f"{w} has dtype {dt!r:.60}, which minigraph has no dtype for "
                                 f"(it reads {', '.join(DTYPES)})")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise SerializationError(f"{w} has shape {shape!r:.60}; a shape is a list of ints >= 0")
    if len(shape) > MAX_RANK:
        raise SerializationError(f"{w} has rank {len(shape)}; minigraph's tensors have rank at most {MAX_RANK}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_int(o) for o in offsets)
            and 0 <= offsets[0] <= offsets[1]):
        raise SerializationError(f"{w} has data_offsets {offsets!r:.60}; they are [begin, end], ints with "
                                 "0 <= begin <= end")
    npd = np.dtype(DTYPES[dt])
    nbytes = math.prod(shape) * npd.itemsize  # exact: Python ints do not wrap
    begin, end = offsets
    if end - begin != nbytes:
        raise SerializationError(f"{w} ({dt} {shape}) needs {nbytes} bytes, but its data_offsets "
                                 f"[{begin}, {end}] hold {end - begin}")
    return npd, tuple(shape), begin, end


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _array(where: str, name: str, data: bytes, npd: np.dtype, shape: tuple) -> np.ndarray:
    """The entry's bytes as a native-order array of its own (BOOL bytes must be 0 or 1)."""
    if npd.kind == "b":
        bad = np.flatnonzero(np.frombuffer(data, np.uint8) > 1)
        if bad.size:
            raise SerializationError(f"{where}: entry {name!r} is BOOL, but byte {int(bad[0])} of its data is "
                                     f"{data[int(bad[0])]}; BOOL bytes are 0 or 1")
    arr = np.frombuffer(data, dtype=npd).reshape(shape)
    return arr.astype(npd.newbyteorder("="))  # a native-order copy, independent of the file's bytes


def load_variables(g: Any, path: Any, variables: Optional[Sequence[Any]] = None, strict: bool = True) -> list:
    """Set variables from a safetensors file by name; returns the variables set.

    All entries are checked before any variable changes: with ``strict``, a variable without an
    entry (missing) and an entry that names no variable of the graph (extra) are errors; a shape
    or dtype that is not the variable's always is.
    """
    path = _path(path, "load_variables")
    ops = _variables(g, variables, "load_variables")
    entries = read(path)
    where = f"checkpoint {path!r}"
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
