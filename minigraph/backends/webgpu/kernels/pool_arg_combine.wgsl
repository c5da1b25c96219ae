// Max pooling's multi-pass path, pass 2 (repeated while more than one partial is left): the
// partials of output i are tap indices (0xffffffff: none in that chunk), in tap order; group
// `grp` of G neighbouring partials becomes one, by the forward kernel's rule (the first maximal
// tap, the first NaN winning), reading the values back from x. out[grp * TOTAL + i] gets the
// index, or at the last pass the output itself (the maximum, or the argmax for the gradient).
{{COMMON}}
@group(0) @binding(0) var<storage, read> x: array<{{T}}>;
@group(0) @binding(1) var<storage, read> part: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<{{TOUT}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let gid = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (gid >= {{TOTAL}}u * {{GROUPS}}u) { return; }
  let grp = gid / {{TOTAL}}u;
  let i = gid % {{TOTAL}}u;
  var r = i;
{{DECODE}}
  let xb = a_n * {{XSN}}u + a_c * {{XSC}}u;
  let ih0 = i32(a_h * {{SH}}u) - {{PH}};
  let iw0 = i32(a_w * {{SW}}u) - {{PW}};
  var m = -mg_inf();
  var best = 0xffffffffu;
  for (var k = 0u; k < {{G}}u; k = k + 1u) {
    let c = grp * {{G}}u + k;
    if (c >= {{CHUNKS}}u) { break; }
    let tap = part[c * {{TOTAL}}u + i];
    if (tap == 0xffffffffu) { continue; }
    let ih = u32(ih0 + i32(tap / KW) * {{DH}});
    let iw = u32(iw0 + i32(tap % KW) * {{DW}});
    let v = f32(x[xb + ih * {{XSH}}u + iw * {{XSW}}u]);
    if (best == 0xffffffffu || (mg_isnan(v) && !mg_isnan(m)) || (!mg_isnan(m) && v > m)) {
      m = v;
      best = tap;
    }
  }
{{STORE}}
}
