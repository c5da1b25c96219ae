"""Draw the figure of docs/resize.md (matplotlib, Agg backend).

Run from anywhere: ``python3 docs/figures/make_resize_figures.py``; the PNG is written next to this
script. The pictures are computed by minigraph's own ``g.resize`` and the sample positions by
``minigraph.ops.resize.coefficients``, so they show what the op really does.
"""
from __future__ import annotations

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..")))

import minigraph as mg  # noqa: E402
from minigraph.ops.resize import coefficients  # noqa: E402

SETTINGS = [(False, False, "center_result=False\nalign_corners=False\nsrc = o·n/m"),
            (True, False, "center_result=True\nalign_corners=False\nsrc = (o+½)·n/m − ½"),
            (False, True, "align_corners=True\n(center_result ignored)\nsrc = o·(n−1)/(m−1)")]
IMAGE = np.array([[0, 1, 2, 3], [1, 3, 5, 7], [2, 5, 8, 11], [3, 7, 11, 15]], np.float32)


def _resize(mode, center_result, align_corners):
    g = mg.Graph()
    y = g.resize(g.constant(IMAGE), [7, 7], mode, center_result, align_corners, mg.TensorNamedDataLayout.HW)
    return g.run({}, [y])[y]


def _show(ax, img, title):
    ax.imshow(img, cmap="viridis", vmin=0, vmax=15)
    for (i, j), v in np.ndenumerate(img):
        ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=6 if img.shape[0] > 4 else 9,
                color="white" if v < 8 else "black")
    ax.set_title(title, fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])


def _sample_positions(ax, center_result, align_corners):
    """The 4 input pixels along one axis and where each of the 7 results samples them."""
    a, b, den = coefficients(4, 7, center_result, align_corners)
    for p in range(4):
        ax.add_patch(plt.Rectangle((p - 0.5, -0.3), 1, 0.6, facecolor="white", edgecolor="black"))
        ax.text(p, -0.12, f"x{p}", ha="center", va="center", fontsize=8)
        ax.plot([p, p], [0.1, 0.45], color="grey", linewidth=0.8)  # the pixel's centre
    for o in range(7):
        src = (a * o + b) / den
        ax.plot([src], [0.55], "o", color=plt.get_cmap("tab10")(o % 10), markersize=5)
        ax.text(src, 0.8, str(o), ha="center", fontsize=6)
    ax.set_xlim(-1.0, 3.8)
    ax.set_ylim(-0.5, 1.1)
    ax.axis("off")


def resize_modes(path):
    """Rows: NEAREST, BILINEAR, where each result samples; columns: the three coordinate transforms."""
    fig, axes = plt.subplots(3, 4, figsize=(10, 7.6), gridspec_kw={"height_ratios": [3, 3, 1]})
    _show(axes[0, 0], IMAGE, "input 4×4")
    axes[1, 0].axis("off")
    axes[2, 0].axis("off")
    axes[1, 0].text(0.0, 0.5, "each result o reads the\nsource coordinate src;\nNEAREST rounds it half up\n"
                    "(RoundPreferCeil), BILINEAR\nmixes floor(src) and the next", fontsize=9, va="center")
    axes[2, 0].text(0.0, 0.5, "sample positions\nalong one axis (n=4, m=7)", fontsize=9, va="center")
    for col, (cr, ac, label) in enumerate(SETTINGS, start=1):
        _show(axes[0, col], _resize(mg.ResizeMode.NEAREST, cr, ac), "NEAREST\n" + label)
        _show(axes[1, col], _resize(mg.ResizeMode.BILINEAR, cr, ac), "BILINEAR")
        _sample_positions(axes[2, col], cr, ac)
    fig.suptitle("g.resize of a 4×4 image to 7×7", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    resize_modes(os.path.join(HERE, "resize_modes.png"))


if __name__ == "__main__":
    main()
