"""Depthwise 3D convolution and its data and weights gradients (MPSGraph, macOS 12; docs/mpsgraph-spec.md §5).

The channel axis sits at ``channel_dimension_index`` (-4..-1) within the **last 4 axes** of both
source and weights; the other three of those axes are spatial (D, H, W, slowest first). Axes
before the last 4 of the source are batch axes. The weights are rank 4 with C*M channels and no
separate multiplier axis: output channel ``o`` reads input channel ``o // M`` with filter ``o``.
The infer rules are the shared ones of ``convolution.py``; ``_Depthwise3DRules`` says what
depthwise 3D does differently (batch axes, the nullable ``output_shape`` of the data gradient).
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..descriptors import DepthwiseConvolution3DOpDescriptor, PaddingStyle, frozen_copy
from ..errors import ShapeError
from ..types import ShapedType
from .conv_gradients import register_convolution_gradients
from .convolution import (ConvRules, check_float, data_gradient_rule, forward_rule, merge, parse_output_shape,
                          shape_text, weights_gradient_rule)
from .geometry import ConvGeometry, conventional_input_size
from .registry import defop

_AXES = ("D", "H", "W")


def _check_source_rank(t: ShapedType, what: str) -> None:
    if len(t.shape) < 4:
        raise ShapeError(f"{what} must have rank >= 4 (batch axes, then C, D, H, W in the order the "
                         f"channel_dimension_index sets), got shape {t.shape}")


def _check_weights_rank(shape: Sequence[int], what: str) -> None:
    if len(shape) != 4:
        raise ShapeError(f"{what} must be rank 4 (C*M channels and kernel D, H, W), got shape {tuple(shape)}")


def _multiplier(c: int, cw: int, src: str, wts: str) -> int:
    """M = Cw / C, or -1 when unknown; Cw must be a positive multiple of C."""
    if c == 0 or cw == 0:
        raise ShapeError(f"{src} and {wts} need at least one channel")
    if c == -1 or cw == -1:
        return -1
    if cw % c:
        raise ShapeError(f"{wts} has {cw} channels, which is not a multiple C*M of the {c} channels of {src}; "
                         "the weights' channel axis holds C*M (channel multiplier M >= 1)")
    return cw // c


# ------------------------------------------------------------------ infer rules
def _size_formula(o: int, kernel: int, stride: int, dilation: int, style: PaddingStyle, before: int, after: int) -> str:
    """``conventional_input_size`` written out with its numbers, for error messages."""
    if style in (PaddingStyle.TF_SAME, PaddingStyle.ONNX_SAME_LOWER):
        return f"O*stride = {o}*{stride}"
    return f"(O-1)*stride + dilated kernel - padding = ({o}-1)*{stride} + {(kernel - 1) * dilation + 1} - {before + after}"


class _Depthwise3DRules(ConvRules):
    """Depthwise 3D: any batch axes, rank-4 weights whose channel axis holds C*M."""

    def check_operands(self, types, names, d):
        check_float(types, names)
        for t, what in zip(types, names):
            if what == "weights":
                _check_weights_rank(t.shape, what)
            else:
                _check_source_rank(t, what)
        data = [(t, what) for t, what in zip(types, names) if what != "weights"]
        if len(data) == 2 and len(data[0][0].shape) != len(data[1][0].shape):
            raise ShapeError(f"{data[0][1]} {data[0][0].shape} and {data[1][1]} {data[1][0].shape} must have the "
                             "same rank")

    def check_channels(self, d, geo, c, wshape, src, wts):
        _multiplier(c, wshape[geo.weights_axes[0]], f"{src[0]} {shape_text(src[1])}", f"{wts[0]} {shape_text(wts[1])}")

    def channels_text(self, geo):
        return f"{geo.out_channels} weight channels; both must be C*M"

    def source_channels(self, d, geo, wshape, dy_channels):
        return -1  # C = C*M / M, and nothing gives M

    def declared_source(self, d, dy, wshape, shape):
        rank = len(dy.shape)
        if shape is not None:
            if len(shape) != rank:
                raise ShapeError(f"output_shape {list(shape)} must have the rank of incoming_gradient {dy.shape} "
                                 f"({rank}): it is the forward source shape")
            return tuple(shape)
        # MPSGraph's nullable outputShape: assume M = 1 and the conventional size
        layout = ConvGeometry.for_depthwise_3d(d, (-1,) * rank, wshape)
        out = list(dy.shape)
        out[layout.data_axes[0]] = layout.out_channels
        for k, (a, kernel, stride, dilation, before, after) in enumerate(zip(
                layout.data_axes[1:], layout.kernel_size, d.strides, d.dilation_rates, layout.padding_before,
                layout.padding_after)):
            out[a] = conventional_input_size(dy.shape[a], kernel, stride, dilation, d.padding_style, before, after)
            if out[a] < 1 and dy.shape[a] >= 0:  # -1 too: it is a size the formula gave, not an unknown one
                formula = _size_formula(dy.shape[a], kernel, stride, dilation, d.padding_style, before, after)
                raise ShapeError(f"cannot infer the forward source size along {_AXES[k]} from incoming_gradient "
                                 f"{dy.shape}: {formula} = {out[a]} is not a size; pass output_shape")
        return tuple(out)

    def complete_weights(self, d, geo, shape, c, dy_channels, dy_shape):
        wshape = list(shape)
        wshape[geo.weights_axes[0]] = merge(shape[geo.weights_axes[0]], dy_channels)
        return tuple(wshape)


_RULES = _Depthwise3DRules()


def _desc(descriptor, label: str):
    return frozen_copy(descriptor, DepthwiseConvolution3DOpDescriptor, label)


@defop("depthwise_convolution_3d", swift="depthwiseConvolution3D(_:weights:descriptor:name:)",
       objc="depthwiseConvolution3DWithSourceTensor:weightsTensor:descriptor:name:",
       inputs=("source", "weights"), infer=forward_rule(_RULES), family="convolution", attrs=("descriptor",), since=("12.0", "15.0"))
def depthwise_convolution_3d(g, source, weights, descriptor: Optional[DepthwiseConvolution3DOpDescriptor] = None,
                             name: Optional[str] = None):
    """Depthwise 3D convolution (MPSGraph ``depthwiseConvolution3D(_:weights:descriptor:name:)``).

    Channel-first form (channel_dimension_index -4): ``y[b, o, od, oh, ow] = sum_{a, i, j}
    x[b, o // M, od*sD + a*dD - pD, oh*sH + i*dH - pH, ow*sW + j*dW - pW] * W[o, a, i, j]``, zero
    outside the input, with ``M = Cw / C``. The descriptor is copied.
    """
    label = f"depthwise_convolution_3d op {name or 'depthwise_convolution_3d'!r}"
    desc = _desc(descriptor, label)
    source = g.as_tensor(source, label)
    weights = g.as_tensor(weights, label, like=source)
    return g.add_op("depthwise_convolution_3d", [source, weights], {"descriptor": desc}, name).output


# ------------------------------------------------------------------ data gradient
@defop("depthwise_convolution_3d_data_gradient",
       swift="depthwiseConvolution3DDataGradient(_:weights:outputShape:descriptor:name:)",
       objc="depthwiseConvolution3DDataGradientWithIncomingGradientTensor:weightsTensor:outputShape:descriptor:name:",
       inputs=("incoming_gradient", "weights"), infer=data_gradient_rule(_RULES), family="convolution", role="data_gradient", forward="depthwise_convolution_3d",
       attrs=("output_shape", "descriptor"), since=("12.0", "15.0"))
def depthwise_convolution_3d_data_gradient(g, incoming_gradient, weights, output_shape: Optional[Sequence[int]] = None,
                                           descriptor: Optional[DepthwiseConvolution3DOpDescriptor] = None,
                                           name: Optional[str] = None):
    """Gradient of ``depthwise_convolution_3d`` with respect to its source
    (MPSGraph ``depthwiseConvolution3DDataGradient(_:weights:outputShape:descriptor:name:)``).

    ``output_shape`` is the forward source shape. It is nullable, as in MPSGraph; when None,
    minigraph assumes M = 1 (C = the weights' channel count) and, per spatial axis with O the
    incoming gradient's size and K the dilated kernel: EXPLICIT and TF_VALID
    ``(O - 1) * stride + K - pad_before - pad_after``, the smallest integer that the output-size
    formula maps to O (PyTorch's transposed-convolution size; the next ``stride - 1`` sizes give
    O too); the SAME styles ``O * stride``, the largest size that gives O. When padding makes the
    first 0 or less (``pad_before + pad_after >= (O - 1) * stride + K``), no size is assumed: the
    op raises ``ShapeError`` naming the axis, and ``output_shape`` must be given.
    """
    label = f"depthwise_convolution_3d_data_gradient op {name or 'depthwise_convolution_3d_data_gradient'!r}"
    desc = _desc(descriptor, label)
    shp = None
    if output_shape is not None:
        try:
            shp = parse_output_shape(output_shape, None)
        except ShapeError as e:
            raise ShapeError(f"{label}: {e}") from None
    dy = g.as_tensor(incoming_gradient, label)
    weights = g.as_tensor(weights, label, like=dy)
    return g.add_op("depthwise_convolution_3d_data_gradient", [dy, weights],
                   {"output_shape": shp, "descriptor": desc}, name).output


# ------------------------------------------------------------------ weights gradient
@defop("depthwise_convolution_3d_weights_gradient",
       swift="depthwiseConvolution3DWeightsGradient(_:source:outputShape:descriptor:name:)",
       objc="depthwiseConvolution3DWeightsGradientWithIncomingGradientTensor:sourceTensor:outputShape:"
            "descriptor:name:",
       inputs=("incoming_gradient", "source"), infer=weights_gradient_rule(_RULES), family="convolution", role="weights_gradient", forward="depthwise_convolution_3d",
       differentiable=False, attrs=("output_shape", "descriptor"), since=("12.0", "15.0"))
def depthwise_convolution_3d_weights_gradient(g, incoming_gradient, source, output_shape: Sequence[int],
                                              descriptor: Optional[DepthwiseConvolution3DOpDescriptor] = None,
                                              name: Optional[str] = None):
    """Gradient of ``depthwise_convolution_3d`` with respect to its weights
    (MPSGraph ``depthwiseConvolution3DWeightsGradient(_:source:outputShape:descriptor:name:)``).

    ``output_shape`` is the forward weights shape (rank 4): the only source of the kernel size.
    Not differentiable, as in MPSGraph.
    """
    label = f"depthwise_convolution_3d_weights_gradient op {name or 'depthwise_convolution_3d_weights_gradient'!r}"
    desc = _desc(descriptor, label)
    try:
        shp = parse_output_shape(output_shape, 4)
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    dy = g.as_tensor(incoming_gradient, label)
    source = g.as_tensor(source, label, like=dy)
    return g.add_op("depthwise_convolution_3d_weights_gradient", [dy, source],
                   {"output_shape": shp, "descriptor": desc}, name).output


# ------------------------------------------------------------------ gradient rules
register_convolution_gradients("depthwise_convolution_3d")
