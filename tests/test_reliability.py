"""Reliability: only MiniGraphError for invalid input, nothing lost, concurrency, limits, NaN/Inf,
integer overflow, determinism.

The rules tested here are the ones docs/reliability.md states. References are written in the
tests: IEEE results computed with NumPy in float64, integer results as Python ints reduced modulo
2**bits (not NumPy's own wrapping).
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import minigraph as mg
from graph_zoo import every_op_graph

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _page(name):
    with open(os.path.join(ROOT, "docs", name), encoding="utf-8") as f:
        return f.read()


def _run_or_skip(g, feeds, targets, ops=(), backend="numpy"):
    try:
        return g.run(feeds, targets, list(ops), backend=backend)
    except mg.KernelMissingError as e:
        pytest.skip(f"{backend} lacks a kernel: {e}")


def _stateless_run(g, feeds, targets, backend="numpy"):
    """g.run, then put the variables back: the zoo graph assigns (through control dependencies)."""
    saved = g.variable_store.values
    try:
        return g.run(feeds, targets, backend=backend)
    finally:
        g.variable_store.restore(saved)


def _readonly(a):
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


# ====================================================================== only MiniGraphError, naming the op
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
        ("mean_bool", lambda: (lambda g: g.mean(g.placeholder([2], mg.bool_), name="mn"))(mg.Graph()), ["mn"]),
        ("softmax_axis", lambda: (lambda g, x: g.softmax(x, axis=7, name="sm"))(*_g()), ["sm"]),
        ("slice_oob", lambda: (lambda g, x: g.slice(x, 1, 2, 5, name="sl"))(*_g()), ["sl"]),
        ("slice_dim", lambda: (lambda g, x: g.slice(x, 4, 0, 1, name="sl"))(*_g()), ["sl"]),
        ("concat_shape", lambda: (lambda g, x: g.concat([x, g.placeholder([3, 3])], 1, name="cc"))(*_g()), ["cc"]),
        ("concat_dtype", lambda: (lambda g, x: g.concat([x, g.placeholder([2, 3], mg.int32)], 0, name="cc"))(*_g()), ["cc"]),
        ("concat_empty", lambda: mg.Graph().concat([], 0, name="cc"), ["cc"]),
        ("broadcast_bad", lambda: (lambda g, x: g.broadcast(x, [4, 4], name="bc"))(*_g()), ["bc"]),
        ("expand_axis", lambda: (lambda g, x: g.expand_dims(x, axes=9, name="ed"))(*_g()), ["ed"]),
        ("squeeze_non1", lambda: (lambda g, x: g.squeeze(x, axes=[0], name="sq"))(*_g()), ["sq"]),
        ("select_shapes", lambda: (lambda g, x: g.select(x > 0, x, g.placeholder([4]), name="sel"))(*_g()), ["sel"]),
        ("cast_unknown", lambda: (lambda g, x: g.cast(x, "complex256", name="cst"))(*_g()), ["complex256"]),
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


def test_an_op_is_made_only_with_its_declared_inputs_and_attributes():
    """add_op (used by builders, autodiff and the loader) refuses an input count other than the
    declaration's, and attribute names it does not know: a NumPy ufunc bound by arity would take
    an extra input as its out= and write the result into it."""
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    y = g.placeholder([3], name="y")
    bad = [("exponent", [x, y], {}, "takes 1 input .tensor., got 2"),
           ("addition", [x], {}, r"takes 2 inputs \(primary, secondary\), got 1"),
           ("select", [x, y], {}, "takes 3 inputs"),
           ("placeholder", [x], {"shape": (3,), "dtype": mg.float32}, "takes 0 inputs"),
           ("concat", [], {"dimension": 0}, "one or more tensors, got 0"),
           ("exponent", [x], {"out": y}, "unknown attribute 'out'; exponent takes no attributes"),
           ("reshape", [x], {"shape": (3,), "order": "F"}, "unknown attribute 'order'; reshape takes 'shape'"),
           ("constant", [], {"shape": (), "dtype": mg.float32, "value": np.float32(1), "fill": 2}, "unknown attribute 'fill'"),
           ("exponent", x, {}, "inputs must be a list of tensors"),
           ("exponent", [x], [("out", y)], "attributes must be a dict")]
    for typ, ins, attrs, words in bad:
        with pytest.raises(mg.MiniGraphError, match=words):
            g.add_op(typ, ins, attrs, name="crafted")
    assert [op.name for op in g.operations] == ["x", "y"]  # nothing was added
    assert g.add_op("concat", [x, y, x], {"dimension": 0}).output.shape == (9,)
    for op in every_op_graph()[0].operations:  # every declaration knows its builder's attributes
        assert set(op.attrs) <= set(op.opdef.attr_names), op
    assert "value" not in mg.ir.OPS["constant"].attrs and "value" in mg.ir.OPS["constant"].attr_names


def test_a_crafted_op_cannot_write_into_a_feed(backend, tmp_path):
    """An exponent op given a second input (by add_op or in a graph file) is refused, so no run
    can pass a feed to the kernel as its out= argument."""
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    y = g.placeholder([3], name="y")
    e = g.exponent(x, name="e")
    path = g.save(tmp_path / "g.json")
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    [entry] = [o for o in doc["ops"] if o["name"] == "e"]
    entry["inputs"].append(["y", 0])
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    with pytest.raises(mg.SerializationError, match="'e'"):
        mg.load(path)
    with pytest.raises(mg.MiniGraphError, match="exponent op 'e2': takes 1 input"):
        g.add_op("exponent", [x, y], {}, name="e2")
    xv, yv = np.ones(3, np.float32), np.zeros(3, np.float32)
    out = g.run({x: xv, y: yv}, [e], backend=backend)[e]
    np.testing.assert_allclose(out, np.exp(np.ones(3)), rtol=1e-6)
    np.testing.assert_array_equal(yv, np.zeros(3))


_SCALARS_REFUSED = [  # (operand dtype, scalar, builder): each conversion would change the value
    (mg.int8, 300, "addition"), (mg.int8, np.int64(300), "addition"), (mg.int8, np.array(300), "addition"),
    (mg.int8, np.int16(-129), "subtraction"), (mg.uint8, np.int64(-1), "addition"), (mg.uint8, -1, "addition"),
    (mg.int32, np.float64(0.5), "multiplication"), (mg.int32, np.float32(np.nan), "addition"),
    (mg.int32, np.uint64(2 ** 63), "addition"), (mg.bool, 2, "equal"), (mg.bool, np.int64(2), "equal"),
    (mg.bool, 0.5, "not_equal"), (mg.bool, np.array(-1), "equal"),
    (mg.float16, 70000, "addition"), (mg.float16, np.float64(1e5), "addition"), (mg.float16, np.int64(65520), "maximum"),
    (mg.float32, 1e39, "addition"), (mg.float32, np.float64(-1e300), "addition"), (mg.float32, 10 ** 400, "addition"),
]
_SCALARS_KEPT = [  # (operand dtype, scalar, its value in that dtype)
    (mg.int8, np.int64(-128), -128), (mg.int8, np.array(127), 127), (mg.uint8, np.uint64(255), 255),
    (mg.int32, np.float64(3.0), 3), (mg.bool, 1, True), (mg.bool, np.int64(0), False), (mg.bool, True, True),
    (mg.float16, 65504, 65504.0), (mg.float16, np.float64(65519.0), 65504.0), (mg.float16, 1e-8, 0.0),
    (mg.float32, np.float64(0.1), np.float32(0.1)), (mg.float32, np.inf, np.inf), (mg.float32, np.float64(-np.inf), -np.inf),
    (mg.float32, np.float64(np.nan), np.nan), (mg.float32, 16777217, 16777216.0),
]


@pytest.mark.parametrize("dtype, scalar, builder", _SCALARS_REFUSED, ids=lambda v: repr(v)[:24])
def test_a_scalar_that_changes_in_the_operand_dtype_is_refused(dtype, scalar, builder):
    """Python numbers, NumPy scalars and 0-d arrays take the other operand's dtype only exactly:
    no wrap (np.int64(300) as int8), no truth value (2 as bool), no overflow to inf (70000 as float16)."""
    g = mg.Graph()
    x = g.placeholder([2], dtype, name="x")
    with pytest.raises(mg.DTypeError, match=f"{builder} op 'op': operand .* cannot be made a tensor"):
        getattr(g, builder)(x, scalar, name="op")
    assert len(g.operations) == 1  # no constant was left behind


@pytest.mark.parametrize("dtype, scalar, value", _SCALARS_KEPT, ids=lambda v: repr(v)[:24])
def test_a_scalar_that_fits_the_operand_dtype_is_used(backend, dtype, scalar, value):
    g = mg.Graph()
    x = g.placeholder([2], dtype, name="x")
    y = g.select(g.constant(np.array([True, False])), g.identity(x), scalar, name="y")
    c = y.operation.inputs[2]
    assert c.dtype == dtype and c.operation.attrs["value"].dtype == dtype.np_dtype
    feed = np.zeros(2, dtype.np_dtype)
    try:
        out = g.run({x: feed}, [y], backend=backend)[y]
    except mg.KernelMissingError:
        pytest.skip(f"{backend} does not compute {dtype.name}")
    np.testing.assert_array_equal(out, np.array([0, value], dtype.np_dtype))


def test_feeds_of_numbers_lists_and_array_likes_follow_one_rule(backend):
    """Numbers and lists take the placeholder's dtype, exactly; arrays and array-likes (torch
    tensors, memoryviews) keep theirs and must match it, as ndarrays must: nothing is cast."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    g = mg.Graph()
    f32 = g.placeholder([2], mg.float32, name="f32")
    i32 = g.placeholder([2], mg.int32, name="i32")
    b = g.placeholder([2], mg.bool, name="b")
    f16 = g.placeholder([2], mg.float16, name="f16")
    ys = {f32: f32 * 2.0, i32: i32 + 1, b: g.not_equal(b, False), f16: f16 + g.constant(np.float16(0))}
    refused = [(f32, torch.tensor([1.5, 2.5], dtype=torch.float64), "float64"),
               (f32, memoryview(np.array([1.5, 2.5])), "float64"),
               (i32, torch.tensor([2 ** 40, 1]), "int64"),
               (i32, memoryview(np.array([1, 2], np.int64)), "int64"),
               (i32, [np.int64(2 ** 40), 1], "2 ?\\*\\* ?40|1099511627776"),
               (i32, [0.5, 1], "0.5"), (b, [2, 0], "2"), (f16, [70000, 1], "70000"),
               (f32, np.float64(1.5), "float64")]
    for t, v, words in refused:
        with pytest.raises(mg.FeedError, match=t.name):
            g.run({t: v}, [ys[t]], backend=backend)
        with pytest.raises(mg.FeedError, match=words):
            g.run({t: v}, [ys[t]], backend=backend)
    accepted = [(f32, torch.tensor([1.5, 2.5]), [3.0, 5.0]), (f32, memoryview(np.array([1.5, 2.5], np.float32)), [3.0, 5.0]),
                (f32, [1.5, 2.5], [3.0, 5.0]), (i32, torch.tensor([1, 2], dtype=torch.int32), [2, 3]),
                (i32, [np.int64(1), 2.0], [2, 3]), (f32, (np.float64(0.5), 1), [1.0, 2.0])]
    for t, v, want in accepted:
        np.testing.assert_array_equal(g.run({t: v}, [ys[t]], backend=backend)[ys[t]], want)
    needs_grad = torch.ones(2, requires_grad=True)  # NumPy cannot read it: a clear error, never a raw one
    for attempt in (lambda: g.run({f32: needs_grad}, [ys[f32]], backend=backend), lambda: g.constant(needs_grad),
                    lambda: f32 + needs_grad, lambda: f32 + torch.tensor(1.0, requires_grad=True)):
        with pytest.raises(mg.MiniGraphError, match="Tensor cannot be read as an array"):
            attempt()


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_array_subclasses_are_fed_as_plain_arrays_on_every_backend(backend):
    """np.matrix and a masked array without masked elements are their data, on every backend
    alike; a masked array hiding elements is refused (a backend would read the hidden values)."""
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    s = g.reduction_sum(x, axes=[1], name="s")
    sq = g.multiplication(x, x, name="sq")
    mm = g.matrix_multiplication(x, g.transpose(x, 0, 1), name="mm")
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = {s: data.sum(axis=1, keepdims=True), sq: data * data, mm: data @ data.T}
    for feed in (np.matrix(data), np.ma.masked_array(data), np.ma.masked_array(data, mask=np.zeros((2, 3), bool))):
        out = g.run({x: feed}, [s, sq, mm], backend=backend)
        for t, w in want.items():
            assert type(out[t]) is np.ndarray, (type(feed), t.name, type(out[t]))
            np.testing.assert_array_equal(out[t], w)
    hidden = np.ma.masked_array(data, mask=[[0, 1, 0], [0, 0, 0]])
    for run in (lambda: g.run({x: hidden}, [s], backend=backend),
                lambda: g.compile({x: mg.ShapedType([2, 3], mg.float32)}, [s], backend=backend).run({x: hidden})):
        with pytest.raises(mg.FeedError, match="'x'.*masked array with 1 masked element"):
            run()
    with pytest.raises(mg.DTypeError, match="constant op 'c'.*masked"):
        g.constant(hidden, name="c")
    assert g.constant(np.matrix(data), name="m").shape == (2, 3)


# =============================================================================== nothing lost
def test_feeds_are_never_mutated_by_any_op(backend):
    """Every op type, read-only feeds (an in-place write would raise), and an after-run comparison."""
    g, feeds, targets, ops = every_op_graph(3)
    ro = {t: _readonly(v) for t, v in feeds.items()}
    before = {t: v.copy() for t, v in feeds.items()}
    _run_or_skip(g, ro, targets, ops, backend)
    for t in feeds:
        assert np.array_equal(ro[t], before[t]), t.name
    # writeable feeds too: nothing relies on the read-only flag
    rw = {t: v.copy() for t, v in feeds.items()}
    _run_or_skip(g, rw, targets, ops, backend)
    for t in feeds:
        assert np.array_equal(rw[t], before[t]), t.name


def test_results_are_fresh_arrays_that_later_runs_do_not_touch(backend):
    g, feeds, targets, ops = every_op_graph(4)
    targets = list(targets)
    saved = g.variable_store.values
    first = _run_or_skip(g, feeds, targets, (), backend)
    g.variable_store.restore(saved)
    kept = {t: np.array(v, copy=True) for t, v in first.items()}
    internal = [op.attrs["value"] for op in g.operations if op.type == "constant"] + list(g.variable_store.values.values())
    for t, v in first.items():
        assert isinstance(v, np.ndarray) and v.flags.writeable, t.name
        assert not any(np.shares_memory(v, a) for a in list(feeds.values()) + internal), t.name
        v[...] = True if v.dtype == np.bool_ else 7  # scribble over every result
    again = _stateless_run(g, feeds, targets, backend)
    for t in targets:
        np.testing.assert_array_equal(again[t], kept[t], err_msg=t.name)


def test_targets_that_are_feeds_constants_or_variables_come_back_as_copies(backend, rng):
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    c = g.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="c")
    v = g.variable(np.full((2, 3), 5.0, np.float32), name="v")
    feed = np.random.default_rng(0).uniform(1, 2, (2, 3)).astype(np.float32)
    keep = feed.copy()
    targets = [x, c, v, g.identity(x), g.reshape(c, [3, 2]), g.identity(v)]
    for run in range(2):
        res = g.run({x: feed}, targets, backend=backend)
        for t in targets:
            assert not np.shares_memory(res[t], feed), t.name
            res[t][...] = -1.0
        np.testing.assert_array_equal(feed, keep)
        np.testing.assert_array_equal(g.value_of(v), np.full((2, 3), 5.0))
        np.testing.assert_array_equal(c.operation.attrs["value"], np.arange(6).reshape(2, 3))
    exe = g.compile({x: mg.ShapedType([2, 3], mg.float32)}, targets, backend=backend)
    a = exe.run({x: feed})
    b = exe.run({x: feed})
    for p, q in zip(a, b):
        assert not np.shares_memory(p, q)
    # identity, reshape, transpose, read and squeeze of them too: no two results share memory, writing
    # into one changes nothing, and a later run does not overwrite an earlier result
    g = mg.Graph()
    x = g.placeholder([3, 4], name="x")
    v = g.variable(np.ones((3, 4), np.float32), name="v")
    k = g.constant(np.full((3, 4), 2.0, np.float32))
    ident = g.identity(x)
    y = x + v
    flat = g.reshape(y, [12])
    tp = g.transpose(y, 0, 1)
    targets = [x, ident, v, k, y, flat, tp, g.read(v), g.squeeze(g.expand_dims(y, axes=0), axes=[0])]
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


def test_arrays_given_to_the_graph_are_copied():
    data = np.ones((2, 2), np.float32)
    g = mg.Graph()
    c = g.constant(data)
    v = g.variable(data)
    x = g.placeholder([2, 2], name="x")
    a = g.assign(v, x)
    feed = np.full((2, 2), 3.0, np.float32)
    g.run({x: feed}, [], [a])
    data[...] = 9.0  # the user's arrays, mutated after use
    feed[...] = 9.0
    np.testing.assert_array_equal(g.run({}, [c])[c], np.ones((2, 2)))
    np.testing.assert_array_equal(g.value_of(v), np.full((2, 2), 3.0))
    got = g.value_of(v)
    got[...] = 0.0  # value_of is a copy too
    np.testing.assert_array_equal(g.value_of(v), np.full((2, 2), 3.0))


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
                g.concat([a, b], 0), g.broadcast(g.reshape(a, [1, 4, 6]), [2, 4, 6]), g.expand_dims(a, axes=0),
                g.squeeze(g.expand_dims(a, axes=0), axes=[0]), a @ g.transpose(b, 0, 1)]

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
    feeds = {p: _readonly(rng.standard_normal(s).astype(np.float32) + 0.1) for p, s in zip(ps, shapes)}
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
    v = g.variable(_readonly(np.ones(3, np.float32)), name="v")
    k = g.constant(_readonly(np.full(3, 2.0, np.float32)))
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
    exe.run(inputs={x: xv})
    assert np.array_equal(xv, keep)


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


@pytest.fixture
def failing_op():
    """A test-only op whose NumPy kernel raises, registered for one test and removed afterwards."""
    from minigraph.backends.numpy.registry import KERNELS, numpy_kernel
    from minigraph.ir import OPS
    from minigraph.ops.registry import defop

    name = "reliability_test_failure"

    def builder(g, tensor, name_=None):
        return g.add_op(name, [tensor], {}, name_).output

    builder.__name__ = name
    defop(name, swift="-", objc="-", inputs=("tensor",), infer=lambda ts, a: [ts[0]], family="misc",
          differentiable=False)(builder)

    @numpy_kernel(name)
    def factory(step):
        def run(x):
            raise RuntimeError("injected failure inside a kernel")
        return run

    try:
        yield builder
    finally:
        KERNELS.unregister(name)
        OPS.pop(name, None)


def test_a_kernel_failing_midway_changes_no_variable(failing_op, replace_kernel):
    g = mg.Graph()
    v1 = g.variable(np.zeros(3, np.float32), name="v1")
    v2 = g.variable(np.full(3, 10.0, np.float32), name="v2")
    first = g.assign(v1, g.addition(v1, 1.0), name="first")
    with g.control_dependencies([first]):  # runs after `first` has been applied in this run
        bad = failing_op(g, g.read(v1), "boom")
    last = g.assign(v2, g.addition(bad, 1.0), name="last")
    exe = g.compile({}, [], [first, last])
    order = [s.op.name for s in exe.plan.steps]
    assert order.index("first") < order.index("boom") < order.index("last")  # the failure is midway
    for _ in range(2):
        with pytest.raises(mg.ExecutionError) as e:
            exe.run({})
        assert "boom" in str(e.value) and failing_op.__name__ in str(e.value) and "injected" in str(e.value)
        np.testing.assert_array_equal(g.value_of(v1), np.zeros(3))
        np.testing.assert_array_equal(g.value_of(v2), np.full(3, 10.0))
    g.run({}, [], [first])  # a run that succeeds commits
    np.testing.assert_array_equal(g.value_of(v1), np.ones(3))
    # a replaced kernel that raises, in a run whose target operations assign: no variable changes
    from minigraph.backends.numpy import KERNELS

    g = mg.Graph()
    v = g.variable(np.zeros(2, np.float32), name="v")
    x = g.placeholder([2], name="x")
    a1 = g.assign(v, v + 1.0, name="a1")
    with g.control_dependencies([a1]):
        boom = g.cos(x, name="boom")
    a2 = g.assign(v, g.read(v) + boom, name="a2")
    g.compile({x: mg.ShapedType([2], mg.float32)}, [boom], [a1, a2])  # compiles with the real kernel

    def broken(step):
        def fn(*arrays):
            raise FloatingPointError("kernel exploded")
        return fn

    replace_kernel(KERNELS, "cos", broken)
    exe = g.compile({x: mg.ShapedType([2], mg.float32)}, [boom], [a2])
    with pytest.raises(mg.MiniGraphError) as err:
        exe.run({x: np.ones(2, np.float32)})
    assert "boom" in str(err.value)
    np.testing.assert_array_equal(g.value_of(v), [0, 0])


def test_a_backend_without_the_kernel_refuses_at_compile(failing_op, backend):
    if backend == "numpy":
        pytest.skip("the numpy backend has the test kernel")
    g = mg.Graph()
    y = failing_op(g, g.constant(np.ones(2, np.float32)), "boom")
    if backend == "cpu":  # it has every NumPy kernel: an op it does not compile runs NumPy's
        exe = g.compile({}, [y], backend=backend)
        with pytest.raises(mg.ExecutionError, match="injected failure inside a kernel"):
            exe.run({})
        return
    with pytest.raises(mg.KernelMissingError, match=failing_op.__name__):
        g.compile({}, [y], backend=backend)


def test_a_memory_error_in_a_kernel_is_an_execution_error_and_changes_nothing(monkeypatch, replace_kernel):
    from minigraph.backends.numpy import kernels  # noqa: F401
    from minigraph.backends.numpy.registry import KERNELS

    def oom(step):
        def run(a, b):
            raise MemoryError("simulated: cannot allocate the result")
        return run

    replace_kernel(KERNELS, "matrix_multiplication", oom)
    g = mg.Graph()
    v = g.variable(np.eye(2, dtype=np.float32), name="v")
    inc = g.assign(v, v + 1.0, name="inc")
    with g.control_dependencies([inc]):
        y = g.matrix_multiplication(g.read(v), v, name="mm")
    with pytest.raises(mg.ExecutionError, match="matrix_multiplication op 'mm'.*MemoryError"):
        g.run({}, [y], [inc])
    np.testing.assert_array_equal(g.value_of(v), np.eye(2))


def _counter_graph():
    g = mg.Graph()
    v = g.variable(np.array([1.0, 2.0, 3.0], np.float32), name="v")
    u = g.variable(np.array([5.0], np.float32), name="u")
    x = g.placeholder([-1], name="x")
    first = g.assign(v, v + 10.0, name="first")             # built (and runnable) before the failing op
    second = g.assign(u, u * 2.0, name="second")
    bad = g.addition(x, v, name="late")                      # clashes at run time for len(x) != 3
    return g, v, u, x, first, second, bad


def test_a_bad_feed_discovered_late_changes_no_variable(backend):
    """Dynamic shapes that only clash once fed: the error names the op; variables are untouched."""
    g = mg.Graph()
    a = g.placeholder([-1], name="a")
    b = g.placeholder([-1], name="b")
    v = g.variable(np.zeros(3, np.float32), name="v")
    inc = g.assign(v, v + 1.0, name="inc")
    s = g.addition(a, b, name="sum")
    exe = g.compile({a: mg.ShapedType([-1], mg.float32), b: mg.ShapedType([-1], mg.float32)}, [s], [inc],
                    backend=backend)
    ok = exe.run({a: np.ones(3, np.float32), b: np.ones(3, np.float32)})
    np.testing.assert_array_equal(ok[0], np.full(3, 2.0))
    np.testing.assert_array_equal(g.value_of(v), np.ones(3))
    with pytest.raises(mg.ShapeError, match="addition op 'sum'"):
        exe.run({a: np.ones(3, np.float32), b: np.ones(4, np.float32)})
    np.testing.assert_array_equal(g.value_of(v), np.ones(3))
    with pytest.raises(mg.FeedError, match="'b'"):
        exe.run({a: np.ones(3, np.float32), b: np.ones(3, np.int32)})
    np.testing.assert_array_equal(g.value_of(v), np.ones(3))
    # two variables, assigns built before the op that fails; a good run afterwards commits both
    g, v, u, x, first, second, bad = _counter_graph()
    with pytest.raises(mg.MiniGraphError) as e:
        g.run({x: np.ones(5, np.float32)}, [bad], [first, second], backend=backend)
    assert "late" in str(e.value)
    np.testing.assert_array_equal(g.value_of(v), [1, 2, 3])
    np.testing.assert_array_equal(g.value_of(u), [5])
    g.run({x: np.ones(3, np.float32)}, [bad], [first, second], backend=backend)
    np.testing.assert_array_equal(g.value_of(v), [11, 12, 13])
    np.testing.assert_array_equal(g.value_of(u), [10])


def test_a_custom_backend_that_raises_midway_changes_nothing():
    class Exploding:
        name = "exploding"

        def available(self):
            return True, "test backend"

        def prepare(self, plan):
            def run(feed_values, variables):
                raise RuntimeError("device lost")
            return run

    mg.register_backend("exploding", Exploding)  # unregistered after the test by conftest
    g = mg.Graph()
    v = g.variable(np.ones(2, np.float32), name="v")
    step = g.assign(v, v + 1.0, name="step")
    with pytest.raises(mg.MiniGraphError):
        g.run({}, [], [step], backend="exploding")
    np.testing.assert_array_equal(g.value_of(v), [1, 1])


def _tampering_backend(name, tamper):
    """A third-party backend: the numpy backend's runner, its output passed through ``tamper``."""
    class Tampering:
        def available(self):
            return True, "test backend"

        def prepare(self, plan):
            runner = mg.get_backend("numpy").prepare(plan)
            return lambda feeds, variables: tamper(plan, *runner(feeds, variables))

    Tampering.name = name
    mg.register_backend(name, Tampering)  # unregistered after the test by conftest
    return name


def test_what_a_backend_returns_is_checked_against_the_plan_before_anything_is_committed():
    g = mg.Graph()
    v = g.variable(np.ones((2, 3), np.float32), name="v")
    x = g.placeholder([2, 3], name="x")
    y = g.tanh(x + v, name="y")
    step = g.assign(v, v * 2.0, name="step")
    feed = np.zeros((2, 3), np.float32)
    other = g.variable(np.zeros(1, np.float32), name="other")
    bad = {
        "transposed": (lambda p, r, a: ([r[0].T], a), r"returned for target 'y' \(tanh op 'y'\) float32\[3, 2\], "
                                                       r"but the plan computes float32\[2, 3\]; nothing was committed"),
        "float64": (lambda p, r, a: ([r[0].astype(np.float64)], a), "returned for target 'y'.*float64"),
        "missing": (lambda p, r, a: ([], a), r"returned 0 result\(s\) for 1 target"),
        "extra": (lambda p, r, a: (r + r, a), r"returned 2 result\(s\) for 1 target"),
        "list": (lambda p, r, a: ([r[0].tolist()], a), "float64"),
        "reshaped_variable": (lambda p, r, a: (r, {k: val.reshape(3, 2) for k, val in a.items()}),
                              r"assigned to variable 'v' float32\[3, 2\], but the plan computes float32\[2, 3\]"),
        "int_variable": (lambda p, r, a: (r, {k: val.astype(np.int32) for k, val in a.items()}), "variable 'v' int32"),
        "foreign_variable": (lambda p, r, a: (r, {**a, other.operation: np.ones(1, np.float32)}),
                             "assigned <Operation 'other'.*which the plan does not assign"),
        "not_a_pair": (lambda p, r, a: r, "not \\(results, assigned\\)"),
        "assigned_list": (lambda p, r, a: (r, list(a.items())), "assignments as list"),
    }
    for name, (tamper, words) in bad.items():
        b = _tampering_backend(f"tamper_{name}", tamper)
        for run in (lambda: g.run({x: feed}, [y], [step], backend=b),
                    lambda: g.compile({x: mg.ShapedType([2, 3], mg.float32)}, [y], [step], backend=b).run([feed])):
            with pytest.raises(mg.ExecutionError, match=f"backend 'tamper_{name}' .*{words}"):
                run()
            np.testing.assert_array_equal(g.value_of(v), np.ones((2, 3)))  # nothing committed
            assert g.value_of(other).shape == (1,)
    fine = _tampering_backend("tamper_none", lambda p, r, a: (r, a))
    np.testing.assert_allclose(g.run({x: feed}, [y], [step], backend=fine)[y], np.tanh(np.ones((2, 3))), rtol=1e-6)
    np.testing.assert_array_equal(g.value_of(v), np.full((2, 3), 2.0))


def test_op_attributes_are_fixed_when_the_op_is_built(backend, tmp_path):
    """Operation.attrs is read-only, and a dict given to add_op is copied: a compile after the op
    was built sees what it was built with."""
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    attrs = {"axes": (1,)}
    s = g.add_op("reduction_sum", [x], attrs, name="s").output
    attrs["axes"] = (0,)
    op = s.operation
    for mutate in (lambda: op.attrs.__setitem__("axes", (0,)), lambda: op.attrs.__delitem__("axes"),
                   lambda: op.attrs.update({"axes": (0,)}), lambda: op.attrs.clear()):
        with pytest.raises((mg.MiniGraphError, AttributeError)):
            mutate()
    with pytest.raises(mg.SymbolicValueError, match="reduction_sum op 's': attributes are fixed"):
        op.attrs["axes"] = (0,)
    assert isinstance(op.attrs["axes"], tuple) and dict(op.attrs) == {"axes": (1,)} and len(op.attrs) == 1
    feed = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(g.run({x: feed}, [s], backend=backend)[s], [[3.0], [12.0]])
    zoo = every_op_graph()[0]  # listings, pictures, Swift and save/load read the read-only attrs
    assert str(zoo) and zoo.to_dot() and zoo.to_swift()
    zoo.save(tmp_path / "zoo.json")
    assert str(mg.load(tmp_path / "zoo.json")) == str(zoo)


# ================================================================================ concurrency
def _model(g):
    x = g.placeholder([2, 3, 6, 6], name="x")
    d = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=1, padding_style=mg.PaddingStyle.TF_SAME)
    w = g.constant(np.random.default_rng(5).uniform(-1, 1, (2, 3, 3, 3)).astype(np.float32))
    y = g.relu(g.depthwise_convolution_2d(x, w, d))
    flat = g.reshape(y, [2, -1])
    m = g.constant(np.random.default_rng(6).uniform(-1, 1, (flat.shape[1], 5)).astype(np.float32))
    z = g.softmax(g.matrix_multiplication(flat, m), axis=-1)
    return x, [z, g.reduction_sum(y, axes=[1, 2, 3])]


def _mlp_graph(rng):
    g = mg.Graph()
    x = g.placeholder([-1, 8], name="x")
    w = g.variable(rng.standard_normal((8, 5)).astype(np.float32), name="w")
    h = g.relu(g.matrix_multiplication(x, w))
    y = g.softmax(h, axis=-1)
    s = g.reduction_sum(g.square(h), axes=[1])
    return g, x, [y, s]


def test_one_executable_run_from_8_threads_gives_the_sequential_results(backend, rng):
    g = mg.Graph()
    x, targets = _model(g)
    try:
        exe = g.compile({x: mg.ShapedType([2, 3, 6, 6], mg.float32)}, targets, backend=backend)
    except mg.KernelMissingError as e:
        pytest.skip(str(e))
    rng = np.random.default_rng(7)
    feeds = [rng.uniform(-2, 2, (2, 3, 6, 6)).astype(np.float32) for _ in range(8)]
    expected = [exe.run({x: f}) for f in feeds]
    barrier = threading.Barrier(8)
    got, errors = [None] * 8, []

    def work(k):
        try:
            barrier.wait()
            got[k] = [exe.run({x: feeds[k]}) for _ in range(15)]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(8):
        for outs in got[k]:
            for o, e in zip(outs, expected[k]):
                np.testing.assert_array_equal(o, e)
    # a small MLP: 8 threads released together, 5 runs each
    g, x, targets = _mlp_graph(rng)
    exe = g.compile({x: mg.ShapedType([4, 8], mg.float32)}, targets, backend=backend)
    feeds = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(8)]
    seq = [exe.run({x: f}) for f in feeds]
    barrier = threading.Barrier(8)
    out, errs_mlp = [None] * 8, []

    def work_mlp(i):
        try:
            barrier.wait()
            for _ in range(5):
                r = exe.run({x: feeds[i]})
                for u, w in zip(r, seq[i]):
                    assert np.array_equal(u, w)
            out[i] = r
        except BaseException as e:  # noqa: BLE001
            errs_mlp.append(e)

    ts_mlp = [threading.Thread(target=work_mlp, args=(i,)) for i in range(8)]
    [t.start() for t in ts_mlp]
    [t.join() for t in ts_mlp]
    assert not errs_mlp, errs_mlp


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


def test_building_the_graph_while_another_thread_runs_it(backend, rng):
    """Building (names, ops, new placeholders) in one thread while another runs an executable."""
    g = mg.Graph()
    x, targets = _model(g)
    try:
        exe = g.compile({x: mg.ShapedType([2, 3, 6, 6], mg.float32)}, targets, backend=backend)
    except mg.KernelMissingError as e:
        pytest.skip(str(e))
    feed = np.random.default_rng(8).uniform(-2, 2, (2, 3, 6, 6)).astype(np.float32)
    expected = exe.run({x: feed})
    stop, errors = threading.Event(), []

    def runner():
        try:
            while not stop.is_set():
                for o, e in zip(exe.run({x: feed}), expected):
                    np.testing.assert_array_equal(o, e)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=runner)
    t.start()
    try:
        built = []
        for i in range(60):
            p = g.placeholder([3], name="p")
            q = g.tanh(p * float(i), name="q")
            built.append((p, q, i))
            if i % 10 == 0:  # and run the new part of the graph from this thread as well
                out = g.run({p: np.ones(3, np.float32)}, [q], backend=backend)[q]
                np.testing.assert_allclose(out, np.tanh(np.full(3, float(i))), rtol=1e-6)
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    names = [op.name for op in g.operations]
    assert len(names) == len(set(names))
    # three runner threads while 300 ops are built; the new part runs; the page documents threads
    g, x, targets = _mlp_graph(rng)
    exe = g.compile({x: mg.ShapedType([4, 8], mg.float32)}, targets, backend=backend)
    feed = rng.standard_normal((4, 8)).astype(np.float32)
    want = exe.run({x: feed})
    stop_mlp = threading.Event()
    errs_mlp = []

    def run_loop():
        try:
            while not stop_mlp.is_set():
                for u, w in zip(exe.run({x: feed}), want):
                    assert np.array_equal(u, w)
        except BaseException as e:  # noqa: BLE001
            errs_mlp.append(e)

    ts_mlp = [threading.Thread(target=run_loop) for _ in range(3)]
    [t.start() for t in ts_mlp]
    try:
        built = []
        for i in range(300):
            t = g.addition(targets[1], float(i), name="extra")
            built.append(g.exponent(g.negative(t)))
    finally:
        stop_mlp.set()
        [t.join() for t in ts_mlp]
    assert not errs_mlp, errs_mlp
    names = [op.name for op in g.operations]
    assert len(names) == len(set(names))
    r = g.run({x: feed}, [built[-1]], backend=backend)[built[-1]]
    assert r.shape == (4, 1)
    assert re.search(r"thread", _page("reliability.md"), re.I)


def test_two_threads_building_without_scopes_get_unique_names():
    """Building from several threads is safe for ops and names (docs/reliability.md)."""
    g = mg.Graph()
    c = g.constant(np.ones(2, np.float32))
    barrier = threading.Barrier(4)

    def build():
        barrier.wait()
        for _ in range(200):
            g.negative(c, name="neg")

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    names = [op.name for op in g.operations if op.type == "negative"]
    assert len(names) == 800 and len(set(names)) == 800


def test_gradients_in_one_thread_while_another_builds_loses_no_op(tmp_path):
    """autodiff only adds ops (it never edits or deletes one), and name scopes belong to their
    thread: a builder thread and a gradients thread share a graph, no op is lost, every name is
    unique, indices are dense, the plans compile and run, and the saved file loads back."""
    g = mg.Graph()
    x = g.placeholder([4], name="x")
    w = g.variable(np.linspace(-1, 1, 4).astype(np.float32), name="w")
    loss = g.reduction_sum(g.square(g.tanh(x * w)), name="loss")
    built, grads, errors = [], [], []
    start, done = threading.Barrier(2), threading.Event()

    def builder():
        try:
            start.wait()
            t = x
            with g.name_scope("chain"):
                for _ in range(1000):
                    t = g.addition(t, 1.0, name="add")
                    built.append(t.operation)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
        finally:
            done.set()

    def differentiate():
        try:
            start.wait()
            while not done.is_set() or len(grads) < 3:
                grads.append(g.gradients(loss, [w, x], name="grad"))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=builder), threading.Thread(target=differentiate)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    ops = g.operations
    assert {id(o) for o in built} <= {id(o) for o in ops}, "ops built meanwhile were lost"
    assert len({o.name for o in ops}) == len(ops)
    assert [o.index for o in ops] == list(range(len(ops)))
    assert all(g.operation(o.name) is o for o in ops if o.name != "chain/add")  # "chain/add" was asked 1000 times
    assert g.user_name_of(grads[-1][w].operation) is None  # autodiff's names are not the user's
    later = ops[loss.operation.index + 1:]  # the builder's scope never leaked into the gradient thread's ops, nor the reverse
    assert all(o.name.startswith("chain/") != o.from_gradients for o in later)
    assert all(o.name.startswith("grad/") == o.from_gradients for o in later)
    assert sum(o.name.startswith("chain/") for o in later) == 2000  # 1000 additions and their constants
    feed = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    last = built[-1].output
    np.testing.assert_array_equal(g.run({x: feed}, [last])[last], feed + 1000)
    wv = g.value_of(w).astype(np.float64)
    sech2 = 1 - np.tanh(feed * wv) ** 2
    want_w, want_x = 2 * np.tanh(feed * wv) * sech2 * feed, 2 * np.tanh(feed * wv) * sech2 * wv
    for gr in (grads[0], grads[len(grads) // 2], grads[-1]):
        out = g.run({x: feed}, [gr[w], gr[x]])
        np.testing.assert_allclose(out[gr[w]], want_w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out[gr[x]], want_x, rtol=1e-5, atol=1e-6)
    g2 = mg.load(g.save(tmp_path / "g.json"))
    assert [(o.name, o.type) for o in g2.operations] == [(o.name, o.type) for o in ops]
    last2 = g2.tensor(last.name)
    np.testing.assert_array_equal(g2.run({g2.tensor("x"): feed}, [last2])[last2], feed + 1000)


def test_name_scopes_and_control_dependencies_belong_to_their_thread():
    """Four threads build at once, each in its own name scope and control dependency block: every
    op gets its own thread's scope and dependencies, and every name is unique."""
    g = mg.Graph()
    c = g.constant(np.ones(2, np.float32))
    gates = [g.identity(c, name=f"gate{k}") for k in range(4)]
    barrier = threading.Barrier(4)

    def build(k):
        barrier.wait()
        with g.name_scope(f"t{k}"), g.control_dependencies([gates[k]]):
            for _ in range(200):
                g.negative(c, name="neg")

    threads = [threading.Thread(target=build, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    negs = [op for op in g.operations if op.type == "negative"]
    assert len(negs) == 800 and len({op.name for op in negs}) == 800
    for k in range(4):
        mine = [op for op in negs if op.name.startswith(f"t{k}/neg")]
        assert len(mine) == 200 and all(op.control_dependencies == (gates[k].operation,) for op in mine)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("via", ["executable", "graph_run"])
def test_concurrent_assignments_are_serialised_per_graph(backend, dtype, via):
    """8 threads x 50 runs of assign(v, v + 1) end at exactly +400: runs that assign are serialised."""
    g = mg.Graph()
    v = g.variable(np.zeros((2,), dtype), name="v")
    inc = g.assign(v, v + 1, name="inc")
    try:
        exe = g.compile({}, [], [inc], backend=backend)
    except mg.KernelMissingError as e:
        pytest.skip(str(e))
    barrier = threading.Barrier(8)
    errors = []

    def work():
        try:
            barrier.wait()
            for _ in range(50):
                exe.run({}) if via == "executable" else g.run({}, [], [inc], backend=backend)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    np.testing.assert_array_equal(g.value_of(v), np.full((2,), 400, dtype))


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
    text = _page("reliability.md").lower()
    assert "serial" in text and "variable" in text


def test_a_run_sees_all_or_none_of_another_runs_assignments(backend):
    """Readers never see half of a concurrent run's assignments (four variables bumped together)."""
    g = mg.Graph()
    vs = [g.variable(np.zeros((), np.float32), name=f"v{i}") for i in range(4)]
    bump = [g.assign(v, v + 1.0, name=f"bump{i}") for i, v in enumerate(vs)]
    spread = g.subtraction(g.maximum(g.maximum(vs[0], vs[1]), g.maximum(vs[2], vs[3])),
                           g.minimum(g.minimum(vs[0], vs[1]), g.minimum(vs[2], vs[3])))
    try:
        writer = g.compile({}, [], bump, backend=backend)
        reader = g.compile({}, [spread], backend=backend)
    except mg.KernelMissingError as e:
        pytest.skip(str(e))
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, to give torn reads every chance
    stop, torn = threading.Event(), []

    def read():
        while not stop.is_set():
            (s,) = reader.run({})
            if s != 0:
                torn.append(float(s))

    readers = [threading.Thread(target=read) for _ in range(2)]
    try:
        for t in readers:
            t.start()
        for _ in range(400):
            writer.run({})
    finally:
        stop.set()
        for t in readers:
            t.join()
        sys.setswitchinterval(old)
    assert not torn, f"{len(torn)} runs saw part of another run's assignments, e.g. spread {torn[:3]}"
    assert all(float(g.value_of(v)) == 400.0 for v in vs)


def test_graph_run_from_many_threads_while_its_cache_evicts(backend, rng):
    """g.run's executable cache (LRU) is shared by threads; a tiny cache forces evictions and recompiles."""
    g = mg.Graph()
    x = g.placeholder([-1, 4], name="x")
    y = g.reduction_sum(g.exponent(x), axes=[1])
    g.cache_size = 2
    rng = np.random.default_rng(10)
    feeds = [rng.uniform(-1, 1, (1 + k % 5, 4)).astype(np.float32) for k in range(8)]
    barrier = threading.Barrier(8)
    errors = []

    def work(f):
        try:
            barrier.wait()
            for _ in range(12):
                out = g.run({x: f}, [y], backend=backend)[y]
                np.testing.assert_allclose(out, np.exp(f.astype(np.float64)).sum(1, keepdims=True), rtol=1e-5)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(f,)) for f in feeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    info = g.cache_info()
    assert info.currsize <= 2 and info.hits + info.misses == 8 * 12
    # the default cache: many feed sizes from 8 threads give the sequential results
    g, x, targets = _mlp_graph(rng)
    feeds = [rng.standard_normal((n, 8)).astype(np.float32) for n in (1, 2, 3, 4) * 4]
    seq = [g.run({x: f}, targets, backend=backend) for f in feeds]
    with cf.ThreadPoolExecutor(8) as pool:
        par = list(pool.map(lambda f: g.run({x: f}, targets, backend=backend), feeds))
    for a, b in zip(seq, par):
        for t in targets:
            np.testing.assert_array_equal(a[t], b[t])


def test_a_dynamic_executable_specialises_safely_from_many_threads():
    g = mg.Graph()
    x = g.placeholder([-1, 3], name="x")
    y = g.reduction_sum(g.square(x), axes=[1])
    exe = g.compile({x: mg.ShapedType([-1, 3], mg.float32)}, [y])
    rng = np.random.default_rng(9)
    feeds = [rng.uniform(-1, 1, (1 + k % 4, 3)).astype(np.float32) for k in range(16)]
    barrier = threading.Barrier(16)
    errors = []

    def work(f):
        try:
            barrier.wait()
            for _ in range(10):
                (out,) = exe.run({x: f})
                np.testing.assert_allclose(out, np.sum(f.astype(np.float64) ** 2, axis=1, keepdims=True), rtol=1e-6)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(f,)) for f in feeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert exe.compile_count == 4  # one plan per distinct concrete shape, not one per thread


# ===================================================================================== limits
def test_a_dynamic_executable_keeps_a_bounded_lru_of_specialisations(backend):
    """One plan per concrete feed shape, but at most ``cache_size`` (64 by default, as g.run's
    cache) kept: a loop over ever new batch sizes does not keep every plan alive."""
    g = mg.Graph()
    x = g.placeholder([-1, 3], name="x")
    y = g.reduction_sum(g.square(x), axes=[1], name="y")
    exe = g.compile({x: mg.ShapedType([-1, 3], mg.float32)}, [y], backend=backend)
    assert exe.cache_size == 64 == mg.Graph().cache_size
    exe.cache_size = 8
    for n in range(1, 31):
        feed = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        np.testing.assert_allclose(exe.run({x: feed})[0], np.sum(feed.astype(np.float64) ** 2, axis=1, keepdims=True),
                                   rtol=1e-6)
        assert exe.specialisations == min(n, 8)
    assert exe.compile_count == 30
    for n in (30, 23, 30):  # the most recent shapes are kept, in LRU order
        exe.run({x: np.ones((n, 3), np.float32)})
    assert exe.compile_count == 30
    exe.run({x: np.ones((1, 3), np.float32)})  # evicted long ago: compiled again, correctly
    assert exe.compile_count == 31 and exe.specialisations == 8
    exe.cache_size = 2
    assert exe.specialisations == 2
    exe.run({x: np.ones((30, 3), np.float32)})  # one of the two most recent
    assert exe.compile_count == 31
    for bad in (0, -1, 1.5, None, True):
        with pytest.raises(mg.MiniGraphError, match="cache_size"):
            exe.cache_size = bad


def test_huge_declared_shapes_fail_at_compile_with_a_resource_limit_error(backend):
    g = mg.Graph()
    big = g.placeholder([2 ** 20, 2 ** 20], name="big")
    with pytest.raises(mg.ResourceLimitError, match="placeholder op 'big'.*1099511627776 elements"):
        g.compile({big: mg.ShapedType([2 ** 20, 2 ** 20], mg.float32)}, [g.exponent(big)], backend=backend)
    small = g.constant(np.ones((1, 1), np.float32))
    wide = g.broadcast(small, [2 ** 18, 2 ** 18], name="wide")
    with pytest.raises(mg.ResourceLimitError, match="broadcast op 'wide'"):
        g.run({}, [wide], backend=backend)
    a = g.placeholder([2 ** 19, 2], name="a")
    b = g.placeholder([2, 2 ** 19], name="b")
    outer = g.matrix_multiplication(a, b, name="outer")
    with pytest.raises(mg.ResourceLimitError, match="matrix_multiplication op 'outer'"):
        g.compile({a: mg.ShapedType([2 ** 19, 2], mg.float32), b: mg.ShapedType([2, 2 ** 19], mg.float32)},
                  [outer], backend=backend)
    dyn = g.placeholder([-1, -1], name="dyn")
    exe = g.compile({dyn: mg.ShapedType([-1, -1], mg.float32)}, [g.negative(dyn)], backend=backend)
    with pytest.raises(mg.ResourceLimitError):  # a clear error, not a MemoryError from deep in NumPy
        exe.run({dyn: np.broadcast_to(np.float32(1), (2 ** 20, 2 ** 20))})
    # sizes reached by inference (an outer product, a broadcast) or fed to dynamic dims name their op
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


def test_huge_shape_through_run_is_a_minigraph_error():
    g = mg.Graph()
    x = g.placeholder([2], name="x")
    big = g.broadcast(g.reshape(x, [2, 1]), [2, 2 ** 40], name="wide")
    with pytest.raises(mg.MiniGraphError, match="wide"):
        g.run({x: np.ones(2, np.float32)}, [big])


def test_a_tensor_larger_than_the_machines_memory_fails_at_compile(monkeypatch, backend):
    """Below the element limit but beyond physical RAM: caught at compile, not as a MemoryError later."""
    from minigraph import limits
    from minigraph.compiler import plan

    monkeypatch.setattr(plan, "MAX_BYTES", 1 << 20)  # pretend the machine has 1 MiB
    g = mg.Graph()
    c = g.constant(np.ones((1, 1), np.float32))
    wide = g.broadcast(c, [1024, 1024], name="wide")  # 4 MiB, and a broadcast view as a target
    with pytest.raises(mg.ResourceLimitError, match="broadcast op 'wide'.*more than this machine's memory"):
        g.run({}, [wide], backend=backend)
    small = g.broadcast(c, [256, 256], name="small")  # 256 KiB fits
    assert g.run({}, [small], backend=backend)[small].shape == (256, 256)
    assert limits.physical_memory() > 0  # the real limit is known on this machine


def test_huge_constant_fill_fails_at_build():
    g = mg.Graph()
    with pytest.raises(mg.ResourceLimitError, match="constant op 'k'"):
        g.constant(1.0, shape=[2 ** 20, 2 ** 20], name="k")
    assert issubclass(mg.ResourceLimitError, ValueError) and issubclass(mg.ResourceLimitError, mg.MiniGraphError)
    assert not issubclass(mg.ResourceLimitError, MemoryError)  # nothing ran out of memory: the shape is out of range


# ==================================================================================== NaN/Inf
NAN, INF = np.nan, np.inf
SPECIAL = np.array([NAN, INF, -INF, 0.0, -0.0, 1.5, -2.0, 1e-30], np.float32)


def _ieee(fn, *args):
    with np.errstate(all="ignore"):
        return fn(*[np.asarray(a, np.float64) for a in args])


def _same_ieee(out, ref, dtype=np.float32):
    with np.errstate(all="ignore"):  # values beyond float32 become inf, as the result must
        ref = np.asarray(ref, np.float64).astype(dtype).astype(np.float64)
    out = np.asarray(out, np.float64)
    assert out.shape == ref.shape
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    fin = np.isfinite(ref)
    np.testing.assert_array_equal(out[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)])  # same infinities
    np.testing.assert_allclose(out[fin], ref[fin], rtol=2e-6, atol=1e-37)


UNARY_IEEE = {
    "negative": np.negative, "absolute": np.abs, "exponent": np.exp, "logarithm": np.log,
    "square": np.square, "square_root": np.sqrt, "reciprocal": lambda x: 1.0 / x, "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "relu": lambda x: np.where(x > 0, x, 0.0),  # relu(NaN) = 0
    "sign": lambda x: np.where(np.isnan(x), 0.0, np.sign(x)), "sin": np.sin, "cos": np.cos,  # as MPSGraph
}


@pytest.mark.parametrize("op", sorted(UNARY_IEEE))
def test_unary_ops_follow_ieee_for_nan_and_inf(backend, op):
    g = mg.Graph()
    x = g.placeholder([SPECIAL.size], name="x")
    y = getattr(g, op)(x)
    out = _run_or_skip(g, {x: SPECIAL}, [y], (), backend)[y]
    ref = _ieee(UNARY_IEEE[op], SPECIAL)
    if op in ("sin", "cos"):  # sin/cos(inf) is NaN; finite values as IEEE
        assert np.isnan(out[1]) and np.isnan(out[2])
    _same_ieee(out, ref)


BINARY_IEEE = {"addition": np.add, "subtraction": np.subtract, "multiplication": np.multiply,
               "division": np.divide, "maximum": np.fmax, "minimum": np.fmin, "power": np.power,
               "maximum_with_nan_propagation": np.maximum, "minimum_with_nan_propagation": np.minimum}


@pytest.mark.parametrize("op", sorted(BINARY_IEEE))
def test_binary_ops_follow_ieee_for_nan_and_inf(backend, op):
    """maximum/minimum skip NaN (fmax, as MPSGraph's); their _with_nan_propagation forms propagate it."""
    a = np.repeat(SPECIAL, SPECIAL.size)
    b = np.tile(SPECIAL, SPECIAL.size)
    g = mg.Graph()
    x, y = g.placeholder([a.size], name="a"), g.placeholder([b.size], name="b")
    z = getattr(g, op)(x, y)
    out = _run_or_skip(g, {x: a, y: b}, [z], (), backend)[z]
    if op == "power":  # only where IEEE/C99 pow is unambiguous: positive finite or infinite bases
        keep = (a > 0) & ~np.isnan(b)
        _same_ieee(out[keep], _ieee(np.power, a[keep], b[keep]))
        assert np.isnan(out[np.isnan(a) & (b != 0)]).all()
        return
    _same_ieee(out, _ieee(BINARY_IEEE[op], a, b))


NAN_UNARY = ["negative", "absolute", "exponent", "logarithm", "square", "square_root", "reciprocal", "tanh",
         "sigmoid", "sin", "cos", "identity", "stop_gradient"]  # relu and sign give 0 for NaN, as MPSGraph
NAN_BINARY = ["addition", "subtraction", "multiplication", "division", "maximum_with_nan_propagation",
              "minimum_with_nan_propagation", "power"]


def test_nan_propagates_through_every_elementwise_op(backend, rng):
    shape = (3, 4)
    g = mg.Graph()
    x = g.placeholder(list(shape), name="x")
    y = g.placeholder(list(shape), name="y")
    targets = {f"{u}": getattr(g, u)(x) for u in NAN_UNARY}
    for b in NAN_BINARY:
        targets[f"{b}(nan, y)"] = getattr(g, b)(x, y)
        targets[f"{b}(y, nan)"] = getattr(g, b)(y, x)
    nan = np.full(shape, np.nan, np.float32)
    yv = (rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)).astype(np.float32)
    out = g.run({x: nan, y: yv}, list(targets.values()), backend=backend)
    for k, t in targets.items():
        assert np.isnan(out[t]).all(), (k, out[t])


@pytest.mark.parametrize("red", ["reduction_sum", "reduction_maximum_propagate_nan", "reduction_minimum_propagate_nan",
                                 "mean", "softmax"])
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
            "maximum": np.array([np.inf, 0.5, 0.5, 1.0, 0.5, 0.5]), "minimum": np.array([0.5, -np.inf, 0.5, 0.5, -2, 0]),
            "relu": np.array([np.inf, 0, 0, 1, 0, 0]), "exp": np.exp(sp.astype(np.float64)),  # NaN skipped
            "neg": -sp, "sum": [np.nan], "max": [np.inf], "add_self": sp + sp, "sub_self": sp - sp,
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


def test_comparisons_and_select_with_nan(backend):
    g = mg.Graph()
    x = g.placeholder([SPECIAL.size], name="x")
    cmp = {"equal": np.equal, "not_equal": np.not_equal, "less_than": np.less, "greater_than_or_equal_to": np.greater_equal}
    outs = {k: getattr(g, k)(x, x) for k in cmp}
    sel = g.select(x, g.constant(np.ones(SPECIAL.size, np.float32)), g.constant(np.zeros(SPECIAL.size, np.float32)))
    res = _run_or_skip(g, {x: SPECIAL}, list(outs.values()) + [sel], (), backend)
    for k, t in outs.items():
        np.testing.assert_array_equal(res[t], cmp[k](SPECIAL, SPECIAL), err_msg=k)
    np.testing.assert_array_equal(res[sel], (SPECIAL != 0).astype(np.float32))  # NaN is "true" (non-zero)


def test_reductions_softmax_and_matmul_propagate_nan_and_inf(backend):
    rows = np.array([[1.0, NAN, 2.0], [1.0, INF, 2.0], [1.0, -INF, 2.0], [INF, -INF, 0.0], [-INF, -INF, -INF],
                     [1.0, 2.0, 3.0]], np.float32)
    g = mg.Graph()
    x = g.placeholder(list(rows.shape), name="x")
    t = {"sum": g.reduction_sum(x, axes=1), "max": g.reduction_maximum(x, axes=1),
         "min": g.reduction_minimum(x, axes=1), "mean": g.mean(x, axes=1), "softmax": g.softmax(x, axis=1),
         "matmul": g.matrix_multiplication(x, g.constant(np.ones((3, 1), np.float32)))}
    res = _run_or_skip(g, {x: rows}, list(t.values()), (), backend)
    r = rows.astype(np.float64)
    with np.errstate(all="ignore"):
        ref = {"sum": r.sum(1, keepdims=True), "max": np.fmax.reduce(r, 1, keepdims=True),  # NaN skipped
               "min": np.fmin.reduce(r, 1, keepdims=True),
               "mean": r.mean(1, keepdims=True), "matmul": r @ np.ones((3, 1))}
        e = np.exp(r - r.max(1, keepdims=True))  # the stable formula: a row with NaN or +inf is all NaN
        ref["softmax"] = e / e.sum(1, keepdims=True)
    for k in t:
        _same_ieee(res[t[k]], ref[k])
    assert np.isnan(res[t["softmax"]][1]).all() and np.isnan(res[t["softmax"]][4]).all()
    np.testing.assert_allclose(res[t["softmax"]][2], [1 / (1 + np.e), 0.0, np.e / (1 + np.e)], rtol=1e-6)
    # +-inf rows through each reduction, softmax of -inf, and exp overflowing to inf
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


def test_float_overflow_gives_inf_not_a_clamped_value(backend):
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    h = g.placeholder([3], mg.float16, name="h")
    ys = [g.exponent(x), g.square(x), g.exponent(h), g.multiplication(h, h)]
    xv = np.array([100.0, 3e19, -100.0], np.float32)
    hv = np.array([12.0, 300.0, -12.0], np.float16)
    res = _run_or_skip(g, {x: xv, h: hv}, ys, (), backend)
    np.testing.assert_array_equal(res[ys[0]][:2], [INF, INF])
    np.testing.assert_array_equal(res[ys[1]][1], INF)
    assert res[ys[2]].dtype == np.float16 and res[ys[2]][0] == INF and res[ys[3]][1] == INF


def test_pooling_convolutions_and_matmul_propagate_nan_and_inf(backend):
    src = np.random.default_rng(1).uniform(-1, 1, (1, 1, 4, 4)).astype(np.float32)
    src[0, 0, 0, 0] = NAN
    src[0, 0, 3, 3] = INF
    g = mg.Graph()
    x = g.placeholder([1, 1, 4, 4], name="x")
    pool = g.max_pooling_2d(x, mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=2, stride_in_y=2))
    conv = g.depthwise_convolution_2d(x, g.constant(np.ones((1, 1, 2, 2), np.float32)),
                                      mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=2))
    res = _run_or_skip(g, {x: src}, [pool, conv], (), backend)
    assert np.isnan(res[pool][0, 0, 0, 0]) and res[pool][0, 0, 1, 1] == INF
    assert np.isnan(res[conv][0, 0, 0, 0]) and res[conv][0, 0, 1, 1] == INF
    assert np.isfinite(res[pool][0, 0, 0, 1]) and np.isfinite(res[conv][0, 0, 1, 0])
    # an all-NaN input through depthwise, convolution, both poolings, matmul and softmax cross-entropy
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
    out = _run_or_skip(g, {x: nan}, ts, (), backend)
    for t in ts:
        assert np.isnan(out[t]).all(), (t.operation.type, out[t])


# ========================================================================== integer overflow
def _wrap(values, dtype):
    info = np.iinfo(dtype)
    m = 1 << info.bits
    return np.array([(int(v) - info.min) % m + info.min for v in np.ravel(values)], dtype).reshape(np.shape(values))


INT_CASES = {"int8": [-128, 127, 100, -100, 1, -1], "uint8": [0, 255, 200, 1, 128, 3],
             "int16": [-32768, 32767, 30000, -30000, 1, -1], "uint16": [0, 65535, 60000, 1, 32768, 3],
             "int32": [-2 ** 31, 2 ** 31 - 1, 2 ** 30 + 5, -2 ** 30 - 7, 1, -1],
             "uint32": [0, 2 ** 32 - 1, 2 ** 31 + 5, 1, 2 ** 31, 3],
             "int64": [-2 ** 63, 2 ** 63 - 1, 2 ** 62 + 5, -2 ** 62 - 7, 1, -1],
             "uint64": [0, 2 ** 64 - 1, 2 ** 63 + 5, 1, 2 ** 63, 3]}


@pytest.mark.parametrize("dtype", sorted(INT_CASES))
def test_integer_arithmetic_wraps_modulo_2_to_the_bits(backend, dtype):
    """Two's-complement wrapping, as NumPy and Metal do (no saturation, no error)."""
    vals = INT_CASES[dtype]
    a = np.array(vals, dtype)
    b = np.array(vals[::-1], dtype)
    g = mg.Graph()
    x, y = g.placeholder([6], dtype, name="x"), g.placeholder([6], dtype, name="y")
    ops = {"addition": g.addition(x, y), "subtraction": g.subtraction(x, y), "multiplication": g.multiplication(x, y),
           "negative": g.negative(x), "absolute": g.absolute(x), "square": g.square(x),
           "sum": g.reduction_sum(x, axes=0),
           "matmul": g.matrix_multiplication(g.reshape(x, [2, 3]), g.reshape(y, [3, 2]))}
    res = _run_or_skip(g, {x: a, y: b}, list(ops.values()), (), backend)
    A, B = [int(v) for v in vals], [int(v) for v in vals[::-1]]
    ref = {"addition": [p + q for p, q in zip(A, B)], "subtraction": [p - q for p, q in zip(A, B)],
           "multiplication": [p * q for p, q in zip(A, B)], "negative": [-p for p in A],
           "absolute": [abs(p) for p in A], "square": [p * p for p in A], "sum": [sum(A)],
           "matmul": [[sum(A[3 * i + k] * B[2 * k + j] for k in range(3)) for j in range(2)] for i in range(2)]}
    for k, t in ops.items():
        np.testing.assert_array_equal(res[t], _wrap(np.array(ref[k], dtype=object), dtype), err_msg=k)
        assert res[t].dtype == np.dtype(dtype)


def test_integer_overflow_is_documented_and_wraps(backend):
    text = _page("reliability.md").lower()
    assert "overflow" in text and ("wrap" in text or "modulo" in text)
    g = mg.Graph()
    a = g.placeholder([3], mg.int32, name="a")
    y = a + g.constant(np.int32(1))
    z = a * g.constant(np.int32(2))
    av = np.array([2 ** 31 - 1, -2 ** 31, 5], np.int32)
    out = g.run({a: av}, [y, z], backend=backend)
    np.testing.assert_array_equal(out[y], [-2 ** 31, -2 ** 31 + 1, 6])
    np.testing.assert_array_equal(out[z], [-2, 0, 10])


def test_python_scalars_that_do_not_fit_the_dtype_are_rejected_not_wrapped():
    g = mg.Graph()
    x = g.placeholder([2], mg.int8, name="x")
    with pytest.raises(mg.DTypeError, match="addition op 'plus'.*300"):
        g.addition(x, 300, name="plus")
    u = g.placeholder([2], mg.uint8, name="u")
    with pytest.raises(mg.DTypeError, match="subtraction op 'minus'"):
        g.subtraction(u, -1, name="minus")
    y = x + 100  # fits: fine, and the sum wraps at run time
    np.testing.assert_array_equal(g.run({x: np.array([100, -100], np.int8)}, [y])[y], [-56, 0])
    i = g.placeholder([2], mg.int32, name="i")
    with pytest.raises(mg.DTypeError, match="addition op 'half'.*0.5"):  # not a silent + 0
        g.addition(i, 0.5, name="half")
    with pytest.raises(mg.FeedError, match="'i'.*does not fit int32 exactly"):  # not a silent truncation to [1, 2]
        g.run({i: [1.5, 2.0]}, [g.identity(i)])
    same = g.identity(i)
    np.testing.assert_array_equal(g.run({i: [1.0, 2.0]}, [same])[same], [1, 2])  # whole numbers are fine


def test_cast_of_nan_inf_or_out_of_range_floats_to_int_does_not_raise(backend):
    """The integer is unspecified (as on GPUs); the run itself must not fail."""
    g = mg.Graph()
    x = g.placeholder([5], name="x")
    y = g.cast(x, mg.int32)
    out = _run_or_skip(g, {x: np.array([NAN, INF, -INF, 3e9, -7.9], np.float32)}, [y], (), backend)[y]
    assert out.dtype == np.int32 and out[4] == -7  # in-range values truncate toward zero


# ================================================================================ determinism
def _digest(results) -> str:
    h = hashlib.sha256()
    for t in sorted(results, key=lambda t: t.name):
        a = np.ascontiguousarray(results[t])
        h.update(t.name.encode() + str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())
    return h.hexdigest()


DIGEST_SCRIPT = r"""
import sys, hashlib, numpy as np
sys.path[:0] = [{root!r}, {tests!r}]
from test_reliability import _digest
from graph_zoo import every_op_graph
import fuzz_strategies as fs
g, feeds, targets, ops = every_op_graph(11)
parts = [_digest(g.run(feeds, targets))]
for i in range(25):  # fuzz-generated programs, one seed each
    ns = fs._exec(fs.gen_valid(fs.RandomDraw(i)).source())
    outs, _ = fs.run_mode(ns, "numpy")
    parts.append(hashlib.sha256(b"".join(np.ascontiguousarray(o).tobytes() for o in outs)).hexdigest())
print(hashlib.sha256("".join(parts).encode()).hexdigest())
"""


def test_numpy_backend_is_bit_identical_across_runs_and_graphs(rng):
    g, feeds, targets, _ = every_op_graph(11)
    first = _digest(_stateless_run(g, feeds, targets))
    assert _digest(_stateless_run(g, feeds, targets)) == first
    exe = g.compile(feeds, targets)
    saved = g.variable_store.values
    assert _digest(dict(zip(targets, exe.run(feeds)))) == first
    g.variable_store.restore(saved)
    g2, feeds2, targets2, _ = every_op_graph(11)  # the same graph built again
    assert _digest(g2.run(feeds2, targets2)) == first
    # a depthwise convolution with its gradients, by g.run, a rebuilt graph and an executable
    def build_dw():
        g = mg.Graph()
        x = g.placeholder([2, 3, 9, 9], name="x")
        w = g.variable(np.random.default_rng(1).standard_normal((2, 3, 3, 3)).astype(np.float32), name="w")
        y = g.depthwise_convolution_2d(x, w, descriptor=mg.DepthwiseConvolution2DOpDescriptor(
            padding_style=mg.PaddingStyle.TF_SAME, stride_in_x=2, stride_in_y=2))
        loss = g.mean(g.softmax(g.reshape(y, [2, -1]), axis=-1) * g.reshape(y, [2, -1]))
        gr = g.gradients(loss, [x, w])
        return g, x, [y, loss, gr[x], gr[w]]

    xv = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    g, x, ts = build_dw()
    first_dw = [a.tobytes() for a in g.run({x: xv}, ts).values()]
    for _ in range(3):
        assert [a.tobytes() for a in g.run({x: xv}, ts).values()] == first_dw
    g2_dw, x2_dw, ts2_dw = build_dw()
    assert [a.tobytes() for a in g2_dw.run({x2_dw: xv.copy()}, ts2_dw).values()] == first_dw
    exe_dw = g.compile({x: mg.ShapedType(xv.shape, mg.float32)}, ts)
    assert [a.tobytes() for a in exe_dw.run({x: xv})] == first_dw


def test_numpy_backend_is_bit_identical_across_processes():
    """Two fresh interpreters with different hash seeds give the same bytes (no set/dict-order effects)."""
    code = DIGEST_SCRIPT.format(root=ROOT, tests=os.path.join(ROOT, "tests"))
    digests = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        digests.append(out.stdout.strip().splitlines()[-1])
    assert digests[0] == digests[1]
