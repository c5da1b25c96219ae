// non-maximum suppression (ops/nms.py), one stage per dispatch over the N*B boxes (STAGE below):
// prep (each box's score, class and candidacy, over the K classes in passes), rank (its place
// among its batch's candidates by descending score, lower index first, over the B boxes in
// passes; writes order[rank] = box), greedy (one dispatch per rank r: the box of rank r, if still
// alive, suppresses the later-ranked boxes it overlaps), gather (result slot p: the p-th alive
// box in rank order, over the B ranks in passes; -1 past the kept boxes).
{{PARAMS}}
@group(0) @binding(1) var<storage, read> boxes: array<f32>;
@group(0) @binding(2) var<storage, read> scores: array<f32>;
@group(0) @binding(3) var<storage, read> classes: array<i32>;
@group(0) @binding(4) var<storage, read_write> score: array<f32>;
@group(0) @binding(5) var<storage, read_write> cls: array<i32>;
@group(0) @binding(6) var<storage, read_write> rank: array<u32>;
@group(0) @binding(7) var<storage, read_write> order: array<u32>;
@group(0) @binding(8) var<storage, read_write> alive: array<u32>;
@group(0) @binding(9) var<storage, read_write> out: array<i32>;
@group(0) @binding(10) var<storage, read_write> state: array<u32>;

const NONE = 0xffffffffu;

// (y0, x0, y1, x1) of box t, its corners ordered
fn corners(t: u32) -> vec4<f32> {
  let b = vec4<f32>(boxes[4u * t], boxes[4u * t + 1u], boxes[4u * t + 2u], boxes[4u * t + 3u]);
{{CORNERS}}
  return vec4<f32>(min(c.x, c.z), min(c.y, c.w), max(c.x, c.z), max(c.y, c.w));
}

fn iou(a: vec4<f32>, b: vec4<f32>) -> f32 {
  let ih = max(min(a.z, b.z) - max(a.x, b.x), 0.0);
  let iw = max(min(a.w, b.w) - max(a.y, b.y), 0.0);
  let inter = ih * iw;
  let u = (a.z - a.x) * (a.w - a.y) + (b.z - b.x) * (b.w - b.y) - inter;
  if (u > 0.0) { return inter / u; }
  return 0.0;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  let n = t / {{B}}u;
  let i = t % {{B}}u;
  let j0 = prm(0u);
  let j1 = prm(1u);
{{STAGE}}
}
