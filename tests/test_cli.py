"""The command line: ``python -m minigraph demo`` and ``python -m minigraph show`` (``bench`` is in
test_benchmarks.py), each run as a user would, in a fresh interpreter."""
import re
import shutil

from graph_zoo import pictured_graph, scoped_cnn_graph

HAVE_DOT = shutil.which("dot") is not None


def _demo(run_python, *args, timeout=120):
    return run_python("-m", "minigraph", "demo", *args, timeout=timeout)


# ---------------------------------------------------------------------------------------------- demo
def test_demo_shows_the_gradient_ops_and_checks_them(run_python):
    """The demo trains, prints the weights-gradient op autodiff inserted, compares autodiff with
    finite differences, is deterministic for a seed, and --quiet drops the timing."""
    a = _demo(run_python, "--steps", "40", "--seed", "5")
    assert a.returncode == 0, a.stderr
    out = a.stdout
    assert "depthwise_convolution_2d_weights_gradient" in out
    assert re.search(r"grad/\S+/depthwise_convolution_2d_weights_gradient", out)
    low = out.lower()
    assert "loss" in low and "acc" in low and "steps/s" in low
    assert "finite diff" in low and "autodiff" in low and "rel" in low
    assert len(re.findall(r"\d\.\d+e[-+]\d+", out)) >= 3  # the three max relative errors
    q1 = _demo(run_python, "--steps", "40", "--seed", "5", "--quiet", "--backend", "numpy")
    q2 = _demo(run_python, "--steps", "40", "--seed", "5", "--quiet", "--backend", "numpy")
    assert q1.returncode == 0 and q2.returncode == 0
    assert q1.stdout == q2.stdout, "deterministic for a seed"
    assert "steps/s" not in q1.stdout
    q3 = _demo(run_python, "--steps", "40", "--seed", "6", "--quiet")
    assert q3.stdout != q1.stdout
    r = _demo(run_python, "--steps", "40", "--quiet", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "depthwise_convolution_2d_weights_gradient" in r.stdout
    assert "Gradient check passed" in r.stdout


def test_demo_trains_on_webgpu(run_python, webgpu):
    r = _demo(run_python, "--steps", "30", "--seed", "1", "--quiet", "--backend", webgpu)
    assert r.returncode == 0, r.stderr
    m = re.search(r"loss (\d+\.\d+) -> (\d+\.\d+)", r.stdout)
    assert m and float(m.group(2)) < float(m.group(1))
    r = _demo(run_python, "--backend", webgpu, "--steps", "20")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "webgpu" in r.stdout


def test_demo_bad_backend_fails_cleanly(run_python):
    r = _demo(run_python, "--backend", "nope", "--steps", "1")
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and "nope" in r.stderr


# ---------------------------------------------------------------------------------------------- show
def test_show_prints_the_listing_and_renders(tmp_path, run_python):
    g, _ = pictured_graph()
    g.save(tmp_path / "g.json")
    out = run_python("-m", "minigraph", "show", str(tmp_path / "g.json"), cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(g)
    h = scoped_cnn_graph()[0]
    path = tmp_path / "h.json"
    h.save(str(path))
    r = run_python("-m", "minigraph", "show", str(path))
    assert r.returncode == 0, r.stderr
    assert "block/dw" in r.stdout and "depthwise_convolution_2d" in r.stdout
    if HAVE_DOT:
        png = tmp_path / "out.png"
        r = run_python("-m", "minigraph", "show", str(path), "--png", str(png))
        assert r.returncode == 0, r.stderr
        assert png.read_bytes()[:4] == b"\x89PNG"
    bad = run_python("-m", "minigraph", "show", str(tmp_path / "missing.json"))
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
