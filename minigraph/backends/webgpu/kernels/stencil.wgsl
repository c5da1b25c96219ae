// stencil: result element t (batch b, window (o0..o3)) combines x[b, start + o*s + j*d] * w[j]
// over the window positions j = k in [prm(0), prm(1)) of KK per pass (loops.long_loop), in the
// order of k; MIN/ARGUMENT_MIN (and MAX) keep the first extreme, a NaN counting as one.
// The source is already padded (PADDED: its last four sizes, x's strides).
{{PARAMS}}
@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read> w: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> out: array<{{OUT_T}}>;
@group(0) @binding(4) var<storage, read_write> state: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
{{DECOMPOSE_OUT}}
  let j0 = prm(0u);
  let j1 = prm(1u);
  var acc = {{INIT}};
  var best = 0u;
  if (j0 > 0u) { acc = bitcast<f32>(state[2u * t]); best = state[2u * t + 1u]; }
  for (var k = j0; k < j1; k = k + 1u) {
{{DECOMPOSE_K}}
    let v = f32(x[{{X_INDEX}}]) * f32(w[k]);
{{COMBINE}}
  }
  if (j1 == {{KK}}u) { out[t] = {{RESULT}}; } else { state[2u * t] = bitcast<u32>(acc); state[2u * t + 1u] = best; }
}
