"""Tiled forward and data-gradient kernels of the 2D convolutions (``kernels/conv_tiled.wgsl``).

Every 2D convolution (regular and grouped, depthwise, and the transposed convolution, whose
kernels are these over its forward geometry) is a grouped convolution over a ``ConvGeometry``,
so one kernel serves them all, with every descriptor option as baked constants: strides,
dilations, the resolved padding of every style, both data and weights layouts (as strides),
groups and the depthwise channel multiplier.

A workgroup computes a tile of output pixels (TX columns x TOH rows) for OB output channels of
one group of one image; per chunk of RB reduction channels it stages the source tile with its
halo and the chunk's weights in workgroup memory, then each thread computes VH pixels of a
column for all OB channels (VH * OB outputs per thread). The data gradient stages the incoming
gradient rows and columns that reach the tile and keeps only the taps whose stride divides.

``plan`` picks the tile from the output's size and the workgroup-memory budget; it returns None
(the caller records the general kernel) for 3D ops, loops longer than llvmpipe allows, or tiles
that do not fit. ``TILING["mode"]``: ``"auto"`` (tiled for images of at least
``TILING["min_pixels"]`` output pixels and 8 columns), ``"always"``, ``"never"``.
"""
from __future__ import annotations

from math import prod
from typing import Optional

from ...ops.geometry import ConvGeometry
from .wgsl import STORAGE, render

TILING: dict = {"mode": "auto", "min_pixels": 128}
RECORDED = {"forward": 0, "data_gradient": 0}  # tiled dispatches recorded (tests check the path)
_LOOP_MAX = 32768  # loop iterations one invocation may run (llvmpipe stops loops after 65,535)
_BUDGET = 16384  # bytes of workgroup memory used at most (WebGPU's guaranteed minimum)


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def plan(geo: ConvGeometry, mode: str, budget: int = _BUDGET) -> Optional[dict]:
    """The tiling of the forward (``mode="forward"``) or data gradient of ``geo``, or None."""
    if len(geo.input_size) != 2 or len(geo.batch_shape) != 1 or not geo.weights_axes:
        return None
    fwd = mode == "forward"
    out_h, out_w = geo.output_size if fwd else geo.input_size
    choice = TILING["mode"]
    if choice == "never" or (choice == "auto" and (out_w < 8 or out_h * out_w < int(TILING["min_pixels"]))):
        return None
    oc, rc = (geo.out_per_group, geo.in_per_group) if fwd else (geo.in_per_group, geo.out_per_group)
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel_size, geo.strides, geo.dilations
    floats = max(1, budget // 4)
    tx = min(32, max(8, _pow2_at_least(out_w)))
    while tx >= 8:
        ty = 256 // tx
        vh = min(4, max(1, -(-out_h // ty)))
        while vh >= 1:
            toh = ty * vh
            if fwd:
                srh, srw = (toh - 1) * sh + (kh - 1) * dh + 1, (tx - 1) * sw + (kw - 1) * dw + 1
            else:
                srh, srw = (toh - 1 + (kh - 1) * dh) // sh + 2, (tx - 1 + (kw - 1) * dw) // sw + 2
            ob = min(oc, max(1, 16 // vh))
            rb = min(rc, 8)
            while rb >= 1 and rb * srh * srw + ob * rb * kh * kw > floats:
                rb -= 1
            if rb >= 1:
                chunks = -(-rc // rb)
                per_chunk = (-(-rb * srh * srw // 256) + -(-ob * rb * kh * kw // 256) + rb * (1 + kh * (1 + kw)) + 1)
                if chunks * per_chunk > _LOOP_MAX:
                    return None
                return {"TX": tx, "TY": ty, "VH": vh, "TOH": toh, "TOW": tx, "SRH": srh, "SRW": srw, "OB": ob,
                        "RB": rb, "OC": oc, "RC": rc, "OUT_H": out_h, "OUT_W": out_w}
            vh -= 1
        tx //= 2
    return None


def _strides(geo: ConvGeometry, shape) -> tuple:
    n, c, h, w = geo.data_strides(shape)
    return n, c, h, w


def source(geo: ConvGeometry, mode: str, p: dict, dtype: str) -> str:
    """The WGSL of one tiled convolution (forward or data gradient) of ``geo`` with tiling ``p``."""
    fwd = mode == "forward"
    (KH, KW), (SH, SW), (DH, DW), (PH, PW) = geo.kernel_size, geo.strides, geo.dilations, geo.padding_before
    src_shape, dst_shape = (geo.source_shape, geo.result_shape) if fwd else (geo.result_shape, geo.source_shape)
    src_size = geo.input_size if fwd else geo.output_size
    s_n, s_c, s_h, s_w = _strides(geo, src_shape)
    d_n, d_c, d_h, d_w = _strides(geo, dst_shape)
    wg, wog, wci, wkh, wkw = geo.weights_strides()
    w_o, w_r = (wog, wci) if fwd else (wci, wog)
    VH, OB, RB = p["VH"], p["OB"], p["RB"]
    tiles_h, tiles_w = -(-p["OUT_H"] // p["TOH"]), -(-p["OUT_W"] // p["TOW"])
    oblocks = -(-p["OC"] // OB)
    nwg = geo.batch * geo.groups * oblocks * tiles_h * tiles_w
    wsn = OB * RB * KH * KW
    if fwd:
        origin = f"  let ih0 = i32(oh0 * {SH}u) - {PH};\n  let iw0 = i32(ow0 * {SW}u) - {PW};"
        tap = [f"          let sc = tx * {SW}u + kw * {DW}u;"]
        tap += [f"          let w{o} = ws[{o * RB * KH * KW}u + wb];" for o in range(OB)]
        for v in range(VH):
            tap.append(f"          let x{v} = xs[(rc * {p['SRH']}u + (ty * {VH}u + {v}u) * {SH}u + kh * {DH}u) * {p['SRW']}u + sc];")
            tap += [f"          a{v}_{o} = a{v}_{o} + x{v} * w{o};" for o in range(OB)]
    else:
        origin = (f"  let ih0 = floor_div(i32(oh0) + {PH - (KH - 1) * DH}, {SH});\n"
                  f"  let iw0 = floor_div(i32(ow0) + {PW - (KW - 1) * DW}, {SW});")
        tap = [f"          let tw = i32(ow0 + tx) + {PW} - i32(kw * {DW}u);",
               f"          let okw = tw >= 0 && tw % {SW} == 0;",
               f"          let sc = u32(select(0, tw / {SW} - iw0, okw));"]
        tap += [f"          let w{o} = ws[{o * RB * KH * KW}u + wb];" for o in range(OB)]
        for v in range(VH):
            tap.append(f"          {{ let th = i32(oh0 + ty * {VH}u + {v}u) + {PH} - i32(kh * {DH}u);")
            tap.append(f"            if (okw && th >= 0 && th % {SH} == 0) {{")
            tap.append(f"              let xv = xs[(rc * {p['SRH']}u + u32(th / {SH} - ih0)) * {p['SRW']}u + sc];")
            tap += [f"              a{v}_{o} = a{v}_{o} + xv * w{o};" for o in range(OB)]
            tap.append("            }\n          }")
    if s_c == 1 and RB > 1:  # channels innermost (NHWC): consecutive threads load consecutive channels
        stage = (f"      let rc = e % {RB}u;\n      let col = (e / {RB}u) % {p['SRW']}u;\n"
                 f"      let row = e / ({RB}u * {p['SRW']}u);")
    else:
        stage = (f"      let col = e % {p['SRW']}u;\n      let row = (e / {p['SRW']}u) % {p['SRH']}u;\n"
                 f"      let rc = e / ({p['SRW']}u * {p['SRH']}u);")
    store = []
    for v in range(VH):
        for o in range(OB):
            store.append(f"  {{ let oh = oh0 + ty * {VH}u + {v}u; let ow = ow0 + tx; let oc = ob * {OB}u + {o}u;\n"
                         f"    if (oh < {p['OUT_H']}u && ow < {p['OUT_W']}u && oc < {p['OC']}u) {{\n"
                         f"      dst[n * {d_n}u + (g * {p['OC']}u + oc) * {d_c}u + oh * {d_h}u + ow * {d_w}u] = "
                         f"{STORAGE[dtype]}(a{v}_{o});\n    }} }}")
    return render("conv_tiled", MODE="forward: y[n, g*OG + og, oh, ow] += x[..., oh*SH - PH + kh*DH, ...] * w" if fwd
                  else "data gradient: dx[n, g*CI + ci, ih, iw] += dy[..., (ih + PH - kh*DH) / SH, ...] * w, "
                  "where the stride divides", T=STORAGE[dtype], XSN=RB * p["SRH"] * p["SRW"], WSN=wsn, NWG=nwg,
                  TILES_W=tiles_w, TILES_H=tiles_h, OBLOCKS=oblocks, G=geo.groups, TX=p["TX"], TOH=p["TOH"],
                  TOW=p["TOW"], ORIGIN=origin,
                  ACC_DECL="\n".join(f"  var a{v}_{o} = 0.0;" for v in range(VH) for o in range(OB)),
                  RC=p["RC"], RB=RB, STAGE_INDEX=stage, SRH=p["SRH"], SRW=p["SRW"], SRC_H=src_size[0],
                  SRC_W=src_size[1], S_N=s_n, S_C=s_c, S_H=s_h, S_W=s_w, KH=KH, KW=KW, OB=OB, OC=p["OC"], W_G=wg,
                  W_O=w_o, W_R=w_r, W_KH=wkh, W_KW=wkw, TAP="\n".join(tap), STORE="\n".join(store))


def record(kb, geo: ConvGeometry, mode: str, src, w, dst, dtype: str) -> bool:
    """Record the tiled forward (``src`` = x, ``dst`` = y) or data gradient (``src`` = dy,
    ``dst`` = dx) of ``geo``; False (nothing recorded) when ``plan`` declines it."""
    if prod(geo.output_size) == 0 or geo.batch == 0:
        return False
    p = plan(geo, mode, min(_BUDGET, kb.ctx.max_wg_storage))
    if p is None:
        return False
    tiles = -(-p["OUT_H"] // p["TOH"]) * -(-p["OUT_W"] // p["TOW"])
    groups = geo.batch * geo.groups * -(-p["OC"] // p["OB"]) * tiles
    kb.dispatch(source(geo, mode, p, dtype), [("ro", src), ("ro", w), ("rw", dst)], groups)
    RECORDED[mode] += 1
    return True
