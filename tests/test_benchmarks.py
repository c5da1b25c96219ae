"""The benchmarks run end to end at tiny sizes, so they cannot rot (no timing assertions)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import benchmarks  # noqa: E402
from benchmarks import compile_time, depthwise_cpu, executor_overhead, shapes  # noqa: E402


def test_shapes_match_the_formulas():
    assert len(shapes.MOBILENET_V2_DW) == 17
    ks = {layer[3] if len(layer) > 3 else None for layer in shapes.MOBILENET_V2_DW}
    assert ks == {3}  # every MobileNetV2 depthwise layer is 3x3
    assert shapes.out_size(112, 3, 2) == 56 and shapes.out_size(7, 5, 1) == 7
    b, f = shapes.cost(8, 32, 112, 112, 3, 1)
    assert b == 4 * (2 * 8 * 32 * 112 * 112 + 32 * 9) and f == 2 * 8 * 32 * 112 * 112 * 9


def test_depthwise_tiny_all_ops(tmp_path):
    res = depthwise_cpu.run(ops=depthwise_cpu.OPS, peers=("minigraph", "torch"), tiny=True, log=lambda *a: None)
    assert {r["op"] for r in res["results"]} == set(depthwise_cpu.OPS)
    assert len(res["results"]) == 3 * len(shapes.TINY_DW)
    for r in res["results"]:
        mg = r["peers"]["minigraph"]
        assert mg["median_ms"] > 0 and mg["repeats"] == 2 and mg["gbps"] > 0
        if "torch" in r["peers"]:  # the peers compute the same thing as minigraph
            assert r["peers"]["torch"]["max_rel_err"] < 1e-4
    text = depthwise_cpu.report(res)
    assert "geomean" in text and "weights gradient" in text
    out = tmp_path / "dw.json"
    assert benchmarks.main(["depthwise", "--tiny", "--peers", "minigraph", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["benchmark"] == "depthwise_cpu" and data["machine"]["cores"] >= 1
    assert data["summary"]["wgrad/tiny"]["layers"] == len(shapes.TINY_DW)


def test_depthwise_tiny_every_peer_agrees():
    """JAX and MLX (when installed) give the same numbers as minigraph, in canonical layout."""
    res = depthwise_cpu.run(ops=("wgrad", "dgrad"), tiny=True, log=lambda *a: None)
    for r in res["results"]:
        for name, st in r["peers"].items():
            if name != "minigraph":
                assert st["max_rel_err"] < 1e-4, (name, r["op"], r["layer"])
    for name, why in res["skipped"].items():
        assert "not importable" in why or "/" in name


def test_missing_peer_is_skipped_with_a_note(tmp_path, monkeypatch, run_python):
    monkeypatch.setitem(depthwise_cpu._IMPORTS, "nosuch", "no_such_module_xyz")
    ok, skipped = depthwise_cpu.available_peers(["minigraph", "nosuch"])
    assert ok == ["minigraph"] and "not importable" in skipped["nosuch"]
    # with torch not importable, the depthwise benchmark script still runs and says torch was skipped
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "torch.py").write_text("raise ImportError('torch hidden by the test')\n")
    out = tmp_path / "r.json"
    r = run_python(os.path.join(ROOT, "benchmarks", "depthwise_cpu.py"), "--tiny", "--peers", "minigraph,torch",
                   "--json", str(out), env={"PYTHONPATH": f"{shim}{os.pathsep}{ROOT}"})
    assert r.returncode == 0, r.stderr
    text = r.stdout + r.stderr
    assert "torch" in text and "skip" in text.lower()


def test_executor_tiny():
    res = executor_overhead.run(tiny=True)
    assert res["config"]["nodes"] == 50
    assert res["us_per_node"]["minigraph"] > 0 and res["us_per_node"]["numpy"] > 0
    assert "overhead" in executor_overhead.report(res)


@pytest.mark.slow
def test_compile_tiny_and_live_set():
    res = compile_time.run(tiny=True, log=lambda *a: None)
    assert [r["nodes"] for r in res["compile"]] == [100, 1000, 100, 1000]
    assert all(0 < r["steps"] for r in res["compile"])  # fewer than the nodes where chains fuse
    m = res["memory"]
    assert m["plan_live_set"]["produced_bytes"] > 0 and m["traced_peak_bytes_steady"] > 0
    assert "live set" in compile_time.report(res)


def test_plan_live_set_by_hand():
    """a -> exp (40 B) -> broadcast (120 B) -> reshape (120 B): each input dies after its reader,
    so the largest live set is broadcast + reshape = 240 B, at the reshape."""
    import minigraph as mg

    g = mg.Graph()
    a = g.placeholder((10,), mg.float32, name="a")
    c = g.reshape(g.broadcast(g.exponent(a), (3, 10)), (30,))
    exe = g.compile({a: mg.ShapedType((10,), mg.float32)}, [c])
    live = compile_time.plan_live_set(exe.plan)
    assert live["produced_bytes"] == 240 and live["all_bytes"] == 240
    assert live["at_op"].startswith("reshape")


def test_plot_from_tiny_json(tmp_path):
    pytest.importorskip("matplotlib", reason="needs matplotlib, in the test extra: pip install -e '.[test]'")
    from benchmarks import plot

    res = depthwise_cpu.run(ops=("wgrad",), peers=("minigraph", "torch"), tiny=True, log=lambda *a: None)
    p = plot.plot_depthwise(res, str(tmp_path / "f.png"))
    assert os.path.getsize(p) > 1000


@pytest.mark.slow
def test_dispatch_and_cli(capsys, run_python):
    assert benchmarks.main(["--help"]) == 0
    assert benchmarks.main(["no_such_benchmark"]) == 2
    r = subprocess.run([sys.executable, "-m", "minigraph", "bench", "executor", "--tiny"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "µs/node" in r.stdout
    r = run_python("-m", "minigraph", "bench", "--help")  # lists the benchmarks
    assert r.returncode == 0
    for name in ("depthwise", "executor", "compile", "gpu"):
        assert name in r.stdout


@pytest.mark.slow
def test_bench_depthwise_tiny_prints_a_table_and_writes_json(tmp_path, run_python):
    out = tmp_path / "dw.json"
    r = run_python("-m", "minigraph", "bench", "depthwise", "--tiny", "--peers", "minigraph,torch", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "geomean" in r.stdout and "ms" in r.stdout
    data = json.loads(out.read_text())
    assert data["results"] and all("minigraph" in row["peers"] for row in data["results"])


@pytest.mark.slow
@pytest.mark.parametrize("script", ["depthwise_cpu.py", "executor_overhead.py", "compile_time.py"])
def test_benchmark_scripts_run_directly_at_tiny_size(tmp_path, script, run_python):
    out = tmp_path / "r.json"
    args = ["--tiny", "--json", str(out)]
    if script == "depthwise_cpu.py":
        args += ["--peers", "minigraph"]
    r = run_python(os.path.join(ROOT, "benchmarks", script), *args, cwd=str(tmp_path))  # from any directory
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) >= 3  # a table
    json.loads(out.read_text())


def test_interleaved_timing_budget():
    from benchmarks.timing import geomean, time_interleaved

    calls = {"a": 0, "b": 0}

    def a():
        calls["a"] += 1

    def b():
        calls["b"] += 1
        np.ones(10).sum()

    ts = time_interleaved({"a": a, "b": b}, repeats=5, warmup=2)
    assert len(ts["a"]) == len(ts["b"]) == 5 and calls["a"] == 7
    assert abs(geomean([2.0, 8.0]) - 4.0) < 1e-12


def test_plot_reads_the_gpu_json(tmp_path):
    pytest.importorskip("matplotlib", reason="needs matplotlib, in the test extra: pip install -e '.[test]'")
    from benchmarks import plot

    gpu = {"n": 32, "layers": [{"layer": [32, 112, 112, 3, 1], "n": 32, "ms_ours": 0.2, "ms_torch": 0.3},
                               {"layer": [96, 112, 112, 3, 2], "n": 32, "ms_ours": 0.4, "ms_torch": 0.35}]}
    p = plot.plot_depthwise(plot.from_gpu(gpu), str(tmp_path / "g.png"), baseline="torch_cuda", ours="webgpu")
    assert os.path.getsize(p) > 1000


@pytest.mark.slow
def test_network_step_tiny_runs_and_peers_agree_on_the_first_loss():
    from benchmarks import network_step

    res = network_step.run(nets=("sixblock",), peers=("minigraph", "torch", "jax"), tiny=True, log=lambda *a: None)
    (row,) = res["results"]
    assert row["peers"]["minigraph"]["median_ms"] > 0 and res["machine"]["cores"] >= 1
    for peer in ("torch", "jax"):  # the same network, weights and data: the same first loss
        if peer in row["peers"]:
            np.testing.assert_allclose(row["peers"][peer]["first_loss"], row["peers"]["minigraph"]["first_loss"],
                                       rtol=1e-4, err_msg=peer)
    assert "minigraph / torch" in network_step.report(res)


@pytest.mark.parametrize("backend", ["numpy", "webgpu"])
def test_network_step_feeds_tensor_data_and_the_upload_peer_arrays(backend):
    """``minigraph`` feeds its batch as TensorData (nothing uploaded per step); ``minigraph_upload``
    feeds arrays and reports its upload; both compute the same first loss."""
    import minigraph as mg

    if backend not in mg.available_backends():
        pytest.skip(f"backend {backend!r} unavailable: {mg.available_backends().unavailable.get(backend)}")
    from benchmarks import network_step

    res = network_step.run(nets=("sixblock",), backend=backend, batch=2, size=16,
                           peers=("minigraph", "minigraph_upload"), tiny=True, log=lambda *a: None)
    (row,) = res["results"]
    mine, up = row["peers"]["minigraph"], row["peers"]["minigraph_upload"]
    assert mine["first_loss"] == up["first_loss"]
    assert "ratio_to_best" not in row  # neither is a peer to compare with
    if backend == "webgpu":
        assert row["plan"]["upload_bytes"] == 0
        x, labels = network_step.sixblock_data(2, 16, width=0.125)  # tiny's width
        assert up["upload_bytes"] == x.nbytes + labels.nbytes and up["upload_GBps"] > 0
    assert "minigraph+upload ms" in network_step.report(res)
