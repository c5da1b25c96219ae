"""Regular (grouped) 2D convolution and its data and weights gradients (MPSGraphConvolutionOps),
and the infer rules every regular convolution shares, for any number of spatial axes.

Weights are OIHW ``[Cout, Cin/groups, kH, kW]`` or HWIO ``[kH, kW, Cin/groups, Cout]``; data is
NCHW or NHWC. Output channel ``o`` belongs to group ``o // (Cout/groups)`` and reads the input
channels of that group (spec §6). Sizes and padding come from ``ConvGeometry`` (``geometry.py``);
the infer rules below read the rank and the layouts from the descriptor, so ``convolution3d.py``
declares its ops on the same rules.

The validation helpers at the top (dtypes, ranks, output-shape parsing, sizes known only at
run time) are shared with ``depthwise.py``, ``depthwise3d.py`` and ``pooling.py``.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ..descriptors import Convolution2DOpDescriptor, Convolution3DOpDescriptor, TensorNamedDataLayout, frozen_copy
from ..errors import DescriptorError, DTypeError, ShapeError
from ..ir import Tensor
from ..types import ShapedType, as_shape
from .conv_gradients import register_convolution_gradients
from .geometry import ConvGeometry, unique_input_size
from .registry import defop


# ------------------------------------------------------------------ shared helpers
def check_float(types: Sequence[ShapedType], names: Sequence[str]) -> None:
    """Every operand floating point (float16/32/64) and of one dtype: no implicit promotion."""
    for t, n in zip(types, names):
        if not t.dtype.is_floating:
            raise DTypeError(f"{n} has dtype {t.dtype.name}; this op needs float32, float16 (or float64 "
                             "on numpy); cast it first")
    for t, n in zip(types[1:], names[1:]):
        if t.dtype != types[0].dtype:
            raise DTypeError(f"{names[0]} is {types[0].dtype.name} but {n} is {t.dtype.name}; "
                             "all operands need one dtype (cast one with g.cast)")


def check_rank(t: ShapedType, rank: int, what: str, layout: str) -> None:
    """A ShapeError unless ``t`` has rank ``rank``."""
    if len(t.shape) != rank:
        raise ShapeError(f"{what} must be rank {rank} ({layout}), got shape {t.shape} of rank {len(t.shape)}")


def parse_output_shape(value: Any, rank: Optional[int], what: str = "output_shape") -> tuple:
    """A static shape given as a sequence of ints (-1 for a size taken from the other inputs)."""
    if isinstance(value, Tensor):
        raise ShapeError(f"{what} must be a sequence of ints (e.g. x.shape); shape tensors "
                         "(MPSGraph's outputShapeTensor: variants) are not supported")
    shp = as_shape(value, what)
    if rank is not None and len(shp) != rank:
        raise ShapeError(f"{what} must have exactly {rank} entries, got {len(shp)}: {list(shp)}")
    return shp


def merge(declared: int, actual: int) -> int:
    """A size from output_shape (-1 = unknown) merged with one implied by another input."""
    return actual if declared == -1 else declared


def mismatch(a: int, b: int) -> bool:
    """Two sizes that are both known and differ."""
    return a != -1 and b != -1 and a != b


def check_kernel_positive(kernel: Sequence[int], wshape: Sequence[int]) -> None:
    """A ShapeError when a kernel size (2 or 3 of them, slowest axis first) is 0."""
    if 0 in kernel:
        axes = ", ".join("k" + a for a in "DHW"[3 - len(kernel):])
        raise ShapeError(f"weights shape {tuple(wshape)} has a zero kernel size; {axes} must be >= 1")


def conv_desc(descriptor, label: str, forward: Any = None, cls: type = Convolution2DOpDescriptor):
    """A frozen copy of the descriptor (or of MPSGraph's ``forward_convolution_descriptor``)."""
    if descriptor is not None and forward is not None:
        raise DescriptorError(f"{label}: give descriptor or forward_convolution_descriptor, not both")
    return frozen_copy(descriptor if descriptor is not None else forward, cls, label)



def conv_rank(d: Any) -> int:
    """The rank of the data and weights of a regular convolution: 4 (2D) or 5 (3D)."""
    return 5 if isinstance(d, Convolution3DOpDescriptor) else 4


def _weights_form(layout: TensorNamedDataLayout) -> str:
    """The weights shape a layout names, e.g. ``[Cout, Cin/groups, kH, kW]`` for OIHW."""
    return "[" + ", ".join({"O": "Cout", "I": "Cin/groups"}.get(a, "k" + a) for a in layout.name) + "]"


def op_label(type: str, name: Optional[str]) -> str:
    return f"{type} op {name or type!r}"


def _groups_check(c_in: int, i: int, o: int, groups: int, src_what: str, wshape: tuple, wlayout) -> None:
    if c_in != -1 and i != -1 and c_in != i * groups:
        raise ShapeError(f"{src_what} has {c_in} channels but weights {wshape} ({wlayout.name}, Cin/groups={i}) "
                         f"with groups={groups} need {i * groups}; weights must be {_weights_form(wlayout)}")
    if o != -1 and o % groups:
        raise ShapeError(f"weights {wshape} have Cout={o} output channels, which groups={groups} does not "
                         f"divide; Cout must be a multiple of groups")
    if i == 0 or o == 0:
        raise ShapeError(f"weights {wshape} have no channels; Cin/groups and Cout must be >= 1")


def _weights_channels(geo: ConvGeometry, wshape: Sequence[int]) -> tuple:
    """(Cout, Cin/groups) as the weights shape gives them."""
    return wshape[geo.weights_axes[0]], wshape[geo.weights_axes[2]]


def _check_ranks(types: Sequence[ShapedType], names: Sequence[str], d) -> None:
    check_float(types, names)
    for t, what in zip(types, names):
        check_rank(t, conv_rank(d), what, (d.weights_layout if what == "weights" else d.data_layout).name)


# ------------------------------------------------------------------ forward
def infer_convolution(in_types, attrs):
    x, w = in_types
    d = attrs["descriptor"]
    _check_ranks(in_types, ("source", "weights"), d)
    geo = ConvGeometry.for_convolution(d, x.shape, w.shape)
    o, i = _weights_channels(geo, w.shape)
    check_kernel_positive(geo.kernel_size, w.shape)
    _groups_check(geo.in_channels, i, o, d.groups, f"source {x.shape} ({d.data_layout.name})", w.shape,
                  d.weights_layout)
    return [ShapedType(geo.result_shape, x.dtype)]


@defop("convolution_2d", swift="convolution2D(_:weights:descriptor:name:)",
       objc="convolution2DWithSourceTensor:weightsTensor:descriptor:name:",
       inputs=("source", "weights"), infer=infer_convolution, family="convolution", attrs=("descriptor",))
def convolution_2d(g, source, weights, descriptor: Optional[Convolution2DOpDescriptor] = None,
                   name: Optional[str] = None):
    """Grouped 2D convolution (cross-correlation) of ``source`` with ``weights``
    (MPSGraph ``convolution2D(_:weights:descriptor:name:)``).

    ``y[n, o, oh, ow] = sum_{ci, i, j} x[n, grp(o)*Cin/g + ci, oh*sY + i*dY - pT, ow*sX + j*dX - pL]
    * W[o, ci, i, j]`` (NCHW/OIHW), zero outside the input. The descriptor is copied.
    """
    label = op_label("convolution_2d", name)
    desc = conv_desc(descriptor, label)
    source = g.as_tensor(source, label)
    weights = g.as_tensor(weights, label, like=source)
    return g.add_op("convolution_2d", [source, weights], {"descriptor": desc}, name).output


# ------------------------------------------------------------------ data gradient
def infer_data_gradient(in_types, attrs):
    dy, w = in_types
    d = attrs["descriptor"]
    shape = attrs["output_shape"]
    _check_ranks(in_types, ("incoming_gradient", "weights"), d)
    declared = ConvGeometry.for_convolution(d, shape, w.shape)
    o, i = _weights_channels(declared, w.shape)
    check_kernel_positive(declared.kernel_size, w.shape)
    dn, do, *dy_spatial = declared.data_sizes(dy.shape)
    n, c, *spatial = declared.data_sizes(shape)
    n = merge(n, dn)
    c = merge(c, -1 if i == -1 else i * d.groups)
    spatial = [merge(size, unique_input_size(out, k, s, dl, d.padding_style, b, a)) for size, out, k, s, dl, b, a in
               zip(spatial, dy_spatial, declared.kernel_size, declared.strides, declared.dilations,
                   declared.padding_before, declared.padding_after)]
    _groups_check(c, i, o, d.groups, f"output_shape {list(shape)} ({d.data_layout.name})", w.shape, d.weights_layout)
    if mismatch(do, o):
        raise ShapeError(f"incoming_gradient {dy.shape} has {do} channels but the weights {w.shape} "
                         f"({d.weights_layout.name}) have Cout={o}; they must match")
    if mismatch(dn, n):
        raise ShapeError(f"incoming_gradient {dy.shape} has batch {dn} but output_shape {list(shape)} has batch {n}")
    geo = ConvGeometry.for_convolution(d, declared.data_shape(c, spatial, (n,)), w.shape)
    if any(mismatch(a, b) for a, b in zip(dy_spatial, geo.output_size)):
        raise ShapeError(f"incoming_gradient {dy.shape} has spatial size {tuple(dy_spatial)} but the forward "
                         f"convolution of output_shape {list(shape)} with kernel {geo.kernel_size} "
                         f"gives {geo.output_size}; output_shape must be the forward source shape")
    return [ShapedType(geo.source_shape, dy.dtype)]


@defop("convolution_2d_data_gradient",
       swift="convolution2DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)",
       objc="convolution2DDataGradientWithIncomingGradientTensor:weightsTensor:outputShape:"
            "forwardConvolutionDescriptor:name:",
       inputs=("incoming_gradient", "weights"), infer=infer_data_gradient, family="convolution", role="data_gradient", forward="convolution_2d",
       attrs=("output_shape", "descriptor"))
def convolution_2d_data_gradient(g, incoming_gradient, weights, output_shape: Sequence[int],
                                 descriptor: Optional[Convolution2DOpDescriptor] = None,
                                 name: Optional[str] = None, *, forward_convolution_descriptor=None):
    """Gradient of ``convolution_2d`` with respect to its source: the transposed convolution
    (MPSGraph ``convolution2DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``).

    ``output_shape`` is the forward **source** shape (4 numbers in the data layout): with stride > 1
    several source sizes give the same output, so it cannot be inferred. ``descriptor`` is the
    forward descriptor (``forward_convolution_descriptor`` is accepted as MPSGraph's label).
    """
    label = op_label("convolution_2d_data_gradient", name)
    desc = conv_desc(descriptor, label, forward_convolution_descriptor)
    try:
        shp = parse_output_shape(output_shape, 4)
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    dy = g.as_tensor(incoming_gradient, label)
    weights = g.as_tensor(weights, label, like=dy)
    return g.add_op("convolution_2d_data_gradient", [dy, weights], {"output_shape": shp, "descriptor": desc}, name).output


# ------------------------------------------------------------------ weights gradient
def infer_weights_gradient(in_types, attrs):
    dy, x = in_types
    d = attrs["descriptor"]
    shape = attrs["output_shape"]
    _check_ranks(in_types, ("incoming_gradient", "source"), d)
    geo = ConvGeometry.for_convolution(d, x.shape, shape)
    dn, do, *dy_spatial = geo.data_sizes(dy.shape)
    o, i = _weights_channels(geo, shape)
    o = merge(o, do)
    if i == -1 and geo.in_channels != -1 and geo.in_channels % d.groups == 0:
        i = geo.in_channels // d.groups
    check_kernel_positive(geo.kernel_size, shape)
    wshape = list(shape)
    wshape[geo.weights_axes[0]], wshape[geo.weights_axes[2]] = o, i
    _groups_check(geo.in_channels, i, o, d.groups, f"source {x.shape} ({d.data_layout.name})", tuple(shape),
                  d.weights_layout)
    if mismatch(do, o):
        raise ShapeError(f"incoming_gradient {dy.shape} has {do} channels but output_shape "
                         f"{list(shape)} ({d.weights_layout.name}) has Cout={o}; they must match")
    if mismatch(dn, geo.batch):
        raise ShapeError(f"incoming_gradient {dy.shape} has batch {dn} but source {x.shape} has batch {geo.batch}")
    if any(mismatch(a, b) for a, b in zip(dy_spatial, geo.output_size)):
        raise ShapeError(f"incoming_gradient {dy.shape} has spatial size {tuple(dy_spatial)} but the forward "
                         f"convolution of source {x.shape} with the kernel {geo.kernel_size} of output_shape "
                         f"{list(shape)} gives {geo.output_size}; output_shape must be the forward "
                         "weights shape")
    return [ShapedType(tuple(wshape), dy.dtype)]


@defop("convolution_2d_weights_gradient",
       swift="convolution2DWeightsGradient(_:source:outputShape:forwardConvolutionDescriptor:name:)",
       objc="convolution2DWeightsGradientWithIncomingGradientTensor:sourceTensor:outputShape:"
            "forwardConvolutionDescriptor:name:",
       inputs=("incoming_gradient", "source"), infer=infer_weights_gradient, family="convolution", role="weights_gradient", forward="convolution_2d",
       differentiable=False, attrs=("output_shape", "descriptor"))
def convolution_2d_weights_gradient(g, incoming_gradient, source, output_shape: Sequence[int],
                                    descriptor: Optional[Convolution2DOpDescriptor] = None,
                                    name: Optional[str] = None, *, forward_convolution_descriptor=None):
    """Gradient of ``convolution_2d`` with respect to its weights
    (MPSGraph ``convolution2DWeightsGradient(_:source:outputShape:forwardConvolutionDescriptor:name:)``).

    ``output_shape`` is the forward **weights** shape (the header's "source shape" is an erratum):
    it is the only source of kH and kW. Not differentiable, as in MPSGraph.
    """
    label = op_label("convolution_2d_weights_gradient", name)
    desc = conv_desc(descriptor, label, forward_convolution_descriptor)
    try:
        shp = parse_output_shape(output_shape, 4)
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    dy = g.as_tensor(incoming_gradient, label)
    source = g.as_tensor(source, label, like=dy)
    return g.add_op("convolution_2d_weights_gradient", [dy, source], {"output_shape": shp, "descriptor": desc},
                   name).output


# ------------------------------------------------------------------ gradient rules
register_convolution_gradients("convolution_2d")
