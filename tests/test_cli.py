"""The command line: ``python -m minigraph demo`` and ``python -m minigraph show`` (``bench`` is in
test_benchmarks.py), each run as a user would, in a fresh interpreter."""
import re
import shutil
import struct
import zlib

import numpy as np
import pytest

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


def test_demo_trains_a_mobilenet_v2_and_checks_a_depthwise_layer(run_python):
    """--model mobilenet_v2: batch norm and ReLU6, MPSGraph's gradient ops listed, and the three-way
    check of one depthwise layer's weights gradient passes."""
    r = _demo(run_python, "--model", "mobilenet_v2", "--steps", "3", "--quiet", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "MobileNetV2" in out and "17 depthwise convolutions" in out
    for op in ("depthwise_convolution_2d_weights_gradient", "normalization_gradient", "normalization_gamma_gradient"):
        assert re.search(rf"\d+ {op}\b", out), op
    assert "'features.1.dw.weight'" in out and "Gradient check passed" in out
    assert "autodiff vs central finite differences" in out


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


# ---------------------------------------------------------------------------------------------- the command line
def test_help_goes_to_stdout_for_the_program_and_each_command(run_python):
    top = run_python("-m", "minigraph", "--help")
    assert top.returncode == 0 and top.stderr == ""
    assert top.stdout.startswith("usage: python -m minigraph")
    for cmd in ("demo", "backends", "bench", "show"):
        assert cmd in top.stdout
    for cmd, words in (("demo", ["--steps", "--plot", "--backend", "--seed", "--quiet"]),
                       ("backends", ["adapter"]), ("bench", ["depthwise", "executor", "compile", "gpu"]),
                       ("show", ["--png", "--expand", "--dot"])):
        r = run_python("-m", "minigraph", cmd, "--help")
        assert r.returncode == 0, (cmd, r.stderr)
        assert r.stdout.startswith(f"usage: python -m minigraph {cmd}"), (cmd, r.stdout[:80])
        for w in words:
            assert w in r.stdout, (cmd, w)
        assert "``" not in r.stdout and "=====" not in r.stdout  # no raw reST
    assert "available" not in run_python("-m", "minigraph", "backends", "--help").stdout.split("\n")[0]


def test_version_and_usage_errors(run_python):
    import minigraph as mg

    r = run_python("-m", "minigraph", "--version")
    assert r.returncode == 0 and r.stdout.strip() == f"minigraph {mg.__version__}"
    bad = run_python("-m", "minigraph", "nosuchcommand")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_python("-m", "minigraph", "demo", "--bogus")
    assert bad.returncode == 2 and bad.stderr.startswith("python -m minigraph demo: error: unrecognized arguments")
    assert len(bad.stderr.splitlines()) == 1


def test_usage_names_the_installed_script(tmp_path, run_python):
    """Run as the `minigraph` script (argv[0] is its path), the usage says `minigraph`."""
    script = tmp_path / "minigraph"
    script.write_text("import sys\nfrom minigraph.__main__ import main\nsys.exit(main())\n")
    r = run_python(str(script), "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: minigraph "), r.stdout[:80]
    r = run_python(str(script), "demo", "--help")
    assert r.stdout.startswith("usage: minigraph demo")


def test_backends_names_the_adapter(run_python, webgpu):
    r = run_python("-m", "minigraph", "backends")
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith(webgpu))
    assert re.search(r"(CPU software renderer|integrated GPU|discrete GPU|virtual GPU)", line), line
    assert re.search(r"(Vulkan|Metal|D3D12) backend", line), line
    import minigraph as mg
    from minigraph.backends.webgpu import device

    info = device.get_context().info
    assert info["device"] in line
    assert mg.available_backends().details[webgpu] in line


def test_describe_adapter_in_words():
    from minigraph.backends.webgpu.device import describe_adapter

    assert describe_adapter({"device": "llvmpipe (LLVM 15)", "adapter_type": "CPU", "backend_type": "Vulkan",
                             "description": "Mesa 23"}) == "llvmpipe (LLVM 15): CPU software renderer, Vulkan backend (driver Mesa 23)"
    assert describe_adapter({"device": "Apple M2", "adapter_type": "IntegratedGPU", "backend_type": "Metal"}) == \
        "Apple M2: integrated GPU, Metal backend"
    assert "discrete GPU, D3D12 backend" in describe_adapter({"device": "RTX", "adapter_type": "DiscreteGPU",
                                                              "backend_type": "D3D12"})


@pytest.mark.parametrize("steps", ["0", "-5", "x"])
def test_demo_rejects_steps_below_one(steps, run_python):
    r = _demo(run_python, "--steps", steps)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--steps" in r.stderr and ("at least 1" in r.stderr or "whole number" in r.stderr)


@pytest.mark.parametrize("steps", [1, 1000])
def test_demo_gradient_check_passes_at_any_step_count(steps, run_python):
    """At 1000+ steps the loss is tiny and so are the gradients: the check, made at the initial and
    the trained weights with tolerances that scale with the gradient, still passes."""
    r = _demo(run_python, "--steps", str(steps), "--quiet", timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "Gradient check passed" in r.stdout
    assert "initial weights" in r.stdout and "trained weights" in r.stdout
    assert re.search(r"error/tolerance \d\.\de[-+]\d+", r.stdout)


def test_demo_progress_lines_off_a_terminal_and_the_plot(tmp_path, run_python):
    png, svg = tmp_path / "loss.png", tmp_path / "loss.svg"
    r = _demo(run_python, "--steps", "200", "--plot", str(png))
    assert r.returncode == 0, r.stderr
    steps = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("step ")]
    assert 5 <= len(steps) <= 11, steps  # about one line per tenth, not one per 25 steps
    assert all("ETA" in ln and "steps/s" in ln for ln in steps)
    assert "\r" not in r.stdout  # no in-place bar when stdout is not a terminal
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (640, 400)
    r = _demo(run_python, "--steps", "20", "--quiet", "--plot", str(svg))
    assert r.returncode == 0 and svg.read_text().startswith("<svg") and "polyline" in svg.read_text()
    bad = _demo(run_python, "--steps", "2", "--quiet", "--plot", str(tmp_path / "loss.gif"))
    assert bad.returncode == 2 and ".png or .svg" in bad.stderr


def test_demo_png_plot_draws_the_curve(tmp_path):
    """The PNG written without a plotting library: decode it and find the curve falling."""
    from minigraph import demo

    losses = list(np.linspace(2.0, 0.1, 50))
    path = demo.plot_losses(losses, str(tmp_path / "c.png"))
    raw = open(path, "rb").read()
    idat = b"".join(raw[i + 8:i + 8 + struct.unpack(">I", raw[i:i + 4])[0]]
                    for i in _chunks(raw) if raw[i + 4:i + 8] == b"IDAT")
    rows = zlib.decompress(idat)
    img = np.frombuffer(rows, np.uint8).reshape(400, 1 + 640 * 3)[:, 1:].reshape(400, 640, 3)
    blue = np.all(img == (31, 119, 180), axis=-1)
    cols = np.nonzero(blue.any(axis=0))[0]
    assert cols.min() < 60 and cols.max() > 580
    first_row = np.nonzero(blue[:, cols.min()])[0].mean()
    last_row = np.nonzero(blue[:, cols.max()])[0].mean()
    assert first_row < last_row  # high loss at the top-left, low at the bottom-right


def _chunks(raw):
    i = 8
    while i < len(raw):
        yield i
        i += 12 + struct.unpack(">I", raw[i:i + 4])[0]


def test_demo_shows_a_bar_on_a_terminal(tmp_path):
    """On a terminal (a pseudo-terminal here) the progress is tqdm's in-place bar."""
    pty = pytest.importorskip("pty")
    pytest.importorskip("tqdm")
    import os
    import subprocess
    import sys

    leader, follower = pty.openpty()
    fcntl, termios = pytest.importorskip("fcntl"), pytest.importorskip("termios")
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a 120 x 40 terminal
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    p = subprocess.Popen([sys.executable, "-m", "minigraph", "demo", "--steps", "60"], stdout=follower,
                         stderr=follower, env=env, cwd=root)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    assert p.wait(timeout=300) == 0
    text = out.decode("utf-8", "replace")
    assert "\r" in text and "60/60" in text and "loss=" in text and "acc=" in text
    assert "step/s" in text or "s/step" in text
