"""Kernels of the recurrent layers and their gradient ops (semantics: ops/rnn.py, docs/recurrent.md).

The time loop is a host loop of dispatches: per step, the recurrent products of the masked state
(one invocation per output row, a dot product over H: ``dot``) and then the cell's pointwise
update (one invocation per hidden unit, both directions of a bidirectional layer in the same
dispatch). The input projection ``P = x W^T + b`` of every step is one dot pass before the loop.
The gradient ops walk the steps backwards the same way, keeping the per-step gradients of the
projections (``dP``) and of the recurrent products (``dQ``) and the states that entered them
(``Hin``); the weight, bias and source gradients are dot passes over them after the loop.

Every dot product loops over its length in passes of at most ``loops.LOOP_MAX`` iterations
(``loops.passes``), its running sum kept in place in the float32 buffer it writes, so no
invocation runs past lavapipe's loop limit. Intermediates are float32; float16 inputs are widened
and outputs rounded once.
"""
from __future__ import annotations

from ...descriptors import RNNActivation
from ...ops.rnn import GATES, GRAD_INPUTS, GRAD_OUTPUTS, INPUTS, nil_inputs
from .elementwise import elementwise_source
from .loops import passes
from .registry import webgpu_kernel
from .wgsl import STORAGE, params_decl, render


def _order(kind: str, desc) -> tuple:
    if kind == "lstm":
        return ("i", "z", "f", "o") if desc.forget_gate_last else ("i", "f", "z", "o")
    if kind == "gru":
        return ("r", "z", "o") if desc.reset_gate_first else ("z", "r", "o")
    return ("z",)


def _acts(kind: str, desc) -> dict:
    if kind == "lstm":
        d = {"i": desc.input_gate_activation, "f": desc.forget_gate_activation, "z": desc.cell_gate_activation,
             "o": desc.output_gate_activation, "c": desc.activation}
    elif kind == "gru":
        d = {"z": desc.update_gate_activation, "r": desc.reset_gate_activation, "o": desc.output_gate_activation}
    else:
        d = {"z": desc.activation}
    return {k: f"{int(RNNActivation(v))}u" for k, v in d.items()}


class _Layer:
    """A recurrent step's sizes, buffers and the two dispatch shapes (pointwise, dot)."""

    def __init__(self, step, kb, kind: str, names) -> None:
        self.kb, self.kind = kb, kind
        self.desc = desc = step.attrs["descriptor"]
        nil = nil_inputs(step.attrs)
        types = dict(zip(names, step.in_types))
        self.ref = {n: kb.input(i) for i, n in enumerate(names) if n not in nil}
        self.dt = step.in_types[0].dtype.name
        self.ty = STORAGE[self.dt]
        self.T, self.N, self.X = (int(v) for v in types["source"].shape)
        self.H = int(types["recurrent_weight"].shape[-1])
        self.G, self.D = GATES[kind], 2 if desc.bidirectional else 1
        self.GH = self.G * self.H
        self.I = self.X
        self.types = types
        self.off = {g: k * self.H for k, g in enumerate(_order(kind, desc))}
        self.act = _acts(kind, desc)
        rev = "true" if (self.D == 1 and desc.reverse) else "false"
        self.consts = (f"const TT: u32 = {self.T}u;\nconst NN: u32 = {self.N}u;\nconst HH: u32 = {self.H}u;\n"
                       f"const GH: u32 = {self.GH}u;\nconst DD: u32 = {self.D}u;\nconst XX: u32 = {self.X}u;\n"
                       f"const DH: u32 = {self.D * self.H}u;\nconst DGH: u32 = {self.D * self.GH}u;\n"
                       f"fn tm(d: u32, s: u32) -> u32 {{ return select(s, TT - 1u - s, d == 1u || {rev}); }}\n")

    def scratch(self, words: int):
        return self.kb.scratch(4 * max(1, words))

    def run(self, n: int, body: str, bufs, params=()) -> None:
        """One dispatch of ``n`` invocations; ``bufs``: [(name, ref, "ro" | "rw", wgsl type)]."""
        decls = [f"@group(0) @binding({i + 1}) var<storage, {'read' if a == 'ro' else 'read_write'}> {nm}: array<{ty}>;"
                 for i, (nm, _, a, ty) in enumerate(bufs)]
        src = render("rnn", PARAMS=params_decl(1 + len(params)), BINDINGS=self.consts + "\n".join(decls), BODY=body)
        self.kb.dispatch(src, [("u", [n, *params])] + [(a, r) for _, r, a, _ in bufs], -(-n // 256))

    def dot(self, n: int, K: int, bufs, index: str, term: str, dst: str, at: str = "e", init: str = "0.0",
            post: str = "acc", params=()) -> None:
        """``dst[at] = post(init + sum_{k < K} term)`` for each of ``n`` invocations, in passes of a
        bounded loop; between passes the running sum stays in ``dst[at]`` (float32)."""
        p = len(params)
        for j0, j1 in passes(K):
            body = (f"  let j0 = prm({1 + p}u);\n  let j1 = prm({2 + p}u);\n{index}\n"
                    f"  var acc: f32 = {init};\n  if (j0 > 0u) {{ acc = {dst}[{at}]; }}\n"
                    f"  for (var k = j0; k < j1; k = k + 1u) {{ acc = acc + {term}; }}\n"
                    f"  if (j1 == {K}u) {{ {dst}[{at}] = {post}; }} else {{ {dst}[{at}] = acc; }}")
            self.run(n, body, bufs, list(params) + [j0, j1])

    def inp(self, name: str) -> tuple:
        return (name, self.ref[name], "ro", self.ty)

    def has(self, name: str) -> bool:
        return name in self.ref

    def mask(self):
        """The mask broadcast to [T, N, D H] in float32 (ones without one)."""
        T, N, DH = self.T, self.N, self.D * self.H
        M = self.scratch(T * N * DH)
        if self.has("mask"):
            mt = self.types["mask"]
            src, params = elementwise_source([mt.dtype.name], [tuple(mt.shape)], "float32", (T, N, DH),
                                             lambda v, ct, o: f"f32({v[0]})")
            self.kb.dispatch(src, [("u", params), ("ro", self.ref["mask"]), ("rw", M)], -(-params[0] // 256))
        else:
            self.run(T * N * DH, "  M[e] = 1.0;", [("M", M, "rw", "f32")])
        return M

    def init_state(self, name: str, buf) -> None:
        """``buf`` [D, N, H] (float32) from an [N, D H] input, or zeros."""
        body = "  let d = e / (NN * HH);\n  let n = (e / HH) % NN;\n  let j = e % HH;\n"
        bufs = [("S", buf, "rw", "f32")]
        if self.has(name):
            body += f"  S[e] = f32({name}[n * DH + d * HH + j]);"
            bufs.append(self.inp(name))
        else:
            body += "  S[e] = 0.0;"
        self.run(self.D * self.N * self.H, body, bufs)

    def store(self, src, out, n: int) -> None:
        """``out`` (the op's dtype) = ``src`` (float32), elementwise."""
        self.run(n, f"  dst[e] = {self.ty}(src[e]);", [("src", src, "ro", "f32"), ("dst", out, "rw", self.ty)])


_DNJ = "  let d = e / (NN * HH);\n  let n = (e / HH) % NN;\n  let j = e % HH;\n"


def _projection(L: _Layer):
    """P [D, T, N, G H] = x W_d^T + b_d (the source slice itself without an input weight)."""
    T, N, D, GH = L.T, L.N, L.D, L.GH
    P = L.scratch(D * T * N * GH)
    index = ("  let d = e / (TT * NN * GH);\n  let r = e % (TT * NN * GH);\n  let tn = r / GH;\n"
             "  let j = r % GH;")
    bias = "f32(bias[d * GH + j])" if L.has("bias") else "0.0"
    bufs = [("Pj", P, "rw", "f32"), L.inp("source")] + ([L.inp("bias")] if L.has("bias") else [])
    if L.has("input_weight"):
        L.dot(D * T * N * GH, L.X, bufs + [L.inp("input_weight")], index,
              "f32(source[tn * XX + k]) * f32(input_weight[(d * GH + j) * XX + k])", "Pj", init=bias)
    else:
        L.run(D * T * N * GH, index + f"\n  Pj[e] = f32(source[tn * XX + d * GH + j]) + {bias};", bufs)
    return P


def _recur(L: _Layer, M, S, Acc, s: int, r0: int, rows: int, factor=None) -> None:
    """Acc[d, n, r0 + j] = sum_k (S m)[d, n, k] R_d[r0 + j, k] (times factor[d, n, k] if given)."""
    index = (f"  let d = e / (NN * {rows}u);\n  let n = (e / {rows}u) % NN;\n  let j = {r0}u + e % {rows}u;\n"
             "  let t = tm(d, prm(1u));")
    term = "S[(d * NN + n) * HH + k] * M[(t * NN + n) * DH + d * HH + k] * f32(recurrent_weight[(d * GH + j) * HH + k])"
    bufs = [("Acc", Acc, "rw", "f32"), ("S", S, "ro", "f32"), ("M", M, "ro", "f32"), L.inp("recurrent_weight")]
    if factor is not None:
        term += f" * F[(d * NN + n) * GH + {factor[1]}u + k]"
        bufs.append(("F", factor[0], "ro", "f32"))
    L.dot(L.D * L.N * rows, L.H, bufs, index, term, "Acc", at="(d * NN + n) * GH + j", params=[s])


# --------------------------------------------------------------------------------------- forward
def _forward(kind: str):
    def factory(step, kb):
        L = _Layer(step, kb, kind, INPUTS[kind])
        desc, T, N, H, D, GH = L.desc, L.T, L.N, L.H, L.D, L.GH
        P, M = _projection(L), L.mask()
        S = L.scratch(D * N * H)
        L.init_state("init_state", S)
        C = None
        if kind == "lstm":
            C = L.scratch(D * N * H)
            L.init_state("init_cell", C)
        Acc = L.scratch(D * N * GH)
        outs = {"h": kb.output(0)}
        k = 1
        if kind == "lstm" and (desc.produce_cell or desc.training):
            outs["c"], k = kb.output(1), 2
        if desc.training:
            outs["z"] = kb.output(k)
        ty, a, off = L.ty, L.act, L.off
        head = (_DNJ + "  let t = tm(d, prm(1u));\n  let bp = ((d * TT + t) * NN + n) * GH;\n"
                "  let ba = (d * NN + n) * GH;\n  let oh = (t * NN + n) * DH + d * HH + j;\n"
                "  let oz = (t * NN + n) * DGH + d * GH + j;\n")
        obufs = [(f"out_{key}", ref, "rw", ty) for key, ref in outs.items()]
        zs = "z" in outs
        Zg = L.scratch(D * N * GH) if kind == "gru" and not desc.reset_after else None
        for s in range(T):
            if kind == "single_gate_rnn":
                _recur(L, M, S, Acc, s, 0, GH)
                body = head + (f"  let z = Pj[bp + j] + Acc[ba + j];\n  let h = rnn_act(z, {a['z']});\n"
                               f"  S[e] = h;\n  out_h[oh] = {ty}(h);\n" + (f"  out_z[oz] = {ty}(z);\n" if zs else ""))
                L.run(D * N * H, body, [("Pj", P, "ro", "f32"), ("Acc", Acc, "ro", "f32"), ("S", S, "rw", "f32")]
                      + obufs, [s])
            elif kind == "lstm":
                _recur(L, M, S, Acc, s, 0, GH)
                peep = L.has("peephole")
                pd = "d * GH" if D == 2 else "0u"
                lines = [head, "  let cp = C[e];\n"]
                for gname in "ifzo":
                    o = off[gname]
                    extra = f" + f32(peephole[{pd} + {o}u + j]) * cp" if peep else ""
                    lines.append(f"  let g{gname} = rnn_act(Pj[bp + {o}u + j] + Acc[ba + {o}u + j]{extra}, {a[gname]});\n")
                lines.append(f"  let c = gf * cp + gi * gz;\n  let h = go * rnn_act(c, {a['c']});\n"
                             f"  S[e] = h;\n  C[e] = c;\n  out_h[oh] = {ty}(h);\n")
                if "c" in outs:
                    lines.append(f"  out_c[oh] = {ty}(c);\n")
                if zs:
                    lines += [f"  out_z[oz + {off[x]}u] = {ty}(g{x});\n" for x in "ifzo"]
                bufs = [("Pj", P, "ro", "f32"), ("Acc", Acc, "ro", "f32"), ("S", S, "rw", "f32"), ("C", C, "rw", "f32")]
                L.run(D * N * H, "".join(lines), bufs + obufs + ([L.inp("peephole")] if peep else []), [s])
            else:
                _gru_step(L, M, S, Acc, Zg, P, s, head, obufs, zs)
    return factory


def _gru_step(L, M, S, Acc, Zg, P, s, head, obufs, zs) -> None:
    desc, ty, a, off, H = L.desc, L.ty, L.act, L.off, L.H
    oz_, or_, oo = off["z"], off["r"], off["o"]
    n = L.D * L.N * L.H
    mix = "(1.0 - z) * hp + z * o" if desc.flip_z else "z * hp + (1.0 - z) * o"
    gates = (f"  let z = rnn_act(Pj[bp + {oz_}u + j] + Acc[ba + {oz_}u + j], {a['z']});\n"
             f"  let r = rnn_act(Pj[bp + {or_}u + j] + Acc[ba + {or_}u + j], {a['r']});\n")
    tail = (f"  let h = {mix};\n  S[e] = h;\n  out_h[oh] = {ty}(h);\n"
            + (f"  out_z[oz + {oz_}u] = {ty}(z);\n  out_z[oz + {or_}u] = {ty}(r);\n  out_z[oz + {oo}u] = {ty}(o);\n"
               if zs else ""))
    base = [("Pj", P, "ro", "f32"), ("Acc", Acc, "ro", "f32"), ("S", S, "rw", "f32")]
    if desc.reset_after:
        _recur(L, M, S, Acc, s, 0, 3 * H)
        b2 = "f32(secondary_bias[d * HH + j])" if L.has("secondary_bias") else "0.0"
        body = head + "  let hp = S[e];\n" + gates + \
            f"  let o = rnn_act((Acc[ba + {oo}u + j] + {b2}) * r + Pj[bp + {oo}u + j], {a['o']});\n" + tail
        L.run(n, body, base + obufs + ([L.inp("secondary_bias")] if L.has("secondary_bias") else []), [s])
        return
    _recur(L, M, S, Acc, s, 0, 2 * H)  # z and r come first in both gate orders; o is rows [2H, 3H)
    L.run(n, head + gates + f"  Zg[ba + {oz_}u + j] = z;\n  Zg[ba + {or_}u + j] = r;",
          [("Pj", P, "ro", "f32"), ("Acc", Acc, "ro", "f32"), ("Zg", Zg, "rw", "f32")], [s])
    _recur(L, M, S, Acc, s, 2 * H, H, factor=(Zg, or_))
    body = head + ("  let hp = S[e];\n"
                   f"  let z = Zg[ba + {oz_}u + j];\n  let r = Zg[ba + {or_}u + j];\n"
                   f"  let o = rnn_act(Acc[ba + {oo}u + j] + Pj[bp + {oo}u + j], {a['o']});\n") + tail
    L.run(n, body, base + [("Zg", Zg, "ro", "f32")] + obufs, [s])


# -------------------------------------------------------------------------------------- backward
def _backward(kind: str):
    def factory(step, kb):
        L = _Layer(step, kb, kind, GRAD_INPUTS[kind])
        desc, T, N, H, D, GH = L.desc, L.T, L.N, L.H, L.D, L.GH
        a = L.act
        ra = kind == "gru" and desc.reset_after
        M = L.mask()
        dP = L.scratch(D * T * N * GH)
        dQ = L.scratch(D * T * N * GH) if kind == "gru" else dP
        Hin = L.scratch(D * T * N * H)
        HinO = L.scratch(D * T * N * H) if kind == "gru" and not ra else None
        Cp = L.scratch(D * T * N * H) if kind == "lstm" else None
        Hp = L.scratch(D * N * H)
        dh = L.scratch(D * N * H)
        L.init_state("state_gradient", dh)
        dc = None
        cg3 = kind == "lstm" and L.has("cell_gradient") and len(L.types["cell_gradient"].shape) == 3
        if kind == "lstm":
            dc = L.scratch(D * N * H)
            if cg3:
                L.run(D * N * H, "  S[e] = 0.0;", [("S", dc, "rw", "f32")])
            else:
                L.init_state("cell_gradient", dc)
        Dd = L.scratch(D * N * H) if kind == "gru" else None
        U = L.scratch(D * N * H) if kind == "gru" else None
        head = (_DNJ + "  let t = tm(d, prm(1u));\n  let ti = ((d * TT + t) * NN + n);\n"
                "  let bp = ti * GH;\n  let oh = (t * NN + n) * DH + d * HH + j;\n"
                "  let oz = (t * NN + n) * DGH + d * GH + j;\n  let m = M[oh];\n")
        for s in range(T - 1, -1, -1):
            prm = [s, max(s - 1, 0), int(s > 0)]
            _prev(L, M, Hin, Hp, Cp, head, prm)
            g = "f32(source_gradient[oh]) + dh[e]"
            if kind == "single_gate_rnn":
                body = head + (f"  let gz = rnn_act(f32(z_state[oz]), {a['z']});\n"
                               f"  dP[bp + j] = ({g}) * rnn_slope(gz, {a['z']});")
                L.run(D * N * H, body, [("M", M, "ro", "f32"), ("dP", dP, "rw", "f32"), ("dh", dh, "ro", "f32"),
                                        L.inp("source_gradient"), L.inp("z_state")], prm)
                _back_recur(L, M, dQ, dh, s, 0, GH)
            elif kind == "lstm":
                _lstm_back(L, M, dP, dh, dc, Cp, head, prm, cg3)
                _back_recur(L, M, dQ, dh, s, 0, GH)
            else:
                _gru_back(L, M, dP, dQ, dh, Dd, U, Hp, Hin, HinO, head, prm, s)
        _results(step, L, dP, dQ, Hin, HinO, Cp, dh, dc)
    return factory


def _prev(L, M, Hin, Hp, Cp, head, prm) -> None:
    """Hin[d, t] = h[t-1] m (and Hp = h[t-1]; LSTM: Cp[d, t] = c[t-1]) for the step's time t."""
    kind, a, off = L.kind, L.act, L.off
    lines = [head, "  let tp = tm(d, prm(2u));\n  let has_prev = prm(3u) == 1u;\n"
             "  let ohp = (tp * NN + n) * DH + d * HH + j;\n  let ozp = (tp * NN + n) * DGH + d * GH + j;\n"]
    bufs = [("M", M, "ro", "f32"), ("Hin", Hin, "rw", "f32"), ("Hp", Hp, "rw", "f32")]
    h0 = "f32(init_state[n * DH + d * HH + j])" if L.has("init_state") else "0.0"
    if L.has("init_state"):
        bufs.append(L.inp("init_state"))
    if kind == "single_gate_rnn":
        lines.append(f"  var hp = {h0};\n  if (has_prev) {{ hp = rnn_act(f32(z_state[ozp]), {a['z']}); }}\n")
        bufs.append(L.inp("z_state"))
    elif kind == "lstm":
        c0 = "f32(init_cell[n * DH + d * HH + j])" if L.has("init_cell") else "0.0"
        lines.append(f"  var hp = {h0};\n  var cp = {c0};\n  if (has_prev) {{\n"
                     f"    cp = f32(cell_output_fwd[ohp]);\n"
                     f"    hp = f32(z_state[ozp + {off['o']}u]) * rnn_act(cp, {a['c']});\n  }}\n"
                     "  Cp[ti * HH + j] = cp;\n")
        bufs += [L.inp("z_state"), L.inp("cell_output_fwd"), ("Cp", Cp, "rw", "f32")]
        if L.has("init_cell"):
            bufs.append(L.inp("init_cell"))
    else:
        lines.append(f"  var hp = {h0};\n  if (has_prev) {{ hp = f32(output_fwd[ohp]); }}\n")
        bufs.append(L.inp("output_fwd"))
    lines.append("  Hp[e] = hp;\n  Hin[ti * HH + j] = hp * m;")
    L.run(L.D * L.N * L.H, "".join(lines), bufs, prm)


def _back_recur(L, M, dQ, dh, s, r0, rows, add=None, masked: bool = True) -> None:
    """dh[d, n, c] = (add[d, n, c] +) m[c] sum_{r0 <= j < r0 + rows} dQ[d, t, n, j] R_d[j, c]
    (without the mask factor when not ``masked``)."""
    index = "  let d = e / (NN * HH);\n  let n = (e / HH) % NN;\n  let c = e % HH;\n  let t = tm(d, prm(1u));\n" \
            "  let bq = ((d * TT + t) * NN + n) * GH;"
    term = f"dQ[bq + {r0}u + k] * f32(recurrent_weight[(d * GH + {r0}u + k) * HH + c])"
    post = "acc * M[(t * NN + n) * DH + d * HH + c]" if masked else "acc"
    bufs = [("dh", dh, "rw", "f32"), ("dQ", dQ, "ro", "f32"), ("M", M, "ro", "f32"), L.inp("recurrent_weight")]
    if add is not None:
        post = "Ad[e] + " + post
        bufs.append(("Ad", add, "ro", "f32"))
    L.dot(L.D * L.N * L.H, rows, bufs, index, term, "dh", post=post, params=[s])


def _lstm_back(L, M, dP, dh, dc, Cp, head, prm, cg3) -> None:
    a, off, D = L.act, L.off, L.D
    lines = [head, "  let g = f32(source_gradient[oh]) + dh[e];\n  let c = f32(cell_output_fwd[oh]);\n"
             "  let cp = Cp[ti * HH + j];\n"]
    lines += [f"  let g{x} = f32(z_state[oz + {off[x]}u]);\n" for x in "ifzo"]
    lines.append(f"  let gc = rnn_act(c, {a['c']});\n  var dcv = dc[e];\n")
    bufs = [("M", M, "ro", "f32"), ("dP", dP, "rw", "f32"), ("dh", dh, "ro", "f32"), ("dc", dc, "rw", "f32"),
            ("Cp", Cp, "ro", "f32"), L.inp("source_gradient"), L.inp("cell_output_fwd"), L.inp("z_state")]
    if cg3:
        lines.append("  dcv = dcv + f32(cell_gradient[oh]);\n")
        bufs.append(L.inp("cell_gradient"))
    lines.append(f"  dcv = dcv + g * go * rnn_slope(gc, {a['c']});\n"
                 f"  let di = dcv * gz * rnn_slope(gi, {a['i']});\n  let df = dcv * cp * rnn_slope(gf, {a['f']});\n"
                 f"  let dz = dcv * gi * rnn_slope(gz, {a['z']});\n  let do_ = g * gc * rnn_slope(go, {a['o']});\n"
                 f"  dP[bp + {off['i']}u + j] = di;\n  dP[bp + {off['f']}u + j] = df;\n"
                 f"  dP[bp + {off['z']}u + j] = dz;\n  dP[bp + {off['o']}u + j] = do_;\n"
                 "  var dcp = dcv * gf;\n")
    if L.has("peephole"):
        pd = "d * GH" if D == 2 else "0u"
        for x, v in (("i", "di"), ("f", "df"), ("z", "dz"), ("o", "do_")):
            lines.append(f"  dcp = dcp + {v} * f32(peephole[{pd} + {off[x]}u + j]);\n")
        bufs.append(L.inp("peephole"))
    lines.append("  dc[e] = dcp;")
    L.run(L.D * L.N * L.H, "".join(lines), bufs, prm)


def _gru_back(L, M, dP, dQ, dh, Dd, U, Hp, Hin, HinO, head, prm, s) -> None:
    desc, a, off, H = L.desc, L.act, L.off, L.H
    oz_, or_, oo = off["z"], off["r"], off["o"]
    n = L.D * L.N * L.H
    if desc.flip_z:
        mix = "  let dz = g * (o - hp);\n  let do_ = g * z;\n  Dd[e] = g * (1.0 - z);\n"
    else:
        mix = "  let dz = g * (hp - o);\n  let do_ = g * (1.0 - z);\n  Dd[e] = g * z;\n"
    first = (head + "  let hp = Hp[e];\n  let g = f32(source_gradient[oh]) + dh[e];\n"
             f"  let z = f32(z_state[oz + {oz_}u]);\n  let r = f32(z_state[oz + {or_}u]);\n"
             f"  let o = f32(z_state[oz + {oo}u]);\n" + mix +
             f"  let dao = do_ * rnn_slope(o, {a['o']});\n  let daz = dz * rnn_slope(z, {a['z']});\n"
             f"  dP[bp + {oz_}u + j] = daz;\n  dQ[bp + {oz_}u + j] = daz;\n  dP[bp + {oo}u + j] = dao;\n")
    bufs = [("M", M, "ro", "f32"), ("dP", dP, "rw", "f32"), ("dQ", dQ, "rw", "f32"), ("dh", dh, "ro", "f32"),
            ("Dd", Dd, "rw", "f32"), ("Hp", Hp, "ro", "f32"), L.inp("source_gradient"), L.inp("z_state")]
    if desc.reset_after:
        # q = (h m) R_o^T + b2, recomputed from the state that entered the step
        index = ("  let d = e / (NN * HH);\n  let n = (e / HH) % NN;\n  let j = e % HH;\n"
                 "  let t = tm(d, prm(1u));\n  let ti = ((d * TT + t) * NN + n);")
        init = "f32(secondary_bias[d * HH + j])" if L.has("secondary_bias") else "0.0"
        qb = [("U", U, "rw", "f32"), ("Hin", Hin, "ro", "f32"), L.inp("recurrent_weight")] + \
            ([L.inp("secondary_bias")] if L.has("secondary_bias") else [])
        L.dot(n, H, qb, index, f"Hin[ti * HH + k] * f32(recurrent_weight[(d * GH + {oo}u + j) * HH + k])", "U",
              init=init, params=[s])
        body = first + (f"  let q = U[e];\n  let dar = dao * q * rnn_slope(r, {a['r']});\n"
                        f"  dP[bp + {or_}u + j] = dar;\n  dQ[bp + {or_}u + j] = dar;\n  dQ[bp + {oo}u + j] = dao * r;")
        L.run(n, body, bufs + [("U", U, "ro", "f32")], prm)
        _back_recur(L, M, dQ, dh, s, 0, 3 * H, add=Dd)
        return
    L.run(n, first + f"  dQ[bp + {oo}u + j] = dao;", bufs, prm)
    _back_recur(L, M, dQ, U, s, oo, H, masked=False)  # U = dao R_o
    body = head + (f"  let hp = Hp[e];\n  let r = f32(z_state[oz + {or_}u]);\n"
                   "  let u = U[e];\n"
                   f"  let dar = u * hp * m * rnn_slope(r, {a['r']});\n"
                   f"  dP[bp + {or_}u + j] = dar;\n  dQ[bp + {or_}u + j] = dar;\n"
                   "  Dd[e] = Dd[e] + u * r * m;\n  HinO[ti * HH + j] = hp * r * m;")
    L.run(n, body, [("M", M, "ro", "f32"), ("dP", dP, "rw", "f32"), ("dQ", dQ, "rw", "f32"), ("U", U, "ro", "f32"),
                    ("Dd", Dd, "rw", "f32"), ("Hp", Hp, "ro", "f32"), ("HinO", HinO, "rw", "f32"),
                    L.inp("z_state")], prm)
    _back_recur(L, M, dQ, dh, s, 0, 2 * H, add=Dd)


def _results(step, L, dP, dQ, Hin, HinO, Cp, dh, dc) -> None:
    """The gradient op's outputs, in Apple's order, from the per-step gradients."""
    kb, T, N, H, D, GH, X = L.kb, L.T, L.N, L.H, L.D, L.GH, L.X
    nil = nil_inputs(step.attrs)
    wanted = [k for k in GRAD_OUTPUTS[L.kind] if k not in nil]
    out = {k: kb.output(i) for i, k in enumerate(wanted)}
    TN = T * N
    for k, ref in out.items():
        if k == "source":
            if L.has("input_weight"):
                tmp = L.scratch(TN * X)
                index = ("  let tn = e / XX;\n  let i = e % XX;")
                L.dot(TN * X, D * GH, [("tmp", tmp, "rw", "f32"), ("dP", dP, "ro", "f32"), L.inp("input_weight")],
                      index, "dP[((k / GH) * TT * NN + tn) * GH + k % GH] * f32(input_weight[k * XX + i])", "tmp")
                L.store(tmp, ref, TN * X)
            else:
                body = ("  let tn = e / DGH;\n  let dd = (e % DGH) / GH;\n  let j = e % GH;\n"
                        f"  dst[e] = {L.ty}(dP[(dd * TT * NN + tn) * GH + j]);")
                L.run(TN * D * GH, body, [("dP", dP, "ro", "f32"), ("dst", ref, "rw", L.ty)])
        elif k == "recurrent_weight":
            tmp = L.scratch(D * GH * H)
            index = "  let d = e / (GH * HH);\n  let j = (e / HH) % GH;\n  let c = e % HH;"
            src = "Hin[(d * TT * NN + k) * HH + c]"
            bufs = [("tmp", tmp, "rw", "f32"), ("dQ", dQ, "ro", "f32"), ("Hin", Hin, "ro", "f32")]
            if HinO is not None:
                src = f"select({src}, HinO[(d * TT * NN + k) * HH + c], j >= {2 * H}u)"
                bufs.append(("HinO", HinO, "ro", "f32"))
            L.dot(D * GH * H, TN, bufs, index, f"dQ[(d * TT * NN + k) * GH + j] * {src}", "tmp")
            L.store(tmp, ref, D * GH * H)
        elif k == "input_weight":
            tmp = L.scratch(D * GH * X)
            index = "  let d = e / (GH * XX);\n  let j = (e / XX) % GH;\n  let i = e % XX;"
            L.dot(D * GH * X, TN, [("tmp", tmp, "rw", "f32"), ("dP", dP, "ro", "f32"), L.inp("source")], index,
                  "dP[(d * TT * NN + k) * GH + j] * f32(source[k * XX + i])", "tmp")
            L.store(tmp, ref, D * GH * X)
        elif k == "bias":
            _column_sum(L, dP, ref, D * GH, GH, "")
        elif k == "peephole":
            _column_sum(L, dP, ref, D * GH, GH, " * Cp[(d * TT * NN + k) * HH + j % HH]", [("Cp", Cp, "ro", "f32")])
        elif k == "secondary_bias" and not L.desc.reset_after:  # b2 enters only with reset_after
            L.run(D * H, f"  dst[e] = {L.ty}(0.0);", [("dst", ref, "rw", L.ty)])
        elif k == "secondary_bias":
            tmp = L.scratch(D * H)
            index = "  let d = e / HH;\n  let j = e % HH;"
            L.dot(D * H, TN, [("tmp", tmp, "rw", "f32"), ("dQ", dQ, "ro", "f32")], index,
                  f"dQ[(d * TT * NN + k) * GH + {L.off['o']}u + j]", "tmp")
            L.store(tmp, ref, D * H)
        else:  # init_state, init_cell: [D, N, H] -> [N, D H]
            srcb = dh if k == "init_state" else dc
            body = f"  let n = e / DH;\n  let d = (e % DH) / HH;\n  let j = e % HH;\n  dst[e] = {L.ty}(S[(d * NN + n) * HH + j]);"
            L.run(N * D * H, body, [("S", srcb, "ro", "f32"), ("dst", ref, "rw", L.ty)])


def _column_sum(L, dP, ref, n: int, width: int, factor: str, extra=()) -> None:
    """ref[d * width + j] = sum over (t, n) of dP[d, t, n, j] (times ``factor``)."""
    tmp = L.scratch(n)
    index = f"  let d = e / {width}u;\n  let j = e % {width}u;"
    L.dot(n, L.T * L.N, [("tmp", tmp, "rw", "f32"), ("dP", dP, "ro", "f32"), *extra], index,
          f"dP[(d * TT * NN + k) * GH + j]{factor}", "tmp")
    L.store(tmp, ref, n)


for _kind in GATES:
    webgpu_kernel(_kind)(_forward(_kind))
    webgpu_kernel(f"{_kind}_gradients")(_backward(_kind))
