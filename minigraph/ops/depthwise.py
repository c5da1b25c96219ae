"""Depthwise 2D convolution: forward, data gradient, weights gradient (spec §2-§4).

Layouts: data NCHW ``[N, C, H, W]`` or NHWC ``[N, H, W, C]``; weights OIHW ``[M, C, kH, kW]`` or
HWIO ``[kH, kW, C, M]``, where M is the channel multiplier (MPSGraph: "'O' index is channel
multiplier index"). Output channel ``o = c*M + m`` reads input channel ``c`` with filter
``(m, c)``: a grouped convolution with ``groups = C`` (``ConvGeometry.for_depthwise_2d``).

The gradient ops take ``output_shape`` because with a stride above 1 several input sizes give
the same output size, and because dy and x say nothing about the kernel size: for the weights
gradient, ``output_shape`` is the only source of kH, kW and M. Both recompute the padding
from the forward geometry (data gradient: input size from ``output_shape``; weights gradient:
input size from ``source``, kernel size from ``output_shape``). The infer rules are the shared
ones of ``convolution.py``; ``_DepthwiseRules`` says what depthwise 2D does differently.
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
from .convolution import (ConvRules, data_gradient_rule, forward_rule, merge, mismatch, op_label,
                          weights_gradient_rule)
from .geometry import ConvGeometry
from .registry import defop

_WEIGHTS_LETTERS = {TensorNamedDataLayout.OIHW: "[M, C, kH, kW]", TensorNamedDataLayout.HWIO: "[kH, kW, C, M]"}


# ------------------------------------------------------------------------- infer rules
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


def _layout_note(desc) -> str:
    return (f"data_layout {desc.data_layout.name}, "
            f"weights_layout {desc.weights_layout.name} = {_WEIGHTS_LETTERS[desc.weights_layout]}")


def _m_c(geo: ConvGeometry, wshape: Sequence[int]) -> tuple:
    """``(M, C)`` as a weights-layout shape gives them."""
    group, multiplier = geo.weights_axes[:2]
    return wshape[multiplier], wshape[group]


def _named(what: tuple) -> str:
    """``source shape (…)``, ``output_shape (…)``: a (label, shape) pair as messages write it."""
    label, shape = what
    return f"{label} {tuple(shape)}" if label == "output_shape" else f"{label} shape {tuple(shape)}"


class _DepthwiseRules(ConvRules):
    """Depthwise 2D: groups = C, the weights' "O" axis is the channel multiplier M."""

    def check_operands(self, types, names, d):
        _check_common(types, names)

    def check_channels(self, d, geo, c, wshape, src, wts):
        m, wc = _m_c(geo, wshape)
        if 0 <= m < 1 or 0 <= wc < 1:
            raise ShapeError(f"{_named(wts)} gives channel multiplier M={m} and channel count C={wc} "
                             f"({_layout_note(d)}); both must be >= 1")
        if mismatch(c, wc):
            want = "[M, %d, kH, kW]" % c if d.weights_layout == TensorNamedDataLayout.OIHW else "[kH, kW, %d, M]" % c
            layout = f" ({d.data_layout.name})" if src[0] == "output_shape" else ""
            raise ShapeError(f"{_named(src)} has C={c} channels{layout} but {_named(wts)} has C={wc} "
                             f"({_layout_note(d)}); the weights must be {want}, with M "
                             "the channel multiplier (the 'O' of OIHW is M, not the output channel count C*M)")

    def channels_text(self, geo):
        return (f"C={geo.in_channels} and M={geo.channel_multiplier}, so C*M = {geo.out_channels} channels "
                f"(expected incoming_gradient shape {geo.result_shape})")

    def source_channels(self, d, geo, wshape, dy_channels):
        m, wc = _m_c(geo, wshape)
        return wc if wc >= 0 else (dy_channels // m if dy_channels >= 0 and m > 0 else -1)

    def input_size(self, d, shape, axis, size, unique):
        if size < 0:
            raise ShapeError(f"output_shape {tuple(shape)} must give the forward input's H and W (got -1): with "
                             "stride > 1 several input sizes give the same output size, so they cannot be "
                             "inferred from incoming_gradient")
        return size

    def complete_weights(self, d, geo, shape, c, dy_channels, dy_shape):
        m, wc = _m_c(geo, shape)
        wc = merge(wc, c)
        if m < 0 and wc > 0 and dy_channels >= 0:
            if dy_channels % wc:
                raise ShapeError(f"incoming_gradient shape {tuple(dy_shape)} has {dy_channels} channels, not a "
                                 f"multiple of the source's C={wc}")
            m = dy_channels // wc
        wshape = list(shape)
        wshape[geo.weights_axes[1]], wshape[geo.weights_axes[0]] = m, wc
        return tuple(wshape)


_RULES = _DepthwiseRules()


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
       inputs=("source", "weights"), infer=forward_rule(_RULES), family="convolution",
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
       inputs=("incoming_gradient", "weights"), infer=data_gradient_rule(_RULES), family="convolution",
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
       inputs=("incoming_gradient", "source"), infer=weights_gradient_rule(_RULES), family="convolution",
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
