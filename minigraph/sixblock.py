"""The six-block network: six depthwise-separable blocks (depthwise 3x3 -> ReLU -> pointwise
1x1 -> ReLU), channels 32 -> 64 -> 128 -> 128 -> 256 -> 256 -> 512 with stride 2 in blocks 2, 4
and 6, global average pooling, a linear layer and softmax cross-entropy, trained by SGD.

``python -m minigraph profile`` profiles one training step of it, and the ``network`` benchmark
(benchmarks/network_step.py) runs the same step against PyTorch and JAX. No MPSGraph
counterpart: MPSGraph has ops, not networks.
"""
from __future__ import annotations

import numpy as np

from .descriptors import Convolution2DOpDescriptor, DepthwiseConvolution2DOpDescriptor
from .graph import Graph

# (input channels, output channels, stride) of the six blocks
SIX = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2)]
CLASSES = 10
LR = 0.01


def widths(width: float = 1.0) -> list:
    """``(cin, cout, stride)`` of each block with every channel count scaled by ``width``."""
    return [(max(1, int(a * width)), max(1, int(b * width)), s) for a, b, s in SIX]


def weights(seed: int = 1, width: float = 1.0) -> list:
    """The weights (He-initialised, float32): per block the depthwise ``(1, cin, 3, 3)`` and the
    pointwise ``(cout, cin, 1, 1)`` kernel, then the linear layer ``(last channels, CLASSES)``."""
    rng = np.random.default_rng(seed)
    ws = []
    for cin, cout, _ in widths(width):
        ws.append((rng.standard_normal((1, cin, 3, 3)) * np.sqrt(2 / 9)).astype(np.float32))
        ws.append((rng.standard_normal((cout, cin, 1, 1)) * np.sqrt(2 / cin)).astype(np.float32))
    last = widths(width)[-1][1]
    ws.append((rng.standard_normal((last, CLASSES)) * np.sqrt(1 / last)).astype(np.float32))
    return ws


def data(batch: int, size: int, width: float = 1.0, seed: int = 0, channels: int = 0) -> tuple:
    """(x, one-hot labels): ``batch`` NCHW float32 images of ``size`` x ``size`` with the first
    block's input channels (or ``channels``), and ``CLASSES`` classes."""
    rng = np.random.default_rng(seed)
    cin = channels or widths(width)[0][0]
    x = rng.standard_normal((batch, cin, size, size), dtype=np.float32)
    labels = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, batch)]
    return x, labels


def build(x: np.ndarray, labels: np.ndarray, width: float = 1.0) -> tuple:
    """The training step as a graph: ``(graph, feeds {placeholder: array}, loss tensor, the SGD
    update operations)``; compile it with ``[loss]`` as the target tensor and the updates as
    target operations."""
    g = Graph()
    xp, lp = g.placeholder(x.shape, name="x"), g.placeholder(labels.shape, name="labels")
    ws = [g.variable(w, name=f"w{i}") for i, w in enumerate(weights(width=width))]
    h = xp
    for i, (_, _, s) in enumerate(widths(width)):
        d = DepthwiseConvolution2DOpDescriptor(stride_in_x=s, stride_in_y=s, padding_left=1, padding_right=1,
                                               padding_top=1, padding_bottom=1)
        h = g.relu(g.depthwise_convolution_2d(h, ws[2 * i], d))
        h = g.relu(g.convolution_2d(h, ws[2 * i + 1], Convolution2DOpDescriptor()))
    pooled = g.reshape(g.mean(h, [2, 3]), [x.shape[0], -1])
    loss = g.softmax_cross_entropy(g.matrix_multiplication(pooled, ws[-1]), lp, axis=-1, reduction="mean")
    grads = g.gradients(loss, ws)
    steps = [g.apply_stochastic_gradient_descent(LR, w, grads[w]) for w in ws]
    return g, {xp: x, lp: labels}, loss, steps
