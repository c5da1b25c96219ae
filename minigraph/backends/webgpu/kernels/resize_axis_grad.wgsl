// The adjoint of one resize pass: dy viewed as [OUTER, M, INNER] -> dx [OUTER, N, INNER], one
// thread per dx element gathering the results whose taps read it. Those have source
// coordinates in (k - 1, k + 1) (all below 1 for k = 0, all above N - 2 for k = N - 1),
// a range [lo, hi] of o found exactly from (A * o + B) / DEN. Zero weights are skipped.
{{COMMON}}
@group(0) @binding(0) var<storage, read> dy: array<{{TI}}>;
@group(0) @binding(1) var<storage, read_write> dx: array<{{TO}}>;

fn ceil_div(a: i32, b: i32) -> i32 {
  return -floor_div(-a, b);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= {{TOTAL}}u) { return; }
  let inner = i % {{INNER}}u;
  let rest = i / {{INNER}}u;
  let k = i32(rest % {{N}}u);
  let outer = rest / {{N}}u;
  var lo = 0;
  var hi = {{M}} - 1;
  if ({{A}} > 0) {
    if (k > 0) { lo = max(floor_div((k - 1) * {{DEN}} - ({{B}}), {{A}}) + 1, 0); }
    if (k < {{N}} - 1) { hi = min(ceil_div((k + 1) * {{DEN}} - ({{B}}), {{A}}) - 1, {{M}} - 1); }
  }
  let base = outer * {{M}}u * {{INNER}}u + inner;
  var s = 0.0;
  for (var o = lo; o <= hi; o = o + 1) {
    let t = tap(o);
    var w = 0.0;
    if (t.i0 == u32(k)) {
      w = 1.0 - t.f;
    } else if (t.f > 0.0 && t.i1 == u32(k)) {
      w = t.f;
    }
    if (w != 0.0) {
      s = s + f32(dy[base + u32(o) * {{INNER}}u]) * w;
    }
  }
  dx[i] = {{TO}}(s);
}
