"""Naive-loop references for convolution and pooling, written straight from docs/mpsgraph-spec.md §3-§4.1.

They share no code with minigraph (nothing is imported from it): padding comes in explicitly
as ``pads = (top, bottom, left, right)``, loops run over every index, and everything is
accumulated in float64. Layouts are the canonical ones: data NCHW, weights OIHW. Tests
transpose to and from other layouts themselves.

Index rule (§4.1): output ``(oh, ow)`` with tap ``(i, j)`` reads input
``ih = oh*sy + i*dy - top``, ``iw = ow*sx + j*dx - left``; anything outside the input is zero.
"""
from __future__ import annotations

import math

import numpy as np


# ----------------------------------------------------------------------------- §3 geometry
def pads_for(style: str, size: int, k: int, s: int, d: int, before: int = 0, after: int = 0):
    """(pad_before, pad_after, out_size) for one axis, per the table of docs/mpsgraph-spec.md §3.

    ``style``: "EXPLICIT", "TF_VALID", "TF_SAME" or "ONNX_SAME_LOWER".
    """
    K = (k - 1) * d + 1
    if style == "EXPLICIT":
        return before, after, (size + before + after - K) // s + 1
    if style == "TF_VALID":
        return 0, 0, (size - K) // s + 1
    if style in ("TF_SAME", "ONNX_SAME_LOWER"):
        out = math.ceil(size / s)
        total = max((out - 1) * s + K - size, 0)
        if style == "TF_SAME":
            pb = total // 2
            return pb, total - pb, out
        pa = total // 2
        return total - pa, pa, out
    raise ValueError(style)


def out_size(size: int, k: int, s: int, d: int, pb: int, pa: int) -> int:
    """Explicit-padding output size ``floor((size + pb + pa - K) / s) + 1``."""
    return (size + pb + pa - ((k - 1) * d + 1)) // s + 1


# ----------------------------------------------------------------------------- depthwise (§4.1)
def depthwise_forward(x, w, stride, dilation, pads):
    """y[n, c*M+m, oh, ow] = sum_{i,j} x[n, c, ih, iw] * W[m, c, i, j]; x NCHW, W OIHW [M,C,kH,kW]."""
    N, C, H, Wd = x.shape
    M, C2, kH, kW = w.shape
    assert C == C2
    (sy, sx), (dy, dx), (pt, pb, pl, pr) = stride, dilation, pads
    OH, OW = out_size(H, kH, sy, dy, pt, pb), out_size(Wd, kW, sx, dx, pl, pr)
    y = np.zeros((N, C * M, OH, OW))
    for n in range(N):
        for c in range(C):
            for m in range(M):
                for oh in range(OH):
                    for ow in range(OW):
                        acc = 0.0
                        for i in range(kH):
                            for j in range(kW):
                                ih, iw = oh * sy + i * dy - pt, ow * sx + j * dx - pl
                                if 0 <= ih < H and 0 <= iw < Wd:
                                    acc += float(x[n, c, ih, iw]) * float(w[m, c, i, j])
                        y[n, c * M + m, oh, ow] = acc
    return y


def depthwise_data_grad(dy_, w, x_shape, stride, dilation, pads):
    """dx[n, c, h, w] = sum over (m, i, j, oh, ow) with ih = h, iw = w of dy[n, c*M+m, oh, ow] * W[m, c, i, j]."""
    N, C, H, Wd = x_shape
    M, _, kH, kW = w.shape
    _, CM, OH, OW = dy_.shape
    assert CM == C * M
    (sy, sx), (dy, dx), (pt, _pb, pl, _pr) = stride, dilation, pads
    out = np.zeros(x_shape)
    for n in range(N):
        for c in range(C):
            for m in range(M):
                for oh in range(OH):
                    for ow in range(OW):
                        for i in range(kH):
                            for j in range(kW):
                                ih, iw = oh * sy + i * dy - pt, ow * sx + j * dx - pl
                                if 0 <= ih < H and 0 <= iw < Wd:
                                    out[n, c, ih, iw] += float(dy_[n, c * M + m, oh, ow]) * float(w[m, c, i, j])
    return out


def depthwise_weights_grad(dy_, x, w_shape, stride, dilation, pads):
    """dW[m, c, i, j] = sum_{n, oh, ow} dy[n, c*M+m, oh, ow] * x[n, c, ih(oh, i), iw(ow, j)]."""
    M, C, kH, kW = w_shape
    N, C2, H, Wd = x.shape
    _, CM, OH, OW = dy_.shape
    assert C == C2 and CM == C * M
    (sy, sx), (dy, dx), (pt, _pb, pl, _pr) = stride, dilation, pads
    out = np.zeros(w_shape)
    for m in range(M):
        for c in range(C):
            for i in range(kH):
                for j in range(kW):
                    acc = 0.0
                    for n in range(N):
                        for oh in range(OH):
                            for ow in range(OW):
                                ih, iw = oh * sy + i * dy - pt, ow * sx + j * dx - pl
                                if 0 <= ih < H and 0 <= iw < Wd:
                                    acc += float(dy_[n, c * M + m, oh, ow]) * float(x[n, c, ih, iw])
                    out[m, c, i, j] = acc
    return out


# ----------------------------------------------------------------------------- grouped convolution (§6)
def conv2d_forward(x, w, stride, dilation, pads, groups: int = 1):
    """y[n, o, oh, ow] = sum_{ci, i, j} x[n, g*Cg + ci, ih, iw] * W[o, ci, i, j], g = o // (Cout/groups);
    x NCHW, W OIHW [Cout, Cin/groups, kH, kW]."""
    N, Cin, H, Wd = x.shape
    Cout, Cg, kH, kW = w.shape
    assert Cin == Cg * groups and Cout % groups == 0
    og = Cout // groups
    (sy, sx), (dy, dx), (pt, pb, pl, pr) = stride, dilation, pads
    OH, OW = out_size(H, kH, sy, dy, pt, pb), out_size(Wd, kW, sx, dx, pl, pr)
    y = np.zeros((N, Cout, OH, OW))
    for n in range(N):
        for o in range(Cout):
            grp = o // og
            for oh in range(OH):
                for ow in range(OW):
                    acc = 0.0
                    for ci in range(Cg):
                        for i in range(kH):
                            for j in range(kW):
                                ih, iw = oh * sy + i * dy - pt, ow * sx + j * dx - pl
                                if 0 <= ih < H and 0 <= iw < Wd:
                                    acc += float(x[n, grp * Cg + ci, ih, iw]) * float(w[o, ci, i, j])
                    y[n, o, oh, ow] = acc
    return y


def conv2d_data_grad(dy_, w, x_shape, stride, dilation, pads, groups: int = 1):
    """The adjoint of ``conv2d_forward`` in x, by scattering every product back."""
    N, Cin, H, Wd = x_shape
    Cout, Cg, kH, kW = w.shape
    og = Cout // groups
    _, _, OH, OW = dy_.shape
    (sy, sx), (dy, dx), (pt, _pb, pl, _pr) = stride, dilation, pads
    out = np.zeros(x_shape)
    for n in range(N):
        for o in range(Cout):
            grp = o // og
            for oh in range(OH):
                for ow in range(OW):
                    for ci in range(Cg):
                        for i in range(kH):
                            for j in range(kW):
                                ih, iw = oh * sy + i * dy - pt, ow * sx + j * dx - pl
                                if 0 <= ih < H and 0 <= iw < Wd:
                                    out[n, grp * Cg + ci, ih, iw] += float(dy_[n, o, oh, ow]) * float(w[o, ci, i, j])
    return out


def conv2d_weights_grad(dy_, x, w_shape, stride, dilation, pads, groups: int = 1):
    """dW[o, ci, i, j] = sum_{n, oh, ow} dy[n, o, oh, ow] * x[n, g*Cg + ci, ih, iw]."""
    Cout, Cg, kH, kW = w_shape
    N, Cin, H, Wd = x.shape
    og = Cout // groups
    _, _, OH, OW = dy_.shape
    (sy, sx), (dy, dx), (pt, _pb, pl, _pr) = stride, dilation, pads
    out = np.zeros(w_shape)
    for o in range(Cout):
        grp = o // og
        for ci in range(Cg):
            for i in range(kH):
                for j in range(kW):
                    acc = 0.0
                    for n in range(N):
                        for oh in range(OH):
                            for ow in range(OW):
                                ih, iw = oh * sy + i * dy - pt, ow * sx + j * dx - pl
                                if 0 <= ih < H and 0 <= iw < Wd:
                                    acc += float(dy_[n, o, oh, ow]) * float(x[n, grp * Cg + ci, ih, iw])
                    out[o, ci, i, j] = acc
    return out


# ----------------------------------------------------------------------------- pooling windows
def pool2d(x, kernel, stride, dilation, pads, kind: str = "max", out_hw=None, include_pad: bool = False):
    """Max or average pooling over NCHW ``x``; ``kernel = (kH, kW)``.

    ``out_hw`` overrides the output size (e.g. for ceil mode). Average pooling divides by the
    number of taps inside the input, or by kH*kW with ``include_pad`` (taps beyond the padded
    input never count). Windows with no valid tap give -inf (max) or 0 (avg).
    """
    N, C, H, Wd = x.shape
    kH, kW = kernel
    (sy, sx), (dy, dx), (pt, pb, pl, pr) = stride, dilation, pads
    if out_hw is None:
        out_hw = (out_size(H, kH, sy, dy, pt, pb), out_size(Wd, kW, sx, dx, pl, pr))
    OH, OW = out_hw
    y = np.zeros((N, C, OH, OW))
    for n in range(N):
        for c in range(C):
            for oh in range(OH):
                for ow in range(OW):
                    vals, padded = [], 0
                    for i in range(kH):
                        for j in range(kW):
                            ih, iw = oh * sy + i * dy - pt, ow * sx + j * dx - pl
                            if 0 <= ih < H and 0 <= iw < Wd:
                                vals.append(float(x[n, c, ih, iw]))
                            elif -pt <= ih < H + pb and -pl <= iw < Wd + pr:
                                padded += 1
                    if kind == "max":
                        y[n, c, oh, ow] = max(vals) if vals else -np.inf
                    else:
                        count = len(vals) + padded if include_pad else len(vals)
                        y[n, c, oh, ow] = sum(vals) / count if count else 0.0
    return y
