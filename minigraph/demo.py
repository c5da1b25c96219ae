"""``python -m minigraph demo``: train a small depthwise-separable CNN and check its gradients.

The network: depthwise 3x3 conv (channel multiplier 4) -> bias -> relu -> 1x1 conv -> global
average pooling -> softmax cross-entropy, on a synthetic task generated in code: images of
stripes in one of four orientations, with noise. One graph, with a dynamic batch dimension,
trains at batch 32 and evaluates at batch 256. Autodiff inserts the explicit
``depthwise_convolution_2d_weights_gradient`` op, which the demo shows, and the last part checks
that gradient three ways, at the initial and at the trained weights: autodiff vs the explicit op
vs central finite differences.
"""
from __future__ import annotations

import argparse
import math
import shutil
import struct
import sys
import textwrap
import time
import zlib
from typing import Any, Optional

import numpy as np

import minigraph as mg

from . import mobilenet
from .listing import describe_ops, gradient_op_counts

try:  # an in-place progress bar on a terminal; plain lines without it
    from tqdm import tqdm
except ImportError:  # pragma: no cover - tqdm is a dependency, but the demo runs without it
    tqdm = None

C, M, H, W, CLASSES, BATCH = 3, 4, 12, 12, 4, 32


def make_data(rng: np.random.Generator, n: int, size: int = H):
    """Stripes at 0, 90, 45 or 135 degrees, random frequency/phase/channel mix, plus noise."""
    labels = rng.integers(0, CLASSES, n)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    directions = {0: (0, 1), 1: (1, 0), 2: (1, 1), 3: (1, -1)}
    x = np.empty((n, C, size, size))
    for i, k in enumerate(labels):
        a, b = directions[int(k)]
        freq = rng.uniform(0.8, 1.6)
        wave = np.sin(freq * (a * xx + b * yy) + rng.uniform(0, 2 * np.pi))
        x[i] = rng.uniform(0.5, 1.5, (C, 1, 1)) * wave + 1.0 * rng.standard_normal((C, size, size))
    onehot = np.eye(CLASSES)[labels]
    return x, onehot, labels


def build(dtype, params: dict, batch: int = -1):
    """The network in a fresh graph (``batch`` -1: any batch size); returns the graph and its named tensors."""
    g = mg.Graph()
    x = g.placeholder([batch, C, H, W], dtype, name="images")
    labels = g.placeholder([batch, CLASSES], dtype, name="labels")
    v = {k: g.variable(p.astype(dtype.np_dtype), name=k) for k, p in params.items()}
    dw_desc = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME)
    h = g.depthwise_convolution_2d(x, v["dw_weights"], descriptor=dw_desc, name="dw")
    h = g.relu(g.addition(h, v["dw_bias"], name="bias"), name="relu")
    logits = g.convolution_2d(h, v["pw_weights"], descriptor=mg.Convolution2DOpDescriptor(), name="pointwise")
    pool = mg.Pooling2DOpDescriptor(kernel_width=W, kernel_height=H, stride_in_x=W, stride_in_y=H)
    logits = g.reshape(g.avg_pooling_2d(logits, pool, name="pool"), [batch, CLASSES], name="logits")
    loss = g.softmax_cross_entropy(logits, labels, axis=-1, reduction="mean", name="loss")
    loss = g.reshape(loss, [], name="loss_scalar")
    return g, x, labels, v, logits, loss, h


MOBILENET_WIDTH, MOBILENET_SIZE = 0.25, 32
MOBILENET_LAYER = "features.1.dw"  # the depthwise layer whose gradient the demo checks


def build_mobilenet(dtype, params: dict, batch: int = -1):
    """A small MobileNetV2 (width 0.25, 32x32 images, batch norm with batch statistics) in a fresh
    graph; returns the same tensors as ``build``."""
    g = mg.Graph()
    x = g.placeholder([batch, C, MOBILENET_SIZE, MOBILENET_SIZE], dtype, name="images")
    labels = g.placeholder([batch, CLASSES], dtype, name="labels")
    v = {k: g.variable(p.astype(dtype.np_dtype), name=k) for k, p in params.items()}
    logits = mobilenet.forward(g, x, v, MOBILENET_WIDTH)
    loss = g.reshape(g.softmax_cross_entropy(logits, labels, axis=-1, reduction="mean", name="loss"), [],
                     name="loss_scalar")
    return g, x, labels, v, logits, loss, None


MODELS = {  # name -> (build, init_params, image size, checked weights, checked depthwise op, default steps)
    "small": (build, lambda rng: init_params(rng), H, "dw_weights", "dw", 300),
    "mobilenet_v2": (build_mobilenet, lambda rng: mobilenet.init_params(rng, MOBILENET_WIDTH, CLASSES),
                     MOBILENET_SIZE, f"{MOBILENET_LAYER}.weight", f"{MOBILENET_LAYER}/conv", 40),
}


def training_graph(model: str, params: dict) -> tuple:
    """The float32 graph the demo trains: the model, its gradients and an Adam step per variable;
    returns the graph, the images and labels placeholders, the variables, the logits, the loss
    and the Adam steps."""
    g, x, labels, v, logits, loss, _ = MODELS[model][0](mg.float32, params)
    grads = g.gradients(loss, g.trainable_variables, name="grad")
    lr = 0.05 if model == "small" else 0.01
    steps = [g.apply_adam(t, grads[t], learning_rate=lr, name=f"adam/{k}") for k, t in v.items()]
    return g, x, labels, v, logits, loss, steps


def init_params(rng: np.random.Generator) -> dict:
    return {
        "dw_weights": rng.normal(0, 0.5, (M, C, 3, 3)),  # OIHW: [multiplier, channels, kH, kW]
        "dw_bias": np.zeros((1, C * M, 1, 1)),
        "pw_weights": rng.normal(0, 0.3, (CLASSES, C * M, 1, 1)),
    }


WIDTH = 100  # the columns the demo's output fits in (``--wide``: no limit)


def short_listing(g, width: Optional[int] = WIDTH) -> str:
    """Forward ops plus the depthwise gradient ops autodiff inserted, as ``print(g)`` lists them
    (wrapped to ``width`` columns; None: one line per op)."""
    hidden = [op for op in g.operations if "/" in op.name and "depthwise" not in op.type]
    shown = [op for op in g.operations if op.type != "constant" and op not in hidden]
    return "\n".join(describe_ops(shown, width)
                     + [f"  ... and {len(hidden)} more gradient/optimizer ops (print(g) lists them all)"])


def say(text: str, out: Any, width: Optional[int] = WIDTH) -> None:
    """Print ``text``; with ``width``, a longer line wraps onto lines indented by four more columns."""
    for line in text.split("\n"):
        if width is None or len(line) <= width:
            print(line, file=out)
        else:
            lead = " " * (len(line) - len(line.lstrip()))
            print(textwrap.fill(line.strip(), width, initial_indent=lead, subsequent_indent=lead + "    ",
                                break_on_hyphens=False), file=out)


def op_counts(g) -> str:
    """How many ops of each kind a (large) training graph holds, gradient ops first."""
    grads = gradient_op_counts(g.operations)
    dw = sum(op.type == "depthwise_convolution_2d" for op in g.operations)
    return (f"Graph: {len(g.operations)} ops, {dw} depthwise convolutions; MPSGraph's gradient ops that autodiff "
            "inserted:\n" + "\n".join(f"  {n:4d} {t}" for t, n in sorted(grads.items())))


# ---------------------------------------------------------------------------------------------- gradient check
def within(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> float:
    """How much of the tolerance ``atol + rtol * max|b|`` the worst difference uses (<= 1 passes).

    The tolerance scales with the gradient's magnitude: at trained weights the loss is ~1e-4 and
    the gradients tiny, where a plain relative error measures only the finite differences' noise.
    """
    return float(np.max(np.abs(a - b)) / (atol + rtol * float(np.max(np.abs(b)))))


def gradient_check(backend: str, params: dict, rng: np.random.Generator, out, title: str,
                   model: str = "small", width: Optional[int] = WIDTH) -> float:
    """Autodiff vs the explicit weights-gradient op vs central differences, in float64; returns the
    largest fraction of its tolerance that a comparison used (<= 1: passed). Each comparison prints
    that fraction, the quantity judged: with ``width``, in lines that fit it (short names), else
    with the full names and the largest difference too."""
    make, _, size, weight, layer, _ = MODELS[model]
    batch = 4 if model == "small" else 16  # batch norm over 4 images at 1x1 pixels is nearly singular
    x_np, y_np, _ = make_data(rng, batch, size)
    g, x, labels, v, logits, loss, h = make(mg.float64, params, batch)
    dw = v[weight]
    dw_out = g.tensor(layer)
    grads = g.gradients(loss, [dw, dw_out], name="check")
    explicit = g.depthwise_convolution_2d_weights_gradient(
        grads[dw_out], dw_out.operation.inputs[0], output_shape=dw.shape, descriptor=dw_out.operation.attrs["descriptor"], name="explicit")
    feeds = {x: x_np, labels: y_np}
    backend64 = "numpy"  # float64 is the NumPy backend's extension; GPUs run float32
    res = g.run(feeds, [grads[dw], explicit, loss, logits], backend=backend64)
    auto, expl, loss0 = res[grads[dw]], res[explicit], float(res[loss])
    f = g.compile({x: mg.ShapedType(x_np.shape, mg.float64), labels: mg.ShapedType(y_np.shape, mg.float64)},
                  [loss], backend=backend64)
    base = params[weight].astype(np.float64)
    fd = np.zeros_like(base)
    # a step small enough that (almost) no ReLU6 of a deep network crosses its kink
    eps = 1e-6 if model == "small" else 1e-8
    for idx in np.ndindex(*base.shape):
        for sign in (1, -1):
            p = base.copy()
            p[idx] += sign * eps
            g.set_value(dw, p)
            fd[idx] += sign * f.run(feeds)[0] / (2 * eps)

    # the same gradient in float32 on the chosen backend, against the float64 reference
    g32, x32, l32, v32, _, loss32, _ = make(mg.float32, params, batch)
    gr32 = g32.gradients(loss32, [v32[weight]], name="grad")
    auto32 = g32.run({x32: x_np.astype(np.float32), l32: y_np.astype(np.float32)},
                     [gr32[v32[weight]]], backend=backend)[gr32[v32[weight]]]
    # central differences in float64: truncation ~eps^2; rounding: the loss is a difference of terms
    # as large as the logits (log-sum-exp minus the label's logit), each rounded at ~1e-16 of its size,
    # so the differences carry an error ~1e-16 * max|logit| / eps whatever the gradient's size
    fd_atol = 8 * np.finfo(np.float64).eps * max(1.0, float(np.max(np.abs(res[logits])))) / (2 * eps)
    checks = [  # (name, short name, compared, reference, rtol, atol)
        ("autodiff vs explicit depthwise_convolution_2d_weights_gradient", "autodiff vs explicit weights-gradient op",
         auto, expl, 1e-10, 1e-14),
        (f"autodiff vs central finite differences (eps {eps:g})", f"autodiff vs central differences (eps {eps:g})",
         auto, fd, 1e-5, fd_atol),
        ("explicit op vs central finite differences", "explicit op vs central differences", expl, fd, 1e-5, fd_atol),
        (f"float32 autodiff on {backend!r} vs finite differences", f"float32 on {backend!r} vs central differences",
         auto32, fd, 1e-3, 1e-6),
    ]
    say(f"\nGradient check of the depthwise weights {weight!r} at {title} (float64, batch {batch}, loss {loss0:.3g}, "
        f"shape {list(base.shape)} = [M, C, kH, kW], max |gradient| {np.max(np.abs(fd)):.2e}):", out, width)
    worst = 0.0
    for what, short, a, b, rtol, atol in checks:
        used = within(a, b, rtol, atol)
        worst = max(worst, used)
        if width is None:
            say(f"  {what + ':':<66} error {used:.2g} of tolerance (max |difference| "
                f"{float(np.max(np.abs(a - b))):.1e}; rtol {rtol:g}, atol {atol:.1e})", out, None)
        else:
            say(f"  {short + ':':<44} {f'error {used:.2g} of tolerance':<26} (rtol {rtol:g}, atol {atol:.0e})",
                out, width)
    return worst


# ---------------------------------------------------------------------------------------------- progress and plot
class Progress:
    """An in-place tqdm bar (loss, accuracy, steps/s, ETA) on a terminal; plain lines otherwise."""

    def __init__(self, steps: int, out: Any, quiet: bool):
        self.steps, self.out, self.quiet = steps, out, quiet
        self.every = max(1, steps // 10)
        self.t0 = time.perf_counter()
        interactive = bool(getattr(out, "isatty", lambda: False)())
        size = shutil.get_terminal_size((100, 24))  # a terminal that reports no size (0 x 0) gets 100 x 24:
        self.bar = tqdm(total=steps, file=out, unit="step", desc="training", leave=True,  # tqdm hides bars
                        ncols=size.columns if size.columns >= 40 else 100,  # below the last row
                        nrows=size.lines if size.lines >= 2 else 24) if (tqdm is not None and interactive and not quiet) else None

    def update(self, step: int, loss: float, acc: float) -> None:
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.4f}", acc=f"{acc:.1%}", refresh=False)
            self.bar.update(1)
        elif step % self.every == 0 or step == self.steps:
            elapsed = time.perf_counter() - self.t0
            rate = step / elapsed if elapsed > 0 else float("inf")
            eta = (self.steps - step) / rate if rate > 0 else 0.0
            print(f"  step {step:5d}/{self.steps}  loss {loss:.4f}  train acc {acc:5.1%}  {rate:7.1f} steps/s  "
                  f"ETA {eta:5.1f} s", file=self.out, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def plot_losses(losses: list, path: str, accuracies: Optional[list] = None) -> str:
    """Draw the loss curve (and, given ``accuracies`` in 0..1, the accuracy curve on a right-hand
    axis) to ``path``: ``.svg``, or ``.png`` (written with zlib and a built-in bitmap font, no
    plotting library needed). Both have a title, axis labels and tick values."""
    if path.lower().endswith(".svg"):
        data = _svg_plot(losses, accuracies)
        with open(path, "w", encoding="utf-8") as f:
            f.write(data)
        return path
    if not path.lower().endswith(".png"):
        raise ValueError(f"--plot {path!r}: give a .png or .svg file")
    with open(path, "wb") as f:
        f.write(_png_plot(losses, accuracies))
    return path


def _ticks(hi: float, whole: bool = False) -> tuple:
    """Round tick values 0, d, 2d, ... up to the first at or above ``hi`` (about five steps; ``d``
    a whole number with ``whole``), and the decimals that print them."""
    raw = max(hi, 1e-12) / 5
    mag = 10.0 ** math.floor(math.log10(raw))
    d = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw * (1 - 1e-9))
    d = max(d, 1.0) if whole else d
    k = max(math.ceil(hi / d - 1e-9), 1)
    return [i * d for i in range(k + 1)], max(0, -math.floor(math.log10(d) + 1e-9))


class _Frame:
    """Where the plot box sits in a picture, and the scales of its axes: steps 0..n along x, the loss
    from 0 to its top tick along y (accuracy, if drawn, 0..1 on the right)."""

    def __init__(self, losses: list, width: int, height: int, accuracy: bool):
        self.width, self.height = width, height
        self.left, self.right, self.top, self.bottom = 84, width - (84 if accuracy else 28), 48, height - 60
        self.steps = max(len(losses), 1)
        self.xticks, self.xdec = _ticks(self.steps, whole=True)
        self.yticks, self.ydec = _ticks(max(max(losses), 1e-12))

    def x(self, step: float) -> float:
        return self.left + (self.right - self.left) * step / self.xticks[-1]

    def y(self, v: float, top: Optional[float] = None) -> float:
        return self.bottom - (self.bottom - self.top) * v / (top or self.yticks[-1])

    def curve(self, values: list, top: Optional[float] = None) -> list:
        """(x, y) pixel points, one per step (the first step at x of 1)."""
        return [(self.x(i + 1), self.y(v, top)) for i, v in enumerate(values)]


def _title(losses: list) -> str:
    return f"minigraph demo: training loss {losses[0]:.4g} -> {losses[-1]:.4g}"


LOSS_COLOR, ACCURACY_COLOR, GRID_COLOR = (31, 119, 180), (255, 127, 14), (225, 225, 225)


def _svg_plot(losses: list, accuracies: Optional[list] = None, width: int = 640, height: int = 400) -> str:
    fr = _Frame(losses, width, height, accuracies is not None)
    hexa = "#{:02x}{:02x}{:02x}".format
    text = 'font-family="sans-serif" font-size="14"'
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">',
           '<rect width="100%" height="100%" fill="white"/>']
    for v in fr.yticks:
        y = fr.y(v)
        out.append(f'<line x1="{fr.left}" y1="{y:.1f}" x2="{fr.right}" y2="{y:.1f}" stroke="{hexa(*GRID_COLOR)}"/>')
        out.append(f'<text x="{fr.left - 10}" y="{y + 5:.1f}" text-anchor="end" {text}>{v:.{fr.ydec}f}</text>')
    for v in fr.xticks:
        x = fr.x(v)
        out.append(f'<line x1="{x:.1f}" y1="{fr.bottom}" x2="{x:.1f}" y2="{fr.bottom + 5}" stroke="black"/>')
        out.append(f'<text x="{x:.1f}" y="{fr.bottom + 22}" text-anchor="middle" {text}>{v:.0f}</text>')
    out.append(f'<path d="M{fr.left},{fr.top} V{fr.bottom} H{fr.right}" stroke="black" fill="none"/>')
    curves = [(losses, None, LOSS_COLOR)] + ([(accuracies, 1.0, ACCURACY_COLOR)] if accuracies is not None else [])
    for values, top, color in curves:
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in fr.curve(values, top))
        out.append(f'<polyline points="{pts}" stroke="{hexa(*color)}" stroke-width="1.5" fill="none"/>')
    mid = (fr.top + fr.bottom) / 2
    out.append(f'<text x="{(fr.left + fr.right) / 2}" y="{height - 14}" text-anchor="middle" {text}>step</text>')
    out.append(f'<text x="20" y="{mid}" transform="rotate(-90 20 {mid})" text-anchor="middle" '
               f'fill="{hexa(*LOSS_COLOR)}" {text}>loss</text>')
    if accuracies is not None:
        for v in (0, 0.25, 0.5, 0.75, 1.0):
            out.append(f'<text x="{fr.right + 10}" y="{fr.y(v, 1.0) + 5:.1f}" {text}>{v:.0%}</text>')
        out.append(f'<path d="M{fr.right},{fr.top} V{fr.bottom}" stroke="black" fill="none"/>')
        out.append(f'<text x="{width - 14}" y="{mid}" transform="rotate(90 {width - 14} {mid})" '
                   f'text-anchor="middle" fill="{hexa(*ACCURACY_COLOR)}" {text}>train accuracy</text>')
    out.append(f'<text x="{width / 2}" y="28" text-anchor="middle" font-family="sans-serif" font-size="16">'
               f'{_title(losses).replace(">", "&gt;")}</text>')
    return "\n".join(out + ["</svg>", ""])


# A 5 x 7 bitmap font for the PNG plot's text: each glyph is 7 rows of 5 columns ("#": ink), and an
# eighth row for the descenders of g, j, p, q, y and the comma.
FONT = {ch: tuple(rows.split()) for ch, rows in {
    "0": ".###. #...# #..## #.#.# ##..# #...# .###.", "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
    "2": ".###. #...# ....# ...#. ..#.. .#... #####", "3": "##### ...#. ..#.. ...#. ....# #...# .###.",
    "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.", "5": "##### #.... ####. ....# ....# #...# .###.",
    "6": "..##. .#... #.... ####. #...# #...# .###.", "7": "##### ....# ...#. ..#.. .#... .#... .#...",
    "8": ".###. #...# #...# .###. #...# #...# .###.", "9": ".###. #...# #...# .#### ....# ...#. .##..",
    "a": "..... ..... .###. ....# .#### #...# .####", "b": "#.... #.... #.##. ##..# #...# #...# ####.",
    "c": "..... ..... .###. #.... #.... #...# .###.", "d": "....# ....# .##.# #..## #...# #...# .####",
    "e": "..... ..... .###. #...# ##### #.... .###.", "f": "..##. .#..# .#... ###.. .#... .#... .#...",
    "g": "..... ..... .#### #...# #...# .#### ....# .###.", "h": "#.... #.... #.##. ##..# #...# #...# #...#",
    "i": "..#.. ..... .##.. ..#.. ..#.. ..#.. .###.", "j": "...#. ..... ..##. ...#. ...#. ...#. #..#. .##..",
    "k": "#.... #.... #..#. #.#.. ##... #.#.. #..#.", "l": ".##.. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "m": "..... ..... ##.#. #.#.# #.#.# #...# #...#", "n": "..... ..... #.##. ##..# #...# #...# #...#",
    "o": "..... ..... .###. #...# #...# #...# .###.", "p": "..... ..... ####. #...# #...# ####. #.... #....",
    "q": "..... ..... .#### #...# #...# .#### ....# ....#", "r": "..... ..... #.##. ##..# #.... #.... #....",
    "s": "..... ..... .###. #.... .###. ....# ####.", "t": ".#... .#... ###.. .#... .#... .#..# ..##.",
    "u": "..... ..... #...# #...# #...# #..## .##.#", "v": "..... ..... #...# #...# #...# .#.#. ..#..",
    "w": "..... ..... #...# #...# #.#.# #.#.# .#.#.", "x": "..... ..... #...# .#.#. ..#.. .#.#. #...#",
    "y": "..... ..... #...# #...# #...# .#### ....# .###.", "z": "..... ..... ##### ...#. ..#.. .#... #####",
    " ": "..... ..... ..... ..... ..... ..... .....", ".": "..... ..... ..... ..... ..... .##.. .##..",
    ",": "..... ..... ..... ..... ..... .##.. ..#.. .#...", ":": "..... .##.. .##.. ..... .##.. .##.. .....",
    "-": "..... ..... ..... ##### ..... ..... .....", ">": ".#... ..#.. ...#. ....# ...#. ..#.. .#...",
    "%": "##... ##..# ...#. ..#.. .#... #..## ...##", "(": "...#. ..#.. .#... .#... .#... ..#.. ...#.",
    ")": ".#... ..#.. ...#. ...#. ...#. ..#.. .#...", "+": "..... ..#.. ..#.. ##### ..#.. ..#.. .....",
    "/": "..... ....# ...#. ..#.. .#... #.... .....", "=": "..... ..... ##### ..... ##### ..... .....",
}.items()}


def _text_mask(text: str, scale: int) -> np.ndarray:
    """``text`` in the bitmap font (8 rows; one blank column between glyphs), each dot ``scale``
    pixels; a character it lacks is drawn as a space."""
    cols = []
    for ch in text.lower():
        glyph = FONT.get(ch, FONT[" "])
        cols.append(np.array([[c == "#" for c in row] for row in glyph + (".....",) * (8 - len(glyph))]))
        cols.append(np.zeros((8, 1), bool))
    bits = np.concatenate(cols[:-1] or [np.zeros((8, 0), bool)], axis=1)
    return np.kron(bits, np.ones((scale, scale), bool)).astype(bool)


def _draw_text(img: np.ndarray, text: str, x: float, y: float, color: tuple = (0, 0, 0), scale: int = 2,
               anchor: str = "center", rotate: int = 0) -> None:
    """Draw ``text`` with its ``anchor`` ("left", "center", "right" of its middle) at (x, y);
    ``rotate`` quarter turns counter-clockwise (1: reads bottom to top)."""
    mask = np.rot90(_text_mask(text, scale), rotate)
    h, w = mask.shape
    x0 = int(round(x - {"left": 0, "center": w / 2, "right": w}[anchor]))
    y0 = int(round(y - h / 2))
    rows, cols = np.nonzero(mask)
    keep = (rows + y0 >= 0) & (rows + y0 < img.shape[0]) & (cols + x0 >= 0) & (cols + x0 < img.shape[1])
    img[rows[keep] + y0, cols[keep] + x0] = color


def _draw_curve(img: np.ndarray, pts: list, color: tuple) -> None:
    height, width = img.shape[:2]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:] or pts):
        n = int(max(abs(x1 - x0), abs(y1 - y0), 1)) * 2
        xs = np.rint(np.linspace(x0, x1, n + 1)).astype(int)
        ys = np.rint(np.linspace(y0, y1, n + 1)).astype(int)
        for dy in (0, 1):
            img[np.clip(ys + dy, 0, height - 1), np.clip(xs, 0, width - 1)] = color


def _png_plot(losses: list, accuracies: Optional[list] = None, width: int = 640, height: int = 400) -> bytes:
    fr = _Frame(losses, width, height, accuracies is not None)
    img = np.full((height, width, 3), 255, np.uint8)
    labels = [f"{v:.{fr.ydec}f}" for v in fr.yticks]
    scale = 2 if max(len(t) for t in labels) * 12 <= fr.left - 34 else 1  # tick values that fit the margin
    for v, label in zip(fr.yticks, labels):
        y = int(round(fr.y(v)))
        img[y, fr.left:fr.right + 1] = GRID_COLOR
        img[y, fr.left - 5:fr.left] = 0
        _draw_text(img, label, fr.left - 9, y, scale=scale, anchor="right")
    for v in fr.xticks:
        x = int(round(fr.x(v)))
        img[fr.bottom:fr.bottom + 6, x] = 0
        _draw_text(img, f"{v:.0f}", x, fr.bottom + 18)
    img[fr.bottom, fr.left:fr.right + 1] = 0  # x axis
    img[fr.top:fr.bottom + 1, fr.left] = 0  # y axis
    _draw_curve(img, fr.curve(losses), LOSS_COLOR)
    mid = (fr.top + fr.bottom) / 2
    _draw_text(img, "step", (fr.left + fr.right) / 2, height - 16)
    _draw_text(img, "loss", 16, mid, LOSS_COLOR, rotate=1)
    if accuracies is not None:
        img[fr.top:fr.bottom + 1, fr.right] = 0  # the accuracy axis
        for v in (0, 0.25, 0.5, 0.75, 1.0):
            y = int(round(fr.y(v, 1.0)))
            img[y, fr.right + 1:fr.right + 6] = 0
            _draw_text(img, f"{v:.0%}", fr.right + 9, y, anchor="left")
        _draw_curve(img, fr.curve(accuracies, 1.0), ACCURACY_COLOR)
        _draw_text(img, "train accuracy", width - 14, mid, ACCURACY_COLOR, rotate=3)
    _draw_text(img, _title(losses), width / 2, 20)
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


# ---------------------------------------------------------------------------------------------- command line
def whole_number(least: int) -> Any:
    """An argparse ``type``: a whole number of at least ``least`` (the demo's and the profile
    command's counts and seeds)."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if n < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {n}")
        return n
    parse.__name__ = f"whole number >= {least}"
    return parse


def add_arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The demo's options (shared by ``python -m minigraph demo`` and ``minigraph.demo.main``)."""
    ap.add_argument("--backend", default="numpy", help="numpy (default), cpu, webgpu or metal")
    ap.add_argument("--model", choices=sorted(MODELS), default="small",
                    help="small: the depthwise-separable CNN (default); mobilenet_v2: a MobileNetV2 (width 0.25, "
                         "32x32 images) with batch norm and ReLU6")
    ap.add_argument("--steps", type=whole_number(1), default=None,
                    help="training steps, at least 1 (default 300; 40 for mobilenet_v2)")
    ap.add_argument("--seed", type=whole_number(0), default=0, help="seed of the data and the initial weights (default 0)")
    ap.add_argument("--plot", metavar="FILE", help="write the loss curve to FILE (.png or .svg)")
    ap.add_argument("--quiet", action="store_true",
                    help="no progress display and no timings (output is identical for a seed)")
    ap.add_argument("--wide", action="store_true",
                    help="full-width output: the listing one line per op, the checks with full names "
                         "(default: lines of at most 100 columns)")
    return ap


def parser(prog: str = "python -m minigraph demo") -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0].split(": ", 1)[1]))


def main(argv=None) -> int:
    """Parse ``argv`` and run the demo; returns the exit code."""
    return run(parser().parse_args(argv))


def run(args: argparse.Namespace, out: Optional[Any] = None) -> int:
    """Run the demo with parsed options; returns the exit code (1: a gradient check failed)."""
    out = out or sys.stdout
    try:
        mg.get_backend(args.backend)
    except mg.BackendUnavailableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    model = getattr(args, "model", "small")
    _, init, size, _, _, default_steps = MODELS[model]
    args.steps = args.steps or default_steps
    rng = np.random.default_rng(args.seed)
    params = init(rng)
    g, x, labels, v, logits, loss, steps = training_graph(model, params)
    what = "depthwise-separable CNN" if model == "small" else \
        f"MobileNetV2 (width {MOBILENET_WIDTH}, {size}x{size} images, batch norm, ReLU6)"
    width = None if getattr(args, "wide", False) else WIDTH
    say(f"minigraph {mg.__version__} demo: {what}; backend {args.backend!r}", out, width)
    if model == "small":
        say(f"Graph ({len(g.operations)} ops, batch dimension dynamic; forward ops and the depthwise gradient "
            "ops that autodiff inserted):", out, width)
        print(short_listing(g, width), file=out)
    else:
        say(op_counts(g), out, width)

    exe = g.compile({x: mg.ShapedType([-1, C, size, size], mg.float32),
                     labels: mg.ShapedType([-1, CLASSES], mg.float32)}, [loss, logits], steps, backend=args.backend)
    x_test, y_test, k_test = make_data(rng, 256, size)
    losses: list = []
    accs: list = []  # the training accuracy, a running average over batches
    acc = 0.0
    progress = Progress(args.steps, out, args.quiet)
    for step in range(1, args.steps + 1):
        xb, yb, kb = make_data(rng, BATCH, size)
        lv, lg = exe.run({x: xb.astype(np.float32), labels: yb.astype(np.float32)})
        losses.append(float(lv))
        batch_acc = float(np.mean(np.argmax(lg, 1) == kb))
        acc = 0.9 * acc + 0.1 * batch_acc if step > 1 else batch_acc
        accs.append(acc)
        progress.update(step, losses[-1], acc)
    progress.close()
    elapsed = time.perf_counter() - progress.t0
    took = "" if args.quiet else f" in {elapsed:.2f} s"  # --quiet output is identical for one seed
    say(f"Trained {args.steps} steps at batch {BATCH}{took} with one executable "
        f"(compiled {exe.compile_count} time); loss {losses[0]:.4f} -> {losses[-1]:.4f}", out, width)
    if args.plot:
        try:
            say(f"Wrote the loss and accuracy curves to {plot_losses(losses, args.plot, accs)}", out, width)
        except (OSError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2

    # the same graph at batch 256: only the forward ops run (no optimizer step is a target)
    test_logits = g.run({x: x_test.astype(np.float32), labels: y_test.astype(np.float32)}, [logits],
                        backend=args.backend)[logits]
    test_acc = float(np.mean(np.argmax(test_logits, 1) == k_test))
    say(f"Held-out accuracy on 256 new images, same graph: {test_acc:.1%} (chance: {1 / CLASSES:.0%})", out, width)

    trained = {k: g.value_of(t) for k, t in v.items()}
    say("\nGradient checks: error = largest difference / (atol + rtol * max |reference|); 1 or less passes.",
        out, width)
    worst = max(gradient_check(args.backend, params, np.random.default_rng(args.seed + 1), out, "the initial weights",
                               model, width),
                gradient_check(args.backend, trained, np.random.default_rng(args.seed + 1), out, "the trained weights",
                               model, width))
    ok = worst <= 1.0
    say(f"Gradient check {'passed' if ok else 'FAILED'}: the largest error is {worst:.2g} of its tolerance.", out, width)
    return 0 if ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
