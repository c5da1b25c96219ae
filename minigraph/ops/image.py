"""Image to columns and back (MPSGraphImToColOps): im_to_col, col_to_im.

``im_to_col`` copies every kernel window of a rank-4 image into a column of a rank-3 result;
``col_to_im`` is its adjoint, summing each column element back onto the image position it came
from (overlapping windows add). Apple's pages give the rank-4 source and rank-3 columns but not
the columns' axis order; minigraph uses PyTorch's ``unfold`` / ``fold`` for NCHW:

* NCHW ``[N, C, H, W]`` -> ``[N, C * kH * kW, L]``, row ``c * kH * kW + i * kW + j``;
* NHWC ``[N, H, W, C]`` -> ``[N, L, kH * kW * C]``, column ``(i * kW + j) * C + c`` (TensorFlow's
  ``extract_patches`` order, channels last),

with ``L = oH * oW`` the windows in row-major order and ``oH = (H + top + bottom - (dY (kH - 1)
+ 1)) // sY + 1`` (likewise ``oW``); padding reads zeros.
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..descriptors import ImToColOpDescriptor, TensorNamedDataLayout, frozen_copy
from ..errors import DTypeError, ShapeError
from ..types import ShapedType, as_shape
from .registry import defop, gradient


def _label(type: str, name) -> str:
    return f"{type} op {name or type!r}"


def geometry(d: ImToColOpDescriptor, image) -> tuple:
    """``(N, C, H, W, oH, oW)`` of an image shape in ``d``'s layout (sizes may be -1)."""
    if d.data_layout == TensorNamedDataLayout.NCHW:
        n, c, h, w = image
    else:
        n, h, w, c = image

    def out(size, k, s, dil, lo, hi):
        if size == -1:
            return -1
        span = size + lo + hi - (dil * (k - 1) + 1)
        if span < 0:
            raise ShapeError(f"a window of {k} with dilation {dil} spans {dil * (k - 1) + 1}, more than the "
                             f"padded size {size + lo + hi} ({size} + {lo} + {hi})")
        return span // s + 1
    return (n, c, h, w, out(h, d.kernel_height, d.stride_in_y, d.dilation_rate_in_y, d.padding_top, d.padding_bottom),
            out(w, d.kernel_width, d.stride_in_x, d.dilation_rate_in_x, d.padding_left, d.padding_right))


def columns_shape(d: ImToColOpDescriptor, image) -> tuple:
    n, c, _, _, oh, ow = geometry(d, image)
    k = d.kernel_height * d.kernel_width
    windows = -1 if -1 in (oh, ow) else oh * ow
    rows = -1 if c == -1 else c * k
    return (n, rows, windows) if d.data_layout == TensorNamedDataLayout.NCHW else (n, windows, rows)


def _infer_im_to_col(in_types, attrs):
    t = in_types[0]
    if len(t.shape) != 4:
        raise ShapeError(f"source must have rank 4 ({attrs['descriptor'].data_layout.name}), got shape {t.shape}")
    return [ShapedType(columns_shape(attrs["descriptor"], t.shape), t.dtype)]


@defop("im_to_col", swift="imToCol(_:descriptor:name:)", objc="imToColWithSourceTensor:descriptor:name:",
       inputs=("source",), infer=_infer_im_to_col, family="image", attrs=("descriptor",), since=("14.0", "17.0"))
def im_to_col(g, source, descriptor: ImToColOpDescriptor, name: Optional[str] = None):
    """Every ``kernel_height`` x ``kernel_width`` window of a rank-4 image as one column (MPSGraph
    ``imToCol(_:descriptor:name:)``); NCHW gives ``[N, C*kH*kW, L]`` as ``torch.nn.functional.unfold``,
    NHWC ``[N, L, kH*kW*C]`` (module docstring).
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/imtocol(_:descriptor:name:)
    """
    label = _label("im_to_col", name)
    desc = frozen_copy(descriptor, ImToColOpDescriptor, label)
    return g.add_op("im_to_col", [g.as_tensor(source, label)], {"descriptor": desc}, name).output


def _infer_col_to_im(in_types, attrs):
    t, d, shape = in_types[0], attrs["descriptor"], attrs["output_shape"]
    if len(t.shape) != 3:
        raise ShapeError(f"source must have rank 3 (columns), got shape {t.shape}")
    if t.dtype.is_bool:
        raise DTypeError("sums overlapping windows and is not defined for bool; cast to int32 or a float type")
    want = columns_shape(d, shape)
    if any(a != b and -1 not in (a, b) for a, b in zip(t.shape, want)):
        raise ShapeError(f"source {t.shape} is not the columns of an image of output_shape {tuple(shape)} "
                         f"({d.data_layout.name}): im_to_col gives {want}")
    return [ShapedType(tuple(t.shape[0] if k == 0 and s == -1 else s for k, s in enumerate(shape)), t.dtype)]


@defop("col_to_im", swift="colToIm(_:outputShape:descriptor:name:)",
       objc="colToImWithSourceTensor:outputShape:descriptor:name:", inputs=("source",), infer=_infer_col_to_im,
       family="image", attrs=("output_shape", "descriptor"), since=("14.0", "17.0"))
def col_to_im(g, source, output_shape: Sequence[int], descriptor: ImToColOpDescriptor, name: Optional[str] = None):
    """The image of ``output_shape`` whose every element is the sum of the column elements that
    ``im_to_col`` would copy from it (MPSGraph ``colToIm(_:outputShape:descriptor:name:)``; as
    ``torch.nn.functional.fold`` for NCHW): the adjoint of ``im_to_col``, its gradient.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/coltoim(_:outputshape:descriptor:name:)
    """
    label = _label("col_to_im", name)
    desc = frozen_copy(descriptor, ImToColOpDescriptor, label)
    try:
        shape = as_shape(output_shape, "output_shape")
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}") from None
    if len(shape) != 4:
        raise ShapeError(f"{label}: output_shape must have 4 sizes ({desc.data_layout.name}), got {list(shape)}")
    return g.add_op("col_to_im", [g.as_tensor(source, label)], {"output_shape": tuple(shape), "descriptor": desc},
                    name).output


@gradient("im_to_col")
def _im_to_col_gradient(g, op, dy, wanted):
    return [g.col_to_im(dy, op.inputs[0].shape, op.attrs["descriptor"])]


@gradient("col_to_im")
def _col_to_im_gradient(g, op, dy, wanted):
    return [g.im_to_col(dy, op.attrs["descriptor"])]
