"""2D max and average pooling and their gradients (semantics: ``ops/pooling.py``).

Pooling is a ``ConvGeometry`` without weights; the kernels share the convolution kernels'
constants. Forward: one thread per output. Gradients gather (one thread per dx element, no
atomics); the max-pooling gradient first records each window's argmax (first maximal tap in
row-major order, the first NaN winning) in a scratch buffer, exactly the tie rule of the NumPy
backend.
"""
from __future__ import annotations

from math import prod

from ...ops.geometry import ConvGeometry, geometry_of
from .convolution import axis_sizes, axis_strides, constants, decode
from .registry import webgpu_kernel
from .wgsl import STORAGE, render


def _pool_constants(geo: ConvGeometry, include_padding: bool) -> dict:
    """The convolution constants plus the range [LO, HI) of positions an average counts, per axis."""
    c = constants(geo)
    for axis, size, before, after in zip("HW", geo.input_size, geo.padding_before, geo.padding_after):
        c["LO_" + axis], c["HI_" + axis] = (-before, size + after) if include_padding else (0, size)
    return c


def _common(c: dict) -> str:
    return render("pool_common", **c)


_STORE = {"max": "  y[i] = {T}(m);", "avg": "  y[i] = {T}(s / avg_divisor(a_h, a_w));", "arg": "  y[i] = best;"}


def _forward_source(geo: ConvGeometry, c: dict, dtype: str, mode: str):
    total = geo.batch * geo.in_channels * prod(geo.output_size)
    store = _STORE[mode].format(T=STORAGE[dtype])
    src = render("pool_forward", COMMON=_common(c), T=STORAGE[dtype], TOUT="u32" if mode == "arg" else STORAGE[dtype],
                 TOTAL=total, STORE=store, **c,
                 DECODE=decode(axis_sizes(geo, geo.in_channels, geo.output_size), axis_strides(geo, geo.result_shape)))
    return src, total


def _pool(step, kb, mode: str):
    geo = geometry_of(step)
    c = _pool_constants(geo, step.attrs["descriptor"].include_zero_pad_to_average)
    src, total = _forward_source(geo, c, step.out_types[0].dtype.name, mode)
    kb.dispatch(src, [("ro", kb.input(0)), ("rw", kb.output())], -(-total // 256))


@webgpu_kernel("max_pooling_2d")
def _max_pool(step, kb):
    _pool(step, kb, "max")


@webgpu_kernel("avg_pooling_2d")
def _avg_pool(step, kb):
    _pool(step, kb, "avg")


_ACCUM = {"max": "      if (arg[k] == kh * KW + kw) { acc = acc + f32(dy[k]); }",
          "avg": "      acc = acc + f32(dy[k]) / avg_divisor(oh, ow);"}


def _pool_grad(step, kb, mode: str):
    geo = geometry_of(step)
    dt = step.out_types[0].dtype.name
    c = _pool_constants(geo, step.attrs["descriptor"].include_zero_pad_to_average)
    arg = kb.input(0)  # unused by the average gradient; any read-only buffer fills the slot
    if mode == "max":
        src, total = _forward_source(geo, c, dt, "arg")
        arg = kb.scratch(4 * max(total, 1))
        kb.dispatch(src, [("ro", kb.input(1)), ("rw", arg)], -(-total // 256))
    total = prod(geo.source_shape)
    src = render("pool_grad", COMMON=_common(c), T=STORAGE[dt], TOTAL=total, ACCUM=_ACCUM[mode], **c,
                 DECODE=decode(axis_sizes(geo, geo.in_channels, geo.input_size), axis_strides(geo, geo.source_shape)))
    kb.dispatch(src, [("ro", kb.input(0)), ("ro", arg), ("rw", kb.output())], -(-total // 256))


@webgpu_kernel("max_pooling_2d_gradient")
def _max_pool_grad(step, kb):
    _pool_grad(step, kb, "max")


@webgpu_kernel("avg_pooling_2d_gradient")
def _avg_pool_grad(step, kb):
    _pool_grad(step, kb, "avg")
