"""Naive-loop references for depthwise 3D convolution (docs/mpsgraph-spec.md §5) and the pooling gradients.

Like tests/naive_conv.py they import nothing from minigraph: padding comes in explicitly, loops
run over every index, and everything accumulates in float64. Canonical layouts: data
``[B, C, D, H, W]`` (channel first, one batch axis), weights ``[C*M, kD, kH, kW]`` (output
channel ``o`` reads input channel ``o // M``), pooling data NCHW.
"""
from __future__ import annotations

import itertools
import math

import numpy as np


def out_size(size: int, k: int, s: int, d: int, pb: int, pa: int) -> int:
    return (size + pb + pa - ((k - 1) * d + 1)) // s + 1


def pool_out_size(size: int, k: int, s: int, d: int, pb: int, pa: int, ceil_mode: bool) -> int:
    """floor (or ceil) of (size + pb + pa - K) / s, plus 1; in ceil mode the last window must
    start inside the input or the padding before it (PyTorch's rule)."""
    span = size + pb + pa - ((k - 1) * d + 1)
    if not ceil_mode:
        return span // s + 1
    out = math.ceil(span / s) + 1
    if (out - 1) * s >= size + pb:
        out -= 1
    return out


# ----------------------------------------------------------------------------- depthwise 3D
def _taps(kernel):
    return itertools.product(*(range(k) for k in kernel))


def _src(o_pos, t, strides, dil, before):
    return tuple(o * s + i * d - p for o, i, s, d, p in zip(o_pos, t, strides, dil, before))


def _inside(pos, sizes):
    return all(0 <= p < n for p, n in zip(pos, sizes))


def dw3d_forward(x, w, strides, dil, pads):
    """y[b, o, od, oh, ow] = sum_taps x[b, o // M, src] * w[o, tap]; ``pads`` = 6 (before, after)."""
    B, C = x.shape[:2]
    sizes = x.shape[2:]
    CM, kernel = w.shape[0], w.shape[1:]
    M = CM // C
    before = pads[0::2]
    outs = [out_size(n, k, s, d, pads[2 * a], pads[2 * a + 1])
            for a, (n, k, s, d) in enumerate(zip(sizes, kernel, strides, dil))]
    y = np.zeros((B, CM, *outs))
    for b in range(B):
        for o in range(CM):
            for op in itertools.product(*(range(n) for n in outs)):
                acc = 0.0
                for t in _taps(kernel):
                    src = _src(op, t, strides, dil, before)
                    if _inside(src, sizes):
                        acc += float(x[(b, o // M) + src]) * float(w[(o,) + t])
                y[(b, o) + op] = acc
    return y


def dw3d_data_grad(dy, w, x_shape, strides, dil, pads):
    """dx[b, c, src] += dy[b, o, out] * w[o, tap] for every o with o // M == c."""
    B, C = x_shape[:2]
    sizes = x_shape[2:]
    CM, kernel = w.shape[0], w.shape[1:]
    M = CM // C
    before = pads[0::2]
    dx = np.zeros(x_shape)
    for b in range(B):
        for o in range(CM):
            for op in itertools.product(*(range(n) for n in dy.shape[2:])):
                for t in _taps(kernel):
                    src = _src(op, t, strides, dil, before)
                    if _inside(src, sizes):
                        dx[(b, o // M) + src] += float(dy[(b, o) + op]) * float(w[(o,) + t])
    return dx


def dw3d_weights_grad(dy, x, w_shape, strides, dil, pads):
    """dW[o, tap] = sum_{b, out} dy[b, o, out] * x[b, o // M, src]."""
    B, C = x.shape[:2]
    sizes = x.shape[2:]
    CM, kernel = w_shape[0], w_shape[1:]
    M = CM // C
    before = pads[0::2]
    dw = np.zeros(w_shape)
    for o in range(CM):
        for t in _taps(kernel):
            acc = 0.0
            for b in range(B):
                for op in itertools.product(*(range(n) for n in dy.shape[2:])):
                    src = _src(op, t, strides, dil, before)
                    if _inside(src, sizes):
                        acc += float(dy[(b, o) + op]) * float(x[(b, o // M) + src])
            dw[(o,) + t] = acc
    return dw


# ----------------------------------------------------------------------------- pooling gradients
def _window(oh, ow, kernel, stride, dilation, pads):
    (kH, kW), (sy, sx), (dy, dx), (pt, _, pl, _) = kernel, stride, dilation, pads
    for i in range(kH):
        for j in range(kW):
            yield oh * sy + i * dy - pt, ow * sx + j * dx - pl


def max_pool2d_grad(g, x, kernel, stride, dilation, pads):
    """Each window's gradient goes to its first maximal input element (kernel row, then column)."""
    N, C, H, W = x.shape
    dx = np.zeros(x.shape)
    for n in range(N):
        for c in range(C):
            for oh in range(g.shape[2]):
                for ow in range(g.shape[3]):
                    best, where = -np.inf, None
                    for ih, iw in _window(oh, ow, kernel, stride, dilation, pads):
                        if 0 <= ih < H and 0 <= iw < W and (where is None or x[n, c, ih, iw] > best):
                            best, where = x[n, c, ih, iw], (ih, iw)
                    dx[n, c, where[0], where[1]] += g[n, c, oh, ow]
    return dx


def avg_pool2d_grad(g, x_shape, kernel, stride, dilation, pads, include_pad=False):
    """Each window's gradient divided by its divisor, added to every input element it read."""
    N, C, H, W = x_shape
    pt, pb, pl, pr = pads
    dx = np.zeros(x_shape)
    for n in range(N):
        for c in range(C):
            for oh in range(g.shape[2]):
                for ow in range(g.shape[3]):
                    taps = list(_window(oh, ow, kernel, stride, dilation, pads))
                    inside = [(ih, iw) for ih, iw in taps if 0 <= ih < H and 0 <= iw < W]
                    if include_pad:
                        count = sum(1 for ih, iw in taps if -pt <= ih < H + pb and -pl <= iw < W + pr)
                    else:
                        count = len(inside)
                    for ih, iw in inside:
                        dx[n, c, ih, iw] += g[n, c, oh, ow] / count
    return dx
