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
gradient, built of stencils, pads, reshapes and slices (``_stencil_gradient``).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..descriptors import PaddingMode, PaddingStyle, ReductionMode, StencilOpDescriptor, frozen_copy
from ..errors import DTypeError, NotDifferentiableError, ShapeError
from ..types import ShapedType, int32
from .padding import _check_paddings
from .registry import defop, gradient

_URL = "https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/"


def _label(type: str, name) -> str:
    return f"{type} op {name or type!r}"


def geometry(d: StencilOpDescriptor, source: Sequence[int], window: Sequence[int]) -> list:
    """Per dimension of the source's last four: ``(lo, hi, start, out)`` (sizes may be -1: then
    ``out`` is -1, and the padding of a SAME style only a placeholder)."""
    out = []
    for a, (n, k) in enumerate(zip(source[-4:], window)):
        s, dil = d.strides[a], d.dilation_rates[a]
        e = dil * (max(k, 1) - 1) + 1
        lo, hi, start = 0, 0, 0
        style = d.padding_style
        if style in (PaddingStyle.EXPLICIT, PaddingStyle.EXPLICIT_OFFSET):
            lo, hi = d.explicit_padding[2 * a], d.explicit_padding[2 * a + 1]
            start = d.offsets[a] if style == PaddingStyle.EXPLICIT_OFFSET else 0
        elif style in (PaddingStyle.TF_SAME, PaddingStyle.ONNX_SAME_LOWER) and n != -1:
            total = max((-(-n // s) - 1) * s + e - n, 0)
            lo = total // 2 if style == PaddingStyle.TF_SAME else total - total // 2
            hi = total - lo
        if n == -1 or k == -1:  # known when the graph runs
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


def _valid(d: StencilOpDescriptor, **fields) -> StencilOpDescriptor:
    """A SUM stencil over an already padded source: EXPLICIT_OFFSET, ZERO, the given fields."""
    v = StencilOpDescriptor(padding_style=PaddingStyle.EXPLICIT_OFFSET, **fields)
    v.validate()
    return v


def _fit(g, t, axis: int, length: int):
    """``t`` cut or zero-padded at the end of ``axis`` to ``length``."""
    n = t.shape[axis]
    if n > length or n == -1:  # a dynamic size is at least the length here
        return g.slice(t, axis, 0, length)
    if n < length:
        lo = [0] * len(t.shape)
        hi = [0] * len(t.shape)
        hi[axis] = length - n
        return g.pad_tensor(t, PaddingMode.ZERO, lo, hi)
    return t


def _spread(g, t, axis: int, step: int, start: int, length: int):
    """``t`` along ``axis`` with element ``i`` moved to ``start + i * step`` and zeros between,
    cut or padded to ``length`` (reshape, pad and slice: no gather)."""
    shape = list(t.shape)
    n = shape[axis]
    if step > 1:
        t = g.expand_dims(t, [axis + 1])
        hi = [0] * len(t.shape)
        hi[axis + 1] = step - 1
        t = g.pad_tensor(t, PaddingMode.ZERO, [0] * len(t.shape), hi)
        t = g.reshape(t, shape[:axis] + [n * step] + shape[axis + 1:])
    if start:
        lo = [0] * len(t.shape)
        lo[axis] = start
        t = g.pad_tensor(t, PaddingMode.ZERO, lo, [0] * len(t.shape))
    return _fit(g, t, axis, length)


def _source_gradient(g, dy, w, padded_shape, d):
    """dP[p] = sum_j D[p - j d] w[j], D being dy spread to ``start + i s``: a stencil of D, padded
    before by the dilated window, with the window reversed."""
    r = len(padded_shape)
    spread = dy
    for a in range(4):
        ax = r - 4 + a
        spread = _spread(g, spread, ax, d.strides[a], d.offsets[a], padded_shape[ax])
    lo = [0] * (r - 4) + [d.dilation_rates[a] * (w.shape[a] - 1) for a in range(4)]
    spread = g.pad_tensor(spread, PaddingMode.ZERO, lo, [0] * r)
    return g.stencil(spread, g.reverse(w, [0, 1, 2, 3]), _valid(d, dilation_rates=d.dilation_rates))


def _weights_gradient(g, dy, p, window, d):
    """dW[j] = sum_{b, i} dy[b, i] P[b, start + i s + j d]: a stencil of P whose window is dy
    (strides and dilations swapped); batch elements are laid end to end along the first window
    dimension, each block of P padded to a multiple of the stride so the window's steps line up."""
    s0 = d.strides[0]
    if len(p.shape) > 4:
        lead = p.shape[:-4]
        batch = -1 if -1 in lead else int(np.prod(lead))
        q = -(-p.shape[-4] // s0)
        p = _fit(g, g.reshape(p, [batch] + list(p.shape[-4:])), 1, q * s0)
        p = g.reshape(p, [-1 if batch == -1 else batch * q * s0] + list(p.shape[-3:]))
        dy = _fit(g, g.reshape(dy, [batch] + list(dy.shape[-4:])), 1, q)
        dy = g.reshape(dy, [-1 if batch == -1 else batch * q] + list(dy.shape[-3:]))
    extra = d.offsets[0] + d.dilation_rates[0] * (window[0] - 1) + s0  # room for the last window's reads
    p = g.pad_tensor(p, PaddingMode.ZERO, [0, 0, 0, 0], [extra, 0, 0, 0])
    dw = g.stencil(p, dy, _valid(d, offsets=d.offsets, strides=d.dilation_rates, dilation_rates=d.strides))
    for a in range(4):
        dw = _fit(g, dw, a, window[a])
    return dw


@gradient("stencil")
def _stencil_gradient(g, op, dy, wanted):
    """SUM only: dx through the padded source's gradient (a stencil of the spread incoming
    gradient with the window reversed, then ``pad_gradient``), dW a stencil of the padded source
    with the incoming gradient as its window."""
    d = op.attrs["descriptor"]
    if d.reduction_mode != ReductionMode.SUM:
        raise NotDifferentiableError(f"stencil op {op.name!r} (built at {op.location}): reduction_mode "
                                     f"{d.reduction_mode.name} has no gradient; only SUM is differentiable")
    x, w = op.inputs
    if -1 in x.shape[-4:]:
        raise NotDifferentiableError(f"stencil op {op.name!r} (built at {op.location}): the gradient needs the "
                                     f"source's last four sizes static, got {x.shape}")
    left, right = padding_lists(d, x.shape, w.shape)
    geo = geometry(d, x.shape, w.shape)
    v = _valid(d, offsets=tuple(gg[2] for gg in geo), strides=d.strides, dilation_rates=d.dilation_rates)
    mode = d.boundary_mode
    padded = x if not any(left + right) else g.pad_tensor(x, mode, left, right, d.padding_constant)
    dx = dw = None
    if wanted[0]:
        dxp = _source_gradient(g, dy, w, list(padded.shape), v)
        dx = dxp if padded is x else g.pad_gradient(dxp, x, mode, left, right)
    if wanted[1]:
        dw = _weights_gradient(g, dy, padded, list(w.shape), v)
    return [dx, dw]
