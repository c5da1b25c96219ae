"""Kernels of sort, arg_sort, top_k, top_k_gradient and the arg reductions.

Sorting works by rank: one thread per element counts the elements of its row that come before it
in the stable order (NaN largest, ties by index) and writes itself at that position, so any row
length works, powers of two or not, and 0 or 1. That is L^2 comparisons per row of length L:
fine for the short rows of top-k and of the sorts models use, slow for very long rows.
"""
from __future__ import annotations

from ...ops._util import normalize_axes
from ...types import num_elements
from .registry import webgpu_kernel
from .wgsl import COMPUTE, STORAGE, params_decl, render


def _order(dtype: str) -> str:
    c = COMPUTE[dtype]
    return render("order_common", C=c, ISNAN="mg_isnan(a)" if c == "f32" else "false")


def outer_inner(shape, axis: int) -> tuple:
    """(outer, L, inner) of a tensor seen as rows along ``axis``."""
    return num_elements(shape[:axis]), shape[axis], num_elements(shape[axis + 1:])


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
    if step.op.type == "sort":
        decl, write = _decl(2, "dst", STORAGE[dt]), "dst[base + rank * inner] = src[e];"
    else:
        decl, write = _decl(2, "dst", "i32"), "dst[base + rank * inner] = i32(l);"
    _rank_dispatch(kb, dt, x.shape, axis, step.attrs["descending"], 0, [("rw", kb.output())], decl, write)


@webgpu_kernel("top_k")
def _top_k(step, kb):
    x = step.in_types[0]
    dt = x.dtype.name
    decls = _decl(2, "values", STORAGE[dt]) + "\n" + _decl(3, "indices", "i32")
    write = ("let k = prm(4u);\n  if (rank < k) { values[o * k + rank] = src[e]; "
             "indices[o * k + rank] = i32(l); }")
    _rank_dispatch(kb, dt, x.shape, len(x.shape) - 1, True, int(step.attrs["k"]),
                   [("rw", kb.output(0)), ("rw", kb.output(1))], decls, write)


@webgpu_kernel("top_k_gradient")
def _top_k_gradient(step, kb):
    """Inputs (incoming_gradient, source): the rank pass runs over the source (binding 1)."""
    dy, x = step.in_types
    dt = x.dtype.name
    _, L, inner = outer_inner(x.shape, len(x.shape) - 1)
    n = num_elements(x.shape)
    params = [n, L, inner, 1, int(step.attrs["k"])]
    decls = _decl(2, "dy", STORAGE[dt], rw=False) + "\n" + _decl(3, "dx", STORAGE[dt])
    write = ("let k = prm(4u);\n  if (rank < k) { dx[e] = dy[o * k + rank]; } "
             f"else {{ dx[e] = {STORAGE[dt]}(0); }}")
    src = render("sort_rank", PARAMS=params_decl(len(params)), T=STORAGE[dt], C=COMPUTE[dt],
                 BINDINGS=decls, ORDER=_order(dt), WRITE=write)
    kb.dispatch(src, [("u", params), ("ro", kb.input(1)), ("ro", kb.input(0)), ("rw", kb.output())], -(-n // 256))


@webgpu_kernel("reduction_arg_maximum", "reduction_arg_minimum")
def _arg_reduce(step, kb):
    x = step.in_types[0]
    dt = x.dtype.name
    axis = normalize_axes(step.attrs["axis"], len(x.shape), "axis")[0]
    outer, L, inner = outer_inner(x.shape, axis)
    rows = outer * inner
    params = [rows, L, inner]
    better = "v > best" if step.op.type == "reduction_arg_maximum" else "v < best"
    src = render("arg_reduce", PARAMS=params_decl(len(params)), T=STORAGE[dt], C=COMPUTE[dt],
                 ORDER=_order(dt), BETTER=better)
    kb.dispatch(src, [("u", params), ("ro", kb.input(0)), ("rw", kb.output())], -(-rows // 256))
