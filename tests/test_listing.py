"""Listings (print(g), exe.describe()), source lines in errors, and the recompile cache."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import minigraph as mg
from minigraph.listing import is_gradient_op


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno


def build(seed=0):
    """A small CNN step: depthwise conv -> relu -> mean, its gradient, and an SGD update."""
    rng = np.random.default_rng(seed)
    g = mg.Graph()
    x = g.placeholder([2, 3, 8, 8], name="x")
    w = g.variable(rng.standard_normal((2, 3, 3, 3)).astype(np.float32), name="w")
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, padding_style=mg.PaddingStyle.TF_SAME)
    with g.name_scope("block"):
        y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
        r = g.relu(y)
    loss = g.mean(r, name="loss")
    dead = g.square(x, name="unused")
    grads = g.gradients(loss, [w], name="grad")
    step = g.apply_stochastic_gradient_descent(0.01, w, grads[w], name="sgd")
    return g, dict(x=x, w=w, y=y, r=r, loss=loss, dead=dead, dw=grads[w], step=step)


def test_listing_one_line_per_op_with_names_types_inputs_shapes():
    g, t = build()
    text = str(g)
    lines = text.splitlines()
    assert len(lines) == 1 + len(g.operations)
    assert g.describe() == text
    assert lines[0].startswith(f"Graph: {len(g.operations)} ops")
    by_name = {}
    for op, line in zip(g.operations, lines[1:]):
        assert op.name in line and f"{op.type}(" in line, line
        for inp in op.inputs:
            assert inp.name in line
        by_name[op.name] = line
    dw = by_name["block/dw"]
    assert re.search(r"depthwise_convolution_2d\(x, w\)\s+-> float32\[2,6,8,4\]", dw), dw
    # only the descriptor fields that differ from MPSGraph's defaults
    assert "stride_in_x=2" in dw and "padding_style=TF_SAME" in dw
    assert "stride_in_y" not in dw and "data_layout" not in dw
    assert "-> float32[2,3,8,8]" in by_name["x"]
    assert "-> ()" in by_name["sgd"]  # assign is an operation without outputs


def test_listing_is_stable_and_marks_gradients():
    g1, _ = build(seed=1)
    g2, _ = build(seed=2)  # other values, same structure
    assert str(g1) == str(g2)
    assert "0x" not in str(g1)  # no ids or addresses
    grad_ops = [op for op in g1.operations if is_gradient_op(op)]
    names = {op.name for op in grad_ops}
    assert "grad/block/dw/depthwise_convolution_2d_weights_gradient" in names
    assert not any(is_gradient_op(g1.operation(n)) for n in ("x", "w", "block/dw", "block/relu", "loss", "sgd"))
    for op, line in zip(g1.operations, str(g1).splitlines()[1:]):
        assert line.endswith("(gradient)") == is_gradient_op(op), line
    # an explicit gradient op built by hand is a gradient op too
    g = mg.Graph()
    dy = g.placeholder([1, 2, 4, 4])
    src = g.placeholder([1, 2, 4, 4])
    gw = g.depthwise_convolution_2d_weights_gradient(dy, src, output_shape=[1, 2, 1, 1])
    assert is_gradient_op(gw.operation)


def test_listing_shows_control_dependencies_and_small_constants():
    g = mg.Graph()
    v = g.variable(np.float32(1.5), name="v")
    a = g.assign(v, g.constant(np.float32(2.5)), name="set")
    with g.control_dependencies([a]):
        r = g.read(v, name="after_set")
    text = str(g)
    line = next(x for x in text.splitlines() if "after_set" in x)
    assert "after=[set]" in line
    assert "value=2.5" in text
    assert r.shape == ()


def test_executable_listing_shows_pruned_and_buffer_plan():
    g, t = build()
    exe = g.compile({t["x"]: mg.ShapedType([2, 3, 8, 8])}, [t["loss"]], [t["step"]])
    text = exe.describe()
    assert text.startswith("Executable on numpy")
    assert "unused" in re.search(r"pruned \(\d+.*", text).group(0)
    # independent check of the buffer plan: each intermediate is freed on the line of its last reader
    steps = exe.plan.steps
    step_lines = [ln for ln in text.splitlines() if re.match(r"\s+\d+\s", ln)]
    assert len(step_lines) == len(steps)
    last_reader = {}
    for i, st in enumerate(steps):
        for inp in st.op.inputs:
            last_reader[inp.name] = i
    kept = {t["loss"].name}
    for name, i in last_reader.items():
        if name in kept:
            continue
        m = re.search(r"free: (.*)$", step_lines[i])
        assert m and name in m.group(1).split(", "), (name, step_lines[i])
    for ln in step_lines:  # the target is kept for the caller, never freed
        m = re.search(r"free: (.*)$", ln)
        assert not m or t["loss"].name not in m.group(1).split(", ")
    # the listing runs what it lists: its results match a plain run
    out = exe.run({t["x"]: np.ones((2, 3, 8, 8), np.float32)})
    assert np.isfinite(out[0]).all()


def test_executable_listing_dynamic_shapes():
    g = mg.Graph()
    x = g.placeholder([-1, 3], name="x")
    y = g.reduction_sum(g.tanh(x), axes=[1], name="y")
    exe = g.compile({x: mg.ShapedType([-1, 3])}, [y])
    assert "not specialised yet" in exe.describe()
    exe.run({x: np.ones((5, 3), np.float32)})
    text = exe.describe()
    assert "x float32[5,3]" in text and "-> float32[5,1]" in text


# ---------------------------------------------------------------------- source lines in errors
def test_compile_error_names_the_users_source_line():
    g = mg.Graph()
    x = g.placeholder([-1, 3], name="x")
    line = _line() + 1
    y = g.reshape(x, [4, 3], name="r")  # fine while the first dim is unknown
    with pytest.raises(mg.ShapeError) as e:
        g.compile({x: mg.ShapedType([5, 3])}, [y])
    msg = str(e.value)
    assert f"{__file__}:{line}" in msg and "reshape op 'r'" in msg and "(5, 3)" in msg
    assert y.operation.location == f"{__file__}:{line}"


def test_run_error_names_the_users_source_line(monkeypatch, replace_kernel):
    from minigraph.backends.numpy.registry import KERNELS

    def broken(step):
        def fn(x):
            raise FloatingPointError("kernel exploded")
        return fn

    replace_kernel(KERNELS, "tanh", broken)
    g = mg.Graph()
    x = g.placeholder([2], name="x")
    line = _line() + 1
    y = g.tanh(x, name="t")
    with pytest.raises(mg.ExecutionError) as e:
        g.run({x: np.ones(2, np.float32)}, [y])
    assert f"{__file__}:{line}" in str(e.value) and "tanh op 't'" in str(e.value)


def test_gradient_ops_point_at_the_gradients_call():
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    y = g.reduction_sum(g.sin(x))
    line = _line() + 1
    grads = g.gradients(y, [x])
    op = grads[x].operation
    assert op.location == f"{__file__}:{line}"


# ---------------------------------------------------------------------- recompile explanations
def test_recompile_reason_names_the_new_feed_shape():
    g = mg.Graph()
    x = g.placeholder([-1, 3, 8, 8], name="x")
    y = g.reduction_sum(x, name="s")
    a = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((4, 3, 8, 8)).astype(np.float32)
    g.run({x: a}, [y])
    assert g.last_compile_reason == "first run with these targets"
    g.run({x: b}, [y])
    assert "new feed shape for 'x': (2, 3, 8, 8) -> (4, 3, 8, 8)" in g.last_compile_reason
    info = g.cache_info()
    assert (info.hits, info.misses, info.currsize, info.compiles) == (0, 2, 2, 2)
    out = g.run({x: a}, [y])[y]  # cached: no new compile
    assert g.cache_info().hits == 1 and g.cache_info().compiles == 2
    np.testing.assert_allclose(out, a.sum(dtype=np.float64).reshape(1, 1, 1, 1), rtol=1e-5)
    z = g.square(x, name="z")
    g.run({x: a}, [z])  # other targets: their own history
    assert g.last_compile_reason == "first run with these targets"


def test_cache_is_bounded_lru_and_explains_evictions():
    g = mg.Graph()
    x = g.placeholder([-1, 2], name="x")
    y = g.tanh(x)
    g.set_cache_size(2)
    feeds = {n: np.full((n, 2), 0.5, np.float32) for n in (1, 2, 3)}
    for n in (1, 2, 3):
        g.run({x: feeds[n]}, [y])
    info = g.cache_info()
    assert info.currsize == 2 and info.maxsize == 2 and info.misses == 3
    g.run({x: feeds[3]}, [y])  # most recent: still cached
    assert g.cache_info().hits == 1
    g.run({x: feeds[1]}, [y])  # the oldest was evicted
    assert g.cache_info().misses == 4
    assert "evicted" in g.last_compile_reason and "maxsize 2" in g.last_compile_reason
    g.set_cache_size(0)
    assert g.cache_info().currsize == 0
    r = g.run({x: feeds[2]}, [y])[y]
    np.testing.assert_allclose(r, np.tanh(feeds[2]), rtol=1e-6)
    assert g.cache_info().currsize == 0
