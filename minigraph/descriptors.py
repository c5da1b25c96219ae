"""MPSGraph's enums (PaddingStyle, TensorNamedDataLayout, PaddingMode, ScatterMode, ResizeMode,
PoolingReturnIndicesMode, ResizeNearestRoundingMode, RandomDistribution, RandomNormalSamplingMethod,
OptimizationLevel), its op descriptors and the compilation descriptor.

Descriptors are mutable, like MPSGraph's; ops copy them when built, so later changes do not
affect ops already in the graph. Defaults are those of MPSGraph's
``descriptorWithDataLayout:weightsLayout:`` (strides and dilations 1, zero padding, EXPLICIT),
not the zeroed fields of a bare ``new``.
"""
from __future__ import annotations

import copy as _copy
import enum
import math
import warnings
from dataclasses import dataclass, field, fields
from typing import Any, Optional, cast

import numpy as np

from .errors import DescriptorError
from .types import DataType, as_dtype


class PaddingStyle(enum.IntEnum):
    """MPSGraphPaddingStyle (raw values as in MPSGraphCore.h)."""

    EXPLICIT = 0
    TF_VALID = 1
    TF_SAME = 2
    EXPLICIT_OFFSET = 3
    ONNX_SAME_LOWER = 4


class TensorNamedDataLayout(enum.IntEnum):
    """MPSGraphTensorNamedDataLayout (raw values as in MPSGraphCore.h)."""

    NCHW = 0
    NHWC = 1
    OIHW = 2
    HWIO = 3
    CHW = 4
    HWC = 5
    HW = 6
    NCDHW = 7
    NDHWC = 8
    OIDHW = 9
    DHWIO = 10


class PaddingMode(enum.IntEnum):
    """MPSGraphPaddingMode, how ``pad_tensor`` fills the border (raw values as in MPSGraph).

    PERIODIC and ANTI_PERIODIC arrived in macOS 12.0 / iOS 15.0, the others with MPSGraph.
    """

    CONSTANT = 0
    REFLECT = 1
    SYMMETRIC = 2
    CLAMP_TO_EDGE = 3
    ZERO = 4
    PERIODIC = 5
    ANTI_PERIODIC = 6


class ScatterMode(enum.IntEnum):
    """MPSGraphScatterMode, how a scatter combines an update with the data (raw values as in MPSGraph)."""

    ADD = 0
    SUB = 1
    MUL = 2
    DIV = 3
    MIN = 4
    MAX = 5
    SET = 6


class ResizeMode(enum.IntEnum):
    """MPSGraphResizeMode (raw values as in MPSGraph)."""

    NEAREST = 0
    BILINEAR = 1


class PoolingReturnIndicesMode(enum.IntEnum):
    """MPSGraphPoolingReturnIndicesMode (macOS 12.2 / iOS 15.3): how max pooling's returned
    indices are flattened (raw values as in MPSGraphPoolingOps.h). GLOBAL_FLATTEN_kD: the position
    of the maximum in the source, flattened over the k innermost axes; LOCAL_FLATTEN_kD: its tap
    within the pooling window, flattened over the window's k innermost axes."""

    NONE = 0
    GLOBAL_FLATTEN_1D = 1
    GLOBAL_FLATTEN_2D = 2
    GLOBAL_FLATTEN_3D = 3
    GLOBAL_FLATTEN_4D = 4
    LOCAL_FLATTEN_1D = 5
    LOCAL_FLATTEN_2D = 6
    LOCAL_FLATTEN_3D = 7
    LOCAL_FLATTEN_4D = 8


class ResizeNearestRoundingMode(enum.IntEnum):
    """MPSGraphResizeNearestRoundingMode, how NEAREST resize and sample_grid round a source
    coordinate (raw values as in MPSGraph; ROUND_TO_EVEN and ROUND_TO_ODD arrived in macOS 13.2)."""

    ROUND_PREFER_CEIL = 0
    ROUND_PREFER_FLOOR = 1
    CEIL = 2
    FLOOR = 3
    ROUND_TO_EVEN = 4
    ROUND_TO_ODD = 5


class RandomDistribution(enum.IntEnum):
    """MPSGraphRandomDistribution (raw values as in MPSGraph)."""

    UNIFORM = 0
    NORMAL = 1
    TRUNCATED_NORMAL = 2


class RandomNormalSamplingMethod(enum.IntEnum):
    """MPSGraphRandomNormalSamplingMethod: how normal samples are made from uniform bits."""

    INV_CDF = 0
    BOX_MULLER = 1


def _enum(cls, value: Any, field_name: str):
    if isinstance(value, cls):
        return value
    if isinstance(value, str) and value.upper() in cls.__members__:
        return cls[value.upper()]
    try:
        return cls(value)
    except (ValueError, TypeError):
        raise DescriptorError(f"{field_name}={value!r} is not a {cls.__name__}; valid: "
                              f"{', '.join(cls.__members__)}") from None


def _count(value: Any, field_name: str, minimum: int) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise DescriptorError(f"{field_name} must be an int, got {value!r}")
    v = int(value)
    if v < minimum:
        why = "must be >= 1" if minimum == 1 else "must be >= 0 (padding is unsigned in MPSGraph)"
        raise DescriptorError(f"{field_name}={v} {why}")
    return v


class _Descriptor:
    padding_style: Any
    """Shared behaviour: copy, equality, non-default fields, and validation."""

    _STRIDES: tuple = ()
    _PADDINGS: tuple = ()

    def copy(self):
        """An independent copy (MPSGraph descriptors are ``NSCopying``; ops keep a copy too)."""
        return _copy.deepcopy(self)

    def non_defaults(self) -> dict:
        """Fields that differ from the defaults (for listings and exports; not in MPSGraph)."""
        default = type(self).__new__(type(self))
        type(self).__init__(default, **self._required())
        return {f.name: getattr(self, f.name) for f in fields(cast(Any, self))
                if getattr(self, f.name) != getattr(default, f.name)}

    def _required(self) -> dict:
        return {}

    def as_dict(self) -> dict:
        """Every field by name, enums as their names (for saving and listings; not in MPSGraph)."""
        out = {}
        for f in fields(cast(Any, self)):
            v = getattr(self, f.name)
            out[f.name] = v.name if isinstance(v, enum.Enum) else (list(v) if isinstance(v, tuple) else v)
        return out

    def validate(self) -> None:
        """Raise ``DescriptorError`` naming the field when a value is out of range (in MPSGraph a
        bad field surfaces as a verifier failure, often fatal)."""
        for f in self._STRIDES:
            _count(getattr(self, f), f, 1)
        for f in self._PADDINGS:
            _count(getattr(self, f), f, 0)
        self.padding_style = _enum(PaddingStyle, self.padding_style, "padding_style")


@dataclass
class DepthwiseConvolution2DOpDescriptor(_Descriptor):
    """MPSGraphDepthwiseConvolution2DOpDescriptor: strides, dilations, padding, layouts.

    Weights are OIHW ``[M, C, kH, kW]`` or HWIO ``[kH, kW, C, M]`` where M is the channel
    multiplier ("'O' index is channel multiplier index"); output channel ``o = c*M + m``.
    """

    stride_in_x: int = 1
    stride_in_y: int = 1
    dilation_rate_in_x: int = 1
    dilation_rate_in_y: int = 1
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0
    padding_style: PaddingStyle = PaddingStyle.EXPLICIT
    data_layout: TensorNamedDataLayout = TensorNamedDataLayout.NCHW
    weights_layout: TensorNamedDataLayout = TensorNamedDataLayout.OIHW

    _STRIDES = ("stride_in_x", "stride_in_y", "dilation_rate_in_x", "dilation_rate_in_y")
    _PADDINGS = ("padding_left", "padding_right", "padding_top", "padding_bottom")
    _DATA_LAYOUTS = (TensorNamedDataLayout.NCHW, TensorNamedDataLayout.NHWC)
    _WEIGHTS_LAYOUTS = (TensorNamedDataLayout.OIHW, TensorNamedDataLayout.HWIO)

    def set_explicit_padding(self, left: int, right: int, top: int, bottom: int) -> None:
        """Set the four paddings and force ``padding_style = EXPLICIT`` (as MPSGraph does).

        Args:
            left: Zeros before the input along W (>= 0).
            right: Zeros after the input along W (>= 0).
            top: Zeros before the input along H (>= 0).
            bottom: Zeros after the input along H (>= 0).
        """
        self.padding_left, self.padding_right, self.padding_top, self.padding_bottom = left, right, top, bottom
        self.padding_style = PaddingStyle.EXPLICIT

    def set_explicit_padding_with_padding_left(self, left: int, right: int, top: int, bottom: int) -> None:
        """Deprecated: use ``set_explicit_padding`` (MPSGraph's ``setExplicitPaddingWithPaddingLeft:...``).

        Args:
            left: Zeros before the input along W (>= 0).
            right: Zeros after the input along W (>= 0).
            top: Zeros before the input along H (>= 0).
            bottom: Zeros after the input along H (>= 0).
        """
        warnings.warn("set_explicit_padding_with_padding_left is deprecated; use set_explicit_padding",
                      DeprecationWarning, stacklevel=2)
        self.set_explicit_padding(left, right, top, bottom)

    def validate(self) -> None:
        super().validate()
        self.data_layout = _enum(TensorNamedDataLayout, self.data_layout, "data_layout")
        self.weights_layout = _enum(TensorNamedDataLayout, self.weights_layout, "weights_layout")
        if self.data_layout not in self._DATA_LAYOUTS:
            raise DescriptorError(f"data_layout {self.data_layout.name} is not supported; use NCHW or NHWC")
        if self.weights_layout not in self._WEIGHTS_LAYOUTS:
            raise DescriptorError(f"weights_layout {self.weights_layout.name} is not supported; use OIHW or HWIO")
        if self.padding_style == PaddingStyle.EXPLICIT_OFFSET:
            raise DescriptorError(
                "padding_style EXPLICIT_OFFSET is not valid for convolutions: MPSGraph defines explicit "
                "offsets only for the stencil op, and its depthwise lowering (to the 3D op) rejects it; "
                "use EXPLICIT, TF_VALID, TF_SAME or ONNX_SAME_LOWER")


@dataclass
class Convolution2DOpDescriptor(DepthwiseConvolution2DOpDescriptor):
    """MPSGraphConvolution2DOpDescriptor: the depthwise fields plus ``groups``.

    Weights are OIHW ``[Cout, Cin/groups, kH, kW]`` or HWIO ``[kH, kW, Cin/groups, Cout]``.
    """

    groups: int = 1

    def validate(self) -> None:
        super().validate()
        self.groups = _count(self.groups, "groups", 1)


@dataclass
class DepthwiseConvolution3DOpDescriptor(_Descriptor):
    """MPSGraphDepthwiseConvolution3DOpDescriptor.

    ``strides``/``dilation_rates``: 3 numbers (D, H, W); ``padding_values``: 6 numbers, (before,
    after) per spatial dim, slowest first; ``channel_dimension_index``: the channel axis within
    the last 4 axes of source and weights (-4: NCDHW-like, -1: NDHWC-like).
    """

    strides: tuple = (1, 1, 1)
    dilation_rates: tuple = (1, 1, 1)
    padding_values: tuple = (0, 0, 0, 0, 0, 0)
    padding_style: PaddingStyle = PaddingStyle.EXPLICIT
    channel_dimension_index: int = -4

    def validate(self) -> None:
        super().validate()
        for fname, n, minimum in (("strides", 3, 1), ("dilation_rates", 3, 1), ("padding_values", 6, 0)):
            v = getattr(self, fname)
            try:
                v = tuple(v)
            except TypeError:
                raise DescriptorError(f"{fname} must be a sequence of {n} ints, got {v!r}") from None
            if len(v) != n:
                raise DescriptorError(f"{fname} must have {n} values, got {len(v)}: {list(v)}")
            setattr(self, fname, tuple(_count(x, f"{fname}[{i}]", minimum) for i, x in enumerate(v)))
        if self.padding_style == PaddingStyle.EXPLICIT_OFFSET:
            raise DescriptorError("padding_style EXPLICIT_OFFSET is rejected by MPSGraph's depthwise 3D "
                                  "descriptor; use EXPLICIT, ONNX_SAME_LOWER, TF_SAME or TF_VALID")
        c = self.channel_dimension_index
        if isinstance(c, bool) or not hasattr(c, "__index__") or not -4 <= int(c) <= -1:
            raise DescriptorError(f"channel_dimension_index={c!r} must be one of -4, -3, -2, -1 "
                                  "(a position within the last 4 axes)")
        self.channel_dimension_index = int(c)


@dataclass
class Convolution3DOpDescriptor(_Descriptor):
    """MPSGraphConvolution3DOpDescriptor: strides, dilations and padding per axis, layouts, groups.

    x, y and z are the W, H and D axes: ``padding_left``/``padding_right`` pad W,
    ``padding_top``/``padding_bottom`` pad H and ``padding_front``/``padding_back`` pad D. Data is
    NCDHW or NDHWC (rank 5); weights are OIDHW ``[Cout, Cin/groups, kD, kH, kW]`` or DHWIO
    ``[kD, kH, kW, Cin/groups, Cout]``.
    """

    stride_in_x: int = 1
    stride_in_y: int = 1
    stride_in_z: int = 1
    dilation_rate_in_x: int = 1
    dilation_rate_in_y: int = 1
    dilation_rate_in_z: int = 1
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0
    padding_front: int = 0
    padding_back: int = 0
    padding_style: PaddingStyle = PaddingStyle.EXPLICIT
    data_layout: TensorNamedDataLayout = TensorNamedDataLayout.NCDHW
    weights_layout: TensorNamedDataLayout = TensorNamedDataLayout.OIDHW
    groups: int = 1

    _STRIDES = ("stride_in_x", "stride_in_y", "stride_in_z", "dilation_rate_in_x", "dilation_rate_in_y",
                "dilation_rate_in_z", "groups")
    _PADDINGS = ("padding_left", "padding_right", "padding_top", "padding_bottom", "padding_front", "padding_back")

    def set_explicit_padding(self, left: int, right: int, top: int, bottom: int, front: int, back: int) -> None:
        """Set the six paddings and force ``padding_style = EXPLICIT`` (as the 2-D descriptor does).

        Args:
            left: Zeros before the input along W (>= 0).
            right: Zeros after the input along W (>= 0).
            top: Zeros before the input along H (>= 0).
            bottom: Zeros after the input along H (>= 0).
            front: Zeros before the input along D (>= 0).
            back: Zeros after the input along D (>= 0).
        """
        self.padding_left, self.padding_right, self.padding_top, self.padding_bottom = left, right, top, bottom
        self.padding_front, self.padding_back = front, back
        self.padding_style = PaddingStyle.EXPLICIT

    def validate(self) -> None:
        super().validate()
        self.data_layout = _enum(TensorNamedDataLayout, self.data_layout, "data_layout")
        self.weights_layout = _enum(TensorNamedDataLayout, self.weights_layout, "weights_layout")
        if self.data_layout not in (TensorNamedDataLayout.NCDHW, TensorNamedDataLayout.NDHWC):
            raise DescriptorError(f"data_layout {self.data_layout.name} is not supported by a 3-D convolution; "
                                  "use NCDHW or NDHWC")
        if self.weights_layout not in (TensorNamedDataLayout.OIDHW, TensorNamedDataLayout.DHWIO):
            raise DescriptorError(f"weights_layout {self.weights_layout.name} is not supported by a 3-D "
                                  "convolution; use OIDHW or DHWIO")
        if self.padding_style == PaddingStyle.EXPLICIT_OFFSET:
            raise DescriptorError("padding_style EXPLICIT_OFFSET is not valid for convolutions; use EXPLICIT, "
                                  "TF_VALID, TF_SAME or ONNX_SAME_LOWER")


# the fields of a 2-D window (pooling, im_to_col) that must be >= 1 and >= 0
_WINDOW_STRIDES = ("kernel_width", "kernel_height", "stride_in_x", "stride_in_y",
                   "dilation_rate_in_x", "dilation_rate_in_y")
_WINDOW_PADDINGS = ("padding_left", "padding_right", "padding_top", "padding_bottom")


def _image_layout(d) -> None:
    """A 2-D window's ``data_layout``: NCHW or NHWC (normalised to the enum)."""
    d.data_layout = _enum(TensorNamedDataLayout, d.data_layout, "data_layout")
    if d.data_layout not in (TensorNamedDataLayout.NCHW, TensorNamedDataLayout.NHWC):
        raise DescriptorError(f"data_layout {d.data_layout.name} is not supported; use NCHW or NHWC")


@dataclass
class Pooling2DOpDescriptor(_Descriptor):
    """MPSGraphPooling2DOpDescriptor: window, strides, dilations, padding, style, layout.

    ``ceil_mode`` rounds the output size up; ``include_zero_pad_to_average`` makes average
    pooling divide by the full window, padding included (default: only the valid elements).
    """

    kernel_width: int = 1
    kernel_height: int = 1
    stride_in_x: int = 1
    stride_in_y: int = 1
    dilation_rate_in_x: int = 1
    dilation_rate_in_y: int = 1
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0
    padding_style: PaddingStyle = PaddingStyle.EXPLICIT
    data_layout: TensorNamedDataLayout = TensorNamedDataLayout.NCHW
    ceil_mode: bool = False
    include_zero_pad_to_average: bool = False
    return_indices_mode: PoolingReturnIndicesMode = PoolingReturnIndicesMode.NONE
    return_indices_data_type: Any = "int32"

    _STRIDES = _WINDOW_STRIDES
    _PADDINGS = _WINDOW_PADDINGS

    def _required(self) -> dict:
        return {"kernel_width": self.kernel_width, "kernel_height": self.kernel_height}

    def set_explicit_padding(self, left: int, right: int, top: int, bottom: int) -> None:
        """Set the four paddings and force ``padding_style = EXPLICIT`` (MPSGraph's
        ``setExplicitPaddingWithPaddingLeft:paddingRight:paddingTop:paddingBottom:``).

        Args:
            left: Zeros before the input along W (>= 0).
            right: Zeros after the input along W (>= 0).
            top: Zeros before the input along H (>= 0).
            bottom: Zeros after the input along H (>= 0).
        """
        self.padding_left, self.padding_right, self.padding_top, self.padding_bottom = left, right, top, bottom
        self.padding_style = PaddingStyle.EXPLICIT

    def validate(self) -> None:
        super().validate()
        _image_layout(self)
        _pooling_common(self)


def _pooling_common(d) -> None:
    """The padding style, flags and return-indices fields every pooling descriptor shares."""
    if d.padding_style == PaddingStyle.EXPLICIT_OFFSET:
        raise DescriptorError("padding_style EXPLICIT_OFFSET is not supported for pooling; use EXPLICIT, "
                              "TF_VALID, TF_SAME or ONNX_SAME_LOWER")
    d.ceil_mode, d.include_zero_pad_to_average = bool(d.ceil_mode), bool(d.include_zero_pad_to_average)
    d.return_indices_mode = _enum(PoolingReturnIndicesMode, d.return_indices_mode, "return_indices_mode")
    try:
        dt: DataType = as_dtype(d.return_indices_data_type)
    except Exception:
        dt = None  # type: ignore[assignment]
    if dt is None or dt.name != "int32":
        raise DescriptorError(f"return_indices_data_type={d.return_indices_data_type!r} is not supported; "
                              "MPSGraph supports int32 indices only")
    d.return_indices_data_type = dt


@dataclass
class Pooling4DOpDescriptor(_Descriptor):
    """MPSGraphPooling4DOpDescriptor (macOS 12.0 / iOS 15.0): a window over the four innermost
    axes of the source.

    ``kernel_sizes``, ``strides``, ``dilation_rates``: four numbers, one per pooled axis, fastest
    running (last) axis last; ``padding_values``: eight numbers, (before, after) per axis, slowest
    first (used with ``padding_style`` EXPLICIT). ``ceil_mode``, ``include_zero_pad_to_average``
    and the return-indices fields as in ``Pooling2DOpDescriptor``. Defaults: kernel 1, strides and
    dilations 1, no padding, EXPLICIT (Apple's
    ``descriptorWithKernelSizes:strides:dilationRates:paddingValues:paddingStyle:`` takes them all).
    """

    kernel_sizes: tuple = (1, 1, 1, 1)
    strides: tuple = (1, 1, 1, 1)
    dilation_rates: tuple = (1, 1, 1, 1)
    padding_values: tuple = (0, 0, 0, 0, 0, 0, 0, 0)
    padding_style: PaddingStyle = PaddingStyle.EXPLICIT
    ceil_mode: bool = False
    include_zero_pad_to_average: bool = False
    return_indices_mode: PoolingReturnIndicesMode = PoolingReturnIndicesMode.NONE
    return_indices_data_type: Any = "int32"

    def _required(self) -> dict:
        return {"kernel_sizes": self.kernel_sizes}

    def validate(self) -> None:
        super().validate()
        for fname, n, minimum in (("kernel_sizes", 4, 1), ("strides", 4, 1), ("dilation_rates", 4, 1),
                                  ("padding_values", 8, 0)):
            v = getattr(self, fname)
            try:
                v = tuple(v)
            except TypeError:
                raise DescriptorError(f"{fname} must be a sequence of {n} ints, got {v!r}") from None
            if len(v) != n:
                raise DescriptorError(f"{fname} must have {n} values, got {len(v)}: {list(v)}")
            setattr(self, fname, tuple(_count(x, f"{fname}[{i}]", minimum) for i, x in enumerate(v)))
        _pooling_common(self)


@dataclass
class ImToColOpDescriptor(_Descriptor):
    """MPSGraphImToColOpDescriptor (macOS 14.0 / iOS 17.0): the window, strides, dilations,
    explicit padding and layout of ``im_to_col`` / ``col_to_im``
    (https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraphimtocolopdescriptor).
    Apple's initialisers take every field; the defaults here are a 1 x 1 window, strides and
    dilations of 1, no padding, NCHW."""

    kernel_width: int = 1
    kernel_height: int = 1
    stride_in_x: int = 1
    stride_in_y: int = 1
    dilation_rate_in_x: int = 1
    dilation_rate_in_y: int = 1
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0
    data_layout: TensorNamedDataLayout = TensorNamedDataLayout.NCHW

    _STRIDES = _WINDOW_STRIDES
    _PADDINGS = _WINDOW_PADDINGS
    padding_style = PaddingStyle.EXPLICIT  # no field: the padding is always explicit

    def set_explicit_padding(self, left: int, right: int, top: int, bottom: int) -> None:
        """Set the four paddings (MPSGraph's
        ``setExplicitPaddingWithPaddingLeft:paddingRight:paddingTop:paddingBottom:``).

        Args:
            left: Zeros before the image along W (>= 0).
            right: Zeros after the image along W (>= 0).
            top: Zeros before the image along H (>= 0).
            bottom: Zeros after the image along H (>= 0).
        """
        self.padding_left, self.padding_right, self.padding_top, self.padding_bottom = left, right, top, bottom

    def validate(self) -> None:
        super().validate()
        _image_layout(self)


@dataclass
class RandomOpDescriptor(_Descriptor):
    """MPSGraphRandomOpDescriptor: the distribution, result type and its parameters.

    UNIFORM: floats in ``[min, max)``, or with an integer ``dtype`` (int32) integers in
    ``[min_integer, max_integer]``. NORMAL: ``mean``, ``standard_deviation``. TRUNCATED_NORMAL:
    the normal distribution restricted to ``[min, max)`` (absolute values of the result, as in
    MPSGraph). ``min``/``max`` left as None take MPSGraph's defaults for the distribution: 0 and 1
    for UNIFORM, -2 and 2 (two standard deviations of the default normal) otherwise.
    ``sampling_method`` (normal distributions): INV_CDF (MPSGraph's default) or BOX_MULLER (for
    TRUNCATED_NORMAL a rejection method, as in MPSGraph).
    """

    distribution: RandomDistribution = RandomDistribution.UNIFORM
    dtype: Any = "float32"
    min: Optional[float] = None
    max: Optional[float] = None
    mean: float = 0.0
    standard_deviation: float = 1.0
    min_integer: int = 0
    max_integer: int = 2 ** 31 - 1
    sampling_method: RandomNormalSamplingMethod = RandomNormalSamplingMethod.INV_CDF

    def __post_init__(self) -> None:
        uniform = self.distribution in (RandomDistribution.UNIFORM, 0, "UNIFORM", "uniform")
        if self.min is None:
            self.min = 0.0 if uniform else -2.0
        if self.max is None:
            self.max = 1.0 if uniform else 2.0

    def _required(self) -> dict:
        return {"distribution": self.distribution, "dtype": self.dtype}

    def non_defaults(self) -> dict:
        """The distribution and dtype, then the fields that differ from that distribution's defaults."""
        return {"distribution": self.distribution, "dtype": self.dtype, **super().non_defaults()}

    def validate(self) -> None:
        self.distribution = _enum(RandomDistribution, self.distribution, "distribution")
        self.sampling_method = _enum(RandomNormalSamplingMethod, self.sampling_method, "sampling_method")
        try:
            dt: DataType = as_dtype(self.dtype)
        except Exception:
            raise DescriptorError(f"dtype={self.dtype!r} is not a data type; use float32, float16 or "
                                  "(UNIFORM only) int32") from None
        floats = ("float32", "float16")
        allowed = floats + ("int32",) if self.distribution == RandomDistribution.UNIFORM else floats
        if dt.name not in allowed:
            raise DescriptorError(f"dtype {dt.name} is not valid for {self.distribution.name}; MPSGraph allows "
                                  f"{', '.join(allowed)}")
        self.dtype = dt
        for f in ("min", "max", "mean", "standard_deviation"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) and not hasattr(v, "__float__"):
                raise DescriptorError(f"{f} must be a number, got {v!r}")
            v = float(v)
            if not math.isfinite(v):
                raise DescriptorError(f"{f}={v} must be finite")
            setattr(self, f, v)
        for f in ("min_integer", "max_integer"):
            v = getattr(self, f)
            if isinstance(v, bool) or not hasattr(v, "__index__") or not -2 ** 31 <= int(v) < 2 ** 31:
                raise DescriptorError(f"{f}={v!r} must be an int in the int32 range")
            setattr(self, f, int(v))
        self._check_ranges(dt)

    def _check_ranges(self, dt: DataType) -> None:
        d = self.distribution
        lo, hi = float(cast(float, self.min)), float(cast(float, self.max))
        if d == RandomDistribution.UNIFORM and dt.name == "int32":
            if self.min_integer > self.max_integer:
                raise DescriptorError(f"min_integer={self.min_integer} > max_integer={self.max_integer}: "
                                      "integers are drawn from [min_integer, max_integer]")
        elif d != RandomDistribution.NORMAL and not lo < hi:
            raise DescriptorError(f"min={self.min} must be below max={self.max}: {d.name} draws from [min, max)")
        if d != RandomDistribution.UNIFORM and not self.standard_deviation > 0:
            raise DescriptorError(f"standard_deviation={self.standard_deviation} must be > 0")
        if d == RandomDistribution.TRUNCATED_NORMAL:
            if (hi - self.mean) / self.standard_deviation < -5.0 or (lo - self.mean) / self.standard_deviation > 5.0:
                raise DescriptorError(f"[min, max) = [{self.min}, {self.max}) lies more than 5 standard deviations "
                                      f"from mean={self.mean} (standard_deviation={self.standard_deviation}); "
                                      "float32 cannot sample that tail")


@dataclass
class SDPADescriptor:
    """MPSGraph's ``MPSGraphSDPADescriptor`` (macOS 27 / iOS 27) for
    ``scaledDotProductAttention(query:key:value:descriptor:name:)``: the scale, an optional additive
    ``mask_tensor`` or ``is_causal`` (mutually exclusive), and optional ``sinks_tensor`` of shape
    [heads]. Its tensors are read when the op is built (docs/attention.md)."""

    scale: float
    is_causal: bool = False
    mask_tensor: Any = None
    sinks_tensor: Any = None


class ReductionMode(enum.IntEnum):
    """MPSGraphReductionMode, how the stencil op combines a window (raw values as in MPSGraph)."""

    MIN = 0
    MAX = 1
    SUM = 2
    PRODUCT = 3
    ARGUMENT_MIN = 4
    ARGUMENT_MAX = 5


def _int_tuple(value: Any, field_name: str, length: int, minimum: Optional[int]) -> tuple:
    try:
        items = list(value)
    except TypeError:
        raise DescriptorError(f"{field_name} must be a list of {length} ints, got {value!r}") from None
    if len(items) != length or any(isinstance(v, bool) or not hasattr(v, "__index__") for v in items):
        raise DescriptorError(f"{field_name} must be a list of {length} ints, got {value!r}")
    out = tuple(int(v) for v in items)
    if minimum is not None and any(v < minimum for v in out):
        raise DescriptorError(f"{field_name}={list(out)} must hold values >= {minimum}")
    return out


@dataclass
class StencilOpDescriptor(_Descriptor):
    """MPSGraphStencilOpDescriptor (macOS 12.0 / iOS 15.0): how ``stencil`` slides its 4-D window
    over the source's last four dimensions
    (https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraphstencilopdescriptor).

    ``offsets`` (4; EXPLICIT_OFFSET only) is where the first window starts in the padded source;
    ``strides`` and ``dilation_rates`` (4 each, >= 1); ``explicit_padding`` (8: before and after
    each of the four dimensions; EXPLICIT and EXPLICIT_OFFSET); ``boundary_mode`` what the padding
    reads (a ``PaddingMode``, ZERO by default); ``padding_constant`` the CONSTANT mode's value.
    Defaults are Apple's: SUM, offsets 0, strides and dilations 1, no padding, ZERO, EXPLICIT.
    """

    reduction_mode: ReductionMode = ReductionMode.SUM
    offsets: Any = (0, 0, 0, 0)
    strides: Any = (1, 1, 1, 1)
    dilation_rates: Any = (1, 1, 1, 1)
    explicit_padding: Any = (0, 0, 0, 0, 0, 0, 0, 0)
    boundary_mode: PaddingMode = PaddingMode.ZERO
    padding_style: PaddingStyle = PaddingStyle.EXPLICIT
    padding_constant: float = 0.0

    def validate(self) -> None:
        self.reduction_mode = _enum(ReductionMode, self.reduction_mode, "reduction_mode")
        self.boundary_mode = _enum(PaddingMode, self.boundary_mode, "boundary_mode")
        self.padding_style = _enum(PaddingStyle, self.padding_style, "padding_style")
        self.offsets = _int_tuple(self.offsets, "offsets", 4, 0)
        self.strides = _int_tuple(self.strides, "strides", 4, 1)
        self.dilation_rates = _int_tuple(self.dilation_rates, "dilation_rates", 4, 1)
        self.explicit_padding = _int_tuple(self.explicit_padding, "explicit_padding", 8, 0)
        v = self.padding_constant
        if isinstance(v, bool) or not isinstance(v, (int, float)) and not hasattr(v, "__float__"):
            raise DescriptorError(f"padding_constant must be a number, got {v!r}")
        self.padding_constant = float(v)


class SparseStorageType(enum.IntEnum):
    """MPSGraphSparseStorageType (raw values as in MPSGraphSparseOps.h)."""

    COO = 0
    CSC = 1
    CSR = 2


@dataclass
class CreateSparseOpDescriptor(_Descriptor):
    """MPSGraphCreateSparseOpDescriptor (macOS 12.0 / iOS 15.0): the storage type and the data
    type of ``sparse_tensor``'s result
    (https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraphcreatesparseopdescriptor)."""

    sparse_storage_type: SparseStorageType = SparseStorageType.COO
    dtype: Any = "float32"
    padding_style = PaddingStyle.EXPLICIT  # no field

    def validate(self) -> None:
        self.sparse_storage_type = _enum(SparseStorageType, self.sparse_storage_type, "sparse_storage_type")
        try:
            self.dtype = as_dtype(self.dtype)
        except Exception:
            raise DescriptorError(f"dtype={self.dtype!r} is not a data type") from None


class NonMaximumSuppressionCoordinateMode(enum.IntEnum):
    """MPSGraphNonMaximumSuppressionCoordinateMode: the layout of a box's 4 values (raw values as
    in MPSGraphNonMaximumSuppressionOps.h): corners ``[y0, x0, y1, x1]`` / ``[x0, y0, x1, y1]``,
    or centers ``[yc, xc, h, w]`` / ``[xc, yc, w, h]``."""

    CORNERS_HEIGHT_FIRST = 0
    CORNERS_WIDTH_FIRST = 1
    CENTERS_HEIGHT_FIRST = 2
    CENTERS_WIDTH_FIRST = 3


def frozen_copy(desc: Any, cls: type, label: str):
    """The copy an op keeps: validated, so later edits of the user's descriptor change nothing."""
    if desc is None:
        desc = cls()
    if not isinstance(desc, cls):
        raise DescriptorError(f"{label}: descriptor must be a {cls.__name__}, got {type(desc).__name__}")
    d = cast(Any, desc).copy()
    try:
        d.validate()
    except DescriptorError as e:
        raise DescriptorError(f"{label}: {e}") from None
    return d



class FFTScalingMode(enum.IntEnum):
    """MPSGraphFFTScalingMode (raw values as in MPSGraph): ``NONE`` no scaling, ``SIZE`` times
    1 / N, ``UNITARY`` times 1 / sqrt(N), N the product of the sizes of the transformed axes
    (https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraphfftscalingmode)."""

    NONE = 0
    SIZE = 1
    UNITARY = 2

    def factor(self, n: int) -> float:
        """What a transform over ``n`` points is multiplied by (1 for an empty transform).

        Args:
            n: the product of the sizes of the transformed axes.
        """
        if self == FFTScalingMode.SIZE and n:
            return 1.0 / n
        if self == FFTScalingMode.UNITARY and n:
            return 1.0 / math.sqrt(n)
        return 1.0


@dataclass
class FFTDescriptor(_Descriptor):
    """MPSGraphFFTDescriptor (macOS 14.0 / iOS 17.0): the parameters of the three Fourier transforms
    (https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraphfftdescriptor).

    ``inverse``: the phase factor's sign, ``exp(+i 2 pi mu nu / n)`` when True, ``exp(-i ...)``
    when False (the default); it does not scale. ``scaling_mode``: an ``FFTScalingMode``,
    independent of the sign (default ``NONE``). ``round_to_odd_hermitean``: for
    ``hermitean_to_real_fft`` only, the last result axis is ``2 (n - 1) + 1`` instead of
    ``2 (n - 1)`` (default False); the other two transforms ignore it.
    """

    inverse: bool = False
    scaling_mode: FFTScalingMode = FFTScalingMode.NONE
    round_to_odd_hermitean: bool = False

    def validate(self) -> None:
        for f in ("inverse", "round_to_odd_hermitean"):
            v = getattr(self, f)
            if not isinstance(v, (bool, np.bool_)):
                raise DescriptorError(f"{f} must be True or False, got {v!r}")
            setattr(self, f, bool(v))
        self.scaling_mode = _enum(FFTScalingMode, self.scaling_mode, "scaling_mode")


class OptimizationLevel(enum.IntEnum):
    """MPSGraphOptimization (raw values as in MPSGraph): ``LEVEL0`` "performs core optimizations
    only", ``LEVEL1`` (the default) "additional optimizations"
    (https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraphoptimization).

    In minigraph ``LEVEL0`` runs dead-code elimination, elementwise fusion and buffer planning;
    ``LEVEL1`` adds common-subexpression elimination and constant folding (docs/compiler.md).
    """

    LEVEL0 = 0
    LEVEL1 = 1


@dataclass
class CompilationDescriptor:
    """MPSGraphCompilationDescriptor: how ``g.compile`` and ``g.run`` build the plan.

    ``optimization_level``: an ``OptimizationLevel`` (MPSGraph's ``optimizationLevel``, macOS 12.3 /
    iOS 15.4, "default is MPSGraphOptimizationLevel1":
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraphcompilationdescriptor/optimizationlevel).
    ``fusion``: whether chains of elementwise ops become one step on backends that can run them
    fused (``fusible_ops``). It has no MPSGraph counterpart, since MPSGraph always fuses;
    ``fusion=False`` gives one step per op, the plan to read when learning or diffing.
    ``callables``: ``{symbol name: Executable}``, what ``g.call`` ops run (MPSGraph's
    ``callables``, macOS 15 / iOS 18:
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraphcompilationdescriptor/callables),
    resolved when the plan is built.
    Mutable, like MPSGraph's; ``compile`` reads it once (``key()``), so later edits change nothing
    already compiled.
    """

    optimization_level: OptimizationLevel = OptimizationLevel.LEVEL1
    fusion: bool = True
    callables: dict = field(default_factory=dict)

    def validate(self) -> None:
        """Raise ``DescriptorError`` naming the field and its valid values."""
        level = self.optimization_level
        if isinstance(level, bool) or not isinstance(level, (OptimizationLevel, int, str)):
            raise DescriptorError(f"CompilationDescriptor.optimization_level={level!r} is not an "
                                  f"OptimizationLevel; valid: {', '.join(OptimizationLevel.__members__)}")
        try:
            self.optimization_level = _enum(OptimizationLevel, level, "CompilationDescriptor.optimization_level")
        except DescriptorError:
            raise DescriptorError(f"CompilationDescriptor.optimization_level={level!r} is not an OptimizationLevel; "
                                  f"valid: {', '.join(OptimizationLevel.__members__)}") from None
        if not isinstance(self.fusion, bool):
            raise DescriptorError(f"CompilationDescriptor.fusion={self.fusion!r} must be a bool (True or False)")
        if not isinstance(self.callables, dict):
            raise DescriptorError(f"CompilationDescriptor.callables must be a dict {{symbol name: Executable}}, "
                                  f"got {type(self.callables).__name__}")
        for k, v in self.callables.items():
            if not isinstance(k, str) or not (hasattr(v, "run") and hasattr(v, "feed_tensors")):
                raise DescriptorError(f"CompilationDescriptor.callables[{k!r}] must map a symbol name (str) to an "
                                      f"Executable (g.compile(...)), got {type(v).__name__}")

    def __post_init__(self) -> None:
        self.validate()

    def copy(self) -> "CompilationDescriptor":
        """An independent copy (MPSGraph's descriptor is ``NSCopying``)."""
        return CompilationDescriptor(self.optimization_level, self.fusion, dict(self.callables))

    def key(self) -> tuple:
        """``(optimization_level, fusion, callables)``, validated: what the plan depends on (a cache
        key; ``callables`` as sorted ``(name, executable)`` pairs, executables by identity)."""
        self.validate()
        return (int(self.optimization_level), self.fusion, tuple(sorted(self.callables.items(), key=lambda kv: kv[0])))


def compilation_key(desc: Any) -> tuple:
    """The validated key of ``desc`` (None: the default ``CompilationDescriptor()``)."""
    if desc is None:
        return (int(OptimizationLevel.LEVEL1), True, ())
    if not isinstance(desc, CompilationDescriptor):
        raise DescriptorError(f"compilation_descriptor must be a CompilationDescriptor, got "
                              f"{type(desc).__name__}; valid fields: optimization_level "
                              f"({', '.join(OptimizationLevel.__members__)}), fusion (bool)")
    return desc.key()


# ------------------------------------------------------------------------------- recurrent layers
class RNNActivation(enum.IntEnum):
    """MPSGraphRNNActivation (raw values as in MPSGraphRNNOps.h, macOS 12.3 / iOS 15.4).

    HARD_SIGMOID is ``clamp(0.2 x + 0.5, 0, 1)`` (MPS's hard sigmoid with its default a = 0.2,
    b = 0.5; the RNN header does not restate it): docs/recurrent.md.
    """

    NONE = 0
    RELU = 1
    TANH = 2
    SIGMOID = 3
    HARD_SIGMOID = 4


class _RNNDescriptor(_Descriptor):
    """Validation shared by the three recurrent descriptors: bools and RNNActivation fields."""

    _BOOLS: tuple = ()
    _ACTIVATIONS: tuple = ()

    def validate(self) -> None:
        name = type(self).__name__
        for f in self._BOOLS:
            v = getattr(self, f)
            if not isinstance(v, bool) and type(v).__name__ != "bool_":  # Python's or NumPy's bool
                raise DescriptorError(f"{name}.{f}={v!r} must be a bool (True or False)")
            setattr(self, f, bool(v))
        for f in self._ACTIVATIONS:
            v = getattr(self, f)
            if isinstance(v, bool):
                raise DescriptorError(f"{name}.{f}={v!r} is not an RNNActivation; valid: "
                                      f"{', '.join(RNNActivation.__members__)}")
            setattr(self, f, _enum(RNNActivation, v, f"{name}.{f}"))


@dataclass
class SingleGateRNNDescriptor(_RNNDescriptor):
    """MPSGraphSingleGateRNNDescriptor (macOS 12.3 / iOS 15.4): ``reverse`` (ignored when
    ``bidirectional``), ``bidirectional``, ``training`` (adds the training state ``z`` as a second
    output) and ``activation`` (default RELU), as Apple documents them:
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraphsinglegaternndescriptor
    """

    reverse: bool = False
    bidirectional: bool = False
    training: bool = False
    activation: RNNActivation = RNNActivation.RELU

    _BOOLS = ("reverse", "bidirectional", "training")
    _ACTIVATIONS = ("activation",)

    def __post_init__(self) -> None:
        self.validate()


@dataclass
class LSTMDescriptor(_RNNDescriptor):
    """MPSGraphLSTMDescriptor (macOS 12.3 / iOS 15.4): ``reverse``, ``bidirectional``,
    ``produce_cell`` (the cell sequence as a second output), ``training`` (the training state, the
    activated gates, as the last output; it brings the cell output too), ``forget_gate_last`` (gate
    order ``[i, z, f, o]`` instead of ``[i, f, z, o]``) and the activations of the input, forget,
    cell and output gates (sigmoid, sigmoid, tanh, sigmoid) and of the cell (``activation``, tanh):
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraphlstmdescriptor
    """

    reverse: bool = False
    bidirectional: bool = False
    produce_cell: bool = False
    training: bool = False
    forget_gate_last: bool = False
    input_gate_activation: RNNActivation = RNNActivation.SIGMOID
    forget_gate_activation: RNNActivation = RNNActivation.SIGMOID
    cell_gate_activation: RNNActivation = RNNActivation.TANH
    output_gate_activation: RNNActivation = RNNActivation.SIGMOID
    activation: RNNActivation = RNNActivation.TANH

    _BOOLS = ("reverse", "bidirectional", "produce_cell", "training", "forget_gate_last")
    _ACTIVATIONS = ("input_gate_activation", "forget_gate_activation", "cell_gate_activation",
                    "output_gate_activation", "activation")

    def __post_init__(self) -> None:
        self.validate()


@dataclass
class GRUDescriptor(_RNNDescriptor):
    """MPSGraphGRUDescriptor (macOS 13.0 / iOS 16.0): ``reverse``, ``bidirectional``, ``training``,
    ``reset_gate_first`` (gate order ``[r, z, o]`` instead of ``[z, r, o]``), ``reset_after``
    (``c = ((h m) R^T + b2) r`` instead of ``(h r m) R^T``), ``flip_z`` (``h = (1-z) h + z o``
    instead of ``z h + (1-z) o``) and the update, reset and output gate activations (sigmoid,
    sigmoid, tanh):
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraphgrudescriptor
    """

    reverse: bool = False
    bidirectional: bool = False
    training: bool = False
    reset_gate_first: bool = False
    reset_after: bool = False
    flip_z: bool = False
    update_gate_activation: RNNActivation = RNNActivation.SIGMOID
    reset_gate_activation: RNNActivation = RNNActivation.SIGMOID
    output_gate_activation: RNNActivation = RNNActivation.TANH

    _BOOLS = ("reverse", "bidirectional", "training", "reset_gate_first", "reset_after", "flip_z")
    _ACTIVATIONS = ("update_gate_activation", "reset_gate_activation", "output_gate_activation")

    def __post_init__(self) -> None:
        self.validate()
