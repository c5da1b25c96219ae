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
