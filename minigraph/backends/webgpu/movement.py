"""Padding and data-movement kernels: pad_tensor, pad_gradient, tile, tile_gradient, split,
stack, reverse (flatten_2d is a view: its output shares the input's buffer).

tile, split and stack are strided copies (``kernels/strided_copy.wgsl``); reverse is one with
negative strides (u32 arithmetic wraps, so a stride of 2**32 - s walks backwards). A pad maps
each result coordinate to its source coordinate per axis (``kernels/pad.wgsl``); its gradient
folds one padded axis per dispatch (``kernels/pad_grad_axis.wgsl``), a sum over that axis's
positions that read each source element (the padding's and its own), so no atomics are needed. That sum, and
tile_gradient's over the copies, are long loops (``loops.long_loop``).
"""
from __future__ import annotations

import numpy as np

from ...descriptors import PaddingMode
from ...ops._util import normalize_axes
from ...ops.padding import fill_value
from ...types import num_elements
from .loops import long_loop
from .registry import webgpu_kernel
from .shape import strided_copy
from .wgsl import COMPUTE, STORAGE, collapse, contiguous_strides, load, params_decl, render, store

_MAP_HEAD = ("// (source coordinate, or -1 for the constant; periods crossed) of position j on an axis\n"
             "fn pad_map(j: u32, size: u32, left: u32) -> vec2<i32> {\n"
             "  let n = i32(size);\n  let i = i32(j) - i32(left);\n"
             "  if (i >= 0 && i < n) { return vec2<i32>(i, 0); }\n")
# the fewest whole periods p = n - 1 that bring i inside (ops/padding.py's source_index)
_PERIOD = ("  let p = n - 1;\n  let q = select(-((i - 1) / p), (p - 1 - i) / p, i < 0);\n")
_MODES = {
    PaddingMode.CONSTANT: "  return vec2<i32>(-1, 0);\n",
    PaddingMode.ZERO: "  return vec2<i32>(-1, 0);\n",
    PaddingMode.CLAMP_TO_EDGE: "  return vec2<i32>(clamp(i, 0, n - 1), 0);\n",
    PaddingMode.REFLECT: "  if (i < 0) { return vec2<i32>(-i, 0); }\n  return vec2<i32>(2 * (n - 1) - i, 0);\n",
    PaddingMode.SYMMETRIC: "  if (i < 0) { return vec2<i32>(-i - 1, 0); }\n  return vec2<i32>(2 * n - 1 - i, 0);\n",
    PaddingMode.PERIODIC: _PERIOD + "  return vec2<i32>(i + q * p, 0);\n",
    PaddingMode.ANTI_PERIODIC: _PERIOD + "  return vec2<i32>(i + q * p, q);\n",
}


def _pad_map(mode: PaddingMode) -> str:
    return _MAP_HEAD + _MODES[PaddingMode(mode)] + "}\n"


def _literal(value: np.ndarray, dtype: str) -> str:
    """A WGSL expression of exactly ``value`` (bit-exact, NaN and -0 included) in ``dtype``'s storage type."""
    if dtype == "float32":
        return f"bitcast<f32>({int(value.view(np.uint32)):#010x}u)"
    if dtype == "float16":
        return f"f16({_literal(value.astype(np.float32), 'float32')})"  # a float16 is exact in float32
    if dtype == "int32":
        return f"bitcast<i32>({int(value.view(np.uint32)):#010x}u)"
    return f"{int(value)}u"  # uint32, bool (stored as u32)


def _negate(dtype: str) -> str:
    return "0u - v" if dtype in ("uint32", "bool") else "-v"


@webgpu_kernel("pad_tensor")
def _pad(step, kb):
    out = step.out_types[0]
    dt, n = out.dtype.name, num_elements(out.shape)
    if n == 0:
        return
    a = step.attrs
    shape = step.in_types[0].shape
    ist = contiguous_strides(shape)
    params = [n]
    for d in reversed(range(len(shape))):
        params += [out.shape[d], shape[d], a["left_padding"][d], ist[d]]
    fill = fill_value(a["padding_mode"], a["constant_value"], out.dtype.np_dtype)
    src = render("pad", PARAMS=params_decl(len(params)), T=STORAGE[dt], RANK=len(shape),
                 MAP=_pad_map(a["padding_mode"]), CONST=_literal(fill, dt), NEG=_negate(dt))
    kb.dispatch(src, [("u", params), ("ro", kb.input(0)), ("rw", kb.output())], -(-n // 256))


@webgpu_kernel("pad_gradient")
def _pad_grad(step, kb):
    out = step.out_types[0]
    dt = out.dtype.name
    a = step.attrs
    shape = list(step.in_types[0].shape)  # the padded shape, folded one axis at a time
    axes = [d for d in range(len(shape)) if a["left_padding"][d] or a["right_padding"][d]]
    if num_elements(out.shape) == 0:
        return
    if not axes:
        strided_copy(kb, kb.input(0), kb.output(), dt, out.shape, contiguous_strides(out.shape),
                     contiguous_strides(out.shape))
        return
    src_code = render("pad_grad_axis", PARAMS=params_decl(7), T=STORAGE[dt], C=COMPUTE[dt],
                      MAP=_pad_map(a["padding_mode"]), LOAD=load(dt, "src[base + j * inner]"),
                      STORE=store(dt, "acc"))
    cur = kb.input(0)
    for k, d in enumerate(axes):
        shape[d] = out.shape[d]
        n = num_elements(shape)
        dst = kb.output() if k == len(axes) - 1 else kb.scratch(n * (2 if dt == "float16" else 4))
        inner = num_elements(shape[d + 1:])
        padded = out.shape[d] + a["left_padding"][d] + a["right_padding"][d]
        head = [n, inner, out.shape[d], padded, a["left_padding"][d]]

        def record(j0, j1, state, head=head, cur=cur, dst=dst, n=n):
            kb.dispatch(src_code, [("u", head + [j0, j1]), ("ro", cur), ("rw", dst), ("rw", state)], -(-n // 256))

        long_loop(kb, a["left_padding"][d] + a["right_padding"][d] + 1, n, 1, record)
        cur = dst


@webgpu_kernel("tile")
def _tile(step, kb):
    out = step.out_types[0]
    shape = step.in_types[0].shape
    m = step.attrs["multiplier"]
    ist = contiguous_strides(shape)
    split = [v for k, s in zip(m, shape) for v in (k, s)]  # the result as (copy, element) per axis
    src_st = [v for s in ist for v in (0, s)]
    strided_copy(kb, kb.input(0), kb.output(), out.dtype.name, split, src_st, contiguous_strides(split))


@webgpu_kernel("tile_gradient")
def _tile_grad(step, kb):
    out = step.out_types[0]
    dt, n = out.dtype.name, num_elements(out.shape)
    if n == 0:
        return
    m = step.attrs["multiplier"]
    gst = contiguous_strides(step.in_types[0].shape)
    copies = num_elements(m)
    axes = []
    for d in reversed(range(len(m))):
        axes += [out.shape[d], m[d], gst[d]]
    src = render("tile_grad", PARAMS=params_decl(4 + len(axes)), T=STORAGE[dt], C=COMPUTE[dt], RANK=len(m),
                 LOAD=load(dt, "src[off]"), STORE=store(dt, "acc"))

    def record(j0, j1, state):
        kb.dispatch(src, [("u", [n, copies, j0, j1] + axes), ("ro", kb.input(0)), ("rw", kb.output()),
                          ("rw", state)], -(-n // 256))

    long_loop(kb, copies, n, 1, record, inner=len(m))


@webgpu_kernel("split")
def _split(step, kb):
    shape = step.in_types[0].shape
    d = normalize_axes(step.attrs["axis"], len(shape))[0]
    ist = contiguous_strides(shape)
    at = 0
    for k, t in enumerate(step.out_types):
        strided_copy(kb, kb.input(0), kb.output(k), t.dtype.name, t.shape, ist, contiguous_strides(t.shape),
                     src_off=at * ist[d])
        at += t.shape[d]


@webgpu_kernel("stack")
def _stack(step, kb):
    out = step.out_types[0]
    d = step.attrs["axis"]
    ost = contiguous_strides(out.shape)
    shape = tuple(out.shape[:d]) + tuple(out.shape[d + 1:])
    dst_st = ost[:d] + ost[d + 1:]
    for k, t in enumerate(step.in_types):
        padded = (1,) * (len(shape) - len(t.shape)) + tuple(t.shape)
        ist = contiguous_strides(padded)
        src_st = tuple(0 if p == 1 and o != 1 else s for p, s, o in zip(padded, ist, shape))
        strided_copy(kb, kb.input(k), kb.output(), out.dtype.name, shape, src_st, dst_st, dst_off=k * ost[d])


@webgpu_kernel("reverse")
def _reverse(step, kb):
    out = step.out_types[0]
    shape, n = out.shape, num_elements(out.shape)
    if n == 0:
        return
    axes = normalize_axes(step.attrs["axes"], len(shape))
    ist = contiguous_strides(shape)
    src_st = [-s if d in axes else s for d, s in enumerate(ist)]
    start = sum((shape[d] - 1) * ist[d] for d in axes)
    cshape, (ss, ds) = collapse(shape, src_st, contiguous_strides(shape))
    params = [n, start, 0]
    for k in reversed(range(len(cshape))):
        params += [cshape[k], ss[k] % (1 << 32), ds[k]]
    src = render("strided_copy", PARAMS=params_decl(len(params)), T=STORAGE[out.dtype.name], RANK=len(cshape))
    kb.dispatch(src, [("u", params), ("ro", kb.input(0)), ("rw", kb.output())], -(-n // 256))
