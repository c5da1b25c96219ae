"""4-D pooling (max, average, L2 norm), max pooling that returns indices, and the gradients that
take those indices (MPSGraph ``maxPooling4D``, ``avgPooling4D``, ``L2NormPooling4D``,
``maxPooling2DReturnIndices``/``maxPooling4DReturnIndices`` and
``maxPooling{2,4}DGradient(withGradientTensor:indicesTensor:outputShape:...)``).

Every op here slides one window over four axes (``Window``): the four innermost axes of the
source for the 4-D ops (leading axes are batch), and for the 2-D ops the four axes of the rank-4
source with a window of 1 on N and C (NCHW: ``[1, 1, kH, kW]``; NHWC: ``[1, kH, kW, 1]``).
Sizes, padding styles and ``ceil_mode`` follow the convolution rule (``geometry.resolve_padding``)
per axis. Semantics chosen here (and tested):

- max and average pooling as the 2-D ops (ops/pooling.py): padding never wins a maximum, NaN
  propagates, a window without input elements is rejected (except for averages with
  ``include_zero_pad_to_average``);
- L2-norm pooling is ``sqrt(sum of x**2)`` over the window's input elements (zero padding adds
  nothing; a window in the padding gives 0), PyTorch's ``lp_pool`` with ``p=2``; its gradient is
  ``x / y`` per window, and 0 where ``y`` is 0 (PyTorch's gives NaN there);
- the returned index is that of the first maximal element in row-major tap order (NaN maximal),
  flattened as ``return_indices_mode`` says: GLOBAL_FLATTEN_kD its position in the source over the
  k innermost axes (row-major, as PyTorch's ``max_pool(return_indices=True)`` for k = 2 in NCHW);
  LOCAL_FLATTEN_kD its tap in the window over the window's k innermost axes;
- the gradient with indices sends each window's gradient to the element its index names; the
  mode must name every window axis longer than 1, and an index that names no element of its own
  window inside the source adds nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, Optional, Sequence

from ..descriptors import (Pooling2DOpDescriptor, Pooling4DOpDescriptor, PoolingReturnIndicesMode,
                           TensorNamedDataLayout, frozen_copy)
from ..errors import DescriptorError, DTypeError, ShapeError
from ..types import ShapedType, int32
from .convolution import check_float, parse_output_shape
from .geometry import resolve_padding
from .registry import defop, gradient

_SINCE_4D = ("12.0", "15.0")
_SINCE_INDICES = ("12.2", "15.3")
_SINCE_INDICES_GRADIENT = ("13.0", "16.0")


@dataclass(frozen=True)
class Window:
    """A pooling window over the four innermost axes of ``source_shape``: per axis the kernel
    size, stride, dilation, resolved padding before and after, and the output size."""

    source_shape: tuple
    kernel: tuple
    strides: tuple
    dilations: tuple
    before: tuple
    after: tuple
    output: tuple

    @property
    def input_size(self) -> tuple:
        return tuple(self.source_shape[-4:])

    @property
    def result_shape(self) -> tuple:
        return tuple(self.source_shape[:-4]) + self.output

    @property
    def batch(self) -> int:
        return prod(self.source_shape[:-4])

    @property
    def taps(self) -> int:
        return prod(self.kernel)

    def empty_window(self, axis: int) -> Optional[int]:
        """The first output index along ``axis`` whose window reads no input element, or None
        (also while a size is unknown)."""
        size, k, s, d = self.input_size[axis], self.kernel[axis], self.strides[axis], self.dilations[axis]
        before, out = self.before[axis], self.output[axis]
        if size < 0 or out < 0:
            return None
        for o in range(out):
            start = o * s - before
            if start >= size:
                return o
            if start < 0:
                first = -(-(-start) // d)  # smallest tap i with start + i*d >= 0
                if first >= k or start + first * d >= size:
                    return o
        return None


def _axis_name(rank: int, axis: int) -> str:
    return f"axis {rank - 4 + axis}"


def window_of(desc: Any, source_shape: Sequence[int]) -> Window:
    """The window of a Pooling2DOpDescriptor (rank-4 source in its layout) or a
    Pooling4DOpDescriptor (rank >= 4, the four innermost axes)."""
    shape = tuple(source_shape)
    if isinstance(desc, Pooling2DOpDescriptor):
        if len(shape) != 4:
            raise ShapeError(f"source must be rank 4 ({desc.data_layout.name}), got shape {shape} of rank {len(shape)}")
        h, w = (2, 3) if desc.data_layout == TensorNamedDataLayout.NCHW else (1, 2)
        kernel, strides, dil, pads = [1] * 4, [1] * 4, [1] * 4, [(0, 0)] * 4
        kernel[h], kernel[w] = desc.kernel_height, desc.kernel_width
        strides[h], strides[w] = desc.stride_in_y, desc.stride_in_x
        dil[h], dil[w] = desc.dilation_rate_in_y, desc.dilation_rate_in_x
        pads[h], pads[w] = (desc.padding_top, desc.padding_bottom), (desc.padding_left, desc.padding_right)
        names = list(desc.data_layout.name)
    else:
        if len(shape) < 4:
            raise ShapeError(f"source must have rank >= 4 (the window covers the four innermost axes), got "
                             f"shape {shape} of rank {len(shape)}")
        kernel, strides, dil = list(desc.kernel_sizes), list(desc.strides), list(desc.dilation_rates)
        pv = desc.padding_values
        pads = [(pv[2 * a], pv[2 * a + 1]) for a in range(4)]
        names = [_axis_name(len(shape), a) for a in range(4)]
    before, after, out = [], [], []
    for a in range(4):
        b, af, o = resolve_padding(shape[-4 + a], kernel[a], strides[a], dil[a], desc.padding_style, pads[a][0],
                                   pads[a][1], names[a], desc.ceil_mode)
        before.append(b)
        after.append(af)
        out.append(o)
    return Window(shape, tuple(kernel), tuple(strides), tuple(dil), tuple(before), tuple(after), tuple(out))


def _check_windows(win: Window, kind: str, desc: Any) -> None:
    if kind == "l2" or (kind == "avg" and desc.include_zero_pad_to_average):
        return
    for a in range(4):
        o = win.empty_window(a)
        if o is not None:
            k, s, d, b = win.kernel[a], win.strides[a], win.dilations[a], win.before[a]
            start = o * s - b
            raise ShapeError(
                f"{_axis_name(len(win.source_shape), a)}: window {o} has its taps at positions {start} to "
                f"{start + (k - 1) * d} (kernel {k}, stride {s}, dilation {d}, padding {b} before, {win.after[a]} "
                f"after) and covers no element of the input of size {win.input_size[a]}, so its "
                f"{'maximum' if kind == 'max' else 'average'} is undefined; every window must read the input: "
                f"use less padding (below the dilated kernel {(k - 1) * d + 1} on each side) or a smaller dilation"
                + ("" if kind == "max" else ", or include_zero_pad_to_average=True"))


def _pooled(x: ShapedType, attrs, kind: str) -> Window:
    check_float([x], ("source",))
    win = window_of(attrs["descriptor"], x.shape)
    _check_windows(win, kind, attrs["descriptor"])
    return win


def _infer(kind: str):
    def infer(in_types, attrs):
        x = in_types[0]
        return [ShapedType(_pooled(x, attrs, kind).result_shape, x.dtype)]
    return infer


def _check_gradient_shape(dy: ShapedType, want: tuple, what: str) -> None:
    if len(dy.shape) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(dy.shape, want)):
        raise ShapeError(f"gradient {dy.shape} must have the shape of the pooling result {want} of {what}")


def _infer_grad(kind: str):
    def infer(in_types, attrs):
        dy, x = in_types
        check_float(in_types, ("gradient", "source"))
        win = _pooled(x, attrs, kind)
        _check_gradient_shape(dy, win.result_shape, f"source {x.shape}")
        return [x]
    return infer


def covered_axes(mode: PoolingReturnIndicesMode) -> int:
    """How many innermost axes an index of ``mode`` names (0 for NONE)."""
    return 0 if mode == PoolingReturnIndicesMode.NONE else (int(mode) - 1) % 4 + 1


def is_local(mode: PoolingReturnIndicesMode) -> bool:
    return int(mode) >= int(PoolingReturnIndicesMode.LOCAL_FLATTEN_1D)


def _infer_return_indices(in_types, attrs):
    x = in_types[0]
    win = _pooled(x, attrs, "max")
    if attrs["descriptor"].return_indices_mode == PoolingReturnIndicesMode.NONE:
        raise DescriptorError("return_indices_mode is NONE, so there are no indices to return (MPSGraph's second "
                              "result would be nil); set it to one of GLOBAL_FLATTEN_1D..4D or LOCAL_FLATTEN_1D..4D")
    return [ShapedType(win.result_shape, x.dtype), ShapedType(win.result_shape, int32)]


def check_indices_mode(win: Window, mode: PoolingReturnIndicesMode) -> None:
    """A DescriptorError unless an index of ``mode`` names every window axis longer than 1."""
    n = covered_axes(mode)
    long_axes = [a for a in range(4) if win.kernel[a] > 1]
    if n == 0 or (long_axes and long_axes[0] < 4 - n):
        need = 4 - long_axes[0] if long_axes else 1
        raise DescriptorError(
            f"return_indices_mode {mode.name} names the {n} innermost axes, but the window {list(win.kernel)} "
            f"spans more (the gradient could not tell where each maximum is); use a mode flattening at least "
            f"{need} axes (GLOBAL_FLATTEN_{need}D or LOCAL_FLATTEN_{need}D, or more)")


def _infer_grad_indices(in_types, attrs):
    dy, idx = in_types
    d = attrs["descriptor"]
    check_float([dy], ("gradient",))
    if idx.dtype != d.return_indices_data_type:
        raise DTypeError(f"indices are {idx.dtype.name} but the descriptor's return_indices_data_type is "
                         f"{d.return_indices_data_type.name}; they must match")
    win = window_of(d, attrs["output_shape"])
    _check_windows(win, "max", d)
    check_indices_mode(win, d.return_indices_mode)
    what = f"output_shape {list(attrs['output_shape'])}"
    _check_gradient_shape(dy, win.result_shape, what)
    if len(idx.shape) != len(dy.shape) or any(a != b and -1 not in (a, b) for a, b in zip(idx.shape, dy.shape)):
        raise ShapeError(f"indices {idx.shape} must have the shape of the gradient {dy.shape}")
    return [ShapedType(tuple(attrs["output_shape"]), dy.dtype)]


# ------------------------------------------------------------------ builders
def _desc(descriptor, label: str, cls: type):
    if descriptor is None:
        raise DescriptorError(f"{label}: a {cls.__name__} is required (it holds the kernel sizes)")
    return frozen_copy(descriptor, cls, label)


def _fwd_builder(type: str, cls: type, doc: str, pair: bool = False):
    def builder(g, source, descriptor, name: Optional[str] = None):
        label = f"{type} op {name or type!r}"
        op = g.add_op(type, [g.as_tensor(source, label)], {"descriptor": _desc(descriptor, label, cls)}, name)
        return (op.outputs[0], op.outputs[1]) if pair else op.output

    builder.__name__ = builder.__qualname__ = type
    builder.__annotations__ = dict(builder.__annotations__, descriptor=cls.__name__,
                                   **{"return": "tuple" if pair else "Tensor"})
    builder.__doc__ = doc
    return builder


def _grad_builder(type: str, doc: str):
    def builder(g, gradient, source, descriptor: Pooling4DOpDescriptor, name: Optional[str] = None):
        label = f"{type} op {name or type!r}"
        desc = _desc(descriptor, label, Pooling4DOpDescriptor)
        gradient = g.as_tensor(gradient, label)
        source = g.as_tensor(source, label, like=gradient)
        return g.add_op(type, [gradient, source], {"descriptor": desc}, name).output

    builder.__name__ = builder.__qualname__ = type
    builder.__doc__ = doc
    return builder


def _indices_grad_builder(type: str, cls: type, rank: Optional[int], doc: str):
    def builder(g, gradient, indices, output_shape: Sequence[int], descriptor, name: Optional[str] = None):
        label = f"{type} op {name or type!r}"
        desc = _desc(descriptor, label, cls)
        try:
            shp = parse_output_shape(output_shape, rank)
        except ShapeError as e:
            raise ShapeError(f"{label}: {e}") from None
        if any(s < 0 for s in shp):
            raise ShapeError(f"{label}: output_shape {list(shp)} must be fully known (it is the source's shape)")
        gradient = g.as_tensor(gradient, label)
        indices = g.as_tensor(indices, label)
        return g.add_op(type, [gradient, indices], {"output_shape": shp, "descriptor": desc}, name).output

    builder.__name__ = builder.__qualname__ = type
    builder.__annotations__ = dict(builder.__annotations__, descriptor=cls.__name__)
    builder.__doc__ = doc
    return builder


_MAX_DOC = ("Maximum over each window of the four innermost axes, padding ignored; NaN propagates "
            "(MPSGraph ``maxPooling4D(_:descriptor:name:)``).")

max_pooling_4d = defop(
    "max_pooling_4d", swift="maxPooling4D(_:descriptor:name:)", objc="maxPooling4DWithSourceTensor:descriptor:name:",
    inputs=("source",), infer=_infer("max"), family="pooling", attrs=("descriptor",), since=_SINCE_4D)(
    _fwd_builder("max_pooling_4d", Pooling4DOpDescriptor, _MAX_DOC))

avg_pooling_4d = defop(
    "avg_pooling_4d", swift="avgPooling4D(_:descriptor:name:)", objc="avgPooling4DWithSourceTensor:descriptor:name:",
    inputs=("source",), infer=_infer("avg"), family="pooling", attrs=("descriptor",), since=_SINCE_4D)(
    _fwd_builder("avg_pooling_4d", Pooling4DOpDescriptor,
                 "Mean over each window of the four innermost axes: sum / number of input elements, or / taps "
                 "in the padded extent with include_zero_pad_to_average (MPSGraph ``avgPooling4D(_:descriptor:name:)``)."))

l2_norm_pooling_4d = defop(
    "l2_norm_pooling_4d", swift="L2NormPooling4D(_:descriptor:name:)",
    objc="L2NormPooling4DWithSourceTensor:descriptor:name:", inputs=("source",), infer=_infer("l2"),
    family="pooling", attrs=("descriptor",), since=_SINCE_4D)(
    _fwd_builder("l2_norm_pooling_4d", Pooling4DOpDescriptor,
                 "``sqrt(sum x**2)`` over each window of the four innermost axes (padding adds nothing), "
                 "PyTorch's lp_pool with p=2 (MPSGraph ``L2NormPooling4D(_:descriptor:name:)``)."))

max_pooling_4d_gradient = defop(
    "max_pooling_4d_gradient", swift="maxPooling4DGradient(_:source:descriptor:name:)",
    objc="maxPooling4DGradientWithGradientTensor:sourceTensor:descriptor:name:", inputs=("gradient", "source"),
    infer=_infer_grad("max"), family="pooling", role="data_gradient", forward="max_pooling_4d",
    differentiable=False, attrs=("descriptor",), since=_SINCE_4D)(_grad_builder(
        "max_pooling_4d_gradient", "Gradient of max_pooling_4d: each window's gradient goes to its first maximal "
        "element (row-major tap order), overlaps add up (MPSGraph ``maxPooling4DGradient(_:source:descriptor:name:)``). "
        "Not differentiable."))

avg_pooling_4d_gradient = defop(
    "avg_pooling_4d_gradient", swift="avgPooling4DGradient(_:source:descriptor:name:)",
    objc="avgPooling4DGradientWithGradientTensor:sourceTensor:descriptor:name:", inputs=("gradient", "source"),
    infer=_infer_grad("avg"), family="pooling", role="data_gradient", forward="avg_pooling_4d",
    attrs=("descriptor",), since=_SINCE_4D)(_grad_builder(
        "avg_pooling_4d_gradient", "Gradient of avg_pooling_4d: each window's gradient spread evenly over the "
        "elements it averaged (MPSGraph ``avgPooling4DGradient(_:source:descriptor:name:)``)."))

l2_norm_pooling_4d_gradient = defop(
    "l2_norm_pooling_4d_gradient", swift="L2NormPooling4DGradient(_:source:descriptor:name:)",
    objc="L2NormPooling4DGradientWithGradientTensor:sourceTensor:descriptor:name:", inputs=("gradient", "source"),
    infer=_infer_grad("l2"), family="pooling", role="data_gradient", forward="l2_norm_pooling_4d",
    differentiable=False, attrs=("descriptor",), since=_SINCE_4D)(_grad_builder(
        "l2_norm_pooling_4d_gradient", "Gradient of l2_norm_pooling_4d: ``x * sum(gradient / y)`` over the windows "
        "holding x, a window with y = 0 adding nothing (MPSGraph ``L2NormPooling4DGradient(_:source:descriptor:name:)``). "
        "Not differentiable."))

max_pooling_2d_return_indices = defop(
    "max_pooling_2d_return_indices", swift="maxPooling2DReturnIndices(_:descriptor:name:)",
    objc="maxPooling2DReturnIndicesWithSourceTensor:descriptor:name:", inputs=("source",),
    infer=_infer_return_indices, family="pooling", attrs=("descriptor",), since=_SINCE_INDICES)(
    _fwd_builder("max_pooling_2d_return_indices", Pooling2DOpDescriptor,
                 "max_pooling_2d and the int32 index of each window's first maximal element, flattened as the "
                 "descriptor's return_indices_mode says: ``(values, indices)`` "
                 "(MPSGraph ``maxPooling2DReturnIndices(_:descriptor:name:)``).", pair=True))

max_pooling_4d_return_indices = defop(
    "max_pooling_4d_return_indices", swift="maxPooling4DReturnIndices(_:descriptor:name:)",
    objc="maxPooling4DReturnIndicesWithSourceTensor:descriptor:name:", inputs=("source",),
    infer=_infer_return_indices, family="pooling", attrs=("descriptor",), since=_SINCE_INDICES)(
    _fwd_builder("max_pooling_4d_return_indices", Pooling4DOpDescriptor,
                 "max_pooling_4d and the int32 index of each window's first maximal element, flattened as the "
                 "descriptor's return_indices_mode says: ``(values, indices)`` "
                 "(MPSGraph ``maxPooling4DReturnIndices(_:descriptor:name:)``).", pair=True))

max_pooling_2d_gradient_with_indices = defop(
    "max_pooling_2d_gradient_with_indices",
    swift="maxPooling2DGradient(withGradientTensor:indicesTensor:outputShape:descriptor:name:)",
    objc="maxPooling2DGradientWithGradientTensor:indicesTensor:outputShape:descriptor:name:",
    inputs=("gradient", "indices"), infer=_infer_grad_indices, family="pooling", role="data_gradient",
    forward="max_pooling_2d_return_indices", differentiable=False, attrs=("output_shape", "descriptor"),
    since=_SINCE_INDICES_GRADIENT)(_indices_grad_builder(
        "max_pooling_2d_gradient_with_indices", Pooling2DOpDescriptor, 4,
        "Gradient of max_pooling_2d_return_indices from its indices: each window's gradient goes to the element "
        "its index names, in a result of ``output_shape`` (the source's shape); the descriptor's "
        "return_indices_mode must be the forward one (MPSGraph "
        "``maxPooling2DGradient(withGradientTensor:indicesTensor:outputShape:descriptor:name:)``). Not differentiable."))

max_pooling_4d_gradient_with_indices = defop(
    "max_pooling_4d_gradient_with_indices",
    swift="maxPooling4DGradient(withGradientTensor:indicesTensor:outputShape:descriptor:name:)",
    objc="maxPooling4DGradientWithGradientTensor:indicesTensor:outputShape:descriptor:name:",
    inputs=("gradient", "indices"), infer=_infer_grad_indices, family="pooling", role="data_gradient",
    forward="max_pooling_4d_return_indices", differentiable=False, attrs=("output_shape", "descriptor"),
    since=_SINCE_INDICES_GRADIENT)(_indices_grad_builder(
        "max_pooling_4d_gradient_with_indices", Pooling4DOpDescriptor, None,
        "Gradient of max_pooling_4d_return_indices from its indices: each window's gradient goes to the element "
        "its index names, in a result of ``output_shape`` (the source's shape); the descriptor's "
        "return_indices_mode must be the forward one (MPSGraph "
        "``maxPooling4DGradient(withGradientTensor:indicesTensor:outputShape:descriptor:name:)``). Not differentiable."))


# ------------------------------------------------------------------ gradients
@gradient("max_pooling_4d")
def _max_pooling_4d_gradient(g, op, dy, wanted):
    return [g.max_pooling_4d_gradient(dy, op.inputs[0], op.attrs["descriptor"]) if wanted[0] else None]


@gradient("avg_pooling_4d")
def _avg_pooling_4d_gradient(g, op, dy, wanted):
    return [g.avg_pooling_4d_gradient(dy, op.inputs[0], op.attrs["descriptor"]) if wanted[0] else None]


@gradient("avg_pooling_4d_gradient")
def _avg_pooling_4d_gradient_gradient(g, op, dz, wanted):
    """Linear in ``gradient`` (the adjoint of the averaging map A), so its adjoint is A itself."""
    return [g.avg_pooling_4d(dz, op.attrs["descriptor"]) if wanted[0] else None, None]


@gradient("l2_norm_pooling_4d")
def _l2_norm_pooling_4d_gradient(g, op, dy, wanted):
    return [g.l2_norm_pooling_4d_gradient(dy, op.inputs[0], op.attrs["descriptor"]) if wanted[0] else None]


def _return_indices_gradient(two_d: bool):
    def rule(g, op, dy, wanted):
        dvalues = dy[0]
        if dvalues is None or not wanted[0]:
            return [None]
        x, d = op.inputs[0], op.attrs["descriptor"]
        try:
            check_indices_mode(window_of(d, x.shape), d.return_indices_mode)
            usable = all(s >= 0 for s in x.shape)
        except DescriptorError:
            usable = False
        if usable:  # the indices name every maximum: no need to search the windows again
            build = g.max_pooling_2d_gradient_with_indices if two_d else g.max_pooling_4d_gradient_with_indices
            return [build(dvalues, op.outputs[1], x.shape, d)]
        return [(g.max_pooling_2d_gradient if two_d else g.max_pooling_4d_gradient)(dvalues, x, d)]
    return rule


gradient("max_pooling_2d_return_indices")(_return_indices_gradient(True))
gradient("max_pooling_4d_return_indices")(_return_indices_gradient(False))
