"""Resize (nearest and bilinear) and its gradient (MPSGraphResizeOps), docs/resize.md.

Each result index ``o`` of a spatial axis (input size ``n``, result size ``m``) reads the source
coordinate, as Apple's header describes the two flags:

- ``align_corners``: ``src = o * (n - 1) / (m - 1)`` (0 when m = 1); ``center_result`` does nothing;
- ``center_result`` only: ``src = (o + 0.5) * n / m - 0.5`` (half-pixel, OpenCV / TensorFlow 2);
- neither: ``src = o * n / m`` (TensorFlow 1's top-left alignment).

NEAREST rounds ``src`` with MPSGraph's documented default, RoundPreferCeil (half toward +inf:
``floor(src + 0.5)``), clamped to the input. BILINEAR clamps ``src`` to ``[0, n - 1]`` and
mixes the two neighbours ``i0 = floor(src)`` and ``i0 + 1`` with weights ``1 - f`` and ``f``
(a weight of exactly 0 reads nothing, so an infinite neighbour does not make a NaN). The axes
are separable: W is resized first, then H. ``src`` is kept as the exact fraction
``(A * o + B) / DEN`` of integers, so rounding ties are decided exactly, on every backend.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..descriptors import ResizeMode, TensorNamedDataLayout
from ..errors import DescriptorError, ShapeError
from ..types import ShapedType
from .convolution import check_float
from .registry import defop, gradient

_L = TensorNamedDataLayout
# layout -> (rank, (H axis, W axis)); the layouts MPSGraph's resize documents
SPATIAL_AXES = {_L.NCHW: (4, (2, 3)), _L.NHWC: (4, (1, 2)), _L.CHW: (3, (1, 2)), _L.HWC: (3, (0, 1)),
                _L.HW: (2, (0, 1))}
_SINCE = ("11.0", "14.0")  # resizeTensor:size:mode:centerResult:alignCorners:layout:name: and its gradient


def coefficients(in_size: int, out_size: int, center_result: bool, align_corners: bool) -> tuple[int, int, int]:
    """``(A, B, DEN)``: result index ``o`` reads source coordinate ``(A * o + B) / DEN`` (DEN even, > 0)."""
    if align_corners:
        return (2 * (in_size - 1), 0, 2 * (out_size - 1)) if out_size > 1 else (0, 0, 2)
    if center_result:
        return 2 * in_size, in_size - out_size, 2 * out_size
    return 2 * in_size, 0, 2 * out_size


def taps(in_size: int, out_size: int, mode: ResizeMode, center_result: bool, align_corners: bool,
         dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per result index: ``(i0, i1, f)``, the two source indices and the weight of ``i1``, one
    division in ``dtype`` (``f = 0`` and ``i1 = i0`` where one source element is read: always
    for NEAREST)."""
    dtype = np.dtype(dtype)
    a, b, den = coefficients(in_size, out_size, center_result, align_corners)
    num = a * np.arange(out_size, dtype=np.int64) + b
    if mode == ResizeMode.NEAREST:
        i0 = np.clip((num + den // 2) // den, 0, in_size - 1)
        return i0, i0, np.zeros(out_size, dtype)
    num = np.maximum(num, 0)
    i0 = num // den
    rem = num - i0 * den
    edge = i0 >= in_size - 1
    i0 = np.where(edge, in_size - 1, i0)
    f = np.where(edge, dtype.type(0), rem.astype(dtype) / dtype.type(den)).astype(dtype)
    i1 = np.where(f > 0, i0 + 1, i0)
    return i0, i1, f


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


def _layout(value: Any, label: str) -> TensorNamedDataLayout:
    try:
        lay = value if isinstance(value, TensorNamedDataLayout) else (
            TensorNamedDataLayout[value.upper()] if isinstance(value, str) else TensorNamedDataLayout(value))
    except (KeyError, ValueError, TypeError):
        lay = None
    if lay not in SPATIAL_AXES:
        raise DescriptorError(f"{label}: layout {value!r} is not one resize allows; use mg.TensorNamedDataLayout "
                              "NCHW, NHWC, CHW, HWC or HW")
    return lay


def _flag(value: Any, what: str, label: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise DescriptorError(f"{label}: {what} must be a bool, got {value!r}")
    return bool(value)


def _attrs(label: str, mode: Any, center_result: Any, align_corners: Any, layout: Any) -> dict:
    return {"mode": as_resize_mode(mode, label), "center_result": _flag(center_result, "center_result", label),
            "align_corners": _flag(align_corners, "align_corners", label), "layout": _layout(layout, label)}


def _check_layout(t: ShapedType, what: str, layout: TensorNamedDataLayout) -> tuple:
    rank, axes = SPATIAL_AXES[layout]
    if len(t.shape) != rank:
        raise ShapeError(f"{what} has shape {t.shape} of rank {len(t.shape)}, but layout {layout.name} needs rank "
                         f"{rank}")
    for a, name in zip(axes, "HW"):
        if t.shape[a] == 0:
            raise ShapeError(f"{what} {t.shape} has {name} = 0; resize needs at least one element to sample")
    return axes


# ------------------------------------------------------------------ resize
def _infer_resize(in_types, attrs):
    x = in_types[0]
    check_float(in_types, ("tensor",))
    axes = _check_layout(x, "tensor", attrs["layout"])
    shape = list(x.shape)
    for a, n in zip(axes, attrs["size"]):
        shape[a] = n
    return [ShapedType(tuple(shape), x.dtype)]


def _size(size: Any, label: str) -> tuple:
    try:
        values = [int(v) for v in size]
        ok = len(values) == 2 and all(not isinstance(v, bool) for v in size)
    except (TypeError, ValueError):
        ok = False
    if not ok or min(values) < 1:
        raise ShapeError(f"{label}: size must be [newHeight, newWidth], two ints >= 1, got {size!r}")
    return tuple(values)


@defop("resize", swift="resize(_:size:mode:centerResult:alignCorners:layout:name:)",
       objc="resizeTensor:size:mode:centerResult:alignCorners:layout:name:",
       inputs=("tensor",), infer=_infer_resize, family="resize",
       attrs=("size", "mode", "center_result", "align_corners", "layout"), since=_SINCE)
def resize(g, tensor, size: Sequence[int], mode, center_result: bool, align_corners: bool,
           layout, name: Optional[str] = None):
    """Resample the images in ``tensor`` to ``size = [newHeight, newWidth]`` (MPSGraph
    ``resize(_:size:mode:centerResult:alignCorners:layout:name:)``).

    Args:
        tensor: The images (MPSGraph's ``imagesTensor``), float, in ``layout``.
        size: ``[newHeight, newWidth]``, ints >= 1.
        mode: ``mg.ResizeMode.NEAREST`` (rounds half up, MPSGraph's RoundPreferCeil) or ``BILINEAR``.
        center_result: Half-pixel centres (``src = (o + 0.5) * n / m - 0.5``) instead of top-left alignment.
        align_corners: Corner pixels of input and result coincide (``src = o * (n - 1) / (m - 1)``);
            ``center_result`` then does nothing.
        layout: ``mg.TensorNamedDataLayout`` NCHW, NHWC, CHW, HWC or HW.
        name: The op's name (MPSGraph's ``name:``).

    Returns:
        Tensor: ``tensor``'s shape with H and W replaced by ``size``.

    Raises:
        MiniGraphError: a ShapeError, DTypeError or DescriptorError naming the op.
    """
    label = f"resize op {name or 'resize'!r}"
    attrs = dict(size=_size(size, label), **_attrs(label, mode, center_result, align_corners, layout))
    tensor = g.as_tensor(tensor, label)
    return g.add_op("resize", [tensor], attrs, name).output


# ------------------------------------------------------------------ gradient
def _infer_resize_gradient(in_types, attrs):
    dy, x = in_types
    check_float(in_types, ("incoming_gradient", "input"))
    axes = _check_layout(x, "input", attrs["layout"])
    rank = SPATIAL_AXES[attrs["layout"]][0]
    if len(dy.shape) != rank:
        raise ShapeError(f"incoming_gradient has shape {dy.shape} of rank {len(dy.shape)}, but layout "
                         f"{attrs['layout'].name} needs rank {rank}")
    for a in range(rank):
        if a not in axes and -1 not in (dy.shape[a], x.shape[a]) and dy.shape[a] != x.shape[a]:
            raise ShapeError(f"incoming_gradient {dy.shape} and input {x.shape} differ on axis {a}, which is not "
                             f"one of the resized axes {axes} of layout {attrs['layout'].name}")
        if a in axes and dy.shape[a] == 0:
            raise ShapeError(f"incoming_gradient {dy.shape} has an empty resized axis {a}")
    return [ShapedType(x.shape, dy.dtype)]


@defop("resize_gradient", swift="resize(withGradientTensor:input:mode:centerResult:alignCorners:layout:name:)",
       objc="resizeWithGradientTensor:input:mode:centerResult:alignCorners:layout:name:",
       inputs=("incoming_gradient", "input"), infer=_infer_resize_gradient, family="resize",
       role="data_gradient", forward="resize", attrs=("mode", "center_result", "align_corners", "layout"),
       since=_SINCE)
def resize_gradient(g, incoming_gradient, input, mode, center_result: bool, align_corners: bool,
                    layout, name: Optional[str] = None):
    """Gradient of ``resize`` with respect to its images (MPSGraph
    ``resize(withGradientTensor:input:mode:centerResult:alignCorners:layout:name:)``): each
    result element's gradient goes back to the source elements it read, with their weights.

    Args:
        incoming_gradient: The gradient of the resize's result.
        input: The forward resize's images (only its shape is read).
        mode: As the forward op.
        center_result: As the forward op.
        align_corners: As the forward op.
        layout: As the forward op.
        name: The op's name (MPSGraph's ``name:``).

    Returns:
        Tensor: the gradient, with ``input``'s shape.

    Raises:
        MiniGraphError: a ShapeError, DTypeError or DescriptorError naming the op.
    """
    label = f"resize_gradient op {name or 'resize_gradient'!r}"
    attrs = _attrs(label, mode, center_result, align_corners, layout)
    dy = g.as_tensor(incoming_gradient, label)
    x = g.as_tensor(input, label, like=dy)
    return g.add_op("resize_gradient", [dy, x], attrs, name).output


def _same_flags(op) -> dict:
    return {k: op.attrs[k] for k in ("mode", "center_result", "align_corners", "layout")}


@gradient("resize")
def _resize_grad(g, op, dy, wanted):
    return [resize_gradient(g, dy, op.inputs[0], **_same_flags(op)) if wanted[0] else None]


@gradient("resize_gradient")
def _resize_gradient_grad(g, op, u, wanted):
    # linear in incoming_gradient, whose adjoint is the resize; the input's values are not read
    dy, x = op.inputs
    axes = SPATIAL_AXES[op.attrs["layout"]][1]
    size = [dy.shape[a] for a in axes]
    if wanted[0] and -1 in size:
        raise ShapeError(f"the gradient of resize_gradient op {op.name!r} is a resize to the incoming gradient's "
                         f"H and W, which its shape {dy.shape} leaves open (-1)")
    return [resize(g, u, size, **_same_flags(op)) if wanted[0] else None, None]
