"""Property-based fuzzing with a CI-sized budget (scripts/fuzz_long.py runs the same generators long).

- Random valid graphs (elementwise, comparisons, select, casts, reductions, softmax, matmul, every
  shape op, the convolution family with random descriptors, assignments) run on every available
  backend and agree with an independent NumPy reference built alongside them, within a derived
  error bound (exactly, for integers and bools); build-time shapes agree with run-time shapes;
  feeds are not mutated; results share no memory with feeds or with each other; a second run is
  bit-identical after the first results were scribbled over.
- Random invalid calls (wrong ranks, shapes, dtypes, axes, descriptors, output_shape, feeds,
  names, targets, backends, huge shapes, shapes that clash only at run time) raise only
  MiniGraphError subclasses whose messages name the op, and leave feeds and variables untouched.

A failure prints (via ``note``) a standalone reproducer: run it from the repository root. The long
run's script (scripts/fuzz_long.py) is committed and runs a short budget here.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import fuzz_strategies as fs
import minigraph as mg

BACKENDS = list(mg.available_backends())
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                print_blob=True)


@settings(max_examples=250, **SETTINGS)
@given(st.data())
def test_valid_graphs_agree_with_an_independent_numpy_reference(data):
    p = fs.gen_valid(fs.HypothesisDraw(data))
    note(fs.reproducer(p, BACKENDS))
    fs.run_valid_source(p.source(), BACKENDS)


@settings(max_examples=80, **SETTINGS)
@given(st.data())
def test_convolution_family_graphs_agree_with_an_independent_reference(data):
    fs._register_conv_family()
    if not fs.EXTRA_OPS:
        pytest.skip("no convolution ops registered")
    d = fs.HypothesisDraw(data)
    p = fs.gen_valid(d, max_ops=4, table=fs.EXTRA_OPS + [(fs.op_unary, 0.5), (fs.op_reduce, 0.3)])
    note(fs.reproducer(p, BACKENDS))
    fs.run_valid_source(p.source(), BACKENDS)


@settings(max_examples=500, **SETTINGS)
@given(st.data())
def test_invalid_calls_raise_minigraph_errors_that_name_the_op(data):
    p = fs.gen_invalid(fs.HypothesisDraw(data))
    note(fs.reproducer(p, invalid=True))
    fs.run_invalid_source(p.source())


# ------------------------------------------------------------- the harness itself can fail
def _patchable_kernels():
    """The NumPy kernel table."""
    from minigraph.backends.numpy.registry import KERNELS

    return KERNELS


def _tanh_program():
    p = fs.Program(fs.RandomDraw(1), seed=7)
    a = p.leaf((3, 4), "float32", kind="placeholder", rng=(-2.0, 2.0))
    fs._float_unary(p, a, "tanh")
    p.emit("T[:] = [1]")
    p.emit("F[:] = [0]")
    p.emit("MODE = 'run'")
    return p


def test_the_valid_harness_catches_a_wrong_kernel(monkeypatch, replace_kernel):
    """A kernel that is slightly off (1e-3) must be reported: the tolerance is not too loose."""
    KERNELS = _patchable_kernels()
    src = _tanh_program().source()
    fs.run_valid_source(src, ["numpy"])  # passes as is
    replace_kernel(KERNELS, "tanh", lambda step: (lambda x: np.tanh(x) + np.float32(1e-3)))
    with pytest.raises(fs.FuzzFailure, match="exceeds the bound"):
        fs.run_valid_source(src, ["numpy"])


def test_the_valid_harness_catches_a_mutated_feed(monkeypatch, replace_kernel):
    """A kernel writing into its input: refused by the read-only feed, or caught by the after-run check."""
    KERNELS = _patchable_kernels()

    def sneaky(step):
        def run(x):
            y = x.view()
            y.setflags(write=True)  # NumPy may allow this on a view of an array that owns its memory
            np.tanh(y, out=y)
            return y.copy()
        return run
    for factory in (lambda step: (lambda x: np.tanh(x, out=x)), sneaky):
        replace_kernel(KERNELS, "tanh", factory)
        with pytest.raises(fs.FuzzFailure, match="ExecutionError|mutated"):
            fs.run_valid_source(_tanh_program().source(), ["numpy"])


def test_the_invalid_harness_rejects_raw_exceptions_and_silence():
    with pytest.raises(fs.FuzzFailure, match="non-MiniGraphError"):
        fs.expect(lambda: int("x"))
    with pytest.raises(fs.FuzzFailure, match="no error"):
        fs.expect(lambda: None)
    with pytest.raises(fs.FuzzFailure, match="does not name"):
        fs.expect(lambda: (_ for _ in ()).throw(mg.ShapeError("bad")), ["slice", "q1"])


def test_a_printed_reproducer_runs_standalone(tmp_path):
    """The source a failure prints is a complete script (run from the repository root)."""
    p = fs.gen_valid(fs.RandomDraw(12345))
    path = tmp_path / "repro.py"
    path.write_text(fs.reproducer(p, ["numpy"]))
    out = subprocess.run([sys.executable, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]
    q = fs.gen_invalid(fs.RandomDraw(54321))
    path.write_text(fs.reproducer(q, invalid=True))
    out = subprocess.run([sys.executable, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


# ------------------------------------------------------------------------------ the long fuzz script
def _tracked(path: Path) -> bool:
    r = subprocess.run(["git", "ls-files", "--error-unmatch", str(path.relative_to(ROOT))], cwd=ROOT,
                       capture_output=True, text=True)
    return r.returncode == 0


def test_fuzzing_is_in_the_suite_with_hypothesis():
    src = "".join(p.read_text(encoding="utf-8") for p in (Path(ROOT) / "tests").glob("test_*.py"))
    assert "hypothesis" in src and "MiniGraphError" in src


def test_long_fuzz_script_exists_defaults_to_10000_and_reports_counts(tmp_path):
    scripts = [p for p in (Path(ROOT) / "scripts").glob("*.py") if "fuzz" in p.name]
    assert scripts
    script = scripts[0]
    assert _tracked(script)
    help_ = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    assert help_.returncode == 0
    assert "10000" in help_.stdout.replace(",", "") or "10000" in script.read_text().replace(",", "")
    r = subprocess.run([sys.executable, str(script), "--cases", "40", "--seed", "3", "--backends", "numpy",
                        "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(r"\b\d+\b", r.stdout) and re.search(r"valid", r.stdout, re.I) and re.search(r"invalid", r.stdout, re.I)
