"""The cumulative sum kernel: one thread per row, an in-order running sum (float16 in f32)."""
from __future__ import annotations

from ...ops._util import normalize_axes
from .registry import webgpu_kernel
from .sort import outer_inner
from .wgsl import COMPUTE, STORAGE, params_decl, render


@webgpu_kernel("cumulative_sum")
def _cumulative_sum(step, kb):
    x = step.in_types[0]
    dt = x.dtype.name
    axis = normalize_axes(step.attrs["axis"], len(x.shape), "axis")[0]
    outer, L, inner = outer_inner(x.shape, axis)
    rows = outer * inner
    params = [rows, L, inner, int(bool(step.attrs["exclusive"])), int(bool(step.attrs["reverse"]))]
    src = render("scan", PARAMS=params_decl(len(params)), T=STORAGE[dt], ACC=COMPUTE[dt])
    kb.dispatch(src, [("u", params), ("ro", kb.input(0)), ("rw", kb.output())], -(-rows // 256))
