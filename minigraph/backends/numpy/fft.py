"""NumPy kernels of the complex ops and the Fourier transforms (semantics: ``ops/complex.py``,
``ops/fft.py``). The transforms run numpy.fft (pocketfft) in complex128 / float64 and round once
to the result's dtype; complex32 results are complex64 arrays with float16-rounded parts (the
backend rounds every complex32 result, backend.py)."""
from __future__ import annotations


import numpy as np

from .registry import numpy_kernel


def _out(step):
    return step.out_types[0].dtype.np_dtype


@numpy_kernel("complex_tensor")
def _complex_tensor(step):
    dt = _out(step)

    def run(re, im):
        out = np.empty(np.broadcast_shapes(re.shape, im.shape), dt)
        out.real, out.imag = re, im
        return out
    return run


@numpy_kernel("real_part_of_tensor", "imaginary_part_of_tensor", "conjugate", "absolute_square", "planar_tensor")
def _parts(step):
    dt = _out(step)
    t = step.op.type
    if not step.in_types[0].dtype.is_complex:
        fns = {"real_part_of_tensor": lambda x: x.copy(), "imaginary_part_of_tensor": np.zeros_like,
               "conjugate": lambda x: x.copy(), "absolute_square": lambda x: np.square(x)}
        f = fns[t]
        return lambda x: np.asarray(f(x), dt)
    if t == "planar_tensor":
        return lambda z: np.concatenate([z.real, z.imag], axis=-1).astype(dt)
    if t == "absolute_square":  # in float64, rounded once
        return lambda z: np.asarray(np.square(z.real.astype(np.float64)) + np.square(z.imag.astype(np.float64)), dt)
    f = {"real_part_of_tensor": np.real, "imaginary_part_of_tensor": np.imag, "conjugate": np.conj}[t]
    return lambda z: np.array(f(z), dt)


def _c2c(x: np.ndarray, axes: tuple, inverse: bool) -> np.ndarray:
    """sum x[m] exp(s 2 pi i m k / n) over ``axes``, unscaled, in complex128."""
    x = x.astype(np.complex128)
    if any(x.shape[a] == 0 for a in axes):
        return x
    return np.fft.ifftn(x, axes=axes, norm="forward") if inverse else np.fft.fftn(x, axes=axes, norm="backward")


def transform(type: str, x: np.ndarray, axes: tuple, desc, out_shape) -> np.ndarray:
    """The transform in float64 / complex128 (shared with tests and the webgpu notes)."""
    last = axes[-1]
    sizes = [out_shape[a] if type == "hermitean_to_real_fft" else x.shape[a] for a in axes]
    c = desc.scaling_mode.factor(int(np.prod(sizes)))
    if type == "fast_fourier_transform":
        return _c2c(x, axes, desc.inverse) * c
    if type == "real_to_hermitean_fft":
        full = _c2c(x.astype(np.float64), axes, desc.inverse)
        return full[tuple(slice(0, x.shape[last] // 2 + 1) if a == last else slice(None)
                          for a in range(x.ndim))] * c
    # hermitean_to_real: c2c over the other axes, then the c2r sum over the last
    n = out_shape[last]
    z = x.astype(np.complex128)
    others = tuple(a for a in axes if a != last)
    if others:
        z = _c2c(z, others, desc.inverse)
    if n == 0 or z.shape[last] == 0:
        return np.zeros(out_shape, np.float64)
    if desc.inverse:
        y = np.fft.irfft(z, n=n, axis=last, norm="forward")
    else:  # sum with exp(-i ...): the conjugate's inverse transform
        y = np.fft.irfft(np.conj(z), n=n, axis=last, norm="forward")
    return y * c


@numpy_kernel("fast_fourier_transform", "real_to_hermitean_fft", "hermitean_to_real_fft")
def _fft(step):
    t, a = step.op.type, step.attrs
    dt = _out(step)
    out_shape = tuple(step.out_types[0].shape)
    return lambda x: np.asarray(transform(t, x, a["axes"], a["descriptor"], out_shape), dt)
