"""MobileNetV2 built with minigraph's ops (Sandler et al. 2018, table 2), for the demo and examples.

Batch normalization is built from ``mean`` / ``variance`` / ``normalize`` over the batch (training
form, so autodiff inserts MPSGraph's normalization gradient ops) and ReLU6 is ``clamp(x, 0, 6)``.
Variables and scopes are named per layer: ``features.<block>.<expand|dw|project>.weight`` and
``...bn.weight`` / ``...bn.bias`` for the batch norm after it. No MPSGraph counterpart: MPSGraph
has ops, not networks.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .descriptors import Convolution2DOpDescriptor, DepthwiseConvolution2DOpDescriptor

# expansion t, channels c, repeats n, first stride s
V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
EPSILON = 1e-5


def divisible(v: float, divisor: int = 8) -> int:
    """Channels rounded to a multiple of 8, never below 90% of ``v`` (the paper's rule)."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def blocks(width: float = 1.0) -> list:
    """``(index, expansion, cin, cout, stride)`` of each inverted-residual block."""
    out, cin, i = [], divisible(32 * width), 1
    for t, c, n, s in V2:
        cout = divisible(c * width)
        for r in range(n):
            out.append((i, t, cin, cout, s if r == 0 else 1))
            cin, i = cout, i + 1
    return out


def layers(width: float = 1.0) -> list:
    """``(name, kind, cin, cout, stride)`` per convolution, in order; kind: full, depthwise, pointwise."""
    bs = blocks(width)
    out = [("features.0", "full", 3, divisible(32 * width), 2)]
    for i, t, cin, cout, s in bs:
        hidden = cin * t
        if t != 1:
            out.append((f"features.{i}.expand", "pointwise", cin, hidden, 1))
        out.append((f"features.{i}.dw", "depthwise", hidden, hidden, s))
        out.append((f"features.{i}.project", "pointwise", hidden, cout, 1))
    out.append((f"features.{len(bs) + 1}", "pointwise", bs[-1][3], divisible(1280 * max(1.0, width)), 1))
    return out


def init_params(rng: np.random.Generator, width: float = 1.0, classes: int = 10) -> dict:
    """He-initialised weights (OIHW; depthwise ``[1, C, 3, 3]``), unit gammas and zero betas."""
    params: dict = {}
    for name, kind, cin, cout, _ in layers(width):
        k = 3 if kind in ("full", "depthwise") else 1
        shape = (1, cin, k, k) if kind == "depthwise" else (cout, cin if kind != "full" else 3, k, k)
        fan_in = k * k * (1 if kind == "depthwise" else shape[1])
        params[f"{name}.weight"] = rng.normal(0.0, np.sqrt(2.0 / fan_in), shape)
        params[f"{name}.bn.weight"] = np.ones((1, cout, 1, 1))
        params[f"{name}.bn.bias"] = np.zeros((1, cout, 1, 1))
    last = layers(width)[-1][3]
    params["classifier.weight"] = rng.normal(0.0, np.sqrt(1.0 / last), (last, classes))
    params["classifier.bias"] = np.zeros((classes,))
    return params


def conv_bn(g: Any, h: Any, v: dict, name: str, kind: str, stride: int, relu6: bool) -> Any:
    """Convolution (padding 1 for 3x3), batch norm with the batch's statistics, then ReLU6."""
    with g.name_scope(name):
        if kind == "depthwise":
            desc = DepthwiseConvolution2DOpDescriptor(stride_in_x=stride, stride_in_y=stride, padding_left=1,
                                                      padding_right=1, padding_top=1, padding_bottom=1)
            h = g.depthwise_convolution_2d(h, v[f"{name}.weight"], desc, name="conv")
        else:
            desc = Convolution2DOpDescriptor(stride_in_x=stride, stride_in_y=stride)
            if kind == "full":
                desc.set_explicit_padding(1, 1, 1, 1)
            h = g.convolution_2d(h, v[f"{name}.weight"], desc, name="conv")
        axes = [0, 2, 3]
        h = g.normalize(h, g.mean(h, axes), g.variance(h, axes), v[f"{name}.bn.weight"], v[f"{name}.bn.bias"],
                        EPSILON, name="batch_norm")
        return g.clamp(h, 0.0, 6.0, name="relu6") if relu6 else h


def forward(g: Any, x: Any, v: dict, width: float = 1.0) -> Any:
    """The logits of MobileNetV2 on ``x`` (NCHW), with the variables ``v`` made from ``init_params``."""
    bs = blocks(width)
    h = conv_bn(g, x, v, "features.0", "full", 2, True)
    for i, t, cin, cout, s in bs:
        block_in = h
        if t != 1:
            h = conv_bn(g, h, v, f"features.{i}.expand", "pointwise", 1, True)
        h = conv_bn(g, h, v, f"features.{i}.dw", "depthwise", s, True)
        h = conv_bn(g, h, v, f"features.{i}.project", "pointwise", 1, False)
        if s == 1 and cin == cout:
            h = g.addition(block_in, h, name=f"features.{i}.residual")
    h = conv_bn(g, h, v, f"features.{len(bs) + 1}", "pointwise", 1, True)
    with g.name_scope("classifier"):
        pooled = g.reshape(g.mean(h, [2, 3]), [-1, h.shape[1]], name="pooled")
        return g.addition(g.matrix_multiplication(pooled, v["classifier.weight"]), v["classifier.bias"], name="logits")
