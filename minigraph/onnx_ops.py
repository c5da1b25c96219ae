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

from . import limits
from .descriptors import (Convolution2DOpDescriptor, DepthwiseConvolution2DOpDescriptor, PaddingMode,
                          PaddingStyle, Pooling2DOpDescriptor, ScatterMode)
from .errors import ModelImportError
from .ir import Tensor
from .listing import escape
from .ops._util import broadcast_shapes
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
        v = self.variables[name] = self.values[name] = self.g.variable(value, name=name)
        self.statics[name] = v.operation.attrs["initial_value"]  # the variable's copy: one copy in all

    def foldable(self, shape: Any, dtype: Any) -> bool:
        """Whether a value of this shape may be computed at import time (``limits.MAX_FOLD_BYTES``);
        a larger one is built as an op, computed (or refused by the size limits) when a run needs it."""
        return math.prod(shape) * np.dtype(dtype).itemsize <= limits.MAX_FOLD_BYTES

    def axis(self, value: Any, rank: int, what: str = "axis", inclusive: bool = False) -> int:
        """An ONNX axis in ``[-rank, rank)`` (``[-rank, rank]`` with ``inclusive``: Flatten's), made non-negative;
        ONNX declares the others invalid (they are refused, not taken modulo the rank)."""
        top = rank + 1 if inclusive else rank
        ax = _int(value, what)
        if not -rank <= ax < top:
            valid = f"{-rank}..{top - 1}" if top else "none: the input is a scalar"
            raise self.error(f"{what} {ax} is out of range for an input of rank {rank} (valid: {valid})")
        return ax + rank if ax < 0 else ax

    def axes(self, values: Any, rank: int, what: str = "axes") -> list:
        """ONNX axes, each in ``[-rank, rank)``, none twice, made non-negative."""
        out = [self.axis(v, rank, what) for v in values]
        if len(set(out)) != len(out):
            raise self.error(f"{what} {list(values)} name an axis twice")
        return out

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

    def all_static_name(self, name: str) -> bool:
        """Whether the value is known at import and is no variable's (a variable may change)."""
        return name in self.statics and name not in self.variables

    def all_static(self, node: Any) -> bool:
        return all(not n or (n in self.statics and n not in self.variables) for n in node.input)

    def shape(self, name: str) -> tuple:
        if name in self.statics and name not in self.values:
            return tuple(self.statics[name].shape)
        return tuple(self.tensor(name).shape)


def _const_name(name: str) -> str:
    return name.replace("/", "_").strip("_") or "constant"


def _int(v: Any, what: str = "value") -> int:
    """One integer from an attribute or a constant (an int, or a float with an integer value)."""
    a = np.asarray(v)
    if a.size != 1 or a.dtype.kind not in "iub" and not (a.dtype.kind == "f" and np.isfinite(a).all()
                                                          and float(a.reshape(())) == int(a.reshape(()))):
        raise ModelImportError(f"{what} must be an integer, got {escape(repr(v))[:60]}")
    return int(a.reshape(()))


def _ints(v: Any, what: str = "values") -> list:
    """Integers from an attribute or a constant (a list of ints, or a 0-d/1-d integer array)."""
    a = np.asarray(v)
    if a.size == 0 and a.ndim <= 1:
        return []
    if a.ndim > 1 or a.dtype.kind not in "iub":
        raise ModelImportError(f"{what} must be integers, got {escape(repr(v))[:60]}")
    return [int(x) for x in a.reshape(-1)]


def _scalar(v: Any, what: str) -> float:
    """One number from an attribute or a constant."""
    a = np.asarray(v)
    if a.size != 1 or a.dtype.kind not in "iubf":
        raise ModelImportError(f"{what} must be one number, got {escape(repr(v))[:60]}")
    return float(a.reshape(()))


# ----------------------------------------------------------------------------- convolution
def _padding(ctx: Context, a: dict, spatial: int = 2) -> tuple:
    """(padding style, (top, left, bottom, right)) from ``auto_pad`` / ``pads``."""
    auto = a.get("auto_pad", "NOTSET")
    styles = {"SAME_UPPER": PaddingStyle.TF_SAME, "SAME_LOWER": PaddingStyle.ONNX_SAME_LOWER,
              "VALID": PaddingStyle.TF_VALID}
    if auto in styles:
        return styles[auto], (0, 0, 0, 0)
    if auto != "NOTSET":
        raise ctx.error(f"auto_pad={escape(repr(auto))} is not an ONNX padding (NOTSET, SAME_UPPER, SAME_LOWER, VALID)")
    pads = _ints(a.get("pads", [0] * (2 * spatial)), "pads")
    if len(pads) != 2 * spatial or min(pads) < 0:
        raise ctx.error(f"pads={pads} must be {2 * spatial} non-negative ints (begin values, then end values)")
    return PaddingStyle.EXPLICIT, (pads[0], pads[1], pads[2], pads[3])


def _two(ctx: Context, a: dict, key: str) -> tuple:
    v = _ints(a.get(key, [1, 1]), key)
    if len(v) != 2:
        raise ctx.error(f"{key}={v}: only 2-D windows are supported")
    return v[0], v[1]


@converts("Conv")
def _conv(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x, w = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    one_d = len(x.shape) == 3 and len(w.shape) == 3
    if one_d:  # a 1-D convolution: a 2-D one of height 1
        x, w, a = g.expand_dims(x, [2]), g.expand_dims(w, [2]), _attrs_2d(ctx, a)
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise ctx.error(f"only 1-D and 2-D convolutions are supported (3-D or 4-D input and weights), got input "
                        f"{list(x.shape)} and weights {list(w.shape)}")
    group = _int(a.get("group", 1), "group")
    cin, cout, kh, kw = x.shape[1], w.shape[0], w.shape[2], w.shape[3]
    if group < 1:
        raise ctx.error(f"group={group} must be at least 1")
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
    return [g.squeeze(y, [2]) if one_d else y]


def _attrs_2d(ctx: Context, a: dict) -> dict:
    """A 1-D window's attributes as those of a 2-D window of height 1."""
    out = dict(a)
    for key in ("kernel_shape", "strides", "dilations"):
        if key in a:
            v = _ints(a[key], key)
            if len(v) != 1:
                raise ctx.error(f"{key}={v}: a 1-D window takes one value")
            out[key] = [1] + v
    if "pads" in a:
        p = _ints(a["pads"], "pads")
        if len(p) != 2:
            raise ctx.error(f"pads={p}: a 1-D window takes two values (begin, end)")
        out["pads"] = [0, p[0], 0, p[1]]
    return out


def _pool_1d(ctx: Context, a: dict, x: Tensor, fn: Callable[[Tensor, Pooling2DOpDescriptor], Tensor]) -> Tensor:
    """A 1-D, 2-D or 3-D max or average pool from MPSGraph's 2-D ones: 1-D as height 1; 3-D as a
    2-D pool over height and width, then one over depth (both are separable: a window is a box, and
    an average's count of values is the product of the counts along each axis)."""
    g = ctx.g
    if len(x.shape) == 3:
        return g.squeeze(fn(g.expand_dims(x, [2]), _pool_descriptor(ctx, _attrs_2d(ctx, a))), [2])
    if len(x.shape) != 5:
        return fn(x, _pool_descriptor(ctx, a))
    if -1 in x.shape:
        raise ctx.error(f"a 3-D pool needs a static input shape, got {list(x.shape)}")
    hw, depth = dict(a), dict(a)
    for key, default in (("kernel_shape", None), ("strides", 1), ("dilations", 1)):
        v = _ints(a[key], key) if key in a else ([default] * 3 if default is not None else None)
        if v is None or len(v) != 3:
            raise ctx.error(f"{key}={v}: a 3-D window takes three values")
        hw[key], depth[key] = v[1:], [1, v[0]]
    if "pads" in a:
        p = _ints(a["pads"], "pads")
        if len(p) != 6:
            raise ctx.error(f"pads={p}: a 3-D window takes six values")
        hw["pads"], depth["pads"] = [p[1], p[2], p[4], p[5]], [0, p[0], 0, p[3]]
    n, c, d, _, _ = x.shape
    y = fn(g.reshape(x, [n, c * d] + list(x.shape[3:])), _pool_descriptor(ctx, hw))
    h2, w2 = y.shape[2], y.shape[3]
    y = g.reshape(g.permute(g.reshape(y, [n, c, d, h2, w2]), [0, 1, 3, 4, 2]), [n, c * h2 * w2, 1, d])
    y = fn(y, _pool_descriptor(ctx, depth))
    d2 = y.shape[3]
    return g.permute(g.reshape(y, [n, c, h2, w2, d2]), [0, 1, 4, 2, 3])


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
    x = ctx.tensor(node.input[0])
    if x.dtype.name in ("int8", "uint8"):  # every 8-bit value is a float32: the maximum is exact
        y = ctx.g.cast(_pool_1d(ctx, a, ctx.g.cast(x, float32), ctx.g.max_pooling_2d), x.dtype)
    else:
        y = _pool_1d(ctx, a, x, ctx.g.max_pooling_2d)
    if len(node.output) < 2 or not node.output[1]:
        return [y]
    return [y, _max_pool_indices(ctx, a, x, y)]


def _max_pool_indices(ctx: Context, a: dict, x: Tensor, y: Tensor) -> Tensor:
    """MaxPool's second output: the flat index (over the whole input) of each window's first maximum,
    from a gather of every window's values at positions computed when the file is read."""
    g = ctx.g
    if len(x.shape) != 4 or -1 in x.shape or a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise ctx.error(f"MaxPool's indices are supported for static 2-D inputs with explicit pads, got "
                        f"{list(x.shape)} and auto_pad={a.get('auto_pad')!r}")
    n, c, h, w = x.shape
    (kh, kw), (sy, sx), (dy, dx) = (_two(ctx, {"k": a.get("kernel_shape", [])}, "k"), _two(ctx, a, "strides"),
                                    _two(ctx, a, "dilations"))
    pads = _ints(a.get("pads", [0, 0, 0, 0]), "pads") if a.get("auto_pad", "NOTSET") == "NOTSET" else [0] * 4
    ho, wo = y.shape[2], y.shape[3]
    rows = (np.arange(ho) * sy - pads[0])[:, None] + np.arange(kh) * dy  # [ho, kh]
    cols = (np.arange(wo) * sx - pads[1])[:, None] + np.arange(kw) * dx  # [wo, kw]
    r = rows[:, None, :, None]
    q = cols[None, :, None, :]
    inside = (r >= 0) & (r < h) & (q >= 0) & (q < w)  # [ho, wo, kh, kw]
    pos = np.where(inside, r * w + q, h * w)  # outside: the extra -inf element appended below
    pos = pos.reshape(ho * wo, kh * kw).T.astype(np.int32)  # [window, output]
    xf = g.cast(x, float32) if x.dtype != float32 else x
    flat = g.concat([g.reshape(xf, [n, c, h * w]), g.constant(np.full((n, c, 1), -np.inf, np.float32))], 2)
    vals = g.gather(flat, g.constant(pos), 2)  # [n, c, window, output]
    best = g.squeeze(g.reduction_arg_maximum(vals, 2), [2])  # [n, c, output]
    column_major = bool(_int(a.get("storage_order", 0), "storage_order"))
    table = np.where(pos < h * w, (pos % w) * h + pos // w if column_major else pos, 0).astype(np.int32)
    where = g.gather_along_axis(g.broadcast(g.constant(table), [n, c, kh * kw, ho * wo]),
                                g.expand_dims(best, [2]), 2)  # [n, c, 1, output]
    base = (np.arange(n)[:, None] * c + np.arange(c)[None, :]) * h * w
    flat_index = g.addition(g.reshape(where, [n, c, ho * wo]), g.constant(base[:, :, None].astype(np.int32)))
    return g.cast(g.reshape(flat_index, [n, c, ho, wo]), int64)


@converts("LpPool")
def _lp_pool(ctx: Context, node: Any, a: dict) -> list:
    """(sum |x|^p over the window)^(1/p): an average pool of |x|^p (zero padding counted) times the
    window size."""
    g = ctx.g
    x = ctx.tensor(node.input[0])
    _float_only(ctx, x)
    p = _scalar(a.get("p", 2), "p")
    kernel = _ints(a.get("kernel_shape", []), "kernel_shape")
    if "ceil_mode" in a and _int(a["ceil_mode"], "ceil_mode"):
        raise ctx.error("ceil_mode=1 is not supported")
    powered = g.power(g.absolute(x), _const_like(ctx, x, p))
    avg = _pool_1d(ctx, dict(a, count_include_pad=1), powered, g.avg_pooling_2d)
    return [g.power(g.multiplication(avg, _const_like(ctx, x, float(math.prod(kernel)))), _const_like(ctx, x, 1.0 / p))]


@converts("LRN")
def _lrn(ctx: Context, node: Any, a: dict) -> list:
    """x / (bias + alpha / size * sum of x^2 over ``size`` neighbouring channels)^beta."""
    g = ctx.g
    x = ctx.tensor(node.input[0])
    _float_only(ctx, x)
    size = _int(a["size"], "size")
    alpha, beta = _scalar(a.get("alpha", 1e-4), "alpha"), _scalar(a.get("beta", 0.75), "beta")
    bias = _scalar(a.get("bias", 1.0), "bias")
    c = x.shape[1]
    sq = g.multiplication(x, x)
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    left, right = [0] * len(x.shape), [0] * len(x.shape)
    left[1], right[1] = lo, hi
    padded = g.pad_tensor(sq, PaddingMode.CONSTANT, left, right, 0.0)
    total = g.slice(padded, 1, 0, c)
    for k in range(1, size):
        total = g.addition(total, g.slice(padded, 1, k, c))
    scale = g.addition(g.multiplication(total, _const_like(ctx, x, alpha / size)), _const_like(ctx, x, bias))
    return [g.division(x, g.power(scale, _const_like(ctx, x, beta)))]


@converts("Compress")
def _compress(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    cond = np.asarray(ctx.static(node.input[1], "condition")).reshape(-1).astype(bool)
    x = ctx.tensor(node.input[0])
    if "axis" not in a:
        x = g.reshape(x, [-1])
        axis = 0
    else:
        axis = ctx.axis(a["axis"], len(x.shape))
    picked = np.nonzero(cond[:x.shape[axis]])[0].astype(np.int32)
    if picked.size == 0:
        raise ctx.error("the condition selects no element (an empty result is not supported)")
    return [g.gather(x, g.constant(picked), axis)]


@converts("AveragePool")
def _avg_pool(ctx: Context, node: Any, a: dict) -> list:
    return [_pool_1d(ctx, a, ctx.tensor(node.input[0]), ctx.g.avg_pooling_2d)]


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
    if len(node.input) < 5 or not all(node.input[1:5]):
        raise ctx.error("needs 5 inputs (X, scale, B, input_mean, input_var)")
    scale, bias, mean, var = (ctx.tensor(n) for n in node.input[1:5])
    eps, momentum = _scalar(a.get("epsilon", 1e-5), "epsilon"), _scalar(a.get("momentum", 0.9), "momentum")
    rank = len(x.shape)
    if rank < 2:
        raise ctx.error(f"input of shape {list(x.shape)} has no channel axis")
    c = x.shape[1]
    per_channel = [1, c] + [1] * (rank - 2)

    def col(t: Tensor) -> Tensor:
        return g.reshape(t, per_channel)

    training_mode = ctx.opset >= 14 and bool(_int(a.get("training_mode", 0), "training_mode"))
    if not ctx.training and not training_mode:
        return [g.normalize(x, col(mean), col(var), col(scale), col(bias), eps)]
    axes = [0] + list(range(2, rank))
    batch_mean, batch_var = g.mean(x, axes), g.variance(x, axes)
    y = g.normalize(x, batch_mean, batch_var, col(scale), col(bias), eps)
    n = math.prod(x.shape[i] for i in axes)
    if n < 0:
        raise ctx.error("training-mode batch norm needs static batch and spatial sizes")
    # minigraph's training import keeps PyTorch's running variance (unbiased); a model that asks for
    # ONNX's training_mode=1 gets ONNX's (the batch's biased variance)
    correction = n / max(n - 1, 1) if ctx.training else 1.0
    with g.name_scope("running_statistics"):
        new_mean = g.addition(g.multiplication(mean, momentum),
                              g.multiplication(g.reshape(batch_mean, [c]), 1.0 - momentum))
        unbiased = g.multiplication(g.reshape(batch_var, [c]), (1.0 - momentum) * correction)
        new_var = g.addition(g.multiplication(var, momentum), unbiased)
        for name, value in ((node.input[3], new_mean), (node.input[4], new_var)):
            if ctx.training and name in ctx.variables:
                ctx.updates.append(g.assign(ctx.variables[name], value))
    return [y, new_mean, new_var] if ctx.opset >= 14 else [y, new_mean, new_var, None, None]


@converts("Dropout")
def _dropout(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    ratio = _scalar(ctx.static(node.input[1], "ratio") if ctx.has(node, 1) else a.get("ratio", 0.5), "ratio")
    if not 0.0 <= ratio < 1.0:
        raise ctx.error(f"ratio {ratio} must lie in [0, 1)")
    training_mode = ctx.has(node, 2) and bool(_int(ctx.static(node.input[2], "training_mode"), "training_mode"))
    if not (ctx.training or training_mode) or ratio == 0.0:  # nothing dropped: the mask is all true
        keep = np.ones(x.shape, bool) if -1 not in x.shape and ctx.foldable(x.shape, bool) else None
        return [ctx.g.identity(x), keep]
    return [ctx.g.dropout(x, ratio)]


# ----------------------------------------------------------------------------- activations
def _bound(ctx: Context, node: Any, a: dict, i: int, key: str, default: float) -> Any:
    if ctx.opset < 11:
        return _scalar(a.get(key, default), key)
    if not ctx.has(node, i):
        return default
    if ctx.is_static(node.input[i]):
        return _scalar(ctx.static(node.input[i], key), key)
    return ctx.tensor(node.input[i])


@converts("Clip")
def _clip(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    if x.dtype.is_floating:
        lo_default, hi_default = -math.inf, math.inf
    else:  # no bound: the integer type's own range
        info = np.iinfo(x.dtype.np_dtype)
        lo_default, hi_default = float(info.min), float(info.max)
    lo = _bound(ctx, node, a, 1, "min", lo_default)
    hi = _bound(ctx, node, a, 2, "max", hi_default)
    return [ctx.g.clamp(x, lo, hi)]


_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exponent", "Log": "logarithm",
          "Sqrt": "square_root", "Neg": "negative", "Abs": "absolute", "Reciprocal": "reciprocal",
          "Erf": "erf", "Floor": "floor", "Ceil": "ceil", "Sin": "sin", "Cos": "cos", "Sign": "sign"}


_UNARY_NUMPY: dict[str, Callable[..., Any]] = {"Neg": np.negative, "Abs": np.abs, "Sign": np.sign, "Floor": np.floor, "Ceil": np.ceil,
                "Relu": lambda x: np.maximum(x, np.zeros((), x.dtype))}


@converts(*_UNARY)
def _unary(ctx: Context, node: Any, a: dict) -> list:
    if node.op_type in _UNARY_NUMPY:  # shape arithmetic of exporters and function bodies
        folded = _fold(ctx, node, _UNARY_NUMPY[node.op_type])
        if folded is not None:
            return folded
    return [getattr(ctx.g, _UNARY[node.op_type])(ctx.tensor(node.input[0]))]


@converts("LeakyRelu")
def _leaky_relu(ctx: Context, node: Any, a: dict) -> list:
    return [ctx.g.leaky_relu(ctx.tensor(node.input[0]), _scalar(a.get("alpha", 0.01), "alpha"))]


@converts("HardSigmoid")
def _hard_sigmoid(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    lin = g.addition(g.multiplication(x, _scalar(a.get("alpha", 0.2), "alpha")), _scalar(a.get("beta", 0.5), "beta"))
    return [g.clamp(lin, 0.0, 1.0)]


@converts("HardSwish")
def _hard_swish(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    gate = g.clamp(g.addition(g.multiplication(x, 1.0 / 6.0), 0.5), 0.0, 1.0)
    return [g.multiplication(x, gate)]


def _log_softmax_of(ctx: Context, x: Tensor, axis: int) -> Tensor:
    """x - max - log(sum(exp(x - max))) along ``axis``: no overflow."""
    g = ctx.g
    shifted = g.subtraction(x, g.stop_gradient(g.reduction_maximum(x, [axis])))
    return g.subtraction(shifted, g.logarithm(g.reduction_sum(g.exponent(shifted), [axis])))


@converts("Softmax", "LogSoftmax", "Hardmax")
def _softmax(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    shape = list(x.shape)
    axis = ctx.axis(a.get("axis", -1 if ctx.opset >= 13 else 1), len(shape))
    flat = ctx.opset < 13 and axis != len(shape) - 1  # before opset 13: over the axes from ``axis`` on, as one
    if flat:
        if -1 in shape:
            raise ctx.error(f"{node.op_type} before opset 13 flattens from axis {axis}; input shape {shape} "
                            "must be static")
        x = g.reshape(x, [math.prod(shape[:axis]), math.prod(shape[axis:])])
    ax = 1 if flat else axis
    if node.op_type == "Softmax":
        y = g.softmax(x, ax)
    elif node.op_type == "LogSoftmax":
        y = _log_softmax_of(ctx, x, ax)
    else:  # Hardmax: one-hot of the first maximum
        n = x.shape[ax]
        idx = g.squeeze(g.reduction_arg_maximum(x, ax), [ax])
        y = g.one_hot(idx, n, ax, x.dtype, 1.0, 0.0)
    return [g.reshape(y, shape) if flat else y]


# ----------------------------------------------------------------------------- arithmetic
_BINARY: dict[str, tuple[str, Any]] = {"Add": ("addition", np.add), "Sub": ("subtraction", np.subtract),
           "Mul": ("multiplication", np.multiply), "Div": ("division", None),
           "Pow": ("power", np.power),
           "Equal": ("equal", np.equal), "Less": ("less_than", np.less), "Greater": ("greater_than", np.greater)}


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return (np.trunc(a / b)).astype(np.result_type(a, b))
    return np.divide(a, b)


@converts(*_BINARY)
def _binary(ctx: Context, node: Any, a: dict) -> list:
    method, fn = _BINARY[node.op_type]
    if len(node.input) != 2 or not all(node.input):
        raise ctx.error(f"needs 2 inputs, got {len(node.input)}")
    if ctx.all_static(node):
        xv, yv = ctx.statics[node.input[0]], ctx.statics[node.input[1]]
        shape = broadcast_shapes(xv.shape, yv.shape)
        if ctx.foldable(shape, np.result_type(xv, yv)):
            with np.errstate(all="ignore"):  # as a run computes it: inf, nan, wrapped integers
                if node.op_type == "Div" and yv.dtype.kind in "iu" and xv.dtype.kind in "iu" and not yv.all():
                    raise ctx.error("integer division by zero in constants")
                return [(fn or _divide)(xv, yv)]
    x, y = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    if node.op_type == "Pow" and x.dtype != y.dtype:  # ONNX Pow: the exponent may be of another type
        if not x.dtype.is_floating:
            raise ctx.error(f"Pow of a {x.dtype.name} base by a {y.dtype.name} exponent is not supported")
        y = ctx.g.cast(y, x.dtype)
    if node.op_type == "Div" and not x.dtype.is_floating:
        return [_integer_division(ctx, x, y)]
    return [getattr(ctx.g, method)(x, y)]


def _integer_division(ctx: Context, x: Tensor, y: Tensor) -> Tensor:
    """ONNX integer Div (truncated toward zero): ``x - fmod(x, y)`` is a multiple of ``y``, divided in
    float32 and rounded, exact while the dividend's magnitude is below 2**24."""
    g = ctx.g
    if x.dtype != y.dtype:
        raise ctx.error(f"inputs of dtypes {x.dtype.name} and {y.dtype.name} differ")
    rem = g.modulo(x, y)  # the dividend's sign, as C's %
    q = g.division(g.cast(g.subtraction(x, rem), float32), g.cast(y, float32))
    return g.cast(g.rint(q), x.dtype)


@converts("MatMul")
def _matmul(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x, y = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    # NumPy's matmul rule: a 1-D operand is a row (left) or a column (right), that axis removed after
    x1, y1 = len(x.shape) == 1, len(y.shape) == 1
    out = g.matrix_multiplication(g.expand_dims(x, [0]) if x1 else x, g.expand_dims(y, [1]) if y1 else y)
    if x1 or y1:
        rank = len(out.shape)
        out = g.squeeze(out, ([rank - 2] if x1 else []) + ([rank - 1] if y1 else []))
    return [out]


@converts("Gemm")
def _gemm(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x, w = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    if len(x.shape) != 2 or len(w.shape) != 2:
        raise ctx.error(f"Gemm multiplies matrices, got shapes {list(x.shape)} and {list(w.shape)}")
    if _int(a.get("transA", 0), "transA"):
        x = g.transpose(x, 0, 1)
    if _int(a.get("transB", 0), "transB"):
        w = g.transpose(w, 0, 1)
    y = g.matrix_multiplication(x, w)
    alpha, beta = _scalar(a.get("alpha", 1.0), "alpha"), _scalar(a.get("beta", 1.0), "beta")
    if alpha != 1.0:
        y = g.multiplication(y, alpha)
    if ctx.has(node, 2):
        c = ctx.tensor(node.input[2])
        y = g.addition(y, c if beta == 1.0 else g.multiplication(c, beta))
    return [y]


def _axes_of(ctx: Context, node: Any, a: dict, since: int, input_index: int = 1) -> Optional[list]:
    """Axes from the attribute (before opset ``since``) or the optional input (from it)."""
    if ctx.opset < since:
        return _ints(a["axes"], "axes") if "axes" in a else None
    if ctx.has(node, input_index):
        return _ints(ctx.static(node.input[input_index], "axes"), "axes")
    return None


_REDUCE: dict[str, tuple[str, int, Any]] = {"ReduceMean": ("mean", 18, np.mean), "ReduceSum": ("reduction_sum", 13, np.sum),
           "ReduceMax": ("reduction_maximum", 18, np.max), "ReduceMin": ("reduction_minimum", 18, np.min)}

_REDUCE_COMPOSED: dict[str, tuple[Callable[[Any, Tensor, list], Tensor], Any]] = {
    "ReduceL1": (lambda g, x, ax: g.reduction_sum(g.absolute(x), ax),
                 lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis, keepdims=keepdims)),
    "ReduceL2": (lambda g, x, ax: g.square_root(g.reduction_sum(g.multiplication(x, x), ax)),
                 lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))),
    "ReduceSumSquare": (lambda g, x, ax: g.reduction_sum(g.multiplication(x, x), ax),
                        lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims)),
    "ReduceLogSum": (lambda g, x, ax: g.logarithm(g.reduction_sum(x, ax)),
                     lambda x, axis, keepdims: np.log(np.sum(x, axis=axis, keepdims=keepdims))),
    "ReduceLogSumExp": (lambda g, x, ax: g.logarithm(g.reduction_sum(g.exponent(x), ax)),
                        lambda x, axis, keepdims: np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))),
    "ReduceProd": (lambda g, x, ax: g.reduction_product(x, ax),
                   lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims)),
}


@converts(*_REDUCE, *_REDUCE_COMPOSED)
def _reduce(ctx: Context, node: Any, a: dict) -> list:
    if node.op_type in _REDUCE:
        method, since, fn = _REDUCE[node.op_type]
        build: Callable[[Any, Tensor, list], Tensor] = lambda g, x, ax: getattr(g, method)(x, ax)  # noqa: E731
    else:
        build, fn = _REDUCE_COMPOSED[node.op_type]
        since = 18
    axes = _axes_of(ctx, node, a, since)
    keep = bool(_int(a.get("keepdims", 1), "keepdims"))
    rank = len(ctx.shape(node.input[0]))
    if not axes:
        if _int(a.get("noop_with_empty_axes", 0), "noop_with_empty_axes"):
            return [ctx.tensor(node.input[0])]
        axes = list(range(rank))
    axes = sorted(ctx.axes(axes, rank))
    if not axes and node.op_type in _REDUCE:  # a scalar summed over no axes is itself
        return [ctx.statics[node.input[0]] if ctx.all_static(node) else ctx.tensor(node.input[0])]
    if ctx.all_static(node) and node.input[0] not in ctx.values:
        with np.errstate(all="ignore"):
            return [np.asarray(fn(ctx.statics[node.input[0]], axis=tuple(axes), keepdims=keep))]
    x = ctx.tensor(node.input[0])
    if not axes:  # a scalar: the composite's elementwise part alone
        return [ctx.g.squeeze(build(ctx.g, ctx.g.expand_dims(x, [0]), [0]), [0]) if x.shape == () else x]
    if x.dtype == bool_ and node.op_type in ("ReduceMax", "ReduceMin"):  # bool max / min: any / all
        y = (ctx.g.reduction_or if node.op_type == "ReduceMax" else ctx.g.reduction_and)(x, axes)
    else:
        y = build(ctx.g, x, axes)
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
    start, end = _int(a.get("start", 0), "start"), a.get("end")
    part = shape[start:] if end is None else shape[start:_int(end, "end")]
    if -1 in part:
        raise ctx.error(f"Shape of a tensor with dynamic dimensions {list(shape)} is not supported")
    return [np.asarray(part, dtype=np.int64)]


@converts("Reshape")
def _reshape(ctx: Context, node: Any, a: dict) -> list:
    target = _ints(ctx.static(node.input[1], "shape"), "shape")
    src = ctx.shape(node.input[0])
    if len(target) > limits.MAX_RANK or target.count(-1) > 1 or min(target, default=0) < -1:
        raise ctx.error(f"shape {target[:10]} must hold at most {limits.MAX_RANK} sizes, each >= 0, and at "
                        "most one -1")
    if not _int(a.get("allowzero", 0), "allowzero"):
        if any(d == 0 and i >= len(src) for i, d in enumerate(target)):
            raise ctx.error(f"shape {target}: a 0 copies the input's size at its position, and the input "
                            f"{list(src)} has rank {len(src)}")
        target = [src[i] if d == 0 else d for i, d in enumerate(target)]
    if ctx.all_static(node):
        x = ctx.statics[node.input[0]]
        known = math.prod(d for d in target if d != -1)
        if (x.size != known if -1 not in target else known == 0 or x.size % known):
            raise ctx.error(f"cannot reshape a constant of shape {list(x.shape)} to {target}")
        return [x.reshape(target)]
    return [ctx.g.reshape(ctx.tensor(node.input[0]), target)]


@converts("Flatten")
def _flatten(ctx: Context, node: Any, a: dict) -> list:
    shape = ctx.shape(node.input[0])
    axis = ctx.axis(a.get("axis", 1), len(shape), inclusive=True)
    if ctx.all_static(node):
        return [ctx.statics[node.input[0]].reshape(math.prod(shape[:axis]), math.prod(shape[axis:]))]
    return [ctx.g.flatten_2d(ctx.tensor(node.input[0]), axis)]


@converts("Transpose")
def _transpose(ctx: Context, node: Any, a: dict) -> list:
    rank = len(ctx.shape(node.input[0]))
    perm = _ints(a.get("perm", list(reversed(range(rank)))), "perm")
    if sorted(perm) != list(range(rank)):
        raise ctx.error(f"perm {perm[:10]} is not a permutation of the input's {rank} axes")
    if ctx.all_static(node):
        return [np.transpose(ctx.statics[node.input[0]], perm)]
    return [ctx.g.permute(ctx.tensor(node.input[0]), perm)]


@converts("Squeeze")
def _squeeze(ctx: Context, node: Any, a: dict) -> list:
    axes = _axes_of(ctx, node, a, 13)
    shape = ctx.shape(node.input[0])
    if axes is not None:
        axes = ctx.axes(axes, len(shape))
        if any(shape[ax] != 1 for ax in axes):
            raise ctx.error(f"axes {axes} of shape {list(shape)}: only axes of size 1 can be squeezed")
    if ctx.all_static(node):
        x = ctx.statics[node.input[0]]
        return [np.squeeze(x, axis=None if axes is None else tuple(axes))]
    return [ctx.g.squeeze(ctx.tensor(node.input[0]), axes)]


@converts("Unsqueeze")
def _unsqueeze(ctx: Context, node: Any, a: dict) -> list:
    axes = _axes_of(ctx, node, a, 13)
    if axes is None:
        raise ctx.error("Unsqueeze needs axes")
    rank = len(ctx.shape(node.input[0])) + len(axes)
    if rank > limits.MAX_RANK:
        raise ctx.error(f"the result would have rank {rank}, more than {limits.MAX_RANK}")
    axes = ctx.axes(axes, rank)
    if ctx.all_static(node):
        return [np.expand_dims(ctx.statics[node.input[0]], tuple(axes))]
    return [ctx.g.expand_dims(ctx.tensor(node.input[0]), axes)]


@converts("Concat")
def _concat(ctx: Context, node: Any, a: dict) -> list:
    if "axis" not in a:
        raise ctx.error("Concat needs axis")
    names = [n for n in node.input if n]
    if not names:
        raise ctx.error("Concat needs at least one input")
    static = ctx.all_static(node)
    parts = [np.atleast_1d(ctx.statics[n]) for n in names] if static else []  # exporters' scalars too
    shapes = [tuple(p.shape) for p in parts] if static else [ctx.shape(n) for n in names]
    if len({len(sh) for sh in shapes}) != 1:
        raise ctx.error(f"inputs of shapes {[list(sh) for sh in shapes]} differ in rank")
    axis = ctx.axis(a["axis"], len(shapes[0]))
    if static:
        if any(sh[:axis] + sh[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:] for sh in shapes):
            raise ctx.error(f"inputs of shapes {[list(sh) for sh in shapes]} differ off axis {axis}")
        return [np.concatenate(parts, axis=axis)]
    return [ctx.g.concat([ctx.tensor(n) for n in names], axis)]


@converts("Gather")
def _gather(ctx: Context, node: Any, a: dict) -> list:
    shape = ctx.shape(node.input[0])
    axis = ctx.axis(a.get("axis", 0), len(shape))
    if ctx.all_static(node):
        x, idx = ctx.statics[node.input[0]], ctx.statics[node.input[1]]
        if idx.dtype.kind not in "iu":
            raise ctx.error(f"indices must be integers, got {idx.dtype}")
        n = x.shape[axis]
        if idx.size and not (-n <= idx.min() and idx.max() < n):
            raise ctx.error(f"indices {idx.reshape(-1)[:10].tolist()} lie outside [-{n}, {n}) along axis {axis}")
        if ctx.foldable(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype):
            return [np.take(x, idx, axis=axis)]
    # int32 (MPSGraph's index type); negative ones counted from the end
    indices = _int32_indices(ctx, node.input[1], shape[axis])
    return [ctx.g.gather(ctx.tensor(node.input[0]), indices, axis)]


@converts("Cast")
def _cast(ctx: Context, node: Any, a: dict) -> list:
    to = _int(a.get("to", -1), "to")
    if to not in ONNX_DTYPES:
        raise ctx.error(f"Cast to ONNX element type {to} is not supported (supported: {sorted(ONNX_DTYPES)})")
    if ctx.all_static(node):
        return [ctx.statics[node.input[0]].astype(ONNX_DTYPES[to].np_dtype)]
    return [ctx.g.cast(ctx.tensor(node.input[0]), ONNX_DTYPES[to])]


@converts("CastLike")
def _cast_like(ctx: Context, node: Any, a: dict) -> list:
    like = ctx.statics[node.input[1]].dtype if ctx.is_static(node.input[1]) else \
        ctx.tensor(node.input[1]).dtype.np_dtype
    if like not in [d.np_dtype for d in ONNX_DTYPES.values()]:
        raise ctx.error(f"CastLike to {like} is not supported")
    src = node.input[0]
    if src in ctx.statics and src not in ctx.variables:  # only the dtype of the second input is read
        with np.errstate(all="ignore"):
            return [ctx.statics[src].astype(like)]
    return [ctx.g.cast(ctx.tensor(src), like)]


@converts("Expand")
def _expand(ctx: Context, node: Any, a: dict) -> list:
    shape = _ints(ctx.static(node.input[1], "shape"), "shape")
    src = ctx.shape(node.input[0])
    if len(shape) > limits.MAX_RANK or min(shape, default=0) < 0:
        raise ctx.error(f"shape {shape[:10]} must hold at most {limits.MAX_RANK} sizes, each >= 0")
    target = list(broadcast_shapes(tuple(src), tuple(shape)))
    if ctx.all_static(node):
        x = ctx.statics[node.input[0]]
        if ctx.foldable(target, x.dtype):
            return [np.broadcast_to(x, target).copy()]
        # too large to compute at import: a broadcast op, sized (and refused if too large) by a run
    return [ctx.g.broadcast(ctx.tensor(node.input[0]), target)]


@converts("ConstantOfShape")
def _constant_of_shape(ctx: Context, node: Any, a: dict) -> list:
    shape = _ints(ctx.static(node.input[0], "shape"), "shape")
    value = np.asarray(a.get("value", np.zeros(1, np.float32)))
    if value.size != 1:
        raise ctx.error(f"value must hold one element, it holds {value.size}")
    if len(shape) > limits.MAX_RANK or min(shape, default=0) < 0:
        raise ctx.error(f"shape {shape[:10]} must hold at most {limits.MAX_RANK} sizes, each >= 0")
    if ctx.foldable(shape, value.dtype):
        return [np.full(shape, value.reshape(()), dtype=value.dtype)]
    # too large to compute at import: a constant filled from one element (filled when a run needs it,
    # refused by the size limits where it is too large for that)
    return [ctx.g.constant(value.reshape(()), shape=shape)]


@converts("Slice")
def _slice(ctx: Context, node: Any, a: dict) -> list:
    shape = ctx.shape(node.input[0])
    if ctx.opset < 10:
        if "starts" not in a or "ends" not in a:
            raise ctx.error("Slice needs starts and ends")
        starts, ends = _ints(a["starts"], "starts"), _ints(a["ends"], "ends")
        axes = _ints(a.get("axes", list(range(len(starts)))), "axes")
        steps = [1] * len(starts)
    else:
        if not ctx.has(node, 1) or not ctx.has(node, 2):
            raise ctx.error("Slice needs starts and ends")
        starts, ends = _ints(ctx.static(node.input[1], "starts"), "starts"), _ints(ctx.static(node.input[2], "ends"), "ends")
        axes = _ints(ctx.static(node.input[3], "axes"), "axes") if ctx.has(node, 3) else list(range(len(starts)))
        steps = _ints(ctx.static(node.input[4], "steps"), "steps") if ctx.has(node, 4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    if 0 in steps:
        raise ctx.error(f"steps {steps} must not be 0")
    r = len(shape)
    index = [slice(None)] * r
    b, e, st = [0] * r, [0] * r, [1] * r
    whole = (1 << r) - 1  # start and end masks: the axes Slice leaves alone are taken whole
    for s0, e0, ax, s1 in zip(starts, ends, ctx.axes(axes, r), steps):
        index[ax] = slice(s0, e0, s1)
        b[ax], e[ax], st[ax] = s0, e0, s1
        whole &= ~(1 << ax)
    if ctx.all_static(node):
        return [ctx.statics[node.input[0]][tuple(index)]]
    # ONNX clamps starts and ends into the axis as NumPy does: MPSGraph's strided slice
    return [ctx.g.slice_tensor(ctx.tensor(node.input[0]), b, e, st, start_mask=whole, end_mask=whole)]


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
        raise ctx.error(f"Pad mode {escape(repr(mode))} is not supported (constant, reflect, edge, wrap are)")
    x = ctx.tensor(node.input[0])
    rank = len(x.shape)
    if ctx.opset < 11:
        if "pads" not in a:
            raise ctx.error("Pad needs pads")
        pads, value = _ints(a["pads"], "pads"), _scalar(a.get("value", 0.0), "value")
    else:
        if not ctx.has(node, 1):
            raise ctx.error("Pad needs pads")
        pads = _ints(ctx.static(node.input[1], "pads"), "pads")
        value = _scalar(ctx.static(node.input[2], "constant_value"), "constant_value") if ctx.has(node, 2) else 0.0
    axes = _ints(ctx.static(node.input[3], "axes"), "axes") if ctx.has(node, 3) else list(range(rank))
    axes = ctx.axes(axes, rank)
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"pads={pads} must hold 2 values per padded axis ({len(axes)} axes)")
    left, right = [0] * rank, [0] * rank
    for i, ax in enumerate(axes):
        left[ax], right[ax] = pads[i], pads[i + len(axes)]
    if min(left + right) < 0:
        raise ctx.error(f"negative pads {pads} (cropping) are not supported")
    if mode == "wrap":
        return [_wrap(ctx, x, left, right)]
    return [ctx.g.pad_tensor(x, _PAD_MODES[mode], left, right, value)]


# ----------------------------------------------------------------------------- variadic, logic
def _fold(ctx: Context, node: Any, fn: Callable[..., Any]) -> Optional[list]:
    """``[fn(values...)]`` when every input is known at import and the result is small, else None."""
    if not node.input or not ctx.all_static(node):
        return None
    values = [ctx.statics[n] if n else None for n in node.input]
    with np.errstate(all="ignore"):
        out = np.asarray(fn(*values))
    return [out] if ctx.foldable(out.shape, out.dtype) else None


def _float_only(ctx: Context, t: Tensor, what: str = "input") -> None:
    if not t.dtype.is_floating:
        raise ctx.error(f"{what} of dtype {t.dtype.name} is not supported (this operator takes float tensors here)")


_VARIADIC: dict[str, tuple[str, Any]] = {"Max": ("maximum", np.maximum), "Min": ("minimum", np.minimum),
                                         "Sum": ("addition", np.add), "Mean": ("addition", np.add)}


@converts(*_VARIADIC)
def _variadic(ctx: Context, node: Any, a: dict) -> list:
    method, fn = _VARIADIC[node.op_type]
    names = list(node.input)
    if not names or not all(names):
        raise ctx.error(f"needs at least one input, got {names}")

    def numpy(*xs: np.ndarray) -> np.ndarray:
        y = xs[0]
        for x in xs[1:]:
            y = fn(y, x)
        return y / np.asarray(len(xs), y.dtype) if node.op_type == "Mean" else y

    folded = _fold(ctx, node, numpy)
    if folded is not None:
        return folded
    ts = [ctx.tensor(n) for n in names]
    if node.op_type in ("Max", "Min") and ts[0].dtype.is_floating:  # ONNX: a NaN input gives NaN
        method += "_with_nan_propagation"
    y = ts[0]
    for t in ts[1:]:
        y = getattr(ctx.g, method)(y, t)
    if len(ts) == 1:
        y = ctx.g.identity(y)
    if node.op_type == "Mean" and len(ts) > 1:
        y = ctx.g.division(y, ctx.g.constant(np.asarray(len(ts), y.dtype.np_dtype)))
    return [y]


_LOGIC: dict[str, tuple[str, Any]] = {
    "And": ("logical_and", np.logical_and), "Or": ("logical_or", np.logical_or),
    "Xor": ("logical_xor", np.logical_xor), "GreaterOrEqual": ("greater_than_or_equal_to", np.greater_equal),
    "LessOrEqual": ("less_than_or_equal_to", np.less_equal)}


@converts(*_LOGIC)
def _logic(ctx: Context, node: Any, a: dict) -> list:
    method, fn = _LOGIC[node.op_type]
    if len(node.input) != 2 or not all(node.input):
        raise ctx.error(f"needs 2 inputs, got {len(node.input)}")
    folded = _fold(ctx, node, fn)
    if folded is not None:
        return folded
    return [getattr(ctx.g, method)(ctx.tensor(node.input[0]), ctx.tensor(node.input[1]))]


@converts("Not")
def _not(ctx: Context, node: Any, a: dict) -> list:
    return _fold(ctx, node, np.logical_not) or [ctx.g.logical_not(ctx.tensor(node.input[0]))]


@converts("Where")
def _where(ctx: Context, node: Any, a: dict) -> list:
    if len(node.input) != 3 or not all(node.input):
        raise ctx.error(f"needs 3 inputs (condition, X, Y), got {len(node.input)}")
    folded = _fold(ctx, node, np.where)
    if folded is not None:
        return folded
    c, x, y = (ctx.tensor(n) for n in node.input)
    return [ctx.g.select(c, x, y)]


@converts("Size")
def _size(ctx: Context, node: Any, a: dict) -> list:
    shape = ctx.shape(node.input[0])
    if -1 in shape:
        raise ctx.error(f"Size of a tensor with dynamic dimensions {list(shape)} is not supported")
    return [np.asarray(math.prod(shape), dtype=np.int64)]


@converts("Range")
def _range(ctx: Context, node: Any, a: dict) -> list:
    start, limit, delta = (ctx.static(n, w) for n, w in zip(node.input, ("start", "limit", "delta")))
    if any(v.size != 1 for v in (start, limit, delta)):
        raise ctx.error("start, limit and delta must be scalars")
    if float(delta.reshape(())) == 0:
        raise ctx.error("delta must not be 0")
    n = max(int(math.ceil((float(limit.reshape(())) - float(start.reshape(()))) / float(delta.reshape(())))), 0)
    if n > limits.MAX_ELEMENTS:
        raise ctx.error(f"Range of {n} elements is more than the limit {limits.MAX_ELEMENTS}")
    s, d = start.reshape(()), delta.reshape(())
    out = (s + np.arange(n, dtype=start.dtype) * d).astype(start.dtype)
    return [out]


@converts("IsNaN")
def _is_nan(ctx: Context, node: Any, a: dict) -> list:
    return [ctx.g.is_nan(ctx.tensor(node.input[0]))]


@converts("IsInf")
def _is_inf(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    pos, neg = _int(a.get("detect_positive", 1), "detect_positive"), _int(a.get("detect_negative", 1), "detect_negative")
    inf = g.is_infinite(x)
    zero = g.constant(np.zeros((), x.dtype.np_dtype))
    if pos and neg:
        return [inf]
    if pos:
        return [g.logical_and(inf, g.greater_than(x, zero))]
    if neg:
        return [g.logical_and(inf, g.less_than(x, zero))]
    return [g.logical_and(inf, g.logical_not(inf))]


@converts("Round")
def _round(ctx: Context, node: Any, a: dict) -> list:
    return [ctx.g.rint(ctx.tensor(node.input[0]))]  # ONNX rounds half to even, as rint


@converts("Mod")
def _mod(ctx: Context, node: Any, a: dict) -> list:
    fmod = _int(a.get("fmod", 0), "fmod")
    if ctx.all_static(node) and all(ctx.statics[n].dtype.kind in "iu" for n in node.input):
        if not ctx.statics[node.input[1]].all():
            raise ctx.error("integer Mod by zero in constants")
        folded = _fold(ctx, node, np.fmod if fmod else np.mod)
        if folded is not None:
            return folded
    x, y = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    if x.dtype.is_floating and not fmod and ctx.opset < 28:
        raise ctx.error("fmod=0 with float inputs is not valid ONNX before opset 28 (float Mod needs fmod=1)")
    # fmod=1: the remainder has the dividend's sign (C fmod); fmod=0: the divisor's (Python %)
    if fmod or not x.dtype.is_floating:
        return [ctx.g.modulo(x, y) if fmod else ctx.g.floor_modulo(x, y)]
    g = ctx.g  # float, fmod=0: C's fmod moved to the divisor's sign (x % 0 stays NaN, x % inf is x or inf)
    r = g.modulo(x, y)
    zero = _const_like(ctx, x, 0.0)
    flip = g.logical_and(g.not_equal(r, zero), g.not_equal(g.less_than(r, zero), g.less_than(y, zero)))
    return [g.select(flip, g.addition(r, y), r)]


# ----------------------------------------------------------------------------- activations (composed)
def _const_like(ctx: Context, t: Tensor, value: float) -> Tensor:
    return ctx.g.constant(np.asarray(value, dtype=t.dtype.np_dtype))


def _softplus_of(ctx: Context, x: Tensor) -> Tensor:
    """log(1 + exp(x)) as relu(x) + log(1 + exp(-|x|)): no overflow for large x."""
    g = ctx.g
    tail = g.logarithm(g.addition(g.exponent(g.negative(g.absolute(x))), _const_like(ctx, x, 1.0)))
    return g.addition(g.relu(x), tail)


@converts("Softplus", "Softsign", "Elu", "Selu", "Celu", "ThresholdedRelu", "Mish", "Gelu", "Shrink", "PRelu",
          "Swish")
def _composed_activation(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    _float_only(ctx, x)
    op = node.op_type

    def c(v: float) -> Tensor:
        return _const_like(ctx, x, v)

    zero, one = c(0.0), c(1.0)
    if op == "Softplus":
        return [_softplus_of(ctx, x)]
    if op == "Softsign":
        return [g.division(x, g.addition(one, g.absolute(x)))]
    if op == "Elu":
        alpha = _scalar(a.get("alpha", 1.0), "alpha")
        return [g.select(g.less_than(x, zero), g.multiplication(g.subtraction(g.exponent(x), one), c(alpha)), x)]
    if op == "Selu":
        alpha = _scalar(a.get("alpha", 1.67326319217681884765625), "alpha")
        gamma = _scalar(a.get("gamma", 1.05070102214813232421875), "gamma")
        neg = g.subtraction(g.multiplication(g.exponent(x), c(alpha)), c(alpha))
        return [g.multiplication(g.select(g.greater_than(x, zero), x, neg), c(gamma))]
    if op == "Celu":
        alpha = _scalar(a.get("alpha", 1.0), "alpha")
        neg = g.multiplication(g.subtraction(g.exponent(g.division(x, c(alpha))), one), c(alpha))
        return [g.addition(g.maximum(x, zero), g.minimum(neg, zero))]
    if op == "ThresholdedRelu":
        alpha = _scalar(a.get("alpha", 1.0), "alpha")
        return [g.select(g.greater_than(x, c(alpha)), x, zero)]
    if op == "Mish":
        return [g.multiplication(x, g.tanh(_softplus_of(ctx, x)))]
    if op == "Swish":
        alpha = _scalar(a.get("alpha", 1.0), "alpha")
        return [g.multiplication(x, g.sigmoid(g.multiplication(x, c(alpha))))]
    if op == "Gelu":
        approx = a.get("approximate", "none")
        if approx == "tanh":
            inner = g.multiplication(g.addition(x, g.multiplication(g.power(x, c(3.0)), c(0.044715))),
                                     c(math.sqrt(2.0 / math.pi)))
            return [g.multiplication(g.multiplication(x, c(0.5)), g.addition(one, g.tanh(inner)))]
        if approx != "none":
            raise ctx.error(f"approximate={escape(repr(approx))} is not an ONNX Gelu form (none, tanh)")
        return [g.multiplication(g.multiplication(x, c(0.5)),
                                 g.addition(one, g.erf(g.multiplication(x, c(1.0 / math.sqrt(2.0))))))]
    if op == "Shrink":
        lambd, bias = _scalar(a.get("lambd", 0.5), "lambd"), _scalar(a.get("bias", 0.0), "bias")
        return [g.select(g.less_than(x, c(-lambd)), g.addition(x, c(bias)),
                         g.select(g.greater_than(x, c(lambd)), g.subtraction(x, c(bias)), zero))]
    # PRelu
    slope = ctx.tensor(node.input[1])
    return [g.select(g.less_than(x, zero), g.multiplication(x, slope), g.multiplication(x, one))]



# ----------------------------------------------------------------------------- indexing
def _int32_indices(ctx: Context, name: str, size: Optional[int] = None) -> Tensor:
    """ONNX int64 indices as int32 (MPSGraph's index type); negative ones counted from ``size``. Indices
    known at import (a Constant's, or an integer initializer's: integers are never trained) become an
    int32 constant, so no int64 tensor is left for a backend without int64 (webgpu) to hold."""
    g = ctx.g
    if ctx.all_static_name(name) or (name in ctx.variables and ctx.statics[name].dtype.kind in "iu"):
        idx = np.asarray(ctx.statics[name])
        if idx.dtype.kind not in "iu":
            raise ctx.error(f"indices must be integers, got {idx.dtype}")
        if idx.size and (idx.max() > np.iinfo(np.int32).max or idx.min() < np.iinfo(np.int32).min):
            raise ctx.error("indices do not fit int32")
        if size is not None:
            if idx.size and not (-size <= idx.min() and idx.max() < size):
                raise ctx.error(f"indices {idx.reshape(-1)[:10].tolist()} lie outside [-{size}, {size})")
            idx = np.where(idx < 0, idx + size, idx)
        return g.constant(idx.astype(np.int32))
    t = ctx.tensor(name)
    if t.dtype.name not in ("int32", "int64"):
        raise ctx.error(f"indices must be int32 or int64, got {t.dtype.name}")
    if t.dtype == int64:
        t = g.cast(t, int32)
    if size is not None:
        zero = g.constant(np.zeros((), np.int32))
        t = g.select(g.less_than(t, zero), g.addition(t, g.constant(np.asarray(size, np.int32))), t)
    return t


@converts("GatherElements")
def _gather_elements(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    axis = ctx.axis(a.get("axis", 0), len(x.shape))
    idx = _int32_indices(ctx, node.input[1], x.shape[axis])
    return [ctx.g.gather_along_axis(x, idx, axis)]


@converts("GatherND")
def _gather_nd(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    batch = _int(a.get("batch_dims", 0), "batch_dims")
    idx_shape = ctx.shape(node.input[1])
    if ctx.all_static_name(node.input[1]) and idx_shape:
        raw = np.asarray(ctx.statics[node.input[1]])
        k = idx_shape[-1]
        sizes = np.asarray(x.shape[batch:batch + k])
        if (raw < 0).any():
            raw = np.where(raw < 0, raw + sizes, raw)
        ctx.statics[node.input[1] + "#nonneg"] = raw
        return [ctx.g.gather_nd(x, _int32_indices(ctx, node.input[1] + "#nonneg"), batch)]
    return [ctx.g.gather_nd(x, _int32_indices(ctx, node.input[1]), batch)]


_SCATTER_MODES = {"none": "SET", "add": "ADD", "mul": "MUL", "max": "MAX", "min": "MIN"}


@converts("ScatterElements", "Scatter")
def _scatter_elements(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    axis = ctx.axis(a.get("axis", 0), len(x.shape))
    reduction = a.get("reduction", "none")
    if reduction not in _SCATTER_MODES:
        raise ctx.error(f"reduction={escape(repr(reduction))} is not supported (none, add, mul, max, min)")
    idx = _int32_indices(ctx, node.input[1], x.shape[axis])
    upd = ctx.tensor(node.input[2])
    return [ctx.g.scatter_along_axis(upd, idx, x, axis, getattr(ScatterMode, _SCATTER_MODES[reduction]))]


@converts("ScatterND")
def _scatter_nd(ctx: Context, node: Any, a: dict) -> list:
    """ScatterND as a scatter along the one axis of the flattened data: each index tuple becomes the
    linear positions of the slice it addresses (every reduction, repeated indices included)."""
    g = ctx.g
    x = ctx.tensor(node.input[0])
    reduction = a.get("reduction", "none")
    if reduction not in _SCATTER_MODES:
        raise ctx.error(f"reduction={escape(repr(reduction))} is not supported (none, add, mul, max, min)")
    shape = list(x.shape)
    idx_shape = list(ctx.shape(node.input[1]))
    if -1 in shape or -1 in idx_shape or not idx_shape:
        raise ctx.error(f"ScatterND needs static shapes, got data {shape} and indices {idx_shape}")
    k = idx_shape[-1]
    if not 1 <= k <= len(shape):
        raise ctx.error(f"indices' last axis {k} must lie in 1..{len(shape)} (the data's rank)")
    rest = math.prod(shape[k:])
    strides = [math.prod(shape[i + 1:k]) * rest for i in range(k)]
    idx = _int32_indices(ctx, node.input[1])
    sizes = g.constant(np.asarray(shape[:k], np.int32))
    idx = g.select(g.less_than(idx, g.constant(np.int32(0))), g.addition(idx, sizes), idx)  # negative: from the end
    base = g.reduction_sum(g.multiplication(idx, g.constant(np.asarray(strides, np.int32))), [len(idx_shape) - 1])
    lin = g.reshape(g.addition(base, g.constant(np.arange(rest, dtype=np.int32))), [-1])  # [..., rest]
    upd = g.reshape(ctx.tensor(node.input[2]), [-1])
    flat = g.scatter_along_axis(upd, lin, g.reshape(x, [-1]), 0, getattr(ScatterMode, _SCATTER_MODES[reduction]))
    return [g.reshape(flat, shape)]


@converts("ArgMax", "ArgMin")
def _arg_max(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    axis = ctx.axis(a.get("axis", 0), len(x.shape))
    keep = bool(_int(a.get("keepdims", 1), "keepdims"))
    last = bool(_int(a.get("select_last_index", 0), "select_last_index"))
    method = g.reduction_arg_maximum if node.op_type == "ArgMax" else g.reduction_arg_minimum
    if last:  # the last of equal extremes: the first one of the reversed axis
        n = x.shape[axis]
        y = g.subtraction(g.constant(np.asarray(n - 1, np.int32)), method(g.reverse(x, [axis]), axis))
    else:
        y = method(x, axis)
    if not keep:
        y = g.squeeze(y, [axis])
    return [g.cast(y, int64)]


@converts("Trilu")
def _trilu(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    if len(x.shape) < 2 or -1 in x.shape[-2:]:
        raise ctx.error(f"Trilu needs a static matrix shape, got {list(x.shape)}")
    k = _int(ctx.static(node.input[1], "k"), "k") if ctx.has(node, 1) else 0
    rows, cols = x.shape[-2:]
    ones = np.ones((rows, cols), bool)
    mask = np.triu(ones, k) if _int(a.get("upper", 1), "upper") else np.tril(ones, k)
    return [g.select(g.constant(mask), x, g.constant(np.zeros((), x.dtype.np_dtype)))]


@converts("CumSum")
def _cumsum(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    axis = ctx.axis(ctx.static(node.input[1], "axis"), len(x.shape))
    return [ctx.g.cumulative_sum(x, axis, bool(_int(a.get("exclusive", 0), "exclusive")),
                                 bool(_int(a.get("reverse", 0), "reverse")))]


@converts("Tile")
def _tile(ctx: Context, node: Any, a: dict) -> list:
    reps = _ints(ctx.static(node.input[1], "repeats"), "repeats")
    if ctx.all_static(node):
        xv = ctx.statics[node.input[0]]
        if ctx.foldable([d * r for d, r in zip(xv.shape, reps)], xv.dtype):
            return [np.tile(xv, reps)]
    x = ctx.tensor(node.input[0])
    if len(reps) != len(x.shape) or min(reps, default=1) < 0:
        raise ctx.error(f"repeats {reps} must hold one non-negative count per axis of the input {list(x.shape)}")
    return [ctx.g.tile(x, reps)]


@converts("Split")
def _split(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    axis = ctx.axis(a.get("axis", 0), len(x.shape))
    n = x.shape[axis]
    outs = len(node.output)
    if ctx.opset < 13:
        sizes = _ints(a["split"], "split") if "split" in a else None
    else:
        sizes = _ints(ctx.static(node.input[1], "split"), "split") if ctx.has(node, 1) else None
    if sizes is None:
        parts = _int(a.get("num_outputs", outs), "num_outputs") if ctx.opset >= 18 else outs
        if parts < 1 or parts != outs:
            raise ctx.error(f"num_outputs {parts} must equal the node's {outs} outputs")
        if n < 0:
            raise ctx.error(f"split axis {axis} of {list(x.shape)} must be static")
        chunk = -(-n // parts)  # ONNX: pieces of ceil(n / parts), the last one smaller
        sizes = [min(chunk, max(n - i * chunk, 0)) for i in range(parts)]
        if ctx.opset < 18 and n % parts:
            raise ctx.error(f"axis {axis} of size {n} does not split into {parts} equal pieces")
    if len(sizes) != outs or sum(sizes) != n or min(sizes, default=0) < 0:
        raise ctx.error(f"split sizes {sizes} must be {outs} non-negative sizes adding up to {n}")
    if 0 in sizes:  # a piece of size 0: slices (MPSGraph's split needs positive sizes)
        out, start = [], 0
        for sz in sizes:
            out.append(ctx.g.slice(x, axis, start, sz))
            start += sz
        return out
    if len(sizes) == 1:
        return [ctx.g.identity(x)]
    return list(ctx.g.split(x, sizes, axis))


@converts("TopK")
def _top_k(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    rank = len(x.shape)
    axis = ctx.axis(a.get("axis", -1), rank)
    k = _int(ctx.static(node.input[1], "K"), "K") if ctx.opset >= 10 else _int(a.get("k", -1), "k")
    largest = bool(_int(a.get("largest", 1), "largest"))
    if not _int(a.get("sorted", 1), "sorted"):
        raise ctx.error("sorted=0 is not supported (the results come sorted)")
    if not 0 <= k <= x.shape[axis]:
        raise ctx.error(f"K {k} must lie in 0..{x.shape[axis]} (the size of axis {axis})")
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    t = g.permute(x, perm) if axis != rank - 1 else x
    # arg_sort keeps the first of equal values first (ONNX: the lower index first)
    order = g.arg_sort(t, rank - 1, descending=largest)
    idx = g.slice(order, rank - 1, 0, k)
    vals = g.gather_along_axis(t, idx, rank - 1)
    if axis != rank - 1:
        vals, idx = g.permute(vals, perm), g.permute(idx, perm)
    return [vals, g.cast(idx, int64)]


@converts("OneHot")
def _one_hot(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    depth = _int(ctx.static(node.input[1], "depth"), "depth")
    values = np.asarray(ctx.static(node.input[2], "values")).reshape(-1)
    if values.size != 2:
        raise ctx.error(f"values must hold [off, on], got {values.size} elements")
    shape = ctx.shape(node.input[0])
    axis = ctx.axis(a.get("axis", -1), len(shape) + 1)
    idx = _int32_indices(ctx, node.input[0]) if not ctx.tensor(node.input[0]).dtype.is_floating else \
        g.cast(ctx.tensor(node.input[0]), int32)
    idx = g.select(g.less_than(idx, g.constant(np.int32(0))), g.addition(idx, g.constant(np.int32(depth))), idx)
    dtype = ONNX_DTYPES_BY_NP[values.dtype]
    hot = g.one_hot(idx, depth, axis, float32, 1.0, 0.0)
    off, on = (g.constant(values[i:i + 1].reshape(())) for i in (0, 1))
    return [g.select(g.greater_than(hot, g.constant(np.float32(0.5))), on, off) if dtype else hot]


ONNX_DTYPES_BY_NP = {d.np_dtype: d for d in ONNX_DTYPES.values()}


@converts("EyeLike")
def _eye_like(ctx: Context, node: Any, a: dict) -> list:
    shape = ctx.shape(node.input[0])
    if len(shape) != 2 or -1 in shape:
        raise ctx.error(f"EyeLike needs a static 2-D input, got {list(shape)}")
    dtype = ONNX_DTYPES[_int(a["dtype"], "dtype")].np_dtype if "dtype" in a else \
        (ctx.statics[node.input[0]].dtype if node.input[0] in ctx.statics and node.input[0] not in ctx.values
         else ctx.tensor(node.input[0]).dtype.np_dtype)
    return [np.eye(shape[0], shape[1], _int(a.get("k", 0), "k"), dtype=dtype)]


# ----------------------------------------------------------------------------- normalization (composed)
@converts("LayerNormalization", "RMSNormalization")
def _layer_norm(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    _float_only(ctx, x)
    rank = len(x.shape)
    axis = ctx.axis(a.get("axis", -1), rank)
    eps = _scalar(a.get("epsilon", 1e-5), "epsilon")
    stash = _int(a.get("stash_type", 1), "stash_type")
    if stash != 1 and ONNX_DTYPES.get(stash) != x.dtype:
        raise ctx.error(f"stash_type={stash} is not supported (1: float32)")
    axes = list(range(axis, rank))
    xs = g.cast(x, float32) if x.dtype != float32 else x
    scale = ctx.tensor(node.input[1])
    scale = g.cast(scale, float32) if scale.dtype != float32 else scale
    if node.op_type == "RMSNormalization":
        inv = g.reverse_square_root(g.addition(g.mean(g.multiplication(xs, xs), axes), g.constant(np.float32(eps))))
        y = g.multiplication(g.multiplication(xs, inv), scale)
        return [g.cast(y, x.dtype) if x.dtype != float32 else y]
    mean = g.mean(xs, axes)
    var = g.variance(xs, axes)
    inv = g.reverse_square_root(g.addition(var, g.constant(np.float32(eps))))
    y = g.multiplication(g.multiplication(g.subtraction(xs, mean), inv), scale)
    if ctx.has(node, 2):
        b = ctx.tensor(node.input[2])
        y = g.addition(y, g.cast(b, float32) if b.dtype != float32 else b)
    if x.dtype != float32:
        y = g.cast(y, x.dtype)
    return [y, mean, inv]


@converts("InstanceNormalization")
def _instance_norm(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    _float_only(ctx, x)
    rank = len(x.shape)
    if rank < 3:
        raise ctx.error(f"input of shape {list(x.shape)} has no spatial axes")
    eps = _scalar(a.get("epsilon", 1e-5), "epsilon")
    axes = list(range(2, rank))
    per_channel = [1, x.shape[1]] + [1] * (rank - 2)
    scale, bias = (g.reshape(ctx.tensor(n), per_channel) for n in node.input[1:3])
    return [g.normalize(x, g.mean(x, axes), g.variance(x, axes), scale, bias, eps)]


@converts("GroupNormalization")
def _group_norm(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    _float_only(ctx, x)
    shape = list(x.shape)
    if len(shape) < 3 or -1 in shape:
        raise ctx.error(f"GroupNormalization needs a static input with spatial axes, got {shape}")
    groups = _int(a.get("num_groups", 1), "num_groups")
    n, c = shape[0], shape[1]
    if groups < 1 or c % groups:
        raise ctx.error(f"num_groups {groups} must divide the {c} channels")
    eps = _scalar(a.get("epsilon", 1e-5), "epsilon")
    xg = g.reshape(x, [n, groups, -1])
    y = g.reshape(g.normalize(xg, g.mean(xg, [2]), g.variance(xg, [2]), None, None, eps), shape)
    scale, bias = ctx.tensor(node.input[1]), ctx.tensor(node.input[2])
    per = [1, c] + [1] * (len(shape) - 2)
    if scale.shape[0] == groups and groups != c:  # opset 18: one scale and bias per group
        rep = c // groups
        scale = g.reshape(g.broadcast(g.reshape(scale, [groups, 1]), [groups, rep]), [c])
        bias = g.reshape(g.broadcast(g.reshape(bias, [groups, 1]), [groups, rep]), [c])
    return [g.addition(g.multiplication(y, g.reshape(scale, per)), g.reshape(bias, per))]


# ----------------------------------------------------------------------------- losses (composed)
def _nll(ctx: Context, node: Any, a: dict, logp: Tensor) -> Tensor:
    """NegativeLogLikelihoodLoss of log-probabilities ``[N, C, d...]`` and the node's labels and weights."""
    g = ctx.g
    reduction = a.get("reduction", "mean")
    if reduction not in ("none", "sum", "mean"):
        raise ctx.error(f"reduction={escape(repr(reduction))} is not an ONNX loss reduction (none, sum, mean)")
    if len(logp.shape) < 2:
        raise ctx.error(f"input of shape {list(logp.shape)} has no class axis")
    t = _int32_indices(ctx, node.input[1])
    zero = g.constant(np.zeros((), np.int32))
    mask = None
    if "ignore_index" in a:
        mask = g.not_equal(t, g.constant(np.asarray(_int(a["ignore_index"], "ignore_index"), np.int32)))
        t = g.select(mask, t, zero)
    picked = g.squeeze(g.gather_along_axis(logp, g.expand_dims(t, [1]), 1), [1])
    dt = logp.dtype.np_dtype
    w = g.gather(ctx.tensor(node.input[2]), t, 0) if ctx.has(node, 2) else None
    if mask is not None:
        m = g.cast(mask, logp.dtype)
        w = m if w is None else g.multiplication(w, m)
    loss = g.negative(picked if w is None else g.multiplication(picked, w))
    if reduction == "none":
        return loss
    axes = list(range(len(loss.shape)))
    total = g.reshape(g.reduction_sum(loss, axes), [])
    if reduction == "sum":
        return total
    if w is None:
        return g.division(total, g.constant(np.asarray(math.prod(loss.shape), dt)))
    return g.division(total, g.reshape(g.reduction_sum(w, axes), []))


@converts("NegativeLogLikelihoodLoss")
def _nll_loss(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    _float_only(ctx, x)
    return [_nll(ctx, node, a, x)]


@converts("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(ctx: Context, node: Any, a: dict) -> list:
    x = ctx.tensor(node.input[0])
    _float_only(ctx, x)
    if len(x.shape) < 2:
        raise ctx.error(f"scores of shape {list(x.shape)} have no class axis")
    logp = _log_softmax_of(ctx, x, 1)
    return [_nll(ctx, node, a, logp), logp]


# ----------------------------------------------------------------------------- Resize / Upsample
def _cubic_kernel(d: np.ndarray, a: float) -> np.ndarray:
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def resize_weights(n_in: int, n_out: int, scale: float, mode: str, transform: str, nearest_mode: str = "round_prefer_floor",
                   cubic_a: float = -0.75, exclude_outside: bool = False, antialias: bool = False,
                   roi: tuple = (0.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """ONNX Resize along one axis as a matrix: ``(W [n_out, n_in], extrapolated [n_out])``; the
    result is ``W @ x`` where ``extrapolated`` is False (tf_crop_and_resize's outside points are not).
    The source coordinates use ``scale * n_in`` as the output width, as ONNX does (not ``n_out``)."""
    y = np.arange(n_out, dtype=np.float64)
    width = scale * n_in
    if transform == "align_corners":
        x = np.zeros(n_out) if width == 1 else y * (n_in - 1) / (width - 1)
    elif transform == "asymmetric":
        x = y / scale
    elif transform == "tf_crop_and_resize":
        lo, hi = roi
        x = np.full(n_out, (hi - lo) * (n_in - 1) / 2) if width == 1 else y * (hi - lo) * (n_in - 1) / (width - 1)
        x = x + lo * (n_in - 1)
    elif transform == "pytorch_half_pixel":
        x = np.full(n_out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    elif transform == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif transform == "half_pixel_symmetric":
        x = n_in / 2 * (1 - n_out / width) + (y + 0.5) / scale - 0.5
    else:
        raise ModelImportError(f"coordinate_transformation_mode={transform!r} is not an ONNX mode")
    extrapolated = (x < 0) | (x > n_in - 1) if transform == "tf_crop_and_resize" else np.zeros(n_out, bool)
    w = np.zeros((n_out, n_in))
    if mode == "nearest":
        rounders: dict[str, Callable[[np.ndarray], np.ndarray]] = {"round_prefer_floor": lambda v: np.ceil(v - 0.5), "round_prefer_ceil": lambda v: np.floor(v + 0.5),
                    "floor": np.floor, "ceil": np.ceil}
        if nearest_mode not in rounders:
            raise ModelImportError(f"nearest_mode={nearest_mode!r} is not an ONNX mode")
        idx = np.clip(rounders[nearest_mode](x), 0, n_in - 1).astype(int)
        w[np.arange(n_out), idx] = 1.0
        return w, extrapolated
    kernel: Callable[[np.ndarray], np.ndarray]
    if mode == "linear":
        kernel, support = (lambda d: np.maximum(0.0, 1.0 - np.abs(d))), 1.0
    elif mode == "cubic":
        kernel, support = (lambda d: _cubic_kernel(d, cubic_a)), 2.0
    else:
        raise ModelImportError(f"mode={mode!r} is not an ONNX Resize mode (nearest, linear, cubic)")
    stretch = min(scale, 1.0) if antialias else 1.0  # antialias: the kernel widened by 1 / scale
    reach = int(math.ceil(support / stretch))
    for o in range(n_out):
        base = int(math.floor(x[o]))
        js = np.arange(base - reach + 1, base + reach + 1)
        c = kernel((js - x[o]) * stretch)
        if antialias:
            c = c / c.sum()
        if exclude_outside:
            c = np.where((js >= 0) & (js < n_in), c, 0.0)
            c = c / c.sum()
        np.add.at(w[o], np.clip(js, 0, n_in - 1), c)
    return w, extrapolated


def _resize_sizes(ctx: Context, a: dict, shape: list, axes: list, transform: str, scales: Any, sizes: Any,
                  roi: Any) -> tuple[list, list, list]:
    """Per resized axis: the scale the coordinates use, the result size, and the (start, end) roi."""
    n = len(axes)
    if sizes is not None:
        if len(sizes) != n:
            raise ctx.error(f"sizes {sizes.tolist()} must hold one size per resized axis ({n})")
        scale = [float(sizes[i]) / shape[ax] for i, ax in enumerate(axes)]
        policy = a.get("keep_aspect_ratio_policy", "stretch")
        if policy in ("not_larger", "not_smaller"):
            common = min(scale) if policy == "not_larger" else max(scale)
            scale = [common] * n
            out = [int(common * shape[ax] + 0.5) for ax in axes]
        elif policy == "stretch":
            out = [int(s) for s in sizes]
        else:
            raise ctx.error(f"keep_aspect_ratio_policy={escape(repr(policy))} is not an ONNX policy")
    elif scales is not None:
        if len(scales) != n:
            raise ctx.error(f"scales {scales.tolist()} must hold one scale per resized axis ({n})")
        if (scales <= 0).any():
            raise ctx.error(f"scales {scales.tolist()} must be positive")
        scale = [float(s) for s in scales]
        out = [int(math.floor(shape[ax] * s)) for ax, s in zip(axes, scale)]
    else:
        raise ctx.error("Resize needs scales or sizes")
    if roi is not None and transform == "tf_crop_and_resize":
        if len(roi) != 2 * n:
            raise ctx.error(f"roi {roi.tolist()} must hold starts and ends of the {n} resized axes")
        rois = [(roi[i], roi[i + n]) for i in range(n)]
    else:
        rois = [(0.0, 1.0)] * n
    return scale, out, rois


@converts("Resize", "Upsample")
def _resize(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    shape = list(x.shape)
    rank = len(shape)
    if -1 in shape:
        raise ctx.error(f"{node.op_type} needs a static input shape, got {shape}")
    _float_only(ctx, x)
    mode = a.get("mode", "nearest")
    if mode == "bilinear":
        mode = "linear"
    old = node.op_type == "Upsample" or ctx.opset < 11
    transform = "asymmetric" if old else a.get("coordinate_transformation_mode", "half_pixel")
    nearest_mode = "floor" if old else a.get("nearest_mode", "round_prefer_floor")
    axes = ctx.axes(_ints(a["axes"], "axes"), rank) if "axes" in a else list(range(rank))
    scales = sizes = roi = None
    if node.op_type == "Upsample":
        scales = np.asarray(a["scales"] if "scales" in a else ctx.static(node.input[1], "scales"), np.float64)
    elif ctx.opset < 11:
        scales = np.asarray(ctx.static(node.input[1], "scales"), np.float64)
    else:
        if ctx.has(node, 1):
            roi = np.asarray(ctx.static(node.input[1], "roi"), np.float64).reshape(-1)
        if ctx.has(node, 2) and ctx.shape(node.input[2]) != (0,):
            scales = np.asarray(ctx.static(node.input[2], "scales"), np.float64).reshape(-1)
        if ctx.has(node, 3):
            sizes = np.asarray(ctx.static(node.input[3], "sizes")).reshape(-1)
    scale, out, rois = _resize_sizes(ctx, a, shape, axes, transform, scales, sizes, roi)
    if math.prod(shape[:]) and any(o < 1 for o in out):
        raise ctx.error(f"the result sizes {out} must be positive")
    antialias = bool(_int(a.get("antialias", 0), "antialias"))
    excl = bool(_int(a.get("exclude_outside", 0), "exclude_outside"))
    cubic_a = _scalar(a.get("cubic_coeff_a", -0.75), "cubic_coeff_a")
    y = x
    extrap = None
    dt = x.dtype.np_dtype
    for ax, n_out, s, r in zip(axes, out, scale, rois):
        n_in = shape[ax]
        w, ext = resize_weights(n_in, n_out, s, mode, transform, nearest_mode, cubic_a, excl, antialias, r)
        if n_in == n_out and np.array_equal(w, np.eye(n_in)) and not ext.any():
            continue
        if mode == "nearest":  # a gather: exact, and NaN or inf elsewhere do not spread
            y = g.gather(y, g.constant(np.argmax(w, axis=1).astype(np.int32)), ax)
        else:
            perm = [i for i in range(rank) if i != ax] + [ax]
            inv = list(np.argsort(perm))
            t = g.permute(y, perm) if ax != rank - 1 else y
            t = g.matrix_multiplication(t, g.constant(np.ascontiguousarray(w.T).astype(dt)))
            y = g.permute(t, inv) if ax != rank - 1 else t
        if ext.any():
            m = ext.reshape([n_out if i == ax else 1 for i in range(rank)])
            extrap = m if extrap is None else (extrap | m)
    if extrap is not None:
        value = _scalar(a.get("extrapolation_value", 0.0), "extrapolation_value")
        y = g.select(g.constant(np.broadcast_to(extrap, y.shape).copy()), g.constant(np.asarray(value, dt)), y)
    return [y if y is not x else g.identity(x)]


# ----------------------------------------------------------------------------- ConvTranspose
@converts("ConvTranspose")
def _conv_transpose(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x, w = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    one_d = len(x.shape) == 3 and len(w.shape) == 3
    if one_d:
        x, w, a = g.expand_dims(x, [2]), g.expand_dims(w, [2]), _attrs_2d(ctx, a)
        for key in ("output_padding", "output_shape"):
            if key in a:
                a[key] = [0 if key == "output_padding" else 1] + _ints(a[key], key)
    if len(x.shape) != 4 or len(w.shape) != 4 or -1 in x.shape:
        raise ctx.error(f"only 1-D and 2-D transposed convolutions of static shapes are supported, got input "
                        f"{list(x.shape)} and weights {list(w.shape)}")
    group = _int(a.get("group", 1), "group")
    n, cin, h, wd = x.shape
    if group < 1 or cin % group or w.shape[0] != cin:
        raise ctx.error(f"weights {list(w.shape)} and group {group} do not fit {cin} input channels")
    cout = w.shape[1] * group
    strides, dil = _two(ctx, a, "strides"), _two(ctx, a, "dilations")
    outpad = _two(ctx, {"output_padding": a.get("output_padding", [0, 0])}, "output_padding")
    keff = [(w.shape[2 + i] - 1) * dil[i] + 1 for i in range(2)]
    sizes = [h, wd]
    auto = a.get("auto_pad", "NOTSET")
    begin, end, out = [0, 0], [0, 0], [0, 0]
    for i in range(2):
        full = strides[i] * (sizes[i] - 1) + outpad[i] + keff[i]
        if "output_shape" in a or auto in ("SAME_UPPER", "SAME_LOWER"):
            target = _ints(a["output_shape"], "output_shape")[-2:][i] if "output_shape" in a else sizes[i] * strides[i]
            total = max(full - target, 0)  # a larger output_shape: zeros past what the kernel reaches
            small, large = total // 2, total - total // 2
            begin[i], end[i] = (large, small) if auto == "SAME_LOWER" else (small, large)
            out[i] = target
        elif auto in ("NOTSET", "VALID"):
            pads = _ints(a.get("pads", [0, 0, 0, 0]), "pads") if auto == "NOTSET" else [0, 0, 0, 0]
            if len(pads) != 4 or min(pads) < 0:
                raise ctx.error(f"pads={pads} must be 4 non-negative ints")
            begin[i], end[i] = pads[i], pads[i + 2]
            out[i] = full - begin[i] - end[i]
        else:
            raise ctx.error(f"auto_pad={escape(repr(auto))} is not an ONNX padding")
    if min(out) < 1:
        raise ctx.error(f"the result size {out} must be positive")
    desc = Convolution2DOpDescriptor(stride_in_y=strides[0], stride_in_x=strides[1], dilation_rate_in_y=dil[0],
                                     dilation_rate_in_x=dil[1], padding_style=PaddingStyle.EXPLICIT,
                                     padding_top=begin[0], padding_bottom=end[0], padding_left=begin[1],
                                     padding_right=end[1], groups=group)
    y = g.convolution_transpose_2d(x, w, [n, cout, out[0], out[1]], desc)
    if ctx.has(node, 2):
        y = g.addition(y, g.reshape(ctx.tensor(node.input[2]), [1, cout, 1, 1]))
    return [g.squeeze(y, [2]) if one_d else y]


@converts("Tan", "Sinh", "Cosh", "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh")
def _trigonometric(ctx: Context, node: Any, a: dict) -> list:
    """The trigonometric and hyperbolic functions MPSGraph-style ops lack, from sin, cos, exp, log
    and atan2."""
    g = ctx.g
    x = ctx.tensor(node.input[0])
    _float_only(ctx, x)
    op = node.op_type
    one = _const_like(ctx, x, 1.0)

    def c(v: float) -> Tensor:
        return _const_like(ctx, x, v)

    if op == "Tan":
        return [g.division(g.sin(x), g.cos(x))]
    if op in ("Sinh", "Cosh"):
        e, ne = g.exponent(x), g.exponent(g.negative(x))
        return [g.multiplication(g.subtraction(e, ne) if op == "Sinh" else g.addition(e, ne), c(0.5))]
    if op in ("Asin", "Acos"):
        root = g.square_root(g.subtraction(one, g.multiplication(x, x)))
        return [g.atan2(x, root) if op == "Asin" else g.atan2(root, x)]
    if op == "Atan":
        return [g.atan2(x, g.broadcast(one, list(x.shape)))]
    if op == "Asinh":
        return [g.logarithm(g.addition(x, g.square_root(g.addition(g.multiplication(x, x), one))))]
    if op == "Acosh":
        return [g.logarithm(g.addition(x, g.square_root(g.subtraction(g.multiplication(x, x), one))))]
    return [g.multiplication(g.logarithm(g.division(g.addition(one, x), g.subtraction(one, x))), c(0.5))]


# ----------------------------------------------------------------------------- quantization, Einsum, Lp
def _per_axis(ctx: Context, t: Tensor, x_shape: tuple, axis: int, block: int) -> Tensor:
    """A scale or zero point (scalar, per-axis 1-D, or blocked) broadcastable against ``x_shape``."""
    g = ctx.g
    rank = len(x_shape)
    if len(t.shape) == 0 or (len(t.shape) == 1 and t.shape[0] == 1):
        return g.reshape(t, [])
    if block:
        if len(t.shape) != rank:
            raise ctx.error(f"a blocked scale of shape {list(t.shape)} must have the input's rank {rank}")
        n = x_shape[axis]
        return g.gather(t, g.constant((np.arange(n) // block).astype(np.int32)), axis)
    if len(t.shape) != 1 or t.shape[0] != x_shape[axis]:
        raise ctx.error(f"a per-axis scale of shape {list(t.shape)} must hold {x_shape[axis]} values (axis {axis})")
    return g.reshape(t, [x_shape[axis] if i == axis else 1 for i in range(rank)])


def _mps_quantization(ctx: Context, node: Any, a: dict, x: Tensor, scale: Tensor, axis: int, block: int,
                      per_tensor: bool) -> Optional[Tensor]:
    """The node as one MPSGraph quantize / dequantize op, where it fits one: int8 or uint8 codes, a
    scale of the float operand's dtype (DequantizeLinear: of the result's), per tensor, per axis, or
    (DequantizeLinear) blocked along the last axis in whole blocks. None: the elementwise form."""
    g = ctx.g
    zp = ctx.tensor(node.input[2]) if ctx.has(node, 2) else None
    if node.op_type == "QuantizeLinear":
        target = zp.dtype if zp is not None else (
            ONNX_DTYPES.get(_int(a["output_dtype"], "output_dtype")) if a.get("output_dtype") else uint8)
        if target not in (int8, uint8) or x.dtype not in (float16, float32) or scale.dtype != x.dtype or block:
            return None
    elif x.dtype not in (int8, uint8) or scale.dtype not in (float16, float32):
        return None
    if node.op_type == "DequantizeLinear" and zp is not None and zp.dtype != x.dtype:
        return None
    if block:
        rank = len(x.shape)
        n = x.shape[-1] if rank else 0
        fits = rank and axis == rank - 1 and n % block == 0 and tuple(scale.shape) == tuple(x.shape[:-1]) + (n // block,)
        if not fits or (zp is not None and tuple(zp.shape) != tuple(scale.shape)):
            return None
        if zp is None:
            return g.dequantize_blockwise_symmetric(x, scale, scale.dtype)
        return g.dequantize_blockwise(x, scale, zp, scale.dtype)
    flat = (lambda t: g.reshape(t, [])) if per_tensor else (lambda t: t)
    if zp is not None and math.prod(zp.shape) != math.prod(scale.shape):
        return None
    if node.op_type == "QuantizeLinear":
        if zp is None:
            return g.quantize_with_scale_tensor(x, flat(scale), 0, target, axis)
        return g.quantize_with_tensors(x, flat(scale), flat(zp), target, axis)
    if zp is None:
        return g.dequantize_with_scale_tensor(x, flat(scale), 0, scale.dtype, axis)
    return g.dequantize_with_tensors(x, flat(scale), flat(zp), scale.dtype, axis)


@converts("DequantizeLinear", "QuantizeLinear")
def _quantize(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    rank = len(x.shape)
    block = _int(a.get("block_size", 0), "block_size")
    scale = ctx.tensor(node.input[1])
    per_tensor = math.prod(scale.shape) == 1 and not block  # the axis matters only per axis or block
    axis = 0 if per_tensor else ctx.axis(a.get("axis", 1), rank)
    _float_only(ctx, scale, "scale")
    if per_tensor or len(scale.shape) == 1 or block:
        one = _mps_quantization(ctx, node, a, x, scale, axis, block, per_tensor)
        if one is not None:
            if node.op_type == "DequantizeLinear" and a.get("output_dtype"):
                out = ONNX_DTYPES[_int(a["output_dtype"], "output_dtype")]
                one = one if out == one.dtype else g.cast(one, out)
            return [one]
    s = _per_axis(ctx, scale, x.shape, axis, block)
    zp = _per_axis(ctx, ctx.tensor(node.input[2]), x.shape, axis, block) if ctx.has(node, 2) else None
    if node.op_type == "DequantizeLinear":
        out = ONNX_DTYPES[_int(a["output_dtype"], "output_dtype")] if a.get("output_dtype") else scale.dtype
        xf = g.cast(x, scale.dtype)
        if zp is not None:
            xf = g.subtraction(xf, g.cast(zp, scale.dtype))
        y = g.multiplication(xf, s)
        return [y if out == scale.dtype else g.cast(y, out)]
    if zp is not None:
        target = zp.dtype
    elif a.get("output_dtype"):
        target = ONNX_DTYPES[_int(a["output_dtype"], "output_dtype")]
    else:
        target = ONNX_DTYPES[2]  # uint8
    if target.is_floating or target.name not in ("int8", "uint8", "int16", "uint16", "int32"):
        raise ctx.error(f"QuantizeLinear to {target.name} is not supported (int8, uint8, int16, uint16, int32 are)")
    xs = g.cast(x, float32) if x.dtype != float32 else x
    q = g.rint(g.division(xs, g.cast(s, float32) if s.dtype != float32 else s))  # half to even, as ONNX
    if zp is not None:
        q = g.addition(q, g.cast(zp, float32))
    info = np.iinfo(target.np_dtype)
    return [g.cast(g.clamp(q, float(info.min), float(info.max)), target)]


@converts("DynamicQuantizeLinear")
def _dynamic_quantize(ctx: Context, node: Any, a: dict) -> list:
    """ONNX's function body with MPSGraph's quantize: the zero point ``saturate(round(-min / scale))``
    is ``quantize`` of ``-min`` with that scale (no float-to-uint8 cast)."""
    g = ctx.g
    x = ctx.tensor(node.input[0])
    if x.dtype != float32:
        raise ctx.error(f"input of dtype {x.dtype.name} is not supported (DynamicQuantizeLinear takes float32)")
    lo = g.minimum(g.reduction_minimum(g.reshape(x, [-1]), axes=[0]), 0.0)
    hi = g.maximum(g.reduction_maximum(g.reshape(x, [-1]), axes=[0]), 0.0)
    scale = g.reshape(g.division(g.subtraction(hi, lo), 255.0), [])
    zp = g.quantize_with_scale_tensor(g.reshape(g.negative(lo), []), scale, 0, uint8, 0)
    return [g.quantize_with_tensors(x, scale, zp, uint8, 0), scale, zp]


def _einsum_terms(ctx: Context, equation: str, ranks: list) -> tuple[list, str]:
    """The letters of each operand and of the result, ``...`` spelled out as upper-case letters."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ctx.error(f"equation {equation!r} names {len(terms)} operands, the node has {len(ranks)}")
    spelled = []
    ell = ""
    for term, rank in zip(terms, ranks):
        if "..." in term:
            n = rank - len(term.replace("...", ""))
            ell = "ABCDEFGH"[8 - n:] if n > 0 else ""
            term = term.replace("...", ell)
        if len(term) != rank or (term and not term.isalpha()):
            raise ctx.error(f"equation term {term!r} does not fit an operand of rank {rank}")
        spelled.append(term)
    if arrow:
        out = rhs.replace("...", ell)
    else:  # implicit: the letters that appear once, in order, after the broadcast ones
        letters = "".join(spelled)
        out = ell + "".join(sorted(ch for ch in set(letters) if letters.count(ch) == 1 and ch.islower()))
    return spelled, out


@converts("Einsum")
def _einsum(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    xs = [ctx.tensor(n) for n in node.input]
    terms, out = _einsum_terms(ctx, str(a.get("equation", "")), [len(x.shape) for x in xs])
    if len(xs) > 2:
        raise ctx.error("Einsum of more than two operands is not supported")
    for t in terms:
        if len(set(t)) != len(t):
            raise ctx.error(f"Einsum term {t!r} repeats a letter (a diagonal); not supported")

    def reduce_to(x: Tensor, term: str, keep: str) -> tuple[Tensor, str]:
        gone = [i for i, ch in enumerate(term) if ch not in keep]
        if gone:
            x = g.squeeze(g.reduction_sum(x, gone), gone)
            term = "".join(ch for ch in term if ch in keep)
        return x, term

    if len(xs) == 1:
        x, term = reduce_to(xs[0], terms[0], out)
        return [g.permute(x, [term.index(ch) for ch in out]) if term != out and term else x]
    (x, tx), (y, ty) = reduce_to(xs[0], terms[0], out + terms[1]), reduce_to(xs[1], terms[1], out + terms[0])
    batch = [ch for ch in tx if ch in ty and ch in out]
    contract = [ch for ch in tx if ch in ty and ch not in out]
    m = [ch for ch in tx if ch not in ty]
    n = [ch for ch in ty if ch not in tx]
    size = {ch: d for t, v in ((tx, x), (ty, y)) for ch, d in zip(t, v.shape)}
    if -1 in size.values():
        raise ctx.error("Einsum needs static shapes")

    def arrange(v: Tensor, term: str, order: list, shape: list) -> Tensor:
        v = g.permute(v, [term.index(ch) for ch in order]) if order != list(term) else v
        return g.reshape(v, shape)

    bsz = [size[c] for c in batch]
    pm, pk, pn = (math.prod(size[c] for c in grp) for grp in (m, contract, n))
    left = arrange(x, tx, batch + m + contract, bsz + [pm, pk])
    right = arrange(y, ty, batch + contract + n, bsz + [pk, pn])
    r = g.reshape(g.matrix_multiplication(left, right), bsz + [size[c] for c in m + n])
    have = batch + m + n
    return [g.permute(r, [have.index(ch) for ch in out]) if have != list(out) else r]


@converts("LpNormalization")
def _lp_normalization(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x = ctx.tensor(node.input[0])
    _float_only(ctx, x)
    axis = ctx.axis(a.get("axis", -1), len(x.shape))
    p = _int(a.get("p", 2), "p")
    if p not in (1, 2):
        raise ctx.error(f"p={p} must be 1 or 2")
    norm = g.reduction_sum(g.absolute(x), [axis]) if p == 1 else \
        g.square_root(g.reduction_sum(g.multiplication(x, x), [axis]))
    zero = _const_like(ctx, x, 0.0)
    return [g.select(g.equal(norm, zero), g.multiplication(x, zero), g.division(x, norm))]


# ----------------------------------------------------------------------------- RNN, GRU, LSTM (unrolled)
_RNN_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_RNN_DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _rnn_check(ctx: Context, node: Any, a: dict, steps: int) -> None:
    op = node.op_type
    acts = [str(v) for v in a.get("activations", [])]
    defaults = _RNN_DEFAULT_ACTIVATIONS[op]
    if acts and acts != defaults * (len(acts) // len(defaults)):
        raise ctx.error(f"activations {acts} are not supported (only the defaults {defaults})")
    for key in ("clip", "input_forget"):
        if key in a and (key != "input_forget" or _int(a[key], key)):
            raise ctx.error(f"{key} is not supported")
    if ctx.has(node, 4):
        lens = _ints(ctx.static(node.input[4], "sequence_lens"), "sequence_lens")
        if any(n != steps for n in lens):
            raise ctx.error(f"sequence_lens {lens} shorter than the sequence ({steps}) are not supported")


def _rnn_cell(ctx: Context, op: str, xt: Tensor, hr: Tensor, h: Tensor, c: Optional[Tensor], rd: Tensor,
              rb: Optional[Tensor], p: Optional[Tensor], hidden: int, before_reset: bool) -> tuple:
    """One step of an RNN, GRU or LSTM cell: ``(h, c)`` from the input's and the state's projections."""
    g = ctx.g
    dt = xt.dtype.np_dtype

    def gate(t: Tensor, k: int) -> Tensor:
        return g.slice(t, len(t.shape) - 1, k * hidden, hidden)

    if op == "RNN":
        h = g.tanh(g.addition(xt, hr))
    elif op == "GRU":  # gates z, r, h
        z = g.sigmoid(g.addition(gate(xt, 0), gate(hr, 0)))
        rr = g.sigmoid(g.addition(gate(xt, 1), gate(hr, 1)))
        if before_reset:
            cand = g.tanh(g.addition(gate(xt, 2), g.multiplication(rr, gate(hr, 2))))
        else:
            rh_w = g.transpose(g.slice(rd, 0, 2 * hidden, hidden), 0, 1)  # the candidate's rows of R
            rh = g.matrix_multiplication(g.multiplication(rr, h), rh_w)
            if rb is not None:
                rh = g.addition(rh, g.slice(rb, 0, 2 * hidden, hidden))
            cand = g.tanh(g.addition(gate(xt, 2), rh))
        h = g.addition(g.multiplication(g.subtraction(g.constant(np.ones((), dt)), z), cand),
                       g.multiplication(z, h))
    else:  # LSTM: gates i, o, f, c; peepholes i, o, f
        assert c is not None
        pre = g.addition(xt, hr)

        def peep(k: int, cell: Tensor) -> Tensor:
            assert p is not None
            return g.multiplication(g.slice(p, 0, k * hidden, hidden), cell)

        gi, go, gf, gc = (gate(pre, k) for k in range(4))
        if p is not None:
            gi, gf = g.addition(gi, peep(0, c)), g.addition(gf, peep(2, c))
        c = g.addition(g.multiplication(g.sigmoid(gf), c), g.multiplication(g.sigmoid(gi), g.tanh(gc)))
        if p is not None:
            go = g.addition(go, peep(1, c))
        h = g.multiplication(g.sigmoid(go), g.tanh(c))
    return h, c


@converts("RNN", "GRU", "LSTM")
def _recurrent(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    op = node.op_type
    x, w, r = (ctx.tensor(n) for n in node.input[:3])
    _float_only(ctx, x)
    batchwise = bool(_int(a.get("layout", 0), "layout"))
    if batchwise:
        x = g.permute(x, [1, 0, 2])
    steps, batch, _ = x.shape
    if -1 in x.shape:
        raise ctx.error(f"{op} needs static shapes, got {list(x.shape)}")
    _rnn_check(ctx, node, a, steps)
    hidden = _int(a["hidden_size"], "hidden_size")
    direction = a.get("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    gates = _RNN_GATES[op]
    before_reset = bool(_int(a.get("linear_before_reset", 0), "linear_before_reset"))
    dt = x.dtype.np_dtype
    zeros = g.constant(np.zeros((batch, hidden), dt))

    def state(i: int, d: int) -> Tensor:
        if not ctx.has(node, i):
            return zeros
        t = ctx.tensor(node.input[i])
        return g.squeeze(g.slice(t, 1 if batchwise else 0, d, 1), [1 if batchwise else 0])

    ys, hs, cs = [], [], []
    for d in range(dirs):
        wd, rd = g.squeeze(g.slice(w, 0, d, 1), [0]), g.squeeze(g.slice(r, 0, d, 1), [0])
        xw = g.matrix_multiplication(x, g.transpose(wd, 0, 1))  # [steps, batch, gates * hidden]
        rb = None
        if ctx.has(node, 3):
            bd = g.squeeze(g.slice(ctx.tensor(node.input[3]), 0, d, 1), [0])
            xw = g.addition(xw, g.slice(bd, 0, 0, gates * hidden))
            rb = g.slice(bd, 0, gates * hidden, gates * hidden)
        p = g.squeeze(g.slice(ctx.tensor(node.input[7]), 0, d, 1), [0]) if op == "LSTM" and ctx.has(node, 7) else None
        h, c = state(5, d), state(6, d) if op == "LSTM" else None
        reverse = direction == "reverse" or d == 1
        out: list = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            xt = g.squeeze(g.slice(xw, 0, t, 1), [0])
            hr = g.matrix_multiplication(h, g.transpose(rd, 0, 1))
            if rb is not None:
                hr = g.addition(hr, rb)
            h, c = _rnn_cell(ctx, op, xt, hr, h, c, rd, rb, p, hidden, before_reset)
            out[t] = h
        ys.append(g.stack(out, 0))  # [steps, batch, hidden]
        hs.append(h)
        cs.append(c)
    y = g.stack(ys, 1)  # [steps, dirs, batch, hidden]
    yh = g.stack(hs, 0)
    results = [g.permute(y, [2, 0, 1, 3]) if batchwise else y, g.permute(yh, [1, 0, 2]) if batchwise else yh]
    if op == "LSTM":
        yc = g.stack([cc for cc in cs if cc is not None], 0)
        results.append(g.permute(yc, [1, 0, 2]) if batchwise else yc)
    return results


@converts("CumProd")
def _cumprod(ctx: Context, node: Any, a: dict) -> list:
    """Running products by doubling (y *= y shifted by 1, 2, 4, ...: log2(n) multiplications)."""
    g = ctx.g
    x = ctx.tensor(node.input[0])
    axis = ctx.axis(ctx.static(node.input[1], "axis"), len(x.shape))
    n = x.shape[axis]
    if n < 0:
        raise ctx.error(f"CumProd needs a static size along axis {axis}, got {list(x.shape)}")
    reverse, exclusive = bool(_int(a.get("reverse", 0), "reverse")), bool(_int(a.get("exclusive", 0), "exclusive"))

    def ones(k: int) -> Tensor:
        shape = list(x.shape)
        shape[axis] = k
        return g.constant(np.ones(shape, x.dtype.np_dtype))

    y = g.reverse(x, [axis]) if reverse else x
    k = 1
    while k < n:
        y = g.multiplication(y, g.concat([ones(k), g.slice(y, axis, 0, n - k)], axis))
        k *= 2
    if exclusive and n:
        y = g.concat([ones(1), g.slice(y, axis, 0, n - 1)], axis) if n > 1 else ones(1)
    return [g.reverse(y, [axis]) if reverse else y]


@converts("ReverseSequence")
def _reverse_sequence(ctx: Context, node: Any, a: dict) -> list:
    """Each batch entry's first ``sequence_lens[b]`` steps reversed: a gather of constant positions."""
    g = ctx.g
    x = ctx.tensor(node.input[0])
    lens = _ints(ctx.static(node.input[1], "sequence_lens"), "sequence_lens")
    t_axis, b_axis = _int(a.get("time_axis", 0), "time_axis"), _int(a.get("batch_axis", 1), "batch_axis")
    if sorted((t_axis, b_axis)) != [0, 1] or len(x.shape) < 2 or -1 in x.shape:
        raise ctx.error(f"time_axis {t_axis} and batch_axis {b_axis} must be 0 and 1 of a static input")
    steps, batch = x.shape[t_axis], x.shape[b_axis]
    if len(lens) != batch or min(lens, default=1) < 0 or max(lens, default=0) > steps:
        raise ctx.error(f"sequence_lens {lens} must hold {batch} lengths in 0..{steps}")
    idx = np.tile(np.arange(steps)[:, None], (1, batch))  # [time, batch]
    for b, n in enumerate(lens):
        idx[:n, b] = np.arange(n)[::-1]
    if t_axis == 1:
        idx = idx.T
    full = idx.reshape(idx.shape + (1,) * (len(x.shape) - 2))
    full = np.broadcast_to(full, x.shape).astype(np.int32)
    return [g.gather_along_axis(x, g.constant(np.ascontiguousarray(full)), t_axis)]


# ----------------------------------------------------------------------------- GridSample
def _reflect(ctx: Context, v: Tensor, lo: float, hi: float) -> Tensor:
    """``v`` folded back into ``[lo, hi]`` by reflections at the borders (ONNX's GridSample rule)."""
    g = ctx.g

    def c(value: float) -> Tensor:
        return _const_like(ctx, v, value)

    span = hi - lo
    if span <= 0:
        return g.multiplication(v, c(0.0)) if lo == 0 else g.addition(g.multiplication(v, c(0.0)), c(lo))
    below, above = g.subtraction(c(lo), v), g.subtraction(v, c(hi))
    out = v
    for dx, near, far in ((below, lo, hi), (above, hi, lo)):
        turns = g.floor(g.division(dx, c(span)))
        rest = g.subtraction(dx, g.multiplication(turns, c(span)))
        even = g.equal(g.floor_modulo(turns, c(2.0)), c(0.0))
        sign = 1.0 if near == lo else -1.0
        folded = g.select(even, g.addition(c(near), g.multiplication(rest, c(sign))),
                          g.subtraction(c(far), g.multiplication(rest, c(sign))))
        out = g.select(g.greater_than(dx, c(0.0)), folded, out)
    return out


def _grid_axis(ctx: Context, v: Tensor, size: int, mode: str, pad: str, align: bool) -> list:
    """``[(index int32, weight)]`` of the pixels one grid coordinate reads along one axis."""
    g = ctx.g

    def c(value: float) -> Tensor:
        return _const_like(ctx, v, value)

    coord = g.multiplication(g.addition(v, c(1.0)), c((size - 1) / 2.0)) if align else \
        g.division(g.subtraction(g.multiplication(g.addition(v, c(1.0)), c(float(size))), c(1.0)), c(2.0))
    if mode == "nearest":
        coord = g.rint(coord)
    lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
    outside = g.logical_or(g.less_than(coord, c(lo)), g.greater_than(coord, c(hi)))
    if pad == "border":
        coord = g.select(outside, g.clamp(coord, 0.0, size - 1.0), coord)
    elif pad == "reflection":
        coord = g.select(outside, _reflect(ctx, coord, lo, hi), coord)
    if mode == "nearest":
        taps = [(g.cast(coord, int32) if pad == "reflection" else coord, None)]
    else:
        base = g.floor(coord)
        f = g.subtraction(coord, base)
        if mode == "linear":
            taps = [(base, g.subtraction(c(1.0), f)), (g.addition(base, c(1.0)), f)]
        else:
            a_ = -0.75
            d = [g.addition(f, c(1.0)), f, g.subtraction(c(1.0), f), g.subtraction(c(2.0), f)]
            near = [g.addition(g.multiplication(g.multiplication(g.subtraction(g.multiplication(t, c(a_ + 2)),
                                                                                  c(a_ + 3)), t), t), c(1.0))
                    for t in d[1:3]]
            far = [g.subtraction(g.multiplication(g.addition(g.multiplication(g.subtraction(
                g.multiplication(t, c(a_)), c(5 * a_)), t), c(8 * a_)), t), c(4 * a_)) for t in (d[0], d[3])]
            weights = [far[0], near[0], near[1], far[1]]
            taps = [(g.addition(base, c(float(k))), w) for k, w in zip((-1, 0, 1, 2), weights)]
    out = []
    for j, w in taps:
        if pad == "zeros":
            jf = j if j.dtype.is_floating else g.cast(j, v.dtype)
            valid = g.cast(g.logical_and(g.greater_than_or_equal_to(jf, c(0.0)), g.less_than(jf, c(float(size)))),
                           v.dtype)
            w = valid if w is None else g.multiplication(w, valid)
            j = g.clamp(jf, 0.0, size - 1.0)
        elif pad == "reflection" and mode != "nearest":
            j = g.cast(_reflect(ctx, j, lo, hi), int32)
        jj = g.cast(j, int32) if j.dtype.is_floating else j
        out.append((g.clamp(jj, 0, size - 1), w))
    return out


@converts("GridSample")
def _grid_sample(ctx: Context, node: Any, a: dict) -> list:
    g = ctx.g
    x, grid = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    _float_only(ctx, x)
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(a.get("mode", "linear"), a.get("mode", "linear"))
    pad, align = a.get("padding_mode", "zeros"), bool(_int(a.get("align_corners", 0), "align_corners"))
    if mode not in ("nearest", "linear", "cubic") or pad not in ("zeros", "border", "reflection"):
        raise ctx.error(f"mode={mode!r} / padding_mode={pad!r} are not ONNX GridSample modes")
    dims, nd = list(x.shape[2:]), len(x.shape) - 2
    if -1 in x.shape or -1 in grid.shape or grid.shape[-1] != nd or nd < 1 or (mode == "cubic" and nd != 2):
        raise ctx.error(f"input {list(x.shape)} and grid {list(grid.shape)} do not fit (static shapes; cubic "
                        "needs 2-D)")
    n, ch = x.shape[:2]
    out_sp = list(grid.shape[1:-1])
    q, p = math.prod(out_sp), math.prod(dims)
    flat = g.reshape(grid, [n, q, nd])
    axes = [_grid_axis(ctx, g.squeeze(g.slice(flat, 2, nd - 1 - i, 1), [2]), dims[i], mode, pad, align)
            for i in range(nd)]
    xf = g.reshape(x, [n, ch, p])
    strides = [math.prod(dims[i + 1:]) for i in range(nd)]
    acc = None
    for combo in np.ndindex(*[len(t) for t in axes]):
        lin, w = None, None
        for i, k in enumerate(combo):
            idx, wt = axes[i][k]
            term = g.multiplication(idx, g.constant(np.int32(strides[i]))) if strides[i] != 1 else idx
            lin = term if lin is None else g.addition(lin, term)
            w = wt if w is None else (w if wt is None else g.multiplication(w, wt))
        assert lin is not None
        vals = g.gather_along_axis(xf, g.broadcast(g.expand_dims(lin, [1]), [n, ch, q]), 2)
        if w is not None:
            vals = g.multiplication(vals, g.expand_dims(w, [1]))
        acc = vals if acc is None else g.addition(acc, vals)
    assert acc is not None
    return [g.reshape(acc, [n, ch] + out_sp)]


@converts("AffineGrid")
def _affine_grid(ctx: Context, node: Any, a: dict) -> list:
    """theta @ (x, y[, z], 1) over a constant grid of normalized pixel centres."""
    g = ctx.g
    theta = ctx.tensor(node.input[0])
    _float_only(ctx, theta)
    size = _ints(ctx.static(node.input[1], "size"), "size")
    nd = len(size) - 2
    if nd not in (2, 3) or list(theta.shape[1:]) != [nd, nd + 1]:
        raise ctx.error(f"theta {list(theta.shape)} and size {size} do not fit (2-D: [N, 2, 3], 3-D: [N, 3, 4])")
    align = bool(_int(a.get("align_corners", 0), "align_corners"))
    spatial = size[2:]

    def axis(n: int) -> np.ndarray:
        if align:
            return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        return (np.arange(n) * 2.0 + 1.0) / n - 1.0

    mesh = np.meshgrid(*[axis(n) for n in spatial], indexing="ij")  # D, H, W order
    coords = [m.reshape(-1) for m in reversed(mesh)]  # x (width) first
    base = np.stack(coords + [np.ones_like(coords[0])], axis=1).astype(theta.dtype.np_dtype)  # [P, nd + 1]
    grid = g.matrix_multiplication(g.constant(base), g.permute(theta, [0, 2, 1]))  # [N, P, nd]
    return [g.reshape(grid, [size[0]] + spatial + [nd])]


@converts("QLinearMatMul", "MatMulInteger")
def _quantized_matmul(ctx: Context, node: Any, a: dict) -> list:
    """(a - a_zero) @ (b - b_zero) in float32 (exact: every product sum stays below 2**24 for the
    8-bit operands and K <= 256 it allows), requantized (QLinearMatMul) or as int32 (MatMulInteger)."""
    g = ctx.g
    names = list(node.input) + [""] * 8
    if node.op_type == "QLinearMatMul":
        a_, a_s, a_z, b_, b_s, b_z, y_s, y_z = names[:8]
    else:
        a_, b_, a_z, b_z = names[:4]
        a_s = b_s = y_s = y_z = ""
    x, y = ctx.tensor(a_), ctx.tensor(b_)
    if x.dtype.name not in ("int8", "uint8") or y.dtype.name not in ("int8", "uint8"):
        raise ctx.error(f"operands of dtypes {x.dtype.name} and {y.dtype.name}: int8 or uint8 are supported")
    k = x.shape[-1]
    if k < 0 or k > 256:
        raise ctx.error(f"an inner size {k} (more than 256) would not be exact in float32")

    for name, what in ((a_z, "a's zero point"), (a_s, "a's scale"), (y_s, "y's scale"), (y_z, "y's zero point")):
        if name and math.prod(ctx.shape(name)) != 1:
            raise ctx.error(f"{what} of shape {list(ctx.shape(name))}: only one per tensor is supported "
                            "(b's may be one per column)")

    def centred(t: Tensor, zero: str) -> Tensor:
        tf = g.cast(t, float32)
        return g.subtraction(tf, g.cast(ctx.tensor(zero), float32)) if zero else tf

    acc = g.matrix_multiplication(centred(x, a_z), centred(y, b_z))  # b's per-column values broadcast
    if node.op_type == "MatMulInteger":
        return [g.cast(acc, int32)]
    scale = g.division(g.multiplication(g.cast(ctx.tensor(a_s), float32), g.cast(ctx.tensor(b_s), float32)),
                       g.cast(ctx.tensor(y_s), float32))
    q = g.rint(g.multiplication(acc, scale))
    zero = ctx.tensor(y_z) if y_z else None
    target = zero.dtype if zero is not None else uint8
    if zero is not None:
        q = g.addition(q, g.cast(zero, float32))
    info = np.iinfo(target.np_dtype)
    return [g.cast(g.clamp(q, float(info.min), float(info.max)), target)]


@converts("MaxUnpool")
def _max_unpool(ctx: Context, node: Any, a: dict) -> list:
    """Each value written at its flat index of the (zero) output: a scatter along the flattened result."""
    g = ctx.g
    x = ctx.tensor(node.input[0])
    if -1 in x.shape or len(x.shape) != 4:
        raise ctx.error(f"MaxUnpool needs a static 4-D input, got {list(x.shape)}")
    kernel = _ints(a["kernel_shape"], "kernel_shape")
    strides = _ints(a.get("strides", [1, 1]), "strides")
    pads = _ints(a.get("pads", [0, 0, 0, 0]), "pads")
    inferred = list(x.shape[:2]) + [(x.shape[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + 2]
                                    for i in range(2)]
    idx = g.reshape(_int32_indices(ctx, node.input[1]), [-1])
    zeros = g.constant(np.zeros(math.prod(inferred), x.dtype.np_dtype))
    y = g.reshape(g.scatter_along_axis(g.reshape(x, [-1]), idx, zeros, 0, ScatterMode.SET), inferred)
    if ctx.has(node, 2):  # indices address the inferred shape; a larger output_shape pads it with zeros
        out = _ints(ctx.static(node.input[2], "output_shape"), "output_shape")
        if len(out) != 4 or any(o < i for o, i in zip(out, inferred)):
            raise ctx.error(f"output_shape {out} must hold the inferred shape {inferred}")
        if out != inferred:
            y = g.pad_tensor(y, PaddingMode.CONSTANT, [0] * 4, [o - i for o, i in zip(out, inferred)], 0.0)
    return [y]


# ----------------------------------------------------------------------------- DFT
@converts("DFT")
def _dft(ctx: Context, node: Any, a: dict) -> list:
    """The discrete Fourier transform as matrix products with constant cosine and sine tables."""
    g = ctx.g
    x = ctx.tensor(node.input[0])
    _float_only(ctx, x)
    rank = len(x.shape)
    if ctx.opset >= 20:
        axis = _int(ctx.static(node.input[2], "axis"), "axis") if ctx.has(node, 2) else -2
    else:
        axis = _int(a.get("axis", 1), "axis")
    axis = ctx.axis(axis, rank)
    if axis == rank - 1 or x.shape[-1] not in (1, 2) or -1 in x.shape:
        raise ctx.error(f"input {list(x.shape)} with signal axis {axis}: the last axis holds the real (and imaginary) part")
    inverse, onesided = bool(_int(a.get("inverse", 0), "inverse")), bool(_int(a.get("onesided", 0), "onesided"))
    m = x.shape[axis]
    n = _int(ctx.static(node.input[1], "dft_length"), "dft_length") if ctx.has(node, 1) else \
        (2 * (m - 1) if inverse and onesided else m)
    if n < 1:
        raise ctx.error(f"dft_length {n} must be positive")
    dt = x.dtype.np_dtype
    perm = [i for i in range(rank - 1) if i != axis] + [axis]  # the signal axis last, the parts dropped below
    parts = [g.permute(g.squeeze(g.slice(x, rank - 1, i, 1), [rank - 1]), perm) for i in range(x.shape[-1])]
    used = min(m, n) if not (inverse and onesided) else m
    parts = [g.slice(p, rank - 2, 0, used) if used < m else p for p in parts]
    k_in = np.arange(used)[:, None]
    if inverse and onesided:  # Hermitian: the full spectrum from its first half (numpy's irfft)
        weight = np.where((k_in == 0) | ((n % 2 == 0) & (k_in == n // 2)), 1.0, 2.0) * (k_in <= n // 2)
        angle = 2 * np.pi * k_in * np.arange(n)[None, :] / n
        cos_t, sin_t = weight * np.cos(angle) / n, -weight * np.sin(angle) / n
        re = g.matrix_multiplication(parts[0], g.constant(cos_t.astype(dt)))
        if len(parts) == 2:
            re = g.addition(re, g.matrix_multiplication(parts[1], g.constant(sin_t.astype(dt))))
        outs = [re]
    else:
        k_out = np.arange(n // 2 + 1 if onesided else n)[None, :]
        angle = 2 * np.pi * k_in * k_out / n
        sign, scale = (1.0, 1.0 / n) if inverse else (-1.0, 1.0)
        cos_t, sin_t = (np.cos(angle) * scale).astype(dt), (sign * np.sin(angle) * scale).astype(dt)
        re_in = parts[0]
        re = g.matrix_multiplication(re_in, g.constant(cos_t))
        im = g.matrix_multiplication(re_in, g.constant(sin_t))
        if len(parts) == 2:  # (a + ib)(cos + i sin) = a cos - b sin + i (a sin + b cos)
            re = g.subtraction(re, g.matrix_multiplication(parts[1], g.constant(sin_t)))
            im = g.addition(im, g.matrix_multiplication(parts[1], g.constant(cos_t)))
        outs = [re, im]
    inv = list(np.argsort(perm))
    return [g.concat([g.expand_dims(g.permute(o, inv), [rank - 1]) for o in outs], rank - 1)]


@converts("Col2Im")
def _col2im(ctx: Context, node: Any, a: dict) -> list:
    """Sum the columns back into the image: a scatter-add at positions computed when the file is read."""
    g = ctx.g
    x = ctx.tensor(node.input[0])
    image = _ints(ctx.static(node.input[1], "image_shape"), "image_shape")
    block = _ints(ctx.static(node.input[2], "block_shape"), "block_shape")
    nd = len(image)
    dil = _ints(a.get("dilations", [1] * nd), "dilations")
    strides = _ints(a.get("strides", [1] * nd), "strides")
    pads = _ints(a.get("pads", [0] * 2 * nd), "pads")
    if len(block) != nd or len(x.shape) != 3 or -1 in x.shape:
        raise ctx.error(f"input {list(x.shape)}, image_shape {image} and block_shape {block} do not fit")
    padded = [image[i] + pads[i] + pads[i + nd] for i in range(nd)]
    counts = [(padded[i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(nd)]
    nb, nl = math.prod(block), math.prod(counts)
    n, cb, length = x.shape
    if cb % nb or length != nl:
        raise ctx.error(f"input {list(x.shape)} does not hold {nb}-element blocks at {nl} locations")
    c = cb // nb
    offs = np.stack(np.meshgrid(*[np.arange(b) * d for b, d in zip(block, dil)], indexing="ij"), -1).reshape(nb, nd)
    locs = np.stack(np.meshgrid(*[np.arange(k) * s for k, s in zip(counts, strides)], indexing="ij"), -1).reshape(nl, nd)
    pos = offs[:, None, :] + locs[None, :, :]  # [blocks, locations, nd] in the padded image
    flat = np.ravel_multi_index(tuple(pos[..., i] for i in range(nd)), padded)  # [blocks, locations]
    index = (np.arange(c)[:, None, None] * math.prod(padded) + flat[None]).reshape(-1).astype(np.int32)
    idx = g.constant(np.ascontiguousarray(np.broadcast_to(index, (n, index.size))))
    zeros = g.constant(np.zeros((n, c * math.prod(padded)), x.dtype.np_dtype))
    y = g.reshape(g.scatter_along_axis(g.reshape(x, [n, -1]), idx, zeros, 1, ScatterMode.ADD), [n, c] + padded)
    for i in range(nd):
        if pads[i] or pads[i + nd]:
            y = g.slice(y, 2 + i, pads[i], image[i])
    return [y]


@converts("ConvInteger")
def _conv_integer(ctx: Context, node: Any, a: dict) -> list:
    """(x - x_zero) convolved with (w - w_zero) in float32, as int32 (exact while a window's
    products, at most 255 * 255 each, number 256 or fewer)."""
    import types
    g = ctx.g
    x, w = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    if x.dtype.name not in ("int8", "uint8") or w.dtype.name not in ("int8", "uint8"):
        raise ctx.error(f"operands of dtypes {x.dtype.name} and {w.dtype.name}: int8 or uint8 are supported")
    if math.prod(w.shape[1:]) > 256:
        raise ctx.error(f"a window of {math.prod(w.shape[1:])} products (more than 256) would not be exact in float32")
    xf, wf = g.cast(x, float32), g.cast(w, float32)
    if ctx.has(node, 2):
        xf = g.subtraction(xf, g.cast(ctx.tensor(node.input[2]), float32))
    if ctx.has(node, 3):
        zw = g.cast(ctx.tensor(node.input[3]), float32)
        wf = g.subtraction(wf, g.reshape(zw, [-1] + [1] * (len(w.shape) - 1)) if math.prod(zw.shape) > 1 else zw)
    names = [node.output[0] + "#x", node.output[0] + "#w"]
    ctx.values[names[0]], ctx.values[names[1]] = xf, wf
    y = _conv(ctx, types.SimpleNamespace(input=names, op_type="Conv"), a)[0]
    return [g.cast(g.rint(y), int32)]


# ----------------------------------------------------------------------------- LinearAttention (unrolled)
@converts("LinearAttention")
def _linear_attention(ctx: Context, node: Any, a: dict) -> list:
    """The recurrence token by token over the static sequence: S_t from S_{t-1} (decayed, delta-
    corrected by the update rule) plus k_t v_t^T; o_t = scale * q_t^T S_t."""
    g = ctx.g
    rule = a.get("update_rule", "gated_delta")
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        raise ctx.error(f"update_rule={escape(repr(rule))} is not an ONNX rule (linear, gated, delta, gated_delta)")
    hq, hkv = _int(a["q_num_heads"], "q_num_heads"), _int(a["kv_num_heads"], "kv_num_heads")
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    q, k, v = (ctx.tensor(n) for n in node.input[:3])
    _float_only(ctx, q)
    if len(q.shape) != 3 or -1 in q.shape or hq <= 0 or hkv <= 0 or hq % hkv:
        raise ctx.error(f"query {list(q.shape)} with {hq} query and {hkv} key heads does not fit")
    if gating != ctx.has(node, 4) or delta != ctx.has(node, 5):
        raise ctx.error(f"update_rule {rule!r} {'needs' if gating else 'takes no'} decay and "
                        f"{'needs' if delta else 'takes no'} beta")
    b, steps, _ = q.shape
    dk, dv, group = q.shape[2] // hq, v.shape[2] // hkv, hq // hkv

    def heads(t: Tensor, h: int) -> Tensor:  # [B, T, H*D] -> [B, H, T, D]
        return g.permute(g.reshape(g.cast(t, float32), [b, steps, h, t.shape[2] // h]), [0, 2, 1, 3])

    def step(t4: Tensor, i: int) -> Tensor:
        return g.squeeze(g.slice(t4, 2, i, 1), [2])

    q4, k4, v4 = heads(q, hq), heads(k, hkv), heads(v, hkv)
    decay4 = beta4 = None
    if gating:
        dec = ctx.tensor(node.input[4])
        decay4 = heads(dec, hkv) if dec.shape[-1] == hkv * dk else \
            g.permute(g.reshape(g.cast(dec, float32), [b, steps, hkv, 1]), [0, 2, 1, 3])
    if delta:
        bet = ctx.tensor(node.input[5])
        beta4 = g.permute(g.reshape(g.cast(bet, float32), [b, steps, bet.shape[-1], 1]), [0, 2, 1, 3])
    past = ctx.tensor(node.input[3]) if ctx.has(node, 3) else None
    state = g.cast(past, float32) if past is not None else g.constant(np.zeros((b, hkv, dk, dv), np.float32))
    scale = _scalar(a.get("scale", 0.0), "scale") or 1.0 / math.sqrt(dk)
    spread = g.constant((np.arange(hq) // group).astype(np.int32))
    outs = []
    for i in range(steps):
        kt, vt = step(k4, i), step(v4, i)
        if decay4 is not None:
            state = g.multiplication(state, g.expand_dims(g.exponent(step(decay4, i)), [3]))
        if beta4 is not None:
            got = g.squeeze(g.reduction_sum(g.multiplication(state, g.expand_dims(kt, [3])), [2]), [2])
            vt = g.multiplication(step(beta4, i), g.subtraction(vt, got))
        state = g.addition(state, g.multiplication(g.expand_dims(kt, [3]), g.expand_dims(vt, [2])))
        read = g.gather(state, spread, 1) if group > 1 else state
        o = g.matrix_multiplication(g.expand_dims(step(q4, i), [2]), read)  # [B, Hq, 1, dv]
        outs.append(g.multiplication(g.squeeze(o, [2]), g.constant(np.float32(scale))))
    y = g.reshape(g.permute(g.stack(outs, 2), [0, 2, 1, 3]), [b, steps, hq * dv])
    present_dtype = past.dtype if past is not None else q.dtype
    return [g.cast(y, q.dtype) if q.dtype != float32 else y,
            g.cast(state, present_dtype) if present_dtype != float32 else state]
