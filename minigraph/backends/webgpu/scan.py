"""The scan kernels (cumulative sum, product, maximum, minimum): one thread per row, an in-order
running value (float16 in f32), a long loop along the row (``loops.long_loop``: passes of at most
``LOOP_MAX`` elements that carry the running value between them, so the order, and the bits, are
those of one loop). The maximum and minimum skip NaN: a comparison with NaN is false, so the
running value stays."""
from __future__ import annotations

from ...ops._util import normalize_axes
from .loops import long_loop
from .registry import webgpu_kernel
from .sort import outer_inner
from .wgsl import COMPUTE, STORAGE, params_decl, render


_COMBINE = {"cumulative_sum": "acc + v", "cumulative_product": "acc * v",
            "cumulative_maximum": "select(acc, v, v > acc)", "cumulative_minimum": "select(acc, v, v < acc)"}
# the starting value per compute type: 0, 1, the lowest value (-inf), the highest value (+inf)
_IDENTITY = {
    "cumulative_sum": {"f32": "0.0", "i32": "0i", "u32": "0u"},
    "cumulative_product": {"f32": "1.0", "i32": "1i", "u32": "1u"},
    "cumulative_maximum": {"f32": "bitcast<f32>(0xff800000u)", "i32": "bitcast<i32>(0x80000000u)", "u32": "0u"},
    "cumulative_minimum": {"f32": "bitcast<f32>(0x7f800000u)", "i32": "2147483647i", "u32": "4294967295u"},
}


def _scan(step, kb):
    x = step.in_types[0]
    dt = x.dtype.name
    axis = normalize_axes(step.attrs["axis"], len(x.shape), "axis")[0]
    outer, L, inner = outer_inner(x.shape, axis)
    rows = outer * inner
    head = [rows, L, inner, int(bool(step.attrs["exclusive"])), int(bool(step.attrs["reverse"]))]
    acc = COMPUTE[dt]
    src = render("scan", PARAMS=params_decl(len(head) + 2), T=STORAGE[dt], ACC=acc,
                 COMBINE=_COMBINE[step.op.type], IDENTITY=_IDENTITY[step.op.type][acc])

    def record(j0, j1, state):
        kb.dispatch(src, [("u", head + [j0, j1]), ("ro", kb.input(0)), ("rw", kb.output()), ("rw", state)],
                    -(-rows // 256))

    if L:
        long_loop(kb, L, rows, 1, record)


for _op in _COMBINE:
    webgpu_kernel(_op)(_scan)
