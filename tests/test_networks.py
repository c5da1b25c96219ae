"""Whole networks built from minigraph ops, trained in one compiled executable and checked against
the same network in PyTorch: a MobileNetV2 inverted-residual block (1x1 expand conv -> batch norm
-> ReLU6 -> 3x3 depthwise -> batch norm -> ReLU6 -> 1x1 project conv -> batch norm, plus the
residual add), its batch norms made of ``mean``/``variance``/``normalize`` and ReLU6 of ``clamp``.
"""
import os
import sys

import numpy as np
import pytest

import minigraph as mg

torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

N, C, E, H, W = 2, 4, 8, 5, 5  # batch, block channels, expanded channels, spatial size
EPS = 1e-5
LR = 0.05
STEPS = 3


def _init(seed=0):
    """The block's parameters (torch layouts: conv weights OIHW, depthwise [E, 1, 3, 3]), and data."""
    rng = np.random.default_rng(seed)
    f = np.float32
    p = {"expand": rng.standard_normal((E, C, 1, 1)).astype(f) * 0.5,
         "depthwise": rng.standard_normal((E, 1, 3, 3)).astype(f) * 0.5,
         "project": rng.standard_normal((C, E, 1, 1)).astype(f) * 0.5}
    for i, ch in ((1, E), (2, E), (3, C)):
        p[f"gamma{i}"] = rng.uniform(0.5, 4.0, ch).astype(f)  # large enough that ReLU6 clips at 6 too
        p[f"beta{i}"] = rng.uniform(-0.5, 2.0, ch).astype(f)
    data = [(rng.standard_normal((N, C, H, W)).astype(f), rng.standard_normal((N, C, H, W)).astype(f))
            for _ in range(STEPS)]
    return p, data


def _batch_norm(g, x, gamma, beta, name):
    axes = [0, 2, 3]
    with g.name_scope(name):
        c = gamma.shape[0]
        return g.normalize(x, g.mean(x, axes), g.variance(x, axes), g.reshape(gamma, [1, c, 1, 1]),
                           g.reshape(beta, [1, c, 1, 1]), EPS)


def _relu6(g, x):
    return g.clamp(x, 0.0, 6.0)


def _block(g, x, v):
    one = mg.Convolution2DOpDescriptor()
    dw = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME)
    h = _relu6(g, _batch_norm(g, g.convolution_2d(x, v["expand"], descriptor=one), v["gamma1"], v["beta1"], "bn1"))
    h = _relu6(g, _batch_norm(g, g.depthwise_convolution_2d(h, v["depthwise_mg"], descriptor=dw),
                              v["gamma2"], v["beta2"], "bn2"))
    h = _batch_norm(g, g.convolution_2d(h, v["project"], descriptor=one), v["gamma3"], v["beta3"], "bn3")
    return g.addition(x, h, name="residual")


def _minigraph_block(p):
    g = mg.Graph()
    x = g.placeholder([N, C, H, W], mg.float32, name="x")
    t = g.placeholder([N, C, H, W], mg.float32, name="target")
    init = dict(p, depthwise_mg=p["depthwise"].reshape(1, E, 3, 3))  # MPSGraph's depthwise OIHW: [M, C, kH, kW]
    v = {k: g.variable(a, name=k) for k, a in init.items() if k != "depthwise"}
    y = _block(g, x, v)
    loss = g.mean(g.square(g.subtraction(y, t)), axes=None, name="loss")
    params = list(v.values())
    grads = g.gradients(loss, params)
    steps = [g.apply_stochastic_gradient_descent(LR, w, grads[w], name=f"sgd_{k}") for k, w in v.items()]
    return g, x, t, v, loss, grads, steps


class _TorchBlock(torch.nn.Module):
    def __init__(self, p):
        super().__init__()
        self.expand = torch.nn.Conv2d(C, E, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(E, eps=EPS)
        self.depthwise = torch.nn.Conv2d(E, E, 3, padding=1, groups=E, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(E, eps=EPS)
        self.project = torch.nn.Conv2d(E, C, 1, bias=False)
        self.bn3 = torch.nn.BatchNorm2d(C, eps=EPS)
        with torch.no_grad():
            for k in ("expand", "depthwise", "project"):
                getattr(self, k).weight.copy_(torch.from_numpy(p[k]).double())
            for i in (1, 2, 3):
                getattr(self, f"bn{i}").weight.copy_(torch.from_numpy(p[f"gamma{i}"]).double())
                getattr(self, f"bn{i}").bias.copy_(torch.from_numpy(p[f"beta{i}"]).double())

    def forward(self, x):
        h = torch.nn.functional.relu6(self.bn1(self.expand(x)))
        h = torch.nn.functional.relu6(self.bn2(self.depthwise(h)))
        return x + self.bn3(self.project(h))

    def grads(self):
        out = {k: getattr(self, k).weight.grad for k in ("expand", "depthwise", "project")}
        for i in (1, 2, 3):
            out[f"gamma{i}"] = getattr(self, f"bn{i}").weight.grad
            out[f"beta{i}"] = getattr(self, f"bn{i}").bias.grad
        return {k: t.numpy().copy() for k, t in out.items()}


def _torch_reference(p, data):
    """(loss and gradients at the initial parameters, parameters after STEPS SGD steps), float64."""
    model = _TorchBlock(p).double().train()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    first = None
    for xv, tv in data:
        opt.zero_grad()
        loss = torch.mean((model(torch.from_numpy(xv).double()) - torch.from_numpy(tv).double()) ** 2)
        loss.backward()
        if first is None:
            first = (loss.item(), model.grads())
        opt.step()
    after = {k: getattr(model, k).weight.detach().numpy() for k in ("expand", "depthwise", "project")}
    for i in (1, 2, 3):
        after[f"gamma{i}"] = getattr(model, f"bn{i}").weight.detach().numpy()
        after[f"beta{i}"] = getattr(model, f"bn{i}").bias.detach().numpy()
    return first, after


def test_inverted_residual_block_graph_has_mpsgraphs_gradient_ops():
    p, _ = _init()
    g, *_ = _minigraph_block(p)
    types = [op.type for op in g.operations]
    assert "depthwise_convolution_2d_weights_gradient" in types
    for t in ("normalization_gradient", "normalization_gamma_gradient", "normalization_beta_gradient"):
        assert types.count(t) == 3, t  # one per batch norm
    assert "clamp" in types


def test_inverted_residual_block_trains_in_one_executable_like_torch(backend):
    p, data = _init()
    (loss0, grads0), after = _torch_reference(p, data)
    g, x, t, v, loss, grads, steps = _minigraph_block(p)
    exe = g.compile({x: mg.ShapedType([N, C, H, W], mg.float32), t: mg.ShapedType([N, C, H, W], mg.float32)},
                    [loss] + [grads[w] for w in v.values()], steps, backend=backend)
    losses = []
    for i, (xv, tv) in enumerate(data):
        out = exe.run({x: xv, t: tv})
        losses.append(float(np.asarray(out[0]).reshape(-1)[0]))
        if i == 0:  # gradients at the initial parameters, before the updates of this run land
            np.testing.assert_allclose(losses[0], loss0, rtol=1e-4)
            for (k, w), got in zip(v.items(), out[1:]):
                want = grads0["depthwise" if k == "depthwise_mg" else k]
                np.testing.assert_allclose(got.reshape(want.shape), want, rtol=2e-3, atol=2e-4 * np.abs(want).max(),
                                           err_msg=f"d loss / d {k} on {backend}")
    assert exe.compile_count == 1
    for k, w in v.items():
        want = after["depthwise" if k == "depthwise_mg" else k]
        np.testing.assert_allclose(g.value_of(w).reshape(want.shape), want, rtol=2e-3, atol=2e-4,
                                   err_msg=f"{k} after {STEPS} SGD steps on {backend}")


def test_mobilenet_v2_builder_matches_torch():
    """minigraph/mobilenet.py is MobileNetV2: the same logits as the PyTorch module with the same weights."""
    from benchmarks import torch_models as tm
    from minigraph import mobilenet

    rng = np.random.default_rng(0)
    width = 0.25
    params = mobilenet.init_params(rng, width, 4)
    g = mg.Graph()
    x = g.placeholder([4, 3, 32, 32], mg.float64, name="x")
    logits = mobilenet.forward(g, x, {k: g.variable(a, name=k) for k, a in params.items()}, width)
    module = tm.MobileNetV2(width, classes=4, dropout=0.0).double().train()
    convs = [m for m in module.modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == len(mobilenet.layers(width))
    for conv, (name, *_) in zip(convs, mobilenet.layers(width)):
        conv.weight.data = torch.tensor(params[f"{name}.weight"].reshape(conv.weight.shape))
    module.classifier[1].weight.data = torch.tensor(params["classifier.weight"].T.copy())
    module.classifier[1].bias.data = torch.tensor(params["classifier.bias"])
    xv = rng.standard_normal((4, 3, 32, 32))
    np.testing.assert_allclose(g.run({x: xv}, [logits])[logits], module(torch.tensor(xv)).detach().numpy(),
                               rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------- a two-layer LSTM language model
LM_V, LM_E, LM_H, LM_T, LM_N, LM_LR = 7, 4, 5, 6, 2, 0.5


def _lm_init(seed=1):
    """Parameters in MPSGraph's layouts (LSTM weights [4H, I] / [4H, H] with gates i, f, z, o as
    torch's i, f, g, o; one bias, torch's b_ih with b_hh held at zero) and three batches of tokens."""
    rng = np.random.default_rng(seed)
    f = np.float32
    p = {"embedding": rng.standard_normal((LM_V, LM_E)).astype(f),
         "head_w": (rng.standard_normal((LM_H, LM_V)) * 0.5).astype(f), "head_b": (rng.standard_normal(LM_V) * 0.1).astype(f)}
    for k, width in ((1, LM_E), (2, LM_H)):
        p[f"w{k}"] = (rng.standard_normal((4 * LM_H, width)) * 0.5).astype(f)
        p[f"r{k}"] = (rng.standard_normal((4 * LM_H, LM_H)) * 0.5).astype(f)
        p[f"b{k}"] = (rng.standard_normal(4 * LM_H) * 0.2).astype(f)
    data = [(rng.integers(0, LM_V, (LM_T, LM_N)).astype(np.int32), rng.integers(0, LM_V, (LM_T, LM_N)).astype(np.int32))
            for _ in range(STEPS)]
    return p, data


def _lm_minigraph(p):
    g = mg.Graph()
    tokens = g.placeholder([LM_T, LM_N], mg.int32, name="tokens")
    targets = g.placeholder([LM_T, LM_N], mg.int32, name="targets")
    v = {k: g.variable(a, name=k) for k, a in p.items()}
    x = g.gather(v["embedding"], tokens, 0)  # [T, N, E]
    h1 = g.lstm(x, v["r1"], v["w1"], v["b1"], name="lstm1")[0]
    h2 = g.lstm(h1, v["r2"], v["w2"], v["b2"], name="lstm2")[0]
    logits = g.addition(g.matrix_multiplication(g.reshape(h2, [LM_T * LM_N, LM_H]), v["head_w"]), v["head_b"])
    labels = g.one_hot(g.reshape(targets, [LM_T * LM_N]), LM_V, dtype=mg.float32)
    loss = g.softmax_cross_entropy(logits, labels, axis=-1, reduction="mean", name="loss")
    grads = g.gradients(loss, list(v.values()))
    steps = [g.apply_stochastic_gradient_descent(LM_LR, w, grads[w], name=f"sgd_{k}") for k, w in v.items()]
    return g, tokens, targets, v, loss, grads, steps


class _TorchLM(torch.nn.Module):
    def __init__(self, p):
        super().__init__()
        self.embedding = torch.nn.Embedding(LM_V, LM_E)
        self.lstm = torch.nn.LSTM(LM_E, LM_H, num_layers=2)
        self.head = torch.nn.Linear(LM_H, LM_V)
        with torch.no_grad():
            self.embedding.weight.copy_(torch.from_numpy(p["embedding"]))
            for k in (1, 2):
                getattr(self.lstm, f"weight_ih_l{k - 1}").copy_(torch.from_numpy(p[f"w{k}"]))
                getattr(self.lstm, f"weight_hh_l{k - 1}").copy_(torch.from_numpy(p[f"r{k}"]))
                getattr(self.lstm, f"bias_ih_l{k - 1}").copy_(torch.from_numpy(p[f"b{k}"]))
                hh = getattr(self.lstm, f"bias_hh_l{k - 1}")
                hh.zero_()
                hh.requires_grad_(False)  # MPSGraph's LSTM has one bias: torch's two would train twice as fast
            self.head.weight.copy_(torch.from_numpy(p["head_w"].T.copy()))
            self.head.bias.copy_(torch.from_numpy(p["head_b"]))

    def forward(self, tokens):
        return self.head(self.lstm(self.embedding(tokens))[0]).reshape(LM_T * LM_N, LM_V)

    def params(self):
        out = {"embedding": self.embedding.weight, "head_w": self.head.weight, "head_b": self.head.bias}
        for k in (1, 2):
            out[f"w{k}"] = getattr(self.lstm, f"weight_ih_l{k - 1}")
            out[f"r{k}"] = getattr(self.lstm, f"weight_hh_l{k - 1}")
            out[f"b{k}"] = getattr(self.lstm, f"bias_ih_l{k - 1}")
        return out


def _lm_torch(p, data):
    model = _TorchLM(p)
    opt = torch.optim.SGD([q for q in model.parameters() if q.requires_grad], lr=LM_LR)
    first = None
    for i, (tok, tgt) in enumerate(data):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(tok).long()),
                                                 torch.from_numpy(tgt).long().reshape(-1))
        loss.backward()
        if i == 0:
            grads = {k: q.grad.detach().numpy().copy() for k, q in model.params().items()}
            grads["head_w"] = grads["head_w"].T.copy()
            first = (float(loss.detach()), grads)
        opt.step()
    after = {k: q.detach().numpy().copy() for k, q in model.params().items()}
    after["head_w"] = after["head_w"].T.copy()
    return first, after


def test_lstm_language_model_trains_in_one_executable_like_torch(backend):
    """Embedding (gather), two lstm layers, a linear head and softmax cross-entropy: the loss and
    gradients of the first step and the variables after three SGD steps equal torch's nn.LSTM model."""
    p, data = _lm_init()
    (loss0, grads0), after = _lm_torch(p, data)
    g, tokens, targets, v, loss, grads, steps = _lm_minigraph(p)
    assert [op.type for op in g.operations].count("lstm_gradients") == 2
    exe = g.compile({tokens: mg.ShapedType([LM_T, LM_N], mg.int32), targets: mg.ShapedType([LM_T, LM_N], mg.int32)},
                    [loss] + [grads[w] for w in v.values()], steps, backend=backend)
    for i, (tok, tgt) in enumerate(data):
        out = exe.run({tokens: tok, targets: tgt})
        if i == 0:
            np.testing.assert_allclose(float(np.asarray(out[0]).reshape(-1)[0]), loss0, rtol=1e-5)
            for k, got in zip(v, out[1:]):
                want = grads0[k]
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(want).max()),
                                           err_msg=f"d loss / d {k} on {backend}")
    assert exe.compile_count == 1
    for k, w in v.items():
        np.testing.assert_allclose(g.value_of(w), after[k], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{k} after {STEPS} SGD steps on {backend}")


# ------------------------------------------------------- a pre-norm transformer encoder with attention
TF_V, TF_T, TF_N, TF_E, TF_HEADS, TF_F, TF_BLOCKS, TF_LR, TF_EPS = 11, 6, 2, 8, 2, 16, 2, 0.2, 1e-5
TF_DH = TF_E // TF_HEADS


def _tf_init(seed=2):
    """Parameters (linear weights [in, out], applied as x @ W) and three batches of tokens."""
    rng = np.random.default_rng(seed)
    f = np.float32

    def w(*shape, s=0.4):
        return (rng.standard_normal(shape) * s).astype(f)

    p = {"embedding": w(TF_V, TF_E, s=1.0), "position": w(TF_T, TF_E, s=0.5),
         "ln_f_g": rng.uniform(0.5, 1.5, TF_E).astype(f), "ln_f_b": w(TF_E, s=0.1),
         "head_w": w(TF_E, TF_V), "head_b": w(TF_V, s=0.1)}
    for b in range(TF_BLOCKS):
        for ln in ("ln1", "ln2"):
            p[f"{b}.{ln}_g"] = rng.uniform(0.5, 1.5, TF_E).astype(f)
            p[f"{b}.{ln}_b"] = w(TF_E, s=0.1)
        for k in ("q", "k", "v", "o"):
            p[f"{b}.w{k}"], p[f"{b}.b{k}"] = w(TF_E, TF_E), w(TF_E, s=0.1)
        p[f"{b}.w1"], p[f"{b}.b1"] = w(TF_E, TF_F), w(TF_F, s=0.1)
        p[f"{b}.w2"], p[f"{b}.b2"] = w(TF_F, TF_E), w(TF_E, s=0.1)
    data = [(rng.integers(0, TF_V, (TF_N, TF_T)).astype(np.int32), rng.integers(0, TF_V, (TF_N, TF_T)).astype(np.int32))
            for _ in range(STEPS)]
    return p, data


def _tf_causal_mask():
    """Additive: -inf above the diagonal (a token sees itself and the ones before it)."""
    return np.triu(np.full((TF_T, TF_T), -np.inf, np.float32), 1)


def _tf_layer_norm(g, x, gamma, beta):
    """Layer norm over the features from ``normalize`` (population variance, as torch's)."""
    return g.normalize(x, g.mean(x, [-1]), g.variance(x, [-1]), gamma, beta, TF_EPS)


def _tf_gelu(g, x):
    """Exact GELU, 0.5 x (1 + erf(x / sqrt 2)) (torch's approximate='none')."""
    return g.multiplication(g.multiplication(x, 0.5), g.addition(g.erf(g.multiplication(x, float(1 / np.sqrt(2)))), 1.0))


def _tf_heads(g, x):
    """[N, T, E] -> [N, heads, T, E / heads]."""
    return g.transpose(g.reshape(x, [TF_N, TF_T, TF_HEADS, TF_DH]), 1, 2)


def _tf_minigraph(p):
    g = mg.Graph()
    tokens = g.placeholder([TF_N, TF_T], mg.int32, name="tokens")
    targets = g.placeholder([TF_N, TF_T], mg.int32, name="targets")
    v = {k: g.variable(a, name=k) for k, a in p.items()}
    mask = g.constant(_tf_causal_mask(), name="causal_mask")
    x = g.addition(g.gather(v["embedding"], tokens, 0), v["position"])  # [N, T, E]
    for b in range(TF_BLOCKS):
        with g.name_scope(f"block{b}"):
            h = _tf_layer_norm(g, x, v[f"{b}.ln1_g"], v[f"{b}.ln1_b"])
            q, k, val = (_tf_heads(g, g.addition(g.matrix_multiplication(h, v[f"{b}.w{n}"]), v[f"{b}.b{n}"]))
                         for n in ("q", "k", "v"))
            a = g.scaled_dot_product_attention(q, k, val, mask, scale=float(1 / np.sqrt(TF_DH)), name="attention")
            a = g.reshape(g.transpose(a, 1, 2), [TF_N, TF_T, TF_E])
            x = g.addition(x, g.addition(g.matrix_multiplication(a, v[f"{b}.wo"]), v[f"{b}.bo"]))
            h = _tf_layer_norm(g, x, v[f"{b}.ln2_g"], v[f"{b}.ln2_b"])
            h = _tf_gelu(g, g.addition(g.matrix_multiplication(h, v[f"{b}.w1"]), v[f"{b}.b1"]))
            x = g.addition(x, g.addition(g.matrix_multiplication(h, v[f"{b}.w2"]), v[f"{b}.b2"]))
    x = _tf_layer_norm(g, x, v["ln_f_g"], v["ln_f_b"])
    logits = g.addition(g.matrix_multiplication(g.reshape(x, [TF_N * TF_T, TF_E]), v["head_w"]), v["head_b"])
    labels = g.one_hot(g.reshape(targets, [TF_N * TF_T]), TF_V, dtype=mg.float32)
    loss = g.softmax_cross_entropy(logits, labels, axis=-1, reduction="mean", name="loss")
    grads = g.gradients(loss, list(v.values()))
    steps = [g.apply_stochastic_gradient_descent(TF_LR, w, grads[w], name=f"sgd_{k}") for k, w in v.items()]
    return g, tokens, targets, v, loss, grads, steps


def _tf_torch_forward(t, tokens):
    """The same network in PyTorch (float64), attention through F.scaled_dot_product_attention."""
    F = torch.nn.functional
    mask = torch.from_numpy(_tf_causal_mask()).double()
    x = t["embedding"][tokens] + t["position"]
    for b in range(TF_BLOCKS):
        h = F.layer_norm(x, (TF_E,), t[f"{b}.ln1_g"], t[f"{b}.ln1_b"], eps=TF_EPS)
        q, k, val = ((h @ t[f"{b}.w{n}"] + t[f"{b}.b{n}"]).reshape(TF_N, TF_T, TF_HEADS, TF_DH).transpose(1, 2)
                     for n in ("q", "k", "v"))
        a = F.scaled_dot_product_attention(q, k, val, attn_mask=mask, scale=1 / np.sqrt(TF_DH))
        x = x + a.transpose(1, 2).reshape(TF_N, TF_T, TF_E) @ t[f"{b}.wo"] + t[f"{b}.bo"]
        h = F.layer_norm(x, (TF_E,), t[f"{b}.ln2_g"], t[f"{b}.ln2_b"], eps=TF_EPS)
        x = x + F.gelu(h @ t[f"{b}.w1"] + t[f"{b}.b1"]) @ t[f"{b}.w2"] + t[f"{b}.b2"]
    x = F.layer_norm(x, (TF_E,), t["ln_f_g"], t["ln_f_b"], eps=TF_EPS)
    return x.reshape(TF_N * TF_T, TF_E) @ t["head_w"] + t["head_b"]


def _tf_torch(p, data):
    t = {k: torch.tensor(a, dtype=torch.float64, requires_grad=True) for k, a in p.items()}
    opt = torch.optim.SGD(list(t.values()), lr=TF_LR)
    first = None
    for i, (tok, tgt) in enumerate(data):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(_tf_torch_forward(t, torch.from_numpy(tok).long()),
                                                 torch.from_numpy(tgt).long().reshape(-1))
        loss.backward()
        if i == 0:
            first = (float(loss.detach()), {k: q.grad.numpy().copy() for k, q in t.items()})
        opt.step()
    return first, {k: q.detach().numpy().copy() for k, q in t.items()}


def test_transformer_encoder_trains_in_one_executable_like_torch(backend):
    """Embedding + position, two pre-norm blocks (layer norm from normalize, causal multi-head
    scaled_dot_product_attention, residual, layer norm, GELU MLP from erf, residual), a final layer
    norm and a softmax cross-entropy head: the first step's loss and gradients and the variables
    after three SGD steps equal the PyTorch model's (float64), in one compiled executable."""
    p, data = _tf_init()
    (loss0, grads0), after = _tf_torch(p, data)
    assert min(np.abs(after[k] - p[k]).max() for k in ("0.wq", "0.wk", "1.wv")) > 1e-3  # attention trains
    g, tokens, targets, v, loss, grads, steps = _tf_minigraph(p)
    assert [op.type for op in g.operations].count("scaled_dot_product_attention") == TF_BLOCKS
    exe = g.compile({tokens: mg.ShapedType([TF_N, TF_T], mg.int32), targets: mg.ShapedType([TF_N, TF_T], mg.int32)},
                    [loss] + [grads[w] for w in v.values()], steps, backend=backend)
    for i, (tok, tgt) in enumerate(data):
        out = exe.run({tokens: tok, targets: tgt})
        if i == 0:
            np.testing.assert_allclose(float(np.asarray(out[0]).reshape(-1)[0]), loss0, rtol=1e-5)
            for k, got in zip(v, out[1:]):
                want = grads0[k]
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(want).max()),
                                           err_msg=f"d loss / d {k} on {backend}")
    assert exe.compile_count == 1
    for k, w in v.items():
        np.testing.assert_allclose(g.value_of(w), after[k], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{k} after {STEPS} SGD steps on {backend}")


# ----------------------------------------------------------------------------- control flow
def _mlp_params(seed=0):
    rng = np.random.default_rng(seed)
    f = np.float32
    return {"w1": (rng.standard_normal((4, 6)) * 0.5).astype(f), "b1": (rng.standard_normal(6) * 0.1).astype(f),
            "w2": (rng.standard_normal((6, 2)) * 0.5).astype(f)}, rng.standard_normal((16, 4)).astype(f), \
        rng.standard_normal((16, 2)).astype(f)


def _mlp_step(g, x, y, w1, b1, w2, lr):
    """One SGD step of a tanh MLP's mean squared error, from ops (its gradient from g.gradients)."""
    pred = g.matrix_multiplication(g.tanh(g.matrix_multiplication(x, w1) + b1), w2)
    loss = g.mean(g.square(pred - y), axes=None)
    grads = g.gradients(loss, [w1, b1, w2])
    return [w1 - grads[w1] * lr, b1 - grads[b1] * lr, w2 - grads[w2] * lr], loss


def test_for_loop_runs_sgd_steps_inside_one_graph(backend):
    """Five SGD steps as one for_loop (each step's gradient built inside the body) give the weights of
    the same five steps unrolled in a graph, and of PyTorch's SGD."""
    steps, lr = 5, 0.1
    params, xv, yv = _mlp_params()
    g = mg.Graph()
    x, y = g.placeholder([16, 4], name="x"), g.placeholder([16, 2], name="y")
    init = [g.constant(params[k], name=k) for k in ("w1", "b1", "w2")]
    trained = g.for_loop(steps, init, lambda i, a: _mlp_step(g, x, y, *a, lr)[0], name="sgd")
    got = g.run({x: xv, y: yv}, trained, backend=backend)
    h = mg.Graph()
    hx, hy = h.placeholder([16, 4]), h.placeholder([16, 2])
    cur = [h.constant(params[k]) for k in ("w1", "b1", "w2")]
    for _ in range(steps):
        cur, _ = _mlp_step(h, hx, hy, *cur, lr)
    unrolled = h.run({hx: xv, hy: yv}, cur)
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    opt = torch.optim.SGD(list(tp.values()), lr=lr)
    tx, ty = torch.tensor(xv), torch.tensor(yv)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((torch.tanh(tx @ tp["w1"] + tp["b1"]) @ tp["w2"] - ty) ** 2).mean()
        loss.backward()
        opt.step()
    for t, u, k in zip(trained, cur, ("w1", "b1", "w2")):
        np.testing.assert_allclose(got[t], unrolled[u], rtol=1e-4, atol=1e-5, err_msg=k)
        np.testing.assert_allclose(got[t], tp[k].detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=k)
    assert not np.allclose(got[trained[0]], params["w1"])


def test_while_loop_runs_newtons_method_to_a_tolerance(backend):
    """sqrt(a) by Newton's iteration x <- (x + a / x) / 2 from x = a, until every |x^2 - a| <= 1e-5 a:
    the values of np.sqrt and the iteration count of the same loop in Python."""
    a = np.array([2.0, 10.0, 0.25, 1234.5, 1.0], np.float32)
    g = mg.Graph()
    at = g.placeholder([5], name="a")

    def before(inputs, results):
        x, k = inputs
        results.extend([x, k])
        err = g.reduction_maximum(g.absolute(x * x - at) / at, axes=None)
        return g.greater_than(g.squeeze(err), 1e-5)

    root, count = g.while_loop([at, g.constant(0, dtype=mg.int32)], before,
                               lambda r: [(r[0] + at / r[0]) * 0.5, r[1] + 1], name="newton")
    got = g.run({at: a}, [root, count], backend=backend)
    x, k = a.copy(), 0
    while np.max(np.abs(x * x - a) / a) > 1e-5:
        x, k = ((x + a / x) * np.float32(0.5)).astype(np.float32), k + 1
    np.testing.assert_allclose(got[root], np.sqrt(a.astype(np.float64)), rtol=1e-5)
    assert int(got[count]) == k and k > 3
