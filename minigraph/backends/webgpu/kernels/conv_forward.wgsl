// Grouped convolution, forward: one thread per output element, in the output's memory order.
// y[n, o, od, oh, ow] = sum_{ci, kd, kh, kw} x[n, g*CI + ci, od*SD + kd*DD - PD, ...] * w[g, og, ci, kd, kh, kw]
// with o = g*OG + og; zero outside x. Every size and stride is baked in (one pipeline per geometry).
@group(0) @binding(0) var<storage, read> x: array<{{T}}>;
@group(0) @binding(1) var<storage, read> wt: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> y: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= {{TOTAL}}u) { return; }
  var r = i;
{{DECODE}}
  let g = a_c / {{OG}}u;
  let og = a_c % {{OG}}u;
  let id0 = i32(a_d * {{SD}}u) - {{PD}};
  let ih0 = i32(a_h * {{SH}}u) - {{PH}};
  let iw0 = i32(a_w * {{SW}}u) - {{PW}};
  var acc = 0.0;
  for (var ci = 0u; ci < {{CI}}u; ci = ci + 1u) {
    let xb = a_n * {{XSN}}u + (g * {{CI}}u + ci) * {{XSC}}u;
    let wb = g * {{WSG}}u + og * {{WSOG}}u + ci * {{WSCI}}u;
    for (var kd = 0u; kd < {{KD}}u; kd = kd + 1u) {
      let id = u32(id0 + i32(kd * {{DD}}u));
      if (id >= {{D}}u) { continue; }
      for (var kh = 0u; kh < {{KH}}u; kh = kh + 1u) {
        let ih = u32(ih0 + i32(kh * {{DH}}u));
        if (ih >= {{H}}u) { continue; }
        for (var kw = 0u; kw < {{KW}}u; kw = kw + 1u) {
          let iw = u32(iw0 + i32(kw * {{DW}}u));
          if (iw >= {{W}}u) { continue; }
          acc = acc + f32(x[xb + id * {{XSD}}u + ih * {{XSH}}u + iw * {{XSW}}u])
                    * f32(wt[wb + kd * {{WSKD}}u + kh * {{WSKH}}u + kw * {{WSKW}}u]);
        }
      }
    }
  }
  y[i] = {{T}}(acc);
}
