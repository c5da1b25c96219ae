// loss[row] = -sum(labels * (x - m - log(sum(exp(x - m))))), m = max(x), along the row
// Rows of at most 65,536 (a lane takes at most 256 steps per loop); longer ones take softmax_partial.
{{COMMON}}
@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read> labels: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> loss: array<{{TOUT}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = (wid.y * nwg.x + wid.x) * (256u / LANES) + lid / LANES;
  let lane = lid % LANES;
  let live = row < prm(0u);
  let L = prm(1u);
  let inner = prm(2u);
  var base = 0u;
  if (live) { base = row_base(row); }
  var m = -mg_inf();
  if (live) {
    for (var j = lane; j < L; j = j + LANES) { m = mg_max(m, f32(x[base + j * inner])); }
  }
  m = lanes_reduce(m, lid, true);
  var s = 0.0;
  if (live) {
    for (var j = lane; j < L; j = j + LANES) { s = s + mg_exp(f32(x[base + j * inner]) - m); }
  }
  let lse = mg_log(lanes_reduce(s, lid, false));
  var t = 0.0;
  if (live) {
    for (var j = lane; j < L; j = j + LANES) {
      let k = base + j * inner;
      t = t + f32(labels[k]) * (f32(x[k]) - m - lse);
    }
  }
  t = lanes_reduce(t, lid, false);
  if (live && lane == 0u) { loss[row] = {{TOUT}}(-t); }
}
