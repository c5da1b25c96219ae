"""Draw the figure of docs/shape.md (matplotlib, Agg backend).

Run from anywhere: ``python3 docs/figures/make_shape_figures.py``; the PNG is written next to
this script. The padded images are computed by minigraph's ``pad_tensor`` itself, so the picture
shows what the op really does.
"""
from __future__ import annotations

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..")))

import minigraph as mg  # noqa: E402

P = 2  # padding on every side


def padding_modes(path):
    """The 3 x 4 image 1..12 padded by 2 on every side in each MPSGraphPaddingMode; the source's
    box is outlined, and each cell shows its value."""
    img = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    g = mg.Graph()
    x = g.placeholder(img.shape, name="image")
    outs = [g.pad_tensor(x, m, [P, P], [P, P], constant_value=0.5) for m in mg.PaddingMode]
    res = g.run({x: img}, outs, backend="numpy")
    panels = [("source", img)] + [(m.name, res[o]) for m, o in zip(mg.PaddingMode, outs)]
    fig, axes = plt.subplots(2, 4, figsize=(13, 6.8))
    for ax, (title, a) in zip(axes.ravel(), panels):
        ax.imshow(a, cmap="coolwarm", vmin=-12, vmax=12)
        for (r, c), v in np.ndenumerate(a):
            ax.text(c, r, f"{v:g}", ha="center", va="center", fontsize=7.5)
        if title != "source":
            ax.add_patch(Rectangle((P - 0.5, P - 0.5), img.shape[1], img.shape[0], fill=False, lw=2.2, ec="black"))
        ax.set_title(title if title != "CONSTANT" else "CONSTANT (value 0.5)", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("pad_tensor(image, mode, [2, 2], [2, 2]): the outlined box is the source", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    padding_modes(os.path.join(HERE, "shape_padding_modes.png"))
