"""Figures for docs/performance.md from the benchmarks' JSON files (matplotlib, no display).

``python benchmarks/plot.py --depthwise dw.json [--gpu gpu.json] [--out docs/figures]`` writes
``depthwise_cpu.png`` (per-layer time of each peer, log scale, and minigraph's ratio to
PyTorch) and, given a GPU file with the same row format, ``depthwise_gpu.png``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "benchmarks"

from .timing import geomean  # noqa: E402

COLORS = {"minigraph": "#1f77b4", "torch": "#d62728", "jax": "#2ca02c", "mlx": "#9467bd", "webgpu": "#1f77b4",
          "torch_cuda": "#d62728", "copy": "#7f7f7f"}


def from_gpu(res: dict) -> dict:
    """benchmarks/gpu_depthwise.py's JSON (``layers`` with ``ms_ours``/``ms_torch``) in the row
    format used here (peers ``webgpu`` and ``torch_cuda``)."""
    rows = []
    for r in res["layers"]:
        peers = {"webgpu": {"median_ms": r["ms_ours"]}}
        if r.get("ms_torch") is not None:
            peers["torch_cuda"] = {"median_ms": r["ms_torch"]}
        rows.append({"op": "wgrad", "net": "mobilenet_v2", "n": r.get("n", res.get("n")), "layer": r["layer"],
                     "peers": peers})
    return {"results": rows}


def _rows(res: dict, op: str, net: str):
    return [r for r in res["results"] if r.get("op", "wgrad") == op and r.get("net", net) == net]


def plot_depthwise(res: dict, path: str, op: str = "wgrad", net: str = None, title: str = None,
                   baseline: str = "torch", ours: str = "minigraph") -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    net = net or res["results"][0].get("net", "")
    rows = _rows(res, op, net)
    if not rows:
        raise ValueError(f"no rows for op {op!r} and net {net!r} in the results")
    peers = [p for p in COLORS if any(p in r["peers"] for r in rows)]
    labels = [f"{r['layer'][0]}·{r['layer'][1]}²\nk{r['layer'][3]} s{r['layer'][4]}" for r in rows]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(max(8, 0.62 * len(rows) + 2), 7.5), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1.4]})
    width = 0.8 / max(1, len(peers))
    for i, p in enumerate(peers):
        xs = [j + (i - (len(peers) - 1) / 2) * width for j in range(len(rows))]
        ys = [r["peers"][p]["median_ms"] if p in r["peers"] else float("nan") for r in rows]
        ax.bar(xs, ys, width, label=p, color=COLORS[p])
    ax.set_yscale("log")
    ax.set_ylabel("ms per call (median, log scale)")
    ax.legend(ncol=len(peers), fontsize=9)
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.set_title(title or f"depthwise {op}: {net}, N={rows[0].get('n', '?')}, float32")
    ratios = [r["peers"][ours]["median_ms"] / r["peers"][baseline]["median_ms"]
              if ours in r["peers"] and baseline in r["peers"] else float("nan") for r in rows]
    ax2.bar(range(len(rows)), ratios, 0.6, color=[("#2ca02c" if x <= 1 else "#ff7f0e") for x in ratios])
    ax2.axhline(1.0, color="k", lw=0.8)
    gm = geomean(ratios)
    if math.isfinite(gm):
        ax2.axhline(gm, color="#1f77b4", ls="--", lw=1.2, label=f"geomean {gm:.2f}")
        ax2.legend(fontsize=9)
    ax2.set_ylabel(f"{ours} / {baseline}\n(time; < 1 is faster)")
    ax2.set_xticks(range(len(rows)))
    ax2.set_xticklabels(labels, fontsize=7)
    ax2.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/plot.py", description=__doc__.split("\n")[0])
    ap.add_argument("--depthwise", help="JSON from benchmarks/depthwise_cpu.py")
    ap.add_argument("--gpu", help="JSON from benchmarks/gpu_depthwise.py (same row format)")
    ap.add_argument("--op", default="wgrad")
    ap.add_argument("--out", default=os.path.join("docs", "figures"))
    a = ap.parse_args(argv)
    if not a.depthwise and not a.gpu:
        ap.error("give --depthwise and/or --gpu")
    if a.depthwise:
        with open(a.depthwise) as f:
            res = json.load(f)
        print(plot_depthwise(res, os.path.join(a.out, "depthwise_cpu.png"), op=a.op))
    if a.gpu:
        with open(a.gpu) as f:
            res = json.load(f)
        if "layers" in res:
            res = from_gpu(res)
        print(plot_depthwise(res, os.path.join(a.out, "depthwise_gpu.png"), op=a.op, baseline="torch_cuda",
                             ours="webgpu", title="depthwise weights gradient on the GPU"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
