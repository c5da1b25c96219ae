"""The ONNX backend node tests (shipped inside the ``onnx`` package) run through ``mg.from_onnx``.

Each case is one ONNX operator (or its function expansion, ``*_expanded``) with its inputs and
expected outputs, built in memory by ``onnx.backend.test.loader``. A case is imported, run on a
backend and compared: ``pass``; ``skip`` (the import or the run refuses it with a
``MiniGraphError`` naming why: an operator, attribute or dtype minigraph does not support);
``wrong`` (a result of the wrong shape, dtype or values); ``crash`` (an exception that is not a
``MiniGraphError``). ``python -m minigraph onnx-conformance`` prints the counts per operator.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Optional

import numpy as np

from .errors import MiniGraphError
from .onnx_import import from_onnx
from .onnx_ops import CONVERTERS

RTOL, ATOL = 1e-4, 1e-5  # float32; float16 compares at its own precision
STATUSES = ("pass", "skip", "wrong", "crash")
# cases whose expected outputs are printed to 4 significant digits: compared at ONNX's own rtol 1e-3
LOOSE = {"test_averagepool_2d_ceil_last_window_starts_on_pad": 1e-3, "test_gridsample_bicubic": 1e-3}
# cases whose outputs are random draws (NumPy's generator in the case's script): nothing to compare
RANDOM = {n: "its output is random (a dropout mask NumPy drew for the case)" for n in (
    "test_training_dropout", "test_training_dropout_default", "test_training_dropout_mask",
    "test_training_dropout_default_mask")}
_MUST_BE_CONSTANT = re.compile(r"\('([^']*)'\) must be a constant")


@dataclass
class Case:
    """One node test: its name, the ONNX operator it tests, the model, inputs and expected outputs."""
    name: str
    op: str
    model: Any
    inputs: list
    outputs: list


@dataclass
class Result:
    name: str
    op: str
    status: str
    reason: str = ""


def load_cases() -> list[Case]:
    """Every node case of the installed ``onnx``, in the loader's order."""
    from onnx import numpy_helper
    from onnx.backend.test import loader
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # the generators cast inf/nan on purpose
        warnings.simplefilter("ignore")
        raw = loader.load_model_tests(kind="node")
    models: dict[str, Any] = {c.name: c.model for c in raw}
    ops = {n: m.graph.node[0].op_type for n, m in models.items() if len(m.graph.node) == 1}

    def value(x: Any) -> Any:
        if hasattr(x, "SerializeToString") and hasattr(x, "dims"):
            return numpy_helper.to_array(x)
        return x

    out = []
    for c in raw:
        base = re.sub(r"_expanded.*$", "", c.name)
        model = models[c.name]
        op = ops.get(base) or ops.get(c.name) or model.graph.node[0].op_type
        data: Any = c.data_sets
        ins, outs = data[0]
        out.append(Case(c.name, op, model, [value(x) for x in ins], [value(x) for x in outs]))
    return out


def _compare(name: str, got: np.ndarray, want: Any, rtol: float = RTOL) -> Optional[str]:
    """None when ``got`` matches ``want``, else what differs."""
    if not isinstance(want, np.ndarray) and not np.isscalar(want):
        return f"output {name!r}: expected a {type(want).__name__}, not a tensor"
    want = np.asarray(want)
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"output {name!r}: shape {list(got.shape)}, expected {list(want.shape)}"
    if got.dtype != want.dtype:
        return f"output {name!r}: dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind in "fc":
        rtol, atol = (max(rtol, 1e-3), 1e-3) if want.dtype == np.float16 else (rtol, ATOL)
        if not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True):
            bad = ~np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
            i = tuple(int(k) for k in np.argwhere(bad)[0]) if got.ndim else ()
            return f"output {name!r}: {int(bad.sum())} of {bad.size} values differ, at {list(i)} {got[i]!r} != {want[i]!r}"
        return None
    if not np.array_equal(got, want):
        bad = got != want
        i = tuple(int(k) for k in np.argwhere(bad)[0]) if got.ndim else ()
        return f"output {name!r}: {int(bad.sum())} of {bad.size} values differ, at {list(i)} {got[i]!r} != {want[i]!r}"
    return None


def _unexpected_cause(e: BaseException) -> Optional[BaseException]:
    """The exception that is not a ``MiniGraphError`` a refusal was raised from, if any."""
    seen = set()
    cause = e.__cause__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if not isinstance(cause, MiniGraphError):
            return cause
        cause = cause.__cause__
    return None


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return (lines[0] if lines else "")[:300]


def _input_names(graph: Any) -> list:
    init = {t.name for t in graph.initializer}
    return [vi.name for vi in graph.input if vi.name not in init]


def _more_constants(message: str, fed: dict, constants: dict) -> bool:
    """Add to ``constants`` the graph inputs a refusal says must be known at import (the one it
    names, or, for a value computed from inputs, every small integer input); False if none."""
    m = _MUST_BE_CONSTANT.search(message)
    if not m:
        return False
    name = m.group(1)
    if name in fed:
        if name in constants or not isinstance(fed[name], (np.ndarray, np.generic)):
            return False
        constants[name] = np.asarray(fed[name])
        return True
    small = {n: np.asarray(v) for n, v in fed.items() if n not in constants
             and isinstance(v, (np.ndarray, np.generic)) and np.asarray(v).dtype.kind in "iu"
             and np.asarray(v).size <= 8}
    constants.update(small)
    return bool(small)


def run_case(case: Case, backend: str = "numpy") -> Result:
    """Import, run and compare one case."""

    def result(status: str, reason: str = "") -> Result:
        return Result(case.name, case.op, status, reason)

    if case.name in RANDOM:
        return result("skip", RANDOM[case.name])

    graph = case.model.graph
    names = _input_names(graph)
    if len(names) != len(case.inputs):
        return result("skip", f"the case feeds {len(case.inputs)} inputs for {len(names)} graph inputs")
    fed = dict(zip(names, case.inputs))
    constants: dict = {}
    while True:  # a graph input that must be known at import (a shape, axes) is given its case's value
        try:
            g, inputs, outputs = from_onnx(case.model, constants=constants)
            break
        except MiniGraphError as e:
            cause = _unexpected_cause(e)
            if cause is not None:  # the importer's last line of defence caught a converter's bug
                return result("crash", f"import: {type(cause).__name__}: {_first_line(cause)}")
            if not _more_constants(str(e), fed, constants):
                return result("skip", _first_line(e))
        except Exception as e:
            return result("crash", f"import: {type(e).__name__}: {_first_line(e)}")
    odd = [n for n, x in fed.items() if n not in constants and not isinstance(x, (np.ndarray, np.generic))]
    if odd:
        return result("skip", f"input {odd[0]!r} is a {type(fed[odd[0]]).__name__} (sequences and optionals are "
                              "not supported)")
    feeds = {inputs[n]: np.asarray(x) for n, x in fed.items() if n in inputs}
    out_names = [vi.name for vi in graph.output]
    targets = [outputs[n] for n in out_names]
    try:
        with np.errstate(all="ignore"):
            got = g.run(feeds, targets, backend=backend)
    except MiniGraphError as e:
        return result("skip", f"run on {backend}: {_first_line(e)}")
    except Exception as e:
        return result("crash", f"run on {backend}: {type(e).__name__}: {_first_line(e)}")
    for n, t, want in zip(out_names, targets, case.outputs):
        why = _compare(n, got[t], want, LOOSE.get(case.name, RTOL))
        if why:
            return result("wrong", why)
    return result("pass", f"inputs given at import: {sorted(constants)}" if constants else "")


def run_all(cases: Iterable[Case], backend: str = "numpy") -> list[Result]:
    return [run_case(c, backend) for c in cases]


def counts(results: Iterable[Result]) -> dict:
    """``{operator: {status: count}}`` in operator order."""
    table: dict = {}
    for r in results:
        row = table.setdefault(r.op, dict.fromkeys(STATUSES, 0))
        row[r.status] += 1
    return dict(sorted(table.items()))


def report(results: list, verbose: bool = False) -> str:
    """Per-operator counts, the totals, and (verbose) every case that did not pass with its reason."""
    table = counts(results)
    width = max((len(op) for op in table), default=8)
    lines = [f"{'operator':<{width}}  " + "  ".join(f"{s:>5}" for s in STATUSES)]
    for op, row in table.items():
        lines.append(f"{op:<{width}}  " + "  ".join(f"{row[s]:>5}" for s in STATUSES))
    total = {s: sum(row[s] for row in table.values()) for s in STATUSES}
    lines.append(f"{'total':<{width}}  " + "  ".join(f"{total[s]:>5}" for s in STATUSES)
                 + f"  ({len(results)} cases)")
    if verbose:
        for r in results:
            if r.status != "pass":
                lines.append(f"{r.status:5} {r.name}: {r.reason}")
    return "\n".join(lines)


def expected_table(numpy_results: list, webgpu_results: Optional[list] = None) -> dict:
    """The checked-in form (tests/golden/onnx_node_expected.json): each case's status per backend."""
    import onnx
    cases: dict = {r.name: {"op": r.op, "numpy": r.status} for r in numpy_results}
    for r in webgpu_results or []:
        cases[r.name]["webgpu"] = r.status
    return {"onnx": onnx.__version__, "cases": dict(sorted(cases.items()))}


def dump_expected(table: dict) -> str:
    """``expected_table``'s dict as JSON text, one case a line (a change shows as one line of a diff)."""
    import json
    rows = [f"  {json.dumps(name)}: {json.dumps(row, sort_keys=True)}" for name, row in table["cases"].items()]
    return '{"onnx": ' + json.dumps(table["onnx"]) + ', "cases": {\n' + ",\n".join(rows) + "\n}}\n"


TABLE_BEGIN = "<!-- generated by minigraph.onnx_conformance.docs_table(); the tests check it is current -->"
TABLE_END = "<!-- end of the generated table -->"


def docs_table(expected: dict) -> str:
    """docs/onnx.md's operator table: each operator of ``onnx_ops.CONVERTERS`` with the versions of
    its ONNX definition that opsets 7 to the newest hold, and its node cases passing on numpy and
    webgpu (from ``expected``, the checked-in statuses), then the totals."""
    import onnx
    newest = onnx.defs.onnx_opset_version()
    versions: dict = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx"):
            versions.setdefault(schema.name, set()).add(schema.since_version)
    per_op: dict = {}
    for row in expected["cases"].values():
        counts_ = per_op.setdefault(row["op"], [0, 0, 0])
        counts_[0] += 1
        counts_[1] += row["numpy"] == "pass"
        counts_[2] += row.get("webgpu") == "pass"
    lines = [TABLE_BEGIN, "", "| operator | definitions (opset) | node cases | pass on numpy | pass on webgpu |",
             "|---|---|---|---|---|"]
    for op in sorted(CONVERTERS):
        vs = sorted(versions.get(op, ()))
        since = [v for v in vs if v <= 7][-1:] + [v for v in vs if 7 < v <= newest]
        shown = ", ".join(str(max(v, 7)) for v in since) or "-"
        total, numpy_, gpu = per_op.get(op, [0, 0, 0])
        lines.append(f"| `{op}` | {shown} | {total} | {numpy_} | {gpu} |")
    rows = list(expected["cases"].values())
    passed = sum(r["numpy"] == "pass" for r in rows)
    gpu_passed = sum(r.get("webgpu") == "pass" for r in rows)
    wrong = sum(r["numpy"] in ("wrong", "crash") for r in rows)
    lines += ["", f"Of the {len(rows)} node cases of onnx {expected['onnx']}, {passed} pass on numpy and "
              f"{gpu_passed} on webgpu; {len(rows) - passed - wrong} are refused (an operator, attribute or "
              f"dtype outside the table, each with its reason), {wrong} give wrong results or crash.",
              "", TABLE_END]
    return "\n".join(lines)


def update_docs(path: str, expected: dict) -> None:
    """Replace the generated table in the page at ``path`` (docs/onnx.md) by ``docs_table(expected)``."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    begin, end = text.index(TABLE_BEGIN), text.index(TABLE_END) + len(TABLE_END)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:begin] + docs_table(expected) + text[end:])
