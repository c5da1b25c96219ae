"""``ConvGeometry``: the one geometry of every convolution-family op (docs/mpsgraph-spec.md §3-§6).

Every convolution, depthwise 2D and 3D and pooling op, forward or gradient, is a grouped
convolution over ``len(input_size)`` spatial axes, much like JAX's ``ConvDimensionNumbers`` plus
the resolved padding. Depthwise is ``groups = in_channels`` with ``out_per_group`` the channel
multiplier M (output channel ``c*M + m``); pooling is depthwise with M = 1 and no weights.

The geometry is computed once per op, from the descriptor and the forward op's source and
weights shapes, by one constructor per family (``for_convolution`` (2D and 3D), ``for_depthwise_2d``,
``for_depthwise_3d``, ``for_pooling_2d``; ``of`` picks one by the descriptor's class). Infer
rules use it at build time (sizes may be -1 there: known only at run time) and the kernels of
every backend at compile time, through ``geometry_of(step)``.

Layouts are axis lists. Data tensors (source, result, and their gradients) read as
``[*batch, channels, *spatial]`` after ``transpose(data_permutation)``; weights read as
``[groups, out_per_group, in_per_group, *kernel]`` after ``transpose(weights_permutation)``
and a reshape that only splits or inserts axes. ``data_strides`` and ``weights_strides`` give
the same layouts as element strides of contiguous tensors.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import prod
from typing import Any, Optional, Sequence

from ..descriptors import (Convolution2DOpDescriptor, Convolution3DOpDescriptor, DepthwiseConvolution3DOpDescriptor,
                           PaddingStyle, Pooling2DOpDescriptor, TensorNamedDataLayout)
from ..errors import DescriptorError, ShapeError

_SAME_STYLES = (PaddingStyle.TF_SAME, PaddingStyle.ONNX_SAME_LOWER)
_AXIS_NAMES = ("D", "H", "W")

# (channel, *spatial) axes of a rank-4 (2D) or rank-5 (3D) data tensor
_DATA_AXES = {TensorNamedDataLayout.NCHW: (1, 2, 3), TensorNamedDataLayout.NHWC: (3, 1, 2),
              TensorNamedDataLayout.NCDHW: (1, 2, 3, 4), TensorNamedDataLayout.NDHWC: (4, 1, 2, 3)}
# (group, out_per_group, in_per_group, *kernel) axes of convolution weights; None: the layout has no such axis
_CONV_WEIGHTS_AXES = {TensorNamedDataLayout.OIHW: (0, 0, 1, 2, 3),         # [Cout, Cin/groups, kH, kW]
                      TensorNamedDataLayout.HWIO: (3, 3, 2, 0, 1),         # [kH, kW, Cin/groups, Cout]
                      TensorNamedDataLayout.OIDHW: (0, 0, 1, 2, 3, 4),     # [Cout, Cin/groups, kD, kH, kW]
                      TensorNamedDataLayout.DHWIO: (4, 4, 3, 0, 1, 2)}     # [kD, kH, kW, Cin/groups, Cout]
_DEPTHWISE_WEIGHTS_AXES = {TensorNamedDataLayout.OIHW: (1, 0, None, 2, 3),   # [M, C, kH, kW]
                           TensorNamedDataLayout.HWIO: (2, 3, None, 0, 1)}   # [kH, kW, C, M]


# ------------------------------------------------------------------ the padding rule
def resolve_padding(size: int, kernel: int, stride: int, dilation: int, style: PaddingStyle, before: int,
                    after: int, axis: str = "H", ceil_mode: bool = False) -> tuple[int, int, int]:
    """``(padding before, padding after, output size)`` of one spatial axis (spec §3).

    With ``K = (kernel - 1) * dilation + 1``: EXPLICIT pads as given and TF_VALID not at all,
    and both give ``out = floor((size + before + after - K) / stride) + 1`` (rounded up with
    ``ceil_mode``, as long as the last window starts inside the input or the padding before
    it). TF_SAME and ONNX_SAME_LOWER give ``out = ceil(size / stride)`` and pad
    ``max((out - 1) * stride + K - size, 0)`` in total, the odd element after the input
    (TF_SAME) or before it (ONNX_SAME_LOWER). An unknown size or kernel (-1) gives out = -1.
    """
    style = PaddingStyle(style)
    if size < 0 or kernel <= 0:
        return (before, after, -1) if style == PaddingStyle.EXPLICIT else (0, 0, -1)
    dilated = (kernel - 1) * dilation + 1
    if style in _SAME_STYLES:
        out = -(-size // stride)
        total = max((out - 1) * stride + dilated - size, 0)
        small, big = total // 2, total - total // 2
        before, after = (small, big) if style == PaddingStyle.TF_SAME else (big, small)
    else:
        if style == PaddingStyle.TF_VALID:
            before = after = 0
        elif style != PaddingStyle.EXPLICIT:
            raise DescriptorError(f"padding style {style.name} is not supported here")
        span = size + before + after - dilated
        if span < 0:
            raise ShapeError(f"{axis}: input size {size} with padding ({before}, {after}) is smaller than the "
                             f"dilated kernel {dilated} (kernel {kernel}, dilation {dilation}), so the output "
                             "would be empty")
        out = -(-span // stride) + 1 if ceil_mode else span // stride + 1
        if ceil_mode and (out - 1) * stride >= size + before:  # the last window must start inside
            out -= 1
    if out <= 0:
        raise ShapeError(f"{axis}: input size {size} gives output size {out} with kernel {kernel}, stride {stride}, "
                         f"dilation {dilation} and padding style {style.name}; the output needs at least one "
                         "element")
    return before, after, out


def unique_input_size(out: int, kernel: int, stride: int, dilation: int, style: PaddingStyle, before: int,
                      after: int) -> int:
    """The forward input size that gives output size ``out``, when only one does (stride 1), else -1."""
    if out < 0 or kernel < 0 or stride != 1:
        return -1
    dilated = (kernel - 1) * dilation + 1
    if style == PaddingStyle.EXPLICIT:
        size = out - before - after + dilated - 1
    elif style == PaddingStyle.TF_VALID:
        size = out + dilated - 1
    else:
        size = out
    return size if size >= 1 else -1


def conventional_input_size(out: int, kernel: int, stride: int, dilation: int, style: PaddingStyle, before: int,
                            after: int) -> int:
    """The forward input size assumed when nothing else gives it (-1 when out or kernel is unknown).

    EXPLICIT and TF_VALID: ``(out - 1) * stride + K - before - after``, the smallest input
    (PyTorch's transposed-convolution size); the SAME styles: ``out * stride`` (Keras').
    """
    if out < 0 or kernel < 0:
        return -1
    if style in _SAME_STYLES:
        return out * stride
    if style == PaddingStyle.TF_VALID:
        before = after = 0
    return (out - 1) * stride + (kernel - 1) * dilation + 1 - before - after


# ------------------------------------------------------------------ the geometry
def _known_product(sizes: Sequence[int]) -> int:
    return -1 if any(s < 0 for s in sizes) else prod(sizes)


def _known_ratio(whole: int, parts: int) -> int:
    return whole // parts if whole >= 0 and parts > 0 else -1


@dataclass(frozen=True)
class ConvGeometry:
    """Every size of one convolution-family op, layout-free, with its layouts as axis lists.

    Spatial tuples run slowest axis first: (H, W), or (D, H, W) for the 3D ops. -1 marks a size
    known only at run time (infer rules only; kernels always see concrete sizes).
    """

    batch_shape: tuple          # sizes of the batch axes: (N,) for the 2D ops, any number for 3D
    in_channels: int
    out_channels: int           # groups * out_per_group
    groups: int                 # depthwise and pooling: in_channels
    input_size: tuple           # spatial sizes of the source
    kernel_size: tuple
    strides: tuple
    dilations: tuple
    padding_before: tuple
    padding_after: tuple
    output_size: tuple          # spatial sizes of the result
    data_axes: tuple            # (channel, *spatial) axes of data tensors; the others lead, as batch axes
    weights_axes: tuple = ()    # (group, out_per_group, in_per_group, *kernel) axes of the weights; the
    #                             group and out_per_group entries name one axis when it holds
    #                             group * out_per_group + o; in_per_group is None when there is no such
    #                             axis (depthwise); () for pooling, which has no weights

    # -------------------------------------------------------------- constructors
    @classmethod
    def for_convolution(cls, desc: Any, source_shape: Sequence[int], weights_shape: Sequence[int]) -> ConvGeometry:
        """``convolution_2d``, ``convolution_3d`` and their gradients: weights OIHW
        ``[Cout, Cin/groups, kH, kW]`` or HWIO, OIDHW ``[Cout, Cin/groups, kD, kH, kW]`` or DHWIO."""
        weights_axes = _CONV_WEIGHTS_AXES[desc.weights_layout]
        data_axes = _DATA_AXES[desc.data_layout]
        spatial = _spatial_3d(desc) if isinstance(desc, Convolution3DOpDescriptor) else _spatial_2d(desc)
        return cls._resolve(desc, source_shape, data_axes, weights_axes, source_shape[data_axes[0]],
                            weights_shape[weights_axes[0]], desc.groups,
                            tuple(weights_shape[a] for a in weights_axes[3:]), *spatial)


    @classmethod
    def for_depthwise_2d(cls, desc: Any, source_shape: Sequence[int], weights_shape: Sequence[int]) -> ConvGeometry:
        """``depthwise_convolution_2d`` and its gradients: weights OIHW ``[M, C, kH, kW]`` or HWIO
        ``[kH, kW, C, M]``; the channel count comes from the weights when the source's is unknown."""
        weights_axes = _DEPTHWISE_WEIGHTS_AXES[desc.weights_layout]
        data_axes = _DATA_AXES[desc.data_layout]
        channels = source_shape[data_axes[0]]
        if channels < 0:
            channels = weights_shape[weights_axes[0]]
        out_channels = _known_product((channels, weights_shape[weights_axes[1]]))
        return cls._resolve(desc, source_shape, data_axes, weights_axes, channels, out_channels, channels,
                            tuple(weights_shape[a] for a in weights_axes[3:]), *_spatial_2d(desc))

    @classmethod
    def for_depthwise_3d(cls, desc: Any, source_shape: Sequence[int], weights_shape: Sequence[int]) -> ConvGeometry:
        """``depthwise_convolution_3d`` and its gradients: the channel axis at
        ``channel_dimension_index`` within the last 4 axes of source and weights (the weights'
        holds C*M), the other three spatial; axes before the last 4 of the source are batch axes."""
        rank, index = len(source_shape), desc.channel_dimension_index
        data_axes = (rank + index,) + tuple(a for a in range(rank - 4, rank) if a != rank + index)
        weights_channel = 4 + index
        kernel_axes = tuple(a for a in range(4) if a != weights_channel)
        channels = source_shape[data_axes[0]]
        pads = desc.padding_values
        return cls._resolve(desc, source_shape, data_axes, (weights_channel, weights_channel, None) + kernel_axes,
                            channels, weights_shape[weights_channel], channels,
                            tuple(weights_shape[a] for a in kernel_axes), tuple(desc.strides),
                            tuple(desc.dilation_rates), tuple(zip(pads[0::2], pads[1::2])))

    @classmethod
    def for_pooling_2d(cls, desc: Any, source_shape: Sequence[int]) -> ConvGeometry:
        """``max_pooling_2d``, ``avg_pooling_2d`` and their gradients: the window comes from the
        descriptor (kernel size, strides, dilations, padding, ``ceil_mode``)."""
        data_axes = _DATA_AXES[desc.data_layout]
        channels = source_shape[data_axes[0]]
        return cls._resolve(desc, source_shape, data_axes, (), channels, channels, channels,
                            (desc.kernel_height, desc.kernel_width), *_spatial_2d(desc), ceil_mode=desc.ceil_mode)

    @classmethod
    def of(cls, desc: Any, source_shape: Sequence[int], weights_shape: Optional[Sequence[int]] = None) -> ConvGeometry:
        """The geometry of the op family the descriptor belongs to (pooling ignores ``weights_shape``)."""
        if isinstance(desc, Pooling2DOpDescriptor):
            return cls.for_pooling_2d(desc, source_shape)
        assert weights_shape is not None, "a convolution needs its weights' shape"
        if isinstance(desc, DepthwiseConvolution3DOpDescriptor):
            return cls.for_depthwise_3d(desc, source_shape, weights_shape)
        if isinstance(desc, (Convolution2DOpDescriptor, Convolution3DOpDescriptor)):
            return cls.for_convolution(desc, source_shape, weights_shape)
        return cls.for_depthwise_2d(desc, source_shape, weights_shape)

    @classmethod
    def _resolve(cls, desc: Any, source_shape: Sequence[int], data_axes: tuple, weights_axes: tuple,
                 in_channels: int, out_channels: int, groups: int, kernel_size: tuple, strides: tuple,
                 dilations: tuple, explicit_padding: tuple, ceil_mode: bool = False) -> ConvGeometry:
        input_size = tuple(source_shape[a] for a in data_axes[1:])
        names = _AXIS_NAMES[len(_AXIS_NAMES) - len(input_size):]
        axes = [resolve_padding(n, k, s, d, desc.padding_style, b, a, name, ceil_mode)
                for n, k, s, d, (b, a), name in zip(input_size, kernel_size, strides, dilations,
                                                    explicit_padding, names)]
        return cls(batch_shape=tuple(source_shape[: len(source_shape) - len(data_axes)]), in_channels=in_channels,
                   out_channels=out_channels, groups=groups, input_size=input_size, kernel_size=tuple(kernel_size),
                   strides=tuple(strides), dilations=tuple(dilations),
                   padding_before=tuple(b for b, _, _ in axes), padding_after=tuple(a for _, a, _ in axes),
                   output_size=tuple(o for _, _, o in axes), data_axes=tuple(data_axes),
                   weights_axes=tuple(weights_axes))

    # -------------------------------------------------------------- sizes
    @cached_property
    def batch(self) -> int:
        """The number of images: the product of the batch axes (-1 if one is unknown)."""
        return _known_product(self.batch_shape)

    @cached_property
    def in_per_group(self) -> int:
        """Input channels per group (1 for depthwise and pooling)."""
        return _known_ratio(self.in_channels, self.groups)

    @cached_property
    def out_per_group(self) -> int:
        """Output channels per group: the channel multiplier M of a depthwise op."""
        return _known_ratio(self.out_channels, self.groups)

    @property
    def channel_multiplier(self) -> int:
        """The channel multiplier M of a depthwise op: its output channels per group."""
        return self.out_per_group

    @cached_property
    def dilated_kernel(self) -> tuple:
        """The extent of each dilated kernel axis, ``(k - 1) * dilation + 1``."""
        return tuple((k - 1) * d + 1 for k, d in zip(self.kernel_size, self.dilations))

    @cached_property
    def padded_size(self) -> tuple:
        """Per axis, a padded length that holds the input, its padding and every window tap."""
        return tuple(max(n + b + a, (o - 1) * s + k, 0) for n, b, a, o, s, k in zip(
            self.input_size, self.padding_before, self.padding_after, self.output_size, self.strides,
            self.dilated_kernel))

    def window_without_input(self, axis: int) -> Optional[int]:
        """The first output index along spatial ``axis`` whose window reads no input element
        (every tap in the padding, before or after the input, or between taps), or None; None
        too while a size is unknown. Pooling rejects such windows: their max or mean is undefined.

        Only windows that start before the input can straddle it; a window that starts inside
        it reads its own first tap, and one that starts at or past its end reads nothing, which
        only trailing padding of at least the dilated kernel can make (the last window counts).
        """
        size, k, s, d = self.input_size[axis], self.kernel_size[axis], self.strides[axis], self.dilations[axis]
        before, out = self.padding_before[axis], self.output_size[axis]
        if size < 0 or out < 0:
            return None
        for o in range(out):
            start = o * s - before
            if start >= 0:
                break
            first = -(-(-start) // d)  # smallest tap i with start + i*d >= 0
            if first >= k or start + first * d >= size:
                return o
        if (out - 1) * s - before >= size:
            return -(-(size + before) // s)  # the first window that starts at or past the end
        return None

    # -------------------------------------------------------------- layouts
    @cached_property
    def data_permutation(self) -> tuple:
        """Axes that bring a data tensor to ``[*batch, channels, *spatial]``."""
        return tuple(range(len(self.batch_shape))) + self.data_axes

    @cached_property
    def weights_permutation(self) -> tuple:
        """Axes that bring the weights to an order whose reshape is ``[groups, out_per_group,
        in_per_group, *kernel]`` (splitting an axis, or inserting the absent in_per_group one)."""
        return tuple(dict.fromkeys(a for a in self.weights_axes if a is not None))

    def data_sizes(self, shape: Sequence[int]) -> tuple:
        """``(batch, channels, *spatial)`` of a shape in the data layout (a source or a result)."""
        return (_known_product(shape[: len(self.batch_shape)]),) + tuple(shape[a] for a in self.data_axes)

    def data_shape(self, channels: int, spatial: Sequence[int], batch_shape: Optional[Sequence[int]] = None) -> tuple:
        """The shape, in the data layout, of a tensor with these sizes (batch: this geometry's)."""
        shape = list(self.batch_shape if batch_shape is None else batch_shape) + [0] * len(self.data_axes)
        for a, n in zip(self.data_axes, (channels, *spatial)):
            shape[a] = n
        return tuple(shape)

    @cached_property
    def source_shape(self) -> tuple:
        """The forward op's source shape (the data gradient's result)."""
        return self.data_shape(self.in_channels, self.input_size)

    @cached_property
    def result_shape(self) -> tuple:
        """The forward op's result shape (the incoming gradient's shape)."""
        return self.data_shape(self.out_channels, self.output_size)

    @cached_property
    def weights_shape(self) -> tuple:
        """The forward op's weights shape (the weights gradient's result); () for pooling."""
        if not self.weights_axes:
            return ()
        group, out, inner = self.weights_axes[:3]
        sizes = {a: n for a, n in zip(self.weights_axes[3:], self.kernel_size)}
        sizes[out] = self.out_per_group
        sizes[group] = self.out_channels if group == out else self.groups
        if inner is not None:
            sizes[inner] = self.in_per_group
        return tuple(sizes[a] for a in range(len(sizes)))

    def data_strides(self, shape: Sequence[int]) -> tuple:
        """Element strides of ``(batch, channels, *spatial)`` in a C-contiguous tensor of ``shape``
        (a source or a result; the batch axes lead, so they step as one)."""
        contiguous = _contiguous_strides(shape)
        return (prod(shape[len(self.batch_shape):]),) + tuple(contiguous[a] for a in self.data_axes)

    def weights_strides(self) -> tuple:
        """Element strides of ``(group, out_per_group, in_per_group, *kernel)`` in the C-contiguous
        weights tensor (0 for an axis the layout does not have)."""
        contiguous = _contiguous_strides(self.weights_shape)
        group, out, inner = self.weights_axes[:3]
        return ((contiguous[group] * (self.out_per_group if group == out else 1)), contiguous[out],
                0 if inner is None else contiguous[inner]) + tuple(contiguous[a] for a in self.weights_axes[3:])


def _spatial_2d(desc: Any) -> tuple[tuple, tuple, tuple]:
    """(strides, dilations, explicit padding per axis) of a 2D descriptor, H before W."""
    return ((desc.stride_in_y, desc.stride_in_x), (desc.dilation_rate_in_y, desc.dilation_rate_in_x),
            ((desc.padding_top, desc.padding_bottom), (desc.padding_left, desc.padding_right)))


def _spatial_3d(desc: Any) -> tuple[tuple, tuple, tuple]:
    """(strides, dilations, explicit padding per axis) of a 3D convolution descriptor: z (D), y (H), x (W)."""
    return ((desc.stride_in_z, desc.stride_in_y, desc.stride_in_x),
            (desc.dilation_rate_in_z, desc.dilation_rate_in_y, desc.dilation_rate_in_x),
            ((desc.padding_front, desc.padding_back), (desc.padding_top, desc.padding_bottom),
             (desc.padding_left, desc.padding_right)))


def _contiguous_strides(shape: Sequence[int]) -> tuple:
    return tuple(prod(shape[a + 1:]) for a in range(len(shape)))


def geometry_of(step: Any) -> ConvGeometry:
    """The geometry of a compiled convolution-family step (a kernel's view of its op).

    The forward op's source and weights are the step's inputs or its result, by the op's
    role: forward ``(source, weights)``; data gradient ``(incoming_gradient, weights) ->
    source`` (pooling: ``(gradient, source) -> source``); weights gradient
    ``(incoming_gradient, source) -> weights``.
    """
    inputs = [t.shape for t in step.in_types]
    result = step.out_types[0].shape
    role = step.op.opdef.role
    if role == "forward":
        source, weights = inputs[0], inputs[1] if len(inputs) > 1 else None
    elif role == "data_gradient":
        source, weights = result, inputs[1]
    else:
        source, weights = inputs[1], result
    return ConvGeometry.of(step.attrs["descriptor"], source, weights)
