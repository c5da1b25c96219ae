// One axis of a discrete Fourier transform, summed directly: for each result element t, with
// coordinate k along the axis (length LEN_OUT) and o, q the flat coordinates before and after it,
//   out[t] = SCALE * sum over m < LEN_IN of W(m) * x[o, m, q] * tw[(m * k) mod N]
// where tw is a host-made table of exp(s 2 pi i r / N) (float64 rounded to f32), x is read as
// (re, 0) when the input is real, W(m) is 1, or for the Hermitean-to-real axis 2 except at m = 0
// and m = N / 2, and then only the real part is kept. One pass sums m in [prm(0), prm(1))
// (loops.long_loop), the running sum kept in state. The terms are summed in blocks of 64 and the
// blocks' sums added to the total, so rounding grows with 64 + n / 64, not n.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> x: array<{{TIN}}>;
@group(0) @binding(2) var<storage, read> tw: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<{{TOUT}}>;
@group(0) @binding(4) var<storage, read_write> state: array<f32>;  // 4 words per invocation

fn mulmod(a: u32, b: u32, n: u32) -> u32 {
  // (a * b) mod n without overflow (a, b < n < 2^31): double and add, 32 steps
  var r = 0u;
  var aa = a % n;
  var bb = b;
  for (var i = 0u; i < 32u; i = i + 1u) {
    if ((bb & 1u) == 1u) { r = r + aa; if (r >= n) { r = r - n; } }
    aa = aa + aa;
    if (aa >= n) { aa = aa - n; }
    bb = bb >> 1u;
  }
  return r;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  let q = t % {{INNER}}u;
  let k = (t / {{INNER}}u) % {{LEN_OUT}}u;
  let o = t / ({{INNER}}u * {{LEN_OUT}}u);
  let base = o * {{LEN_IN}}u * {{INNER}}u + q;
  let j0 = prm(0u);
  let j1 = prm(1u);
  var s = vec2<f32>(0.0, 0.0);
  var b = vec2<f32>(0.0, 0.0);  // the current block's sum
  var r = 0u;
  if (j0 > 0u) {
    s = vec2<f32>(state[4u * t], state[4u * t + 1u]);
    b = vec2<f32>(state[4u * t + 2u], state[4u * t + 3u]);
    r = mulmod(j0, k, {{N}}u);
  }
  for (var m = j0; m < j1; m = m + 1u) {
    let v = {{LOAD}};
    let w = tw[r];
    b = b + {{WEIGHT}} * vec2<f32>(v.x * w.x - v.y * w.y, v.x * w.y + v.y * w.x);
    if ((m & 63u) == 63u) { s = s + b; b = vec2<f32>(0.0, 0.0); }
    r = r + k;
    if (r >= {{N}}u) { r = r - {{N}}u; }
  }
  if (j1 == {{LEN_IN}}u) { s = s + b; out[t] = {{STORE}}; } else {
    state[4u * t] = s.x; state[4u * t + 1u] = s.y; state[4u * t + 2u] = b.x; state[4u * t + 3u] = b.y;
  }
}
