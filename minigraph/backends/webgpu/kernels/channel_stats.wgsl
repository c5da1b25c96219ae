// Per-channel statistics in one pass over the data (channel_stats.py). A workgroup holds CB
// channels x R lanes (CB * R = 256) and covers chunk c (of `chunks`) of R * PER reduced elements
// of each of its channels: every lane folds up to PER elements in order, then the lanes of a
// channel merge their records in a tree in workgroup memory. A record (a, b, c, d) is the moments'
// (count, mean, M2, sum) merged by Chan's formula, or the gradient's (sum dy, sum dy * xhat, 0, 0),
// added. emit writes record (o, c) to the partials, merged in order by a further pass, or the
// outputs. params: n_out, count, chunks. base_of(o) and off_of(j): the offsets of kept index o
// and reduced index j, their axes' sizes and strides baked in (a division by a constant is cheap).
{{PARAMS}}
{{BINDINGS}}
const CB: u32 = {{CB}}u;
const R: u32 = {{R}}u;
const PER: u32 = {{PER}}u;
struct Rec { a: f32, b: f32, c: f32, d: f32 }
var<workgroup> sh: array<Rec, 256>;

{{INDEX_FNS}}

fn merge(x: Rec, y: Rec) -> Rec {
{{MERGE}}
}

fn emit(o: u32, c: u32, chunks: u32, r: Rec) {
{{EMIT}}
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let gid = wid.y * nwg.x + wid.x;
  let chunks = prm(2u);
  let ch = lid % CB;
  let lane = lid / CB;
  let o = (gid / chunks) * CB + ch;
  let c = gid % chunks;
  let live = o < prm(0u);
  let count = prm(1u);
  var acc = Rec(0.0, 0.0, 0.0, 0.0);
  if (live) {
    let b = base_of(o);
{{SETUP}}
    let start = c * (R * PER);
    for (var q = 0u; q < PER; q = q + 1u) {
      let j = start + lane + q * R;
      if (j >= count) { break; }
      let i = b + off_of(j);
      acc = merge(acc, {{ELEMENT}});
    }
  }
  sh[lid] = acc;
  workgroupBarrier();
  for (var s = R / 2u; s > 0u; s = s >> 1u) {
    if (lane < s) { sh[lid] = merge(sh[lid], sh[lid + s * CB]); }
    workgroupBarrier();
  }
  if (live && lane == 0u) { emit(o, c, chunks, sh[ch]); }
}
