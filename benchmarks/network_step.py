"""A whole training step: minigraph against PyTorch (and JAX) on the same network, same data.

Networks:

* ``sixblock``: six depthwise-separable blocks (depthwise 3x3 -> ReLU -> pointwise 1x1 -> ReLU),
  channels 32 -> 64 -> 128 -> 128 -> 256 -> 256 -> 512 with stride 2 in blocks 2, 4 and 6, a
  56x56 input, global average pooling, a linear layer and softmax cross-entropy;
* ``mobilenet_v2``: MobileNetV2 (width 1.0, batch norm in training mode, ReLU6) from
  ``benchmarks/torch_models.py``, imported into minigraph with ``mg.from_onnx(training=True)``.

One step = forward, loss, gradients of every weight, an SGD update (minigraph: one compiled
executable run with the updates as target operations; PyTorch: ``loss.backward()`` and
``torch.optim.SGD.step()``, eager (``torch``) and through ``torch.compile`` (``torch_compile``:
the model compiled, the first calls compile); JAX, sixblock only: a jitted ``value_and_grad``
with the update, on the GPU where JAX sees one; every peer in float32, TF32 off). Every peer
keeps the batch on the device: minigraph feeds it as ``mg.TensorData`` of the benchmark's
backend (put there once, copied on the device in each step). ``minigraph_upload`` feeds the
arrays, uploaded from host memory in every step, and ``torch_upload`` is PyTorch eager copying
the batch from host memory in every step too. For minigraph the row also records the plan:
steps, kernel steps and GPU dispatches per step; the ``minigraph_upload`` peer records the bytes,
seconds and rate (``upload_GBps``) of its feeds' upload.
Each peer's first-step loss is checked against minigraph's, so a wrong setup cannot pass for a
fast one. ``--threads 1,2,4`` repeats the CPU runs at each thread count (minigraph through
``mg.set_num_threads`` where it exists, PyTorch through ``torch.set_num_threads``; JAX fixes its
threads at start, so it runs once).

Run: ``python -m minigraph bench network [--nets sixblock,mobilenet_v2] [--backend numpy|cpu|webgpu]
[--peers minigraph,minigraph_upload,torch,torch_compile,jax,torch_upload]
[--batch N] [--size S] [--threads 1,2,4] [--json out.json] [--tiny]``.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Callable, Dict, Optional

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "benchmarks"

from minigraph import sixblock  # noqa: E402

from .timing import format_table, machine_info, stats, time_interleaved, write_json  # noqa: E402

NETS = ("sixblock", "mobilenet_v2")
SIX, CLASSES, LR = sixblock.SIX, sixblock.CLASSES, sixblock.LR
_six, _six_weights = sixblock.widths, sixblock.weights
build_sixblock = sixblock.build  # the graph of the step (minigraph/sixblock.py; `minigraph profile` profiles it)
HOST_BACKENDS = ("numpy", "cpu")  # minigraph's backends that run on the CPU: their peers run there too


def _data(net: str, n: int, size: int, width: float = 1.0, seed: int = 0) -> tuple:
    return sixblock.data(n, size, width, seed, channels=0 if net == "sixblock" else 3)


# ----------------------------------------------------------------------------- minigraph
def sixblock_data(batch: int, size: int, width: float = 1.0) -> tuple:
    """(x, one-hot labels) for the six-block network: ``batch`` images of ``size`` x ``size``."""
    return _data("sixblock", batch, size, width)


def minigraph_sixblock(x: np.ndarray, labels: np.ndarray, backend: str, width: float = 1.0,
                       upload: bool = False) -> Callable:
    """The six-block step; ``upload``: the batch fed as arrays, uploaded in every step (otherwise
    as ``mg.TensorData`` of ``backend``, put on its device once)."""
    import minigraph as mg

    g, feeds, loss, steps = build_sixblock(x, labels, width)
    exe = g.compile({t: mg.ShapedType(a.shape, mg.float32) for t, a in feeds.items()}, [loss],
                    target_operations=steps, backend=backend)
    return _runs(exe, feeds, backend, upload)


class _Step:
    """A minigraph step to time, with its executable for ``plan_facts``."""

    def __init__(self, exe, feeds):
        self.exe, self.feeds = exe, feeds

    def __call__(self):
        return self.exe.run(self.feeds)[0]


def _runs(exe, feeds, backend: str, upload: bool) -> Callable:
    import minigraph as mg

    return _Step(exe, feeds if upload else {t: mg.TensorData(a, backend=backend) for t, a in feeds.items()})


def plan_facts(step) -> dict:
    """What a minigraph step's plan holds: steps, kernel steps, fused steps, GPU dispatches and
    copies per run, and the feeds' upload (bytes, seconds of the last run, GB/s) where the
    backend reports it."""
    exe = getattr(step, "exe", None)
    if exe is None:
        return {}
    steps = exe.steps
    facts = {"steps": len(steps), "kernel_steps": sum(not s.op.opdef.internal and s.op.opdef.kind != "view"
                                                      for s in steps),
             "fused_steps": sum(bool(s.program) for s in steps),
             "epilogue_steps": sum(getattr(s, "anchor", None) is not None for s in steps)}
    runner = getattr(exe, "_runner", None)
    for name in ("dispatches", "copies"):
        v = getattr(runner, name, None)
        if v is not None:
            facts[name] = len(v) if hasattr(v, "__len__") else int(v)
    nbytes, secs = getattr(runner, "upload_bytes", None), getattr(runner, "upload_seconds", None)
    if nbytes is not None:
        facts["upload_bytes"] = int(nbytes)
        if secs:
            facts["upload_seconds"] = float(secs)
            facts["upload_GBps"] = nbytes / secs / 1e9
    return facts


def minigraph_onnx(module, x: np.ndarray, labels: np.ndarray, backend: str, upload: bool = False) -> Callable:
    """A PyTorch module exported in training form and imported with ``mg.from_onnx(training=True)``;
    ``upload`` as for ``minigraph_sixblock``."""
    import torch

    import minigraph as mg

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "net.onnx")
        module.train()
        torch.onnx.export(module, (torch.from_numpy(x),), path, dynamo=False, opset_version=13,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
        g, inputs, outputs = mg.from_onnx(path, training=True)
    (xp,), (logits,) = inputs.values(), outputs.values()
    lp = g.placeholder(labels.shape, name="labels")
    loss = g.softmax_cross_entropy(logits, lp, axis=-1, reduction="mean")
    ws = [v for v in g.variables if v.name in dict(module.named_parameters())]
    grads = g.gradients(loss, ws)
    steps = [g.apply_stochastic_gradient_descent(LR, w, grads[w]) for w in ws]
    feeds = {xp: x, lp: labels}
    exe = g.compile({t: mg.ShapedType(a.shape, mg.float32) for t, a in feeds.items()}, [loss],
                    target_operations=steps + g.update_operations, backend=backend)
    return _runs(exe, feeds, backend, upload)


# ----------------------------------------------------------------------------- torch
def torch_sixblock(width: float = 1.0):
    import torch
    from torch import nn

    ws = _six_weights(width=width)
    layers: list = []
    for i, (cin, cout, s) in enumerate(_six(width)):
        dw = nn.Conv2d(cin, cin, 3, s, 1, groups=cin, bias=False)
        pw = nn.Conv2d(cin, cout, 1, bias=False)
        dw.weight.data = torch.from_numpy(ws[2 * i].reshape(cin, 1, 3, 3).copy())
        pw.weight.data = torch.from_numpy(ws[2 * i + 1].copy())
        layers += [dw, nn.ReLU(), pw, nn.ReLU()]
    fc = nn.Linear(_six(width)[-1][1], CLASSES, bias=False)
    fc.weight.data = torch.from_numpy(ws[-1].T.copy())
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), fc)


def torch_step(module, x: np.ndarray, labels: np.ndarray, device: str, compiled: bool = False,
               upload: bool = False) -> Callable:
    """A PyTorch SGD step; ``compiled``: the module through ``torch.compile`` (Inductor);
    ``upload``: the batch copied from host memory to the device in every step, as minigraph's
    feeds are (otherwise it is put there once)."""
    import torch

    module = module.to(device).train()
    opt = torch.optim.SGD(module.parameters(), lr=LR)
    xt = torch.from_numpy(x).to(device)
    yt = torch.from_numpy(labels.argmax(1)).to(device)
    forward = torch.compile(module) if compiled else module
    y_host = labels.argmax(1)

    def step():
        nonlocal xt, yt
        if upload:
            xt, yt = torch.from_numpy(x).to(device), torch.from_numpy(y_host).to(device)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(forward(xt), yt)
        loss.backward()
        opt.step()
        if device == "cuda":
            torch.cuda.synchronize()
        return loss.detach().cpu().numpy()
    return step


# ----------------------------------------------------------------------------- jax
def jax_sixblock(x: np.ndarray, labels: np.ndarray, width: float = 1.0, gpu: bool = False) -> Callable:
    """The six-block step as a jitted JAX function, on the CPU, or on JAX's GPU (``gpu``; a
    ``RuntimeError`` where JAX has none)."""
    import jax
    import jax.numpy as jnp

    # float32 as the other peers compute it: JAX on a GPU otherwise runs float32 convolutions and
    # matmuls in TF32 (as PyTorch does with allow_tf32, which the benchmark turns off)
    jax.config.update("jax_default_matmul_precision", "highest")
    params = [jnp.asarray(w) for w in _six_weights(width=width)]
    blocks = _six(width)

    def loss_fn(ps, xb, yb):
        h = xb
        for i, (cin, _, s) in enumerate(blocks):
            dw = ps[2 * i].reshape(cin, 1, 3, 3)
            h = jax.nn.relu(jax.lax.conv_general_dilated(h, dw, (s, s), ((1, 1), (1, 1)),
                                                                 feature_group_count=cin))
            h = jax.nn.relu(jax.lax.conv_general_dilated(h, ps[2 * i + 1], (1, 1), "VALID"))
        logits = h.mean((2, 3)) @ ps[-1]
        return -(yb * jax.nn.log_softmax(logits)).sum(-1).mean()

    @jax.jit
    def step(ps, xb, yb):
        loss, gs = jax.value_and_grad(loss_fn)(ps, xb, yb)
        return loss, [p - LR * g for p, g in zip(ps, gs)]

    dev = jax.devices("gpu")[0] if gpu else jax.devices("cpu")[0]  # the CPU even where JAX sees a GPU too
    state = {"p": [jax.device_put(p, dev) for p in params]}
    xj, yj = jax.device_put(jnp.asarray(x), dev), jax.device_put(jnp.asarray(labels), dev)

    def run():
        loss, state["p"] = step(state["p"], xj, yj)
        return np.asarray(loss.block_until_ready())
    return run


# ----------------------------------------------------------------------------- run
def _set_threads(n: Optional[int]) -> None:
    if n is None:
        return
    import minigraph as mg

    if hasattr(mg, "set_num_threads"):
        mg.set_num_threads(n)
    try:
        import torch
        torch.set_num_threads(n)
    except ImportError:
        pass


def _contenders(net: str, n: int, size: int, backend: str, peers: tuple, tiny: bool) -> Dict[str, Callable]:
    width = 0.125 if tiny else 1.0
    x, labels = _data(net, n, size, width)
    fns: Dict[str, Callable] = {}
    gpu = backend not in HOST_BACKENDS
    module = None
    if net == "sixblock":
        fns["minigraph"] = minigraph_sixblock(x, labels, backend, width)  # padding 1, as PyTorch's
        if "minigraph_upload" in peers:
            fns["minigraph_upload"] = minigraph_sixblock(x, labels, backend, width, upload=True)
    else:
        import copy

        import torch

        from . import torch_models

        torch.manual_seed(0)
        module = torch_models.MobileNetV2(width, classes=CLASSES, dropout=0.0)
        fns["minigraph"] = minigraph_onnx(copy.deepcopy(module), x, labels, backend)  # the same weights
        if "minigraph_upload" in peers:
            fns["minigraph_upload"] = minigraph_onnx(copy.deepcopy(module), x, labels, backend, upload=True)
    for peer in ("torch", "torch_compile", "torch_upload"):
        if peer not in peers:
            continue
        try:
            import copy

            import torch
            device = "cuda" if gpu and torch.cuda.is_available() else "cpu"
            if device == "cuda":
                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
                torch.backends.cudnn.benchmark = True
            m = torch_sixblock(width) if net == "sixblock" else copy.deepcopy(module)
            fns[peer] = torch_step(m, x, labels, device, compiled=peer == "torch_compile",
                                   upload=peer == "torch_upload")
        except ImportError:
            pass
    if "jax" in peers and net == "sixblock":
        try:
            fns["jax"] = jax_sixblock(x, labels, width, gpu=gpu)
        except (ImportError, RuntimeError) as e:  # no JAX, or no GPU for JAX
            print(f"jax: not measured ({type(e).__name__}: {str(e)[:120]})", file=sys.stderr)
    return fns


def run(nets=NETS, backend: str = "numpy", batch: Optional[int] = None, size: Optional[int] = None,
        threads=(None,), peers=("minigraph", "torch", "jax"), repeats: int = 5, tiny: bool = False,
        log=print) -> dict:
    gpu = backend not in HOST_BACKENDS
    results = []
    for net in nets:
        n = batch or (2 if tiny else (32 if gpu or net == "sixblock" else 8))
        s = size or (16 if tiny else (56 if net == "sixblock" else (224 if gpu else 112)))
        for t in threads:
            _set_threads(t)
            fns = _contenders(net, n, s, backend, peers, tiny)
            first = {k: float(np.asarray(f()).reshape(-1)[0]) for k, f in fns.items()}
            times = time_interleaved(fns, repeats=2 if tiny else repeats, warmup=1)
            row = {"net": net, "batch": n, "size": s, "threads": t, "backend": backend, "peers": {},
                   "plan": plan_facts(fns["minigraph"])}
            for k, ts in times.items():
                row["peers"][k] = {**stats(ts), "first_loss": first[k]}
            if "minigraph_upload" in fns:  # what its feeds' upload moved, and how fast
                row["peers"]["minigraph_upload"].update(
                    {k: v for k, v in plan_facts(fns["minigraph_upload"]).items() if k.startswith("upload_")})
            mine = row["peers"]["minigraph"]["median_ms"]
            if "torch" in row["peers"]:
                row["ratio_to_torch"] = mine / row["peers"]["torch"]["median_ms"]
            others = [v["median_ms"] for k, v in row["peers"].items() if k not in ("minigraph", "minigraph_upload", "torch_upload")]
            if others:
                row["ratio_to_best"] = mine / min(others)
            results.append(row)
            log(f"{net} N={n} {s}x{s} threads={t}: " + ", ".join(
                f"{k} {v['median_ms']:.1f} ms" for k, v in row["peers"].items()))
    return {"benchmark": "network_step", "machine": machine_info(), "results": results}


def report(res: dict) -> str:
    rows = []
    for r in res["results"]:
        p = r["peers"]
        rows.append([r["net"], r["batch"], r["size"], r["threads"] or "default", r["backend"],
                     p["minigraph"]["median_ms"], p.get("minigraph_upload", {}).get("median_ms", "-"),
                     p.get("torch", {}).get("median_ms", "-"),
                     p.get("torch_compile", {}).get("median_ms", "-"),
                     p.get("jax", {}).get("median_ms", "-"), p.get("torch_upload", {}).get("median_ms", "-"),
                     r.get("ratio_to_torch", "-"),
                     r.get("ratio_to_best", "-"), r.get("plan", {}).get("dispatches", "-")])
    return format_table(["net", "N", "size", "threads", "backend", "minigraph ms", "minigraph+upload ms", "torch ms",
                         "compile ms",
                         "jax ms", "torch+upload ms", "minigraph / torch", "minigraph / best", "dispatches"], rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minigraph bench network", description=__doc__.split("\n\n")[0])
    ap.add_argument("--nets", default=",".join(NETS))
    ap.add_argument("--backend", default="numpy", help="numpy (default), cpu or webgpu")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--size", type=int)
    ap.add_argument("--threads", default="", help="comma-separated thread counts (default: the libraries' own)")
    ap.add_argument("--peers", default="minigraph,torch,jax",
                    help="of minigraph,minigraph_upload (array feeds, uploaded each step),torch,torch_compile,jax,"
                         "torch_upload (eager, the batch copied to the device each step)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--tiny", action="store_true")
    a = ap.parse_args(argv)
    threads = tuple(int(t) for t in a.threads.split(",") if t) or (None,)
    res = run(tuple(a.nets.split(",")), a.backend, a.batch, a.size, threads, tuple(a.peers.split(",")),
              a.repeats, a.tiny)
    print(report(res))
    if a.json:
        write_json(a.json, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
