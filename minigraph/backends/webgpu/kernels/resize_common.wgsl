// The taps of one resized axis (ops/resize.py): result index o reads the source coordinate
// (A * o + B) / DEN, an exact fraction of integers. NEAREST rounds it half up (MPSGraph's
// RoundPreferCeil) and clamps; BILINEAR clamps it to [0, N - 1] and mixes i0 = floor and
// i1 = i0 + 1 with weights 1 - f and f (f = 0 reads i0 alone).
struct Tap {
  i0: u32,
  i1: u32,
  f: f32,
}

fn floor_div(a: i32, b: i32) -> i32 {
  let q = a / b;
  return select(q, q - 1, a % b != 0 && a < 0);
}

fn tap(o: i32) -> Tap {
  let num = {{A}} * o + ({{B}});
  if ({{NEAREST}}) {
    let i = clamp(floor_div(num + {{DEN}} / 2, {{DEN}}), 0, {{N}} - 1);
    return Tap(u32(i), u32(i), 0.0);
  }
  let nn = max(num, 0);
  let i0 = nn / {{DEN}};
  if (i0 >= {{N}} - 1) {
    return Tap(u32({{N}} - 1), u32({{N}} - 1), 0.0);
  }
  let f = f32(nn - i0 * {{DEN}}) / f32({{DEN}});
  return Tap(u32(i0), u32(select(i0, i0 + 1, f > 0.0)), f);
}
