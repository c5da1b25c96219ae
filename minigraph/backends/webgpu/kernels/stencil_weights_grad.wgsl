// stencil_weights_gradient: window position k (j0..j3) sums dy[m] * xp[b, start + o*s + j*d] over
// the incoming elements m = (b, o) in [prm(0), prm(1)) of MM per pass (loops.long_loop).
{{PARAMS}}
@group(0) @binding(1) var<storage, read> dy: array<{{T}}>;
@group(0) @binding(2) var<storage, read> x: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> out: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> state: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let k = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (k >= {{KK}}u) { return; }
{{DECOMPOSE_K}}
  let m0 = prm(0u);
  let m1 = prm(1u);
  var acc = 0.0;
  if (m0 > 0u) { acc = bitcast<f32>(state[k]); }
  for (var m = m0; m < m1; m = m + 1u) {
{{DECOMPOSE_M}}
    acc = acc + f32(dy[m]) * f32(x[{{X_INDEX}}]);
  }
  if (m1 == {{MM}}u) { out[k] = {{T}}(acc); } else { state[k] = bitcast<u32>(acc); }
}
