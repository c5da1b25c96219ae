"""NumPy kernels of the quantization ops (semantics: ops/quantization.py)."""
from __future__ import annotations

import numpy as np

from ...ops.quantization import lut_groups, qrange
from ...types import as_dtype
from .registry import numpy_kernel


def compute_type(dtype: np.dtype) -> type:
    """float64 stays float64; float16 and float32 are computed in float32."""
    return np.float64 if dtype == np.float64 else np.float32


def per_axis(p: np.ndarray, rank: int, axis: int) -> np.ndarray:
    """A scalar, one-element or 1-D parameter shaped to broadcast along ``axis`` of a rank-``rank`` tensor."""
    p = np.asarray(p)
    if p.size == 1 or rank == 0:
        return p.reshape(())
    return p.reshape((-1,) + (1,) * (rank - 1 - axis))


def quantize_values(x: np.ndarray, scale, zero_point, dtype_name: str) -> np.ndarray:
    """``saturate(rint(x / scale) + zero_point)``, NaN -> zero_point, in the result dtype."""
    ct = compute_type(x.dtype)
    lo, hi = qrange(dtype_name)
    with np.errstate(all="ignore"):
        r = np.rint(np.asarray(x, ct) / np.asarray(scale, ct))
        r = np.where(np.isnan(r), ct(0), r) + np.asarray(zero_point, ct)
        return np.clip(r, lo, hi).astype(as_dtype(dtype_name).np_dtype)  # int4 / uint4 held in int8 / uint8


def dequantize_values(q: np.ndarray, scale, zero_point, dtype: np.dtype) -> np.ndarray:
    """``scale * (q - zero_point)``: the scale rounded to ``dtype`` first, the product rounded once."""
    ct = compute_type(dtype)
    s: np.ndarray = np.asarray(scale).astype(dtype).astype(ct)
    with np.errstate(all="ignore"):
        return ((np.asarray(q, ct) - np.asarray(zero_point, ct)) * s).astype(dtype)


@numpy_kernel("quantize")
def _quantize(step):
    a = step.attrs
    return lambda x: quantize_values(x, a["scale"], a["zero_point"], a["dtype"].name)


@numpy_kernel("quantize_with_scale_tensor")
def _quantize_scale_tensor(step):
    a, rank = step.attrs, len(step.in_types[0].shape)
    return lambda x, s: quantize_values(x, per_axis(s, rank, a["axis"]), a["zero_point"], a["dtype"].name)


@numpy_kernel("quantize_with_tensors")
def _quantize_tensors(step):
    a, rank = step.attrs, len(step.in_types[0].shape)
    return lambda x, s, z: quantize_values(x, per_axis(s, rank, a["axis"]), per_axis(z, rank, a["axis"]),
                                           a["dtype"].name)


@numpy_kernel("dequantize")
def _dequantize(step):
    a = step.attrs
    return lambda q: dequantize_values(q, a["scale"], a["zero_point"], a["dtype"].np_dtype)


@numpy_kernel("dequantize_with_scale_tensor")
def _dequantize_scale_tensor(step):
    a, rank = step.attrs, len(step.in_types[0].shape)
    return lambda q, s: dequantize_values(q, per_axis(s, rank, a["axis"]), a["zero_point"], a["dtype"].np_dtype)


@numpy_kernel("dequantize_with_tensors")
def _dequantize_tensors(step):
    a, rank = step.attrs, len(step.in_types[0].shape)
    return lambda q, s, z: dequantize_values(q, per_axis(s, rank, a["axis"]), per_axis(z, rank, a["axis"]),
                                             a["dtype"].np_dtype)


def blocks(p: np.ndarray, k: int) -> np.ndarray:
    """A blockwise parameter ``[..., K / block]`` repeated to ``[..., K]``."""
    nb = p.shape[-1]
    return np.repeat(p, k // nb, axis=-1) if nb else p


@numpy_kernel("dequantize_blockwise")
def _dequantize_blockwise(step):
    dt, k = step.attrs["dtype"].np_dtype, step.in_types[0].shape[-1]
    return lambda q, s, z: dequantize_values(q, blocks(s, k), blocks(z, k), dt)


@numpy_kernel("dequantize_blockwise_symmetric")
def _dequantize_blockwise_symmetric(step):
    dt, k = step.attrs["dtype"].np_dtype, step.in_types[0].shape[-1]
    return lambda q, s: dequantize_values(q, blocks(s, k), 0, dt)


def group_indices(shape: tuple, groups: tuple, block: tuple) -> list:
    """Index arrays, one per LUT group axis, giving each element's table along the tensor's last axes."""
    rank, k = len(shape), len(groups)
    out = []
    for j, b in enumerate(block):
        d = rank - k + j
        n = shape[d]
        gi = np.arange(n) // b if b > 0 else np.zeros(n, np.intp)
        out.append(gi.reshape((n,) + (1,) * (rank - 1 - d)))
    return out


@numpy_kernel("dequantize_lut")
def _dequantize_lut(step):
    t, lut = step.in_types
    groups = tuple(lut.shape[:-1])
    idx = group_indices(t.shape, groups, lut_groups(t.shape, groups, "dequantize_lut", 3))

    def run(q, table):
        return table[tuple(idx) + (q.astype(np.intp),)]
    return run


@numpy_kernel("dequantize_vector_lut")
def _dequantize_vector_lut(step):
    t, lut = step.in_types
    out = step.out_types[0]
    axis = step.attrs["axis"]
    groups = tuple(lut.shape[:-2])
    idx = group_indices(t.shape, groups, lut_groups(t.shape, groups, "dequantize_vector_lut", 2))

    def run(q, table):
        v = table[tuple(idx) + (q.astype(np.intp),)]  # tensor.shape + (V,)
        return np.moveaxis(v, -1, axis + 1).reshape(out.shape)
    return run
