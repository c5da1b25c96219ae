"""Draw the figure of docs/random.md (matplotlib, Agg backend).

Run from anywhere: ``python3 docs/figures/make_random_figures.py``; the PNG is written next to
this script. The samples are drawn by minigraph's own random ops, so the picture shows what
they really produce.
"""
from __future__ import annotations

import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..")))

import minigraph as mg  # noqa: E402

RD = mg.RandomDistribution


def _pdf(x, mean=0.0, sd=1.0):
    return np.exp(-0.5 * ((x - mean) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))


def distributions(path):
    """Histograms of 200,000 draws of each distribution against its density, and three runs of
    one dropout on an 8 x 24 tensor of ones (a fresh mask each run)."""
    g = mg.Graph(seed=2024)
    n = 200_000
    uni = g.random_uniform_tensor([n])
    nor = g.random_tensor([n], mg.RandomOpDescriptor(RD.NORMAL, mg.float32))
    tru = g.random_tensor([n], mg.RandomOpDescriptor(RD.TRUNCATED_NORMAL, mg.float32))
    drop = g.dropout(g.constant(np.ones((8, 24), np.float32)), 0.3)
    exe = g.compile({}, [uni, nor, tru, drop])
    u, z, t, d0 = exe.run()
    masks = [d0] + [exe.run()[3] for _ in range(2)]

    fig = plt.figure(figsize=(12, 6.2))
    grid = fig.add_gridspec(2, 3, height_ratios=[1.25, 1])
    x = np.linspace(-4, 4, 400)
    phi2 = math.erf(2 / math.sqrt(2))
    panels = [("UNIFORM [0, 1)", u, np.linspace(0, 1, 50), lambda v: np.ones_like(v), (-0.1, 1.1)),
              ("NORMAL (mean 0, sd 1)", z, np.linspace(-4, 4, 81), _pdf, (-4, 4)),
              ("TRUNCATED_NORMAL [-2, 2)", t, np.linspace(-2, 2, 41),
               lambda v: np.where(np.abs(v) < 2, _pdf(v) / phi2, 0.0), (-4, 4))]
    for i, (title, data, bins, pdf, xlim) in enumerate(panels):
        ax = fig.add_subplot(grid[0, i])
        ax.hist(data, bins=bins, density=True, color="#9ecae1", edgecolor="#3182bd", linewidth=0.4)
        xs = np.linspace(0, 1, 100) if i == 0 else x
        ax.plot(xs, pdf(xs), color="#d62728", linewidth=1.4)
        ax.set_title(title, fontsize=10)
        ax.set_xlim(*xlim)
        ax.set_yticks([])
    for i, m in enumerate(masks):
        ax = fig.add_subplot(grid[1, i])
        ax.imshow(m, cmap="Greys_r", vmin=0, vmax=1 / 0.7)
        ax.set_title(f"dropout(ones, 0.3), run {i + 1}: {int((m == 0).sum())} of {m.size} dropped, "
                     f"kept = {1 / 0.7:.4f}", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("minigraph's random ops (Philox 4x32-10, mg.Graph(seed=2024)); red: the density", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    distributions(os.path.join(HERE, "random_distributions.png"))
    print("wrote", os.path.join(HERE, "random_distributions.png"))
