"""Reduction kernels (sum, maximum, minimum, mean), softmax and softmax cross entropy.

Short reductions run one thread per output; long ones (>= 256 elements) one workgroup per
output with a tree in workgroup memory. Float maximum/minimum propagate NaN as NumPy does;
float16 accumulates in f32; bool sums count in i32 (MPSGraph casts bool to int32).
"""
from __future__ import annotations

from ...errors import ExecutionError
from ...ops._util import normalize_axes
from ...types import num_elements
from .registry import webgpu_kernel
from .wgsl import COMPUTE, STORAGE, collapse, contiguous_strides, params_decl, render

_MAX_I32, _MIN_I32 = "bitcast<i32>(0x7fffffffu)", "bitcast<i32>(0x80000000u)"
_INIT = {
    ("sum", "f32"): "0.0", ("sum", "i32"): "0i", ("sum", "u32"): "0u",
    ("max", "f32"): "-mg_inf()", ("max", "i32"): _MIN_I32, ("max", "u32"): "0u",
    ("min", "f32"): "mg_inf()", ("min", "i32"): _MAX_I32, ("min", "u32"): "0xffffffffu",
}
_COMBINE = {
    ("sum", "f32"): "a + b", ("sum", "i32"): "a + b", ("sum", "u32"): "a + b",
    ("max", "f32"): "mg_max(a, b)", ("max", "i32"): "max(a, b)", ("max", "u32"): "max(a, b)",
    ("min", "f32"): "mg_min(a, b)", ("min", "i32"): "min(a, b)", ("min", "u32"): "min(a, b)",
}
_KIND = {"reduction_sum": "sum", "reduction_maximum": "max", "reduction_minimum": "min", "mean": "sum"}


def reduce_dispatch(kb, src, dst, in_dtype: str, out_dtype: str, kind: str, kept, reduced, mean=False):
    """Record ``dst[o] = reduce_{j} src[base(o) + off(j)]``; ``kept``/``reduced``: (shape, strides)."""
    n_out = num_elements(kept[0])
    count = num_elements(reduced[0])
    acc = COMPUTE[out_dtype]
    kshape, (kst,) = collapse(*kept)
    rshape, (rst,) = collapse(*reduced)
    params = [n_out, count]
    for k in reversed(range(len(kshape))):
        params += [kshape[k], kst[k]]
    for k in reversed(range(len(rshape))):
        params += [rshape[k], rst[k]]
    load = "f32" if in_dtype == "float16" else ("i32" if acc == "i32" and in_dtype == "bool" else "")
    fin = "a / f32(count)" if mean else "a"
    if out_dtype == "float16":
        fin = f"f16({fin})"
    common = render("reduce_common", PARAMS=params_decl(len(params)), TIN=STORAGE[in_dtype],
                    TOUT=STORAGE[out_dtype], KR=len(kshape), RR=len(rshape), ACC=acc,
                    COMBINE=_COMBINE[(kind, acc)], FINISH=fin)
    common = common.replace("enable f16;\n", "")
    wide = count >= 256
    src_code = render("reduce_wg" if wide else "reduce_rows", COMMON=common, ACC=acc, INIT=_INIT[(kind, acc)],
                      LOAD=load)
    groups = n_out if wide else -(-n_out // 256)
    kb.dispatch(src_code, [("u", params), ("ro", src), ("rw", dst)], groups)


@webgpu_kernel("reduction_sum", "reduction_maximum", "reduction_minimum", "mean")
def _reduce(step, kb):
    t = step.op.type
    x, out = step.in_types[0], step.out_types[0]
    axes = normalize_axes(step.attrs["axes"], len(x.shape))
    st = contiguous_strides(x.shape)
    kept = (tuple(d for i, d in enumerate(x.shape) if i not in axes), tuple(s for i, s in enumerate(st) if i not in axes))
    red = (tuple(x.shape[i] for i in axes), tuple(st[i] for i in axes))
    if num_elements(red[0]) == 0 and t in ("reduction_maximum", "reduction_minimum") and num_elements(out.shape):
        raise ExecutionError(f"{kb.label}: {t} over axes {list(axes)} of shape {x.shape} reduces zero elements, "
                             "and the maximum/minimum of nothing is undefined (as in NumPy)")
    reduce_dispatch(kb, kb.input(0), kb.output(), x.dtype.name, out.dtype.name, _KIND[t], kept, red, mean=(t == "mean"))


def _rows(shape, axis):
    """(rows, L, inner) of a row-wise op along ``axis``."""
    L = shape[axis]
    inner = num_elements(shape[axis + 1:])
    return num_elements(shape) // max(L, 1) if L else num_elements(shape[:axis]) * inner, L, inner


def _lanes(L: int) -> int:
    lanes = 1
    while lanes < 256 and lanes * 4 <= L:
        lanes *= 2
    return lanes if L >= 32 else 1


def _rows_common(params, lanes):
    return render("rows_common", PARAMS=params_decl(len(params)), LANES=lanes)


@webgpu_kernel("softmax")
def _softmax(step, kb):
    x = step.in_types[0]
    axis = normalize_axes(step.attrs["axis"], len(x.shape))[0]
    rows, L, inner = _rows(x.shape, axis)
    if rows == 0 or L == 0:
        return
    lanes = _lanes(L)
    params = [rows, L, inner]
    src = render("softmax", COMMON=_rows_common(params, lanes), T=STORAGE[x.dtype.name])
    kb.dispatch(src, [("u", params), ("ro", kb.input(0)), ("rw", kb.output())], -(-rows * lanes // 256))


@webgpu_kernel("softmax_cross_entropy")
def _softmax_cross_entropy(step, kb):
    x, out = step.in_types[0], step.out_types[0]
    dt = x.dtype.name
    axis = normalize_axes(step.attrs["axis"], len(x.shape))[0]
    red = step.attrs["reduction"]
    rows, L, inner = _rows(x.shape, axis)
    lanes = _lanes(L)
    params = [rows, L, inner]
    if red == "none":
        dst, tout = kb.output(), dt
    else:
        dst, tout = kb.scratch(4 * max(rows, 1)), "float32"
    src = render("softmax_cross_entropy", COMMON=_rows_common(params, lanes), T=STORAGE[dt], TOUT=STORAGE[tout])
    if rows:
        kb.dispatch(src, [("u", params), ("ro", kb.input(0)), ("ro", kb.input(1)), ("rw", dst)],
                    -(-rows * lanes // 256))
    if red != "none":
        reduce_dispatch(kb, dst, kb.output(), "float32", out.dtype.name, "sum", ((), ()), ((rows,), (1,)),
                        mean=(red == "mean"))
