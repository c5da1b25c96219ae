"""The webgpu backend's fused elementwise kernel (minigraph/backends/webgpu/fused.py).

A fused step computes a chain or tree of elementwise ops in one kernel and one pass over
memory. Here the fused steps are built by hand from a plan's elementwise steps (whatever the
compiler would fuse), run on the webgpu backend, and compared with the same plan unfused on the
webgpu backend and with the numpy backend: float32 within a few ulp (the shader compiler may
contract ``a * b + c`` to a fused multiply-add), float16, integer and bool results exactly equal
to the unfused plan's.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import minigraph as mg
from minigraph.backends.webgpu.elementwise import EXPRESSIONS
from minigraph.backends.webgpu.elementwise import UNARY as WGSL_UNARY
from minigraph.backends.webgpu.fused import fused_source
from minigraph.backends.webgpu.program import FUSIBLE_OPS
from minigraph.compiler.plan import Step, build_plan
from minigraph.errors import KernelMissingError

SOURCES = {"placeholder", "constant"}
EPS32 = float(np.finfo(np.float32).eps)


def _types(feeds):
    return {t: mg.ShapedType(v.shape, v.dtype) for t, v in feeds.items()}


def _plan(g, feeds, target):
    plan = build_plan(g, _types(feeds), [target], [])
    assert not any(getattr(s, "program", ()) for s in plan.steps)  # the unfused plan
    return plan


def _fused_plan(plan):
    """The plan with every step but its sources merged into one fused step, as the compiler
    builds one: external inputs first (in order of first use), then the program's results."""
    merged = [s for s in plan.steps if s.op.type not in SOURCES]
    produced = {s.outputs[0]: j for j, s in enumerate(merged)}
    ext: list = []
    ext_types: list = []
    refs = []
    for j, s in enumerate(merged):
        args = []
        for slot, ty in zip(s.inputs, s.in_types):
            if slot in produced and produced[slot] < j:
                args.append(("t", produced[slot]))
            else:
                if slot not in ext:
                    ext.append(slot)
                    ext_types.append(ty)
                args.append(("x", ext.index(slot)))
        refs.append((s.op, args, s.out_types[0]))
    n = len(ext)
    program = tuple((op, tuple(k if kind == "x" else n + k for kind, k in args), ty) for op, args, ty in refs)
    last = merged[-1]
    free = tuple(sorted({f for s in merged for f in s.free if f in ext}))
    step = dataclasses.replace(last, inputs=tuple(ext), in_types=tuple(ext_types), free=free, reuse=None,
                               program=program, ops=tuple(s.op for s in merged))
    assert isinstance(step, Step) and step.type == "fused_elementwise"
    steps = [s for s in plan.steps if s.op.type in SOURCES] + [step]
    return dataclasses.replace(plan, steps=steps), step


def _run(plan, feeds):
    runner = mg.get_backend("webgpu").prepare(plan)
    results, _ = runner([feeds[t] for t, _, _ in plan.feeds], {})
    return np.asarray(results[0]), runner


def _three_ways(g, feeds, target):
    """(fused on webgpu, unfused on webgpu, numpy backend), and the fused step."""
    plan = _plan(g, feeds, target)
    fused_plan, step = _fused_plan(plan)
    fused, runner = _run(fused_plan, feeds)
    unfused, unfused_runner = _run(plan, feeds)
    assert len(runner.dispatches) == 1 < len(unfused_runner.dispatches)
    ref = g.run(feeds, [target], backend="numpy", compilation_descriptor=mg.CompilationDescriptor(fusion=False))[target]
    assert fused.dtype == unfused.dtype == ref.dtype and fused.shape == unfused.shape == ref.shape
    return fused, unfused, ref, step


def _close32(a, b, scale=1.0, ulps=4):
    np.testing.assert_allclose(a, b, rtol=ulps * EPS32, atol=ulps * EPS32 * scale)


def _exact(a, b):
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)
    if a.dtype.kind == "f":  # the same zeros too
        assert np.array_equal(np.signbit(a), np.signbit(b))


def _rand(rng, shape, dtype=np.float32, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(dtype)


# ----------------------------------------------------------------------------- chains and trees
def test_relu_of_x_times_w_plus_b(webgpu):
    rng = np.random.default_rng(0)
    g = mg.Graph()
    x = g.placeholder([4, 8], name="x")
    w = g.placeholder([8], name="w")
    b = g.placeholder([1], name="b")
    y = g.relu(g.addition(g.multiplication(x, w), b))
    feeds = {x: _rand(rng, (4, 8)), w: _rand(rng, (8,)), b: _rand(rng, (1,))}
    fused, unfused, ref, step = _three_ways(g, feeds, y)
    assert [op.type for op, _, _ in step.program] == ["multiplication", "addition", "relu"]
    _close32(fused, unfused, scale=4.0)
    _close32(fused, ref, scale=4.0)


def test_a_comparison_feeding_select_a_tree(webgpu):
    rng = np.random.default_rng(1)
    g = mg.Graph()
    x = g.placeholder([3, 5], name="x")
    y = g.placeholder([3, 5], name="y")
    out = g.select(g.greater_than(x, y), g.multiplication(x, y), g.subtraction(x, y))
    feeds = {x: _rand(rng, (3, 5)), y: _rand(rng, (3, 5))}
    feeds[y][0, :2] = feeds[x][0, :2]  # ties: greater_than is false
    fused, unfused, ref, _ = _three_ways(g, feeds, out)
    _exact(fused, unfused)  # no a*b+c to contract
    _exact(fused, ref)


def test_a_cast_in_the_middle(webgpu):
    rng = np.random.default_rng(2)
    g = mg.Graph()
    x = g.placeholder([2, 7], name="x")
    k = g.placeholder([7], mg.int32, name="k")
    i = g.addition(g.cast(g.multiplication(x, g.constant(3.0, mg.float32)), mg.int32), k)
    out = g.cast(g.multiplication(g.cast(i, mg.float16), g.constant(0.5, mg.float16)), mg.float32)
    feeds = {x: _rand(rng, (2, 7), lo=-9, hi=9), k: rng.integers(-5, 5, (7,)).astype(np.int32)}
    fused, unfused, ref, step = _three_ways(g, feeds, out)
    assert [ty.dtype.name for _, _, ty in step.program] == ["float32", "int32", "int32", "float16", "float16",
                                                            "float32"]
    _exact(fused, unfused)
    _exact(fused, ref)


def test_float16_chains_round_each_intermediate_as_the_unfused_plan(webgpu):
    rng = np.random.default_rng(3)
    g = mg.Graph()
    a, b, c = (g.placeholder([64], mg.float16, name=n) for n in "abc")
    t = g.addition(g.multiplication(a, b), c)  # a*b rounds to float16 before the addition
    out = g.sigmoid(g.multiplication(g.exponent(t), g.division(t, c)))
    feeds = {a: _rand(rng, (64,), np.float16, -30, 30), b: _rand(rng, (64,), np.float16, -30, 30),
             c: _rand(rng, (64,), np.float16)}
    fused, unfused, ref, _ = _three_ways(g, feeds, out)
    _exact(fused, unfused)
    # without the rounding the chain differs: a*b in f32 then + c is not the float16 result
    prod = feeds[a].astype(np.float32) * feeds[b].astype(np.float32)
    assert not np.array_equal((prod + feeds[c]).astype(np.float16),
                              (prod.astype(np.float16).astype(np.float32) + feeds[c]).astype(np.float16))


def test_the_float16_rounding_is_in_the_source():
    x = mg.ShapedType([4], mg.float16)
    g = mg.Graph()
    p = g.placeholder([4], mg.float16)
    s = g.square(p)
    n = g.negative(s)
    program = ((s.operation, (0,), x), (n.operation, (1,), x))
    src, _ = fused_source(["float16"], [(4,)], program)
    assert "let t0: f32 = f32(f16((v0 * v0)));" in src and "let t1: f32 = (-t0);" in src
    assert "out[i] = f16(t1);" in src


def test_int32_chains(webgpu):
    rng = np.random.default_rng(4)
    g = mg.Graph()
    a, b, c = (g.placeholder([5, 6], mg.int32, name=n) for n in "abc")
    t = g.subtraction(g.multiplication(a, b), c)
    out = g.maximum(g.floor_modulo(t, b), g.negative(g.absolute(g.modulo(t, c))))
    feeds = {k: rng.integers(-50, 50, (5, 6)).astype(np.int32) for k in (a, b, c)}
    feeds[b][0, 0] = 0
    feeds[c][1, 1] = 0  # remainders by zero give 0 on every backend
    fused, unfused, ref, _ = _three_ways(g, feeds, out)
    _exact(fused, unfused)
    _exact(fused, ref)


def test_uint32_and_bool_intermediates(webgpu):
    rng = np.random.default_rng(5)
    g = mg.Graph()
    a = g.placeholder([40], mg.uint32, name="a")
    b = g.placeholder([40], mg.uint32, name="b")
    m = g.logical_xor(g.less_than(a, b), g.logical_not(g.equal(g.modulo(a, b), g.constant(0, mg.uint32))))
    out = g.select(m, g.subtraction(a, b), g.cast(m, mg.uint32))
    feeds = {a: rng.integers(0, 9, 40).astype(np.uint32), b: rng.integers(0, 9, 40).astype(np.uint32)}
    fused, unfused, ref, _ = _three_ways(g, feeds, out)
    _exact(fused, unfused)
    _exact(fused, ref)


def test_inputs_broadcast_from_rank_1_to_rank_4(webgpu):
    rng = np.random.default_rng(6)
    g = mg.Graph()
    x = g.placeholder([2, 3, 4, 5], name="x")
    v = g.placeholder([5], name="v")
    c = g.placeholder([3, 1, 1], name="c")
    r = g.placeholder([2, 1, 4, 1], name="r")
    s = g.placeholder([1], name="s")
    out = g.maximum(g.subtraction(g.multiplication(x, v), c), g.multiplication(r, s))
    feeds = {x: _rand(rng, (2, 3, 4, 5)), v: _rand(rng, (5,)), c: _rand(rng, (3, 1, 1)),
             r: _rand(rng, (2, 1, 4, 1)), s: _rand(rng, (1,))}
    fused, unfused, ref, step = _three_ways(g, feeds, out)
    assert [t.shape for t in step.in_types] == [(2, 3, 4, 5), (5,), (3, 1, 1), (2, 1, 4, 1), (1,)]
    _close32(fused, unfused, scale=4.0)
    _close32(fused, ref, scale=4.0)


def test_leaky_relu_twice_with_different_alphas(webgpu):
    g = mg.Graph()
    x = g.placeholder([8], name="x")
    out = g.leaky_relu(g.negative(g.leaky_relu(x, 0.25)), 0.0)  # alpha 0: -3 gives -0, NaN stays NaN
    feeds = {x: np.array([-3, -1, -0.0, 0, 2, np.nan, np.inf, -np.inf], np.float32)}
    fused, unfused, ref, step = _three_ways(g, feeds, out)
    _exact(fused, unfused)
    _exact(fused, ref)
    _, params = fused_source(["float32"], [(8,)], tuple(step.program))
    assert list(params[-2:]) == [int(np.float32(0.25).view(np.uint32)), 0]  # one extra word each


def test_nan_inf_and_negative_zero(webgpu):
    g = mg.Graph()
    x = g.placeholder([9], name="x")
    y = g.placeholder([9], name="y")
    m = g.maximum(g.minimum_with_nan_propagation(x, y), g.negative(y))
    out = g.select(g.is_nan(m), g.sign(g.relu(x)), g.multiplication(g.clamp(m, y, g.absolute(x)), x))
    vals = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.0, 3e38, 1e-45]
    feeds = {x: np.array(vals, np.float32), y: np.array(vals[::-1], np.float32)}
    fused, unfused, ref, _ = _three_ways(g, feeds, out)
    _exact(fused, unfused)
    _exact(fused, ref)


# ----------------------------------------------------------------------------- every fusible op
def _build(g, op, ins, dtype):
    if op == "leaky_relu":
        return g.leaky_relu(ins[0], 0.2)
    if op == "cast":
        return g.cast(ins[0], mg.int32 if dtype == "float32" else mg.float32)
    if op == "leaky_relu_gradient":
        return g.leaky_relu_gradient(ins[0], ins[1], ins[2])
    return getattr(g, op)(*ins)


def _arity(op):
    return {"select": 3, "clamp": 3, "leaky_relu_gradient": 3, "leaky_relu": 1, "cast": 1}.get(
        op, 1 if op in WGSL_UNARY else 2)


@pytest.mark.parametrize("op", sorted(FUSIBLE_OPS))
def test_every_fusible_op_fused_after_casts_matches_unfused(webgpu, op):
    """``op(cast(x0), cast(x1), ...)`` in one fused step, for each dtype the op accepts: the same
    result as the unfused plan (float32 within 4 ulp), or the same KernelMissingError."""
    rng = np.random.default_rng(7)
    n = _arity(op)
    ran = 0
    for dtype in ("float32", "float16", "int32", "uint32", "bool"):
        g = mg.Graph()
        xs = [g.placeholder([3, 11], name=f"x{k}") for k in range(n)]
        try:
            out = _build(g, op, [g.cast(x, getattr(mg, dtype)) for x in xs], dtype)
        except mg.MiniGraphError:
            continue  # the op refuses this dtype
        vals = _rand(rng, (n, 3, 11), lo=-4, hi=4)
        vals[:, 0, :4] = np.array([0.0, -0.0, np.nan, np.inf], np.float32) if dtype in ("float32", "float16") \
            else 0.0
        feeds = {x: np.round(v, 1) if dtype.startswith("float") else np.round(v) for x, v in zip(xs, vals)}
        plan = _plan(g, feeds, out)
        fused_plan, _ = _fused_plan(plan)
        try:
            unfused, _ = _run(plan, feeds)
        except KernelMissingError:
            with pytest.raises(KernelMissingError, match=op):
                _run(fused_plan, feeds)
            continue
        fused, runner = _run(fused_plan, feeds)
        assert len(runner.dispatches) == 1 and fused.dtype == unfused.dtype
        if fused.dtype == np.float32:
            np.testing.assert_allclose(fused, unfused, rtol=4 * EPS32, atol=1e-37)
        else:
            _exact(fused, unfused)
        ran += 1
    assert ran


def test_the_fusible_ops_are_the_elementwise_family():
    assert FUSIBLE_OPS == set(EXPRESSIONS) | {"leaky_relu"}
    assert mg.get_backend.__module__  # the registry's backend class carries them
    from minigraph.backends.webgpu import WebGPUBackend
    assert WebGPUBackend.fusible_ops is FUSIBLE_OPS


def test_a_fused_step_is_bounded_work_per_invocation():
    """Each fused op is bounded in tests/test_webgpu_long_loops.py, and the fused kernel runs a
    program of them once per element: its work per invocation does not grow with any input size."""
    from test_webgpu_long_loops import BOUNDED
    assert FUSIBLE_OPS <= set(BOUNDED)


# ----------------------------------------------------------------------------- compiled end to end
def _compiled(g, feeds, target, fusion):
    desc = mg.CompilationDescriptor(fusion=fusion)
    return g.compile(_types(feeds), [target], backend="webgpu", compilation_descriptor=desc)


def test_compiled_relu_of_x_times_w_plus_b_is_one_fused_step(webgpu):
    rng = np.random.default_rng(8)
    g = mg.Graph()
    x = g.placeholder([16, 32], name="x")
    w = g.placeholder([32], name="w")
    b = g.placeholder([1], name="b")
    y = g.relu(g.addition(g.multiplication(x, w), b), name="y")
    feeds = {x: _rand(rng, (16, 32)), w: _rand(rng, (32,)), b: _rand(rng, (1,))}
    fused_exe = _compiled(g, feeds, y, True)
    plain_exe = _compiled(g, feeds, y, False)
    kernels = [s.kernel for s in fused_exe.plan.steps if s.op.type not in SOURCES]
    assert kernels == ["fused_elementwise(multiplication+addition+relu)"]
    assert [s.kernel for s in plain_exe.plan.steps if s.op.type not in SOURCES] == ["multiplication", "addition",
                                                                                     "relu"]
    (fused,) = fused_exe.run(feeds)
    (plain,) = plain_exe.run(feeds)
    _close32(fused, plain, scale=4.0)
    _close32(fused, g.run(feeds, [y], backend="numpy")[y], scale=4.0)
    assert len(fused_exe._runner.dispatches) == 1 and len(plain_exe._runner.dispatches) == 3


def test_compiled_float16_and_int32_chains_match_unfused_exactly(webgpu):
    rng = np.random.default_rng(9)
    g = mg.Graph()
    h = g.placeholder([50], mg.float16, name="h")
    k = g.placeholder([50], mg.int32, name="k")
    out = g.multiplication(g.tanh(g.addition(g.multiplication(h, h), h)),
                           g.cast(g.floor_modulo(g.multiplication(k, k), g.constant(7, mg.int32)), mg.float16))
    feeds = {h: _rand(rng, (50,), np.float16, -3, 3), k: rng.integers(-40, 40, 50).astype(np.int32)}
    fused_exe = _compiled(g, feeds, out, True)
    plain_exe = _compiled(g, feeds, out, False)
    assert sum(bool(s.program) for s in fused_exe.plan.steps) >= 1
    assert len(fused_exe._runner.dispatches) < len(plain_exe._runner.dispatches)
    _exact(fused_exe.run(feeds)[0], plain_exe.run(feeds)[0])
