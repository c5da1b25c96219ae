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

// x * 2^n for n in [-252, 254], as two multiplications by powers of two: exact, except for the
// one rounding of a subnormal result (WGSL's ldexp may flush those to zero)
fn mg_ldexp(x: f32, n: i32) -> f32 {
  let h = n / 2;
  return x * bitcast<f32>(u32(h + 127) << 23u) * bitcast<f32>(u32(n - h + 127) << 23u);
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

// frexp(x) for finite x > 0 from the bits: (fraction in [0.5, 1), exponent); a subnormal is
// normalised first (frexp and arithmetic may flush it to zero; log(1e-40) is -92.1, not -88.0)
fn mg_frexp(x: f32) -> vec2<f32> {
  let bits = bitcast<u32>(x);
  var mant = bits & 0x7fffffu;
  var ex = i32(bits >> 23u) - 126;
  if ((bits >> 23u) == 0u) {
    let s = countLeadingZeros(mant) - 8u;
    mant = (mant << s) & 0x7fffffu;
    ex = -125 - i32(s);
  }
  return vec2<f32>(bitcast<f32>(0x3f000000u | mant), f32(ex));
}

fn mg_log(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  if (mg_isnan(x)) { return x; }
  if ((bits & 0x7fffffffu) == 0u) { return -mg_inf(); }
  if ((bits >> 31u) != 0u) { return mg_nan(); }
  if (mg_isinf(x)) { return x; }
  let fr = mg_frexp(x);
  var m = fr.x;
  var e = fr.y;
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

// sin(z + zl) and cos(z + zl) for |z| <= pi/4 and a tail |zl| <= ulp(z) / 2 (0 when z is exact)
fn mg_sin_poly(z: f32, zz: f32, zl: f32) -> f32 {
  return (((-1.9515295891e-4 * zz + 8.3321608736e-3) * zz - 1.6666654611e-1) * zz * z
          + zl * (1.0 - 0.5 * zz)) + z;
}
fn mg_cos_poly(z: f32, zz: f32, zl: f32) -> f32 {
  return ((((2.443315711809948e-5 * zz - 1.388731625493765e-3) * zz + 4.166664568298827e-2) * zz * zz
          - zl * z) - 0.5 * zz) + 1.0;
}

// 2/pi in 32-bit words, most significant first: bits 2^-1 to 2^-224
const MG_TWO_OVER_PI = array<u32, 7>(0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u,
                                     0x3c439041u, 0xfe5163abu);

// a * b as (low word, high word), from 16-bit halves
fn mg_mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>((mid << 16u) | (p00 & 0xffffu), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

// (hi, lo) + (hi2, lo2), 64-bit, as (lo, hi)
fn mg_add_wide(hi: u32, lo: u32, hi2: u32, lo2: u32) -> vec2<u32> {
  let l = lo + lo2;
  return vec2<u32>(l, hi + hi2 + select(0u, 1u, l < lo));
}

// Payne-Hanek reduction of a finite ax >= pi/4: (r, tail, q) with ax = (4k + q) * pi/2 + r + tail,
// |r| <= pi/4, |tail| <= ulp(r) / 2.
// All in integers, so no rounding, fused multiply-add or flushing in the driver can change it:
// the 24-bit significand times the 128 bits of 2/pi its exponent selects (earlier bits only add
// multiples of 4) gives ax * 2/pi mod 4 with 62 fraction bits; the fraction times pi/2 (64-bit
// fixed point) is rounded to f32, the rest kept as the tail. The closest a float32 comes to a multiple of pi/2 is
// about 2^-29 away, so r keeps more than 30 exact bits.
fn mg_reduce(ax: f32) -> vec3<f32> {
  let bits = bitcast<u32>(ax);
  let m = (bits & 0x7fffffu) | 0x800000u;
  let e = i32(bits >> 23u) - 150;                 // ax = m * 2^e, e in [-24, 104]
  let i0 = u32(max(e - 2, 0)) / 32u;              // first word of 2/pi that matters, 0..3
  var t = MG_TWO_OVER_PI;
  var p: array<u32, 5>;                           // m * words i0..i0+3, least significant first
  var carry = 0u;
  for (var k = 0u; k < 4u; k = k + 1u) {
    let w = mg_mul_wide(m, t[i0 + 3u - k]);
    let l = w.x + carry;
    carry = w.y + select(0u, 1u, l < w.x);
    p[k] = l;
  }
  p[4] = carry;
  // ax * 2/pi = p * 2^-f with f in [95, 152]: the 64 bits from 2^1 down to 2^-62
  let low = u32(128 + 32 * i32(i0) - e) - 62u;
  let wi = low / 32u;
  let sh = low % 32u;
  var lo = p[wi];
  var hi = p[wi + 1u];
  if (sh != 0u) {
    lo = (lo >> sh) | (hi << (32u - sh));
    hi = (hi >> sh) | (p[wi + 2u] << (32u - sh));
  }
  var q = hi >> 30u;
  hi = (hi << 2u) | (lo >> 30u);
  lo = lo << 2u;
  // a fraction of one half or more goes to the next multiple: r = -(1 - fraction) * pi/2
  let up = (hi >> 31u) == 1u;
  if (up) {
    q = q + 1u;
    hi = ~hi;
    lo = ~lo;
  }
  // fraction (2^-64 units) times pi/2 (0xc90fdaa22168c235 = pi/2 * 2^63): the top 64 bits
  let a = mg_mul_wide(hi, 0xc90fdaa2u);
  let b = mg_mul_wide(hi, 0x2168c235u);
  let c = mg_mul_wide(lo, 0xc90fdaa2u);
  let s1 = mg_add_wide(a.y, a.x, 0u, b.y);
  let s2 = mg_add_wide(s1.y, s1.x, 0u, c.y);
  var rh = s2.y;                                  // r = (rh, rl) * 2^-63
  var rl = s2.x;
  if (rh == 0u && rl == 0u) { return vec3<f32>(0.0, 0.0, f32(q & 3u)); }
  var lz = countLeadingZeros(rh);
  if (rh == 0u) {
    lz = 32u + countLeadingZeros(rl);
    rh = rl << (lz - 32u);
    rl = 0u;
  } else if (lz > 0u) {
    rh = (rh << lz) | (rl >> (32u - lz));
    rl = rl << lz;
  }
  // r = (rh + rl * 2^-32) * 2^(-31 - lz), rh's top bit set: rounded to 24 bits (the carry may
  // bump the exponent), the rest in units of 2^(-31 - lz) scaled by a power of two
  let rnd = (rh >> 7u) & 1u;
  let r = bitcast<f32>(((126u - lz) << 23u) + (rh >> 8u) + rnd);
  let rest = (f32(rh & 0xffu) - 256.0 * f32(rnd)) + f32(rl) * 2.3283064365386963e-10;
  let tail = rest * bitcast<f32>((96u - lz) << 23u);
  return vec3<f32>(select(r, -r, up), select(tail, -tail, up), f32(q & 3u));
}

// (reduced argument, its tail, quadrant) of |x|; no reduction below pi/4
fn mg_quadrant(ax: f32) -> vec3<f32> {
  if (ax < 0.785398163397448) { return vec3<f32>(ax, 0.0, 0.0); }
  return mg_reduce(ax);
}

// sin and cos are exact for every finite float32 up to the polynomials' rounding (see
// docs/backends.md for the measured error); below 2^-12 sin(x) rounds to x (and keeps -0)
fn mg_sin(x: f32) -> f32 {
  if (mg_isnan(x) || mg_isinf(x)) { return mg_nan(); }
  let ax = abs(x);
  if (ax < 2.44140625e-4) { return x; }
  let red = mg_quadrant(ax);
  let q = u32(red.z);
  let z = red.x;
  let zz = z * z;
  var s = select(mg_sin_poly(z, zz, red.y), mg_cos_poly(z, zz, red.y), (q & 1u) == 1u);
  if (q >= 2u) { s = -s; }
  return select(s, -s, x < 0.0);
}

fn mg_cos(x: f32) -> f32 {
  if (mg_isnan(x) || mg_isinf(x)) { return mg_nan(); }
  let red = mg_quadrant(abs(x));
  let q = u32(red.z);
  let z = red.x;
  let zz = z * z;
  var c = select(mg_cos_poly(z, zz, red.y), mg_sin_poly(z, zz, red.y), (q & 1u) == 1u);
  if (q == 1u || q == 2u) { c = -c; }
  return c;
}

// below 2^-12 tanh(x) rounds to x (and keeps -0); above 9.01 to 1
fn mg_tanh(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  let ax = abs(x);
  if (ax < 2.44140625e-4) { return x; }
  if (ax < 0.625) {
    let z = x * x;
    return x + x * z * ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z
                          + 1.33314422036e-1) * z - 3.33332819422e-1);
  }
  var r = 1.0;
  if (ax < 10.0) {
    r = 1.0 - 2.0 / (mg_exp(2.0 * ax) + 1.0);
  }
  return select(r, -r, x < 0.0);
}

// As the NumPy backend: 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below, through e^-|x| only:
// nothing overflows, and for x < 0 the result keeps its relative precision down to
// e^x's underflow (log(sigmoid(-80)) is -80, not -inf)
fn mg_sigmoid(x: f32) -> f32 {
  let e = mg_exp(-abs(x));
  return select(1.0, e, x < 0.0) / (1.0 + e);
}

// 0, -0 and +inf are returned as they are: some GPUs compute sqrt as x * rsqrt(x)
fn mg_sqrt(x: f32) -> f32 {
  if (mg_isnan(x) || x == 0.0 || mg_isinf(x) && x > 0.0) { return x; }
  if (x < 0.0) { return mg_nan(); }
  return sqrt(x);
}

// IEEE pow (C99 Annex F, NumPy's power): x**0 == 1 and 1**y == 1 even for NaN; a negative base
// needs an integer exponent; zeros and infinities keep their sign under an odd integer exponent.
// Signs and zeros are read from the bits, so a subnormal base is not taken for zero.
fn mg_pow(a: f32, b: f32) -> f32 {
  if (b == 0.0 || a == 1.0) { return 1.0; }
  if (b == 1.0) { return a; }  // exactly, a subnormal too where the GPU flushes arithmetic
  if (mg_isnan(a) || mg_isnan(b)) { return mg_nan(); }
  let ua = bitcast<u32>(a);
  let aa = bitcast<f32>(ua & 0x7fffffffu);
  let neg = (ua >> 31u) == 1u;
  let binf = mg_isinf(b);
  let is_int = binf || floor(b) == b;
  let odd = !binf && is_int && abs(b) < 16777216.0 && (i32(b) & 1) != 0;
  if ((ua & 0x7fffffffu) == 0u || mg_isinf(a)) {
    // 0**y and inf**y: 0 or inf by the sign of y (flipped for a zero base), -0/-inf for an odd y
    let r = select(0.0, mg_inf(), (b < 0.0) == ((ua & 0x7fffffffu) == 0u));
    return select(r, -r, neg && odd);
  }
  if (binf) {
    if (aa == 1.0) { return 1.0; }
    return select(0.0, mg_inf(), (aa > 1.0) == (b > 0.0));
  }
  if (neg && !is_int) { return mg_nan(); }
  let r = mg_exp(b * mg_log(aa));
  return select(r, -r, neg && odd);
}

// x with the sign bit of s (C's copysign)
fn mg_copysign(x: f32, s: f32) -> f32 {
  return bitcast<f32>((bitcast<u32>(x) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u));
}

// floor, ceil and rint (halfway to even: WGSL's round) of floats; NaN, infinities and
// |x| >= 2^23 (already integers) pass through, and the result keeps the sign of x (-0.5 -> -0)
fn mg_is_integral(x: f32) -> bool { return !(abs(x) < 8388608.0); }
fn mg_floor(x: f32) -> f32 { if (mg_is_integral(x)) { return x; } return mg_copysign(floor(x), x); }
fn mg_ceil(x: f32) -> f32 { if (mg_is_integral(x)) { return x; } return mg_copysign(ceil(x), x); }
fn mg_rint(x: f32) -> f32 { if (mg_is_integral(x)) { return x; } return mg_copysign(round(x), x); }
// Metal's round: halfway cases away from zero (round(2.5) = 3, round(-0.5) = -1); x - trunc(x) is exact
fn mg_round(x: f32) -> f32 {
  if (mg_is_integral(x)) { return x; }
  let t = trunc(x);
  return mg_copysign(abs(t) + select(0.0, 1.0, abs(x - t) >= 0.5), x);
}

// 1 / sqrt(x): +inf at +0, -inf at -0 (IEEE rsqrt), NaN below zero
fn mg_rsqrt(x: f32) -> f32 { return 1.0 / mg_sqrt(x); }

// 2^x = 2^n * 2^f with n = round(x) and f = x - n in [-0.5, 0.5] (exact); 2^f = 1 + f * P(f),
// a degree-5 fit (1.05 ulp in float32)
fn mg_exp2(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  if (x >= 128.0) { return mg_inf(); }
  if (x < -151.0) { return 0.0; }
  let n = floor(x + 0.5);
  let f = x - n;
  var p = 0.00015395253;
  p = p * f + 0.00133907;
  p = p * f + 0.009618263;
  p = p * f + 0.055503577;
  p = p * f + 0.24022649;
  p = p * f + 0.6931472;
  return mg_ldexp(1.0 + f * p, i32(n));
}

// log2(x) = e + log2(m) with mg_log's reduction; log(m) = m1 + y is multiplied by log2(e) as
// 1 + 0.44269504 so that the large term m1 is not rounded (Cephes' log2f)
fn mg_log2(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  if (mg_isnan(x)) { return x; }
  if ((bits & 0x7fffffffu) == 0u) { return -mg_inf(); }
  if ((bits >> 31u) != 0u) { return mg_nan(); }
  if (mg_isinf(x)) { return x; }
  let fr = mg_frexp(x);
  var m = fr.x;
  var e = fr.y;
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
  y = y - 0.5 * z;
  let l = 0.44269504088896340736;
  return (((y * l + m * l) + y) + m) + e;
}

// erf: x + x * R(x^2) below 1 (1.06 ulp); 1 - e^(-x^2) * S(1/x) on [1, 2) and [2, 4) (1.2 ulp);
// 1 beyond, where 1 - erfc(x) rounds to 1. Odd, so erf(-0) = -0. Polynomials fitted to float64 erf.
fn mg_erf(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  let ax = abs(x);
  if (ax < 1.0) {
    let z = x * x;
    var r = -9.67359e-06;
    r = r * z + 0.00011268254;
    r = r * z - 0.00084843964;
    r = r * z + 0.0052210535;
    r = r * z - 0.026865438;
    r = r * z + 0.11283783;
    r = r * z - 0.37612638;
    r = r * z + 0.12837917;
    return x + x * r;
  }
  if (ax >= 4.0) { return mg_copysign(1.0, x); }
  let t = 1.0 / ax;
  var s: f32;
  if (ax < 2.0) {
    s = 0.02573069;
    s = s * t - 0.13992673;
    s = s * t + 0.30997226;
    s = s * t - 0.31030324;
    s = s * t - 0.034346752;
    s = s * t + 0.5781794;
    s = s * t - 0.0017220612;
  } else {
    s = -0.12813988;
    s = s * t + 0.37467393;
    s = s * t - 0.4073908;
    s = s * t + 0.02365258;
    s = s * t + 0.56178164;
    s = s * t + 0.00010280687;
  }
  return mg_copysign(1.0 - mg_exp(-(ax * ax)) * s, x);
}

// C's fmod, exact (musl's fmodf on the bits): the remainder of x / y truncated toward zero,
// with the sign of x; NaN when y is 0 or NaN or x is infinite or NaN
fn mg_fmod(x: f32, y: f32) -> f32 {
  var uxi = bitcast<u32>(x);
  var uyi = bitcast<u32>(y);
  var ex = i32((uxi >> 23u) & 0xffu);
  var ey = i32((uyi >> 23u) & 0xffu);
  let sx = uxi & 0x80000000u;
  if ((uyi << 1u) == 0u || mg_isnan(y) || ex == 0xff) { return mg_nan(); }
  if ((uxi << 1u) <= (uyi << 1u)) {
    if ((uxi << 1u) == (uyi << 1u)) { return bitcast<f32>(sx); }
    return x;
  }
  if (ex == 0) {
    var i = uxi << 9u;
    while ((i >> 31u) == 0u) { ex = ex - 1; i = i << 1u; }
    uxi = uxi << u32(-ex + 1);
  } else {
    uxi = (uxi & 0x7fffffu) | 0x800000u;
  }
  if (ey == 0) {
    var i = uyi << 9u;
    while ((i >> 31u) == 0u) { ey = ey - 1; i = i << 1u; }
    uyi = uyi << u32(-ey + 1);
  } else {
    uyi = (uyi & 0x7fffffu) | 0x800000u;
  }
  for (; ex > ey; ex = ex - 1) {
    let i = uxi - uyi;
    if ((i >> 31u) == 0u) {
      if (i == 0u) { return bitcast<f32>(sx); }
      uxi = i;
    }
    uxi = uxi << 1u;
  }
  let i = uxi - uyi;
  if ((i >> 31u) == 0u) {
    if (i == 0u) { return bitcast<f32>(sx); }
    uxi = i;
  }
  while ((uxi >> 23u) == 0u) { uxi = uxi << 1u; ex = ex - 1; }
  if (ex > 0) {
    uxi = (uxi - 0x800000u) | (u32(ex) << 23u);
  } else {
    uxi = uxi >> u32(-ex + 1);
  }
  return bitcast<f32>(uxi | sx);
}

// Python's %, NumPy's mod: fmod moved to the divisor's sign, a zero with the divisor's sign;
// MPSGraph's floorModulo gives 0 for a zero divisor
fn mg_floor_mod(x: f32, y: f32) -> f32 {
  if (y == 0.0) { return 0.0; }
  var r = mg_fmod(x, y);
  if (r == 0.0) { return mg_copysign(0.0, y); }
  if ((r < 0.0) != (y < 0.0)) { r = r + y; }
  return r;
}

// atan of a >= 0 (Cephes' atanf): reduced to [0, tan(pi/8)] by atan(a) = pi/4 + atan((a - 1) / (a + 1))
// or pi/2 + atan(-1 / a); the constants split in two parts
fn mg_atan_pos(a: f32) -> f32 {
  var x = a;
  var y = 0.0;
  var lo = 0.0;
  if (a > 2.414213562373095) {
    y = 1.5707963705062866;
    lo = -4.371139000186243e-08;
    x = -1.0 / a;
  } else if (a > 0.4142135623730950) {
    y = 0.7853981852531433;
    lo = -2.1855695000931214e-08;
    x = (a - 1.0) / (a + 1.0);
  }
  let z = x * x;
  let p = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * x;
  return y + ((p + lo) + x);
}

// C99 atan2(y, x): the angle of (x, y) in [-pi, pi], with its signed zeros and infinities
fn mg_atan2(y: f32, x: f32) -> f32 {
  if (mg_isnan(x) || mg_isnan(y)) { return mg_nan(); }
  let xneg = (bitcast<u32>(x) >> 31u) == 1u;
  let pi_hi = 3.1415927410125732;
  let pi_lo = -8.742278000372485e-08;
  var t: f32;
  if (y == 0.0) {
    t = select(0.0, pi_hi, xneg);
  } else if (mg_isinf(y)) {
    if (mg_isinf(x)) {
      t = select(0.7853981852531433, 2.356194496154785, xneg);
    } else {
      t = 1.5707963705062866;
    }
  } else if (x == 0.0) {
    t = 1.5707963705062866;
  } else if (mg_isinf(x)) {
    t = select(0.0, pi_hi, xneg);
  } else {
    t = mg_atan_pos(abs(y) / abs(x));
    if (xneg) { t = (pi_hi - t) + pi_lo; }
  }
  return mg_copysign(t, y);
}

// a truncated i32 remainder r of a / b moved to b's sign (Python's %)
fn mg_floor_fix_i32(r: i32, b: i32) -> i32 {
  if (r != 0i && ((r < 0i) != (b < 0i))) { return r + b; }
  return r;
}
