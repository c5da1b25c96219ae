"""NumPy kernel for ``sample_grid`` (semantics: ``ops/sample_grid.py``).

The per-axis positions and taps come from ``ops.sample_grid.pixel`` / ``taps`` over NumPy
arrays; the (up to) four taps are gathered with fancy indexing, a tap outside the image reading
the padding constant and a tap of weight 0 reading nothing. float16 is computed in float32.
"""
from __future__ import annotations

import numpy as np

from ...descriptors import PaddingMode, TensorNamedDataLayout
from ...ops.sample_grid import NumpyMath, base, pixel, spatial, taps
from .conv import compute_dtype
from .registry import numpy_kernel


def sample(src: np.ndarray, coords: np.ndarray, attrs: dict) -> np.ndarray:
    """``sample_grid`` on an NHWC source in its compute dtype."""
    dt = src.dtype
    n, hs, ws, cs = src.shape
    _, ho, wo, _ = coords.shape
    c = coords.astype(dt, copy=False)
    with np.errstate(invalid="ignore", over="ignore"):
        px = pixel(NumpyMath, c[..., 0], ws, base(ws, wo, attrs).astype(dt).reshape(1, 1, wo), attrs)
        py = pixel(NumpyMath, c[..., 1], hs, base(hs, ho, attrs).astype(dt).reshape(1, ho, 1), attrs)
        fill = dt.type(attrs["constant_value"] if attrs["padding_mode"] == PaddingMode.CONSTANT else 0)
        out = np.zeros((n, ho, wo, cs), dt)
        b = np.arange(n).reshape(n, 1, 1)
        for iy, wy in taps(NumpyMath, py, attrs):
            for ix, wx in taps(NumpyMath, px, attrs):
                w = np.ones_like(px) if wx is None else wx
                w = w if wy is None else w * wy
                inside = (ix >= 0) & (ix <= ws - 1) & (iy >= 0) & (iy <= hs - 1)
                yi = np.where(inside, iy, 0).astype(np.int64)
                xi = np.where(inside, ix, 0).astype(np.int64)
                v = np.where(inside[..., None], src[b, yi, xi], fill)
                read = (w != 0)[..., None]
                out += np.where(read, w[..., None] * np.where(read, v, 0), 0).astype(dt)
        nan = np.isnan(px) | np.isnan(py)
        return np.where(nan[..., None], dt.type(np.nan), out)


@numpy_kernel("sample_grid")
def _sample_grid(step):
    attrs = step.attrs
    out_dt = step.out_types[0].dtype.np_dtype
    nchw = attrs["layout"] == TensorNamedDataLayout.NCHW
    assert spatial(attrs["layout"]) in ((1, 2, 3), (2, 3, 1))

    def run(src, coords):
        s = src.astype(compute_dtype(src.dtype), copy=False)
        if nchw:
            s = s.transpose(0, 2, 3, 1)
        out = sample(s, coords, attrs)
        return np.ascontiguousarray(out.transpose(0, 3, 1, 2) if nchw else out, dtype=out_dt)
    return run
