// Grouped convolution, weights gradient, pass 1 of 2 (or the only pass when CHUNKS == 1).
//   dw[g, og, ci, kd, kh, kw] = sum_{n, od, oh, ow} dy[n, o, od, oh, ow] * x[n, c, od*SD + kd*DD - PD, ...]
// with o = g*OG + og, c = g*CI + ci: per filter f = (g, og, ci) a reduction over
// P = N*OD*OH*OW positions of TAPS numbers at once. A workgroup owns FX filters and one chunk of
// CH positions; its 256/FX position lanes stride through the chunk keeping one register per tap
// (the tap loop is unrolled: dy is read once per position, x once per tap, from cache), then
// the lanes are summed by a tree in workgroup memory, TB taps at a time. The partial sums go to
// part[chunk][f][tap], which pass 2 adds up in a fixed order (deterministic, no atomics).
@group(0) @binding(0) var<storage, read> dy: array<{{T}}>;
@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> part: array<{{TP}}>;
var<workgroup> sh: array<f32, {{SHN}}>;

const FX: u32 = {{FX}}u;
const PY: u32 = 256u / FX;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let gid = wid.y * nwg.x + wid.x;
  if (gid >= {{FB}}u * {{CHUNKS}}u) { return; }
  let chunk = gid / {{FB}}u;
  let fx = lid % FX;
  let py = lid / FX;
  let f = (gid % {{FB}}u) * FX + fx;
  let live = f < {{F}}u;
  let ci = f % {{CI}}u;
  let og = (f / {{CI}}u) % {{OG}}u;
  let g = f / ({{CI}}u * {{OG}}u);
  let yb = (g * {{OG}}u + og) * {{YSC}}u;
  let xb = (g * {{CI}}u + ci) * {{XSC}}u;
{{ACC_DECL}}
  let q1 = min(chunk * {{CH}}u + {{CH}}u, {{P}}u);
  if (live) {
    for (var q = chunk * {{CH}}u + py; q < q1; q = q + PY) {
      var r = q;
      let ow = r % {{OW}}u;
      r = r / {{OW}}u;
      let oh = r % {{OH}}u;
      r = r / {{OH}}u;
      let od = r % {{OD}}u;
      let n = r / {{OD}}u;
      let gy = f32(dy[yb + n * {{YSN}}u + od * {{YSD}}u + oh * {{YSH}}u + ow * {{YSW}}u]);
      let xq = xb + n * {{XSN}}u;
      let id0 = i32(od * {{SD}}u) - {{PD}};
      let ih0 = i32(oh * {{SH}}u) - {{PH}};
      let iw0 = i32(ow * {{SW}}u) - {{PW}};
{{TAPS}}
    }
  }
{{REDUCE}}
}
