"""Quantization (MPSGraphQuantizationOps): quantize, dequantize and the lookup-table dequantize.

Apple's formulas
(https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/quantize(_:scale:zeropoint:datatype:name:),
https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/dequantize(_:scale:zeropoint:datatype:name:)):
``quantize``: ``result = round(tensor / scale) + zeroPoint`` as int8 or uint8; ``dequantize``:
``result = scale * (tensor - zeroPoint)`` as a float type. Each MPSGraph selector is one op type
here, named after its labels. Where Apple is silent minigraph follows ONNX's QuantizeLinear:

- ``round`` rounds half to even (ONNX, PyTorch, Metal's ``rint``; not MPSGraph's ``round(with:)``);
- the sum saturates to the result type's range, so ``+inf`` gives its maximum, ``-inf`` its minimum;
- NaN gives the zero point (the code of 0.0): a saturating float-to-int conversion gives 0 for NaN
  before the zero point is added;
- ``x / scale`` is computed in float32 (float64 for a float64 input), true division;
- ``scale * (q - zero_point)`` is computed in float32 with the scale first rounded to the result
  type, and rounded once to the result type (exact for float16, whose products fit float32).

int4 and uint4 (MPSDataType's 4-bit integers) are held in int8 / uint8 arrays with values in
-8..7 / 0..15: quantize saturates to that range, dequantize takes them, and the lookup-table forms
take uint4 indices into 16-entry tables. minigraph has no bfloat16 or float8 types, so float8
results and bfloat16 scales are not offered. None of these ops is differentiable (Apple documents
no gradient for them).
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ..errors import AxisError, DescriptorError, DTypeError, ShapeError
from ..types import ShapedType, as_dtype, int_range
from .registry import defop

_FAMILY = "quantization"
_SINCE = ("13.1", "16.2")
_SINCE_15 = ("15.0", "18.0")
QUANTIZED = ("int4", "uint4", "int8", "uint8")
FLOATS = ("float16", "float32", "float64")
LUT_TYPES = ("float16", "float32", "float64", "int8")
LUT_ENTRIES = {"uint4": 16, "uint8": 256}


def _label(type: str, name) -> str:
    return f"{type} {name!r}" if name else type


def qrange(dtype_name: str) -> tuple:
    """(lowest, highest) of a quantized type: -8..7 for int4, 0..15 for uint4."""
    return int_range(as_dtype(dtype_name))


def _dtype(v: Any, allowed: tuple, what: str, label: str):
    try:
        dt = as_dtype(v)
    except Exception:
        raise DTypeError(f"{label}: {what} must be one of {', '.join(allowed)}, got {v!r}") from None
    if dt.name not in allowed:
        extra = " (minigraph has no float8 types)" if what.startswith("the result") and \
            allowed == QUANTIZED else ""
        raise DTypeError(f"{label}: {what} must be one of {', '.join(allowed)}, got {dt.name}{extra}")
    return dt


def _scale_value(v: Any, label: str) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise DescriptorError(f"{label}: scale must be a number, got {v!r} (a tensor scale is the "
                              "..._with_scale_tensor form)")
    s = float(v)
    if not math.isfinite(s) or s == 0.0:
        raise DescriptorError(f"{label}: scale must be finite and nonzero, got {s}")
    return s


def _zero_point_value(v: Any, dtype_name: str, label: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise DescriptorError(f"{label}: zero_point must be a number, got {v!r}")
    lo, hi = qrange(dtype_name)
    z = float(v)
    if not z.is_integer() or not lo <= z <= hi:
        raise DescriptorError(f"{label}: zero_point must be an integer in [{lo}, {hi}] (it is converted to "
                              f"{dtype_name}), got {v!r}")
    return int(z)


def _axis_value(v: Any, label: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ShapeError(f"{label}: axis must be an int, got {v!r}")
    return int(v)


def param_axis(shape: tuple, axis: int, label: str) -> int:
    """``axis`` made non-negative for a tensor of ``shape`` (any value for a scalar tensor)."""
    r = len(shape)
    if r == 0:
        return 0
    if not -r <= axis < r:
        raise AxisError(f"{label}: axis {axis} is out of range for a tensor of rank {r} (valid: {-r}..{r - 1})")
    return axis % r


def _check_per_axis(shape: tuple, p: ShapedType, axis: int, what: str, label: str) -> None:
    """A scale or zero point of the per-axis forms: a scalar, one element, or [shape[axis]]."""
    if len(p.shape) == 0 or (len(p.shape) == 1 and p.shape[0] in (1, -1)):
        return
    n = shape[axis] if shape else 1
    if len(p.shape) != 1 or (p.shape[0] != n and n != -1):
        raise ShapeError(f"{label}: {what} must be a scalar or 1-D of size tensor.shape[axis] = {n} "
                         f"(axis {axis} of {tuple(shape)}), got shape {tuple(p.shape)}")


def _float_input(t: ShapedType, label: str) -> None:
    if t.dtype.name not in FLOATS:
        raise DTypeError(f"{label}: the tensor to quantize must be float16 or float32 (float64 on numpy), "
                         f"got {t.dtype.name}")


def _quantized_input(t: ShapedType, label: str) -> None:
    if t.dtype.name not in QUANTIZED:
        raise DTypeError(f"{label}: the tensor to dequantize must be int4, uint4, int8 or uint8, got "
                         f"{t.dtype.name}")


# ----------------------------------------------------------------------------- quantize
def _infer_quantize(in_types, attrs) -> list:
    (t,) = in_types
    _float_input(t, "quantize")
    return [ShapedType(t.shape, attrs["dtype"])]


def _infer_quantize_tensors(type: str):
    def infer(in_types, attrs) -> list:
        t, s = in_types[0], in_types[1]
        _float_input(t, type)
        if s.dtype != t.dtype:
            raise DTypeError(f"{type}: scale_tensor must have the input's dtype {t.dtype.name}, got {s.dtype.name}")
        axis = param_axis(t.shape, attrs["axis"], type)
        _check_per_axis(t.shape, s, axis, "scale_tensor", type)
        if len(in_types) == 3:
            z = in_types[2]
            if z.dtype != attrs["dtype"]:
                raise DTypeError(f"{type}: zero_point_tensor must have the result dtype {attrs['dtype'].name}, "
                                 f"got {z.dtype.name}")
            _check_per_axis(t.shape, z, axis, "zero_point_tensor", type)
        return [ShapedType(t.shape, attrs["dtype"])]
    return infer


@defop("quantize", four_bit=True, swift="quantize(_:scale:zeroPoint:dataType:name:)",
       objc="quantizeTensor:scale:zeroPoint:dataType:name:", inputs=("tensor",), infer=_infer_quantize,
       family=_FAMILY, differentiable=False, attrs=("scale", "zero_point", "dtype"), since=_SINCE)
def quantize(g, tensor, scale: float, zero_point: float, dtype: Any, name: Optional[str] = None):
    """``saturate(round_half_even(tensor / scale) + zero_point)`` as int4, uint4, int8 or uint8, one
    scale and zero point for the whole tensor (MPSGraph ``quantize(_:scale:zeroPoint:dataType:name:)``); NaN gives
    the zero point. Not differentiable."""
    label = _label("quantize", name)
    t = g.as_tensor(tensor, label)
    dt = _dtype(dtype, QUANTIZED, "the result dtype", label)
    attrs = {"scale": _scale_value(scale, label), "zero_point": _zero_point_value(zero_point, dt.name, label),
             "dtype": dt}
    return g.add_op("quantize", [t], attrs, name).output


@defop("quantize_with_scale_tensor", four_bit=True, swift="quantize(_:scaleTensor:zeroPoint:dataType:axis:name:)",
       objc="quantizeTensor:scaleTensor:zeroPoint:dataType:axis:name:", inputs=("tensor", "scale_tensor"),
       infer=_infer_quantize_tensors("quantize_with_scale_tensor"), family=_FAMILY, differentiable=False,
       attrs=("zero_point", "dtype", "axis"), since=_SINCE)
def quantize_with_scale_tensor(g, tensor, scale_tensor, zero_point: float, dtype: Any, axis: int,
                               name: Optional[str] = None):
    """``quantize`` with a scale per index of ``axis`` (``scale_tensor``: 1-D of size
    ``tensor.shape[axis]``, or one element) and one zero point (MPSGraph
    ``quantize(_:scaleTensor:zeroPoint:dataType:axis:name:)``). Not differentiable."""
    label = _label("quantize_with_scale_tensor", name)
    t = g.as_tensor(tensor, label)
    s = g.as_tensor(scale_tensor, label, like=t)
    dt = _dtype(dtype, QUANTIZED, "the result dtype", label)
    attrs = {"zero_point": _zero_point_value(zero_point, dt.name, label), "dtype": dt,
             "axis": param_axis(t.shape, _axis_value(axis, label), label)}
    return g.add_op("quantize_with_scale_tensor", [t, s], attrs, name).output


@defop("quantize_with_tensors", four_bit=True, swift="quantize(_:scaleTensor:zeroPointTensor:dataType:axis:name:)",
       objc="quantizeTensor:scaleTensor:zeroPointTensor:dataType:axis:name:",
       inputs=("tensor", "scale_tensor", "zero_point_tensor"),
       infer=_infer_quantize_tensors("quantize_with_tensors"), family=_FAMILY, differentiable=False,
       attrs=("dtype", "axis"), since=_SINCE)
def quantize_with_tensors(g, tensor, scale_tensor, zero_point_tensor, dtype: Any, axis: int,
                          name: Optional[str] = None):
    """``quantize`` with a scale and a zero point per index of ``axis`` (each 1-D of size
    ``tensor.shape[axis]``, or one element; the zero points have the result dtype), as ONNX's
    per-axis QuantizeLinear (MPSGraph ``quantize(_:scaleTensor:zeroPointTensor:dataType:axis:name:)``).
    Not differentiable."""
    label = _label("quantize_with_tensors", name)
    t = g.as_tensor(tensor, label)
    dt = _dtype(dtype, QUANTIZED, "the result dtype", label)
    s = g.as_tensor(scale_tensor, label, like=t)
    z = g.as_tensor(zero_point_tensor, label, dtype=dt)
    attrs = {"dtype": dt, "axis": param_axis(t.shape, _axis_value(axis, label), label)}
    return g.add_op("quantize_with_tensors", [t, s, z], attrs, name).output


# ----------------------------------------------------------------------------- dequantize
def _infer_dequantize(in_types, attrs) -> list:
    (t,) = in_types
    _quantized_input(t, "dequantize")
    return [ShapedType(t.shape, attrs["dtype"])]


def _check_scale_dtype(type: str, s: ShapedType, dtype) -> None:
    if s.dtype != dtype:
        raise DTypeError(f"{type}: scale_tensor's dtype {s.dtype.name} must match the result dtype "
                         f"{dtype.name} (Apple: the scale type and dataType must match)")


def _infer_dequantize_tensors(type: str):
    def infer(in_types, attrs) -> list:
        t, s = in_types[0], in_types[1]
        _quantized_input(t, type)
        _check_scale_dtype(type, s, attrs["dtype"])
        axis = param_axis(t.shape, attrs["axis"], type)
        _check_per_axis(t.shape, s, axis, "scale_tensor", type)
        if len(in_types) == 3:
            z = in_types[2]
            if z.dtype != t.dtype:
                raise DTypeError(f"{type}: zero_point_tensor must have the input's dtype {t.dtype.name}, "
                                 f"got {z.dtype.name}")
            _check_per_axis(t.shape, z, axis, "zero_point_tensor", type)
        if attrs.get("zero_point") is not None:
            lo, hi = qrange(t.dtype.name)
            if not lo <= attrs["zero_point"] <= hi:
                raise DescriptorError(f"{type}: zero_point {attrs['zero_point']} is outside {t.dtype.name}'s "
                                      f"[{lo}, {hi}]")
        return [ShapedType(t.shape, attrs["dtype"])]
    return infer


def _any_zero_point(v: Any, label: str) -> int:
    """A scalar zero point before the input's dtype is checked: an integer in int8 or uint8 range (the
    input's own range is checked when its type is inferred)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise DescriptorError(f"{label}: zero_point must be a number, got {v!r}")
    z = float(v)
    if not z.is_integer() or not -128 <= z <= 255:
        raise DescriptorError(f"{label}: zero_point must be an integer of the input's dtype (int8 or uint8), got {v!r}")
    return int(z)


@defop("dequantize", four_bit=True, swift="dequantize(_:scale:zeroPoint:dataType:name:)",
       objc="dequantizeTensor:scale:zeroPoint:dataType:name:", inputs=("tensor",), infer=_infer_dequantize,
       family=_FAMILY, differentiable=False, attrs=("scale", "zero_point", "dtype"), since=_SINCE)
def dequantize(g, tensor, scale: float, zero_point: float, dtype: Any, name: Optional[str] = None):
    """``scale * (tensor - zero_point)`` of an int4, uint4, int8 or uint8 tensor as float16 or float32, one scale
    and zero point for the whole tensor (MPSGraph ``dequantize(_:scale:zeroPoint:dataType:name:)``).
    Not differentiable."""
    label = _label("dequantize", name)
    t = g.as_tensor(tensor, label)
    _quantized_input(t, label)
    dt = _dtype(dtype, FLOATS, "the result dtype", label)
    attrs = {"scale": _scale_value(scale, label), "zero_point": _zero_point_value(zero_point, t.dtype.name, label),
             "dtype": dt}
    return g.add_op("dequantize", [t], attrs, name).output


@defop("dequantize_with_scale_tensor", four_bit=True, swift="dequantize(_:scaleTensor:zeroPoint:dataType:axis:name:)",
       objc="dequantizeTensor:scaleTensor:zeroPoint:dataType:axis:name:", inputs=("tensor", "scale_tensor"),
       infer=_infer_dequantize_tensors("dequantize_with_scale_tensor"), family=_FAMILY, differentiable=False,
       attrs=("zero_point", "dtype", "axis"), since=_SINCE)
def dequantize_with_scale_tensor(g, tensor, scale_tensor, zero_point: float, dtype: Any, axis: int,
                                 name: Optional[str] = None):
    """``dequantize`` with a scale per index of ``axis`` (a scalar, one element, or 1-D of size
    ``tensor.shape[axis]``, of the result dtype) and one zero point (MPSGraph
    ``dequantize(_:scaleTensor:zeroPoint:dataType:axis:name:)``). Not differentiable."""
    label = _label("dequantize_with_scale_tensor", name)
    t = g.as_tensor(tensor, label)
    dt = _dtype(dtype, FLOATS, "the result dtype", label)
    s = g.as_tensor(scale_tensor, label, dtype=dt)
    attrs = {"zero_point": _any_zero_point(zero_point, label), "dtype": dt,
             "axis": param_axis(t.shape, _axis_value(axis, label), label)}
    return g.add_op("dequantize_with_scale_tensor", [t, s], attrs, name).output


@defop("dequantize_with_tensors", four_bit=True, swift="dequantize(_:scaleTensor:zeroPointTensor:dataType:axis:name:)",
       objc="dequantizeTensor:scaleTensor:zeroPointTensor:dataType:axis:name:",
       inputs=("tensor", "scale_tensor", "zero_point_tensor"),
       infer=_infer_dequantize_tensors("dequantize_with_tensors"), family=_FAMILY, differentiable=False,
       attrs=("dtype", "axis"), since=_SINCE)
def dequantize_with_tensors(g, tensor, scale_tensor, zero_point_tensor, dtype: Any, axis: int,
                            name: Optional[str] = None):
    """``dequantize`` with a scale and a zero point per index of ``axis`` (the zero points have the
    input's dtype), as ONNX's per-axis DequantizeLinear (MPSGraph
    ``dequantize(_:scaleTensor:zeroPointTensor:dataType:axis:name:)``). Not differentiable."""
    label = _label("dequantize_with_tensors", name)
    t = g.as_tensor(tensor, label)
    dt = _dtype(dtype, FLOATS, "the result dtype", label)
    s = g.as_tensor(scale_tensor, label, dtype=dt)
    z = g.as_tensor(zero_point_tensor, label, like=t)
    attrs = {"dtype": dt, "axis": param_axis(t.shape, _axis_value(axis, label), label)}
    return g.add_op("dequantize_with_tensors", [t, s, z], attrs, name).output


# ----------------------------------------------------------------------------- blockwise dequantize
def block_size(t_shape: tuple, s_shape: tuple, type: str) -> int:
    """The block along the last axis: scales ``[..., K / block]`` for a tensor ``[..., K]``."""
    if len(t_shape) == 0 or len(s_shape) != len(t_shape) or tuple(s_shape[:-1]) != tuple(t_shape[:-1]):
        raise ShapeError(f"{type}: scale_tensor must have the tensor's shape with the last axis divided by "
                         f"the block size ([..., K / block] for [..., K]), got {tuple(s_shape)} for "
                         f"{tuple(t_shape)}")
    k, nb = t_shape[-1], s_shape[-1]
    if -1 in (k, nb):
        return -1
    if nb < 1 or k % nb:
        raise ShapeError(f"{type}: the last axis {k} of the tensor is not a whole number of blocks of the "
                         f"scale's {nb} (shapes {tuple(t_shape)} and {tuple(s_shape)})")
    return k // nb


def _infer_blockwise(type: str):
    def infer(in_types, attrs) -> list:
        t, s = in_types[0], in_types[1]
        _quantized_input(t, type)
        _check_scale_dtype(type, s, attrs["dtype"])
        block_size(t.shape, s.shape, type)
        if len(in_types) == 3:
            z = in_types[2]
            if z.dtype != t.dtype:
                raise DTypeError(f"{type}: zero_point_tensor must have the input's dtype {t.dtype.name}, "
                                 f"got {z.dtype.name}")
            if tuple(z.shape) != tuple(s.shape):
                raise ShapeError(f"{type}: zero_point_tensor must have scale_tensor's shape {tuple(s.shape)}, "
                                 f"got {tuple(z.shape)}")
        return [ShapedType(t.shape, attrs["dtype"])]
    return infer


@defop("dequantize_blockwise", four_bit=True, swift="dequantize(_:scaleTensor:zeroPointTensor:dataType:name:)",
       objc="dequantizeTensor:scaleTensor:zeroPointTensor:dataType:name:",
       inputs=("tensor", "scale_tensor", "zero_point_tensor"), infer=_infer_blockwise("dequantize_blockwise"),
       family=_FAMILY, differentiable=False, attrs=("dtype",), since=_SINCE_15)
def dequantize_blockwise(g, tensor, scale_tensor, zero_point_tensor, dtype: Any, name: Optional[str] = None):
    """``scale * (tensor - zero_point)`` with one scale and zero point per block of the last axis:
    ``tensor`` ``[..., K]``, both parameters ``[..., K / block]`` (MPSGraph
    ``dequantize(_:scaleTensor:zeroPointTensor:dataType:name:)``). Not differentiable."""
    label = _label("dequantize_blockwise", name)
    t = g.as_tensor(tensor, label)
    dt = _dtype(dtype, FLOATS, "the result dtype", label)
    s = g.as_tensor(scale_tensor, label, dtype=dt)
    z = g.as_tensor(zero_point_tensor, label, like=t)
    return g.add_op("dequantize_blockwise", [t, s, z], {"dtype": dt}, name).output


@defop("dequantize_blockwise_symmetric", four_bit=True, swift="dequantize(_:scaleTensor:dataType:name:)",
       objc="dequantizeTensor:scaleTensor:dataType:name:", inputs=("tensor", "scale_tensor"),
       infer=_infer_blockwise("dequantize_blockwise_symmetric"), family=_FAMILY, differentiable=False,
       attrs=("dtype",), since=_SINCE_15)
def dequantize_blockwise_symmetric(g, tensor, scale_tensor, dtype: Any, name: Optional[str] = None):
    """``scale * tensor`` (zero point 0) with one scale per block of the last axis (MPSGraph
    ``dequantize(_:scaleTensor:dataType:name:)``). Not differentiable."""
    label = _label("dequantize_blockwise_symmetric", name)
    t = g.as_tensor(tensor, label)
    dt = _dtype(dtype, FLOATS, "the result dtype", label)
    s = g.as_tensor(scale_tensor, label, dtype=dt)
    return g.add_op("dequantize_blockwise_symmetric", [t, s], {"dtype": dt}, name).output


# ----------------------------------------------------------------------------- lookup tables
def lut_groups(t_shape: tuple, groups: tuple, type: str, most: int) -> tuple:
    """The block of each group axis: the LUT's leading axes ``groups`` split the tensor's last
    ``len(groups)`` axes into equal blocks (Core ML's per-grouped palettization layout)."""
    if len(groups) > min(most, len(t_shape)):
        raise ShapeError(f"{type}: the lookup table has {len(groups)} group axes; at most {most} (Apple's "
                         f"limit), and no more than the tensor's rank {len(t_shape)}")
    blocks = []
    for gsz, n in zip(groups, t_shape[len(t_shape) - len(groups):]):
        if gsz < 1 or (n != -1 and n % gsz):
            raise ShapeError(f"{type}: the lookup table's group axes {tuple(groups)} must divide the tensor's "
                             f"last axes {tuple(t_shape[len(t_shape) - len(groups):])}")
        blocks.append(-1 if n == -1 else n // gsz)
    return tuple(blocks)


def _check_lut(type: str, t: ShapedType, lut: ShapedType, tail: int) -> None:
    if t.dtype.name not in LUT_ENTRIES:
        raise DTypeError(f"{type}: the index tensor must be uint4 (16 entries) or uint8 (256), got {t.dtype.name}")
    if lut.dtype.name not in LUT_TYPES:
        raise DTypeError(f"{type}: the lookup table must be one of {', '.join(LUT_TYPES)}, got {lut.dtype.name}")
    entries = LUT_ENTRIES[t.dtype.name]
    if len(lut.shape) < tail or lut.shape[len(lut.shape) - tail] != entries:
        where = "last" if tail == 1 else "second-to-last"
        raise ShapeError(f"{type}: the lookup table's {where} axis must have {entries} entries (one per "
                         f"{t.dtype.name} index), got shape {tuple(lut.shape)}")


def _infer_lut(in_types, attrs) -> list:
    t, lut = in_types
    _check_lut("dequantize_lut", t, lut, 1)
    lut_groups(t.shape, tuple(lut.shape[:-1]), "dequantize_lut", 3)
    return [ShapedType(t.shape, lut.dtype)]


def vector_lut_shape(t_shape: tuple, v: int, axis: int) -> tuple:
    out = list(t_shape)
    out[axis] = -1 if out[axis] == -1 else out[axis] * v
    return tuple(out)


def _infer_vector_lut(in_types, attrs) -> list:
    t, lut = in_types
    type = "dequantize_vector_lut"
    _check_lut(type, t, lut, 2)
    if len(t.shape) == 0:
        raise ShapeError(f"{type}: the index tensor needs rank >= 1 (axis receives the vectors), got a scalar")
    lut_groups(t.shape, tuple(lut.shape[:-2]), type, 2)
    axis = param_axis(t.shape, attrs["axis"], type)
    return [ShapedType(vector_lut_shape(t.shape, lut.shape[-1], axis), lut.dtype)]


def _constant_indices(g, tensor, label: str):
    t = g.as_tensor(tensor, label)
    if t.operation.type != "constant":
        raise DTypeError(f"{label}: the index tensor must be a graph constant (Apple: \"The input tensor "
                         f"must be a graph constant\"), got the output of a {t.operation.type} op "
                         f"{t.operation.name!r}")
    return t


@defop("dequantize_lut", four_bit=True, swift="dequantize(_:LUTTensor:name:)", objc="dequantizeTensor:LUTTensor:name:",
       inputs=("tensor", "lut_tensor"), infer=_infer_lut, family=_FAMILY, differentiable=False,
       since=_SINCE_15)
def dequantize_lut(g, tensor, lut_tensor, name: Optional[str] = None):
    """``lut_tensor[g..., tensor[i...]]``: each uint8 (uint4) index of a constant ``tensor`` looks up one
    of 256 (16) entries; the LUT ``[G..., 256]`` (``[G..., 16]``) may hold up to 3 group axes that split the tensor's last axes into
    equal blocks, each block with its own table (MPSGraph ``dequantize(_:LUTTensor:name:)``). The
    result has the LUT's dtype. Not differentiable."""
    label = _label("dequantize_lut", name)
    t = _constant_indices(g, tensor, label)
    lut = g.as_tensor(lut_tensor, label)
    return g.add_op("dequantize_lut", [t, lut], {}, name).output


@defop("dequantize_vector_lut", four_bit=True, swift="dequantize(_:LUTTensor:axis:name:)",
       objc="dequantizeTensor:LUTTensor:axis:name:", inputs=("tensor", "lut_tensor"), infer=_infer_vector_lut,
       family=_FAMILY, differentiable=False, attrs=("axis",), since=_SINCE_15)
def dequantize_vector_lut(g, tensor, lut_tensor, axis: int, name: Optional[str] = None):
    """Each uint8 (uint4) index of a constant ``tensor`` looks up a vector of ``V`` values in ``lut_tensor``
    ``[G..., 256, V]`` (``[G..., 16, V]``) (up to 2 group axes), written one after another along ``axis``: the result has
    ``tensor``'s shape with ``axis`` ``V`` times longer, ``result[..., j, ...] = lut[g..., tensor[...,
    j // V, ...], j % V]``, as Core ML's vector palettization (MPSGraph
    ``dequantize(_:LUTTensor:axis:name:)``). Not differentiable."""
    label = _label("dequantize_vector_lut", name)
    t = _constant_indices(g, tensor, label)
    lut = g.as_tensor(lut_tensor, label)
    ax = _axis_value(axis, label)
    if t.rank:
        ax = param_axis(t.shape, ax, label)
    return g.add_op("dequantize_vector_lut", [t, lut], {"axis": ax}, name).output

