"""Reduction kernels (sum, maximum, minimum and their NaN-propagating forms, mean, product,
logical and / or), softmax and softmax cross entropy, and their gradient ops (passes of the
formula: the softmax kernel, elementwise maps and the row sums).

No kernel loop runs longer than a fixed bound, whatever the size (Mesa's llvmpipe silently stops
a shader loop after 65,535 iterations). Short reductions (< 256 elements) run one thread per
output; long ones a workgroup per chunk of 256 * ``_PER`` elements (each thread combines at most
``_PER`` in order, then a tree in workgroup memory), and with more than one chunk per output the
partial results are reduced again by the same kernels: a pairwise-like order, so long float sums
stay accurate. Rows of softmax longer than ``_ROW_MAX`` go through the same bounded passes.

``reduction_maximum``/``minimum`` skip NaN (MPSGraph's reductionMaximum; a slice of only NaN, or
an empty one, gives the seed -inf/+inf); the ``_propagate_nan`` forms give NaN for a slice holding
one. float16 accumulates in f32; bool sums count in i32 (MPSGraph casts bool to int32).

``reduction_arg_maximum``/``minimum`` skip NaN too (MPSGraph's reductionArgMaximum/Minimum), so
``x[argmax(x)]`` is ``reduction_maximum(x)``; a slice of only NaN gives -1, ties the first index.
One thread per slice walks it in order, a long loop (``loops.long_loop``).
"""
from __future__ import annotations


from ...ops._util import normalize_axes
from ...types import num_elements
from .channel_stats import moments
from .elementwise import elementwise_source
from .loops import long_loop
from .registry import webgpu_kernel
from .sort import _order, outer_inner
from .wgsl import COMPUTE, STORAGE, collapse, contiguous_strides, f32_literal, params_decl, render

_PER = 64  # elements one thread of the chunked reduction combines (in groups of 8)
_CHUNK = 256 * _PER  # elements per workgroup of the chunked reduction
_ROW_PER = 256  # elements one lane of a softmax row (or of a long row's chunk) takes
_ROW_MAX = 256 * _ROW_PER  # longer softmax rows take the multi-pass path

_MAX_I32, _MIN_I32 = "bitcast<i32>(0x7fffffffu)", "bitcast<i32>(0x80000000u)"
_INIT = {
    ("sum", "f32"): "0.0", ("sum", "i32"): "0i", ("sum", "u32"): "0u",
    ("max", "f32"): "-mg_inf()", ("max", "i32"): _MIN_I32, ("max", "u32"): "0u",
    ("min", "f32"): "mg_inf()", ("min", "i32"): _MAX_I32, ("min", "u32"): "0xffffffffu",
    ("pro", "f32"): "1.0", ("pro", "i32"): "1i", ("pro", "u32"): "1u",
    ("all", "u32"): "1u", ("any", "u32"): "0u",
}
_COMBINE = {
    ("sum", "f32"): "a + b", ("sum", "i32"): "a + b", ("sum", "u32"): "a + b",
    ("max", "f32"): "mg_fmax(a, b)", ("max", "i32"): "max(a, b)", ("max", "u32"): "max(a, b)",
    ("min", "f32"): "mg_fmin(a, b)", ("min", "i32"): "min(a, b)", ("min", "u32"): "min(a, b)",
    ("maxp", "f32"): "mg_max(a, b)", ("minp", "f32"): "mg_min(a, b)",
    ("prod", "f32"): "a * b", ("prod", "i32"): "a * b", ("prod", "u32"): "a * b",
    ("all", "u32"): "a & b", ("any", "u32"): "a | b",
}
# reduction_and / reduction_or read each element as 1 (nonzero or NaN: any bit but the sign's
# set) or 0
_TRUTH = {"f32": "select(0u, 1u, (bitcast<u32>(v) & 0x7fffffffu) != 0u)", "i32": "select(0u, 1u, v != 0i)",
          "u32": "select(0u, 1u, v != 0u)"}
_DIVIDE = {"f32": "a / f32(div)", "i32": "a / i32(div)", "u32": "a / div"}  # integer: truncated
PARTIAL_DTYPE = {"f32": "float32", "i32": "int32", "u32": "uint32"}
_KIND = {"reduction_sum": "sum", "reduction_maximum": "max", "reduction_minimum": "min",
         "reduction_maximum_propagate_nan": "maxp", "reduction_minimum_propagate_nan": "minp", "mean": "sum",
         "reduction_product": "prod", "reduction_and": "all", "reduction_or": "any"}


def _combine(kind: str, acc: str) -> str:
    return _COMBINE.get((kind, acc)) or _COMBINE[(kind[:3], acc)]  # integers have no NaN to propagate


def reduce_dispatch(kb, src, dst, in_dtype: str, out_dtype: str, kind: str, kept, reduced, mean=False,
                    divisor=None):
    """Record ``dst[o] = reduce_{j} src[base(o) + off(j)]``; ``kept``/``reduced``: (shape, strides).

    ``kind``: "sum", "max"/"min" (NaN skipped), "maxp"/"minp" (NaN propagated). A mean divides by
    ``divisor`` (the reduced count). Reductions longer than one chunk first write one partial
    result per chunk to scratch memory, then reduce those.
    """
    n_out = num_elements(kept[0])
    count = num_elements(reduced[0])
    divisor = count if divisor is None else divisor
    acc = COMPUTE[out_dtype]
    chunks = -(-count // _CHUNK) if count >= 256 else 1
    if chunks > 1:
        part_dtype = PARTIAL_DTYPE[acc]
        part = kb.scratch(4 * n_out * chunks)
        _record(kb, src, part, in_dtype, part_dtype, kind, kept, reduced, chunks, "a", 0)
        reduce_dispatch(kb, part, dst, part_dtype, out_dtype, kind, ((n_out,), (chunks,)), ((chunks,), (1,)),
                        mean, divisor)
        return
    fin = _DIVIDE[acc] if mean else "a"
    if out_dtype == "float16":
        fin = f"f16({fin})"
    _record(kb, src, dst, in_dtype, out_dtype, kind, kept, reduced, chunks, fin, divisor)


def _record(kb, src, dst, in_dtype, out_dtype, kind, kept, reduced, chunks, fin, divisor):
    n_out = num_elements(kept[0])
    count = num_elements(reduced[0])
    acc = COMPUTE[out_dtype]
    kshape, (kst,) = collapse(*kept)
    rshape, (rst,) = collapse(*reduced)
    params = [n_out, count, chunks, divisor]
    for k in reversed(range(len(kshape))):
        params += [kshape[k], kst[k]]
    for k in reversed(range(len(rshape))):
        params += [rshape[k], rst[k]]
    load = "f32" if in_dtype == "float16" else ("i32" if acc == "i32" and in_dtype == "bool" else "")
    common = render("reduce_common", PARAMS=params_decl(len(params)), TIN=STORAGE[in_dtype],
                    TOUT=STORAGE[out_dtype], KR=len(kshape), RR=len(rshape), ACC=acc,
                    COMBINE=_combine(kind, acc), FINISH=fin)
    common = common.replace("enable f16;\n", "")
    if kind in ("all", "any"):
        c = COMPUTE[in_dtype]
        common += (f"\nfn truth(w: {STORAGE[in_dtype]}) -> u32 {{ let v = {c}(w); "
                   f"return {_TRUTH[c]}; }}\n")
        load = "truth"
    init = _INIT[(kind[:3], acc)]  # "pro" for prod
    if count >= 256:
        src_code = render("reduce_wg", COMMON=common, ACC=acc, INIT=init, LOAD=load, PER=_PER)
        groups = n_out * chunks
    else:
        src_code = render("reduce_rows", COMMON=common, ACC=acc, INIT=init, LOAD=load)
        groups = -(-n_out // 256)
    kb.dispatch(src_code, [("u", params), ("ro", src), ("rw", dst)], groups)


@webgpu_kernel("reduction_sum", "reduction_maximum", "reduction_minimum", "reduction_maximum_propagate_nan",
               "reduction_minimum_propagate_nan", "mean", "reduction_product", "reduction_and", "reduction_or")
def _reduce(step, kb):
    """An empty slice gives the seed: 0 for a sum, -inf/+inf (or the integer extremes) for a
    maximum/minimum, NaN for a float mean (0 / 0) and 0 for an integer one."""
    t = step.op.type
    x, out = step.in_types[0], step.out_types[0]
    axes = normalize_axes(step.attrs["axes"], len(x.shape))
    if t == "mean" and x.dtype.is_floating and num_elements(x.shape):
        # the kernel of variance's mean (normalization.py), so a mean computed with its variance
        # in one step has the bits of one computed alone
        moments(kb, kb.input(0), x.dtype.name, tuple(x.shape), axes, mean=(kb.output(), out.dtype.name))
        return
    st = contiguous_strides(x.shape)
    kept = (tuple(d for i, d in enumerate(x.shape) if i not in axes), tuple(s for i, s in enumerate(st) if i not in axes))
    red = (tuple(x.shape[i] for i in axes), tuple(st[i] for i in axes))
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


def _row_axes(rows, L, inner):
    """(kept, reduced) of the rows of an (outer, L, inner) tensor, for ``reduce_dispatch``."""
    return ((rows // max(inner, 1), inner), (L * inner, 1)), ((L,), (inner,))


def _long_rows(kb, x, dt, rows, L, inner):
    """The maximum ``m`` and the sum ``s`` of exp(x - m) of every row, in bounded passes:
    returns (m, s, chunks, partial kernel source, params)."""
    kept, red = _row_axes(rows, L, inner)
    m, s = kb.scratch(4 * rows), kb.scratch(4 * rows)
    reduce_dispatch(kb, x, m, dt, "float32", "maxp", kept, red)
    chunks = -(-L // _ROW_MAX)
    params = [rows, L, inner, chunks]
    part = kb.scratch(4 * rows * chunks)
    src = render("softmax_partial", PARAMS=params_decl(len(params)), T=STORAGE[dt], PER=_ROW_PER,
                 LABELS="", PART=4, TERM="mg_exp(xv - mr)")
    kb.dispatch(src, [("u", params), ("ro", x), ("ro", m), ("ro", s), ("rw", part)], rows * chunks)
    reduce_dispatch(kb, part, s, "float32", "float32", "sum", ((rows,), (chunks,)), ((chunks,), (1,)))
    return m, s, chunks, params


@webgpu_kernel("softmax")
def _softmax(step, kb):
    x = step.in_types[0]
    _softmax_into(kb, kb.input(0), kb.output(), x.dtype.name, x.shape, step.attrs["axis"])


def _softmax_into(kb, src_ref, dst_ref, dt: str, shape, axis) -> None:
    """``dst`` = softmax of ``src`` (of ``shape`` and dtype ``dt``) along ``axis``."""
    axis = normalize_axes(axis, len(shape))[0]
    rows, L, inner = _rows(shape, axis)
    if rows == 0 or L == 0:
        return
    if L > _ROW_MAX:
        m, s, _, _ = _long_rows(kb, src_ref, dt, rows, L, inner)
        n = rows * L
        params = [n, L, inner]
        src = render("softmax_write", PARAMS=params_decl(len(params)), T=STORAGE[dt])
        kb.dispatch(src, [("u", params), ("ro", src_ref), ("ro", m), ("ro", s), ("rw", dst_ref)], -(-n // 256))
        return
    lanes = _lanes(L)
    params = [rows, L, inner]
    src = render("softmax", COMMON=_rows_common(params, lanes), T=STORAGE[dt])
    kb.dispatch(src, [("u", params), ("ro", src_ref), ("rw", dst_ref)], -(-rows * lanes // 256))


def _map(kb, ins, out, dt: str, out_shape, expr) -> None:
    """``out`` = ``expr(values)`` elementwise with broadcasting; ``ins``: [(ref, shape)] of dtype ``dt``."""
    src, params = elementwise_source([dt] * len(ins), [shp for _, shp in ins], dt, out_shape,
                                     lambda v, ct, o: expr(v))
    kb.dispatch(src, [("u", params)] + [("ro", r) for r, _ in ins] + [("rw", out)], -(-params[0] // 256))


def _row_sum(kb, src_ref, dst_ref, dt: str, shape, axis: int) -> None:
    """``dst`` = the sum of ``src`` along ``axis`` (kept as size 1), in the tensor's type."""
    rows, L, inner = _rows(shape, axis)
    kept, red = _row_axes(rows, L, inner)
    reduce_dispatch(kb, src_ref, dst_ref, dt, dt, "sum", kept, red)


@webgpu_kernel("softmax_gradient")
def _softmax_gradient(step, kb):
    """The passes of the formula, each in the tensor's type: y = softmax(x), s = sum(dy * y),
    y * (dy - s)."""
    x = step.in_types[1]
    dt, shape = x.dtype.name, tuple(x.shape)
    n = num_elements(shape)
    if n == 0:
        return
    axis = normalize_axes(step.attrs["axis"], len(shape))[0]
    kept = tuple(1 if i == axis else d for i, d in enumerate(shape))
    y, t, s = kb.scratch(4 * n), kb.scratch(4 * n), kb.scratch(4 * max(num_elements(kept), 1))
    _softmax_into(kb, kb.input(1), y, dt, shape, axis)
    _map(kb, [(kb.input(0), shape), (y, shape)], t, dt, shape, lambda v: f"{v[0]} * {v[1]}")
    _row_sum(kb, t, s, dt, shape, axis)
    _map(kb, [(y, shape), (kb.input(0), shape), (s, kept)], kb.output(), dt, shape,
         lambda v: f"{v[0]} * ({v[1]} - {v[2]})")


@webgpu_kernel("softmax_cross_entropy_gradient")
def _softmax_cross_entropy_gradient(step, kb):
    """(softmax(x) * sum(labels) - labels) * scale, scale = dy (over the rows for "mean")."""
    dy, x = step.in_types[0], step.in_types[1]
    dt, shape = x.dtype.name, tuple(x.shape)
    n = num_elements(shape)
    if n == 0:
        return
    axis = normalize_axes(step.attrs["axis"], len(shape))[0]
    kept = tuple(1 if i == axis else d for i, d in enumerate(shape))
    p, sl = kb.scratch(4 * n), kb.scratch(4 * max(num_elements(kept), 1))
    _softmax_into(kb, kb.input(1), p, dt, shape, axis)
    _row_sum(kb, kb.input(2), sl, dt, shape, axis)
    scale, dshape = kb.input(0), tuple(dy.shape)
    if step.attrs["reduction"] == "mean":
        rows = n // shape[axis] if shape[axis] else num_elements(kept)
        scale = kb.scratch(4 * max(num_elements(dshape), 1))
        _map(kb, [(kb.input(0), dshape)], scale, dt, dshape, lambda v: f"{v[0]} / {f32_literal(float(rows))}")
    _map(kb, [(p, shape), (sl, kept), (kb.input(2), shape), (scale, dshape)], kb.output(), dt, shape,
         lambda v: f"(({v[0]} * {v[1]}) - {v[2]}) * {v[3]}")


@webgpu_kernel("softmax_cross_entropy")
def _softmax_cross_entropy(step, kb):
    x, out = step.in_types[0], step.out_types[0]
    dt = x.dtype.name
    axis = normalize_axes(step.attrs["axis"], len(x.shape))[0]
    red = step.attrs["reduction"]
    rows, L, inner = _rows(x.shape, axis)
    if red == "none":
        dst, tout = kb.output(), dt
    else:
        dst, tout = kb.scratch(4 * max(rows, 1)), "float32"
    if rows and L > _ROW_MAX:
        _long_cross_entropy(kb, dt, tout, dst, rows, L, inner)
    elif rows:
        lanes = _lanes(L)
        params = [rows, L, inner]
        src = render("softmax_cross_entropy", COMMON=_rows_common(params, lanes), T=STORAGE[dt], TOUT=STORAGE[tout])
        kb.dispatch(src, [("u", params), ("ro", kb.input(0)), ("ro", kb.input(1)), ("rw", dst)],
                    -(-rows * lanes // 256))
    if red != "none":
        reduce_dispatch(kb, dst, kb.output(), "float32", out.dtype.name, "sum", ((), ()), ((rows,), (1,)),
                        mean=(red == "mean"))


def _long_cross_entropy(kb, dt, tout, dst, rows, L, inner):
    """loss[row] = -sum(labels * (x - m - log(s))) of rows longer than ``_ROW_MAX``, chunk by chunk."""
    x, labels = kb.input(0), kb.input(1)
    m, s, chunks, params = _long_rows(kb, x, dt, rows, L, inner)
    part = kb.scratch(4 * rows * chunks)
    decl = f"@group(0) @binding(4) var<storage, read> labels: array<{STORAGE[dt]}>;"
    src = render("softmax_partial", PARAMS=params_decl(len(params)), T=STORAGE[dt], PER=_ROW_PER,
                 LABELS=decl, PART=5, TERM="-(f32(labels[k]) * (xv - mr - mg_log(s[row])))")
    kb.dispatch(src, [("u", params), ("ro", x), ("ro", m), ("ro", s), ("ro", labels), ("rw", part)],
                rows * chunks)
    reduce_dispatch(kb, part, dst, "float32", tout, "sum", ((rows,), (chunks,)), ((chunks,), (1,)))


@webgpu_kernel("reduction_arg_maximum", "reduction_arg_minimum")
def _arg_reduce(step, kb):
    x = step.in_types[0]
    dt = x.dtype.name
    axis = normalize_axes(step.attrs["axis"], len(x.shape), "axis")[0]
    outer, L, inner = outer_inner(x.shape, axis)
    rows = outer * inner
    head = [rows, L, inner]
    better = "v > best" if step.op.type == "reduction_arg_maximum" else "v < best"
    src = render("arg_reduce", PARAMS=params_decl(len(head) + 2), T=STORAGE[dt], C=COMPUTE[dt],
                 ORDER=_order(dt), BETTER=better)

    def record(j0, j1, state):
        kb.dispatch(src, [("u", head + [j0, j1]), ("ro", kb.input(0)), ("rw", kb.output()), ("rw", state)],
                    -(-rows // 256))

    long_loop(kb, L, rows, 2, record)
