// Shared by the pooling kernels: geometry constants and the per-axis tap count of a window.
// Names as in the convolution kernels: S* strides, D* dilations, P* padding before, per axis H, W.
const KH: u32 = {{KH}}u;
const KW: u32 = {{KW}}u;

{{TAPS}}

// number of taps i < k of the window starting at `start` (stride-free: start + i*d) with lo <= pos < hi
// (closed form: a loop over a long window would run into llvmpipe's loop limit)
fn taps_in(start: i32, k: u32, d: i32, lo: i32, hi: i32) -> f32 {
  let i0 = clamp(tap_cdiv(lo - start, d), 0, i32(k));
  let i1 = clamp(tap_cdiv(hi - start, d), 0, i32(k));
  return f32(max(i1 - i0, 0));
}

// the divisor of window (oh, ow) of average pooling
fn avg_divisor(oh: u32, ow: u32) -> f32 {
  let start_h = i32(oh * {{SH}}u) - {{PH}};
  let start_w = i32(ow * {{SW}}u) - {{PW}};
  return taps_in(start_h, KH, {{DH}}, {{LO_H}}, {{HI_H}}) * taps_in(start_w, KW, {{DW}}, {{LO_W}}, {{HI_W}});
}
