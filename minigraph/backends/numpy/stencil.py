"""The NumPy kernel of stencil (semantics: ops/stencil.py): the source padded
with the ``pad_tensor`` kernel, then one strided view of it per window position."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ...descriptors import ReductionMode
from ...ops.stencil import geometry, padding_lists
from ...types import ShapedType
from .registry import KERNELS, numpy_kernel


def _pad_fn(d, shape, window, dt):
    left, right = padding_lists(d, shape, window)
    if not any(left + right):
        return lambda x: np.asarray(x)
    out = tuple(n + a + b for n, a, b in zip(shape, left, right))
    step = SimpleNamespace(attrs={"padding_mode": d.boundary_mode, "left_padding": left, "right_padding": right,
                                  "constant_value": d.padding_constant},
                           in_types=(ShapedType(shape, dt),), out_types=(ShapedType(out, dt),))
    factory = KERNELS.get("pad_tensor")
    assert factory is not None
    return factory(step)


def _windows(d, geo, window):
    """Per row-major window position: the index of the padded source's last 4 dims it reads."""
    for j in np.ndindex(*window):
        yield tuple(slice(st + jj * dl, st + jj * dl + (o - 1) * s + 1, s)
                    for (_, _, st, o), jj, s, dl in zip(geo, j, d.strides, d.dilation_rates))


@numpy_kernel("stencil")
def _stencil(step):
    d = step.attrs["descriptor"]
    src, w = step.in_types
    window = tuple(w.shape)
    geo = geometry(d, src.shape, window)
    dt = src.dtype.np_dtype
    acc = np.float32 if dt == np.float16 else dt
    pad = _pad_fn(d, tuple(src.shape), window, src.dtype)
    mode = d.reduction_mode
    out_t = step.out_types[0]

    def run(x, wv):
        xp = pad(x).astype(acc)
        wf = np.asarray(wv).astype(acc).reshape(-1)
        views = [xp[(Ellipsis,) + ix] * wf[k] for k, ix in enumerate(_windows(d, geo, window))]
        p = np.stack(views, 0) if views else np.zeros((0,) + out_t.shape, acc)
        with np.errstate(all="ignore"):
            if mode == ReductionMode.SUM:
                r = np.sum(p, 0) if p.shape[0] else np.zeros(out_t.shape, acc)
            elif mode == ReductionMode.PRODUCT:
                r = np.prod(p, 0)
            elif mode == ReductionMode.MIN:
                r = np.min(p, 0)
            elif mode == ReductionMode.MAX:
                r = np.max(p, 0)
            elif mode == ReductionMode.ARGUMENT_MIN:
                r = np.argmin(p, 0)
            else:
                r = np.argmax(p, 0)
        return np.ascontiguousarray(np.asarray(r).astype(out_t.dtype.np_dtype)).reshape(out_t.shape)
    return run
