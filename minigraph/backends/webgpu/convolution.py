"""Convolution kernels: regular (grouped) 2D, depthwise 2D and depthwise 3D, each with its data
and weights gradients, as one family of three WGSL kernels over a *canonical grouped geometry*.

Every op is described as: batch N; input channels C = G*CI; output channels O = G*OG; three
spatial axes (2D ops have D = 1); the strides of x, y and the weights for each logical axis
(so NCHW/NHWC, OIHW/HWIO and the 3D channel_dimension_index are just strides); per-axis
stride, dilation and leading padding (from the op module's own geometry helpers, so padding
styles agree with the NumPy backend by construction). Depthwise is G = C, CI = 1, OG = M
(output channel c*M + m), as MPSGraph defines it.

- forward: one thread per output element (``kernels/conv_forward.wgsl``);
- data gradient: one thread per dx element gathering from dy (``conv_data_grad.wgsl``);
- weights gradient: a two-pass reduction (``conv_wgrad_partial.wgsl`` + ``conv_wgrad_reduce.wgsl``),
  see the partial kernel's header. This is the kernel ``benchmarks/gpu_depthwise.py`` times.

Sizes are baked into the WGSL, so each geometry compiles once (pipeline cache).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from ...descriptors import TensorNamedDataLayout as L
from ...ops.convolution import conv2d_geometry
from ...ops.depthwise import depthwise_geometry
from ...ops.depthwise3d import geometry_3d, split_axes
from .registry import webgpu_kernel
from .wgsl import STORAGE, render

# tuning of the weights-gradient reduction (benchmarks/gpu_depthwise.py sweeps these)
# defaults picked from sweeps on the H200 (benchmarks/gpu_depthwise.py --sweep): longer position
# chunks per workgroup (min_items 32) and 2-wide output strips beat 8 / 4 on most MobileNetV2 layers
TUNING = {"wgrad_target_groups": 4096, "wgrad_min_items": 32, "wgrad_max_taps": 32, "wgrad_tap_batch": 15,
          "wgrad_vec": 2}


@dataclass
class ConvGeo:
    """A convolution in canonical grouped form; ``xs``/``ys``/``ws`` map logical axes to strides."""

    N: int
    G: int
    CI: int
    OG: int
    size: tuple  # (D, H, W) of x
    out: tuple  # (OD, OH, OW) of y
    k: tuple  # (KD, KH, KW)
    s: tuple
    dl: tuple
    pad: tuple  # padding before, per axis
    xs: dict = field(default_factory=dict)  # n, c, d, h, w
    ys: dict = field(default_factory=dict)  # n, c, d, h, w (c: output channel)
    ws: dict = field(default_factory=dict)  # g, og, ci, kd, kh, kw

    @property
    def C(self):
        return self.G * self.CI

    @property
    def O(self):
        return self.G * self.OG

    def x_axes(self):
        return {"n": self.N, "c": self.C, "d": self.size[0], "h": self.size[1], "w": self.size[2]}

    def y_axes(self):
        return {"n": self.N, "c": self.O, "d": self.out[0], "h": self.out[1], "w": self.out[2]}


def _strides(shape, names) -> dict:
    st, acc = {}, 1
    for d, nm in zip(reversed(shape), reversed(names)):
        st[nm] = acc
        acc *= d
    return st


def _split_channel(st: dict, name: str, inner: int, outer_name: str, inner_name: str) -> dict:
    """Strides of (outer, inner) for a channel axis ``name`` holding outer*inner + inner index."""
    s = st.pop(name)
    st[outer_name], st[inner_name] = s * inner, s
    return st


def _common(st: dict, names) -> dict:
    return {k: st.get(k, 0) for k in names}


_DATA_NAMES = {L.NCHW: ("n", "c", "h", "w"), L.NHWC: ("n", "h", "w", "c")}
_X = ("n", "c", "d", "h", "w")
_W = ("g", "og", "ci", "kd", "kh", "kw")


def _geo_2d(desc, x_shape, w_shape, y_shape, depthwise: bool) -> ConvGeo:
    dn = _DATA_NAMES[desc.data_layout]
    xs = _strides(x_shape, dn)
    ys = _strides(y_shape, dn)
    xd = dict(zip(dn, x_shape))
    n, c, h, w = xd["n"], xd["c"], xd["h"], xd["w"]
    if depthwise:  # OIHW [M, C, kH, kW]; HWIO [kH, kW, C, M]
        wn = ("og", "g", "kh", "kw") if desc.weights_layout == L.OIHW else ("kh", "kw", "g", "og")
        ws = _strides(w_shape, wn)
        wd = dict(zip(wn, w_shape))
        G, CI, OG = c, 1, wd["og"]
        kh, kw = wd["kh"], wd["kw"]
        geo = depthwise_geometry(desc, x_shape, (kh, kw), OG)
        (pt, oh), (pl, ow) = (geo.pad_top, geo.oh), (geo.pad_left, geo.ow)
    else:  # OIHW [Cout, Cin/g, kH, kW]; HWIO [kH, kW, Cin/g, Cout]
        wn = ("o", "ci", "kh", "kw") if desc.weights_layout == L.OIHW else ("kh", "kw", "ci", "o")
        wd = dict(zip(wn, w_shape))
        G = desc.groups
        CI, OG = wd["ci"], wd["o"] // G
        ws = _split_channel(_strides(w_shape, wn), "o", OG, "g", "og")
        kh, kw = wd["kh"], wd["kw"]
        (pt, _, oh), (pl, _, ow) = conv2d_geometry(desc, h, w, kh, kw)
    return ConvGeo(N=n, G=G, CI=CI, OG=OG, size=(1, h, w), out=(1, oh, ow), k=(1, kh, kw),
                   s=(1, desc.stride_in_y, desc.stride_in_x),
                   dl=(1, desc.dilation_rate_in_y, desc.dilation_rate_in_x), pad=(0, pt, pl),
                   xs=_common(xs, _X), ys=_common(ys, _X), ws=_common(ws, _W))


def _geo_3d(desc, x_shape, w_shape, y_shape) -> ConvGeo:
    cdi = desc.channel_dimension_index
    rank = len(x_shape)
    ca, sp = split_axes(rank, cdi)
    wa, wsp = split_axes(4, cdi)
    last4 = [None] * 4
    last4[ca - (rank - 4)] = "c"
    for a, nm in zip(sp, ("d", "h", "w")):
        last4[a - (rank - 4)] = nm
    xs = _strides(x_shape[rank - 4:], last4)
    ys = _strides(y_shape[rank - 4:], last4)
    xs["n"] = prod(x_shape[rank - 4:])
    ys["n"] = prod(y_shape[rank - 4:])
    wn = [None] * 4
    wn[wa] = "o"
    for a, nm in zip(wsp, ("kd", "kh", "kw")):
        wn[a] = nm
    c, cw = x_shape[ca], w_shape[wa]
    m = cw // c
    ws = _split_channel(_strides(w_shape, wn), "o", m, "g", "og")
    kernel = [w_shape[a] for a in wsp]
    geo = geometry_3d(desc, [x_shape[a] for a in sp], kernel)
    return ConvGeo(N=prod(x_shape[: rank - 4]), G=c, CI=1, OG=m, size=tuple(x_shape[a] for a in sp),
                   out=tuple(o for _, _, o in geo), k=tuple(kernel), s=tuple(desc.strides),
                   dl=tuple(desc.dilation_rates), pad=tuple(pb for pb, _, _ in geo),
                   xs=_common(xs, _X), ys=_common(ys, _X), ws=_common(ws, _W))


def geometry(step) -> ConvGeo:
    """The canonical geometry of a convolution-family step (forward or gradient)."""
    t = step.op.type
    desc = step.attrs["descriptor"]
    ins, out = [s.shape for s in step.in_types], step.out_types[0].shape
    if t.endswith("_data_gradient"):
        y, w, x = ins[0], ins[1], out
    elif t.endswith("_weights_gradient"):
        y, x, w = ins[0], ins[1], out
    else:
        x, w, y = ins[0], ins[1], out
    if t.startswith("depthwise_convolution_3d"):
        return _geo_3d(desc, x, w, y)
    return _geo_2d(desc, x, w, y, depthwise=t.startswith("depthwise_convolution_2d"))


def _decode(axes: dict, strides: dict) -> str:
    """WGSL that splits the flat index ``r`` of a contiguous tensor into a_n, a_c, a_d, a_h, a_w."""
    lines = []
    order = sorted((strides[a], a) for a in _X if axes[a] > 1)
    done = set()
    for k, (_, a) in enumerate(order):
        if k == len(order) - 1:
            lines.append(f"  let a_{a} = r;")
        else:
            lines.append(f"  let a_{a} = r % {axes[a]}u;")
            lines.append(f"  r = r / {axes[a]}u;")
        done.add(a)
    lines += [f"  let a_{a} = 0u;" for a in _X if a not in done]
    return "\n".join(lines)


def _subs(geo: ConvGeo) -> dict:
    d = {}
    for nm, v in zip("DHW", geo.size):
        d[nm] = v
    for nm, v in zip(("OD", "OH", "OW"), geo.out):
        d[nm] = v
    for nm, v in zip(("KD", "KH", "KW"), geo.k):
        d[nm] = v
    for nm, v in zip(("SD", "SH", "SW"), geo.s):
        d[nm] = v
    for nm, v in zip(("DD", "DH", "DW"), geo.dl):
        d[nm] = v
    for nm, v in zip(("PD", "PH", "PW"), geo.pad):
        d[nm] = v
    for a in _X:
        d["XS" + a.upper()] = geo.xs[a]
        d["YS" + a.upper()] = geo.ys[a]
    for a in _W:
        d["WS" + a.upper()] = geo.ws[a]
    d.update(CI=geo.CI, OG=geo.OG)
    return d


def _forward(step, kb):
    geo = geometry(step)
    total = prod(step.out_types[0].shape)
    src = render("conv_forward", T=STORAGE[step.out_types[0].dtype.name], TOTAL=total,
                 DECODE=_decode(geo.y_axes(), geo.ys), **_subs(geo))
    kb.dispatch(src, [("ro", kb.input(0)), ("ro", kb.input(1)), ("rw", kb.output())], -(-total // 256))


def _data_gradient(step, kb):
    geo = geometry(step)
    total = prod(step.out_types[0].shape)
    src = render("conv_data_grad", T=STORAGE[step.out_types[0].dtype.name], TOTAL=total,
                 DECODE=_decode(geo.x_axes(), geo.xs), **_subs(geo))
    kb.dispatch(src, [("ro", kb.input(0)), ("ro", kb.input(1)), ("rw", kb.output())], -(-total // 256))


def wgrad_plan(geo: ConvGeo, tuning=None) -> dict:
    """How the weights-gradient reduction is split: filters per workgroup (FX), tap chunks,
    position chunks (CHUNKS of CH positions)."""
    tu = dict(TUNING, **(tuning or {}))
    F = geo.G * geo.OG * geo.CI
    T = prod(geo.k)
    vec = max(v for v in (1, 2, 4, 8) if v <= tu["wgrad_vec"] and geo.out[2] % v == 0)
    P = geo.N * prod(geo.out) // vec  # strips of vec outputs along the row
    fx = 1
    if geo.ys["c"] == 1 and geo.xs["c"] == 1:  # channels innermost (NHWC-like): lanes along filters
        while fx < 32 and fx < F:
            fx *= 2
    py = 256 // fx
    fb = -(-F // fx)
    tc = min(T, tu["wgrad_max_taps"])
    tap_chunks = -(-T // tc)
    base = fb * tap_chunks
    max_chunks = max(1, -(-P // (py * tu["wgrad_min_items"])))
    chunks = max(1, min(max_chunks, -(-tu["wgrad_target_groups"] // base), 65535))
    per = -(-P // chunks)
    ch = max(1, -(-per // py)) * py
    chunks = max(1, -(-P // ch))
    return {"F": F, "T": T, "P": P, "V": vec, "FX": fx, "PY": py, "FB": fb, "TC": tc, "CHUNKS": chunks, "CH": ch}


def _wgrad_body(geo: ConvGeo, vec: int, taps) -> list:
    """The loop body for one strip of ``vec`` outputs: decode, load dy once per output, load each
    x column once per kernel row, and add every (output, tap) product into its tap's register."""
    (D, H, W), (OD, OH, OW), (SD, SH, SWS), (DD, DH, DW), (PD, PH, PW) = geo.size, geo.out, geo.s, geo.dl, geo.pad
    xs, ys = geo.xs, geo.ys
    strips = OW // vec
    b = ["      var r = q;"]
    if strips > 1:
        b += [f"      let sw = r % {strips}u;", f"      r = r / {strips}u;"]
    else:
        b.append("      let sw = 0u;")
    b += [f"      let oh = r % {OH}u;", f"      r = r / {OH}u;", f"      let od = r % {OD}u;", f"      let n = r / {OD}u;",
          f"      let ow0 = sw * {vec}u;",
          f"      let yq = yb + n * {ys['n']}u + od * {ys['d']}u + oh * {ys['h']}u + ow0 * {ys['w']}u;"]
    b += [f"      let g{v} = f32(dy[yq + {v * ys['w']}u]);" for v in range(vec)]
    b += [f"      let xq = xb + n * {xs['n']}u;", f"      let id0 = i32(od * {SD}u) - {PD};",
          f"      let ih0 = i32(oh * {SH}u) - {PH};", f"      let iw0 = i32(ow0 * {SWS}u) - {PW};"]
    cols = sorted({v * SWS + kw * DW for _, _, kw in taps for v in range(vec)})
    b += [f"      let c{c} = u32(iw0 + {c}) < {W}u;" for c in cols]
    rows: dict = {}
    for j, (kd, kh, kw) in enumerate(taps):
        rows.setdefault((kd, kh), []).append((j, kw))
    for (kd, kh), row in rows.items():
        b.append(f"      {{ let id = u32(id0 + {kd * DD}); let ih = u32(ih0 + {kh * DH});")
        b.append(f"        let rok = id < {D}u && ih < {H}u;")
        b.append(f"        let xr = xq + id * {xs['d']}u + ih * {xs['h']}u;")
        rcols = sorted({v * SWS + kw * DW for _, kw in row for v in range(vec)})
        for c in rcols:
            b.append(f"        var x{c} = 0.0;")
            b.append(f"        if (rok && c{c}) {{ x{c} = f32(x[xr + u32(iw0 + {c}) * {xs['w']}u]); }}")
        for j, kw in row:
            terms = " + ".join(f"g{v} * x{v * SWS + kw * DW}" for v in range(vec))
            b.append(f"        a{j} = a{j} + {terms};")
        b.append("      }")
    return b


def _wgrad_source(geo: ConvGeo, plan: dict, t0: int, t1: int, dtype: str, direct: bool) -> str:
    """Pass-1 WGSL for taps [t0, t1): unrolled registers a0.., straight-line tap code."""
    KD, KH, KW = geo.k
    taps = [(t // (KH * KW), (t // KW) % KH, t % KW) for t in range(t0, t1)]
    acc = "\n".join(f"  var a{j} = 0.0;" for j in range(len(taps)))
    body = _wgrad_body(geo, plan["V"], taps)
    fx, py = plan["FX"], plan["PY"]
    tb = min(TUNING["wgrad_tap_batch"], len(taps))
    while tb > 1 and (tb * 256 + max(256, tb * fx)) * 4 > 16384:  # WebGPU's guaranteed workgroup memory
        tb -= 1
    r = 1  # partial sums per (tap, filter) in stage 2: as many as keep 256 threads busy, at most 16
    while r < 16 and r * 2 <= py and tb * fx * r * 2 <= 256:
        r *= 2
    red = []
    for b0 in range(0, len(taps), tb):
        nb = min(tb, len(taps) - b0)
        red += [f"  sh[{j}u * 256u + lid] = a{b0 + j};" for j in range(nb)]
        red.append(f"  reduce_taps(lid, {nb}u, {r}u, {t0 + b0}u, chunk, gid % {plan['FB']}u);")
    if direct:
        ws = geo.ws
        write = ("      let ci = f % {CI}u;\n      let og = (f / {CI}u) % {OG}u;\n      let g = f / ({CI}u * {OG}u);\n"
                 "      let kw = t % {KW}u;\n      let kh = (t / {KW}u) % {KH}u;\n      let kd = t / ({KW}u * {KH}u);\n"
                 "      part[g * {g}u + og * {og}u + ci * {ci}u + kd * {kd}u + kh * {kh}u + kw * {kw}u] = {T}(s);").format(
            CI=geo.CI, OG=geo.OG, KW=geo.k[2], KH=geo.k[1], T=STORAGE[dtype], **ws)
    else:
        write = f"      part[chunk * {plan['F'] * plan['T']}u + f * {plan['T']}u + t] = s;"
    subs = _subs(geo)
    return render("conv_wgrad_partial", T=STORAGE[dtype], TP=STORAGE[dtype] if direct else "f32",
                  SHN=256 * tb, SH2N=max(256, tb * fx * r), FX=fx, FB=plan["FB"], CHUNKS=plan["CHUNKS"], F=plan["F"], CH=plan["CH"],
                  P=plan["P"], ACC_DECL=acc, BODY="\n".join(body), REDUCE="\n".join(red), WRITE=write, **subs)


def record_weights_gradient(kb, geo: ConvGeo, dy, x, dw, dtype: str, tuning=None) -> dict:
    """Record the weights-gradient dispatches (used by the op kernel and by the benchmark)."""
    plan = wgrad_plan(geo, tuning)
    F, T, chunks = plan["F"], plan["T"], plan["CHUNKS"]
    if plan["P"] == 0:  # no positions: the gradient is zero
        words = dw.nbytes // 4
        kb.dispatch(render("fill"), [("u", [words]), ("rw", dw)], -(-words // 256))
        return plan
    direct = chunks == 1
    part = dw if direct else kb.scratch(4 * F * T * chunks)
    for t0 in range(0, T, plan["TC"]):
        src = _wgrad_source(geo, plan, t0, min(T, t0 + plan["TC"]), dtype, direct)
        kb.dispatch(src, [("ro", dy), ("ro", x), ("rw", part)], plan["FB"] * chunks)
    if not direct:
        src = render("conv_wgrad_reduce", T=STORAGE[dtype], F=F, TAPS=T, CHUNKS=chunks, CI=geo.CI, OG=geo.OG,
                     KH=geo.k[1], KW=geo.k[2], **{"WS" + a.upper(): geo.ws[a] for a in _W})
        kb.dispatch(src, [("ro", part), ("rw", dw)], -(-(F * T) // 256))
    return plan


def _weights_gradient(step, kb):
    geo = geometry(step)
    record_weights_gradient(kb, geo, kb.input(0), kb.input(1), kb.output(), step.out_types[0].dtype.name)


for _fam in ("convolution_2d", "depthwise_convolution_2d", "depthwise_convolution_3d"):
    webgpu_kernel(_fam)(_forward)
    webgpu_kernel(_fam + "_data_gradient")(_data_gradient)
    webgpu_kernel(_fam + "_weights_gradient")(_weights_gradient)
