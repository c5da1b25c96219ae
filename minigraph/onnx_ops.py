"""What each ONNX operator means in MPSGraph's ops: the converter table of ``mg.from_onnx``.

A converter ``fn(ctx, node, attrs) -> [output, ...]`` builds the node's ops on ``ctx.g`` (inside
the node's name scope) and returns one value per ONNX output: a ``Tensor``, or a NumPy array
when every input is known at import time (the ``Shape`` / ``Gather`` / ``Concat`` chains that
exporters write around ``Reshape`` fold to constants this way), or None for an output it does
not produce (Dropout's mask).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from .descriptors import (Convolution2DOpDescriptor, DepthwiseConvolution2DOpDescriptor, PaddingMode,
                          PaddingStyle, Pooling2DOpDescriptor)
from .errors import ModelImportError
from .ir import Tensor
from .types import bool_, float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64

# ONNX TensorProto element types -> minigraph dtypes
ONNX_DTYPES = {1: float32, 2: uint8, 3: int8, 4: uint16, 5: int16, 6: int32, 7: int64, 9: bool_,
               10: float16, 11: float64, 12: uint32, 13: uint64}

Converter = Callable[["Context", Any, dict], list]
CONVERTERS: dict[str, Converter] = {}


def converts(*op_types: str) -> Callable[[Converter], Converter]:
    def deco(fn: Converter) -> Converter:
        for t in op_types:
            CONVERTERS[t] = fn
        return fn
    return deco


def attributes(onnx: Any) -> Callable[[Any], dict]:
    """A reader of a node's attributes as Python values (strings decoded, tensors as arrays)."""
    def read(node: Any) -> dict:
        out = {}
        for a in node.attribute:
            v = onnx.helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            elif isinstance(v, onnx.TensorProto):
                v = np.array(onnx.numpy_helper.to_array(v))
            out[a.name] = v
        return out
    return read


class Context:
    """The import in progress: the graph, every ONNX value by name, the import-time constants."""

    def __init__(self, g: Any, opset: int, training: bool, attrs: Callable[[Any], dict]):
        self.g = g
        self.opset = opset
        self.training = training
        self.attrs = attrs
        self.values: dict[str, Any] = {}  # ONNX name -> Tensor
        self.statics: dict[str, np.ndarray] = {}  # ONNX name -> value known at import time
        self.variables: dict[str, Tensor] = {}  # initializer name -> its variable
        self.unavailable: dict[str, str] = {}  # outputs a converter does not produce
        self.updates: list = []  # assign operations (running statistics)
        self.nodes: list = []  # (scope, ONNX op type, ops built, output tensors) per node
        self.where = ""

    def add_initializer(self, name: str, value: np.ndarray) -> None:
        self.statics[name] = value
        self.variables[name] = self.values[name] = self.g.variable(value, name=name)

    def error(self, message: str) -> ModelImportError:
        return ModelImportError(f"{self.where}: {message}")

    def has(self, node: Any, i: int) -> bool:
        return len(node.input) > i and bool(node.input[i])

    def tensor(self, name: str) -> Tensor:
        """The value as a tensor (an import-time constant becomes a ``constant`` op once)."""
        if name in self.values:
            return self.values[name]
        if name in self.unavailable:
            raise self.error(f"uses {name!r}, an output that {self.unavailable[name]} does not produce")
        arr = self.statics[name]
        t = self.values[name] = self.g.constant(arr, name=_const_name(name))
        return t

    def static(self, name: str, what: str) -> np.ndarray:
        """A value that must be known at import time (a shape, axes, pads)."""
        if name in self.statics:  # an initializer's value is read as the file holds it
            return self.statics[name]
        raise self.error(f"{what} ({name!r}) must be a constant (an initializer or a Constant node's "
                         "output); it is computed at run time")

    def is_static(self, name: str) -> bool:
        return name in self.statics

    def all_static(self, node: Any) -> bool:
        return all(not n or (n in self.statics and n not in self.variables) for n in node.input)

    def shape(self, name: str) -> tuple:
        if name in self.statics and name not in self.values:
            return tuple(self.statics[name].shape)
        return tuple(self.tensor(name).shape)


def _const_name(name: str) -> str:
    return name.replace("/", "_").strip("_") or "constant"


def _ints(v: Any) -> list:
    return [int(x) for x in np.asarray(v).reshape(-1)]


# ----------------------------------------------------------------------------- convolution
def _padding(ctx: Context, a: dict, spatial: int = 2) -> tuple:
    """(padding style, (top, left, bottom, right)) from ``auto_pad`` / ``pads``."""
    auto = a.get("auto_pad", "NOTSET")
    styles = {"SAME_UPPER": PaddingStyle.TF_SAME, "SAME_LOWER": PaddingStyle.ONNX_SAME_LOWER,
              "VALID": PaddingStyle.TF_VALID}
    if auto in styles:
        return styles[auto], (0, 0, 0, 0)
    if auto != "NOTSET":
        raise ctx.error(f"auto_pad={auto!r} is not an ONNX padding (NOTSET, SAME_UPPER, SAME_LOWER, VALID)")
    pads = _ints(a.get("pads", [0] * (2 * spatial)))
    if len(pads) != 2 * spatial or min(pads) < 0:
        raise ctx.error(f"pads={pads} must be {2 * spatial} non-negative ints (begin values, then end values)")
    return PaddingStyle.EXPLICIT, (pads[0], pads[1], pads[2], pads[3])


def _two(ctx: Context, a: dict, key: str) -> tuple:
    v = _ints(a.get(key, [1, 1]))
    if len(v) != 2:
        raise ctx.error(f"{key}={v}: only 2-D windows are supported")
    return v[0], v[1]


@converts("Conv")
def _conv(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x, w = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise ctx.error(f"only 2-D convolutions are supported (4-D input and weights), got input {list(x.shape)} "
                        f"and weights {list(w.shape)}")
    group = int(a.get("group", 1))
    cin, cout, kh, kw = x.shape[1], w.shape[0], w.shape[2], w.shape[3]
    (sy, sx), (dy, dx) = _two(ctx, a, "strides"), _two(ctx, a, "dilations")
    style, (top, left, bottom, right) = _padding(ctx, a)
    depthwise = group > 1 and group == cin and w.shape[1] == 1 and cout % cin == 0
    common = dict(stride_in_y=sy, stride_in_x=sx, dilation_rate_in_y=dy, dilation_rate_in_x=dx,
                  padding_style=style, padding_top=top, padding_bottom=bottom, padding_left=left,
                  padding_right=right)
    if depthwise:
        m = cout // cin
        # ONNX: [C*M, 1, kH, kW], output channel c*M + m; MPSGraph OIHW: [M, C, kH, kW], same order
        wm = g.reshape(w, [1, cin, kh, kw]) if m == 1 else \
            g.permute(g.reshape(w, [cin, m, kh, kw]), [1, 0, 2, 3])
        y = g.depthwise_convolution_2d(x, wm, DepthwiseConvolution2DOpDescriptor(**common))
    else:
        y = g.convolution_2d(x, w, Convolution2DOpDescriptor(groups=group, **common))
    if ctx.has(node, 2):
        y = g.addition(y, g.reshape(ctx.tensor(node.input[2]), [1, cout, 1, 1]))
    return [y]


def _pool_descriptor(ctx: Context, a: dict) -> Pooling2DOpDescriptor:
    kh, kw = _two(ctx, {"k": a.get("kernel_shape", [])}, "k")
    (sy, sx), (dy, dx) = _two(ctx, a, "strides"), _two(ctx, a, "dilations")
    style, (top, left, bottom, right) = _padding(ctx, a)
    return Pooling2DOpDescriptor(kernel_height=kh, kernel_width=kw, stride_in_y=sy, stride_in_x=sx,
                                 dilation_rate_in_y=dy, dilation_rate_in_x=dx, padding_style=style,
                                 padding_top=top, padding_bottom=bottom, padding_left=left,
                                 padding_right=right, ceil_mode=bool(a.get("ceil_mode", 0)),
                                 include_zero_pad_to_average=bool(a.get("count_include_pad", 0)))


@converts("MaxPool")
def _max_pool(ctx: Context, node: Any, a: dict) -> list:
    if int(a.get("storage_order", 0)):
        raise ctx.error("storage_order=1 (column-major indices) is not supported")
    return [ctx.g.max_pooling_2d(ctx.tensor(node.input[0]), _pool_descriptor(ctx, a))]


@converts("AveragePool")
def _avg_pool(ctx: Context, node: Any, a: dict) -> list:
    return [ctx.g.avg_pooling_2d(ctx.tensor(node.input[0]), _pool_descriptor(ctx, a))]


@converts("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    axes = list(range(2, len(x.shape)))
    if node.op_type == "GlobalAveragePool":
        return [ctx.g.mean(x, axes)]
    return [ctx.g.reduction_maximum(x, axes)]


# ----------------------------------------------------------------------------- normalization
@converts("BatchNormalization")
def _batch_norm(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    scale, bias, mean, var = (ctx.tensor(n) for n in node.input[1:5])
    eps, momentum = float(a.get("epsilon", 1e-5)), float(a.get("momentum", 0.9))
    rank = len(x.shape)
    if rank < 2:
        raise ctx.error(f"input of shape {list(x.shape)} has no channel axis")
    c = x.shape[1]
    per_channel = [1, c] + [1] * (rank - 2)

    def col(t: Tensor) -> Tensor:
        return g.reshape(t, per_channel)

    if not ctx.training:
        return [g.normalize(x, col(mean), col(var), col(scale), col(bias), eps)]
    axes = [0] + list(range(2, rank))
    batch_mean, batch_var = g.mean(x, axes), g.variance(x, axes)
    y = g.normalize(x, batch_mean, batch_var, col(scale), col(bias), eps)
    n = math.prod(x.shape[i] for i in axes)
    if n < 0:
        raise ctx.error("training-mode batch norm needs static batch and spatial sizes")
    with g.name_scope("running_statistics"):
        new_mean = g.addition(g.multiplication(mean, momentum),
                              g.multiplication(g.reshape(batch_mean, [c]), 1.0 - momentum))
        unbiased = g.multiplication(g.reshape(batch_var, [c]), (1.0 - momentum) * n / max(n - 1, 1))
        new_var = g.addition(g.multiplication(var, momentum), unbiased)
        for name, value in ((node.input[3], new_mean), (node.input[4], new_var)):
            if name in ctx.variables:
                ctx.updates.append(g.assign(ctx.variables[name], value))
    return [y, new_mean, new_var] if ctx.opset >= 14 else [y, new_mean, new_var, None, None]


@converts("Dropout")
def _dropout(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    ratio = float(ctx.static(node.input[1], "ratio")) if ctx.has(node, 1) else float(a.get("ratio", 0.5))
    if not ctx.training or ratio == 0.0:
        return [ctx.g.identity(x)]
    return [ctx.g.dropout(x, ratio)]


# ----------------------------------------------------------------------------- activations
def _bound(ctx: Context, node: Any, a: dict, i: int, key: str, default: float) -> Any:
    if ctx.opset < 11:
        return float(a.get(key, default))
    if not ctx.has(node, i):
        return default
    if ctx.is_static(node.input[i]):
        return float(np.asarray(ctx.static(node.input[i], key)).reshape(()))
    return ctx.tensor(node.input[i])


@converts("Clip")
def _clip(ctx: Context, node: Any, a: dict) -> list:
    lo = _bound(ctx, node, a, 1, "min", -math.inf)
    hi = _bound(ctx, node, a, 2, "max", math.inf)
    return [ctx.g.clamp(ctx.tensor(node.input[0]), lo, hi)]


_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exponent", "Log": "logarithm",
          "Sqrt": "square_root", "Neg": "negative", "Abs": "absolute", "Reciprocal": "reciprocal",
          "Erf": "erf", "Floor": "floor", "Ceil": "ceil", "Sin": "sin", "Cos": "cos", "Sign": "sign"}


@converts(*_UNARY)
def _unary(ctx: Context, node: Any, a: dict) -> list:
    return [getattr(ctx.g, _UNARY[node.op_type])(ctx.tensor(node.input[0]))]


@converts("LeakyRelu")
def _leaky_relu(ctx: Context, node: Any, a: dict) -> list:
    return [ctx.g.leaky_relu(ctx.tensor(node.input[0]), float(a.get("alpha", 0.01)))]


@converts("HardSigmoid")
def _hard_sigmoid(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    lin = g.addition(g.multiplication(x, float(a.get("alpha", 0.2))), float(a.get("beta", 0.5)))
    return [g.clamp(lin, 0.0, 1.0)]


@converts("HardSwish")
def _hard_swish(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    gate = g.clamp(g.addition(g.multiplication(x, 1.0 / 6.0), 0.5), 0.0, 1.0)
    return [g.multiplication(x, gate)]


@converts("Softmax")
def _softmax(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    axis = int(a.get("axis", -1 if ctx.opset >= 13 else 1))
    if ctx.opset < 13 and axis % len(x.shape) != len(x.shape) - 1:
        raise ctx.error(f"Softmax before opset 13 flattens from axis {axis}; only the last axis is supported")
    return [ctx.g.softmax(x, axis)]


# ----------------------------------------------------------------------------- arithmetic
_BINARY: dict[str, tuple[str, Any]] = {"Add": ("addition", np.add), "Sub": ("subtraction", np.subtract),
           "Mul": ("multiplication", np.multiply), "Div": ("division", None),
           "Pow": ("power", np.power), "Max": ("maximum", np.maximum), "Min": ("minimum", np.minimum),
           "Equal": ("equal", np.equal), "Less": ("less_than", np.less), "Greater": ("greater_than", np.greater)}


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return (np.trunc(a / b)).astype(np.result_type(a, b))
    return np.divide(a, b)


@converts(*_BINARY)
def _binary(ctx: Context, node: Any, a: dict) -> list:
    method, fn = _BINARY[node.op_type]
    if ctx.all_static(node):
        return [(fn or _divide)(ctx.statics[node.input[0]], ctx.statics[node.input[1]])]
    return [getattr(ctx.g, method)(ctx.tensor(node.input[0]), ctx.tensor(node.input[1]))]


@converts("MatMul")
def _matmul(ctx: Context, node: Any, a: dict) -> list:
    return [ctx.g.matrix_multiplication(ctx.tensor(node.input[0]), ctx.tensor(node.input[1]))]


@converts("Gemm")
def _gemm(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x, w = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    if int(a.get("transA", 0)):
        x = g.transpose(x, 0, 1)
    if int(a.get("transB", 0)):
        w = g.transpose(w, 0, 1)
    y = g.matrix_multiplication(x, w)
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    if alpha != 1.0:
        y = g.multiplication(y, alpha)
    if ctx.has(node, 2):
        c = ctx.tensor(node.input[2])
        y = g.addition(y, c if beta == 1.0 else g.multiplication(c, beta))
    return [y]


def _axes_of(ctx: Context, node: Any, a: dict, since: int, input_index: int = 1) -> Optional[list]:
    """Axes from the attribute (before opset ``since``) or the optional input (from it)."""
    if ctx.opset < since:
        return _ints(a["axes"]) if "axes" in a else None
    if ctx.has(node, input_index):
        return _ints(ctx.static(node.input[input_index], "axes"))
    return None


_REDUCE: dict[str, tuple[str, int, Any]] = {"ReduceMean": ("mean", 18, np.mean), "ReduceSum": ("reduction_sum", 13, np.sum),
           "ReduceMax": ("reduction_maximum", 18, np.max), "ReduceMin": ("reduction_minimum", 18, np.min)}


@converts(*_REDUCE)
def _reduce(ctx: Context, node: Any, a: dict) -> list:
    method, since, fn = _REDUCE[node.op_type]
    axes = _axes_of(ctx, node, a, since)
    keep = bool(a.get("keepdims", 1))
    rank = len(ctx.shape(node.input[0]))
    if not axes:
        if a.get("noop_with_empty_axes", 0):
            return [ctx.tensor(node.input[0])]
        axes = list(range(rank))
    axes = sorted(ax % rank for ax in axes)
    if ctx.all_static(node):
        return [fn(ctx.statics[node.input[0]], axis=tuple(axes), keepdims=keep)]
    y = getattr(ctx.g, method)(ctx.tensor(node.input[0]), axes)
    return [y if keep else ctx.g.squeeze(y, axes)]


# ----------------------------------------------------------------------------- shape
@converts("Identity")
def _identity(ctx: Context, node: Any, a: dict) -> list:
    src = node.input[0]
    if ctx.all_static(node):
        return [ctx.statics[src]]
    if src in ctx.variables:  # exporters pass weights through Identity: keep the variable itself
        ctx.variables[node.output[0]] = ctx.variables[src]
        ctx.statics[node.output[0]] = ctx.statics[src]
        return [ctx.variables[src]]
    return [ctx.g.identity(ctx.tensor(src))]


@converts("Constant")
def _constant(ctx: Context, node: Any, a: dict) -> list:
    for key, dtype in (("value", None), ("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in a:
            return [np.asarray(a[key], dtype=dtype)]
    raise ctx.error(f"a Constant with {sorted(a)} is not supported (value, value_float(s), value_int(s) are)")


@converts("Shape")
def _shape(ctx: Context, node: Any, a: dict) -> list:
    shape = ctx.shape(node.input[0])
    start, end = int(a.get("start", 0)), a.get("end")
    part = shape[start:] if end is None else shape[start:int(end)]
    if -1 in part:
        raise ctx.error(f"Shape of a tensor with dynamic dimensions {list(shape)} is not supported")
    return [np.asarray(part, dtype=np.int64)]


@converts("Reshape")
def _reshape(ctx: Context, node: Any, a: dict) -> list:
    target = _ints(ctx.static(node.input[1], "shape"))
    src = ctx.shape(node.input[0])
    if not int(a.get("allowzero", 0)):
        target = [src[i] if d == 0 else d for i, d in enumerate(target)]
    if ctx.all_static(node):
        return [ctx.statics[node.input[0]].reshape(target)]
    return [ctx.g.reshape(ctx.tensor(node.input[0]), target)]


@converts("Flatten")
def _flatten(ctx: Context, node: Any, a: dict) -> list:
    shape = ctx.shape(node.input[0])
    axis = int(a.get("axis", 1)) % (len(shape) + 1) if shape else 0
    if ctx.all_static(node):
        return [ctx.statics[node.input[0]].reshape(math.prod(shape[:axis]), -1)]
    return [ctx.g.flatten_2d(ctx.tensor(node.input[0]), axis)]


@converts("Transpose")
def _transpose(ctx: Context, node: Any, a: dict) -> list:
    rank = len(ctx.shape(node.input[0]))
    perm = _ints(a.get("perm", list(reversed(range(rank)))))
    if ctx.all_static(node):
        return [np.transpose(ctx.statics[node.input[0]], perm)]
    return [ctx.g.permute(ctx.tensor(node.input[0]), perm)]


@converts("Squeeze")
def _squeeze(ctx: Context, node: Any, a: dict) -> list:
    axes = _axes_of(ctx, node, a, 13)
    if ctx.all_static(node):
        x = ctx.statics[node.input[0]]
        return [np.squeeze(x, axis=None if axes is None else tuple(axes))]
    return [ctx.g.squeeze(ctx.tensor(node.input[0]), axes)]


@converts("Unsqueeze")
def _unsqueeze(ctx: Context, node: Any, a: dict) -> list:
    axes = _axes_of(ctx, node, a, 13)
    if axes is None:
        raise ctx.error("Unsqueeze needs axes")
    if ctx.all_static(node):
        return [np.expand_dims(ctx.statics[node.input[0]], tuple(axes))]
    return [ctx.g.expand_dims(ctx.tensor(node.input[0]), axes)]


@converts("Concat")
def _concat(ctx: Context, node: Any, a: dict) -> list:
    axis = int(a["axis"])
    names = [n for n in node.input if n]
    if ctx.all_static(node):
        return [np.concatenate([np.atleast_1d(ctx.statics[n]) for n in names], axis=axis)]
    return [ctx.g.concat([ctx.tensor(n) for n in names], axis)]


@converts("Gather")
def _gather(ctx: Context, node: Any, a: dict) -> list:
    axis = int(a.get("axis", 0))
    if ctx.all_static(node):
        return [np.take(ctx.statics[node.input[0]], ctx.statics[node.input[1]], axis=axis)]
    indices = ctx.tensor(node.input[1])
    if indices.dtype == int64:
        indices = ctx.g.cast(indices, int32)
    return [ctx.g.gather(ctx.tensor(node.input[0]), indices, axis)]


@converts("Cast")
def _cast(ctx: Context, node: Any, a: dict) -> list:
    to = int(a["to"])
    if to not in ONNX_DTYPES:
        raise ctx.error(f"Cast to ONNX element type {to} is not supported (supported: {sorted(ONNX_DTYPES)})")
    if ctx.all_static(node):
        return [ctx.statics[node.input[0]].astype(ONNX_DTYPES[to].np_dtype)]
    return [ctx.g.cast(ctx.tensor(node.input[0]), ONNX_DTYPES[to])]


@converts("CastLike")
def _cast_like(ctx: Context, node: Any, a: dict) -> list:
    like = ctx.statics[node.input[1]].dtype if ctx.is_static(node.input[1]) else \
        ctx.tensor(node.input[1]).dtype.np_dtype
    if ctx.all_static(node):
        return [ctx.statics[node.input[0]].astype(like)]
    return [ctx.g.cast(ctx.tensor(node.input[0]), like)]


@converts("Expand")
def _expand(ctx: Context, node: Any, a: dict) -> list:
    shape = _ints(ctx.static(node.input[1], "shape"))
    src = ctx.shape(node.input[0])
    target = list(np.broadcast_shapes(tuple(src), tuple(shape)))
    if ctx.all_static(node):
        return [np.broadcast_to(ctx.statics[node.input[0]], target).copy()]
    return [ctx.g.broadcast(ctx.tensor(node.input[0]), target)]


@converts("ConstantOfShape")
def _constant_of_shape(ctx: Context, node: Any, a: dict) -> list:
    shape = _ints(ctx.static(node.input[0], "shape"))
    value = np.asarray(a.get("value", np.zeros(1, np.float32))).reshape(-1)
    return [np.full(shape, value[0], dtype=value.dtype)]


@converts("Slice")
def _slice(ctx: Context, node: Any, a: dict) -> list:
    shape = ctx.shape(node.input[0])
    if ctx.opset < 10:
        starts, ends = _ints(a["starts"]), _ints(a["ends"])
        axes = _ints(a.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts, ends = _ints(ctx.static(node.input[1], "starts")), _ints(ctx.static(node.input[2], "ends"))
        axes = _ints(ctx.static(node.input[3], "axes")) if ctx.has(node, 3) else list(range(len(starts)))
        steps = _ints(ctx.static(node.input[4], "steps")) if ctx.has(node, 4) else [1] * len(starts)
    index = [slice(None)] * len(shape)
    for s, e, ax, st in zip(starts, ends, axes, steps):
        index[ax % len(shape)] = slice(s, e, st)
    if ctx.all_static(node):
        return [ctx.statics[node.input[0]][tuple(index)]]
    y = ctx.tensor(node.input[0])
    for ax, sl in enumerate(index):
        start, stop, step = sl.indices(shape[ax])
        if (start, stop, step) == (0, shape[ax], 1):
            continue
        if step != 1:
            raise ctx.error(f"Slice with step {step} of a run-time tensor is not supported")
        y = ctx.g.slice(y, ax, start, max(stop - start, 0))
    return [y]


# ONNX "wrap" has period L; MPSGraph's PERIODIC maps x[-2] to x[L-3] (period L-1), so wrap is
# built from slices and a concat instead
_PAD_MODES = {"constant": PaddingMode.CONSTANT, "reflect": PaddingMode.REFLECT,
              "edge": PaddingMode.CLAMP_TO_EDGE}


def _wrap(ctx: Context, x: Tensor, left: list, right: list) -> Tensor:
    g = ctx.g
    for ax, (lo, hi) in enumerate(zip(left, right)):
        n = x.shape[ax]
        if not lo and not hi:
            continue
        if lo > n or hi > n:
            raise ctx.error(f"wrap padding ({lo}, {hi}) of axis {ax} exceeds its size {n}")
        parts = ([g.slice(x, ax, n - lo, lo)] if lo else []) + [x] + ([g.slice(x, ax, 0, hi)] if hi else [])
        x = g.concat(parts, ax)
    return x


@converts("Pad")
def _pad(ctx: Context, node: Any, a: dict) -> list:
    mode = a.get("mode", "constant")
    if mode not in _PAD_MODES and mode != "wrap":
        raise ctx.error(f"Pad mode {mode!r} is not supported (constant, reflect, edge, wrap are)")
    x = ctx.tensor(node.input[0])
    rank = len(x.shape)
    if ctx.opset < 11:
        pads, value = _ints(a["pads"]), float(a.get("value", 0.0))
    else:
        pads = _ints(ctx.static(node.input[1], "pads"))
        value = float(np.asarray(ctx.static(node.input[2], "constant_value")).reshape(())) \
            if ctx.has(node, 2) else 0.0
    axes = _ints(ctx.static(node.input[3], "axes")) if ctx.has(node, 3) else list(range(rank))
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"pads={pads} must hold 2 values per padded axis ({len(axes)} axes)")
    left, right = [0] * rank, [0] * rank
    for i, ax in enumerate(axes):
        left[ax % rank], right[ax % rank] = pads[i], pads[i + len(axes)]
    if min(left + right) < 0:
        raise ctx.error(f"negative pads {pads} (cropping) are not supported")
    if mode == "wrap":
        return [_wrap(ctx, x, left, right)]
    return [ctx.g.pad_tensor(x, _PAD_MODES[mode], left, right, value)]
