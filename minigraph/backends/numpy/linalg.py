"""NumPy kernels of the linear-algebra ops (semantics: ops/linalg.py)."""
from __future__ import annotations

import numpy as np

from .registry import numpy_kernel


def band_mask(rows: int, cols: int, num_lower: int, num_upper: int) -> np.ndarray:
    """Where ``[i, j]`` is in the band: ``(lo < 0 or i - j <= lo) and (up < 0 or j - i <= up)``."""
    d = np.arange(rows).reshape(-1, 1) - np.arange(cols).reshape(1, -1)
    return ((num_lower < 0) | (d <= num_lower)) & ((num_upper < 0) | (-d <= num_upper))


@numpy_kernel("band_part")
def _band_part(step):
    a = step.attrs
    shape = step.in_types[0].shape
    keep = band_mask(shape[-2], shape[-1], a["num_lower"], a["num_upper"])

    def run(x):
        return np.where(keep, x, np.zeros((), x.dtype))
    return run


def popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each element in its dtype's width (as unsigned), as int64."""
    u = np.ascontiguousarray(x).view(np.dtype(f"u{x.dtype.itemsize}"))
    bits = np.unpackbits(u.view(np.uint8).reshape(u.shape + (u.dtype.itemsize,)), axis=-1)
    return bits.sum(axis=-1, dtype=np.int64)


@numpy_kernel("hamming_distance")
def _hamming_distance(step):
    dt = step.out_types[0].dtype.np_dtype

    def run(a, b):
        x = np.bitwise_xor(a[..., :, None, :], b[..., None, :, :])
        return popcount(x).sum(axis=-1).astype(dt)
    return run


def gauss_jordan_inverse(a: np.ndarray) -> np.ndarray:
    """Inverses of the matrices ``a[..., N, N]`` by Gauss-Jordan with partial pivoting (the first
    row of largest magnitude in each column), in float64; a matrix meeting an exact zero pivot
    gives NaN everywhere (ops/linalg.py)."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    m: np.ndarray = a.reshape((int(np.prod(batch, dtype=np.int64)), n, n)).astype(np.float64)
    inv: np.ndarray = np.broadcast_to(np.eye(n), m.shape).copy()
    bad: np.ndarray = np.zeros(m.shape[0], dtype=np.bool_)
    rows = np.arange(m.shape[0])
    for k in range(n):
        piv = k + np.argmax(np.abs(m[:, k:, k]), axis=1)
        for t in (m, inv):
            top, sel = t[rows, k].copy(), t[rows, piv].copy()
            t[rows, k], t[rows, piv] = sel, top
        p = m[:, k, k].copy()
        bad |= (p == 0) | ~np.isfinite(p)
        p = np.where(p == 0, 1.0, p)
        m[:, k] /= p[:, None]
        inv[:, k] /= p[:, None]
        f = m[:, :, k].copy()
        f[:, k] = 0
        m -= f[:, :, None] * m[:, k][:, None, :]
        inv -= f[:, :, None] * inv[:, k][:, None, :]
    inv[bad] = np.nan
    return inv.reshape(batch + (n, n))


@numpy_kernel("inverse")
def _inverse(step):
    dt = step.out_types[0].dtype.np_dtype

    def run(a):
        with np.errstate(all="ignore"):
            return gauss_jordan_inverse(a).astype(dt)
    return run
