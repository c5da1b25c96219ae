"""2D convolution transpose and its data and weights gradients (MPSGraphConvolutionTransposeOps).

MPSGraph's header: the transpose "is exactly the same as" ``convolution2DDataGradient``, and its
weights and source "are interpreted as they are" there. So the descriptor is the one of the
forward convolution whose data gradient it is, the weights are that convolution's weights
(OIHW ``[O, I/groups, kH, kW]`` or HWIO ``[kH, kW, I/groups, O]``, where **O is the
transpose's source channels** and ``I`` its result channels), and the geometry is
``ConvGeometry.for_convolution(descriptor, result_shape, weights_shape)``: the forward
convolution maps the transpose's result back to its source.

With stride s > 1, ``s`` result sizes map to the same source size, hence ``output_shape``
(the result's shape, 4 numbers in the data layout). ``transpose_sizes`` gives the sizes a
descriptor allows; any other is an error that names them.

The three ops are, with F/D/G the forward convolution and its data and weights gradients:
``T(x, W) = D(x, W)``, ``TD(g, W) = F(g, W)``, ``TW(g, x) = G(incoming=x, source=g)``.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ..descriptors import Convolution2DOpDescriptor, PaddingStyle, TensorNamedDataLayout
from ..errors import ShapeError
from ..types import ShapedType
from .convolution import check_float, check_rank, conv_desc, merge, mismatch, parse_output_shape
from .geometry import ConvGeometry
from .registry import defop, gradient

_SAME = (PaddingStyle.TF_SAME, PaddingStyle.ONNX_SAME_LOWER)
_SINCE = ("11.0", "14.0")  # MPSGraphConvolutionTransposeOps: macOS 11.0 / iOS 14.0 (header and docs)


def transpose_sizes(source: int, kernel: int, stride: int, dilation: int, style: PaddingStyle, before: int,
                    after: int) -> tuple[int, int]:
    """``(lo, hi)``: the result sizes along one axis whose forward convolution has ``source``
    elements (Apple's ``(src - 1) * s + 1 + (k - 1) * d <= dst + pL + pR``, and below the next).

    EXPLICIT / TF_VALID: ``lo = (source - 1) * s + K - before - after``, ``hi = lo + s - 1``;
    TF_SAME / ONNX_SAME_LOWER (``out = ceil(n / s)``): ``lo = (source - 1) * s + 1``, ``hi = source * s``.
    ``hi < lo`` when there is none.
    """
    dilated = (kernel - 1) * dilation + 1
    if style in _SAME:
        lo, hi = (source - 1) * stride + 1, source * stride
    else:
        if style == PaddingStyle.TF_VALID:
            before = after = 0
        lo = (source - 1) * stride + dilated - before - after
        hi = lo + stride - 1
    return max(lo, 1), hi


def _shape(output_shape: Any, label: str) -> tuple:
    try:
        return parse_output_shape(output_shape, 4)
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None


def _check(types: Sequence[ShapedType], names: Sequence[str], d: Convolution2DOpDescriptor) -> None:
    check_float(types, names)
    for t, what in zip(types, names):
        check_rank(t, 4, what, (d.weights_layout if what == "weights" else d.data_layout).name)


def _weights_sizes(d: Convolution2DOpDescriptor, wshape: Sequence[int]) -> tuple:
    """``(O, I/groups, (kH, kW))`` of the forward convolution's weights."""
    if d.weights_layout == TensorNamedDataLayout.OIHW:
        return wshape[0], wshape[1], (wshape[2], wshape[3])
    return wshape[3], wshape[2], (wshape[0], wshape[1])


def _data_sizes(d: Convolution2DOpDescriptor, shape: Sequence[int]) -> tuple:
    """``(N, C, (H, W))`` of a data tensor."""
    if d.data_layout == TensorNamedDataLayout.NCHW:
        return shape[0], shape[1], (shape[2], shape[3])
    return shape[0], shape[3], (shape[1], shape[2])


def _data_shape(d: Convolution2DOpDescriptor, n: int, c: int, spatial: Sequence[int]) -> tuple:
    h, w = spatial
    return (n, c, h, w) if d.data_layout == TensorNamedDataLayout.NCHW else (n, h, w, c)


def _axes(d: Convolution2DOpDescriptor, kernel: Sequence[int]):
    """Per spatial axis: (name, kernel, stride, dilation, padding before, padding after)."""
    return (("H", kernel[0], d.stride_in_y, d.dilation_rate_in_y, d.padding_top, d.padding_bottom),
            ("W", kernel[1], d.stride_in_x, d.dilation_rate_in_x, d.padding_left, d.padding_right))


def _channels(d: Convolution2DOpDescriptor, o: int, i: int, source_c: int, wshape: tuple, what: str) -> None:
    lay = "[O, I/groups, kH, kW]" if d.weights_layout == TensorNamedDataLayout.OIHW else "[kH, kW, I/groups, O]"
    if 0 in (o, i):
        raise ShapeError(f"weights {wshape} have no channels; O and I/groups must be >= 1")
    if o != -1 and o % d.groups:
        raise ShapeError(f"weights {wshape} ({d.weights_layout.name} {lay}) have O={o}, which groups={d.groups} "
                         "does not divide")
    if mismatch(source_c, o):
        raise ShapeError(f"{what} has {source_c} channels but the weights {wshape} ({d.weights_layout.name} {lay}) "
                         f"have O={o}: the weights are the forward convolution's, whose O is the transpose's "
                         "source channels")


def _result_spatial(d, kernel, src_spatial, declared_spatial) -> list:
    """The result's spatial sizes: the declared ones, checked against the source, or the only one."""
    out = []
    for (name, k, s, dl, b, a), src, n in zip(_axes(d, kernel), src_spatial, declared_spatial):
        if src == -1 or k == -1:
            out.append(n)
            continue
        lo, hi = transpose_sizes(src, k, s, dl, d.padding_style, b, a)
        how = (f"kernel {k}, stride {s}, dilation {dl}, padding {d.padding_style.name}"
               + (f" ({b}, {a})" if d.padding_style == PaddingStyle.EXPLICIT else ""))
        if hi < lo:
            raise ShapeError(f"{name}: no result size has a forward convolution ({how}) of size {src}")
        if n == -1:
            if lo != hi:
                raise ShapeError(f"output_shape gives {name} as -1, but {hi - lo + 1} sizes ({lo} to {hi}) fit a "
                                 f"source of {src} ({how}); give one")
            n = lo
        elif not lo <= n <= hi:
            valid = str(lo) if lo == hi else f"{lo} to {hi}"
            raise ShapeError(f"output_shape has {name}={n}, but its forward convolution ({how}) has size "
                             f"{src} only for {name} = {valid}")
        out.append(n)
    return out


# ------------------------------------------------------------------ forward
def _infer_transpose(in_types, attrs):
    x, w = in_types
    d = attrs["descriptor"]
    shape = attrs["output_shape"]
    _check(in_types, ("source", "weights"), d)
    o, i, kernel = _weights_sizes(d, w.shape)
    xn, xc, x_spatial = _data_sizes(d, x.shape)
    n, c, spatial = _data_sizes(d, shape)
    _channels(d, o, i, xc, w.shape, f"source {x.shape} ({d.data_layout.name})")
    if 0 in kernel:
        raise ShapeError(f"weights shape {w.shape} has a zero kernel size; kH and kW must be >= 1")
    if mismatch(n, xn):
        raise ShapeError(f"output_shape {list(shape)} has batch {n} but source {x.shape} has batch {xn}")
    if mismatch(c, -1 if i == -1 else i * d.groups):
        raise ShapeError(f"output_shape {list(shape)} has {c} channels but the weights {w.shape} "
                         f"({d.weights_layout.name}) with groups={d.groups} give I = {i} * {d.groups} = "
                         f"{i * d.groups}")
    spatial = _result_spatial(d, kernel, x_spatial, spatial)
    return [ShapedType(_data_shape(d, merge(n, xn), merge(c, -1 if i == -1 else i * d.groups), spatial), x.dtype)]


@defop("convolution_transpose_2d", swift="convolutionTranspose2D(_:weights:outputShape:descriptor:name:)",
       objc="convolutionTranspose2DWithSourceTensor:weightsTensor:outputShape:descriptor:name:",
       inputs=("source", "weights"), infer=_infer_transpose, family="convolution",
       attrs=("output_shape", "descriptor"), since=_SINCE)
def convolution_transpose_2d(g, source, weights, output_shape: Sequence[int],
                             descriptor: Optional[Convolution2DOpDescriptor] = None, name: Optional[str] = None):
    """Transposed 2D convolution: the data gradient of the forward convolution that ``descriptor``
    describes, applied to ``source`` (MPSGraph ``convolutionTranspose2D(_:weights:outputShape:descriptor:name:)``).

    ``weights`` are the forward convolution's (O = ``source``'s channels); ``output_shape`` is the
    result's shape, which picks one of the ``stride`` sizes that convolve back to ``source``'s.
    """
    label = f"convolution_transpose_2d op {name or 'convolution_transpose_2d'!r}"
    desc = conv_desc(descriptor, label)
    shp = _shape(output_shape, label)
    source = g.as_tensor(source, label)
    weights = g.as_tensor(weights, label, like=source)
    return g.add_op("convolution_transpose_2d", [source, weights], {"output_shape": shp, "descriptor": desc},
                    name).output


# ------------------------------------------------------------------ data gradient
def _infer_data_gradient(in_types, attrs):
    dy, w = in_types
    d = attrs["descriptor"]
    shape = attrs["output_shape"]
    _check(in_types, ("incoming_gradient", "weights"), d)
    o, i, kernel = _weights_sizes(d, w.shape)
    _, c, _ = _data_sizes(d, dy.shape)
    if mismatch(c, -1 if i == -1 else i * d.groups):
        raise ShapeError(f"incoming_gradient {dy.shape} has {c} channels but the transpose's result has I = "
                         f"{i} * groups {d.groups} = {i * d.groups} (weights {w.shape}, {d.weights_layout.name})")
    _channels(d, o, i, -1, w.shape, "")
    geo = ConvGeometry.for_convolution(d, dy.shape, w.shape)
    want = geo.result_shape
    if any(mismatch(a, b) for a, b in zip(shape, want)):
        raise ShapeError(f"output_shape {list(shape)} must be the transpose's source shape; the forward "
                         f"convolution of incoming_gradient {dy.shape} gives {list(want)}")
    return [ShapedType(tuple(merge(a, b) if b == -1 else b for a, b in zip(shape, want)), dy.dtype)]


@defop("convolution_transpose_2d_data_gradient",
       swift="convolutionTranspose2DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)",
       objc="convolutionTranspose2DDataGradientWithIncomingGradientTensor:weightsTensor:outputShape:"
            "forwardConvolutionDescriptor:name:",
       inputs=("incoming_gradient", "weights"), infer=_infer_data_gradient, family="convolution",
       role="data_gradient", forward="convolution_transpose_2d", attrs=("output_shape", "descriptor"), since=_SINCE)
def convolution_transpose_2d_data_gradient(g, incoming_gradient, weights, output_shape: Sequence[int],
                                           descriptor: Optional[Convolution2DOpDescriptor] = None,
                                           name: Optional[str] = None, *, forward_convolution_descriptor=None):
    """Gradient of ``convolution_transpose_2d`` with respect to its source: the forward
    convolution of ``incoming_gradient`` (MPSGraph
    ``convolutionTranspose2DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``).

    ``output_shape`` is the transpose's source shape (checked: the convolution gives it).
    """
    label = f"convolution_transpose_2d_data_gradient op {name or 'convolution_transpose_2d_data_gradient'!r}"
    desc = conv_desc(descriptor, label, forward_convolution_descriptor)
    shp = _shape(output_shape, label)
    dy = g.as_tensor(incoming_gradient, label)
    weights = g.as_tensor(weights, label, like=dy)
    return g.add_op("convolution_transpose_2d_data_gradient", [dy, weights],
                    {"output_shape": shp, "descriptor": desc}, name).output


# ------------------------------------------------------------------ weights gradient
def _infer_weights_gradient(in_types, attrs):
    dy, x = in_types
    d = attrs["descriptor"]
    shape = attrs["output_shape"]
    _check(in_types, ("incoming_gradient", "source"), d)
    o, i, kernel = _weights_sizes(d, shape)
    if -1 in kernel or 0 in kernel:
        raise ShapeError(f"output_shape {list(shape)} must be the weights shape, with kH and kW >= 1")
    xn, xc, x_spatial = _data_sizes(d, x.shape)
    dn, dc, _ = _data_sizes(d, dy.shape)
    o = merge(o, xc)
    if i == -1 and dc != -1 and dc % d.groups == 0:
        i = dc // d.groups
    wshape = list(shape)
    if d.weights_layout == TensorNamedDataLayout.OIHW:
        wshape[0], wshape[1] = o, i
    else:
        wshape[3], wshape[2] = o, i
    _channels(d, o, i, xc, tuple(shape), f"source {x.shape} ({d.data_layout.name})")
    if mismatch(dc, -1 if i == -1 else i * d.groups):
        raise ShapeError(f"incoming_gradient {dy.shape} has {dc} channels but the weights {list(shape)} with "
                         f"groups={d.groups} give the transpose's result I = {i * d.groups}")
    if mismatch(dn, xn):
        raise ShapeError(f"incoming_gradient {dy.shape} has batch {dn} but source {x.shape} has batch {xn}")
    geo = ConvGeometry.for_convolution(d, dy.shape, tuple(wshape))
    if any(mismatch(a, b) for a, b in zip(geo.output_size, x_spatial)):
        raise ShapeError(f"incoming_gradient {dy.shape} convolves to spatial size {geo.output_size} but the "
                         f"source {x.shape} has {tuple(x_spatial)}; incoming_gradient must have the "
                         "transpose's result shape")
    return [ShapedType(tuple(wshape), dy.dtype)]


@defop("convolution_transpose_2d_weights_gradient",
       swift="convolutionTranspose2DWeightsGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)",
       objc="convolutionTranspose2DWeightsGradientWithIncomingGradientTensor:sourceTensor:outputShape:"
            "forwardConvolutionDescriptor:name:",
       inputs=("incoming_gradient", "source"), infer=_infer_weights_gradient, family="convolution",
       role="weights_gradient", forward="convolution_transpose_2d", differentiable=False,
       attrs=("output_shape", "descriptor"), since=_SINCE)
def convolution_transpose_2d_weights_gradient(g, incoming_gradient, source, output_shape: Sequence[int],
                                              descriptor: Optional[Convolution2DOpDescriptor] = None,
                                              name: Optional[str] = None, *, forward_convolution_descriptor=None):
    """Gradient of ``convolution_transpose_2d`` with respect to its weights (MPSGraph
    ``convolutionTranspose2DWeightsGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``,
    whose Swift label ``weights:`` takes the transpose's **source**, ObjC ``sourceTensor:``).

    ``output_shape`` is the weights shape. Not differentiable, as in MPSGraph.
    """
    label = f"convolution_transpose_2d_weights_gradient op {name or 'convolution_transpose_2d_weights_gradient'!r}"
    desc = conv_desc(descriptor, label, forward_convolution_descriptor)
    shp = _shape(output_shape, label)
    dy = g.as_tensor(incoming_gradient, label)
    source = g.as_tensor(source, label, like=dy)
    return g.add_op("convolution_transpose_2d_weights_gradient", [dy, source],
                    {"output_shape": shp, "descriptor": desc}, name).output


# ------------------------------------------------------------------ kernels' view, gradient rules
def transpose_geometry(step: Any) -> ConvGeometry:
    """The forward convolution's geometry of a compiled transpose-family step: its source is the
    transpose's result (the transpose's output, else the first input), its weights the weights
    (the weights gradient's output)."""
    inputs = [t.shape for t in step.in_types]
    result = step.out_types[0].shape
    role = step.op.opdef.role
    source = result if role == "forward" else inputs[0]
    weights = result if role == "weights_gradient" else inputs[1]
    return ConvGeometry.for_convolution(step.attrs["descriptor"], source, weights)


@gradient("convolution_transpose_2d")
def _transpose_grad(g, op, dy, wanted):
    x, w = op.inputs
    d = op.attrs["descriptor"]
    return [convolution_transpose_2d_data_gradient(g, dy, w, x.shape, d) if wanted[0] else None,
            convolution_transpose_2d_weights_gradient(g, dy, x, w.shape, d) if wanted[1] else None]


@gradient("convolution_transpose_2d_data_gradient")
def _data_gradient_grad(g, op, u, wanted):
    # z = F(dy, W): d/d dy is D(u, W) = T(u, W); d/dW is G(incoming=u, source=dy) = TW(dy, u)
    dy, w = op.inputs
    d = op.attrs["descriptor"]
    return [convolution_transpose_2d(g, u, w, dy.shape, d) if wanted[0] else None,
            convolution_transpose_2d_weights_gradient(g, dy, u, w.shape, d) if wanted[1] else None]
