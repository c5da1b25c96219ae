// stencil_source_gradient: padded-source element t (batch b, position (p0..p3)) sums dy * w[k]
// over the window positions k in [prm(0), prm(1)) of KK per pass whose window o reads it:
// p - start - j*d = o*s with 0 <= o < OUT on each of the four dimensions.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> dy: array<{{T}}>;
@group(0) @binding(2) var<storage, read> w: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> out: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> state: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
{{DECOMPOSE_P}}
  let j0 = prm(0u);
  let j1 = prm(1u);
  var acc = 0.0;
  if (j0 > 0u) { acc = bitcast<f32>(state[t]); }
  for (var k = j0; k < j1; k = k + 1u) {
{{DECOMPOSE_K}}
{{TEST}}
  }
  if (j1 == {{KK}}u) { out[t] = {{T}}(acc); } else { state[t] = bitcast<u32>(acc); }
}
