// Scaled dot-product attention, one invocation per query row and chunk of at most CH result
// columns (o = row * chunks + chunk, row = b * Nq + i): out[b, i, d] = sum_j softmax_j(SCALE *
// q[b, i] . k[b, j] + mask[b, i, j]) * v[b, j, d] for the chunk's columns d, with an online
// softmax: a running maximum m, the running sum l of exp(s - m) and the running weighted sums
// acc[], all rescaled by exp(m_old - m_new) when the maximum grows, so no exp sees a positive
// argument (logits of 1e4 stay finite). Each score is computed once per chunk, not once per column.
// A key scoring -inf adds nothing; a row with every key at -inf ends with l = 0 and gives 0
// (PyTorch's rule); NaN or +inf (inf - inf) makes l NaN, tested on the bits (lavapipe's ordered
// comparisons call NaN != 0 false).
// l and acc[] are compensated (Kahan) sums: thousands of keys added in order would otherwise lose
// digits (1.2e-4 relative over 70,000 keys). Each new sum is multiplied by `one`, a parameter
// equal to 1, before its compensation is taken: the shader compiler (Mesa's NIR) folds
// (a + b) - a to b in code not marked exact, which would drop the compensation.
// A long loop (loops.py): this pass visits keys j0 <= j < j1 and keeps (m, l, its compensation,
// acc[], their compensations) in `state`, 3 + 2 * CH words per invocation.
// params: invocations, Nq, Nkv, Dv, scale (f32 bits), mask stride along i, along j, 1.0 (f32 bits),
// chunks, then per batch axis (size, q stride, k stride, v stride, mask stride), last axis first,
// then j0, j1.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> Q: array<{{T}}>;
@group(0) @binding(2) var<storage, read> K: array<{{T}}>;
@group(0) @binding(3) var<storage, read> V: array<{{T}}>;
@group(0) @binding(4) var<storage, read> M: array<{{T}}>;
@group(0) @binding(5) var<storage, read_write> O: array<{{T}}>;
@group(0) @binding(6) var<storage, read_write> state: array<f32>;
const D: u32 = {{D}}u;
const CH: u32 = {{CH}}u;
const BR: u32 = {{BR}}u;
const TAIL: u32 = {{TAIL}}u;
const WORDS: u32 = 3u + 2u * CH;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let o = (wid.y * nwg.x + wid.x) * 64u + lid;
  if (o >= prm(0u)) { return; }
  let Nq = prm(1u);
  let Nkv = prm(2u);
  let Dv = prm(3u);
  let scale = bitcast<f32>(prm(4u));
  let one = bitcast<f32>(prm(7u));  // 1.0, unknown to the compiler: see the compensated sums
  let chunks = prm(8u);
  let row = o / chunks;
  let d0 = (o % chunks) * CH;
  let nd = min(CH, Dv - d0);
  let i = row % Nq;
  var r = row / Nq;
  var qo = 0u;
  var ko = 0u;
  var vo = 0u;
  var mo = 0u;
  for (var a = 0u; a < BR; a = a + 1u) {
    let size = prm(9u + 5u * a);
    let c = r % size;
    r = r / size;
    qo = qo + c * prm(10u + 5u * a);
    ko = ko + c * prm(11u + 5u * a);
    vo = vo + c * prm(12u + 5u * a);
    mo = mo + c * prm(13u + 5u * a);
  }
  qo = qo + i * D;
  vo = vo + d0;
  mo = mo + i * prm(5u);
  let msj = prm(6u);
  let j0 = prm(TAIL);
  let j1 = prm(TAIL + 1u);
  let so = WORDS * o;
  var m = -mg_inf();
  var l = 0.0;
  var lc = 0.0;
  var acc: array<f32, CH>;
  var ac: array<f32, CH>;
  if (j0 > 0u) {
    m = state[so];
    l = state[so + 1u];
    lc = state[so + 2u];
    for (var t = 0u; t < CH; t = t + 1u) {
      acc[t] = state[so + 3u + t];
      ac[t] = state[so + 3u + CH + t];
    }
  }
  for (var j = j0; j < j1; j = j + 1u) {
    var dot = 0.0;
    let kr = ko + j * D;
    for (var c = 0u; c < D; c = c + 1u) { dot = dot + f32(Q[qo + c]) * f32(K[kr + c]); }
    let s = dot * scale + f32(M[mo + j * msj]);
    if (bitcast<u32>(s) == 0xff800000u) { continue; }  // -inf: adds nothing
    if (s > m) {
      let shrink = mg_exp(m - s);
      l = l * shrink;
      lc = lc * shrink;
      for (var t = 0u; t < CH; t = t + 1u) {
        acc[t] = acc[t] * shrink;
        ac[t] = ac[t] * shrink;
      }
      m = s;
    }
    let p = mg_exp(s - m);
    let yl = p - lc;
    let tl = (l + yl) * one;
    lc = (tl - l) - yl;
    l = tl;
    let vr = vo + j * Dv;
    for (var t = 0u; t < nd; t = t + 1u) {
      let ya = p * f32(V[vr + t]) - ac[t];
      let ta = (acc[t] + ya) * one;
      ac[t] = (ta - acc[t]) - ya;
      acc[t] = ta;
    }
  }
  if (j1 < Nkv) {
    state[so] = m;
    state[so + 1u] = l;
    state[so + 2u] = lc;
    for (var t = 0u; t < CH; t = t + 1u) {
      state[so + 3u + t] = acc[t];
      state[so + 3u + CH + t] = ac[t];
    }
    return;
  }
  let bad = mg_isnan(l);
  for (var t = 0u; t < nd; t = t + 1u) {
    var y = 0.0;
    if (bad || mg_isnan(acc[t])) { y = mg_nan(); } else if (l > 0.0) { y = acc[t] / l; }
    O[row * Dv + d0 + t] = {{T}}(y);
  }
}
