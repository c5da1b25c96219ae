"""NumPy kernels of the non-maximum suppression ops (semantics: ops/nms.py): per batch element, the
candidates sorted by descending score (stable), then the greedy pass, IoU in float32."""
from __future__ import annotations

import numpy as np

from ...descriptors import NonMaximumSuppressionCoordinateMode as Mode
from .registry import numpy_kernel


def corners(boxes: np.ndarray, mode: Mode) -> tuple:
    """(y0, x0, y1, x1) float32 arrays, each box's corners ordered."""
    b = np.asarray(boxes, np.float32)
    half = np.float32(0.5)
    if mode == Mode.CORNERS_HEIGHT_FIRST:
        y0, x0, y1, x1 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    elif mode == Mode.CORNERS_WIDTH_FIRST:
        x0, y0, x1, y1 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    else:
        if mode == Mode.CENTERS_HEIGHT_FIRST:
            yc, xc, h, w = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        else:
            xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        y0, y1, x0, x1 = yc - h * half, yc + h * half, xc - w * half, xc + w * half
    return np.minimum(y0, y1), np.minimum(x0, x1), np.maximum(y0, y1), np.maximum(x0, x1)


def iou(c, i: int, js: np.ndarray) -> np.ndarray:
    """IoU of box ``i`` with the boxes ``js`` (float32; 0 where the union is empty)."""
    y0, x0, y1, x1 = c
    zero = np.float32(0)
    ih = np.maximum(np.minimum(y1[i], y1[js]) - np.maximum(y0[i], y0[js]), zero)
    iw = np.maximum(np.minimum(x1[i], x1[js]) - np.maximum(x0[i], x0[js]), zero)
    inter = ih * iw
    union = (y1[i] - y0[i]) * (x1[i] - x0[i]) + (y1[js] - y0[js]) * (x1[js] - x0[js]) - inter
    with np.errstate(all="ignore"):
        return np.where(union > zero, inter / np.where(union > zero, union, np.float32(1)), zero)


def suppress(boxes, score, cls, attrs) -> np.ndarray:
    """The int32 ``[N, B]`` result from per-box scores and classes ``[N, B]``."""
    n, b = score.shape
    out = np.full((n, b), -1, np.int32)
    thr = np.float32(attrs["iou_threshold"])
    for k in range(n):
        c = corners(boxes[k], attrs["coordinate_mode"])
        s = score[k]
        cand = np.flatnonzero(s > np.float32(attrs["score_threshold"]))
        order = cand[np.argsort(-s[cand], kind="stable")]
        alive = np.ones(order.size, bool)
        kept = []
        for p, i in enumerate(order):
            if not alive[p]:
                continue
            kept.append(i)
            rest = order[p + 1:]
            hit = iou(c, i, rest) > thr
            if attrs["per_class_suppression"]:
                hit &= cls[k][rest] == cls[k][i]
            alive[p + 1:] &= ~hit
        out[k, :len(kept)] = kept
    return out


@numpy_kernel("non_maximum_suppression")
def _nms(step):
    attrs = dict(step.attrs)

    def run(boxes, scores):
        s = np.asarray(scores, np.float32)
        if s.shape[2] == 0:
            return np.full(s.shape[:2], -1, np.int32)
        return suppress(np.asarray(boxes), np.max(s, 2), np.argmax(s, 2), attrs)
    return run


@numpy_kernel("non_maximum_suppression_with_class_indices")
def _nms_classes(step):
    attrs = dict(step.attrs)

    def run(boxes, scores, classes):
        s = np.asarray(scores, np.float32)
        return suppress(np.asarray(boxes), s[..., 0], np.asarray(classes), attrs)
    return run
