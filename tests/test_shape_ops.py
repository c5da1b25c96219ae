"""Padding and data movement: pad_tensor / pad_gradient in every MPSGraphPaddingMode, tile and its
gradient, split, stack, flatten_2d, reverse, on every backend, against references written here
(naive index loops, NumPy, PyTorch autograd)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import minigraph as mg

try:  # the oracle of the tests marked needs_torch; the others run without it
    import torch
    F = torch.nn.functional
except ImportError:
    torch = F = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
PM = mg.PaddingMode
F32 = np.float32


# ----------------------------------------------------------------------------- naive references
def naive_source(mode, i, n):
    """(index or None, sign) straight from the definitions: REFLECT leaves the edge out, SYMMETRIC
    repeats it, PERIODIC is Apple's ``x[-2] -> x[L-3]`` (period L - 1), ANTI_PERIODIC negates it."""
    if 0 <= i < n:
        return i, 1
    if mode in (PM.CONSTANT, PM.ZERO):
        return None, 1
    if mode == PM.CLAMP_TO_EDGE:
        return (0 if i < 0 else n - 1), 1
    if mode == PM.REFLECT:  # walk back from the edge, the edge excluded
        return (abs(i) if i < 0 else (n - 1) - (i - (n - 1))), 1
    if mode == PM.SYMMETRIC:  # the edge included
        return (-1 - i if i < 0 else (n - 1) - (i - n)), 1
    sign, j = 1, i
    while j < 0:  # one period L - 1 at a time, as the header's x[-2] -> x[L-3]
        j += n - 1
        sign = -sign
    while j >= n:
        j -= n - 1
        sign = -sign
    return j, (sign if mode == PM.ANTI_PERIODIC else 1)


def naive_pad(x, mode, left, right, value=0.0):
    out_shape = tuple(n + a + b for n, a, b in zip(x.shape, left, right))
    fill = 0 if mode == PM.ZERO else value
    y = np.empty(out_shape, x.dtype)
    for pos in itertools.product(*[range(n) for n in out_shape]):
        src, sign = [], 1
        for j, n, a in zip(pos, x.shape, left):
            k, s = naive_source(mode, j - a, n)
            src.append(k)
            sign *= s
        y[pos] = fill if None in src else x[tuple(src)] * sign
    return y


def run(build, feeds, backend):
    g = mg.Graph()
    phs = {name: g.placeholder(a.shape, dtype=a.dtype, name=name) for name, a in feeds.items()}
    outs = build(g, **phs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    r = g.run({phs[k]: v for k, v in feeds.items()}, list(outs), backend=backend)
    return [r[t] for t in outs]


def grads(build, x, w, backend):
    """d sum(w * build(x)) / dx, by minigraph's autodiff."""
    g = mg.Graph()
    xp = g.placeholder(x.shape, name="x")
    y = build(g, xp)
    wp = g.placeholder(y.shape, name="w")
    loss = g.reduction_sum(g.multiplication(y, wp), axes=None)
    d = g.gradients(loss, [xp])[xp]
    return g.run({xp: x, wp: w}, [d], backend=backend)[d]


# ----------------------------------------------------------------------------- pad_tensor
ONE_D = {  # [1 2 3 4] padded by 3 on each side (docs/shape.md has the same table)
    PM.CONSTANT: [9, 9, 9, 1, 2, 3, 4, 9, 9, 9],
    PM.ZERO: [0, 0, 0, 1, 2, 3, 4, 0, 0, 0],
    PM.CLAMP_TO_EDGE: [1, 1, 1, 1, 2, 3, 4, 4, 4, 4],
    PM.REFLECT: [4, 3, 2, 1, 2, 3, 4, 3, 2, 1],
    PM.SYMMETRIC: [3, 2, 1, 1, 2, 3, 4, 4, 3, 2],
    PM.PERIODIC: [1, 2, 3, 1, 2, 3, 4, 2, 3, 4],
    PM.ANTI_PERIODIC: [-1, -2, -3, 1, 2, 3, 4, -2, -3, -4],
}


@pytest.mark.parametrize("mode", list(PM), ids=lambda m: m.name)
def test_pad_1d_worked_example(mode, backend):
    x = np.array([1, 2, 3, 4], F32)
    (y,) = run(lambda g, x: g.pad_tensor(x, mode, [3], [3], constant_value=9.0), {"x": x}, backend)
    np.testing.assert_array_equal(y, np.array(ONE_D[mode], F32))
    np.testing.assert_array_equal(y, naive_pad(x, mode, [3], [3], 9.0))


def test_periodic_follows_apples_header_formula(backend):
    """MPSGraphCore.h: PERIODIC ``x[-2] -> x[L-3]``, ANTI_PERIODIC ``x[-2] -> -x[L-3]``."""
    x = np.arange(1, 8, dtype=F32)  # L = 7
    (p, a) = run(lambda g, x: [g.pad_tensor(x, PM.PERIODIC, [2], [0]), g.pad_tensor(x, PM.ANTI_PERIODIC, [2], [0])],
                 {"x": x}, backend)
    assert p[0] == x[7 - 3] and a[0] == -x[7 - 3]  # position -2
    assert p[1] == x[7 - 2] and a[1] == -x[7 - 2]  # position -1


@pytest.mark.parametrize("mode", list(PM), ids=lambda m: m.name)
def test_pad_3d_matches_naive_loop(mode, backend, rng):
    x = rng.standard_normal((3, 4, 5)).astype(F32)
    left, right = [2, 0, 3], [1, 3, 4]
    if mode == PM.REFLECT:
        left, right = [2, 0, 3], [1, 3, 4]  # at most size - 1
    (y,) = run(lambda g, x: g.pad_tensor(x, mode, left, right, constant_value=-1.25), {"x": x}, backend)
    np.testing.assert_allclose(y, naive_pad(x, mode, left, right, -1.25), rtol=0, atol=0)


@pytest.mark.parametrize("mode,np_mode", [(PM.CONSTANT, "constant"), (PM.REFLECT, "reflect"),
                                          (PM.SYMMETRIC, "symmetric"), (PM.CLAMP_TO_EDGE, "edge")])
def test_pad_matches_numpy_pad(mode, np_mode, backend, rng):
    x = rng.standard_normal((4, 6)).astype(F32)
    left, right = [3, 1], [2, 5]
    (y,) = run(lambda g, x: g.pad_tensor(x, mode, left, right, 2.5), {"x": x}, backend)
    kw = {"constant_values": 2.5} if np_mode == "constant" else {}
    np.testing.assert_array_equal(y, np.pad(x, list(zip(left, right)), mode=np_mode, **kw))


@needs_torch
@pytest.mark.parametrize("mode,torch_mode", [(PM.REFLECT, "reflect"), (PM.CLAMP_TO_EDGE, "replicate"),
                                             (PM.CONSTANT, "constant")])
def test_pad_and_its_gradient_match_torch(mode, torch_mode, backend, rng):
    x = rng.standard_normal((2, 3, 5, 6)).astype(F32)
    left, right = [0, 0, 2, 4], [0, 0, 3, 1]
    (y,) = run(lambda g, x: g.pad_tensor(x, mode, left, right, 0.75), {"x": x}, backend)
    xt = torch.tensor(x, requires_grad=True)
    kw = {"value": 0.75} if torch_mode == "constant" else {}
    yt = F.pad(xt, (left[3], right[3], left[2], right[2]), mode=torch_mode, **kw)
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=0, atol=0)
    w = rng.standard_normal(y.shape).astype(F32)
    (yt * torch.tensor(w)).sum().backward()
    got = grads(lambda g, x: g.pad_tensor(x, mode, left, right, 0.75), x, w, backend)
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-5, atol=1e-5)


def _torch_gather_pad(xt, mode, left, right):
    """A torch graph of the same map, by index_select and a sign per axis (autograd scatter-adds)."""
    y = xt
    for d, (a, b) in enumerate(zip(left, right)):
        n = xt.shape[d]
        pairs = [naive_source(mode, j - a, n) for j in range(a + n + b)]
        idx = torch.tensor([k for k, _ in pairs])
        shape = [1] * xt.dim()
        shape[d] = len(pairs)
        y = y.index_select(d, idx) * torch.tensor([s for _, s in pairs], dtype=xt.dtype).reshape(shape)
    return y


@needs_torch
@pytest.mark.parametrize("mode", [PM.SYMMETRIC, PM.PERIODIC, PM.ANTI_PERIODIC], ids=lambda m: m.name)
def test_pad_gradient_folds_every_read_back(mode, backend, rng):
    """Wide padding reads an element many times; pad_gradient sums every read (with its sign)."""
    x = rng.standard_normal((3, 4)).astype(F32)
    left, right = ([3, 4], [2, 1]) if mode == PM.SYMMETRIC else ([5, 7], [4, 9])
    xt = torch.tensor(x, requires_grad=True)
    yt = _torch_gather_pad(xt, mode, left, right)
    w = rng.standard_normal(tuple(yt.shape)).astype(F32)
    (yt * torch.tensor(w)).sum().backward()
    got = grads(lambda g, x: g.pad_tensor(x, mode, left, right), x, w, backend)
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-5, atol=1e-5)


@needs_torch
def test_periodic_is_torch_circular_without_one_end(backend, rng):
    """Period L - 1: the left padding is torch's circular pad of x[:L-1], the right of x[1:]."""
    x = rng.standard_normal((1, 1, 6)).astype(F32)
    (y,) = run(lambda g, x: g.pad_tensor(x, PM.PERIODIC, [0, 0, 4], [0, 0, 3]), {"x": x}, backend)
    left = F.pad(torch.tensor(x[..., :5]), (4, 0), mode="circular").numpy()
    right = F.pad(torch.tensor(x[..., 1:]), (0, 3), mode="circular").numpy()
    np.testing.assert_array_equal(y[..., :4], left[..., :4])
    np.testing.assert_array_equal(y[..., 4:10], x)
    np.testing.assert_array_equal(y[..., 10:], right[..., 5:])


def test_pad_gradient_op_directly(backend, rng):
    dy = rng.standard_normal((5, 9)).astype(F32)
    x = np.zeros((3, 4), F32)
    (got,) = run(lambda g, dy, x: g.pad_gradient(dy, x, "CLAMP_TO_EDGE", [1, 2], [1, 3]), {"dy": dy, "x": x}, backend)
    want = np.zeros((3, 4))
    for i, j in itertools.product(range(5), range(9)):
        want[min(max(i - 1, 0), 2), min(max(j - 2, 0), 3)] += dy[i, j]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_padding_mode_given_as_enum_name_or_raw_value(backend):
    x = np.array([[1, 2, 3]], F32)
    ys = run(lambda g, x: [g.pad_tensor(x, m, [0, 2], [0, 1]) for m in (PM.SYMMETRIC, "symmetric", "SYMMETRIC", 2)]
             + [g.pad_tensor(x, "clampToEdge", [0, 1], [0, 0])],
             {"x": x}, backend)
    for y in ys[:-1]:
        np.testing.assert_array_equal(y, [[2, 1, 1, 2, 3, 3]])
    np.testing.assert_array_equal(ys[-1], [[1, 1, 2, 3]])


def test_pad_keeps_nan_inf_and_signed_zero(backend):
    x = np.array([np.nan, -0.0, np.inf, -np.inf], F32)
    (r, c) = run(lambda g, x: [g.pad_tensor(x, PM.REFLECT, [2], [2]),
                               g.pad_tensor(x, PM.CONSTANT, [1], [1], float("nan"))], {"x": x}, backend)
    np.testing.assert_array_equal(r, [np.inf, -0.0, np.nan, -0.0, np.inf, -np.inf, np.inf, -0.0])
    assert np.signbit(r[1]) and np.signbit(r[3])
    assert np.isnan(c[0]) and np.isnan(c[-1])


def test_pad_integer_float16_and_bool_tensors(backend):
    xi = np.array([[1, -2, 3]], np.int32)
    xh = np.array([[0.5, -1.5, 2.0]], np.float16)
    xb = np.array([[True, False, True]])
    yi, ya, yh, yb = run(lambda g, xi, xh, xb: [g.pad_tensor(xi, PM.CONSTANT, [0, 1], [1, 1], -7.9),
                                                  g.pad_tensor(xi, PM.ANTI_PERIODIC, [0, 2], [0, 0]),
                                                  g.pad_tensor(xh, PM.CONSTANT, [0, 1], [0, 0], 0.1),
                                                  g.pad_tensor(xb, PM.CONSTANT, [0, 1], [0, 1], 1.0)],
                         {"xi": xi, "xh": xh, "xb": xb}, backend)
    np.testing.assert_array_equal(yi, [[-7, 1, -2, 3, -7], [-7, -7, -7, -7, -7]])  # toward zero
    np.testing.assert_array_equal(ya, [[-1, 2, 1, -2, 3]])
    assert yh.dtype == np.float16 and yh[0, 0] == np.float16(0.1)
    np.testing.assert_array_equal(yb, [[True, True, False, True, True]])


def test_zero_padding_and_empty_axes(backend):
    x = np.ones((0, 3), F32)
    (a, b) = run(lambda g, x: [g.pad_tensor(x, PM.CONSTANT, [1, 0], [1, 0], 4.0),
                               g.pad_tensor(x, PM.REFLECT, [0, 2], [0, 1])], {"x": x}, backend)
    np.testing.assert_array_equal(a, np.full((2, 3), 4.0, F32))
    assert b.shape == (0, 6)


@pytest.mark.parametrize("mode,left,right,match", [
    (PM.REFLECT, [3], [0], "REFLECT padding .* too large.*at most size - 1"),
    (PM.SYMMETRIC, [0], [4], "SYMMETRIC padding .* too large.*at most the size"),
    (PM.CONSTANT, [-1], [0], "padding must be >= 0.*slice"),
    (PM.CONSTANT, [1, 1], [0], "one entry per dimension"),
])
def test_pad_refuses_what_mpsgraph_refuses(mode, left, right, match):
    g = mg.Graph()
    x = g.placeholder([3])
    with pytest.raises(mg.ShapeError, match=match) as e:
        g.pad_tensor(x, mode, left, right)
    assert "pad_tensor" in str(e.value)


def test_pad_limits_are_inclusive():
    g = mg.Graph()
    x = g.placeholder([3])
    assert g.pad_tensor(x, PM.REFLECT, [2], [2]).shape == (7,)
    assert g.pad_tensor(x, PM.SYMMETRIC, [3], [3]).shape == (9,)
    assert g.pad_tensor(x, PM.PERIODIC, [10], [11]).shape == (24,)
    one = g.placeholder([1])
    with pytest.raises(mg.ShapeError, match="PERIODIC.*at least 2"):
        g.pad_tensor(one, PM.PERIODIC, [1], [0])
    with pytest.raises(mg.DescriptorError, match="not an MPSGraphPaddingMode.*REFLECT \\(1\\)"):
        g.pad_tensor(x, "mirror", [1], [1])
    with pytest.raises(mg.DTypeError, match="bool"):
        g.pad_tensor(g.placeholder([3], dtype=mg.bool), PM.ANTI_PERIODIC, [1], [1])
    with pytest.raises(mg.ShapeError, match="not the padded shape"):
        g.pad_gradient(g.placeholder([4]), x, PM.ZERO, [1], [1])


# ----------------------------------------------------------------------------- tile
@needs_torch
def test_tile_and_its_gradient(backend, rng):
    x = rng.standard_normal((2, 3, 1)).astype(F32)
    m = [2, 1, 3]
    (y,) = run(lambda g, x: g.tile(x, m), {"x": x}, backend)
    np.testing.assert_array_equal(y, np.tile(x, m))
    w = rng.standard_normal(y.shape).astype(F32)
    xt = torch.tensor(x, requires_grad=True)
    (xt.repeat(*m) * torch.tensor(w)).sum().backward()
    got = grads(lambda g, x: g.tile(x, m), x, w, backend)
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_tile_gradient_op_and_zero_multiplier(backend, rng):
    dy = rng.standard_normal((6, 2)).astype(F32)
    x = np.zeros((2, 2), F32)
    (tg, z) = run(lambda g, dy, x: [g.tile_gradient(dy, x, [3, 1]), g.tile(x, [0, 2])], {"dy": dy, "x": x}, backend)
    np.testing.assert_allclose(tg, dy[0:2] + dy[2:4] + dy[4:6], rtol=1e-6)
    assert z.shape == (0, 4)
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match="tile.*one entry per dimension"):
        g.tile(g.placeholder([2, 2]), [2])
    with pytest.raises(mg.ShapeError, match="not the tiled shape"):
        g.tile_gradient(g.placeholder([4, 2]), g.placeholder([2, 2]), [3, 1])


# ----------------------------------------------------------------------------- split
def test_split_and_its_gradient_with_unreached_pieces(backend, rng):
    x = rng.standard_normal((2, 6, 3)).astype(F32)
    ys = run(lambda g, x: g.split(x, 3, -2), {"x": x}, backend)
    for got, want in zip(ys, np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(got, want)
    g = mg.Graph()
    xp = g.placeholder(x.shape, name="x")
    a, _, c = g.split(xp, 3, 1)
    loss = g.addition(g.reduction_sum(g.square(a), axes=None), g.reduction_sum(c, axes=None))
    d = g.gradients(loss, [xp])[xp]
    got = g.run({xp: x}, [d], backend=backend)[d]
    want = np.concatenate([2 * x[:, 0:2], np.zeros_like(x[:, 2:4]), np.ones_like(x[:, 4:6])], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_split_needs_equal_pieces():
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match="split op .*7 elements.*3 splits.*divisible"):
        g.split(g.placeholder([2, 7]), 3, 1)
    assert len(g.split(g.placeholder([2, 7]), 1, 1)) == 1
    with pytest.raises(mg.ShapeError, match="split sizes \\[3, 3\\] add up to 6.*7 elements"):
        g.split(g.placeholder([2, 7]), [3, 3], 1)


def test_split_by_sizes_and_its_gradient(backend, rng):
    """A list of sizes is MPSGraph's split(_:splitSizes:axis:name:): uneven and empty pieces."""
    x = rng.standard_normal((7, 2)).astype(F32)
    ys = run(lambda g, x: g.split(x, [3, 0, 4], 0), {"x": x}, backend)
    for got, want in zip(ys, np.split(x, [3, 3], axis=0)):
        np.testing.assert_array_equal(got, want)
    w = rng.standard_normal((4, 2)).astype(F32)
    got = grads(lambda g, x: g.split(x, [3, 0, 4], 0)[2], x, w, backend)
    np.testing.assert_array_equal(got, np.concatenate([np.zeros((3, 2), F32), w]))
    g = mg.Graph()
    g.split(g.placeholder([7, 2], name="x"), [3, 4], -2, name="s")
    assert "graph.split(x, splitSizes: [3, 4], axis: 0, name: \"s\")" in g.to_swift()


# ----------------------------------------------------------------------------- stack
@needs_torch
def test_stack_broadcasts_and_its_gradient(backend, rng):
    a = rng.standard_normal((2, 3)).astype(F32)
    b = rng.standard_normal((3,)).astype(F32)
    (y0, y1, y2) = run(lambda g, a, b: [g.stack([a, b], 0), g.stack([a, b, a], -1), g.stack([a, b], 1)],
                       {"a": a, "b": b}, backend)
    bb = np.broadcast_to(b, a.shape)
    np.testing.assert_array_equal(y0, np.stack([a, bb], 0))
    np.testing.assert_array_equal(y1, np.stack([a, bb, a], -1))
    np.testing.assert_array_equal(y2, np.stack([a, bb], 1))
    g = mg.Graph()
    ap, bp = g.placeholder(a.shape, name="a"), g.placeholder(b.shape, name="b")
    s = g.stack([ap, bp, ap], -1)
    w = rng.standard_normal(s.shape).astype(F32)
    loss = g.reduction_sum(g.multiplication(s, g.constant(w)), axes=None)
    da, db = (g.gradients(loss, [ap, bp])[t] for t in (ap, bp))
    r = g.run({ap: a, bp: b}, [da, db], backend=backend)
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (torch.stack([at, bt.expand(2, 3), at], -1) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(r[da], at.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r[db], bt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_stack_errors():
    g = mg.Graph()
    a = g.placeholder([2, 3])
    with pytest.raises(mg.AxisError, match="stack.*valid: -3..2"):
        g.stack([a, a], 3)
    with pytest.raises(mg.ShapeError, match="broadcast"):
        g.stack([a, g.placeholder([4])], 0)
    with pytest.raises(mg.DTypeError):
        g.stack([a, g.placeholder([2, 3], dtype=mg.int32)], 0)


# ----------------------------------------------------------------------------- flatten_2d, reverse
@pytest.mark.parametrize("axis,shape", [(0, (1, 24)), (1, (2, 12)), (2, (6, 4)), (3, (24, 1)), (-1, (6, 4)),
                                        (-3, (1, 24))])
def test_flatten_2d(axis, shape, backend, rng):
    x = rng.standard_normal((2, 3, 4)).astype(F32)
    (y,) = run(lambda g, x: g.flatten_2d(x, axis), {"x": x}, backend)
    np.testing.assert_array_equal(y, x.reshape(shape))
    w = rng.standard_normal(shape).astype(F32)
    np.testing.assert_allclose(grads(lambda g, x: g.flatten_2d(x, axis), x, w, backend), w.reshape(x.shape))


def test_flatten_2d_axis_out_of_range():
    g = mg.Graph()
    with pytest.raises(mg.AxisError, match="flatten_2d.*valid: -3..3"):
        g.flatten_2d(g.placeholder([2, 3, 4]), 4)


@pytest.mark.parametrize("axes", [[0], [1, 2], [-1, 0], [], None])
def test_reverse_and_its_gradient(axes, backend, rng):
    x = rng.standard_normal((2, 3, 4)).astype(F32)
    (y,) = run(lambda g, x: g.reverse(x, axes), {"x": x}, backend)
    want = np.flip(x, axis=tuple(range(3)) if axes is None else tuple(axes))
    np.testing.assert_array_equal(y, want)
    w = rng.standard_normal(x.shape).astype(F32)
    np.testing.assert_array_equal(grads(lambda g, x: g.reverse(x, axes), x, w, backend),
                                  np.flip(w, axis=tuple(range(3)) if axes is None else tuple(axes)))


def test_reverse_refuses_repeated_axes():
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match="repeat axis"):
        g.reverse(g.placeholder([2, 3]), [1, -1])


# ----------------------------------------------------------------------------- export
def test_swift_export_and_save_load(tmp_path):
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    p = g.pad_tensor(x, "clamp_to_edge", [1, 0], [0, 2], name="p")
    parts = g.split(g.tile(p, [1, 2]), 2, 1, name="s")
    st = g.stack(parts, -1, name="st")
    f = g.flatten_2d(st, -1, name="f")
    r = g.reverse(f, [0], name="r")
    gr = g.gradients(g.reduction_sum(r, axes=None), [x])[x]
    src = g.to_swift()
    assert 'graph.padTensor(x, with: .clampToEdge, leftPadding: [1, 0], rightPadding: [0, 2], constantValue: 0.0' in src
    assert "graph.split(tile, numSplits: 2, axis: 1" in src
    assert "graph.stack([s[0], s[1]], axis: 2" in src
    assert "graph.flatten2D(st, axis: 2" in src
    assert "graph.reverse(f, axes: [0]" in src
    assert "graph.tileGradient(withIncomingGradientTensor:" in src and "withMultiplier: [1, 2]" in src
    assert "graph.padGradient(withIncomingGradientTensor:" in src and "paddingMode: .clampToEdge" in src
    assert "Needs macOS 12.3 / iOS 15.4" in src
    path = tmp_path / "g.mgraph"
    g.save(path)
    h = mg.load(path)
    xv = np.arange(6, dtype=F32).reshape(2, 3)
    a = g.run({x: xv}, [r, gr])
    b = h.run({h.tensor("x"): xv}, [h.tensor(r.name), h.tensor(gr.name)])
    for u, v in zip(a.values(), b.values()):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("mode", list(PM), ids=lambda m: m.name)
def test_pad_gradient_is_the_adjoint_of_the_pad(mode, backend, rng):
    """<pad_gradient(dy), v> == <dy, pad(v)> with the constant taken as 0, and the gradient of
    pad_gradient (second order) is that pad again."""
    left, right = [2, 1], [1, 3]
    v = rng.standard_normal((3, 4)).astype(F32)
    dy = rng.standard_normal((6, 8)).astype(F32)
    g = mg.Graph()
    vp, dp = g.placeholder(v.shape, name="v"), g.placeholder(dy.shape, name="dy")
    folded = g.pad_gradient(dp, vp, mode, left, right)
    zero = PM.ZERO if mode == PM.CONSTANT else mode
    padded = g.pad_tensor(vp, zero, left, right)
    second = g.gradients(g.reduction_sum(g.multiplication(folded, vp), axes=None), [dp])[dp]
    r = g.run({vp: v, dp: dy}, [folded, padded, second], backend=backend)
    np.testing.assert_allclose(np.sum(r[folded] * v), np.sum(dy * r[padded]), rtol=1e-5)
    np.testing.assert_allclose(r[second], r[padded], rtol=1e-6)
    np.testing.assert_allclose(r[padded], naive_pad(v, zero, left, right), rtol=0, atol=0)


def test_tile_gradient_second_order_is_a_tile(backend, rng):
    x = rng.standard_normal((2, 3)).astype(F32)
    dy = rng.standard_normal((4, 9)).astype(F32)
    g = mg.Graph()
    xp, dp = g.placeholder(x.shape, name="x"), g.placeholder(dy.shape, name="dy")
    tg = g.tile_gradient(dp, xp, [2, 3])
    d = g.gradients(g.reduction_sum(g.multiplication(tg, xp), axes=None), [dp])[dp]
    r = g.run({xp: x, dp: dy}, [tg, d], backend=backend)
    np.testing.assert_allclose(r[tg], dy.reshape(2, 2, 3, 3).sum(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_array_equal(r[d], np.tile(x, [2, 3]))


# ----------------------------------------------------------------------------- strided slices
def numpy_index(shape, starts, ends, strides, start_mask, end_mask, squeeze_mask):
    """TensorFlow's StridedSlice written as a NumPy index: a masked start or end is left out (the
    axis's end in the stride's direction), a squeezed axis is an integer index, axes past the
    starts are taken whole."""
    idx: list = []
    for d in range(len(shape)):
        if d >= len(starts):
            idx.append(slice(None))
        elif squeeze_mask >> d & 1:
            idx.append(starts[d])
        else:
            idx.append(slice(None if start_mask >> d & 1 else starts[d], None if end_mask >> d & 1 else ends[d],
                             strides[d]))
    return tuple(idx)


def _random_slice(rng, shape):
    k = int(rng.integers(0, len(shape) + 1))
    starts = [int(rng.integers(-n - 2, n + 3)) for n in shape[:k]]
    ends = [int(rng.integers(-n - 2, n + 3)) for n in shape[:k]]
    strides = [int(rng.choice([-3, -2, -1, 1, 2, 3])) for _ in range(k)]
    sm, em = int(rng.integers(0, 1 << k)), int(rng.integers(0, 1 << k))
    sq = 0
    for d in range(k):  # a squeezed axis needs a start inside it and a positive stride
        if rng.random() < 0.25 and shape[d] > 0:
            sq |= 1 << d
            starts[d] = int(rng.integers(-shape[d], shape[d]))
            strides[d] = abs(strides[d])
    return starts, ends, strides, sm, em, sq


def test_slice_tensor_matches_numpy_strided_indexing(backend):
    rng = np.random.default_rng(7)
    for shape in [(5,), (4, 7), (3, 1, 6), (2, 5, 0, 3), (6, 4, 3, 2)]:
        x = rng.standard_normal(shape).astype(F32)
        for _ in range(12):
            args = _random_slice(rng, shape)
            want = x[numpy_index(shape, *args)]
            (got,) = run(lambda g, x: g.slice_tensor(x, *args), {"x": x}, backend)
            assert got.shape == want.shape, (shape, args)
            np.testing.assert_array_equal(got, want, err_msg=str((shape, args)))


def test_slice_tensor_worked_example_and_dtypes(backend):
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    (a, b) = run(lambda g, x: [g.slice_tensor(x, [-1, 1], [0, 6], [-2, 2]),
                               g.slice_tensor(x, [2, 0], [0, 0], [1, -1], end_mask=3, start_mask=2, squeeze_mask=1)],
                 {"x": x}, backend)
    np.testing.assert_array_equal(a, [[19, 21, 23], [7, 9, 11]])
    np.testing.assert_array_equal(b, [17, 16, 15, 14, 13, 12])
    for dt in (np.float16, np.bool_, np.uint32):
        v = (np.arange(12) % 3).astype(dt).reshape(3, 4)
        (c,) = run(lambda g, x: g.slice_tensor(x, [0, 3], [3, 0], [2, -1]), {"x": v}, backend)
        np.testing.assert_array_equal(c, v[0:3:2, 3:0:-1])


def test_slice_update_and_gradient_tensor_match_numpy_assignment(backend):
    rng = np.random.default_rng(3)
    for shape in [(6,), (5, 4), (3, 4, 5)]:
        x = rng.standard_normal(shape).astype(F32)
        for _ in range(8):
            args = _random_slice(rng, shape)
            idx = numpy_index(shape, *args)
            u = rng.standard_normal(x[idx].shape).astype(F32)
            keep = x.copy()
            want = x.copy()
            want[idx] = u
            zeros = np.zeros(shape, F32)
            zeros[idx] = u
            upd, grad = run(lambda g, x, u: [g.slice_update_data_tensor(x, u, *args),
                                             g.slice_gradient_tensor(u, list(shape), *args)], {"x": x, "u": u}, backend)
            np.testing.assert_array_equal(upd, want)
            np.testing.assert_array_equal(grad, zeros)
            np.testing.assert_array_equal(x, keep)  # the feed is not written


def test_slice_tensor_gradient_is_the_adjoint_and_matches_torch(backend):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 6, 5)).astype(F32)
    args = ([3, 0, 1], [0, 6, 5], [-1, 2, 1], 0, 0, 4)
    idx = numpy_index(x.shape, *args)
    w = rng.standard_normal(x[idx].shape).astype(F32)
    d = grads(lambda g, x: g.slice_tensor(x, *args), x, w, backend)
    want = np.zeros_like(x)
    np.add.at(want, idx, w)
    np.testing.assert_allclose(d, want, rtol=1e-6, atol=1e-6)
    assert np.isclose((x[idx] * w).sum(dtype=np.float64), (x * d).sum(dtype=np.float64), rtol=1e-5)
    if torch is not None:
        xt = torch.tensor(x, requires_grad=True)
        (torch.flip(xt[1:4], [0])[:, 0:6:2, 1] * torch.tensor(w)).sum().backward()  # torch has no negative step
        np.testing.assert_allclose(d, xt.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_slice_update_gradients_split_dy(backend):
    rng = np.random.default_rng(9)
    x, u, dy = (rng.standard_normal(s).astype(F32) for s in ((5, 4), (2, 4), (5, 4)))
    g = mg.Graph()
    xp, up, wp = (g.placeholder(a.shape, name=n) for a, n in ((x, "x"), (u, "u"), (dy, "w")))
    y = g.slice_update_data_tensor(xp, up, [4, 0], [0, 4], [-2, 1])
    gr = g.gradients(g.reduction_sum(g.multiplication(y, wp), axes=None), [xp, up])
    r = g.run({xp: x, up: u, wp: dy}, [gr[xp], gr[up]], backend=backend)
    want_x = dy.copy()
    want_x[4:0:-2] = 0
    np.testing.assert_allclose(r[gr[xp]], want_x)
    np.testing.assert_allclose(r[gr[up]], dy[4:0:-2])


@pytest.mark.parametrize("call, match", [
    (lambda g, x: g.slice_tensor(x, [0, 0], [1, 1], [1, 0]), "stride 1 is 0"),
    (lambda g, x: g.slice_tensor(x, [0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]), "4 starts for a tensor of rank 3"),
    (lambda g, x: g.slice_tensor(x, [0, 0], [1], [1, 1]), "one entry per axis"),
    (lambda g, x: g.slice_tensor(x, [0, 5], [1, 1], [1, 1], squeeze_mask=2), "squeezed at index 5"),
    (lambda g, x: g.slice_tensor(x, [0, 1], [1, 1], [1, -1], squeeze_mask=2), "positive stride"),
    (lambda g, x: g.slice_tensor(x, [0], [1], [1], start_mask=-1), "UInt32 bit mask"),
    (lambda g, x: g.slice_update_data_tensor(x, g.constant(np.zeros((2, 2), F32)), [0], [1], [1]),
     "does not match the strided slice"),
    (lambda g, x: g.slice_gradient_tensor(x, [9, 9], [0], [1], [1]), "does not match the strided slice"),
])
def test_strided_slice_errors_name_the_op(call, match):
    g = mg.Graph()
    x = g.placeholder([2, 3, 4], name="x")
    with pytest.raises(mg.ShapeError, match=match) as e:
        call(g, x)
    assert "op '" in str(e.value)


def test_shape_of_and_coordinate_along_axis(backend):
    g = mg.Graph()
    x = g.placeholder([-1, 3], name="x")
    s = g.shape_of(x)
    c = g.coordinate_along_axis(-2, [2, 3, 2])
    e = g.coordinate_along_axis(0, [0, 4])
    assert s.shape == (2,) and s.dtype == mg.int32 and c.dtype == mg.int32
    r = g.run({x: np.zeros((5, 3), F32)}, [s, c, e], backend=backend)
    np.testing.assert_array_equal(r[s], [5, 3])
    np.testing.assert_array_equal(r[c], np.indices((2, 3, 2))[1])
    assert r[e].shape == (0, 4)
    with pytest.raises(mg.ShapeError, match="coordinate_along_axis.*axis 3 is out of range"):
        g.coordinate_along_axis(3, [2, 2])


# ----------------------------------------------------------------------------- space, depth and batch
def naive_space_to_batch(x, spatial, batch, blocks, shuffle):
    """Loop over every input element: its block position ``p`` (row-major over ``spatial`` in the
    order given) goes to destination index ``d * B + p`` (pixel-shuffle order) or ``p * D + d``."""
    out_shape = list(x.shape)
    for a, b in zip(spatial, blocks):
        out_shape[a] //= b
    total = int(np.prod(blocks))
    out_shape[batch] *= total
    y = np.zeros(out_shape, x.dtype)
    for idx in itertools.product(*map(range, x.shape)):
        o = list(idx)
        p = 0
        for a, b in zip(spatial, blocks):
            o[a], r = divmod(idx[a], b)
            p = p * b + r
        o[batch] = idx[batch] * total + p if shuffle else p * x.shape[batch] + idx[batch]
        y[tuple(o)] = x[idx]
    return y


@pytest.mark.parametrize("shape, spatial, batch, blocks, shuffle", [
    ((2, 4, 6, 3), [1, 2], 0, [2, 3], False), ((2, 4, 6, 3), [1, 2], 3, [2, 2], True),
    ((3, 6, 2), [1], 0, [3], True), ((2, 4, 6, 3), [2, 1], 3, [3, 2], False),
    ((4, 2, 2, 2), [1, 2, 3], 0, [2, 1, 2], True), ((1, 6, 1), [1], 2, [6], False)])
def test_space_to_batch_and_back_match_a_naive_loop(shape, spatial, batch, blocks, shuffle, backend):
    x = np.random.default_rng(1).standard_normal(shape).astype(F32)
    want = naive_space_to_batch(x, spatial, batch, blocks, shuffle)
    y, back = run(lambda g, x: [y := g.space_to_batch(x, spatial, batch, blocks, shuffle),
                                g.batch_to_space(y, spatial, batch, blocks, shuffle)], {"x": x}, backend)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(back, x)


@needs_torch
@pytest.mark.parametrize("b", [2, 3])
def test_pixel_shuffle_order_is_torch_pixel_unshuffle_and_shuffle(b, backend):
    """NCHW: width axis 3, height 2, depth 1; use_pixel_shuffle_order=True is torch's order."""
    x = np.random.default_rng(b).standard_normal((2, 3, 2 * b, 3 * b)).astype(F32)
    d, s = run(lambda g, x: [d := g.space_to_depth_2d(x, 3, 2, 1, b, True), g.depth_to_space_2d(d, 3, 2, 1, b, True)],
               {"x": x}, backend)
    np.testing.assert_array_equal(d, F.pixel_unshuffle(torch.tensor(x), b).numpy())
    np.testing.assert_array_equal(s, x)
    y = np.random.default_rng(0).standard_normal((2, 4 * b * b, 2, 3)).astype(F32)
    (up,) = run(lambda g, y: g.depth_to_space_2d(y, 3, 2, 1, b, True), {"y": y}, backend)
    np.testing.assert_array_equal(up, F.pixel_shuffle(torch.tensor(y), b).numpy())


def test_depth_to_space_without_pixel_shuffle_is_onnx_dcr(backend):
    """ONNX DepthToSpace mode DCR's definition (NCHW), from its operator page."""
    bs = 2
    x = np.random.default_rng(4).standard_normal((2, 12, 3, 2)).astype(F32)
    b, c, h, w = x.shape
    tmp = np.reshape(x, [b, bs, bs, c // bs ** 2, h, w]).transpose(0, 3, 4, 1, 5, 2)
    want = tmp.reshape(b, c // bs ** 2, h * bs, w * bs)
    (got,) = run(lambda g, x: g.depth_to_space_2d(x, 3, 2, 1, bs, False), {"x": x}, backend)
    np.testing.assert_array_equal(got, want)


def test_space_ops_gradients_are_the_inverse_rearrangement(backend):
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 4, 6, 3)).astype(F32), rng.standard_normal((2, 2, 3, 12)).astype(F32)
    d = grads(lambda g, x: g.space_to_depth_2d(x, 2, 1, 3, 2, False), x, w, backend)
    (want,) = run(lambda g, w: g.depth_to_space_2d(w, 2, 1, 3, 2, False), {"w": w}, backend)
    np.testing.assert_allclose(d, want)


@pytest.mark.parametrize("call, match", [
    (lambda g, x: g.space_to_depth_2d(x, 2, 1, 3, 4, True), "not a multiple of its block size 4"),
    (lambda g, x: g.depth_to_space_2d(x, 2, 1, 3, 2, True), "not a multiple of the block's 4 elements"),
    (lambda g, x: g.space_to_depth_2d(x, 2, 2, 3, 2, True), "must be three different axes"),
    (lambda g, x: g.space_to_batch(x, [1, 1], 0, [2, 2], False), "repeat an axis"),
    (lambda g, x: g.space_to_batch(x, [1, 2], 1, [2, 2], False), "also a spatial axis"),
    (lambda g, x: g.space_to_batch(x, [1, 2], 0, [2], False), "give one per spatial axis"),
    (lambda g, x: g.batch_to_space(x, [1], 0, [0], False), "must be >= 1"),
    (lambda g, x: g.space_to_batch(x, [1], 0, [2], 1), "True or False"),
])
def test_space_ops_errors_name_the_op(call, match):
    g = mg.Graph()
    x = g.placeholder([2, 4, 6, 3], name="x")
    with pytest.raises(mg.MiniGraphError, match=match) as e:
        call(g, x)
    assert "op '" in str(e.value)


# ----------------------------------------------------------------------------- concat with interleave
def test_concat_interleave_is_apples_example_and_a_stack_along_the_next_axis(backend):
    (a,) = run(lambda g, x, y: g.concat([x, y], 0, interleave=True),
               {"x": np.array([1, 2, 3], F32), "y": np.array([4, 5, 6], F32)}, backend)
    np.testing.assert_array_equal(a, [1, 4, 2, 5, 3, 6])
    rng = np.random.default_rng(6)
    xs = [rng.integers(-9, 9, (2, 3, 4)).astype(np.int32) for _ in range(3)]
    for d in range(-3, 3):
        (got,) = run(lambda g, x0, x1, x2: g.concat([x0, x1, x2], d, interleave=True),
                     dict(zip(["x0", "x1", "x2"], xs)), backend)
        want = np.stack(xs, axis=d % 3 + 1).reshape([n * 3 if i == d % 3 else n for i, n in enumerate((2, 3, 4))])
        np.testing.assert_array_equal(got, want)


def test_concat_interleave_gradient_takes_every_kth_element(backend):
    rng = np.random.default_rng(8)
    x, y, w = (rng.standard_normal(s).astype(F32) for s in ((3, 2), (3, 2), (3, 4)))
    g = mg.Graph()
    xp, yp, wp = (g.placeholder(v.shape, name=n) for v, n in ((x, "x"), (y, "y"), (w, "w")))
    out = g.concat([xp, yp], 1, interleave=True)
    gr = g.gradients(g.reduction_sum(g.multiplication(out, wp), axes=None), [xp, yp])
    r = g.run({xp: x, yp: y, wp: w}, [gr[xp], gr[yp]], backend=backend)
    np.testing.assert_array_equal(r[gr[xp]], w[:, 0::2])
    np.testing.assert_array_equal(r[gr[yp]], w[:, 1::2])


def test_concat_interleave_needs_one_shape():
    g = mg.Graph()
    a, b = g.placeholder([2, 3], name="a"), g.placeholder([2, 4], name="b")
    assert g.concat([a, b], 1).shape == (2, 7)
    with pytest.raises(mg.ShapeError, match="concat op 'concat'.*interleaved tensors need one shape"):
        g.concat([a, b], 1, interleave=True)
    with pytest.raises(mg.ShapeError, match="interleave must be True or False"):
        g.concat([a, a], 1, interleave="yes")
