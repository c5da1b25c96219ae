"""The stencil kernel (semantics: ``ops/stencil.py``): the source padded into a scratch buffer
with the ``pad_tensor`` kernel's shader (``kernels/pad.wgsl``), then one invocation per result
element over the window positions, in passes (``loops.long_loop``), in float32 for float16, in
the order of the window positions."""
from __future__ import annotations

from math import prod

from ...descriptors import ReductionMode
from ...ops.padding import fill_value
from ...ops.stencil import geometry, padding_lists
from .loops import long_loop
from .movement import _literal, _negate, _pad_map
from .registry import webgpu_kernel
from .wgsl import STORAGE, contiguous_strides, params_decl, render


def _decompose(var: str, sizes, names, indent: str = "  ") -> str:
    """WGSL lines splitting ``var`` row-major into ``names`` over ``sizes`` (the last fastest)."""
    lines, rest = [], var
    for i in reversed(range(len(sizes))):
        lines.append(f"{indent}let {names[i]} = {rest} % {max(sizes[i], 1)}u;")
        if i:
            lines.append(f"{indent}let r_{names[i]} = {rest} / {max(sizes[i], 1)}u;")
            rest = f"r_{names[i]}"
    return "\n".join(lines)


def _pad_source(kb, d, src_type, window):
    """The padded source's buffer and last-4 sizes (the input itself when nothing is padded)."""
    shape = tuple(src_type.shape)
    left, right = padding_lists(d, shape, window)
    padded = tuple(n + a + b for n, a, b in zip(shape, left, right))
    if not any(left + right):
        return kb.input(0), padded
    dt = src_type.dtype.name
    n = prod(padded)
    dst = kb.scratch(n * src_type.dtype.itemsize if dt == "float16" else n * 4)
    ist = contiguous_strides(shape)
    params = [n]
    for a in reversed(range(len(shape))):
        params += [padded[a], shape[a], left[a], ist[a]]
    fill = fill_value(d.boundary_mode, d.padding_constant, src_type.dtype.np_dtype)
    code = render("pad", PARAMS=params_decl(len(params)), T=STORAGE[dt], RANK=len(shape),
                  MAP=_pad_map(d.boundary_mode), CONST=_literal(fill, dt), NEG=_negate(dt))
    if n:
        kb.dispatch(code, [("u", params), ("ro", kb.input(0)), ("rw", dst)], -(-n // 256))
    return dst, padded


def _x_index(geo, d, padded, b: str, o: str, j: str) -> str:
    """The padded source's flat index read by window ``o`` at window position ``j`` of batch ``b``."""
    p4 = padded[-4:]
    st = contiguous_strides(p4)
    terms = [f"{b} * {prod(p4)}u"]
    for a in range(4):
        terms.append(f"({geo[a][2]}u + {o}{a} * {d.strides[a]}u + {j}{a} * {d.dilation_rates[a]}u) * {st[a]}u")
    return " + ".join(terms)


_COMBINE = {
    ReductionMode.SUM: ("0.0", "    acc = acc + v;"),
    ReductionMode.PRODUCT: ("1.0", "    acc = acc * v;"),
    ReductionMode.MIN: ("0.0", "    if (k == 0u || (!mg_isnan(acc) && (mg_isnan(v) || v < acc))) { acc = v; best = k; }"),
    ReductionMode.MAX: ("0.0", "    if (k == 0u || (!mg_isnan(acc) && (mg_isnan(v) || v > acc))) { acc = v; best = k; }"),
}
_COMBINE[ReductionMode.ARGUMENT_MIN] = _COMBINE[ReductionMode.MIN]
_COMBINE[ReductionMode.ARGUMENT_MAX] = _COMBINE[ReductionMode.MAX]


@webgpu_kernel("stencil")
def _stencil(step, kb):
    d = step.attrs["descriptor"]
    src, w = step.in_types
    out = step.out_types[0]
    window = tuple(w.shape)
    total = prod(out.shape)
    if not total:
        return
    geo = geometry(d, src.shape, window)
    xbuf, padded = _pad_source(kb, d, src, window)
    kk = prod(window)
    mode = d.reduction_mode
    init, combine = _COMBINE[mode]
    arg = mode in (ReductionMode.ARGUMENT_MIN, ReductionMode.ARGUMENT_MAX)
    result = "i32(best)" if arg else f"{STORAGE[out.dtype.name]}(acc)"
    dt = src.dtype.name
    code = render("stencil", PARAMS=params_decl(2), T=STORAGE[dt], OUT_T=STORAGE[out.dtype.name], TOTAL=total,
                  KK=kk, INIT=init, COMBINE=combine, RESULT=result,
                  DECOMPOSE_OUT=_decompose("t", [total // max(prod(out.shape[-4:]), 1)] + list(out.shape[-4:]),
                                           ["b", "o0", "o1", "o2", "o3"]),
                  DECOMPOSE_K=_decompose("k", window, ["q0", "q1", "q2", "q3"], "    "),
                  X_INDEX=_x_index(geo, d, padded, "b", "o", "q"))

    def record(j0, j1, state):
        kb.dispatch(code, [("u", [j0, j1]), ("ro", xbuf), ("ro", kb.input(1)), ("rw", kb.output()),
                           ("rw", state)], -(-total // 256))

    long_loop(kb, kk, total, 2, record)
