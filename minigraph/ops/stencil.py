"""The stencil op (MPSGraphStencilOps): a weighted reduction of a 4-D window over the source's last
four dimensions, and its two gradient ops.

Apple's header gives ``y[i] = reduction { x[i + j] * w[j] }`` over the window of the 4-D weights,
with the strides, dilations, padding style, boundary mode and offsets of a
``StencilOpDescriptor``; leading dimensions beyond the last four are batch dimensions. Here, per
dimension ``a`` of the last four (source size ``n``, window ``k``, stride ``s``, dilation ``d``,
``e = d (k - 1) + 1``):

* the source is padded by ``lo`` before and ``hi`` after, the padding filled as ``boundary_mode``
  says (the ``pad_tensor`` index maps, ops/padding.py; ``padding_constant`` for CONSTANT);
* window ``i`` reads the padded position ``start + i s + j d`` for window position ``j``, and
  ``out = (n + lo + hi - start - e) // s + 1``;
* EXPLICIT: ``lo, hi = explicit_padding[2a], explicit_padding[2a + 1]``, ``start = 0``;
  EXPLICIT_OFFSET: the same padding and ``start = offsets[a]``; TF_VALID: no padding;
  TF_SAME: ``out = ceil(n / s)``, the padding ``max((out - 1) s + e - n, 0)`` split with the
  smaller half before; ONNX_SAME_LOWER: the same with the larger half before.

Reductions: SUM, PRODUCT, MIN, MAX of the products ``x * w`` (MIN and MAX propagate NaN);
ARGUMENT_MIN / ARGUMENT_MAX give the row-major index into the window of the first minimal /
maximal product (a NaN counts as the extreme), as int32. Floating types only. Only SUM has a
gradient: ``stencil_source_gradient`` (toward the padded source, then folded back by
``pad_gradient``) and ``stencil_weights_gradient`` (from the padded source).
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..descriptors import PaddingMode, PaddingStyle, ReductionMode, StencilOpDescriptor, frozen_copy
from ..errors import DTypeError, NotDifferentiableError, ShapeError
from ..types import ShapedType, as_shape, int32
from .padding import _check_paddings
from .registry import defop, gradient

_URL = "https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/"


def _label(type: str, name) -> str:
    return f"{type} op {name or type!r}"


def geometry(d: StencilOpDescriptor, source: Sequence[int], window: Sequence[int]) -> list:
    """Per dimension of the source's last four: ``(lo, hi, start, out)`` (sizes may be -1)."""
    out = []
    for a, (n, k) in enumerate(zip(source[-4:], window)):
        s, dil = d.strides[a], d.dilation_rates[a]
        e = dil * (k - 1) + 1
        lo, hi, start = 0, 0, 0
        style = d.padding_style
        if style in (PaddingStyle.EXPLICIT, PaddingStyle.EXPLICIT_OFFSET):
            lo, hi = d.explicit_padding[2 * a], d.explicit_padding[2 * a + 1]
            start = d.offsets[a] if style == PaddingStyle.EXPLICIT_OFFSET else 0
        elif style in (PaddingStyle.TF_SAME, PaddingStyle.ONNX_SAME_LOWER) and n != -1:
            total = max((-(-n // s) - 1) * s + e - n, 0)
            lo = total // 2 if style == PaddingStyle.TF_SAME else total - total // 2
            hi = total - lo
        if n == -1:
            out.append((lo, hi, start, -1))
            continue
        span = n + lo + hi - start - e
        if span < 0:
            raise ShapeError(f"dimension {a - 4} of the source (size {n}, padded to {n + lo + hi}, read from "
                             f"offset {start}) is shorter than the window's {k} positions dilated by {dil} "
                             f"({e} elements)")
        out.append((lo, hi, start, span // s + 1))
    return out


def _check(src: ShapedType, w: ShapedType, d: StencilOpDescriptor) -> list:
    if len(src.shape) < 4:
        raise ShapeError(f"source must have rank >= 4 (the stencil runs over its last 4 dimensions), got shape "
                         f"{src.shape}")
    if len(w.shape) != 4:
        raise ShapeError(f"weights must have rank 4 (the window), got shape {w.shape}")
    if -1 in w.shape:
        raise ShapeError(f"weights must have a static shape (the window), got {w.shape}")
    if 0 in w.shape:
        raise ShapeError(f"weights {w.shape} make an empty window; each dimension needs at least 1 position")
    for t, what in ((src, "source"), (w, "weights")):
        if not t.dtype.is_floating:
            raise DTypeError(f"{what} must be a floating type (float32 or float16), got {t.dtype.name}")
    if src.dtype != w.dtype:
        raise DTypeError(f"source ({src.dtype.name}) and weights ({w.dtype.name}) must have the same dtype")
    geo = geometry(d, src.shape, w.shape)
    mode = PaddingMode.ZERO if d.boundary_mode == PaddingMode.CONSTANT else d.boundary_mode
    _check_paddings(src.shape[-4:], mode, [g[0] for g in geo], [g[1] for g in geo])
    return geo


def padding_lists(d: StencilOpDescriptor, source: Sequence[int], window: Sequence[int]) -> tuple:
    """``(left, right)`` paddings of every source dimension (0 for the batch dimensions)."""
    geo = geometry(d, source, window)
    lead = [0] * (len(source) - 4)
    return lead + [g[0] for g in geo], lead + [g[1] for g in geo]


def _infer_stencil(in_types, attrs):
    src, w = in_types
    d = attrs["descriptor"]
    geo = _check(src, w, d)
    dt = int32 if d.reduction_mode in (ReductionMode.ARGUMENT_MIN, ReductionMode.ARGUMENT_MAX) else src.dtype
    return [ShapedType(tuple(src.shape[:-4]) + tuple(g[3] for g in geo), dt)]


@defop("stencil", swift="stencil(withSourceTensor:weightsTensor:descriptor:name:)",
       objc="stencilWithSourceTensor:weightsTensor:descriptor:name:", inputs=("source", "weights"),
       infer=_infer_stencil, family="image", attrs=("descriptor",), since=("12.0", "15.0"))
def stencil(g, source, weights, descriptor: Optional[StencilOpDescriptor] = None, name: Optional[str] = None):
    """The reduction ``descriptor.reduction_mode`` of ``source * weights`` over every position of
    the 4-D window ``weights`` slid over the source's last four dimensions (MPSGraph
    ``stencil(withSourceTensor:weightsTensor:descriptor:name:)``; padding, offsets and
    reductions: module docstring). SUM with ZERO boundaries is a 4-D cross-correlation.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/stencil(withsourcetensor:weightstensor:descriptor:name:)
    """
    label = _label("stencil", name)
    desc = frozen_copy(descriptor, StencilOpDescriptor, label)
    return g.add_op("stencil", [g.as_tensor(source, label), g.as_tensor(weights, label)], {"descriptor": desc},
                    name).output


def _infer_source_grad(in_types, attrs):
    dy, w = in_types
    d, shape = attrs["descriptor"], attrs["output_shape"]
    geo = geometry(d, shape, w.shape)
    want = tuple(shape[:-4]) + tuple(g[3] for g in geo)
    if len(dy.shape) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(dy.shape, want)):
        raise ShapeError(f"incoming gradient {dy.shape} is not the stencil result {want} of a padded source "
                         f"{tuple(shape)} and weights {w.shape}")
    return [ShapedType(tuple(dy.shape[i] if s == -1 else s for i, s in enumerate(shape)), dy.dtype)]


def _infer_weights_grad(in_types, attrs):
    dy, src = in_types
    return [ShapedType(attrs["output_shape"], dy.dtype)]


def _valid(d: StencilOpDescriptor) -> StencilOpDescriptor:
    """The descriptor of a stencil over an already padded source: EXPLICIT_OFFSET, no padding."""
    v = d.copy()
    v.padding_style, v.explicit_padding = PaddingStyle.EXPLICIT_OFFSET, (0,) * 8
    v.offsets = d.offsets if d.padding_style == PaddingStyle.EXPLICIT_OFFSET else (0, 0, 0, 0)
    v.boundary_mode, v.reduction_mode = PaddingMode.ZERO, ReductionMode.SUM
    return v


@defop("stencil_source_gradient", swift="stencilSourceGradient(_:weights:outputShape:descriptor:name:)",
       objc="stencilSourceGradient:weights:outputShape:descriptor:name:", inputs=("incoming_gradient", "weights"),
       infer=_infer_source_grad, family="image", role="data_gradient", forward="stencil", internal=True,
       differentiable=False, attrs=("output_shape", "descriptor"), since=("12.0", "15.0"))
def stencil_source_gradient(g, incoming_gradient, weights, output_shape: Sequence[int],
                            descriptor: StencilOpDescriptor, name: Optional[str] = None):
    """The gradient of a SUM stencil toward its padded source of ``output_shape``: each window
    position adds ``incoming_gradient * weights`` back onto the element it read (no padding:
    ``descriptor`` as for an already padded source)."""
    label = _label("stencil_source_gradient", name)
    desc = frozen_copy(descriptor, StencilOpDescriptor, label)
    return g.add_op("stencil_source_gradient", [g.as_tensor(incoming_gradient, label), g.as_tensor(weights, label)],
                    {"output_shape": as_shape(output_shape), "descriptor": desc}, name).output


@defop("stencil_weights_gradient", swift="stencilWeightsGradient(_:source:outputShape:descriptor:name:)",
       objc="stencilWeightsGradient:source:outputShape:descriptor:name:", inputs=("incoming_gradient", "source"),
       infer=_infer_weights_grad, family="image", role="weights_gradient", forward="stencil", internal=True,
       differentiable=False, attrs=("output_shape", "descriptor"), since=("12.0", "15.0"))
def stencil_weights_gradient(g, incoming_gradient, source, output_shape: Sequence[int],
                             descriptor: StencilOpDescriptor, name: Optional[str] = None):
    """The gradient of a SUM stencil toward its weights: window position ``j`` sums
    ``incoming_gradient * source`` over every window (and batch element), ``source`` already padded."""
    label = _label("stencil_weights_gradient", name)
    desc = frozen_copy(descriptor, StencilOpDescriptor, label)
    return g.add_op("stencil_weights_gradient", [g.as_tensor(incoming_gradient, label), g.as_tensor(source, label)],
                    {"output_shape": as_shape(output_shape), "descriptor": desc}, name).output


@gradient("stencil")
def _stencil_gradient(g, op, dy, wanted):
    d = op.attrs["descriptor"]
    if d.reduction_mode != ReductionMode.SUM:
        raise NotDifferentiableError(f"stencil op {op.name!r} (built at {op.location}): reduction_mode "
                                     f"{d.reduction_mode.name} has no gradient; only SUM is differentiable")
    x, w = op.inputs
    left, right = padding_lists(d, x.shape, w.shape)
    mode = d.boundary_mode
    padded = x if not any(left + right) else g.pad_tensor(x, mode, left, right, d.padding_constant)
    valid = _valid(d)
    dx = dw = None
    if wanted[0]:
        dxp = g.stencil_source_gradient(dy, w, padded.shape, valid)
        dx = dxp if padded is x else g.pad_gradient(dxp, x, mode, left, right)
    if wanted[1]:
        dw = g.stencil_weights_gradient(dy, padded, w.shape, valid)
    return [dx, dw]
