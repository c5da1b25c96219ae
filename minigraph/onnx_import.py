"""``mg.from_onnx``: an ONNX model as a minigraph graph, one name scope per ONNX node.

Reading is strict and side-effect free: the file is parsed as a protobuf and checked by
``onnx.checker`` before anything is built; every tensor's data must match its declared shape and
the size limits; external tensor data must lie inside the model's folder, within its files and the
load budget, and is read once per range; nothing from the file is executed. Any failure raises
``ModelImportError`` (an unexpected exception of a converter too, naming the node) and returns no
partial graph, before anything large is allocated: values are folded at import only up to
``limits.MAX_FOLD_BYTES``. The operator table is ``minigraph/onnx_ops.py``.
"""
from __future__ import annotations

import math
import os
import re
import stat
from typing import Any, Optional

import numpy as np

from . import limits
from .errors import MiniGraphError, ModelImportError
from .graph import Graph
from .ir import Operation, Tensor
from .listing import escape, gradient_op_counts
from .onnx_ops import CONVERTERS, ONNX_DTYPES, Context, attributes

MAX_MODEL_BYTES = 2 ** 31  # protobuf's own limit
_DECIMAL = re.compile(r"[0-9]{1,20}")  # an external-data offset or length: digits only, no sign


def _require_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ModelImportError("mg.from_onnx needs the 'onnx' package: pip install onnx (from a source "
                               "checkout: pip install \".[onnx]\")") from None
    return onnx


def from_onnx(model: Any, training: bool = False, constants: Optional[dict] = None) -> tuple[Graph, dict, dict]:
    """Import an ONNX model: ``g, inputs, outputs = mg.from_onnx("model.onnx")``.

    No MPSGraph counterpart (MPSGraph reads no ONNX; Core ML tools do). Every ONNX node becomes
    the MPSGraph-style op(s) it means, built inside a name scope named after the node, so
    listings, ``to_swift()`` and errors read in the model's words. Every initializer becomes a
    variable of the same name (the imported model trains). A depthwise ``Conv`` (``group`` = input
    channels) becomes ``depthwise_convolution_2d``, its ONNX weights ``[C*M, 1, kH, kW]`` reshaped
    and permuted to MPSGraph's ``[M, C, kH, kW]`` inside the graph.

    With ``training=True``, ``BatchNormalization`` uses the batch's statistics (``mean``,
    ``variance``, ``normalize``: autodiff inserts MPSGraph's normalization gradient ops) and
    ``g.update_operations`` holds the assign operations that update the running statistics (list
    them in ``target_operations`` of each training step); ``Dropout`` becomes ``dropout``. With
    ``training=False`` batch norm uses the running statistics and dropout is the identity.

    Args:
        model: A path to an ``.onnx`` file, its bytes, or an ``onnx.ModelProto``.
        training: Build the training form (batch statistics, dropout) instead of inference.
        constants: ``{graph input name: value}``: inputs fixed at import, as if they were
            initializers: a shape, axes or pads that a model takes as a graph input (MPSGraph's
            shapes are static). They are not among the returned ``inputs``.

    Returns:
        tuple: ``(graph, inputs, outputs)``; ``inputs`` maps the ONNX graph's input names to
        placeholders, ``outputs`` its output names to tensors.

    Raises:
        ModelImportError: the model cannot be read or uses what is not supported; the message
            names the node, its operator and the opset.
    """
    g, inputs, outputs, _ = import_model(model, training, constants)
    return g, inputs, outputs


def import_model(model: Any, training: bool = False,
                 constants: Optional[dict] = None) -> tuple[Graph, dict, dict, list]:
    """``from_onnx`` plus, per ONNX node, ``(scope, op type, ops built, output tensors)``."""
    onnx = _require_onnx()
    proto, base_dir = _read(onnx, model)
    external = _external_data(onnx, proto, base_dir)  # checked, not read yet
    for t, where in _tensors_of(proto):
        _check_tensor(onnx, t, where)
    opset = _opset(onnx, proto)  # before the checker, which reads the first of two default domains
    _check_model(onnx, proto, external)
    loaded = _read_external_data(onnx, external, len(proto.graph.initializer))
    try:
        return _build(onnx, proto, opset, bool(training), loaded, dict(constants or {}))
    except ModelImportError:
        raise
    except MiniGraphError as e:
        raise ModelImportError(str(e)) from e
    except Exception as e:  # the last line of defence: a file minigraph misreads is still refused
        raise ModelImportError(f"the ONNX model cannot be imported: {type(e).__name__}: "
                               f"{escape(_first_line(e))}") from e


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _read(onnx: Any, model: Any) -> tuple[Any, Optional[str]]:
    if isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
        return proto, None
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _parse(onnx, bytes(model), "the given bytes"), None
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise ModelImportError(f"no ONNX file at {path!r}")
        size = os.path.getsize(path)
        if size > MAX_MODEL_BYTES:
            raise ModelImportError(f"{path!r} is {size} bytes; an ONNX protobuf holds at most 2 GiB "
                                   "(larger models keep their weights in external data files)")
        with open(path, "rb") as f:
            data = f.read()
        return _parse(onnx, data, repr(path)), os.path.dirname(os.path.abspath(path))
    raise ModelImportError(f"model must be a path, bytes or an onnx.ModelProto, got {type(model).__name__}")


def _parse(onnx: Any, data: bytes, what: str) -> Any:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as e:  # google.protobuf.message.DecodeError
        raise ModelImportError(f"{what} is not an ONNX model (malformed or truncated protobuf: "
                               f"{_first_line(e)})") from None
    if not proto.HasField("graph") or not proto.opset_import:
        raise ModelImportError(f"{what} is not an ONNX model (no graph or no opset_import: malformed "
                               "or truncated)")
    return proto


def _tensors_of(proto: Any) -> list:
    """``(TensorProto, what it is)`` for every tensor of the main graph: initializers and the
    tensor attributes of nodes (Constant's value, ConstantOfShape's value)."""
    out = [(t, f"initializer {escape(repr(t.name))}") for t in proto.graph.initializer]
    for i, node in enumerate(proto.graph.node):
        for a in node.attribute:
            if a.HasField("t"):
                out.append((a.t, f"attribute {escape(repr(a.name))} of ONNX node {escape(repr(node.name or '#' + str(i)))}"))
    return out


def _declared_bytes(t: Any, where: str) -> int:
    """The bytes a tensor's shape and element type declare, checked against the limits."""
    if t.data_type not in ONNX_DTYPES:
        raise ModelImportError(f"{where}: element type {t.data_type} is not supported (supported: "
                               f"{sorted(ONNX_DTYPES)})")
    dims = list(t.dims)
    if len(dims) > limits.MAX_RANK or any(d < 0 for d in dims):
        raise ModelImportError(f"{where}: shape {dims[:10]}{'...' if len(dims) > 10 else ''} is not a "
                               f"tensor shape (at most {limits.MAX_RANK} non-negative sizes)")
    n = math.prod(dims)
    if n > limits.MAX_ELEMENTS:
        raise ModelImportError(f"{where}: shape {dims} has {n} elements, more than the limit {limits.MAX_ELEMENTS}")
    return n * ONNX_DTYPES[t.data_type].np_dtype.itemsize


def _check_tensor(onnx: Any, t: Any, where: str) -> None:
    """The tensor's data holds exactly what its shape and element type declare (before reading it)."""
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return  # an external-data tensor of a model given without its path: refused where it is read
    nbytes = _declared_bytes(t, where)
    n = nbytes // ONNX_DTYPES[t.data_type].np_dtype.itemsize
    if t.HasField("raw_data"):
        have, what = len(t.raw_data), "bytes of raw_data"
        need = nbytes
    else:
        field = onnx.helper.tensor_dtype_to_field(t.data_type)
        have, what, need = len(getattr(t, field)), f"values in {field}", n
    if have != need:
        raise ModelImportError(f"{where}: its shape {list(t.dims)} needs {need} {what}, the file holds {have}")


def _external_data(onnx: Any, proto: Any, base_dir: Optional[str]) -> list:
    """``(index in _tensors_of, tensor, file, offset, length)`` of each tensor with external data, refusing any location
    outside the model's folder.

    Every range is checked against its file's size and its tensor's declared size, and all of them
    together against the bytes the files hold and ``limits.load_budget()``, before any is read
    (a range that several tensors share counts once per tensor).
    """
    sizes: dict = {}  # file -> its size
    plans = [(k, t, *_external_range(t, what, base_dir, sizes)) for k, (t, what) in enumerate(_tensors_of(proto))
             if t.data_location == onnx.TensorProto.EXTERNAL]
    total, held, budget = sum(p[4] for p in plans), sum(sizes.values()), limits.load_budget()
    if total > held:
        raise ModelImportError(f"the model's external data asks for {total} bytes, more than its files hold "
                               f"({held} bytes in {len(sizes)} file(s); a range shared by several tensors "
                               "counts for each)")
    if total > budget:
        raise ModelImportError(f"the model's external data asks for {total} bytes, more than the load budget "
                               f"({budget} bytes, minigraph.limits.MAX_LOAD_BYTES)")
    return plans


def _check_model(onnx: Any, proto: Any, external: list) -> None:
    """``onnx.checker`` on the model, its external tensors (not read yet) standing in as empty ones:
    the checker would look for their files next to the working directory, and copies what it checks."""
    if external:
        light = onnx.ModelProto()
        light.CopyFrom(proto)
        for t, _ in _tensors_of(light):
            if t.data_location == onnx.TensorProto.EXTERNAL:
                del t.external_data[:]
                del t.dims[:]
                t.dims.append(0)
                t.data_location = onnx.TensorProto.DEFAULT
        proto = light
    try:
        onnx.checker.check_model(proto)
    except Exception as e:  # onnx.checker.ValidationError and protobuf errors
        raise ModelImportError(f"the ONNX model is not valid: {escape(_first_line(e))}") from None


def _read_external_data(onnx: Any, plans: list, initializers: int) -> dict:
    """Read each distinct range once (a range several tensors share is kept only until its last
    tensor has it): ``{initializer index: bytes}`` for the initializers (made variables from the
    bytes, with no copy in the protobuf), into the protobuf for node attributes."""
    uses: dict = {}
    for _, _, full, offset, length in plans:
        uses[(full, offset, length)] = uses.get((full, offset, length), 0) + 1
    read: dict = {}  # (file, offset, length) -> bytes, while a later tensor needs them
    loaded: dict = {}
    for k, t, full, offset, length in plans:
        key = (full, offset, length)
        data = read.get(key)
        if data is None:
            with open(full, "rb") as f:
                f.seek(offset)
                data = f.read(length)
            if len(data) != length:
                raise ModelImportError(f"external data {escape(repr(os.path.basename(full)))} changed while it "
                                       "was read")
        uses[key] -= 1
        if uses[key]:
            read[key] = data
        else:
            read.pop(key, None)
        if k < initializers:
            loaded[k] = data
        else:
            t.raw_data = data
            del t.external_data[:]
            t.data_location = onnx.TensorProto.DEFAULT
        del data
    return loaded


def _external_range(t: Any, what: str, base_dir: Optional[str], sizes: dict) -> tuple[str, int, int]:
    """``(file, offset, length)`` of a tensor's external data, checked; ``sizes`` caches file sizes."""
    info: dict = {}
    for e in t.external_data:
        if e.key in info:
            raise ModelImportError(f"{what}: external data names its {escape(repr(e.key))} twice")
        info[e.key] = e.value
    loc = info.get("location", "")
    where = f"{what}: external data {escape(repr(loc))}"
    if base_dir is None:
        raise ModelImportError(f"{where}: a model with external data must be loaded from its path")
    if "\0" in loc:
        raise ModelImportError(f"{where}: the location holds a NUL byte; it must be a relative path inside "
                               "the model's folder")
    if not loc or os.path.isabs(loc) or os.path.splitdrive(loc)[0]:
        raise ModelImportError(f"{where} must be a relative path inside the model's folder")
    root = os.path.realpath(base_dir)
    full = os.path.realpath(os.path.join(root, loc))
    if os.path.commonpath([root, full]) != root:
        raise ModelImportError(f"{where} points outside the model's folder {escape(repr(base_dir))}; refused")
    if full not in sizes:
        try:
            st = os.stat(full)
        except OSError:
            raise ModelImportError(f"{where}: no such file next to the model") from None
        if not stat.S_ISREG(st.st_mode):
            raise ModelImportError(f"{where}: not a regular file")
        sizes[full] = st.st_size
    size = sizes[full]
    for key in ("offset", "length"):
        if key in info and not _DECIMAL.fullmatch(info[key]):
            raise ModelImportError(f"{where}: {key} {escape(repr(info[key]))} is not a byte count (digits only, "
                                   "at most 20)")
    offset = int(info.get("offset", 0))
    if offset > size:
        raise ModelImportError(f"{where}: offset {offset} lies past the file's end ({size} bytes)")
    length = int(info["length"]) if "length" in info else size - offset
    if offset + length > size:
        raise ModelImportError(f"{where}: bytes {offset}..{offset + length} lie past the file's end ({size})")
    need = _declared_bytes(t, what)
    if length != need:
        raise ModelImportError(f"{where}: holds {length} bytes, but the tensor's shape {list(t.dims)} needs {need}")
    return full, offset, length


def _opset(onnx: Any, proto: Any) -> int:
    versions: dict = {}
    for o in proto.opset_import:
        domain = o.domain or "ai.onnx"
        if domain in versions:
            raise ModelImportError(f"the model imports domain {escape(repr(domain))} twice (opsets "
                                   f"{versions[domain]} and {o.version}; '' and 'ai.onnx' are the same "
                                   "domain); a model imports each domain once")
        versions[domain] = o.version
    if "ai.onnx" not in versions:
        raise ModelImportError("the model imports no default-domain opset ('' / ai.onnx); minigraph "
                               "supports only ONNX's standard operators")
    v = versions["ai.onnx"]
    newest = onnx.defs.onnx_opset_version()
    if v < 7:
        raise ModelImportError(f"opset {v} is older than minigraph imports (opsets 7..{newest}); convert the model "
                               "with onnx.version_converter first")
    if v > newest:
        raise ModelImportError(f"unknown opset {v}: this onnx package knows opsets up to {newest} (minigraph "
                               f"imports 7..{newest})")
    return v


def _value_shape(vi: Any) -> tuple:
    dims = vi.type.tensor_type.shape.dim
    return tuple(d.dim_value if d.HasField("dim_value") else -1 for d in dims)


def _graph_inputs(ctx: Context, proto: Any, inits: set, constants: dict) -> dict:
    """Placeholders for the graph inputs (constants for those ``constants`` gives)."""
    g = ctx.g
    inputs = {}
    for vi in proto.graph.input:
        if vi.name in inits:
            continue  # older exporters list initializers as inputs too
        elem = vi.type.tensor_type.elem_type
        where = f"graph input {escape(repr(vi.name))}"
        if elem not in ONNX_DTYPES:
            raise ModelImportError(f"{where}: element type {elem} is not supported "
                                   f"(supported: {sorted(ONNX_DTYPES)})")
        shape = _value_shape(vi)
        if len(shape) > limits.MAX_RANK or any(d < -1 for d in shape):
            raise ModelImportError(f"{where}: shape {list(shape)[:10]} is not a tensor shape (at most "
                                   f"{limits.MAX_RANK} sizes, each >= 0, or unknown)")
        if vi.name in constants:
            declared = shape if vi.type.tensor_type.HasField("shape") else None
            ctx.statics[vi.name] = _constant_input(where, constants.pop(vi.name), ONNX_DTYPES[elem], declared)
            continue
        try:
            inputs[vi.name] = ctx.values[vi.name] = g.placeholder(shape, ONNX_DTYPES[elem], name=vi.name)
        except MiniGraphError as e:
            raise ModelImportError(f"{where}: {e}") from e
    if constants:
        raise ModelImportError(f"constants name {sorted(constants)[:5]}, which are not graph inputs (graph inputs: "
                               f"{[vi.name for vi in proto.graph.input if vi.name not in inits][:10]})")
    return inputs


def _build(onnx: Any, proto: Any, opset: int, training: bool, loaded: dict,
           constants: dict) -> tuple[Graph, dict, dict, list]:
    g = Graph()
    numpy_helper = onnx.numpy_helper
    ctx = Context(g, opset, training, attributes(onnx))
    inits = {t.name for t in proto.graph.initializer}
    running = _running_statistics(proto)
    for k, t in enumerate(proto.graph.initializer):
        where = f"initializer {escape(repr(t.name))}"
        try:
            if k in loaded:  # external data: little-endian bytes of the declared (checked) size
                little = ONNX_DTYPES[t.data_type].np_dtype.newbyteorder("<")
                arr = np.frombuffer(loaded.pop(k), dtype=little).reshape(tuple(t.dims))
            else:
                arr = numpy_helper.to_array(t)
        except Exception as e:
            raise ModelImportError(f"{where} cannot be read: {escape(_first_line(e))}") from None
        try:
            if t.name in running:  # batch-norm statistics: variables, but not weights
                with g.non_trainable():
                    ctx.add_initializer(t.name, arr)
            else:
                ctx.add_initializer(t.name, arr)
        except MiniGraphError as e:
            raise ModelImportError(f"{where}: {e}") from e
        del arr
        t.ClearField("raw_data")  # the variable holds the value now: the import's own copy of the proto is
        t.ClearField(onnx.helper.tensor_dtype_to_field(t.data_type))  # not read again, so no third copy
    inputs = _graph_inputs(ctx, proto, inits, constants)
    for i, node in enumerate(proto.graph.node):
        _convert(ctx, node, i)
    outputs = {}
    for vi in proto.graph.output:
        if vi.name in ctx.unavailable:
            raise ModelImportError(f"graph output {escape(repr(vi.name))}: {ctx.unavailable[vi.name]} does not "
                                   "produce this output in minigraph (not supported: the random mask of a dropout "
                                   "that drops, the optional outputs an operator's import leaves out)")
        if vi.name not in ctx.values and vi.name not in ctx.statics:
            raise ModelImportError(f"graph output {escape(repr(vi.name))} is produced by no node")
        t = ctx.tensor(vi.name)
        _check_declared(vi, t)
        outputs[vi.name] = t
    g.update_operations = list(ctx.updates)
    return g, inputs, outputs, ctx.nodes


def _constant_input(where: str, value: Any, dtype: Any, shape: Optional[tuple]) -> np.ndarray:
    """A graph input's value given at import, checked against its declared element type and shape."""
    arr = np.asarray(value)
    if arr.dtype != dtype.np_dtype:
        raise ModelImportError(f"{where}: the constant given for it has dtype {arr.dtype}; the model declares "
                               f"{dtype.name}")
    if shape is not None and (len(shape) != arr.ndim or any(d != -1 and d != s for d, s in zip(shape, arr.shape))):
        raise ModelImportError(f"{where}: the constant given for it has shape {list(arr.shape)}; the model "
                               f"declares {list(shape)}")
    if arr.size > limits.MAX_ELEMENTS:
        raise ModelImportError(f"{where}: the constant given for it has {arr.size} elements, more than the limit "
                               f"{limits.MAX_ELEMENTS}")
    return np.array(arr)


def _running_statistics(proto: Any) -> set:
    """Names of the initializers that batch norms read as running mean and variance (through any
    Identity nodes an exporter put in between)."""
    source = {n.output[0]: n.input[0] for n in proto.graph.node if n.op_type == "Identity" and n.input}
    names = set()
    for n in proto.graph.node:
        if n.op_type == "BatchNormalization":
            for name in list(n.input)[3:5]:
                while name in source:
                    name = source[name]
                names.add(name)
    return names


def _check_declared(vi: Any, t: Tensor) -> None:
    declared = _value_shape(vi)
    if not vi.type.tensor_type.HasField("shape"):
        return
    if len(declared) != len(t.shape) or any(d != -1 and s != -1 and d != s for d, s in zip(declared, t.shape)):
        raise ModelImportError(f"graph output {escape(repr(vi.name))}: the model declares shape {list(declared)} but its "
                               f"ops give {list(t.shape)} (the file's shapes contradict its operators)")


def _scope(node: Any, i: int) -> str:
    name = node.name.strip("/") or f"{node.op_type}_{i}"
    return name


def _convert(ctx: Context, node: Any, i: int) -> None:
    where = f"ONNX node {escape(repr(node.name or '#' + str(i)))} ({escape(node.op_type)}, opset {ctx.opset})"
    if node.domain not in ("", "ai.onnx"):
        raise ModelImportError(f"{where}: operator domain {escape(repr(node.domain))} is not supported; supported: "
                               "the standard ONNX domain, operators " + ", ".join(sorted(CONVERTERS)))
    conv = CONVERTERS.get(node.op_type)
    _check_inputs(ctx, node, where)
    if conv is None:
        body = _function_body(ctx, node)
        if body is None:
            raise ModelImportError(f"{where}: operator {escape(repr(node.op_type))} is not supported; supported "
                                   "operators: " + ", ".join(sorted(CONVERTERS)))
        _convert_body(ctx, node, i, where, *body)
        return
    ctx.where = where
    ops = ctx.g._ops  # the graph's own list: g.operations copies it (quadratic over a model's nodes)
    first = len(ops)
    try:
        with ctx.g.name_scope(_scope(node, i)):
            outs = conv(ctx, node, ctx.attrs(node))
    except ModelImportError as e:
        if str(e).startswith(where):
            raise
        raise ModelImportError(f"{where}: {e}") from e
    except MiniGraphError as e:
        raise ModelImportError(f"{where}: {e}") from e
    except Exception as e:  # the last line of defence: what a converter did not check is still refused
        raise ModelImportError(f"{where}: cannot be converted ({type(e).__name__}: "
                               f"{escape(_first_line(e))})") from e
    for name, value in zip(node.output, outs):
        if not name or value is None:
            continue
        if isinstance(value, (Tensor, Operation)):
            ctx.values[name] = value
        else:
            ctx.statics[name] = np.asarray(value)
    for name in list(node.output)[len(outs):]:
        if name:
            ctx.unavailable[name] = where
    built = ops[first:]
    ctx.nodes.append((_scope(node, i), node.op_type, built, [v for v in outs if isinstance(v, Tensor)]))


def _check_inputs(ctx: Context, node: Any, where: str) -> None:
    for name in node.input:
        if name in ctx.unavailable:
            raise ModelImportError(f"{where}: uses {escape(repr(name))}, an output that {ctx.unavailable[name]} "
                                   "does not produce in minigraph")
        if name and name not in ctx.values and name not in ctx.statics:
            raise ModelImportError(f"{where}: input {escape(repr(name))} is neither a graph input, an initializer "
                                   "nor an earlier node's output (a missing initializer?)")


def _input_type(onnx: Any, ctx: Context, name: str) -> Any:
    """An ONNX TypeProto of a value already imported (what a context-dependent function reads)."""
    if not name:
        return onnx.TypeProto()
    if name in ctx.statics and name not in ctx.values:
        arr = ctx.statics[name]
        return onnx.helper.make_tensor_type_proto(onnx.helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape))
    t = ctx.tensor(name)
    elem = next(k for k, v in ONNX_DTYPES.items() if v == t.dtype)
    return onnx.helper.make_tensor_type_proto(elem, [d if d >= 0 else None for d in t.shape])


def _function_body(ctx: Context, node: Any) -> Optional[tuple]:
    """``(function opset, body nodes)`` of an operator the table lacks but ONNX defines as a function
    of other operators (its expansion, for the model's opset), or None."""
    onnx = _require_onnx()
    try:
        schema = onnx.defs.get_schema(node.op_type, ctx.opset, "")
    except Exception:  # onnx.defs.SchemaError: no such operator at this opset
        return None
    plain = [v for v in schema.function_opset_versions if v <= ctx.opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= ctx.opset]
    if not plain and not dependent:
        return None
    full = onnx.NodeProto()
    full.CopyFrom(node)
    given = {a.name for a in node.attribute}
    for name, attr in schema.attributes.items():
        if name not in given and attr.default_value.name:
            full.attribute.append(attr.default_value)
    fp = onnx.FunctionProto()
    if plain and (not dependent or max(plain) >= max(dependent)):
        fp.ParseFromString(schema.get_function_with_opset_version(max(plain)))
    else:
        types = [_input_type(onnx, ctx, n).SerializeToString() for n in node.input]
        fp.ParseFromString(schema.get_context_dependent_function_with_opset_version(
            max(dependent), full.SerializeToString(), types))
    version = next((o.version for o in fp.opset_import if o.domain in ("", "ai.onnx")), ctx.opset)
    attrs = {a.name: a for a in full.attribute}
    rename = {n: node.input[k] if k < len(node.input) else "" for k, n in enumerate(fp.input)}
    rename.update({n: node.output[k] if k < len(node.output) else "" for k, n in enumerate(fp.output)})
    prefix = f"{node.output[0] if node.output else node.op_type}/{node.op_type}/"
    nodes = []
    for inner in fp.node:
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in inner.attribute):
            return None  # control flow in the body: If / Loop are not supported
        out = onnx.NodeProto()
        out.CopyFrom(inner)
        del out.input[:], out.output[:], out.attribute[:]
        out.input.extend(rename.get(n, prefix + n) if n else "" for n in inner.input)
        out.output.extend(rename.get(n, prefix + n) if n else "" for n in inner.output)
        for a in inner.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name in attrs:
                    ref = onnx.AttributeProto()
                    ref.CopyFrom(attrs[a.ref_attr_name])
                    ref.name = a.name
                    out.attribute.append(ref)
            else:
                out.attribute.append(a)
        nodes.append(out)
    return version, nodes


def _convert_body(ctx: Context, node: Any, i: int, where: str, version: int, nodes: list) -> None:
    """Convert an operator through its ONNX function body, inside the node's name scope."""
    outer = ctx.opset
    ctx.opset = version
    try:
        with ctx.g.name_scope(_scope(node, i)):
            for j, inner in enumerate(nodes):
                _convert(ctx, inner, j)
    except ModelImportError as e:
        raise ModelImportError(f"{where}: imported through its ONNX function body: {e}") from e
    finally:
        ctx.opset = outer
    missing = [n for n in node.output if n and n not in ctx.values and n not in ctx.statics]
    for name in missing:
        ctx.unavailable[name] = where


def summary(model: Any, imported: Optional[tuple] = None) -> str:
    """A listing of an ONNX model as minigraph imports it: one line per ONNX node (its scope, ONNX
    operator, the ops it became, its output shape), then the depthwise convolutions and the gradient
    ops that training would insert (``python -m minigraph import``). ``imported``: what
    ``import_model(model)`` already returned, so the inference form is not built again."""
    g, inputs, outputs, nodes = imported or import_model(model, training=False)
    lines = [f"{len(nodes)} ONNX nodes -> {len(g.operations)} minigraph ops; inputs: "
             + ", ".join(f"{escape(k)} {list(v.shape)}" for k, v in inputs.items())]
    # node names and operator types come from the file: escaped, so none moves the cursor or forges a line
    rows = [(escape(scope), escape(op_type), built, outs) for scope, op_type, built, outs in nodes]
    width = max((len(r[0]) for r in rows), default=10)
    for scope, op_type, built, outs in rows:
        kinds = ", ".join(dict.fromkeys(op.type for op in built)) or "(constant, folded)"
        shape = " ".join(f"{t.dtype.name}{list(t.shape)}" for t in outs)
        lines.append(f"  {scope:<{width}}  {op_type:<18} -> {kinds}  {shape}")
    tg, _, tout, _ = import_model(model, training=True)
    running = {a.inputs[0].operation for a in tg.update_operations}
    weights = [v for v in tg.variables if v.dtype.is_floating and v.operation not in running]
    loss = tg.reduction_sum(next(iter(tout.values()))) if tout else None
    depthwise = sum(op.type == "depthwise_convolution_2d" for op in g.operations)
    lines.append(f"depthwise convolutions: {depthwise}")
    if loss is not None and weights:
        before = len(tg.operations)
        tg.gradients(loss, weights)
        grads = [op for op in tg.operations[before:] if op.from_gradients]
        named = ", ".join(f"{n} {t}" for t, n in gradient_op_counts(grads).items())
        lines.append(f"training (gradients of the outputs with respect to {len(weights)} weights) inserts "
                     f"{len(grads)} gradient ops" + (f", among them {named}" if named else ""))
    return "\n".join(lines)
