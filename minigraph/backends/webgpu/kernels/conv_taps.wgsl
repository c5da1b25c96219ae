// ceil(a / d) for d > 0 (WGSL's integer division truncates)
fn tap_cdiv(a: i32, d: i32) -> i32 {
  if (a > 0) { return (a + d - 1) / d; }
  return -((-a) / d);
}

// the first tap along an axis (stride s, dilation d, last output index `last`) whose window can
// hold position t0 = pos + padding before: the gradients' gathers visit only the NK* taps from here
fn first_tap(t0: i32, last: u32, s: u32, d: u32) -> u32 {
  return u32(max(tap_cdiv(t0 - i32(last * s), i32(d)), 0));
}
