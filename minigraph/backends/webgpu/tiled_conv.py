"""Tiled forward and data-gradient kernels of the 2D convolutions (``kernels/conv_tiled.wgsl``).

Every 2D convolution (regular and grouped, depthwise, and the transposed convolution, whose
kernels are these over its forward geometry) is a grouped convolution over a ``ConvGeometry``,
so one kernel serves them all, with every descriptor option as baked constants: strides,
dilations, the resolved padding of every style, both data and weights layouts (as strides),
groups and the depthwise channel multiplier. A ``fused_epilogue`` step's tail (epilogue.py) may
be applied where each result is stored.

A workgroup computes a tile of output pixels (TX columns x TOH rows) for OB output channels of
one group of one image; per chunk of RB reduction channels it stages the source tile with its
halo and the chunk's weights in workgroup memory, then each thread computes VH pixels of a
column for all OB channels (VH * OB outputs per thread). The data gradient stages the incoming
gradient rows and columns that reach the tile and keeps only the taps whose stride divides.

``TILING["prefetch"]``: each thread loads its share of a chunk into registers, every load issued
before any is stored, and the next chunk's loads before the current chunk's products, so that
the device memory's latency overlaps the arithmetic and, where a workgroup has one chunk
(depthwise), a thread has all its loads in flight at once rather than one per loop step.
``TILING["unroll_data_gradient"]``: the data gradient's taps unrolled (``_unrolled_gradient``).

``plan`` picks the tile from the output's size and the workgroup-memory budget; it returns None
(the caller records the general kernel) for 3D ops, loops longer than llvmpipe allows, or tiles
that do not fit. ``TILING["mode"]``: ``"auto"`` (tiled for images of at least
``TILING["min_pixels"]`` output pixels, or ``"min_group_pixels"`` where a workgroup takes several
groups, as for depthwise), ``"always"``, ``"never"``.
"""
from __future__ import annotations

from math import prod
from typing import Optional

from ...ops.geometry import ConvGeometry
from .loops import LOOP_MAX
from .wgsl import STORAGE, pow2_at_least, render

# "prefetch": stage each chunk through registers, the next chunk's loads issued before the
# current chunk's products (False: load and store element by element, then compute);
# "unroll_data_gradient": the data gradient's taps unrolled where their rows are known (_unrolled_gradient);
# "rows": the rows per thread (VH) among those that fit: the largest, or with "least" a smaller
# one that stages a tenth fewer source rows over the image's tiles (28 output rows at stride 2:
# 2 tiles of 16 rows staging 66 source rows, rather than 2 of 24 staging 98)
TILING: dict = {"mode": "auto", "min_pixels": 128, "min_group_pixels": 16, "prefetch": True,
                "unroll_data_gradient": True, "rows": "least"}
RECORDED = {"forward": 0, "data_gradient": 0}  # tiled dispatches recorded (tests check the path)
_LOOP_MAX = LOOP_MAX  # loop iterations one invocation may run (llvmpipe stops loops after 65,535)
_BUDGET = 16384  # bytes of workgroup memory used at most (WebGPU's guaranteed minimum)
_UNROLL = 25  # kernels of at most this many taps have the forward's tap loops unrolled


def plan(geo: ConvGeometry, mode: str, budget: int = _BUDGET) -> Optional[dict]:
    """The tiling of the forward (``mode="forward"``) or data gradient of ``geo``, or None: the
    widest tile columns whose rows fit, with the rows per thread of ``TILING["rows"]``."""
    if len(geo.input_size) != 2 or len(geo.batch_shape) != 1 or not geo.weights_axes:
        return None
    fwd = mode == "forward"
    out_h, out_w = geo.output_size if fwd else geo.input_size
    oc, rc = (geo.out_per_group, geo.in_per_group) if fwd else (geo.in_per_group, geo.out_per_group)
    per_group = geo.groups > 1 and oc <= 4
    choice = TILING["mode"]
    least = int(TILING["min_group_pixels" if per_group else "min_pixels"])
    if choice == "never" or (choice == "auto" and out_h * out_w < least):
        return None
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel_size, geo.strides, geo.dilations
    floats = max(1, budget // 4)
    # few channels per group (depthwise): a workgroup takes several groups, when the image is
    # small or the channels are innermost (their loads then coalesce)
    channels_inner = geo.data_strides(geo.source_shape)[1] == 1
    gb_min = min(8, pow2_at_least(geo.groups)) if per_group and channels_inner else 1
    tx = min(32, 256 // gb_min, max(4, pow2_at_least(out_w)))
    while tx >= 4:
        ty = 256 // (tx * gb_min)
        if per_group:
            ty = min(ty, pow2_at_least(out_h))
        gb = 256 // (tx * ty)
        best: Optional[tuple] = None  # (staged source rows, tile)
        for vh in range(min(4, max(1, -(-out_h // ty))), 0, -1):
            got = _fit(gb, tx, ty, vh, oc, rc, (kh, kw), (sh, sw), (dh, dw), fwd, floats)
            if got is None:
                continue
            staged = -(-out_h // got["TOH"]) * got["SRH"]
            if best is None or staged < 0.9 * best[0]:
                best = (staged, got)
            if TILING["rows"] == "largest":
                break
        if best is not None:
            got = best[1]
            got.update(OC=oc, RC=rc, OUT_H=out_h, OUT_W=out_w)
            return got
        tx //= 2
    return None


def _fit(gb: int, tx: int, ty: int, vh: int, oc: int, rc: int, kernel: tuple, strides: tuple, dilations: tuple,
         fwd: bool, floats: int) -> Optional[dict]:
    """The tile of these thread counts if its staged source and weights fit ``floats`` and its
    loops stay bounded; None otherwise."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    toh = ty * vh
    if fwd:
        srh, srw = (toh - 1) * sh + (kh - 1) * dh + 1, (tx - 1) * sw + (kw - 1) * dw + 1
    else:
        # the rows (columns) of the incoming gradient that reach the tile: one more where the
        # stride's floor may take the first one a row back
        srh = (toh - 1 + (kh - 1) * dh) // sh + (1 if sh == 1 else 2)
        srw = (tx - 1 + (kw - 1) * dw) // sw + (1 if sw == 1 else 2)
    ob = min(oc, max(1, 16 // vh))
    rb = min(rc, 8)
    while rb >= 1 and gb * rb * (srh * srw + ob * kh * kw) > floats:
        rb -= 1
    if rb < 1:
        return None
    per_chunk = -(-gb * rb * srh * srw // 256) + -(-gb * ob * rb * kh * kw // 256) + rb * (1 + kh * (1 + kw)) + 1
    if -(-rc // rb) * per_chunk > _LOOP_MAX:
        return None
    return {"GB": gb, "TX": tx, "TY": ty, "VH": vh, "TOH": toh, "TOW": tx, "SRH": srh, "SRW": srw, "OB": ob, "RB": rb}


def _strides(geo: ConvGeometry, shape) -> tuple:
    n, c, h, w = geo.data_strides(shape)
    return n, c, h, w


def source(geo: ConvGeometry, mode: str, p: dict, dtype: str, epi=None) -> str:
    """The WGSL of one tiled convolution (forward or data gradient) of ``geo`` with tiling ``p``
    (through ``epi``, an ``Epilogue`` bound from binding 3, where each result is stored)."""
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
    GB = p["GB"]
    gblocks = -(-geo.groups // GB)
    nwg = geo.batch * gblocks * oblocks * tiles_h * tiles_w
    wsn = GB * OB * RB * KH * KW
    xb = f"(tg * {RB}u + rc) * {p['SRH']}u"  # the thread's group and channel in the staged tile
    wo = f"tg * {OB * RB * KH * KW}u + "
    if fwd and KH * KW <= _UNROLL:
        origin = f"  let ih0 = i32(oh0 * {SH}u) - {PH};\n  let iw0 = i32(ow0 * {SW}u) - {PW};"
        taps = _unrolled_forward(p, KH, KW, SH, SW, DH, DW, xb, wo)
    elif fwd:
        origin = f"  let ih0 = i32(oh0 * {SH}u) - {PH};\n  let iw0 = i32(ow0 * {SW}u) - {PW};"
        tap = [f"          let sc = tx * {SW}u + kw * {DW}u;"]
        tap += [f"          let w{o} = ws[{wo}{o * RB * KH * KW}u + wb];" for o in range(OB)]
        for v in range(VH):
            tap.append(f"          let x{v} = xs[({xb} + (ty * {VH}u + {v}u) * {SH}u + kh * {DH}u) * {p['SRW']}u + sc];")
            tap += [f"          a{v}_{o} = a{v}_{o} + x{v} * w{o};" for o in range(OB)]
    else:
        origin = (f"  let ih0 = floor_div(i32(oh0) + {PH - (KH - 1) * DH}, {SH});\n"
                  f"  let iw0 = floor_div(i32(ow0) + {PW - (KW - 1) * DW}, {SW});")
        tap = [f"          let tw = i32(ow0 + tx) + {PW} - i32(kw * {DW}u);",
               f"          let okw = tw >= 0 && tw % {SW} == 0;",
               f"          let sc = u32(select(0, tw / {SW} - iw0, okw));"]
        tap += [f"          let w{o} = ws[{wo}{o * RB * KH * KW}u + wb];" for o in range(OB)]
        for v in range(VH):
            tap.append(f"          {{ let th = i32(oh0 + ty * {VH}u + {v}u) + {PH} - i32(kh * {DH}u);")
            tap.append(f"            if (okw && th >= 0 && th % {SH} == 0) {{")
            tap.append(f"              let xv = xs[({xb} + u32(th / {SH} - ih0)) * {p['SRW']}u + sc];")
            tap += [f"              a{v}_{o} = a{v}_{o} + xv * w{o};" for o in range(OB)]
            tap.append("            }\n          }")
    if not fwd and _unrolled_gradient(p, KH, KW, SH, SW):
        taps = _unrolled_data_gradient(p, KH, KW, SH, SW, DH, DW, PH, PW, xb, wo)
    elif not (fwd and KH * KW <= _UNROLL):
        taps = _looped(KH, KW, tap)
    if s_c == 1 and GB * RB > 1:  # channels innermost (NHWC): consecutive threads load consecutive channels
        stage = (f"let rc = e % {RB}u; let gs = (e / {RB}u) % {GB}u; "
                 f"let col = (e / {RB * GB}u) % {p['SRW']}u; let row = e / {RB * GB * p['SRW']}u;")
    else:
        stage = (f"let col = e % {p['SRW']}u; let row = (e / {p['SRW']}u) % {p['SRH']}u; "
                 f"let rc = (e / {p['SRW'] * p['SRH']}u) % {RB}u; let gs = e / {p['SRW'] * p['SRH'] * RB}u;")
    ins = dict(G=geo.groups, GB=GB, RB=RB, RC=p["RC"], SRH=p["SRH"], SRW=p["SRW"], SRC_H=src_size[0],
               SRC_W=src_size[1], S_N=s_n, S_C=s_c, S_H=s_h, S_W=s_w, KH=KH, KW=KW, OB=OB, OC=p["OC"], W_G=wg,
               W_O=w_o, W_R=w_r, W_KH=wkh, W_KW=wkw, XSN=GB * RB * p["SRH"] * p["SRW"], WSN=wsn)
    staging = _staging(ins, stage, s_c != 1 or GB * RB == 1) if TILING["prefetch"] else _looped_staging(ins, stage)
    store = []
    for v in range(VH):
        for o in range(OB):
            value = epi.apply(f"a{v}_{o}", "o") if epi is not None else f"{STORAGE[dtype]}(a{v}_{o})"
            store.append(f"  {{ let oh = oh0 + ty * {VH}u + {v}u; let ow = ow0 + tx; let oc = ob * {OB}u + {o}u;\n"
                         f"    if (g < {geo.groups}u && oh < {p['OUT_H']}u && ow < {p['OUT_W']}u && oc < {p['OC']}u) {{\n"
                         f"      let o = n * {d_n}u + (g * {p['OC']}u + oc) * {d_c}u + oh * {d_h}u + ow * {d_w}u;\n"
                         f"      dst[o] = {value};\n    }} }}")
    return render("conv_tiled", MODE="forward: y[n, g*OG + og, oh, ow] += x[..., oh*SH - PH + kh*DH, ...] * w" if fwd
                  else "data gradient: dx[n, g*CI + ci, ih, iw] += dy[..., (ih + PH - kh*DH) / SH, ...] * w, "
                  "where the stride divides", T=STORAGE[dtype], TD=epi.storage if epi is not None else STORAGE[dtype],
                  EPILOGUE=epi.at(3).decls if epi is not None else "", XSN=GB * RB * p["SRH"] * p["SRW"], WSN=wsn,
                  NWG=nwg, TILES_W=tiles_w, TILES_H=tiles_h, OBLOCKS=oblocks, GBLOCKS=gblocks, GB=GB, G=geo.groups,
                  TX=p["TX"], TY=p["TY"], TOH=p["TOH"],
                  TOW=p["TOW"], ORIGIN=origin,
                  ACC_DECL="\n".join(f"  var a{v}_{o} = 0.0;" for v in range(VH) for o in range(OB)),
                  RC=p["RC"], RB=RB, TAPS=taps, STORE="\n".join(store), **staging)


def _x_element(c: dict, stage: str, chunk: str, into: str) -> list:
    """WGSL setting ``into`` to staged source element ``e`` of the chunk starting at channel
    ``chunk`` (zero outside the tensor and past the groups or channels)."""
    return [stage, "let ih = ih0 + i32(row); let iw = iw0 + i32(col); let gg = gblk * {GB}u + gs;".format(**c),
            f"{into} = 0.0;",
            "if (gg < {G}u && {r} + rc < {RC}u && ih >= 0 && iw >= 0 && u32(ih) < {SRC_H}u && u32(iw) < {SRC_W}u) {{ "
            "{into} = f32(src[n * {S_N}u + (gg * {RC}u + {r} + rc) * {S_C}u + u32(ih) * {S_H}u + u32(iw) * {S_W}u]); }}"
            .format(r=chunk, into=into, **c)]


def _w_element(c: dict, chunk: str, into: str) -> list:
    """WGSL setting ``into`` to staged weight ``e`` of the chunk starting at channel ``chunk``."""
    return ["let kw = e % {KW}u; let kh = (e / {KW}u) % {KH}u; let rc = (e / {n1}u) % {RB}u;".format(n1=c["KW"] * c["KH"], **c),
            "let o = ob * {OB}u + (e / {n2}u) % {OB}u; let gg = gblk * {GB}u + e / {n3}u;".format(
                n2=c["KW"] * c["KH"] * c["RB"], n3=c["KW"] * c["KH"] * c["RB"] * c["OB"], **c),
            f"{into} = 0.0;",
            "if (gg < {G}u && {r} + rc < {RC}u && o < {OC}u) {{ {into} = f32(wt[gg * {W_G}u + o * {W_O}u + ({r} + rc) * "
            "{W_R}u + kh * {W_KH}u + kw * {W_KW}u]); }}".format(r=chunk, into=into, **c)]


def _looped_staging(c: dict, stage: str) -> dict:
    """The template's staging holes for loads and stores element by element, in loops."""
    xs = ["for (var e = lid; e < {XSN}u; e = e + 256u) {{".format(**c), "  var v: f32;",
          *("  " + line for line in _x_element(c, stage, "r0", "v")),
          "  xs[((gs * {RB}u + rc) * {SRH}u + row) * {SRW}u + col] = v;".format(**c), "}"]
    ws = ["for (var e = lid; e < {WSN}u; e = e + 256u) {{".format(**c), "  var v: f32;",
          *("  " + line for line in _w_element(c, "r0", "v")), "  ws[e] = v;", "}"]
    return dict(REG_DECL="", LOAD_FIRST="", LOAD_NEXT="", STAGE="\n".join("    " + line for line in xs + ws))


def _staging(c: dict, stage: str, in_order: bool) -> dict:
    """The template's staging holes for prefetching: each thread's elements ``lid + 256 q`` of a
    chunk (of the source tile, then of the weights) are loaded into registers ``rx<q>``,
    ``rw<q>`` before any is stored, the next chunk's loads issued before the current chunk's
    products. ``in_order``: a source element's place in workgroup memory is its index ``e``."""
    def share(size: int, q: int, lines: list) -> list:  # the lines of element e = lid + 256 q, if it exists
        head = f"{{ let e = lid + {256 * q}u;" + (f" if (e < {size}u) {{" if 256 * (q + 1) > size else " {")
        return [head, *("  " + line for line in lines), "} }"]

    nx, nw = -(-c["XSN"] // 256), -(-c["WSN"] // 256)

    def load(chunk: str) -> list:
        lines = []
        for q in range(nx):
            lines += share(c["XSN"], q, _x_element(c, stage, chunk, f"rx{q}"))
        for q in range(nw):
            lines += share(c["WSN"], q, _w_element(c, chunk, f"rw{q}"))
        return lines

    store = []
    for q in range(nx):
        at = "e" if in_order else "((gs * {RB}u + rc) * {SRH}u + row) * {SRW}u + col".format(**c)
        store += share(c["XSN"], q, ([] if in_order else [stage]) + [f"xs[{at}] = rx{q};"])
    for q in range(nw):
        store += share(c["WSN"], q, [f"ws[e] = rw{q};"])
    following = []
    if c["RC"] > c["RB"]:
        following = ["let rn = r0 + {RB}u;".format(**c), "if (rn < {RC}u) {{".format(**c),
                     *("  " + line for line in load("rn")), "}"]
    return dict(REG_DECL="\n".join(f"  var r{a}{q}: f32;" for a, n in (("x", nx), ("w", nw)) for q in range(n)),
                LOAD_FIRST="\n".join("  " + line for line in load("0u")),
                STAGE="\n".join("    " + line for line in store),
                LOAD_NEXT="\n".join("    " + line for line in following))


def _unrolled_gradient(p: dict, KH: int, KW: int, SH: int, SW: int) -> bool:
    """Whether the data gradient's taps are unrolled (``TILING["unroll_data_gradient"]``): for
    small kernels where a thread's first row and the tile's first column are multiples of the
    strides, so which taps a row and a column keep, and where they read, are known when the
    kernel is written (rows) or one test per column tap (columns)."""
    return bool(TILING["unroll_data_gradient"]) and KH * KW <= _UNROLL and p["VH"] % SH == 0 and p["TX"] % SW == 0


def _unrolled_data_gradient(p: dict, KH: int, KW: int, SH: int, SW: int, DH: int, DW: int, PH: int, PW: int,
                            xb: str, wo: str) -> str:
    """The data gradient's taps unrolled. Row ``oh0 + ty * VH + v`` takes tap row kh where the
    stride divides ``v + PH - kh * DH`` and reads staged row ``ty * VH / SH + K0 + (v + PH -
    kh * DH) / SH``; column ``ow0 + tx`` takes tap column kw where it divides ``tx + PW - kw *
    DW``. Taps outside the incoming gradient read its staged zeros, as the looped taps skip them.
    Without a column stride each staged input is read once for all the rows and taps that use it."""
    VH, OB, RB, SRW = p["VH"], p["OB"], p["RB"], p["SRW"]
    k0, c0 = -((PH - (KH - 1) * DH) // SH), -((PW - (KW - 1) * DW) // SW)
    lines = [f"      let xr = ({xb} + ty * {VH // SH}u) * {SRW}u;", f"      let wr = {wo}rc * {KH * KW}u;"]
    for kw in range(KW):
        cw = PW - kw * DW
        m = cw % SW
        if SW == 1:
            lines.append(f"      let c{kw} = tx + {cw + c0}u;")
        else:
            lines.append(f"      let c{kw} = (tx + {m}u) / {SW}u + {(cw - m) // SW + c0}u;")
            lines.append(f"      let k{kw} = (tx + {m}u) % {SW}u == 0u;")
    loaded: set = set()
    for kh in range(KH):
        rows = [(v, k0 + (v + PH - kh * DH) // SH) for v in range(VH) if (v + PH - kh * DH) % SH == 0]
        if not rows:
            continue
        for kw in range(KW):
            t = kh * KW + kw
            body = [f"let w{o}_{t} = ws[wr + {o * RB * KH * KW + t}u];" for o in range(OB)]
            for v, r in rows:
                if (r, kw) not in loaded:  # stride 1: a staged input is read once for every row and tap
                    body.append(f"let x{r}_{kw} = xs[xr + {r * SRW}u + c{kw}];")
                    loaded.add((r, kw))
                body += [f"a{v}_{o} = a{v}_{o} + x{r}_{kw} * w{o}_{t};" for o in range(OB)]
            if SW == 1:
                lines += ["      " + b for b in body]
            else:
                lines += [f"      if (k{kw}) {{", *("        " + b for b in body), "      }"]
                loaded.clear()
    return "\n".join(lines)


def _looped(KH: int, KW: int, tap: list) -> str:
    """The tap loops around ``tap`` (the code of one tap (kh, kw) of channel rc)."""
    return "\n".join([f"      for (var kh = 0u; kh < {KH}u; kh = kh + 1u) {{",
                      f"        for (var kw = 0u; kw < {KW}u; kw = kw + 1u) {{",
                      f"          let wb = (rc * {KH}u + kh) * {KW}u + kw;", *tap, "        }", "      }"])


def _unrolled_forward(p: dict, KH: int, KW: int, SH: int, SW: int, DH: int, DW: int, xb: str, wo: str) -> str:
    """The forward's taps unrolled: each staged input (row offset, column offset) that some row
    v and tap (kh, kw) read is loaded once, then every product added."""
    VH, OB, RB, SRW = p["VH"], p["OB"], p["RB"], p["SRW"]
    lines = [f"      let xr = ({xb} + ty * {VH * SH}u) * {SRW}u + tx * {SW}u;",
             f"      let wr = {wo}rc * {KH * KW}u;"]
    loaded = set()
    for kh in range(KH):
        for kw in range(KW):
            t = kh * KW + kw
            lines += [f"      let w{o}_{t} = ws[wr + {o * RB * KH * KW + t}u];" for o in range(OB)]
            for v in range(VH):
                r, c = v * SH + kh * DH, kw * DW
                if (r, c) not in loaded:
                    loaded.add((r, c))
                    lines.append(f"      let x{r}_{c} = xs[xr + {r * SRW + c}u];")
                lines += [f"      a{v}_{o} = a{v}_{o} + x{r}_{c} * w{o}_{t};" for o in range(OB)]
    return "\n".join(lines)


def record(kb, geo: ConvGeometry, mode: str, src, w, dst, dtype: str, epi=None) -> bool:
    """Record the tiled forward (``src`` = x, ``dst`` = y) or data gradient (``src`` = dy,
    ``dst`` = dx) of ``geo``; False (nothing recorded) when ``plan`` declines it. With ``epi``
    (an ``Epilogue``) ``dst`` receives the step's tail applied to each result."""
    if prod(geo.output_size) == 0 or geo.batch == 0:
        return False
    p = plan(geo, mode, min(_BUDGET, kb.ctx.max_wg_storage))
    if p is None:
        return False
    tiles = -(-p["OUT_H"] // p["TOH"]) * -(-p["OUT_W"] // p["TOW"])
    groups = geo.batch * -(-geo.groups // p["GB"]) * -(-p["OC"] // p["OB"]) * tiles
    extra = epi.at(3).bindings if epi is not None else []
    kb.dispatch(source(geo, mode, p, dtype, epi), [("ro", src), ("ro", w), ("rw", dst)] + extra, groups)
    RECORDED[mode] += 1
    return True
