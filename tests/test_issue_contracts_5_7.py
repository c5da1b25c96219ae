"""Contract tests written from the text of issues 5, 6 and 7 alone (an outsider's reading).

Every name, keyword and return type here is the one the issue states (or the obvious spelling
where the issue leaves it open); references are NumPy one-liners and naive loops written from
the formulas, sharing no code with minigraph's kernels.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minigraph as mg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_WEBGPU = "webgpu" in mg.available_backends()
HAVE_DOT = shutil.which("dot") is not None
needs_webgpu = pytest.mark.skipif(not HAVE_WEBGPU and "webgpu" not in os.environ.get("MINIGRAPH_REQUIRE_BACKENDS", ""),
                                  reason="webgpu backend unavailable here")


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def py(*args, env=None, cwd=ROOT, timeout=120):
    e = dict(os.environ)
    e.setdefault("PYTHONPATH", "")
    e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e["PYTHONPATH"] else "")
    e.update(env or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=e, timeout=timeout)


# ==================================================================================== issue 5


class _Toy:
    """A third-party backend: relu only (anything else: KernelMissingError)."""

    name = "toy"

    def available(self):
        return True, ""

    def prepare(self, plan):
        fns = []
        for st in plan.steps:
            if st.op.type == "placeholder":
                fns.append(None)
            elif st.op.type == "relu":
                fns.append(lambda a: np.maximum(a, 0))
            else:
                raise mg.KernelMissingError(f"toy backend: no kernel for {st.op.type} op {st.op.name!r}")

        def runner(feeds, variables):
            slots = {}
            for (t, slot, _), v in zip(plan.feeds, feeds):
                slots[slot] = v
            for st, fn in zip(plan.steps, fns):
                if fn is not None:
                    slots[st.outputs[0]] = fn(*(slots[i] for i in st.inputs))
            return [slots[s] for _, s in plan.targets], {}

        return runner


# ==================================================================================== issue 6
def test_bench_help_lists_the_benchmarks():
    r = py("-m", "minigraph", "bench", "--help")
    assert r.returncode == 0
    for name in ("depthwise", "executor", "compile", "gpu"):
        assert name in r.stdout


def test_bench_depthwise_tiny_prints_a_table_and_writes_json(tmp_path):
    out = tmp_path / "dw.json"
    r = py("-m", "minigraph", "bench", "depthwise", "--tiny", "--peers", "minigraph,torch", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "geomean" in r.stdout and "ms" in r.stdout
    data = json.loads(out.read_text())
    assert data["results"] and all("minigraph" in row["peers"] for row in data["results"])


@pytest.mark.parametrize("script", ["depthwise_cpu.py", "executor_overhead.py", "compile_time.py"])
def test_benchmark_scripts_run_directly_at_tiny_size(tmp_path, script):
    out = tmp_path / "r.json"
    args = ["--tiny", "--json", str(out)]
    if script == "depthwise_cpu.py":
        args += ["--peers", "minigraph"]
    r = py(os.path.join(ROOT, "benchmarks", script), *args, cwd=str(tmp_path))  # from any directory
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) >= 3  # a table
    json.loads(out.read_text())


def test_missing_peer_is_skipped_with_a_note(tmp_path):
    """With torch not importable, the depthwise benchmark still runs and says torch was skipped."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "torch.py").write_text("raise ImportError('torch hidden by the test')\n")
    out = tmp_path / "r.json"
    r = py(os.path.join(ROOT, "benchmarks", "depthwise_cpu.py"), "--tiny", "--peers", "minigraph,torch", "--json",
           str(out), env={"PYTHONPATH": f"{shim}{os.pathsep}{ROOT}"})
    assert r.returncode == 0, r.stderr
    text = r.stdout + r.stderr
    assert "torch" in text and "skip" in text.lower()


def test_benchmark_shapes_list_mobilenet_layers():
    sys.path.insert(0, ROOT)
    from benchmarks import shapes

    assert len(shapes.MOBILENET_V2_DW) == 17
    ks = {layer[3] if len(layer) > 3 else None for layer in shapes.MOBILENET_V2_DW}
    assert ks == {3}


def test_performance_doc_has_tables_plot_and_commands():
    text = open(os.path.join(ROOT, "docs", "performance.md")).read()
    assert "python -m minigraph bench" in text or "python benchmarks/" in text
    assert "|" in text and "geomean" in text.lower().replace(" ", "").replace("geometricmean", "geomean")
    assert ".png" in text or ".svg" in text
    assert os.path.isfile(os.path.join(ROOT, "benchmarks", "plot.py"))


# ==================================================================================== issue 7
def _sample_graph():
    g = mg.Graph()
    x = g.placeholder(shape=(2, 3, 8, 8), dtype=mg.float32, name="x")
    with g.name_scope("block"):
        w = g.constant(np.random.default_rng(0).standard_normal((1, 3, 3, 3)).astype(np.float32), name="w")
        desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=2,
                                                     padding_style=mg.PaddingStyle.TF_SAME)
        y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
        r = g.relu(y, name="act")
    unused = g.sigmoid(x, name="unused")
    loss = g.reduction_sum(g.multiplication(r, r), axes=None, name="loss")
    return g, x, w, r, loss, unused


def test_print_and_describe_list_one_op_per_line():
    g, x, w, r, loss, _ = _sample_graph()
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
    assert str(_sample_graph()[0]) == text


def test_print_graph_writes_the_listing(capsys):
    g = _sample_graph()[0]
    print(g)
    assert "block/act" in capsys.readouterr().out


def test_executable_describe_shows_pruned_ops_and_frees():
    g, x, w, r, loss, unused = _sample_graph()
    exe = g.compile({x: mg.ShapedType((2, 3, 8, 8), mg.float32)}, [loss])
    text = exe.describe()
    assert "unused" in text and "prun" in text.lower()
    assert "free" in text.lower()
    assert "block/dw" in text


def test_to_networkx_digraph_with_op_and_tensor_attributes():
    import networkx as nx

    g, x, w, r, loss, _ = _sample_graph()
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


def test_to_dot_is_text_with_clusters_and_gradient_colours():
    g, x, w, r, loss, _ = _sample_graph()
    g.gradients(loss, [x])
    dot = g.to_dot()
    assert isinstance(dot, str) and dot.lstrip().startswith("digraph")
    assert "cluster" in dot and "block" in dot
    import re

    fill = {}
    for line in dot.splitlines():
        m = re.search(r'^\s*(n\w+) \[label="([^"]*)".*fillcolor="([^"]+)"', line)
        if m:
            fill[m.group(2).split("\\n")[0]] = m.group(3)
    grad = [c for lab, c in fill.items() if "gradient" in lab]
    assert fill["act"] and grad and all(c != fill["act"] for c in grad), fill


@pytest.mark.skipif(not HAVE_DOT, reason="Graphviz not installed")
def test_graphviz_parses_the_dot(tmp_path):
    g, x, *_ = _sample_graph()
    r = subprocess.run(["dot", "-Tsvg"], input=g.to_dot(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "<svg" in r.stdout


@pytest.mark.skipif(not HAVE_DOT, reason="Graphviz not installed")
def test_render_svg_and_png(tmp_path):
    g = _sample_graph()[0]
    svg, png = tmp_path / "graph.svg", tmp_path / "graph.png"
    g.render(str(svg))
    g.render(png)
    assert "<svg" in svg.read_text()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_render_without_graphviz_names_the_missing_tool(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    g = _sample_graph()[0]
    with pytest.raises(mg.MiniGraphError) as ei:
        g.render(str(tmp_path / "graph.svg"))
    assert "Graphviz" in str(ei.value) or "graphviz" in str(ei.value)
    assert "dot" in str(ei.value)


def test_mermaid_text():
    g, x, w, r, loss, _ = _sample_graph()
    text = g.to_mermaid()
    assert text.split()[0] in ("flowchart", "graph")
    assert "subgraph" in text and "-->" in text


def test_ops_record_the_user_source_line():
    import inspect

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


def test_save_load_round_trip_is_exact(tmp_path, rng):
    g, x, w, r, loss, _ = _sample_graph()
    v = g.variable(f32(rng, 2, 3, 4, 4), name="v")
    s = g.addition(r, v, name="s")
    with g.control_dependencies([s]):
        a = g.assign(v, s, name="upd")
    gr = g.gradients(loss, [x])[x]
    path = tmp_path / "model.json"
    g.save(str(path))
    assert path.exists()
    h = mg.load(str(path))
    assert str(h) == str(g)
    xv = f32(rng, 2, 3, 8, 8)
    a1 = g.run({x: xv}, [loss, gr, s])
    hx = h.tensor("x")
    b1 = h.run({hx: xv}, [h.tensor("loss"), h.tensor(gr.name), h.tensor("s")])
    for t1, t2 in zip(a1.values(), b1.values()):
        np.testing.assert_array_equal(t1, t2)
    op = h.operation("upd")
    assert [d.name for d in op.control_dependencies] == ["s"]
    desc = h.operation("block/dw").attrs["descriptor"]
    assert desc.stride_in_x == 2 and desc.padding_style == mg.PaddingStyle.TF_SAME
    # pathlib path works too, and so does a directory (graph.json + graph.npz inside)
    g.save(tmp_path / "again.json")
    assert str(mg.load(tmp_path / "again.json")) == str(g)
    d = tmp_path / "modeldir"
    d.mkdir()
    g.save(d)
    assert sorted(os.listdir(d)) == ["graph.json", "graph.npz"]
    assert str(mg.load(d)) == str(g)


def _saved(tmp_path):
    g = _sample_graph()[0]
    path = tmp_path / "m.json"
    g.save(str(path))
    doc = json.loads(path.read_text())
    return path, doc


def _rewrite(path, doc):
    path.write_text(json.dumps(doc))


def test_hostile_files_raise_serialization_errors(tmp_path):
    path, doc = _saved(tmp_path)

    def expect(mutate, *words):
        d = json.loads(json.dumps(doc))
        mutate(d)
        _rewrite(path, d)
        with pytest.raises(mg.SerializationError) as ei:
            mg.load(str(path))
        for wd in words:
            assert wd.lower() in str(ei.value).lower(), (wd, str(ei.value))

    expect(lambda d: d.__setitem__("version", 999), "version")
    expect(lambda d: d["ops"][-1].__setitem__("type", "os.system"), "os.system")
    expect(lambda d: d["ops"][-1]["inputs"].__setitem__(0, ["nowhere", 0]), "nowhere")
    expect(lambda d: d["ops"][0]["attrs"]["shape"].__setitem__("v", [1 << 40, 1 << 40, 1 << 40]) if
           isinstance(d["ops"][0]["attrs"]["shape"], dict) else d["ops"][0]["attrs"].__setitem__(
               "shape", [1 << 40, 1 << 40, 1 << 40]))
    expect(lambda d: d.__setitem__("ops", "not a list"))
    # truncated JSON
    path.write_text(json.dumps(doc)[:200])
    with pytest.raises(mg.SerializationError):
        mg.load(str(path))
    # not JSON at all
    path.write_bytes(b"\x80\x04\x95pickle")
    with pytest.raises(mg.SerializationError):
        mg.load(str(path))
    with pytest.raises(mg.SerializationError):
        mg.load(str(tmp_path / "nope.json"))


def test_hostile_npz_mismatched_truncated_or_pickled(tmp_path):
    path, doc = _saved(tmp_path)
    npz = path.with_suffix(".npz")
    assert npz.exists()
    good = npz.read_bytes()
    # truncated
    npz.write_bytes(good[: len(good) // 2])
    with pytest.raises(mg.SerializationError):
        mg.load(str(path))
    # an array of another shape under the same key
    with np.load(str(tmp_path / "m.npz") if False else __import__("io").BytesIO(good)) as z:
        keys = list(z.keys())
    np.savez(str(npz), **{k: np.zeros((7, 7), np.float32) for k in keys})
    with pytest.raises(mg.SerializationError):
        mg.load(str(path))
    # the same, without the checksum (so the array header check itself must catch it)
    d = dict(doc)
    d.pop("npz_sha256", None)
    _rewrite(path, d)
    with pytest.raises(mg.SerializationError):
        mg.load(str(path))
    # a pickled object array whose unpickling would leave a trace: never unpickled
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    arr = np.empty((1,), dtype=object)
    arr[0] = Evil()
    np.savez(str(npz), **{k: arr for k in keys})
    with pytest.raises(mg.SerializationError):
        mg.load(str(path))
    assert not marker.exists()


def test_cache_is_lru_bounded_configurable_and_explains_compiles():
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
    g.set_cache_size(1)
    assert g.cache_info().maxsize == 1 and g.cache_info().currsize == 1


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


def _compare_graph():
    g = mg.Graph()
    x = g.placeholder(shape=(2, 3, 6, 6), dtype=mg.float32, name="x")
    w = g.constant(np.random.default_rng(3).standard_normal((1, 3, 3, 3)).astype(np.float32), name="w")
    y = g.depthwise_convolution_2d(x, w, mg.DepthwiseConvolution2DOpDescriptor(
        padding_style=mg.PaddingStyle.TF_SAME), name="dw")
    r = g.relu(y, name="act")
    out = g.reduction_sum(g.exponent(r, name="ex"), axes=None, name="out")
    return g, x, out


@needs_webgpu
def test_compare_backends_numpy_vs_webgpu_reports_every_node(rng):
    g, x, out = _compare_graph()
    feeds = {x: f32(rng, 2, 3, 6, 6)}
    rep = mg.compare_backends(g, feeds, [out], backends=("numpy", "webgpu"))
    names = [d.tensor for d in rep.diffs]
    for n in ("x", "w", "dw", "act", "ex", "out"):
        assert n in names
    assert names.index("dw") < names.index("act") < names.index("ex") < names.index("out")
    for d in rep.diffs:
        assert d.max_abs >= 0 and d.max_rel >= 0
    assert rep.first_failure is None
    assert "dw" in str(rep)


class _BuggyExp(_Toy):
    """numpy semantics for what the compare graph needs, with a wrong exponent."""

    def __init__(self):
        self._np = mg.get_backend("numpy")

    def prepare(self, plan):
        inner = self._np.prepare(plan)
        ex_slots = [st.outputs[0] for st in plan.steps if st.op.type == "exponent"]
        tgt = [s for _, s in plan.targets]

        def runner(feeds, variables):
            res, assigned = inner(feeds, variables)
            res = [np.asarray(r) * (1.5 if s in ex_slots else 1.0) for r, s in zip(res, tgt)]
            return res, assigned

        return runner


def test_compare_backends_names_the_first_node_over_tolerance(rng):
    mg.register_backend("buggy_exp", _BuggyExp)
    g, x, out = _compare_graph()
    feeds = {x: f32(rng, 2, 3, 6, 6)}
    rep = mg.compare_backends(g, feeds, [out], ("numpy", "buggy_exp"))
    first = rep.first_failure
    assert first is not None
    assert first.tensor == "ex"
    assert first.name == "ex" and first == "ex"
    assert first.max_abs_error == first.max_abs > 0 and first.max_rel_error == pytest.approx(0.5, rel=1e-6)
    ok = [d for d in rep.diffs if d.tensor in ("dw", "act")]
    assert ok and all(d.ok and d.max_abs == 0 for d in ok)
    assert "ex" in str(rep)
    assert [d.tensor for d in rep] == [d.tensor for d in rep.diffs]


def test_to_swift_emits_mpsgraph_source():
    g, x, w, r, loss, _ = _sample_graph()
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
    from minigraph.ops.registry import OPS

    for name, opdef in OPS.items():
        assert opdef.swift and "(" in opdef.swift, name
