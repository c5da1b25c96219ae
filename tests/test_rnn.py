"""single_gate_rnn, lstm, gru and their gradient ops against torch.nn.RNN / LSTM / GRU (forward and
autograd, weights converted as docs/recurrent.md says), against naive loops written from Apple's
formulas for what torch cannot express (peephole, gate orders, flip_z, activations, mask,
reset_after=False, no input weight), and against finite differences of those loops."""
import itertools
import zlib

import numpy as np
import pytest

import minigraph as mg

A = mg.RNNActivation


# ------------------------------------------------------------------ naive loops from the formulas
def act(a, kind):
    kind = A(kind)
    return {A.NONE: lambda v: v, A.RELU: lambda v: np.maximum(v, 0), A.TANH: np.tanh,
            A.SIGMOID: lambda v: 1 / (1 + np.exp(-v)),
            A.HARD_SIGMOID: lambda v: np.clip(0.2 * v + 0.5, 0, 1)}[kind](a)


def naive(kind, desc, x, R, W=None, b=None, h0=None, c0=None, mask=None, peep=None, b2=None):
    """Apple's recurrences, one direction and one time step at a time (outputs: h, c, gates)."""
    T, N, _ = x.shape
    H = R.shape[-1]
    G = {"rnn": 1, "lstm": 4, "gru": 3}[kind]
    D = 2 if desc.bidirectional else 1
    hs, cs, zs = np.zeros((T, N, D * H)), np.zeros((T, N, D * H)), np.zeros((T, N, D * G * H))
    m_all = np.ones((T, N, D * H)) if mask is None else np.broadcast_to(mask, (T, N, D * H))
    for d in range(D):
        Rd = R[d] if D == 2 else R
        rows = slice(d * G * H, (d + 1) * G * H)
        xw = x[..., rows] if W is None else x @ W[rows].T
        if b is not None:
            xw = xw + b[rows]
        h = np.zeros((N, H)) if h0 is None else h0[:, d * H:(d + 1) * H]
        c = np.zeros((N, H)) if c0 is None else c0[:, d * H:(d + 1) * H]
        ts = range(T - 1, -1, -1) if d == 1 or (D == 1 and desc.reverse) else range(T)
        for t in ts:
            m = m_all[t, :, d * H:(d + 1) * H]
            if kind == "rnn":
                z = xw[t] + (h * m) @ Rd.T
                h = act(z, desc.activation)
                gates = z
            elif kind == "lstm":
                names = "izfo" if desc.forget_gate_last else "ifzo"
                pre = (h * m) @ Rd.T + xw[t]
                if peep is not None:
                    pd = peep[d] if D == 2 else peep
                    pre = pre + pd * np.concatenate([c] * 4, axis=1)
                acts = {"i": desc.input_gate_activation, "f": desc.forget_gate_activation,
                        "z": desc.cell_gate_activation, "o": desc.output_gate_activation}
                gv = {n: act(pre[:, k * H:(k + 1) * H], acts[n]) for k, n in enumerate(names)}
                c = gv["f"] * c + gv["i"] * gv["z"]
                h = gv["o"] * act(c, desc.activation)
                gates = np.concatenate([gv[n] for n in names], axis=1)
            else:
                names = "rzo" if desc.reset_gate_first else "zro"
                k = {n: slice(i * H, (i + 1) * H) for i, n in enumerate(names)}
                rec = (h * m) @ Rd.T
                z = act(rec[:, k["z"]] + xw[t][:, k["z"]], desc.update_gate_activation)
                r = act(rec[:, k["r"]] + xw[t][:, k["r"]], desc.reset_gate_activation)
                if desc.reset_after:
                    bb = np.zeros(H) if b2 is None else b2[d * H:(d + 1) * H]
                    cc = (rec[:, k["o"]] + bb) * r
                else:
                    cc = (h * r * m) @ Rd[k["o"]].T
                o = act(cc + xw[t][:, k["o"]], desc.output_gate_activation)
                h = (1 - z) * h + z * o if desc.flip_z else z * h + (1 - z) * o
                gv = {"z": z, "r": r, "o": o}
                gates = np.concatenate([gv[n] for n in names], axis=1)
            hs[t, :, d * H:(d + 1) * H] = h
            cs[t, :, d * H:(d + 1) * H] = c
            zs[t, :, d * G * H:(d + 1) * G * H] = gates
    return hs, cs, zs


OPS = {"rnn": "single_gate_rnn", "lstm": "lstm", "gru": "gru"}
DESC = {"rnn": mg.SingleGateRNNDescriptor, "lstm": mg.LSTMDescriptor, "gru": mg.GRUDescriptor}
GATES = {"rnn": 1, "lstm": 4, "gru": 3}


def make_inputs(kind, desc, rng, T=4, N=2, I=3, H=3, *, no_input_weight=False, optional=("b", "h0"),
                dtype=np.float64, mask_shape=None):
    G, D = GATES[kind], 2 if desc.bidirectional else 1
    v = {"x": rng.standard_normal((T, N, D * G * H if no_input_weight else I)),
         "R": rng.standard_normal((2, G * H, H) if D == 2 else (G * H, H)) * 0.5}
    if not no_input_weight:
        v["W"] = rng.standard_normal((D * G * H, I)) * 0.5
    if "b" in optional:
        v["b"] = rng.standard_normal(D * G * H) * 0.3
    if "h0" in optional:
        v["h0"] = rng.standard_normal((N, D * H)) * 0.5
    if "c0" in optional:
        v["c0"] = rng.standard_normal((N, D * H)) * 0.5
    if "peep" in optional:
        v["peep"] = rng.standard_normal((2, 4 * H) if D == 2 else (4 * H,)) * 0.5
    if "b2" in optional:
        v["b2"] = rng.standard_normal(D * H) * 0.3
    if "mask" in optional:
        v["mask"] = (rng.random(mask_shape or (T, N, D * H)) > 0.3).astype(np.float64) * 1.25
    return {k: a.astype(dtype) for k, a in v.items()}


KW = {"W": "input_weight", "b": "bias", "h0": "init_state", "c0": "init_cell", "mask": "mask",
      "peep": "peephole", "b2": "secondary_bias"}


def build(g, kind, desc, v, feeds=None):
    """The op on placeholders (or ``feeds`` tensors) of ``v``; returns (outputs, placeholders)."""
    ph = feeds or {k: g.placeholder(list(a.shape), mg.as_dtype(a.dtype), name=k) for k, a in v.items()}
    kw = {KW[k]: ph[k] for k in v if k in KW}
    outs = getattr(g, OPS[kind])(ph["x"], ph["R"], descriptor=desc, **kw)
    return outs, ph


def run_op(kind, desc, v, backend="numpy"):
    g = mg.Graph()
    outs, ph = build(g, kind, desc, v)
    r = g.run({ph[k]: a for k, a in v.items()}, outs, backend=backend)
    return [r[o] for o in outs]


def naive_of(kind, desc, v):
    return naive(kind, desc, v["x"], v["R"], v.get("W"), v.get("b"), v.get("h0"), v.get("c0"), v.get("mask"),
                 v.get("peep"), v.get("b2"))


# ------------------------------------------------------------------------------ forward: formulas
FORMULA_CASES = [
    ("rnn", dict(activation=A.TANH), ()),
    ("rnn", dict(), ("b", "h0", "mask")),
    ("rnn", dict(activation=A.SIGMOID, reverse=True), ("b",)),
    ("rnn", dict(activation=A.HARD_SIGMOID, bidirectional=True), ("b", "h0", "mask")),
    ("rnn", dict(activation=A.NONE), ("h0",)),
    ("lstm", dict(), ("b", "h0", "c0", "peep")),
    ("lstm", dict(forget_gate_last=True, produce_cell=True), ("b", "h0", "c0", "mask")),
    ("lstm", dict(input_gate_activation=A.HARD_SIGMOID, forget_gate_activation=A.TANH, cell_gate_activation=A.RELU,
                  output_gate_activation=A.NONE, activation=A.SIGMOID, training=True), ("b", "c0")),
    ("lstm", dict(bidirectional=True, training=True), ("b", "h0", "c0", "peep", "mask")),
    ("lstm", dict(reverse=True, produce_cell=True), ("peep",)),
    ("gru", dict(), ("b", "h0")),
    ("gru", dict(reset_gate_first=True, flip_z=True, training=True), ("b", "h0", "mask")),
    ("gru", dict(reset_after=True), ("b", "h0", "b2", "mask")),
    ("gru", dict(reset_after=True, bidirectional=True, update_gate_activation=A.HARD_SIGMOID,
                 reset_gate_activation=A.TANH, output_gate_activation=A.RELU, training=True), ("b", "h0", "b2")),
    ("gru", dict(reverse=True, flip_z=True), ("b2",)),  # b2 is unused without reset_after
]


@pytest.mark.parametrize("kind,fields,optional", FORMULA_CASES)
def test_forward_matches_apples_formulas(kind, fields, optional):
    desc = DESC[kind](**fields)
    for seed, no_w in ((0, False), (1, True)):
        v = make_inputs(kind, desc, np.random.default_rng(seed), optional=optional, no_input_weight=no_w)
        got = run_op(kind, desc, v)
        h, c, z = naive_of(kind, desc, v)
        want = [h] + ([c] if kind == "lstm" and (desc.produce_cell or desc.training) else [])
        if desc.training:
            want.append(z)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_mask_broadcasts_from_a_vector_and_per_step():
    desc = mg.LSTMDescriptor()
    rng = np.random.default_rng(3)
    for shape in ((3,), (2, 3), (4, 1, 3), (4, 2, 3)):
        v = make_inputs("lstm", desc, rng, optional=("b", "h0", "mask"), mask_shape=shape)
        np.testing.assert_allclose(run_op("lstm", desc, v)[0], naive_of("lstm", desc, v)[0], rtol=1e-10, atol=1e-12)
    # a mask of zeros cuts the recurrence: every step sees only its own input
    v = make_inputs("rnn", mg.SingleGateRNNDescriptor(), rng, optional=("b", "h0"))
    v["mask"] = np.zeros((4, 2, 3))
    h = run_op("rnn", mg.SingleGateRNNDescriptor(), v)[0]
    np.testing.assert_allclose(h, np.maximum(v["x"] @ v["W"].T + v["b"], 0), rtol=1e-12)


def test_reverse_is_the_flipped_sequence():
    rng = np.random.default_rng(4)
    for kind in OPS:
        fwd, rev = DESC[kind](), DESC[kind](reverse=True)
        v = make_inputs(kind, fwd, rng, optional=("b", "h0"))
        flipped = dict(v, x=v["x"][::-1].copy())
        np.testing.assert_allclose(run_op(kind, rev, v)[0], run_op(kind, fwd, flipped)[0][::-1], rtol=1e-12)
        # bidirectional ignores reverse
        bi, bir = DESC[kind](bidirectional=True), DESC[kind](bidirectional=True, reverse=True)
        v = make_inputs(kind, bi, rng, optional=("b",))
        np.testing.assert_array_equal(run_op(kind, bi, v)[0], run_op(kind, bir, v)[0])


def test_training_state_contents_and_output_counts():
    rng = np.random.default_rng(5)
    d = mg.SingleGateRNNDescriptor(training=True, activation=A.TANH)
    v = make_inputs("rnn", d, rng)
    h, z = run_op("rnn", d, v)
    np.testing.assert_allclose(np.tanh(z), h, rtol=1e-12)  # z is the pre-activation
    g = mg.Graph()
    x = g.placeholder([4, 2, 3], mg.float32)
    r = g.constant(np.zeros((12, 3), np.float32))
    w = g.constant(np.zeros((12, 3), np.float32))
    assert [o.shape for o in g.lstm(x, r, w)] == [(4, 2, 3)]
    assert [o.shape for o in g.lstm(x, r, w, descriptor=mg.LSTMDescriptor(produce_cell=True))] == [(4, 2, 3)] * 2
    assert [o.shape for o in g.lstm(x, r, w, descriptor=mg.LSTMDescriptor(training=True))] == \
        [(4, 2, 3), (4, 2, 3), (4, 2, 12)]
    rb = g.constant(np.zeros((2, 9, 3), np.float32))
    wb = g.constant(np.zeros((18, 3), np.float32))
    assert [o.shape for o in g.gru(x, rb, wb, descriptor=mg.GRUDescriptor(bidirectional=True, training=True))] == \
        [(4, 2, 6), (4, 2, 18)]


# --------------------------------------------------------------------------------- torch
def _torch():
    return pytest.importorskip("torch", reason="torch is in the 'oracles' extra")


def torch_to_mpsgraph(kind, module, reset_gate_first=True):
    """(W, R, b, b2) in MPSGraph's layouts from a one-layer torch module (docs/recurrent.md)."""
    D = 2 if module.bidirectional else 1
    H = module.hidden_size
    Ws, Rs, bs, b2s = [], [], [], []
    for d in range(D):
        sfx = "_l0" + ("_reverse" if d else "")
        W = getattr(module, "weight_ih" + sfx).detach().numpy().astype(np.float64)
        R = getattr(module, "weight_hh" + sfx).detach().numpy().astype(np.float64)
        if module.bias:
            bi = getattr(module, "bias_ih" + sfx).detach().numpy().astype(np.float64)
            bh = getattr(module, "bias_hh" + sfx).detach().numpy().astype(np.float64)
        else:
            bi = bh = np.zeros(W.shape[0])
        if kind == "gru":
            b = bi + np.concatenate([bh[:2 * H], np.zeros(H)])  # r, z take both biases; n takes b_in
            b2s.append(bh[2 * H:])  # b_hn sits inside r * (...): MPSGraph's secondary bias
            if not reset_gate_first:  # torch's [r, z, n] -> MPSGraph's default [z, r, o]
                perm = np.r_[H:2 * H, 0:H, 2 * H:3 * H]
                W, R, b = W[perm], R[perm], b[perm]
        else:
            b = bi + bh
        Ws.append(W)
        Rs.append(R)
        bs.append(b)
    R = np.stack(Rs) if D == 2 else Rs[0]
    return np.concatenate(Ws), R, np.concatenate(bs), (np.concatenate(b2s) if b2s else None)


TORCH_CASES = [(kind, bidi, bias, init, nonlin)
               for kind in ("rnn", "lstm", "gru") for bidi in (False, True) for bias in (False, True)
               for init in (False, True) for nonlin in (("tanh", "relu") if kind == "rnn" else (None,))]


def _torch_module(torch, kind, I, H, bidi, bias, nonlin):
    if kind == "rnn":
        return torch.nn.RNN(I, H, nonlinearity=nonlin, bias=bias, bidirectional=bidi).double()
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    return cls(I, H, bias=bias, bidirectional=bidi).double()


@pytest.mark.parametrize("kind,bidi,bias,init,nonlin", TORCH_CASES)
def test_forward_and_gradients_match_torch(kind, bidi, bias, init, nonlin):
    torch = _torch()
    torch.manual_seed(zlib.crc32(repr((kind, bidi, bias, init, nonlin)).encode()))  # the same seed in every process
    T, N, I, H = 5, 3, 4, 3
    D = 2 if bidi else 1
    mod = _torch_module(torch, kind, I, H, bidi, bias, nonlin)
    x = torch.randn(T, N, I, dtype=torch.float64, requires_grad=True)
    h0 = (torch.randn(D, N, H, dtype=torch.float64) * 0.5).requires_grad_(True)
    c0 = (torch.randn(D, N, H, dtype=torch.float64) * 0.5).requires_grad_(True)
    rng = np.random.default_rng(0)
    wy = rng.standard_normal((T, N, D * H))
    wc = rng.standard_normal((N, D * H))
    args = (x,) if not init else (x, (h0, c0) if kind == "lstm" else h0)
    y, last = mod(*args)
    loss = (y * torch.tensor(wy)).sum()
    if kind == "lstm":  # the final cell feeds the loss too: the gradient through the cell output
        loss = loss + (last[1].permute(1, 0, 2).reshape(N, D * H) * torch.tensor(wc)).sum()
    loss.backward()
    for reset_gate_first in ((True, False) if kind == "gru" else (True,)):
        W, R, b, b2 = torch_to_mpsgraph(kind, mod, reset_gate_first)
        fields = {"bidirectional": bidi}
        if kind == "rnn":
            fields["activation"] = A.TANH if nonlin == "tanh" else A.RELU
        if kind == "lstm":
            fields["produce_cell"] = True
        if kind == "gru":
            fields.update(reset_after=True, reset_gate_first=reset_gate_first)
        desc = DESC[kind](**fields)
        g = mg.Graph()
        vals = {"x": x.detach().numpy(), "R": R, "W": W, "b": b}
        if init:
            vals["h0"] = h0.detach().permute(1, 0, 2).reshape(N, D * H).numpy()
            if kind == "lstm":
                vals["c0"] = c0.detach().permute(1, 0, 2).reshape(N, D * H).numpy()
        if kind == "gru":
            vals["b2"] = b2
        outs, ph = build(g, kind, desc, vals)
        L = g.reduction_sum(g.multiplication(outs[0], g.constant(wy)), axes=None)
        if kind == "lstm":  # the last step of each direction: t = T-1 forward, t = 0 backward
            last_c = g.concat([g.slice(g.slice(outs[1], 0, T - 1, 1), 2, 0, H),
                                       g.slice(g.slice(outs[1], 0, 0, 1), 2, H, H)], 2) \
                if bidi else g.slice(outs[1], 0, T - 1, 1)
            L = g.addition(L, g.reduction_sum(g.multiplication(last_c, g.constant(wc[None])), axes=None))
        keys = [k for k in ("x", "R", "W", "b", "h0", "c0") if k in ph]
        grads = g.gradients(L, [ph[k] for k in keys])
        feeds = {ph[k]: a for k, a in vals.items()}
        r = g.run(feeds, [outs[0]] + [grads[ph[k]] for k in keys])
        np.testing.assert_allclose(r[outs[0]], y.detach().numpy(), rtol=1e-10, atol=1e-12)
        got = {k: r[grads[ph[k]]] for k in keys}
        np.testing.assert_allclose(got["x"], x.grad.numpy(), rtol=1e-9, atol=1e-12)
        Wg, Rg, bg, b2g = _torch_grads_as_mpsgraph(kind, mod, reset_gate_first)
        np.testing.assert_allclose(got["R"], Rg, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got["W"], Wg, rtol=1e-9, atol=1e-12)
        if bias:
            # MPSGraph's one bias gets the gradient of torch's b_ih (r and z: of b_hh too)
            np.testing.assert_allclose(got["b"], bg, rtol=1e-9, atol=1e-12)
        if init:
            np.testing.assert_allclose(got["h0"], h0.grad.permute(1, 0, 2).reshape(N, D * H).numpy(), rtol=1e-9,
                                       atol=1e-12)
            if kind == "lstm":
                np.testing.assert_allclose(got["c0"], c0.grad.permute(1, 0, 2).reshape(N, D * H).numpy(),
                                           rtol=1e-9, atol=1e-12)


def _torch_grads_as_mpsgraph(kind, mod, reset_gate_first):
    """The gradients torch's autograd left in ``mod``, in MPSGraph's layouts."""
    H = mod.hidden_size
    D = 2 if mod.bidirectional else 1
    Ws, Rs, bs = [], [], []
    for d in range(D):
        sfx = "_l0" + ("_reverse" if d else "")
        W = getattr(mod, "weight_ih" + sfx).grad.numpy()
        R = getattr(mod, "weight_hh" + sfx).grad.numpy()
        b = getattr(mod, "bias_ih" + sfx).grad.numpy() if mod.bias else np.zeros(W.shape[0])
        if kind == "gru" and not reset_gate_first:
            perm = np.r_[H:2 * H, 0:H, 2 * H:3 * H]
            W, R, b = W[perm], R[perm], b[perm]
        Ws.append(W)
        Rs.append(R)
        bs.append(b)
    return np.concatenate(Ws), (np.stack(Rs) if D == 2 else Rs[0]), np.concatenate(bs), None


def test_gru_secondary_bias_gradient_is_torchs_b_hn():
    torch = _torch()
    torch.manual_seed(7)
    T, N, I, H = 4, 2, 3, 3
    mod = torch.nn.GRU(I, H).double()
    x = torch.randn(T, N, I, dtype=torch.float64)
    y, _ = mod(x)
    wy = np.random.default_rng(1).standard_normal((T, N, H))
    (y * torch.tensor(wy)).sum().backward()
    W, R, b, b2 = torch_to_mpsgraph("gru", mod)
    g = mg.Graph()
    vals = {"x": x.numpy(), "R": R, "W": W, "b": b, "b2": b2}
    outs, ph = build(g, "gru", mg.GRUDescriptor(reset_after=True, reset_gate_first=True), vals)
    L = g.reduction_sum(g.multiplication(outs[0], g.constant(wy)), axes=None)
    gb2 = g.gradients(L, [ph["b2"]])[ph["b2"]]
    got = g.run({ph[k]: a for k, a in vals.items()}, [gb2])[gb2]
    np.testing.assert_allclose(got, mod.bias_hh_l0.grad.numpy()[2 * H:], rtol=1e-9)


# ----------------------------------------------------------------- gradients: finite differences
def _fd_check(kind, desc, v, wy, extra=None, keys=None):
    """g.gradients of sum(h * wy) (+ extra(h, c)) against central differences of the naive loops."""
    def loss_naive(vals):
        h, c, _ = naive_of(kind, desc, vals)
        total = float((h * wy).sum())
        return total + (extra[1](h, c) if extra else 0.0)

    g = mg.Graph()
    outs, ph = build(g, kind, desc, v)
    L = g.reduction_sum(g.multiplication(outs[0], g.constant(wy)), axes=None)
    if extra:
        L = g.addition(L, extra[0](g, outs))
    keys = keys or [k for k in v if k != "mask"]
    grads = g.gradients(L, [ph[k] for k in keys])
    r = g.run({ph[k]: a for k, a in v.items()}, [grads[ph[k]] for k in keys])
    eps = 1e-6
    for k in keys:
        got = r[grads[ph[k]]]
        want = np.zeros_like(v[k])
        for idx in np.ndindex(v[k].shape):
            p, m = {kk: a.copy() for kk, a in v.items()}, {kk: a.copy() for kk, a in v.items()}
            p[k][idx] += eps
            m[k][idx] -= eps
            want[idx] = (loss_naive(p) - loss_naive(m)) / (2 * eps)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=f"{kind} d/d{k} {desc}")


FD_CASES = [
    ("rnn", dict(activation=A.TANH, bidirectional=True), ("b", "h0", "mask"), False),
    ("rnn", dict(activation=A.SIGMOID, reverse=True), ("b",), True),
    ("rnn", dict(activation=A.NONE, training=True), ("h0", "mask"), False),
    ("lstm", dict(), ("b", "h0", "c0", "peep", "mask"), False),
    ("lstm", dict(forget_gate_last=True, bidirectional=True, training=True), ("b", "h0", "c0", "peep"), False),
    ("lstm", dict(reverse=True, input_gate_activation=A.TANH, cell_gate_activation=A.SIGMOID,
                  output_gate_activation=A.TANH, activation=A.SIGMOID), ("b", "c0"), True),
    ("gru", dict(), ("b", "h0", "mask"), False),
    ("gru", dict(reset_gate_first=True, flip_z=True, bidirectional=True), ("b", "h0"), False),
    ("gru", dict(reset_after=True, training=True), ("b", "h0", "b2", "mask"), True),
    ("gru", dict(reset_after=True, flip_z=True, reverse=True, update_gate_activation=A.TANH,
                 output_gate_activation=A.SIGMOID), ("b2",), False),
]


@pytest.mark.parametrize("kind,fields,optional,no_w", FD_CASES)
def test_gradients_match_finite_differences(kind, fields, optional, no_w):
    desc = DESC[kind](**fields)
    rng = np.random.default_rng(11)
    v = make_inputs(kind, desc, rng, T=3, N=2, I=2, H=2, optional=optional, no_input_weight=no_w)
    D = 2 if desc.bidirectional else 1
    wy = rng.standard_normal((3, 2, D * 2))
    _fd_check(kind, desc, v, wy)


def test_lstm_gradient_through_the_cell_sequence():
    desc = mg.LSTMDescriptor(produce_cell=True)
    rng = np.random.default_rng(12)
    v = make_inputs("lstm", desc, rng, T=3, N=2, I=2, H=2, optional=("b", "h0", "c0", "peep"))
    wy, wc = rng.standard_normal((3, 2, 2)), rng.standard_normal((3, 2, 2))
    extra = (lambda g, outs: g.reduction_sum(g.multiplication(outs[1], g.constant(wc)), axes=None),
             lambda h, c: float((c * wc).sum()))
    _fd_check("lstm", desc, v, wy, extra)


def test_gradient_ops_take_state_and_cell_gradients_from_beyond_the_last_step():
    """state_gradient (and cell_gradient) [N, H] add to the gradient of the last processed step."""
    rng = np.random.default_rng(13)
    for kind in OPS:
        desc = DESC[kind](training=True, bidirectional=kind == "gru", reverse=kind == "rnn")
        D = 2 if desc.bidirectional else 1
        v = make_inputs(kind, desc, rng, T=3, N=2, I=2, H=2, optional=("b", "h0", "c0") if kind == "lstm" else ("b", "h0"))
        wy, ws, wc = (rng.standard_normal((3, 2, 2 * D)), rng.standard_normal((2, 2 * D)),
                      rng.standard_normal((2, 2 * D)))
        last = [2 if (d == 0 and not desc.reverse) else 0 for d in range(D)]

        def loss(vals):
            h, c, _ = naive_of(kind, desc, vals)
            hl = np.concatenate([h[last[d], :, d * 2:(d + 1) * 2] for d in range(D)], axis=1)
            cl = np.concatenate([c[last[d], :, d * 2:(d + 1) * 2] for d in range(D)], axis=1)
            return float((h * wy).sum() + (hl * ws).sum() + ((cl * wc).sum() if kind == "lstm" else 0.0))

        g = mg.Graph()
        outs, ph = build(g, kind, desc, v)
        kw = dict(state_gradient=g.constant(ws), input_weight=ph["W"], bias=ph["b"], init_state=ph["h0"],
                  descriptor=desc)
        if kind == "lstm":
            res = g.lstm_gradients(ph["x"], ph["R"], g.constant(wy), outs[2], outs[1], cell_gradient=g.constant(wc),
                                   init_cell=ph["c0"], **kw)
            names = ["x", "R", "W", "b", "h0", "c0"]
        elif kind == "gru":
            res = g.gru_gradients(ph["x"], ph["R"], g.constant(wy), outs[1], outs[0], **kw)
            names = ["x", "R", "W", "b", "h0"]
        else:
            res = g.single_gate_rnn_gradients(ph["x"], ph["R"], g.constant(wy), outs[1], **kw)
            names = ["x", "R", "W", "b", "h0"]
        assert len(res) == len(names)
        r = g.run({ph[k]: a for k, a in v.items()}, res)
        eps = 1e-6
        for name, t in zip(names, res):
            want = np.zeros_like(v[name])
            for idx in np.ndindex(v[name].shape):
                p, m = {k: a.copy() for k, a in v.items()}, {k: a.copy() for k, a in v.items()}
                p[name][idx] += eps
                m[name][idx] -= eps
                want[idx] = (loss(p) - loss(m)) / (2 * eps)
            np.testing.assert_allclose(r[t], want, rtol=1e-5, atol=1e-7, err_msg=f"{kind} {name}")


def test_gradient_ops_leave_out_nil_inputs():
    g = mg.Graph()
    x = g.placeholder([3, 2, 4], mg.float32)
    r = g.placeholder([4, 4], mg.float32)
    d = mg.SingleGateRNNDescriptor(training=True)
    h, z = g.single_gate_rnn(x, r, descriptor=d)
    res = g.single_gate_rnn_gradients(x, r, h, z, descriptor=d)
    assert [t.shape for t in res] == [(3, 2, 4), (4, 4)]
    w = g.placeholder([4, 4], mg.float32)
    b = g.placeholder([4], mg.float32)
    res = g.single_gate_rnn_gradients(x, r, h, z, bias=b, descriptor=d)
    assert [t.shape for t in res] == [(3, 2, 4), (4, 4), (4,)]
    res = g.single_gate_rnn_gradients(x, r, h, z, input_weight=w, init_state=g.placeholder([2, 4], mg.float32),
                                      descriptor=d)
    assert [t.shape for t in res] == [(3, 2, 4), (4, 4), (4, 4), (2, 4)]


def test_float32_matches_float64():
    rng = np.random.default_rng(14)
    for kind in OPS:
        desc = DESC[kind](bidirectional=True)
        v = make_inputs(kind, desc, rng, optional=("b", "h0"))
        v32 = {k: a.astype(np.float32) for k, a in v.items()}
        got = run_op(kind, desc, v32)[0]
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, run_op(kind, desc, v)[0], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------- errors
def test_bad_shapes_dtypes_and_descriptors_are_refused_naming_the_op():
    g = mg.Graph()
    x = g.placeholder([4, 2, 3], mg.float32)
    r = g.placeholder([12, 3], mg.float32)
    w = g.placeholder([12, 3], mg.float32)
    with pytest.raises(mg.ShapeError, match=r"lstm.*recurrent_weight has shape \(12, 4\).*\[12, 4\]|lstm.*recurrent_weight"):
        g.lstm(x, g.placeholder([12, 4], mg.float32), w)
    with pytest.raises(mg.ShapeError, match=r"lstm op 'l'.*input_weight has shape \(12, 5\); it needs \[12, 3\]"):
        g.lstm(x, r, g.placeholder([12, 5], mg.float32), name="l")
    with pytest.raises(mg.ShapeError, match=r"without input_weight the source is already projected"):
        g.lstm(x, r)
    with pytest.raises(mg.ShapeError, match=r"bias has shape \(4,\); it needs \[12\]"):
        g.lstm(x, r, w, bias=g.placeholder([4], mg.float32))
    with pytest.raises(mg.ShapeError, match=r"init_state has shape \(2, 6\); it needs \[2, 3\]"):
        g.lstm(x, r, w, init_state=g.placeholder([2, 6], mg.float32))
    with pytest.raises(mg.ShapeError, match=r"peephole has shape \(12,\); it needs \[2, 12\]"):
        g.lstm(x, g.placeholder([2, 12, 3], mg.float32), g.placeholder([24, 3], mg.float32),
               peephole=g.placeholder([12], mg.float32), descriptor=mg.LSTMDescriptor(bidirectional=True))
    with pytest.raises(mg.ShapeError, match=r"recurrent_weight has shape \(12, 3\); it needs \[2, G H, H\]"):
        g.lstm(x, r, w, descriptor=mg.LSTMDescriptor(bidirectional=True))
    with pytest.raises(mg.ShapeError, match=r"mask has shape \(5, 2, 3\); it must broadcast to the output"):
        g.lstm(x, r, w, mask=g.placeholder([5, 2, 3], mg.float32))
    with pytest.raises(mg.ShapeError, match=r"source has shape \(2, 3\); it needs rank 3"):
        g.single_gate_rnn(g.placeholder([2, 3], mg.float32), g.placeholder([3, 3], mg.float32))
    with pytest.raises(mg.ShapeError, match=r"gru.*secondary_bias has shape \(9,\); it needs \[3\]"):
        g.gru(x, g.placeholder([9, 3], mg.float32), g.placeholder([9, 3], mg.float32),
              secondary_bias=g.placeholder([9], mg.float32))
    with pytest.raises(mg.DTypeError, match=r"lstm.*source has dtype int32"):
        g.lstm(g.placeholder([4, 2, 3], mg.int32), r, w)
    with pytest.raises(mg.DTypeError, match=r"source is float32 but input_weight is float16"):
        g.lstm(x, r, g.placeholder([12, 3], mg.float16))
    with pytest.raises(mg.DescriptorError, match=r"lstm op 'lstm'.*descriptor must be a LSTMDescriptor"):
        g.lstm(x, r, w, descriptor=mg.GRUDescriptor())
    with pytest.raises(mg.DescriptorError, match=r"GRUDescriptor.flip_z=1 must be a bool"):
        mg.GRUDescriptor(flip_z=1)
    with pytest.raises(mg.DescriptorError, match=r"activation=7 is not a RNNActivation; valid: NONE, RELU"):
        mg.SingleGateRNNDescriptor(activation=7)
    d = mg.LSTMDescriptor()
    d.cell_gate_activation = "relu"  # names are taken, as elsewhere
    d.validate()
    assert d.cell_gate_activation is A.RELU
    with pytest.raises(mg.ShapeError, match=r"lstm_gradients.*z_state has shape \(4, 2, 3\); it needs \[4, 2, 12\]"):
        h, c, z = g.lstm(x, r, w, descriptor=mg.LSTMDescriptor(training=True))
        g.lstm_gradients(x, r, h, h, c, input_weight=w)
    with pytest.raises(mg.ShapeError, match=r"cell_gradient has shape \(3, 3\); it needs \[2, 3\] or \[4, 2, 3\]"):
        g.lstm_gradients(x, r, h, z, c, cell_gradient=g.placeholder([3, 3], mg.float32), input_weight=w)


def test_a_gradient_into_the_training_state_is_refused():
    g = mg.Graph()
    x = g.placeholder([3, 2, 4], mg.float32)
    r = g.variable(np.zeros((4, 4), np.float32))
    h, z = g.single_gate_rnn(x, r, descriptor=mg.SingleGateRNNDescriptor(training=True))
    with pytest.raises(mg.NotDifferentiableError, match="training state"):
        g.gradients(g.reduction_sum(z, axes=None), [r])


def test_descriptor_fields_defaults_and_raw_values():
    assert [(a.name, a.value) for a in A] == [("NONE", 0), ("RELU", 1), ("TANH", 2), ("SIGMOID", 3),
                                              ("HARD_SIGMOID", 4)]
    s = mg.SingleGateRNNDescriptor()
    assert (s.reverse, s.bidirectional, s.training, s.activation) == (False, False, False, A.RELU)
    lo = mg.LSTMDescriptor()
    assert (lo.produce_cell, lo.forget_gate_last, lo.input_gate_activation, lo.forget_gate_activation,
            lo.cell_gate_activation, lo.output_gate_activation, lo.activation) == \
        (False, False, A.SIGMOID, A.SIGMOID, A.TANH, A.SIGMOID, A.TANH)
    gr = mg.GRUDescriptor()
    assert (gr.reset_gate_first, gr.reset_after, gr.flip_z, gr.update_gate_activation, gr.reset_gate_activation,
            gr.output_gate_activation) == (False, False, False, A.SIGMOID, A.SIGMOID, A.TANH)
    # ops copy their descriptor
    g = mg.Graph()
    d = mg.SingleGateRNNDescriptor()
    (h,) = g.single_gate_rnn(g.placeholder([2, 1, 3], mg.float32), g.placeholder([3, 3], mg.float32), descriptor=d)
    d.training = True
    assert h.operation.attrs["descriptor"].training is False


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(15)
    desc = mg.GRUDescriptor(reset_after=True, flip_z=True, training=True, output_gate_activation=A.HARD_SIGMOID)
    v = make_inputs("gru", desc, rng, optional=("b", "b2"), dtype=np.float32)
    g = mg.Graph()
    outs, ph = build(g, "gru", desc, v)
    path = str(tmp_path / "gru.mg")
    g.save(path)
    g2 = mg.load(path)
    feeds2 = {g2.tensor(ph[k].name): a for k, a in v.items()}
    r1 = g.run({ph[k]: a for k, a in v.items()}, outs)
    op2 = [op for op in g2.operations if op.type == "gru"][0]
    assert op2.attrs["descriptor"] == desc and op2.attrs["nil_inputs"] == ("init_state", "mask")
    r2 = g2.run(feeds2, list(op2.outputs))
    for a, b in zip(outs, op2.outputs):
        np.testing.assert_array_equal(r1[a], r2[b])


def test_swift_export_names_the_ops_and_nil_inputs():
    g = mg.Graph()
    x = g.placeholder([3, 2, 16], mg.float32, name="x")
    r = g.placeholder([16, 4], mg.float32, name="r")
    outs = g.lstm(x, r, descriptor=mg.LSTMDescriptor(training=True, forget_gate_last=True))
    src = g.to_swift()
    assert "graph.LSTM(" in src and "inputWeight: nil" in src and "peephole: nil" in src
    assert "MPSGraphLSTMDescriptor()" in src and ".forgetGateLast = true" in src
    assert len(outs) == 3
    d = mg.GRUDescriptor(update_gate_activation=mg.RNNActivation.HARD_SIGMOID, reset_gate_activation=mg.RNNActivation.TANH)
    g.gru(g.placeholder([3, 2, 6], mg.float32, name="xg"), g.placeholder([6, 2], mg.float32, name="rg"), descriptor=d)
    src = g.to_swift()
    assert ".updateGateActivation = .hardSigmoid" in src and ".resetGateActivation = .tanh" in src


@pytest.mark.parametrize("kind", list(OPS))
def test_every_descriptor_combination_runs_on_numpy(kind):
    """Every bool field combination against the naive loops (small sizes)."""
    fields = {"rnn": ("reverse", "bidirectional", "training"),
              "lstm": ("reverse", "bidirectional", "produce_cell", "training", "forget_gate_last"),
              "gru": ("reverse", "bidirectional", "training", "reset_gate_first", "reset_after", "flip_z")}[kind]
    rng = np.random.default_rng(16)
    optional = {"rnn": ("b", "h0"), "lstm": ("b", "h0", "c0", "peep"), "gru": ("b", "h0", "b2")}[kind]
    for combo in itertools.product((False, True), repeat=len(fields)):
        desc = DESC[kind](**dict(zip(fields, combo)))
        v = make_inputs(kind, desc, rng, T=3, N=2, I=2, H=2, optional=optional)
        h, c, z = naive_of(kind, desc, v)
        got = run_op(kind, desc, v)
        np.testing.assert_allclose(got[0], h, rtol=1e-10, atol=1e-12)
        if desc.training:
            np.testing.assert_allclose(got[-1], z, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------- webgpu
WEBGPU_CASES = [
    ("rnn", dict(activation=A.SIGMOID, bidirectional=True), ("b", "h0", "mask"), False),
    ("rnn", dict(reverse=True, training=True, activation=A.HARD_SIGMOID), ("h0",), True),
    ("lstm", dict(), ("b", "h0", "c0", "peep", "mask"), False),
    ("lstm", dict(forget_gate_last=True, bidirectional=True, training=True), ("b", "h0", "c0", "peep"), False),
    ("lstm", dict(produce_cell=True, reverse=True, activation=A.NONE, cell_gate_activation=A.RELU), ("b",), True),
    ("gru", dict(), ("b", "h0", "mask"), False),
    ("gru", dict(reset_gate_first=True, flip_z=True, bidirectional=True, training=True), ("b", "h0"), False),
    ("gru", dict(reset_after=True, update_gate_activation=A.TANH), ("b", "h0", "b2", "mask"), False),
    ("gru", dict(reset_after=True, bidirectional=True, flip_z=True), ("b", "b2"), True),
]


def _numpy_and_webgpu(kind, fields, optional, no_w, rng, T=3, N=2, I=3, H=2):
    desc = DESC[kind](**fields)
    v = make_inputs(kind, desc, rng, T=T, N=N, I=I, H=H, optional=optional, no_input_weight=no_w, dtype=np.float32)
    g = mg.Graph()
    outs, ph = build(g, kind, desc, v)
    wy = rng.standard_normal(outs[0].shape).astype(np.float32)
    L = g.reduction_sum(g.multiplication(outs[0], g.constant(wy)), axes=None)
    if kind == "lstm" and len(outs) > 1:  # a gradient through the cell sequence too
        L = g.addition(L, g.reduction_sum(g.multiplication(outs[1], g.constant(wy)), axes=None))
    keys = [k for k in v if k != "mask"]
    gr = g.gradients(L, [ph[k] for k in keys])
    targets = list(outs) + [gr[ph[k]] for k in keys]
    feeds = {ph[k]: a for k, a in v.items()}
    want = g.run(feeds, targets, backend="numpy")
    got = g.run(feeds, targets, backend="webgpu")
    for t in targets:
        np.testing.assert_allclose(got[t], want[t], rtol=2e-5, atol=2e-6 * max(1.0, np.abs(want[t]).max()),
                                   err_msg=f"{kind} {fields} {t.name}")


@pytest.mark.parametrize("kind,fields,optional,no_w", WEBGPU_CASES)
def test_webgpu_matches_numpy_forward_and_gradients(webgpu, kind, fields, optional, no_w):
    _numpy_and_webgpu(kind, fields, optional, no_w, np.random.default_rng(21))


def test_webgpu_dot_products_in_many_passes(webgpu, monkeypatch):
    """With 3 iterations a pass every dot product (over I, H, 4H, T N) runs in several passes."""
    from minigraph.backends.webgpu import loops
    monkeypatch.setattr(loops, "LOOP_MAX", 3)
    rng = np.random.default_rng(22)
    _numpy_and_webgpu("lstm", dict(bidirectional=True, produce_cell=True), ("b", "h0", "c0", "peep", "mask"),
                      False, rng, T=3, N=3, I=7, H=4)
    _numpy_and_webgpu("gru", dict(), ("b", "h0"), False, rng, T=3, N=3, I=7, H=4)
    _numpy_and_webgpu("gru", dict(reset_after=True), ("b", "h0", "b2"), False, rng, T=3, N=3, I=5, H=4)


def test_a_batch_known_only_at_run_time(backend):
    """[T, -1, I]: one graph runs at two batch sizes, gradients included, like the static graphs."""
    rng = np.random.default_rng(23)
    rv, wv = (rng.standard_normal((12, 3)) * 0.5).astype(np.float32), (rng.standard_normal((12, 3)) * 0.5).astype(np.float32)

    def graph(batch):
        g = mg.Graph()
        x = g.placeholder([4, batch, 3], mg.float32, name="x")
        h0 = g.placeholder([batch, 3], mg.float32, name="h0")
        r, w = g.variable(rv, name="r"), g.variable(wv, name="w")
        out = g.lstm(x, r, w, init_state=h0, descriptor=mg.LSTMDescriptor(produce_cell=True))
        loss = g.reduction_sum(g.addition(g.square(out[0]), out[1]), axes=None)
        gr = g.gradients(loss, [x, r, h0])
        return g, x, h0, [out[0], out[1], gr[x], gr[r], gr[h0]]

    g, x, h0, targets = graph(-1)
    assert targets[0].shape == (4, -1, 3)
    for n in (2, 5):
        xv, hv = rng.standard_normal((4, n, 3)).astype(np.float32), rng.standard_normal((n, 3)).astype(np.float32)
        got = g.run({x: xv, h0: hv}, targets, backend=backend)
        gs, xs, hs, ts = graph(n)
        want = gs.run({xs: xv, hs: hv}, ts, backend=backend)
        for a, b in zip(targets, ts):
            np.testing.assert_allclose(got[a], want[b], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("T,N", [(0, 2), (3, 0)])
def test_empty_sequences_and_batches(backend, T, N):
    """No steps: the state output is empty and the gradients toward the initial state are the
    state gradient (zeros here); no batch: everything empty, the weight gradients zero."""
    for kind in OPS:
        desc = DESC[kind]()
        G = GATES[kind]
        v = {"x": np.ones((T, N, 3), np.float32), "R": np.ones((G * 2, 2), np.float32),
             "W": np.ones((G * 2, 3), np.float32), "b": np.ones(G * 2, np.float32), "h0": np.ones((N, 2), np.float32)}
        g = mg.Graph()
        outs, ph = build(g, kind, desc, v)
        L = g.reduction_sum(outs[0], axes=None)
        gr = g.gradients(L, [ph[k] for k in v])
        r = g.run({ph[k]: a for k, a in v.items()}, [outs[0]] + [gr[ph[k]] for k in v], backend=backend)
        assert r[outs[0]].shape == (T, N, 2)
        for k in v:
            got = r[gr[ph[k]]]
            assert got.shape == v[k].shape
            np.testing.assert_array_equal(got, np.zeros_like(v[k]), err_msg=f"{kind} d/d{k}")


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
def test_reverse_equals_torch_on_the_flipped_sequence(kind):
    """torch has no reverse flag: reverse=True is torch's layer on x[::-1], its output flipped back."""
    torch = _torch()
    torch.manual_seed(3)
    T, N, I, H = 5, 2, 3, 4
    mod = _torch_module(torch, kind, I, H, False, True, "tanh")
    x = torch.randn(T, N, I, dtype=torch.float64, requires_grad=True)
    y = mod(torch.flip(x, [0]))[0].flip([0])
    wy = np.random.default_rng(2).standard_normal((T, N, H))
    (y * torch.tensor(wy)).sum().backward()
    W, R, b, b2 = torch_to_mpsgraph(kind, mod)
    fields = {"reverse": True}
    if kind == "rnn":
        fields["activation"] = A.TANH
    if kind == "gru":
        fields.update(reset_after=True, reset_gate_first=True)
    vals = {"x": x.detach().numpy(), "R": R, "W": W, "b": b}
    if kind == "gru":
        vals["b2"] = b2
    g = mg.Graph()
    outs, ph = build(g, kind, DESC[kind](**fields), vals)
    L = g.reduction_sum(g.multiplication(outs[0], g.constant(wy)), axes=None)
    gx, gr = (g.gradients(L, [ph["x"], ph["R"]])[ph[k]] for k in ("x", "R"))
    r = g.run({ph[k]: a for k, a in vals.items()}, [outs[0], gx, gr])
    np.testing.assert_allclose(r[outs[0]], y.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(r[gx], x.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(r[gr], _torch_grads_as_mpsgraph(kind, mod, True)[1], rtol=1e-9, atol=1e-12)


def test_bidirectional_peephole_may_be_flat(backend):
    """[8H] (the older header's gradient page) holds the same values as [2, 4H]."""
    rng = np.random.default_rng(24)
    desc = mg.LSTMDescriptor(bidirectional=True, training=True)
    v = make_inputs("lstm", desc, rng, optional=("b", "h0", "c0", "peep"), dtype=np.float32)
    flat = dict(v, peep=v["peep"].reshape(-1))
    res = []
    for vals in (v, flat):
        g = mg.Graph()
        outs, ph = build(g, "lstm", desc, vals)
        L = g.reduction_sum(g.square(outs[0]), axes=None)
        gp = g.gradients(L, [ph["peep"]])[ph["peep"]]
        assert gp.shape == vals["peep"].shape
        r = g.run({ph[k]: a for k, a in vals.items()}, [outs[0], gp], backend=backend)
        res.append((r[outs[0]], r[gp].reshape(2, -1)))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_array_equal(res[0][1], res[1][1])
