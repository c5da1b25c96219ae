// Scaled dot-product attention, one invocation per result element o = ((b * Nq + i) * Dv + d):
// out[b, i, d] = sum_j softmax_j(SCALE * q[b, i] . k[b, j] + mask[b, i, j]) * v[b, j, d], with an
// online softmax: a running maximum m, the running sum l of exp(s - m) and the running weighted
// sum acc, both rescaled by exp(m_old - m_new) when the maximum grows, so no exp sees a positive
// argument (logits of 1e4 stay finite). l and acc are compensated (Kahan) sums: thousands of
// keys added in order would otherwise lose digits (1.2e-4 relative over 70,000 keys). The sum is
// multiplied by `one`, a parameter equal to 1, before its compensation is taken: the shader compiler
// (Mesa's NIR) folds (a + b) - a to b in code not marked exact, which would drop the compensation. A key scoring -inf adds nothing; a row with every key at
// -inf ends with l = 0 and gives 0 (PyTorch's rule); NaN or +inf (inf - inf) makes l NaN.
// A long loop (loops.py): this pass visits keys j0 <= j < j1 and keeps (m, l, its compensation, acc, its
// compensation) in `state`.
// params: n_out, Nq, Nkv, Dv, scale (f32 bits), mask stride along i, along j, 1.0 (f32 bits), then
// per batch axis (size, q stride, k stride, v stride, mask stride), last axis first, then j0, j1.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> Q: array<{{T}}>;
@group(0) @binding(2) var<storage, read> K: array<{{T}}>;
@group(0) @binding(3) var<storage, read> V: array<{{T}}>;
@group(0) @binding(4) var<storage, read> M: array<{{T}}>;
@group(0) @binding(5) var<storage, read_write> O: array<{{T}}>;
@group(0) @binding(6) var<storage, read_write> state: array<f32>;
const D: u32 = {{D}}u;
const BR: u32 = {{BR}}u;
const TAIL: u32 = {{TAIL}}u;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let o = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (o >= prm(0u)) { return; }
  let Nq = prm(1u);
  let Nkv = prm(2u);
  let Dv = prm(3u);
  let scale = bitcast<f32>(prm(4u));
  let one = bitcast<f32>(prm(7u));  // 1.0, unknown to the compiler: see the compensated sums
  let d = o % Dv;
  let i = (o / Dv) % Nq;
  var r = o / (Dv * Nq);
  var qo = 0u;
  var ko = 0u;
  var vo = 0u;
  var mo = 0u;
  for (var a = 0u; a < BR; a = a + 1u) {
    let size = prm(8u + 5u * a);
    let c = r % size;
    r = r / size;
    qo = qo + c * prm(9u + 5u * a);
    ko = ko + c * prm(10u + 5u * a);
    vo = vo + c * prm(11u + 5u * a);
    mo = mo + c * prm(12u + 5u * a);
  }
  qo = qo + i * D;
  vo = vo + d;
  mo = mo + i * prm(5u);
  let msj = prm(6u);
  let j0 = prm(TAIL);
  let j1 = prm(TAIL + 1u);
  var m = -mg_inf();
  var l = 0.0;
  var lc = 0.0;
  var acc = 0.0;
  var ac = 0.0;
  if (j0 > 0u) {
    m = state[5u * o];
    l = state[5u * o + 1u];
    lc = state[5u * o + 2u];
    acc = state[5u * o + 3u];
    ac = state[5u * o + 4u];
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
      acc = acc * shrink;
      ac = ac * shrink;
      m = s;
    }
    let p = mg_exp(s - m);
    let yl = p - lc;
    let tl = (l + yl) * one;
    lc = (tl - l) - yl;
    l = tl;
    let ya = p * f32(V[vo + j * Dv]) - ac;
    let ta = (acc + ya) * one;
    ac = (ta - acc) - ya;
    acc = ta;
  }
  if (j1 < Nkv) {
    state[5u * o] = m;
    state[5u * o + 1u] = l;
    state[5u * o + 2u] = lc;
    state[5u * o + 3u] = acc;
    state[5u * o + 4u] = ac;
  } else {
    var y = 0.0;  // NaN tested on the bits: lavapipe's ordered comparisons call NaN != 0 false
    if (mg_isnan(l) || mg_isnan(acc)) { y = mg_nan(); } else if (l > 0.0) { y = acc / l; }
    O[o] = {{T}}(y);
  }
}
