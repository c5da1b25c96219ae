"""Fourier transforms (MPSGraphFourierTransformOps): fast_fourier_transform (complex to complex),
real_to_hermitean_fft (real to the non-redundant half), hermitean_to_real_fft (that half back to
real), each over up to four of the last four axes, with an ``FFTDescriptor``.

For the transformed axes of sizes ``n_j`` (N their product), with sign ``s = +1`` when
``descriptor.inverse`` and -1 otherwise, and the scale ``c`` of ``descriptor.scaling_mode``
(1, 1 / N or 1 / sqrt(N)):

    y[k] = c * sum_m x[m] * exp(s * 2 pi i * sum_j m_j k_j / n_j)

real_to_hermitean_fft keeps ``n // 2 + 1`` entries of the last transformed axis (the others
are their conjugates); hermitean_to_real_fft reads such a half of a last axis of ``h`` entries
and gives ``2 (h - 1)`` real values, or ``2 (h - 1) + 1`` with ``round_to_odd_hermitean``,
ignoring the imaginary part of the first entry (and of the last, for an even length), as
numpy.fft.irfftn does. Gradients are Fourier transforms again (JAX's rules, docs/complex-fft.md).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..descriptors import FFTDescriptor, frozen_copy
from ..errors import DTypeError, ShapeError
from ..types import ShapedType, complex_of
from ._util import normalize_axes
from .registry import defop, gradient

_SINCE = ("14.0", "17.0")


def _check_axes(axes: tuple, rank: int, label: str) -> None:
    if not axes:
        raise ShapeError(f"{label}: needs at least one axis to transform")
    if any(a < rank - 4 for a in axes):
        raise ShapeError(f"{label}: axes {list(axes)} must lie within the last four dimensions of a tensor of "
                         f"rank {rank} (Apple's limit): valid {max(rank - 4, 0)}..{rank - 1}")


def output_length(type: str, n: int, odd: bool) -> int:
    """The length of the last transformed axis of the result, for an input length ``n``."""
    if type == "real_to_hermitean_fft":
        return n // 2 + 1
    if type == "hermitean_to_real_fft":
        return 2 * (n - 1) + (1 if odd else 0)
    return n


def _infer(type: str):
    def infer(in_types, attrs):
        t = in_types[0]
        axes, d = attrs["axes"], attrs["descriptor"]
        dt = t.dtype
        if type == "real_to_hermitean_fft":
            if not dt.is_floating:
                raise DTypeError(f"real_to_hermitean_fft takes a float32 or float16 tensor, got {dt.name}")
            out_dt = complex_of(dt)
        elif type == "hermitean_to_real_fft":
            if not dt.is_complex:
                raise DTypeError(f"hermitean_to_real_fft takes a complex tensor (complex64, complex32), got "
                                 f"{dt.name}")
            out_dt = dt.real_dtype
        else:
            if not (dt.is_complex or dt.is_floating):
                raise DTypeError(f"fast_fourier_transform takes a complex (complex64, complex32) or float32/float16 "
                                 f"tensor, got {dt.name}")
            out_dt = complex_of(dt)
        shape = list(t.shape)
        last = axes[-1]
        n = shape[last]
        if n != -1:
            if type != "fast_fourier_transform" and n < 1:
                raise ShapeError(f"{type} needs at least one entry along axis {last}, got shape "
                                 f"{tuple(t.shape)}")
            shape[last] = output_length(type, n, d.round_to_odd_hermitean)
            if shape[last] < 1 and type == "hermitean_to_real_fft":
                raise ShapeError(f"hermitean_to_real_fft of {n} entry along axis {last} gives {shape[last]} values; "
                                 "set round_to_odd_hermitean=True for a length-1 result")
        return [ShapedType(tuple(shape), out_dt)]
    return infer


def _build(g, op_type: str, tensor, axes, descriptor, name):
    label = f"{op_type} op {name or op_type!r}"
    tensor = g.as_tensor(tensor, label)
    rank = len(tensor.shape)
    if rank == 0:
        raise ShapeError(f"{label}: needs a tensor with axes, got a scalar")
    try:
        ax = normalize_axes(axes, rank, "axes", allow_empty=False)
    except ShapeError as e:
        raise type(e)(f"{label}: {e}") from None
    _check_axes(ax, rank, label)
    desc = frozen_copy(descriptor, FFTDescriptor, label)
    return g.add_op(op_type, [tensor], {"axes": ax, "descriptor": desc}, name).output


@defop("fast_fourier_transform", swift="fastFourierTransform(_:axes:descriptor:name:)",
       objc="fastFourierTransformWithTensor:axes:descriptor:name:", inputs=("tensor",),
       infer=_infer("fast_fourier_transform"), family="fft", attrs=("axes", "descriptor"), since=_SINCE)
def fast_fourier_transform(g, tensor, axes: Sequence[int], descriptor: Optional[FFTDescriptor] = None,
                           name: Optional[str] = None):
    """The discrete Fourier transform over ``axes`` (MPSGraph ``fastFourierTransform(_:axes:descriptor:name:)``,
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/fastfouriertransform(_:axes:descriptor:name:)).

    Complex to complex, the same shape: ``numpy.fft.fftn`` with the default descriptor, ``ifftn``
    with ``inverse=True, scaling_mode=FFTScalingMode.SIZE``. A float32 / float16 input is read as
    complex with zero imaginary parts. The axes must lie within the last four; None is a new
    default descriptor.
    """
    return _build(g, "fast_fourier_transform", tensor, axes, descriptor, name)


@defop("real_to_hermitean_fft", swift="realToHermiteanFFT(_:axes:descriptor:name:)",
       objc="realToHermiteanFFTWithTensor:axes:descriptor:name:", inputs=("tensor",),
       infer=_infer("real_to_hermitean_fft"), family="fft", attrs=("axes", "descriptor"), since=_SINCE)
def real_to_hermitean_fft(g, tensor, axes: Sequence[int], descriptor: Optional[FFTDescriptor] = None,
                          name: Optional[str] = None):
    """The Fourier transform of a real tensor, only its non-redundant half (MPSGraph
    ``realToHermiteanFFT(_:axes:descriptor:name:)``): the last of ``axes`` (sorted) becomes
    ``n // 2 + 1`` long, as ``numpy.fft.rfftn``; float32 gives complex64, float16 complex32.
    """
    return _build(g, "real_to_hermitean_fft", tensor, axes, descriptor, name)


@defop("hermitean_to_real_fft", swift="HermiteanToRealFFT(_:axes:descriptor:name:)",
       objc="HermiteanToRealFFTWithTensor:axes:descriptor:name:", inputs=("tensor",),
       infer=_infer("hermitean_to_real_fft"), family="fft", attrs=("axes", "descriptor"), since=_SINCE)
def hermitean_to_real_fft(g, tensor, axes: Sequence[int], descriptor: Optional[FFTDescriptor] = None,
                          name: Optional[str] = None):
    """The real tensor whose Fourier transform has this non-redundant half (MPSGraph
    ``HermiteanToRealFFT(_:axes:descriptor:name:)``): the last of ``axes`` (sorted), of ``h``
    entries, becomes ``2 (h - 1)`` long, ``2 (h - 1) + 1`` with ``round_to_odd_hermitean``.
    ``numpy.fft.irfftn(x, s)`` with ``inverse=True, scaling_mode=FFTScalingMode.SIZE``.
    """
    return _build(g, "hermitean_to_real_fft", tensor, axes, descriptor, name)


# ------------------------------------------------------------------ gradient rules (JAX's)
def _fft_gradient(g, op, dy, wanted):
    """The DFT matrix is symmetric: the transpose of an FFT is the same FFT."""
    a = op.attrs
    dx = g.fast_fourier_transform(dy, a["axes"], a["descriptor"])
    return [dx if op.inputs[0].dtype.is_complex else g.real_part_of_tensor(dx)]


def _parts(g, z):
    return g.real_part_of_tensor(z), g.imaginary_part_of_tensor(z)


def _r2c_gradient(g, op, dy, wanted):
    """The transpose of 'FFT, then keep the first n // 2 + 1': zero-pad back to n, FFT, real part.
    The padding and weighting act on the real and imaginary parts (real ops only)."""
    a = op.attrs
    x = op.inputs[0]
    last = a["axes"][-1]
    n, h = x.shape[last], dy.shape[last]
    full = dy
    if n > h:
        before, after = [0] * len(x.shape), [0] * len(x.shape)
        after[last] = n - h
        re, im = _parts(g, dy)
        full = g.complex_tensor(g.pad_tensor(re, "zero", before, after), g.pad_tensor(im, "zero", before, after))
    return [g.real_part_of_tensor(g.fast_fourier_transform(full, a["axes"], a["descriptor"]))]


def _c2r_gradient(g, op, dy, wanted):
    """real_to_hermitean_fft of the cotangent (same sign and scale), the entries that stand for
    two (all but the first and, for an even length, the last) doubled."""
    a = op.attrs
    last = a["axes"][-1]
    n = dy.shape[last]
    h = op.inputs[0].shape[last]
    half = g.real_to_hermitean_fft(dy, a["axes"], a["descriptor"])
    w = np.full(h, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    shape = [1] * len(dy.shape)
    shape[last] = h
    weights = g.constant(w.reshape(shape).astype(dy.dtype.np_dtype))
    re, im = _parts(g, half)
    return [g.complex_tensor(g.multiplication(re, weights), g.multiplication(im, weights))]


gradient("fast_fourier_transform")(_fft_gradient)
gradient("real_to_hermitean_fft")(_r2c_gradient)
gradient("hermitean_to_real_fft")(_c2r_gradient)
