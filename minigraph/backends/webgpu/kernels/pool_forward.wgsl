// Pooling forward (max or average), one thread per output element in memory order; padding
// never takes part in a maximum (NaN propagates); averages divide by avg_divisor.
{{COMMON}}
@group(0) @binding(0) var<storage, read> x: array<{{T}}>;
@group(0) @binding(1) var<storage, read_write> y: array<{{TOUT}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= {{TOTAL}}u) { return; }
  var r = i;
{{DECODE}}
  let xb = a_n * {{XSN}}u + a_c * {{XSC}}u;
  let ih0 = i32(a_h * {{SH}}u) - {{PH}};
  let iw0 = i32(a_w * {{SW}}u) - {{PW}};
  var m = -mg_inf();
  var s = 0.0;
  var best = 0xffffffffu;
  for (var kh = 0u; kh < KH; kh = kh + 1u) {
    let ih = u32(ih0 + i32(kh) * {{DH}});
    if (ih >= {{H}}u) { continue; }
    for (var kw = 0u; kw < KW; kw = kw + 1u) {
      let iw = u32(iw0 + i32(kw) * {{DW}});
      if (iw >= {{W}}u) { continue; }
      let v = f32(x[xb + ih * {{XSH}}u + iw * {{XSW}}u]);
      s = s + v;
      // first maximal tap in row-major order; the first NaN wins over numbers
      if (best == 0xffffffffu || (mg_isnan(v) && !mg_isnan(m)) || (!mg_isnan(m) && v > m)) {
        m = v;
        best = kh * KW + kw;
      }
    }
  }
{{STORE}}
}
