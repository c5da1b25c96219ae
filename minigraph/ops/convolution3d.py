"""Regular (grouped) 3D convolution and its data and weights gradients (MPSGraph, macOS 13.2).

Data is NCDHW or NDHWC (rank 5); weights are OIDHW ``[Cout, Cin/groups, kD, kH, kW]`` or DHWIO
``[kD, kH, kW, Cin/groups, Cout]``. The ops share the 2D convolution's infer rules
(``convolution.py``), which take the rank, the layouts and the per-axis strides, dilations and
padding from ``ConvGeometry.for_convolution``.
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..descriptors import Convolution3DOpDescriptor
from ..errors import ShapeError
from .conv_gradients import register_convolution_gradients
from .convolution import (conv_desc, infer_convolution, infer_data_gradient, infer_weights_gradient, op_label,
                          parse_output_shape)
from .registry import defop

_SINCE = ("13.2", "16.3")


def _shape(output_shape, label: str) -> tuple:
    try:
        return parse_output_shape(output_shape, 5)
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None


@defop("convolution_3d", swift="convolution3D(_:weights:descriptor:name:)",
       objc="convolution3DWithSourceTensor:weightsTensor:descriptor:name:",
       inputs=("source", "weights"), infer=infer_convolution, family="convolution", attrs=("descriptor",),
       since=_SINCE)
def convolution_3d(g, source, weights, descriptor: Optional[Convolution3DOpDescriptor] = None,
                   name: Optional[str] = None):
    """Grouped 3D convolution (cross-correlation) of ``source`` with ``weights``
    (MPSGraph ``convolution3D(_:weights:descriptor:name:)``).

    ``y[n, o, od, oh, ow] = sum_{ci, a, i, j} x[n, grp(o)*Cin/g + ci, od*sZ + a*dZ - pFront,
    oh*sY + i*dY - pTop, ow*sX + j*dX - pLeft] * W[o, ci, a, i, j]`` (NCDHW/OIDHW), zero outside
    the input. The descriptor is copied.
    """
    label = op_label("convolution_3d", name)
    desc = conv_desc(descriptor, label, cls=Convolution3DOpDescriptor)
    source = g.as_tensor(source, label)
    weights = g.as_tensor(weights, label, like=source)
    return g.add_op("convolution_3d", [source, weights], {"descriptor": desc}, name).output


@defop("convolution_3d_data_gradient",
       swift="convolution3DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)",
       objc="convolution3DDataGradientWithIncomingGradientTensor:weightsTensor:outputShape:"
            "forwardConvolutionDescriptor:name:",
       inputs=("incoming_gradient", "weights"), infer=infer_data_gradient, family="convolution",
       role="data_gradient", forward="convolution_3d", attrs=("output_shape", "descriptor"), since=_SINCE)
def convolution_3d_data_gradient(g, incoming_gradient, weights, output_shape: Sequence[int],
                                 descriptor: Optional[Convolution3DOpDescriptor] = None,
                                 name: Optional[str] = None, *, forward_convolution_descriptor=None):
    """Gradient of ``convolution_3d`` with respect to its source: the transposed convolution
    (MPSGraph ``convolution3DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``).

    ``output_shape`` is the forward **source** shape (5 numbers in the data layout): with a stride
    above 1 several source sizes give the same output. ``descriptor`` is the forward descriptor
    (``forward_convolution_descriptor`` is accepted as MPSGraph's label).
    """
    label = op_label("convolution_3d_data_gradient", name)
    desc = conv_desc(descriptor, label, forward_convolution_descriptor, Convolution3DOpDescriptor)
    shp = _shape(output_shape, label)
    dy = g.as_tensor(incoming_gradient, label)
    weights = g.as_tensor(weights, label, like=dy)
    return g.add_op("convolution_3d_data_gradient", [dy, weights], {"output_shape": shp, "descriptor": desc},
                    name).output


@defop("convolution_3d_weights_gradient",
       swift="convolution3DWeightsGradient(_:source:outputShape:forwardConvolutionDescriptor:name:)",
       objc="convolution3DWeightsGradientWithIncomingGradientTensor:sourceTensor:outputShape:"
            "forwardConvolutionDescriptor:name:",
       inputs=("incoming_gradient", "source"), infer=infer_weights_gradient, family="convolution",
       role="weights_gradient", forward="convolution_3d", differentiable=False,
       attrs=("output_shape", "descriptor"), since=_SINCE)
def convolution_3d_weights_gradient(g, incoming_gradient, source, output_shape: Sequence[int],
                                    descriptor: Optional[Convolution3DOpDescriptor] = None,
                                    name: Optional[str] = None, *, forward_convolution_descriptor=None):
    """Gradient of ``convolution_3d`` with respect to its weights
    (MPSGraph ``convolution3DWeightsGradient(_:source:outputShape:forwardConvolutionDescriptor:name:)``).

    ``output_shape`` is the forward **weights** shape (5 numbers in the weights layout): the only
    source of the kernel size. Not differentiable, as in MPSGraph.
    """
    label = op_label("convolution_3d_weights_gradient", name)
    desc = conv_desc(descriptor, label, forward_convolution_descriptor, Convolution3DOpDescriptor)
    shp = _shape(output_shape, label)
    dy = g.as_tensor(incoming_gradient, label)
    source = g.as_tensor(source, label, like=dy)
    return g.add_op("convolution_3d_weights_gradient", [dy, source], {"output_shape": shp, "descriptor": desc},
                    name).output


register_convolution_gradients("convolution_3d")
