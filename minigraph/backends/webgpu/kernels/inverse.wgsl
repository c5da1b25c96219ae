// inverse, Gauss-Jordan with partial pivoting (the first row of largest magnitude) in float32 on
// w (a copy of each N x N matrix) and v (starts as I), one dispatch per stage so that no
// invocation loops more than O(N) times (llvmpipe stops longer loops):
// INIT (one invocation per element) copies; PIVOT k (one per matrix) picks the pivot row, swaps
// it into row k and divides row k by the pivot; ELIMINATE k (one per matrix row i) subtracts
// w[i][k] times row k from row i; FINAL (one per element) writes v, or NaN for the whole matrix
// when a pivot was an exact zero or non-finite (bad[b]).
{{PARAMS}}
@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<{{T}}>;
@group(0) @binding(5) var<storage, read_write> bad: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 64u + lid;
  let n = {{N}}u;
  let stage = prm(0u);
  let k = prm(1u);
  if (stage == 0u) {  // INIT
    if (t >= {{BATCH}}u * n * n) { return; }
    let e = t % (n * n);
    w[t] = f32(a[t]);
    v[t] = select(0.0, 1.0, e / n == e % n);
    if (e == 0u) { bad[t / (n * n)] = 0u; }
  } else if (stage == 1u) {  // PIVOT k
    if (t >= {{BATCH}}u) { return; }
    let o = t * n * n;
    var piv = k;
    var best = abs(w[o + k * n + k]);
    for (var i = k + 1u; i < n; i = i + 1u) {
      let m = abs(w[o + i * n + k]);
      if (m > best) { best = m; piv = i; }
    }
    var p = w[o + piv * n + k];
    // p - p is 0 for finite p, NaN for inf or NaN
    if (p == 0.0 || (p - p) != 0.0) { bad[t] = 1u; p = 1.0; }
    for (var j = 0u; j < n; j = j + 1u) {
      let w0 = w[o + k * n + j];
      let v0 = v[o + k * n + j];
      w[o + k * n + j] = w[o + piv * n + j] / p;
      v[o + k * n + j] = v[o + piv * n + j] / p;
      if (piv != k) { w[o + piv * n + j] = w0; v[o + piv * n + j] = v0; }
    }
  } else if (stage == 2u) {  // ELIMINATE k
    if (t >= {{BATCH}}u * n) { return; }
    let i = t % n;
    if (i == k) { return; }
    let o = (t / n) * n * n;
    let f = w[o + i * n + k];
    for (var j = 0u; j < n; j = j + 1u) {
      w[o + i * n + j] = w[o + i * n + j] - f * w[o + k * n + j];
      v[o + i * n + j] = v[o + i * n + j] - f * v[o + k * n + j];
    }
  } else {  // FINAL
    if (t >= {{BATCH}}u * n * n) { return; }
    let nan = bitcast<f32>(0x7fc00000u);
    out[t] = {{T}}(select(v[t], nan, bad[t / (n * n)] != 0u));
  }
}
