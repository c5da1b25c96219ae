"""Resize (nearest and bilinear) and its gradient (MPSGraphResizeOps), docs/resize.md.

Each result index ``o`` of a resized axis (input size ``n``, result size ``m``) reads the source
coordinate, as Apple's header describes the two flags:

- ``align_corners``: ``src = o * (n - 1) / (m - 1)`` (0 when m = 1); ``center_result`` does nothing;
- ``center_result`` only: ``src = (o + 0.5) * n / m - 0.5`` (half-pixel, OpenCV / TensorFlow 2);
- neither: ``src = o * n / m`` (TensorFlow 1's top-left alignment);
- ``scale``/``offset`` given (Apple's ``dst = src * scale + offset``): ``src = (o - offset) / scale``,
  computed in float32.

NEAREST rounds ``src`` with ``nearest_rounding_mode`` (MPSGraph's default RoundPreferCeil, half
toward +inf: ``floor(src + 0.5)``), clamped to the input. BILINEAR clamps ``src`` to
``[0, n - 1]`` and mixes the two neighbours ``i0 = floor(src)`` and ``i0 + 1`` with weights
``1 - f`` and ``f`` (a weight of exactly 0 reads nothing, so an infinite neighbour does not make
a NaN). The axes are separable: the last resized axis first, then the others backwards. Without
a scale, ``src`` is kept as the exact fraction ``(A * o + B) / DEN`` of integers, so rounding
ties are decided exactly. With a ``layout`` H and W are resized; without one (``layout=None``,
Apple's forms with no layout) every axis is, ``size`` giving the whole result shape.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from ..descriptors import ResizeMode, ResizeNearestRoundingMode, TensorNamedDataLayout
from ..errors import DescriptorError, ShapeError
from ..types import ShapedType
from .convolution import check_float
from .registry import defop, gradient

_L = TensorNamedDataLayout
_R = ResizeNearestRoundingMode
# layout -> (rank, (H axis, W axis)); the layouts MPSGraph's resize documents
SPATIAL_AXES = {_L.NCHW: (4, (2, 3)), _L.NHWC: (4, (1, 2)), _L.CHW: (3, (1, 2)), _L.HWC: (3, (0, 1)),
                _L.HW: (2, (0, 1))}
_SINCE = ("11.0", "14.0")  # resizeTensor:size:mode:centerResult:alignCorners:layout:name: and its gradient
_KEYS = ("mode", "center_result", "align_corners", "layout", "nearest_rounding_mode", "scale", "offset")
_NEW = {"nearest_rounding_mode": _R.ROUND_PREFER_CEIL, "scale": None, "offset": None}  # graphs saved before them


def coefficients(in_size: int, out_size: int, center_result: bool, align_corners: bool) -> tuple[int, int, int]:
    """``(A, B, DEN)``: result index ``o`` reads source coordinate ``(A * o + B) / DEN`` (DEN even, > 0)."""
    if align_corners:
        return (2 * (in_size - 1), 0, 2 * (out_size - 1)) if out_size > 1 else (0, 0, 2)
    if center_result:
        return 2 * in_size, in_size - out_size, 2 * out_size
    return 2 * in_size, 0, 2 * out_size


def round_fraction(num: np.ndarray, den: int, rounding: ResizeNearestRoundingMode) -> np.ndarray:
    """``num / den`` (int64 arrays, ``den`` even and > 0) rounded to an integer with ``rounding``."""
    if rounding == _R.FLOOR:
        return num // den
    if rounding == _R.CEIL:
        return -((-num) // den)
    if rounding == _R.ROUND_PREFER_FLOOR:
        return -((den // 2 - num) // den)
    r = (num + den // 2) // den  # halves up
    tie = (num + den // 2) % den == 0
    if rounding == _R.ROUND_TO_EVEN:
        return np.where(tie & (r % 2 == 1), r - 1, r)
    if rounding == _R.ROUND_TO_ODD:
        return np.where(tie & (r % 2 == 0), r - 1, r)
    return r


def round_float(src: np.ndarray, rounding: ResizeNearestRoundingMode) -> np.ndarray:
    """Float coordinates rounded with ``rounding`` (the fraction ``src - floor(src)`` is exact)."""
    fl = np.floor(src)
    frac = src - fl
    if rounding == _R.FLOOR:
        r = fl
    elif rounding == _R.CEIL:
        r = np.ceil(src)
    else:
        up = frac > 0.5
        tie = frac == 0.5
        if rounding == _R.ROUND_PREFER_CEIL:
            up |= tie
        elif rounding == _R.ROUND_TO_EVEN:
            up |= tie & (np.mod(fl, 2) == 1)
        elif rounding == _R.ROUND_TO_ODD:
            up |= tie & (np.mod(fl, 2) == 0)
        r = fl + up
    return r


def taps(in_size: int, out_size: int, mode: ResizeMode, center_result: bool, align_corners: bool,
         dtype: Any = np.float32, rounding: ResizeNearestRoundingMode = _R.ROUND_PREFER_CEIL,
         scale: Optional[float] = None, offset: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per result index: ``(i0, i1, f)``, the two source indices and the weight of ``i1``, one
    division in ``dtype`` (``f = 0`` and ``i1 = i0`` where one source element is read: always
    for NEAREST). ``scale`` given: ``src = (o - offset) / scale`` in float32."""
    dtype = np.dtype(dtype)
    last = in_size - 1
    if scale is not None:
        src = (np.arange(out_size, dtype=np.float32) - np.float32(offset)) / np.float32(scale)
        if mode == ResizeMode.NEAREST:
            i0 = np.clip(round_float(src, rounding), 0, last).astype(np.int64)
            return i0, i0, np.zeros(out_size, dtype)
        src = np.clip(src, np.float32(0), np.float32(last))
        i0 = np.floor(src).astype(np.int64)
        f = (src - i0.astype(np.float32)).astype(dtype)
        return i0, np.where(f > 0, i0 + 1, i0), f
    a, b, den = coefficients(in_size, out_size, center_result, align_corners)
    num = a * np.arange(out_size, dtype=np.int64) + b
    if mode == ResizeMode.NEAREST:
        i0 = np.clip(round_fraction(num, den, rounding), 0, last)
        return i0, i0, np.zeros(out_size, dtype)
    num = np.maximum(num, 0)
    i0 = num // den
    rem = num - i0 * den
    edge = i0 >= last
    i0 = np.where(edge, last, i0)
    f = np.where(edge, dtype.type(0), rem.astype(dtype) / dtype.type(den)).astype(dtype)
    i1 = np.where(f > 0, i0 + 1, i0)
    return i0, i1, f


def resized_axes(attrs: dict, rank: int) -> tuple:
    """The axes a resize op resamples: H and W of its layout, or every axis without one."""
    lay = attrs.get("layout")
    return SPATIAL_AXES[lay][1] if lay is not None else tuple(range(rank))


def axis_taps(attrs: dict, j: int, in_size: int, out_size: int, dtype: Any = np.float32) -> tuple:
    """``taps`` of the ``j``-th resized axis of a resize op with ``attrs``."""
    a = {**_NEW, **attrs}
    scale = a["scale"][j] if a["scale"] is not None else None
    offset = a["offset"][j] if a["offset"] is not None else 0.0
    return taps(in_size, out_size, a["mode"], a["center_result"], a["align_corners"], dtype,
                a["nearest_rounding_mode"], scale, offset)


def is_identity(i0: np.ndarray, f: np.ndarray, in_size: int) -> bool:
    """Whether a pass with these taps copies its input."""
    return len(i0) == in_size and not f.any() and bool((i0 == np.arange(in_size)).all())


def as_resize_mode(value: Any, label: str) -> ResizeMode:
    """A ``ResizeMode`` from the enum, its name (any case) or its raw MPSGraph value."""
    if isinstance(value, ResizeMode):
        return value
    if isinstance(value, str) and value.upper() in ResizeMode.__members__:
        return ResizeMode[value.upper()]
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and int(value) in (0, 1):
        return ResizeMode(int(value))
    raise DescriptorError(f"{label}: mode {value!r} is not an MPSGraphResizeMode; use mg.ResizeMode.NEAREST (0) "
                          "or mg.ResizeMode.BILINEAR (1)")


def as_rounding_mode(value: Any, label: str) -> ResizeNearestRoundingMode:
    """A ``ResizeNearestRoundingMode`` from the enum, its name (any case) or its raw MPSGraph value."""
    if isinstance(value, ResizeNearestRoundingMode):
        return value
    if isinstance(value, str) and value.upper() in _R.__members__:
        return ResizeNearestRoundingMode[value.upper()]
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= int(value) <= 5:
        return _R(int(value))
    raise DescriptorError(f"{label}: nearest_rounding_mode {value!r} is not an MPSGraphResizeNearestRoundingMode; "
                          "use mg.ResizeNearestRoundingMode " + ", ".join(f"{m.name} ({m.value})" for m in _R))


def _layout(value: Any, label: str) -> Optional[TensorNamedDataLayout]:
    if value is None:
        return None
    try:
        lay = value if isinstance(value, TensorNamedDataLayout) else (
            TensorNamedDataLayout[value.upper()] if isinstance(value, str) else TensorNamedDataLayout(value))
    except (KeyError, ValueError, TypeError):
        lay = None
    if lay not in SPATIAL_AXES:
        raise DescriptorError(f"{label}: layout {value!r} is not one resize allows; use mg.TensorNamedDataLayout "
                              "NCHW, NHWC, CHW, HWC or HW, or None to resize every axis")
    return lay


def _flag(value: Any, what: str, label: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise DescriptorError(f"{label}: {what} must be a bool, got {value!r}")
    return bool(value)


def _floats(value: Any, what: str, label: str, nonzero: bool) -> tuple:
    try:
        values = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        values = ()
    if not values or not all(math.isfinite(v) and (v != 0 or not nonzero) for v in values):
        need = "finite, nonzero floats" if nonzero else "finite floats"
        raise DescriptorError(f"{label}: {what} must be a list of {need}, one per resized axis, got {value!r}")
    return tuple(float(np.float32(v)) for v in values)


def _attrs(label: str, mode: Any, center_result: Any, align_corners: Any, layout: Any, rounding: Any,
           scale: Any, offset: Any) -> dict:
    attrs: dict[str, Any] = {"mode": as_resize_mode(mode, label), "center_result": _flag(center_result, "center_result", label),
             "align_corners": _flag(align_corners, "align_corners", label), "layout": _layout(layout, label),
             "nearest_rounding_mode": as_rounding_mode(rounding, label), "scale": None, "offset": None}
    if attrs["mode"] == ResizeMode.BILINEAR and attrs["nearest_rounding_mode"] != _R.ROUND_PREFER_CEIL:
        raise DescriptorError(f"{label}: nearest_rounding_mode {attrs['nearest_rounding_mode'].name} is for "
                              "mode=NEAREST; BILINEAR does not round")
    if scale is None and offset is None:
        return attrs
    if scale is None or offset is None:
        raise DescriptorError(f"{label}: scale and offset go together (Apple's scaleOffset forms); got only "
                              f"{'scale' if offset is None else 'offset'}")
    if attrs["center_result"] or attrs["align_corners"]:
        raise DescriptorError(f"{label}: center_result and align_corners must be False with scale and offset, "
                              "which place the samples themselves")
    attrs["scale"] = _floats(scale, "scale", label, nonzero=True)
    attrs["offset"] = _floats(offset, "offset", label, nonzero=False)
    if len(attrs["scale"]) != len(attrs["offset"]):
        raise DescriptorError(f"{label}: scale {attrs['scale']} and offset {attrs['offset']} differ in length")
    return attrs


def _check_input(t: ShapedType, what: str, attrs: dict, label: str) -> tuple:
    attrs = {**_NEW, **attrs}
    lay = attrs["layout"]
    rank = SPATIAL_AXES[lay][0] if lay is not None else len(t.shape)
    if len(t.shape) != rank:
        raise ShapeError(f"{label}: {what} has shape {t.shape} of rank {len(t.shape)}, but layout {lay.name} "
                         f"needs rank {rank}")
    axes = resized_axes(attrs, rank)
    if attrs["scale"] is not None and len(attrs["scale"]) != len(axes):
        where = f"layout {lay.name}" if lay is not None else f"a rank-{rank} {what} without a layout"
        raise ShapeError(f"{label}: scale and offset have {len(attrs['scale'])} entries, but {where} resizes "
                         f"{len(axes)} axes {axes}")
    for a, axis_name in zip(axes, "HW" if lay is not None else [f"axis {a}" for a in axes]):
        if t.shape[a] == 0:
            raise ShapeError(f"{label}: {what} {t.shape} has {axis_name} = 0; resize needs at least one element "
                             "to sample")
    return axes


# ------------------------------------------------------------------ resize
def _infer_resize(in_types, attrs):
    x = in_types[0]
    check_float(in_types, ("tensor",))
    label = "resize"
    axes = _check_input(x, "tensor", attrs, label)
    if len(attrs["size"]) != len(axes):
        what = "[newHeight, newWidth]" if attrs["layout"] is not None else f"the result shape ({len(axes)} ints)"
        raise ShapeError(f"{label}: size {list(attrs['size'])} must be {what} for tensor {x.shape}")
    shape = list(x.shape)
    for a, n in zip(axes, attrs["size"]):
        shape[a] = n
    return [ShapedType(tuple(shape), x.dtype)]


def _size(size: Any, label: str, layout: Any) -> tuple:
    try:
        values = [int(v) for v in size]
        ok = (len(values) == 2 or layout is None) and len(values) > 0 and all(not isinstance(v, bool) for v in size)
    except (TypeError, ValueError):
        ok = False
    if not ok or min(values) < 1:
        what = "[newHeight, newWidth], two ints" if layout is not None else "the result shape, ints"
        raise ShapeError(f"{label}: size must be {what} >= 1, got {size!r}")
    return tuple(values)


@defop("resize", swift="resize(_:size:mode:centerResult:alignCorners:layout:name:)",
       objc="resizeTensor:size:mode:centerResult:alignCorners:layout:name:",
       inputs=("tensor",), infer=_infer_resize, family="resize", attrs=("size",) + _KEYS, since=_SINCE)
def resize(g, tensor, size: Sequence[int], mode, center_result: bool = False, align_corners: bool = False,
           layout=None, name: Optional[str] = None, *, nearest_rounding_mode=_R.ROUND_PREFER_CEIL,
           scale: Optional[Sequence[float]] = None, offset: Optional[Sequence[float]] = None):
    """Resample the images in ``tensor`` to ``size`` (MPSGraph
    ``resize(_:size:mode:centerResult:alignCorners:layout:name:)`` and its ``resizeNearest``,
    ``resizeBilinear``, ``scaleOffsetTensor:`` and ``scaleTensor:offsetTensor:`` forms).

    Args:
        tensor: The images (MPSGraph's ``imagesTensor``), float, in ``layout``.
        size: ``[newHeight, newWidth]`` with a layout, else the whole result shape; ints >= 1.
        mode: ``mg.ResizeMode.NEAREST`` or ``BILINEAR``.
        center_result: Half-pixel centres (``src = (o + 0.5) * n / m - 0.5``) instead of top-left alignment.
        align_corners: Corner pixels of input and result coincide (``src = o * (n - 1) / (m - 1)``);
            ``center_result`` then does nothing.
        layout: ``mg.TensorNamedDataLayout`` NCHW, NHWC, CHW, HWC or HW (H and W are resized), or
            None: every axis is (Apple's forms without a layout).
        name: The op's name (MPSGraph's ``name:``).
        nearest_rounding_mode: How NEAREST rounds the source coordinate, an
            ``mg.ResizeNearestRoundingMode`` (MPSGraph's default ROUND_PREFER_CEIL: halves up).
        scale: Per resized axis (``[scaleY, scaleX]`` with a layout); with ``offset``, result
            index ``o`` reads ``src = (o - offset) / scale`` (Apple's ``dst = src * scale + offset``).
        offset: Per resized axis, with ``scale``.

    Returns:
        Tensor: ``tensor``'s shape with the resized axes replaced by ``size``.

    Raises:
        MiniGraphError: a ShapeError, DTypeError or DescriptorError naming the op.
    """
    label = f"resize op {name or 'resize'!r}"
    attrs = _attrs(label, mode, center_result, align_corners, layout, nearest_rounding_mode, scale, offset)
    attrs["size"] = _size(size, label, attrs["layout"])
    tensor = g.as_tensor(tensor, label)
    return g.add_op("resize", [tensor], attrs, name).output


# ------------------------------------------------------------------ gradient
def _infer_resize_gradient(in_types, attrs):
    dy, x = in_types
    check_float(in_types, ("incoming_gradient", "input"))
    label = "resize_gradient"
    axes = _check_input(x, "input", attrs, label)
    rank = len(x.shape)
    if len(dy.shape) != rank:
        raise ShapeError(f"{label}: incoming_gradient has shape {dy.shape} of rank {len(dy.shape)}, but input "
                         f"{x.shape} has rank {rank}")
    for a in range(rank):
        if a not in axes and -1 not in (dy.shape[a], x.shape[a]) and dy.shape[a] != x.shape[a]:
            raise ShapeError(f"{label}: incoming_gradient {dy.shape} and input {x.shape} differ on axis {a}, which "
                             f"is not one of the resized axes {axes}")
        if a in axes and dy.shape[a] == 0:
            raise ShapeError(f"{label}: incoming_gradient {dy.shape} has an empty resized axis {a}")
    return [ShapedType(x.shape, dy.dtype)]


@defop("resize_gradient", swift="resize(withGradientTensor:input:mode:centerResult:alignCorners:layout:name:)",
       objc="resizeWithGradientTensor:input:mode:centerResult:alignCorners:layout:name:",
       inputs=("incoming_gradient", "input"), infer=_infer_resize_gradient, family="resize",
       role="data_gradient", forward="resize", attrs=_KEYS, since=_SINCE)
def resize_gradient(g, incoming_gradient, input, mode, center_result: bool = False, align_corners: bool = False,
                    layout=None, name: Optional[str] = None, *, nearest_rounding_mode=_R.ROUND_PREFER_CEIL,
                    scale: Optional[Sequence[float]] = None, offset: Optional[Sequence[float]] = None):
    """Gradient of ``resize`` with respect to its images (MPSGraph
    ``resize(withGradientTensor:input:mode:centerResult:alignCorners:layout:name:)`` and its
    ``resizeNearest``, ``resizeBilinear`` and scale-offset forms): each result element's gradient
    goes back to the source elements it read, with their weights.

    Args:
        incoming_gradient: The gradient of the resize's result.
        input: The forward resize's images (only its shape is read).
        mode: As the forward op.
        center_result: As the forward op.
        align_corners: As the forward op.
        layout: As the forward op.
        name: The op's name (MPSGraph's ``name:``).
        nearest_rounding_mode: As the forward op.
        scale: As the forward op.
        offset: As the forward op.

    Returns:
        Tensor: the gradient, with ``input``'s shape.

    Raises:
        MiniGraphError: a ShapeError, DTypeError or DescriptorError naming the op.
    """
    label = f"resize_gradient op {name or 'resize_gradient'!r}"
    attrs = _attrs(label, mode, center_result, align_corners, layout, nearest_rounding_mode, scale, offset)
    dy = g.as_tensor(incoming_gradient, label)
    x = g.as_tensor(input, label, like=dy)
    return g.add_op("resize_gradient", [dy, x], attrs, name).output


def _same_flags(op) -> dict:
    return {k: op.attrs.get(k, _NEW.get(k)) for k in _KEYS}


@gradient("resize")
def _resize_grad(g, op, dy, wanted):
    return [resize_gradient(g, dy, op.inputs[0], **_same_flags(op)) if wanted[0] else None]


@gradient("resize_gradient")
def _resize_gradient_grad(g, op, u, wanted):
    # linear in incoming_gradient, whose adjoint is the resize; the input's values are not read
    dy, x = op.inputs
    axes = resized_axes(op.attrs, len(dy.shape))
    size = [dy.shape[a] for a in axes]
    if wanted[0] and -1 in size:
        raise ShapeError(f"the gradient of resize_gradient op {op.name!r} is a resize to the incoming gradient's "
                         f"resized axes, which its shape {dy.shape} leaves open (-1)")
    return [resize(g, u, size, **_same_flags(op)) if wanted[0] else None, None]
