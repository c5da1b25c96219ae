"""2D max and average pooling and their gradients (MPSGraph ``maxPooling2D``/``avgPooling2D``).

Windows follow the convolution geometry (docs/mpsgraph-spec.md §3) with the descriptor's kernel size,
strides, dilations and padding; ``ceil_mode`` rounds the output size up, but the last window
must start inside the input or the padding before it. Semantics chosen here (and tested):

- max pooling ignores padding (it pads with -inf); NaN in a window makes the result NaN;
- average pooling divides by the number of input elements in the window, or, with
  ``include_zero_pad_to_average``, by the number of taps inside the padded extent (zero padding
  counted; the overhang that ``ceil_mode`` adds is never counted), as PyTorch's
  ``count_include_pad``;
- a window that holds no input element, whether its taps fall in the padding before the input,
  after it (``padding_bottom``/``padding_right`` of at least the dilated kernel can hold a whole
  window) or around it (dilation), is rejected at build time (its maximum or average would be
  undefined), except for average pooling with ``include_zero_pad_to_average``, where it
  averages zeros;
- the max-pooling gradient goes, per window, to the **first** maximal element in row-major tap
  order (kernel row, then column), NaN counting as maximal; overlapping windows add up.
"""
from __future__ import annotations

from typing import Optional

from ..descriptors import Pooling2DOpDescriptor, frozen_copy
from ..errors import DescriptorError, ShapeError
from ..types import ShapedType
from .convolution import check_float, check_rank
from .geometry import ConvGeometry
from .registry import defop, gradient


def _infer_pool(kind: str):
    def infer(in_types, attrs):
        x = in_types[0]
        d = attrs["descriptor"]
        check_float(in_types[:1], ("source",))
        check_rank(x, 4, "source", d.data_layout.name)
        geo = ConvGeometry.for_pooling_2d(d, x.shape)
        if kind == "max" or not d.include_zero_pad_to_average:
            for axis, name in enumerate(("H", "W")):
                o = geo.window_without_input(axis)
                if o is not None:
                    raise ShapeError(_empty_window_message(geo, axis, name, o, kind))
        return [ShapedType(geo.result_shape, x.dtype)]
    return infer


def _empty_window_message(geo: ConvGeometry, axis: int, name: str, o: int, kind: str) -> str:
    k, s, dl = geo.kernel_size[axis], geo.strides[axis], geo.dilations[axis]
    pb, pa, size = geo.padding_before[axis], geo.padding_after[axis], geo.input_size[axis]
    start = o * s - pb
    sides = ("top", "bottom") if name == "H" else ("left", "right")
    return (f"{name}: window {o} has its taps at positions {start} to {start + (k - 1) * dl} (kernel {k}, "
            f"stride {s}, dilation {dl}, padding {sides[0]} {pb}, {sides[1]} {pa}) and covers no element of the "
            f"input of size {size} (positions 0 to {size - 1}), so its "
            f"{'maximum' if kind == 'max' else 'average'} is undefined; every window must read the input: use "
            f"less padding (below the dilated kernel {(k - 1) * dl + 1} on each side) or a smaller dilation"
            + ("" if kind == "max" else ", or include_zero_pad_to_average=True"))


def _infer_pool_grad(kind: str):
    fwd = _infer_pool(kind)

    def infer(in_types, attrs):
        dy, x = in_types
        check_float(in_types, ("gradient", "source"))
        (y,) = fwd([x], attrs)
        check_rank(dy, 4, "gradient", attrs["descriptor"].data_layout.name)
        if any(a != b and -1 not in (a, b) for a, b in zip(dy.shape, y.shape)):
            raise ShapeError(f"gradient {dy.shape} must have the shape of the pooling result {y.shape} "
                             f"of source {x.shape}")
        return [x]
    return infer


def _desc(descriptor, label: str):
    if descriptor is None:
        raise DescriptorError(f"{label}: a Pooling2DOpDescriptor is required (it holds the kernel size)")
    return frozen_copy(descriptor, Pooling2DOpDescriptor, label)


def _builder(type: str, doc: str):
    def builder(g, source, descriptor: Pooling2DOpDescriptor, name: Optional[str] = None):
        label = f"{type} op {name or type!r}"
        desc = _desc(descriptor, label)
        return g.add_op(type, [g.as_tensor(source, label)], {"descriptor": desc}, name).output

    builder.__name__ = builder.__qualname__ = type
    builder.__doc__ = doc
    return builder


def _grad_builder(type: str, doc: str):
    def builder(g, gradient, source, descriptor: Pooling2DOpDescriptor, name: Optional[str] = None):
        label = f"{type} op {name or type!r}"
        desc = _desc(descriptor, label)
        gradient = g.as_tensor(gradient, label)
        source = g.as_tensor(source, label, like=gradient)
        return g.add_op(type, [gradient, source], {"descriptor": desc}, name).output

    builder.__name__ = builder.__qualname__ = type
    builder.__doc__ = doc
    return builder


max_pooling_2d = defop(
    "max_pooling_2d", swift="maxPooling2D(withSourceTensor:descriptor:name:)",
    objc="maxPooling2DWithSourceTensor:descriptor:name:", inputs=("source",), infer=_infer_pool("max"),
    family="pooling", attrs=("descriptor",))(_builder(
        "max_pooling_2d", "Maximum over each window, padding ignored; NaN propagates "
        "(MPSGraph ``maxPooling2D(withSourceTensor:descriptor:name:)``)."))

avg_pooling_2d = defop(
    "avg_pooling_2d", swift="avgPooling2D(withSourceTensor:descriptor:name:)",
    objc="avgPooling2DWithSourceTensor:descriptor:name:", inputs=("source",), infer=_infer_pool("avg"),
    family="pooling", attrs=("descriptor",))(_builder(
        "avg_pooling_2d", "Mean over each window: sum / number of input elements, or / taps in the padded "
        "extent with include_zero_pad_to_average (MPSGraph ``avgPooling2D(withSourceTensor:descriptor:name:)``)."))

max_pooling_2d_gradient = defop(
    "max_pooling_2d_gradient", swift="maxPooling2DGradient(withGradientTensor:sourceTensor:descriptor:name:)",
    objc="maxPooling2DGradientWithGradientTensor:sourceTensor:descriptor:name:", inputs=("gradient", "source"),
    infer=_infer_pool_grad("max"), family="pooling", role="data_gradient", forward="max_pooling_2d", differentiable=False, attrs=("descriptor",))(_grad_builder(
        "max_pooling_2d_gradient", "Gradient of max_pooling_2d: each window's gradient goes to its first "
        "maximal element (row-major tap order), overlaps add up; result has the source's shape "
        "(MPSGraph ``maxPooling2DGradient(withGradientTensor:sourceTensor:descriptor:name:)``). Not differentiable."))

avg_pooling_2d_gradient = defop(
    "avg_pooling_2d_gradient", swift="avgPooling2DGradient(withGradientTensor:sourceTensor:descriptor:name:)",
    objc="avgPooling2DGradientWithGradientTensor:sourceTensor:descriptor:name:", inputs=("gradient", "source"),
    infer=_infer_pool_grad("avg"), family="pooling", role="data_gradient", forward="avg_pooling_2d", attrs=("descriptor",))(_grad_builder(
        "avg_pooling_2d_gradient", "Gradient of avg_pooling_2d: each window's gradient spread evenly over the "
        "elements it averaged; linear in ``gradient``, independent of the source's values "
        "(MPSGraph ``avgPooling2DGradient(withGradientTensor:sourceTensor:descriptor:name:)``)."))


@gradient("max_pooling_2d")
def _max_pooling_2d_gradient(g, op, dy, wanted):
    return [g.max_pooling_2d_gradient(dy, op.inputs[0], op.attrs["descriptor"]) if wanted[0] else None]


@gradient("avg_pooling_2d")
def _avg_pooling_2d_gradient(g, op, dy, wanted):
    return [g.avg_pooling_2d_gradient(dy, op.inputs[0], op.attrs["descriptor"]) if wanted[0] else None]


@gradient("avg_pooling_2d_gradient")
def _avg_pooling_2d_gradient_gradient(g, op, dz, wanted):
    """The op is A^T applied to ``gradient`` (A the averaging map), so its adjoint is A itself;
    it does not depend on the source's values."""
    return [g.avg_pooling_2d(dz, op.attrs["descriptor"]) if wanted[0] else None, None]
