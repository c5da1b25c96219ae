"""Pictures: networkx, DOT (parsed by Graphviz), Mermaid, render, and the `show` command in-process
(`python -m minigraph show` itself is in test_cli.py)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import networkx as nx
import pytest

import numpy as np

import minigraph as mg
from minigraph.__main__ import show_main
from minigraph import visualize
from minigraph.listing import is_gradient_op
from graph_zoo import pictured_graph as build
from graph_zoo import scoped_cnn_graph

HAS_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(not HAS_DOT, reason="Graphviz `dot` is not installed")


def test_to_networkx_matches_the_graph():
    g, t = build()
    dg = g.to_networkx()
    assert isinstance(dg, nx.DiGraph) and nx.is_directed_acyclic_graph(dg)
    assert list(dg.nodes) == [op.name for op in g.operations]
    for op in g.operations:
        n = dg.nodes[op.name]
        assert n["type"] == op.type and n["index"] == op.index and n["op"] is op
        assert n["outputs"] == [(tuple(o.shape), o.dtype.name) for o in op.outputs]
        assert n["gradient"] == is_gradient_op(op)
        for i, inp in enumerate(op.inputs):
            e = dg.edges[inp.operation.name, op.name]
            assert e["kind"] == "data" and e["tensor"] == inp.name and i in e["input_indices"]
            assert e["shape"] == tuple(inp.shape) and e["dtype"] == inp.dtype.name
        for d in op.control_dependencies:
            assert dg.has_edge(d.name, op.name)
    assert dg.edges["layer1/act", "layer1/inner/sq"]["input_indices"] == [0, 1]
    assert dg.edges["sgd", "after"]["kind"] == "control"
    assert dg.nodes["layer1/inner/sq"]["scope"] == "layer1/inner"
    n_edges = len({(i.operation.name, op.name) for op in g.operations for i in op.inputs} |
                  {(d.name, op.name) for op in g.operations for d in op.control_dependencies})
    assert dg.number_of_edges() == n_edges
    # shapes and dtypes on nodes and edges of a scoped CNN
    g, x, w, r, loss, _ = scoped_cnn_graph()
    dg = g.to_networkx()
    assert isinstance(dg, nx.DiGraph)
    assert set(dg.nodes) == {op.name for op in g.operations}
    assert dg.nodes["block/dw"]["type"] == "depthwise_convolution_2d"
    assert dg.nodes["block/dw"]["shape"] == (2, 3, 4, 4) and dg.nodes["block/dw"]["dtype"] == mg.float32
    assert dg.nodes["block/dw"]["op"] is g.operation("block/dw")
    e = dg.edges["block/dw", "block/act"]
    assert tuple(e["shape"]) == (2, 3, 4, 4) and "float32" in str(e["dtype"])
    assert nx.is_directed_acyclic_graph(dg)
    assert dg.has_edge("x", "block/dw") and dg.has_edge("block/w", "block/dw")


def _dot_json(text: str) -> dict:
    out = subprocess.run(["dot", "-Tjson"], input=text.encode(), capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    return json.loads(out.stdout)


@needs_dot
def test_dot_is_parsed_by_graphviz_with_clusters_and_gradient_colours():
    g, t = build()
    text = g.to_dot()
    d = _dot_json(text)
    objs = d["objects"]
    nodes = {o["name"]: o for o in objs if not o["name"].startswith("cluster")}
    clusters = {o["label"]: o for o in objs if o["name"].startswith("cluster")}
    assert len(nodes) == len(g.operations)
    assert {"layer1", "inner", "grad", "sgd"} <= set(clusters)
    # the inner scope is nested in layer1: its nodes are a subset of layer1's
    assert set(clusters["inner"]["nodes"]) < set(clusters["layer1"]["nodes"])
    grad_fill = visualize.COLORS["gradient"]
    for op in g.operations:
        fill = nodes[f"n{op.index}"]["fillcolor"]
        if is_gradient_op(op):
            assert fill == grad_fill, op.name
        else:
            assert fill != grad_fill, op.name
    assert sum(is_gradient_op(op) for op in g.operations) >= 5
    # data edges carry the tensor type; the control dependency is dashed
    edges = {(objs[e["tail"]]["name"], objs[e["head"]]["name"]): e for e in d["edges"]}
    ctrl = edges[(f"n{t['upd'].index}", f"n{t['after'].operation.index}")]
    assert ctrl.get("style") == "dashed"
    assert edges[("n0", f"n{t['odd'].operation.index}")]["label"] == "float32[2,3]"
    # the odd name survives quoting (Graphviz keeps label escapes until it draws)
    label = nodes[f"n{t['odd'].operation.index}"]["label"]
    assert label.startswith('we"ird\\\\name {x} <b>|[1]')
    # a scoped CNN renders to SVG
    g, x, *_ = scoped_cnn_graph()
    r = subprocess.run(["dot", "-Tsvg"], input=g.to_dot(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "<svg" in r.stdout


def test_dot_needs_no_graphviz_and_rejects_bad_rankdir():
    g, _ = build()
    assert g.to_dot(rankdir="LR").startswith("digraph minigraph {\n  rankdir=LR;")
    with pytest.raises(mg.MiniGraphError, match="rankdir"):
        g.to_dot(rankdir="sideways;evil")
    # clusters for scopes, and gradient ops in their own colour, from the text alone
    g, x, w, r, loss, _ = scoped_cnn_graph()
    g.gradients(loss, [x])
    dot = g.to_dot()
    assert isinstance(dot, str) and dot.lstrip().startswith("digraph")
    assert "cluster" in dot and "block" in dot
    fill = {}
    for line in dot.splitlines():
        m = re.search(r'^\s*(n\w+) \[label="([^"]*)".*fillcolor="([^"]+)"', line)
        if m:
            fill[m.group(2).split("\\n")[0]] = m.group(3)
    grad = [c for lab, c in fill.items() if "gradient" in lab]
    assert fill["act"] and grad and all(c != fill["act"] for c in grad), fill


def test_mermaid_structure():
    g, t = build()
    text = g.to_mermaid()
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    declared = re.findall(r"^\s*(n\d+)[\[\(]", text, re.M)
    assert sorted(declared) == sorted(f"n{op.index}" for op in g.operations)
    for a, b in re.findall(r"^\s*(n\d+) -(?:->|\.->) (n\d+)$", text, re.M):
        assert a in declared and b in declared
    assert f"  n{t['upd'].index} -.-> n{t['after'].operation.index}" in lines
    assert sum(ln.strip().startswith("subgraph ") for ln in lines) == sum(ln.strip() == "end" for ln in lines) >= 4
    grad_class = next(ln for ln in lines if ln.startswith("  class ") and ln.endswith(" gradient"))
    members = set(grad_class.split()[1].split(","))
    assert members == {f"n{op.index}" for op in g.operations if is_gradient_op(op)}
    odd = next(ln for ln in lines if ln.strip().startswith(f"n{t['odd'].operation.index}["))
    assert odd.count('"') == 2 and "<b>" not in odd  # quotes and markup are escaped
    # a scoped CNN
    g, x, w, r, loss, _ = scoped_cnn_graph()
    text = g.to_mermaid()
    assert text.split()[0] in ("flowchart", "graph")
    assert "subgraph" in text and "-->" in text


@needs_dot
@pytest.mark.parametrize("suffix, magic", [(".svg", b"<?xml"), (".png", b"\x89PNG"), (".pdf", b"%PDF")])
def test_render(tmp_path, suffix, magic):
    g, _ = build()
    out = g.render(tmp_path / f"graph{suffix}")
    with open(out, "rb") as f:
        assert f.read(5).startswith(magic[:4])


def test_render_dot_text_without_graphviz(tmp_path, monkeypatch):
    g, _ = build()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    p = g.render(tmp_path / "graph.dot")
    assert open(p).read() == g.to_dot()
    with pytest.raises(visualize.GraphvizNotFoundError) as e:
        g.render(tmp_path / "graph.svg")
    msg = str(e.value)
    assert "Graphviz" in msg and "`dot`" in msg and "apt-get install graphviz" in msg
    assert isinstance(e.value, mg.MiniGraphError)
    # no `dot` on PATH at all (shutil.which itself not patched)
    monkeypatch.undo()
    monkeypatch.setenv("PATH", str(tmp_path))
    g = scoped_cnn_graph()[0]
    with pytest.raises(mg.MiniGraphError) as ei:
        g.render(str(tmp_path / "graph.svg"))
    assert "Graphviz" in str(ei.value) or "graphviz" in str(ei.value)
    assert "dot" in str(ei.value)


@needs_dot
def test_render_takes_a_str_or_a_path(tmp_path):
    g = scoped_cnn_graph()[0]
    svg, png = tmp_path / "graph.svg", tmp_path / "graph.png"
    g.render(str(svg))
    g.render(png)
    assert "<svg" in svg.read_text()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@needs_dot
def test_render_reports_graphviz_errors(tmp_path):
    g, _ = build()
    with pytest.raises(visualize.RenderError, match="dot -Tnosuchformat"):
        g.render(tmp_path / "graph.nosuchformat")
    with pytest.raises(mg.MiniGraphError, match="cannot tell the image format"):
        g.render(tmp_path / "graph")


@needs_dot
def test_show_command(tmp_path, capsys):
    g, _ = build()
    g.save(tmp_path / "g.json")
    assert show_main([str(tmp_path / "g.json"), "--png", str(tmp_path / "g.png")]) == 0
    cap = capsys.readouterr()
    assert cap.out.strip() == str(g) and "wrote" in cap.err
    assert open(tmp_path / "g.png", "rb").read(4) == b"\x89PNG"
    assert show_main([str(tmp_path / "g.json"), "--dot"]) == 0
    assert capsys.readouterr().out == mg.load(tmp_path / "g.json").to_dot()
    assert show_main([str(tmp_path / "g.json"), "--mermaid"]) == 0
    assert capsys.readouterr().out.startswith("flowchart TD")
    assert show_main(["--bogus"]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert show_main([str(bad)]) == 1
    assert "not valid JSON" in capsys.readouterr().err




# ---------------------------------------------------------------------------------------------- collapsed scopes
def _training_graph():
    import numpy as np

    g = mg.Graph()
    x = g.placeholder([-1, 4], name="x")
    with g.name_scope("model"):
        w = g.variable(np.ones((4, 3), np.float32), name="w")
        b = g.variable(np.zeros(3, np.float32), name="b")
        y = g.matrix_multiplication(x, w, name="mm") + b
    loss = g.mean(g.square(y), axes=None, name="loss")
    grads = g.gradients(loss, g.trainable_variables, name="grad")
    for v in g.trainable_variables:
        g.apply_adam(v, grads[v], name=f"adam/{v.name.rpartition('/')[2]}")
    return g


def _dot_nodes_edges(text):
    nodes = set(re.findall(r"^\s*([nc]\d+) \[label=", text, re.M))
    edges = re.findall(r"^\s*([nc]\d+) -> ([nc]\d+)", text, re.M)
    return nodes, edges


def test_collapse_draws_gradient_and_optimizer_scopes_as_one_node_each():
    g = _training_graph()
    assert visualize.collapsible_scopes(g) == ["grad", "adam"]
    full, folded = g.to_dot(), g.to_dot(collapse=True)
    assert g.to_dot(collapse=False) == full
    nodes, edges = _dot_nodes_edges(folded)
    assert {"c0", "c1"} <= nodes
    n_grad = sum(1 for op in g.operations if op.name.startswith("grad/"))
    n_adam = sum(1 for op in g.operations if op.name.startswith("adam/"))
    assert f"{n_grad} ops (gradients), collapsed" in folded and f"{n_adam} ops (optimizer update), collapsed" in folded
    # every op outside the collapsed scopes is still a node, and none inside is
    outside = [op for op in g.operations if not op.name.startswith(("grad/", "adam/"))]
    assert nodes == {f"n{op.index}" for op in outside} | {"c0", "c1"}
    # edges: the forward graph's own, plus those into and out of the collapsed nodes, each once
    assert len(edges) == len(set(edges))
    assert all(a != b for a, b in edges)
    ids = {op.name: f"n{op.index}" for op in outside}
    assert (ids["x"], "c0") in edges and ("c0", "c1") in edges and (ids["model/w"], "c1") in edges
    assert len(folded) < len(full) / 3
    # expandable: a chosen scope only, or none
    only = g.to_dot(collapse="grad")
    assert "ops (gradients), collapsed" in only and "optimizer update" not in only
    with pytest.raises(mg.MiniGraphError, match="no name scope 'nope'"):
        g.to_dot(collapse=["nope"])
    if shutil.which("dot"):
        subprocess.run(["dot", "-Tsvg"], input=folded.encode(), check=True, capture_output=True)


def test_collapse_keeps_a_user_scope_that_holds_placeholders():
    """A user's 'train' scope with the model and its update is not an optimizer scope."""
    import numpy as np

    g = mg.Graph()
    with g.name_scope("train"):
        x = g.placeholder([2], name="x")
        w = g.variable(np.ones(2, np.float32), name="w")
        g.assign(w, g.read(w) + x, name="update")
    assert visualize.collapsible_scopes(g) == []
    assert "collapsed" not in g.to_dot(collapse=True)


@needs_dot
def test_show_png_collapses_by_default_and_expand_draws_every_op(tmp_path, capsys):
    g = _training_graph()
    g.save(tmp_path / "t.json")
    small, big = tmp_path / "small.svg", tmp_path / "big.svg"
    assert show_main([str(tmp_path / "t.json"), "--svg", str(small)]) == 0
    assert show_main([str(tmp_path / "t.json"), "--svg", str(big), "--expand"]) == 0
    assert show_main([str(tmp_path / "t.json"), "--dot", "--collapse", "adam"]) == 0
    dot = capsys.readouterr().out
    assert "optimizer update" in dot and "(gradients)" not in dot
    s, b = small.read_text(), big.read_text()
    width = lambda text: float(re.search(r'<svg width="([\d.]+)pt"', text).group(1))  # noqa: E731
    assert "collapsed" in s and "collapsed" not in b
    assert s.count("<g id=\"node") < b.count("<g id=\"node") / 3
    assert width(s) < width(b)


def test_labels_wrap_and_never_cut_the_field_that_differs():
    """A descriptor whose non-default field comes last keeps it, wrapped onto its own line."""
    import numpy as np

    g = mg.Graph()
    x = g.placeholder([1, 2, 9, 9], name="x")
    w = g.constant(np.ones((1, 2, 3, 3), np.float32), name="w")
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=2, dilation_rate_in_x=2,
                                                 dilation_rate_in_y=2, padding_left=1, padding_right=1,
                                                 padding_style=mg.PaddingStyle.TF_SAME)
    g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    label = re.search(r'label="(dw\\n[^"]*)"', g.to_dot()).group(1)
    lines = label.split("\\n")
    assert "..." not in label
    joined = " ".join(lines[3:])
    for field in ("stride_in_x=2", "dilation_rate_in_y=2", "padding_right=1", "padding_style=TF_SAME"):
        assert field in joined, field
    assert all(len(ln) <= 70 for ln in lines)


# ---------------------------------------------------------------------------------------------- notebooks
def test_notebook_display_is_svg_with_a_text_fallback(monkeypatch):
    g = _training_graph()
    bundle = g._repr_mimebundle_()
    assert bundle["text/plain"] == g.describe()
    graphviz = pytest.importorskip("graphviz", reason="needs graphviz, in the viz extra: pip install -e '.[viz]'")
    if shutil.which("dot"):
        svg = bundle["image/svg+xml"]
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "collapsed" in svg
        assert g._repr_svg_() == svg
    # without Graphviz's dot, or without the graphviz package: the listing alone
    monkeypatch.setattr(graphviz.Source, "pipe", lambda *a, **k: (_ for _ in ()).throw(graphviz.ExecutableNotFound(["dot"])))
    assert g._repr_mimebundle_() == {"text/plain": g.describe()} and g._repr_svg_() is None
    monkeypatch.setitem(__import__("sys").modules, "graphviz", None)
    assert g._repr_mimebundle_() == {"text/plain": g.describe()} and g._repr_svg_() is None


def test_a_compiled_plan_draws_one_node_per_step_with_fused_steps_listing_their_ops(tmp_path):
    g = mg.Graph()
    x = g.placeholder([2, 3, 8, 8], name="x")
    w = g.variable(np.ones((4, 3, 3, 3), np.float32), name="w")
    y = g.relu(g.convolution_2d(x, w, mg.Convolution2DOpDescriptor(), name="conv"), name="y")
    loss = g.mean(y, name="loss")
    exe = g.compile({x: mg.ShapedType([2, 3, 8, 8])}, [loss])
    dot = exe.to_dot()
    assert dot.startswith("digraph plan {") and dot.count("[label=") == len(exe.steps) == 4
    assert "fused_epilogue" in dot and "convolution_2d relu" in dot.replace(",", "")
    assert "s0 -> s2;" in dot and "s1 -> s2;" in dot and "s2 -> s3;" in dot  # along the buffers
    assert exe.render(str(tmp_path / "p.dot")).endswith("p.dot") and (tmp_path / "p.dot").read_text() == dot
    with pytest.raises(mg.MiniGraphError, match="rankdir"):
        exe.to_dot(rankdir="XY")
