"""Graph's op builders: one typed method per declared op (generated; do not edit).

Written by ``python scripts/gen_builders.py`` from the op declarations in ``minigraph/ops/``;
a test fails when it is stale. Each method calls the builder declared with the op.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from .descriptors import (Convolution2DOpDescriptor, Convolution3DOpDescriptor, DepthwiseConvolution2DOpDescriptor,
                          DepthwiseConvolution3DOpDescriptor, FFTDescriptor, ImToColOpDescriptor, Pooling2DOpDescriptor,
                          Pooling4DOpDescriptor, ResizeNearestRoundingMode, SDPADescriptor, StencilOpDescriptor)
from .ir import OPS, Operation, Tensor
from .types import DataType, float32  # noqa: F401  (used by some signatures)

TensorLike = Union[Tensor, float, int, bool, np.ndarray, np.generic, Sequence[Any]]
"""A tensor of the graph, or a number/array/list that becomes a constant."""

__all__ = ["OpBuilders", "TensorLike"]


def _builder(type: str) -> Callable[..., Any]:
    builder = OPS[type].builder
    assert builder is not None
    return builder


class OpBuilders:
    """Graph methods that build ops, one per declared op type (MPSGraph's op methods)."""

    def absolute(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise |x| (MPSGraph ``absolute(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``absolute(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('absolute')(self, tensor, name)  # type: ignore[no-any-return]

    def absolute_square(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """``|z|^2 = a^2 + b^2`` of each element, a real tensor of the parts' dtype; ``x^2`` for a real tensor (MPSGraph ``absoluteSquare(tensor:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``absoluteSquare(tensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('absolute_square')(self, tensor, name)  # type: ignore[no-any-return]

    def acos(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise arccosine, in [0, pi]; NaN outside [-1, 1]; webgpu: Cephes' acosf (2 asin(sqrt((1 - |x|) / 2)) near ±1, pi/2 - asin(x) between): 1.3 ulp at most (MPSGraph ``acos(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``acos(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('acos')(self, tensor, name)  # type: ignore[no-any-return]

    def acosh(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise inverse hyperbolic cosine, NaN below 1; webgpu: sqrt(x - 1) P(x - 1) below 1.5 (no log(1 + tiny) near 1), log(x + sqrt((x - 1)(x + 1))) to 2^12, log(x) + log(2) beyond: 2.2 ulp at most (MPSGraph ``acosh(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``acosh(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('acosh')(self, tensor, name)  # type: ignore[no-any-return]

    def adam(self, learning_rate: TensorLike, beta1: TensorLike, beta2: TensorLike, epsilon: TensorLike, beta1_power: Optional[TensorLike], beta2_power: Optional[TensorLike], values: TensorLike, momentum: TensorLike, velocity: TensorLike, maximum_velocity: Optional[TensorLike], gradient: TensorLike, name: Optional[str] = None) -> list[Tensor]:
        """One Adam step as new tensors: ``[values, momentum, velocity]``, plus the new maximum velocity
        (AMSGrad) when ``maximum_velocity`` is not None (MPSGraph
        ``adam(learningRate:beta1:beta2:epsilon:beta1Power:beta2Power:values:momentum:velocity:maximumVelocity:gradient:name:)``). The first six
        operands may be numbers. With ``beta1_power`` and ``beta2_power`` both None, ``learning_rate``
        is the current, already bias-corrected rate ``lr[t]`` (MPSGraph ``adam(currentLearningRate:
        beta1:beta2:epsilon:values:momentum:velocity:maximumVelocity:gradient:name:)``): the same step
        with powers 0, where ``sqrt(1 - 0) / (1 - 0)`` is exactly 1. Not differentiable.

        Args:
            learning_rate: The learning rate (a number or a tensor broadcasting to ``values``); the
                current bias-corrected rate when both powers are None.
            beta1: The momentum's decay rate.
            beta2: The velocity's decay rate.
            epsilon: Added to ``sqrt(velocity)`` (after the bias correction of the rate).
            beta1_power: ``beta1^t`` for step t; None (with ``beta2_power``) for the current-rate form.
            beta2_power: ``beta2^t`` for step t; None (with ``beta1_power``) for the current-rate form.
            values: The values updated (a float tensor).
            momentum: The first moment, of ``values``' shape.
            velocity: The second moment, of ``values``' shape.
            maximum_velocity: The largest velocity so far (AMSGrad), or None.
            gradient: The gradient, of ``values``' shape.
            name: The op's name (MPSGraph's ``name:``).

        Returns:
            list[Tensor]: the new values, momentum and velocity (and maximum velocity).

        Raises:
            MiniGraphError: a ShapeError or DTypeError when operands do not fit, a DescriptorError
                for one power None and the other not; the message names the op.
        """
        return _builder('adam')(self, learning_rate, beta1, beta2, epsilon, beta1_power, beta2_power, values, momentum, velocity, maximum_velocity, gradient, name)  # type: ignore[no-any-return]

    def addition(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a + b (MPSGraph ``addition(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``addition(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('addition')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def arg_sort(self, tensor: TensorLike, axis: int, descending: bool = False, name: Optional[str] = None) -> Tensor:
        """The int32 indices that sort ``tensor`` along ``axis`` (the order of ``sort``: NaN last
        ascending, first descending; equal elements keep their order) (MPSGraph
        ``argSort(_:axis:descending:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            descending: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``argSort(_:axis:descending:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('arg_sort')(self, tensor, axis, descending, name)  # type: ignore[no-any-return]

    def asin(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise arcsine, in [-pi/2, pi/2]; NaN outside [-1, 1]; webgpu: Cephes' asinf (x + x^3 P(x^2) to 0.5, pi/2 - 2 asin(sqrt((1 - |x|) / 2)) above): 2.3 ulp at most (MPSGraph ``asin(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``asin(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('asin')(self, tensor, name)  # type: ignore[no-any-return]

    def asinh(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise inverse hyperbolic sine; webgpu: an odd polynomial below 0.5, log(|x| + sqrt(x^2 + 1)) written as a log1p to 2^12, log(|x|) + log(2) beyond (x^2 would overflow): 2.5 ulp at most (MPSGraph ``asinh(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``asinh(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('asinh')(self, tensor, name)  # type: ignore[no-any-return]

    def assign(self, variable: TensorLike, tensor: TensorLike, name: Optional[str] = None) -> Operation:
        """An operation that stores ``tensor`` into ``variable`` (MPSGraph ``assign(_:tensor:name:)``).

        It runs only when listed in ``target_operations`` (or as a control dependency of something
        that runs). Assignments take effect only if the whole run succeeds.

        Args:
            variable: A variable tensor (made by ``g.variable``).
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Operation: runs when listed in ``target_operations`` (MPSGraph ``assign(_:tensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('assign')(self, variable, tensor, name)  # type: ignore[no-any-return]

    def atan(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise arctangent, in [-pi/2, pi/2]; webgpu: Cephes' atanf (atan2's reduction): 2.0 ulp at most (MPSGraph ``atan(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``atan(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('atan')(self, tensor, name)  # type: ignore[no-any-return]

    def atan2(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise two-argument arctangent of a (y) over b (x), in [-pi, pi], as C99's atan2 (MPSGraph ``atan2(withPrimaryTensor:secondaryTensor:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``atan2(withPrimaryTensor:secondaryTensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('atan2')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def atanh(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise inverse hyperbolic tangent, ±inf at ±1, NaN outside [-1, 1]; webgpu: an odd polynomial below 0.5 (no log(1 + tiny) near 0), log((1 + x) / (1 - x)) / 2 above: 1.3 ulp at most (MPSGraph ``atanh(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``atanh(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('atanh')(self, tensor, name)  # type: ignore[no-any-return]

    def avg_pooling_2d(self, source: TensorLike, descriptor: Pooling2DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Mean over each window: sum / number of input elements, or / taps in the padded extent with include_zero_pad_to_average (MPSGraph ``avgPooling2D(withSourceTensor:descriptor:name:)``).

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``avgPooling2D(withSourceTensor:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('avg_pooling_2d')(self, source, descriptor, name)  # type: ignore[no-any-return]

    def avg_pooling_2d_gradient(self, gradient: TensorLike, source: TensorLike, descriptor: Pooling2DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Gradient of avg_pooling_2d: each window's gradient spread evenly over the elements it averaged; linear in ``gradient``, independent of the source's values (MPSGraph ``avgPooling2DGradient(withGradientTensor:sourceTensor:descriptor:name:)``).

        Args:
            gradient: A tensor of this graph (the op's ``gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``avgPooling2DGradient(withGradientTensor:sourceTensor:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('avg_pooling_2d_gradient')(self, gradient, source, descriptor, name)  # type: ignore[no-any-return]

    def avg_pooling_4d(self, source: TensorLike, descriptor: Pooling4DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Mean over each window of the four innermost axes: sum / number of input elements, or / taps in the padded extent with include_zero_pad_to_average (MPSGraph ``avgPooling4D(_:descriptor:name:)``).

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``avgPooling4D(_:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('avg_pooling_4d')(self, source, descriptor, name)  # type: ignore[no-any-return]

    def avg_pooling_4d_gradient(self, gradient: TensorLike, source: TensorLike, descriptor: Pooling4DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Gradient of avg_pooling_4d: each window's gradient spread evenly over the elements it averaged (MPSGraph ``avgPooling4DGradient(_:source:descriptor:name:)``).

        Args:
            gradient: A tensor of this graph (the op's ``gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``avgPooling4DGradient(_:source:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('avg_pooling_4d_gradient')(self, gradient, source, descriptor, name)  # type: ignore[no-any-return]

    def band_part(self, tensor: TensorLike, num_lower: int, num_upper: int, name: Optional[str] = None) -> Tensor:
        """The band of each matrix in the last two axes: ``num_lower`` diagonals below the main one and
        ``num_upper`` above it (negative: all of them); everything else 0, as ``tf.linalg.band_part``
        (MPSGraph ``bandPart(_:numLower:numUpper:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            num_lower: See the op reference (docs/reference.md).
            num_upper: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``bandPart(_:numLower:numUpper:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('band_part')(self, tensor, num_lower, num_upper, name)  # type: ignore[no-any-return]

    def batch_to_space(self, tensor: TensorLike, spatial_axes: Sequence[int], batch_axis: int, block_dimensions: Sequence[int], use_pixel_shuffle_order: bool, name: Optional[str] = None) -> Tensor:
        """Move blocks out of ``batch_axis`` into the ``spatial_axes`` (MPSGraph
        ``batchToSpace(_:spatialAxes:batchAxis:blockDimensions:usePixelShuffleOrder:name:)``).

        The batch axis must be a multiple of the product of ``block_dimensions``; each spatial axis
        grows by its block size. TensorFlow's ``batch_to_space_nd`` without cropping when
        ``use_pixel_shuffle_order=False``. The inverse of ``space_to_batch``.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            spatial_axes: See the op reference (docs/reference.md).
            batch_axis: See the op reference (docs/reference.md).
            block_dimensions: See the op reference (docs/reference.md).
            use_pixel_shuffle_order: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``batchToSpace(_:spatialAxes:batchAxis:blockDimensions:usePixelShuffleOrder:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('batch_to_space')(self, tensor, spatial_axes, batch_axis, block_dimensions, use_pixel_shuffle_order, name)  # type: ignore[no-any-return]

    def bitwise_and(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a & b of integer tensors (bool is refused: use logical_and) (MPSGraph ``bitwiseAND(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``bitwiseAND(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('bitwise_and')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def bitwise_left_shift(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a << b of integer tensors, the bits shifted out dropped (two's complement wrap-around). Apple's page does not say what a count past the width does; minigraph reads the count as unsigned, so a count >= the width (a negative count included) gives 0, as NumPy's left_shift (MPSGraph ``bitwiseLeftShift(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``bitwiseLeftShift(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('bitwise_left_shift')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def bitwise_not(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise ~x of an integer tensor (bool is refused: use logical_not) (MPSGraph ``bitwiseNOT(_:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``bitwiseNOT(_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('bitwise_not')(self, tensor, name)  # type: ignore[no-any-return]

    def bitwise_or(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a | b of integer tensors (bool is refused: use logical_or) (MPSGraph ``bitwiseOR(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``bitwiseOR(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('bitwise_or')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def bitwise_population_count(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise number of bits set in x, of x's dtype; a negative signed x counts its two's complement bits (-1 as int32 gives 32) (MPSGraph ``bitwisePopulationCount(_:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``bitwisePopulationCount(_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('bitwise_population_count')(self, tensor, name)  # type: ignore[no-any-return]

    def bitwise_right_shift(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a >> b of integer tensors: arithmetic (sign-filling) for signed types, logical for unsigned. Apple's page does not say what a count past the width does; minigraph reads the count as unsigned, so a count >= the width (a negative count included) gives 0, or -1 for a negative signed a, as NumPy's right_shift (MPSGraph ``bitwiseRightShift(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``bitwiseRightShift(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('bitwise_right_shift')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def bitwise_xor(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a ^ b of integer tensors (bool is refused: use logical_xor) (MPSGraph ``bitwiseXOR(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``bitwiseXOR(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('bitwise_xor')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def block_argument(self, shape: Any, dtype: Any, index: int = 0, name: Optional[str] = None) -> Tensor:
        """An argument of a control-flow block (the tensors MPSGraph passes to a loop's closures):
        placeholder-like, typed, built by the control-flow builders inside the block.

        Args:
            shape: A shape, as a list of ints (``-1`` marks a dimension known only at run time, where the op allows it).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            index: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``blockArgument(index:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('block_argument')(self, shape, dtype, index, name)  # type: ignore[no-any-return]

    def bottom_k(self, tensor: TensorLike, axis: int, k: int, name: Optional[str] = None) -> tuple[Tensor, ...]:
        """The ``k`` smallest values along ``axis``, smallest first, and their int32 indices:
        ``(values, indices)``, the first k of sort's ascending order (NaN largest, so last; ties to the
        lower index) (MPSGraph ``bottomK(_:axis:k:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/bottomk(_:axis:k:name:)).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            k: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``bottomK(_:axis:k:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('bottom_k')(self, tensor, axis, k, name)  # type: ignore[no-any-return]

    def bottom_k_gradient(self, incoming_gradient: TensorLike, source: TensorLike, axis: int, k: int, name: Optional[str] = None) -> Tensor:
        """Gradient of bottom_k's values: ``incoming_gradient`` at position j along ``axis`` goes to
        the j-th smallest element of ``source``, zero elsewhere (MPSGraph
        ``bottomKGradient(_:source:axis:k:name:)``, the ``axis:k:`` sibling of
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/bottomkgradient(_:source:axistensor:ktensor:name:)).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            axis: One axis; a negative value counts from the end.
            k: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``bottomKGradient(_:source:axis:k:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('bottom_k_gradient')(self, incoming_gradient, source, axis, k, name)  # type: ignore[no-any-return]

    def broadcast(self, tensor: TensorLike, shape: Sequence[int], name: Optional[str] = None) -> Tensor:
        """Repeat along size-1 (and new leading) axes to ``shape`` (MPSGraph ``broadcast(_:shape:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            shape: A shape, as a list of ints (``-1`` marks a dimension known only at run time, where the op allows it).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``broadcast(_:shape:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('broadcast')(self, tensor, shape, name)  # type: ignore[no-any-return]

    def call(self, symbol_name: str, input_tensors: 'Sequence[TensorLike]', output_types: 'Sequence[Any]', name: Optional[str] = None) -> Tensor:
        """Run another executable (MPSGraph ``call(symbolName:inputTensors:outputTypes:name:)``),
        found at compile time in ``CompilationDescriptor(callables={symbol_name: executable})``; its
        results must have ``output_types``.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/call(symbolname:inputtensors:outputtypes:name:)

        Args:
            symbol_name: The key of the executable in the compilation descriptor's ``callables``.
            input_tensors: Its inputs, in its ``feed_tensors`` order.
            output_types: ``ShapedType``s (or ``(shape, dtype)`` pairs) of its results.
            name: The op's name.

        Returns:
            list[Tensor]: the executable's results.

        Raises:
            TargetError: an empty symbol name; compiling without the callable (a PlanError there).
        """
        return _builder('call')(self, symbol_name, input_tensors, output_types, name)  # type: ignore[no-any-return]

    def cast(self, tensor: TensorLike, to_type: Any = None, name: Optional[str] = None, *, to: Any = None, dtype: Any = None) -> Tensor:
        """Convert to another dtype (MPSGraph ``cast(_:to:name:)``, Objective-C ``castTensor:toType:name:``).
        Float to int truncates toward zero; NaN, Inf and out-of-range values give unspecified
        integers (as on the GPU). To int4 / uint4 the integer's low 4 bits are kept, as int8 keeps 8
        (docs/quantization.md).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            to_type: The data type to convert to (MPSGraph's ``to:``).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            to: See the op reference (docs/reference.md).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``cast(_:to:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('cast')(self, tensor, to_type, name, to=to, dtype=dtype)  # type: ignore[no-any-return]

    def ceil(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise smallest integer >= x (integers unchanged) (MPSGraph ``ceil(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``ceil(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('ceil')(self, tensor, name)  # type: ignore[no-any-return]

    def clamp(self, tensor: TensorLike, min_value: TensorLike, max_value: TensorLike, name: Optional[str] = None) -> Tensor:
        """``tensor`` limited to ``[min_value, max_value]``, broadcast (MPSGraph ``clamp(_:min:max:name:)``).

        As Metal's ``clamp``: ``minimum(maximum(tensor, min_value), max_value)`` with MPSGraph's
        NaN-ignoring minimum and maximum, so a NaN element gives ``min_value`` and where
        ``min_value > max_value`` the result is ``max_value``. ``min_value`` and ``max_value`` may be
        tensors or Python numbers (which take the tensor's dtype); ReLU6 is ``g.clamp(x, 0, 6)``.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            min_value: A tensor of this graph (the op's ``min_value`` input).
            max_value: A tensor of this graph (the op's ``max_value`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``clamp(_:min:max:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('clamp')(self, tensor, min_value, max_value, name)  # type: ignore[no-any-return]

    def col_to_im(self, source: TensorLike, output_shape: Sequence[int], descriptor: ImToColOpDescriptor, name: Optional[str] = None) -> Tensor:
        """The image of ``output_shape`` whose every element is the sum of the column elements that
        ``im_to_col`` would copy from it (MPSGraph ``colToIm(_:outputShape:descriptor:name:)``; as
        ``torch.nn.functional.fold`` for NCHW): the adjoint of ``im_to_col``, its gradient.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/coltoim(_:outputshape:descriptor:name:)

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``colToIm(_:outputShape:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('col_to_im')(self, source, output_shape, descriptor, name)  # type: ignore[no-any-return]

    def complex_tensor(self, real_tensor: TensorLike, imaginary_tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """``real_tensor + i imaginary_tensor`` (MPSGraph ``complexTensor(realTensor:imaginaryTensor:name:)``):
        float32 parts give complex64, float16 parts complex32; the parts broadcast as NumPy.

        Args:
            real_tensor: A tensor of this graph (the op's ``real_tensor`` input).
            imaginary_tensor: A tensor of this graph (the op's ``imaginary_tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``complexTensor(realTensor:imaginaryTensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('complex_tensor')(self, real_tensor, imaginary_tensor, name)  # type: ignore[no-any-return]

    def concat(self, tensors: Sequence[TensorLike], dimension: int, interleave: bool = False, name: Optional[str] = None) -> Tensor:
        """Join tensors along ``dimension`` (MPSGraph ``concatTensors(_:dimension:interleave:name:)``;
        without interleave, ``concatTensors(_:dimension:name:)``).

        ``interleave=True`` alternates the tensors' elements along ``dimension``: Apple's example,
        ``[1, 2, 3]`` and ``[4, 5, 6]`` give ``[1, 4, 2, 5, 3, 6]``; the tensors then need one shape.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/concattensors(_:dimension:interleave:name:)

        Args:
            tensors: A list of tensors of this graph.
            dimension: A dimension index (negative counts from the end).
            interleave: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``concatTensors(_:dimension:interleave:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('concat')(self, tensors, dimension, interleave, name)  # type: ignore[no-any-return]

    def conjugate(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """The complex conjugate ``a - ib`` of each element; a real tensor is returned as it is (MPSGraph ``conjugate(tensor:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``conjugate(tensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('conjugate')(self, tensor, name)  # type: ignore[no-any-return]

    def constant(self, value: Any, dtype: Any = None, shape: Any = None, name: Optional[str] = None) -> Tensor:
        """A constant from a scalar or array (MPSGraph ``constant``).

        ``dtype`` defaults to the array's dtype; Python floats give float32 and ints int32.
        With ``shape``, a scalar is filled to that shape (``constant(_:shape:dataType:)``).

        Args:
            value: A Python number, nested list or NumPy array (copied).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            shape: A shape, as a list of ints (``-1`` marks a dimension known only at run time, where the op allows it).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``constant(_:shape:dataType:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('constant')(self, value, dtype, shape, name)  # type: ignore[no-any-return]

    def convolution_2d(self, source: TensorLike, weights: TensorLike, descriptor: Optional[Convolution2DOpDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """Grouped 2D convolution (cross-correlation) of ``source`` with ``weights``
        (MPSGraph ``convolution2D(_:weights:descriptor:name:)``).

        ``y[n, o, oh, ow] = sum_{ci, i, j} x[n, grp(o)*Cin/g + ci, oh*sY + i*dY - pT, ow*sX + j*dX - pL]
        * W[o, ci, i, j]`` (NCHW/OIHW), zero outside the input. The descriptor is copied.

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            weights: A tensor of this graph (the op's ``weights`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``convolution2D(_:weights:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('convolution_2d')(self, source, weights, descriptor, name)  # type: ignore[no-any-return]

    def convolution_2d_data_gradient(self, incoming_gradient: TensorLike, weights: TensorLike, output_shape: Sequence[int], descriptor: Optional[Convolution2DOpDescriptor] = None, name: Optional[str] = None, *, forward_convolution_descriptor: Any = None) -> Tensor:
        """Gradient of ``convolution_2d`` with respect to its source: the transposed convolution
        (MPSGraph ``convolution2DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``).

        ``output_shape`` is the forward **source** shape (4 numbers in the data layout): with stride > 1
        several source sizes give the same output, so it cannot be inferred. ``descriptor`` is the
        forward descriptor (``forward_convolution_descriptor`` is accepted as MPSGraph's label).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            weights: A tensor of this graph (the op's ``weights`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            forward_convolution_descriptor: The descriptor of the forward op this gradient belongs to (copied when the op is built).

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``convolution2DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('convolution_2d_data_gradient')(self, incoming_gradient, weights, output_shape, descriptor, name, forward_convolution_descriptor=forward_convolution_descriptor)  # type: ignore[no-any-return]

    def convolution_2d_weights_gradient(self, incoming_gradient: TensorLike, source: TensorLike, output_shape: Sequence[int], descriptor: Optional[Convolution2DOpDescriptor] = None, name: Optional[str] = None, *, forward_convolution_descriptor: Any = None) -> Tensor:
        """Gradient of ``convolution_2d`` with respect to its weights
        (MPSGraph ``convolution2DWeightsGradient(_:source:outputShape:forwardConvolutionDescriptor:name:)``).

        ``output_shape`` is the forward **weights** shape (the header's "source shape" is an erratum):
        it is the only source of kH and kW. Not differentiable, as in MPSGraph.

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            forward_convolution_descriptor: The descriptor of the forward op this gradient belongs to (copied when the op is built).

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``convolution2DWeightsGradient(_:source:outputShape:forwardConvolutionDescriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('convolution_2d_weights_gradient')(self, incoming_gradient, source, output_shape, descriptor, name, forward_convolution_descriptor=forward_convolution_descriptor)  # type: ignore[no-any-return]

    def convolution_3d(self, source: TensorLike, weights: TensorLike, descriptor: Optional[Convolution3DOpDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """Grouped 3D convolution (cross-correlation) of ``source`` with ``weights``
        (MPSGraph ``convolution3D(_:weights:descriptor:name:)``).

        ``y[n, o, od, oh, ow] = sum_{ci, a, i, j} x[n, grp(o)*Cin/g + ci, od*sZ + a*dZ - pFront,
        oh*sY + i*dY - pTop, ow*sX + j*dX - pLeft] * W[o, ci, a, i, j]`` (NCDHW/OIDHW), zero outside
        the input. The descriptor is copied.

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            weights: A tensor of this graph (the op's ``weights`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``convolution3D(_:weights:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('convolution_3d')(self, source, weights, descriptor, name)  # type: ignore[no-any-return]

    def convolution_3d_data_gradient(self, incoming_gradient: TensorLike, weights: TensorLike, output_shape: Sequence[int], descriptor: Optional[Convolution3DOpDescriptor] = None, name: Optional[str] = None, *, forward_convolution_descriptor: Any = None) -> Tensor:
        """Gradient of ``convolution_3d`` with respect to its source: the transposed convolution
        (MPSGraph ``convolution3DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``).

        ``output_shape`` is the forward **source** shape (5 numbers in the data layout): with a stride
        above 1 several source sizes give the same output. ``descriptor`` is the forward descriptor
        (``forward_convolution_descriptor`` is accepted as MPSGraph's label).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            weights: A tensor of this graph (the op's ``weights`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            forward_convolution_descriptor: The descriptor of the forward op this gradient belongs to (copied when the op is built).

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``convolution3DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('convolution_3d_data_gradient')(self, incoming_gradient, weights, output_shape, descriptor, name, forward_convolution_descriptor=forward_convolution_descriptor)  # type: ignore[no-any-return]

    def convolution_3d_weights_gradient(self, incoming_gradient: TensorLike, source: TensorLike, output_shape: Sequence[int], descriptor: Optional[Convolution3DOpDescriptor] = None, name: Optional[str] = None, *, forward_convolution_descriptor: Any = None) -> Tensor:
        """Gradient of ``convolution_3d`` with respect to its weights
        (MPSGraph ``convolution3DWeightsGradient(_:source:outputShape:forwardConvolutionDescriptor:name:)``).

        ``output_shape`` is the forward **weights** shape (5 numbers in the weights layout): the only
        source of the kernel size. Not differentiable, as in MPSGraph.

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            forward_convolution_descriptor: The descriptor of the forward op this gradient belongs to (copied when the op is built).

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``convolution3DWeightsGradient(_:source:outputShape:forwardConvolutionDescriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('convolution_3d_weights_gradient')(self, incoming_gradient, source, output_shape, descriptor, name, forward_convolution_descriptor=forward_convolution_descriptor)  # type: ignore[no-any-return]

    def convolution_transpose_2d(self, source: TensorLike, weights: TensorLike, output_shape: Sequence[int], descriptor: Optional[Convolution2DOpDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """Transposed 2D convolution: the data gradient of the forward convolution that ``descriptor``
        describes, applied to ``source`` (MPSGraph ``convolutionTranspose2D(_:weights:outputShape:descriptor:name:)``).

        ``weights`` are the forward convolution's (O = ``source``'s channels); ``output_shape`` is the
        result's shape, which picks one of the ``stride`` sizes that convolve back to ``source``'s.

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            weights: A tensor of this graph (the op's ``weights`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``convolutionTranspose2D(_:weights:outputShape:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('convolution_transpose_2d')(self, source, weights, output_shape, descriptor, name)  # type: ignore[no-any-return]

    def convolution_transpose_2d_data_gradient(self, incoming_gradient: TensorLike, weights: TensorLike, output_shape: Sequence[int], descriptor: Optional[Convolution2DOpDescriptor] = None, name: Optional[str] = None, *, forward_convolution_descriptor: Any = None) -> Tensor:
        """Gradient of ``convolution_transpose_2d`` with respect to its source: the forward
        convolution of ``incoming_gradient`` (MPSGraph
        ``convolutionTranspose2DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``).

        ``output_shape`` is the transpose's source shape (checked: the convolution gives it).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            weights: A tensor of this graph (the op's ``weights`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            forward_convolution_descriptor: The descriptor of the forward op this gradient belongs to (copied when the op is built).

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``convolutionTranspose2DDataGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('convolution_transpose_2d_data_gradient')(self, incoming_gradient, weights, output_shape, descriptor, name, forward_convolution_descriptor=forward_convolution_descriptor)  # type: ignore[no-any-return]

    def convolution_transpose_2d_weights_gradient(self, incoming_gradient: TensorLike, source: TensorLike, output_shape: Sequence[int], descriptor: Optional[Convolution2DOpDescriptor] = None, name: Optional[str] = None, *, forward_convolution_descriptor: Any = None) -> Tensor:
        """Gradient of ``convolution_transpose_2d`` with respect to its weights (MPSGraph
        ``convolutionTranspose2DWeightsGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``,
        whose Swift label ``weights:`` takes the transpose's **source**, ObjC ``sourceTensor:``).

        ``output_shape`` is the weights shape. Not differentiable, as in MPSGraph.

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            forward_convolution_descriptor: The descriptor of the forward op this gradient belongs to (copied when the op is built).

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``convolutionTranspose2DWeightsGradient(_:weights:outputShape:forwardConvolutionDescriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('convolution_transpose_2d_weights_gradient')(self, incoming_gradient, source, output_shape, descriptor, name, forward_convolution_descriptor=forward_convolution_descriptor)  # type: ignore[no-any-return]

    def coordinate_along_axis(self, axis: int, with_shape: Sequence[int], name: Optional[str] = None) -> Tensor:
        """An int32 tensor of shape ``with_shape`` whose element ``[i_0, ..., i_N]`` is ``i_axis``
        (MPSGraph ``coordinate(alongAxis:withShape:name:)``; a negative axis counts from the end,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/coordinate(alongaxis:withshape:name:)).

        ``coordinate_along_axis(0, [3, 2])`` is ``[[0, 0], [1, 1], [2, 2]]``. The shape is static.

        Args:
            axis: One axis; a negative value counts from the end.
            with_shape: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``coordinate(alongAxis:withShape:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('coordinate_along_axis')(self, axis, with_shape, name)  # type: ignore[no-any-return]

    def cos(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise cos(x) (MPSGraph ``cos(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``cos(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('cos')(self, tensor, name)  # type: ignore[no-any-return]

    def cosh(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise cosh(x); webgpu: E + 1/(4E) with E = e^|x| / 2 (x log2(e) an exact product, finite up to 89.4): 1.5 ulp at most (MPSGraph ``cosh(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``cosh(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('cosh')(self, tensor, name)  # type: ignore[no-any-return]

    def cumulative_maximum(self, tensor: TensorLike, axis: int, exclusive: bool = False, reverse: bool = False, name: Optional[str] = None) -> Tensor:
        """Running maximum along ``axis``: ``y[i] = max(x[0], ..., x[i])``, with MPSGraph's
        NaN-ignoring ``maximum``, so ``y[i]`` is ``reduction_maximum`` of the prefix (a prefix of only
        NaN gives -inf). ``exclusive`` starts from the type's lowest value (Apple), -inf for floats
        and the minimum for integers; ``reverse`` runs from the end (MPSGraph
        ``cumulativeMaximum(_:axis:exclusive:reverse:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/cumulativemaximum(_:axis:exclusive:reverse:name:)).

        The gradient goes to the element that holds the running maximum; among equal values the one
        the scan reached last (``torch.cummax``'s index).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            exclusive: See the op reference (docs/reference.md).
            reverse: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``cumulativeMaximum(_:axis:exclusive:reverse:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('cumulative_maximum')(self, tensor, axis, exclusive, reverse, name)  # type: ignore[no-any-return]

    def cumulative_minimum(self, tensor: TensorLike, axis: int, exclusive: bool = False, reverse: bool = False, name: Optional[str] = None) -> Tensor:
        """Running minimum along ``axis`` with the NaN-ignoring ``minimum`` (a prefix of only NaN
        gives +inf); ``exclusive`` starts from the type's highest value (+inf for floats), ``reverse``
        runs from the end (MPSGraph ``cumulativeMinimum(_:axis:exclusive:reverse:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/cumulativeminimum(_:axis:exclusive:reverse:name:)).
        The gradient goes to the element holding the running minimum, the last one reached on ties.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            exclusive: See the op reference (docs/reference.md).
            reverse: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``cumulativeMinimum(_:axis:exclusive:reverse:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('cumulative_minimum')(self, tensor, axis, exclusive, reverse, name)  # type: ignore[no-any-return]

    def cumulative_product(self, tensor: TensorLike, axis: int, exclusive: bool = False, reverse: bool = False, name: Optional[str] = None) -> Tensor:
        """Running product along ``axis``: ``y[i] = x[0] * ... * x[i]``; ``exclusive`` leaves out
        ``x[i]`` (``y[0] = 1``, the identity), ``reverse`` runs from the end; integers wrap (MPSGraph
        ``cumulativeProduct(_:axis:exclusive:reverse:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/cumulativeproduct(_:axis:exclusive:reverse:name:)).

        The gradient is exact at zeros (no division by a zero, as in ``torch.cumprod``): see
        docs/reduction.md.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            exclusive: See the op reference (docs/reference.md).
            reverse: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``cumulativeProduct(_:axis:exclusive:reverse:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('cumulative_product')(self, tensor, axis, exclusive, reverse, name)  # type: ignore[no-any-return]

    def cumulative_sum(self, tensor: TensorLike, axis: int, exclusive: bool = False, reverse: bool = False, name: Optional[str] = None) -> Tensor:
        """Running sum along ``axis``: ``y[i] = x[0] + ... + x[i]``. ``exclusive`` leaves out ``x[i]``
        itself (``y[0] = 0``); ``reverse`` sums from the end (``y[i] = x[i] + ... + x[n-1]``)
        (MPSGraph ``cumulativeSum(_:axis:exclusive:reverse:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            exclusive: See the op reference (docs/reference.md).
            reverse: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``cumulativeSum(_:axis:exclusive:reverse:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('cumulative_sum')(self, tensor, axis, exclusive, reverse, name)  # type: ignore[no-any-return]

    def depth_to_space_2d(self, tensor: TensorLike, width_axis: int, height_axis: int, depth_axis: int, block_size: int, use_pixel_shuffle_order: bool, name: Optional[str] = None) -> Tensor:
        """Move groups of ``block_size**2`` depth values into ``block_size`` x ``block_size`` blocks of
        the height and width axes (MPSGraph
        ``depth(toSpace2DTensor:widthAxis:heightAxis:depthAxis:blockSize:usePixelShuffleOrder:name:)``).

        ``use_pixel_shuffle_order=True`` is PyTorch's ``pixel_shuffle`` and ONNX DepthToSpace
        ``CRD``; False is ONNX ``DCR`` and TensorFlow's ``depth_to_space``. The depth must be a
        multiple of ``block_size**2``. The inverse of ``space_to_depth_2d``.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            width_axis: See the op reference (docs/reference.md).
            height_axis: See the op reference (docs/reference.md).
            depth_axis: See the op reference (docs/reference.md).
            block_size: See the op reference (docs/reference.md).
            use_pixel_shuffle_order: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``depth(toSpace2DTensor:widthAxis:heightAxis:depthAxis:blockSize:usePixelShuffleOrder:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('depth_to_space_2d')(self, tensor, width_axis, height_axis, depth_axis, block_size, use_pixel_shuffle_order, name)  # type: ignore[no-any-return]

    def depthwise_convolution_2d(self, source: TensorLike, weights: TensorLike, descriptor: Optional[DepthwiseConvolution2DOpDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """Depthwise 2D convolution (MPSGraph ``depthwiseConvolution2D(_:weights:descriptor:name:)``).

        ``y[n, c*M+m, oh, ow] = sum_{i,j} x[n, c, oh*sY + i*dY - pT, ow*sX + j*dX - pL] * W[m, c, i, j]``
        (NCHW/OIHW spelling; zero outside x). The descriptor is copied, so later edits change nothing.

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            weights: A tensor of this graph (the op's ``weights`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``depthwiseConvolution2D(_:weights:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('depthwise_convolution_2d')(self, source, weights, descriptor, name)  # type: ignore[no-any-return]

    def depthwise_convolution_2d_data_gradient(self, incoming_gradient: TensorLike, weights: TensorLike, output_shape: Any, descriptor: Optional[DepthwiseConvolution2DOpDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """Gradient of the depthwise convolution w.r.t. its source (MPSGraph
        ``depthwiseConvolution2DDataGradient(_:weights:outputShape:descriptor:name:)``).

        ``output_shape`` is the forward source's shape (4 ints, data layout): it fixes H and W,
        which dy alone does not (with stride > 1 several input sizes give one output size).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            weights: A tensor of this graph (the op's ``weights`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``depthwiseConvolution2DDataGradient(_:weights:outputShape:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('depthwise_convolution_2d_data_gradient')(self, incoming_gradient, weights, output_shape, descriptor, name)  # type: ignore[no-any-return]

    def depthwise_convolution_2d_weights_gradient(self, incoming_gradient: TensorLike, source: TensorLike, output_shape: Any, descriptor: Optional[DepthwiseConvolution2DOpDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """Gradient of the depthwise convolution w.r.t. its weights (MPSGraph
        ``depthwiseConvolution2DWeightsGradient(_:source:outputShape:descriptor:name:)``).

        ``dW[m, c, i, j] = sum_{n,oh,ow} dy[n, c*M+m, oh, ow] * x[n, c, ih(oh, i), iw(ow, j)]``.
        ``output_shape`` is the forward weights' shape (weights layout): the only source of kH, kW
        and M. Not differentiable (MPSGraph has no gradient rule for it).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``depthwiseConvolution2DWeightsGradient(_:source:outputShape:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('depthwise_convolution_2d_weights_gradient')(self, incoming_gradient, source, output_shape, descriptor, name)  # type: ignore[no-any-return]

    def depthwise_convolution_3d(self, source: TensorLike, weights: TensorLike, descriptor: Optional[DepthwiseConvolution3DOpDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """Depthwise 3D convolution (MPSGraph ``depthwiseConvolution3D(_:weights:descriptor:name:)``).

        Channel-first form (channel_dimension_index -4): ``y[b, o, od, oh, ow] = sum_{a, i, j}
        x[b, o // M, od*sD + a*dD - pD, oh*sH + i*dH - pH, ow*sW + j*dW - pW] * W[o, a, i, j]``, zero
        outside the input, with ``M = Cw / C``. The descriptor is copied.

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            weights: A tensor of this graph (the op's ``weights`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``depthwiseConvolution3D(_:weights:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('depthwise_convolution_3d')(self, source, weights, descriptor, name)  # type: ignore[no-any-return]

    def depthwise_convolution_3d_data_gradient(self, incoming_gradient: TensorLike, weights: TensorLike, output_shape: Optional[Sequence[int]] = None, descriptor: Optional[DepthwiseConvolution3DOpDescriptor] = None, name: Optional[str] = None) -> Tensor:
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

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            weights: A tensor of this graph (the op's ``weights`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``depthwiseConvolution3DDataGradient(_:weights:outputShape:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('depthwise_convolution_3d_data_gradient')(self, incoming_gradient, weights, output_shape, descriptor, name)  # type: ignore[no-any-return]

    def depthwise_convolution_3d_weights_gradient(self, incoming_gradient: TensorLike, source: TensorLike, output_shape: Sequence[int], descriptor: Optional[DepthwiseConvolution3DOpDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """Gradient of ``depthwise_convolution_3d`` with respect to its weights
        (MPSGraph ``depthwiseConvolution3DWeightsGradient(_:source:outputShape:descriptor:name:)``).

        ``output_shape`` is the forward weights shape (rank 4): the only source of the kernel size.
        Not differentiable, as in MPSGraph.

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``depthwiseConvolution3DWeightsGradient(_:source:outputShape:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('depthwise_convolution_3d_weights_gradient')(self, incoming_gradient, source, output_shape, descriptor, name)  # type: ignore[no-any-return]

    def dequantize(self, tensor: TensorLike, scale: float, zero_point: float, dtype: Any, name: Optional[str] = None) -> Tensor:
        """``scale * (tensor - zero_point)`` of an int4, uint4, int8 or uint8 tensor as float16 or float32, one scale
        and zero point for the whole tensor (MPSGraph ``dequantize(_:scale:zeroPoint:dataType:name:)``).
        Not differentiable.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            scale: See the op reference (docs/reference.md).
            zero_point: See the op reference (docs/reference.md).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``dequantize(_:scale:zeroPoint:dataType:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('dequantize')(self, tensor, scale, zero_point, dtype, name)  # type: ignore[no-any-return]

    def dequantize_blockwise(self, tensor: TensorLike, scale_tensor: TensorLike, zero_point_tensor: TensorLike, dtype: Any, name: Optional[str] = None) -> Tensor:
        """``scale * (tensor - zero_point)`` with one scale and zero point per block of the last axis:
        ``tensor`` ``[..., K]``, both parameters ``[..., K / block]`` (MPSGraph
        ``dequantize(_:scaleTensor:zeroPointTensor:dataType:name:)``). Not differentiable.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            scale_tensor: A tensor of this graph (the op's ``scale_tensor`` input).
            zero_point_tensor: A tensor of this graph (the op's ``zero_point_tensor`` input).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``dequantize(_:scaleTensor:zeroPointTensor:dataType:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('dequantize_blockwise')(self, tensor, scale_tensor, zero_point_tensor, dtype, name)  # type: ignore[no-any-return]

    def dequantize_blockwise_symmetric(self, tensor: TensorLike, scale_tensor: TensorLike, dtype: Any, name: Optional[str] = None) -> Tensor:
        """``scale * tensor`` (zero point 0) with one scale per block of the last axis (MPSGraph
        ``dequantize(_:scaleTensor:dataType:name:)``). Not differentiable.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            scale_tensor: A tensor of this graph (the op's ``scale_tensor`` input).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``dequantize(_:scaleTensor:dataType:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('dequantize_blockwise_symmetric')(self, tensor, scale_tensor, dtype, name)  # type: ignore[no-any-return]

    def dequantize_lut(self, tensor: TensorLike, lut_tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """``lut_tensor[g..., tensor[i...]]``: each uint8 (uint4) index of a constant ``tensor`` looks up one
        of 256 (16) entries; the LUT ``[G..., 256]`` (``[G..., 16]``) may hold up to 3 group axes that split the tensor's last axes into
        equal blocks, each block with its own table (MPSGraph ``dequantize(_:LUTTensor:name:)``). The
        result has the LUT's dtype. Not differentiable.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            lut_tensor: A tensor of this graph (the op's ``lut_tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``dequantize(_:LUTTensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('dequantize_lut')(self, tensor, lut_tensor, name)  # type: ignore[no-any-return]

    def dequantize_vector_lut(self, tensor: TensorLike, lut_tensor: TensorLike, axis: int, name: Optional[str] = None) -> Tensor:
        """Each uint8 (uint4) index of a constant ``tensor`` looks up a vector of ``V`` values in ``lut_tensor``
        ``[G..., 256, V]`` (``[G..., 16, V]``) (up to 2 group axes), written one after another along ``axis``: the result has
        ``tensor``'s shape with ``axis`` ``V`` times longer, ``result[..., j, ...] = lut[g..., tensor[...,
        j // V, ...], j % V]``, as Core ML's vector palettization (MPSGraph
        ``dequantize(_:LUTTensor:axis:name:)``). Not differentiable.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            lut_tensor: A tensor of this graph (the op's ``lut_tensor`` input).
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``dequantize(_:LUTTensor:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('dequantize_vector_lut')(self, tensor, lut_tensor, axis, name)  # type: ignore[no-any-return]

    def dequantize_with_scale_tensor(self, tensor: TensorLike, scale_tensor: TensorLike, zero_point: float, dtype: Any, axis: int, name: Optional[str] = None) -> Tensor:
        """``dequantize`` with a scale per index of ``axis`` (a scalar, one element, or 1-D of size
        ``tensor.shape[axis]``, of the result dtype) and one zero point (MPSGraph
        ``dequantize(_:scaleTensor:zeroPoint:dataType:axis:name:)``). Not differentiable.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            scale_tensor: A tensor of this graph (the op's ``scale_tensor`` input).
            zero_point: See the op reference (docs/reference.md).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``dequantize(_:scaleTensor:zeroPoint:dataType:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('dequantize_with_scale_tensor')(self, tensor, scale_tensor, zero_point, dtype, axis, name)  # type: ignore[no-any-return]

    def dequantize_with_tensors(self, tensor: TensorLike, scale_tensor: TensorLike, zero_point_tensor: TensorLike, dtype: Any, axis: int, name: Optional[str] = None) -> Tensor:
        """``dequantize`` with a scale and a zero point per index of ``axis`` (the zero points have the
        input's dtype), as ONNX's per-axis DequantizeLinear (MPSGraph
        ``dequantize(_:scaleTensor:zeroPointTensor:dataType:axis:name:)``). Not differentiable.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            scale_tensor: A tensor of this graph (the op's ``scale_tensor`` input).
            zero_point_tensor: A tensor of this graph (the op's ``zero_point_tensor`` input).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``dequantize(_:scaleTensor:zeroPointTensor:dataType:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('dequantize_with_tensors')(self, tensor, scale_tensor, zero_point_tensor, dtype, axis, name)  # type: ignore[no-any-return]

    def division(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a / b (floating point only) (MPSGraph ``division(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``division(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('division')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def division_no_nan(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a / b, and 0 where b == 0 (Apple's ``select(secondaryTensor, primaryTensor / secondaryTensor, 0)``: 0 / 0, NaN / 0 and inf / 0 are 0; a NaN divisor is not 0, so it gives NaN); floating point only, as division (MPSGraph ``divisionNoNaN(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``divisionNoNaN(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('division_no_nan')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def dropout(self, tensor: TensorLike, rate: float, seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
        """Zero each element with probability ``rate`` and scale the others by ``1 / (1 - rate)``,
        a fresh mask on each run (MPSGraph ``dropout(_:rate:name:)``). Its gradient uses the same mask.

        Args:
            tensor: A float32 or float16 tensor of this graph (float64 on the numpy backend).
            rate: The probability of dropping an element, in [0, 1]: 0 returns the tensor unchanged,
                1 returns zeros.
            seed: The op's seed (not in MPSGraph); None derives one from the graph's ``random_seed``
                and the op's index.
            name: The op's name (MPSGraph's ``name:``).

        Returns:
            Tensor: the tensor's shape and dtype.

        Raises:
            MiniGraphError: a DescriptorError for a rate outside [0, 1] or a bad seed, a DTypeError for
                a non-float tensor.
        """
        return _builder('dropout')(self, tensor, rate, seed, name)  # type: ignore[no-any-return]

    def equal(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a == b, a bool tensor (MPSGraph ``equal(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``equal(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('equal')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def erf(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise error function erf(x) (MPSGraph ``erf(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``erf(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('erf')(self, tensor, name)  # type: ignore[no-any-return]

    def expand_dims(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, *, axis: Any = None) -> Tensor:
        """Insert size-1 axes at ``axes`` (an int or list, positions in the output)
        (MPSGraph ``expandDims(_:axes:name:)``; an int is ``expandDims(_:axis:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``expandDims(_:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('expand_dims')(self, tensor, axes, name, axis=axis)  # type: ignore[no-any-return]

    def exponent(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise e ** x (MPSGraph ``exponent(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``exponent(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('exponent')(self, tensor, name)  # type: ignore[no-any-return]

    def exponent_base10(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise 10 ** x; webgpu: 2^(x log2(10)) with x log2(10) carried as an exact product (Dekker's), so large |x| loses nothing: 1.2 ulp at most, subnormal results down to 1e-45 (MPSGraph ``exponentBase10(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``exponentBase10(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('exponent_base10')(self, tensor, name)  # type: ignore[no-any-return]

    def exponent_base2(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise 2 ** x (MPSGraph ``exponentBase2(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``exponentBase2(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('exponent_base2')(self, tensor, name)  # type: ignore[no-any-return]

    def fast_fourier_transform(self, tensor: TensorLike, axes: Sequence[int], descriptor: Optional[FFTDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """The discrete Fourier transform over ``axes`` (MPSGraph ``fastFourierTransform(_:axes:descriptor:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/fastfouriertransform(_:axes:descriptor:name:)).

        Complex to complex, the same shape: ``numpy.fft.fftn`` with the default descriptor, ``ifftn``
        with ``inverse=True, scaling_mode=FFTScalingMode.SIZE``. A float32 / float16 input is read as
        complex with zero imaginary parts. The axes must lie within the last four; None is a new
        default descriptor.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``fastFourierTransform(_:axes:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('fast_fourier_transform')(self, tensor, axes, descriptor, name)  # type: ignore[no-any-return]

    def flatten_2d(self, tensor: TensorLike, axis: int, name: Optional[str] = None) -> Tensor:
        """A rank-2 tensor: the dimensions before ``axis`` multiplied into the first, the others into the
        second; a shape ``[2, 3, 4]`` with axis 1 gives ``[2, 12]`` (MPSGraph ``flatten2D(_:axis:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``flatten2D(_:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('flatten_2d')(self, tensor, axis, name)  # type: ignore[no-any-return]

    def floor(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise largest integer <= x (integers unchanged) (MPSGraph ``floor(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``floor(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('floor')(self, tensor, name)  # type: ignore[no-any-return]

    def floor_modulo(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a - floor(a / b) * b, with the sign of b (Python's ``%``: -7 floor_modulo 3 = 2); a zero divisor gives 0, as Apple documents (MPSGraph ``floorModulo(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``floorModulo(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('floor_modulo')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def for_loop(self, number_of_iterations: 'Optional[TensorLike]', initial_body_arguments: 'Sequence[TensorLike]', body: 'Callable[[Tensor, list[Tensor]], Sequence[TensorLike]]', name: Optional[str] = None, *, lower_bound: 'Optional[TensorLike]' = None, upper_bound: 'Optional[TensorLike]' = None, step: 'Optional[TensorLike]' = None) -> Tensor:
        """A for loop (MPSGraph ``for(numberOfIterations:initialBodyArguments:body:name:)``, or with
        ``lower_bound``, ``upper_bound`` and ``step`` ``for(lowerBound:upperBound:step:...)``, the
        half-open range): ``body(index, args)`` returns the next args, of the types of
        ``initial_body_arguments``; the index (int32, rank 0) goes 0 .. N-1, or lower, lower + step, ...
        below upper.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/for(numberofiterations:initialbodyarguments:body:name:)
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/for(lowerbound:upperbound:step:initialbodyarguments:body:name:)

        Args:
            number_of_iterations: A rank-0 int32 tensor or int; None with the bounds form.
            initial_body_arguments: The first iteration's arguments (a list of tensors).
            body: ``(index, args) -> next args``.
            name: The op's name; the body's ops are named ``<name>/body/...``.
            lower_bound: The first index (rank 0, int32), with ``upper_bound`` and ``step``.
            upper_bound: The index the loop stops before.
            step: The index's increment (positive).

        Returns:
            list[Tensor]: the arguments after the last iteration (the initial ones if none runs).

        Raises:
            ShapeError: a count or bound that is not rank 0; a body result of another shape.
            DTypeError: a count or bound that is not int32; a body result of another dtype.
            TargetError: a body that returns nothing or another number of tensors; both forms given.
        """
        return _builder('for_loop')(self, number_of_iterations, initial_body_arguments, body, name, lower_bound=lower_bound, upper_bound=upper_bound, step=step)  # type: ignore[no-any-return]

    def gather(self, updates: TensorLike, indices: TensorLike, axis: int, batch_dimensions: int = 0, name: Optional[str] = None) -> Tensor:
        """Slices of ``updates`` along ``axis`` at ``indices``; the result's shape is
        ``updates.shape[:axis] + indices.shape[batch_dimensions:] + updates.shape[axis+1:]``. With
        batch dimensions B, the first B axes of updates and indices pair up (each batch reads its own
        indices). Negative indices count from the end; out of range at run time gives 0
        (MPSGraph ``gather(withUpdatesTensor:indicesTensor:axis:batchDimensions:name:)``).

        Args:
            updates: A tensor of this graph (the op's ``updates`` input).
            indices: A tensor of this graph (the op's ``indices`` input).
            axis: One axis; a negative value counts from the end.
            batch_dimensions: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``gather(withUpdatesTensor:indicesTensor:axis:batchDimensions:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('gather')(self, updates, indices, axis, batch_dimensions, name)  # type: ignore[no-any-return]

    def gather_along_axis(self, updates: TensorLike, indices: TensorLike, axis: int, name: Optional[str] = None) -> Tensor:
        """``result[..., j, ...] = updates[..., indices[..., j, ...], ...]`` along ``axis``, as
        ``np.take_along_axis`` and ``torch.gather``; the result has the shape of ``indices``. Negative
        indices count from the end; out of range at run time gives 0, as Apple documents
        (MPSGraph ``gatherAlongAxis(_:updates:indices:name:)``).

        Args:
            updates: A tensor of this graph (the op's ``updates`` input).
            indices: A tensor of this graph (the op's ``indices`` input).
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``gatherAlongAxis(_:updates:indices:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('gather_along_axis')(self, updates, indices, axis, name)  # type: ignore[no-any-return]

    def gather_nd(self, updates: TensorLike, indices: TensorLike, batch_dimensions: int = 0, name: Optional[str] = None) -> Tensor:
        """Slices of ``updates`` at the index tuples along the last axis of ``indices`` (length K,
        indexing axes B..B+K-1 after B batch axes); the result's shape is
        ``indices.shape[:-1] + updates.shape[B+K:]``. Negative indices count from the end; an index
        tuple with an entry out of range at run time gives a slice of 0
        (MPSGraph ``gatherND(withUpdatesTensor:indicesTensor:batchDimensions:name:)``).

        Args:
            updates: A tensor of this graph (the op's ``updates`` input).
            indices: A tensor of this graph (the op's ``indices`` input).
            batch_dimensions: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``gatherND(withUpdatesTensor:indicesTensor:batchDimensions:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('gather_nd')(self, updates, indices, batch_dimensions, name)  # type: ignore[no-any-return]

    def greater_than(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a > b, a bool tensor (MPSGraph ``greaterThan(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``greaterThan(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('greater_than')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def greater_than_or_equal_to(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a >= b, a bool tensor (MPSGraph ``greaterThanOrEqualTo(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``greaterThanOrEqualTo(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('greater_than_or_equal_to')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def gru(self, source: TensorLike, recurrent_weight: TensorLike, input_weight: Optional[TensorLike] = None, bias: Optional[TensorLike] = None, init_state: Optional[TensorLike] = None, mask: Optional[TensorLike] = None, secondary_bias: Optional[TensorLike] = None, descriptor: Any = None, name: Optional[str] = None) -> list[Tensor]:
        """A GRU over ``source`` ``[T, N, I]`` with gates ``[z, r, o]`` (``[r, z, o]`` with
        ``reset_gate_first``) (MPSGraph ``GRU``). Returns ``[state]``, or ``[state, training_state]``
        with ``training`` (the activated gates, ``[T, N, 3H]``). ``secondary_bias`` ``[H]`` is ``b2``,
        used only with ``reset_after``. None inputs are nil (zeros; no input weight: the source is
        ``[T, N, 3H]``; a mask of ones).
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/gru(_:recurrentweight:inputweight:bias:initstate:mask:secondarybias:descriptor:name:)

        Args:
            source: x: ``[T, N, I]`` (without an input weight ``[T, N, G H]``; ``[T, N, 2 G H]`` bidirectional).
            recurrent_weight: R: ``[G H, H]`` (``[2, G H, H]`` bidirectional), rows by gate in the descriptor's order.
            input_weight: W: ``[G H, I]`` (``[2 G H, I]``); None: the source is already projected.
            bias: b: ``[G H]`` (``[2 G H]``); None: zeros.
            init_state: h[-1]: ``[N, H]`` (``[N, 2H]``); None: zeros.
            mask: m, broadcast against the output ``[T, N, D H]``; ``mask[t]`` multiplies the state entering step t; None: ones.
            secondary_bias: b2: ``[H]`` (``[2H]``), used only with ``reset_after``; None: zeros.
            descriptor: The layer's descriptor (None: its defaults), copied when the op is built.
            name: The op's name (MPSGraph's ``name:``); None uses the op type.

        Returns:
            list[Tensor]: the outputs MPSGraph returns, in its order (the state first). (MPSGraph ``GRU(_:recurrentWeight:inputWeight:bias:initState:mask:secondaryBias:descriptor:name:)``)

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs or the descriptor do not fit; the message names the op.
        """
        return _builder('gru')(self, source, recurrent_weight, input_weight, bias, init_state, mask, secondary_bias, descriptor, name)  # type: ignore[no-any-return]

    def gru_gradients(self, source: TensorLike, recurrent_weight: TensorLike, source_gradient: TensorLike, z_state: TensorLike, output_fwd: TensorLike, state_gradient: Optional[TensorLike] = None, input_weight: Optional[TensorLike] = None, bias: Optional[TensorLike] = None, init_state: Optional[TensorLike] = None, mask: Optional[TensorLike] = None, secondary_bias: Optional[TensorLike] = None, descriptor: Any = None, name: Optional[str] = None) -> list[Tensor]:
        """Gradients of ``gru`` (MPSGraph ``GRUGradients``): toward source, recurrent_weight,
        input_weight, bias, init_state and secondary_bias, in that order, leaving out the inputs
        given as None. ``z_state`` and ``output_fwd`` are the forward op's training and state outputs.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/grugradients(_:recurrentweight:sourcegradient:zstate:outputfwd:stategradient:inputweight:bias:initstate:mask:secondarybias:descriptor:name:)

        Args:
            source: x: ``[T, N, I]`` (without an input weight ``[T, N, G H]``; ``[T, N, 2 G H]`` bidirectional).
            recurrent_weight: R: ``[G H, H]`` (``[2, G H, H]`` bidirectional), rows by gate in the descriptor's order.
            source_gradient: The gradient of the forward op's state output, ``[T, N, D H]``.
            z_state: The forward op's training-state output (built with ``descriptor.training``).
            output_fwd: The forward op's state output, ``[T, N, D H]``.
            state_gradient: A gradient entering after the last step of each direction, ``[N, D H]``; None: zeros.
            input_weight: W: ``[G H, I]`` (``[2 G H, I]``); None: the source is already projected.
            bias: b: ``[G H]`` (``[2 G H]``); None: zeros.
            init_state: h[-1]: ``[N, H]`` (``[N, 2H]``); None: zeros.
            mask: m, broadcast against the output ``[T, N, D H]``; ``mask[t]`` multiplies the state entering step t; None: ones.
            secondary_bias: b2: ``[H]`` (``[2H]``), used only with ``reset_after``; None: zeros.
            descriptor: The layer's descriptor (None: its defaults), copied when the op is built.
            name: The op's name (MPSGraph's ``name:``); None uses the op type.

        Returns:
            list[Tensor]: one gradient per input given (not None), in Apple's order. (MPSGraph ``GRUGradients(_:recurrentWeight:sourceGradient:zState:outputFwd:stateGradient:inputWeight:bias:initState:mask:secondaryBias:descriptor:name:)``)

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs or the descriptor do not fit; the message names the op.
        """
        return _builder('gru_gradients')(self, source, recurrent_weight, source_gradient, z_state, output_fwd, state_gradient, input_weight, bias, init_state, mask, secondary_bias, descriptor, name)  # type: ignore[no-any-return]

    def hamming_distance(self, primary: TensorLike, secondary: TensorLike, result_data_type: Any, name: Optional[str] = None) -> Tensor:
        """The number of differing bits between each row of ``primary`` ``[..., M, K]`` and each row of
        ``secondary`` ``[..., N, K]``: ``[..., M, N]``, batch axes broadcast, as ``result_data_type``
        (uint32 or uint16) (MPSGraph ``HammingDistance(primary:secondary:resultDataType:name:)``).
        Not differentiable (integer inputs and result).

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            result_data_type: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``HammingDistance(primary:secondary:resultDataType:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('hamming_distance')(self, primary, secondary, result_data_type, name)  # type: ignore[no-any-return]

    def hermitean_to_real_fft(self, tensor: TensorLike, axes: Sequence[int], descriptor: Optional[FFTDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """The real tensor whose Fourier transform has this non-redundant half (MPSGraph
        ``HermiteanToRealFFT(_:axes:descriptor:name:)``): the last of ``axes`` (sorted), of ``h``
        entries, becomes ``2 (h - 1)`` long, ``2 (h - 1) + 1`` with ``round_to_odd_hermitean``.
        ``numpy.fft.irfftn(x, s)`` with ``inverse=True, scaling_mode=FFTScalingMode.SIZE``.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``HermiteanToRealFFT(_:axes:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('hermitean_to_real_fft')(self, tensor, axes, descriptor, name)  # type: ignore[no-any-return]

    def identity(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """The same values as ``tensor`` (MPSGraph ``identity(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``identity(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('identity')(self, tensor, name)  # type: ignore[no-any-return]

    def if_then_else(self, predicate: 'TensorLike', then_block: 'Callable[[], Sequence[TensorLike]]', else_block: 'Optional[Callable[[], Sequence[TensorLike]]]' = None, name: Optional[str] = None) -> Tensor:
        """Run ``then_block`` when the rank-0 ``predicate`` is true (non-zero), else ``else_block``
        (MPSGraph ``if(_:then:else:name:)``); only the taken branch runs. Both return lists of tensors
        of the same shapes and dtypes; without ``else_block`` the then block returns no tensors.
        Blocks may read tensors built outside them.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/if(_:then:else:name:)

        Args:
            predicate: A rank-0 tensor (bool or a number; non-zero is true).
            then_block: ``() -> [tensors]``, built once, run when the predicate is true.
            else_block: ``() -> [tensors]``, run when it is false; None: nothing runs then.
            name: The op's name; the blocks' ops are named ``<name>/then/...`` and ``<name>/else/...``.

        Returns:
            list[Tensor]: the taken branch's results.

        Raises:
            ShapeError: a predicate that is not rank 0, or branches whose results differ in shape.
            DTypeError: branches whose results differ in dtype.
            TargetError: a block that returns nothing or a different number of tensors.
        """
        return _builder('if_then_else')(self, predicate, then_block, else_block, name)  # type: ignore[no-any-return]

    def im_to_col(self, source: TensorLike, descriptor: ImToColOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Every ``kernel_height`` x ``kernel_width`` window of a rank-4 image as one column (MPSGraph
        ``imToCol(_:descriptor:name:)``); NCHW gives ``[N, C*kH*kW, L]`` as ``torch.nn.functional.unfold``,
        NHWC ``[N, L, kH*kW*C]`` (module docstring).
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/imtocol(_:descriptor:name:)

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``imToCol(_:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('im_to_col')(self, source, descriptor, name)  # type: ignore[no-any-return]

    def imaginary_part_of_tensor(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """The imaginary part of each element, a float32 (complex64) or float16 (complex32) tensor; zeros for a real tensor (MPSGraph ``imaginaryPartOfTensor(tensor:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``imaginaryPartOfTensor(tensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('imaginary_part_of_tensor')(self, tensor, name)  # type: ignore[no-any-return]

    def inverse(self, input: TensorLike, name: Optional[str] = None) -> Tensor:
        """The inverse of each square matrix in the last two axes, batch axes before them; an exactly
        singular matrix gives NaN (MPSGraph ``inverse(input:name:)``).

        Args:
            input: A tensor of this graph (the op's ``input`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``inverse(input:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('inverse')(self, input, name)  # type: ignore[no-any-return]

    def is_finite(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise x is neither NaN nor infinite, a bool tensor (true for integers) (MPSGraph ``isFinite(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``isFinite(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('is_finite')(self, tensor, name)  # type: ignore[no-any-return]

    def is_infinite(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise x is +inf or -inf, a bool tensor (false for integers) (MPSGraph ``isInfinite(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``isInfinite(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('is_infinite')(self, tensor, name)  # type: ignore[no-any-return]

    def is_nan(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise x is NaN, a bool tensor (false for integers) (MPSGraph ``isNaN(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``isNaN(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('is_nan')(self, tensor, name)  # type: ignore[no-any-return]

    def l2_norm_pooling_4d(self, source: TensorLike, descriptor: Pooling4DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """``sqrt(sum x**2)`` over each window of the four innermost axes (padding adds nothing), PyTorch's lp_pool with p=2 (MPSGraph ``L2NormPooling4D(_:descriptor:name:)``).

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``L2NormPooling4D(_:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('l2_norm_pooling_4d')(self, source, descriptor, name)  # type: ignore[no-any-return]

    def l2_norm_pooling_4d_gradient(self, gradient: TensorLike, source: TensorLike, descriptor: Pooling4DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Gradient of l2_norm_pooling_4d: ``x * sum(gradient / y)`` over the windows holding x, a window with y = 0 adding nothing (MPSGraph ``L2NormPooling4DGradient(_:source:descriptor:name:)``). Not differentiable.

        Args:
            gradient: A tensor of this graph (the op's ``gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``L2NormPooling4DGradient(_:source:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('l2_norm_pooling_4d_gradient')(self, gradient, source, descriptor, name)  # type: ignore[no-any-return]

    def leaky_relu(self, tensor: TensorLike, alpha: Any, name: Optional[str] = None) -> Tensor:
        """``tensor`` where it is >= 0, else ``alpha * tensor`` (MPSGraph ``leakyReLU(with:alpha:name:)``).

        Apple's page writes the function as ``max(x, alpha)``; the op is the leaky ReLU
        ``max(x, alpha * x)`` for ``0 <= alpha <= 1``, and minigraph defines it for any ``alpha`` as
        ``x >= 0 ? x : alpha * x`` (as PyTorch's ``leaky_relu``), so NaN stays NaN. ``alpha`` is a
        Python number, rounded to the tensor's dtype.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            alpha: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``leakyReLU(with:alpha:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('leaky_relu')(self, tensor, alpha, name)  # type: ignore[no-any-return]

    def leaky_relu_gradient(self, incoming_gradient: TensorLike, source: TensorLike, alpha_tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """The gradient of ``leaky_relu`` toward its input: ``incoming_gradient`` where
        ``source >= 0``, else ``alpha_tensor * incoming_gradient`` (MPSGraph
        ``leakyReLUGradient(withIncomingGradient:sourceTensor:alphaTensor:name:)``, which
        ``g.gradients`` inserts for a ``leaky_relu``). ``alpha_tensor`` broadcasts (a number is made
        a constant of the source's dtype); the result has the source's shape.

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            alpha_tensor: A tensor of this graph (the op's ``alpha_tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``leakyReLUGradient(withIncomingGradient:sourceTensor:alphaTensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('leaky_relu_gradient')(self, incoming_gradient, source, alpha_tensor, name)  # type: ignore[no-any-return]

    def less_than(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a < b, a bool tensor (MPSGraph ``lessThan(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``lessThan(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('less_than')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def less_than_or_equal_to(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a <= b, a bool tensor (MPSGraph ``lessThanOrEqualTo(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``lessThanOrEqualTo(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('less_than_or_equal_to')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def logarithm(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise natural log (MPSGraph ``logarithm(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``logarithm(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('logarithm')(self, tensor, name)  # type: ignore[no-any-return]

    def logarithm_base10(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise log10(x); webgpu: the reduction of logarithm, times log10(e) and log10(2) split in two parts (Cephes' log10f): 1.8 ulp at most (MPSGraph ``logarithmBase10(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``logarithmBase10(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('logarithm_base10')(self, tensor, name)  # type: ignore[no-any-return]

    def logarithm_base2(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise log2(x) (MPSGraph ``logarithmBase2(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``logarithmBase2(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('logarithm_base2')(self, tensor, name)  # type: ignore[no-any-return]

    def logical_and(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a AND b of bool tensors (MPSGraph ``logicalAND(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``logicalAND(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('logical_and')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def logical_nand(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise NOT (a AND b) of bool tensors (MPSGraph ``logicalNAND(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``logicalNAND(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('logical_nand')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def logical_nor(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise NOT (a OR b) of bool tensors (MPSGraph ``logicalNOR(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``logicalNOR(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('logical_nor')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def logical_not(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise NOT of a bool tensor (MPSGraph ``not(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``not(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('logical_not')(self, tensor, name)  # type: ignore[no-any-return]

    def logical_or(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a OR b of bool tensors (MPSGraph ``logicalOR(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``logicalOR(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('logical_or')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def logical_xnor(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise NOT (a XOR b) of bool tensors (true where both are true or both false) (MPSGraph ``logicalXNOR(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``logicalXNOR(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('logical_xnor')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def logical_xor(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a XOR b of bool tensors (true where exactly one is true) (MPSGraph ``logicalXOR(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``logicalXOR(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('logical_xor')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def lstm(self, source: TensorLike, recurrent_weight: TensorLike, input_weight: Optional[TensorLike] = None, bias: Optional[TensorLike] = None, init_state: Optional[TensorLike] = None, init_cell: Optional[TensorLike] = None, mask: Optional[TensorLike] = None, peephole: Optional[TensorLike] = None, descriptor: Any = None, name: Optional[str] = None) -> list[Tensor]:
        """An LSTM over ``source`` ``[T, N, I]`` with gates ``[i, f, z, o]`` (``[i, z, f, o]`` with
        ``forget_gate_last``) (MPSGraph ``LSTM``). Returns ``[state]``, ``[state, cell]`` with
        ``produce_cell``, ``[state, cell, training_state]`` with ``training`` (the activated gates,
        ``[T, N, 4H]``); state and cell are ``[T, N, H]`` (``[T, N, 2H]`` bidirectional). None inputs
        are nil: no input weight (the source is ``[T, N, 4H]``), zero bias, state, cell and peephole,
        a mask of ones.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/lstm(_:recurrentweight:inputweight:bias:initstate:initcell:mask:peephole:descriptor:name:)

        Args:
            source: x: ``[T, N, I]`` (without an input weight ``[T, N, G H]``; ``[T, N, 2 G H]`` bidirectional).
            recurrent_weight: R: ``[G H, H]`` (``[2, G H, H]`` bidirectional), rows by gate in the descriptor's order.
            input_weight: W: ``[G H, I]`` (``[2 G H, I]``); None: the source is already projected.
            bias: b: ``[G H]`` (``[2 G H]``); None: zeros.
            init_state: h[-1]: ``[N, H]`` (``[N, 2H]``); None: zeros.
            init_cell: c[-1]: ``[N, H]`` (``[N, 2H]``); None: zeros.
            mask: m, broadcast against the output ``[T, N, D H]``; ``mask[t]`` multiplies the state entering step t; None: ones.
            peephole: p: ``[4H]`` (``[2, 4H]``, or ``[8H]``), added to every gate times c[t-1]; None: zeros.
            descriptor: The layer's descriptor (None: its defaults), copied when the op is built.
            name: The op's name (MPSGraph's ``name:``); None uses the op type.

        Returns:
            list[Tensor]: the outputs MPSGraph returns, in its order (the state first). (MPSGraph ``LSTM(_:recurrentWeight:inputWeight:bias:initState:initCell:mask:peephole:descriptor:name:)``)

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs or the descriptor do not fit; the message names the op.
        """
        return _builder('lstm')(self, source, recurrent_weight, input_weight, bias, init_state, init_cell, mask, peephole, descriptor, name)  # type: ignore[no-any-return]

    def lstm_gradients(self, source: TensorLike, recurrent_weight: TensorLike, source_gradient: TensorLike, z_state: TensorLike, cell_output_fwd: TensorLike, state_gradient: Optional[TensorLike] = None, cell_gradient: Optional[TensorLike] = None, input_weight: Optional[TensorLike] = None, bias: Optional[TensorLike] = None, init_state: Optional[TensorLike] = None, init_cell: Optional[TensorLike] = None, mask: Optional[TensorLike] = None, peephole: Optional[TensorLike] = None, descriptor: Any = None, name: Optional[str] = None) -> list[Tensor]:
        """Gradients of ``lstm`` (MPSGraph ``LSTMGradients``): toward source, recurrent_weight,
        input_weight, bias, peephole, init_state and init_cell, in that order, leaving out the inputs
        given as None. ``z_state`` and ``cell_output_fwd`` are the forward op's training and cell
        outputs; ``state_gradient`` and ``cell_gradient`` ``[N, H]`` enter from beyond the last step
        (``cell_gradient`` may also be ``[T, N, H]``, the gradient of the whole cell output).
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/lstmgradients(_:recurrentweight:sourcegradient:zstate:celloutputfwd:stategradient:cellgradient:inputweight:bias:initstate:initcell:mask:peephole:descriptor:name:)

        Args:
            source: x: ``[T, N, I]`` (without an input weight ``[T, N, G H]``; ``[T, N, 2 G H]`` bidirectional).
            recurrent_weight: R: ``[G H, H]`` (``[2, G H, H]`` bidirectional), rows by gate in the descriptor's order.
            source_gradient: The gradient of the forward op's state output, ``[T, N, D H]``.
            z_state: The forward op's training-state output (built with ``descriptor.training``).
            cell_output_fwd: The forward op's cell output, ``[T, N, D H]``.
            state_gradient: A gradient entering after the last step of each direction, ``[N, D H]``; None: zeros.
            cell_gradient: A cell gradient entering after the last step, ``[N, D H]``, or the gradient of the whole cell output, ``[T, N, D H]``; None: zeros.
            input_weight: W: ``[G H, I]`` (``[2 G H, I]``); None: the source is already projected.
            bias: b: ``[G H]`` (``[2 G H]``); None: zeros.
            init_state: h[-1]: ``[N, H]`` (``[N, 2H]``); None: zeros.
            init_cell: c[-1]: ``[N, H]`` (``[N, 2H]``); None: zeros.
            mask: m, broadcast against the output ``[T, N, D H]``; ``mask[t]`` multiplies the state entering step t; None: ones.
            peephole: p: ``[4H]`` (``[2, 4H]``, or ``[8H]``), added to every gate times c[t-1]; None: zeros.
            descriptor: The layer's descriptor (None: its defaults), copied when the op is built.
            name: The op's name (MPSGraph's ``name:``); None uses the op type.

        Returns:
            list[Tensor]: one gradient per input given (not None), in Apple's order. (MPSGraph ``LSTMGradients(_:recurrentWeight:sourceGradient:zState:cellOutputFwd:stateGradient:cellGradient:inputWeight:bias:initState:initCell:mask:peephole:descriptor:name:)``)

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs or the descriptor do not fit; the message names the op.
        """
        return _builder('lstm_gradients')(self, source, recurrent_weight, source_gradient, z_state, cell_output_fwd, state_gradient, cell_gradient, input_weight, bias, init_state, init_cell, mask, peephole, descriptor, name)  # type: ignore[no-any-return]

    def matrix_multiplication(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Batched ``primary @ secondary`` over the last two axes; batch axes broadcast
        (MPSGraph ``matrixMultiplication(primary:secondary:name:)``).

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``matrixMultiplication(primary:secondary:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('matrix_multiplication')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def max_pooling_2d(self, source: TensorLike, descriptor: Pooling2DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Maximum over each window, padding ignored; NaN propagates (MPSGraph ``maxPooling2D(withSourceTensor:descriptor:name:)``).

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``maxPooling2D(withSourceTensor:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('max_pooling_2d')(self, source, descriptor, name)  # type: ignore[no-any-return]

    def max_pooling_2d_gradient(self, gradient: TensorLike, source: TensorLike, descriptor: Pooling2DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Gradient of max_pooling_2d: each window's gradient goes to its first maximal element (row-major tap order), overlaps add up; result has the source's shape (MPSGraph ``maxPooling2DGradient(withGradientTensor:sourceTensor:descriptor:name:)``). Not differentiable.

        Args:
            gradient: A tensor of this graph (the op's ``gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``maxPooling2DGradient(withGradientTensor:sourceTensor:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('max_pooling_2d_gradient')(self, gradient, source, descriptor, name)  # type: ignore[no-any-return]

    def max_pooling_2d_gradient_with_indices(self, gradient: TensorLike, indices: TensorLike, output_shape: Sequence[int], descriptor: Pooling2DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Gradient of max_pooling_2d_return_indices from its indices: each window's gradient goes to the element its index names, in a result of ``output_shape`` (the source's shape); the descriptor's return_indices_mode must be the forward one (MPSGraph ``maxPooling2DGradient(withGradientTensor:indicesTensor:outputShape:descriptor:name:)``). Not differentiable.

        Args:
            gradient: A tensor of this graph (the op's ``gradient`` input).
            indices: A tensor of this graph (the op's ``indices`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``maxPooling2DGradient(withGradientTensor:indicesTensor:outputShape:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('max_pooling_2d_gradient_with_indices')(self, gradient, indices, output_shape, descriptor, name)  # type: ignore[no-any-return]

    def max_pooling_2d_return_indices(self, source: TensorLike, descriptor: Pooling2DOpDescriptor, name: Optional[str] = None) -> tuple[Tensor, ...]:
        """max_pooling_2d and the int32 index of each window's first maximal element, flattened as the descriptor's return_indices_mode says: ``(values, indices)`` (MPSGraph ``maxPooling2DReturnIndices(_:descriptor:name:)``).

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``maxPooling2DReturnIndices(_:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('max_pooling_2d_return_indices')(self, source, descriptor, name)  # type: ignore[no-any-return]

    def max_pooling_4d(self, source: TensorLike, descriptor: Pooling4DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Maximum over each window of the four innermost axes, padding ignored; NaN propagates (MPSGraph ``maxPooling4D(_:descriptor:name:)``).

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``maxPooling4D(_:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('max_pooling_4d')(self, source, descriptor, name)  # type: ignore[no-any-return]

    def max_pooling_4d_gradient(self, gradient: TensorLike, source: TensorLike, descriptor: Pooling4DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Gradient of max_pooling_4d: each window's gradient goes to its first maximal element (row-major tap order), overlaps add up (MPSGraph ``maxPooling4DGradient(_:source:descriptor:name:)``). Not differentiable.

        Args:
            gradient: A tensor of this graph (the op's ``gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``maxPooling4DGradient(_:source:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('max_pooling_4d_gradient')(self, gradient, source, descriptor, name)  # type: ignore[no-any-return]

    def max_pooling_4d_gradient_with_indices(self, gradient: TensorLike, indices: TensorLike, output_shape: Sequence[int], descriptor: Pooling4DOpDescriptor, name: Optional[str] = None) -> Tensor:
        """Gradient of max_pooling_4d_return_indices from its indices: each window's gradient goes to the element its index names, in a result of ``output_shape`` (the source's shape); the descriptor's return_indices_mode must be the forward one (MPSGraph ``maxPooling4DGradient(withGradientTensor:indicesTensor:outputShape:descriptor:name:)``). Not differentiable.

        Args:
            gradient: A tensor of this graph (the op's ``gradient`` input).
            indices: A tensor of this graph (the op's ``indices`` input).
            output_shape: The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, or a tensor's ``.shape``.
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``maxPooling4DGradient(withGradientTensor:indicesTensor:outputShape:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('max_pooling_4d_gradient_with_indices')(self, gradient, indices, output_shape, descriptor, name)  # type: ignore[no-any-return]

    def max_pooling_4d_return_indices(self, source: TensorLike, descriptor: Pooling4DOpDescriptor, name: Optional[str] = None) -> tuple[Tensor, ...]:
        """max_pooling_4d and the int32 index of each window's first maximal element, flattened as the descriptor's return_indices_mode says: ``(values, indices)`` (MPSGraph ``maxPooling4DReturnIndices(_:descriptor:name:)``).

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``maxPooling4DReturnIndices(_:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('max_pooling_4d_return_indices')(self, source, descriptor, name)  # type: ignore[no-any-return]

    def maximum(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise max ignoring NaN: max(NaN, 1) = 1, NaN only where both are NaN (MPSGraph ``maximum(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``maximum(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('maximum')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def maximum_with_nan_propagation(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise max, NaN where either operand is NaN (MPSGraph ``maximumWithNaNPropagation(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``maximumWithNaNPropagation(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('maximum_with_nan_propagation')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def mean(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, *, axis: Any = None) -> Tensor:
        """Arithmetic mean (of an integer tensor, the quotient truncated toward zero, as MPSGraph) over ``axes`` (an int, a list, or None for all), keeping them as size 1 (MPSGraph ``mean(of:axes:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``mean(of:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('mean')(self, tensor, axes, name, axis=axis)  # type: ignore[no-any-return]

    def minimum(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise min ignoring NaN: min(NaN, 1) = 1, NaN only where both are NaN (MPSGraph ``minimum(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``minimum(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('minimum')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def minimum_with_nan_propagation(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise min, NaN where either operand is NaN (MPSGraph ``minimumWithNaNPropagation(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``minimumWithNaNPropagation(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('minimum_with_nan_propagation')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def modulo(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise remainder of a / b truncated toward zero, with the sign of a (C's fmod and ``%``: -7 modulo 3 = -1); a zero divisor gives NaN for floats and 0 for integers (MPSGraph ``modulo(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``modulo(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('modulo')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def multiplication(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a * b (MPSGraph ``multiplication(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``multiplication(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('multiplication')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def negative(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise -x (MPSGraph ``negative(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``negative(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('negative')(self, tensor, name)  # type: ignore[no-any-return]

    def non_maximum_suppression(self, boxes: TensorLike, scores: TensorLike, iou_threshold: float, score_threshold: float, per_class_suppression: bool, coordinate_mode: Any = 0, name: Optional[str] = None) -> Tensor:
        """The indices of the boxes greedy non-maximum suppression keeps, per batch element, by
        descending score, padded with -1 to ``[N, B]`` (MPSGraph
        ``nonMaximumSuppression(withBoxesTensor:scoresTensor:iouThreshold:scoreThreshold:perClassSuppression:coordinateMode:name:)``;
        a box's score and class are its best of the ``K`` class scores; module docstring).
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/nonmaximumsuppression(withboxestensor:scorestensor:iouthreshold:scorethreshold:perclasssuppression:coordinatemode:name:)

        Args:
            boxes: Boxes ``[N, B, 4]`` float32, laid out as ``coordinate_mode`` says.
            scores: Scores ``[N, B, K]`` float32 (K classes).
            iou_threshold: A kept box suppresses the boxes it overlaps with IoU above this (in [0, 1]).
            score_threshold: Boxes whose score is not above this are dropped first.
            per_class_suppression: Only boxes of the same class suppress each other.
            coordinate_mode: A ``NonMaximumSuppressionCoordinateMode`` (its name or raw value).
            name: The op's name (MPSGraph's ``name:``).
        """
        return _builder('non_maximum_suppression')(self, boxes, scores, iou_threshold, score_threshold, per_class_suppression, coordinate_mode, name)  # type: ignore[no-any-return]

    def non_maximum_suppression_with_class_indices(self, boxes: TensorLike, scores: TensorLike, class_indices: TensorLike, iou_threshold: float, score_threshold: float, per_class_suppression: bool, coordinate_mode: Any = 0, name: Optional[str] = None) -> Tensor:
        """``non_maximum_suppression`` with each box's class given: scores ``[N, B, 1]`` and int32
        ``class_indices`` ``[N, B]`` (MPSGraph
        ``nonMaximumSuppression(withBoxesTensor:scoresTensor:classIndicesTensor:iouThreshold:scoreThreshold:perClassSuppression:coordinateMode:name:)``).
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/nonmaximumsuppression(withboxestensor:scorestensor:classindicestensor:iouthreshold:scorethreshold:perclasssuppression:coordinatemode:name:)

        Args:
            boxes: Boxes ``[N, B, 4]`` float32, laid out as ``coordinate_mode`` says.
            scores: Scores ``[N, B, 1]`` float32.
            class_indices: Each box's class ``[N, B]`` int32.
            iou_threshold: A kept box suppresses the boxes it overlaps with IoU above this (in [0, 1]).
            score_threshold: Boxes whose score is not above this are dropped first.
            per_class_suppression: Only boxes of the same class suppress each other.
            coordinate_mode: A ``NonMaximumSuppressionCoordinateMode`` (its name or raw value).
            name: The op's name (MPSGraph's ``name:``).
        """
        return _builder('non_maximum_suppression_with_class_indices')(self, boxes, scores, class_indices, iou_threshold, score_threshold, per_class_suppression, coordinate_mode, name)  # type: ignore[no-any-return]

    def non_zero_indices(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """The int32 ``[count, rank]`` indices of ``tensor``'s non-zero elements, in row-major order
        (MPSGraph ``nonZeroIndices(_:name:)``). ``count`` depends on the data: the result is ``[-1,
        rank]`` until it runs, and may only be a target of compile/run (module docstring).
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/nonzeroindices(_:name:)

        Args:
            tensor: A tensor of this graph, of any dtype and rank.
            name: The op's name (MPSGraph's ``name:``).
        """
        return _builder('non_zero_indices')(self, tensor, name)  # type: ignore[no-any-return]

    def normalization_beta_gradient(self, incoming_gradient: TensorLike, source: TensorLike, reduction_axes: Any, name: Optional[str] = None) -> Tensor:
        """``sum(incoming_gradient)`` over ``reduction_axes``, kept as size 1: the gradient toward
        ``normalize``'s beta (MPSGraph
        ``normalizationBetaGradient(withIncomingGradientTensor:sourceTensor:reductionAxes:name:)``).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            reduction_axes: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``normalizationBetaGradient(withIncomingGradientTensor:sourceTensor:reductionAxes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('normalization_beta_gradient')(self, incoming_gradient, source, reduction_axes, name)  # type: ignore[no-any-return]

    def normalization_gamma_gradient(self, incoming_gradient: TensorLike, source: TensorLike, mean: TensorLike, variance: TensorLike, reduction_axes: Any, epsilon: float, name: Optional[str] = None) -> Tensor:
        """``sum(incoming_gradient * (source - mean) / sqrt(variance + epsilon))`` over ``reduction_axes``,
        kept as size 1: the gradient toward ``normalize``'s gamma (MPSGraph
        ``normalizationGammaGradient(withIncomingGradientTensor:sourceTensor:mean:varianceTensor:reductionAxes:epsilon:name:)``).
        Not differentiable.

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            mean: A tensor of this graph (the op's ``mean`` input).
            variance: A tensor of this graph (the op's ``variance`` input).
            reduction_axes: See the op reference (docs/reference.md).
            epsilon: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``normalizationGammaGradient(withIncomingGradientTensor:sourceTensor:mean:varianceTensor:reductionAxes:epsilon:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('normalization_gamma_gradient')(self, incoming_gradient, source, mean, variance, reduction_axes, epsilon, name)  # type: ignore[no-any-return]

    def normalization_gradient(self, incoming_gradient: TensorLike, source: TensorLike, mean: TensorLike, variance: TensorLike, gamma: Optional[TensorLike], gamma_gradient: Optional[TensorLike], beta_gradient: Optional[TensorLike], reduction_axes: Any, epsilon: float, name: Optional[str] = None) -> Tensor:
        """The gradient toward ``source`` of a batch norm whose mean and variance are the statistics of
        ``source`` over ``reduction_axes``: ``gamma / sqrt(variance + epsilon) * (dy - beta_gradient / N
        - xhat * gamma_gradient / N)``, N the count over the axes (MPSGraph ``normalizationGradient``).
        ``gamma`` None is 1; ``gamma_gradient``/``beta_gradient`` None are computed here. Not differentiable.

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            mean: A tensor of this graph (the op's ``mean`` input).
            variance: A tensor of this graph (the op's ``variance`` input).
            gamma: A tensor of this graph (the op's ``gamma`` input).
            gamma_gradient: A tensor of this graph (the op's ``gamma_gradient`` input).
            beta_gradient: A tensor of this graph (the op's ``beta_gradient`` input).
            reduction_axes: See the op reference (docs/reference.md).
            epsilon: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``normalizationGradient(withIncomingGradientTensor:sourceTensor:mean:varianceTensor:gammaTensor:gammaGradientTensor:betaGradientTensor:reductionAxes:epsilon:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('normalization_gradient')(self, incoming_gradient, source, mean, variance, gamma, gamma_gradient, beta_gradient, reduction_axes, epsilon, name)  # type: ignore[no-any-return]

    def normalize(self, tensor: TensorLike, mean: TensorLike, variance: TensorLike, gamma: Optional[TensorLike], beta: Optional[TensorLike], epsilon: float, name: Optional[str] = None) -> Tensor:
        """``(tensor - mean) / sqrt(variance + epsilon) * gamma + beta``, broadcasting (MPSGraph
        ``normalize(_:mean:variance:gamma:beta:epsilon:name:)``). ``gamma``/``beta`` may be None
        (MPSGraph's nil: no scale, no bias).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            mean: A tensor of this graph (the op's ``mean`` input).
            variance: A tensor of this graph (the op's ``variance`` input).
            gamma: A tensor of this graph (the op's ``gamma`` input).
            beta: A tensor of this graph (the op's ``beta`` input).
            epsilon: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``normalize(_:mean:variance:gamma:beta:epsilon:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('normalize')(self, tensor, mean, variance, gamma, beta, epsilon, name)  # type: ignore[no-any-return]

    def not_equal(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a != b, a bool tensor (MPSGraph ``notEqual(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``notEqual(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('not_equal')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def one_hot(self, indices: TensorLike, depth: int, axis: int = -1, dtype: Any = float32, on_value: float = 1.0, off_value: float = 0.0, name: Optional[str] = None) -> Tensor:
        """A new axis of length ``depth`` at ``axis`` (-1: last) holding ``on_value`` at each index
        and ``off_value`` elsewhere; an index outside ``[0, depth)`` gives only ``off_value``
        (MPSGraph ``oneHot(withIndicesTensor:depth:axis:dataType:onValue:offValue:name:)``).
        Not differentiable (its input is integer).

        Args:
            indices: A tensor of this graph (the op's ``indices`` input).
            depth: See the op reference (docs/reference.md).
            axis: One axis; a negative value counts from the end.
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            on_value: See the op reference (docs/reference.md).
            off_value: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``oneHot(withIndicesTensor:depth:axis:dataType:onValue:offValue:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('one_hot')(self, indices, depth, axis, dtype, on_value, off_value, name)  # type: ignore[no-any-return]

    def pad_gradient(self, incoming_gradient: TensorLike, source: TensorLike, padding_mode: Any, left_padding: Sequence[int], right_padding: Sequence[int], name: Optional[str] = None) -> Tensor:
        """The gradient of ``pad_tensor`` toward its source: each incoming element is added to the source
        element it was read from (times -1 where ANTI_PERIODIC negated it); the constant's positions add
        nothing (MPSGraph ``padGradient(withIncomingGradientTensor:...)``).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            padding_mode: See the op reference (docs/reference.md).
            left_padding: See the op reference (docs/reference.md).
            right_padding: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``padGradient(withIncomingGradientTensor:sourceTensor:paddingMode:leftPadding:rightPadding:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('pad_gradient')(self, incoming_gradient, source, padding_mode, left_padding, right_padding, name)  # type: ignore[no-any-return]

    def pad_tensor(self, tensor: TensorLike, padding_mode: Any, left_padding: Sequence[int], right_padding: Sequence[int], constant_value: float = 0.0, name: Optional[str] = None) -> Tensor:
        """Pad every dimension by ``left_padding[d]`` before and ``right_padding[d]`` after, filled as
        ``padding_mode`` says (module docstring; docs/shape.md has worked numbers). ``constant_value``
        is used by CONSTANT only and is converted to the tensor's dtype (MPSGraph
        ``padTensor(_:with:leftPadding:rightPadding:constantValue:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            padding_mode: See the op reference (docs/reference.md).
            left_padding: See the op reference (docs/reference.md).
            right_padding: See the op reference (docs/reference.md).
            constant_value: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``padTensor(_:with:leftPadding:rightPadding:constantValue:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('pad_tensor')(self, tensor, padding_mode, left_padding, right_padding, constant_value, name)  # type: ignore[no-any-return]

    def permute(self, tensor: TensorLike, permutation: Sequence[int], name: Optional[str] = None) -> Tensor:
        """Reorder axes: output axis i is input axis ``permutation[i]``
        (MPSGraph ``transpose(_:permutation:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            permutation: A permutation of the axes: output axis i is input axis ``permutation[i]``.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``transpose(_:permutation:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('permute')(self, tensor, permutation, name)  # type: ignore[no-any-return]

    def placeholder(self, shape: Any, dtype: Any = float32, name: Optional[str] = None) -> Tensor:
        """A tensor fed at run time (MPSGraph ``placeholder(shape:dataType:name:)``).

        ``shape`` may hold -1 for dimensions known only when the graph runs.

        Args:
            shape: A shape, as a list of ints (``-1`` marks a dimension known only at run time, where the op allows it).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``placeholder(shape:dataType:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('placeholder')(self, shape, dtype, name)  # type: ignore[no-any-return]

    def planar_tensor(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """The real parts then the imaginary parts along the last axis, which doubles: ``<3 x complex32>`` becomes ``<6 x float16>`` ``[re0, re1, re2, im0, im1, im2]`` (Apple: the real and imaginary planes separated); a real tensor is refused (MPSGraph ``planarTensor(tensor:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``planarTensor(tensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('planar_tensor')(self, tensor, name)  # type: ignore[no-any-return]

    def power(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a ** b (MPSGraph ``power(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``power(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('power')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def quantize(self, tensor: TensorLike, scale: float, zero_point: float, dtype: Any, name: Optional[str] = None) -> Tensor:
        """``saturate(round_half_even(tensor / scale) + zero_point)`` as int4, uint4, int8 or uint8, one
        scale and zero point for the whole tensor (MPSGraph ``quantize(_:scale:zeroPoint:dataType:name:)``); NaN gives
        the zero point. Not differentiable.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            scale: See the op reference (docs/reference.md).
            zero_point: See the op reference (docs/reference.md).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``quantize(_:scale:zeroPoint:dataType:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('quantize')(self, tensor, scale, zero_point, dtype, name)  # type: ignore[no-any-return]

    def quantize_with_scale_tensor(self, tensor: TensorLike, scale_tensor: TensorLike, zero_point: float, dtype: Any, axis: int, name: Optional[str] = None) -> Tensor:
        """``quantize`` with a scale per index of ``axis`` (``scale_tensor``: 1-D of size
        ``tensor.shape[axis]``, or one element) and one zero point (MPSGraph
        ``quantize(_:scaleTensor:zeroPoint:dataType:axis:name:)``). Not differentiable.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            scale_tensor: A tensor of this graph (the op's ``scale_tensor`` input).
            zero_point: See the op reference (docs/reference.md).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``quantize(_:scaleTensor:zeroPoint:dataType:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('quantize_with_scale_tensor')(self, tensor, scale_tensor, zero_point, dtype, axis, name)  # type: ignore[no-any-return]

    def quantize_with_tensors(self, tensor: TensorLike, scale_tensor: TensorLike, zero_point_tensor: TensorLike, dtype: Any, axis: int, name: Optional[str] = None) -> Tensor:
        """``quantize`` with a scale and a zero point per index of ``axis`` (each 1-D of size
        ``tensor.shape[axis]``, or one element; the zero points have the result dtype), as ONNX's
        per-axis QuantizeLinear (MPSGraph ``quantize(_:scaleTensor:zeroPointTensor:dataType:axis:name:)``).
        Not differentiable.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            scale_tensor: A tensor of this graph (the op's ``scale_tensor`` input).
            zero_point_tensor: A tensor of this graph (the op's ``zero_point_tensor`` input).
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype.
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``quantize(_:scaleTensor:zeroPointTensor:dataType:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('quantize_with_tensors')(self, tensor, scale_tensor, zero_point_tensor, dtype, axis, name)  # type: ignore[no-any-return]

    def random_philox_state_tensor(self, counter_low: int = 0, counter_high: int = 0, key: int = 0, name: Optional[str] = None, seed: Optional[int] = None) -> Tensor:
        """A Philox state for the random ops that take one (MPSGraph
        ``randomPhiloxStateTensor(withCounterLow:counterHigh:key:name:)``; ``seed=`` is
        ``randomPhiloxStateTensor(withSeed:name:)``): an int32 tensor of shape [7], ``[1, counter
        (four words, low first), key (two words, low first)]`` (docs/random.md).

        Args:
            counter_low: The low 64 bits of the 128-bit counter (an int, as its 64-bit pattern).
            counter_high: The high 64 bits of the counter.
            key: The 64-bit Philox key.
            name: The op's name (MPSGraph's ``name:``).
            seed: Instead of the three: the key ``seed`` with counter 0, so the first draw from the
                state equals the first run of a seeded op with ``seed=seed``.

        Returns:
            Tensor: the int32 state, shape [7].

        Raises:
            MiniGraphError: a DescriptorError for a value outside 64 bits or ``seed`` given with a
                counter or key; the message names the op.
        """
        return _builder('random_philox_state_tensor')(self, counter_low, counter_high, key, name, seed)  # type: ignore[no-any-return]

    def random_tensor(self, shape: Any, descriptor: Any, seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
        """Random values of ``shape`` from the descriptor's distribution, a fresh draw on each run
        (MPSGraph ``randomTensor(withShape:descriptor:seed:name:)``; ``seed=None`` is its
        ``randomTensor(withShape:descriptor:name:)``).

        Args:
            shape: The result's shape (static ints).
            descriptor: A ``RandomOpDescriptor`` (copied when the op is built).
            seed: The op's seed (an int); equal seeds give equal draws. None derives one from the
                graph's ``random_seed`` and the op's index.
            name: The op's name (MPSGraph's ``name:``).

        Returns:
            Tensor: values of ``descriptor.dtype`` and ``shape``.

        Raises:
            MiniGraphError: a ShapeError for a dynamic or negative shape, a DescriptorError for a bad
                descriptor or seed; the message names the op.
        """
        return _builder('random_tensor')(self, shape, descriptor, seed, name)  # type: ignore[no-any-return]

    def random_tensor_with_state(self, shape: Any, descriptor: Any, state_tensor: TensorLike, name: Optional[str] = None) -> list[Tensor]:
        """Random values of ``shape`` drawn from ``state_tensor``, and the state after them (MPSGraph
        ``randomTensor(withShape:descriptor:stateTensor:name:)``, which returns both): equal states give
        equal values, on every run; feed the returned state to the next random op to continue the stream.

        Args:
            shape: The result's shape (static ints).
            descriptor: A ``RandomOpDescriptor`` (copied when the op is built).
            state_tensor: An int32 tensor of shape [7] (``g.random_philox_state_tensor``, a state a
                random op returned, or a placeholder fed one).
            name: The op's name (MPSGraph's ``name:``).

        Returns:
            list[Tensor]: ``[values, new_state]``: values of ``descriptor.dtype`` and ``shape``; the
            state with its counter advanced past the Philox blocks the values used.

        Raises:
            MiniGraphError: a ShapeError for a dynamic or negative shape or a state of another shape, a
                DTypeError for a state that is not int32, a DescriptorError for a bad descriptor.
        """
        return _builder('random_tensor_with_state')(self, shape, descriptor, state_tensor, name)  # type: ignore[no-any-return]

    def random_uniform_tensor(self, shape: Any, seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
        """float32 values uniform in [0, 1), a fresh draw on each run (MPSGraph
        ``randomUniformTensor(withShape:seed:name:)``; ``seed=None`` is ``randomUniformTensor(withShape:name:)``).
        The same bits as ``random_tensor`` with a default UNIFORM float32 descriptor and the same seed.

        Args:
            shape: The result's shape (static ints).
            seed: The op's seed (an int); None derives one from the graph's ``random_seed`` and the op's index.
            name: The op's name (MPSGraph's ``name:``).

        Returns:
            Tensor: float32 values of ``shape`` in [0, 1).

        Raises:
            MiniGraphError: a ShapeError for a dynamic or negative shape, a DescriptorError for a bad seed.
        """
        return _builder('random_uniform_tensor')(self, shape, seed, name)  # type: ignore[no-any-return]

    def random_uniform_tensor_with_state(self, shape: Any, state_tensor: TensorLike, name: Optional[str] = None) -> list[Tensor]:
        """float32 values uniform in [0, 1) drawn from ``state_tensor``, and the state after them
        (MPSGraph ``randomUniformTensor(withShape:stateTensor:name:)``): ``random_tensor_with_state``
        with a default UNIFORM float32 descriptor.

        Args:
            shape: The result's shape (static ints).
            state_tensor: An int32 tensor of shape [7].
            name: The op's name (MPSGraph's ``name:``).

        Returns:
            list[Tensor]: ``[values, new_state]``.

        Raises:
            MiniGraphError: a ShapeError for a dynamic or negative shape or a state of another shape, a
                DTypeError for a state that is not int32.
        """
        return _builder('random_uniform_tensor_with_state')(self, shape, state_tensor, name)  # type: ignore[no-any-return]

    def read(self, variable: TensorLike, name: Optional[str] = None) -> Tensor:
        """The variable's value at this point of the run (MPSGraph ``read(_:name:)``).

        Args:
            variable: A variable tensor (made by ``g.variable``).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``read(_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('read')(self, variable, name)  # type: ignore[no-any-return]

    def real_part_of_tensor(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """The real part of each element, a float32 (complex64) or float16 (complex32) tensor; a real tensor is returned as it is (MPSGraph ``realPartOfTensor(tensor:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``realPartOfTensor(tensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('real_part_of_tensor')(self, tensor, name)  # type: ignore[no-any-return]

    def real_to_hermitean_fft(self, tensor: TensorLike, axes: Sequence[int], descriptor: Optional[FFTDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """The Fourier transform of a real tensor, only its non-redundant half (MPSGraph
        ``realToHermiteanFFT(_:axes:descriptor:name:)``): the last of ``axes`` (sorted) becomes
        ``n // 2 + 1`` long, as ``numpy.fft.rfftn``; float32 gives complex64, float16 complex32.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``realToHermiteanFFT(_:axes:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('real_to_hermitean_fft')(self, tensor, axes, descriptor, name)  # type: ignore[no-any-return]

    def reciprocal(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise 1 / x (MPSGraph ``reciprocal(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reciprocal(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reciprocal')(self, tensor, name)  # type: ignore[no-any-return]

    def reduction_and(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, *, axis: Any = None) -> Tensor:
        """Logical AND, a bool result (a nonzero or NaN element is true; an empty slice gives true) over ``axes`` (an int, a list, or None for all), keeping them as size 1 (MPSGraph ``reductionAnd(with:axes:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reductionAnd(with:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reduction_and')(self, tensor, axes, name, axis=axis)  # type: ignore[no-any-return]

    def reduction_arg_maximum(self, tensor: TensorLike, axis: int, name: Optional[str] = None) -> Tensor:
        """The index of the maximum (NaN skipped, as by reduction_maximum; -1 for a slice of only NaN) along ``axis``, as int32, the axis kept as size 1; the first index on ties (MPSGraph ``reductionArgMaximum(with:axis:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reductionArgMaximum(with:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reduction_arg_maximum')(self, tensor, axis, name)  # type: ignore[no-any-return]

    def reduction_arg_minimum(self, tensor: TensorLike, axis: int, name: Optional[str] = None) -> Tensor:
        """The index of the minimum (NaN skipped, as by reduction_minimum; -1 for a slice of only NaN) along ``axis``, as int32, the axis kept as size 1; the first index on ties (MPSGraph ``reductionArgMinimum(with:axis:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reductionArgMinimum(with:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reduction_arg_minimum')(self, tensor, axis, name)  # type: ignore[no-any-return]

    def reduction_maximum(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, *, axis: Any = None) -> Tensor:
        """Maximum skipping NaN (a slice of only NaN, or an empty one, gives -inf) over ``axes`` (an int, a list, or None for all), keeping them as size 1 (MPSGraph ``reductionMaximum(with:axes:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reductionMaximum(with:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reduction_maximum')(self, tensor, axes, name, axis=axis)  # type: ignore[no-any-return]

    def reduction_maximum_propagate_nan(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, *, axis: Any = None) -> Tensor:
        """Maximum, NaN where the slice holds a NaN (an empty slice gives -inf) over ``axes`` (an int, a list, or None for all), keeping them as size 1 (MPSGraph ``reductionMaximumPropagateNaN(with:axes:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reductionMaximumPropagateNaN(with:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reduction_maximum_propagate_nan')(self, tensor, axes, name, axis=axis)  # type: ignore[no-any-return]

    def reduction_minimum(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, *, axis: Any = None) -> Tensor:
        """Minimum skipping NaN (a slice of only NaN, or an empty one, gives +inf) over ``axes`` (an int, a list, or None for all), keeping them as size 1 (MPSGraph ``reductionMinimum(with:axes:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reductionMinimum(with:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reduction_minimum')(self, tensor, axes, name, axis=axis)  # type: ignore[no-any-return]

    def reduction_minimum_propagate_nan(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, *, axis: Any = None) -> Tensor:
        """Minimum, NaN where the slice holds a NaN (an empty slice gives +inf) over ``axes`` (an int, a list, or None for all), keeping them as size 1 (MPSGraph ``reductionMinimumPropagateNaN(with:axes:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reductionMinimumPropagateNaN(with:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reduction_minimum_propagate_nan')(self, tensor, axes, name, axis=axis)  # type: ignore[no-any-return]

    def reduction_or(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, *, axis: Any = None) -> Tensor:
        """Logical OR, a bool result (a nonzero or NaN element is true; an empty slice gives false) over ``axes`` (an int, a list, or None for all), keeping them as size 1 (MPSGraph ``reductionOr(with:axes:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reductionOr(with:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reduction_or')(self, tensor, axes, name, axis=axis)  # type: ignore[no-any-return]

    def reduction_product(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, *, axis: Any = None) -> Tensor:
        """Product (an empty slice gives 1; integers wrap around) over ``axes`` (an int, a list, or None for all), keeping them as size 1 (MPSGraph ``reductionProduct(with:axes:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reductionProduct(with:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reduction_product')(self, tensor, axes, name, axis=axis)  # type: ignore[no-any-return]

    def reduction_sum(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, *, axis: Any = None) -> Tensor:
        """Sum over ``axes`` (an int, a list, or None for all), keeping them as size 1 (MPSGraph ``reductionSum(with:axes:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reductionSum(with:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reduction_sum')(self, tensor, axes, name, axis=axis)  # type: ignore[no-any-return]

    def reinterpret_cast(self, tensor: TensorLike, to_type: Any, name: Optional[str] = None) -> Tensor:
        """The same bytes read as ``to_type`` (MPSGraph ``reinterpretCast(_:to:name:)``): "the last
        dimension scaled by sizeof(tensor_type) / sizeof(type)", little-endian as the host;
        ``float32`` 1.0 reads as ``int32`` 1065353216. Bool is refused (its bits differ by backend).
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/reinterpretcast(_:to:name:)

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            to_type: The data type to convert to (MPSGraph's ``to:``).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reinterpretCast(_:to:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reinterpret_cast')(self, tensor, to_type, name)  # type: ignore[no-any-return]

    def relu(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise max(x, 0) with the NaN-ignoring maximum, so relu(NaN) = 0 (MPSGraph ``reLU(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reLU(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('relu')(self, tensor, name)  # type: ignore[no-any-return]

    def relu_gradient(self, incoming_gradient: TensorLike, source: TensorLike, name: Optional[str] = None) -> Tensor:
        """The gradient of ``relu`` toward its input: ``incoming_gradient`` where ``source > 0``, else
        0 (NaN and -0 included) (MPSGraph ``reLUGradient(withIncomingGradient:sourceTensor:name:)``,
        https://learn.microsoft.com/en-us/dotnet/api/metalperformanceshadersgraph.mpsgraph_mpsgraphactivationops.relugradient).
        ``source`` may be relu's input or its result: ``relu(x) > 0`` exactly where ``x > 0``, and
        ``g.gradients`` passes the result, so the input can die at the relu.

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reLUGradient(withIncomingGradient:sourceTensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('relu_gradient')(self, incoming_gradient, source, name)  # type: ignore[no-any-return]

    def reshape(self, tensor: TensorLike, shape: Sequence[int], name: Optional[str] = None) -> Tensor:
        """Same elements, new shape; one -1 is inferred (MPSGraph ``reshape(_:shape:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            shape: A shape, as a list of ints (``-1`` marks a dimension known only at run time, where the op allows it).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reshape(_:shape:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reshape')(self, tensor, shape, name)  # type: ignore[no-any-return]

    def resize(self, tensor: TensorLike, size: Sequence[int], mode: Any, center_result: bool = False, align_corners: bool = False, layout: Any = None, name: Optional[str] = None, *, nearest_rounding_mode: Any = ResizeNearestRoundingMode.ROUND_PREFER_CEIL, scale: Optional[Sequence[float]] = None, offset: Optional[Sequence[float]] = None) -> Tensor:
        """Resample the images in ``tensor`` to ``size`` (MPSGraph
        ``resize(_:size:mode:centerResult:alignCorners:layout:name:)`` and its ``resizeNearest``,
        ``resizeBilinear``, ``scaleOffsetTensor:`` and ``scaleTensor:offsetTensor:`` forms).

        Args:
            tensor: The images (MPSGraph's ``imagesTensor``), float, in ``layout``.
            size: ``[newHeight, newWidth]`` with a layout, else the whole result shape; ints >= 1.
            mode: ``mg.ResizeMode.NEAREST`` or ``BILINEAR``.
            center_result: Half-pixel centres (``src = (o + 0.5) * n / m - 0.5``) instead of top-left alignment.
            align_corners: Corner pixels of input and result coincide (``src = o * (n - 1) / (m - 1)``);
                ``center_result`` then does nothing.
            layout: ``mg.TensorNamedDataLayout`` NCHW, NHWC, CHW, HWC or HW (H and W are resized), or
                None: every axis is (Apple's forms without a layout).
            name: The op's name (MPSGraph's ``name:``).
            nearest_rounding_mode: How NEAREST rounds the source coordinate, an
                ``mg.ResizeNearestRoundingMode`` (MPSGraph's default ROUND_PREFER_CEIL: halves up).
            scale: Per resized axis (``[scaleY, scaleX]`` with a layout); with ``offset``, result
                index ``o`` reads ``src = (o - offset) / scale`` (Apple's ``dst = src * scale + offset``).
            offset: Per resized axis, with ``scale``.

        Returns:
            Tensor: ``tensor``'s shape with the resized axes replaced by ``size``.

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError naming the op.
        """
        return _builder('resize')(self, tensor, size, mode, center_result, align_corners, layout, name, nearest_rounding_mode=nearest_rounding_mode, scale=scale, offset=offset)  # type: ignore[no-any-return]

    def resize_gradient(self, incoming_gradient: TensorLike, input: TensorLike, mode: Any, center_result: bool = False, align_corners: bool = False, layout: Any = None, name: Optional[str] = None, *, nearest_rounding_mode: Any = ResizeNearestRoundingMode.ROUND_PREFER_CEIL, scale: Optional[Sequence[float]] = None, offset: Optional[Sequence[float]] = None) -> Tensor:
        """Gradient of ``resize`` with respect to its images (MPSGraph
        ``resize(withGradientTensor:input:mode:centerResult:alignCorners:layout:name:)`` and its
        ``resizeNearest``, ``resizeBilinear`` and scale-offset forms): each result element's gradient
        goes back to the source elements it read, with their weights.

        Args:
            incoming_gradient: The gradient of the resize's result.
            input: The forward resize's images (only its shape is read).
            mode: As the forward op.
            center_result: As the forward op.
            align_corners: As the forward op.
            layout: As the forward op.
            name: The op's name (MPSGraph's ``name:``).
            nearest_rounding_mode: As the forward op.
            scale: As the forward op.
            offset: As the forward op.

        Returns:
            Tensor: the gradient, with ``input``'s shape.

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError naming the op.
        """
        return _builder('resize_gradient')(self, incoming_gradient, input, mode, center_result, align_corners, layout, name, nearest_rounding_mode=nearest_rounding_mode, scale=scale, offset=offset)  # type: ignore[no-any-return]

    def reverse(self, tensor: TensorLike, axes: Any, name: Optional[str] = None) -> Tensor:
        """The elements in reverse order along each of ``axes`` (unique; None: every axis), as
        TensorFlow's reverse (MPSGraph ``reverse(_:axes:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reverse(_:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reverse')(self, tensor, axes, name)  # type: ignore[no-any-return]

    def reverse_square_root(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise 1 / sqrt(x); Apple deprecates it from macOS 15 / iOS 18 in favour of reciprocalSquareRoot, the same function (MPSGraph ``reverseSquareRoot(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``reverseSquareRoot(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('reverse_square_root')(self, tensor, name)  # type: ignore[no-any-return]

    def rint(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise nearest integer, halfway cases to even as Metal's rint: 2.5 -> 2, -1.5 -> -2 (integers unchanged) (MPSGraph ``rint(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``rint(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('rint')(self, tensor, name)  # type: ignore[no-any-return]

    def round(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise nearest integer, halfway cases away from zero as Metal's round: 2.5 -> 3, -0.5 -> -1 (integers unchanged) (MPSGraph ``round(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``round(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('round')(self, tensor, name)  # type: ignore[no-any-return]

    def sample_grid(self, source: TensorLike, coordinates: TensorLike, layout: Any, normalize_coordinates: bool, relative_coordinates: bool, align_corners: bool, padding_mode: Any, sampling_mode: Any, constant_value: float = 0.0, name: Optional[str] = None, *, nearest_rounding_mode: Any = ResizeNearestRoundingMode.ROUND_PREFER_CEIL) -> Tensor:
        """Sample ``source`` at ``coordinates``, like PyTorch's ``grid_sample`` (MPSGraph
        ``sampleGrid(withSourceTensor:coordinateTensor:layout:normalizeCoordinates:relativeCoordinates:alignCorners:paddingMode:samplingMode:constantValue:name:)``
        and its ``nearestRoundingMode:`` form).

        Args:
            source: ``[N, H, W, C]`` or ``[N, C, H, W]`` (``layout``), float.
            coordinates: ``[N, Hout, Wout, 2]``, float: per result pixel ``(x, y)``, x along W.
            layout: ``mg.TensorNamedDataLayout.NHWC`` or ``NCHW``, of ``source`` and the result.
            normalize_coordinates: Coordinates in ``[-1, 1]`` across the image, else in pixels.
            relative_coordinates: Coordinates are offsets from each result pixel's position.
            align_corners: With normalized coordinates, -1 and 1 are the centres of the edge pixels,
                else their outer edges.
            padding_mode: ``mg.PaddingMode`` CONSTANT, ZERO, REFLECT, SYMMETRIC or CLAMP_TO_EDGE: what
                a sample outside the image reads.
            sampling_mode: ``mg.ResizeMode.NEAREST`` or ``BILINEAR``.
            constant_value: What a tap outside the image reads with CONSTANT padding.
            name: The op's name (MPSGraph's ``name:``).
            nearest_rounding_mode: How NEAREST rounds (an ``mg.ResizeNearestRoundingMode``; MPSGraph's
                default ROUND_PREFER_CEIL; PyTorch's ``grid_sample`` rounds to even).

        Returns:
            Tensor: ``[N, Hout, Wout, C]`` or ``[N, C, Hout, Wout]``, the source's dtype.

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError naming the op.
        """
        return _builder('sample_grid')(self, source, coordinates, layout, normalize_coordinates, relative_coordinates, align_corners, padding_mode, sampling_mode, constant_value, name, nearest_rounding_mode=nearest_rounding_mode)  # type: ignore[no-any-return]

    def scaled_dot_product_attention(self, query: TensorLike, key: TensorLike, value: TensorLike, mask: Optional[TensorLike] = None, scale: Optional[float] = None, name: Optional[str] = None, descriptor: Optional[SDPADescriptor] = None) -> Tensor:
        """``softmax(scale * query @ key^T + mask) @ value`` over the last axis, max-subtracted
        (MPSGraph ``scaledDotProductAttention(query:key:value:mask:scale:name:)``; with ``mask=None``
        the variant ``scaledDotProductAttention(query:key:value:scale:name:)``).

        Shapes ``query [..., Nq, D]``, ``key [..., Nkv, D]``, ``value [..., Nkv, Dv]`` (usually
        ``[B, H, N, D]``), leading axes broadcast; result ``[..., Nq, Dv]``. ``mask``: additive, of
        the query's dtype, broadcasting to ``[..., Nq, Nkv]`` (``-inf`` drops a key; a row with every
        key dropped gives 0, as PyTorch). ``scale``: required, as in MPSGraph (usually ``1 / sqrt(D)``).
        See docs/attention.md.

        Args:
            query: A tensor of this graph, ``[..., Nq, D]``.
            key: A tensor of this graph, ``[..., Nkv, D]``.
            value: A tensor of this graph, ``[..., Nkv, Dv]``.
            mask: None (MPSGraph's nil) or an additive tensor (or number) broadcasting to the scores.
            scale: The factor of ``query @ key^T`` (MPSGraph's ``scale:``, a Float; no default).
            name: The op's name (MPSGraph's ``name:``); None uses the op type.
            descriptor: Instead of ``mask`` and ``scale``, an ``mg.SDPADescriptor`` (MPSGraph
                ``scaledDotProductAttention(query:key:value:descriptor:name:)``): its scale, mask or
                causal mask and attention sinks, built from this op with a virtual key (docs/attention.md).

        Returns:
            Tensor: ``[broadcast batch..., Nq, Dv]`` in the query's dtype (MPSGraph
            ``scaledDotProductAttention(query:key:value:mask:scale:name:)``).

        Raises:
            MiniGraphError: a ShapeError or DTypeError when the operands do not fit, an
            AttentionScaleError (a DescriptorError and TypeError) without a numeric ``scale``.
        """
        return _builder('scaled_dot_product_attention')(self, query, key, value, mask, scale, name, descriptor)  # type: ignore[no-any-return]

    def scatter(self, updates: TensorLike, indices: TensorLike, shape: Sequence[int], axis: int, mode: Any, name: Optional[str] = None) -> Tensor:
        """A tensor of ``shape`` where each slice ``updates[..., k, ...]`` along ``axis`` is combined
        into slice ``indices[k]`` (from ``mode``'s identity: the updates' sum, product, minimum, ...)
        and every element no update reaches is 0, in every mode; the transpose of ``gather`` with ADD.
        ``shape`` may hold -1 on the axes other than ``axis``: their sizes come from ``updates``
        (MPSGraph ``scatter(_:indices:shape:axis:mode:name:)``).

        Args:
            updates: A tensor of this graph (the op's ``updates`` input).
            indices: A tensor of this graph (the op's ``indices`` input).
            shape: A shape, as a list of ints (``-1`` marks a dimension known only at run time, where the op allows it).
            axis: One axis; a negative value counts from the end.
            mode: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``scatter(_:indices:shape:axis:mode:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('scatter')(self, updates, indices, shape, axis, mode, name)  # type: ignore[no-any-return]

    def scatter_along_axis(self, updates: TensorLike, indices: TensorLike, data: Optional[TensorLike], axis: int, mode: Any, name: Optional[str] = None, shape: Optional[Sequence[int]] = None) -> Tensor:
        """``data`` with each ``updates[..., j, ...]`` combined (``mode``) into
        ``data[..., indices[..., j, ...], ...]`` along ``axis``, as ``torch.Tensor.scatter_reduce``;
        collisions combine in row-major order of ``updates``; out-of-range indices are skipped, as
        Apple documents (MPSGraph ``scatterAlongAxis(_:data:updates:indices:mode:name:)``).

        With ``shape`` and ``data=None`` (MPSGraph ``scatterAlongAxis(_:updates:indices:shape:mode:name:)``)
        the result is a tensor of ``shape`` and ``updates``' dtype "initialized with an initial value
        corresponding to mode" (Apple's header): ``mode``'s identity (0 for ADD, SUB and SET, 1 for MUL
        and DIV, +inf / -inf, or the integer type's largest / smallest value, for MIN / MAX), which
        the elements no update reaches keep.

        Args:
            updates: A tensor of this graph (the values scattered), of ``indices``' shape.
            indices: An int32 or int64 tensor of ``updates``' shape: positions along ``axis``.
            data: The tensor scattered onto; None with ``shape``.
            axis: One axis; a negative value counts from the end.
            mode: A ``ScatterMode`` (or its name): how an update combines with its element.
            name: The op's name (MPSGraph's ``name:``).
            shape: The result's shape (static ints) for the form without ``data``.

        Returns:
            Tensor: ``data``'s shape and dtype (or ``shape`` and ``updates``' dtype).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit,
                both or neither of ``data`` and ``shape`` given; the message names the op.
        """
        return _builder('scatter_along_axis')(self, updates, indices, data, axis, mode, name, shape)  # type: ignore[no-any-return]

    def scatter_nd(self, updates: TensorLike, indices: TensorLike, shape: Sequence[int], batch_dimensions: int = 0, mode: Any = None, name: Optional[str] = None) -> Tensor:
        """A tensor of ``shape`` where each slice of ``updates`` is combined at the index tuple along
        the last axis of ``indices`` (from ``mode``'s identity) and every slice no update reaches is 0,
        in every mode; the transpose of ``gather_nd`` with ADD; ``mode=None`` is ADD, as MPSGraph's
        scatterND without ``mode:`` sums collisions. ``shape`` may hold -1 on the batch and trailing
        axes (their sizes come from indices and updates)
        (MPSGraph ``scatterND(withUpdatesTensor:indicesTensor:shape:batchDimensions:mode:name:)``).

        Args:
            updates: A tensor of this graph (the op's ``updates`` input).
            indices: A tensor of this graph (the op's ``indices`` input).
            shape: A shape, as a list of ints (``-1`` marks a dimension known only at run time, where the op allows it).
            batch_dimensions: See the op reference (docs/reference.md).
            mode: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``scatterND(withUpdatesTensor:indicesTensor:shape:batchDimensions:mode:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('scatter_nd')(self, updates, indices, shape, batch_dimensions, mode, name)  # type: ignore[no-any-return]

    def scatter_nd_with_data(self, data: TensorLike, updates: TensorLike, indices: TensorLike, batch_dimensions: int = 0, mode: Any = None, name: Optional[str] = None) -> Tensor:
        """``scatter_nd`` onto a copy of ``data``: each slice of ``updates`` is combined (``mode``;
        None is ADD) at the index tuple along the last axis of ``indices``; the rest keeps ``data``
        (MPSGraph ``scatterNDWithData(_:updates:indices:batchDimensions:mode:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/scatterndwithdata(_:updates:indices:batchdimensions:mode:name:)).

        Args:
            data: A tensor of this graph (the op's ``data`` input).
            updates: A tensor of this graph (the op's ``updates`` input).
            indices: A tensor of this graph (the op's ``indices`` input).
            batch_dimensions: See the op reference (docs/reference.md).
            mode: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``scatterNDWithData(_:updates:indices:batchDimensions:mode:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('scatter_nd_with_data')(self, data, updates, indices, batch_dimensions, mode, name)  # type: ignore[no-any-return]

    def scatter_with_data(self, data: TensorLike, updates: TensorLike, indices: TensorLike, axis: int, mode: Any, name: Optional[str] = None) -> Tensor:
        """``scatter`` onto a copy of ``data`` instead of zeros: each slice ``updates[..., k, ...]``
        along ``axis`` is combined (``mode``) into ``data``'s slice ``indices[k]``; slices no index
        names keep ``data``'s values (MPSGraph ``scatterWithData(_:updates:indices:axis:mode:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/scatterwithdata(_:updates:indices:axis:mode:name:)).

        Args:
            data: A tensor of this graph (the op's ``data`` input).
            updates: A tensor of this graph (the op's ``updates`` input).
            indices: A tensor of this graph (the op's ``indices`` input).
            axis: One axis; a negative value counts from the end.
            mode: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``scatterWithData(_:updates:indices:axis:mode:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('scatter_with_data')(self, data, updates, indices, axis, mode, name)  # type: ignore[no-any-return]

    def select(self, predicate: TensorLike, true_tensor: TensorLike, false_tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """``true_tensor`` where ``predicate`` is true (non-zero), else ``false_tensor``, broadcast
        (MPSGraph ``select(predicate:trueTensor:falseTensor:name:)``).

        Args:
            predicate: A tensor of this graph (the op's ``predicate`` input).
            true_tensor: A tensor of this graph (the op's ``true_tensor`` input).
            false_tensor: A tensor of this graph (the op's ``false_tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``select(predicate:trueTensor:falseTensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('select')(self, predicate, true_tensor, false_tensor, name)  # type: ignore[no-any-return]

    def shape_of(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """The shape of ``tensor`` as an int32 rank-1 tensor (MPSGraph ``shapeOf(_:name:)``: "the
        values of the static shape of the input tensor",
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/shapeof(_:name:)).

        A constant of the compiled graph: the values are fixed when the graph is compiled for its
        feeds (a -1 dimension of a placeholder is the size fed then); nothing of ``tensor`` is read.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``shapeOf(_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('shape_of')(self, tensor, name)  # type: ignore[no-any-return]

    def sigmoid(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise 1 / (1 + e ** -x) (MPSGraph ``sigmoid(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``sigmoid(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('sigmoid')(self, tensor, name)  # type: ignore[no-any-return]

    def sigmoid_gradient(self, incoming_gradient: TensorLike, source: TensorLike, name: Optional[str] = None) -> Tensor:
        """The gradient of ``sigmoid`` toward its input ``source`` (Apple: "the input tensor"):
        ``incoming_gradient * (s * (1 - s))`` with ``s = sigmoid(source)`` rounded to the type, as
        the forward op's result is (MPSGraph ``sigmoidGradient(withIncomingGradient:sourceTensor:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/sigmoidgradient(withincominggradient:sourcetensor:name:)).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``sigmoidGradient(withIncomingGradient:sourceTensor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('sigmoid_gradient')(self, incoming_gradient, source, name)  # type: ignore[no-any-return]

    def sign(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise sign: -1, 1, a zero keeps its sign, and NaN gives 0 (MPSGraph ``sign(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``sign(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('sign')(self, tensor, name)  # type: ignore[no-any-return]

    def signbit(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise sign bit of x, a bool tensor: true for -0.0, -inf and a NaN with its sign bit set; x < 0 for signed integers, false for unsigned (MPSGraph ``signbit(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``signbit(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('signbit')(self, tensor, name)  # type: ignore[no-any-return]

    def sin(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise sin(x) (MPSGraph ``sin(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``sin(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('sin')(self, tensor, name)  # type: ignore[no-any-return]

    def single_gate_rnn(self, source: TensorLike, recurrent_weight: TensorLike, input_weight: Optional[TensorLike] = None, bias: Optional[TensorLike] = None, init_state: Optional[TensorLike] = None, mask: Optional[TensorLike] = None, descriptor: Any = None, name: Optional[str] = None) -> list[Tensor]:
        """A single-gate RNN over ``source`` ``[T, N, I]``: ``h[t] = activation(x[t] W^T + (h[t-1] m) R^T + b)``
        (MPSGraph ``singleGateRNN``). Returns ``[state]``, or ``[state, z]`` with ``descriptor.training``
        (``z``: the pre-activation, which ``single_gate_rnn_gradients`` takes as ``z_state``); each
        ``[T, N, H]`` (``[T, N, 2H]`` bidirectional). None inputs are MPSGraph's nil: no input weight
        (the source is already ``[T, N, H]``), zero bias and initial state, a mask of ones.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/singlegaternn(_:recurrentweight:inputweight:bias:initstate:mask:descriptor:name:)

        Args:
            source: x: ``[T, N, I]`` (without an input weight ``[T, N, G H]``; ``[T, N, 2 G H]`` bidirectional).
            recurrent_weight: R: ``[G H, H]`` (``[2, G H, H]`` bidirectional), rows by gate in the descriptor's order.
            input_weight: W: ``[G H, I]`` (``[2 G H, I]``); None: the source is already projected.
            bias: b: ``[G H]`` (``[2 G H]``); None: zeros.
            init_state: h[-1]: ``[N, H]`` (``[N, 2H]``); None: zeros.
            mask: m, broadcast against the output ``[T, N, D H]``; ``mask[t]`` multiplies the state entering step t; None: ones.
            descriptor: The layer's descriptor (None: its defaults), copied when the op is built.
            name: The op's name (MPSGraph's ``name:``); None uses the op type.

        Returns:
            list[Tensor]: the outputs MPSGraph returns, in its order (the state first). (MPSGraph ``singleGateRNN(_:recurrentWeight:inputWeight:bias:initState:mask:descriptor:name:)``)

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs or the descriptor do not fit; the message names the op.
        """
        return _builder('single_gate_rnn')(self, source, recurrent_weight, input_weight, bias, init_state, mask, descriptor, name)  # type: ignore[no-any-return]

    def single_gate_rnn_gradients(self, source: TensorLike, recurrent_weight: TensorLike, source_gradient: TensorLike, z_state: TensorLike, state_gradient: Optional[TensorLike] = None, input_weight: Optional[TensorLike] = None, bias: Optional[TensorLike] = None, init_state: Optional[TensorLike] = None, mask: Optional[TensorLike] = None, descriptor: Any = None, name: Optional[str] = None) -> list[Tensor]:
        """Gradients of ``single_gate_rnn`` (MPSGraph ``singleGateRNNGradients``): toward source,
        recurrent_weight, input_weight, bias and init_state, in that order, leaving out the inputs
        given as None. ``source_gradient`` is the gradient of the state output, ``z_state`` the
        forward op's training output, ``state_gradient`` ``[N, H]`` a gradient entering from beyond
        the last step.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/singlegaternngradients(_:recurrentweight:sourcegradient:zstate:stategradient:inputweight:bias:initstate:mask:descriptor:name:)

        Args:
            source: x: ``[T, N, I]`` (without an input weight ``[T, N, G H]``; ``[T, N, 2 G H]`` bidirectional).
            recurrent_weight: R: ``[G H, H]`` (``[2, G H, H]`` bidirectional), rows by gate in the descriptor's order.
            source_gradient: The gradient of the forward op's state output, ``[T, N, D H]``.
            z_state: The forward op's training-state output (built with ``descriptor.training``).
            state_gradient: A gradient entering after the last step of each direction, ``[N, D H]``; None: zeros.
            input_weight: W: ``[G H, I]`` (``[2 G H, I]``); None: the source is already projected.
            bias: b: ``[G H]`` (``[2 G H]``); None: zeros.
            init_state: h[-1]: ``[N, H]`` (``[N, 2H]``); None: zeros.
            mask: m, broadcast against the output ``[T, N, D H]``; ``mask[t]`` multiplies the state entering step t; None: ones.
            descriptor: The layer's descriptor (None: its defaults), copied when the op is built.
            name: The op's name (MPSGraph's ``name:``); None uses the op type.

        Returns:
            list[Tensor]: one gradient per input given (not None), in Apple's order. (MPSGraph ``singleGateRNNGradients(_:recurrentWeight:sourceGradient:zState:stateGradient:inputWeight:bias:initState:mask:descriptor:name:)``)

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs or the descriptor do not fit; the message names the op.
        """
        return _builder('single_gate_rnn_gradients')(self, source, recurrent_weight, source_gradient, z_state, state_gradient, input_weight, bias, init_state, mask, descriptor, name)  # type: ignore[no-any-return]

    def sinh(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise sinh(x); webgpu: an odd polynomial below 1 (no e^x - e^-x cancellation near 0), E - 1/(4E) with E = e^|x| / 2 beyond (x log2(e) an exact product, finite up to 89.4): 1.6 ulp at most (MPSGraph ``sinh(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``sinh(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('sinh')(self, tensor, name)  # type: ignore[no-any-return]

    def slice(self, tensor: TensorLike, dimension: int, start: int, length: int, name: Optional[str] = None) -> Tensor:
        """``length`` elements from ``start`` along ``dimension`` (negative start counts from the end)
        (MPSGraph ``sliceTensor(_:dimension:start:length:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            dimension: A dimension index (negative counts from the end).
            start: The first index along ``dimension``.
            length: How many elements to take along ``dimension``.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``sliceTensor(_:dimension:start:length:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('slice')(self, tensor, dimension, start, length, name)  # type: ignore[no-any-return]

    def slice_gradient(self, incoming_gradient: TensorLike, input_shape: Any, dimension: int, start: int, length: int, name: Optional[str] = None) -> Tensor:
        """Zeros of ``input_shape`` with ``incoming_gradient`` placed where ``slice`` read
        (MPSGraph ``sliceGradientTensor(_:fwdInShapeTensor:starts:ends:strides:name:)``).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            input_shape: The shape of the forward op's input, which the result has.
            dimension: A dimension index (negative counts from the end).
            start: The first index along ``dimension``.
            length: How many elements to take along ``dimension``.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``sliceGradientTensor(_:fwdInShapeTensor:starts:ends:strides:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('slice_gradient')(self, incoming_gradient, input_shape, dimension, start, length, name)  # type: ignore[no-any-return]

    def slice_gradient_tensor(self, incoming_gradient: TensorLike, input_shape: Any, starts: Sequence[int], ends: Sequence[int], strides: Sequence[int], start_mask: int = 0, end_mask: int = 0, squeeze_mask: int = 0, name: Optional[str] = None) -> Tensor:
        """Zeros of ``input_shape`` with ``incoming_gradient`` where ``slice_tensor`` with the same
        arguments read (MPSGraph
        ``sliceGradientTensor(_:fwdInShapeTensor:starts:ends:strides:startMask:endMask:squeezeMask:name:)``;
        its ``fwdInShapeTensor`` is given here as the shape itself, a list of ints or a tensor's ``.shape``).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            input_shape: The shape of the forward op's input, which the result has.
            starts: See the op reference (docs/reference.md).
            ends: See the op reference (docs/reference.md).
            strides: See the op reference (docs/reference.md).
            start_mask: See the op reference (docs/reference.md).
            end_mask: See the op reference (docs/reference.md).
            squeeze_mask: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``sliceGradientTensor(_:fwdInShapeTensor:starts:ends:strides:startMask:endMask:squeezeMask:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('slice_gradient_tensor')(self, incoming_gradient, input_shape, starts, ends, strides, start_mask, end_mask, squeeze_mask, name)  # type: ignore[no-any-return]

    def slice_tensor(self, tensor: TensorLike, starts: Sequence[int], ends: Sequence[int], strides: Sequence[int], start_mask: int = 0, end_mask: int = 0, squeeze_mask: int = 0, name: Optional[str] = None) -> Tensor:
        """A strided slice: from ``starts`` up to (not including) ``ends`` by ``strides`` per axis
        (MPSGraph ``sliceTensor(_:starts:ends:strides:startMask:endMask:squeezeMask:name:)``,
        TensorFlow's StridedSlice semantics; bit ``i`` of a mask is axis ``i``).

        A start or end whose ``start_mask`` / ``end_mask`` bit is set is ignored (the whole axis in the
        stride's direction); ``squeeze_mask`` axes take one element and leave the result. Negative
        starts and ends count from the end, out-of-range ones are clamped, as NumPy's
        ``x[start:end:stride]``; a negative stride walks backwards.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            starts: See the op reference (docs/reference.md).
            ends: See the op reference (docs/reference.md).
            strides: See the op reference (docs/reference.md).
            start_mask: See the op reference (docs/reference.md).
            end_mask: See the op reference (docs/reference.md).
            squeeze_mask: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``sliceTensor(_:starts:ends:strides:startMask:endMask:squeezeMask:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('slice_tensor')(self, tensor, starts, ends, strides, start_mask, end_mask, squeeze_mask, name)  # type: ignore[no-any-return]

    def slice_update_data_tensor(self, data_tensor: TensorLike, update: TensorLike, starts: Sequence[int], ends: Sequence[int], strides: Sequence[int], start_mask: int = 0, end_mask: int = 0, squeeze_mask: int = 0, name: Optional[str] = None) -> Tensor:
        """``data_tensor`` with the strided slice that ``slice_tensor`` would read replaced by
        ``update`` (MPSGraph
        ``sliceUpdateDataTensor(_:update:starts:ends:strides:startMask:endMask:squeezeMask:name:)``).

        ``update`` has exactly the slice's shape (squeezed axes left out; no broadcasting) and
        ``data_tensor``'s dtype; the result has ``data_tensor``'s type. Same slicing rules as
        ``slice_tensor``.

        Args:
            data_tensor: A tensor of this graph (the op's ``data_tensor`` input).
            update: A tensor of this graph (the op's ``update`` input).
            starts: See the op reference (docs/reference.md).
            ends: See the op reference (docs/reference.md).
            strides: See the op reference (docs/reference.md).
            start_mask: See the op reference (docs/reference.md).
            end_mask: See the op reference (docs/reference.md).
            squeeze_mask: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``sliceUpdateDataTensor(_:update:starts:ends:strides:startMask:endMask:squeezeMask:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('slice_update_data_tensor')(self, data_tensor, update, starts, ends, strides, start_mask, end_mask, squeeze_mask, name)  # type: ignore[no-any-return]

    def softmax(self, tensor: TensorLike, axis: int = -1, name: Optional[str] = None) -> Tensor:
        """exp(x) / sum(exp(x)) along ``axis``, computed stably (MPSGraph ``softMax(with:axis:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``softMax(with:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('softmax')(self, tensor, axis, name)  # type: ignore[no-any-return]

    def softmax_cross_entropy(self, source: TensorLike, labels: TensorLike, axis: int = -1, reduction: str = 'mean', name: Optional[str] = None) -> Tensor:
        """Cross entropy of softmax(source) against ``labels`` (probabilities) along ``axis``.

        ``reduction``: ``"none"`` keeps every row (axis as size 1), ``"sum"`` and ``"mean"`` (over
        rows) give a tensor of ones-shape (MPSGraph
        ``softMaxCrossEntropy(_:labels:axis:reuctionType:name:)``; its Swift label really is spelled
        ``reuctionType``).

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            labels: A tensor of this graph (the op's ``labels`` input).
            axis: One axis; a negative value counts from the end.
            reduction: How per-row results are combined: ``"none"``, ``"sum"`` or ``"mean"``.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``softMaxCrossEntropy(_:labels:axis:reuctionType:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('softmax_cross_entropy')(self, source, labels, axis, reduction, name)  # type: ignore[no-any-return]

    def softmax_cross_entropy_gradient(self, incoming_gradient: TensorLike, source: TensorLike, labels: TensorLike, axis: int = -1, reduction: str = 'mean', name: Optional[str] = None) -> Tensor:
        """The gradient of ``softmax_cross_entropy`` toward ``source``:
        ``(softmax(source) * sum(labels, axis) - labels) * incoming_gradient``, the incoming gradient
        (the loss's shape, often ones) divided by the number of rows for ``"mean"`` (MPSGraph
        ``softMaxCrossEntropyGradient(_:source:labels:axis:reuctionType:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/softmaxcrossentropygradient(_:source:labels:axis:reuctiontype:name:)).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            labels: A tensor of this graph (the op's ``labels`` input).
            axis: One axis; a negative value counts from the end.
            reduction: How per-row results are combined: ``"none"``, ``"sum"`` or ``"mean"``.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``softMaxCrossEntropyGradient(_:source:labels:axis:reuctionType:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('softmax_cross_entropy_gradient')(self, incoming_gradient, source, labels, axis, reduction, name)  # type: ignore[no-any-return]

    def softmax_gradient(self, incoming_gradient: TensorLike, source: TensorLike, axis: int = -1, name: Optional[str] = None) -> Tensor:
        """The gradient of ``softmax`` toward its input ``source`` (Apple: "the input tensor"):
        ``y * (dy - sum(dy * y, axis))`` with ``y = softmax(source, axis)`` (MPSGraph
        ``softMaxGradient(withIncomingGradient:sourceTensor:axis:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/softmaxgradient(withincominggradient:sourcetensor:axis:name:)).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``softMaxGradient(withIncomingGradient:sourceTensor:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('softmax_gradient')(self, incoming_gradient, source, axis, name)  # type: ignore[no-any-return]

    def sort(self, tensor: TensorLike, axis: int, descending: bool = False, name: Optional[str] = None) -> Tensor:
        """The elements sorted along ``axis``: ascending with NaN last, or descending with NaN first;
        stable (MPSGraph ``sort(_:axis:descending:name:)``).

        MPSGraph has no sort gradient op; the gradient rule sends each output's gradient back to
        the element that landed there: ``dx = gather_along_axis(dy, rank)``, where ``rank``, the
        inverse of the ``arg_sort`` permutation, is the ``arg_sort`` of those indices.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            descending: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``sort(_:axis:descending:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('sort')(self, tensor, axis, descending, name)  # type: ignore[no-any-return]

    def space_to_batch(self, tensor: TensorLike, spatial_axes: Sequence[int], batch_axis: int, block_dimensions: Sequence[int], use_pixel_shuffle_order: bool, name: Optional[str] = None) -> Tensor:
        """Move blocks of ``block_dimensions`` of the ``spatial_axes`` into ``batch_axis`` (MPSGraph
        ``spaceToBatch(_:spatialAxes:batchAxis:blockDimensions:usePixelShuffleOrder:name:)``).

        Each spatial axis shrinks by its block size (it must divide the axis), the batch axis grows by
        their product. With ``use_pixel_shuffle_order=False`` this is TensorFlow's
        ``space_to_batch_nd`` without padding (batch index ``block * N + n``), with True each batch
        element's blocks are contiguous (``n * B + block``; 1 to 3 spatial axes). The position in the
        block runs over ``spatial_axes`` in the order given, the last fastest. No padding: MPSGraph has
        none. The inverse of ``batch_to_space``.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            spatial_axes: See the op reference (docs/reference.md).
            batch_axis: See the op reference (docs/reference.md).
            block_dimensions: See the op reference (docs/reference.md).
            use_pixel_shuffle_order: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``spaceToBatch(_:spatialAxes:batchAxis:blockDimensions:usePixelShuffleOrder:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('space_to_batch')(self, tensor, spatial_axes, batch_axis, block_dimensions, use_pixel_shuffle_order, name)  # type: ignore[no-any-return]

    def space_to_depth_2d(self, tensor: TensorLike, width_axis: int, height_axis: int, depth_axis: int, block_size: int, use_pixel_shuffle_order: bool, name: Optional[str] = None) -> Tensor:
        """Move ``block_size`` x ``block_size`` blocks of the height and width axes into the depth axis
        (MPSGraph ``space(toDepth2DTensor:widthAxis:heightAxis:depthAxis:blockSize:usePixelShuffleOrder:name:)``).

        Height and width shrink by ``block_size``, depth grows by ``block_size**2``; the other axes
        stay. ``use_pixel_shuffle_order=True`` is PyTorch's ``pixel_unshuffle`` (depth index
        ``c * b*b + i*b + j``), False TensorFlow's ``space_to_depth`` (``(i*b + j) * C + c``), for
        block row ``i`` and column ``j``. The inverse of ``depth_to_space_2d``; the same as
        ``space_to_batch(tensor, [height_axis, width_axis], depth_axis, [b, b], ...)``.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            width_axis: See the op reference (docs/reference.md).
            height_axis: See the op reference (docs/reference.md).
            depth_axis: See the op reference (docs/reference.md).
            block_size: See the op reference (docs/reference.md).
            use_pixel_shuffle_order: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``space(toDepth2DTensor:widthAxis:heightAxis:depthAxis:blockSize:usePixelShuffleOrder:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('space_to_depth_2d')(self, tensor, width_axis, height_axis, depth_axis, block_size, use_pixel_shuffle_order, name)  # type: ignore[no-any-return]

    def sparse_tensor(self, sparse_storage_type: Any, tensors: Sequence[TensorLike], shape: Sequence[int], dtype: Any = None, name: Optional[str] = None) -> Tensor:
        """The dense ``shape`` matrix that the storage ``tensors = [values, index0, index1]`` describe
        (MPSGraph ``sparseTensor(sparseTensorWithType:tensors:shape:dataType:name:)``; storage types,
        duplicates and out-of-range indices: module docstring). ``sparse_storage_type`` may also be a
        ``CreateSparseOpDescriptor`` (MPSGraph's ``sparseTensorWithDescriptor:`` form), which gives the
        dtype.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/sparsetensor(sparsetensorwithtype:tensors:shape:datatype:name:)

        Args:
            sparse_storage_type: A ``SparseStorageType`` (its name or raw value), or a
                ``CreateSparseOpDescriptor`` (storage type and dtype).
            tensors: ``[values, index0, index1]``: the values ``[nnz]`` and the two index tensors.
            shape: The dense result's shape ``[rows, columns]`` (static).
            dtype: The result's data type (the values' dtype); taken from the descriptor when one is given.
            name: The op's name (MPSGraph's ``name:``).
        """
        return _builder('sparse_tensor')(self, sparse_storage_type, tensors, shape, dtype, name)  # type: ignore[no-any-return]

    def split(self, tensor: TensorLike, num_splits: Any, axis: int, name: Optional[str] = None) -> list[Tensor]:
        """Pieces along ``axis``, as a list of tensors (one op with several outputs). ``num_splits``
        an int: that many equal pieces (MPSGraph ``split(_:numSplits:axis:name:)``, which needs the
        size divisible by it); a list of ints: pieces of those sizes, which add up to the size
        (MPSGraph ``split(_:splitSizes:axis:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            num_splits: See the op reference (docs/reference.md).
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``split(_:numSplits:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('split')(self, tensor, num_splits, axis, name)  # type: ignore[no-any-return]

    def square(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise x * x (MPSGraph ``square(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``square(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('square')(self, tensor, name)  # type: ignore[no-any-return]

    def square_root(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise sqrt(x) (MPSGraph ``squareRoot(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``squareRoot(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('square_root')(self, tensor, name)  # type: ignore[no-any-return]

    def squeeze(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, *, axis: Any = None) -> Tensor:
        """Remove size-1 axes (MPSGraph ``squeeze(_:axes:name:)``).

        ``axes=None`` removes every size-1 axis; on a tensor with dynamic (-1) dims it removes the axes
        known to be 1 when the op is built, so a dynamic dim that turns out to be 1 is kept.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axes: Axes (ints; negative values count from the end).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``squeeze(_:axes:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('squeeze')(self, tensor, axes, name, axis=axis)  # type: ignore[no-any-return]

    def stack(self, tensors: Sequence[TensorLike], axis: int, name: Optional[str] = None) -> Tensor:
        """Join tensors along a new axis ``axis`` of the result (rank + 1; negative counts from its end);
        the tensors broadcast to one shape first (MPSGraph ``stack(_:axis:name:)``).

        Args:
            tensors: A list of tensors of this graph.
            axis: One axis; a negative value counts from the end.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``stack(_:axis:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('stack')(self, tensors, axis, name)  # type: ignore[no-any-return]

    def stencil(self, source: TensorLike, weights: TensorLike, descriptor: Optional[StencilOpDescriptor] = None, name: Optional[str] = None) -> Tensor:
        """The reduction ``descriptor.reduction_mode`` of ``source * weights`` over every position of
        the 4-D window ``weights`` slid over the source's last four dimensions (MPSGraph
        ``stencil(withSourceTensor:weightsTensor:descriptor:name:)``; padding, offsets and
        reductions: module docstring). SUM with ZERO boundaries is a 4-D cross-correlation.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/stencil(withsourcetensor:weightstensor:descriptor:name:)

        Args:
            source: A tensor of this graph (the op's ``source`` input).
            weights: A tensor of this graph (the op's ``weights`` input).
            descriptor: The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied when the op is built: later edits do not change this op.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``stencil(withSourceTensor:weightsTensor:descriptor:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('stencil')(self, source, weights, descriptor, name)  # type: ignore[no-any-return]

    def stochastic_gradient_descent(self, learning_rate: TensorLike, values: TensorLike, gradient: TensorLike, name: Optional[str] = None) -> Tensor:
        """One SGD step as a new tensor, ``values - learning_rate * gradient`` (MPSGraph
        ``stochasticGradientDescent(learningRate:values:gradient:name:)``; ``apply_stochastic_gradient_descent``
        writes it to a variable). ``learning_rate`` may be a number. Not differentiable.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/stochasticgradientdescent(learningrate:values:gradient:name:)

        Args:
            learning_rate: A tensor of this graph (the op's ``learning_rate`` input).
            values: A tensor of this graph (the op's ``values`` input).
            gradient: A tensor of this graph (the op's ``gradient`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``stochasticGradientDescent(learningRate:values:gradient:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('stochastic_gradient_descent')(self, learning_rate, values, gradient, name)  # type: ignore[no-any-return]

    def stop_gradient(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Identity in the forward pass that blocks gradients.

        MPSGraph has no public op for this, only a private ``stopGradient`` flag on operations; the
        forward pass is ``identity(with:name:)``, so that is the Swift name shown in the reference.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``identity(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('stop_gradient')(self, tensor, name)  # type: ignore[no-any-return]

    def subtraction(self, primary: TensorLike, secondary: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise a - b (MPSGraph ``subtraction(_:_:name:)``). Broadcasts as NumPy; operands need one dtype.

        Args:
            primary: A tensor of this graph (the op's ``primary`` input).
            secondary: A tensor of this graph (the op's ``secondary`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``subtraction(_:_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('subtraction')(self, primary, secondary, name)  # type: ignore[no-any-return]

    def tan(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise tan(x); webgpu: sin and cos's Payne-Hanek reduction, Cephes' tanf polynomial, -1/tan in odd quadrants: 2.5 ulp from float64 at most over every finite float32 (docs/arithmetic.md) (MPSGraph ``tan(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``tan(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('tan')(self, tensor, name)  # type: ignore[no-any-return]

    def tanh(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise tanh(x) (MPSGraph ``tanh(with:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``tanh(with:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('tanh')(self, tensor, name)  # type: ignore[no-any-return]

    def tile(self, tensor: TensorLike, multiplier: Sequence[int], name: Optional[str] = None) -> Tensor:
        """``multiplier[d]`` copies of the tensor one after another along each dimension d: ``[1 2]``
        tiled by ``[3]`` is ``[1 2 1 2 1 2]`` (MPSGraph ``tileTensor(_:withMultiplier:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            multiplier: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``tileTensor(_:withMultiplier:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('tile')(self, tensor, multiplier, name)  # type: ignore[no-any-return]

    def tile_gradient(self, incoming_gradient: TensorLike, source: TensorLike, multiplier: Sequence[int], name: Optional[str] = None) -> Tensor:
        """The gradient of ``tile`` toward its source: the sum of the incoming gradient over the copies
        (MPSGraph ``tileGradient(withIncomingGradientTensor:sourceTensor:withMultiplier:name:)``).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            multiplier: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``tileGradient(withIncomingGradientTensor:sourceTensor:withMultiplier:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('tile_gradient')(self, incoming_gradient, source, multiplier, name)  # type: ignore[no-any-return]

    def top_k(self, tensor: TensorLike, k: int, name: Optional[str] = None, *, axis: Optional[int] = None) -> tuple[Tensor, ...]:
        """The ``k`` largest values along the last axis, largest first, and their int32 indices:
        ``(values, indices)``. Ties go to the lower index; NaN counts as the largest value
        (MPSGraph ``topK(_:k:name:)``). With ``axis``, along that axis: the op ``top_k_axis``
        (MPSGraph ``topK(_:axis:k:name:)``, macOS 14).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            k: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.
            axis: One axis; a negative value counts from the end.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``topK(_:k:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('top_k')(self, tensor, k, name, axis=axis)  # type: ignore[no-any-return]

    def top_k_axis(self, tensor: TensorLike, axis: int, k: int, name: Optional[str] = None) -> tuple[Tensor, ...]:
        """The ``k`` largest values along ``axis``, largest first, and their int32 indices along it:
        ``(values, indices)``, in top_k's order (NaN largest, ties to the lower index) (MPSGraph
        ``topK(_:axis:k:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/topk(_:axis:k:name:)).
        ``g.top_k(tensor, k, axis=axis)`` builds the same op.

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            axis: One axis; a negative value counts from the end.
            k: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``topK(_:axis:k:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('top_k_axis')(self, tensor, axis, k, name)  # type: ignore[no-any-return]

    def top_k_axis_gradient(self, incoming_gradient: TensorLike, source: TensorLike, axis: int, k: int, name: Optional[str] = None) -> Tensor:
        """Gradient of top_k_axis's values: ``incoming_gradient`` at position j along ``axis`` goes to
        the j-th largest element of ``source`` along it, zero elsewhere (MPSGraph
        ``topKGradient(_:source:axis:k:name:)``,
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/topkgradient(_:source:axis:k:name:)).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            axis: One axis; a negative value counts from the end.
            k: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``topKGradient(_:source:axis:k:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('top_k_axis_gradient')(self, incoming_gradient, source, axis, k, name)  # type: ignore[no-any-return]

    def top_k_gradient(self, incoming_gradient: TensorLike, source: TensorLike, k: int, name: Optional[str] = None) -> Tensor:
        """Gradient of top_k's values: ``incoming_gradient[..., j]`` goes to the position of the j-th
        largest element of ``source`` (found again, with top_k's order), zero elsewhere
        (MPSGraph ``topKGradient(_:input:k:name:)``).

        Args:
            incoming_gradient: A tensor of this graph (the op's ``incoming_gradient`` input).
            source: A tensor of this graph (the op's ``source`` input).
            k: See the op reference (docs/reference.md).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``topKGradient(_:input:k:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('top_k_gradient')(self, incoming_gradient, source, k, name)  # type: ignore[no-any-return]

    def transpose(self, tensor: TensorLike, dimension: int, with_dimension: int, name: Optional[str] = None) -> Tensor:
        """Swap two axes (MPSGraph ``transposeTensor(_:dimension:withDimension:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            dimension: A dimension index (negative counts from the end).
            with_dimension: The dimension to swap with ``dimension``.
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``transposeTensor(_:dimension:withDimension:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('transpose')(self, tensor, dimension, with_dimension, name)  # type: ignore[no-any-return]

    def truncate(self, tensor: TensorLike, name: Optional[str] = None) -> Tensor:
        """Elementwise rounding toward zero (Apple: floor for positive inputs, ceil for negative ones): -2.7 -> -2, -0.5 -> -0 (integers unchanged) (MPSGraph ``truncate(_:name:)``).

        Args:
            tensor: A tensor of this graph (the op's ``tensor`` input).
            name: The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets ``_1``, ``_2``, ...; open name scopes prefix it.

        Returns:
            Tensor: the result, with its shape and dtype inferred when the op is built (MPSGraph ``truncate(_:name:)``).

        Raises:
            MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not fit; the message names the op.
        """
        return _builder('truncate')(self, tensor, name)  # type: ignore[no-any-return]

    def variable(self, value: Any, dtype: Any = None, name: Optional[str] = None) -> Tensor:
        """A variable whose value persists across runs (MPSGraph ``variable(with:shape:dataType:name:)``).

        Shape and dtype come from ``value``. Consumers read its current value; change it with
        ``assign`` or an optimizer op listed in ``target_operations``. ``value`` may be a tensor of
        this graph (MPSGraph ``variableFromTensor(_:name:)``): one computable when the variable is
        built, from constants through ops that are neither random nor control flow (no placeholders,
        variables or reads); its value, computed then on the numpy backend, is the initial value,
        and the variable keeps no link to it (no gradient flows back to the tensor).

        Args:
            value: A Python number, nested list or NumPy array (copied), or such a tensor.
            dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype; None keeps the value's.
            name: The op's name (MPSGraph's ``name:``).

        Returns:
            Tensor: the variable, of the value's shape and dtype.

        Raises:
            MiniGraphError: a DTypeError for a value of no dtype; a TargetError for a tensor whose
                value is not known when built (naming the placeholder, variable or op it depends on).
        """
        return _builder('variable')(self, value, dtype, name)  # type: ignore[no-any-return]

    def variance(self, tensor: TensorLike, axes: Any = None, name: Optional[str] = None, mean: Optional[Tensor] = None) -> Tensor:
        """Population variance ``mean((tensor - mean(tensor))^2)`` over ``axes`` (an int, a list, or None
        for all), keeping them as size 1 like ``g.mean`` (MPSGraph ``variance(of:axes:name:)``). An
        empty slice gives NaN. With ``mean`` (MPSGraph ``variance(of:mean:axes:name:)``) the given mean
        is used instead: ``mean((tensor - mean)^2)``, built as those elementwise and mean ops, so the
        gradient reaches ``mean`` too.

        Args:
            tensor: A float tensor of this graph.
            axes: Axes (ints; negative values count from the end), one int, or None for all.
            name: The op's name (MPSGraph's ``name:``).
            mean: A precomputed mean of ``tensor``'s dtype that broadcasts to ``tensor``'s shape
                (normally ``g.mean(tensor, axes)``); None computes it.

        Returns:
            Tensor: the variance, ``tensor``'s shape with ``axes`` of size 1.

        Raises:
            MiniGraphError: a DTypeError for a non-float tensor or a mean of another dtype, a ShapeError
                for a mean that does not broadcast to ``tensor``'s shape or a bad axis; the message
                names the op.
        """
        return _builder('variance')(self, tensor, axes, name, mean)  # type: ignore[no-any-return]

    def while_loop(self, initial_inputs: 'Sequence[TensorLike]', before: 'Callable[[list[Tensor], list[Tensor]], TensorLike]', after: 'Callable[[list[Tensor]], Sequence[TensorLike]]', name: Optional[str] = None) -> Tensor:
        """A while loop (MPSGraph ``while(initialInputs:before:after:name:)``): ``before(inputs,
        results)`` returns a rank-0 predicate and appends the values passed on to ``results``; while
        the predicate is true, ``after(results)`` returns the next inputs (the types of
        ``initial_inputs``); when it is false the loop returns ``results``.
        https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/while(initialinputs:before:after:name:)

        Args:
            initial_inputs: The first iteration's inputs (a list of tensors).
            before: ``(inputs, results) -> predicate``; appends tensors to ``results``.
            after: ``(results) -> next inputs``.
            name: The op's name; the blocks' ops are named ``<name>/before/...`` and ``<name>/after/...``.

        Returns:
            list[Tensor]: the before block's results of the last iteration.

        Raises:
            ShapeError: a predicate that is not rank 0; next inputs of other shapes than the initial ones.
            DTypeError: next inputs of other dtypes.
            TargetError: a block that returns nothing.
        """
        return _builder('while_loop')(self, initial_inputs, before, after, name)  # type: ignore[no-any-return]
