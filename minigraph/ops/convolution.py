"""Regular (grouped) 2D convolution and its data and weights gradients (MPSGraphConvolutionOps),
and the infer rules of every convolution: regular 2D and 3D, depthwise 2D and 3D.

Weights are OIHW ``[Cout, Cin/groups, kH, kW]`` or HWIO ``[kH, kW, Cin/groups, Cout]``; data is
NCHW or NHWC. Output channel ``o`` belongs to group ``o // (Cout/groups)`` and reads the input
channels of that group (spec §6). Sizes and padding come from ``ConvGeometry`` (``geometry.py``).

The family's infer rules live here, once: ``forward_rule``, ``data_gradient_rule`` and
``weights_gradient_rule`` build an op's rule from a ``ConvRules``, which holds only what a kind
does differently (ranks, the weights' channels, sizes a gradient's ``output_shape`` leaves
unknown). ``REGULAR`` is the regular convolution's, for every rank (``convolution3d.py``);
``depthwise.py`` and ``depthwise3d.py`` subclass it. The validation helpers at the top (dtypes,
ranks, output-shape parsing) are shared with ``convolution_transpose.py`` and ``pooling.py`` too.
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


def check_kernel_positive(kernel: Sequence[int], wshape: Sequence[int], what: str = "weights shape") -> None:
    """A ShapeError when a kernel size (2 or 3 of them, slowest axis first) is 0."""
    if 0 in kernel:
        axes = ", ".join("k" + a for a in "DHW"[3 - len(kernel):])
        raise ShapeError(f"{what} {tuple(wshape)} gives kernel {tuple(kernel)}, a zero kernel size; {axes} "
                         "must be >= 1")


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


def _by(sizes: Sequence[int]) -> str:
    return str(tuple(sizes))


# ------------------------------------------------------------------ the rules of every kind
class ConvRules:
    """What the regular, depthwise 2D and depthwise 3D convolutions do differently in their
    infer rules: operand ranks, how the weights' channels relate to the source's, and how a
    gradient completes a size its ``output_shape`` leaves unknown (-1). The forward, data
    gradient and weights gradient rules below (``forward_rule`` and the others) are written
    once over these hooks and ``ConvGeometry.of``; this class is the regular convolution's."""

    def check_operands(self, types: Sequence[ShapedType], names: Sequence[str], d: Any) -> None:
        """dtypes and ranks of the operands (``names``: their labels, ``weights`` for the weights)."""
        check_float(types, names)
        for t, what in zip(types, names):
            check_rank(t, conv_rank(d), what, (d.weights_layout if what == "weights" else d.data_layout).name)

    def check_channels(self, d: Any, geo: ConvGeometry, c: int, wshape: Sequence[int], src: tuple,
                       wts: tuple) -> None:
        """A ShapeError unless ``c`` source channels (-1: unknown) fit the weights' channels;
        ``src`` and ``wts`` are (label, shape) of the tensors or output shapes they come from."""
        o, i = _weights_channels(geo, wshape)
        _groups_check(c, i, o, d.groups, f"{src[0]} {shape_text(src[1])} ({d.data_layout.name})", tuple(wshape),
                      d.weights_layout)

    def channels_text(self, geo: ConvGeometry) -> str:
        """The output channels a geometry gives, as error messages name them."""
        return f"Cout={geo.out_channels}"

    def source_channels(self, d: Any, geo: ConvGeometry, wshape: Sequence[int], dy_channels: int) -> int:
        """The source channels the weights (or the incoming gradient) imply, or -1."""
        i = _weights_channels(geo, wshape)[1]
        return -1 if i == -1 else i * d.groups

    def declared_source(self, d: Any, dy: ShapedType, wshape: Sequence[int], shape: Any) -> tuple:
        """The data gradient's ``output_shape`` (the forward source shape), as given."""
        return tuple(shape)

    def input_size(self, d: Any, shape: Sequence[int], axis: int, size: int, unique: int) -> int:
        """The source size along spatial ``axis``: the declared one, or the only one that gives dy's."""
        return merge(size, unique)

    def complete_weights(self, d: Any, geo: ConvGeometry, shape: Sequence[int], c: int, dy_channels: int,
                         dy_shape: Sequence[int]) -> tuple:
        """The weights gradient's ``output_shape`` with the channel sizes it leaves unknown filled in."""
        o, i = _weights_channels(geo, shape)
        o = merge(o, dy_channels)
        if i == -1 and c != -1 and c % d.groups == 0:
            i = c // d.groups
        wshape = list(shape)
        wshape[geo.weights_axes[0]], wshape[geo.weights_axes[2]] = o, i
        return tuple(wshape)


REGULAR = ConvRules()


def shape_text(shape: Any) -> str:
    """A shape as messages write it: a list as given by output_shape, a tuple for a tensor's shape."""
    return str(list(shape)) if isinstance(shape, list) else str(tuple(shape))


def check_incoming_gradient(rules: ConvRules, d: Any, geo: ConvGeometry, dy_shape: Sequence[int], given: str,
                            hint: str) -> None:
    """dy must have the forward result's shape: its channels, batch and spatial sizes."""
    dn, dc, *dy_spatial = geo.data_sizes(dy_shape)
    nb = len(geo.batch_shape)
    if mismatch(dc, geo.out_channels):
        raise ShapeError(f"incoming_gradient {tuple(dy_shape)} has {dc} channels but {given} give "
                         f"{rules.channels_text(geo)}; they must match")
    if any(mismatch(a, b) for a, b in zip(dy_shape[:nb], geo.batch_shape)):
        def text(sizes):
            return str(sizes[0]) if len(sizes) == 1 else str(tuple(sizes))
        raise ShapeError(f"incoming_gradient {tuple(dy_shape)} has batch {text(dy_shape[:nb])} but {given} give "
                         f"batch {text(geo.batch_shape)}; batch axes must match")
    if any(mismatch(a, b) for a, b in zip(dy_spatial, geo.output_size)):
        raise ShapeError(f"incoming_gradient {tuple(dy_shape)} has spatial size {_by(dy_spatial)} but the forward "
                         f"convolution that {given} give has output size {_by(geo.output_size)} (input "
                         f"{_by(geo.input_size)}, kernel {_by(geo.kernel_size)}, stride {_by(geo.strides)}, "
                         f"dilation {_by(geo.dilations)}, padding style {d.padding_style.name}, padding before "
                         f"{_by(geo.padding_before)} and after {_by(geo.padding_after)}); expected incoming_gradient "
                         f"shape {geo.result_shape}: {hint}")


# ------------------------------------------------------------------ forward
def forward_rule(rules: ConvRules):
    """The infer rule of a forward convolution of this kind."""
    def infer(in_types, attrs):
        x, w = in_types
        d = attrs["descriptor"]
        rules.check_operands(in_types, ("source", "weights"), d)
        geo = ConvGeometry.of(d, x.shape, w.shape)
        check_kernel_positive(geo.kernel_size, w.shape)
        rules.check_channels(d, geo, geo.data_sizes(x.shape)[1], w.shape, ("source", x.shape), ("weights", w.shape))
        return [ShapedType(geo.result_shape, x.dtype)]
    return infer


def data_gradient_rule(rules: ConvRules):
    """The infer rule of a data gradient of this kind: the forward source's shape from
    ``output_shape``, with its unknown sizes taken from dy and the weights where they are unique."""
    def infer(in_types, attrs):
        dy, w = in_types
        d = attrs["descriptor"]
        rules.check_operands(in_types, ("incoming_gradient", "weights"), d)
        shape = rules.declared_source(d, dy, w.shape, attrs["output_shape"])
        declared = ConvGeometry.of(d, shape, w.shape)
        check_kernel_positive(declared.kernel_size, w.shape)
        nb = len(declared.batch_shape)
        do, *dy_spatial = (dy.shape[a] for a in declared.data_axes)
        c, *spatial = (shape[a] for a in declared.data_axes)
        batch = tuple(merge(n, dn) for n, dn in zip(shape[:nb], dy.shape[:nb]))
        c = merge(c, rules.source_channels(d, declared, w.shape, do))
        spatial = [rules.input_size(d, shape, axis, size, unique_input_size(
            out, k, s, dl, d.padding_style, b, a)) for axis, (size, out, k, s, dl, b, a) in enumerate(zip(
                spatial, dy_spatial, declared.kernel_size, declared.strides, declared.dilations,
                declared.padding_before, declared.padding_after))]
        given = f"output_shape {shape_text(list(shape))}"
        rules.check_channels(d, declared, c, w.shape, ("output_shape", list(shape)), ("weights", w.shape))
        geo = ConvGeometry.of(d, declared.data_shape(c, spatial, batch), w.shape)
        check_incoming_gradient(rules, d, geo, dy.shape, f"{given} and weights {w.shape}",
                                "output_shape must be the forward source shape")
        return [ShapedType(geo.source_shape, dy.dtype)]
    return infer


def weights_gradient_rule(rules: ConvRules):
    """The infer rule of a weights gradient of this kind: the forward weights' shape from
    ``output_shape`` (the only source of the kernel size), its unknown channels from dy and x."""
    def infer(in_types, attrs):
        dy, x = in_types
        d = attrs["descriptor"]
        shape = attrs["output_shape"]
        rules.check_operands(in_types, ("incoming_gradient", "source"), d)
        declared = ConvGeometry.of(d, x.shape, shape)
        c = declared.data_sizes(x.shape)[1]
        check_kernel_positive(declared.kernel_size, shape, "output_shape (the forward weights shape)")
        wshape = rules.complete_weights(d, declared, shape, c, dy.shape[declared.data_axes[0]], dy.shape)
        rules.check_channels(d, declared, c, wshape, ("source", x.shape), ("output_shape", list(shape)))
        geo = ConvGeometry.of(d, x.shape, wshape)
        check_incoming_gradient(rules, d, geo, dy.shape, f"source {x.shape} and output_shape {list(shape)}",
                                "output_shape must be the forward weights shape")
        return [ShapedType(wshape, dy.dtype)]
    return infer


infer_convolution = forward_rule(REGULAR)
infer_data_gradient = data_gradient_rule(REGULAR)
infer_weights_gradient = weights_gradient_rule(REGULAR)


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
