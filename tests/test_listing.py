"""Listings (print(g), exe.describe()), source lines in errors, and the recompile cache."""
from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pytest

import minigraph as mg
from minigraph.listing import is_gradient_op
from graph_zoo import scoped_cnn_graph


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
    # print(g) and g.describe() on a scoped graph: inputs by name, shapes, non-default fields; stable
    g, x, w, r, loss, _ = scoped_cnn_graph()
    text = str(g)
    assert g.describe() == text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for op in g.operations:
        hits = [ln for ln in lines if op.name in ln and op.type in ln]
        assert hits, op.name
    dw_line = next(ln for ln in lines if "block/dw" in ln and "depthwise_convolution_2d" in ln)
    assert "x" in dw_line and "block/w" in dw_line  # inputs by name
    assert "float32" in dw_line and "[2,3,4,4]" in dw_line.replace(" ", "").replace("(", "[").replace(")", "]")
    assert "stride_in_x=2" in dw_line and "TF_SAME" in dw_line
    assert "dilation_rate_in_x" not in dw_line  # default fields are not shown
    # stable: the same graph built twice lists identically
    assert str(scoped_cnn_graph()[0]) == text


def test_listing_wraps_to_a_width_and_says_the_same():
    """describe_graph(g, width=...) keeps every line within the width, wrapping between inputs,
    output types, attributes and descriptor fields, and says word for word what print(g) says."""
    from minigraph.listing import describe_graph

    g, _ = build()
    g.variable(np.zeros((1, 1), np.float32), name="v" * 120)  # a name longer than a line is cut
    wide = str(g)
    assert describe_graph(g) == wide and max(len(ln) for ln in wide.splitlines()) > 150
    for width in (80, 100, 120):
        narrow = describe_graph(g, width=width)
        assert max(len(ln) for ln in narrow.splitlines()) <= width, width
        assert len(narrow.splitlines()) > len(wide.splitlines())
        assert "".join(narrow.split()) == "".join(wide.split())  # the same text, laid out anew
        pieces = {q for w in wide.split() if "v" * 10 not in w for q in re.split(r"(?<=\()", w) if q}
        cut = [q for q in pieces if not any(q in ln for ln in narrow.splitlines())]
        assert not cut, (width, cut)  # lines break between words or after "(": only the long name is cut
    lines = describe_graph(g, width=100).splitlines()
    at = next(i for i, ln in enumerate(lines) if "grad/block/dw/depthwise_convolution_2d_weights_gradient =" in ln)
    assert lines[at + 1].startswith(" " * 11) and not lines[at + 1].startswith(" " * 12)  # indented under the name
    assert any(ln.strip().startswith("descriptor=DepthwiseConvolution2DOpDescriptor(") for ln in lines)


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


def test_a_filled_constant_lists_as_its_scalar_and_shape():
    """MPSGraph's constant(_:shape:dataType:): one value and a shape, however large the shape."""
    g = mg.Graph()
    g.constant(0.5, shape=[1000, 1000], name="half")
    g.constant(np.arange(6, dtype=np.float32), name="row")
    lines = str(g).splitlines()
    assert re.search(r"half += constant\(\) +-> float32\[1000,1000\]  value=0\.5$", lines[1]), lines[1]
    assert lines[2].endswith("-> float32[6]"), lines[2]  # an array of its own data: too long to show


@pytest.mark.parametrize("char", ["\x1b", "\n", "\r", "\x00", "\x7f", "\x9b", "\u202e", "\u2028", "\u2066"])
def test_control_characters_in_names_are_escaped_in_listings(char):
    g = mg.Graph()
    x = g.placeholder([2], name=f"x{char}[2J")
    with g.control_dependencies([x]):
        y = g.tanh(x, name=f"t{char}")
    exe = g.compile({x: mg.ShapedType([2], mg.float32)}, [y])
    escaped = f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    for text in (str(g), exe.describe()):
        assert not any(char in line for line in text.split("\n"))
        assert f"x{escaped}[2J" in text and f"t{escaped}" in text
    assert len(str(g).split("\n")) == 1 + len(g.operations)  # no forged lines


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
    name_of = {s: t.name for st in steps for t, s in zip(st.op.outputs, st.outputs)}
    for i, st in enumerate(steps):
        for s in st.inputs:  # a fused step reads only its external inputs
            last_reader[name_of[s]] = i
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
    # a graph with a scope and an op nothing needs
    g, x, w, r, loss, unused = scoped_cnn_graph()
    exe = g.compile({x: mg.ShapedType((2, 3, 8, 8), mg.float32)}, [loss])
    text = exe.describe()
    assert "unused" in text and "prun" in text.lower()
    assert "free" in text.lower()
    assert "block/dw" in text


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
    # every op records where it was built; a run-time shape clash names that line
    g = mg.Graph()
    line = inspect.currentframe().f_lineno + 1
    x = g.placeholder(shape=(-1, 3), dtype=mg.float32, name="a")
    assert x.operation.location.endswith(f"{os.path.basename(__file__)}:{line}")
    assert x.location == x.operation.location
    b = g.placeholder(shape=(-1, 4), dtype=mg.float32, name="b")
    line = inspect.currentframe().f_lineno + 1
    c = g.matrix_multiplication(x, b, name="mm")
    with pytest.raises(mg.MiniGraphError) as ei:
        g.run({x: np.ones((2, 3), np.float32), b: np.ones((5, 4), np.float32)}, [c])
    assert f"{os.path.basename(__file__)}:{line}" in str(ei.value) and "mm" in str(ei.value)


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
    g.cache_size = 2
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
    g.cache_size = 0
    assert g.cache_info().currsize == 0
    r = g.run({x: feeds[2]}, [y])[y]
    np.testing.assert_allclose(r, np.tanh(feeds[2]), rtol=1e-6)
    assert g.cache_info().currsize == 0
    # the size given to Graph(); the reason names the feed and both shapes; functools' CacheInfo shape
    g = mg.Graph(cache_size=2)
    x = g.placeholder(shape=(-1, 3, 8, 8), dtype=mg.float32, name="x")
    y = g.relu(x, name="y")
    g.run({x: np.ones((2, 3, 8, 8), np.float32)}, [y])
    g.run({x: np.ones((4, 3, 8, 8), np.float32)}, [y])
    reason = g.last_compile_reason
    assert "x" in reason
    norm = reason.replace(" ", "")
    assert "(2,3,8,8)" in norm and "(4,3,8,8)" in norm
    g.run({x: np.ones((4, 3, 8, 8), np.float32)}, [y])
    info = g.cache_info()
    assert info.hits == 1 and info.misses == 2 and info.maxsize == 2 and info.currsize == 2
    hits, misses, maxsize, currsize = info  # functools.lru_cache's CacheInfo shape
    assert (hits, misses, maxsize, currsize) == (1, 2, 2, 2)
    g.run({x: np.ones((5, 3, 8, 8), np.float32)}, [y])
    assert g.cache_info().currsize == 2  # bounded
    g.cache_size = 1
    assert g.cache_info().maxsize == 1 and g.cache_info().currsize == 1


def test_print_graph_writes_the_listing(capsys):
    g = scoped_cnn_graph()[0]
    print(g)
    assert "block/act" in capsys.readouterr().out


def test_compile_reason_is_logged(caplog):
    import logging

    g = mg.Graph()
    x = g.placeholder(shape=(-1, 3, 8, 8), dtype=mg.float32, name="x")
    y = g.relu(x, name="y")
    with caplog.at_level(logging.INFO, logger="minigraph"):
        g.run({x: np.ones((2, 3, 8, 8), np.float32)}, [y])
        g.run({x: np.ones((2, 3, 8, 8), np.float32)}, [y])
        g.run({x: np.ones((4, 3, 8, 8), np.float32)}, [y])
    recs = [r.getMessage() for r in caplog.records if r.name.startswith("minigraph")]
    assert len(recs) == 2 and "(4, 3, 8, 8)" in recs[-1] and "'x'" in recs[-1]


def test_cache_size_spellings():
    g = mg.Graph()
    assert g.cache_info().maxsize >= 1
    g.cache_size = 3
    assert g.cache_size == 3 and g.cache_info().maxsize == 3
    x = g.placeholder(shape=(-1,), dtype=mg.float32, name="x")
    y = g.relu(x)
    for n in range(1, 6):
        g.run({x: np.ones(n, np.float32)}, [y])
    assert g.cache_info().currsize == 3
    g.cache_clear()
    assert g.cache_info().currsize == 0
    # functools.lru_cache conventions: None is unbounded; a bad value is a clear error
    u = mg.Graph(cache_size=None)
    x = u.placeholder(shape=(-1,), dtype=mg.float32, name="x")
    y = u.relu(x)
    for n in range(1, 5):
        u.run({x: np.ones(n, np.float32)}, [y])
    assert u.cache_info().currsize == 4 and u.cache_info().maxsize is None
    assert mg.Graph(cache_size=-3).cache_info().maxsize == 0
    with pytest.raises(mg.MiniGraphError):
        mg.Graph(cache_size="big")
