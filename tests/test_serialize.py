"""g.save / mg.load: exact round trips, and clear errors for corrupt, truncated or hostile files."""
from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import zipfile

import numpy as np
import pytest

import minigraph as mg
from graph_zoo import every_op_graph, scoped_cnn_graph


def _run(g, feeds, outs, ops):
    """Run by names, so the same call works on a graph and on its reloaded copy."""
    f = {g.tensor(t.name): v for t, v in feeds.items()}
    r = g.run(f, [g.tensor(t.name) for t in outs], [g.operation(o.name) for o in ops])
    return [r[g.tensor(t.name)] for t in outs]


def _vars(g):
    return {op.name: g.value_of(op.outputs[0]) for op in g.operations if op.type == "variable"}


def test_round_trip_every_op_type_is_exact(tmp_path):
    g, feeds, outs, ops = every_op_graph()
    _run(g, feeds, outs, ops)  # one training step: variables now differ from their initial values
    path = g.save(tmp_path / "zoo.json")
    assert (tmp_path / "zoo.npz").exists()
    h = mg.load(path)
    assert str(h) == str(g)
    assert [op.location for op in h.operations] == [op.location for op in g.operations]
    before = _vars(g)
    assert before.keys() == _vars(h).keys()
    for k, v in _vars(h).items():
        assert v.dtype == before[k].dtype and np.array_equal(v, before[k]), k
    # same results, and the same variable updates, on both
    r1, r2 = _run(g, feeds, outs, ops), _run(h, feeds, outs, ops)
    for t, a, b in zip(outs, r1, r2):
        assert a.dtype == b.dtype and a.shape == b.shape, t.name
        np.testing.assert_array_equal(a, b, err_msg=t.name)
    for k, v in _vars(h).items():
        np.testing.assert_array_equal(v, _vars(g)[k], err_msg=k)
    assert not np.array_equal(_vars(g)["w_dw"], before["w_dw"])  # the step really trained
    # descriptors are equal objects, not just equal listings
    for o1, o2 in zip(g.operations, h.operations):
        if "descriptor" in o1.attrs:
            assert o1.attrs["descriptor"] == o2.attrs["descriptor"]
            assert type(o1.attrs["descriptor"]) is type(o2.attrs["descriptor"])


def test_round_trip_keeps_names_scopes_and_constant_dtypes(tmp_path):
    g = mg.Graph(cache_size=7)
    x = g.placeholder([-1, 2], mg.float16, name="x")
    c1 = g.constant(np.array([[1.5, -2.25]], np.float16), name="conv")
    c2 = g.constant(np.array([True, False]), name="conv")  # a duplicate user name
    c3 = g.constant(np.array([7, -3], np.int64))
    c4 = g.constant(np.array([250, 3], np.uint8))
    c5 = g.constant(np.float32(np.nan))
    c6 = g.constant(np.array([np.inf, -np.inf, 1e-45], np.float32))
    y = g.addition(x, c1, name="y")
    g.save(tmp_path / "m")  # no suffix: writes m and m.npz
    h = mg.load(tmp_path / "m")
    assert str(h) == str(g)
    assert h.cache_info().maxsize == 7
    with pytest.raises(mg.AmbiguousNameError):
        h.operation("conv")
    assert h.operation("conv_1").name == "conv_1"
    assert [o.name for o in h.operations if h.user_name_of(o) == "conv"] == ["conv", "conv_1"]
    for t in (c1, c2, c3, c4, c5, c6):
        a, b = t.operation.attrs["value"], h.operations[t.operation.index].attrs["value"]
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
        assert not b.flags.writeable
    xv = np.array([[1, 2], [3, 4]], np.float16)
    np.testing.assert_array_equal(g.run({x: xv}, [y])[y], h.run({h.tensor("x"): xv}, [h.tensor("y")])[h.tensor("y")])


def test_show_command_prints_the_listing(tmp_path, capsys):
    from minigraph.__main__ import show_main

    g, *_ = every_op_graph()
    g.save(tmp_path / "g.json")
    assert show_main([str(tmp_path / "g.json")]) == 0
    assert capsys.readouterr().out.strip() == str(g)
    assert show_main(["show", str(tmp_path / "nope.json")]) == 1
    assert "no such file" in capsys.readouterr().err


def test_load_never_unpickles(tmp_path, monkeypatch):
    g, *_ = every_op_graph()
    g.save(tmp_path / "g.json")

    def boom(*a, **k):
        raise AssertionError("pickle used during load")

    monkeypatch.setattr(pickle, "loads", boom)
    monkeypatch.setattr(pickle, "load", boom)
    monkeypatch.setattr(pickle, "Unpickler", boom)
    assert str(mg.load(tmp_path / "g.json")) == str(g)


def test_round_trip_with_assign_gradient_and_path_spellings(tmp_path, rng):
    """A graph with a variable, a control-dependent assign and a gradient: the same listing, results
    and descriptor after load; str paths, pathlib paths and a directory all work."""
    g, x, w, r, loss, _ = scoped_cnn_graph()
    v = g.variable(rng.standard_normal((2, 3, 4, 4)).astype(np.float32), name="v")
    s = g.addition(r, v, name="s")
    with g.control_dependencies([s]):
        g.assign(v, s, name="upd")
    gr = g.gradients(loss, [x])[x]
    path = tmp_path / "model.json"
    g.save(str(path))
    assert path.exists()
    h = mg.load(str(path))
    assert str(h) == str(g)
    xv = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
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


# ---------------------------------------------------------------------- hostile JSON
def _small(tmp_path):
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    w = g.variable(np.ones((3, 2), np.float32), name="w")
    desc = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME)
    xi = g.reshape(x, [1, 1, 2, 3], name="img")
    wd = g.constant(np.ones((1, 1, 1, 1), np.float32), name="k")
    g.depthwise_convolution_2d(xi, wd, descriptor=desc, name="dw")
    y = g.matrix_multiplication(x, w, name="y")
    with g.control_dependencies([y]):
        g.tanh(y, name="t")
    path = tmp_path / "g.json"
    g.save(path)
    return path, json.loads(path.read_text())


def _op(doc, name):
    return next(o for o in doc["ops"] if o["name"] == name)


def _desc(doc):
    return _op(doc, "dw")["attrs"]["descriptor"]


HOSTILE = {
    "wrong version": (lambda d: d.update(version=2), "schema version 2"),
    "version as string": (lambda d: d.update(version="1"), "version must be an int"),
    "version as bool": (lambda d: d.update(version=True), "version must be an int"),
    "not our format": (lambda d: d.update(format="pickle"), "not a minigraph graph file"),
    "unknown top-level field": (lambda d: d.update(exec="rm -rf /"), "unknown field"),
    "unknown op type": (lambda d: _op(d, "y").update(type="os.system"), "unknown op type"),
    "dangling edge": (lambda d: _op(d, "y")["inputs"].__setitem__(0, ["ghost", 0]), "dangling edge"),
    "edge to a later op": (lambda d: _op(d, "y")["inputs"].__setitem__(0, ["t", 0]), "dangling edge"),
    "output index out of range": (lambda d: _op(d, "y")["inputs"].__setitem__(0, ["x", 3]), "has 1 output"),
    "edge of wrong type": (lambda d: _op(d, "y")["inputs"].__setitem__(0, "x"), "must be [op name, output index]"),
    "index as bool": (lambda d: _op(d, "y")["inputs"].__setitem__(0, ["x", False]), "must be [op name, output index]"),
    "dangling control dependency": (lambda d: _op(d, "t").update(control_dependencies=["ghost"]), "dangling edge"),
    "huge declared shape": (lambda d: _op(d, "x")["attrs"].update(shape=[1 << 20, 1 << 20, 1 << 20]),
                            "more than the limit"),
    "huge output shape": (lambda d: _op(d, "x")["outputs"][0].update(shape=[1 << 40, 1 << 40]), "more than the limit"),
    "negative dimension": (lambda d: _op(d, "x")["attrs"].update(shape=[-5, 3]), "ints >= -1"),
    "name not a string": (lambda d: _op(d, "y").update(name=5), "name must be a str"),
    "empty name": (lambda d: _op(d, "y").update(name=""), "non-empty"),
    "inputs not a list": (lambda d: _op(d, "y").update(inputs="x"), "inputs must be a list"),
    "attrs not a dict": (lambda d: _op(d, "y").update(attrs=[]), "attrs must be a dict"),
    "unknown op field": (lambda d: _op(d, "y").update(code="import os"), "unknown field"),
    "missing op field": (lambda d: _op(d, "y").pop("outputs"), "missing field"),
    "duplicate name": (lambda d: _op(d, "t").update(name="y"), "duplicate op name"),
    "unknown dtype": (lambda d: _op(d, "x")["attrs"].update(dtype={"$": "dtype", "v": "float128"}), "unknown dtype"),
    "unknown value tag": (lambda d: _op(d, "img")["attrs"].update(shape={"$": "pickle", "v": "..."}),
                          "unknown value tag"),
    "untagged object": (lambda d: _op(d, "img")["attrs"].update(shape={"a": 1}), "unknown value tag"),
    "unknown descriptor class": (lambda d: _desc(d).update({"class": "Popen"}), "unknown descriptor class"),
    "descriptor extra field": (lambda d: _desc(d)["fields"].update(__class__=1), "unknown field"),
    "descriptor missing field": (lambda d: _desc(d)["fields"].pop("stride_in_x"), "missing field"),
    "descriptor invalid value": (lambda d: _desc(d)["fields"].update(stride_in_x=0), "stride_in_x=0"),
    "descriptor wrong type": (lambda d: _desc(d)["fields"].update(stride_in_x="2"), "invalid value"),
    "enum not a member": (lambda d: _desc(d)["fields"]["padding_style"].update(v="SAME_ISH"), "is not a PaddingStyle"),
    "enum unknown class": (lambda d: _desc(d)["fields"]["padding_style"].update({"class": "Signals"}),
                           "unknown enum class"),
    "declared outputs differ": (lambda d: _op(d, "y")["outputs"][0].update(shape=[2, 5]), "but the file declares"),
    "attrs that fail inference": (lambda d: _op(d, "img")["attrs"].update(shape=[7]), "cannot be rebuilt"),
    "attrs of a wrong type": (lambda d: _op(d, "img")["attrs"].update(shape="abc"), "cannot be rebuilt"),
    "array ref shape differs from op": (lambda d: _op(d, "k")["attrs"]["value"].update(shape=[2]),
                                        "is declared float32[2] but the op is float32[1, 1, 1, 1]"),
    "variable unknown": (lambda d: d["variables"].update(ghost="a0"), "is not a variable op"),
    "ops not a list": (lambda d: d.update(ops={}), "ops must be a list"),
    "nested too deep": (lambda d: _op(d, "img")["attrs"].update(deep=json.loads("[" * 40 + "]" * 40)),
                        "nested deeper"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_json_is_rejected_clearly(tmp_path, case):
    path, doc = _small(tmp_path)
    assert mg.load(path) is not None  # the unmodified file loads
    mutate, expect = HOSTILE[case]
    mutate(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(mg.SerializationError) as e:
        mg.load(path)
    assert expect in str(e.value), str(e.value)
    assert str(path) in str(e.value) or "npz" in str(e.value)


@pytest.mark.parametrize("text, expect", [
    ("", "not valid JSON"),
    ("[1, 2]", "the document must be a dict"),
    ('{"format": "minigraph.graph", "version": 1, "ops": [', "not valid JSON"),
    ('{"a": NaN}', "invalid JSON constant"),
    ("\xff\xfe garbage", "not valid JSON"),
    ("[" * 100000 + "]" * 100000, "not valid JSON"),
])
def test_garbage_json_is_rejected(tmp_path, text, expect):
    p = tmp_path / "bad.json"
    p.write_bytes(text.encode("latin-1"))
    with pytest.raises(mg.SerializationError) as e:
        mg.load(p)
    assert expect in str(e.value)


def test_truncated_json_at_every_tenth_byte(tmp_path):
    path, _ = _small(tmp_path)
    raw = path.read_bytes()
    for cut in range(0, len(raw) - 1, max(1, len(raw) // 10)):
        path.write_bytes(raw[:cut])
        with pytest.raises(mg.SerializationError):
            mg.load(path)


def test_missing_file_and_npz_path(tmp_path):
    with pytest.raises(mg.SerializationError, match="no such file"):
        mg.load(tmp_path / "nothing.json")
    with pytest.raises(mg.SerializationError, match="give the path of the .json"):
        mg.load(tmp_path / "nothing.npz")


# ---------------------------------------------------------------------- hostile npz
def _rewrite_npz(path, doc, arrays, raw=None):
    npz = path.with_suffix(".npz")
    if raw is None:
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        raw = buf.getvalue()
    npz.write_bytes(raw)
    doc["npz_sha256"] = hashlib.sha256(raw).hexdigest()
    path.write_text(json.dumps(doc))


def _arrays(path):
    with np.load(path.with_suffix(".npz")) as z:
        return {k: z[k] for k in z.files}


def test_missing_npz(tmp_path):
    path, _ = _small(tmp_path)
    path.with_suffix(".npz").unlink()
    with pytest.raises(mg.SerializationError, match="missing"):
        mg.load(path)


def test_npz_from_another_save_is_detected(tmp_path):
    path, _ = _small(tmp_path)
    npz = path.with_suffix(".npz")
    raw = bytearray(npz.read_bytes())
    raw[-30] ^= 0xFF
    npz.write_bytes(bytes(raw))
    with pytest.raises(mg.SerializationError, match="checksum"):
        mg.load(path)


def test_truncated_npz(tmp_path):
    path, doc = _small(tmp_path)
    raw = path.with_suffix(".npz").read_bytes()
    for cut in (0, 10, len(raw) // 2, len(raw) - 5):
        _rewrite_npz(path, doc, None, raw=raw[:cut])
        with pytest.raises(mg.SerializationError, match="corrupt or truncated|missing"):
            mg.load(path)


@pytest.mark.parametrize("change, expect", [
    ("shape", "but the .json declares"),
    ("dtype", "but the .json declares"),
    ("drop", "is missing"),
    ("extra", "unexpected arrays"),
    ("object", "but the .json declares"),
])
def test_mismatched_npz_arrays(tmp_path, change, expect):
    path, doc = _small(tmp_path)
    arrays = _arrays(path)
    key = _op(doc, "k")["attrs"]["value"]["key"]
    if change == "shape":
        arrays[key] = np.ones((2, 2), np.float32)
    elif change == "dtype":
        arrays[key] = arrays[key].astype(np.float64)
    elif change == "drop":
        del arrays[key]
    elif change == "extra":
        arrays["payload"] = np.zeros(3)
    elif change == "object":
        arrays[key] = np.array([{"evil": 1}], dtype=object)
    _rewrite_npz(path, doc, arrays)
    with pytest.raises(mg.SerializationError) as e:
        mg.load(path)
    assert expect in str(e.value)


def test_zip_bomb_header_is_refused_before_reading(tmp_path):
    path, doc = _small(tmp_path)
    arrays = _arrays(path)
    key = _op(doc, "k")["attrs"]["value"]["key"]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, a in arrays.items():
            b = io.BytesIO()
            np.save(b, a if k != key else np.zeros(10_000_000, np.float32))  # 40 MB of zeros, small zipped
            zf.writestr(k + ".npy", b.getvalue())
    _rewrite_npz(path, doc, None, raw=buf.getvalue())
    with pytest.raises(mg.SerializationError, match="declares .* bytes"):
        mg.load(path)


def test_unsaveable_attribute_is_a_clear_error(tmp_path):
    g = mg.Graph()
    x = g.placeholder([2], name="x")
    y = g.tanh(x, name="t")
    y.operation.attrs["callback"] = print  # something no file can hold
    with pytest.raises(mg.SerializationError, match="tanh op 't' attribute 'callback'"):
        g.save(tmp_path / "g.json")
    g2 = mg.Graph()
    g2.constant(np.ones(2), dtype=mg.float64)
    g2.save(tmp_path / "f64.json")  # float64 is a NumPy-only extension, but it round-trips
    assert str(mg.load(tmp_path / "f64.json")) == str(g2)


# ---------------------------------------------------------------------- hostile files, edited by hand
def _saved_scoped_graph(tmp_path):
    """Save the scoped CNN; (json path, parsed document)."""
    g = scoped_cnn_graph()[0]
    path = tmp_path / "m.json"
    g.save(str(path))
    doc = json.loads(path.read_text())
    return path, doc


def _write_json(path, doc):
    path.write_text(json.dumps(doc))


def test_hostile_json_edits_raise_serialization_errors_naming_the_problem(tmp_path):
    path, doc = _saved_scoped_graph(tmp_path)

    def expect(mutate, *words):
        d = json.loads(json.dumps(doc))
        mutate(d)
        _write_json(path, d)
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
    path, doc = _saved_scoped_graph(tmp_path)
    npz = path.with_suffix(".npz")
    assert npz.exists()
    good = npz.read_bytes()
    # truncated
    npz.write_bytes(good[: len(good) // 2])
    with pytest.raises(mg.SerializationError):
        mg.load(str(path))
    # an array of another shape under the same key
    with np.load(io.BytesIO(good)) as z:
        keys = list(z.keys())
    np.savez(str(npz), **{k: np.zeros((7, 7), np.float32) for k in keys})
    with pytest.raises(mg.SerializationError):
        mg.load(str(path))
    # the same, without the checksum (so the array header check itself must catch it)
    d = dict(doc)
    d.pop("npz_sha256", None)
    _write_json(path, d)
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
