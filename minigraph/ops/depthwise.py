"""Depthwise 2D convolution: forward, data gradient, weights gradient (spec §2-§4).

Layouts: data NCHW ``[N, C, H, W]`` or NHWC ``[N, H, W, C]``; weights OIHW ``[M, C, kH, kW]`` or
HWIO ``[kH, kW, C, M]``, where M is the channel multiplier (MPSGraph: "'O' index is channel
multiplier index"). Output channel ``o = c*M + m`` reads input channel ``c`` with filter
``(m, c)``: a grouped convolution with ``groups = C`` (``ConvGeometry.for_depthwise_2d``).

The gradient ops take ``output_shape`` because with a stride above 1 several input sizes give
the same output size, and because dy and x say nothing about the kernel size: for the weights
gradient, ``output_shape`` is the only source of kH, kW and M. Both recompute the padding
from the forward geometry (data gradient: input size from ``output_shape``; weights gradient:
input size from ``source``, kernel size from ``output_shape``).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..descriptors import (Convolution2DOpDescriptor, DepthwiseConvolution2DOpDescriptor,
                           TensorNamedDataLayout, frozen_copy)
from ..errors import DescriptorError, DTypeError, ShapeError
from ..ir import Tensor
from ..types import ShapedType
from .conv_gradients import register_convolution_gradients
from .convolution import mismatch, op_label
from .geometry import ConvGeometry
from .registry import defop

_WEIGHTS_LETTERS = {TensorNamedDataLayout.OIHW: "[M, C, kH, kW]", TensorNamedDataLayout.HWIO: "[kH, kW, C, M]"}


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


def _layout_note(desc) -> str:
    return (f"data_layout {desc.data_layout.name}, "
            f"weights_layout {desc.weights_layout.name} = {_WEIGHTS_LETTERS[desc.weights_layout]}")


def _weights_sizes(geo: ConvGeometry, wshape: Sequence[int]) -> tuple:
    """``(M, C, kH, kW)`` as a weights-layout shape gives them."""
    group, multiplier = geo.weights_axes[:2]
    return (wshape[multiplier], wshape[group]) + tuple(wshape[a] for a in geo.weights_axes[3:])


def _weights_parts(desc, geo: ConvGeometry, wshape: Sequence[int], what: str) -> tuple:
    m, c, kh, kw = _weights_sizes(geo, wshape)
    _positive(m, f"{what} channel multiplier M (shape {tuple(wshape)}, {_layout_note(desc)})")
    _positive(c, f"{what} channel count C (shape {tuple(wshape)}, {_layout_note(desc)})")
    _positive(kh, f"{what} kernel height kH (shape {tuple(wshape)})")
    _positive(kw, f"{what} kernel width kW (shape {tuple(wshape)})")
    return m, c, kh, kw


def _data_parts(desc, geo: ConvGeometry, shape: Sequence[int], what: str) -> tuple:
    n, c, h, w = geo.data_sizes(shape)
    _positive(n, f"{what} batch size N (shape {tuple(shape)})", allow_zero=True)
    _positive(c, f"{what} channel count C (shape {tuple(shape)}, {desc.data_layout.name})")
    _positive(h, f"{what} height H (shape {tuple(shape)}, {desc.data_layout.name})")
    _positive(w, f"{what} width W (shape {tuple(shape)}, {desc.data_layout.name})")
    return n, c, h, w


def _by(sizes: Sequence[int]) -> str:
    return "x".join(str(n) for n in sizes)


def _check_dy(desc, geo: ConvGeometry, dy_shape: Sequence[int], source_desc: str) -> None:
    """dy must have the forward result's shape: N, C*M channels, and OH, OW from §3."""
    n, cm, oh, ow = geo.data_sizes(dy_shape)
    expect = geo.result_shape
    if mismatch(cm, geo.out_channels):
        raise ShapeError(f"incoming_gradient shape {tuple(dy_shape)} has {cm} channels, but {source_desc} "
                         f"give C={geo.in_channels} and M={geo.channel_multiplier}, so it must have C*M = "
                         f"{geo.out_channels} (expected incoming_gradient shape {expect}; {_layout_note(desc)})")
    if mismatch(n, geo.batch):
        raise ShapeError(f"incoming_gradient shape {tuple(dy_shape)} has batch {n}, but {source_desc} give "
                         f"batch {geo.batch} (expected incoming_gradient shape {expect})")
    if mismatch(oh, geo.output_size[0]) or mismatch(ow, geo.output_size[1]):
        (top, left), (bottom, right) = geo.padding_before, geo.padding_after
        raise ShapeError(
            f"incoming_gradient spatial size {oh}x{ow} does not match the forward output size "
            f"{_by(geo.output_size)} that {source_desc} give (input {_by(geo.input_size)}, kernel "
            f"{_by(geo.kernel_size)}, stride {_by(geo.strides)}, dilation {_by(geo.dilations)}, padding style "
            f"{desc.padding_style.name}, padding top/bottom/left/right {top}/{bottom}/{left}/{right}); "
            f"expected incoming_gradient shape {expect}: check output_shape (kernel size or input size)")


# ------------------------------------------------------------------------- infer rules
def _infer_forward(in_types, attrs):
    desc = attrs["descriptor"]
    x, wt = in_types
    _check_common(in_types, ("source", "weights"))
    geo = ConvGeometry.for_depthwise_2d(desc, x.shape, wt.shape)
    n, c, h, w = _data_parts(desc, geo, x.shape, "source")
    m, wc, kh, kw = _weights_parts(desc, geo, wt.shape, "weights")
    if mismatch(c, wc):
        oihw = desc.weights_layout == TensorNamedDataLayout.OIHW
        want = "[M, %d, kH, kW]" % c if oihw else "[kH, kW, %d, M]" % c
        raise ShapeError(f"source shape {x.shape} has C={c} channels but weights shape {wt.shape} has "
                         f"C={wc} ({_layout_note(desc)}); the weights must be {want}, with M the channel "
                         "multiplier (the 'O' of OIHW is M, not the output channel count C*M)")
    return [ShapedType(geo.result_shape, x.dtype)]


def _infer_data_grad(in_types, attrs):
    desc = attrs["descriptor"]
    dy, wt = in_types
    _check_common(in_types, ("incoming_gradient", "weights"))
    shape = attrs["output_shape"]
    declared = ConvGeometry.for_depthwise_2d(desc, shape, wt.shape)
    n, c, h, w = _data_parts(desc, declared, shape, "output_shape")
    m, wc, kh, kw = _weights_parts(desc, declared, wt.shape, "weights")
    if h < 0 or w < 0:
        raise ShapeError(f"output_shape {tuple(shape)} must give the forward input's H and W (got -1): with "
                         "stride > 1 several input sizes give the same output size, so they cannot be "
                         "inferred from incoming_gradient")
    if mismatch(c, wc):
        raise ShapeError(f"output_shape {tuple(shape)} has C={c} channels ({desc.data_layout.name}) but "
                         f"weights shape {wt.shape} has C={wc} ({_layout_note(desc)}); output_shape is the "
                         "shape of the forward source, so both must agree")
    dn, dcm = declared.data_sizes(dy.shape)[:2]
    if c < 0:  # resolve from weights or from dy
        c = wc if wc >= 0 else (dcm // m if dcm >= 0 and m > 0 else -1)
    if n < 0:
        n = dn
    geo = ConvGeometry.for_depthwise_2d(desc, declared.data_shape(c, (h, w), (n,)), wt.shape)
    _check_dy(desc, geo, dy.shape, f"output_shape {tuple(shape)} and weights {wt.shape}")
    return [ShapedType(geo.source_shape, dy.dtype)]


def _infer_weights_grad(in_types, attrs):
    desc = attrs["descriptor"]
    dy, x = in_types
    _check_common(in_types, ("incoming_gradient", "source"))
    shape = attrs["output_shape"]
    declared = ConvGeometry.for_depthwise_2d(desc, x.shape, shape)
    m, c, kh, kw = _weights_sizes(declared, shape)
    _positive(m, f"output_shape channel multiplier M (output_shape {tuple(shape)}, {_layout_note(desc)})")
    _positive(c, f"output_shape channel count C (output_shape {tuple(shape)}, {_layout_note(desc)})")
    if kh < 1 or kw < 1:
        raise ShapeError(f"output_shape {tuple(shape)} gives kernel {kh}x{kw}; the kernel size must be static "
                         f"and >= 1 (the weights gradient takes kH and kW only from output_shape; "
                         f"{_layout_note(desc)})")
    n, xc, h, w = _data_parts(desc, declared, x.shape, "source")
    if mismatch(c, xc):
        raise ShapeError(f"output_shape {tuple(shape)} has C={c} ({_layout_note(desc)}) but source shape "
                         f"{x.shape} has C={xc} channels; output_shape is the shape of the forward weights")
    dcm = declared.data_sizes(dy.shape)[1]
    if c < 0:
        c = xc
    if m < 0 and c > 0 and dcm >= 0:
        if dcm % c:
            raise ShapeError(f"incoming_gradient shape {dy.shape} has {dcm} channels, not a multiple of the "
                             f"source's C={c}")
        m = dcm // c
    wshape = list(shape)
    wshape[declared.weights_axes[1]], wshape[declared.weights_axes[0]] = m, c
    geo = ConvGeometry.for_depthwise_2d(desc, x.shape, wshape)
    _check_dy(desc, geo, dy.shape, f"source {x.shape} and output_shape {tuple(shape)}")
    return [ShapedType(tuple(wshape), dy.dtype)]


# ------------------------------------------------------------------------- builders
def _descriptor(descriptor: Any, label: str) -> DepthwiseConvolution2DOpDescriptor:
    if isinstance(descriptor, Convolution2DOpDescriptor):
        raise DescriptorError(f"{label}: descriptor must be a DepthwiseConvolution2DOpDescriptor, got a "
                              "Convolution2DOpDescriptor (that one is for convolution_2d; the depthwise "
                              "descriptor has no groups)")
    return frozen_copy(descriptor, DepthwiseConvolution2DOpDescriptor, label)


def _output_shape(value: Any, label: str, what: str) -> tuple:
    """4 ints (a list, tuple, ndarray or a Tensor's ``.shape``); -1 only where inferable."""
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


@defop("depthwise_convolution_2d", swift="depthwiseConvolution2D(_:weights:descriptor:name:)",
       objc="depthwiseConvolution2DWithSourceTensor:weightsTensor:descriptor:name:",
       inputs=("source", "weights"), infer=_infer_forward, family="convolution",
       attrs=("descriptor",))
def depthwise_convolution_2d(g, source, weights, descriptor: Optional[DepthwiseConvolution2DOpDescriptor] = None,
                             name: Optional[str] = None):
    """Depthwise 2D convolution (MPSGraph ``depthwiseConvolution2D(_:weights:descriptor:name:)``).

    ``y[n, c*M+m, oh, ow] = sum_{i,j} x[n, c, oh*sY + i*dY - pT, ow*sX + j*dX - pL] * W[m, c, i, j]``
    (NCHW/OIHW spelling; zero outside x). The descriptor is copied, so later edits change nothing.
    """
    label = op_label("depthwise_convolution_2d", name)
    desc = _descriptor(descriptor, label)
    source = g.as_tensor(source, label)
    weights = g.as_tensor(weights, label, like=source)
    return g.add_op("depthwise_convolution_2d", [source, weights], {"descriptor": desc}, name).output


@defop("depthwise_convolution_2d_data_gradient", swift="depthwiseConvolution2DDataGradient(_:weights:outputShape:descriptor:name:)",
       objc="depthwiseConvolution2DDataGradientWithIncomingGradientTensor:weightsTensor:outputShape:descriptor:name:",
       inputs=("incoming_gradient", "weights"), infer=_infer_data_grad, family="convolution",
       role="data_gradient", forward="depthwise_convolution_2d",
       attrs=("output_shape", "descriptor"))
def depthwise_convolution_2d_data_gradient(g, incoming_gradient, weights, output_shape,
                                           descriptor: Optional[DepthwiseConvolution2DOpDescriptor] = None,
                                           name: Optional[str] = None):
    """Gradient of the depthwise convolution w.r.t. its source (MPSGraph
    ``depthwiseConvolution2DDataGradient(_:weights:outputShape:descriptor:name:)``).

    ``output_shape`` is the forward source's shape (4 ints, data layout): it fixes H and W,
    which dy alone does not (with stride > 1 several input sizes give one output size).
    """
    label = op_label("depthwise_convolution_2d_data_gradient", name)
    desc = _descriptor(descriptor, label)
    shape = _output_shape(output_shape, label, "the forward source's shape in the data layout")
    incoming_gradient = g.as_tensor(incoming_gradient, label)
    weights = g.as_tensor(weights, label, like=incoming_gradient)
    return g.add_op("depthwise_convolution_2d_data_gradient", [incoming_gradient, weights], {"output_shape": shape, "descriptor": desc}, name).output


@defop("depthwise_convolution_2d_weights_gradient", swift="depthwiseConvolution2DWeightsGradient(_:source:outputShape:descriptor:name:)",
       objc="depthwiseConvolution2DWeightsGradientWithIncomingGradientTensor:sourceTensor:outputShape:descriptor:name:",
       inputs=("incoming_gradient", "source"), infer=_infer_weights_grad, family="convolution",
       role="weights_gradient", forward="depthwise_convolution_2d",
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
    label = op_label("depthwise_convolution_2d_weights_gradient", name)
    desc = _descriptor(descriptor, label)
    shape = _output_shape(output_shape, label, "the forward weights' shape in the weights layout")
    incoming_gradient = g.as_tensor(incoming_gradient, label)
    source = g.as_tensor(source, label, like=incoming_gradient)
    return g.add_op("depthwise_convolution_2d_weights_gradient", [incoming_gradient, source], {"output_shape": shape, "descriptor": desc}, name).output


# ------------------------------------------------------------------------- gradient rules
register_convolution_gradients("depthwise_convolution_2d")
