"""Data types (mirroring MPSDataType), ShapedType, and shape helpers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import DTypeError, ShapeError, UnknownDTypeError


@dataclass(frozen=True, eq=False)
class DataType:
    """A minigraph data type, MPSGraph's ``MPSDataType``; ``mps_value`` is its raw value (0 for float64).

    Compares equal to its name and to its NumPy dtype (``mg.float32 == "float32" == np.float32``),
    as ``np.dtype`` does, and ``np.dtype(mg.float32)`` works, since a dtype may be given as any of them.
    """

    name: str
    np_dtype: np.dtype
    mps_value: int
    bytes: int = 0  # bytes per element where it differs from np_dtype's (complex32: NumPy has no such type)

    def __eq__(self, other):
        if isinstance(other, DataType):
            return self.name == other.name
        if isinstance(other, (str, np.dtype, type)):
            try:
                return as_dtype(other).name == self.name
            except DTypeError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype (so ``np.dtype(mg.float32)`` and ``np.zeros(3, mg.float32)`` work); MPSGraph has MPSDataType only."""
        return self.np_dtype

    @property
    def is_floating(self) -> bool:
        """True for float16, float32 (and the NumPy-only float64): MPSDataType's ``FloatBit`` types."""
        return self.np_dtype.kind == "f"

    @property
    def is_integer(self) -> bool:
        """True for the signed and unsigned integer types (MPSDataType's ``SignedBit`` types and the unsigned ones)."""
        return self.np_dtype.kind in "iu"

    @property
    def is_complex(self) -> bool:
        """True for complex64 and complex32 (MPSDataType's ``ComplexBit`` types: pairs of float32 / float16) and
        the NumPy-only complex128."""
        return self.np_dtype.kind == "c"

    @property
    def real_dtype(self) -> "DataType":
        """The dtype of one part: float32 for complex64, float16 for complex32; a real dtype itself."""
        return {"complex64": float32, "complex32": float16, "complex128": float64}.get(self.name, self)

    @property
    def is_bool(self) -> bool:
        """True for bool (MPSDataType.bool, one byte per element)."""
        return self.np_dtype.kind == "b"

    @property
    def itemsize(self) -> int:
        """Bytes per element (the low bits of the MPSDataType raw value, divided by 8; 1 for int4 and
        uint4, held one per byte)."""
        return self.bytes or self.np_dtype.itemsize

    def __repr__(self) -> str:
        return f"mg.{self.name}"


float32 = DataType("float32", np.dtype(np.float32), 0x10000020)
float16 = DataType("float16", np.dtype(np.float16), 0x10000010)
float64 = DataType("float64", np.dtype(np.float64), 0)  # NumPy-only extension (gradient checks)
int8 = DataType("int8", np.dtype(np.int8), 0x20000008)
int16 = DataType("int16", np.dtype(np.int16), 0x20000010)
int32 = DataType("int32", np.dtype(np.int32), 0x20000020)
int64 = DataType("int64", np.dtype(np.int64), 0x20000040)
uint8 = DataType("uint8", np.dtype(np.uint8), 0x00000008)
uint16 = DataType("uint16", np.dtype(np.uint16), 0x00000010)
uint32 = DataType("uint32", np.dtype(np.uint32), 0x00000020)
uint64 = DataType("uint64", np.dtype(np.uint64), 0x00000040)
bool_ = DataType("bool", np.dtype(np.bool_), 0x80000008)
# MPSDataTypeComplexFloat32 / ComplexFloat16 (FloatBit | ComplexBit | bits). NumPy has no pair of
# float16: complex32 values are held in complex64 arrays whose parts are rounded to float16.
complex64 = DataType("complex64", np.dtype(np.complex64), 0x11000040)
complex32 = DataType("complex32", np.dtype(np.complex64), 0x11000020, bytes=4)
complex128 = DataType("complex128", np.dtype(np.complex128), 0)  # NumPy-only extension, as float64 (gradient checks)
# MPSDataTypeInt4 / UInt4 (SignedBit | 4, and 4; macOS 15, iOS 18). NumPy has no 4-bit integers:
# their values are held one per byte in int8 / uint8 arrays, kept in -8..7 and 0..15.
int4 = DataType("int4", np.dtype(np.int8), 0x20000004)
uint4 = DataType("uint4", np.dtype(np.uint8), 0x00000004)

ALL_DTYPES = (float32, float16, float64, int8, int16, int32, int64,
              uint8, uint16, uint32, uint64, bool_, complex64, complex32, complex128, int4, uint4)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NP = {d.np_dtype: d for d in ALL_DTYPES if d not in (complex32, int4, uint4)}
FOUR_BIT = {"int4": (-8, 7), "uint4": (0, 15)}  # the range of each 4-bit type


def int_range(dtype: "DataType") -> tuple:
    """(lowest, highest) of an integer dtype: -8..7 for int4, 0..15 for uint4, NumPy's for the others."""
    if dtype.name in FOUR_BIT:
        return FOUR_BIT[dtype.name]
    info = np.iinfo(dtype.np_dtype)
    return int(info.min), int(info.max)


def check_four_bit(a: np.ndarray, dtype: "DataType", what: str) -> np.ndarray:
    """``a`` (an int8 / uint8 array) checked to hold only values of the 4-bit ``dtype``.

    Raises:
        DTypeError: a value outside -8..7 (int4) or 0..15 (uint4); the message names ``what``.
    """
    lo, hi = FOUR_BIT[dtype.name]
    bad = (a < lo) | (a > hi)
    if np.any(bad):
        raise DTypeError(f"{what}: {dtype.name} holds the whole numbers {lo} to {hi} (held in "
                         f"{dtype.np_dtype.name} arrays), got {a[bad].reshape(-1)[:4].tolist()}")
    return a


def wrap_four_bit(a: np.ndarray, dtype: "DataType") -> np.ndarray:
    """Integers reduced to the 4-bit ``dtype``'s low 4 bits (two's complement for int4), as a
    cast to int8 keeps the low 8 bits."""
    with np.errstate(invalid="ignore"):  # NaN and infinities give unspecified values, as for int8
        low = np.asarray(a).astype(np.int64) & 15
    return (np.where(low > 7, low - 16, low) if dtype.name == "int4" else low).astype(dtype.np_dtype)


def feed_dtype(want: "DataType", held: np.dtype) -> "DataType":
    """The dtype of a fed array: a 4-bit placeholder's own when it is fed its holding int8 / uint8 array."""
    if want.name in FOUR_BIT and held == want.np_dtype:
        return want
    return as_dtype(held)


def complex_of(dtype: "DataType") -> "DataType":
    """The complex dtype whose parts are ``dtype``: complex64 for float32, complex32 for float16."""
    return {"float32": complex64, "float16": complex32, "float64": complex128}.get(dtype.name, dtype)


def round_complex32(a: np.ndarray) -> np.ndarray:
    """A complex64 array's parts rounded to float16, as complex32 stores them."""
    a = np.asarray(a, np.complex64)
    with np.errstate(over="ignore"):
        out = np.empty(a.shape, np.complex64)
        out.real = a.real.astype(np.float16)
        out.imag = a.imag.astype(np.float16)
    return out


def as_dtype(value: Any) -> DataType:
    """Accept a DataType (MPSGraph's ``MPSDataType``), its name (``"float32"``), or anything ``np.dtype`` understands.

    Args:
        value: A DataType, a dtype name, a NumPy dtype or scalar type.

    Raises:
        UnknownDTypeError: not one of minigraph's data types (the message lists them).
    """
    if isinstance(value, DataType):
        return value
    if value is None:  # np.dtype(None) is float64: never pick the NumPy-only type silently
        raise DTypeError(f"dtype must be given, got None; valid dtypes: {', '.join(_BY_NAME)}")
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    try:
        npd = np.dtype(value)
    except Exception:
        npd = None
    if npd is not None and not npd.isnative:  # '>f4' is float32 in the other byte order
        npd = npd.newbyteorder("=")
    if npd is not None and npd in _BY_NP:
        return _BY_NP[npd]
    raise UnknownDTypeError(f"unknown dtype {value!r}; valid dtypes: {', '.join(_BY_NAME)}")


Shape = tuple


def as_shape(shape: Any, what: str = "shape") -> tuple[int, ...]:
    """Normalise a shape to a tuple of ints; -1 marks a dimension known only at run time."""
    if shape is None:
        raise ShapeError(f"{what} must be a sequence of ints, got None (unranked tensors are not supported)")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise ShapeError(f"{what} must be a sequence of ints, got {shape!r}") from None
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise ShapeError(f"{what} must contain ints, got {shape!r}")
        d = int(d)
        if d < -1:
            raise ShapeError(f"{what} has negative dimension {d} in {dims!r}; use -1 for a dynamic dimension")
        out.append(d)
    return tuple(out)


def is_static(shape: Sequence[int]) -> bool:
    return all(d >= 0 for d in shape)


def num_elements(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@dataclass(frozen=True)
class ShapedType:
    """A shape and a dtype: what a feed must look like (MPSGraphShapedType)."""

    shape: tuple
    dtype: DataType

    def __init__(self, shape: Sequence[int], dtype: Any = float32):
        object.__setattr__(self, "shape", as_shape(shape))
        object.__setattr__(self, "dtype", as_dtype(dtype))

    def __repr__(self) -> str:
        return f"ShapedType({list(self.shape)}, {self.dtype.name})"


TensorType = ShapedType
