"""2D max and average pooling and their gradients (semantics: ``ops/pooling.py``).

Forward: one thread per output. Gradients gather (one thread per dx element, no atomics); the
max-pooling gradient first records each window's argmax (first maximal tap in row-major order,
the first NaN winning) in a scratch buffer, exactly the tie rule of the NumPy backend.
"""
from __future__ import annotations

from math import prod

from ...descriptors import TensorNamedDataLayout as L
from ...ops.pooling import pool_geometry
from .convolution import _decode
from .registry import webgpu_kernel
from .wgsl import STORAGE, render

_NAMES = {L.NCHW: ("n", "c", "h", "w"), L.NHWC: ("n", "h", "w", "c")}


def _strides(shape, names) -> dict:
    st, acc = {}, 1
    for d, nm in zip(reversed(shape), reversed(names)):
        st[nm] = acc
        acc *= d
    st["d"] = 0
    return st


def _geo(desc, x_shape, y_shape):
    names = _NAMES[desc.data_layout]
    xd = dict(zip(names, x_shape))
    yd = dict(zip(names, y_shape))
    (pt, pb, oh), (pl, pr, ow) = pool_geometry(desc, xd["h"], xd["w"])
    inc = desc.include_zero_pad_to_average
    subs = dict(KH=desc.kernel_height, KW=desc.kernel_width, SY=desc.stride_in_y, SX=desc.stride_in_x,
                DY=desc.dilation_rate_in_y, DX=desc.dilation_rate_in_x, PT=pt, PL=pl, H=xd["h"], W=xd["w"],
                OH=oh, OW=ow, LOY=-pt if inc else 0, HIY=xd["h"] + pb if inc else xd["h"],
                LOX=-pl if inc else 0, HIX=xd["w"] + pr if inc else xd["w"])
    xs, ys = _strides(x_shape, names), _strides(y_shape, names)
    for a in "nchw":
        subs["XS" + a.upper()] = xs[a]
        subs["YS" + a.upper()] = ys[a]
    xaxes = {"n": xd["n"], "c": xd["c"], "d": 1, "h": xd["h"], "w": xd["w"]}
    yaxes = {"n": yd["n"], "c": yd["c"], "d": 1, "h": oh, "w": ow}
    return subs, xs, ys, xaxes, yaxes


def _common(subs):
    return render("pool_common", **{k: subs[k] for k in ("KH", "KW", "SY", "SX", "PT", "PL", "DY", "DX",
                                                          "LOY", "HIY", "LOX", "HIX")})


_STORE = {"max": "  y[i] = {T}(m);", "avg": "  y[i] = {T}(s / avg_divisor(a_h, a_w));", "arg": "  y[i] = best;"}


def _forward_source(subs, y_axes, ys, dtype, mode):
    total = prod(y_axes.values())
    store = _STORE[mode].format(T=STORAGE[dtype])
    src = render("pool_forward", COMMON=_common(subs), T=STORAGE[dtype],
                 TOUT="u32" if mode == "arg" else STORAGE[dtype], TOTAL=total, DECODE=_decode(y_axes, ys),
                 STORE=store, **subs)
    return src, total


@webgpu_kernel("max_pooling_2d", "avg_pooling_2d")
def _pool(step, kb):
    x, y = step.in_types[0], step.out_types[0]
    subs, xs, ys, xa, ya = _geo(step.attrs["descriptor"], x.shape, y.shape)
    src, total = _forward_source(subs, ya, ys, y.dtype.name, "max" if step.op.type.startswith("max") else "avg")
    kb.dispatch(src, [("ro", kb.input(0)), ("rw", kb.output())], -(-total // 256))


_ACCUM = {"max": "      if (arg[k] == kh * KW + kw) { acc = acc + f32(dy[k]); }",
          "avg": "      acc = acc + f32(dy[k]) / avg_divisor(oh, ow);"}


@webgpu_kernel("max_pooling_2d_gradient", "avg_pooling_2d_gradient")
def _pool_grad(step, kb):
    dy, x = step.in_types
    dt = x.dtype.name
    subs, xs, ys, xa, ya = _geo(step.attrs["descriptor"], x.shape, dy.shape)
    mode = "max" if step.op.type.startswith("max") else "avg"
    arg = kb.input(0)  # unused by the average gradient; any read-only buffer fills the slot
    if mode == "max":
        src, total = _forward_source(subs, ya, ys, dt, "arg")
        arg = kb.scratch(4 * max(total, 1))
        kb.dispatch(src, [("ro", kb.input(1)), ("rw", arg)], -(-total // 256))
    total = prod(xa.values())
    src = render("pool_grad", COMMON=_common(subs), T=STORAGE[dt], TOTAL=total, DECODE=_decode(xa, xs),
                 ACCUM=_ACCUM[mode], **subs)
    kb.dispatch(src, [("ro", kb.input(0)), ("ro", arg), ("rw", kb.output())], -(-total // 256))
