"""The ONNX backend node tests (shipped inside the installed ``onnx``) through ``mg.from_onnx``.

Each operator's cases run on numpy (and a few per operator on webgpu; all of them under ``-m slow``)
and must give the status ``tests/golden/onnx_node_expected.json`` records: a new pass or a new
refusal shows up as a failure here. No case may give a wrong result or crash. Regenerate the file
with ``python -m minigraph onnx-conformance --expected tests/golden/onnx_node_expected.json``.
"""
import json
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="needs the 'onnx' extra")

import minigraph as mg  # noqa: E402
from minigraph import onnx_conformance as oc  # noqa: E402

EXPECTED_PATH = os.path.join(os.path.dirname(__file__), "golden", "onnx_node_expected.json")
with open(EXPECTED_PATH) as _f:
    EXPECTED = json.load(_f)
OPS = sorted({row["op"] for row in EXPECTED["cases"].values()})
REGENERATE = "python -m minigraph onnx-conformance --expected tests/golden/onnx_node_expected.json"


@pytest.fixture(scope="module")
def cases():
    if onnx.__version__ != EXPECTED["onnx"]:
        pytest.skip(f"the expected statuses are for onnx {EXPECTED['onnx']}, this is onnx {onnx.__version__} "
                    f"(regenerate: {REGENERATE})")
    by_op = {}
    for c in oc.load_cases():
        by_op.setdefault(c.op, []).append(c)
    return by_op


def _check(results, backend):
    bad = [f"{r.name}: {r.status}: {r.reason}" for r in results if r.status in ("wrong", "crash")]
    assert not bad, f"wrong results or crashes on {backend}:\n" + "\n".join(bad)
    changed = [f"{r.name}: expected {EXPECTED['cases'][r.name].get(backend)}, got {r.status} ({r.reason})"
               for r in results if EXPECTED["cases"][r.name].get(backend) != r.status]
    assert not changed, f"statuses changed on {backend} (regenerate: {REGENERATE}):\n" + "\n".join(changed)


def test_the_expected_file_lists_exactly_the_installed_cases(cases):
    names = {c.name for cs in cases.values() for c in cs}
    assert names == set(EXPECTED["cases"]), (sorted(names - set(EXPECTED["cases"]))[:10],
                                            sorted(set(EXPECTED["cases"]) - names)[:10])
    assert len(names) == 1884


@pytest.mark.parametrize("op", OPS)
def test_node_cases_on_numpy(cases, op):
    _check(oc.run_all(cases[op], "numpy"), "numpy")


@pytest.mark.parametrize("op", OPS)
def test_a_few_node_cases_on_webgpu(cases, op, webgpu):
    chosen = [c for c in cases[op] if EXPECTED["cases"][c.name]["numpy"] == "pass"][:2]
    if not chosen:
        pytest.skip(f"no {op} case passes on numpy")
    _check(oc.run_all(chosen, webgpu), webgpu)


@pytest.mark.slow
def test_every_node_case_on_webgpu(cases, webgpu):
    _check(oc.run_all([c for cs in cases.values() for c in cs], webgpu), webgpu)


def test_at_least_900_cases_pass_on_numpy_and_none_is_wrong():
    statuses = [row["numpy"] for row in EXPECTED["cases"].values()]
    assert statuses.count("pass") >= 900
    assert statuses.count("wrong") == statuses.count("crash") == 0


def _case(name, cases):
    return next(c for cs in cases.values() for c in cs if c.name == name)


def test_a_wrong_value_shape_or_dtype_is_reported_wrong(cases):
    base = _case("test_relu", cases)
    want = base.outputs[0]
    for bad, reason in ((want + np.float32(1e-3) * (np.abs(want) + 1), "values differ"),
                        (want.reshape(-1), "shape"), (want.astype(np.float64), "dtype")):
        r = oc.run_case(oc.Case(base.name, base.op, base.model, base.inputs, [bad]), "numpy")
        assert r.status == "wrong" and reason in r.reason, r
    nan = want.copy()
    nan.reshape(-1)[0] = np.nan
    r = oc.run_case(oc.Case(base.name, base.op, base.model, base.inputs, [nan]), "numpy")
    assert r.status == "wrong", r
    ok = oc.run_case(base, "numpy")
    assert ok.status == "pass", ok


def test_nan_where_expected_passes_and_ints_compare_exactly():
    assert oc._compare("y", np.array([np.nan, 1.0], np.float32), np.array([np.nan, 1.0], np.float32)) is None
    assert oc._compare("y", np.array([1.0], np.float32), np.array([np.nan], np.float32))
    assert oc._compare("y", np.array([1.00001], np.float32), np.array([1.0], np.float32)) is None
    assert oc._compare("y", np.array([1.001], np.float32), np.array([1.0], np.float32))
    assert oc._compare("y", np.array([3], np.int64), np.array([4], np.int64))
    assert oc._compare("y", np.array([True]), np.array([False]))


def test_a_refusal_is_a_skip_with_its_reason_and_a_converter_bug_is_a_crash(cases, monkeypatch):
    det = _case("test_det_2d", cases)
    r = oc.run_case(det, "numpy")
    assert r.status == "skip" and "'Det' is not supported" in r.reason
    from minigraph import onnx_ops

    def broken(ctx, node, a):
        raise ZeroDivisionError("a converter's bug")

    monkeypatch.setitem(onnx_ops.CONVERTERS, "Relu", broken)
    r = oc.run_case(_case("test_relu", cases), "numpy")
    assert r.status == "crash" and "ZeroDivisionError" in r.reason


def test_axes_from_a_graph_input_are_given_at_import(cases):
    case = _case("test_reduce_sum_keepdims_example", cases)
    with pytest.raises(mg.ModelImportError, match=r"axes \('axes'\) must be a constant"):
        mg.from_onnx(case.model)
    r = oc.run_case(case, "numpy")
    assert r.status == "pass" and "axes" in r.reason


def test_the_command_prints_counts_per_operator(run_python):
    p = run_python("-m", "minigraph", "onnx-conformance", "-k", "test_max_", "--verbose")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["operator", "pass", "skip", "wrong", "crash"]
    row = next(line.split() for line in lines if line.startswith("Max "))
    want = [row_["numpy"] for name, row_ in EXPECTED["cases"].items() if name.startswith("test_max_")]
    assert int(row[1]) == want.count("pass") and int(row[2]) == want.count("skip")
    assert int(row[3]) == int(row[4]) == 0


def test_the_docs_table_is_current():
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "docs", "onnx.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    begin, end = text.index(oc.TABLE_BEGIN), text.index(oc.TABLE_END) + len(oc.TABLE_END)
    assert text[begin:end] == oc.docs_table(EXPECTED), (
        "docs/onnx.md's operator table is out of date: minigraph.onnx_conformance.update_docs('docs/onnx.md', "
        "json.load(open('tests/golden/onnx_node_expected.json'))) rewrites it")
    from minigraph.onnx_ops import CONVERTERS
    for op in CONVERTERS:
        assert f"| `{op}` |" in text[begin:end]
