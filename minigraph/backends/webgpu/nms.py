"""Non-maximum suppression kernels (semantics: ``ops/nms.py``): the greedy pass is sequential in
the ranks, so it is one dispatch per rank, each parallel over the boxes (the box of that rank,
if alive, suppresses the later ones it overlaps); scores, ranks and the result's gather are
parallel over the boxes with their loops in passes (``loops.long_loop``). IoU in float32."""
from __future__ import annotations

from ...descriptors import NonMaximumSuppressionCoordinateMode as Mode
from .loops import long_loop
from .registry import webgpu_kernel
from .wgsl import f32_literal, params_decl, render

_CORNERS = {
    Mode.CORNERS_HEIGHT_FIRST: "  let c = b;",
    Mode.CORNERS_WIDTH_FIRST: "  let c = b.yxwz;",
    Mode.CENTERS_HEIGHT_FIRST: "  let c = vec4<f32>(b.x - b.z * 0.5, b.y - b.w * 0.5, b.x + b.z * 0.5, b.y + b.w * 0.5);",
    Mode.CENTERS_WIDTH_FIRST: "  let c = vec4<f32>(b.y - b.w * 0.5, b.x - b.z * 0.5, b.y + b.w * 0.5, b.x + b.z * 0.5);",
}

# best class score over k in [j0, j1) of K (NaN-propagating, the first of equal ones), or the one
# score and the given class; a candidate when above the score threshold
_PREP = """  var best = 0.0;
  var c = 0;
  if (j0 > 0u) { best = bitcast<f32>(state[2u * t]); c = bitcast<i32>(state[2u * t + 1u]); }
  for (var k = j0; k < j1; k = k + 1u) {
    let v = scores[t * {{K}}u + k];
    if (k == 0u || (!mg_isnan(best) && (mg_isnan(v) || v > best))) { best = v; c = i32(k); }
  }
  if (j1 < {{K}}u) { state[2u * t] = bitcast<u32>(best); state[2u * t + 1u] = bitcast<u32>(c); return; }
  if ({{CLASSES}}) { c = classes[t]; }
  score[t] = best;
  cls[t] = c;
  alive[t] = select(0u, 1u, !mg_isnan(best) && best > {{SCORE_THR}});
  order[t] = NONE;"""
_RANK = """  var r = 0u;
  if (j0 > 0u) { r = state[t]; }
  let s = score[t];
  for (var j = j0; j < j1; j = j + 1u) {
    let u = n * {{B}}u + j;
    if (alive[u] == 1u && (score[u] > s || (score[u] == s && j < i))) { r = r + 1u; }
  }
  if (j1 < {{B}}u) { state[t] = r; return; }
  rank[t] = r;
  if (alive[t] == 1u) { order[n * {{B}}u + r] = i; }"""
_GREEDY = """  let c = order[n * {{B}}u + j0];
  if (c == NONE || alive[t] == 0u || rank[t] <= j0) { return; }
  let u = n * {{B}}u + c;
  if (alive[u] == 0u || ({{PER_CLASS}} && cls[u] != cls[t])) { return; }
  if (iou(corners(u), corners(t)) > {{IOU_THR}}) { alive[t] = 0u; }"""
_GATHER = """  var cnt = 0u;
  var res = -1;
  if (j0 > 0u) { cnt = state[2u * t]; res = bitcast<i32>(state[2u * t + 1u]); }
  for (var r = j0; r < j1; r = r + 1u) {
    let c = order[n * {{B}}u + r];
    if (c != NONE && alive[n * {{B}}u + c] == 1u) {
      if (cnt == i) { res = i32(c); }
      cnt = cnt + 1u;
    }
  }
  if (j1 < {{B}}u) { state[2u * t] = cnt; state[2u * t + 1u] = bitcast<u32>(res); return; }
  out[t] = res;"""


def _record(step, kb, with_classes: bool) -> None:
    a = step.attrs
    n, b = step.out_types[0].shape
    k = 1 if with_classes else step.in_types[1].shape[2]
    total = n * b
    if not total:
        return
    holes = dict(B=b, K=k, CLASSES="true" if with_classes else "false", SCORE_THR=f32_literal(a["score_threshold"]),
                 IOU_THR=f32_literal(a["iou_threshold"]), PER_CLASS="true" if a["per_class_suppression"] else "false")

    def source(stage: str) -> str:
        for h, v in holes.items():
            stage = stage.replace("{{" + h + "}}", str(v))
        return render("nms", PARAMS=params_decl(2), CORNERS=_CORNERS[Mode(a["coordinate_mode"])], TOTAL=total,
                      B=b, STAGE=stage)

    bufs = [kb.scratch(4 * total) for _ in range(5)]  # score, cls, rank, order, alive
    classes = kb.input(2) if with_classes else kb.scratch(4)
    groups = -(-total // 256)

    def record(code):
        def rec(j0, j1, state):
            kb.dispatch(code, [("u", [j0, j1]), ("ro", kb.input(0)), ("ro", kb.input(1)), ("ro", classes),
                               *[("rw", x) for x in bufs], ("rw", kb.output()), ("rw", state)], groups)
        return rec

    if k == 0:  # no class scores: no box is a candidate
        kb.dispatch(source("  out[t] = -1;"), [("u", [0, 0]), ("ro", kb.input(0)), ("ro", kb.input(1)),
                                                ("ro", classes), *[("rw", x) for x in bufs], ("rw", kb.output()),
                                                ("rw", kb.scratch(4))], groups)
        return
    long_loop(kb, k, total, 2, record(source(_PREP)))
    long_loop(kb, b, total, 1, record(source(_RANK)))
    greedy, state = record(source(_GREEDY)), kb.scratch(4)
    for r in range(b):
        greedy(r, r + 1, state)
    long_loop(kb, b, total, 2, record(source(_GATHER)))


@webgpu_kernel("non_maximum_suppression")
def _nms(step, kb):
    _record(step, kb, False)


@webgpu_kernel("non_maximum_suppression_with_class_indices")
def _nms_classes(step, kb):
    _record(step, kb, True)
