// Pooling gradients as a gather, one thread per dx element in memory order: every window
// (oh, ow) whose tap (kh, kw) lands on this element gives it dy[oh, ow] (max: only when that
// tap is the window's argmax from pass 1; average: divided by the window's divisor). Only the
// NKH x NKW taps whose windows can exist are visited (one for a global pooling).
{{COMMON}}
@group(0) @binding(0) var<storage, read> dy: array<{{T}}>;
@group(0) @binding(1) var<storage, read> arg: array<u32>;
@group(0) @binding(2) var<storage, read_write> dx: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= {{TOTAL}}u) { return; }
  var r = i;
{{DECODE}}
  let yb = a_n * {{YSN}}u + a_c * {{YSC}}u;
  let th0 = i32(a_h) + {{PH}};
  let tw0 = i32(a_w) + {{PW}};
  var acc = 0.0;
  let kh0 = first_tap(th0, {{OH}}u - 1u, {{SH}}u, u32({{DH}}));
  let kw0 = first_tap(tw0, {{OW}}u - 1u, {{SW}}u, u32({{DW}}));
  for (var kh = kh0; kh < min(KH, kh0 + {{NKH}}u); kh = kh + 1u) {
    let th = th0 - i32(kh) * {{DH}};
    if (th < 0 || th % {{SH}} != 0 || u32(th / {{SH}}) >= {{OH}}u) { continue; }
    let oh = u32(th / {{SH}});
    for (var kw = kw0; kw < min(KW, kw0 + {{NKW}}u); kw = kw + 1u) {
      let tw = tw0 - i32(kw) * {{DW}};
      if (tw < 0 || tw % {{SW}} != 0 || u32(tw / {{SW}}) >= {{OW}}u) { continue; }
      let ow = u32(tw / {{SW}});
      let k = yb + oh * {{YSH}}u + ow * {{YSW}}u;
{{ACCUM}}
    }
  }
  dx[i] = {{T}}(acc);
}
