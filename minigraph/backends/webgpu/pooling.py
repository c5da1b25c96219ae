"""2D max and average pooling and their gradients (semantics: ``ops/pooling.py``).

Pooling is a ``ConvGeometry`` without weights; the kernels share the convolution kernels'
constants. Forward: one thread per output. Gradients gather (one thread per dx element, no
atomics); the max-pooling gradient first records each window's argmax (first maximal tap in
row-major order, the first NaN winning) in a scratch buffer, exactly the tie rule of the NumPy
backend.

Loops stay bounded (llvmpipe stops a shader's loops after 65,535 iterations in all): the
averages' divisors are counted in closed form, the gradients visit only the taps whose windows
exist (one per axis for a global pooling), and windows whose loops would run more than
``convolution._LOOP_MAX`` iterations take the multi-pass path: chunks of taps, one invocation
per output and chunk (``conv_part.wgsl``), then the partials reduced (sums by
``reduce_dispatch``; maxima by ``pool_arg_combine.wgsl``, which keeps the tie rule).
"""
from __future__ import annotations

from math import prod

from ...ops.geometry import ConvGeometry, geometry_of
from . import convolution as conv
from .conv_constants import axis_sizes, axis_strides, constants, decode, reach
from .convolution import nested_iterations, part_source
from .registry import webgpu_kernel
from .wgsl import STORAGE, render


def _pool_constants(geo: ConvGeometry, include_padding: bool) -> dict:
    """The convolution constants plus the range [LO, HI) of positions an average counts, per axis."""
    c = dict(constants(geo), **reach(geo))
    for axis, size, before, after in zip("HW", geo.input_size, geo.padding_before, geo.padding_after):
        c["LO_" + axis], c["HI_" + axis] = (-before, size + after) if include_padding else (0, size)
    return c


def _common(c: dict) -> str:
    return render("pool_common", TAPS=render("conv_taps"), **c)


_STORE = {"max": "  y[i] = {T}(m);", "avg": "  y[i] = {T}(s / avg_divisor(a_h, a_w));", "arg": "  y[i] = best;"}


def _forward_source(geo: ConvGeometry, c: dict, dtype: str, mode: str):
    total = geo.batch * geo.in_channels * prod(geo.output_size)
    store = _STORE[mode].format(T=STORAGE[dtype])
    src = render("pool_forward", COMMON=_common(c), T=STORAGE[dtype], TOUT="u32" if mode == "arg" else STORAGE[dtype],
                 TOTAL=total, STORE=store, **c,
                 DECODE=decode(axis_sizes(geo, geo.in_channels, geo.output_size), axis_strides(geo, geo.result_shape)))
    return src, total


_PART_SETUP = """  let xb = a_n * {XSN}u + a_c * {XSC}u;
  let ih0 = i32(a_h * {SH}u) - {PH};
  let iw0 = i32(a_w * {SW}u) - {PW};
  var m = -mg_inf();
  var best = 0xffffffffu;"""
_PART_TERM = """      let kw = t % KW;
      let kh = t / KW;
      let ih = u32(ih0 + i32(kh) * {DH});
      let iw = u32(iw0 + i32(kw) * {DW});
      if (ih < {H}u && iw < {W}u) {{
        let v = f32(a[xb + ih * {XSH}u + iw * {XSW}u]);
        {ADD}
      }}"""
_PART_ADD = {"avg": "blk = blk + v;",
             "max": "if (best == 0xffffffffu || (mg_isnan(v) && !mg_isnan(m)) || (!mg_isnan(m) && v > m)) "
                    "{ m = v; best = j; }"}
_ARG_GROUP = 64  # partial argmaxes one invocation of pool_arg_combine takes


def _record_forward(kb, geo: ConvGeometry, c: dict, x, out, dtype: str, mode: str) -> None:
    """Record a pooling forward (``mode`` "max", "avg", or "arg": the argmax tap, for the gradient)."""
    taps = c["KH"] * c["KW"]
    if nested_iterations(c["KH"], c["KW"]) <= conv._LOOP_MAX:
        src, total = _forward_source(geo, c, dtype, mode)
        kb.dispatch(src, [("ro", x), ("rw", out)], -(-total // 256))
        return
    total = geo.batch * geo.in_channels * prod(geo.output_size)
    dec = decode(axis_sizes(geo, geo.in_channels, geo.output_size), axis_strides(geo, geo.result_shape))
    kind = "avg" if mode == "avg" else "max"
    term = _PART_TERM.format(ADD=_PART_ADD[kind], **c)
    write = "  part[gid] = acc / avg_divisor(a_h, a_w);" if kind == "avg" else "  part[gid] = best;"

    def src_for(chunks, ch):
        return part_source(chunks, ch, total, taps, dec, _PART_SETUP.format(**c), term, write, common=_common(c),
                           t=STORAGE[dtype], tp="f32" if kind == "avg" else "u32")

    if kind == "avg":
        conv.record_parts(kb, src_for, [x, x], out, total, taps, dtype)
        return
    chunks, ch = conv.split(taps)
    part = kb.scratch(4 * total * chunks)
    kb.dispatch(src_for(chunks, ch), [("ro", x), ("ro", x), ("rw", part)], -(-total * chunks // 256))
    while True:  # combine _ARG_GROUP partials at a time, in tap order, until one is left
        groups = -(-chunks // _ARG_GROUP)
        last = groups == 1
        dst = out if last else kb.scratch(4 * total * groups)
        store = {"max": "  out[gid] = {T}(m);".format(T=STORAGE[dtype]), "arg": "  out[gid] = best;"}[mode]
        src = render("pool_arg_combine", COMMON=_common(c), T=STORAGE[dtype], TOTAL=total, GROUPS=groups,
                     G=_ARG_GROUP, CHUNKS=chunks, STORE=store if last else "  out[gid] = best;",
                     TOUT=STORAGE[dtype] if last and mode == "max" else "u32", DECODE=dec, **c)
        kb.dispatch(src, [("ro", x), ("ro", part), ("rw", dst)], -(-total * groups // 256))
        if last:
            return
        part, chunks = dst, groups


def _pool(step, kb, mode: str):
    geo = geometry_of(step)
    c = _pool_constants(geo, step.attrs["descriptor"].include_zero_pad_to_average)
    _record_forward(kb, geo, c, kb.input(0), kb.output(), step.out_types[0].dtype.name, mode)


@webgpu_kernel("max_pooling_2d")
def _max_pool(step, kb):
    _pool(step, kb, "max")


@webgpu_kernel("avg_pooling_2d")
def _avg_pool(step, kb):
    _pool(step, kb, "avg")


_ACCUM = {"max": "      if (arg[k] == kh * KW + kw) { acc = acc + f32(dy[k]); }",
          "avg": "      acc = acc + f32(dy[k]) / avg_divisor(oh, ow);"}


_GRAD_SETUP = """  let yb = a_n * {YSN}u + a_c * {YSC}u;
  let th0 = i32(a_h) + {PH};
  let tw0 = i32(a_w) + {PW};
  let kh0 = first_tap(th0, {OH}u - 1u, {SH}u, u32({DH}));
  let kw0 = first_tap(tw0, {OW}u - 1u, {SW}u, u32({DW}));"""
_GRAD_TERM = """      let kw = kw0 + t % {NKW}u;
      let kh = kh0 + t / {NKW}u;
      let th = th0 - i32(kh) * {DH};
      let tw = tw0 - i32(kw) * {DW};
      if (kh < KH && kw < KW && th >= 0 && tw >= 0 && th % {SH} == 0 && tw % {SW} == 0
          && u32(th / {SH}) < {OH}u && u32(tw / {SW}) < {OW}u) {{
        let oh = u32(th / {SH});
        let ow = u32(tw / {SW});
        let k = yb + oh * {YSH}u + ow * {YSW}u;
        {ACCUM}
      }}"""
_PART_ACCUM = {"max": "if (b[k] == kh * KW + kw) { blk = blk + f32(a[k]); }",
               "avg": "blk = blk + f32(a[k]) / avg_divisor(oh, ow);"}


def _pool_grad(step, kb, mode: str):
    geo = geometry_of(step)
    dt = step.out_types[0].dtype.name
    c = _pool_constants(geo, step.attrs["descriptor"].include_zero_pad_to_average)
    arg = kb.input(0)  # unused by the average gradient; any read-only buffer fills the slot
    if mode == "max":
        arg = kb.scratch(4 * max(geo.batch * geo.in_channels * prod(geo.output_size), 1))
        _record_forward(kb, geo, c, kb.input(1), arg, dt, "arg")
    total = prod(geo.source_shape)
    dec = decode(axis_sizes(geo, geo.in_channels, geo.input_size), axis_strides(geo, geo.source_shape))
    if nested_iterations(c["NKH"], c["NKW"]) > conv._LOOP_MAX:
        taps = c["NKH"] * c["NKW"]
        conv.record_parts(kb, lambda chunks, ch: part_source(
            chunks, ch, total, taps, dec, _GRAD_SETUP.format(**c), _GRAD_TERM.format(ACCUM=_PART_ACCUM[mode], **c),
            "  part[gid] = acc;", common=_common(c), t=STORAGE[dt], tb="u32"), [kb.input(0), arg], kb.output(),
            total, taps, dt)
        return
    src = render("pool_grad", COMMON=_common(c), T=STORAGE[dt], TOTAL=total, ACCUM=_ACCUM[mode], DECODE=dec, **c)
    kb.dispatch(src, [("ro", kb.input(0)), ("ro", arg), ("rw", kb.output())], -(-total // 256))


@webgpu_kernel("max_pooling_2d_gradient")
def _max_pool_grad(step, kb):
    _pool_grad(step, kb, "max")


@webgpu_kernel("avg_pooling_2d_gradient")
def _avg_pool_grad(step, kb):
    _pool_grad(step, kb, "avg")
