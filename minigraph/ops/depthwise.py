"""Depthwise 2D convolution: forward, data gradient, weights gradient (MPSGRAPH.md §2-§4).

Layouts: data NCHW ``[N, C, H, W]`` or NHWC ``[N, H, W, C]``; weights OIHW ``[M, C, kH, kW]`` or
HWIO ``[kH, kW, C, M]``, where M is the channel multiplier (MPSGraph: "'O' index is channel
multiplier index"). Output channel ``o = c*M + m`` reads input channel ``c`` with filter
``(m, c)``. Padding per style as in §3 (``geometry.resolve_axis``).

The gradient ops take ``output_shape`` because with a stride above 1 several input sizes give
the same output size, and because dy and x say nothing about the kernel size: for the weights
gradient, ``output_shape`` is the only source of kH, kW and M. Both recompute the padding
from the forward geometry (data gradient: input size from ``output_shape``; weights gradient:
input size from ``source``, kernel size from ``output_shape``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from ..descriptors import (Convolution2DOpDescriptor, DepthwiseConvolution2DOpDescriptor,
                           TensorNamedDataLayout, frozen_copy)
from ..errors import DescriptorError, DTypeError, ShapeError
from ..types import ShapedType
from .geometry import effective_kernel, resolve_axis
from ._util import register_convolution_gradients
from .registry import defop

L = TensorNamedDataLayout
FWD = "depthwise_convolution_2d"
DATA_GRAD = "depthwise_convolution_2d_data_gradient"
WEIGHTS_GRAD = "depthwise_convolution_2d_weights_gradient"

# axis positions of (N, C, H, W) in a data layout and of (M, C, kH, kW) in a weights layout
DATA_AXES = {L.NCHW: (0, 1, 2, 3), L.NHWC: (0, 3, 1, 2)}
WEIGHTS_AXES = {L.OIHW: (0, 1, 2, 3), L.HWIO: (3, 2, 0, 1)}
_WEIGHTS_LETTERS = {L.OIHW: "[M, C, kH, kW]", L.HWIO: "[kH, kW, C, M]"}


# ------------------------------------------------------------------------- geometry
@dataclass(frozen=True)
class DepthwiseGeometry:
    """Every size of one depthwise convolution, in layout-free terms (-1: unknown)."""

    n: int
    c: int
    m: int
    h: int
    w: int
    kh: int
    kw: int
    oh: int
    ow: int
    sy: int
    sx: int
    dy: int
    dx: int
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int

    def data_shape(self, layout) -> tuple:
        """The forward source shape ``[N, C, H, W]`` in ``layout``."""
        return _place(DATA_AXES[layout], (self.n, self.c, self.h, self.w))

    def out_shape(self, layout) -> tuple:
        """The forward result shape ``[N, C*M, OH, OW]`` in ``layout``."""
        cm = self.c * self.m if self.c >= 0 and self.m >= 0 else -1
        return _place(DATA_AXES[layout], (self.n, cm, self.oh, self.ow))

    def weights_shape(self, layout) -> tuple:
        return _place(WEIGHTS_AXES[layout], (self.m, self.c, self.kh, self.kw))


def _place(axes: Sequence[int], values: Sequence[int]) -> tuple:
    out = [0] * 4
    for a, v in zip(axes, values):
        out[a] = v
    return tuple(out)


def _pick(shape: Sequence[int], axes: Sequence[int]) -> tuple:
    return tuple(shape[a] for a in axes)


def depthwise_geometry(desc: DepthwiseConvolution2DOpDescriptor, data_shape: Sequence[int],
                       kernel_hw: tuple, m: int) -> DepthwiseGeometry:
    """Resolve padding and output size of the forward op from the source shape (in the
    descriptor's data layout), the kernel size and the multiplier (MPSGRAPH.md §3)."""
    n, c, h, w = _pick(data_shape, DATA_AXES[desc.data_layout])
    kh, kw = kernel_hw
    pt, pb, oh = _axis(h, kh, desc.stride_in_y, desc.dilation_rate_in_y, desc,
                       desc.padding_top, desc.padding_bottom, "H")
    pl, pr, ow = _axis(w, kw, desc.stride_in_x, desc.dilation_rate_in_x, desc,
                       desc.padding_left, desc.padding_right, "W")
    return DepthwiseGeometry(n, c, m, h, w, kh, kw, oh, ow, desc.stride_in_y, desc.stride_in_x,
                             desc.dilation_rate_in_y, desc.dilation_rate_in_x, pt, pb, pl, pr)


def _axis(size, k, s, d, desc, before, after, axis):
    if k < 0:
        return 0, 0, -1
    pb, pa, out = resolve_axis(size, k, s, d, desc.padding_style, before, after, axis=axis)
    if size >= 0 and out <= 0:
        raise ShapeError(f"{axis}: input size {size} with kernel {k} (dilated {effective_kernel(k, d)}), "
                         f"stride {s} and padding style {desc.padding_style.name} gives output size {out}; "
                         "it must be >= 1")
    return pb, pa, out


# ------------------------------------------------------------------------- validation helpers
def _check_common(types: Sequence[ShapedType], names: Sequence[str]) -> None:
    for t, nm in zip(types, names):
        if len(t.shape) != 4:
            raise ShapeError(f"{nm} must be rank 4, got shape {t.shape} (rank {len(t.shape)})")
    first = types[0].dtype
    for t, nm in zip(types[1:], names[1:]):
        if t.dtype != first:
            raise DTypeError(f"{names[0]} is {first.name} but {nm} is {t.dtype.name}; they must have the "
                             "same floating-point dtype (no implicit promotion; cast one with g.cast)")
    if not first.is_floating:
        raise DTypeError(f"needs floating-point tensors (float16, float32, float64), got {first.name}")


def _positive(value: int, what: str, allow_zero: bool = False) -> None:
    if value == -1:
        return
    if value < (0 if allow_zero else 1):
        raise ShapeError(f"{what} is {value}; it must be >= {0 if allow_zero else 1}")


def _mismatch(a: int, b: int) -> bool:
    return a >= 0 and b >= 0 and a != b


def _layout_note(desc) -> str:
    return (f"data_layout {desc.data_layout.name}, "
            f"weights_layout {desc.weights_layout.name} = {_WEIGHTS_LETTERS[desc.weights_layout]}")


def _weights_parts(desc, wshape: Sequence[int], what: str) -> tuple:
    m, c, kh, kw = _pick(wshape, WEIGHTS_AXES[desc.weights_layout])
    _positive(m, f"{what} channel multiplier M (shape {tuple(wshape)}, {_layout_note(desc)})")
    _positive(c, f"{what} channel count C (shape {tuple(wshape)}, {_layout_note(desc)})")
    _positive(kh, f"{what} kernel height kH (shape {tuple(wshape)})")
    _positive(kw, f"{what} kernel width kW (shape {tuple(wshape)})")
    return m, c, kh, kw


def _data_parts(desc, shape: Sequence[int], what: str) -> tuple:
    n, c, h, w = _pick(shape, DATA_AXES[desc.data_layout])
    _positive(n, f"{what} batch size N (shape {tuple(shape)})", allow_zero=True)
    _positive(c, f"{what} channel count C (shape {tuple(shape)}, {desc.data_layout.name})")
    _positive(h, f"{what} height H (shape {tuple(shape)}, {desc.data_layout.name})")
    _positive(w, f"{what} width W (shape {tuple(shape)}, {desc.data_layout.name})")
    return n, c, h, w


def _check_dy(desc, geo: DepthwiseGeometry, dy_shape: Sequence[int], source_desc: str) -> None:
    """dy must have the forward result's shape: N, C*M channels, and OH, OW from §3."""
    n, cm, oh, ow = _pick(dy_shape, DATA_AXES[desc.data_layout])
    expect = geo.out_shape(desc.data_layout)
    en, ecm, eoh, eow = _pick(expect, DATA_AXES[desc.data_layout])
    if _mismatch(cm, ecm):
        raise ShapeError(f"incoming_gradient shape {tuple(dy_shape)} has {cm} channels, but {source_desc} "
                         f"give C={geo.c} and M={geo.m}, so it must have C*M = {ecm} "
                         f"(expected incoming_gradient shape {expect}; {_layout_note(desc)})")
    if _mismatch(n, en):
        raise ShapeError(f"incoming_gradient shape {tuple(dy_shape)} has batch {n}, but {source_desc} give "
                         f"batch {en} (expected incoming_gradient shape {expect})")
    if _mismatch(oh, eoh) or _mismatch(ow, eow):
        raise ShapeError(
            f"incoming_gradient spatial size {oh}x{ow} does not match the forward output size {eoh}x{eow} "
            f"that {source_desc} give (input {geo.h}x{geo.w}, kernel {geo.kh}x{geo.kw}, stride "
            f"{geo.sy}x{geo.sx}, dilation {geo.dy}x{geo.dx}, padding style {desc.padding_style.name}, "
            f"padding top/bottom/left/right {geo.pad_top}/{geo.pad_bottom}/{geo.pad_left}/{geo.pad_right}); "
            f"expected incoming_gradient shape {expect}: check output_shape (kernel size or input size)")


# ------------------------------------------------------------------------- infer rules
def _infer_forward(in_types, attrs):
    desc = attrs["descriptor"]
    x, wt = in_types
    _check_common(in_types, ("source", "weights"))
    n, c, h, w = _data_parts(desc, x.shape, "source")
    m, wc, kh, kw = _weights_parts(desc, wt.shape, "weights")
    if _mismatch(c, wc):
        want = "[M, %d, kH, kW]" % c if desc.weights_layout == L.OIHW else "[kH, kW, %d, M]" % c
        raise ShapeError(f"source shape {x.shape} has C={c} channels but weights shape {wt.shape} has "
                         f"C={wc} ({_layout_note(desc)}); the weights must be {want}, with M the channel "
                         "multiplier (the 'O' of OIHW is M, not the output channel count C*M)")
    geo = depthwise_geometry(desc, x.shape, (kh, kw), m)
    if c < 0:
        geo = DepthwiseGeometry(**{**geo.__dict__, "c": wc})
    return [ShapedType(geo.out_shape(desc.data_layout), x.dtype)]


def _infer_data_grad(in_types, attrs):
    desc = attrs["descriptor"]
    dy, wt = in_types
    _check_common(in_types, ("incoming_gradient", "weights"))
    shape = list(attrs["output_shape"])
    ax = DATA_AXES[desc.data_layout]
    n, c, h, w = _data_parts(desc, shape, "output_shape")
    m, wc, kh, kw = _weights_parts(desc, wt.shape, "weights")
    if h < 0 or w < 0:
        raise ShapeError(f"output_shape {tuple(shape)} must give the forward input's H and W (got -1): with "
                         "stride > 1 several input sizes give the same output size, so they cannot be "
                         "inferred from incoming_gradient")
    if _mismatch(c, wc):
        raise ShapeError(f"output_shape {tuple(shape)} has C={c} channels ({desc.data_layout.name}) but "
                         f"weights shape {wt.shape} has C={wc} ({_layout_note(desc)}); output_shape is the "
                         "shape of the forward source, so both must agree")
    dn, dcm = _pick(dy.shape, ax)[:2]
    if c < 0:  # resolve from weights or from dy
        c = wc if wc >= 0 else (dcm // m if dcm >= 0 and m > 0 else -1)
    if n < 0:
        n = dn
    shape[ax[0]], shape[ax[1]] = n, c
    geo = depthwise_geometry(desc, shape, (kh, kw), m)
    _check_dy(desc, geo, dy.shape, f"output_shape {tuple(attrs['output_shape'])} and weights {wt.shape}")
    return [ShapedType(tuple(shape), dy.dtype)]


def _infer_weights_grad(in_types, attrs):
    desc = attrs["descriptor"]
    dy, x = in_types
    _check_common(in_types, ("incoming_gradient", "source"))
    shape = list(attrs["output_shape"])
    wax = WEIGHTS_AXES[desc.weights_layout]
    m, c, kh, kw = _pick(shape, wax)
    _positive(m, f"output_shape channel multiplier M (output_shape {tuple(shape)}, {_layout_note(desc)})")
    _positive(c, f"output_shape channel count C (output_shape {tuple(shape)}, {_layout_note(desc)})")
    if kh < 1 or kw < 1:
        raise ShapeError(f"output_shape {tuple(shape)} gives kernel {kh}x{kw}; the kernel size must be static "
                         f"and >= 1 (the weights gradient takes kH and kW only from output_shape; "
                         f"{_layout_note(desc)})")
    n, xc, h, w = _data_parts(desc, x.shape, "source")
    if _mismatch(c, xc):
        raise ShapeError(f"output_shape {tuple(shape)} has C={c} ({_layout_note(desc)}) but source shape "
                         f"{x.shape} has C={xc} channels; output_shape is the shape of the forward weights")
    dcm = _pick(dy.shape, DATA_AXES[desc.data_layout])[1]
    if c < 0:
        c = xc
    if m < 0 and c > 0 and dcm >= 0:
        if dcm % c:
            raise ShapeError(f"incoming_gradient shape {dy.shape} has {dcm} channels, not a multiple of the "
                             f"source's C={c}")
        m = dcm // c
    shape[wax[0]], shape[wax[1]] = m, c
    geo = depthwise_geometry(desc, x.shape, (kh, kw), m)
    if geo.c < 0:
        geo = DepthwiseGeometry(**{**geo.__dict__, "c": c})
    _check_dy(desc, geo, dy.shape, f"source {x.shape} and output_shape {tuple(attrs['output_shape'])}")
    return [ShapedType(tuple(shape), dy.dtype)]


# ------------------------------------------------------------------------- builders
def _label(type_: str, name: Optional[str]) -> str:
    return f"{type_} op {name or type_!r}"


def _descriptor(descriptor: Any, label: str) -> DepthwiseConvolution2DOpDescriptor:
    if isinstance(descriptor, Convolution2DOpDescriptor):
        raise DescriptorError(f"{label}: descriptor must be a DepthwiseConvolution2DOpDescriptor, got a "
                              "Convolution2DOpDescriptor (that one is for convolution_2d; the depthwise "
                              "descriptor has no groups)")
    return frozen_copy(descriptor, DepthwiseConvolution2DOpDescriptor, label)


def _output_shape(value: Any, label: str, what: str) -> tuple:
    """4 ints (a list, tuple, ndarray or a Tensor's ``.shape``); -1 only where inferable."""
    from ..ir import Tensor

    if isinstance(value, Tensor):
        raise ShapeError(f"{label}: output_shape must be 4 ints ({what}), got tensor {value.name!r}; "
                         f"pass its .shape ({list(value.shape)})")
    if isinstance(value, np.ndarray):
        value = value.tolist()
    try:
        dims = tuple(value)
    except TypeError:
        raise ShapeError(f"{label}: output_shape must be a sequence of 4 ints ({what}), got {value!r}") from None
    if len(dims) != 4:
        raise ShapeError(f"{label}: output_shape must have exactly 4 entries ({what}), got {len(dims)}: "
                         f"{list(dims)}")
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise ShapeError(f"{label}: output_shape must hold ints ({what}), got {list(dims)!r}")
        if int(d) < -1:
            raise ShapeError(f"{label}: output_shape {list(dims)} has negative size {int(d)}; sizes must be "
                             ">= 1 (-1 only for a batch or channel size inferable from the other inputs)")
        out.append(int(d))
    return tuple(out)


@defop(FWD, swift="depthwiseConvolution2D(_:weights:descriptor:name:)",
       objc="depthwiseConvolution2DWithSourceTensor:weightsTensor:descriptor:name:",
       inputs=("source", "weights"), infer=_infer_forward, family="convolution",
       attrs=("descriptor",))
def depthwise_convolution_2d(g, source, weights, descriptor: Optional[DepthwiseConvolution2DOpDescriptor] = None,
                             name: Optional[str] = None):
    """Depthwise 2D convolution (MPSGraph ``depthwiseConvolution2D(_:weights:descriptor:name:)``).

    ``y[n, c*M+m, oh, ow] = sum_{i,j} x[n, c, oh*sY + i*dY - pT, ow*sX + j*dX - pL] * W[m, c, i, j]``
    (NCHW/OIHW spelling; zero outside x). The descriptor is copied, so later edits change nothing.
    """
    label = _label(FWD, name)
    desc = _descriptor(descriptor, label)
    source = g.as_tensor(source, label)
    weights = g.as_tensor(weights, label, like=source)
    return g.add_op(FWD, [source, weights], {"descriptor": desc}, name).output


@defop(DATA_GRAD, swift="depthwiseConvolution2DDataGradient(_:weights:outputShape:descriptor:name:)",
       objc="depthwiseConvolution2DDataGradientWithIncomingGradientTensor:weightsTensor:outputShape:descriptor:name:",
       inputs=("incoming_gradient", "weights"), infer=_infer_data_grad, family="convolution",
       role="data_gradient", forward=FWD,
       attrs=("output_shape", "descriptor"))
def depthwise_convolution_2d_data_gradient(g, incoming_gradient, weights, output_shape,
                                           descriptor: Optional[DepthwiseConvolution2DOpDescriptor] = None,
                                           name: Optional[str] = None):
    """Gradient of the depthwise convolution w.r.t. its source (MPSGraph
    ``depthwiseConvolution2DDataGradient(_:weights:outputShape:descriptor:name:)``).

    ``output_shape`` is the forward source's shape (4 ints, data layout): it fixes H and W,
    which dy alone does not (with stride > 1 several input sizes give one output size).
    """
    label = _label(DATA_GRAD, name)
    desc = _descriptor(descriptor, label)
    shape = _output_shape(output_shape, label, "the forward source's shape in the data layout")
    incoming_gradient = g.as_tensor(incoming_gradient, label)
    weights = g.as_tensor(weights, label, like=incoming_gradient)
    return g.add_op(DATA_GRAD, [incoming_gradient, weights], {"output_shape": shape, "descriptor": desc}, name).output


@defop(WEIGHTS_GRAD, swift="depthwiseConvolution2DWeightsGradient(_:source:outputShape:descriptor:name:)",
       objc="depthwiseConvolution2DWeightsGradientWithIncomingGradientTensor:sourceTensor:outputShape:descriptor:name:",
       inputs=("incoming_gradient", "source"), infer=_infer_weights_grad, family="convolution",
       role="weights_gradient", forward=FWD,
       differentiable=False, attrs=("output_shape", "descriptor"))
def depthwise_convolution_2d_weights_gradient(g, incoming_gradient, source, output_shape,
                                              descriptor: Optional[DepthwiseConvolution2DOpDescriptor] = None,
                                              name: Optional[str] = None):
    """Gradient of the depthwise convolution w.r.t. its weights (MPSGraph
    ``depthwiseConvolution2DWeightsGradient(_:source:outputShape:descriptor:name:)``).

    ``dW[m, c, i, j] = sum_{n,oh,ow} dy[n, c*M+m, oh, ow] * x[n, c, ih(oh, i), iw(ow, j)]``.
    ``output_shape`` is the forward weights' shape (weights layout): the only source of kH, kW
    and M. Not differentiable (MPSGraph has no gradient rule for it).
    """
    label = _label(WEIGHTS_GRAD, name)
    desc = _descriptor(descriptor, label)
    shape = _output_shape(output_shape, label, "the forward weights' shape in the weights layout")
    incoming_gradient = g.as_tensor(incoming_gradient, label)
    source = g.as_tensor(source, label, like=incoming_gradient)
    return g.add_op(WEIGHTS_GRAD, [incoming_gradient, source], {"output_shape": shape, "descriptor": desc}, name).output


# ------------------------------------------------------------------------- gradient rules
register_convolution_gradients(FWD, DATA_GRAD, WEIGHTS_GRAD)
