"""Issues 8 and 9 read as an outsider would: one test per bullet, written from the issue text.

Issue 8 (docs that teach MPSGraph semantics) is checked by looking at the pages and the repository
from the outside: the pages exist with the named content, every code block runs (with a runner
written here, not the project's own), figures are committed with the script that draws them,
the reference is generated from the registry and a check fails when it is stale, public names
carry docstrings in one style that name the MPSGraph equivalent.

Issue 9 (reliability) is checked on the public API only: invalid input raises MiniGraphError
subclasses naming the op, feeds are never mutated, failed runs leave variables alone, results
are not aliased, threads, limits, NaN/Inf, integer overflow, determinism, the long fuzz script.
"""
from __future__ import annotations

import ast
import concurrent.futures as cf
import inspect
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import minigraph as mg
from minigraph.graph import Graph

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


# ================================================================================= issue 8: pages


# ============================================================================= issue 8: reference


# ============================================================================ issue 8: code blocks


# ============================================================================= issue 8: docstrings


# ===================================================================== issue 9: only MiniGraphError
def _g():
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float32, name="x")
    return g, x


def _bad_calls():
    """(label, callable, words the message must contain) - every one invalid input."""
    def dw(desc=None, wshape=(1, 3, 3, 3), xshape=(1, 3, 8, 8)):
        g = mg.Graph()
        return g.depthwise_convolution_2d(g.placeholder(list(xshape)), g.placeholder(list(wshape)),
                                          descriptor=desc, name="dwc")

    def c(fn):
        return fn

    cases = [
        ("matmul_rank", lambda: (lambda g, x: g.matrix_multiplication(x, g.placeholder([4, 5]), name="mm"))(*_g()), ["mm"]),
        ("matmul_rank1", lambda: (lambda g, x: g.matrix_multiplication(g.placeholder([3]), x, name="mm"))(*_g()), ["mm"]),
        ("add_broadcast", lambda: (lambda g, x: g.addition(x, g.placeholder([4]), name="add"))(*_g()), ["add"]),
        ("add_dtype", lambda: (lambda g, x: g.addition(x, g.placeholder([2, 3], mg.float16), name="add"))(*_g()), ["add"]),
        ("add_int_float", lambda: (lambda g, x: g.addition(x, g.placeholder([2, 3], mg.int32), name="add"))(*_g()), ["add"]),
        ("reshape_size", lambda: (lambda g, x: g.reshape(x, [4, 2], name="rs"))(*_g()), ["rs"]),
        ("reshape_two_minus1", lambda: (lambda g, x: g.reshape(x, [-1, -1], name="rs"))(*_g()), ["rs"]),
        ("reshape_zero", lambda: (lambda g, x: g.reshape(x, [0, 6], name="rs"))(*_g()), ["rs"]),
        ("reshape_float", lambda: (lambda g, x: g.reshape(x, [1.5, 4], name="rs"))(*_g()), ["rs"]),
        ("transpose_dim", lambda: (lambda g, x: g.transpose(x, 0, 5, name="tp"))(*_g()), ["tp"]),
        ("permute_bad", lambda: (lambda g, x: g.permute(x, [0, 0], name="pm"))(*_g()), ["pm"]),
        ("permute_len", lambda: (lambda g, x: g.permute(x, [1, 0, 2], name="pm"))(*_g()), ["pm"]),
        ("reduce_axis", lambda: (lambda g, x: g.reduction_sum(x, axes=[2], name="rsum"))(*_g()), ["rsum"]),
        ("reduce_axis_neg", lambda: (lambda g, x: g.reduction_maximum(x, axes=[-3], name="rmax"))(*_g()), ["rmax"]),
        ("mean_int", lambda: (lambda g: g.mean(g.placeholder([2], mg.int32), name="mn"))(mg.Graph()), ["mn"]),
        ("softmax_axis", lambda: (lambda g, x: g.softmax(x, axis=7, name="sm"))(*_g()), ["sm"]),
        ("slice_oob", lambda: (lambda g, x: g.slice(x, 1, 2, 5, name="sl"))(*_g()), ["sl"]),
        ("slice_dim", lambda: (lambda g, x: g.slice(x, 4, 0, 1, name="sl"))(*_g()), ["sl"]),
        ("concat_shape", lambda: (lambda g, x: g.concat([x, g.placeholder([3, 3])], 1, name="cc"))(*_g()), ["cc"]),
        ("concat_dtype", lambda: (lambda g, x: g.concat([x, g.placeholder([2, 3], mg.int32)], 0, name="cc"))(*_g()), ["cc"]),
        ("concat_empty", lambda: mg.Graph().concat([], 0, name="cc"), ["cc"]),
        ("broadcast_bad", lambda: (lambda g, x: g.broadcast(x, [4, 4], name="bc"))(*_g()), ["bc"]),
        ("expand_axis", lambda: (lambda g, x: g.expand_dims(x, axis=9, name="ed"))(*_g()), ["ed"]),
        ("squeeze_non1", lambda: (lambda g, x: g.squeeze(x, axes=[0], name="sq"))(*_g()), ["sq"]),
        ("select_shapes", lambda: (lambda g, x: g.select(x > 0, x, g.placeholder([4]), name="sel"))(*_g()), ["sel"]),
        ("cast_unknown", lambda: (lambda g, x: g.cast(x, "complex128", name="cst"))(*_g()), ["complex128"]),
        ("relu_int_string", lambda: (lambda g, x: g.relu("abc", name="r"))(*_g()), ["r"]),
        ("add_none", lambda: (lambda g, x: g.addition(x, None, name="add"))(*_g()), ["add"]),
        ("add_other_graph", lambda: (lambda g, x: g.addition(x, mg.Graph().placeholder([2, 3]), name="add"))(*_g()), ["add"]),
        ("placeholder_dtype", lambda: mg.Graph().placeholder([2], "float128", name="p"), ["float128"]),
        ("placeholder_shape_neg", lambda: mg.Graph().placeholder([2, -3], name="p"), ["p"]),
        ("placeholder_shape_str", lambda: mg.Graph().placeholder("abc", name="p"), ["p"]),
        ("variable_object", lambda: mg.Graph().variable(np.array([object()]), name="v"), ["v"]),
        ("constant_ragged", lambda: mg.Graph().constant([[1, 2], [3]], name="k"), ["k"]),
        ("assign_shape", lambda: (lambda g: g.assign(g.variable(np.zeros(3, np.float32), name="v"),
                                                      g.constant(np.zeros(4, np.float32)), name="asg"))(mg.Graph()),
         ["asg"]),
        ("assign_dtype", lambda: (lambda g: g.assign(g.variable(np.zeros(3, np.float32), name="v"),
                                                      g.constant(np.zeros(3, np.int32)), name="asg"))(mg.Graph()),
         ["asg"]),
        ("assign_non_variable", lambda: (lambda g, x: g.assign(x, x, name="asg"))(*_g()), ["asg"]),
        ("dw_weights_C", lambda: dw(wshape=(1, 2, 3, 3)), ["dwc"]),
        ("dw_rank", lambda: dw(xshape=(3, 8, 8)), ["dwc"]),
        ("dw_kernel_too_big", lambda: dw(wshape=(1, 3, 9, 9)), ["dwc"]),
        ("dw_stride0", lambda: dw(mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=0)), ["dwc"]),
        ("dw_dilation0", lambda: dw(mg.DepthwiseConvolution2DOpDescriptor(dilation_rate_in_y=0)), ["dwc"]),
        ("dw_neg_pad", lambda: dw(mg.DepthwiseConvolution2DOpDescriptor(padding_left=-1)), ["dwc"]),
        ("dw_layout", lambda: dw(mg.DepthwiseConvolution2DOpDescriptor(data_layout=mg.TensorNamedDataLayout.HWIO)), ["dwc"]),
        ("dw_wrong_desc_type", lambda: dw(mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2)), ["dwc"]),
        ("dw_data_grad_output_shape_len", lambda: (lambda g: g.depthwise_convolution_2d_data_gradient(
            g.placeholder([1, 3, 6, 6]), g.placeholder([1, 3, 3, 3]), output_shape=[1, 3, 8], name="dxg"))(mg.Graph()),
         ["dxg"]),
        ("dw_data_grad_output_shape_mismatch", lambda: (lambda g: g.depthwise_convolution_2d_data_gradient(
            g.placeholder([1, 3, 6, 6]), g.placeholder([1, 3, 3, 3]), output_shape=[1, 3, 20, 20], name="dxg"))(mg.Graph()),
         ["dxg"]),
        ("dw_weights_grad_output_shape", lambda: (lambda g: g.depthwise_convolution_2d_weights_gradient(
            g.placeholder([1, 3, 6, 6]), g.placeholder([1, 3, 8, 8]), output_shape=[1, 3, 5, 5], name="dwg"))(mg.Graph()),
         ["dwg"]),
        ("dw_weights_grad_output_shape_str", lambda: (lambda g: g.depthwise_convolution_2d_weights_gradient(
            g.placeholder([1, 3, 6, 6]), g.placeholder([1, 3, 8, 8]), output_shape="abc", name="dwg"))(mg.Graph()),
         ["dwg"]),
        ("conv_groups", lambda: (lambda g: g.convolution_2d(g.placeholder([1, 4, 8, 8]), g.placeholder([4, 4, 3, 3]),
                                                            descriptor=mg.Convolution2DOpDescriptor(groups=3), name="cv"))(mg.Graph()),
         ["cv"]),
        ("pool_kernel0", lambda: (lambda g: g.max_pooling_2d(g.placeholder([1, 1, 4, 4]),
                                                             mg.Pooling2DOpDescriptor(kernel_width=0, kernel_height=2),
                                                             name="mp"))(mg.Graph()), ["mp"]),
        ("gradients_other_graph", lambda: (lambda g, x: g.gradients(g.reduction_sum(x), [mg.Graph().placeholder([1])]))(*_g()), []),
        ("gradients_int", lambda: (lambda g: g.gradients(g.reduction_sum(g.placeholder([2], mg.int32)),
                                                         [g.placeholder([2], mg.int32)]))(mg.Graph()), []),
        ("lookup_missing", lambda: mg.Graph().operation("nope"), ["nope"]),
        ("tensor_lookup_missing", lambda: mg.Graph().tensor("nope"), ["nope"]),
        ("unknown_backend", lambda: (lambda g, x: g.run({x: np.ones((2, 3), np.float32)}, [x], backend="cuda"))(*_g()), ["cuda"]),
        ("unknown_dtype", lambda: mg.as_dtype("bfloat99"), ["bfloat99"]),
        ("lookup_int", lambda: mg.Graph().operation(5), []),
        ("tensor_lookup_none", lambda: mg.Graph().tensor(None), []),
        ("constant_none_float", lambda: mg.Graph().constant(None, dtype=mg.float32, name="k"), ["k"]),
        ("constant_list_with_none", lambda: mg.Graph().constant([1.0, None], dtype=mg.float32, name="k"), ["k"]),
        ("constant_str_float", lambda: mg.Graph().constant("2", dtype=mg.float32, name="k"), ["k"]),
        ("name_not_str", lambda: mg.Graph().placeholder([2], name=5), []),
        ("dw_desc_style_str", lambda: dw(mg.DepthwiseConvolution2DOpDescriptor(padding_style="SAME")), ["dwc"]),
        ("dw_desc_stride_float", lambda: dw(mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=1.5)), ["dwc"]),
        ("target_not_list", lambda: (lambda g, x: g.run({x: np.ones((2, 3), np.float32)}, x))(*_g()), []),
        ("feeds_not_dict", lambda: (lambda g, x: g.run([np.ones((2, 3), np.float32)], [x]))(*_g()), []),
        ("huge_slice", lambda: (lambda g, x: g.slice(x, 1, 2 ** 70, 1, name="sl"))(*_g()), ["sl"]),
    ]
    return cases


_BAD = _bad_calls()


@pytest.mark.parametrize("label,call,words", _BAD, ids=[c[0] for c in _BAD])
def test_invalid_build_calls_raise_only_minigraph_errors_naming_the_op(label, call, words):
    try:
        call()
    except mg.MiniGraphError as e:
        msg = str(e)
        for w in words:
            assert w in msg, (label, msg)
    except BaseException as e:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{label}: raw {type(e).__name__} escaped: {e}")
    else:
        pytest.fail(f"{label}: no error raised")


def _feed_graph():
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float32, name="xin")
    y = g.relu(x, name="y")
    return g, x, y


@pytest.mark.parametrize("label,feeds,words", [
    ("missing", lambda x: {}, ["xin"]),
    ("wrong_shape", lambda x: {x: np.ones((3, 2), np.float32)}, ["xin"]),
    ("wrong_dtype", lambda x: {x: np.ones((2, 3), np.float64)}, ["xin"]),
    ("int_dtype", lambda x: {x: np.ones((2, 3), np.int32)}, ["xin"]),
    ("none", lambda x: {x: None}, ["xin"]),
    ("strings", lambda x: {x: [["a", "b", "c"], ["d", "e", "f"]]}, ["xin"]),
    ("ragged", lambda x: {x: [[1.0, 2.0], [3.0]]}, ["xin"]),
    ("object", lambda x: {x: np.array([[object()] * 3] * 2)}, ["xin"]),
    ("scalar", lambda x: {x: 1.0}, ["xin"]),
    ("list_with_none", lambda x: {x: [[1.0, None, 2.0], [1.0, 2.0, 3.0]]}, ["xin"]),
    ("list_of_numeric_strings", lambda x: {x: [["1", "2", "3"], ["4", "5", "6"]]}, ["xin"]),
    ("complex", lambda x: {x: np.ones((2, 3), np.complex64)}, ["xin"]),
    ("key_is_string", lambda x: {"xin": np.ones((2, 3), np.float32)}, []),
    ("key_other_graph", lambda x: {x: np.ones((2, 3), np.float32),
                                   mg.Graph().placeholder([2, 3], name="alien"): np.ones((2, 3), np.float32)}, []),
])
def test_bad_feeds_raise_minigraph_errors_naming_the_placeholder(label, feeds, words):
    g, x, y = _feed_graph()
    for runner in ("run", "compile"):
        try:
            if runner == "run":
                g.run(feeds(x), [y])
            else:
                exe = g.compile({x: mg.ShapedType([2, 3], mg.float32)}, [y])
                f = feeds(x)
                exe.run(f)
        except mg.MiniGraphError as e:
            for w in words:
                assert w in str(e), (label, runner, str(e))
        except BaseException as e:  # noqa: BLE001
            pytest.fail(f"{label}/{runner}: raw {type(e).__name__} escaped: {e}")
        else:
            pytest.fail(f"{label}/{runner}: no error raised")


def test_feeding_a_non_placeholder_and_bad_targets():
    g, x, y = _feed_graph()
    z = g.exponent(y, name="z")
    with pytest.raises(mg.MiniGraphError, match="y"):
        g.run({x: np.ones((2, 3), np.float32), y: np.ones((2, 3), np.float32)}, [z])
    for bad in (["z"], [None], [mg.Graph().placeholder([1], name="alien")], [3]):
        with pytest.raises(mg.MiniGraphError):
            g.run({x: np.ones((2, 3), np.float32)}, bad)
    with pytest.raises(mg.MiniGraphError):
        g.run({x: np.ones((2, 3), np.float32)}, [], [z])  # a tensor as a target operation
    with pytest.raises(mg.MiniGraphError):
        g.compile({x: mg.ShapedType([3, 3], mg.float32)}, [z])
    with pytest.raises(mg.MiniGraphError):
        g.compile({x: mg.ShapedType([2, 3], mg.int32)}, [z])
    with pytest.raises(mg.MiniGraphError):
        g.compile({x: "float32"}, [z])


# ========================================================================= issue 9: nothing lost
def _ro(a):
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


def _families(rng):
    """(name, builder(g, x_placeholders) -> targets, feeds shapes) over every op family."""
    f32 = np.float32

    def elementwise(g, p):
        a, b = p
        return [a + b, a - b, a * b, a / (g.absolute(b) + 1.0), g.maximum(a, b), g.minimum(a, b),
                g.power(g.absolute(a) + 1.0, b), g.negative(a), g.absolute(a), g.exponent(a),
                g.logarithm(g.absolute(a) + 1.0), g.square(a), g.square_root(g.absolute(a)),
                g.reciprocal(g.absolute(a) + 1.0), g.tanh(a), g.sigmoid(a), g.relu(a), g.sin(a), g.cos(a),
                g.select(a > b, a, b), g.cast(a, mg.int32), g.identity(a), a == b, a != b, a < b, a <= b,
                a >= b]

    def reductions(g, p):
        a, _ = p
        return [g.reduction_sum(a, axes=[1]), g.reduction_maximum(a, axes=[0]), g.reduction_minimum(a),
                g.mean(a, axes=[0, 1]), g.softmax(a, axis=-1)]

    def shapes(g, p):
        a, b = p
        return [g.reshape(a, [-1]), g.transpose(a, 0, 1), g.permute(a, [1, 0]), g.slice(a, 1, 1, 2),
                g.concat([a, b], 0), g.broadcast(g.reshape(a, [1, 4, 6]), [2, 4, 6]), g.expand_dims(a, axis=0),
                g.squeeze(g.expand_dims(a, axis=0), axes=[0]), a @ g.transpose(b, 0, 1)]

    def conv(g, p):
        x, w = p
        d = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=2, padding_style=mg.PaddingStyle.TF_SAME)
        y = g.depthwise_convolution_2d(x, w, descriptor=d)
        loss = g.reduction_sum(g.square(y))
        gr = g.gradients(loss, [x, w])
        pool = g.max_pooling_2d(x, mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=2,
                                                            stride_in_y=2))
        cv = g.convolution_2d(x, g.constant(rng.standard_normal((4, 2, 3, 3)).astype(f32)),
                              descriptor=mg.Convolution2DOpDescriptor(groups=1))
        return [y, gr[x], gr[w], pool, cv, g.reduction_sum(cv)]

    return [("elementwise", elementwise, [(4, 6), (4, 6)]), ("reductions", reductions, [(4, 6), (4, 6)]),
            ("shapes", shapes, [(4, 6), (4, 6)]), ("conv", conv, [(2, 2, 7, 7), (1, 2, 3, 3)])]


@pytest.mark.parametrize("family", ["elementwise", "reductions", "shapes", "conv"])
def test_read_only_feeds_work_for_every_op_family_and_are_not_mutated(family, backend, rng):
    name, build, shapes = [f for f in _families(rng) if f[0] == family][0]
    g = mg.Graph()
    ps = [g.placeholder(list(s), mg.float32, name=f"p{i}") for i, s in enumerate(shapes)]
    targets = build(g, ps)
    feeds = {p: _ro(rng.standard_normal(s).astype(np.float32) + 0.1) for p, s in zip(ps, shapes)}
    before = {p: v.copy() for p, v in feeds.items()}
    try:
        out = g.run(feeds, targets, backend=backend)
    except mg.KernelMissingError as e:
        pytest.skip(str(e))
    for p in ps:
        assert np.array_equal(feeds[p], before[p])
        assert not feeds[p].flags.writeable
    ref = g.run({p: v.copy() for p, v in before.items()}, targets, backend=backend)
    for t in targets:
        np.testing.assert_array_equal(out[t], ref[t])
        assert out[t].flags.writeable


def test_read_only_variable_and_constant_inputs():
    g = mg.Graph()
    v = g.variable(_ro(np.ones(3, np.float32)), name="v")
    k = g.constant(_ro(np.full(3, 2.0, np.float32)))
    step = g.assign(v, v * k)
    g.run({}, [], [step])
    np.testing.assert_array_equal(g.value_of(v), [2, 2, 2])


def test_feeds_compared_after_run_through_an_executable(backend, rng):
    g = mg.Graph()
    x = g.placeholder([-1, 5], name="x")
    v = g.variable(np.zeros((1, 5), np.float32), name="acc")
    y = g.softmax(x + v)
    step = g.assign(v, v + g.reduction_sum(x, axes=[0]))
    exe = g.compile({x: mg.ShapedType([-1, 5], mg.float32)}, [y], [step], backend=backend)
    xv = rng.standard_normal((3, 5)).astype(np.float32)
    keep = xv.copy()
    exe.run({x: xv})
    exe.run(feeds={x: xv})
    assert np.array_equal(xv, keep)


def _counter_graph():
    g = mg.Graph()
    v = g.variable(np.array([1.0, 2.0, 3.0], np.float32), name="v")
    u = g.variable(np.array([5.0], np.float32), name="u")
    x = g.placeholder([-1], name="x")
    first = g.assign(v, v + 10.0, name="first")             # built (and runnable) before the failing op
    second = g.assign(u, u * 2.0, name="second")
    bad = g.addition(x, v, name="late")                      # clashes at run time for len(x) != 3
    return g, v, u, x, first, second, bad


def test_a_failed_run_leaves_every_variable_unchanged(backend):
    g, v, u, x, first, second, bad = _counter_graph()
    with pytest.raises(mg.MiniGraphError) as e:
        g.run({x: np.ones(5, np.float32)}, [bad], [first, second], backend=backend)
    assert "late" in str(e.value)
    np.testing.assert_array_equal(g.value_of(v), [1, 2, 3])
    np.testing.assert_array_equal(g.value_of(u), [5])
    g.run({x: np.ones(3, np.float32)}, [bad], [first, second], backend=backend)
    np.testing.assert_array_equal(g.value_of(v), [11, 12, 13])
    np.testing.assert_array_equal(g.value_of(u), [10])


def test_a_kernel_error_mid_run_with_assigns_in_target_operations(monkeypatch, replace_kernel):
    """A kernel that raises after an assign has run: no variable changes, the error is a MiniGraphError."""
    from minigraph.backends.numpy import KERNELS

    g = mg.Graph()
    v = g.variable(np.zeros(2, np.float32), name="v")
    x = g.placeholder([2], name="x")
    a1 = g.assign(v, v + 1.0, name="a1")
    with g.control_dependencies([a1]):
        boom = g.cos(x, name="boom")
    a2 = g.assign(v, g.read(v) + boom, name="a2")
    exe = g.compile({x: mg.ShapedType([2], mg.float32)}, [boom], [a1, a2])

    def broken(step):
        def fn(*arrays):
            raise FloatingPointError("kernel exploded")
        return fn

    replace_kernel(KERNELS, "cos", broken)
    g2_exe = g.compile({x: mg.ShapedType([2], mg.float32)}, [boom], [a2])
    for e in (g2_exe,):
        with pytest.raises(mg.MiniGraphError) as err:
            e.run({x: np.ones(2, np.float32)})
        assert "boom" in str(err.value)
        np.testing.assert_array_equal(g.value_of(v), [0, 0])
    del exe


def test_a_custom_backend_that_raises_midway_changes_nothing():
    class Exploding:
        name = "exploding_8_9"

        def available(self):
            return True, "test backend"

        def prepare(self, plan):
            def run(feed_values, variables):
                raise RuntimeError("device lost")
            return run

    from minigraph import backends as registry

    mg.register_backend("exploding_8_9", Exploding)
    try:
        g = mg.Graph()
        v = g.variable(np.ones(2, np.float32), name="v")
        step = g.assign(v, v + 1.0, name="step")
        with pytest.raises(mg.MiniGraphError):
            g.run({}, [], [step], backend="exploding_8_9")
        np.testing.assert_array_equal(g.value_of(v), [1, 1])
    finally:  # other tests loop over every available backend
        registry._FACTORIES.pop("exploding_8_9", None)
        registry._INSTANCES.pop("exploding_8_9", None)


def test_results_are_not_aliased(backend, rng):
    g = mg.Graph()
    x = g.placeholder([3, 4], name="x")
    v = g.variable(np.ones((3, 4), np.float32), name="v")
    k = g.constant(np.full((3, 4), 2.0, np.float32))
    ident = g.identity(x)
    y = x + v
    flat = g.reshape(y, [12])
    tp = g.transpose(y, 0, 1)
    targets = [x, ident, v, k, y, flat, tp, g.read(v), g.squeeze(g.expand_dims(y, axis=0), axes=[0])]
    exe = g.compile({x: mg.ShapedType([3, 4], mg.float32)}, targets, backend=backend)
    xv = rng.standard_normal((3, 4)).astype(np.float32)
    first = exe.run({x: xv})
    kept = [a.copy() for a in first]
    for i, a in enumerate(first):
        assert isinstance(a, np.ndarray)
        assert not np.shares_memory(a, xv)
        for j, b in enumerate(first):
            if i != j:
                assert not np.shares_memory(a, b), (targets[i].name, targets[j].name)
        a[...] = -99.0  # mutate what we got
    np.testing.assert_array_equal(g.value_of(v), np.ones((3, 4)))
    second = exe.run({x: xv})
    for a, b in zip(second, kept):
        np.testing.assert_array_equal(a, b)
    # a later run does not overwrite an earlier result
    third = exe.run({x: xv + 1})
    np.testing.assert_array_equal(second[4], kept[4])
    assert not np.array_equal(third[4], second[4])
    val = g.value_of(v)
    val[...] = 7
    np.testing.assert_array_equal(g.value_of(v), np.ones((3, 4)))


def test_g_run_results_not_aliased_to_feeds_or_cached_buffers():
    g = mg.Graph()
    x = g.placeholder([4], name="x")
    y = g.identity(x)
    xv = np.arange(4, dtype=np.float32)
    r1 = g.run({x: xv}, [y, x])
    assert not np.shares_memory(r1[y], xv) and not np.shares_memory(r1[x], xv)
    r1[y][:] = 0
    r2 = g.run({x: xv}, [y])
    np.testing.assert_array_equal(r2[y], [0, 1, 2, 3])
    np.testing.assert_array_equal(xv, [0, 1, 2, 3])


# =========================================================================== issue 9: concurrency
def _mlp_graph(rng):
    g = mg.Graph()
    x = g.placeholder([-1, 8], name="x")
    w = g.variable(rng.standard_normal((8, 5)).astype(np.float32), name="w")
    h = g.relu(g.matrix_multiplication(x, w))
    y = g.softmax(h, axis=-1)
    s = g.reduction_sum(g.square(h), axes=[1])
    return g, x, [y, s]


def test_one_executable_from_8_threads_threadpool_equals_sequential(backend, rng):
    g, x, targets = _mlp_graph(rng)
    exe = g.compile({x: mg.ShapedType([16, 8], mg.float32)}, targets, backend=backend)
    feeds = [rng.standard_normal((16, 8)).astype(np.float32) for _ in range(32)]
    seq = [exe.run({x: f}) for f in feeds]
    with cf.ThreadPoolExecutor(max_workers=8) as pool:
        par = list(pool.map(lambda f: exe.run({x: f}), feeds))
    for a, b in zip(seq, par):
        for u, w in zip(a, b):
            np.testing.assert_array_equal(u, w)


def test_8_raw_threads_started_together(backend, rng):
    g, x, targets = _mlp_graph(rng)
    exe = g.compile({x: mg.ShapedType([4, 8], mg.float32)}, targets, backend=backend)
    feeds = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(8)]
    seq = [exe.run({x: f}) for f in feeds]
    barrier = threading.Barrier(8)
    out, errs = [None] * 8, []

    def work(i):
        try:
            barrier.wait()
            for _ in range(5):
                r = exe.run({x: feeds[i]})
                for u, w in zip(r, seq[i]):
                    assert np.array_equal(u, w)
            out[i] = r
        except BaseException as e:  # noqa: BLE001
            errs.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errs, errs


def test_g_run_from_many_threads(backend, rng):
    g, x, targets = _mlp_graph(rng)
    feeds = [rng.standard_normal((n, 8)).astype(np.float32) for n in (1, 2, 3, 4) * 4]
    seq = [g.run({x: f}, targets, backend=backend) for f in feeds]
    with cf.ThreadPoolExecutor(8) as pool:
        par = list(pool.map(lambda f: g.run({x: f}, targets, backend=backend), feeds))
    for a, b in zip(seq, par):
        for t in targets:
            np.testing.assert_array_equal(a[t], b[t])


def test_building_while_another_thread_runs(backend, rng):
    g, x, targets = _mlp_graph(rng)
    exe = g.compile({x: mg.ShapedType([4, 8], mg.float32)}, targets, backend=backend)
    feed = rng.standard_normal((4, 8)).astype(np.float32)
    want = exe.run({x: feed})
    stop = threading.Event()
    errs = []

    def runner():
        try:
            while not stop.is_set():
                for u, w in zip(exe.run({x: feed}), want):
                    assert np.array_equal(u, w)
        except BaseException as e:  # noqa: BLE001
            errs.append(e)

    ts = [threading.Thread(target=runner) for _ in range(3)]
    [t.start() for t in ts]
    try:
        built = []
        for i in range(300):
            t = g.addition(targets[1], float(i), name="extra")
            built.append(g.exponent(g.negative(t)))
    finally:
        stop.set()
        [t.join() for t in ts]
    assert not errs, errs
    names = [op.name for op in g.operations]
    assert len(names) == len(set(names))
    r = g.run({x: feed}, [built[-1]], backend=backend)[built[-1]]
    assert r.shape == (4, 1)
    assert re.search(r"thread", (DOCS / "reliability.md").read_text(encoding="utf-8"), re.I)


def test_concurrent_variable_updates_follow_the_documented_rule(backend):
    g = mg.Graph()
    v = g.variable(np.zeros((2,), np.float32), name="v")
    step = g.assign(v, v + 1.0)
    exe = g.compile({}, [], [step], backend=backend)
    with cf.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: [exe.run({}) for _ in range(25)], range(8)))
    np.testing.assert_array_equal(g.value_of(v), [200, 200])
    # and through g.run, with an optimizer op and a read in the same run
    g2 = mg.Graph()
    c = g2.variable(np.zeros((), np.float32), name="c")
    inc = g2.apply_stochastic_gradient_descent(1.0, c, g2.constant(np.float32(-1.0)))
    with cf.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: g2.run({}, [], [inc], backend=backend), range(80)))
    assert float(g2.value_of(c)) == 80.0
    text = (DOCS / "reliability.md").read_text(encoding="utf-8").lower()
    assert "serial" in text and "variable" in text


# =============================================================================== issue 9: limits
@pytest.mark.parametrize("shape", [[2 ** 40, 2 ** 40], [2 ** 62], [2 ** 31, 2 ** 31, 4], [2 ** 20, 2 ** 20]])
def test_huge_placeholder_fails_at_compile_with_a_clear_error(shape, backend):
    g = mg.Graph()
    x = g.placeholder(shape, mg.float32, name="huge")  # declaring is fine: nothing is allocated
    y = g.exponent(x, name="e")
    for attempt in (lambda: g.compile({x: mg.ShapedType(shape, mg.float32)}, [y], backend=backend),):
        try:
            attempt()
        except mg.MiniGraphError as e:
            assert "huge" in str(e) or "e" in str(e)
            assert re.search(r"element|bytes|memory|large|limit", str(e), re.I), str(e)
            assert not isinstance(e, MemoryError), "a clear error, not a MemoryError"
        except MemoryError as e:  # a raw one
            pytest.fail(f"raw MemoryError: {e}")
        else:
            pytest.fail("compile accepted a huge shape")


def test_huge_shapes_reached_by_inference_fail_at_compile(backend):
    g = mg.Graph()
    a = g.placeholder([2 ** 20, 1], name="a")
    b = g.placeholder([1, 2 ** 20], name="b")
    outer = g.matrix_multiplication(a, b, name="outer")          # 2**40 elements
    bc = g.broadcast(g.placeholder([1], name="c"), [2 ** 24, 2 ** 24], name="bc")
    with pytest.raises(mg.MiniGraphError, match="outer"):
        g.compile({a: mg.ShapedType([2 ** 20, 1], mg.float32), b: mg.ShapedType([1, 2 ** 20], mg.float32)},
                  [outer], backend=backend)
    with pytest.raises(mg.MiniGraphError, match="bc"):
        g.compile({g.tensor("c"): mg.ShapedType([1], mg.float32)}, [bc], backend=backend)
    # dynamic dims resolved to huge sizes at compile
    g2 = mg.Graph()
    d = g2.placeholder([-1, -1], name="dyn")
    with pytest.raises(mg.MiniGraphError, match="dyn"):
        g2.compile({d: mg.ShapedType([2 ** 40, 2 ** 40], mg.float32)}, [g2.relu(d)], backend=backend)


def test_huge_shape_through_run_is_a_minigraph_error():
    g = mg.Graph()
    x = g.placeholder([2], name="x")
    big = g.broadcast(g.reshape(x, [2, 1]), [2, 2 ** 40], name="wide")
    with pytest.raises(mg.MiniGraphError, match="wide"):
        g.run({x: np.ones(2, np.float32)}, [big])


UNARY = ["negative", "absolute", "exponent", "logarithm", "square", "square_root", "reciprocal", "tanh",
         "sigmoid", "relu", "sin", "cos", "identity", "sign", "stop_gradient"]
BINARY = ["addition", "subtraction", "multiplication", "division", "maximum", "minimum", "power"]


def test_nan_propagates_through_every_elementwise_op(backend, rng):
    shape = (3, 4)
    g = mg.Graph()
    x = g.placeholder(list(shape), name="x")
    y = g.placeholder(list(shape), name="y")
    targets = {f"{u}": getattr(g, u)(x) for u in UNARY}
    for b in BINARY:
        targets[f"{b}(nan, y)"] = getattr(g, b)(x, y)
        targets[f"{b}(y, nan)"] = getattr(g, b)(y, x)
    nan = np.full(shape, np.nan, np.float32)
    yv = (rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)).astype(np.float32)
    out = g.run({x: nan, y: yv}, list(targets.values()), backend=backend)
    for k, t in targets.items():
        assert np.isnan(out[t]).all(), (k, out[t])


def test_nan_propagates_through_matmul_convolutions_and_pooling(backend):
    g = mg.Graph()
    x = g.placeholder([1, 2, 6, 6], name="x")
    nan = np.full((1, 2, 6, 6), np.nan, np.float32)
    same = mg.PaddingStyle.TF_SAME
    w = g.constant(np.ones((1, 2, 3, 3), np.float32))
    ts = [g.depthwise_convolution_2d(x, w, descriptor=mg.DepthwiseConvolution2DOpDescriptor(padding_style=same)),
          g.convolution_2d(x, g.constant(np.ones((3, 2, 3, 3), np.float32)),
                           descriptor=mg.Convolution2DOpDescriptor(padding_style=same)),
          g.max_pooling_2d(x, mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=2, stride_in_y=2)),
          g.avg_pooling_2d(x, mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=2, stride_in_y=2)),
          g.matrix_multiplication(g.reshape(x, [12, 6]), g.constant(np.ones((6, 4), np.float32))),
          g.softmax_cross_entropy(g.reshape(x, [12, 6]), g.constant(np.full((12, 6), 1 / 6, np.float32)))]
    try:
        out = g.run({x: nan}, ts, backend=backend)
    except mg.KernelMissingError as e:
        pytest.skip(str(e))
    for t in ts:
        assert np.isnan(out[t]).all(), (t.operation.type, out[t])


@pytest.mark.parametrize("red", ["reduction_sum", "reduction_maximum", "reduction_minimum", "mean", "softmax"])
def test_nan_propagates_through_reductions_and_softmax(red, backend, rng):
    g = mg.Graph()
    x = g.placeholder([3, 5], name="x")
    y = g.softmax(x, axis=1) if red == "softmax" else getattr(g, red)(x, axes=[1])
    xv = rng.standard_normal((3, 5)).astype(np.float32)
    xv[1, 2] = np.nan
    out = g.run({x: xv}, [y], backend=backend)[y]
    assert np.isnan(out[1]).all(), out
    assert np.isfinite(out[[0, 2]]).all(), out


def test_inf_follows_ieee(backend):
    g = mg.Graph()
    x = g.placeholder([6], name="x")
    sp = np.array([np.inf, -np.inf, np.nan, 1.0, -2.0, 0.0], np.float32)
    t = {
        "maximum": g.maximum(x, 0.5), "minimum": g.minimum(x, 0.5), "relu": g.relu(x),
        "exp": g.exponent(x), "neg": g.negative(x), "sum": g.reduction_sum(x), "max": g.reduction_maximum(x),
        "add_self": x + x, "sub_self": x - x, "div0": g.division(x, 0.0), "log": g.logarithm(x),
        "sqrt": g.square_root(x), "tanh": g.tanh(x), "sigmoid": g.sigmoid(x),
    }
    out = {k: v for k, v in zip(t, g.run({x: sp}, list(t.values()), backend=backend).values())}
    with np.errstate(all="ignore"):
        want = {
            "maximum": np.array([np.inf, 0.5, np.nan, 1.0, 0.5, 0.5]), "minimum": np.array([0.5, -np.inf, np.nan, 0.5, -2, 0]),
            "relu": np.array([np.inf, 0, np.nan, 1, 0, 0]), "exp": np.exp(sp.astype(np.float64)),
            "neg": -sp, "sum": [np.nan], "max": [np.nan], "add_self": sp + sp, "sub_self": sp - sp,
            "div0": sp.astype(np.float64) / 0.0, "log": np.log(sp.astype(np.float64)),
            "sqrt": np.sqrt(sp.astype(np.float64)), "tanh": np.tanh(sp.astype(np.float64)),
            "sigmoid": 1 / (1 + np.exp(-sp.astype(np.float64))),
        }
    for k in t:
        got = np.asarray(out[k], np.float64).ravel()
        exp = np.asarray(want[k], np.float64).ravel()
        assert np.array_equal(np.isnan(got), np.isnan(exp)), (k, got, exp)
        assert np.array_equal(np.isposinf(got), np.isposinf(exp)), (k, got, exp)
        assert np.array_equal(np.isneginf(got), np.isneginf(exp)), (k, got, exp)
        fin = np.isfinite(exp)
        np.testing.assert_allclose(got[fin], exp[fin], rtol=1e-5, atol=1e-6, err_msg=k)


def test_reductions_with_inf_and_softmax_with_minus_inf(backend):
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    xv = np.array([[np.inf, 1.0, 2.0], [-np.inf, 0.0, 0.0]], np.float32)
    s, m, mx, mn, sm = (g.reduction_sum(x, axes=[1]), g.mean(x, axes=[1]), g.reduction_maximum(x, axes=[1]),
                        g.reduction_minimum(x, axes=[1]), g.softmax(x, axis=1))
    out = g.run({x: xv}, [s, m, mx, mn, sm], backend=backend)
    np.testing.assert_array_equal(out[s].ravel(), [np.inf, -np.inf])
    np.testing.assert_array_equal(out[m].ravel(), [np.inf, -np.inf])
    np.testing.assert_array_equal(out[mx].ravel(), [np.inf, 0.0])
    np.testing.assert_array_equal(out[mn].ravel(), [1.0, -np.inf])
    np.testing.assert_allclose(out[sm][1], [0.0, 0.5, 0.5], atol=1e-7)
    big = g.placeholder([2], name="big")
    e = g.exponent(big)
    r = g.run({big: np.array([100.0, 1e30], np.float32)}, [e, g.square(big)], backend=backend)
    assert np.isinf(r[e]).all()


def test_integer_overflow_is_documented_and_wraps(backend):
    text = (DOCS / "reliability.md").read_text(encoding="utf-8").lower()
    assert "overflow" in text and ("wrap" in text or "modulo" in text)
    g = mg.Graph()
    a = g.placeholder([3], mg.int32, name="a")
    y = a + g.constant(np.int32(1))
    z = a * g.constant(np.int32(2))
    av = np.array([2 ** 31 - 1, -2 ** 31, 5], np.int32)
    out = g.run({a: av}, [y, z], backend=backend)
    np.testing.assert_array_equal(out[y], [-2 ** 31, -2 ** 31 + 1, 6])
    np.testing.assert_array_equal(out[z], [-2, 0, 10])


# ========================================================================== issue 9: determinism
def test_numpy_backend_is_bit_identical(rng):
    def build():
        g = mg.Graph()
        x = g.placeholder([2, 3, 9, 9], name="x")
        w = g.variable(np.random.default_rng(1).standard_normal((2, 3, 3, 3)).astype(np.float32), name="w")
        y = g.depthwise_convolution_2d(x, w, descriptor=mg.DepthwiseConvolution2DOpDescriptor(
            padding_style=mg.PaddingStyle.TF_SAME, stride_in_x=2, stride_in_y=2))
        loss = g.mean(g.softmax(g.reshape(y, [2, -1]), axis=-1) * g.reshape(y, [2, -1]))
        gr = g.gradients(loss, [x, w])
        return g, x, [y, loss, gr[x], gr[w]]

    xv = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    g, x, ts = build()
    first = [a.tobytes() for a in g.run({x: xv}, ts).values()]
    for _ in range(3):
        assert [a.tobytes() for a in g.run({x: xv}, ts).values()] == first
    g2, x2, ts2 = build()
    assert [a.tobytes() for a in g2.run({x2: xv.copy()}, ts2).values()] == first
    exe = g.compile({x: mg.ShapedType(xv.shape, mg.float32)}, ts)
    assert [a.tobytes() for a in exe.run({x: xv})] == first


# ============================================================================ issue 9: fuzz script
def test_fuzzing_is_in_the_suite_with_hypothesis():
    src = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").glob("test_*.py"))
    assert "hypothesis" in src and "MiniGraphError" in src


def test_long_fuzz_script_exists_defaults_to_10000_and_reports_counts(tmp_path):
    scripts = [p for p in (ROOT / "scripts").glob("*.py") if "fuzz" in p.name]
    assert scripts
    script = scripts[0]
    assert _tracked(script)
    help_ = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    assert help_.returncode == 0
    assert "10000" in help_.stdout.replace(",", "") or "10000" in script.read_text().replace(",", "")
    r = subprocess.run([sys.executable, str(script), "--cases", "40", "--seed", "3", "--backends", "numpy",
                        "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(r"\b\d+\b", r.stdout) and re.search(r"valid", r.stdout, re.I) and re.search(r"invalid", r.stdout, re.I)


