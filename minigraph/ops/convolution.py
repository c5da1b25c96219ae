"""Regular (grouped) 2D convolution and its data and weights gradients (MPSGraphConvolutionOps).

Weights are OIHW ``[Cout, Cin/groups, kH, kW]`` or HWIO ``[kH, kW, Cin/groups, Cout]``; data is
NCHW or NHWC. Output channel ``o`` belongs to group ``o // (Cout/groups)`` and reads the input
channels of that group (MPSGRAPH.md §6). Padding and output sizes follow §3 (``geometry.py``).

The helpers at the top (layouts, output-shape parsing, per-axis geometry with dynamic sizes)
are shared with ``depthwise3d.py`` and ``pooling.py``.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ..descriptors import Convolution2DOpDescriptor, PaddingStyle, TensorNamedDataLayout, frozen_copy
from ..errors import DescriptorError, DTypeError, ShapeError
from ..ir import Tensor
from ..types import ShapedType, as_shape
from .geometry import effective_kernel, resolve_axis
from ._util import register_convolution_gradients
from .registry import defop

NCHW, NHWC = TensorNamedDataLayout.NCHW, TensorNamedDataLayout.NHWC
OIHW, HWIO = TensorNamedDataLayout.OIHW, TensorNamedDataLayout.HWIO


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
    if len(t.shape) != rank:
        raise ShapeError(f"{what} must be rank {rank} ({layout}), got shape {t.shape} of rank {len(t.shape)}")


def data_dims(shape: Sequence[int], layout) -> tuple:
    """(N, C, H, W) of a rank-4 shape in NCHW or NHWC."""
    n, a, b, c = shape
    return (n, a, b, c) if layout == NCHW else (n, c, a, b)


def data_shape(n: int, c: int, h: int, w: int, layout) -> tuple:
    return (n, c, h, w) if layout == NCHW else (n, h, w, c)


def weight_dims(shape: Sequence[int], layout) -> tuple:
    """(O, I, kH, kW) of a rank-4 weights shape in OIHW or HWIO."""
    a, b, c, d = shape
    return (a, b, c, d) if layout == OIHW else (d, c, a, b)


def weight_shape(o: int, i: int, kh: int, kw: int, layout) -> tuple:
    return (o, i, kh, kw) if layout == OIHW else (kh, kw, i, o)


def parse_output_shape(value: Any, rank: Optional[int], what: str = "output_shape") -> tuple:
    """A static shape given as a sequence of ints (-1 for a size taken from the other inputs)."""
    if isinstance(value, Tensor):
        raise ShapeError(f"{what} must be a sequence of ints (e.g. x.shape); shape tensors "
                         "(MPSGraph's outputShapeTensor: variants) are not supported")
    shp = as_shape(value, what)
    if rank is not None and len(shp) != rank:
        raise ShapeError(f"{what} must have exactly {rank} entries, got {len(shp)}: {list(shp)}")
    return shp


def axis_geometry(size: int, k: int, s: int, d: int, style, before: int, after: int, axis: str,
                  ceil_mode: bool = False) -> tuple:
    """``(pad_before, pad_after, out)`` per §3; out is -1 when size or kernel is dynamic."""
    if size < 0 or k < 0:
        if style == PaddingStyle.EXPLICIT:
            return before, after, -1
        return 0, 0, -1
    if k == 0:
        raise ShapeError(f"{axis}: kernel size is 0; kernels need at least 1 tap")
    pb, pa, out = resolve_axis(size, k, s, d, style, before, after, axis=axis, ceil_mode=ceil_mode)
    if out <= 0:
        raise ShapeError(f"{axis}: input size {size} gives output size {out} with kernel {k}, stride {s}, "
                         f"dilation {d} and padding style {PaddingStyle(style).name}; the output needs at "
                         "least one element")
    return pb, pa, out


def invert_axis(out: int, k: int, s: int, d: int, style, before: int, after: int) -> int:
    """The forward input size that gives ``out`` when it is unique (stride 1), else -1."""
    if out < 0 or k < 0 or s != 1:
        return -1
    K = effective_kernel(k, d)
    if style == PaddingStyle.EXPLICIT:
        size = out - before - after + K - 1
    elif style == PaddingStyle.TF_VALID:
        size = out + K - 1
    else:
        size = out
    return size if size >= 1 else -1


def merge(declared: int, actual: int) -> int:
    """A size from output_shape (-1 = unknown) merged with one implied by another input."""
    return actual if declared == -1 else declared


def mismatch(a: int, b: int) -> bool:
    return a != -1 and b != -1 and a != b


def conv2d_geometry(desc, h: int, w: int, kh: int, kw: int) -> tuple:
    """((pt, pb, OH), (pl, pr, OW)) of a 2D convolution descriptor."""
    gy = axis_geometry(h, kh, desc.stride_in_y, desc.dilation_rate_in_y, desc.padding_style,
                       desc.padding_top, desc.padding_bottom, "H")
    gx = axis_geometry(w, kw, desc.stride_in_x, desc.dilation_rate_in_x, desc.padding_style,
                       desc.padding_left, desc.padding_right, "W")
    return gy, gx


def _kernel_positive(kh: int, kw: int, wshape: tuple) -> None:
    if kh == 0 or kw == 0:
        raise ShapeError(f"weights shape {wshape} has a zero kernel size; kH and kW must be >= 1")


def _desc(descriptor, label: str, forward: Any = None):
    if descriptor is not None and forward is not None:
        raise DescriptorError(f"{label}: give descriptor or forward_convolution_descriptor, not both")
    return frozen_copy(descriptor if descriptor is not None else forward, Convolution2DOpDescriptor, label)


def _label(type: str, name: Optional[str]) -> str:
    return f"{type} op {name or type!r}"


def _groups_check(c_in: int, i: int, o: int, groups: int, src_what: str, wshape: tuple, wlayout) -> None:
    if c_in != -1 and i != -1 and c_in != i * groups:
        raise ShapeError(f"{src_what} has {c_in} channels but weights {wshape} ({wlayout.name}, Cin/groups={i}) "
                         f"with groups={groups} need {i * groups}; weights must be "
                         f"{'[Cout, Cin/groups, kH, kW]' if wlayout == OIHW else '[kH, kW, Cin/groups, Cout]'}")
    if o != -1 and o % groups:
        raise ShapeError(f"weights {wshape} have Cout={o} output channels, which groups={groups} does not "
                         f"divide; Cout must be a multiple of groups")
    if i == 0 or o == 0:
        raise ShapeError(f"weights {wshape} have no channels; Cin/groups and Cout must be >= 1")


# ------------------------------------------------------------------ forward
def _infer_conv(in_types, attrs):
    x, w = in_types
    d = attrs["descriptor"]
    check_float(in_types, ("source", "weights"))
    check_rank(x, 4, "source", d.data_layout.name)
    check_rank(w, 4, "weights", d.weights_layout.name)
    n, c, h, wd = data_dims(x.shape, d.data_layout)
    o, i, kh, kw = weight_dims(w.shape, d.weights_layout)
    _kernel_positive(kh, kw, w.shape)
    _groups_check(c, i, o, d.groups, f"source {x.shape} ({d.data_layout.name})", w.shape, d.weights_layout)
    (_, _, oh), (_, _, ow) = conv2d_geometry(d, h, wd, kh, kw)
    return [ShapedType(data_shape(n, o, oh, ow, d.data_layout), x.dtype)]


@defop("convolution_2d", swift="convolution2D(_:weights:descriptor:name:)",
       objc="convolution2DWithSourceTensor:weightsTensor:descriptor:name:",
       inputs=("source", "weights"), infer=_infer_conv, family="convolution", attrs=("descriptor",))
def convolution_2d(g, source, weights, descriptor: Optional[Convolution2DOpDescriptor] = None,
                   name: Optional[str] = None):
    """Grouped 2D convolution (cross-correlation) of ``source`` with ``weights``
    (MPSGraph ``convolution2D(_:weights:descriptor:name:)``).

    ``y[n, o, oh, ow] = sum_{ci, i, j} x[n, grp(o)*Cin/g + ci, oh*sY + i*dY - pT, ow*sX + j*dX - pL]
    * W[o, ci, i, j]`` (NCHW/OIHW), zero outside the input. The descriptor is copied.
    """
    label = _label("convolution_2d", name)
    desc = _desc(descriptor, label)
    source = g.as_tensor(source, label)
    weights = g.as_tensor(weights, label, like=source)
    return g.add_op("convolution_2d", [source, weights], {"descriptor": desc}, name).output


# ------------------------------------------------------------------ data gradient
def _infer_data_grad(in_types, attrs):
    dy, w = in_types
    d = attrs["descriptor"]
    check_float(in_types, ("incoming_gradient", "weights"))
    check_rank(dy, 4, "incoming_gradient", d.data_layout.name)
    check_rank(w, 4, "weights", d.weights_layout.name)
    o, i, kh, kw = weight_dims(w.shape, d.weights_layout)
    _kernel_positive(kh, kw, w.shape)
    dn, do, doh, dow = data_dims(dy.shape, d.data_layout)
    n, c, h, wd = data_dims(attrs["output_shape"], d.data_layout)
    n = merge(n, dn)
    c = merge(c, -1 if i == -1 else i * d.groups)
    h = merge(h, invert_axis(doh, kh, d.stride_in_y, d.dilation_rate_in_y, d.padding_style,
                             d.padding_top, d.padding_bottom))
    wd = merge(wd, invert_axis(dow, kw, d.stride_in_x, d.dilation_rate_in_x, d.padding_style,
                               d.padding_left, d.padding_right))
    _groups_check(c, i, o, d.groups, f"output_shape {list(attrs['output_shape'])} ({d.data_layout.name})",
                  w.shape, d.weights_layout)
    if mismatch(do, o):
        raise ShapeError(f"incoming_gradient {dy.shape} has {do} channels but the weights {w.shape} "
                         f"({d.weights_layout.name}) have Cout={o}; they must match")
    if mismatch(dn, n):
        raise ShapeError(f"incoming_gradient {dy.shape} has batch {dn} but output_shape "
                         f"{list(attrs['output_shape'])} has batch {n}")
    (_, _, oh), (_, _, ow) = conv2d_geometry(d, h, wd, kh, kw)
    if mismatch(doh, oh) or mismatch(dow, ow):
        raise ShapeError(f"incoming_gradient {dy.shape} has spatial size ({doh}, {dow}) but the forward "
                         f"convolution of output_shape {list(attrs['output_shape'])} with kernel ({kh}, {kw}) "
                         f"gives ({oh}, {ow}); output_shape must be the forward source shape")
    return [ShapedType(data_shape(n, c, h, wd, d.data_layout), dy.dtype)]


@defop("convolution_2d_data_gradient",
       swift="convolution2DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)",
       objc="convolution2DDataGradientWithIncomingGradientTensor:weightsTensor:outputShape:"
            "forwardConvolutionDescriptor:name:",
       inputs=("incoming_gradient", "weights"), infer=_infer_data_grad, family="convolution", role="data_gradient", forward="convolution_2d",
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
    label = _label("convolution_2d_data_gradient", name)
    desc = _desc(descriptor, label, forward_convolution_descriptor)
    try:
        shp = parse_output_shape(output_shape, 4)
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    dy = g.as_tensor(incoming_gradient, label)
    weights = g.as_tensor(weights, label, like=dy)
    return g.add_op("convolution_2d_data_gradient", [dy, weights], {"output_shape": shp, "descriptor": desc}, name).output


# ------------------------------------------------------------------ weights gradient
def _infer_weights_grad(in_types, attrs):
    dy, x = in_types
    d = attrs["descriptor"]
    check_float(in_types, ("incoming_gradient", "source"))
    check_rank(dy, 4, "incoming_gradient", d.data_layout.name)
    check_rank(x, 4, "source", d.data_layout.name)
    dn, do, doh, dow = data_dims(dy.shape, d.data_layout)
    n, c, h, wd = data_dims(x.shape, d.data_layout)
    o, i, kh, kw = weight_dims(attrs["output_shape"], d.weights_layout)
    o = merge(o, do)
    if i == -1 and c != -1 and c % d.groups == 0:
        i = c // d.groups
    _kernel_positive(kh, kw, attrs["output_shape"])
    wshape = weight_shape(o, i, kh, kw, d.weights_layout)
    _groups_check(c, i, o, d.groups, f"source {x.shape} ({d.data_layout.name})", tuple(attrs["output_shape"]),
                  d.weights_layout)
    if mismatch(do, o):
        raise ShapeError(f"incoming_gradient {dy.shape} has {do} channels but output_shape "
                         f"{list(attrs['output_shape'])} ({d.weights_layout.name}) has Cout={o}; they must match")
    if mismatch(dn, n):
        raise ShapeError(f"incoming_gradient {dy.shape} has batch {dn} but source {x.shape} has batch {n}")
    (_, _, oh), (_, _, ow) = conv2d_geometry(d, h, wd, kh, kw)
    if mismatch(doh, oh) or mismatch(dow, ow):
        raise ShapeError(f"incoming_gradient {dy.shape} has spatial size ({doh}, {dow}) but the forward "
                         f"convolution of source {x.shape} with the kernel ({kh}, {kw}) of output_shape "
                         f"{list(attrs['output_shape'])} gives ({oh}, {ow}); output_shape must be the forward "
                         "weights shape")
    return [ShapedType(wshape, dy.dtype)]


@defop("convolution_2d_weights_gradient",
       swift="convolution2DWeightsGradient(_:source:outputShape:forwardConvolutionDescriptor:name:)",
       objc="convolution2DWeightsGradientWithIncomingGradientTensor:sourceTensor:outputShape:"
            "forwardConvolutionDescriptor:name:",
       inputs=("incoming_gradient", "source"), infer=_infer_weights_grad, family="convolution", role="weights_gradient", forward="convolution_2d",
       differentiable=False, attrs=("output_shape", "descriptor"))
def convolution_2d_weights_gradient(g, incoming_gradient, source, output_shape: Sequence[int],
                                    descriptor: Optional[Convolution2DOpDescriptor] = None,
                                    name: Optional[str] = None, *, forward_convolution_descriptor=None):
    """Gradient of ``convolution_2d`` with respect to its weights
    (MPSGraph ``convolution2DWeightsGradient(_:source:outputShape:forwardConvolutionDescriptor:name:)``).

    ``output_shape`` is the forward **weights** shape (the header's "source shape" is an erratum):
    it is the only source of kH and kW. Not differentiable, as in MPSGraph.
    """
    label = _label("convolution_2d_weights_gradient", name)
    desc = _desc(descriptor, label, forward_convolution_descriptor)
    try:
        shp = parse_output_shape(output_shape, 4)
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    dy = g.as_tensor(incoming_gradient, label)
    source = g.as_tensor(source, label, like=dy)
    return g.add_op("convolution_2d_weights_gradient", [dy, source], {"output_shape": shp, "descriptor": desc},
                   name).output


# ------------------------------------------------------------------ gradient rules
register_convolution_gradients("convolution_2d", "convolution_2d_data_gradient",
                               "convolution_2d_weights_gradient")
