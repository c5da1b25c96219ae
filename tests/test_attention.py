"""scaled_dot_product_attention: forward and gradient against PyTorch's
``torch.nn.functional.scaled_dot_product_attention`` (with ``attn_mask`` and ``scale``) and against a
float64 loop written from Apple's formula ``softmax(scale * Q K^T + M) V``, on every backend;
broadcasting, -inf masks (a fully masked row gives 0), large logits, long key sequences on webgpu,
and the errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import minigraph as mg

F32 = np.float32


def naive(q, k, v, mask, scale):
    """Apple's formula with explicit loops in float64 (broadcast operands first)."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    nq, nkv, dv = q.shape[-2], k.shape[-2], v.shape[-1]
    q = np.broadcast_to(q, lead + q.shape[-2:]).reshape(-1, nq, q.shape[-1])
    k = np.broadcast_to(k, lead + k.shape[-2:]).reshape(-1, nkv, k.shape[-1])
    v = np.broadcast_to(v, lead + v.shape[-2:]).reshape(-1, nkv, dv)
    m = np.zeros((1, nq, nkv)) if mask is None else \
        np.broadcast_to(mask.astype(np.float64), lead + (nq, nkv)).reshape(-1, nq, nkv)
    m = np.broadcast_to(m, (q.shape[0], nq, nkv))
    out = np.zeros((q.shape[0], nq, dv))
    with np.errstate(invalid="ignore"):
        _loops(q, k, v, m, scale, out)
    return out.reshape(lead + (nq, dv))


def _loops(q, k, v, m, scale, out):
    nq, nkv = m.shape[-2:]
    for b in range(q.shape[0]):
        for i in range(nq):
            s = [scale * sum(q[b, i, d] * k[b, j, d] for d in range(q.shape[-1])) + m[b, i, j] for j in range(nkv)]
            top = max(s) if s else -math.inf
            if top == -math.inf:
                continue  # every key masked: 0
            w = [math.exp(x - top) for x in s]
            tot = sum(w)
            for j in range(nkv):
                out[b, i] += w[j] / tot * v[b, j]


def _build(q, k, v, mask, scale, grads=True, dtype=F32):
    g = mg.Graph()
    phs = [g.placeholder(a.shape, dtype=a.dtype) for a in (q, k, v)]
    mph = None if mask is None else g.placeholder(mask.shape, dtype=mask.dtype)
    y = g.scaled_dot_product_attention(*phs, mph, scale=scale)
    feeds = dict(zip(phs, (q, k, v)))
    targets = [y]
    wrt = phs + ([mph] if mph is not None else [])
    if mph is not None:
        feeds[mph] = mask
    if grads:
        w = g.constant(np.linspace(-1, 1, int(np.prod(y.shape)), dtype=np.float32).reshape(y.shape).astype(dtype))
        loss = g.reduction_sum(g.multiplication(y, w))
        gr = g.gradients(loss, wrt)
        targets += [gr[t] for t in wrt]
    return g, feeds, targets


def _run(backend, q, k, v, mask, scale, grads=True):
    g, feeds, targets = _build(q, k, v, mask, scale, grads)
    out = g.run(feeds, targets, backend=backend)
    return [np.asarray(out[t]) for t in targets]


def _torch(q, k, v, mask, scale):
    torch = pytest.importorskip("torch", reason="the 'oracles' extra (torch) is not installed")
    F = torch.nn.functional
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (q, k, v)]
    tm = None if mask is None else torch.tensor(mask, dtype=torch.float64, requires_grad=True)
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    qe, ke, ve = (t.expand(*lead, *t.shape[-2:]) for t in ts)  # PyTorch broadcasts only with enable_gqa
    y = F.scaled_dot_product_attention(qe, ke, ve, attn_mask=tm, scale=scale)
    w = torch.tensor(np.linspace(-1, 1, y.numel(), dtype=np.float32).reshape(y.shape), dtype=torch.float64)
    (y * w).sum().backward()
    return [y.detach().numpy()] + [t.grad.numpy() for t in ts + ([tm] if tm is not None else [])]


SHAPES = [  # query, key, value, mask (None: no mask)
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), (2, 3, 4, 6)),   # plain [B, H, S, D]
    ((2, 3, 4, 5), (2, 1, 6, 5), (2, 1, 6, 7), (4, 6)),         # one key/value head for all; Dv != D
    ((1, 2, 3, 4), (3, 2, 5, 4), (1, 2, 5, 4), (3, 1, 1, 5)),   # batch broadcast; a per-batch key mask
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), None),           # the variant without a mask
    ((5, 3), (7, 3), (7, 2), (1, 7)),                           # rank 2
    ((2, 1, 4), (2, 6, 4), (2, 6, 4), (2, 1, 6)),               # one query, rank 3
]


def _data(rng, shapes, neg_inf=True):
    q, k, v = (rng.standard_normal(s).astype(F32) for s in shapes[:3])
    mask = None
    if shapes[3] is not None:
        mask = rng.standard_normal(shapes[3]).astype(F32)
        if neg_inf:
            mask.reshape(-1)[::4] = -np.inf
    return q, k, v, mask


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: "x".join(map(str, s[0])) + ("-nomask" if s[3] is None else ""))
def test_forward_and_gradient_match_torch(backend, shapes):
    rng = np.random.default_rng(sum(map(sum, shapes[:3])))
    q, k, v, mask = _data(rng, shapes)
    scale = 1 / math.sqrt(q.shape[-1]) * 1.3
    got = _run(backend, q, k, v, mask, scale)
    want = _torch(q, k, v, mask, scale)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape, i
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=f"output {i}")
    np.testing.assert_allclose(got[0], naive(q, k, v, mask, scale), rtol=2e-5, atol=2e-6)


def test_fully_masked_row_gives_zero_and_zero_gradient(backend):
    """A row whose every key is -inf: 0 and a gradient of 0 (PyTorch's rule; Apple is silent)."""
    rng = np.random.default_rng(3)
    q, k, v, _ = _data(rng, ((1, 2, 4, 3), (1, 2, 5, 3), (1, 2, 5, 3), None))
    mask = rng.standard_normal((4, 5)).astype(F32)
    mask[1] = -np.inf
    mask[2, :4] = -np.inf  # one key left
    got = _run(backend, q, k, v, mask, 0.5)
    want = _torch(q, k, v, mask, 0.5)
    assert np.all(got[0][:, :, 1] == 0) and np.all(got[1][:, :, 1] == 0)
    np.testing.assert_allclose(got[0][:, :, 2], np.broadcast_to(v[:, :, 4], (1, 2, 3)), rtol=1e-6)
    for a, b in zip(got, want):
        assert np.all(np.isfinite(a))
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_large_logits_stay_finite(backend):
    """Scores near 1e4 (exp would overflow without the maximum subtracted)."""
    rng = np.random.default_rng(4)
    q, k, v, mask = _data(rng, ((1, 2, 3, 4), (1, 2, 6, 4), (1, 2, 6, 4), (3, 6)), neg_inf=False)
    q *= 100
    k *= 100
    mask *= 1e4
    got = _run(backend, q, k, v, mask, 1.0)
    want = _torch(q, k, v, mask, 1.0)
    for a, b in zip(got, want):
        assert np.all(np.isfinite(a))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0], naive(q, k, v, mask, 1.0), rtol=1e-5, atol=1e-5)


def test_nan_and_inf_scores(backend):
    """NaN in a row's scores makes that row NaN; +inf too (inf - inf), as a max-subtracted softmax."""
    rng = np.random.default_rng(5)
    q, k, v, mask = _data(rng, ((1, 4, 3), (1, 5, 3), (1, 5, 2), (4, 5)), neg_inf=False)
    mask[1, 2] = np.nan
    mask[2, 0] = np.inf
    y = _run(backend, q, k, v, mask, 0.7, grads=False)[0]
    assert np.all(np.isnan(y[0, 1])) and np.all(np.isnan(y[0, 2]))
    keep = [0, 3]
    np.testing.assert_allclose(y[0, keep], naive(q, k, v, mask, 0.7)[0, keep], rtol=2e-5, atol=2e-6)


def test_empty_key_sequence_gives_zero(backend):
    q = np.ones((2, 3, 4), F32)
    k, v = np.ones((2, 0, 4), F32), np.ones((2, 0, 5), F32)
    y = _run(backend, q, k, v, None, 0.5, grads=False)[0]
    assert y.shape == (2, 3, 5) and np.all(y == 0)


def test_float16(backend):
    rng = np.random.default_rng(6)
    q, k, v, mask = _data(rng, ((1, 2, 3, 8), (1, 2, 5, 8), (1, 2, 5, 8), (3, 5)))
    h = [a.astype(np.float16) for a in (q, k, v, mask)]
    try:
        y = _run(backend, *h, 0.35, grads=False)[0]
    except mg.UnsupportedDTypeError as e:
        pytest.skip(f"float16 not on this adapter: {e}")
    assert y.dtype == np.float16
    want = naive(*[a.astype(F32) for a in h], 0.35)
    np.testing.assert_allclose(y.astype(F32), want, rtol=4e-3, atol=4e-3)


def test_long_key_sequence_on_webgpu(webgpu):
    """4,096 keys: the webgpu kernel loops over them in bounded passes (loops.long_loop)."""
    rng = np.random.default_rng(7)
    q, k, v, mask = _data(rng, ((1, 2, 3, 16), (1, 2, 4096, 16), (1, 2, 4096, 8), (3, 4096)))
    mask[2, :4095] = -np.inf  # the last key only
    mask[1] = -np.inf  # nothing
    g, feeds, targets = _build(q, k, v, mask, 0.25, grads=False)
    got = g.run(feeds, targets, backend=webgpu)[targets[0]]
    ref = g.run(feeds, targets, backend="numpy")[targets[0]]
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-6)
    assert np.all(got[:, :, 1] == 0)
    np.testing.assert_allclose(got[:, :, 2], v[:, :, 4095], rtol=1e-6)
    want = _torch(q, k, v, mask, 0.25)[0]
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_wide_values_over_several_passes(backend):
    """Dv = 70 (webgpu: column chunks of 32, 32 and 6) and 1,500 keys (several bounded passes)."""
    rng = np.random.default_rng(9)
    q, k, v, mask = _data(rng, ((1, 2, 3, 8), (1, 1, 1500, 8), (1, 1, 1500, 70), (3, 1500)))
    got = _run(backend, q, k, v, mask, 0.3, grads=False)[0]
    np.testing.assert_allclose(got, _torch(q, k, v, mask, 0.3)[0], rtol=2e-5, atol=2e-6)


# ----------------------------------------------------------------------------- errors
def _g(*shapes, dtype=F32):
    g = mg.Graph()
    return g, [g.placeholder(s, dtype=dtype) for s in shapes]


def test_scale_is_required():
    g, (q, k, v) = _g((1, 2, 3), (1, 4, 3), (1, 4, 3))
    with pytest.raises(mg.MiniGraphError, match="scale is required"):
        g.scaled_dot_product_attention(q, k, v)
    with pytest.raises(TypeError, match="scale must be a number"):
        g.scaled_dot_product_attention(q, k, v, None, "0.5")
    y = g.scaled_dot_product_attention(q, k, v, None, 0.5)  # positional, as the Swift order
    assert y.shape == (1, 2, 3) and y.operation.attrs["scale"] == 0.5


@pytest.mark.parametrize("shapes, match", [
    (((2, 3), (4, 5), (4, 3)), "same last .feature. dimension: 3 != 5"),
    (((2, 3), (4, 3), (5, 3)), "same sequence length .dimension -2.: 4 != 5"),
    (((2, 2, 3), (3, 4, 3), (3, 4, 3)), "do not broadcast"),
    (((3,), (4, 3), (4, 3)), "query \\(3,\\) needs rank >= 2"),
])
def test_shape_errors_name_the_op(shapes, match):
    g, (q, k, v) = _g(*shapes)
    with pytest.raises(mg.ShapeError, match="scaled_dot_product_attention op") as e:
        g.scaled_dot_product_attention(q, k, v, scale=1.0)
    assert e.match(match)


@pytest.mark.parametrize("mask_shape", [(3, 5), (3, 2, 4), (2, 1, 2, 4), (4, 1)])
def test_mask_must_broadcast_to_the_scores(mask_shape):
    g, (q, k, v, m) = _g((2, 2, 3), (2, 4, 3), (2, 4, 3), mask_shape)
    with pytest.raises(mg.ShapeError, match=r"mask .* must broadcast to the scores .*\(2, 2, 4\)"):
        g.scaled_dot_product_attention(q, k, v, m, scale=1.0)


def test_dtype_errors():
    g, (q, k, v) = _g((2, 3), (4, 3), (4, 3))
    with pytest.raises(mg.DTypeError, match="mask has dtype bool.*g.select"):
        g.scaled_dot_product_attention(q, k, v, g.placeholder((2, 4), dtype=mg.bool_), scale=1.0)
    with pytest.raises(mg.DTypeError, match="query is float32 but key is float16"):
        g.scaled_dot_product_attention(q, g.placeholder((4, 3), dtype=mg.float16), v, scale=1.0)
    gi, (qi, ki, vi) = _g((2, 3), (4, 3), (4, 3), dtype=np.int32)
    with pytest.raises(mg.DTypeError, match="query has dtype int32"):
        gi.scaled_dot_product_attention(qi, ki, vi, scale=1.0)


def test_scalar_mask_and_declaration():
    g, (q, k, v) = _g((1, 2, 3), (1, 4, 3), (1, 4, 3))
    y = g.scaled_dot_product_attention(q, k, v, -1.5, scale=0.5)  # a number: a constant of the query's dtype
    assert "nil_inputs" not in y.operation.attrs
    y0 = g.scaled_dot_product_attention(q, k, v, scale=0.5)
    assert y0.operation.attrs["nil_inputs"] == ("mask",)
    rng = np.random.default_rng(0)
    f = {t: rng.standard_normal(t.shape).astype(F32) for t in (q, k, v)}
    out = g.run(f, [y, y0])
    np.testing.assert_allclose(out[y], out[y0], rtol=1e-5, atol=1e-6)  # a constant shift changes nothing
    d = mg.ops.OPS["scaled_dot_product_attention"]
    assert d.swift == "scaledDotProductAttention(query:key:value:mask:scale:name:)"
    assert d.objc == "scaledDotProductAttentionWithQueryTensor:keyTensor:valueTensor:maskTensor:scale:name:"
    assert d.since == ("15.0", "18.0")


def test_save_load_and_swift_keep_both_variants(tmp_path):
    """The mask and the nil mask survive save/load (same results); Swift export writes both calls."""
    g = mg.Graph()
    q, k, v, m = (g.placeholder(s, name=n) for s, n in (((1, 2, 3, 4), "q"), ((1, 1, 5, 4), "k"),
                                                        ((1, 1, 5, 2), "v"), ((3, 5), "m")))
    y = g.scaled_dot_product_attention(q, k, v, m, scale=0.5, name="masked")
    y0 = g.scaled_dot_product_attention(q, k, v, scale=0.25, name="plain")
    rng = np.random.default_rng(8)
    mv = rng.standard_normal((3, 5)).astype(F32)
    mv[0] = -np.inf
    feeds = {t: rng.standard_normal(t.shape).astype(F32) for t in (q, k, v)}
    feeds[m] = mv
    want = g.run(feeds, [y, y0])
    g2 = mg.load(g.save(str(tmp_path / "attn.mpsg")))
    by = {t.name: t for op in g2.operations for t in op.outputs}
    op2 = by["masked"].operation
    assert op2.attrs["scale"] == 0.5 and "nil_inputs" not in op2.attrs
    assert by["plain"].operation.attrs["nil_inputs"] == ("mask",)
    got = g2.run({by[t.name]: a for t, a in feeds.items()}, [by["masked"], by["plain"]])
    np.testing.assert_array_equal(got[by["masked"]], want[y])
    np.testing.assert_array_equal(got[by["plain"]], want[y0])
    swift = g.to_swift(target_tensors=[y, y0])
    assert "Needs macOS 15.0 / iOS 18.0" in swift
    assert "scaledDotProductAttention(query: q, key: k, value: v, mask: m, scale: 0.5, name: \"masked\")" in swift
    assert "mask: nil, scale: 0.25, name: \"plain\")" in swift


# ----------------------------------------------------------------------------- the descriptor form
def sinks_reference(q, k, v, mask, scale, sinks):
    """softmax over the real scores and one virtual logit per head (the sink), in float64: each
    row's weights sum to 1 - p(sink); the sink brings no value."""
    s = scale * np.einsum("...id,...jd->...ij", q.astype(np.float64), k.astype(np.float64))
    if mask is not None:
        s = s + mask
    sink = np.broadcast_to(np.asarray(sinks, np.float64).reshape(-1, 1, 1), s.shape[:-1] + (1,))
    top = np.maximum(s.max(-1, keepdims=True), sink)
    e, es = np.exp(s - top), np.exp(sink - top)
    return np.einsum("...ij,...jd->...id", e / (e.sum(-1, keepdims=True) + es), v.astype(np.float64))


def test_descriptor_with_scale_or_a_mask_is_the_mask_form(backend, rng):
    q, k, v = (rng.standard_normal(s).astype(F32) for s in ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2)))
    m = np.where(rng.random((4, 6)) < 0.3, -np.inf, rng.standard_normal((4, 6))).astype(F32)
    g = mg.Graph()
    Q, K, V = (g.constant(a) for a in (q, k, v))
    a = g.scaled_dot_product_attention(Q, K, V, descriptor=mg.SDPADescriptor(0.4))
    b = g.scaled_dot_product_attention(Q, K, V, descriptor=mg.SDPADescriptor(0.4, mask_tensor=g.constant(m)), name="b")
    assert b.name == "b" and b.operation.type == "scaled_dot_product_attention"
    r = g.run({}, [a, b], backend=backend)
    np.testing.assert_allclose(r[a], naive(q, k, v, None, 0.4), rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(r[b], naive(q, k, v, m, 0.4), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("nq,nkv", [(5, 5), (3, 6), (6, 3)])
def test_descriptor_is_causal_lets_query_i_see_keys_up_to_i(backend, rng, nq, nkv):
    """isCausal: "each query position attends only to key positions at or before it" (top-left
    aligned, as torch's is_causal)."""
    q, k, v = (rng.standard_normal(s).astype(F32) for s in ((2, nq, 4), (2, nkv, 4), (2, nkv, 3)))
    g = mg.Graph()
    y = g.scaled_dot_product_attention(q, k, v, descriptor=mg.SDPADescriptor(0.5, is_causal=True))
    causal = np.where(np.arange(nkv)[None, :] <= np.arange(nq)[:, None], 0.0, -np.inf)
    np.testing.assert_allclose(g.run({}, [y], backend=backend)[y], naive(q, k, v, causal, 0.5), rtol=2e-5, atol=2e-6)
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    ref = torch.nn.functional.scaled_dot_product_attention(*(torch.from_numpy(a.astype(np.float64)) for a in (q, k, v)),
                                                           is_causal=True, scale=0.5)
    np.testing.assert_allclose(naive(q, k, v, causal, 0.5), ref.numpy(), rtol=1e-10, atol=1e-12)


def test_descriptor_sinks_take_a_share_of_each_heads_weights(backend, rng):
    q, k, v = (rng.standard_normal(s).astype(F32) for s in ((2, 3, 4, 5), (1, 3, 6, 5), (1, 3, 6, 2)))
    sinks = np.array([-1.0, 0.5, 3.0], F32)
    m = rng.standard_normal((4, 6)).astype(F32)
    g = mg.Graph()
    S = g.constant(sinks)
    plain = g.scaled_dot_product_attention(q, k, v, descriptor=mg.SDPADescriptor(0.3, sinks_tensor=S))
    masked = g.scaled_dot_product_attention(q, k, v, descriptor=mg.SDPADescriptor(0.3, mask_tensor=g.constant(m),
                                                                                   sinks_tensor=S))
    causal = g.scaled_dot_product_attention(q, k, v, descriptor=mg.SDPADescriptor(0.3, is_causal=True, sinks_tensor=S))
    r = g.run({}, [plain, masked, causal], backend=backend)
    tri = np.where(np.tri(4, 6, dtype=bool), 0.0, -np.inf)
    for t, mm in ((plain, None), (masked, m), (causal, tri)):
        assert r[t].shape == (2, 3, 4, 2)
        np.testing.assert_allclose(r[t], sinks_reference(q, k, v, mm, 0.3, sinks), rtol=2e-5, atol=2e-6)
    # a very negative sink takes nothing: the plain attention
    g2 = mg.Graph()
    y = g2.scaled_dot_product_attention(q, k, v, descriptor=mg.SDPADescriptor(0.3, sinks_tensor=np.full(3, -1e30, F32)))
    np.testing.assert_allclose(g2.run({}, [y], backend=backend)[y], naive(q, k, v, None, 0.3), rtol=2e-5, atol=2e-6)


def test_descriptor_sinks_get_gradients():
    from gradcheck import check_gradients
    rng = np.random.default_rng(4)
    vals = [rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 3)),
            rng.standard_normal(2)]
    check_gradients(lambda g, q, k, v, s: g.scaled_dot_product_attention(
        q, k, v, descriptor=mg.SDPADescriptor(0.5, is_causal=True, sinks_tensor=s)), vals, rng, rtol=1e-5, atol=1e-6)


def test_descriptor_errors_name_the_op():
    g = mg.Graph()
    q = g.placeholder([2, 3, 4])
    m = g.constant(np.zeros((3, 3), F32))
    with pytest.raises(mg.DescriptorError, match="scaled_dot_product_attention op 'a'.*not both"):
        g.scaled_dot_product_attention(q, q, q, scale=0.5, descriptor=mg.SDPADescriptor(0.5), name="a")
    with pytest.raises(mg.DescriptorError, match="'a'.*mutually exclusive"):
        g.scaled_dot_product_attention(q, q, q, descriptor=mg.SDPADescriptor(0.5, is_causal=True, mask_tensor=m), name="a")
    with pytest.raises(mg.DescriptorError, match="'a'.*SDPADescriptor"):
        g.scaled_dot_product_attention(q, q, q, descriptor={"scale": 0.5}, name="a")
    with pytest.raises(mg.DescriptorError, match="scale"):
        g.scaled_dot_product_attention(q, q, q, descriptor=mg.SDPADescriptor(None), name="a")
    with pytest.raises(mg.ShapeError, match=r"'a'.*sinks_tensor \(3,\).*heads"):
        g.scaled_dot_product_attention(q, q, q, descriptor=mg.SDPADescriptor(0.5, sinks_tensor=np.zeros(3, F32)), name="a")
    dyn = g.placeholder([-1, 3, 4])
    with pytest.raises(mg.ShapeError, match="'a'.*static"):
        g.scaled_dot_product_attention(dyn, dyn, dyn, descriptor=mg.SDPADescriptor(0.5, is_causal=True), name="a")
