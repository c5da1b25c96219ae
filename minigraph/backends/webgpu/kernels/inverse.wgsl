// inverse: one invocation per N x N matrix b; Gauss-Jordan with partial pivoting (the first row
// of largest magnitude) in float32 on w (a copy of the matrix) and v (starts as I), then v is
// written out; an exact zero (or non-finite) pivot makes the whole matrix NaN.
@group(0) @binding(0) var<storage, read> a: array<{{T}}>;
@group(0) @binding(1) var<storage, read_write> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<{{T}}>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let b = (wid.y * nwg.x + wid.x) * 64u + lid;
  if (b >= {{BATCH}}u) { return; }
  let n = {{N}}u;
  let o = b * n * n;
  for (var e = 0u; e < n * n; e = e + 1u) {
    w[o + e] = f32(a[o + e]);
    v[o + e] = select(0.0, 1.0, e / n == e % n);
  }
  var bad = false;
  for (var k = 0u; k < n; k = k + 1u) {
    var piv = k;
    var best = abs(w[o + k * n + k]);
    for (var i = k + 1u; i < n; i = i + 1u) {
      let m = abs(w[o + i * n + k]);
      if (m > best) { best = m; piv = i; }
    }
    if (piv != k) {
      for (var j = 0u; j < n; j = j + 1u) {
        let t0 = w[o + k * n + j]; w[o + k * n + j] = w[o + piv * n + j]; w[o + piv * n + j] = t0;
        let t1 = v[o + k * n + j]; v[o + k * n + j] = v[o + piv * n + j]; v[o + piv * n + j] = t1;
      }
    }
    var p = w[o + k * n + k];
    // p - p is 0 for finite p, NaN for inf or NaN
    if (p == 0.0 || (p - p) != 0.0) { bad = true; p = 1.0; }
    for (var j = 0u; j < n; j = j + 1u) {
      w[o + k * n + j] = w[o + k * n + j] / p;
      v[o + k * n + j] = v[o + k * n + j] / p;
    }
    for (var i = 0u; i < n; i = i + 1u) {
      if (i == k) { continue; }
      let f = w[o + i * n + k];
      for (var j = 0u; j < n; j = j + 1u) {
        w[o + i * n + j] = w[o + i * n + j] - f * w[o + k * n + j];
        v[o + i * n + j] = v[o + i * n + j] - f * v[o + k * n + j];
      }
    }
  }
  let nan = bitcast<f32>(0x7fc00000u);
  for (var e = 0u; e < n * n; e = e + 1u) {
    out[o + e] = {{T}}(select(v[o + e], nan, bad));
  }
}
