"""Padding: pad_tensor and pad_gradient (MPSGraphTensorShapeOps' ``padTensor`` and ``padGradient``).

Every mode is an index map applied per axis: output position ``j`` of an axis of size ``L``
with ``left`` padding reads source index ``i = j - left`` when ``0 <= i < L``, and outside

- CONSTANT: ``constant_value``; ZERO: 0 (the constant is ignored);
- CLAMP_TO_EDGE: the nearest edge element (PyTorch's replicate);
- REFLECT: the mirror across the edge, the edge itself not repeated (``[1 2 3] -> 2 | 1 2 3 | 2``,
  NumPy's ``reflect``); at most ``L - 1`` elements per side, as MPSGraph's compiler allows;
- SYMMETRIC: the mirror that repeats the edge (``1 | 1 2 3 | 3``, NumPy's ``symmetric``); at most
  ``L`` elements per side;
- PERIODIC: Apple's header defines it as ``x[-2] -> x[L-3]``: the axis repeats with period
  ``L - 1`` (its last element stands for the first, as on a grid that holds both ends of one
  period). Outside, ``x[i] = x[i + k (L - 1)]`` with the fewest periods ``k`` that land inside, so
  the left side reads ``x[0..L-2]`` and the right side ``x[1..L-1]`` (a mirror image: padding a
  reversed axis on the left is padding it on the right, reversed); any amount of padding;
  ``[1 2 3 4]`` padded by 3 is ``1 2 3 | 1 2 3 4 | 2 3 4``;
- ANTI_PERIODIC: ``x[-2] -> -x[L-3]``: the same map, negated once per period crossed.

An element outside the box on several axes applies the map of each axis (the signs multiply), and
``pad_gradient`` sums the incoming gradient of every output position back onto the source element it
read (with its sign). Padding is never negative: to crop, use ``slice``.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from ..descriptors import PaddingMode
from ..errors import DescriptorError, DTypeError, ShapeError
from ..types import ShapedType
from .registry import defop, gradient
from .shape import _int_list, _label


def as_padding_mode(value, label: str) -> PaddingMode:
    """A ``PaddingMode`` from the enum, its name (any case) or its raw MPSGraph value."""
    if isinstance(value, PaddingMode):
        return value
    if isinstance(value, str):  # "reflect", "CLAMP_TO_EDGE" or Swift's "clampToEdge"
        key = value.strip().replace("_", "").lower()
        for m in PaddingMode:
            if m.name.replace("_", "").lower() == key:
                return m
    elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if int(value) in PaddingMode._value2member_map_:
            return PaddingMode(int(value))
    names = ", ".join(f"{m.name} ({m.value})" for m in PaddingMode)
    raise DescriptorError(f"{label}: padding_mode {value!r} is not an MPSGraphPaddingMode; use mg.PaddingMode, "
                          f"its name or raw value: {names}")


def max_padding(mode: PaddingMode, size: int) -> Optional[int]:
    """The most padding one side of an axis of ``size`` elements may have in ``mode`` (None: no limit)."""
    if mode == PaddingMode.REFLECT:
        return size - 1
    if mode == PaddingMode.SYMMETRIC:
        return size
    if mode in (PaddingMode.CLAMP_TO_EDGE,):
        return None if size >= 1 else 0
    if mode in (PaddingMode.PERIODIC, PaddingMode.ANTI_PERIODIC):
        return None if size >= 2 else 0
    return None


def source_index(mode: PaddingMode, i: int, size: int) -> tuple:
    """(source index or None for the constant, sign) of position ``i`` (relative to the source's
    first element) on an axis of ``size`` elements: the definition every kernel follows."""
    if 0 <= i < size:
        return i, 1
    if mode in (PaddingMode.CONSTANT, PaddingMode.ZERO):
        return None, 1
    if mode == PaddingMode.CLAMP_TO_EDGE:
        return min(max(i, 0), size - 1), 1
    if mode == PaddingMode.REFLECT:
        return (-i if i < 0 else 2 * (size - 1) - i), 1
    if mode == PaddingMode.SYMMETRIC:
        return (-i - 1 if i < 0 else 2 * size - 1 - i), 1
    period = size - 1  # the fewest whole periods that bring i inside: left lands in 0..L-2, right in 1..L-1
    k = (period - 1 - i) // period if i < 0 else -((i - 1) // period)
    sign = -1 if mode == PaddingMode.ANTI_PERIODIC and k % 2 else 1
    return i + k * period, sign


def axis_map(mode: PaddingMode, size: int, left: int, right: int) -> tuple:
    """Per output position of one axis: (source index, -1 for the constant; sign) as arrays."""
    idx = np.empty(left + size + right, np.int64)
    sign = np.empty(left + size + right, np.int64)
    for j in range(idx.size):
        s, sg = source_index(mode, j - left, size)
        idx[j], sign[j] = (-1 if s is None else s), sg
    return idx, sign


def fill_value(mode: PaddingMode, constant_value: float, dtype: np.dtype) -> np.ndarray:
    """The 0-d value a CONSTANT or ZERO pad writes, in the result's dtype: an integer dtype takes
    the constant rounded toward zero and saturated to its range, bool whether it is nonzero."""
    v = 0.0 if mode == PaddingMode.ZERO else float(constant_value)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.asarray(min(max(math.trunc(v), int(info.min)), int(info.max)), dtype)
    if dtype.kind == "b":
        return np.asarray(v != 0, dtype)
    return np.asarray(v).astype(dtype)


def _check_paddings(shape, mode, left, right) -> list:
    r = len(shape)
    if len(left) != r or len(right) != r:
        raise ShapeError(f"left_padding {list(left)} and right_padding {list(right)} need one entry per "
                         f"dimension of the tensor's shape {tuple(shape)} ({r})")
    bad = [p for p in tuple(left) + tuple(right) if p < 0]
    if bad:
        raise ShapeError(f"padding must be >= 0, got left_padding {list(left)}, right_padding {list(right)} "
                         "(MPSGraph's padding is a count of added elements; crop with slice)")
    out = []
    for d, (n, a, b) in enumerate(zip(shape, left, right)):
        if n == -1:
            out.append(-1)
            continue
        most = max_padding(mode, n)
        if most is not None and max(a, b) > max(most, 0):
            need = {PaddingMode.REFLECT: "at most size - 1 (the edge is not repeated)",
                    PaddingMode.SYMMETRIC: "at most the size"}.get(mode, "a non-empty axis" if mode ==
                                                                   PaddingMode.CLAMP_TO_EDGE else
                                                                   "an axis of at least 2 elements (period size - 1)")
            raise ShapeError(f"{mode.name} padding ({a}, {b}) of dimension {d} (size {n}) is too large: "
                             f"{mode.name} allows {need}, here {most}")
        out.append(n + a + b)
    return out


def _infer_pad(in_types, attrs):
    t = in_types[0]
    shape = _check_paddings(t.shape, attrs["padding_mode"], attrs["left_padding"], attrs["right_padding"])
    if attrs["padding_mode"] == PaddingMode.ANTI_PERIODIC and t.dtype.is_bool:
        raise DTypeError("ANTI_PERIODIC padding negates elements; a bool tensor has no negative")
    return [ShapedType(shape, t.dtype)]


def _constant(value, label: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DescriptorError(f"{label}: constant_value must be a number (MPSGraph's Double), got {value!r}")
    return float(value)


@defop("pad_tensor", swift="padTensor(_:with:leftPadding:rightPadding:constantValue:name:)",
       objc="padTensor:withPaddingMode:leftPadding:rightPadding:constantValue:name:", inputs=("tensor",),
       infer=_infer_pad, family="shape",
       attrs=("padding_mode", "left_padding", "right_padding", "constant_value"))
def pad_tensor(g, tensor, padding_mode, left_padding: Sequence[int], right_padding: Sequence[int],
               constant_value: float = 0.0, name: Optional[str] = None):
    """Pad every dimension by ``left_padding[d]`` before and ``right_padding[d]`` after, filled as
    ``padding_mode`` says (module docstring; docs/shape.md has worked numbers). ``constant_value``
    is used by CONSTANT only and is converted to the tensor's dtype (MPSGraph
    ``padTensor(_:with:leftPadding:rightPadding:constantValue:name:)``)."""
    label = _label("pad_tensor", name)
    tensor = g.as_tensor(tensor, label)
    mode = as_padding_mode(padding_mode, label)
    cv = _constant(constant_value, label)
    if mode == PaddingMode.CONSTANT and not tensor.dtype.is_floating and not math.isfinite(cv):
        raise DTypeError(f"{label}: constant_value {cv} has no {tensor.dtype.name} value (integer and bool "
                         "tensors take a finite constant, rounded toward zero and saturated)")
    attrs = {"padding_mode": mode, "left_padding": _int_list(left_padding, "left_padding", label),
             "right_padding": _int_list(right_padding, "right_padding", label), "constant_value": cv}
    return g.add_op("pad_tensor", [tensor], attrs, name).output


def _infer_pad_grad(in_types, attrs):
    dy, src = in_types
    want = _check_paddings(src.shape, attrs["padding_mode"], attrs["left_padding"], attrs["right_padding"])
    if len(dy.shape) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(dy.shape, want)):
        raise ShapeError(f"incoming gradient shape {dy.shape} is not the padded shape {tuple(want)} of the source "
                         f"{src.shape}")
    if dy.dtype.is_bool:
        raise DTypeError("pad_gradient sums gradients; a bool incoming gradient has no sum")
    return [ShapedType(src.shape, dy.dtype)]


@defop("pad_gradient",
       swift="padGradient(withIncomingGradientTensor:sourceTensor:paddingMode:leftPadding:rightPadding:name:)",
       objc="padGradientWithIncomingGradientTensor:sourceTensor:paddingMode:leftPadding:rightPadding:name:",
       inputs=("incoming_gradient", "source"), infer=_infer_pad_grad, family="shape",
       attrs=("padding_mode", "left_padding", "right_padding"))
def pad_gradient(g, incoming_gradient, source, padding_mode, left_padding: Sequence[int],
                 right_padding: Sequence[int], name: Optional[str] = None):
    """The gradient of ``pad_tensor`` toward its source: each incoming element is added to the source
    element it was read from (times -1 where ANTI_PERIODIC negated it); the constant's positions add
    nothing (MPSGraph ``padGradient(withIncomingGradientTensor:...)``)."""
    label = _label("pad_gradient", name)
    attrs = {"padding_mode": as_padding_mode(padding_mode, label),
             "left_padding": _int_list(left_padding, "left_padding", label),
             "right_padding": _int_list(right_padding, "right_padding", label)}
    return g.add_op("pad_gradient", [g.as_tensor(incoming_gradient, label), g.as_tensor(source, label)],
                    attrs, name).output


@gradient("pad_tensor")
def _pad_tensor_gradient(g, op, dy, wanted):
    a = op.attrs
    return [g.pad_gradient(dy, op.inputs[0], a["padding_mode"], a["left_padding"], a["right_padding"])]


@gradient("pad_gradient")
def _pad_gradient_gradient(g, op, dy, wanted):
    """pad_gradient is linear in the incoming gradient and its adjoint is the pad itself (the
    constant's positions get zero); the source only gives the shape."""
    a = op.attrs
    mode = PaddingMode.ZERO if a["padding_mode"] == PaddingMode.CONSTANT else a["padding_mode"]
    return [g.pad_tensor(dy, mode, a["left_padding"], a["right_padding"]) if wanted[0] else None, None]
