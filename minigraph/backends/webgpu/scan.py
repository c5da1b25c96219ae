"""The cumulative sum kernel: one thread per row, an in-order running sum (float16 in f32), a
long loop along the row (``loops.long_loop``: passes of at most ``LOOP_MAX`` elements that carry
the running sum between them, so the order, and the bits, are those of one loop)."""
from __future__ import annotations

from ...ops._util import normalize_axes
from .loops import long_loop
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
    head = [rows, L, inner, int(bool(step.attrs["exclusive"])), int(bool(step.attrs["reverse"]))]
    src = render("scan", PARAMS=params_decl(len(head) + 2), T=STORAGE[dt], ACC=COMPUTE[dt])

    def record(j0, j1, state):
        kb.dispatch(src, [("u", head + [j0, j1]), ("ro", kb.input(0)), ("rw", kb.output()), ("rw", state)],
                    -(-rows // 256))

    if L:
        long_loop(kb, L, rows, 1, record)
