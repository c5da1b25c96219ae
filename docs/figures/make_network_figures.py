"""Draw the whole-network figure of docs/performance.md (matplotlib, Agg backend).

Run from anywhere: ``python3 docs/figures/make_network_figures.py``; it reads the benchmark
results in ``benchmarks/results/`` (the training-step JSON and the two profile tables) and writes
``network_step.png`` next to this script.
"""
from __future__ import annotations

import json
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "..", "..", "benchmarks", "results")


def _scaling():
    with open(os.path.join(RESULTS, "network_cpu_sixblock_16core.json")) as f:
        rows = json.load(f)["results"]
    threads = [r["threads"] for r in rows]
    return threads, {p: [r["peers"][p]["median_ms"] for r in rows] for p in rows[0]["peers"]}


def _by_type(name: str) -> dict:
    """Milliseconds per op type from a profile table (its ``type ops time ...`` section)."""
    out, started = {}, False
    with open(os.path.join(RESULTS, name)) as f:
        for line in f:
            if line.startswith("type "):
                started = True
                continue
            m = re.match(r"^(\w+)\s+(\d+)\s+([\d.]+)\s", line)
            if started and m:
                out[m.group(1)] = float(m.group(3))
            elif started and line.strip() and not m:
                started = False
    return out


def draw(path: str) -> None:
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(15, 4.2))
    threads, series = _scaling()
    for peer, ms in series.items():
        a.plot(threads, ms, marker="o", label=peer)
    a.set_xscale("log", base=2)
    a.set_yscale("log")
    a.set_xticks(threads, [str(t) for t in threads])
    a.set_xlabel("threads")
    a.set_ylabel("ms per training step")
    a.set_title("six blocks, N=32, 56x56: CPU thread scaling")
    a.legend()
    for ax, name, title in ((b, "profile_sixblock_16core.txt", "numpy backend, 16 threads"),
                            (c, "profile_sixblock_h200.txt", "webgpu, H200 (GPU timestamps)")):
        per = sorted(_by_type(name).items(), key=lambda kv: kv[1])[-8:]
        ax.barh([k for k, _ in per], [v for _, v in per], color="tab:blue")
        ax.set_xlabel("ms per step, summed per op type")
        ax.set_title(f"per op type: {title}", fontsize=10)
        ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    draw(os.path.join(HERE, "network_step.png"))
    print("wrote", os.path.join(HERE, "network_step.png"))
