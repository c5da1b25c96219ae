"""NumPy kernels of the recurrent layers and their gradient ops (semantics: ops/rnn.py,
docs/recurrent.md). A loop over time per direction, in float64, rounded once to the op's dtype.

Both passes share one view of an op (``Layer``): the input projection ``P[d] = x W_d^T + b_d``
(the source slice itself without an input weight), then per step the recurrent product of the
masked previous state. The backward pass walks the steps in the opposite order, collecting the
gradient of each step's projection (``dP``) and of its recurrent products (``dQ``, with the state
rows that entered them, ``Hin``); the weight, bias and source gradients are sums of those.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...descriptors import RNNActivation
from ...ops.rnn import GATES, GRAD_INPUTS, GRAD_OUTPUTS, INPUTS, nil_inputs
from .registry import numpy_kernel


def activate(a, kind):
    """MPSGraphRNNActivation ``kind`` of ``a`` (HARD_SIGMOID: clamp(0.2 a + 0.5, 0, 1))."""
    kind = RNNActivation(kind)
    if kind == RNNActivation.NONE:
        return a
    if kind == RNNActivation.RELU:
        return np.maximum(a, 0.0)
    if kind == RNNActivation.TANH:
        return np.tanh(a)
    if kind == RNNActivation.SIGMOID:
        return 0.5 * (np.tanh(0.5 * a) + 1.0)
    return np.clip(0.2 * a + 0.5, 0.0, 1.0)


def activation_slope(y, kind):
    """The derivative of activation ``kind`` written with its output ``y``."""
    kind = RNNActivation(kind)
    if kind == RNNActivation.NONE:
        return np.ones_like(y)
    if kind == RNNActivation.RELU:
        return (y > 0).astype(y.dtype)
    if kind == RNNActivation.TANH:
        return 1.0 - y * y
    if kind == RNNActivation.SIGMOID:
        return y * (1.0 - y)
    return np.where((y > 0) & (y < 1), 0.2, 0.0)


def gate_order(kind: str, desc) -> tuple:
    """The gates in the layout's order (the rows of the weights and the training state)."""
    if kind == "lstm":
        return ("i", "z", "f", "o") if desc.forget_gate_last else ("i", "f", "z", "o")
    if kind == "gru":
        return ("r", "z", "o") if desc.reset_gate_first else ("z", "r", "o")
    return ("z",)


def gate_activations(kind: str, desc) -> dict:
    if kind == "lstm":
        return {"i": desc.input_gate_activation, "f": desc.forget_gate_activation, "z": desc.cell_gate_activation,
                "o": desc.output_gate_activation}
    if kind == "gru":
        return {"z": desc.update_gate_activation, "r": desc.reset_gate_activation, "o": desc.output_gate_activation}
    return {"z": desc.activation}


class Layer:
    """One recurrent op's inputs as float64 arrays, split per direction."""

    def __init__(self, kind: str, names, arrays, attrs) -> None:
        self.kind, self.desc = kind, attrs["descriptor"]
        nil = nil_inputs(attrs)
        a: dict[str, Any] = {n: (None if n in nil else np.asarray(x, np.float64)) for n, x in zip(names, arrays)}
        self.a = a
        x, R = a["source"], a["recurrent_weight"]
        self.G, self.D = GATES[kind], 2 if self.desc.bidirectional else 1
        self.T, self.N, self.X = x.shape
        self.H = R.shape[-1]
        G, H, D, T, N = self.G, self.H, self.D, self.T, self.N
        GH = G * H
        self.R = [R[d] if D == 2 else R for d in range(D)]
        W, b = a["input_weight"], a["bias"]
        self.W = None if W is None else [W[d * GH:(d + 1) * GH] for d in range(D)]
        self.P = []
        for d in range(D):
            p = x[..., d * GH:(d + 1) * GH] if W is None else x @ W[d * GH:(d + 1) * GH].T
            self.P.append(p + (0.0 if b is None else b[d * GH:(d + 1) * GH]))
        m = a.get("mask")
        m = np.ones((T, N, D * H)) if m is None else np.broadcast_to(m, (T, N, D * H))
        self.m = [m[..., d * H:(d + 1) * H] for d in range(D)]
        h0, c0 = a.get("init_state"), a.get("init_cell")
        self.h0 = [np.zeros((N, H)) if h0 is None else h0[:, d * H:(d + 1) * H] for d in range(D)]
        self.c0 = [np.zeros((N, H)) if c0 is None else c0[:, d * H:(d + 1) * H] for d in range(D)]
        p = a.get("peephole")
        self.peep = [None if p is None else p.reshape(D, 4 * H)[d] for d in range(D)]
        b2 = a.get("secondary_bias")
        self.b2 = [np.zeros(H) if b2 is None else b2[d * H:(d + 1) * H] for d in range(D)]
        order = gate_order(kind, self.desc)
        self.sl = {gname: slice(k * H, (k + 1) * H) for k, gname in enumerate(order)}
        self.act = gate_activations(kind, self.desc)

    def times(self, d: int) -> range:
        """Time indices in the order direction ``d`` visits them."""
        backward = d == 1 or (self.D == 1 and self.desc.reverse)
        return range(self.T - 1, -1, -1) if backward else range(self.T)

    def rows(self, d: int, gname: str):
        return self.R[d][self.sl[gname]]

    # ------------------------------------------------------------------------------ forward
    def forward(self):
        T, N, H, G, D = self.T, self.N, self.H, self.G, self.D
        h_out, c_out, z_out = np.zeros((T, N, D * H)), np.zeros((T, N, D * H)), np.zeros((T, N, D * G * H))
        for d in range(D):
            h, c = self.h0[d], self.c0[d]
            hs, zs = slice(d * H, (d + 1) * H), slice(d * G * H, (d + 1) * G * H)
            for t in self.times(d):
                h, c, z = self.step(d, t, h, c)
                h_out[t, :, hs], c_out[t, :, hs], z_out[t, :, zs] = h, c, z
        return h_out, c_out, z_out

    def step(self, d, t, hp, cp):
        """(h, c, training state) of step ``t`` of direction ``d`` from the previous state and cell."""
        P, m, sl, act = self.P[d][t], self.m[d][t], self.sl, self.act
        hm = hp * m
        if self.kind == "single_gate_rnn":
            z = P + hm @ self.R[d].T
            return activate(z, act["z"]), cp, z
        if self.kind == "lstm":
            a = P + hm @ self.R[d].T
            if self.peep[d] is not None:
                a = a + self.peep[d] * np.tile(cp, 4)
            gates = np.empty_like(a)
            for gname, s in sl.items():
                gates[:, s] = activate(a[:, s], act[gname])
            i, f, zc, o = (gates[:, sl[k]] for k in "ifzo")
            c = f * cp + i * zc
            return o * activate(c, self.desc.activation), c, gates
        gates = np.empty_like(P)
        for gname in "zr":
            gates[:, sl[gname]] = activate(P[:, sl[gname]] + hm @ self.rows(d, gname).T, act[gname])
        z, r = gates[:, sl["z"]], gates[:, sl["r"]]
        if self.desc.reset_after:
            cc = (hm @ self.rows(d, "o").T + self.b2[d]) * r
        else:
            cc = (hp * r * m) @ self.rows(d, "o").T
        o = activate(cc + P[:, sl["o"]], act["o"])
        gates[:, sl["o"]] = o
        h = (1 - z) * hp + z * o if self.desc.flip_z else z * hp + (1 - z) * o
        return h, cp, gates

    # ----------------------------------------------------------------------------- backward
    def backward(self, dy, zstate, cell, hfwd, dstate, dcell):
        """The gradients toward every input (a dict by input name)."""
        T, N, H, G, D, kind = self.T, self.N, self.H, self.G, self.D, self.kind
        GH = G * H
        sl, act, desc = self.sl, self.act, self.desc
        dP = [np.zeros((T, N, GH)) for _ in range(D)]
        dR = [np.zeros((GH, H)) for _ in range(D)]
        dpeep = [np.zeros(4 * H) for _ in range(D)]
        db2 = [np.zeros(H) for _ in range(D)]
        dh0, dc0 = np.zeros((N, D * H)), np.zeros((N, D * H))
        for d in range(D):
            hs, zs = slice(d * H, (d + 1) * H), slice(d * GH, (d + 1) * GH)
            order = list(self.times(d))
            R = self.R[d]
            dh = np.zeros((N, H)) if dstate is None else dstate[:, hs].copy()
            dc = np.zeros((N, H))
            if dcell is not None and dcell.ndim == 2:
                dc = dcell[:, hs].copy()
            for k in range(len(order) - 1, -1, -1):
                t = order[k]
                prev = order[k - 1] if k > 0 else None
                Z = zstate[t, :, zs]
                m = self.m[d][t]
                if kind == "lstm":
                    cp = self.c0[d] if prev is None else cell[prev, :, hs]
                    hp = self.h0[d] if prev is None else \
                        zstate[prev, :, zs][:, sl["o"]] * activate(cell[prev, :, hs], desc.activation)
                elif kind == "gru":
                    hp = self.h0[d] if prev is None else hfwd[prev, :, hs]
                else:
                    hp = self.h0[d] if prev is None else activate(zstate[prev, :, zs], act["z"])
                hm = hp * m
                g = dy[t, :, hs] + dh
                if kind == "single_gate_rnn":
                    da = g * activation_slope(activate(Z, act["z"]), act["z"])
                    dP[d][t] = da
                    dR[d] += da.T @ hm
                    dh = (da @ R) * m
                    continue
                if kind == "lstm":
                    c = cell[t, :, hs]
                    i, f, zc, o = (Z[:, sl[x]] for x in "ifzo")
                    gc = activate(c, desc.activation)
                    if dcell is not None and dcell.ndim == 3:
                        dc = dc + dcell[t, :, hs]
                    dc = dc + g * o * activation_slope(gc, desc.activation)
                    dgate = {"i": dc * zc, "f": dc * cp, "z": dc * i, "o": g * gc}
                    da = np.empty((N, GH))
                    for x, s in sl.items():
                        da[:, s] = dgate[x] * activation_slope(Z[:, s], act[x])
                    dcp = dc * f
                    if self.peep[d] is not None:
                        dpeep[d] += (da * np.tile(cp, 4)).sum(0)
                        dcp = dcp + (da * self.peep[d]).reshape(N, 4, H).sum(1)
                    dP[d][t] = da
                    dR[d] += da.T @ hm
                    dh = (da @ R) * m
                    dc = dcp
                    continue
                z, r, o = Z[:, sl["z"]], Z[:, sl["r"]], Z[:, sl["o"]]
                if desc.flip_z:
                    dz, do, dhp = g * (o - hp), g * z, g * (1 - z)
                else:
                    dz, do, dhp = g * (hp - o), g * (1 - z), g * z
                dao = do * activation_slope(o, act["o"])
                Ro = self.rows(d, "o")
                if desc.reset_after:
                    q = hm @ Ro.T + self.b2[d]
                    dr = dao * q
                    dq = dao * r
                    db2[d] += dq.sum(0)
                    dR[d][sl["o"]] += dq.T @ hm
                    dhp = dhp + (dq @ Ro) * m
                else:
                    u = dao @ Ro
                    dr = u * hp * m
                    dR[d][sl["o"]] += dao.T @ (hp * r * m)
                    dhp = dhp + u * r * m
                da = np.empty((N, GH))
                da[:, sl["z"]] = dz * activation_slope(z, act["z"])
                da[:, sl["r"]] = dr * activation_slope(r, act["r"])
                da[:, sl["o"]] = dao
                for x in "zr":
                    dR[d][sl[x]] += da[:, sl[x]].T @ hm
                    dhp = dhp + (da[:, sl[x]] @ self.rows(d, x)) * m
                dP[d][t] = da
                dh = dhp
            dh0[:, hs] = dh
            dc0[:, hs] = dc
        return self._collect(dP, dR, dpeep, db2, dh0, dc0)

    def _collect(self, dP, dR, dpeep, db2, dh0, dc0) -> dict:
        a, D, GH = self.a, self.D, self.G * self.H
        x = a["source"]
        out = {"recurrent_weight": np.stack(dR) if D == 2 else dR[0]}
        if self.W is None:
            out["source"] = np.concatenate(dP, axis=-1)
        else:
            out["source"] = sum(dP[d] @ self.W[d] for d in range(D))
            out["input_weight"] = np.concatenate([np.einsum("tnj,tni->ji", dP[d], x) for d in range(D)])
        out["bias"] = np.concatenate([dP[d].sum((0, 1)) for d in range(D)])
        p = a.get("peephole")
        out["peephole"] = np.stack(dpeep).reshape(p.shape if p is not None else (-1,))  # [4H], [2, 4H] or [8H]
        out["init_state"], out["init_cell"] = dh0, dc0
        out["secondary_bias"] = np.concatenate(db2)
        assert out["bias"].shape == (D * GH,)
        return out


def _forward(kind: str):
    def factory(step):
        names = INPUTS[kind]
        desc = step.attrs["descriptor"]
        dts = [t.dtype.np_dtype for t in step.out_types]

        def run(*arrays):
            h, c, z = Layer(kind, names, arrays, step.attrs).forward()
            outs = [h]
            if kind == "lstm" and (desc.produce_cell or desc.training):
                outs.append(c)
            if desc.training:
                outs.append(z)
            outs = [o.astype(dt) for o, dt in zip(outs, dts)]
            return outs[0] if len(outs) == 1 else tuple(outs)
        return run
    return factory


def _backward(kind: str):
    def factory(step):
        names = GRAD_INPUTS[kind]
        nil = nil_inputs(step.attrs)
        wanted = [k for k in GRAD_OUTPUTS[kind] if k not in nil]
        dts = [t.dtype.np_dtype for t in step.out_types]

        def run(*arrays):
            layer = Layer(kind, names, arrays, step.attrs)
            a = layer.a
            grads = layer.backward(a["source_gradient"], a["z_state"], a.get("cell_output_fwd"),
                                   a.get("output_fwd"), a["state_gradient"], a.get("cell_gradient"))
            return tuple(grads[k].astype(dt) for k, dt in zip(wanted, dts))
        return run
    return factory


for _kind in GATES:
    numpy_kernel(_kind)(_forward(_kind))
    numpy_kernel(f"{_kind}_gradients")(_backward(_kind))
