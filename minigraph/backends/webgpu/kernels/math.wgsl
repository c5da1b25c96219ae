// Math prelude shared by the kernels that need it.
// WGSL leaves NaN/Inf behaviour and transcendental precision to the implementation (NVIDIA's
// sin has 2^-21 absolute error, log 2^-21 near 1), so minigraph computes these itself, in f32,
// with Cephes' single-precision algorithms (about 1-2 ulp), and tests NaN on the bits.

fn mg_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn mg_isinf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn mg_nan() -> f32 { return bitcast<f32>(0x7fc00000u); }
fn mg_inf() -> f32 { return bitcast<f32>(0x7f800000u); }

// NaN-propagating maximum/minimum (NumPy's np.maximum / np.minimum)
fn mg_max(a: f32, b: f32) -> f32 {
  if (mg_isnan(a)) { return a; }
  if (mg_isnan(b)) { return b; }
  return max(a, b);
}
fn mg_min(a: f32, b: f32) -> f32 {
  if (mg_isnan(a)) { return a; }
  if (mg_isnan(b)) { return b; }
  return min(a, b);
}

// NaN-ignoring maximum/minimum (MPSGraph's maximum/minimum, NumPy's np.fmax / np.fmin):
// NaN only where both are NaN
fn mg_fmax(a: f32, b: f32) -> f32 {
  if (mg_isnan(a)) { return b; }
  if (mg_isnan(b)) { return a; }
  return max(a, b);
}
fn mg_fmin(a: f32, b: f32) -> f32 {
  if (mg_isnan(a)) { return b; }
  if (mg_isnan(b)) { return a; }
  return min(a, b);
}

// x * 2^n for n in [-300, 300] without overflowing the exponent argument
fn mg_ldexp(x: f32, n: i32) -> f32 {
  let h = n / 2;
  return ldexp(ldexp(x, h), n - h);
}

fn mg_exp(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  if (x > 88.72283935546875) { return mg_inf(); }
  if (x < -103.97208404541015625) { return 0.0; }
  let n = floor(x * 1.44269504088896341 + 0.5);
  var r = x - n * 0.693359375;
  r = r - n * (-2.12194440e-4);
  let r2 = r * r;
  var p = 1.9875691500e-4;
  p = p * r + 1.3981999507e-3;
  p = p * r + 8.3334519073e-3;
  p = p * r + 4.1665795894e-2;
  p = p * r + 1.6666665459e-1;
  p = p * r + 5.0000001201e-1;
  return mg_ldexp(p * r2 + r + 1.0, i32(n));
}

fn mg_log(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  if (x < 0.0) { return mg_nan(); }
  if (x == 0.0) { return -mg_inf(); }
  if (mg_isinf(x)) { return x; }
  let fr = frexp(x);
  var m = fr.fract;
  var e = f32(fr.exp);
  if (m < 0.70710678118654752440) {
    e = e - 1.0;
    m = m + m - 1.0;
  } else {
    m = m - 1.0;
  }
  let z = m * m;
  var y = 7.0376836292e-2;
  y = y * m - 1.1514610310e-1;
  y = y * m + 1.1676998740e-1;
  y = y * m - 1.2420140846e-1;
  y = y * m + 1.4249322787e-1;
  y = y * m - 1.6668057665e-1;
  y = y * m + 2.0000714765e-1;
  y = y * m - 2.4999993993e-1;
  y = y * m + 3.3333331174e-1;
  y = y * m * z;
  y = y + e * (-2.12194440e-4);
  y = y - 0.5 * z;
  return (m + y) + e * 0.693359375;
}

fn mg_sin_poly(z: f32, zz: f32) -> f32 {
  return ((-1.9515295891e-4 * zz + 8.3321608736e-3) * zz - 1.6666654611e-1) * zz * z + z;
}
fn mg_cos_poly(zz: f32) -> f32 {
  return ((2.443315711809948e-5 * zz - 1.388731625493765e-3) * zz + 4.166664568298827e-2) * zz * zz
         - 0.5 * zz + 1.0;
}

// octant j (0..7) of |x| and the reduced argument, Cody-Waite in three parts
fn mg_reduce(ax: f32) -> vec2<f32> {
  var j = u32(ax * 1.27323954473516);
  var y = f32(j);
  if ((j & 1u) == 1u) {
    j = j + 1u;
    y = y + 1.0;
  }
  let z = ((ax - y * 0.78515625) - y * 2.4187564849853515625e-4) - y * 3.77489497744594108e-8;
  return vec2<f32>(z, f32(j & 7u));
}

fn mg_sin(x: f32) -> f32 {
  if (mg_isnan(x) || mg_isinf(x)) { return mg_nan(); }
  var sgn = 1.0;
  if (x < 0.0) { sgn = -1.0; }
  let red = mg_reduce(abs(x));
  var j = u32(red.y);
  if (j > 3u) {
    sgn = -sgn;
    j = j - 4u;
  }
  let z = red.x;
  let zz = z * z;
  if (j == 1u || j == 2u) { return sgn * mg_cos_poly(zz); }
  return sgn * mg_sin_poly(z, zz);
}

fn mg_cos(x: f32) -> f32 {
  if (mg_isnan(x) || mg_isinf(x)) { return mg_nan(); }
  let red = mg_reduce(abs(x));
  var j = u32(red.y);
  var sgn = 1.0;
  if (j > 3u) {
    j = j - 4u;
    sgn = -sgn;
  }
  if (j > 1u) { sgn = -sgn; }
  let z = red.x;
  let zz = z * z;
  if (j == 1u || j == 2u) { return sgn * mg_sin_poly(z, zz); }
  return sgn * mg_cos_poly(zz);
}

fn mg_tanh(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  let ax = abs(x);
  if (ax < 0.625) {
    let z = x * x;
    return x + x * z * ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z
                          + 1.33314422036e-1) * z - 3.33332819422e-1);
  }
  var r = 1.0;
  if (ax < 9.0) {
    r = 1.0 - 2.0 / (mg_exp(2.0 * ax) + 1.0);
  }
  return select(r, -r, x < 0.0);
}

// As the NumPy backend: 0.5 * (1 + tanh(x / 2)), which never overflows
fn mg_sigmoid(x: f32) -> f32 { return 0.5 * (mg_tanh(0.5 * x) + 1.0); }

// 0, -0 and +inf are returned as they are: some GPUs compute sqrt as x * rsqrt(x)
fn mg_sqrt(x: f32) -> f32 {
  if (mg_isnan(x) || x == 0.0 || mg_isinf(x) && x > 0.0) { return x; }
  if (x < 0.0) { return mg_nan(); }
  return sqrt(x);
}

// NumPy's power: x**0 == 1 and 1**y == 1 even for NaN; a negative base needs an integer exponent
fn mg_pow(a: f32, b: f32) -> f32 {
  if (b == 0.0 || a == 1.0) { return 1.0; }
  if (mg_isnan(a) || mg_isnan(b)) { return mg_nan(); }
  let binf = mg_isinf(b);
  let is_int = !binf && floor(b) == b;
  if (a < 0.0 && !is_int && !binf) { return mg_nan(); }
  if (a == -1.0 && binf) { return 1.0; }
  var r = mg_exp(b * mg_log(abs(a)));
  if (a < 0.0 && is_int && abs(b) < 16777216.0 && (i32(b) & 1) == 1) { r = -r; }
  return r;
}
