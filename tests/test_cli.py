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
    assert "central differences" in low and "autodiff" in low
    assert len(re.findall(r"error \S+ of tolerance", out)) == 8  # four comparisons, at two points
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
    assert "autodiff vs central differences" in out


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
    _check_figures(r.stdout)


def _check_figures(out):
    """What the checks print is what they judge: each error as a fraction of its tolerance, all of
    them at most 1 when the check passed, the largest one named on the verdict line; and no other
    figure (a relative error of 0.7, say) that reads as a failure."""
    used = [float(u) for u in re.findall(r"error (\S+) of tolerance", out)]
    assert len(used) == 8, out
    verdict = re.search(r"Gradient check passed: the largest error is (\S+) of its tolerance\.", out)
    assert verdict and max(used) <= 1 and float(verdict.group(1)) == float(f"{max(used):.2g}"), out
    assert "rel err" not in out and "error/tolerance" not in out


def test_demo_gradient_check_prints_what_it_judges_after_long_training(run_python):
    """At 2000 steps the float32 gradient's relative error is large (the gradient is ~1e-5 and atol
    governs): the check prints the fraction of the tolerance it judges, never that relative error."""
    r = _demo(run_python, "--steps", "2000", "--quiet", timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    _check_figures(r.stdout)


def _listing_block(out):
    lines = out.splitlines()
    first = next(i for i, ln in enumerate(lines) if _OP_LINE.match(ln))
    last = next(i for i, ln in enumerate(lines) if ln.startswith("  ... and "))
    return lines[first:last]


_OP_LINE = re.compile(r"^ {2,5}\d+  \S")  # "    5  dw  = ...": an op's first line (continuations: 11 spaces)


def _joined(block):
    """Listing lines with their continuation lines joined, whitespace normalized."""
    ops = []
    for ln in block:
        if _OP_LINE.match(ln):
            ops.append(ln)
        else:
            ops[-1] += " " + ln
    return [" ".join(op.split()) for op in ops]


@pytest.mark.parametrize("model", ["small", "mobilenet_v2"])
def test_demo_output_fits_in_100_columns(model, run_python):
    """Every line the demo prints (progress lines, the listing, the checks, the verdict) is at most
    100 columns wide; --wide prints the full lines: the listing one line per op, as print(g) has
    them, and the comparisons with their full names."""
    from minigraph import demo
    import minigraph as mg

    args = ["--model", model] + (["--steps", "3"] if model == "mobilenet_v2" else [])
    r = _demo(run_python, *args, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    long = [ln for ln in r.stdout.splitlines() if len(ln) > 100]
    assert not long, long
    assert "Gradient check passed" in r.stdout
    if model != "small":
        return
    wide = _demo(run_python, "--wide", "--quiet")
    assert wide.returncode == 0, wide.stderr
    assert max(len(ln) for ln in wide.stdout.splitlines()) > 150
    assert "autodiff vs explicit depthwise_convolution_2d_weights_gradient:" in wide.stdout
    narrow, full = _listing_block(r.stdout), _listing_block(wide.stdout)
    g = demo.training_graph("small", demo.init_params(np.random.default_rng(0)))[0]
    shown = [op for op in g.operations if op.type != "constant" and ("/" not in op.name or "depthwise" in op.type)]
    assert len(full) == len(shown) == 14  # one line per op
    listed = {" ".join(ln.split()) for ln in str(g).splitlines()}
    assert all(" ".join(ln.split()) in listed for ln in full), full
    assert _joined(narrow) == [" ".join(ln.split()) for ln in full]  # the same lines, wrapped
    assert len(narrow) > len(full)
    assert mg.__version__ in r.stdout.splitlines()[0]


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
    blue[:, :60] = False  # the "loss" label, left of the axis, has the curve's colour
    cols = np.nonzero(blue.any(axis=0))[0]
    assert cols.min() < 100 and cols.max() > 580
    first_row = np.nonzero(blue[:, cols.min()])[0].mean()
    last_row = np.nonzero(blue[:, cols.max()])[0].mean()
    assert first_row < last_row  # high loss at the top-left, low at the bottom-right


def _png_pixels(path):
    raw = open(path, "rb").read()
    width, height = struct.unpack(">II", raw[16:24])
    idat = b"".join(raw[i + 8:i + 8 + struct.unpack(">I", raw[i:i + 4])[0]]
                    for i in _chunks(raw) if raw[i + 4:i + 8] == b"IDAT")
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * 3)
    assert not rows[:, 0].any()  # filter 0 on every row
    return rows[:, 1:].reshape(height, width, 3)


def _glyphs():
    from minigraph import demo

    out = {}
    for ch, rows in demo.FONT.items():
        bits = np.array([[c == "#" for c in row] for row in rows + (".....",) * (8 - len(rows))])
        used = np.nonzero(bits.any(axis=0))[0]
        if len(used):
            out[ch] = bits[:, used.min():used.max() + 1]
    return out


def _read(mask):
    """The one line of text that a mask of pixels shows in the demo's bitmap font, at any whole scale
    (a reader of the picture, written here: it knows the glyphs, not where the plot put them)."""
    if not mask.any():
        return ""
    rows, cols = np.nonzero(mask.any(axis=1))[0], np.nonzero(mask.any(axis=0))[0]
    m = mask[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    runs = [len(run) for line in list(m) + list(m.T) for run in "".join("#" if b else "." for b in line).split(".")
            if run]
    scale = min(runs)
    dots = m[::scale, ::scale]
    dots = np.vstack([dots, np.zeros((max(8 - dots.shape[0], 0), dots.shape[1]), bool)])[:8]
    glyphs = _glyphs()
    text, start, blank = "", None, 0
    for c in range(dots.shape[1] + 1):
        ink = c < dots.shape[1] and dots[:, c].any()
        if ink and start is None:
            text += " " if blank >= 5 else ""
            start = c
        elif not ink and start is not None:
            piece = dots[:, start:c]
            text += next((ch for ch, gl in glyphs.items() if gl.shape == piece.shape and (gl == piece).all()), "?")
            start, blank = None, 0
        blank += not ink
    return text


def _bands(mask, axis=0):
    """The mask cut into its lines of text: runs of rows (axis 0) or columns (axis 1) with ink."""
    ink = mask.any(axis=1 - axis)
    bands, start = [], None
    for i, v in enumerate(list(ink) + [False]):
        if v and start is None:
            start = i
        elif not v and start is not None:
            bands.append(mask[start:i] if axis == 0 else mask[:, start:i])
            start = None
    return bands


def test_the_font_tells_its_glyphs_apart():
    glyphs = list(_glyphs().items())
    same = [(a, b) for i, (a, ga) in enumerate(glyphs) for b, gb in glyphs[i + 1:]
            if ga.shape == gb.shape and (ga == gb).all()]
    assert not same, same


def test_demo_png_plot_has_a_title_axis_labels_and_tick_values(tmp_path):
    """Read the PNG's text back, pixel by pixel, in the places a reader looks: a title above the
    plot, the step values and "step" under the x axis, "loss" and its values left of the y axis,
    and, with accuracies, "train accuracy" and 0%..100% on the right."""
    from minigraph import demo

    losses = list(np.linspace(2.0, 0.1, 50))
    accs = list(np.linspace(0.25, 1.0, 50))
    img = _png_pixels(demo.plot_losses(losses, str(tmp_path / "c.png"), accs))
    black = np.all(img == 0, axis=-1)
    blue = np.all(img == demo.LOSS_COLOR, axis=-1)
    orange = np.all(img == demo.ACCURACY_COLOR, axis=-1)
    x_axis = int(np.argmax(black.sum(axis=1)))  # the longest black row and column
    y_axis = int(np.argmax(black[:, :img.shape[1] // 2].sum(axis=0)))
    r_axis = img.shape[1] // 2 + int(np.argmax(black[:, img.shape[1] // 2:].sum(axis=0)))
    top = int(np.nonzero(black[:, y_axis])[0].min())
    assert _read(black[:top - 9]) == "minigraph demo: training loss 2 -> 0.1"
    under = _bands(black[x_axis + 8:, y_axis - 20:r_axis + 20])
    assert [_read(b) for b in under] == ["0 10 20 30 40 50", "step"]
    left = black[top - 10:x_axis + 9, :y_axis - 6]
    assert [_read(b) for b in _bands(left)] == ["2.0", "1.5", "1.0", "0.5", "0.0"]
    assert _read(np.rot90(blue[:, :y_axis - 6], -1)) == "loss"
    right = black[top - 10:x_axis + 9, r_axis + 6:]
    assert [_read(b) for b in _bands(right)] == ["100%", "75%", "50%", "25%", "0%"]
    assert _read(np.rot90(orange[:, r_axis + 6:], 1)) == "train accuracy"
    assert blue[top:x_axis, y_axis:r_axis].any() and orange[top:x_axis, y_axis:r_axis].any()  # both curves
    # without accuracies: no right axis, the loss still labelled; the SVG says the same words
    img = _png_pixels(demo.plot_losses(losses, str(tmp_path / "d.png")))
    assert not np.all(img == demo.ACCURACY_COLOR, axis=-1).any()
    assert _read(np.rot90(np.all(img == demo.LOSS_COLOR, axis=-1)[:, :y_axis - 6], -1)) == "loss"
    svg = open(demo.plot_losses(losses, str(tmp_path / "c.svg"), accs)).read()
    for words in (">step<", ">loss<", ">train accuracy<", ">1.5<", ">50<", ">75%<", "training loss 2 -&gt; 0.1"):
        assert words in svg, words


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


# ---------------------------------------------------------------------------------------------- usage errors, Ctrl-C
@pytest.mark.parametrize("argv, words", [
    (["demo", "--seed", "-1"], ["--seed", "at least 0"]),
    (["demo", "--seed", "x"], ["--seed", "whole number"]),
    (["profile", "--batch", "-3"], ["--batch", "at least 1", "-3"]),
    (["profile", "--repeats", "0"], ["--repeats", "at least 1"]),
    (["profile", "--threads", "0"], ["--threads", "at least 1"]),
    (["profile", "--size", "0"], ["--size", "at least 1"]),
    (["profile", "--top", "zero"], ["--top", "whole number"]),
    (["profile", "--backend", "nope"], ["--backend", "'nope'", "numpy"]),
    (["profile", "--tiny", "--trace", "{missing}/six.json"], ["--trace", "no folder"]),
    (["demo", "--bogus"], ["unrecognized arguments: --bogus"]),
])
def test_a_usage_error_is_one_line_and_exit_2(argv, words, capsys, tmp_path):
    from minigraph.__main__ import main

    argv = [a.format(missing=tmp_path / "missing") for a in argv]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert err.startswith(f"python -m minigraph {argv[0]}: error: ") and "Traceback" not in err
    for w in words:
        assert w in err, (w, err)


@pytest.mark.parametrize("command, where", [(["demo", "--steps", "5", "--quiet"], "demo.make_data"),
                                           (["profile", "--tiny", "--repeats", "1"], "sixblock.build")])
def test_ctrl_c_prints_one_line_and_exits_130(command, where, capsys, monkeypatch):
    import minigraph

    from minigraph.__main__ import main

    module, name = where.split(".")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(getattr(minigraph, module), name, interrupted)
    assert main(command) == 130
    err = capsys.readouterr().err
    assert err == f"python -m minigraph {command[0]}: interrupted\n"


def test_profile_runs_from_the_package(capsys, tmp_path, monkeypatch):
    """The profile command builds its network from minigraph/sixblock.py (no benchmarks/ import)."""
    import sys

    from minigraph.__main__ import main

    # another test of this worker may have imported the benchmark already: forget it for this one
    monkeypatch.delitem(sys.modules, "benchmarks.network_step", raising=False)
    path = tmp_path / "six.json"
    assert main(["profile", "--tiny", "--repeats", "1", "--top", "3", "--trace", str(path)]) == 0
    out = capsys.readouterr().out
    assert "six-block network, one SGD training step: N=2, 16x16, channels / 8" in out and "total (" in out
    assert path.read_text().startswith("{")
    assert "benchmarks.network_step" not in sys.modules


def test_a_reader_that_leaves_stops_the_command_quietly():
    """``python -m minigraph demo | head -1``: the demo's later writes meet a closed pipe; the
    command stops with 141 (128 + SIGPIPE) and no traceback."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    p = subprocess.Popen([sys.executable, "-m", "minigraph", "demo", "--steps", "5"], cwd=root, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
