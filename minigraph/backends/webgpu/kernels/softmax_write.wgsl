// y = exp(x - m[row]) / s[row], one thread per element, for rows too long for the one-pass kernel
// (m: the row's maximum, s: its sum of exp(x - m), from the earlier passes).
// params: n (elements), L, inner. A row is L elements `inner` apart.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read> m: array<f32>;
@group(0) @binding(3) var<storage, read> s: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= prm(0u)) { return; }
  let L = prm(1u);
  let inner = prm(2u);
  let row = (i / (L * inner)) * inner + i % inner;
  y[i] = {{T}}(mg_exp(f32(x[i]) - m[row]) / s[row]);
}
