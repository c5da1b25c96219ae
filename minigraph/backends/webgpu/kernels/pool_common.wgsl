// Shared by the pooling kernels: geometry constants and the per-axis tap count of a window.
const KH: u32 = {{KH}}u;
const KW: u32 = {{KW}}u;

// number of taps i < k of the window starting at `start` (stride-free: start + i*d) with lo <= pos < hi
fn taps_in(start: i32, k: u32, d: i32, lo: i32, hi: i32) -> f32 {
  var n = 0u;
  for (var i = 0u; i < k; i = i + 1u) {
    let p = start + i32(i) * d;
    if (p >= lo && p < hi) { n = n + 1u; }
  }
  return f32(n);
}

// the divisor of window (oh, ow) of average pooling
fn avg_divisor(oh: u32, ow: u32) -> f32 {
  let sy = i32(oh * {{SY}}u) - {{PT}};
  let sx = i32(ow * {{SX}}u) - {{PL}};
  return taps_in(sy, KH, {{DY}}, {{LOY}}, {{HIY}}) * taps_in(sx, KW, {{DX}}, {{LOX}}, {{HIX}});
}
