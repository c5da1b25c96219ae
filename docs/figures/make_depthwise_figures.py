"""Draw the figures of docs/depthwise.md (matplotlib, Agg backend).

Run from anywhere: ``python3 docs/figures/make_depthwise_figures.py``; the PNGs are written next
to this script. The geometry is computed by minigraph itself (``ConvGeometry.for_depthwise_2d``), so the
pictures show what the ops really do.
"""
from __future__ import annotations

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..")))

import minigraph as mg  # noqa: E402
from minigraph.ops.geometry import ConvGeometry  # noqa: E402

PAD = "#d9d9d9"
COLORS = plt.get_cmap("tab10").colors


def _geo(style, H, k, s, d=1, before=0, after=0):
    desc = mg.DepthwiseConvolution2DOpDescriptor(
        stride_in_x=s, stride_in_y=s, dilation_rate_in_x=d, dilation_rate_in_y=d,
        padding_top=before, padding_bottom=after, padding_left=before, padding_right=after,
        padding_style=mg.PaddingStyle[style])
    return ConvGeometry.for_depthwise_2d(desc, (1, 1, H, H), (1, 1, k, k))


def padding_styles(path):
    """One row per style: input cells, padding cells, and the window of every output."""
    H, k, s = 6, 3, 2
    rows = [("EXPLICIT", 1, 1), ("TF_VALID", 0, 0), ("TF_SAME", 0, 0), ("ONNX_SAME_LOWER", 0, 0)]
    fig, axes = plt.subplots(len(rows), 1, figsize=(8, 7.2))
    for ax, (style, b, a) in zip(axes, rows):
        geo = _geo(style, H, k, s, 1, b, a)
        pt, pb, out = geo.padding_before[0], geo.padding_after[0], geo.output_size[0]
        lo, hi = -2, H + 2
        for p in range(lo, hi):
            inside = 0 <= p < H
            padded = -pt <= p < H + pb
            face = "white" if inside else (PAD if padded else "none")
            edge = "black" if (inside or padded) else "#eeeeee"
            ax.add_patch(Rectangle((p, 0), 1, 1, facecolor=face, edgecolor=edge, hatch=None if inside else
                                   ("//" if padded else None)))
            if inside:
                ax.text(p + 0.5, 0.5, f"x{p}", ha="center", va="center", fontsize=9)
        for o in range(out):
            start = o * s - pt
            y = 1.25 + 0.45 * o
            ax.add_patch(Rectangle((start + 0.08, y), k - 0.16, 0.32, color=COLORS[o], alpha=0.8))
            ax.text(start + k + 0.1, y + 0.16, f"y{o}", va="center", fontsize=9, color=COLORS[o])
        given = f" (given {b}, {a})" if style == "EXPLICIT" else ""
        ax.set_title(f"{style}{given}: padding before {pt}, after {pb}  ->  {out} outputs", fontsize=10,
                     loc="left")
        ax.set_xlim(lo - 0.2, hi + 1.5)
        ax.set_ylim(-0.2, 1.4 + 0.45 * 4)
        ax.set_aspect("equal")
        ax.axis("off")
    fig.suptitle("H = 6, kernel 3, stride 2: which inputs each output window covers\n"
                 "(white: input; hatched grey: zero padding)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def channel_multiplier(path):
    """Input channel c and filter (m, c) make output channel o = c*M + m."""
    C, M = 2, 3
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for c in range(C):
        yc = 2.2 - c * 1.6
        ax.add_patch(Rectangle((0, yc), 1.2, 0.8, facecolor=COLORS[c], alpha=0.35, edgecolor="black"))
        ax.text(0.6, yc + 0.4, f"x channel\nc = {c}", ha="center", va="center", fontsize=9)
        for m in range(M):
            o = c * M + m
            yo = 3.0 - o * 0.62
            ax.add_patch(Rectangle((3.2, yo - 0.22), 1.9, 0.44, facecolor="white", edgecolor=COLORS[c]))
            ax.text(4.15, yo, f"W[m={m}, c={c}]", ha="center", va="center", fontsize=8.5)
            ax.add_patch(Rectangle((6.6, yo - 0.22), 1.5, 0.44, facecolor=COLORS[c], alpha=0.35, edgecolor="black"))
            ax.text(7.35, yo, f"y channel {o}", ha="center", va="center", fontsize=8.5)
            ax.add_patch(FancyArrowPatch((1.2, yc + 0.4), (3.2, yo), arrowstyle="-|>", mutation_scale=9,
                                         color=COLORS[c], lw=0.9))
            ax.add_patch(FancyArrowPatch((5.1, yo), (6.6, yo), arrowstyle="-|>", mutation_scale=9,
                                         color="black", lw=0.9))
    ax.text(4.15, 3.55, "OIHW weights [M, C, kH, kW] = [3, 2, kH, kW]", ha="center", fontsize=9)
    ax.text(7.35, 3.55, "o = c*M + m", ha="center", fontsize=9)
    ax.set_xlim(-0.2, 8.4)
    ax.set_ylim(-0.4, 3.8)
    ax.axis("off")
    fig.suptitle("Channel multiplier M = 3 with C = 2 input channels: 6 output channels", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def weights_gradient(path):
    """For one weight tap (i, j): each dy position meets exactly one input position (or padding)."""
    H, k, s = 5, 3, 2
    geo = _geo("TF_SAME", H, k, s)
    p = geo.padding_before[0]  # 1 on both sides here
    taps = [(0, 0), (1, 2)]
    fig, axes = plt.subplots(1, 3, figsize=(11, 4.8), gridspec_kw={"width_ratios": [0.75, 1, 1]})
    ax = axes[0]
    for oh in range(geo.output_size[0]):
        for ow in range(geo.output_size[1]):
            col = COLORS[(oh * geo.output_size[1] + ow) % 10]
            ax.add_patch(Rectangle((ow, geo.output_size[0] - 1 - oh), 1, 1, facecolor=col, alpha=0.55, edgecolor="black"))
            ax.text(ow + 0.5, geo.output_size[0] - 0.5 - oh, f"dy\n{oh},{ow}", ha="center", va="center", fontsize=8)
    ax.set_title(f"incoming gradient dy ({geo.output_size[0]}x{geo.output_size[1]})", fontsize=10)
    ax.set_xlim(-0.2, geo.output_size[1] + 0.2)
    ax.set_ylim(-0.2, geo.output_size[0] + 0.2)
    ax.set_aspect("equal")
    ax.axis("off")
    for ax, (i, j) in zip(axes[1:], taps):
        n = H + 2 * p
        for r in range(-p, H + p):
            for c in range(-p, H + p):
                inside = 0 <= r < H and 0 <= c < H
                ax.add_patch(Rectangle((c + p, n - 1 - (r + p)), 1, 1, facecolor="white" if inside else PAD,
                                       edgecolor="black", hatch=None if inside else "//", lw=0.6))
                if inside:
                    ax.text(c + p + 0.5, n - 0.5 - (r + p), f"{r},{c}", ha="center", va="center", fontsize=7,
                            color="#555555")
        for oh in range(geo.output_size[0]):
            for ow in range(geo.output_size[1]):
                r, c = oh * s + i - p, ow * s + j - p
                col = COLORS[(oh * geo.output_size[1] + ow) % 10]
                inside = 0 <= r < H and 0 <= c < H
                ax.add_patch(Rectangle((c + p + 0.1, n - 1 - (r + p) + 0.1), 0.8, 0.8, facecolor=col,
                                       alpha=0.6 if inside else 0.25, edgecolor=col))
                if not inside:
                    ax.text(c + p + 0.5, n - 0.5 - (r + p), "0", ha="center", va="center", fontsize=9)
        ax.set_title(f"tap (i, j) = ({i}, {j}): x[2*oh + {i} - 1, 2*ow + {j} - 1]", fontsize=10)
        ax.set_xlim(-0.2, n + 0.2)
        ax.set_ylim(-0.2, n + 0.2)
        ax.set_aspect("equal")
        ax.axis("off")
    fig.suptitle("Weights gradient, TF_SAME, 5x5 input, 3x3 kernel, stride 2 (padding 1, 1)\n"
                 "dW[m, c, i, j] = sum over (n, oh, ow) of dy[n, c*M+m, oh, ow] * (the same-coloured x); "
                 "grey hatched = zero padding: that dy cell adds nothing for the tap", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    padding_styles(os.path.join(HERE, "depthwise_padding_styles.png"))
    channel_multiplier(os.path.join(HERE, "depthwise_channel_multiplier.png"))
    weights_gradient(os.path.join(HERE, "depthwise_weights_gradient.png"))


if __name__ == "__main__":
    main()
