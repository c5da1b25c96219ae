// Grouped convolution, data gradient: one thread per dx element, in dx's memory order (a gather,
// so no atomics): dx[n, c, d, h, w] = sum over og and the taps whose window lands on (d, h, w) of
// dy[n, g*OG + og, od, oh, ow] * w[g, og, ci, kd, kh, kw], with c = g*CI + ci and
// od = (d + PD - kd*DD) / SD when that divides exactly and is in range (same for h, w). Only
// the NKD x NKH x NKW taps from first_tap on can give an od in range, so only those are visited.
@group(0) @binding(0) var<storage, read> dy: array<{{T}}>;
@group(0) @binding(1) var<storage, read> wt: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dx: array<{{T}}>;

{{TAPS}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= {{TOTAL}}u) { return; }
  var r = i;
{{DECODE}}
  let g = a_c / {{CI}}u;
  let ci = a_c % {{CI}}u;
  let td0 = i32(a_d) + {{PD}};
  let th0 = i32(a_h) + {{PH}};
  let tw0 = i32(a_w) + {{PW}};
  let kd0 = first_tap(td0, {{OD}}u - 1u, {{SD}}u, {{DD}}u);
  let kh0 = first_tap(th0, {{OH}}u - 1u, {{SH}}u, {{DH}}u);
  let kw0 = first_tap(tw0, {{OW}}u - 1u, {{SW}}u, {{DW}}u);
  var acc = 0.0;
  for (var og = 0u; og < {{OG}}u; og = og + 1u) {
    let yb = a_n * {{YSN}}u + (g * {{OG}}u + og) * {{YSC}}u;
    let wb = g * {{WSG}}u + og * {{WSOG}}u + ci * {{WSCI}}u;
    for (var kd = kd0; kd < min({{KD}}u, kd0 + {{NKD}}u); kd = kd + 1u) {
      let td = td0 - i32(kd * {{DD}}u);
      if (td < 0 || td % {{SD}} != 0 || u32(td / {{SD}}) >= {{OD}}u) { continue; }
      let od = u32(td / {{SD}});
      for (var kh = kh0; kh < min({{KH}}u, kh0 + {{NKH}}u); kh = kh + 1u) {
        let th = th0 - i32(kh * {{DH}}u);
        if (th < 0 || th % {{SH}} != 0 || u32(th / {{SH}}) >= {{OH}}u) { continue; }
        let oh = u32(th / {{SH}});
        for (var kw = kw0; kw < min({{KW}}u, kw0 + {{NKW}}u); kw = kw + 1u) {
          let tw = tw0 - i32(kw * {{DW}}u);
          if (tw < 0 || tw % {{SW}} != 0 || u32(tw / {{SW}}) >= {{OW}}u) { continue; }
          let ow = u32(tw / {{SW}});
          acc = acc + f32(dy[yb + od * {{YSD}}u + oh * {{YSH}}u + ow * {{YSW}}u])
                    * f32(wt[wb + kd * {{WSKD}}u + kh * {{WSKH}}u + kw * {{WSKW}}u]);
        }
      }
    }
  }
  dx[i] = {{T}}(acc);
}
