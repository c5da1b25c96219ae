"""Random ops: the Philox4x32-10 core against Random123's known answers and an independent scalar
transcription, the distributions statistically, bit-identity across backends, the draw counter
(fresh per run, unchanged by a failed run), seeds (op and graph level), dropout and its gradient,
the descriptor's validation, save/load and Swift export."""
from __future__ import annotations

import math

import numpy as np
import pytest

import minigraph as mg
from minigraph import philox
from minigraph.backends.numpy import KERNELS as NUMPY_KERNELS
from minigraph.backends.numpy.random import sample


def scipy_stats():
    """SciPy's distributions, the oracle of the statistical tests (skipped without it)."""
    return pytest.importorskip("scipy.stats", reason="needs scipy, in the oracles extra: pip install -e '.[oracles]'")


def scipy_special():
    return pytest.importorskip("scipy.special", reason="needs scipy, in the oracles extra: pip install -e '.[oracles]'")


RD = mg.RandomDistribution
F32 = np.float32


# ----------------------------------------------------------------------------- Philox core
# Random123 1.14 examples/kat_vectors, the "philox4x32 10" lines: counter (4 words), key (2), result (4).
KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


@pytest.mark.parametrize("ctr,key,want", KAT, ids=["zeros", "ones", "pi"])
def test_philox4x32_10_known_answers(ctr, key, want):
    got = philox.philox4x32([[c] for c in ctr], key)[:, 0]
    assert [int(x) for x in got] == list(want)


def _scalar_philox(ctr, key):
    """Philox4x32-10 from the paper, one block in Python ints (key bumped before rounds 2..10)."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & 0xFFFFFFFF, (p0 >> 32) ^ c3 ^ k1, p0 & 0xFFFFFFFF
    return c0, c1, c2, c3


def test_random_words_layout_matches_a_scalar_philox():
    """Word i is lane i % 4 of block i // 4, counter (block, 0, draw lo, draw hi), key = the seed."""
    seed, draw = 0x0123456789ABCDEF, (5 << 32) + 17
    words = philox.random_words(4 * 6 + 3, seed, draw)
    for i, w in enumerate(words):
        block = _scalar_philox((i // 4, 0, draw & 0xFFFFFFFF, draw >> 32), (seed & 0xFFFFFFFF, seed >> 32))
        assert int(w) == block[i % 4], i


def test_uniform_and_open_unit_mappings_are_exact():
    w = np.array([0, 0xFF, 0x100, 0xFFFFFFFF, 0x80000000], np.uint32)
    np.testing.assert_array_equal(philox.uniform01(w), np.array([0, 0, 2.0 ** -24, 1 - 2.0 ** -24, 0.5], F32))
    t = philox.open_unit(w)
    assert t.min() > -1 and t.max() < 1
    np.testing.assert_array_equal(t[[0, 3]], np.array([-1 + 2.0 ** -23, 1 - 2.0 ** -23], F32))


def test_float32_math_helpers_are_accurate():
    u = np.random.default_rng(0).random(200_000).astype(F32)
    np.testing.assert_allclose(philox.cos_2pi_f32(u), np.cos(2 * np.pi * u.astype(np.float64)), atol=2e-7)
    x = np.concatenate([u + F32(1e-6), F32(1) - np.arange(1, 500, dtype=F32) * F32(2 ** -24)])
    ref = np.log(x.astype(np.float64))
    assert np.all(np.abs(philox.log_f32(x) - ref) <= np.spacing(np.abs(ref).astype(F32)))
    t = np.linspace(-0.999, 0.999, 2001).astype(F32)
    np.testing.assert_allclose(philox.erfinv_f32(t), scipy_special().erfinv(t.astype(np.float64)), rtol=2e-6, atol=1e-6)


# ----------------------------------------------------------------------------- distributions
def _draw(d, n=200_000, seed=42, draw=0):
    return sample(_valid(d), n, seed, draw)


def _valid(d):
    d = d.copy()
    d.validate()
    return d


def test_uniform_float_statistics():
    x = _draw(mg.RandomOpDescriptor(RD.UNIFORM, mg.float32)).astype(np.float64)
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.003 and abs(x.var() - 1 / 12) < 0.002
    assert scipy_stats().kstest(x, "uniform").pvalue > 1e-3
    y = _draw(mg.RandomOpDescriptor(RD.UNIFORM, mg.float32, min=-3.0, max=5.0), seed=7).astype(np.float64)
    assert y.min() >= -3 and y.max() < 5
    assert scipy_stats().kstest(y, "uniform", args=(-3, 8)).pvalue > 1e-3


def test_uniform_top_never_reaches_max_even_after_rounding():
    d = _valid(mg.RandomOpDescriptor(RD.UNIFORM, mg.float16, min=0.0, max=1.0))
    x = sample(d, 100_000, 3, 0)
    assert x.dtype == np.float16 and x.max() < 1.0


def test_uniform_int32_is_in_the_closed_range_and_even():
    x = _draw(mg.RandomOpDescriptor(RD.UNIFORM, mg.int32, min_integer=-3, max_integer=4))
    assert x.dtype == np.int32 and x.min() == -3 and x.max() == 4
    counts = np.bincount(x + 3)
    assert scipy_stats().chisquare(counts).pvalue > 1e-3
    full = _draw(mg.RandomOpDescriptor(RD.UNIFORM, mg.int32, min_integer=-2 ** 31, max_integer=2 ** 31 - 1))
    assert full.min() < -2 ** 30 and full.max() > 2 ** 30
    one = _draw(mg.RandomOpDescriptor(RD.UNIFORM, mg.int32, min_integer=5, max_integer=5), n=10)
    np.testing.assert_array_equal(one, np.full(10, 5, np.int32))


@pytest.mark.parametrize("method", list(mg.RandomNormalSamplingMethod))
def test_normal_statistics(method):
    d = mg.RandomOpDescriptor(RD.NORMAL, mg.float32, mean=1.5, standard_deviation=2.0, sampling_method=method)
    x = _draw(d).astype(np.float64)
    assert abs(x.mean() - 1.5) < 0.02 and abs(x.std() - 2.0) < 0.02
    assert scipy_stats().kstest(x, "norm", args=(1.5, 2.0)).pvalue > 1e-3
    assert abs(scipy_stats().skew(x)) < 0.03 and abs(scipy_stats().kurtosis(x)) < 0.06


def test_truncated_normal_defaults_to_two_standard_deviations():
    """MPSGraph's TRUNCATED_NORMAL defaults min/max to -2/2; TF's truncated_normal also cuts at 2 sigma."""
    d = mg.RandomOpDescriptor(RD.TRUNCATED_NORMAL, mg.float32)
    assert (d.min, d.max) == (-2.0, 2.0)
    x = _draw(d).astype(np.float64)
    assert x.min() >= -2 and x.max() < 2
    assert scipy_stats().kstest(x, "truncnorm", args=(-2, 2)).pvalue > 1e-3
    assert abs(x.std() - scipy_stats().truncnorm.std(-2, 2)) < 0.01


@pytest.mark.parametrize("lo,hi", [(-2.0, 2.0), (0.5, 1.0), (-4.0, -2.5)])
def test_truncated_normal_by_box_muller_rejection(lo, hi):
    """MPSGraph: BOX_MULLER "for bounded distributions ... is a rejection sampling method"."""
    d = mg.RandomOpDescriptor(RD.TRUNCATED_NORMAL, mg.float32, min=lo, max=hi,
                              sampling_method=mg.RandomNormalSamplingMethod.BOX_MULLER)
    x = _draw(d, n=100_000, seed=5).astype(np.float64)
    assert x.min() >= lo and x.max() < hi
    assert scipy_stats().kstest(x, "truncnorm", args=(lo, hi)).pvalue > 1e-3


def test_truncated_normal_with_mean_and_bounds():
    d = mg.RandomOpDescriptor(RD.TRUNCATED_NORMAL, mg.float32, min=0.0, max=3.0, mean=1.0, standard_deviation=0.5)
    x = _draw(d, seed=9).astype(np.float64)
    assert x.min() >= 0 and x.max() < 3
    assert scipy_stats().kstest(x, "truncnorm", args=((0 - 1) / 0.5, (3 - 1) / 0.5, 1.0, 0.5)).pvalue > 1e-3


def test_random_uniform_tensor_equals_default_uniform_random_tensor(backend):
    g = mg.Graph()
    a = g.random_uniform_tensor([3, 7], seed=11)
    b = g.random_tensor([3, 7], mg.RandomOpDescriptor(RD.UNIFORM, mg.float32), seed=11)
    r = g.run({}, [a, b], backend=backend)
    np.testing.assert_array_equal(r[a], r[b])
    want = philox.uniform01(philox.random_words(21, 11, 0)).reshape(3, 7)
    np.testing.assert_array_equal(r[a], want)


# ----------------------------------------------------------------------------- across backends
def _both(build):
    out = []
    for be in ("numpy", "webgpu"):
        g = mg.Graph()
        targets, feeds = build(g)
        exe = g.compile({t: mg.ShapedType(v.shape, v.dtype) for t, v in feeds.items()}, targets, backend=be)
        out.append([exe.run(feeds) for _ in range(3)])
    return out


def test_uniform_bits_and_dropout_masks_identical_on_both_backends(webgpu):
    def build(g):
        x = g.placeholder([50, 41], name="x")
        return [g.random_uniform_tensor([1000], seed=5),
                g.random_tensor([999], mg.RandomOpDescriptor(RD.UNIFORM, mg.int32, min_integer=-7, max_integer=70),
                                seed=6),
                g.dropout(x, 0.3, seed=7)], {x: np.ones((50, 41), F32)}
    a, b = _both(build)
    for run_a, run_b in zip(a, b):
        for u, v in zip(run_a, run_b):
            np.testing.assert_array_equal(u, v)


def test_normal_draws_agree_to_a_few_ulp_on_both_backends(webgpu):
    descs = [mg.RandomOpDescriptor(RD.NORMAL, mg.float32, mean=0.5, standard_deviation=3.0),
             mg.RandomOpDescriptor(RD.NORMAL, mg.float32, sampling_method=mg.RandomNormalSamplingMethod.BOX_MULLER),
             mg.RandomOpDescriptor(RD.TRUNCATED_NORMAL, mg.float32),
             mg.RandomOpDescriptor(RD.TRUNCATED_NORMAL, mg.float32, min=-1.0, max=0.25,
                                   sampling_method=mg.RandomNormalSamplingMethod.BOX_MULLER)]

    def build(g):
        return [g.random_tensor([4099], d, seed=i) for i, d in enumerate(descs)], {}
    a, b = _both(build)
    for run_a, run_b in zip(a, b):
        for d, u, v in zip(descs, run_a, run_b):
            scale = np.spacing(np.maximum(np.abs(u), F32(d.standard_deviation)).astype(F32))
            assert np.all(np.abs(u - v) <= 8 * scale), np.abs(u - v).max()
            assert np.mean(u == v) > 0.5  # most are bit-identical


def test_distributions_drawn_on_the_backend_pass_ks(backend):
    g = mg.Graph()
    u = g.random_uniform_tensor([50_000], seed=31)
    n = g.random_tensor([50_000], mg.RandomOpDescriptor(RD.NORMAL, mg.float32, mean=-1.0, standard_deviation=0.5),
                        seed=32)
    t = g.random_tensor([50_000], mg.RandomOpDescriptor(RD.TRUNCATED_NORMAL, mg.float32), seed=33)
    exe = g.compile({}, [u, n, t], backend=backend)
    for _ in range(2):
        ru, rn, rt = (a.astype(np.float64) for a in exe.run())
        assert scipy_stats().kstest(ru, "uniform").pvalue > 1e-3
        assert scipy_stats().kstest(rn, "norm", args=(-1.0, 0.5)).pvalue > 1e-3
        assert scipy_stats().kstest(rt, "truncnorm", args=(-2, 2)).pvalue > 1e-3
        assert abs(np.corrcoef(ru, rn)[0, 1]) < 0.02  # distinct seeds, independent streams


# ----------------------------------------------------------------------------- draws and seeds
def test_every_run_draws_afresh_and_a_new_executable_continues_the_stream(backend):
    g = mg.Graph()
    r = g.random_uniform_tensor([64], seed=1)
    exe = g.compile({}, [r], backend=backend)
    first, second = exe.run()[0], exe.run()[0]
    assert not np.array_equal(first, second)
    assert exe.random_draws == g.random_draws == 2
    np.testing.assert_array_equal(first, philox.uniform01(philox.random_words(64, 1, 0)))
    np.testing.assert_array_equal(second, philox.uniform01(philox.random_words(64, 1, 1)))
    again = g.compile({}, [r], backend=backend)  # the counter is the graph's: draw 2, not 0 again
    assert again.random_draws == 2
    np.testing.assert_array_equal(again.run()[0], philox.uniform01(philox.random_words(64, 1, 2)))
    assert exe.random_draws == g.random_draws == 3
    np.testing.assert_array_equal(exe.run()[0], philox.uniform01(philox.random_words(64, 1, 3)))


def test_g_run_draws_afresh_through_its_cached_executable():
    g = mg.Graph()
    r = g.random_uniform_tensor([16], seed=3)
    assert not np.array_equal(g.run({}, [r])[r], g.run({}, [r])[r])


def test_g_run_continues_the_stream_after_its_executable_left_the_cache():
    g = mg.Graph(cache_size=1)
    r = g.random_uniform_tensor([16], seed=3)
    other = g.random_uniform_tensor([16], seed=4)
    seen = [g.run({}, [r])[r], g.run({}, [r])[r]]
    g.run({}, [other])  # evicts r's executable (the cache holds one)
    assert g.cache_info().currsize == 1
    seen.append(g.run({}, [r])[r])  # compiled again: draw 3 of the graph, not draw 0 again
    assert "evicted" in g.last_compile_reason
    assert not any(np.array_equal(a, b) for i, a in enumerate(seen) for b in seen[i + 1:])
    for n, value in enumerate(seen):
        draw = n if n < 2 else 3
        np.testing.assert_array_equal(value, philox.uniform01(philox.random_words(16, 3, draw)))
    assert g.random_draws == 4
    g.cache_clear()
    assert not np.array_equal(g.run({}, [r])[r], seen[0])  # a cleared cache does not restart it either
    g.random_draws = 0  # a replay is asked for explicitly
    np.testing.assert_array_equal(g.run({}, [r])[r], seen[0])
    for bad in (-1, 1.5, True, 1 << 64):
        with pytest.raises(mg.TargetError, match=r"random_draws must be an int in \[0, 2\*\*64\)"):
            g.random_draws = bad
    assert g.random_draws == 1


def test_executables_of_one_graph_running_in_threads_draw_each_number_once():
    import threading
    g = mg.Graph()
    r = g.random_uniform_tensor([8], seed=5)
    exes = [g.compile({}, [r]), g.compile({}, [r])]
    got, lock = [], threading.Lock()

    def work(exe):
        for _ in range(10):
            value = exe.run()[0]
            with lock:
                got.append(value)
    threads = [threading.Thread(target=work, args=(exes[i % 2],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    draws = {philox.uniform01(philox.random_words(8, 5, d)).tobytes(): d for d in range(40)}
    assert sorted(draws[v.tobytes()] for v in got) == list(range(40))  # no draw twice, none skipped
    assert g.random_draws == exes[0].random_draws == exes[1].random_draws == 40


def test_a_failed_run_does_not_advance_the_counter(replace_kernel):
    g = mg.Graph()
    x = g.placeholder([8], name="x")
    r = g.random_uniform_tensor([8], seed=2)
    y = g.addition(x, r)
    exe = g.compile({x: mg.ShapedType([8], mg.float32)}, [y])
    zeros = np.zeros(8, F32)
    first = exe.run({x: zeros})[0]

    def broken(step):
        def run(a, b):
            raise RuntimeError("device lost")
        return run
    replace_kernel(NUMPY_KERNELS, "addition", broken)
    failing = g.compile({x: mg.ShapedType([8], mg.float32)}, [y])
    with pytest.raises(mg.ExecutionError):
        failing.run({x: zeros})
    assert failing.random_draws == exe.random_draws == g.random_draws == 1  # exe's run, not the failed one
    with pytest.raises(mg.FeedError):
        exe.run({x: np.zeros(3, F32)})
    assert exe.random_draws == 1
    np.testing.assert_array_equal(first, philox.uniform01(philox.random_words(8, 2, 0)))


def test_graph_seed_makes_programs_reproducible():
    def program(seed):
        g = mg.Graph()
        if seed is not None:
            g.random_seed = seed
        a = g.random_uniform_tensor([20])
        b = g.random_tensor([20], mg.RandomOpDescriptor(RD.NORMAL, mg.float32))
        c = g.dropout(g.constant(np.ones(20, F32)), 0.5)
        exe = g.compile({}, [a, b, c])
        return [np.concatenate(exe.run()) for _ in range(2)]
    p1, p2, p3 = program(1234), program(1234), program(99)
    for u, v in zip(p1, p2):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(p1[0], p3[0])
    assert not np.array_equal(p1[0], p1[1])  # still a fresh draw per run
    n1, n2 = program(None), program(None)
    assert not np.array_equal(n1[0], n2[0])  # no seed anywhere: each graph draws its own


def test_graph_seed_spellings_agree():
    a, b = mg.Graph(seed=77), mg.Graph()
    b.random_seed = 77
    assert a.random_seed == 77
    ra, rb = a.random_uniform_tensor([6]), b.random_uniform_tensor([6])
    np.testing.assert_array_equal(a.run({}, [ra])[ra], b.run({}, [rb])[rb])


def test_ops_of_a_seeded_graph_get_distinct_seeds_and_explicit_seeds_win():
    g = mg.Graph()
    g.random_seed = 0
    a, b = g.random_uniform_tensor([4]), g.random_uniform_tensor([4])
    c, d = g.random_uniform_tensor([4], seed=17), g.random_uniform_tensor([4], seed=17)
    assert a.operation.attrs["seed"] != b.operation.attrs["seed"]
    assert c.operation.attrs["seed"] == d.operation.attrs["seed"] == 17
    r = g.run({}, [a, b, c, d])
    assert not np.array_equal(r[a], r[b])
    np.testing.assert_array_equal(r[c], r[d])


@pytest.mark.parametrize("bad", [1.5, "x", 2 ** 64, -(2 ** 63) - 1, True])
def test_bad_seeds_are_refused(bad):
    g = mg.Graph()
    with pytest.raises(mg.DescriptorError, match="seed"):
        g.random_uniform_tensor([2], seed=bad)
    g.random_seed = bad
    with pytest.raises(mg.DescriptorError, match="random_seed"):
        g.dropout(g.constant(np.ones(2, F32)), 0.5)


def test_negative_seed_is_its_64_bit_pattern():
    g = mg.Graph()
    a, b = g.random_uniform_tensor([5], seed=-1), g.random_uniform_tensor([5], seed=2 ** 64 - 1)
    r = g.run({}, [a, b])
    np.testing.assert_array_equal(r[a], r[b])


def test_shapes_must_be_static_and_empty_is_fine(backend):
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match="static"):
        g.random_uniform_tensor([-1, 3], seed=1)
    with pytest.raises(mg.ShapeError, match="shape must be a list of ints, got the tensor"):
        g.random_uniform_tensor(g.constant(np.array([2, 3], np.int32), name="dims"), seed=1)
    assert g.random_uniform_tensor((4,), seed=1).shape == (4,)
    e = g.random_tensor([0, 3], mg.RandomOpDescriptor(RD.NORMAL, mg.float32), seed=1)
    assert g.run({}, [e], backend=backend)[e].shape == (0, 3)


# ----------------------------------------------------------------------------- dropout
def test_dropout_keeps_with_probability_one_minus_rate_and_scales(backend):
    g = mg.Graph()
    x = g.placeholder([200, 100], name="x")
    y = g.dropout(x, 0.3, seed=4)
    xs = np.random.default_rng(0).uniform(1, 2, (200, 100)).astype(F32)
    out = g.run({x: xs}, [y], backend=backend)[y]
    kept = out != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_array_equal(out[kept], xs[kept] * F32(1 / 0.7))
    want = (philox.random_words(xs.size, 4, 0) >> np.uint32(8)).reshape(xs.shape) >= math.ceil(0.3 * 2 ** 24)
    np.testing.assert_array_equal(kept, want)


def test_dropout_rate_zero_is_identity_and_rate_one_is_zeros(backend):
    g = mg.Graph()
    xs = np.array([1.5, -2.0, np.nan, np.inf, -0.0], F32)
    x = g.placeholder([5], name="x")
    keep, drop = g.dropout(x, 0.0), g.dropout(x, 1.0)
    r = g.run({x: xs}, [keep, drop], backend=backend)
    np.testing.assert_array_equal(r[keep], xs)
    np.testing.assert_array_equal(r[drop], np.zeros(5, F32))
    assert not np.signbit(r[drop]).any()


@pytest.mark.parametrize("rate", [-0.1, 1.01, float("nan"), float("inf"), "half", None])
def test_dropout_rate_is_validated(rate):
    g = mg.Graph()
    with pytest.raises(mg.DescriptorError, match=r"dropout op 'd'.*rate"):
        g.dropout(g.constant(np.ones(3, F32)), rate, name="d")


def test_dropout_needs_a_float_tensor():
    g = mg.Graph()
    with pytest.raises(mg.DTypeError, match="float"):
        g.dropout(g.constant(np.ones(3, np.int32)), 0.5)


@pytest.mark.parametrize("rate", [0.25, 0.5, 1.0])
def test_dropout_gradient_uses_the_same_mask(backend, rate):
    g = mg.Graph()
    x = g.placeholder([30, 7], name="x")
    w = g.placeholder([30, 7], name="w")
    y = g.dropout(x, rate, seed=21)
    loss = g.reduction_sum(g.multiplication(y, w), axes=None)
    dx = g.gradients(loss, [x])[x]
    rng = np.random.default_rng(1)
    xs, ws = rng.uniform(1, 2, (30, 7)).astype(F32), rng.uniform(-1, 1, (30, 7)).astype(F32)
    exe = g.compile({x: mg.ShapedType([30, 7]), w: mg.ShapedType([30, 7])}, [y, dx], backend=backend)
    masks = []
    for _ in range(3):  # each run a new mask, the gradient always the forward's
        out, grad = exe.run({x: xs, w: ws})
        kept = out != 0
        masks.append(kept)
        scale = F32(1 / (1 - rate)) if rate < 1 else F32(0)
        np.testing.assert_array_equal(grad, np.where(kept, ws * scale, F32(0)))
    if rate < 1:
        assert not np.array_equal(masks[0], masks[1]) and not np.array_equal(masks[1], masks[2])


def test_dropout_gradient_matches_finite_differences():
    """float64, rate 0.5: every evaluation replays draw 0 (g.random_draws = 0), so draws one mask."""
    g = mg.Graph()
    x = g.placeholder([3, 4], mg.float64, name="x")
    r = g.placeholder([3, 4], mg.float64, name="r")
    loss = g.reduction_sum(g.multiplication(g.square(g.dropout(x, 0.5, seed=8)), r), axes=None)
    dx = g.gradients(loss, [x])[x]
    rng = np.random.default_rng(2)
    xs, rs = rng.uniform(-2, 2, (3, 4)), rng.uniform(0.5, 1.5, (3, 4))
    types = {x: mg.ShapedType([3, 4], mg.float64), r: mg.ShapedType([3, 4], mg.float64)}
    got = g.compile(types, [dx]).run({x: xs, r: rs})[0]
    fd = np.zeros_like(xs)
    eps = 1e-6
    for idx in np.ndindex(*xs.shape):
        for sgn in (1, -1):
            p = xs.copy()
            p[idx] += sgn * eps
            g.random_draws = 0
            fd[idx] += sgn * g.compile(types, [loss]).run({x: p, r: rs})[0].item() / (2 * eps)
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)
    assert 0 < np.count_nonzero(got) < got.size


# ----------------------------------------------------------------------------- descriptor
def test_descriptor_defaults_follow_mpsgraph():
    u = mg.RandomOpDescriptor(RD.UNIFORM, mg.float32)
    assert (u.min, u.max, u.mean, u.standard_deviation) == (0.0, 1.0, 0.0, 1.0)
    n = mg.RandomOpDescriptor(RD.NORMAL, mg.float32)
    assert (n.min, n.max) == (-2.0, 2.0)
    assert n.sampling_method == mg.RandomNormalSamplingMethod.INV_CDF
    assert mg.RandomOpDescriptor(RD.UNIFORM, mg.float32, min=-1.0, max=3.0).non_defaults() == {
        "distribution": RD.UNIFORM, "dtype": mg.float32, "min": -1.0, "max": 3.0}


@pytest.mark.parametrize("kw,match", [
    (dict(distribution=RD.NORMAL, dtype=mg.int32), "int32 is not valid for NORMAL"),
    (dict(distribution=RD.UNIFORM, dtype=mg.float64), "float64 is not valid"),
    (dict(distribution=RD.UNIFORM, dtype="nope"), "not a data type"),
    (dict(distribution=7, dtype=mg.float32), "distribution=7"),
    (dict(distribution=RD.UNIFORM, dtype=mg.float32, min=1.0, max=1.0), "min=1.0 must be below max=1.0"),
    (dict(distribution=RD.UNIFORM, dtype=mg.float32, max=float("inf")), "max=inf must be finite"),
    (dict(distribution=RD.NORMAL, dtype=mg.float32, standard_deviation=0.0), "standard_deviation=0.0 must be > 0"),
    (dict(distribution=RD.UNIFORM, dtype=mg.int32, min_integer=3, max_integer=2), "min_integer=3 > max_integer=2"),
    (dict(distribution=RD.UNIFORM, dtype=mg.int32, max_integer=2 ** 31), "max_integer"),
    (dict(distribution=RD.TRUNCATED_NORMAL, dtype=mg.float32, min=10.0, max=11.0), "5 standard deviations"),
])
def test_bad_descriptors_are_refused_naming_the_op(kw, match):
    g = mg.Graph()
    with pytest.raises(mg.DescriptorError, match=match) as e:
        g.random_tensor([2], mg.RandomOpDescriptor(**kw), seed=1, name="r")
    assert "random_tensor op 'r'" in str(e.value)


def test_descriptor_is_copied_when_the_op_is_built():
    g = mg.Graph()
    d = mg.RandomOpDescriptor(RD.UNIFORM, mg.float32, min=5.0, max=6.0)
    r = g.random_tensor([100], d, seed=1)
    d.min, d.max = -100.0, -99.0
    out = g.run({}, [r])[r]
    assert out.min() >= 5 and out.max() < 6
    with pytest.raises(mg.DescriptorError, match="RandomOpDescriptor"):
        g.random_tensor([2], mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2))


# ----------------------------------------------------------------------------- tools
def test_save_and_load_keep_seeds_descriptors_and_draws(tmp_path):
    g = mg.Graph()
    d = mg.RandomOpDescriptor(RD.TRUNCATED_NORMAL, mg.float16, mean=0.25, standard_deviation=0.5, min=-0.5, max=1.0)
    r = g.random_tensor([3, 4], d, name="r")
    u = g.random_uniform_tensor([5], name="u")
    y = g.dropout(g.constant(np.ones(6, F32)), 0.4, name="y")
    h = mg.load(g.save(tmp_path / "rand.json"))
    assert h.tensor("r").operation.attrs["descriptor"] == r.operation.attrs["descriptor"]
    ra = g.compile({}, [r, u, y]).run()
    rb = h.compile({}, [h.tensor("r"), h.tensor("u"), h.tensor("y")]).run()
    for a, b in zip(ra, rb):
        np.testing.assert_array_equal(a, b)


def test_swift_export_builds_the_descriptor_with_its_initialiser():
    g = mg.Graph()
    d = mg.RandomOpDescriptor(RD.NORMAL, mg.float32, mean=2.0,
                              sampling_method=mg.RandomNormalSamplingMethod.BOX_MULLER)
    g.random_tensor([2, 3], d, seed=2 ** 64 - 2, name="r")
    g.random_uniform_tensor([4], seed=5, name="u")
    g.dropout(g.placeholder([3], name="x"), 0.25, name="d")
    swift = g.to_swift()
    assert "MPSGraphRandomOpDescriptor(distribution: .normal, dataType: .float32)!" in swift
    assert "r_descriptor.mean = 2.0" in swift and "r_descriptor.samplingMethod = .boxMuller" in swift
    assert "graph.randomTensor(withShape: [2, 3], descriptor: r_descriptor, seed: -2, name: \"r\")" in swift
    assert "graph.randomUniformTensor(withShape: [4], seed: 5, name: \"u\")" in swift
    assert "graph.dropout(x, rate: 0.25, name: \"d\")" in swift


# ----------------------------------------------------------------------------- state tensors
SM = mg.RandomNormalSamplingMethod
STATE_DESCRIPTORS = {
    "uniform": mg.RandomOpDescriptor(RD.UNIFORM, mg.float32, min=-1.0, max=3.0),
    "int32": mg.RandomOpDescriptor(RD.UNIFORM, mg.int32, min_integer=-7, max_integer=100),
    "normal-inv-cdf": mg.RandomOpDescriptor(RD.NORMAL, mg.float32, mean=1.0, standard_deviation=2.0),
    "normal-box-muller": mg.RandomOpDescriptor(RD.NORMAL, mg.float32, sampling_method=SM.BOX_MULLER),
    "truncated-box-muller": mg.RandomOpDescriptor(RD.TRUNCATED_NORMAL, mg.float32, min=-0.5, max=1.5,
                                                  sampling_method=SM.BOX_MULLER),
    "float16": mg.RandomOpDescriptor(RD.UNIFORM, mg.float16),
}


def _words(t):
    return [int(x) & 0xFFFFFFFF for x in np.asarray(t)]


def test_philox_state_layout_seed_counter_and_key(backend):
    """int32 [7]: 1, the 128-bit counter (low word first), the 64-bit key (low word first)."""
    g = mg.Graph()
    a = g.random_philox_state_tensor(seed=0x1122334455667788)
    b = g.random_philox_state_tensor(counter_low=0x0000000200000001, counter_high=0x0000000400000003, key=-2)
    c = g.random_philox_state_tensor()
    assert (a.shape, a.dtype) == ((7,), mg.int32)
    r = g.run({}, [a, b, c], backend=backend)
    assert _words(r[a]) == [1, 0, 0, 0, 0, 0x55667788, 0x11223344]
    assert _words(r[b]) == [1, 1, 2, 3, 4, 0xFFFFFFFE, 0xFFFFFFFF]
    assert _words(r[c]) == [1, 0, 0, 0, 0, 0, 0]


@pytest.mark.parametrize("kind", list(STATE_DESCRIPTORS))
def test_a_seed_state_draws_what_the_seeded_op_draws_on_its_first_run(backend, kind):
    """Counter 0 and key = seed: the first draw from randomPhiloxStateTensor(withSeed:) is the seeded
    op's first run; counter_high = n gives its run n (the seeded counter is (block, attempt, draw))."""
    d = STATE_DESCRIPTORS[kind]
    g = mg.Graph()
    seeded = g.random_tensor([5, 7], d, seed=99)
    v0, _ = g.random_tensor_with_state([5, 7], d, g.random_philox_state_tensor(seed=99))
    v2, _ = g.random_tensor_with_state([5, 7], d, g.random_philox_state_tensor(counter_high=2, key=99))
    exe = g.compile({}, [seeded, v0, v2], backend=backend)
    runs = [exe.run() for _ in range(3)]
    for s, a, b in runs:  # the state forms are the same on every run
        np.testing.assert_array_equal(a, runs[0][1])
        np.testing.assert_array_equal(b, runs[0][2])
    np.testing.assert_array_equal(runs[0][1], runs[0][0])
    np.testing.assert_array_equal(runs[0][2], runs[2][0])
    want = sample(d, 35, 99).reshape(5, 7)
    if backend == "numpy" or kind in ("uniform", "int32", "float16"):
        np.testing.assert_array_equal(runs[0][1], want)
    else:  # normal draws: a few ulp off the NumPy kernel (the driver's sqrt, fused multiply-adds)
        np.testing.assert_allclose(runs[0][1], want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind,per_value", [("uniform", 1), ("int32", 1), ("normal-inv-cdf", 1),
                                            ("normal-box-muller", 2), ("truncated-box-muller", 2)])
def test_the_returned_state_is_advanced_past_the_blocks_used(backend, kind, per_value):
    """A chain of state ops reads consecutive Philox blocks: for a uniform, two draws of 6 then 10
    values (two and three blocks) are words 0-5 and 8-17 of one long stream."""
    d = STATE_DESCRIPTORS[kind]
    g = mg.Graph()
    s0 = g.random_philox_state_tensor(counter_low=5, key=7)
    a, s1 = g.random_tensor_with_state([6], d, s0)
    b, s2 = g.random_tensor_with_state([2, 5], d, s1)
    r = g.run({}, [a, b, s1, s2], backend=backend)
    blocks_a, blocks_b = -(-6 * per_value // 4), -(-10 * per_value // 4)
    assert _words(r[s1]) == [1, 5 + blocks_a, 0, 0, 0, 7, 0]
    assert _words(r[s2]) == [1, 5 + blocks_a + blocks_b, 0, 0, 0, 7, 0]
    exact = backend == "numpy" or kind in ("uniform", "int32", "float16")
    check = np.testing.assert_array_equal if exact else \
        (lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6))
    check(r[a], sample(d, 6, 7, counter=5))
    check(r[b], sample(d, 10, 7, counter=5 + blocks_a).reshape(2, 5))
    if kind == "uniform":
        words = philox.random_words(4 * (blocks_a + blocks_b), 7, counter=5)
        np.testing.assert_array_equal(r[a], F32(-1) + philox.uniform01(words[:6]) * F32(4))
        np.testing.assert_array_equal(r[b].ravel(), F32(-1) + philox.uniform01(words[8:18]) * F32(4))


def test_the_counter_carries_across_words_and_wraps_at_2_128(backend):
    g = mg.Graph()
    top = (1 << 64) - 1
    near = g.random_philox_state_tensor(counter_low=top - 1, counter_high=5, key=3)
    end = g.random_philox_state_tensor(counter_low=top, counter_high=top, key=3)
    u1, n1 = g.random_uniform_tensor_with_state([16], near)  # 4 blocks: counters 2^64-2 .. 2^64+1
    u2, n2 = g.random_uniform_tensor_with_state([8], end)  # 2 blocks: 2^128-1, then 0
    r = g.run({}, [u1, n1, u2, n2], backend=backend)
    assert _words(r[n1]) == [1, 2, 0, 6, 0, 3, 0]
    assert _words(r[n2]) == [1, 1, 0, 0, 0, 3, 0]
    blocks = [[0xFFFFFFFE, 0xFFFFFFFF, 5, 0], [0xFFFFFFFF, 0xFFFFFFFF, 5, 0], [0, 0, 6, 0], [1, 0, 6, 0]]
    want = np.concatenate([[_scalar_philox(c, (3, 0))[k] for k in range(4)] for c in blocks]).astype(np.uint32)
    np.testing.assert_array_equal(r[u1], philox.uniform01(want))
    wrap = [_scalar_philox(c, (3, 0)) for c in ([0xFFFFFFFF] * 4, [0, 0, 0, 0])]
    np.testing.assert_array_equal(r[u2], philox.uniform01(np.array(wrap, np.uint32).ravel()))


def test_a_fed_state_continues_the_stream_across_runs(backend):
    """Apple's pattern: the returned state as a target, fed back through a placeholder next run."""
    g = mg.Graph()
    s = g.placeholder([7], mg.int32, name="state")
    u, s_next = g.random_uniform_tensor_with_state([3, 4], s)
    first = g.random_philox_state_tensor(seed=42)
    state = g.run({}, [first], backend=backend)[first]
    got = []
    exe = g.compile({s: mg.ShapedType([7], mg.int32)}, [u, s_next], backend=backend)
    for _ in range(3):
        vals, state = exe.run({s: state})
        got.append(vals.ravel())
    want = philox.uniform01(philox.random_words(36, 42, counter=0))
    np.testing.assert_array_equal(np.concatenate(got), want)  # three runs, one stream
    h = mg.Graph()  # a fresh graph: its seeded op's first run
    seeded = h.random_uniform_tensor([12], seed=42)
    np.testing.assert_array_equal(got[0], h.run({}, [seeded], backend=backend)[seeded].ravel())


def test_state_ops_agree_bit_for_bit_on_both_backends(webgpu):
    def build(g):
        s = g.random_philox_state_tensor(counter_low=2 ** 64 - 3, counter_high=9, key=-12345)
        outs = []
        for d in STATE_DESCRIPTORS.values():
            v, s = g.random_tensor_with_state([33], d, s)
            outs.append(v)
        return outs + [s], {}
    (a, b) = _both(build)
    for x, y in zip(a[0], b[0]):
        if x.dtype == np.float32 and not np.array_equal(x, y):  # normal draws: a few ulp (sqrt, fma)
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(x, y)


def test_state_errors_name_the_op():
    g = mg.Graph()
    with pytest.raises(mg.DTypeError, match="random_uniform_tensor_with_state op 'u'.*int32.*float32"):
        g.random_uniform_tensor_with_state([2], g.placeholder([7]), name="u")
    with pytest.raises(mg.ShapeError, match=r"random_tensor_with_state op 'r'.*shape \[7\].*\[6\]"):
        g.random_tensor_with_state([2], STATE_DESCRIPTORS["uniform"], g.placeholder([6], mg.int32), name="r")
    with pytest.raises(mg.ShapeError, match="random_uniform_tensor_with_state op 'u'.*static"):
        g.random_uniform_tensor_with_state([-1], g.random_philox_state_tensor(), name="u")
    with pytest.raises(mg.DescriptorError, match="random_tensor_with_state op 'r'.*RandomOpDescriptor"):
        g.random_tensor_with_state([2], None, g.random_philox_state_tensor(), name="r")
    with pytest.raises(mg.DescriptorError, match="random_philox_state_tensor op 's'.*not both"):
        g.random_philox_state_tensor(key=3, seed=4, name="s")
    with pytest.raises(mg.DescriptorError, match="random_philox_state_tensor op 's'.*counter_high.*64 bits"):
        g.random_philox_state_tensor(counter_high=2 ** 64, name="s")


def test_state_ops_save_load_and_swift_export(tmp_path):
    g = mg.Graph()
    s = g.random_philox_state_tensor(counter_low=2 ** 64 - 3, key=5, name="st")
    u, s1 = g.random_uniform_tensor_with_state([2, 3], s, name="u")
    n, s2 = g.random_tensor_with_state([4], STATE_DESCRIPTORS["normal-box-muller"], s1, name="n")
    h = mg.load(g.save(tmp_path / "state.json"))
    ra = g.compile({}, [u, n, s2]).run()
    rb = h.compile({}, [h.tensor("u"), h.tensor("n"), h.operation("n").outputs[1]]).run()
    for a, b in zip(ra, rb):
        np.testing.assert_array_equal(a, b)
    swift = g.to_swift()
    assert 'graph.randomPhiloxStateTensor(withCounterLow: -3, counterHigh: 0, key: 5, name: "st")' in swift
    assert 'graph.randomUniformTensor(withShape: [2, 3], stateTensor: st, name: "u")' in swift
    assert 'graph.randomTensor(withShape: [4], descriptor: n_descriptor, stateTensor: u[1], name: "n")' in swift
