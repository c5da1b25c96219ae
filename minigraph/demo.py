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
import shutil
import struct
import sys
import time
import zlib
from typing import Any, Optional

import numpy as np

import minigraph as mg

from . import mobilenet
from .listing import gradient_op_counts

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


def init_params(rng: np.random.Generator) -> dict:
    return {
        "dw_weights": rng.normal(0, 0.5, (M, C, 3, 3)),  # OIHW: [multiplier, channels, kH, kW]
        "dw_bias": np.zeros((1, C * M, 1, 1)),
        "pw_weights": rng.normal(0, 0.3, (CLASSES, C * M, 1, 1)),
    }


def short_listing(g) -> str:
    """Forward ops plus the depthwise gradient ops autodiff inserted."""
    lines = []
    for op in g.operations:
        if op.type in ("constant",) or ("/" in op.name and "depthwise" not in op.type):
            continue
        out = op.outputs[0] if op.outputs else None
        shape = f"{list(out.shape)} {out.dtype.name}" if out is not None else "(operation)"
        ins = ", ".join(t.name for t in op.inputs)
        lines.append(f"  {op.name:<52} {op.type:<44} {shape:<22} <- {ins}")
    hidden = sum(1 for op in g.operations if "/" in op.name and "depthwise" not in op.type)
    lines.append(f"  ... and {hidden} more gradient/optimizer ops (print(g) lists them all)")
    return "\n".join(lines)


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
                   model: str = "small") -> float:
    """Autodiff vs the explicit weights-gradient op vs central differences, in float64; returns the
    largest fraction of its tolerance that a comparison used (<= 1: passed)."""
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
    checks = [
        ("autodiff vs explicit depthwise_convolution_2d_weights_gradient", auto, expl, 1e-10, 1e-14),
        (f"autodiff vs central finite differences (eps {eps:g})", auto, fd, 1e-5, fd_atol),
        ("explicit op vs central finite differences", expl, fd, 1e-5, fd_atol),
        (f"float32 autodiff on {backend!r} vs finite differences", auto32, fd, 1e-3, 1e-6),
    ]
    print(f"\nGradient check of the depthwise weights {weight!r} at {title} (float64, batch {batch}, loss {loss0:.3g}, "
          f"shape {list(base.shape)} = [M, C, kH, kW], max |gradient| {np.max(np.abs(fd)):.2e}):", file=out)
    worst = 0.0
    for what, a, b, rtol, atol in checks:
        used = within(a, b, rtol, atol)
        worst = max(worst, used)
        rel = float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))
        print(f"  {what + ':':<66} max rel err {rel:.2e}, error/tolerance {used:.1e} "
              f"(rtol {rtol:g}, atol {atol:.1e})", file=out)
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


def plot_losses(losses: list, path: str) -> str:
    """Draw the loss curve to ``path``: ``.svg`` (with labels) or ``.png`` (written with zlib, no
    plotting library needed)."""
    if path.lower().endswith(".svg"):
        data = _svg_plot(losses)
        with open(path, "w", encoding="utf-8") as f:
            f.write(data)
        return path
    if not path.lower().endswith(".png"):
        raise ValueError(f"--plot {path!r}: give a .png or .svg file")
    with open(path, "wb") as f:
        f.write(_png_plot(losses))
    return path


def _curve(losses: list, width: int, height: int, pad: int) -> list:
    """(x, y) pixel points of the curve, loss on a linear axis from 0 to its maximum."""
    top = max(max(losses), 1e-12)
    n = max(len(losses) - 1, 1)
    return [(pad + (width - 2 * pad) * i / n, height - pad - (height - 2 * pad) * v / top) for i, v in enumerate(losses)]


def _svg_plot(losses: list, width: int = 640, height: int = 400, pad: int = 48) -> str:
    pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in _curve(losses, width, height, pad))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">\n'
            f'<rect width="100%" height="100%" fill="white"/>\n'
            f'<path d="M{pad},{pad} V{height - pad} H{width - pad}" stroke="black" fill="none"/>\n'
            f'<polyline points="{pts}" stroke="#1f77b4" stroke-width="1.5" fill="none"/>\n'
            f'<text x="{width / 2}" y="{height - 12}" text-anchor="middle" font-family="sans-serif">'
            f'step (1 .. {len(losses)})</text>\n'
            f'<text x="14" y="{height / 2}" transform="rotate(-90 14 {height / 2})" text-anchor="middle" '
            f'font-family="sans-serif">loss (0 .. {max(losses):.3g})</text>\n'
            f'<text x="{width / 2}" y="24" text-anchor="middle" font-family="sans-serif">minigraph demo: '
            f'training loss, {losses[0]:.4f} -&gt; {losses[-1]:.4f}</text>\n</svg>\n')


def _png_plot(losses: list, width: int = 640, height: int = 400, pad: int = 40) -> bytes:
    img = np.full((height, width, 3), 255, np.uint8)
    img[height - pad, pad:width - pad + 1] = 0  # x axis
    img[pad:height - pad + 1, pad] = 0  # y axis
    for k in range(1, 10):  # ticks: tenths of the steps and of the loss range
        img[height - pad:height - pad + 5, pad + (width - 2 * pad) * k // 10] = 0
        img[pad + (height - 2 * pad) * k // 10, pad - 5:pad] = 0
    pts = _curve(losses, width, height, pad)
    for (x0, y0), (x1, y1) in zip(pts, pts[1:] or pts):
        n = int(max(abs(x1 - x0), abs(y1 - y0), 1)) * 2
        xs = np.rint(np.linspace(x0, x1, n + 1)).astype(int)
        ys = np.rint(np.linspace(y0, y1, n + 1)).astype(int)
        for dy in (0, 1):
            img[np.clip(ys + dy, 0, height - 1), np.clip(xs, 0, width - 1)] = (31, 119, 180)
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


# ---------------------------------------------------------------------------------------------- command line
def steps_count(text: str) -> int:
    """``--steps``: a whole number of at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (the number of training steps), got {n}")
    return n


def seed_value(text: str) -> int:
    """``--seed``: a whole number of at least 0 (what NumPy's generators take)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {n}")
    return n


def add_arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The demo's options (shared by ``python -m minigraph demo`` and ``minigraph.demo.main``)."""
    ap.add_argument("--backend", default="numpy", help="numpy (default), webgpu or metal")
    ap.add_argument("--model", choices=sorted(MODELS), default="small",
                    help="small: the depthwise-separable CNN (default); mobilenet_v2: a MobileNetV2 (width 0.25, "
                         "32x32 images) with batch norm and ReLU6")
    ap.add_argument("--steps", type=steps_count, default=None,
                    help="training steps, at least 1 (default 300; 40 for mobilenet_v2)")
    ap.add_argument("--seed", type=seed_value, default=0, help="seed of the data and the initial weights (default 0)")
    ap.add_argument("--plot", metavar="FILE", help="write the loss curve to FILE (.png or .svg)")
    ap.add_argument("--quiet", action="store_true",
                    help="no progress display and no timings (output is identical for a seed)")
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
    make, init, size, _, _, default_steps = MODELS[model]
    args.steps = args.steps or default_steps
    rng = np.random.default_rng(args.seed)
    params = init(rng)
    g, x, labels, v, logits, loss, _ = make(mg.float32, params)
    grads = g.gradients(loss, g.trainable_variables, name="grad")
    lr = 0.05 if model == "small" else 0.01
    steps = [g.apply_adam(t, grads[t], learning_rate=lr, name=f"adam/{k}") for k, t in v.items()]
    what = "depthwise-separable CNN" if model == "small" else \
        f"MobileNetV2 (width {MOBILENET_WIDTH}, {size}x{size} images, batch norm, ReLU6)"
    print(f"minigraph {mg.__version__} demo: {what} on the {args.backend!r} backend", file=out)
    if model == "small":
        print(f"Graph ({len(g.operations)} ops, batch dimension dynamic; forward ops and the depthwise gradient "
              "ops that autodiff inserted):", file=out)
        print(short_listing(g), file=out)
    else:
        print(op_counts(g), file=out)

    exe = g.compile({x: mg.ShapedType([-1, C, size, size], mg.float32),
                     labels: mg.ShapedType([-1, CLASSES], mg.float32)}, [loss, logits], steps, backend=args.backend)
    x_test, y_test, k_test = make_data(rng, 256, size)
    losses: list = []
    acc = 0.0
    progress = Progress(args.steps, out, args.quiet)
    for step in range(1, args.steps + 1):
        xb, yb, kb = make_data(rng, BATCH, size)
        lv, lg = exe.run({x: xb.astype(np.float32), labels: yb.astype(np.float32)})
        losses.append(float(lv))
        batch_acc = float(np.mean(np.argmax(lg, 1) == kb))
        acc = 0.9 * acc + 0.1 * batch_acc if step > 1 else batch_acc
        progress.update(step, losses[-1], acc)
    progress.close()
    elapsed = time.perf_counter() - progress.t0
    took = "" if args.quiet else f" in {elapsed:.2f} s"  # --quiet output is identical for one seed
    print(f"Trained {args.steps} steps at batch {BATCH}{took} with one executable "
          f"(compiled {exe.compile_count} time); loss {losses[0]:.4f} -> {losses[-1]:.4f}", file=out)
    if args.plot:
        try:
            print(f"Wrote the loss curve to {plot_losses(losses, args.plot)}", file=out)
        except (OSError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2

    # the same graph at batch 256: only the forward ops run (no optimizer step is a target)
    test_logits = g.run({x: x_test.astype(np.float32), labels: y_test.astype(np.float32)}, [logits],
                        backend=args.backend)[logits]
    test_acc = float(np.mean(np.argmax(test_logits, 1) == k_test))
    print(f"Held-out accuracy on 256 new images, same graph: {test_acc:.1%} (chance: {1 / CLASSES:.0%})", file=out)

    trained = {k: g.value_of(t) for k, t in v.items()}
    worst = max(gradient_check(args.backend, params, np.random.default_rng(args.seed + 1), out, "the initial weights",
                               model),
                gradient_check(args.backend, trained, np.random.default_rng(args.seed + 1), out, "the trained weights",
                               model))
    ok = worst <= 1.0
    print("Gradient check " + ("passed." if ok else "FAILED."), file=out)
    return 0 if ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
