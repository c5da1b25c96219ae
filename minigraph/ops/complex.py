"""Complex numbers (MPSGraphArithmeticOps): complex_tensor, real_part_of_tensor,
imaginary_part_of_tensor, conjugate, absolute_square, planar_tensor.

complex64 is a pair of float32, complex32 a pair of float16 (MPSDataType's ComplexFloat32 and
ComplexFloat16). Gradients follow JAX's convention: the cotangent of a complex value ``z = a + ib``
is ``dL/da - i dL/db`` for a real loss L, so each linear op's rule is its transpose (no
conjugation), and a real input takes the real part of what reaches it.
"""
from __future__ import annotations

from typing import Optional

from ..errors import DTypeError
from ..types import ShapedType, complex_of
from ._util import broadcast_shapes, same_dtype, unbroadcast
from .registry import defop, gradient

_SINCE = ("14.0", "17.0")


def _label(type: str, name: Optional[str]) -> str:
    return f"{type} op {name or type!r}"


def _floating_or_complex(t: ShapedType, what: str) -> None:
    if not (t.dtype.is_floating or t.dtype.is_complex):
        raise DTypeError(f"{what} takes a complex (complex64, complex32) or floating-point tensor, got "
                         f"{t.dtype.name}; cast it first")


def _infer_complex_tensor(in_types, attrs):
    re, im = in_types
    same_dtype(in_types, "real_tensor and imaginary_tensor")
    if not re.dtype.is_floating:
        raise DTypeError(f"complex_tensor takes float32 or float16 parts, got {re.dtype.name}")
    return [ShapedType(broadcast_shapes(re.shape, im.shape), complex_of(re.dtype))]


@defop("complex_tensor", swift="complexTensor(realTensor:imaginaryTensor:name:)",
       objc="complexTensorWithRealTensor:imaginaryTensor:name:", inputs=("real_tensor", "imaginary_tensor"),
       infer=_infer_complex_tensor, family="complex", since=_SINCE)
def complex_tensor(g, real_tensor, imaginary_tensor, name: Optional[str] = None):
    """``real_tensor + i imaginary_tensor`` (MPSGraph ``complexTensor(realTensor:imaginaryTensor:name:)``):
    float32 parts give complex64, float16 parts complex32; the parts broadcast as NumPy."""
    label = _label("complex_tensor", name)
    re = g.as_tensor(real_tensor, label)
    im = g.as_tensor(imaginary_tensor, label, like=re)
    return g.add_op("complex_tensor", [re, im], {}, name).output


def _infer_part(type: str):
    def infer(in_types, attrs):
        t = in_types[0]
        _floating_or_complex(t, type)
        if type == "planar_tensor":
            if not t.dtype.is_complex:
                raise DTypeError(f"planar_tensor takes a complex tensor (complex64, complex32), got {t.dtype.name}")
            if not t.shape:
                raise DTypeError("planar_tensor needs a tensor with a last dimension, got a scalar")
            last = t.shape[-1]
            return [ShapedType(tuple(t.shape[:-1]) + (-1 if last == -1 else 2 * last,), t.dtype.real_dtype)]
        return [ShapedType(t.shape, t.dtype if type == "conjugate" else t.dtype.real_dtype)]
    return infer


def _unary(type: str, swift: str, objc: str, doc: str, since: tuple = _SINCE):
    def builder(g, tensor, name: Optional[str] = None):
        return g.add_op(type, [g.as_tensor(tensor, _label(type, name))], {}, name).output

    builder.__name__ = builder.__qualname__ = type
    builder.__doc__ = f"{doc} (MPSGraph ``{swift}``)."
    defop(type, swift=swift, objc=objc, inputs=("tensor",), infer=_infer_part(type), family="complex",
          since=since)(builder)
    return builder


real_part_of_tensor = _unary(
    "real_part_of_tensor", "realPartOfTensor(tensor:name:)", "realPartOfTensor:name:",
    "The real part of each element, a float32 (complex64) or float16 (complex32) tensor; a real "
    "tensor is returned as it is")
imaginary_part_of_tensor = _unary(
    "imaginary_part_of_tensor", "imaginaryPartOfTensor(tensor:name:)", "imaginaryPartOfTensor:name:",
    "The imaginary part of each element, a float32 (complex64) or float16 (complex32) tensor; zeros for "
    "a real tensor")
conjugate = _unary(
    "conjugate", "conjugate(tensor:name:)", "conjugateWithTensor:name:",
    "The complex conjugate ``a - ib`` of each element; a real tensor is returned as it is")
absolute_square = _unary(
    "absolute_square", "absoluteSquare(tensor:name:)", "absoluteSquareWithTensor:name:",
    "``|z|^2 = a^2 + b^2`` of each element, a real tensor of the parts' dtype; ``x^2`` for a real tensor")
planar_tensor = _unary(
    "planar_tensor", "planarTensor(tensor:name:)", "planarTensorWithComplexTensor:name:",
    "The real parts then the imaginary parts along the last axis, which doubles: ``<3 x complex32>`` "
    "becomes ``<6 x float16>`` ``[re0, re1, re2, im0, im1, im2]`` (Apple: the real and imaginary "
    "planes separated); a real tensor is refused", since=("26.3", "26.3"))


# ------------------------------------------------------------------ gradient rules (JAX's)
@gradient("complex_tensor")
def _complex_tensor_gradient(g, op, dy, wanted):
    re, im = op.inputs
    return [unbroadcast(g, g.real_part_of_tensor(dy), re.shape) if wanted[0] else None,
            unbroadcast(g, g.negative(g.imaginary_part_of_tensor(dy)), im.shape) if wanted[1] else None]


@gradient("real_part_of_tensor")
def _real_part_gradient(g, op, dy, wanted):
    if not op.inputs[0].dtype.is_complex:
        return [dy]
    return [g.complex_tensor(dy, g.multiplication(dy, g.constant(0, dtype=dy.dtype)))]


@gradient("imaginary_part_of_tensor")
def _imaginary_part_gradient(g, op, dy, wanted):
    if not op.inputs[0].dtype.is_complex:
        return [g.multiplication(dy, g.constant(0, dtype=dy.dtype))]
    return [g.complex_tensor(g.multiplication(dy, g.constant(0, dtype=dy.dtype)), g.negative(dy))]


@gradient("conjugate")
def _conjugate_gradient(g, op, dy, wanted):
    return [g.conjugate(dy)]


@gradient("absolute_square")
def _absolute_square_gradient(g, op, dy, wanted):
    """2 dy conj(z), built from real ops on the parts."""
    z = op.inputs[0]
    two_dy = g.multiplication(dy, g.constant(2, dtype=dy.dtype))
    if not z.dtype.is_complex:
        return [g.multiplication(two_dy, z)]
    return [g.complex_tensor(g.multiplication(two_dy, g.real_part_of_tensor(z)),
                             g.negative(g.multiplication(two_dy, g.imaginary_part_of_tensor(z))))]


@gradient("planar_tensor")
def _planar_gradient(g, op, dy, wanted):
    n = op.inputs[0].shape[-1]
    axis = len(op.inputs[0].shape) - 1
    re, im = g.split(dy, [n, n], axis)
    return [g.complex_tensor(re, g.negative(im))]
