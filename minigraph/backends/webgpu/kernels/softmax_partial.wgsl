// A pass over the rows longer than one workgroup's share (softmax, softmax cross entropy):
// part[row * chunks + c] = the sum of TERM over chunk c (256 * PER elements) of the row, where
// m[row] is the row's maximum and s[row] its sum of exp(x - m). Every lane adds at most PER
// elements in order, then a tree in workgroup memory; the partials are reduced afterwards.
// params: rows, L, inner, chunks. A row is L elements `inner` apart.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read> m: array<f32>;
@group(0) @binding(3) var<storage, read> s: array<f32>;
{{LABELS}}
@group(0) @binding({{PART}}) var<storage, read_write> part: array<f32>;
const PER: u32 = {{PER}}u;
var<workgroup> sh: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let gid = wid.y * nwg.x + wid.x;
  let chunks = prm(3u);
  let row = gid / chunks;
  let live = row < prm(0u);
  let L = prm(1u);
  let inner = prm(2u);
  var acc = 0.0;
  if (live) {
    let base = (row / inner) * L * inner + row % inner;
    let mr = m[row];
    let start = (gid % chunks) * (256u * PER);
    let n = min(PER, (L - start + 255u) / 256u);
    for (var i = 0u; i < n; i = i + 1u) {
      let j = start + i * 256u + lid;
      if (j < L) {
        let k = base + j * inner;
        let xv = f32(x[k]);
        acc = acc + {{TERM}};
      }
    }
  }
  sh[lid] = acc;
  workgroupBarrier();
  for (var h = 128u; h > 0u; h = h >> 1u) {
    if (lid < h) { sh[lid] = sh[lid] + sh[lid + h]; }
    workgroupBarrier();
  }
  if (live && lid == 0u) { part[gid] = sh[0]; }
}
