"""NumPy kernels for the depthwise 2D convolution family (MPSGRAPH.md §4.1).

Every array is handled through layout-free *views*: data as ``[N, C, H, W]``, weights as
``[C, M, kH, kW]``, dy and y as ``[N, C, M, OH, OW]`` (``o = c*M + m``). Results are allocated
in the op's own layout and written through such a view, so NCHW/NHWC × OIHW/HWIO cost no
copies. The loop runs over the kH*kW taps only; for each tap the factory has already worked out
which output rows/columns read inside the source (so padding is never materialised and taps
that fall wholly into padding are skipped).
"""
from __future__ import annotations

import numpy as np

from ...descriptors import TensorNamedDataLayout as L
from ...ops.depthwise import DATA_GRAD, FWD, WEIGHTS_AXES, WEIGHTS_GRAD, _pick, depthwise_geometry
from .registry import numpy_kernel


def _valid(out: int, size: int, s: int, d: int, p: int, k: int):
    """For tap ``k``: output slice ``[lo, hi)`` whose input index ``o*s + k*d - p`` lies in
    ``[0, size)``, and the matching strided input slice; None if no output reads inside."""
    off = k * d - p
    lo = max(0, -(off // s))  # ceil(-off / s): first o with o*s + off >= 0
    hi = min(out, (size - 1 - off) // s + 1)  # one past the last o with o*s + off <= size - 1
    if hi <= lo:
        return None
    start = lo * s + off
    return slice(lo, hi), slice(start, start + (hi - lo - 1) * s + 1, s)


def _taps(geo):
    """[(i, j, out_h, out_w, in_h, in_w)] for every tap that reads inside the source."""
    taps = []
    for i in range(geo.kh):
        vh = _valid(geo.oh, geo.h, geo.sy, geo.dy, geo.pad_top, i)
        if vh is None:
            continue
        for j in range(geo.kw):
            vw = _valid(geo.ow, geo.w, geo.sx, geo.dx, geo.pad_left, j)
            if vw is None:
                continue
            taps.append((i, j, vh[0], vw[0], vh[1], vw[1]))
    return taps


def _compute_dtype(dt: np.dtype) -> np.dtype:
    """float16 is accumulated in float32 and rounded once at the end."""
    return np.dtype(np.float32) if dt == np.float16 else dt


def _data_view(a: np.ndarray, layout) -> np.ndarray:
    """``[N, C, H, W]`` view of a data-layout array."""
    return a if layout == L.NCHW else a.transpose(0, 3, 1, 2)


def _weights_view(a: np.ndarray, layout) -> np.ndarray:
    """``[C, M, kH, kW]`` view of a weights-layout array."""
    return a.transpose(1, 0, 2, 3) if layout == L.OIHW else a.transpose(2, 3, 0, 1)


def _split_view(a: np.ndarray, layout, c: int, m: int) -> np.ndarray:
    """``[N, C, M, OH, OW]`` view of a ``[N, C*M, OH, OW]`` (or NHWC) array."""
    if layout == L.NCHW:
        n, _, oh, ow = a.shape
        return a.reshape(n, c, m, oh, ow)
    n, oh, ow, _ = a.shape
    return a.reshape(n, oh, ow, c, m).transpose(0, 3, 4, 1, 2)


def _alloc_data(shape, layout, dt):
    """Zeros of ``shape`` (data layout) plus their ``[N, C, H, W]`` view."""
    a = np.zeros(shape, dt)
    return a, _data_view(a, layout)


def _geometry_fwd(step):
    desc = step.attrs["descriptor"]
    x, w = step.in_types
    m, _, kh, kw = _pick(w.shape, WEIGHTS_AXES[desc.weights_layout])
    return desc, depthwise_geometry(desc, x.shape, (kh, kw), m)


@numpy_kernel(FWD)
def _forward(step):
    desc, geo = _geometry_fwd(step)
    out_shape = step.out_types[0].shape
    out_dt = step.out_types[0].dtype.np_dtype
    cdt = _compute_dtype(out_dt)
    taps = _taps(geo)
    dl, wl, c, m = desc.data_layout, desc.weights_layout, geo.c, geo.m
    if dl == L.NCHW:
        mem_shape = (geo.n, c, m, geo.oh, geo.ow)
    else:
        mem_shape = (geo.n, geo.oh, geo.ow, c, m)

    def run(x, w):
        xv = _data_view(x, dl)
        wv = _weights_view(w.astype(cdt, copy=False), wl)  # [C, M, kH, kW]
        ym = np.zeros(mem_shape, cdt)
        yv = ym if dl == L.NCHW else ym.transpose(0, 3, 4, 1, 2)  # [N, C, M, OH, OW]
        for i, j, oh, ow, ih, iw in taps:
            xs = xv[:, :, None, ih, iw]  # [N, C, 1, h, w]
            yv[:, :, :, oh, ow] += xs * wv[None, :, :, i, j, None, None]
        return ym.reshape(out_shape).astype(out_dt, copy=False)

    # Fast path (backends/numpy/_dw_fast.py): stride-1 "same" layers as flat einsums over long
    # vectors; other geometries, and non-finite results, use `run` above.
    from ._dw_fast import ForwardPlan, from_op_geometry
    try:
        plan = ForwardPlan(from_op_geometry(geo), out_dt)
    except ValueError:
        return run

    def fast(x, w):
        y = plan(_data_view(x, dl), _weights_view(w, wl))  # [N, C, M, OH, OW] or None
        if y is None:
            return run(x, w)
        y = y.reshape(geo.n, c * m, geo.oh, geo.ow)
        return y if dl == L.NCHW else np.ascontiguousarray(y.transpose(0, 2, 3, 1))
    return fast


@numpy_kernel(DATA_GRAD)
def _data_gradient(step):
    desc = step.attrs["descriptor"]
    w_t = step.in_types[1]
    out_shape = step.out_types[0].shape
    out_dt = step.out_types[0].dtype.np_dtype
    cdt = _compute_dtype(out_dt)
    m, _, kh, kw = _pick(w_t.shape, WEIGHTS_AXES[desc.weights_layout])
    geo = depthwise_geometry(desc, out_shape, (kh, kw), m)
    taps = _taps(geo)
    dl, wl, c = desc.data_layout, desc.weights_layout, geo.c

    def run(dy, w):
        dyv = _split_view(dy, dl, c, m)  # [N, C, M, OH, OW]
        wv = _weights_view(w.astype(cdt, copy=False), wl)
        dx, dxv = _alloc_data(out_shape, dl, cdt)
        for i, j, oh, ow, ih, iw in taps:
            ds = dyv[:, :, :, oh, ow]
            if m == 1:
                dxv[:, :, ih, iw] += ds[:, :, 0] * wv[None, :, 0, i, j, None, None]
            else:
                dxv[:, :, ih, iw] += np.einsum("ncmhw,cm->nchw", ds, wv[:, :, i, j], dtype=cdt)
        return dx.astype(out_dt, copy=False)

    # Fast path (backends/numpy/_dw_fast.py), as for the forward op.
    from ._dw_fast import DataGradientPlan, from_op_geometry
    try:
        plan = DataGradientPlan(from_op_geometry(geo), out_dt)
    except ValueError:
        return run

    def fast(dy, w):
        dx = plan(_split_view(dy, dl, c, m), _weights_view(w, wl))  # [N, C, H, W] or None
        if dx is None:
            return run(dy, w)
        return dx if dl == L.NCHW else np.ascontiguousarray(dx.transpose(0, 2, 3, 1))
    return fast


@numpy_kernel(WEIGHTS_GRAD)
def _weights_gradient(step):
    desc = step.attrs["descriptor"]
    x_t = step.in_types[1]
    out_shape = step.out_types[0].shape
    out_dt = step.out_types[0].dtype.np_dtype
    cdt = _compute_dtype(out_dt)
    m, _, kh, kw = _pick(out_shape, WEIGHTS_AXES[desc.weights_layout])
    geo = depthwise_geometry(desc, x_t.shape, (kh, kw), m)
    taps = _taps(geo)
    dl, wl, c = desc.data_layout, desc.weights_layout, geo.c

    def run(dy, x):
        dyv = _split_view(dy.astype(cdt, copy=False), dl, c, m)
        xv = _data_view(x.astype(cdt, copy=False), dl)
        dw = np.zeros(out_shape, cdt)
        dwv = _weights_view(dw, wl)  # [C, M, kH, kW]
        for i, j, oh, ow, ih, iw in taps:
            dwv[:, :, i, j] = np.einsum("ncmhw,nchw->cm", dyv[:, :, :, oh, ow], xv[:, :, ih, iw])
        return dw.astype(out_dt, copy=False)

    # Fast path (backends/numpy/_dw_fast.py, see docs/performance.md): the same sums through
    # polyphase frames and BLAS dot products; `run` above stays as the fallback (empty shapes).
    from ._dw_fast import Geometry, WeightsGradientPlan
    try:
        plan = WeightsGradientPlan(Geometry(geo.n, c, m, geo.h, geo.w, kh, kw, geo.sy, geo.sx, geo.dy, geo.dx,
                                            geo.pad_top, geo.pad_bottom, geo.pad_left, geo.pad_right), out_dt)
    except ValueError:
        return run

    def fast(dy, x):
        dw = np.empty(out_shape, out_dt)
        _weights_view(dw, wl)[...] = plan(_split_view(dy, dl, c, m), _data_view(x, dl))
        return dw
    return fast

