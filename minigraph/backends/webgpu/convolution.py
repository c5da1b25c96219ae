"""Convolution kernels: regular (grouped) 2D and 3D, depthwise 2D and 3D, each with its data
and weights gradients, as one family of three WGSL kernels over the op's ``ConvGeometry``.

Every op is a grouped convolution: batch N; input channels C = G*CI; output channels O = G*OG;
three spatial axes (2D ops run with a depth of 1); the strides of x, y and the weights for each
logical axis (so NCHW/NHWC, OIHW/HWIO and the 3D channel_dimension_index are just strides); per
axis stride, dilation and leading padding. Depthwise is G = C, CI = 1, OG = M (output channel
c*M + m), as MPSGraph defines it. The geometry is the one the infer rules and the NumPy kernels
use (``geometry_of(step)``), so padding styles agree by construction.

- pointwise (1x1, stride 1, no padding) 2D convolutions: the tiled GEMM (``pointwise.py``);
- forward and data gradient of the 2D ops whose outputs fit one pass: the tiled kernel
  (``tiled_conv.py``) where its plan accepts the geometry; otherwise
- forward: one thread per output element (``kernels/conv_forward.wgsl``);
- data gradient: one thread per dx element gathering from dy (``conv_data_grad.wgsl``);
- weights gradient: a two-pass reduction (``conv_wgrad_partial.wgsl`` + ``conv_wgrad_reduce.wgsl``),
  see the partial kernel's header. This is the kernel ``benchmarks/gpu_depthwise.py`` times.

Sizes are baked into the WGSL, so each geometry compiles once (pipeline cache).

No invocation's loops run longer than a fixed bound (llvmpipe stops a shader's loops after
65,535 iterations in all, silently): a forward or data-gradient output whose loops would run
more than ``_LOOP_MAX`` iterations takes the multi-pass path, its taps cut into chunks of at
most ``_CHUNK`` (``conv_part.wgsl``, one invocation per output and chunk), whose partial sums
``reduce_dispatch`` adds up; the weights gradient caps each thread's positions at
``_WGRAD_STEPS`` strips and reduces many chunks the same way.
"""
from __future__ import annotations

from math import prod

from ...ops.convolution_transpose import transpose_geometry
from ...ops.geometry import ConvGeometry, geometry_of
from . import pointwise, tiled_conv
from .epilogue import epilogue_kernel
from .conv_constants import _W, _volume, axis_sizes, axis_strides, constants, decode, reach
from .loops import LOOP_MAX, nested_iterations
from .reduction import reduce_dispatch
from .registry import webgpu_kernel
from .wgsl import STORAGE, render

_LOOP_MAX = LOOP_MAX  # loop iterations one invocation of a single-pass kernel may run
_CHUNK = 4096  # taps one invocation of the multi-pass path takes (a multiple of 8)
_WGRAD_STEPS = 4096  # strips one thread of the weights gradient's pass 1 may take
_WGRAD_CHUNKS = 1024  # more chunks than this are added up by reduce_dispatch, not conv_wgrad_reduce

# tuning of the weights-gradient reduction (benchmarks/gpu_depthwise.py sweeps these)
# defaults picked from sweeps on the H200 (benchmarks/gpu_depthwise.py --sweep): longer position
# chunks per workgroup (min_items 32) and 2-wide output strips beat 8 / 4 on most MobileNetV2 layers
TUNING = {"wgrad_target_groups": 4096, "wgrad_min_items": 32, "wgrad_max_taps": 32, "wgrad_tap_batch": 15,
          "wgrad_vec": 2}

def split(taps: int) -> tuple:
    """(chunks, CH): ``taps`` cut into chunks of CH <= ``_CHUNK`` (a multiple of 8) taps."""
    chunks = -(-taps // _CHUNK)
    ch = -(-(-(-taps // chunks)) // 8) * 8
    return -(-taps // ch), ch


def record_parts(kb, src_for, inputs, out, total: int, taps: int, dtype: str) -> None:
    """The multi-pass path: ``src_for(chunks, CH)`` writes one f32 partial sum per (chunk, output);
    ``reduce_dispatch`` adds each output's partials (pairwise-like) into ``out``."""
    chunks, ch = split(taps)
    part = kb.scratch(4 * total * chunks)
    kb.dispatch(src_for(chunks, ch), [("ro", i) for i in inputs] + [("rw", part)], -(-total * chunks // 256))
    reduce_dispatch(kb, part, out, "float32", dtype, "sum", ((total,), (1,)), ((chunks,), (total,)))


def part_source(chunks: int, ch: int, total: int, taps: int, decode_src: str, setup: str, term: str,
                write: str, common: str = "", tb: str = "", tp: str = "f32", t: str = "f32") -> str:
    return render("conv_part", COMMON=common, T=t, TB=tb or t, TP=tp, TOTAL=total, CHUNKS=chunks, CH=ch, R=taps,
                  DECODE=decode_src, SETUP=setup, TERM=term, WRITE=write)


_FWD_SETUP = """  let g = a_c / {OG}u;
  let og = a_c % {OG}u;
  let id0 = i32(a_d * {SD}u) - {PD};
  let ih0 = i32(a_h * {SH}u) - {PH};
  let iw0 = i32(a_w * {SW}u) - {PW};
  let xb = a_n * {XSN}u + g * {CI}u * {XSC}u;
  let wb = g * {WSG}u + og * {WSOG}u;"""
_FWD_TERM = """      let kw = t % {KW}u;
      t = t / {KW}u;
      let kh = t % {KH}u;
      t = t / {KH}u;
      let kd = t % {KD}u;
      let ci = t / {KD}u;
      let id = u32(id0 + i32(kd * {DD}u));
      let ih = u32(ih0 + i32(kh * {DH}u));
      let iw = u32(iw0 + i32(kw * {DW}u));
      if (id < {D}u && ih < {H}u && iw < {W}u) {{
        blk = blk + f32(a[xb + ci * {XSC}u + id * {XSD}u + ih * {XSH}u + iw * {XSW}u])
                  * f32(b[wb + ci * {WSCI}u + kd * {WSKD}u + kh * {WSKH}u + kw * {WSKW}u]);
      }}"""


@webgpu_kernel("convolution_2d", "convolution_3d", "depthwise_convolution_2d", "depthwise_convolution_3d")
def _forward(step, kb):
    record_forward(kb, geometry_of(step), kb.input(0), kb.input(1), kb.output(), step.out_types[0].dtype.name)


def record_forward(kb, geo: ConvGeometry, x, w, y, dt: str) -> None:
    """Record the forward convolution ``y = F(x, w)`` of a geometry."""
    total = geo.batch * geo.out_channels * prod(geo.output_size)
    c = constants(geo)
    dec = decode(axis_sizes(geo, geo.out_channels, geo.output_size), axis_strides(geo, geo.result_shape))
    inputs = [x, w]
    if pointwise.record_forward(kb, geo, x, w, y, dt):
        return
    if nested_iterations(c["CI"], c["KD"], c["KH"], c["KW"]) > _LOOP_MAX:
        taps = c["CI"] * c["KD"] * c["KH"] * c["KW"]
        record_parts(kb, lambda chunks, ch: part_source(
            chunks, ch, total, taps, dec, _FWD_SETUP.format(**c), _FWD_TERM.format(**c), "  part[gid] = acc;",
            t=STORAGE[dt]), inputs, y, total, taps, dt)
        return
    if tiled_conv.record(kb, geo, "forward", x, w, y, dt):
        return
    src = render("conv_forward", T=STORAGE[dt], TOTAL=total, DECODE=dec, **c)
    kb.dispatch(src, [("ro", i) for i in inputs] + [("rw", y)], -(-total // 256))


_DGRAD_SETUP = """  let g = a_c / {CI}u;
  let ci = a_c % {CI}u;
  let td0 = i32(a_d) + {PD};
  let th0 = i32(a_h) + {PH};
  let tw0 = i32(a_w) + {PW};
  let kd0 = first_tap(td0, {OD}u - 1u, {SD}u, {DD}u);
  let kh0 = first_tap(th0, {OH}u - 1u, {SH}u, {DH}u);
  let kw0 = first_tap(tw0, {OW}u - 1u, {SW}u, {DW}u);
  let yb = a_n * {YSN}u + g * {OG}u * {YSC}u;
  let wb = g * {WSG}u + ci * {WSCI}u;"""
_DGRAD_TERM = """      let kw = kw0 + t % {NKW}u;
      t = t / {NKW}u;
      let kh = kh0 + t % {NKH}u;
      t = t / {NKH}u;
      let kd = kd0 + t % {NKD}u;
      let og = t / {NKD}u;
      let td = td0 - i32(kd * {DD}u);
      let th = th0 - i32(kh * {DH}u);
      let tw = tw0 - i32(kw * {DW}u);
      if (kd < {KD}u && kh < {KH}u && kw < {KW}u && td >= 0 && th >= 0 && tw >= 0
          && td % {SD} == 0 && th % {SH} == 0 && tw % {SW} == 0) {{
        let od = u32(td / {SD});
        let oh = u32(th / {SH});
        let ow = u32(tw / {SW});
        if (od < {OD}u && oh < {OH}u && ow < {OW}u) {{
          blk = blk + f32(a[yb + og * {YSC}u + od * {YSD}u + oh * {YSH}u + ow * {YSW}u])
                    * f32(b[wb + og * {WSOG}u + kd * {WSKD}u + kh * {WSKH}u + kw * {WSKW}u]);
        }}
      }}"""


@epilogue_kernel("depthwise_convolution_2d", "depthwise_convolution_2d_data_gradient")
def _depthwise_epilogue(step, kb, epi) -> bool:
    """A depthwise convolution or its data gradient with the step's tail applied where the tiled
    kernel stores (False where that kernel declines the geometry: the caller runs the op's own
    kernel, then the tail)."""
    geo = geometry_of(epi.anchor_step)
    role = epi.anchor.opdef.role
    c = constants(geo) if role == "forward" else dict(constants(geo), **reach(geo))
    loops = (nested_iterations(c["CI"], c["KD"], c["KH"], c["KW"]) if role == "forward"
             else nested_iterations(c["OG"], c["NKD"], c["NKH"], c["NKW"]))
    if loops > _LOOP_MAX:
        return False
    return tiled_conv.record(kb, geo, role, epi.input(0), epi.input(1), kb.output(),
                             epi.anchor_type.dtype.name, epi)


@webgpu_kernel("convolution_2d_data_gradient", "convolution_3d_data_gradient",
               "depthwise_convolution_2d_data_gradient", "depthwise_convolution_3d_data_gradient")
def _data_gradient(step, kb):
    record_data_gradient(kb, geometry_of(step), kb.input(0), kb.input(1), kb.output(), step.out_types[0].dtype.name)


def record_data_gradient(kb, geo: ConvGeometry, dy, w, dx, dt: str) -> None:
    """Record the data gradient ``dx = D(dy, w)`` (the transposed convolution) of a geometry."""
    total = geo.batch * geo.in_channels * prod(geo.input_size)
    c = dict(constants(geo), **reach(geo))
    dec = decode(axis_sizes(geo, geo.in_channels, geo.input_size), axis_strides(geo, geo.source_shape))
    inputs = [dy, w]
    if pointwise.record_data_gradient(kb, geo, dy, w, dx, dt):
        return
    taps_src = render("conv_taps")
    if nested_iterations(c["OG"], c["NKD"], c["NKH"], c["NKW"]) > _LOOP_MAX:
        taps = c["OG"] * c["NKD"] * c["NKH"] * c["NKW"]
        record_parts(kb, lambda chunks, ch: part_source(
            chunks, ch, total, taps, dec, _DGRAD_SETUP.format(**c), _DGRAD_TERM.format(**c), "  part[gid] = acc;",
            common=taps_src, t=STORAGE[dt]), inputs, dx, total, taps, dt)
        return
    if tiled_conv.record(kb, geo, "data_gradient", dy, w, dx, dt):
        return
    src = render("conv_data_grad", T=STORAGE[dt], TOTAL=total, DECODE=dec, TAPS=taps_src, **c)
    kb.dispatch(src, [("ro", i) for i in inputs] + [("rw", dx)], -(-total // 256))


def wgrad_plan(geo: ConvGeometry, tuning=None) -> dict:
    """How the weights-gradient reduction is split: filters per workgroup (FX), tap chunks,
    position chunks (CHUNKS of CH positions)."""
    tu = dict(TUNING, **(tuning or {}))
    F = geo.groups * geo.out_per_group * geo.in_per_group
    T = prod(geo.kernel_size)
    vec = max(v for v in (1, 2, 4, 8) if v <= tu["wgrad_vec"] and geo.output_size[-1] % v == 0)
    P = geo.batch * prod(geo.output_size) // vec  # strips of vec outputs along the row
    fx = 1
    channels_innermost = geo.data_strides(geo.result_shape)[1] == geo.data_strides(geo.source_shape)[1] == 1
    if channels_innermost:  # NHWC-like: lanes along filters
        while fx < 32 and fx < F:
            fx *= 2
    py = 256 // fx
    fb = -(-F // fx)
    tc = min(T, tu["wgrad_max_taps"])
    tap_chunks = -(-T // tc)
    base = fb * tap_chunks
    max_chunks = max(1, -(-P // (py * tu["wgrad_min_items"])))
    chunks = max(1, min(max_chunks, -(-tu["wgrad_target_groups"] // base)))
    chunks = max(chunks, -(-P // (py * _WGRAD_STEPS)))  # bounded loops: at most _WGRAD_STEPS strips a thread
    per = -(-P // chunks)
    ch = max(1, -(-per // py)) * py
    chunks = max(1, -(-P // ch))
    return {"F": F, "T": T, "P": P, "V": vec, "FX": fx, "PY": py, "FB": fb, "TC": tc, "CHUNKS": chunks, "CH": ch}


def _wgrad_body(geo: ConvGeometry, vec: int, taps) -> list:
    """The loop body for one strip of ``vec`` outputs: decode, load dy once per output, load each
    x column once per kernel row, and add every (output, tap) product into its tap's register."""
    D, H, W = _volume(geo.input_size, 1)
    OD, OH, OW = _volume(geo.output_size, 1)
    SD, SH, SWS = _volume(geo.strides, 1)
    DD, DH, DW = _volume(geo.dilations, 1)
    PD, PH, PW = _volume(geo.padding_before, 0)
    xs, ys = axis_strides(geo, geo.source_shape), axis_strides(geo, geo.result_shape)
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


def _wgrad_source(geo: ConvGeometry, plan: dict, t0: int, t1: int, dtype: str, direct: bool) -> str:
    """Pass-1 WGSL for taps [t0, t1): unrolled registers a0.., straight-line tap code."""
    subs = constants(geo)
    KD, KH, KW = _volume(geo.kernel_size, 1)
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
        write = ("      let ci = f % {CI}u;\n      let og = (f / {CI}u) % {OG}u;\n      let g = f / ({CI}u * {OG}u);\n"
                 "      let kw = t % {KW}u;\n      let kh = (t / {KW}u) % {KH}u;\n      let kd = t / ({KW}u * {KH}u);\n"
                 "      part[g * {WSG}u + og * {WSOG}u + ci * {WSCI}u + kd * {WSKD}u + kh * {WSKH}u + kw * {WSKW}u]"
                 " = {T}(s);").format(T=STORAGE[dtype], **subs)
    else:
        write = f"      part[chunk * {plan['F'] * plan['T']}u + f * {plan['T']}u + t] = s;"
    return render("conv_wgrad_partial", T=STORAGE[dtype], TP=STORAGE[dtype] if direct else "f32",
                  SHN=256 * tb, SH2N=max(256, tb * fx * r), FX=fx, FB=plan["FB"], CHUNKS=plan["CHUNKS"], F=plan["F"], CH=plan["CH"],
                  P=plan["P"], ACC_DECL=acc, BODY="\n".join(body), REDUCE="\n".join(red), WRITE=write, **subs)


def record_weights_gradient(kb, geo: ConvGeometry, dy, x, dw, dtype: str, tuning=None) -> dict:
    """Record the weights-gradient dispatches (used by the op kernel and by the benchmark, which
    gives ``tuning`` and times this kernel: a pointwise geometry takes the tiled GEMM only without it)."""
    if tuning is None and pointwise.record_weights_gradient(kb, geo, dy, x, dw, dtype):
        return {"gemm": True}
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
        subs = constants(geo)
        if chunks > _WGRAD_CHUNKS:  # many chunks: added up pairwise-like first, then written in the layout
            summed = kb.scratch(4 * F * T)
            reduce_dispatch(kb, part, summed, "float32", "float32", "sum", ((F * T,), (1,)), ((chunks,), (F * T,)))
            part, chunks = summed, 1
        src = render("conv_wgrad_reduce", T=STORAGE[dtype], F=F, TAPS=T, CHUNKS=chunks,
                     **{k: subs[k] for k in ("CI", "OG", "KH", "KW") + tuple("WS" + a.upper() for a in _W)})
        kb.dispatch(src, [("ro", part), ("rw", dw)], -(-(F * T) // 256))
    return plan


@webgpu_kernel("convolution_2d_weights_gradient", "convolution_3d_weights_gradient",
               "depthwise_convolution_2d_weights_gradient", "depthwise_convolution_3d_weights_gradient")
def _weights_gradient(step, kb):
    record_weights_gradient(kb, geometry_of(step), kb.input(0), kb.input(1), kb.output(), step.out_types[0].dtype.name)


# ------------------------------------------------------------------ convolution transpose
# T(x, W) = D(x, W), TD(g, W) = F(g, W), TW(g, x) = G(incoming=x, source=g) over the forward
# convolution's geometry (ops/convolution_transpose.py)
@webgpu_kernel("convolution_transpose_2d")
def _transpose(step, kb):
    record_data_gradient(kb, transpose_geometry(step), kb.input(0), kb.input(1), kb.output(),
                         step.out_types[0].dtype.name)


@webgpu_kernel("convolution_transpose_2d_data_gradient")
def _transpose_data_gradient(step, kb):
    record_forward(kb, transpose_geometry(step), kb.input(0), kb.input(1), kb.output(), step.out_types[0].dtype.name)


@webgpu_kernel("convolution_transpose_2d_weights_gradient")
def _transpose_weights_gradient(step, kb):
    record_weights_gradient(kb, transpose_geometry(step), kb.input(1), kb.input(0), kb.output(),
                            step.out_types[0].dtype.name)
