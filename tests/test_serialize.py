"""g.save / mg.load: exact round trips, and clear errors for corrupt, truncated or hostile files."""
from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import struct
import threading
import tracemalloc
import zipfile

import numpy as np
import pytest

import minigraph as mg
from minigraph import limits, serialize
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


def test_a_loaded_graph_never_has_an_unbounded_run_cache(tmp_path):
    g = mg.Graph(cache_size=None)  # unbounded here: the file says null
    x = g.placeholder([-1], name="x")
    g.negative(x, name="y")
    path = g.save(tmp_path / "g.json")
    assert json.loads(open(path).read())["cache_size"] is None
    h = mg.load(path)
    assert h.cache_size == h.cache_info().maxsize == 64  # the default bound, not unbounded
    for n in range(1, 70):  # 69 feed shapes: the loaded graph keeps at most 64 executables
        h.run({h.tensor("x"): np.ones(n, np.float32)}, [h.tensor("y")])
    assert h.cache_info().currsize == 64
    h.cache_size = None  # unbounded again only when asked for
    assert h.cache_size is None
    doc = json.loads(open(path).read())
    for bad in (-1, 1 << 21, 2.5, "64", True):
        doc["cache_size"] = bad
        _write_json(tmp_path / "g.json", doc)
        with pytest.raises(mg.SerializationError, match=r"cache_size must be null or an int in 0\.\.1048576"):
            mg.load(tmp_path / "g.json")
    doc.pop("cache_size")  # absent: the default too
    _write_json(tmp_path / "g.json", doc)
    assert mg.load(tmp_path / "g.json").cache_size == 64


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
    "wrong version": (lambda d: d.update(version=3), "schema version 3"),
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
    "nested too deep": (lambda d: _op(d, "img")["attrs"].update(shape=json.loads("[" * 40 + "]" * 40)),
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
    attrs = y.operation.attrs
    getattr(attrs, "_items", attrs)["callback"] = print  # something no file can hold (attrs are read-only)
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


# ---------------------------------------------------------------------- paths and special files
@pytest.mark.parametrize("path", ["a\0b.json", 123, None, 1.5, ["g.json"]])
def test_a_path_that_is_not_one_is_a_serialization_error(tmp_path, path):
    g = mg.Graph()
    g.placeholder([2], name="x")
    with pytest.raises(mg.SerializationError, match="path"):
        mg.load(path)
    with pytest.raises(mg.SerializationError, match="path"):
        g.save(path)


@pytest.mark.parametrize("which", ["graph.json", "graph.npz"])
def test_a_device_in_place_of_a_graph_file_is_refused_without_reading_it(tmp_path, which):
    d = tmp_path / "model"
    d.mkdir()
    g = mg.Graph()
    g.constant(np.arange(3, dtype=np.float32), name="k")
    g.save(d)
    (d / which).unlink()
    os.symlink("/dev/zero", d / which)
    with pytest.raises(mg.SerializationError, match="not a regular file .*character device") as e:
        mg.load(d)
    assert which in str(e.value)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("which", ["graph.json", "graph.npz"])
def test_a_fifo_in_place_of_a_graph_file_is_refused_without_blocking(tmp_path, which):
    d = tmp_path / "model"
    d.mkdir()
    g = mg.Graph()
    g.constant(np.arange(3, dtype=np.float32), name="k")
    g.save(d)
    (d / which).unlink()
    os.mkfifo(d / which)
    errors = []

    def load():
        try:
            mg.load(d)
        except Exception as e:  # noqa: BLE001 - the test looks at what it is
            errors.append(e)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():  # blocked in open(): a writer releases it, then the test fails
        fd = os.open(d / which, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(10)
        pytest.fail("load blocked on a FIFO")
    assert len(errors) == 1 and isinstance(errors[0], mg.SerializationError), errors
    assert "not a regular file (a FIFO)" in str(errors[0])


# ---------------------------------------------------------------------- array sizes and zip members
def _constant_file(tmp_path, shape, dtype=np.float32):
    """A saved graph of one constant, and its document."""
    g = mg.Graph()
    g.constant(np.zeros(shape, dtype), name="k")
    path = g.save(tmp_path / "g.json")
    return tmp_path / "g.json", json.loads(open(path).read()), g


def _npy(shape, dtype, data=b""):
    """The bytes of a .npy file whose header declares ``shape`` and ``dtype``, followed by ``data``."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": np.dtype(dtype).str, "fortran_order": False,
                                               "shape": tuple(shape)})
    return buf.getvalue() + data


def test_an_npz_declaring_more_than_the_load_budget_is_refused_before_reading(tmp_path):
    path, doc, _ = _constant_file(tmp_path, [2])
    # the .json and the .npy header both declare float64[2**34] (128 GiB); the npz is a few hundred bytes
    k = _op(doc, "k")
    k["attrs"]["shape"] = [1 << 34]
    k["attrs"]["dtype"] = {"$": "dtype", "v": "float64"}
    k["attrs"]["value"].update(shape=[1 << 34], dtype="float64")
    k["outputs"][0] = {"shape": [1 << 34], "dtype": "float64"}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(k["attrs"]["value"]["key"] + ".npy", _npy([1 << 34], np.float64))
    assert len(buf.getvalue()) < 400
    _rewrite_npz(path, doc, None, raw=buf.getvalue())
    with pytest.raises(mg.SerializationError, match="more than the load budget"):
        mg.load(path)


def test_the_load_budget_is_configurable(tmp_path, monkeypatch):
    path, _, g = _constant_file(tmp_path, [1024])  # 4 KiB of arrays
    assert str(serialize.read(path, max_bytes=4096).entries[0].name) == "k"
    with pytest.raises(mg.SerializationError, match="4096 bytes in total, more than the load budget of 4095"):
        serialize.read(path, max_bytes=4095)
    monkeypatch.setattr(limits, "MAX_LOAD_BYTES", 1000)
    with pytest.raises(mg.SerializationError, match="load budget of 1000 bytes"):
        mg.load(path)
    monkeypatch.setattr(limits, "MAX_LOAD_BYTES", None)
    assert str(mg.load(path)) == str(g)


def test_a_deflate_bomb_loads_into_one_array_without_a_second_copy(tmp_path):
    n = 1 << 24  # 64 MiB of float32 zeros, deflated to about 64 KiB
    path, doc, _ = _constant_file(tmp_path, [n])
    arrays = _arrays(path)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, a in arrays.items():
            b = io.BytesIO()
            np.save(b, a)
            zf.writestr(k + ".npy", b.getvalue())
    raw = buf.getvalue()
    assert len(raw) < (1 << 20)
    _rewrite_npz(path, doc, None, raw=raw)
    del arrays, buf, b
    tracemalloc.start()
    try:
        h = mg.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    value = h.operation("k").attrs["value"]
    assert value.shape == (n,) and not value.any() and not value.flags.writeable
    assert peak < 1.25 * 4 * n, peak / (4 * n)


def test_an_npz_much_larger_than_its_arrays_is_refused(tmp_path):
    path, doc, _ = _constant_file(tmp_path, [4])
    raw = path.with_suffix(".npz").read_bytes()
    _rewrite_npz(path, doc, None, raw=raw + b"\0" * (1 << 20))  # a megabyte appended: still a valid zip
    with pytest.raises(mg.SerializationError, match="more than its 1 declared arrays can take"):
        mg.load(path)


def _patch_zip(raw, local_offset, central_offset, value_of):
    """Rewrite one 16-bit field of every local and central zip header."""
    b = bytearray(raw)
    for sig, off in ((b"PK\x03\x04", local_offset), (b"PK\x01\x02", central_offset)):
        i = b.find(sig)
        while i >= 0:
            struct.pack_into("<H", b, i + off, value_of(struct.unpack_from("<H", b, i + off)[0]))
            i = b.find(sig, i + 4)
    return bytes(b)


@pytest.mark.parametrize("case, expect", [
    ("encrypted", "is encrypted; graph files hold plain"),
    ("method 99", "uses zip compression method 99; graph files hold stored or deflated arrays"),
    ("bzip2", "uses zip compression method 12; graph files hold stored or deflated arrays"),
])
def test_encrypted_or_oddly_compressed_npz_members_are_refused(tmp_path, case, expect):
    path, doc, _ = _constant_file(tmp_path, [3])
    raw = path.with_suffix(".npz").read_bytes()
    if case == "encrypted":
        raw = _patch_zip(raw, 6, 8, lambda flags: flags | 1)
    elif case == "method 99":
        raw = _patch_zip(raw, 8, 10, lambda _: 99)
    else:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_BZIP2) as zf:
            for k, a in _arrays(path).items():
                zf.writestr(k + ".npy", _npy(a.shape, a.dtype, a.tobytes()))
        raw = buf.getvalue()
    _rewrite_npz(path, doc, None, raw=raw)
    with pytest.raises(mg.SerializationError, match=expect):
        mg.load(path)


# ---------------------------------------------------------------------- what an op entry may hold
def _feed_graph(tmp_path):
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    g.exponent(x, name="e")
    g.concat([x, x], 0, name="cat")
    v = g.variable(np.zeros(3, np.float32), name="v")
    g.assign(v, x, name="upd")
    g.read(v, name="r")
    path = g.save(tmp_path / "g.json")
    return tmp_path / "g.json", json.loads(open(path).read())


OPERANDS = {
    "a second input to a unary op": (lambda d: _op(d, "e")["inputs"].append(["x", 0]),
                                     "exponent op #1 'e': has 2 input(s), but exponent takes 1 (tensor)"),
    "no input to a unary op": (lambda d: _op(d, "e").update(inputs=[]), "has 0 input(s), but exponent takes 1"),
    "an input to a placeholder": (lambda d: _op(d, "v").update(inputs=[["x", 0]]),
                                  "has 1 input(s), but variable takes 0"),
    "a concat of nothing": (lambda d: _op(d, "cat").update(inputs=[]), "concat takes a non-empty list"),
    "an unknown attribute": (lambda d: _op(d, "e")["attrs"].update(out=1), "unknown attribute(s) ['out']; exponent has none"),
    "an attribute of another op": (lambda d: _op(d, "cat")["attrs"].update(axes=[0]),
                                   "unknown attribute(s) ['axes']; concat has dimension"),
    "an assign into a placeholder": (lambda d: _op(d, "upd")["inputs"].__setitem__(0, ["x", 0]),
                                     "assign needs a variable (made by g.variable) as its first input, got the "
                                     "output of a placeholder op"),
    "a read of a placeholder": (lambda d: _op(d, "r")["inputs"].__setitem__(0, ["x", 0]), "read needs a variable"),
    "a fill outside a constant": (lambda d: _op(d, "cat")["attrs"].update(
        dimension={"$": "fill", "dtype": "int32", "shape": [1 << 30], "v": 0}), "only valid as the value of a constant"),
}


@pytest.mark.parametrize("case", sorted(OPERANDS))
def test_op_entries_must_match_their_declaration(tmp_path, case):
    path, doc = _feed_graph(tmp_path)
    mutate, expect = OPERANDS[case]
    mutate(doc)
    _write_json(path, doc)
    with pytest.raises(mg.SerializationError) as e:
        mg.load(path)
    assert expect in str(e.value) and str(path) in str(e.value), str(e.value)


def test_a_run_of_a_loaded_graph_never_writes_into_a_feed(tmp_path):
    """An extra input to a NumPy ufunc would be its out= array: the file with one is refused."""
    path, doc = _feed_graph(tmp_path)
    _op(doc, "e")["inputs"].append(["x", 0])
    _write_json(path, doc)
    try:
        h = mg.load(path)
    except mg.SerializationError as e:
        assert "'e'" in str(e)
        return
    feed = np.zeros(3, np.float32)
    h.run({h.tensor("x"): feed}, [h.tensor("e")], backend="numpy")
    np.testing.assert_array_equal(feed, np.zeros(3))


@pytest.mark.parametrize("field", ["name", "requested_name", "user_name", "location"])
@pytest.mark.parametrize("char", ["\x1b", "\n", "\r", "\x00", "\x9b", "\u202e", "\u2028"])
def test_control_characters_in_names_and_locations_are_refused(tmp_path, field, char):
    path, doc = _feed_graph(tmp_path)
    e_op = _op(doc, "e")
    e_op[field] = f"evil{char}[2J"
    _write_json(path, doc)
    with pytest.raises(mg.SerializationError, match=f"{field if field != 'name' else 'name'} .*holds the control") as e:
        mg.load(path)
    assert char not in str(e.value)


def test_a_graph_with_a_control_character_in_a_name_is_not_saved(tmp_path):
    g = mg.Graph()
    g.placeholder([2], name="x\x1b[2J")
    with pytest.raises(mg.SerializationError, match="control or bidirectional character") as e:
        g.save(tmp_path / "g.json")
    assert "\x1b" not in str(e.value)
    assert not (tmp_path / "g.json").exists()


# ---------------------------------------------------------------------- constants filled from a scalar
def test_a_filled_constant_is_saved_as_its_scalar(tmp_path, rng):
    g = mg.Graph()
    x = g.placeholder([64, 256], name="x")
    fills = [g.constant(v, dtype=dt, shape=shape, name=f"c{i}") for i, (v, dt, shape) in enumerate([
        (1.5, mg.float32, [64, 256]), (-0.0, mg.float32, [3, 5]), (np.nan, mg.float16, [7]), (np.inf, mg.float64, [2, 9]),
        (-7, mg.int8, [1000]), (2 ** 63 - 1, mg.int64, [6]), (2 ** 64 - 1, mg.uint64, [5, 1]), (True, mg.bool, [4, 4])])]
    y = g.multiplication(x, fills[0], name="y")
    seed = g.gradients(g.reduction_sum(y), [x])[x]
    path = g.save(tmp_path / "g.json")
    doc = json.loads(open(path).read())
    assert doc["version"] == 2
    assert os.path.getsize(tmp_path / "g.npz") < 4096  # no 64x256 array of ones
    assert _op(doc, "c0")["attrs"]["value"] == {"$": "fill", "dtype": "float32", "shape": [64, 256], "v": 1.5}
    h = mg.load(path)
    assert str(h) == str(g)
    for c in fills:
        a, b = c.operation.attrs["value"], h.operation(c.operation.name).attrs["value"]
        assert b.dtype == a.dtype and b.shape == a.shape and not any(b.strides) and not b.flags.writeable
        np.testing.assert_array_equal(b, a)
        assert np.signbit(b.flat[0]) == np.signbit(a.flat[0])
    xv = rng.standard_normal((64, 256)).astype(np.float32)
    np.testing.assert_array_equal(h.run({h.tensor("x"): xv}, [h.tensor(seed.name)])[h.tensor(seed.name)],
                                  np.full((64, 256), 1.5, np.float32))


@pytest.mark.parametrize("fill, expect", [
    ({"shape": [3]}, "the fill is float32[3] but the op is float32[2, 4]"),
    ({"dtype": "int32", "v": 1.5}, "1.5 is not a int32 value"),
    ({"dtype": "bool", "v": 2}, "2 is not a bool value"),
    ({"dtype": "int8", "v": 300}, "300 does not fit int8"),
    ({"v": "1"}, "scalar value must be a number"),
    ({"shape": [1 << 40]}, "more than the limit"),
    ({"extra": 1}, "unknown field"),
])
def test_hostile_fills_are_refused(tmp_path, fill, expect):
    g = mg.Graph()
    g.constant(2.0, shape=[2, 4], name="c")
    path = tmp_path / "g.json"
    g.save(path)
    doc = json.loads(path.read_text())
    value = _op(doc, "c")["attrs"]["value"]
    value.update(fill)
    if value["dtype"] != "float32":
        _op(doc, "c")["attrs"]["dtype"]["v"] = value["dtype"]
        _op(doc, "c")["outputs"][0]["dtype"] = value["dtype"]
    _write_json(path, doc)
    with pytest.raises(mg.SerializationError) as e:
        mg.load(path)
    assert expect in str(e.value), str(e.value)


def test_files_of_the_first_version_still_load(tmp_path):
    """A version-1 file (no scalar fills: version 2 added them) loads into the graph that was saved:
    the ops, names, inputs, control dependencies and attributes of the file, and the same results."""
    path, doc = _small(tmp_path)
    saved = mg.load(path)  # the version-2 file, as written
    assert '"fill"' not in json.dumps(doc)  # nothing version 1 lacks
    doc["version"] = 1
    _write_json(path, doc)
    h = mg.load(path)
    assert [(op.name, op.type) for op in h.operations] == [(o["name"], o["type"]) for o in doc["ops"]]
    assert [[[t.name, 0] for t in op.inputs] for op in h.operations] == [o["inputs"] for o in doc["ops"]]
    assert [[d.name for d in op.control_dependencies] for op in h.operations] == \
        [o["control_dependencies"] for o in doc["ops"]]
    assert str(h) == str(saved)
    for a, b in zip(h.operations, saved.operations):
        assert a.attrs.keys() == b.attrs.keys(), a.name
        for k, v in a.attrs.items():
            assert type(v) is type(b.attrs[k]), (a.name, k)
            if isinstance(v, np.ndarray):
                assert v.dtype == b.attrs[k].dtype and np.array_equal(v, b.attrs[k]), (a.name, k)
            else:
                assert v == b.attrs[k], (a.name, k)
    assert _vars(h).keys() == _vars(saved).keys() == {"w"}
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    outs = [saved.tensor(n) for n in ("dw", "y", "t")]
    for t, a, b in zip(outs, _run(saved, {saved.tensor("x"): x}, outs, []),
                       _run(h, {saved.tensor("x"): x}, outs, [])):
        assert a.dtype == b.dtype and a.shape == b.shape, t.name
        np.testing.assert_array_equal(a, b, err_msg=t.name)
