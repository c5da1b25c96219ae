"""g.to_swift(): golden files, a Swift mapping for every registered op, exact constant bytes.

Regenerate the golden files after an intended change with
``MINIGRAPH_UPDATE_GOLDEN=1 python3 -m pytest tests/test_swift.py`` and review the diff.
"""
from __future__ import annotations

import base64
import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import minigraph as mg
from graph_zoo import every_op_graph, scoped_cnn_graph
from minigraph.apple_methods import join_selector, read_method_list
from minigraph.ops.registry import OPS
from minigraph.swift import SwiftExportError, argument_plan, camel, parse_signature, swift_mapping

GOLDEN = Path(__file__).resolve().parent / "golden"
APPLE_METHODS = set(read_method_list(Path(__file__).resolve().parent.parent / "docs" / "apple-mpsgraph-methods.txt"))


def _vals(shape, scale=0.25, offset=0.0):
    """Deterministic, non-zero, non-repeating values (no RNG: golden files must not drift)."""
    n = int(np.prod(shape))
    return ((np.arange(n, dtype=np.float32) % 7 - 3) * scale + offset + 0.125).reshape(shape).astype(np.float32)


def mlp_training_graph():
    """A training step written with explicit ops (no autodiff, so the golden file does not depend
    on how gradient rules are written)."""
    g = mg.Graph()
    x = g.placeholder([2, 4], name="x")
    labels = g.placeholder([2, 3], name="labels")
    w = g.variable(_vals((4, 3)), name="w")
    b = g.variable(np.array([0.5, -0.25, 1.0], np.float32), name="b")
    steps = g.variable(np.array(0, np.int32), name="steps")
    with g.name_scope("model"):
        logits = g.addition(g.matrix_multiplication(x, w), b, name="logits")
        probs = g.softmax(logits, axis=-1, name="probs")
    loss = g.softmax_cross_entropy(logits, labels, axis=-1, reduction="mean", name="loss")
    with g.name_scope("grad"):
        dlogits = g.division(g.subtraction(probs, labels), 2.0, name="dlogits")
        dw = g.matrix_multiplication(g.transpose(x, 0, 1), dlogits, name="dw")
        db = g.reshape(g.reduction_sum(dlogits, axes=0), [3], name="db")
    upd_w = g.assign(w, g.subtraction(g.read(w), g.multiplication(dw, 0.5)), name="update_w")
    upd_b = g.assign(b, g.subtraction(g.read(b), g.multiplication(db, 0.5)), name="update_b")
    with g.control_dependencies([upd_w, upd_b]):
        count = g.assign(steps, g.addition(g.read(steps), 1), name="count")
    flat = g.reshape(g.slice(probs, 1, 0, 2), [-1], name="first_two")
    return g, dict(x=x, labels=labels, loss=loss, probs=probs, flat=flat, count=count)


def depthwise_graph():
    """The depthwise family with explicit gradient ops, pooling, a pointwise conv, and 3D."""
    g = mg.Graph()
    x = g.placeholder([1, 2, 5, 5], name="image")
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=1, dilation_rate_in_y=2,
                                                 padding_style=mg.PaddingStyle.ONNX_SAME_LOWER,
                                                 data_layout=mg.TensorNamedDataLayout.NCHW,
                                                 weights_layout=mg.TensorNamedDataLayout.OIHW)
    w = g.variable(_vals((2, 2, 3, 3), 0.5), name="dw_weights")
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    dy = g.placeholder(list(y.shape), name="dy")
    with g.name_scope("backward"):
        dx = g.depthwise_convolution_2d_data_gradient(dy, w, output_shape=x.shape, descriptor=desc, name="dx")
        dwt = g.depthwise_convolution_2d_weights_gradient(dy, x, output_shape=w.shape, descriptor=desc,
                                                          name="dw")
    pdesc = mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=2, stride_in_y=2)
    pdesc.set_explicit_padding(0, 1, 0, 1)
    p = g.avg_pooling_2d(g.relu(y), pdesc, name="pool")
    pw = g.convolution_2d(p, g.constant(_vals((3, 4, 1, 1)), name="pointwise_w"),
                          descriptor=mg.Convolution2DOpDescriptor(), name="pointwise")
    d3 = mg.DepthwiseConvolution3DOpDescriptor(strides=(1, 2, 1), padding_values=(1, 1, 0, 0, 1, 0),
                                               padding_style=mg.PaddingStyle.EXPLICIT)
    v = g.depthwise_convolution_3d(g.reshape(x, [2, 1, 5, 5]), g.constant(_vals((2, 1, 2, 2))),
                                   descriptor=d3, name="dw3d")
    return g, dict(x=x, y=y, dx=dx, dw=dwt, pw=pw, v=v)


GOLDEN_CASES = {"mlp_training": mlp_training_graph, "depthwise": depthwise_graph}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden(case):
    g, _ = GOLDEN_CASES[case]()
    text = g.to_swift()
    path = GOLDEN / f"{case}.swift"
    if os.environ.get("MINIGRAPH_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with MINIGRAPH_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"Swift export of {case} changed; review and regenerate {path.name}"


def test_to_swift_emits_mpsgraph_source():
    g, x, w, r, loss, _ = scoped_cnn_graph()
    src = g.to_swift()
    assert isinstance(src, str)
    assert "import MetalPerformanceShadersGraph" in src
    assert "MPSGraph()" in src
    assert "placeholder(shape:" in src and ".float32" in src
    assert "Data(" in src  # constants as Data
    assert "MPSGraphDepthwiseConvolution2DOpDescriptor" in src
    for field in ("strideInX", "strideInY", "dilationRateInX", "dilationRateInY", "paddingLeft",
                  "paddingRight", "paddingTop", "paddingBottom", "paddingStyle", "dataLayout", "weightsLayout"):
        assert field in src, field
    assert "depthwiseConvolution2D(" in src
    assert "run(feeds:" in src and "targetTensors:" in src and "targetOperations:" in src


def test_every_registered_op_has_a_swift_mapping():
    for t, opdef in OPS.items():
        method, labels = parse_signature(opdef.swift)
        plan = argument_plan(opdef)
        if plan[0][1] != "special":
            assert [p[0] for p in plan] == labels, t
            assert sum(p[1] == "input" for p in plan) == len(opdef.inputs), t
        assert method in swift_mapping(opdef) or "special" in swift_mapping(opdef)
    for name, opdef in OPS.items():
        assert opdef.swift and "(" in opdef.swift, name


def _calls(text):
    """{op name: (method, [labels])} for every op the Swift source builds with a name."""
    out = {}
    for m in re.finditer(r"graph\.(\w+)\((.*), name: (\"(?:[^\"\\]|\\.)*\")\)", text):
        method, args, name = m.groups()
        depth, labels, cur = 0, [], ""
        for ch in args + ",":
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            if ch == "," and depth == 0:
                lab = re.match(r"\s*(\w+): ", cur)
                labels.append(lab.group(1) if lab else "_")
                cur = ""
            else:
                cur += ch
        out[_unswift(name)] = (method, labels + ["name"])
    return out


def _unswift(lit: str) -> str:
    """Decode a Swift string literal written by to_swift."""
    body = lit[1:-1]
    return re.sub(r'\\(u\{([0-9a-f]+)\}|.)',
                  lambda m: chr(int(m.group(2), 16)) if m.group(2) else {"n": "\n", "r": "\r", "t": "\t"}.get(m.group(1), m.group(1)),
                  body)


def test_every_op_of_the_zoo_is_emitted_with_its_labels():
    g, feeds, outs, ops = every_op_graph()
    text = g.to_swift(feeds=feeds, target_tensors=outs, target_operations=ops)
    calls = _calls(text)
    for op in g.operations:
        if op.type in ("constant", "slice_gradient", "block_argument"):  # a block argument: a closure parameter
            continue
        method, labels = parse_signature(OPS[op.type].swift)
        assert op.name in calls, op.name
        if op.type in ("resize", "resize_gradient"):  # the form its attributes pick: one of Apple's methods
            assert join_selector(*calls[op.name]) in APPLE_METHODS, (op.name, calls[op.name])
            continue
        assert calls[op.name] == (method, labels), (op.name, calls[op.name])
    assert "graph.sliceGradientTensor(" in text and "fwdInShapeTensor:" in text
    # identifiers are unique
    lets = re.findall(r"^(?:let|var) (\w+)", text, re.M)
    assert len(lets) == len(set(lets))
    assert re.search(r"graph\.run\(feeds: feeds, targetTensors: \[.+\], targetOperations: \[\w+, \w+\]\)", text)


def test_descriptors_set_every_field():
    g, _ = depthwise_graph()
    text = g.to_swift()
    dw = g.operation("dw").attrs["descriptor"]
    m = re.search(r"let (\w+) = MPSGraphDepthwiseConvolution2DOpDescriptor\(\)\n((?:\1\..*\n)+)", text)
    assert m, "depthwise descriptor not built"
    fields = dict(re.findall(rf"{m.group(1)}\.(\w+) = (.*)", m.group(2)))
    assert set(fields) == {camel(f.name) for f in dataclasses.fields(dw)}
    assert fields["strideInX"] == "2" and fields["dilationRateInY"] == "2"
    assert fields["paddingStyle"] == ".ONNX_SAME_LOWER" and fields["dataLayout"] == ".NCHW"
    assert "MPSGraphPooling2DOpDescriptor()" in text and ".includeZeroPadToAverage = false" in text
    assert re.search(r"\.paddingRight = 1\n", text) and ".paddingStyle = .explicit\n" in text


def test_constants_and_feeds_are_exact_bytes():
    g = mg.Graph()
    arrays = [_vals((2, 3)), np.array([1, -2, 3], np.int64), np.array([True, False, True]),
              np.array([1.5, -0.0, 65504], np.float16), np.array([2 ** 60 + 1, 3], np.int64)]
    x = g.placeholder([2, 3], name="x")
    cs = [g.constant(a) for a in arrays]
    y = g.addition(x, cs[0], name="y")
    feed = _vals((2, 3), 0.1, 1.0)
    text = g.to_swift(feeds={x: feed})
    blobs = re.findall(r'Data\(base64Encoded: "([A-Za-z0-9+/=]*)"\)!, shape: \[([\d, ]*)\], dataType: \.(\w+)', text)
    decoded = [base64.b64decode(b) for b, _, _ in blobs]
    for a in arrays:
        assert a.astype(a.dtype.newbyteorder("<")).tobytes() in decoded, a
    assert feed.tobytes() in decoded
    assert "graph.constant(" in text and y.name in text
    # filled constants use the scalar form
    g2 = mg.Graph()
    g2.constant(2.5, shape=[2, 2], name="c")
    g2.constant(np.float32(np.inf))
    t2 = g2.to_swift()
    assert "graph.constant(2.5, shape: [2, 2], dataType: .float32)" in t2
    assert "graph.constant(Double.infinity, dataType: .float32)" in t2


def test_names_are_escaped_and_identifiers_valid():
    g = mg.Graph()
    x = g.placeholder([2], name='in "quotes" \\ and\nnewline')
    g.tanh(x, name="let")
    g.sin(x, name="3d")
    text = g.to_swift()
    names = [_unswift(n) for n in re.findall(r'name: ("(?:[^"\\]|\\.)*")', text)]
    assert 'in "quotes" \\ and\nnewline' in names and "let" in names
    idents = re.findall(r"^let (\w+)", text, re.M)
    assert len(idents) == len(set(idents)) and idents[0] == "graph"
    for ident in idents:
        assert re.match(r"^[A-Za-z_]\w*$", ident) and ident != "let"


def test_unexportable_graphs_raise_clearly():
    g = mg.Graph()
    g.constant(np.ones(2), dtype=mg.float64, name="c64")
    with pytest.raises(SwiftExportError, match="constant op 'c64'.*float64 has no MPSDataType"):
        g.to_swift()
    assert isinstance(SwiftExportError("x"), mg.MiniGraphError)


@pytest.mark.skipif(shutil.which("swiftc") is None, reason="no Swift compiler here")
@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_swift_parses(tmp_path, case):
    p = tmp_path / f"{case}.swift"
    p.write_text(GOLDEN_CASES[case]()[0].to_swift())
    out = subprocess.run(["swiftc", "-parse", str(p)], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()


def test_dynamic_placeholders_get_size_one_feeds_and_export_from_the_cli(tmp_path, capsys):
    from minigraph.__main__ import show_main

    g = mg.Graph()
    x = g.placeholder([-1, 4], name="x")
    g.reduction_sum(g.tanh(x), axes=-1, name="rows")
    text = g.to_swift()
    assert 'graph.placeholder(shape: [-1, 4], dataType: .float32, name: "x")' in text
    assert "MPSGraphTensorData(device: device, data: Data(count: 16), shape: [1, 4], dataType: .float32)" in text
    assert 'graph.reductionSum(with: tanh, axes: [1], name: "rows")' in text  # axes made non-negative
    g.save(tmp_path / "g.json")
    assert show_main([str(tmp_path / "g.json"), "--swift"]) == 0
    assert capsys.readouterr().out == text


def test_nan_rules_export_under_their_own_names():
    """maximum/minimum and their reductions are MPSGraph's NaN-ignoring ops; the propagating ones
    have their own names, and maximumWithNaNPropagation needs macOS 12 / iOS 15."""
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    ys = [g.maximum(x, 1.0, name="mx"), g.minimum(x, 1.0, name="mn"),
          g.maximum_with_nan_propagation(x, 1.0, name="mxp"), g.minimum_with_nan_propagation(x, 1.0, name="mnp"),
          g.reduction_maximum(x, axes=[1, 1], name="rmx"), g.reduction_minimum(x, name="rmn"),
          g.reduction_maximum_propagate_nan(x, axes=[-1], name="rmxp"),
          g.reduction_minimum_propagate_nan(x, axes=[0], name="rmnp")]
    text = g.to_swift(target_tensors=ys)
    for line in ['let mx = graph.maximum(x, constant, name: "mx")',
                 'let mn = graph.minimum(x, constant_1, name: "mn")',
                 'let mxp = graph.maximumWithNaNPropagation(x, constant_2, name: "mxp")',
                 'let mnp = graph.minimumWithNaNPropagation(x, constant_3, name: "mnp")',
                 'let rmx = graph.reductionMaximum(with: x, axes: [1], name: "rmx")',
                 'let rmn = graph.reductionMinimum(with: x, axes: [0, 1], name: "rmn")',
                 'let rmxp = graph.reductionMaximumPropagateNaN(with: x, axes: [1], name: "rmxp")',
                 'let rmnp = graph.reductionMinimumPropagateNaN(with: x, axes: [0], name: "rmnp")']:
        assert line in text, line
    assert "// Needs macOS 12.0 / iOS 15.0 or later (maximumWithNaNPropagation, minimumWithNaNPropagation)." in text
    plain = mg.Graph()
    x = plain.placeholder([2, 3], name="x")
    assert "// Needs" not in plain.to_swift(target_tensors=[plain.maximum(x, 1.0), plain.reduction_maximum(x)])


def test_onnx_same_lower_names_the_os_it_needs():
    """MPSGraphPaddingStyle.ONNX_SAME_LOWER arrived in macOS 13 / iOS 16: the export's header says so."""
    g = mg.Graph()
    x = g.placeholder([1, 2, 5, 5], name="x")
    w = g.constant(np.ones((1, 2, 3, 3), np.float32), name="w")
    desc = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.ONNX_SAME_LOWER)
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    z = g.maximum_with_nan_propagation(y, 0.0, name="mx")
    text = g.to_swift(target_tensors=[z])
    assert ".ONNX_SAME_LOWER" in text
    assert "// Needs macOS 13.0 / iOS 16.0 or later (maximumWithNaNPropagation, paddingStyle .ONNX_SAME_LOWER)." in text
    same = mg.Graph()
    x = same.placeholder([1, 2, 5, 5], name="x")
    w = same.constant(np.ones((1, 2, 3, 3), np.float32), name="w")
    y = same.depthwise_convolution_2d(x, w, descriptor=mg.DepthwiseConvolution2DOpDescriptor(
        padding_style=mg.PaddingStyle.TF_SAME))
    assert "// Needs" not in same.to_swift(target_tensors=[y])


@pytest.mark.parametrize("mode", [mg.PaddingMode.PERIODIC, mg.PaddingMode.ANTI_PERIODIC])
def test_periodic_padding_modes_warn_that_mpsgraph_may_refuse_them(mode):
    """A third party measured MPSGraph refusing .periodic and .antiPeriodic ("Unsupported
    paddingMode") on a macOS release: minigraph computes them, the export warns in the header and
    on the op's line; the other modes get no warning."""
    g = mg.Graph()
    x = g.placeholder([4], name="x")
    y = g.pad_tensor(x, mode, [2], [2], name="wrap")
    text = g.to_swift(target_tensors=[y])
    swift = {"PERIODIC": ".periodic", "ANTI_PERIODIC": ".antiPeriodic"}[mode.name]
    head = text.split("import Foundation")[0]
    assert "// Warning: paddingMode .periodic and .antiPeriodic are refused by MPSGraph" in head
    assert f"'wrap' ({swift})" in head and "Unsupported paddingMode" in head
    (line,) = [ln for ln in text.splitlines() if "padTensor" in ln]
    assert line.endswith(f'// Warning: MPSGraph may refuse paddingMode {swift} ("Unsupported paddingMode")')
    assert f"with: {swift}" in line
    np.testing.assert_array_equal(g.run({x: np.arange(1, 5, dtype=np.float32)}, [y])[y].shape, (8,))
    other = mg.Graph()
    x = other.placeholder([4], name="x")
    z = other.pad_tensor(x, mg.PaddingMode.REFLECT, [2], [2])
    assert "Warning" not in other.to_swift(target_tensors=[z])


def test_the_header_names_the_os_each_op_needs_per_apples_pages():
    """transpose(_:permutation:name:) is macOS 13.0 / iOS 16.0 on Apple's page, expandDims and
    squeeze 12.3 / 15.4, broadcast, cast and topK 12.0 / 15.0: the export's header says so."""
    def header(build):
        g = mg.Graph()
        y = build(g, g.placeholder([2, 3], name="x"))
        return g.to_swift(target_tensors=[y]).split("import Foundation")[0]
    assert "// Needs macOS 12.3 / iOS 15.4 or later (expandDims, squeeze)." in header(
        lambda g, x: g.squeeze(g.expand_dims(x, 0), [0]))
    assert "// Needs macOS 13.0 / iOS 16.0 or later (broadcast, cast, transpose)." in header(
        lambda g, x: g.permute(g.broadcast(g.cast(x, mg.float16), [4, 2, 3]), [2, 0, 1]))
    assert "// Needs macOS 12.0 / iOS 15.0 or later (topK)." in header(lambda g, x: g.top_k(x, 2)[0])
