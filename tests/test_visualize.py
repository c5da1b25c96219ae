"""Pictures: networkx, DOT (parsed by Graphviz), Mermaid, render, and the `show` command in-process
(`python -m minigraph show` itself is in test_cli.py)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import networkx as nx
import pytest

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


