"""Depthwise convolution on the CPU: minigraph's NumPy backend against PyTorch, JAX and MLX.

For every depthwise layer of MobileNetV2 at 224x224 (optionally MobileNetV3-Large and
EfficientNet-B0), batch 8, float32, it times the weights gradient (and, on request, the
forward op and the data gradient) of

* ``minigraph``: a compiled graph (placeholders for the inputs, the depthwise op, NCHW/OIHW)
  run on the NumPy backend, exactly as a user would;
* ``torch``: ``torch.nn.grad.conv2d_weight`` / ``conv2d`` / ``conv2d_input`` with
  ``groups=C``, ``torch.set_num_threads(cores)``;
* ``jax``: the jitted VJP of ``lax.conv_general_dilated`` (``feature_group_count=C``), with
  ``block_until_ready``;
* ``mlx``: the VJP of ``mx.conv2d(groups=C)`` on the CPU device, NHWC (MLX's layout), ``mx.eval``.

Peers are optional: a missing one is skipped with a note. Every peer's result is checked
against minigraph's once (``max_rel_err``), so a wrong setup cannot pass for a fast one.
Reported per layer: median ms (interleaved rounds after warm-up), effective GB/s (the bytes of
x and dy read once, ``shapes.cost``), the ratio to PyTorch, and geometric means.

Run: ``python -m minigraph bench depthwise [--ops wgrad,fwd,dgrad] [--nets mobilenet_v2,...]
[--json out.json] [--tiny]`` or ``python benchmarks/depthwise_cpu.py ...``.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Dict, Optional, Tuple

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "benchmarks"

from . import shapes  # noqa: E402
from .timing import (cpu_count, format_table, geomean, machine_info, stats, time_interleaved,  # noqa: E402
                     write_json)

OPS = ("wgrad", "fwd", "dgrad")
OP_TITLES = {"wgrad": "weights gradient", "fwd": "forward", "dgrad": "data gradient"}
PEERS = ("minigraph", "torch", "jax", "mlx")


class Layer:
    """One depthwise layer at batch n, with deterministic random inputs (canonical NCHW)."""

    def __init__(self, n: int, c: int, h: int, w: int, k: int, s: int, seed: int = 0):
        self.n, self.c, self.h, self.w, self.k, self.s = n, c, h, w, k, s
        self.p = (k - 1) // 2
        self.oh, self.ow = shapes.out_size(h, k, s), shapes.out_size(w, k, s)
        rng = np.random.default_rng(seed + 7919 * c + 31 * h + k + 1000 * s)
        self.x = rng.standard_normal((n, c, h, w), dtype=np.float32)
        self.dy = rng.standard_normal((n, c, self.oh, self.ow), dtype=np.float32)
        self.wt = rng.standard_normal((1, c, k, k), dtype=np.float32)  # OIHW, M = 1
        self.bytes, self.flops = shapes.cost(n, c, h, w, k, s)

    @property
    def key(self):
        return [self.c, self.h, self.w, self.k, self.s]


# ----------------------------------------------------------------------------- peers
# each maker returns (run, result) where run() times one call and result() gives the answer in
# canonical layout: wgrad [C, k, k], fwd [N, C, OH, OW], dgrad [N, C, H, W]

def _minigraph(op: str, L: Layer, threads: int):
    import minigraph as mg
    from minigraph.descriptors import DepthwiseConvolution2DOpDescriptor as D

    desc = D(stride_in_x=L.s, stride_in_y=L.s, padding_left=L.p, padding_right=L.p, padding_top=L.p,
             padding_bottom=L.p, data_layout="NCHW", weights_layout="OIHW")
    g = mg.Graph()
    f32 = mg.float32
    if op == "wgrad":
        dy = g.placeholder(L.dy.shape, f32, name="dy")
        x = g.placeholder(L.x.shape, f32, name="x")
        out = g.depthwise_convolution_2d_weights_gradient(dy, x, output_shape=L.wt.shape, descriptor=desc, name="dw")
        feeds = {dy: L.dy, x: L.x}
    elif op == "fwd":
        x = g.placeholder(L.x.shape, f32, name="x")
        w = g.placeholder(L.wt.shape, f32, name="w")
        out = g.depthwise_convolution_2d(x, w, descriptor=desc, name="y")
        feeds = {x: L.x, w: L.wt}
    else:
        dy = g.placeholder(L.dy.shape, f32, name="dy")
        w = g.placeholder(L.wt.shape, f32, name="w")
        out = g.depthwise_convolution_2d_data_gradient(dy, w, output_shape=L.x.shape, descriptor=desc, name="dx")
        feeds = {dy: L.dy, w: L.wt}
    exe = g.compile({t: mg.ShapedType(v.shape, f32) for t, v in feeds.items()}, [out])
    values = [feeds[t] for t in exe.feed_tensors]

    def run():
        return exe.run(values)[0]

    def result():
        r = run()
        return r[0] if op == "wgrad" else r
    return run, result


def _torch(op: str, L: Layer, threads: int):
    import torch

    torch.set_num_threads(threads)
    x, dy, w = torch.from_numpy(L.x), torch.from_numpy(L.dy), torch.from_numpy(L.wt.transpose(1, 0, 2, 3).copy())
    s, p, c = L.s, L.p, L.c
    if op == "wgrad":
        def run():
            return torch.nn.grad.conv2d_weight(x, w.shape, dy, stride=s, padding=p, groups=c)

        return run, lambda: run().numpy()[:, 0]
    if op == "fwd":
        def run():
            return torch.nn.functional.conv2d(x, w, stride=s, padding=p, groups=c)

        return run, lambda: run().numpy()

    def run():
        return torch.nn.grad.conv2d_input(x.shape, w, dy, stride=s, padding=p, groups=c)

    return run, lambda: run().numpy()


def _jax(op: str, L: Layer, threads: int):
    import jax
    from jax import lax

    s, p, c = L.s, L.p, L.c

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (s, s), [(p, p), (p, p)], feature_group_count=c,
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))

    cpu = jax.devices("cpu")[0]
    x = jax.device_put(L.x, cpu)
    dy = jax.device_put(L.dy, cpu)
    w = jax.device_put(L.wt.transpose(1, 0, 2, 3).copy(), cpu)
    if op == "wgrad":
        fn = jax.jit(lambda x, w, dy: jax.vjp(lambda w_: conv(x, w_), w)[1](dy)[0])
        args = (x, w, dy)
        post = lambda r: np.asarray(r)[:, 0]  # noqa: E731
    elif op == "fwd":
        fn = jax.jit(conv)
        args = (x, w)
        post = np.asarray
    else:
        fn = jax.jit(lambda x, w, dy: jax.vjp(lambda x_: conv(x_, w), x)[1](dy)[0])
        args = (x, w, dy)
        post = np.asarray

    def run():
        return fn(*args).block_until_ready()

    return run, lambda: post(run())


def _mlx(op: str, L: Layer, threads: int):
    import mlx.core as mx

    mx.set_default_device(mx.cpu)
    s, p, c = L.s, L.p, L.c
    x = mx.array(L.x.transpose(0, 2, 3, 1).copy())  # NHWC: MLX's own layout
    dy = mx.array(L.dy.transpose(0, 2, 3, 1).copy())
    w = mx.array(L.wt[0][:, :, :, None].copy())  # [C_out, kH, kW, C_in/groups]
    if op == "wgrad":
        def run():
            r = mx.vjp(lambda w_: mx.conv2d(x, w_, stride=s, padding=p, groups=c), [w], [dy])[1][0]
            mx.eval(r)
            return r

        return run, lambda: np.array(run())[:, :, :, 0]
    if op == "fwd":
        def run():
            r = mx.conv2d(x, w, stride=s, padding=p, groups=c)
            mx.eval(r)
            return r

        return run, lambda: np.array(run()).transpose(0, 3, 1, 2)

    def run():
        r = mx.vjp(lambda x_: mx.conv2d(x_, w, stride=s, padding=p, groups=c), [x], [dy])[1][0]
        mx.eval(r)
        return r

    return run, lambda: np.array(run()).transpose(0, 3, 1, 2)


MAKERS: Dict[str, Callable] = {"minigraph": _minigraph, "torch": _torch, "jax": _jax, "mlx": _mlx}
_IMPORTS = {"minigraph": "minigraph", "torch": "torch", "jax": "jax", "mlx": "mlx.core"}


def available_peers(wanted) -> Tuple[list, dict]:
    ok, skipped = [], {}
    for name in wanted:
        try:
            __import__(_IMPORTS[name])
            ok.append(name)
        except Exception as e:  # ImportError, or a broken install
            skipped[name] = f"not importable ({type(e).__name__}: {e})"
    return ok, skipped


# ----------------------------------------------------------------------------- the run
def run(ops=("wgrad",), nets=("mobilenet_v2",), batch: int = 8, repeats: int = 7, warmup: int = 2,
        peers=PEERS, threads: Optional[int] = None, tiny: bool = False, budget_s: float = 2.0,
        log=print) -> dict:
    """Time every (op, layer, peer); returns the JSON-ready result dict."""
    threads = threads or cpu_count()
    # the NumPy backend's thread pool reads this when a plan is built (at compile)
    saved = os.environ.get("MINIGRAPH_NUM_THREADS")
    os.environ["MINIGRAPH_NUM_THREADS"] = str(threads)
    try:
        return _run(ops, nets, batch, repeats, warmup, peers, threads, tiny, budget_s, log)
    finally:
        if saved is None:
            os.environ.pop("MINIGRAPH_NUM_THREADS", None)
        else:
            os.environ["MINIGRAPH_NUM_THREADS"] = saved


def _run(ops, nets, batch, repeats, warmup, peers, threads, tiny, budget_s, log) -> dict:
    if tiny:
        nets, batch, repeats, warmup = ("tiny",), 2, 2, 1
    peers, skipped = available_peers(peers)
    results = []
    for net in nets:
        layers = shapes.TINY_DW if net == "tiny" else shapes.NETS[net]
        for op in ops:
            log(f"\n## {OP_TITLES[op]}: {net}, N={batch}, float32, {threads} threads")
            for spec in layers:
                L = Layer(batch, *spec)
                fns, res = {}, {}
                for name in peers:
                    try:
                        fns[name], res[name] = MAKERS[name](op, L, threads)
                    except Exception as e:  # a peer that cannot express this case
                        skipped.setdefault(f"{name}/{op}", f"{type(e).__name__}: {e}")
                ref = res["minigraph"]() if "minigraph" in res else None
                times = time_interleaved(fns, repeats=repeats, warmup=warmup, budget_s=budget_s)
                row = {"op": op, "net": net, "n": batch, "layer": L.key, "bytes": L.bytes, "flops": L.flops,
                       "peers": {}}
                for name, ts in times.items():
                    st = stats(ts)
                    st["gbps"] = L.bytes / (st["median_ms"] * 1e-3) / 1e9
                    st["gflops"] = L.flops / (st["median_ms"] * 1e-3) / 1e9
                    if ref is not None and name != "minigraph":
                        got = np.asarray(res[name](), dtype=np.float64)
                        st["max_rel_err"] = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
                    row["peers"][name] = st
                tm = row["peers"].get("torch", {}).get("median_ms")
                for name, st in row["peers"].items():
                    st["ratio_to_torch"] = st["median_ms"] / tm if tm else None
                results.append(row)
                log(_row_line(row))
    summary = summarize(results)
    return {"benchmark": "depthwise_cpu", "machine": machine_info(),
            "config": {"ops": list(ops), "nets": list(nets), "batch": batch, "repeats": repeats,
                       "warmup": warmup, "threads": threads, "dtype": "float32", "tiny": tiny,
                       "statistic": "median of interleaved repeats after warm-up"},
            "skipped": skipped, "results": results, "summary": summary}


def _row_line(row) -> str:
    c, h, w, k, s = row["layer"]
    parts = [f"C={c:4d} {h:3d}x{w:<3d} k{k} s{s}"]
    for name, st in row["peers"].items():
        parts.append(f"{name} {st['median_ms']:8.3f} ms")
    return "  ".join(parts)


def summarize(results) -> dict:
    """Geometric means per (op, net): each peer's time ratio to torch, and speedups of minigraph."""
    out = {}
    for row in results:
        key = f"{row['op']}/{row['net']}"
        out.setdefault(key, {"rows": []})["rows"].append(row)
    for key, d in out.items():
        rows = d.pop("rows")
        names = sorted({n for r in rows for n in r["peers"]})
        d["geomean_ratio_to_torch"] = {n: geomean([r["peers"][n]["median_ms"] / r["peers"]["torch"]["median_ms"]
                                                   for r in rows if n in r["peers"] and "torch" in r["peers"]])
                                       for n in names}
        d["geomean_ratio_to_torch_min"] = {n: geomean([r["peers"][n]["min_ms"] / r["peers"]["torch"]["min_ms"]
                                                       for r in rows if n in r["peers"] and "torch" in r["peers"]])
                                           for n in names}
        if any("minigraph" in r["peers"] for r in rows):
            d["minigraph_speedup_over"] = {
                n: geomean([r["peers"][n]["median_ms"] / r["peers"]["minigraph"]["median_ms"]
                            for r in rows if n in r["peers"] and "minigraph" in r["peers"]])
                for n in names if n != "minigraph"}
        d["total_ms"] = {n: sum(r["peers"][n]["median_ms"] for r in rows if n in r["peers"]) for n in names}
        d["layers"] = len(rows)
    return out


def report(result: dict, ops=None, notes: bool = True) -> str:
    """Tables (one per op and net, or only ``ops``) and the geometric means, as printed and
    pasted in the docs."""
    lines = []
    by = {}
    for row in result["results"]:
        if ops is None or row["op"] in ops:
            by.setdefault((row["op"], row["net"]), []).append(row)
    for (op, net), rows in by.items():
        names = [n for n in PEERS if any(n in r["peers"] for r in rows)]
        headers = ["C", "HxW", "k", "s"] + [f"{n} ms" for n in names] + ["mg GB/s", "mg/torch"]
        headers += [f"{n}/mg" for n in names if n not in ("minigraph", "torch")]
        table = []
        for r in rows:
            c, h, w, k, s = r["layer"]
            p = r["peers"]
            line = [c, f"{h}x{w}", k, s] + [p[n]["median_ms"] if n in p else None for n in names]
            mg = p.get("minigraph")
            line.append(mg["gbps"] if mg else None)
            line.append(mg["ratio_to_torch"] if mg and mg.get("ratio_to_torch") else None)
            for n in names:
                if n not in ("minigraph", "torch"):
                    line.append(p[n]["median_ms"] / mg["median_ms"] if mg and n in p else None)
            table.append(line)
        s = result["summary"][f"{op}/{net}"]
        gm = s["geomean_ratio_to_torch"]
        foot = ["geomean", "", "", ""] + [gm.get(n) if n != "torch" else 1.0 for n in names] + ["", gm.get("minigraph")]
        foot += [s.get("minigraph_speedup_over", {}).get(n) for n in names if n not in ("minigraph", "torch")]
        table.append(foot)
        lines.append(f"### {OP_TITLES[op]} — {net}, N={rows[0]['n']} (median ms; a ratio < 1: the numerator is faster)")
        lines.append(format_table(headers, table))
        lines.append("")
    if notes:
        for name, why in result["skipped"].items():
            lines.append(f"skipped {name}: {why}")
    return "\n".join(lines).rstrip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minigraph bench depthwise", description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default="wgrad", help="comma list of wgrad,fwd,dgrad (or 'all')")
    ap.add_argument("--nets", default="mobilenet_v2",
                    help="comma list of " + ",".join(shapes.NETS) + " (or 'all')")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for minigraph and torch (default: the core count); JAX and MLX keep theirs")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds a slow peer may spend per layer")
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    ap.add_argument("--tiny", action="store_true", help="tiny shapes, 2 repeats: checks the pipeline only")
    a = ap.parse_args(argv)
    ops = OPS if a.ops == "all" else tuple(a.ops.split(","))
    nets = tuple(shapes.NETS) if a.nets == "all" else tuple(a.nets.split(","))
    for o in ops:
        if o not in OPS:
            ap.error(f"unknown op {o!r}; choose from {OPS}")
    for n in nets:
        if n not in shapes.NETS:
            ap.error(f"unknown net {n!r}; choose from {tuple(shapes.NETS)}")
    res = run(ops, nets, a.batch, a.repeats, a.warmup, tuple(a.peers.split(",")), a.threads, a.tiny, a.budget)
    print()
    print(report(res))
    if a.json:
        write_json(a.json, res)
        print(f"\nwrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
