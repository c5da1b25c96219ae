// Random ops: Philox4x32-10 (as minigraph/philox.py) and the float32 formulas of
// backends/numpy/random.py, one invocation per Philox block of 4 words.
@group(0) @binding(0) var<storage, read> D: array<u32>;  // the run's draw number (lo, hi), or a state tensor
{{IO}}

// (hi, lo) of the 64-bit product a * b, from 16-bit halves (WGSL has no 64-bit integers)
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
  let al = a & 0xffffu;
  let ah = a >> 16u;
  let bl = b & 0xffffu;
  let bh = b >> 16u;
  let ll = al * bl;
  let lh = al * bh;
  let hl = ah * bl;
  let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
  return vec2<u32>(ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u), a * b);
}

fn philox(c: vec4<u32>) -> vec4<u32> {
  var x = c;
  var k0 = {{K0}};
  var k1 = {{K1}};
  for (var r = 0u; r < 10u; r = r + 1u) {
    if (r > 0u) {
      k0 = k0 + 0x9E3779B9u;
      k1 = k1 + 0xBB67AE85u;
    }
    let p0 = mulhilo(0xD2511F53u, x.x);
    let p1 = mulhilo(0xCD9E8D57u, x.z);
    x = vec4<u32>(p1.x ^ x.y ^ k0, p1.y, p0.x ^ x.w ^ k1, p0.y);
  }
  return x;
}

// [0, 1): the top 24 bits times 2^-24 (exact)
fn uniform01(w: u32) -> f32 {
  return f32(w >> 8u) * (1.0 / 16777216.0);
}

// (-1, 1), symmetric: (2 k + 1 - 2^23) / 2^23, k the top 23 bits (exact)
fn open_unit(w: u32) -> f32 {
  return f32(i32((w >> 9u) * 2u + 1u) - 8388608) * (1.0 / 8388608.0);
}

// log of a positive normal f32 as minigraph.philox.log_f32 (Cephes' logf)
fn log_f32(x: f32) -> f32 {
  let fr = frexp(x);
  var m = fr.fract;
  var e = f32(fr.exp);
  if (m < {{SQRTHF}}) {
    e = e - 1.0;
    m = m + m;
  }
  let t = m - 1.0;
  let z = t * t;
{{LOG_POLY}}
  var y = p * t * z;
  y = y + {{LOG_C1}} * e;
  y = y - 0.5 * z;
  return (t + y) + 0.693359375 * e;
}

// Giles' single-precision erfinv (minigraph.philox.erfinv_f32)
fn erfinv(x: f32) -> f32 {
  let w = -log_f32((1.0 - x) * (1.0 + x));
  var p: f32;
  if (w < 5.0) {
    let v = w - 2.5;
{{CENTRAL}}
  } else {
    let v = sqrt(w) - 3.0;
{{TAIL}}
  }
  return p * x;
}

// cos(2 pi u) as minigraph.philox.cos_2pi_f32: a quarter-turn reduction and Cephes' polynomials
fn cos_2pi(u: f32) -> f32 {
  let r = u - round(u);
  let q = round(r * 4.0);
  let a = (r - q * 0.25) * {{TWO_PI}};
  let z = a * a;
{{COS_POLY}}
  let k = ((i32(q) % 4) + 4) % 4;
  if (k == 0) {
    return c;
  }
  if (k == 1) {
    return -s;
  }
  if (k == 2) {
    return -c;
  }
  return s;
}

{{CTR}}
{{EXTRA}}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let b = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (b >= {{BLOCKS}}u) {
    return;
  }
  let w = philox(ctr(b, 0u));
{{BODY}}
}
