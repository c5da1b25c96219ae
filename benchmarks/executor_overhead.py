"""Executor overhead: a chain of 1,000 elementwise ops on tiny tensors, µs per node.

Contenders, doing exactly the same ops (addition, multiplication, subtraction, maximum with a
constant, in turn) on a float32 vector of 8 elements:

* ``minigraph``: a compiled Executable on the NumPy backend, ``exe.run([x])``;
* ``numpy``: the same ufunc calls in a plain Python loop (the floor: the ops themselves);
* ``torch``: PyTorch eager, ``torch.add`` & co. in a Python loop.

overhead per node = (minigraph - numpy) / nodes. The breakdown splits it into the per-run cost
of ``Executable.run`` (feed checks, result copies: measured on a 1-node graph) and the per-step
cost of the backend loop (one closure call and a slot store per step); ``--profile`` adds a
cProfile listing of one run.

Run: ``python -m minigraph bench executor [--nodes 1000] [--size 8] [--json out.json] [--tiny]``.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "benchmarks"

from .timing import format_table, machine_info, stats, time_interleaved, write_json  # noqa: E402

_CYCLE = ("addition", "multiplication", "subtraction", "maximum")
_NP = {"addition": np.add, "multiplication": np.multiply, "subtraction": np.subtract, "maximum": np.maximum}


def build_chain(nodes: int, size: int):
    """(graph, placeholder, output, constant array): ``nodes`` elementwise ops in a chain."""
    import minigraph as mg

    g = mg.Graph()
    x = g.placeholder((size,), mg.float32, name="x")
    cv = np.full((size,), 1.0001, np.float32)
    c = g.constant(cv, name="c")
    t = x
    for i in range(nodes):
        t = getattr(g, _CYCLE[i % 4])(t, c)
    return g, x, t, cv


def _raw_numpy(nodes: int, cv: np.ndarray):
    fns = [_NP[_CYCLE[i % 4]] for i in range(nodes)]

    def run(x):
        a = x
        for f in fns:
            a = f(a, cv)
        return a
    return run


def _torch(nodes: int, cv: np.ndarray):
    import torch

    torch.set_num_threads(1)  # tiny tensors: threads only add overhead
    tf = {"addition": torch.add, "multiplication": torch.mul, "subtraction": torch.sub,
          "maximum": torch.maximum}
    fns = [tf[_CYCLE[i % 4]] for i in range(nodes)]
    c = torch.from_numpy(cv)

    def run(x):
        a = x
        with torch.no_grad():
            for f in fns:
                a = f(a, c)
        return a
    return run


def run(nodes: int = 1000, size: int = 8, repeats: int = 30, warmup: int = 3, profile: bool = False,
        tiny: bool = False, log=print) -> dict:
    import minigraph as mg

    if tiny:
        nodes, repeats, warmup = 50, 3, 1
    g, x, out, cv = build_chain(nodes, size)
    exe = g.compile({x: mg.ShapedType((size,), mg.float32)}, [out])
    xv = np.linspace(-1, 1, size, dtype=np.float32)
    raw = _raw_numpy(nodes, cv)
    np.testing.assert_allclose(exe.run([xv])[0], raw(xv), rtol=1e-5)  # the same work, really

    # a 1-node graph: what one run costs besides its steps
    g1, x1, out1, _ = build_chain(1, size)
    exe1 = g1.compile({x1: mg.ShapedType((size,), mg.float32)}, [out1])
    raw1 = _raw_numpy(1, cv)

    fns = {"minigraph": lambda: exe.run([xv]), "numpy": lambda: raw(xv),
           "minigraph_1node": lambda: exe1.run([xv]), "numpy_1node": lambda: raw1(xv)}
    runner = getattr(exe, "_runner", None)
    plan = getattr(exe, "plan", None)
    if runner is not None and plan is not None:  # the backend loop alone (no Executable.run checks)
        fns["backend_loop"] = lambda: runner([xv], {})
    skipped = {}
    try:
        import torch

        tx = torch.from_numpy(xv)
        trun = _torch(nodes, cv)
        np.testing.assert_allclose(trun(tx).numpy(), raw(xv), rtol=1e-5)
        fns["torch"] = lambda: trun(tx)
    except ImportError as e:
        skipped["torch"] = f"not importable ({e})"
    times = time_interleaved(fns, repeats=repeats, warmup=warmup)
    st = {k: stats(v) for k, v in times.items()}
    per_node = {k: st[k]["median_ms"] * 1e3 / nodes for k in ("minigraph", "numpy", "torch", "backend_loop") if k in st}
    per_node_min = {k: st[k]["min_ms"] * 1e3 / nodes for k in per_node}
    run_fixed_us = (st["minigraph_1node"]["median_ms"] - st["numpy_1node"]["median_ms"]) * 1e3
    overhead = per_node["minigraph"] - per_node["numpy"]
    res = {"benchmark": "executor_overhead", "machine": machine_info(),
           "config": {"nodes": nodes, "size": size, "dtype": "float32", "repeats": repeats, "tiny": tiny,
                      "ops": list(_CYCLE)},
           "skipped": skipped, "timings": st,
           "us_per_node": per_node, "us_per_node_min": per_node_min,
           "overhead_us_per_node": overhead,
           "overhead_us_per_node_min": per_node_min["minigraph"] - per_node_min["numpy"],
           "run_fixed_us": run_fixed_us,
           "target_us_per_node": 1.5, "goal_us_per_node": 1.0}
    if "backend_loop" in per_node:
        res["breakdown_us_per_node"] = {
            "ops themselves (numpy)": per_node["numpy"],
            "backend loop (closure call, slot store, frees)": per_node["backend_loop"] - per_node["numpy"],
            "Executable.run (feed checks, result copy), amortised": per_node["minigraph"] - per_node["backend_loop"],
        }
    if profile:
        res["profile"] = _profile(exe, xv)
    return res


def _profile(exe, xv, top: int = 12) -> str:
    import cProfile
    import io
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    for _ in range(20):
        exe.run([xv])
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    return s.getvalue()


def report(res: dict) -> str:
    n = res["config"]["nodes"]
    rows = []
    for k in ("numpy", "minigraph", "backend_loop", "torch"):
        if k in res["us_per_node"]:
            rows.append([k, res["timings"][k]["median_ms"], res["us_per_node"][k], res["us_per_node_min"][k]])
    lines = [f"### executor overhead: chain of {n} elementwise ops on float32[{res['config']['size']}]",
             format_table(["contender", "ms per run", "µs/node (median)", "µs/node (min)"], rows), "",
             f"overhead = minigraph - numpy = {res['overhead_us_per_node']:.3f} µs/node (median), "
             f"{res['overhead_us_per_node_min']:.3f} (min); target <= {res['target_us_per_node']}, "
             f"goal <= {res['goal_us_per_node']}",
             f"fixed cost of one Executable.run (1-node graph minus one ufunc call): {res['run_fixed_us']:.1f} µs"]
    if "breakdown_us_per_node" in res:
        lines.append("breakdown (µs/node): " + "; ".join(f"{k}: {v:.3f}" for k, v in res["breakdown_us_per_node"].items()))
    for k, why in res["skipped"].items():
        lines.append(f"skipped {k}: {why}")
    if "profile" in res:
        lines += ["", "cProfile of 20 runs (tottime):", res["profile"]]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minigraph bench executor", description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--size", type=int, default=8, help="elements per tensor")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--profile", action="store_true", help="append a cProfile listing")
    ap.add_argument("--json", default=None)
    ap.add_argument("--tiny", action="store_true")
    a = ap.parse_args(argv)
    res = run(a.nodes, a.size, a.repeats, profile=a.profile, tiny=a.tiny)
    print(report(res))
    if a.json:
        write_json(a.json, res)
        print(f"\nwrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
