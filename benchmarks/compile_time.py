"""Compile time for 1k / 10k / 100k-node graphs, and peak memory of a forward+backward run.

Part 1, compile time: a chain of elementwise ops and a random DAG (each op reads the previous
result and one earlier result) on float32[8], for each size: the time to build the graph,
to compile it (``g.compile``: prune, topological order, type inference, buffer plan, kernel
binding) and to run it once; per node, so linear growth shows as a flat column.

Part 2, memory: a small depthwise-separable block (depthwise 3x3 -> ReLU -> pointwise 1x1 ->
ReLU -> depthwise 3x3 stride 2 -> ReLU -> mean of squares), with the gradients of the loss with
respect to all weights from ``g.gradients`` (or, on a build without autodiff, hand-built with
the explicit gradient ops), run under ``tracemalloc``. The plan's buffer lifetimes
(``Plan.steps[i].free``) give the largest set of simultaneously live tensors; the traced peak
is compared with it (kernel temporaries and workspaces come on top; views such as reshapes
are counted by the plan but allocate nothing).

Run: ``python -m minigraph bench compile [--sizes 1000,10000,100000] [--json out.json] [--tiny]``.
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
import tracemalloc

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "benchmarks"

from .timing import format_table, machine_info, write_json  # noqa: E402

_CYCLE = ("addition", "multiplication", "subtraction", "maximum")


def _build(kind: str, nodes: int, seed: int = 0):
    import minigraph as mg

    g = mg.Graph()
    x = g.placeholder((8,), mg.float32, name="x")
    c = g.constant(np.full((8,), 0.5, np.float32), name="c")
    rnd = random.Random(seed)
    ts = [x]
    t = x
    for i in range(nodes):
        other = c if kind == "chain" else ts[rnd.randrange(len(ts))]
        t = getattr(g, _CYCLE[i % 4])(t, other)
        if kind != "chain":
            ts.append(t)
    return g, x, t


def compile_times(sizes=(1000, 10000, 100000), kinds=("chain", "dag"), repeats: int = 3, log=print) -> list:
    """Build, compile (best of ``repeats``) and run each graph once; seconds and µs per node."""
    import minigraph as mg

    g0, x0, o0 = _build("chain", 4)  # warm-up: the first compile imports the kernel modules
    g0.compile({x0: mg.ShapedType((8,), mg.float32)}, [o0])
    rows = []
    for kind in kinds:
        for n in sizes:
            gc.collect()
            t0 = time.perf_counter()
            g, x, out = _build(kind, n)
            t1 = time.perf_counter()
            best = float("inf")
            for _ in range(repeats):  # the least disturbed of a few compiles (a shared machine)
                gc.collect()
                ta = time.perf_counter()
                exe = g.compile({x: mg.ShapedType((8,), mg.float32)}, [out])
                best = min(best, time.perf_counter() - ta)
            t2 = t1 + best
            best_nogc = float("inf")  # the same with Python's cyclic GC paused: what it costs
            for _ in range(repeats):
                gc.collect()
                gc.disable()
                try:
                    ta = time.perf_counter()
                    g.compile({x: mg.ShapedType((8,), mg.float32)}, [out])
                    best_nogc = min(best_nogc, time.perf_counter() - ta)
                finally:
                    gc.enable()
            tr = time.perf_counter()
            exe.run([np.ones(8, np.float32)])
            t3 = t2 + time.perf_counter() - tr
            steps = len(exe.plan.steps) if getattr(exe, "plan", None) is not None else n
            row = {"kind": kind, "nodes": n, "steps": steps, "build_s": t1 - t0, "compile_s": t2 - t1,
                   "first_run_s": t3 - t2, "build_us_per_node": (t1 - t0) / n * 1e6,
                   "compile_us_per_node": (t2 - t1) / n * 1e6, "run_us_per_node": (t3 - t2) / n * 1e6,
                   "compile_nogc_s": best_nogc, "compile_nogc_us_per_node": best_nogc / n * 1e6}
            rows.append(row)
            log(f"{kind:5s} {n:7d} nodes: build {row['build_s']:7.3f} s, compile {row['compile_s']:7.3f} s "
                f"({row['compile_us_per_node']:.1f} µs/node), first run {row['first_run_s']:.3f} s")
            del g, x, out, exe
    return rows


# ----------------------------------------------------------------------------- memory
def _block(n=8, c=32, co=64, h=56, w=56):
    """Forward+backward graph; returns (graph, feeds {tensor: array}, targets, how)."""
    import minigraph as mg
    from minigraph.descriptors import Convolution2DOpDescriptor, DepthwiseConvolution2DOpDescriptor as D

    rng = np.random.default_rng(0)
    g = mg.Graph()
    f32 = mg.float32
    x = g.placeholder((n, c, h, w), f32, name="x")
    w1 = g.placeholder((1, c, 3, 3), f32, name="w1")
    w2 = g.placeholder((co, c, 1, 1), f32, name="w2")
    w3 = g.placeholder((1, co, 3, 3), f32, name="w3")
    d1 = D(padding_left=1, padding_right=1, padding_top=1, padding_bottom=1)
    d3 = D(stride_in_x=2, stride_in_y=2, padding_left=1, padding_right=1, padding_top=1, padding_bottom=1)
    feeds = {x: rng.standard_normal((n, c, h, w), dtype=np.float32),
             w1: rng.standard_normal((1, c, 3, 3), dtype=np.float32) * 0.3,
             w2: rng.standard_normal((co, c, 1, 1), dtype=np.float32) * 0.2,
             w3: rng.standard_normal((1, co, 3, 3), dtype=np.float32) * 0.3}
    if hasattr(mg.Graph, "gradients"):
        y1 = g.relu(g.depthwise_convolution_2d(x, w1, descriptor=d1, name="dw1"))
        y2 = g.relu(g.convolution_2d(y1, w2, descriptor=Convolution2DOpDescriptor(), name="pw"))
        y3 = g.relu(g.depthwise_convolution_2d(y2, w3, descriptor=d3, name="dw2"))
        loss = g.mean(g.square(y3), name="loss")
        grads = g.gradients(loss, [w1, w2, w3])
        return g, feeds, [loss] + [grads[t] for t in (w1, w2, w3)], "g.gradients"
    # hand-built backward (a build without autodiff): loss = mean(y^2), y = dw(x, w1)
    y = g.depthwise_convolution_2d(x, w1, descriptor=d1, name="dw1")
    loss = g.mean(g.square(y), name="loss")
    dy = g.multiplication(y, 2.0 / float(np.prod(y.shape)))
    dw = g.depthwise_convolution_2d_weights_gradient(dy, x, output_shape=w1.shape, descriptor=d1)
    dx = g.depthwise_convolution_2d_data_gradient(dy, w1, output_shape=x.shape, descriptor=d1)
    del feeds[w2], feeds[w3]
    return g, feeds, [loss, dw, dx], "explicit gradient ops"


def plan_live_set(plan) -> dict:
    """Largest sum of bytes of simultaneously live slots, walking the plan's buffer lifetimes.

    ``produced``: only what the run itself allocates (not feeds, constants, variables);
    ``all``: everything live, feeds included.
    """
    external = {"placeholder", "constant", "variable"}
    live, ext = {}, {}
    peak = peak_all = 0
    peak_step = None
    for i, st in enumerate(plan.steps):
        for s, ty in zip(st.outputs, st.out_types):
            nbytes = int(np.prod(ty.shape, dtype=np.int64)) * ty.dtype.np_dtype.itemsize
            (ext if st.op.type in external else live)[s] = nbytes
        cur = sum(live.values())
        if cur > peak:
            peak, peak_step = cur, i
        peak_all = max(peak_all, cur + sum(ext.values()))
        for f in st.free:
            live.pop(f, None)
            ext.pop(f, None)
    op = plan.steps[peak_step].op if peak_step is not None else None
    return {"produced_bytes": peak, "all_bytes": peak_all,
            "at_step": peak_step, "at_op": f"{op.type} {op.name!r}" if op is not None else None}


def memory(shape=(8, 32, 64, 56, 56), runs: int = 3, log=print) -> dict:
    import minigraph as mg

    n, c, co, h, w = shape
    g, feeds, targets, how = _block(n, c, co, h, w)
    exe = g.compile({t: mg.ShapedType(v.shape, mg.float32) for t, v in feeds.items()}, targets)
    values = [feeds[t] for t in exe.feed_tensors]
    live = plan_live_set(exe.plan)
    peaks = []
    tracemalloc.start()
    try:
        for _ in range(runs):
            gc.collect()
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            out = exe.run(values)
            peaks.append(tracemalloc.get_traced_memory()[1] - base)
            del out
    finally:
        tracemalloc.stop()
    res_bytes = sum(int(np.prod(t.shape)) * 4 for t in targets)
    r = {"graph": f"depthwise-separable block, x [{n}, {c}, {h}, {w}], {co} pointwise channels; backward by {how}",
         "steps": len(exe.plan.steps), "plan_live_set": live, "results_bytes": res_bytes,
         "traced_peak_bytes_first_run": peaks[0], "traced_peak_bytes_steady": min(peaks),
         "ratio_steady_to_live_set": min(peaks) / live["produced_bytes"] if live["produced_bytes"] else None}
    log(f"memory: plan live set {live['produced_bytes'] / 2**20:.1f} MiB (at {live['at_op']}), "
        f"traced peak {peaks[0] / 2**20:.1f} MiB first run, {min(peaks) / 2**20:.1f} MiB steady "
        f"({r['ratio_steady_to_live_set']:.2f}x)")
    return r


def run(sizes=(1000, 10000, 100000), tiny: bool = False, log=print) -> dict:
    if tiny:
        sizes = (100, 1000)
    rows = compile_times(sizes, log=log)
    mem = memory((2, 4, 8, 12, 12), runs=2, log=log) if tiny else memory(log=log)
    lin = {}
    for kind in ("chain", "dag"):
        rs = [r for r in rows if r["kind"] == kind]
        if len(rs) >= 2:  # per-node cost at the largest size over the smallest: 1 means linear
            lin[kind] = rs[-1]["compile_us_per_node"] / rs[0]["compile_us_per_node"]
            lin[kind + " (gc paused)"] = rs[-1]["compile_nogc_us_per_node"] / rs[0]["compile_nogc_us_per_node"]
    return {"benchmark": "compile_time", "machine": machine_info(), "config": {"sizes": list(sizes), "tiny": tiny},
            "compile": rows, "per_node_growth": lin, "memory": mem}


def report(res: dict) -> str:
    rows = [[r["kind"], r["nodes"], r["build_s"], r["build_us_per_node"], r["compile_s"], r["compile_us_per_node"],
             r["compile_nogc_us_per_node"], r["first_run_s"] * 1e3] for r in res["compile"]]
    lines = ["### compile time (float32[8] elementwise ops; compile = best of 3)",
             format_table(["graph", "nodes", "build s", "build µs/node", "compile s", "compile µs/node",
                           "µs/node, gc paused", "first run ms"], rows),
             "per-node compile time, largest / smallest size: "
             + ", ".join(f"{k} {v:.2f}x" for k, v in res["per_node_growth"].items()) + " (1.0 = linear)", ""]
    m = res["memory"]
    live = m["plan_live_set"]
    lines += ["### peak memory of a forward+backward run", m["graph"],
              format_table(["measure", "MiB"], [
                  ["plan: largest live set (allocated by the run)", live["produced_bytes"] / 2**20],
                  ["plan: largest live set incl. feeds", live["all_bytes"] / 2**20],
                  ["tracemalloc peak, first run", m["traced_peak_bytes_first_run"] / 2**20],
                  ["tracemalloc peak, steady state", m["traced_peak_bytes_steady"] / 2**20]]),
              f"largest live set at step {live['at_step']} ({live['at_op']}); steady peak / live set = "
              f"{m['ratio_steady_to_live_set']:.2f}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minigraph bench compile", description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--json", default=None)
    ap.add_argument("--tiny", action="store_true")
    a = ap.parse_args(argv)
    res = run(tuple(int(s) for s in a.sizes.split(",")), tiny=a.tiny)
    print()
    print(report(res))
    if a.json:
        write_json(a.json, res)
        print(f"\nwrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
