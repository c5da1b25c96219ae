"""Compiled kernels for batch-norm style normalization: ``mean`` and ``variance`` (floats), ``normalize``
and its three gradient ops (semantics: ops/normalization.py).

Each works on the tensor viewed as ``[A, C, B]``: ``C`` the elements of the axes kept (a block of
consecutive axes, the channels of a batch norm), ``A`` and ``B`` those reduced before and after
them (NCHW over N, H, W: ``[N, C, H*W]``; NHWC: ``[N*H*W, C, 1]``). The statistics and gamma, beta
are materialized as float64 arrays of ``C`` values. Other axis sets (the kept axes not
consecutive), empty tensors, or per-element statistics along a reduced axis leave the step to the
NumPy kernel.

As the NumPy kernels, everything is computed in float64 and rounded once to the op's dtype.
``normalize`` and ``normalization_gradient`` do each element's float64 operations in the NumPy
kernel's order, so they give its bits. The sums (the mean, the variance, the gamma and beta
gradients) are taken in a fixed order: each ``(a, c)`` row of ``B`` elements by four interleaved
accumulators into a partial of its own (``B > 1``), or, for ``B == 1``, each block of ``ROWS``
rows into a partial row; then the partials in order. The split depends on the shape only, so
the bits are the same at every thread count; they differ from NumPy's pairwise sums only by
float64 rounding. Tensors under ``PARALLEL_ELEMENTS`` elements run each kernel's serial variant
(the same arithmetic, so the same bits).
"""
from __future__ import annotations

from math import prod
from typing import Callable, Optional

import numpy as np

from ...ops._util import normalize_axes
from .jit import kernel, njit_inline, prange, serial_and_parallel

FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
ROWS = 256  # rows of a channels-last (B == 1) partial: fixed, so the sums do not depend on the threads
# below this many elements of the tensor the serial variant of a kernel runs: a parallel launch
# (waking Numba's threads) cost about 0.1 ms on the 2-core machine, a pass over this many elements
# about as much; both variants do the same arithmetic per iteration, so the bits are the same
PARALLEL_ELEMENTS = 1 << 18

# the per-element term a sum takes (``_term``)
VALUE, SQUARED_DEVIATION, GRADIENT, GRADIENT_XHAT = 0, 1, 2, 3


@njit_inline
def _term(kind, d, v, m, r):  # pragma: no cover - compiled
    """The float64 term of one element: x, (x - m)^2, dy or dy * (x - m) * r (NumPy's order)."""
    if kind == VALUE:
        return np.float64(v)
    if kind == SQUARED_DEVIATION:
        t = np.float64(v) - m
        return t * t
    if kind == GRADIENT:
        return np.float64(d)
    return np.float64(d) * (np.float64(v) - m) * r


@njit_inline
def _row_sum(kind, dr, xr, m, r):  # pragma: no cover - compiled
    """The sum of a row's terms: four interleaved accumulators, then (s0 + s1) + (s2 + s3) + the rest."""
    nb = xr.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    full = nb - nb % 4
    for k in range(0, full, 4):
        s0 += _term(kind, dr[k], xr[k], m, r)
        s1 += _term(kind, dr[k + 1], xr[k + 1], m, r)
        s2 += _term(kind, dr[k + 2], xr[k + 2], m, r)
        s3 += _term(kind, dr[k + 3], xr[k + 3], m, r)
    s = (s0 + s1) + (s2 + s3)
    for k in range(full, nb):
        s += _term(kind, dr[k], xr[k], m, r)
    return s


def _row_partials(kind, d, x, m, r, part):  # pragma: no cover - compiled
    """``part[a, c]``: the sum of the terms of row ``(a, c)`` (``x``, ``d``: ``[A, C, B]``, B > 1)."""
    na, nc = x.shape[0], x.shape[1]
    for t in prange(na * nc):
        a = t // nc
        c = t - a * nc
        part[a, c] = _row_sum(kind, d[a, c], x[a, c], m[c], r[c])


def _block_partials(kind, d, x, m, r, part):  # pragma: no cover - compiled
    """``part[p, c]``: the sum of the terms of rows ``p*ROWS ...`` of channel c (``[A, C]`` arrays)."""
    na, nc = x.shape[0], x.shape[1]
    for p in prange(part.shape[0]):
        acc = part[p]
        acc[:] = 0.0
        for a in range(p * ROWS, min(na, (p + 1) * ROWS)):
            da, xa = d[a], x[a]
            for c in range(nc):
                acc[c] += _term(kind, da[c], xa[c], m[c], r[c])


@kernel
def _sum_partials(part, out):  # pragma: no cover - compiled
    """``out[c] = sum over p of part[p, c]``, in order (serial: a few thousand values, less than a
    parallel launch costs)."""
    npart, nc = part.shape
    for c in range(nc):
        s = part[0, c]
        for p in range(1, npart):
            s += part[p, c]
        out[c] = s


def _normalize(x, mean, rstd, gamma, beta, y):  # pragma: no cover - compiled
    """``y = (x - mean) * rstd * gamma + beta`` per element, in float64 (``[A, C, B]``, per-channel params)."""
    na, nc, nb = x.shape
    for t in prange(na * nc):
        a = t // nc
        c = t - a * nc
        m, r, g, b = mean[c], rstd[c], gamma[c], beta[c]
        xr, yr = x[a, c], y[a, c]
        for k in range(nb):
            yr[k] = (np.float64(xr[k]) - m) * r * g + b


def _normalize_rows(x, mean, rstd, gamma, beta, y):  # pragma: no cover - compiled
    """``_normalize`` for ``B == 1`` (``[A, C]`` arrays), parallel over the rows."""
    na, nc = x.shape
    for a in prange(na):
        xr, yr = x[a], y[a]
        for c in range(nc):
            yr[c] = (np.float64(xr[c]) - mean[c]) * rstd[c] * gamma[c] + beta[c]


def _gradient(dy, x, mean, rstd, gr, bgn, gg, n, dx):  # pragma: no cover - compiled
    """``dx = gr * (dy - bgn - (x - mean) * rstd * gg / n)``: NumPy's ``gamma * r * (dy - beta_grad / n
    - (x - mean) * r * gamma_grad / n)`` with ``gr = gamma * r`` and ``bgn = beta_grad / n`` per channel."""
    na, nc, nb = x.shape
    for t in prange(na * nc):
        a = t // nc
        c = t - a * nc
        m, r, g, b, q = mean[c], rstd[c], gr[c], bgn[c], gg[c]
        dr, xr, out = dy[a, c], x[a, c], dx[a, c]
        for k in range(nb):
            out[k] = g * (np.float64(dr[k]) - b - (np.float64(xr[k]) - m) * r * q / n)


def _gradient_rows(dy, x, mean, rstd, gr, bgn, gg, n, dx):  # pragma: no cover - compiled
    """``_gradient`` for ``B == 1`` (``[A, C]`` arrays), parallel over the rows."""
    na, nc = x.shape
    for a in prange(na):
        dr, xr, out = dy[a], x[a], dx[a]
        for c in range(nc):
            out[c] = gr[c] * (np.float64(dr[c]) - bgn[c] - (np.float64(xr[c]) - mean[c]) * rstd[c] * gg[c] / n)


# the kernels above by name, each as (serial, parallel)
VARIANTS = {f.__name__: serial_and_parallel(f) for f in (_row_partials, _block_partials, _normalize, _normalize_rows,
                                                         _gradient, _gradient_rows)}


def _variant(name: str, elements: int) -> Callable:
    """Kernel ``name``'s parallel variant for a tensor of at least ``PARALLEL_ELEMENTS`` elements, else its serial one."""
    return VARIANTS[name][int(elements >= PARALLEL_ELEMENTS)]


# ------------------------------------------------------------------------------------- the views
def _view(shape: tuple, lo: int, hi: int) -> tuple:
    """``(A, C, B)`` of ``shape`` with axes ``[lo, hi)`` kept."""
    return prod(shape[:lo]), prod(shape[lo:hi]), prod(shape[hi:])


def _kept_block(shape: tuple, axes: tuple) -> Optional[tuple]:
    """``(lo, hi)``: the axes not in ``axes`` as one block ``[lo, hi)``; None where they are not consecutive."""
    kept = [i for i in range(len(shape)) if i not in axes]
    if not kept:
        return len(shape), len(shape)
    if kept != list(range(kept[0], kept[-1] + 1)):
        return None
    return kept[0], kept[-1] + 1


def _fits(param: tuple, shape: tuple, lo: int, hi: int) -> bool:
    """Whether a parameter of shape ``param`` broadcasts to ``shape`` with the axes outside ``[lo, hi)`` as 1."""
    lead = len(shape) - len(param)
    if lead < 0:
        return False
    for i, d in enumerate(param):
        ax = i + lead
        if d != 1 and (d != shape[ax] or not lo <= ax < hi):
            return False
    return True


def _channels(p, shape: tuple, lo: int, hi: int) -> np.ndarray:
    """A parameter as the float64 array of the ``C`` kept elements."""
    kept = tuple(d if lo <= i < hi else 1 for i, d in enumerate(shape))
    return np.ascontiguousarray(np.broadcast_to(np.asarray(p, np.float64), kept)).reshape(-1)


def _as3(a, abc: tuple) -> np.ndarray:
    """``a`` as a C-contiguous ``[A, C, B]`` array of float32 or float64 (float16 widened exactly)."""
    a = np.asarray(a)
    if a.dtype == np.float16:
        a = a.astype(np.float32)
    return np.ascontiguousarray(a).reshape(abc)


def _dtypes_ok(step) -> Optional[np.dtype]:
    """The result dtype where every input and the result share one float dtype, else None."""
    dt = np.dtype(step.out_types[0].dtype.np_dtype)
    if dt not in FLOATS or any(np.dtype(t.dtype.np_dtype) != dt for t in step.in_types):
        return None
    return dt


def _reduction(step, axes_attr: str, params: tuple) -> Optional[tuple]:
    """``(shape, (lo, hi), (A, C, B), dtype)`` of a reduction-style step over ``step.attrs[axes_attr]``
    (the source is input ``len(params) and 1``), or None where the NumPy kernel stays; ``params``:
    the inputs that must be per-channel."""
    dt = _dtypes_ok(step)
    if dt is None or len(step.out_types) != 1:
        return None
    src = 1 if axes_attr == "reduction_axes" else 0
    shape = tuple(step.in_types[src].shape)
    if not shape or prod(shape) == 0:
        return None
    axes = normalize_axes(step.attrs[axes_attr], len(shape))
    block = _kept_block(shape, axes)
    if block is None or not all(_fits(tuple(step.in_types[i].shape), shape, *block) for i in params):
        return None
    return shape, block, _view(shape, *block), dt


def _sums(kind: int, d, x, m, r, abc: tuple) -> np.ndarray:
    """The float64 per-channel sums of ``kind``'s terms over ``[A, C, B]`` arrays."""
    na, nc, nb = abc
    size = na * nc * nb
    if nb > 1:
        part = np.empty((na, nc), np.float64)
        _variant("_row_partials", size)(kind, d, x, m, r, part)
    else:
        part = np.empty(((na + ROWS - 1) // ROWS, nc), np.float64)
        _variant("_block_partials", size)(kind, d.reshape(na, nc), x.reshape(na, nc), m, r, part)
    out = np.empty(nc, np.float64)
    _sum_partials(part, out)
    return out


def _rstd(var: np.ndarray, eps: float) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 / np.sqrt(var + eps)


def _finish(values: np.ndarray, step) -> np.ndarray:
    ty = step.out_types[0]
    return np.asarray(values.reshape(tuple(ty.shape)), ty.dtype.np_dtype)


# ------------------------------------------------------------------------------------- the kernels
def mean(step) -> Optional[Callable]:
    """``fn(x) -> mean`` for a float ``mean`` step (summed in float64, rounded once), or None."""
    got = _reduction(step, "axes", ())
    if got is None:
        return None
    shape, _, abc, _ = got
    count = float(abc[0] * abc[2])
    zeros = np.zeros(abc[1], np.float64)

    def run(x):
        xc = _as3(x, abc)
        return _finish(_sums(VALUE, xc, xc, zeros, zeros, abc) / count, step)
    return run


def variance(step) -> Optional[Callable]:
    """``fn(x) -> variance`` for a ``variance`` step: the float64 mean, then the float64 mean of the
    squared deviations from it (the NumPy kernel's two passes), or None."""
    got = _reduction(step, "axes", ())
    if got is None:
        return None
    shape, _, abc, _ = got
    count = float(abc[0] * abc[2])
    zeros = np.zeros(abc[1], np.float64)

    def run(x):
        xc = _as3(x, abc)
        m = _sums(VALUE, xc, xc, zeros, zeros, abc) / count
        return _finish(_sums(SQUARED_DEVIATION, xc, xc, m, zeros, abc) / count, step)
    return run


def beta_gradient(step) -> Optional[Callable]:
    """``fn(dy, x) -> sum(dy)`` for a ``normalization_beta_gradient`` step, or None."""
    got = _reduction(step, "reduction_axes", ())
    if got is None:
        return None
    _, _, abc, _ = got
    zeros = np.zeros(abc[1], np.float64)

    def run(dy, x):
        d = _as3(dy, abc)
        return _finish(_sums(GRADIENT, d, d, zeros, zeros, abc), step)
    return run


def gamma_gradient(step) -> Optional[Callable]:
    """``fn(dy, x, mean, variance) -> sum(dy * (x - mean) * rstd)`` for a
    ``normalization_gamma_gradient`` step, or None."""
    got = _reduction(step, "reduction_axes", (2, 3))
    if got is None:
        return None
    shape, block, abc, _ = got
    eps = step.attrs["epsilon"]

    def run(dy, x, mean, var):
        m, r = _channels(mean, shape, *block), _rstd(_channels(var, shape, *block), eps)
        return _finish(_sums(GRADIENT_XHAT, _as3(dy, abc), _as3(x, abc), m, r, abc), step)
    return run


def gradient(step) -> Optional[Callable]:
    """``fn(dy, x, mean, variance, gamma, gamma_gradient, beta_gradient) -> dx`` for a
    ``normalization_gradient`` step, or None. A nil gamma or beta gradient is summed here first."""
    got = _reduction(step, "reduction_axes", (2, 3, 4, 5, 6))
    if got is None:
        return None
    shape, block, abc, dt = got
    eps = step.attrs["epsilon"]
    nil = step.attrs.get("nil_inputs", ())
    n = float(abc[0] * abc[2])
    out_dt = np.float64 if dt == np.float16 else dt  # float16: rounded once, from float64, at the end
    size = prod(shape)

    def run(dy, x, mean, var, gamma, gamma_grad, beta_grad):
        d, xc = _as3(dy, abc), _as3(x, abc)
        m, r = _channels(mean, shape, *block), _rstd(_channels(var, shape, *block), eps)
        gg = (_sums(GRADIENT_XHAT, d, xc, m, r, abc) if "gamma_gradient" in nil
              else _channels(gamma_grad, shape, *block))
        bg = _sums(GRADIENT, d, d, m, r, abc) if "beta_gradient" in nil else _channels(beta_grad, shape, *block)
        gr = _channels(gamma, shape, *block) * r
        with np.errstate(invalid="ignore", divide="ignore"):
            bgn = bg / n
        dx = np.empty(abc, out_dt)
        if abc[2] > 1:
            _variant("_gradient", size)(d, xc, m, r, gr, bgn, gg, n, dx)
        else:
            k = abc[:2]
            _variant("_gradient_rows", size)(d.reshape(k), xc.reshape(k), m, r, gr, bgn, gg, n, dx.reshape(k))
        return np.asarray(dx.reshape(shape), dt)
    return run


def normalize(step) -> Optional[Callable]:
    """``fn(x, mean, variance, gamma, beta) -> y`` for a ``normalize`` step whose result has the
    tensor's shape and whose other operands vary along one block of consecutive axes, or None."""
    dt = _dtypes_ok(step)
    if dt is None:
        return None
    shape = tuple(step.in_types[0].shape)
    if tuple(step.out_types[0].shape) != shape or not shape or prod(shape) == 0:
        return None
    varying = [i + len(shape) - len(t.shape) for t in step.in_types[1:] for i, d in enumerate(t.shape) if d != 1]
    if any(ax < 0 for ax in varying):
        return None
    block = (min(varying), max(varying) + 1) if varying else (len(shape), len(shape))
    if not all(_fits(tuple(t.shape), shape, *block) for t in step.in_types[1:]):
        return None
    abc = _view(shape, *block)
    eps = step.attrs["epsilon"]
    out_dt = np.float64 if dt == np.float16 else dt
    size = prod(shape)

    def run(x, mean, var, gamma, beta):
        xc = _as3(x, abc)
        ps = [_channels(p, shape, *block) for p in (mean, var, gamma, beta)]
        ps[1] = _rstd(ps[1], eps)
        y = np.empty(abc, out_dt)
        if abc[2] > 1:
            _variant("_normalize", size)(xc, *ps, y)
        else:
            k = abc[:2]
            _variant("_normalize_rows", size)(xc.reshape(k), *ps, y.reshape(k))
        return np.asarray(y.reshape(shape), dt)
    return run


KERNELS = {
    "mean": mean,
    "variance": variance,
    "normalize": normalize,
    "normalization_beta_gradient": beta_gradient,
    "normalization_gamma_gradient": gamma_gradient,
    "normalization_gradient": gradient,
}
