// One resize pass along one axis: x viewed as [OUTER, N, INNER] -> y [OUTER, M, INNER], one
// thread per result element. The host computed the taps of result index o (ops/resize.py):
// taps[3o] = i0, taps[3o + 1] = i1, taps[3o + 2] = the bits of f, the weight of i1 (f = 0
// reads i0 alone).
@group(0) @binding(0) var<storage, read> x: array<{{TI}}>;
@group(0) @binding(1) var<storage, read> taps: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<{{TO}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= {{TOTAL}}u) { return; }
  let inner = i % {{INNER}}u;
  let rest = i / {{INNER}}u;
  let o = rest % {{M}}u;
  let outer = rest / {{M}}u;
  let base = outer * {{N}}u * {{INNER}}u + inner;
  let f = bitcast<f32>(taps[3u * o + 2u]);
  let a = f32(x[base + taps[3u * o] * {{INNER}}u]);
  var v = a;
  if (f > 0.0) {
    let b = f32(x[base + taps[3u * o + 1u] * {{INNER}}u]);
    v = a * (1.0 - f) + b * f;
  }
  y[i] = {{TO}}(v);
}
