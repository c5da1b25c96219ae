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

// x = 2^e (1 + m) with sqrt(1/2) <= 1 + m < sqrt(2), for a finite x > 0: (m, e), Cephes' logf
// reduction (mg_log, mg_log2, mg_log10)
fn mg_log_reduce(x: f32) -> vec2<f32> {
  let fr = mg_frexp(x);
  if (fr.x < 0.70710678118654752440) {
    return vec2<f32>(fr.x + fr.x - 1.0, fr.y - 1.0);
  }
  return vec2<f32>(fr.x - 1.0, fr.y);
}

fn mg_log(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  if (mg_isnan(x)) { return x; }
  if ((bits & 0x7fffffffu) == 0u) { return -mg_inf(); }
  if ((bits >> 31u) != 0u) { return mg_nan(); }
  if (mg_isinf(x)) { return x; }
  let r = mg_log_reduce(x);
  let m = r.x;
  let e = r.y;
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
  let r = mg_pow_pos(aa, b);
  return select(r, -r, neg && odd);
}

// x = hi + lo exactly, hi the top 12 significant bits (cut on the bits: no rounding to undo)
fn mg_split12(x: f32) -> vec2<f32> {
  let h = bitcast<f32>(bitcast<u32>(x) & 0xfffff000u);
  return vec2<f32>(h, x - h);
}

// a * b = p + e exactly (Dekker's product: the four partial products of 12-bit halves are exact,
// so contracting any of them into an fma changes nothing)
fn mg_two_prod(a: f32, b: f32) -> vec2<f32> {
  let p = a * b;
  let sa = mg_split12(a);
  let sb = mg_split12(b);
  return vec2<f32>(p, ((sa.x * sb.x - p) + sa.x * sb.y + sa.y * sb.x) + sa.y * sb.y);
}

// (1 / c, log2(c) high, log2(c) low) for the 128 intervals of z in [0.7012, 1.4024) that the bits
// 0x3f338000 + (i << 16) start; c is the interval's centre, 1 / c rounded to float32 and log2(c)
// meaning -log2 of that rounded value, split in two floats (from float64); the interval holding
// 1 (i = 76) has c = 1 exactly, so bases near 1 lose nothing to cancellation
const MG_POW_LOG2 = array<vec3<f32>, 128>(
  vec3<f32>(1.4222222566604614, -0.5081469416618347, 3.057533781714028e-09), vec3<f32>(1.4143646955490112, -0.5001541972160339, 2.8539240304326086e-08),
  vec3<f32>(1.4065934419631958, -0.4922053813934326, -1.4685460847374543e-08), vec3<f32>(1.3989070653915405, -0.4843001365661621, 1.4486831290128066e-08),
  vec3<f32>(1.39130437374115, -0.47643807530403137, 4.488755145359846e-09), vec3<f32>(1.3837838172912598, -0.46861857175827026, -2.659393150139522e-09),
  vec3<f32>(1.376344084739685, -0.46084117889404297, -8.654311045575014e-09), vec3<f32>(1.3689839839935303, -0.4531055688858032, 5.575365169541158e-10),
  vec3<f32>(1.3617020845413208, -0.4454111158847809, 1.324531062607548e-08), vec3<f32>(1.3544973134994507, -0.4377575218677521, -1.0243704551271549e-08),
  vec3<f32>(1.3473684787750244, -0.43014445900917053, 5.53385470780654e-09), vec3<f32>(1.3403141498565674, -0.42257118225097656, -4.493033500807542e-09),
  vec3<f32>(1.3333333730697632, -0.4150375425815582, 3.07052328007984e-10), vec3<f32>(1.3264248371124268, -0.4075429141521454, -1.2302183272083766e-08),
  vec3<f32>(1.3195875883102417, -0.4000871181488037, 4.675209108739864e-09), vec3<f32>(1.312820553779602, -0.3926697373390198, 6.077546910177034e-09),
  vec3<f32>(1.3061224222183228, -0.38529011607170105, -1.0253572213514417e-08), vec3<f32>(1.299492359161377, -0.37794816493988037, 1.3955775202134646e-08),
  vec3<f32>(1.2929292917251587, -0.37064337730407715, -1.27269883520853e-09), vec3<f32>(1.286432147026062, -0.36337536573410034, 1.729315579623858e-09),
  vec3<f32>(1.2799999713897705, -0.3561437726020813, -5.376446843285976e-09), vec3<f32>(1.2736318111419678, -0.34894827008247375, -5.1482356155929665e-09),
  vec3<f32>(1.2673267126083374, -0.34178850054740906, 6.140649766450679e-09), vec3<f32>(1.261083722114563, -0.3346640467643738, -1.1193582061252982e-08),
  vec3<f32>(1.2549020051956177, -0.3275747001171112, -8.968742193360413e-09), vec3<f32>(1.2487804889678955, -0.32051989436149597, -7.476672614359359e-09),
  vec3<f32>(1.2427184581756592, -0.31349948048591614, -5.76700998067281e-09), vec3<f32>(1.2367149591445923, -0.3065130114555359, -1.1562729440584008e-08),
  vec3<f32>(1.2307692766189575, -0.2995603382587433, 2.655258013462003e-09), vec3<f32>(1.224880337715149, -0.2926408052444458, -9.60189971976888e-09),
  vec3<f32>(1.2190476655960083, -0.285754531621933, -5.800136371192366e-09), vec3<f32>(1.2132701873779297, -0.2789008617401123, -3.2972800045882877e-09),
  vec3<f32>(1.2075471878051758, -0.27207955718040466, -9.75422764781797e-09), vec3<f32>(1.2018779516220093, -0.26529040932655334, 8.726367184408446e-09),
  vec3<f32>(1.1962616443634033, -0.25853297114372253, 3.227761835589149e-09), vec3<f32>(1.1906976699829102, -0.25180715322494507, 8.188862921088003e-09),
  vec3<f32>(1.185185194015503, -0.24511250853538513, -5.0061954581792634e-11), vec3<f32>(1.1797235012054443, -0.23844876885414124, 2.64223509738315e-09),
  vec3<f32>(1.174311876296997, -0.23181560635566711, -7.0611401170594945e-09), vec3<f32>(1.1689497232437134, -0.22521288692951202, 6.321529966157868e-09),
  vec3<f32>(1.163636326789856, -0.21864023804664612, -2.7458018081460978e-09), vec3<f32>(1.158371090888977, -0.21209749579429626, -7.292343173759264e-09),
  vec3<f32>(1.1531531810760498, -0.20558416843414307, -1.4972650896893924e-10), vec3<f32>(1.147982120513916, -0.19910016655921936, -6.075655090143073e-09),
  vec3<f32>(1.1428571939468384, -0.1926451474428177, 5.006929093553936e-09), vec3<f32>(1.1377778053283691, -0.18621884286403656, -8.529019157599294e-10),
  vec3<f32>(1.1327433586120605, -0.17982102930545807, -2.904896323485673e-09), vec3<f32>(1.1277532577514648, -0.17345145344734192, -1.4270565285023906e-10),
  vec3<f32>(1.1228070259094238, -0.16710999608039856, -5.037754102765746e-10), vec3<f32>(1.1179039478302002, -0.16079623997211456, 5.227613009139986e-09),
  vec3<f32>(1.1130434274673462, -0.15450988709926605, 3.880751275886496e-09), vec3<f32>(1.1082251071929932, -0.14825095236301422, -4.877313664053418e-09),
  vec3<f32>(1.1034482717514038, -0.14201900362968445, 4.1317145260677535e-09), vec3<f32>(1.09871244430542, -0.1358138471841812, -5.4743094501930045e-09),
  vec3<f32>(1.0940171480178833, -0.12963534891605377, -2.7121063173041193e-09), vec3<f32>(1.0893616676330566, -0.12348300963640213, 1.8842942761665427e-09),
  vec3<f32>(1.0847457647323608, -0.11735695600509644, 2.6797086771779277e-09), vec3<f32>(1.0801687240600586, -0.1112566813826561, 1.4886880617126508e-10),
  vec3<f32>(1.0756303071975708, -0.10518231242895126, 1.8381013378032662e-09), vec3<f32>(1.0711296796798706, -0.09913315623998642, 1.1701331015245842e-09),
  vec3<f32>(1.0666667222976685, -0.09310948103666306, 1.4027737860189404e-09), vec3<f32>(1.062240719795227, -0.0871107429265976, 3.2423441709283907e-09),
  vec3<f32>(1.0578511953353882, -0.08113670349121094, 1.2284574468779397e-09), vec3<f32>(1.0534979104995728, -0.07518745213747025, -5.892782373173588e-10),
  vec3<f32>(1.049180269241333, -0.06926257908344269, -2.7368012300854616e-09), vec3<f32>(1.0448979139328003, -0.0633619949221611, -3.597194542237503e-09),
  vec3<f32>(1.0406503677368164, -0.057485442608594894, 1.692414208775972e-09), vec3<f32>(1.0364372730255127, -0.051632802933454514, -1.7594578016755236e-09),
  vec3<f32>(1.0322580337524414, -0.04580364748835564, 8.708941900970046e-10), vec3<f32>(1.0281124114990234, -0.03999801352620125, -6.611384217869443e-10),
  vec3<f32>(1.0240000486373901, -0.034215785562992096, 1.7007433239513148e-09), vec3<f32>(1.0199203491210938, -0.028456488624215126, -4.2067496708320107e-10),
  vec3<f32>(1.0158730745315552, -0.022720159962773323, 1.58595692134611e-10), vec3<f32>(1.0118577480316162, -0.017006482928991318, -1.5211917836488453e-10),
  vec3<f32>(1.0078740119934082, -0.011315307579934597, -2.7344171371623816e-10), vec3<f32>(1.003921627998352, -0.005646648351103067, -1.0955467089068804e-10),
  vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.9922480583190918, 0.01122726034373045, 4.539815190440777e-10),
  vec3<f32>(0.9846153855323792, 0.0223678108304739, 8.543661333959562e-10), vec3<f32>(0.9770992398262024, 0.03342299535870552, 1.4760941358105129e-09),
  vec3<f32>(0.9696969985961914, 0.044394075870513916, 4.922774410331954e-10), vec3<f32>(0.9624060392379761, 0.05528239905834198, 1.652576686606011e-10),
  vec3<f32>(0.9552238583564758, 0.0660892203450203, 3.7031140376342364e-09), vec3<f32>(0.9481481313705444, 0.07681562006473541, 2.5147703919259357e-09),
  vec3<f32>(0.9411764740943909, 0.08746283501386642, 8.620151259464137e-10), vec3<f32>(0.9343065619468689, 0.09803209453821182, -1.5696215160954097e-10),
  vec3<f32>(0.9275362491607666, 0.10852442681789398, 3.0879860890564714e-09), vec3<f32>(0.9208633303642273, 0.1189410388469696, 9.579839144180369e-10),
  vec3<f32>(0.9142857193946838, 0.12928301095962524, -2.0763455399475106e-09), vec3<f32>(0.9078013896942139, 0.13955140113830566, -3.0566198461201566e-09),
  vec3<f32>(0.9014084339141846, 0.14974714815616608, -1.7791945694511924e-09), vec3<f32>(0.8951048851013184, 0.15987135469913483, -1.7973718069441702e-09),
  vec3<f32>(0.8888888955116272, 0.16992498934268951, 1.3507072127438846e-09), vec3<f32>(0.882758617401123, 0.1799090951681137, 2.2127860654919118e-10),
  vec3<f32>(0.8767123222351074, 0.18982456624507904, 3.383853863780928e-09), vec3<f32>(0.8707482814788818, 0.1996723711490631, 3.2468197019852596e-09),
  vec3<f32>(0.8648648858070374, 0.20945332944393158, 1.2510426028455868e-09), vec3<f32>(0.8590604066848755, 0.2191685140132904, -2.692011058513799e-10),
  vec3<f32>(0.8533333539962769, 0.22881865501403809, 5.478672515657479e-10), vec3<f32>(0.8476821184158325, 0.23840473592281342, 4.745880133327773e-09),
  vec3<f32>(0.8421052694320679, 0.2479275017976761, 8.969937570491027e-10), vec3<f32>(0.8366013169288635, 0.25738781690597534, 8.99149554811629e-09),
  vec3<f32>(0.8311688303947449, 0.2667865455150604, -3.476544607750043e-09), vec3<f32>(0.8258064389228821, 0.27612441778182983, 9.662046274172553e-09),
  vec3<f32>(0.8205128312110901, 0.28540220856666565, -8.515019800370283e-09), vec3<f32>(0.8152866363525391, 0.29462072253227234, 4.861523628107989e-09),
  vec3<f32>(0.8101266026496887, 0.3037807047367096, 7.16280323942442e-09), vec3<f32>(0.805031418800354, 0.31288301944732666, -1.444923558580058e-08),
  vec3<f32>(0.800000011920929, 0.32192808389663696, -1.0507105407953077e-08), vec3<f32>(0.7950310707092285, 0.3309168517589569, -5.166288508107186e-10),
  vec3<f32>(0.790123462677002, 0.33984997868537903, 1.3450329738873279e-08), vec3<f32>(0.7852760553359985, 0.3487281799316406, 7.889799036320255e-09),
  vec3<f32>(0.7804877758026123, 0.35755205154418945, 6.818473785585866e-09), vec3<f32>(0.7757575511932373, 0.36632224917411804, 1.0754590107353579e-08),
  vec3<f32>(0.7710843086242676, 0.3750394880771637, -2.98565949741203e-09), vec3<f32>(0.7664670944213867, 0.3837042450904846, -6.361009941002749e-09),
  vec3<f32>(0.761904776096344, 0.39231738448143005, 1.1425041357426835e-08), vec3<f32>(0.7573964595794678, 0.4008794128894806, 4.5821013650027e-09),
  vec3<f32>(0.7529411911964417, 0.4093908965587616, 1.136303673376915e-08), vec3<f32>(0.7485380172729492, 0.4178524911403656, 1.2996616227667346e-08),
  vec3<f32>(0.7441860437393188, 0.42626476287841797, -2.80186229772994e-09), vec3<f32>(0.7398843765258789, 0.4346282482147217, 1.1668750410365192e-08),
  vec3<f32>(0.7356321811676025, 0.4429435133934021, -1.2170215946127882e-08), vec3<f32>(0.7314285635948181, 0.4512111246585846, 2.625310635551159e-09),
  vec3<f32>(0.7272727489471436, 0.45943158864974976, -1.3008114585488784e-08), vec3<f32>(0.7231638431549072, 0.4676055610179901, -1.3622221572973103e-08),
  vec3<f32>(0.7191011309623718, 0.4757334291934967, -1.3006857813024908e-08), vec3<f32>(0.7150837779045105, 0.4838158190250397, 5.63072866111014e-10),
);

// a^b for finite a > 0 (subnormal too), a != 1, finite b: 2^y with y = b * log2(a) carried to
// about 2^-33 relative. log2(a) = e + log2(c) + log2(1 + r), with z = a / 2^e in [0.7012, 1.4024),
// c the centre of z's interval and r = z / c - 1 (|r| <= 2^-8) exact as rh + z*(1/c)'s product error;
// log2(1 + r) = r / ln2 + a degree-5 tail. Each large term of y (b * e, b * log2(c), b * r / ln2)
// is an exact product p + err; the integer part of every p is taken out exactly, and the
// fractions, errors and the small terms are summed in float32 (|sum| < 2), so y's error stays
// about 2^-24 absolute over the whole range: 2 ulp, against the |y| * 2^-24 of exp2(b * log2(a))
fn mg_pow_pos(a: f32, b: f32) -> f32 {
  let est = b * mg_log2(a);
  if (est > 130.0) { return mg_inf(); }
  if (est < -160.0) { return 0.0; }
  let fr = mg_frexp(a);
  let ix = bitcast<u32>(fr.x) + 0x800000u;  // 2 * fraction: [1, 2)
  let tmp = ix - 0x3f338000u;
  let z = bitcast<f32>(ix - (tmp & 0xff800000u));
  let e = fr.y - 1.0 + f32(i32(tmp) >> 23u);
  let t = MG_POW_LOG2[(tmp >> 16u) & 127u];
  let zc = mg_two_prod(z, t.x);
  let rh = zc.x - 1.0;  // exact: zc.x is within 2^-8 of 1
  let r = rh + zc.y;
  let l1 = mg_two_prod(rh, 1.4426950216293335);  // log2(e) = 1.4426950216293335 + 1.925963e-08
  let small = rh * 1.925963033500011e-08 + zc.y * 1.4426950216293335;
  let tail = r * r * (-0.5 + r * (0.33333333 + r * (-0.25 + r * 0.2))) * 1.4426950216293335;
  let pe = mg_two_prod(b, e);
  let pc = mg_two_prod(b, t.y);
  let pl = mg_two_prod(b, l1.x);
  let rest = b * (((t.z + l1.y) + small) + tail);
  let ne = round(pe.x);
  let nc = round(pc.x);
  let nl = round(pl.x);
  var f = (((pe.x - ne) + (pc.x - nc)) + (pl.x - nl)) + (((pe.y + pc.y) + pl.y) + rest);
  let nf = round(f);
  f = f - nf;
  return mg_ldexp(mg_exp2(f), i32(ne + nc + nl + nf));
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
  let r = mg_log_reduce(x);
  let m = r.x;
  let e = r.y;
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

// --- tan, the hyperbolic functions, the inverse trigonometric and hyperbolic functions, 10^x, log10

// tan(z + zl) for |z| <= pi/4 (Cephes' tanf polynomial, the tail added as zl * (1 + tan^2))
fn mg_tan_poly(z: f32, zl: f32) -> f32 {
  let zz = z * z;
  let t = (((((9.38540185543e-3 * zz + 3.11992232697e-3) * zz + 2.44301354525e-2) * zz + 5.34112807005e-2) * zz
            + 1.33387994085e-1) * zz + 3.33331568548e-1) * zz * z;
  return z + (t + zl * (1.0 + z * z));
}

// tan for every finite float32: the reduction of sin and cos, then -1/tan in odd quadrants;
// below 2^-12 tan(x) rounds to x (and keeps -0)
fn mg_tan(x: f32) -> f32 {
  if (mg_isnan(x) || mg_isinf(x)) { return mg_nan(); }
  let ax = abs(x);
  if (ax < 2.44140625e-4) { return x; }
  let red = mg_quadrant(ax);
  let q = u32(red.z);
  var t = mg_tan_poly(red.x, red.y);
  if ((q & 1u) == 1u) { t = -1.0 / t; }
  return select(t, -t, x < 0.0);
}

// e^x * 2^k for finite x <= 89.5: x log2(e) as an exact product (Dekker's) with log2(e) in two parts,
// its integer part taken out exactly, so the exponent keeps its 2^-24 absolute error at every x
fn mg_exp_scaled(x: f32, k: i32) -> f32 {
  let p = mg_two_prod(x, 1.4426950216293335);  // log2(e) = 1.4426950216293335 + 1.925963e-08
  let n = round(p.x);
  let f = (p.x - n) + (p.y + x * 1.92596298909109e-08);
  return mg_ldexp(mg_exp2(f), i32(n) + k);
}

// sinh: an odd polynomial below 1 (Cephes' sinhf; e^x - e^-x would cancel near 0), E - 1/(4E) with
// E = e^|x| / 2 (mg_exp_scaled) to 10, E alone beyond: finite up to 89.4, where e^|x| overflows from 88.7
fn mg_sinh(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  let ax = abs(x);
  if (ax < 2.44140625e-4) { return x; }
  if (ax < 1.0) {
    let z = x * x;
    return x + ((2.03721912945e-4 * z + 8.33028376239e-3) * z + 1.66667160211e-1) * z * x;
  }
  var r = mg_inf();
  if (ax < 90.0) {
    r = mg_exp_scaled(ax, -1);
    if (ax < 10.0) { r = r - 0.25 / r; }
  }
  return select(r, -r, x < 0.0);
}

// cosh: E + 1/(4E) with E = e^|x| / 2 to 10, E alone beyond
fn mg_cosh(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  let ax = abs(x);
  if (ax >= 90.0) { return mg_inf(); }
  let r = mg_exp_scaled(ax, -1);
  if (ax < 10.0) { return r + 0.25 / r; }
  return r;
}

// asin of 0 <= a <= 0.5 (Cephes' asinf polynomial)
fn mg_asin_small(a: f32) -> f32 {
  let z = a * a;
  return a + ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z
              + 1.6666752422e-1) * z * a;
}

// asin: the polynomial to 0.5, pi/2 - 2 asin(sqrt((1 - |x|) / 2)) above (1 - |x| is exact there);
// pi/2 in two parts
fn mg_asin(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  let a = abs(x);
  if (a > 1.0) { return mg_nan(); }
  var r: f32;
  if (a <= 0.5) {
    if (a < 2.44140625e-4) { return x; }
    r = mg_asin_small(a);
  } else {
    let s = sqrt(0.5 * (1.0 - a));
    r = (1.5707963705062866 - 2.0 * mg_asin_small(s)) + (-4.371139000186243e-08);
  }
  return mg_copysign(r, x);
}

// acos: 2 asin(sqrt((1 - x) / 2)) above 0.5, pi - 2 asin(sqrt((1 + x) / 2)) below -0.5, pi/2 - asin(x)
// between; pi and pi/2 in two parts
fn mg_acos(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  if (abs(x) > 1.0) { return mg_nan(); }
  if (x > 0.5) { return 2.0 * mg_asin_small(sqrt(0.5 * (1.0 - x))); }
  if (x < -0.5) {
    return (3.1415927410125732 - 2.0 * mg_asin_small(sqrt(0.5 * (1.0 + x)))) + (-8.742278000372485e-08);
  }
  return 1.5707963705062866 - (mg_copysign(mg_asin_small(abs(x)), x) + 4.371139000186243e-08);
}

fn mg_atan(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  return mg_copysign(mg_atan_pos(abs(x)), x);
}

// log(1 + m) - m for -0.2929 <= m <= 0.4142 (mg_log's polynomial, without a reduction)
fn mg_log1p_tail(m: f32) -> f32 {
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
  return y - 0.5 * z;
}

// asinh: an odd polynomial below 0.5 (Cephes' asinhf), log(a + sqrt(a^2 + 1)) as a log1p to 2^12,
// log(a) + log(2) beyond, where sqrt(a^2 + 1) = a to float32 precision (and a^2 overflows from 2^64)
fn mg_asinh(x: f32) -> f32 {
  if (mg_isnan(x) || mg_isinf(x)) { return x; }
  let a = abs(x);
  var r: f32;
  if (a < 0.5) {
    if (a < 2.44140625e-4) { return x; }
    let z = x * x;
    return x + (((2.0122003309e-2 * z - 4.2699340972e-2) * z + 7.4847586088e-2) * z - 1.6666288134e-1) * z * x;
  }
  if (a < 4096.0) {
    // log1p(a + a^2 / (1 + sqrt(1 + a^2))): log(1 + t) with the rounding of u = 1 + t put back as
    // (t - (u - 1)) / u (u - 1 is exact), so the result keeps t's precision (3.4 ulp at 0.51 without)
    let t = a + a * a / (1.0 + sqrt(a * a + 1.0));
    let u = 1.0 + t;
    r = mg_log(u) + (t - (u - 1.0)) / u;
  } else {
    r = mg_log(a) + 0.6931471805599453;
  }
  return mg_copysign(r, x);
}

// acosh: sqrt(2z) P(z) with z = x - 1 (exact) below 1.5 (Cephes' acoshf: log(1 + tiny) would lose
// the digits near 1), log(x + sqrt((x - 1)(x + 1))) to 2^12, log(x) + log(2) beyond; NaN below 1
fn mg_acosh(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  if (x < 1.0) { return mg_nan(); }
  if (mg_isinf(x)) { return x; }
  let z = x - 1.0;
  if (z < 0.5) {
    return ((((1.7596881071e-3 * z - 7.5272886713e-3) * z + 2.6454905019e-2) * z - 1.1784741703e-1) * z
            + 1.4142135263) * sqrt(z);
  }
  if (x < 4096.0) { return mg_log(x + sqrt(z * (x + 1.0))); }
  return mg_log(x) + 0.6931471805599453;
}

// atanh: an odd polynomial below 0.5 (Cephes' atanhf: no log(1 + tiny) near 0), log((1 + x) / (1 - x)) / 2
// above (1 - |x| exact); ±inf at ±1, NaN beyond
fn mg_atanh(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  let a = abs(x);
  if (a > 1.0) { return mg_nan(); }
  if (a == 1.0) { return mg_copysign(mg_inf(), x); }
  if (a < 0.5) {
    if (a < 2.44140625e-4) { return x; }
    let z = x * x;
    return x + ((((1.81740078349e-1 * z + 8.24370301058e-2) * z + 1.46691431730e-1) * z + 1.99782164500e-1) * z
                + 3.33337300303e-1) * z * x;
  }
  return mg_copysign(0.5 * mg_log((1.0 + a) / (1.0 - a)), x);
}

// 10^x = 2^(x log2(10)): log2(10) in two parts, x times the high part an exact product (Dekker's), its
// integer part taken out exactly, so the exponent keeps its 2^-24 absolute error at every |x|
// (exp2(x * 3.3219281) lost |x log2 10| * 2^-24: 70 ulp at x = -44)
fn mg_exp10(x: f32) -> f32 {
  if (mg_isnan(x)) { return x; }
  if (x > 38.6) { return mg_inf(); }
  if (x < -45.7) { return 0.0; }
  let p = mg_two_prod(x, 3.321928024291992);  // log2(10) = 3.321928024291992 + 7.0595370e-08
  let n = round(p.x);
  let f = (p.x - n) + (p.y + x * 7.059536999420857e-08);
  return mg_ldexp(mg_exp2(f), i32(n));
}

// log10(x) = e log10(2) + log(m) log10(e), with mg_log's reduction and log10(2), log10(e) in two
// parts (Cephes' log10f), the large terms last
fn mg_log10(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  if (mg_isnan(x)) { return x; }
  if ((bits & 0x7fffffffu) == 0u) { return -mg_inf(); }
  if ((bits >> 31u) != 0u) { return mg_nan(); }
  if (mg_isinf(x)) { return x; }
  let r = mg_log_reduce(x);
  let m = r.x;
  let e = r.y;
  let y = mg_log1p_tail(m);
  var z = y * 7.00731903251827651129e-4;
  z = z + m * 7.00731903251827651129e-4;
  z = z + e * 2.48745663981195213739e-4;
  z = z + y * 4.3359375e-1;
  z = z + m * 4.3359375e-1;
  z = z + e * 3.0078125e-1;
  return z;
}

// rounding toward zero; the sign kept (-0.5 -> -0), NaN, infinities and |x| >= 2^23 pass through
fn mg_trunc(x: f32) -> f32 { if (mg_is_integral(x)) { return x; } return mg_copysign(trunc(x), x); }
