"""Non-maximum suppression (MPSGraphNonMaximumSuppressionOps): non_maximum_suppression and
non_maximum_suppression_with_class_indices.

Apple's header gives the inputs: boxes ``[N, B, 4]`` float32 in a
``NonMaximumSuppressionCoordinateMode``, scores ``[N, B, K]`` float32 (or ``[N, B, 1]`` with class
indices ``[N, B]`` int32), an IoU threshold in ``[0, 1]``, a score threshold and whether only boxes
of one class suppress each other. It does not say what the result holds; minigraph's result is
int32 ``[N, B]``: per batch element, the indices of the kept boxes in the order they are selected
(descending score), then -1 for the remaining slots (a fixed shape; TensorFlow's padded NMS).
Per batch element:

* a box's score is its best class score (the first of equal ones gives its class) with K
  classes, or its one score and its class index with the class-indices form;
* boxes whose score is not above ``score_threshold`` (NaN included) are dropped;
* the others are visited by descending score (equal scores: the lower index first); a box is
  kept unless a kept box overlaps it with IoU above ``iou_threshold``, where with
  ``per_class_suppression`` only a kept box of its class counts (torchvision's ``nms`` /
  ``batched_nms``);
* IoU is intersection over union of the boxes' corners, each box's corners ordered (min, max)
  first; a union of area 0 gives IoU 0. CENTERS_WIDTH_FIRST is ``[x_center, y_center, width,
  height]`` (Apple's header prints ``[w_center, w_center, box_height, box_width]``, a typo).

Not differentiable (an index result).
"""
from __future__ import annotations

import math
from typing import Any, Optional

from ..descriptors import NonMaximumSuppressionCoordinateMode, _enum
from ..errors import DescriptorError, DTypeError, ShapeError
from ..types import ShapedType, int32
from .registry import defop

_ATTRS = ("iou_threshold", "score_threshold", "per_class_suppression", "coordinate_mode")


def _label(type: str, name) -> str:
    return f"{type} op {name or type!r}"


def _check_boxes(boxes: ShapedType, scores: ShapedType) -> None:
    if len(boxes.shape) != 3 or boxes.shape[2] not in (4, -1):
        raise ShapeError(f"boxes must have shape [N, B, 4], got {boxes.shape}")
    if len(scores.shape) != 3:
        raise ShapeError(f"scores must have shape [N, B, K], got {scores.shape}")
    for a in (0, 1):
        if -1 not in (boxes.shape[a], scores.shape[a]) and boxes.shape[a] != scores.shape[a]:
            raise ShapeError(f"boxes {boxes.shape} and scores {scores.shape} differ in dimension {a} "
                             "(N batches of B boxes each)")
    for t, what in ((boxes, "boxes"), (scores, "scores")):
        if t.dtype.name != "float32":
            raise DTypeError(f"{what} must be float32 (Apple's MPSDataTypeFloat32), got {t.dtype.name}")


def _out(boxes: ShapedType, scores: ShapedType) -> list:
    n = boxes.shape[0] if boxes.shape[0] != -1 else scores.shape[0]
    b = boxes.shape[1] if boxes.shape[1] != -1 else scores.shape[1]
    return [ShapedType((n, b), int32)]


def _infer(in_types, attrs):
    boxes, scores = in_types
    _check_boxes(boxes, scores)
    return _out(boxes, scores)


def _infer_classes(in_types, attrs):
    boxes, scores, classes = in_types
    _check_boxes(boxes, scores)
    if scores.shape[2] not in (1, -1):
        raise ShapeError(f"with class indices the scores must have shape [N, B, 1], got {scores.shape}")
    if classes.dtype.name != "int32":
        raise DTypeError(f"class indices must be int32, got {classes.dtype.name}")
    if len(classes.shape) != 2 or any(c != b and -1 not in (c, b) for c, b in zip(classes.shape, boxes.shape)):
        raise ShapeError(f"class indices must have shape [N, B] {list(boxes.shape[:2])}, got {classes.shape}")
    return _out(boxes, scores)


def _attrs(label: str, iou_threshold, score_threshold, per_class_suppression, coordinate_mode) -> dict:
    for v, what in ((iou_threshold, "iou_threshold"), (score_threshold, "score_threshold")):
        if isinstance(v, bool) or not isinstance(v, (int, float)) and not hasattr(v, "__float__"):
            raise DescriptorError(f"{label}: {what} must be a number, got {v!r}")
    iou = float(iou_threshold)
    if not 0.0 <= iou <= 1.0:
        raise DescriptorError(f"{label}: iou_threshold {iou} is outside Apple's valid range [0, 1]")
    score = float(score_threshold)
    if math.isnan(score):
        raise DescriptorError(f"{label}: score_threshold is NaN; give a number (-inf keeps every box)")
    if not isinstance(per_class_suppression, bool):
        raise DescriptorError(f"{label}: per_class_suppression must be True or False, got {per_class_suppression!r}")
    try:
        mode = _enum(NonMaximumSuppressionCoordinateMode, coordinate_mode, "coordinate_mode")
    except DescriptorError as e:
        raise DescriptorError(f"{label}: {e}") from None
    return {"iou_threshold": iou, "score_threshold": score, "per_class_suppression": per_class_suppression,
            "coordinate_mode": mode}


@defop("non_maximum_suppression",
       swift="nonMaximumSuppression(withBoxesTensor:scoresTensor:iouThreshold:scoreThreshold:perClassSuppression:"
             "coordinateMode:name:)",
       objc="nonMaximumSuppressionWithBoxesTensor:scoresTensor:IOUThreshold:scoreThreshold:perClassSuppression:"
            "coordinateMode:name:",
       inputs=("boxes", "scores"), infer=_infer, family="image", differentiable=False, attrs=_ATTRS,
       since=("14.0", "17.0"))
def non_maximum_suppression(g, boxes, scores, iou_threshold: float, score_threshold: float,
                            per_class_suppression: bool, coordinate_mode: Any = 0, name: Optional[str] = None):
    """The indices of the boxes greedy non-maximum suppression keeps, per batch element, by
    descending score, padded with -1 to ``[N, B]`` (MPSGraph
    ``nonMaximumSuppression(withBoxesTensor:scoresTensor:iouThreshold:scoreThreshold:perClassSuppression:coordinateMode:name:)``;
    a box's score and class are its best of the ``K`` class scores; module docstring).
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/nonmaximumsuppression(withboxestensor:scorestensor:iouthreshold:scorethreshold:perclasssuppression:coordinatemode:name:)

    Args:
        boxes: Boxes ``[N, B, 4]`` float32, laid out as ``coordinate_mode`` says.
        scores: Scores ``[N, B, K]`` float32 (K classes).
        iou_threshold: A kept box suppresses the boxes it overlaps with IoU above this (in [0, 1]).
        score_threshold: Boxes whose score is not above this are dropped first.
        per_class_suppression: Only boxes of the same class suppress each other.
        coordinate_mode: A ``NonMaximumSuppressionCoordinateMode`` (its name or raw value).
        name: The op's name (MPSGraph's ``name:``).
    """
    label = _label("non_maximum_suppression", name)
    attrs = _attrs(label, iou_threshold, score_threshold, per_class_suppression, coordinate_mode)
    return g.add_op("non_maximum_suppression", [g.as_tensor(boxes, label), g.as_tensor(scores, label)], attrs,
                    name).output


@defop("non_maximum_suppression_with_class_indices",
       swift="nonMaximumSuppression(withBoxesTensor:scoresTensor:classIndicesTensor:iouThreshold:scoreThreshold:"
             "perClassSuppression:coordinateMode:name:)",
       objc="nonMaximumSuppressionWithBoxesTensor:scoresTensor:classIndicesTensor:IOUThreshold:scoreThreshold:"
            "perClassSuppression:coordinateMode:name:",
       inputs=("boxes", "scores", "class_indices"), infer=_infer_classes, family="image", differentiable=False,
       attrs=_ATTRS, since=("14.0", "17.0"))
def non_maximum_suppression_with_class_indices(g, boxes, scores, class_indices, iou_threshold: float,
                                               score_threshold: float, per_class_suppression: bool,
                                               coordinate_mode: Any = 0, name: Optional[str] = None):
    """``non_maximum_suppression`` with each box's class given: scores ``[N, B, 1]`` and int32
    ``class_indices`` ``[N, B]`` (MPSGraph
    ``nonMaximumSuppression(withBoxesTensor:scoresTensor:classIndicesTensor:iouThreshold:scoreThreshold:perClassSuppression:coordinateMode:name:)``).
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/nonmaximumsuppression(withboxestensor:scorestensor:classindicestensor:iouthreshold:scorethreshold:perclasssuppression:coordinatemode:name:)

    Args:
        boxes: Boxes ``[N, B, 4]`` float32, laid out as ``coordinate_mode`` says.
        scores: Scores ``[N, B, 1]`` float32.
        class_indices: Each box's class ``[N, B]`` int32.
        iou_threshold: A kept box suppresses the boxes it overlaps with IoU above this (in [0, 1]).
        score_threshold: Boxes whose score is not above this are dropped first.
        per_class_suppression: Only boxes of the same class suppress each other.
        coordinate_mode: A ``NonMaximumSuppressionCoordinateMode`` (its name or raw value).
        name: The op's name (MPSGraph's ``name:``).
    """
    label = _label("non_maximum_suppression_with_class_indices", name)
    attrs = _attrs(label, iou_threshold, score_threshold, per_class_suppression, coordinate_mode)
    ins = [g.as_tensor(boxes, label), g.as_tensor(scores, label), g.as_tensor(class_indices, label)]
    return g.add_op("non_maximum_suppression_with_class_indices", ins, attrs, name).output
