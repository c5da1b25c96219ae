"""``python -m minigraph demo``: train a small depthwise-separable CNN and check its gradients.

The network: depthwise 3x3 conv (channel multiplier 4) -> bias -> relu -> 1x1 conv -> global
average pooling -> softmax cross-entropy, on a synthetic task generated in code: images of
stripes in one of four orientations, with noise. Autodiff inserts the explicit
``depthwise_convolution_2d_weights_gradient`` op, which the demo shows, and the last part checks
that gradient three ways: autodiff vs the explicit op vs central finite differences.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import minigraph as mg

C, M, H, W, CLASSES, BATCH = 3, 4, 12, 12, 4, 32


def make_data(rng: np.random.Generator, n: int):
    """Stripes at 0, 90, 45 or 135 degrees, random frequency/phase/channel mix, plus noise."""
    labels = rng.integers(0, CLASSES, n)
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    directions = {0: (0, 1), 1: (1, 0), 2: (1, 1), 3: (1, -1)}
    x = np.empty((n, C, H, W))
    for i, k in enumerate(labels):
        a, b = directions[int(k)]
        freq = rng.uniform(0.8, 1.6)
        wave = np.sin(freq * (a * xx + b * yy) + rng.uniform(0, 2 * np.pi))
        x[i] = rng.uniform(0.5, 1.5, (C, 1, 1)) * wave + 1.0 * rng.standard_normal((C, H, W))
    onehot = np.eye(CLASSES)[labels]
    return x, onehot, labels


def build(dtype, params: dict, batch: int):
    """The network in a fresh graph; returns the graph and its named tensors."""
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


def gradient_check(backend: str, params: dict, rng: np.random.Generator, out) -> float:
    """Autodiff vs the explicit weights-gradient op vs central differences, in float64."""
    batch = 4
    x_np, y_np, _ = make_data(rng, batch)
    g, x, labels, v, _, loss, h = build(mg.float64, params, batch)
    dw = v["dw_weights"]
    dw_out = g.tensor("dw")
    grads = g.gradients(loss, [dw, dw_out], name="check")
    explicit = g.depthwise_convolution_2d_weights_gradient(
        grads[dw_out], x, output_shape=dw.shape, descriptor=dw_out.operation.attrs["descriptor"], name="explicit")
    feeds = {x: x_np, labels: y_np}
    backend64 = "numpy"  # float64 is the NumPy backend's extension; GPUs run float32
    res = g.run(feeds, [grads[dw], explicit], backend=backend64)
    auto, expl = res[grads[dw]], res[explicit]
    f = g.compile({x: mg.ShapedType(x_np.shape, mg.float64), labels: mg.ShapedType(y_np.shape, mg.float64)},
                  [loss], backend=backend64)
    base = params["dw_weights"].astype(np.float64)
    fd = np.zeros_like(base)
    eps = 1e-6
    for idx in np.ndindex(*base.shape):
        for sign in (1, -1):
            p = base.copy()
            p[idx] += sign * eps
            g.variable_store.set(dw.operation, p)
            fd[idx] += sign * f.run(feeds)[0] / (2 * eps)

    def rel(a, b):
        return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))

    # the same gradient in float32 on the chosen backend, against the float64 reference
    g32, x32, l32, v32, _, loss32, _ = build(mg.float32, params, batch)
    gr32 = g32.gradients(loss32, [v32["dw_weights"]], name="grad")
    auto32 = g32.run({x32: x_np.astype(np.float32), l32: y_np.astype(np.float32)},
                     [gr32[v32["dw_weights"]]], backend=backend)[gr32[v32["dw_weights"]]]
    e1, e2, e3, e4 = rel(auto, expl), rel(auto, fd), rel(expl, fd), rel(auto32, fd)
    print("\nGradient check of the depthwise weights (float64, batch 4, shape "
          f"{list(base.shape)} = [M, C, kH, kW]):", file=out)
    print(f"  autodiff vs explicit depthwise_convolution_2d_weights_gradient: max rel err {e1:.2e}", file=out)
    print(f"  autodiff vs central finite differences (eps {eps:g}):           max rel err {e2:.2e}", file=out)
    print(f"  explicit op vs central finite differences:                      max rel err {e3:.2e}", file=out)
    print(f"  float32 autodiff on {backend!r} vs finite differences:          max rel err {e4:.2e}", file=out)
    return max(e1, e2, e3, e4 * 1e-3)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minigraph demo", description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="numpy", help="numpy (default), webgpu or metal")
    ap.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quiet", action="store_true", help="no progress display and no timings (output is identical for a seed)")
    args = ap.parse_args(argv)
    out = sys.stdout
    try:
        mg.get_backend(args.backend)
    except mg.BackendUnavailableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    params = init_params(rng)
    g, x, labels, v, logits, loss, _ = build(mg.float32, params, BATCH)
    grads = g.gradients(loss, list(v.values()), name="grad")
    steps = [g.apply_adam(v[k], grads[v[k]], learning_rate=0.05, name=f"adam/{k}") for k in v]
    print(f"minigraph {mg.__version__} demo: depthwise-separable CNN on the {args.backend!r} backend", file=out)
    print(f"Graph ({len(g.operations)} ops; forward ops and the depthwise gradient ops that "
          "autodiff inserted):", file=out)
    print(short_listing(g), file=out)

    exe = g.compile({x: mg.ShapedType([BATCH, C, H, W], mg.float32),
                     labels: mg.ShapedType([BATCH, CLASSES], mg.float32)},
                    [loss, logits], steps, backend=args.backend)
    x_test, y_test, k_test = make_data(rng, 256)
    t0 = time.perf_counter()
    first = last = None
    acc = 0.0
    for step in range(1, args.steps + 1):
        xb, yb, kb = make_data(rng, BATCH)
        lv, lg = exe.run({x: xb.astype(np.float32), labels: yb.astype(np.float32)})
        lv = float(lv)
        first = lv if first is None else first
        last = lv
        acc = 0.9 * acc + 0.1 * float(np.mean(np.argmax(lg, 1) == kb)) if step > 1 else float(np.mean(np.argmax(lg, 1) == kb))
        if not args.quiet and (step % 25 == 0 or step == args.steps):
            rate = step / (time.perf_counter() - t0)
            print(f"  step {step:4d}/{args.steps}  loss {lv:.4f}  train acc {acc:5.1%}  {rate:7.1f} steps/s", file=out)
    elapsed = time.perf_counter() - t0
    took = "" if args.quiet else f" in {elapsed:.2f} s"  # --quiet output is identical for one seed
    print(f"Trained {args.steps} steps{took} with one executable "
          f"(compiled {exe.compile_count} time); loss {first:.4f} -> {last:.4f}", file=out)

    trained = {k: g.value_of(t) for k, t in v.items()}
    eg, ex, el, ev, elog, _, _ = build(mg.float32, trained, 256)
    test_logits = eg.run({ex: x_test.astype(np.float32), el: y_test.astype(np.float32)}, [elog],
                         backend=args.backend)[elog]
    test_acc = float(np.mean(np.argmax(test_logits, 1) == k_test))
    print(f"Held-out accuracy on 256 new images: {test_acc:.1%} (chance: {1 / CLASSES:.0%})", file=out)

    worst = gradient_check(args.backend, trained, np.random.default_rng(args.seed + 1), out)
    ok = worst < 1e-5
    print("Gradient check " + ("passed." if ok else "FAILED."), file=out)
    return 0 if ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
