"""Kernels of sort, arg_sort, top_k, top_k_axis, bottom_k and their gradients (the arg reductions
are in reduction.py). top-k / bottom-k along an axis are the first k of the descending /
ascending order along it, written at ``(outer, j, inner)`` of the result.

One stable order (NaN largest, ties by index), two ways to reach it, both for any row length
(powers of two or not, 0 and 1 included):

- rows of up to ``RANK_MAX`` elements: a rank sort, one dispatch. One thread per element counts
  the elements of its row that come before it and writes itself at that position (L
  comparisons each);
- longer rows: a bottom-up merge sort of (value, index) pairs, ceil(log2 L) passes, each
  merging neighbouring sorted runs; an element finds its place in the other run by a binary
  search (L log^2 L comparisons in all).
"""
from __future__ import annotations

from ...ops._util import normalize_axes
from ...types import num_elements
from .registry import webgpu_kernel
from .wgsl import COMPUTE, STORAGE, params_decl, render


RANK_MAX = 256  # longer rows take the merge sort


def _order(dtype: str) -> str:
    c = COMPUTE[dtype]
    return render("order_common", C=c, ISNAN="mg_isnan(a)" if c == "f32" else "false")


def outer_inner(shape, axis: int) -> tuple:
    """(outer, L, inner) of a tensor seen as rows along ``axis``."""
    return num_elements(shape[:axis]), shape[axis], num_elements(shape[axis + 1:])


def _sorted_pairs(kb, source, dtype, shape, axis, descending):
    """Scratch (values, indices): every row of ``source`` along ``axis`` sorted, as contiguous rows."""
    _, L, inner = outer_inner(shape, axis)
    n = num_elements(shape)
    c = COMPUTE[dtype]
    vals, idx = kb.scratch(4 * n), kb.scratch(4 * n)
    params = [n, L, inner]
    kb.dispatch(render("merge_load", PARAMS=params_decl(len(params)), T=STORAGE[dtype], C=c),
                [("u", params), ("ro", source), ("rw", vals), ("rw", idx)], -(-n // 256))
    other = (kb.scratch(4 * n), kb.scratch(4 * n))
    src = render("merge_pass", PARAMS=params_decl(4), C=c, ORDER=_order(dtype))
    width = 1
    while width < L:
        params = [n, L, width, int(bool(descending))]
        kb.dispatch(src, [("u", params), ("ro", vals), ("ro", idx), ("rw", other[0]), ("rw", other[1])],
                    -(-n // 256))
        (vals, idx), other = other, (vals, idx)
        width *= 2
    return vals, idx


def _merge_dispatch(kb, dtype, shape, axis, descending, k, bindings, decls, write):
    """The merge sort, then ``write`` once per sorted position ``i`` of each row (``at``: its
    place in the tensor's layout; ``vals[p]``, ``idx[p]``: the pair sorted there)."""
    _, L, inner = outer_inner(shape, axis)
    n = num_elements(shape)
    vals, idx = _sorted_pairs(kb, kb.input(0), dtype, shape, axis, descending)
    params = [n, L, inner, k]
    src = render("merge_store", PARAMS=params_decl(len(params)), C=COMPUTE[dtype], BINDINGS=decls, WRITE=write)
    kb.dispatch(src, [("u", params), ("ro", vals), ("ro", idx)] + bindings, -(-n // 256))


def _rank_dispatch(kb, dtype, shape, axis, descending, k, bindings, decls, write):
    _, L, inner = outer_inner(shape, axis)
    n = num_elements(shape)
    params = [n, L, inner, int(bool(descending)), k]
    src = render("sort_rank", PARAMS=params_decl(len(params)), T=STORAGE[dtype], C=COMPUTE[dtype],
                 BINDINGS=decls, ORDER=_order(dtype), WRITE=write)
    kb.dispatch(src, [("u", params), ("ro", kb.input(0))] + bindings, -(-n // 256))


def _decl(binding: int, name: str, wgsl_type: str, rw: bool = True) -> str:
    access = "read_write" if rw else "read"
    return f"@group(0) @binding({binding}) var<storage, {access}> {name}: array<{wgsl_type}>;"


@webgpu_kernel("sort", "arg_sort")
def _sort(step, kb):
    x = step.in_types[0]
    dt = x.dtype.name
    axis = normalize_axes(step.attrs["axis"], len(x.shape), "axis")[0]
    t = STORAGE[dt] if step.op.type == "sort" else "i32"
    if x.shape[axis] > RANK_MAX:
        write = f"dst[at] = {t}({'vals' if step.op.type == 'sort' else 'idx'}[p]);"
        _merge_dispatch(kb, dt, x.shape, axis, step.attrs["descending"], 0, [("rw", kb.output())],
                        _decl(3, "dst", t), write)
        return
    write = "dst[base + rank * inner] = " + ("src[e];" if step.op.type == "sort" else "i32(l);")
    _rank_dispatch(kb, dt, x.shape, axis, step.attrs["descending"], 0, [("rw", kb.output())], _decl(2, "dst", t), write)


def _k_op(step) -> tuple:
    """(axis, descending) of a top-k-like op."""
    x = step.in_types[-1]
    axis = normalize_axes(step.attrs["axis"], len(x.shape), "axis")[0] if "axis" in step.attrs else len(x.shape) - 1
    return axis, not step.op.type.startswith("bottom_k")


@webgpu_kernel("top_k", "top_k_axis", "bottom_k")
def _top_k(step, kb):
    x = step.in_types[0]
    dt = x.dtype.name
    axis, descending = _k_op(step)
    k = int(step.attrs["k"])
    outs = [("rw", kb.output(0)), ("rw", kb.output(1))]
    if x.shape[axis] > RANK_MAX:
        decls = _decl(3, "values", STORAGE[dt]) + "\n" + _decl(4, "indices", "i32")
        write = ("let k = prm(3u);\n  let w = ((row / inner) * k + i) * inner + row % inner;\n"
                 f"  if (i < k) {{ values[w] = {STORAGE[dt]}(vals[p]); indices[w] = i32(idx[p]); }}")
        _merge_dispatch(kb, dt, x.shape, axis, descending, k, outs, decls, write)
        return
    decls = _decl(2, "values", STORAGE[dt]) + "\n" + _decl(3, "indices", "i32")
    write = ("let k = prm(4u);\n  let w = (o * k + rank) * inner + n;\n"
             "  if (rank < k) { values[w] = src[e]; indices[w] = i32(l); }")
    _rank_dispatch(kb, dt, x.shape, axis, descending, k, outs, decls, write)


@webgpu_kernel("top_k_gradient", "top_k_axis_gradient", "bottom_k_gradient")
def _top_k_gradient(step, kb):
    """Inputs (incoming_gradient, source): the rank pass runs over the source (binding 1)."""
    dy, x = step.in_types
    dt = x.dtype.name
    axis, descending = _k_op(step)
    _, L, inner = outer_inner(x.shape, axis)
    n = num_elements(x.shape)
    k = int(step.attrs["k"])
    if L > RANK_MAX:  # zeros, then each of the first k sorted positions sends dy to its element
        zero = render("merge_store", PARAMS=params_decl(4), C=COMPUTE[dt], BINDINGS=_decl(3, "dx", STORAGE[dt]),
                      WRITE=f"dx[p] = {STORAGE[dt]}(0);")
        vals, idx = _sorted_pairs(kb, kb.input(1), dt, x.shape, axis, descending)
        kb.dispatch(zero, [("u", [n, L, inner, k]), ("ro", vals), ("ro", idx), ("rw", kb.output())], -(-n // 256))
        decls = _decl(3, "dx", STORAGE[dt]) + "\n" + _decl(4, "dy", STORAGE[dt], rw=False)
        write = ("let k = prm(3u);\n  let o = row / inner;\n  let m = row % inner;\n"
                 "  if (i < k) { dx[(o * L + idx[p]) * inner + m] = dy[(o * k + i) * inner + m]; }")
        src = render("merge_store", PARAMS=params_decl(4), C=COMPUTE[dt], BINDINGS=decls, WRITE=write)
        kb.dispatch(src, [("u", [n, L, inner, k]), ("ro", vals), ("ro", idx), ("rw", kb.output()),
                          ("ro", kb.input(0))], -(-n // 256))
        return
    params = [n, L, inner, int(descending), k]
    decls = _decl(2, "dy", STORAGE[dt], rw=False) + "\n" + _decl(3, "dx", STORAGE[dt])
    write = ("let k = prm(4u);\n  if (rank < k) { dx[e] = dy[(o * k + rank) * inner + n]; } "
             f"else {{ dx[e] = {STORAGE[dt]}(0); }}")
    src = render("sort_rank", PARAMS=params_decl(len(params)), T=STORAGE[dt], C=COMPUTE[dt],
                 BINDINGS=decls, ORDER=_order(dt), WRITE=write)
    kb.dispatch(src, [("u", params), ("ro", kb.input(1)), ("ro", kb.input(0)), ("rw", kb.output())], -(-n // 256))
