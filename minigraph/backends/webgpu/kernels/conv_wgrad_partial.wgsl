// Grouped convolution, weights gradient, pass 1 of 2 (or the only pass when CHUNKS == 1).
//   dw[g, og, ci, kd, kh, kw] = sum_{n, od, oh, ow} dy[n, o, od, oh, ow] * x[n, c, od*SD + kd*DD - PD, ...]
// with o = g*OG + og, c = g*CI + ci: per filter f = (g, og, ci) a reduction over
// N*OD*OH*OW positions of TAPS numbers at once. Positions are taken V at a time along the output
// row (a "strip"; V divides OW), so a thread loads each x column of a strip once for all V
// outputs. A workgroup owns FX filters and one chunk of CH strips; its 256/FX lanes stride
// through the chunk keeping one register per tap (the strip and tap loops are unrolled). The
// lanes are then summed in workgroup memory, up to TB taps at a time, with three barriers: the
// registers are stored, R partial sums per (tap, filter) each add PY / R lanes, then one thread
// per (tap, filter) adds the R partials. The sums go to part[chunk][f][tap], which pass 2 adds
// up in a fixed order (deterministic, no atomics), or straight to dw when CHUNKS == 1.
@group(0) @binding(0) var<storage, read> dy: array<{{T}}>;
@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> part: array<{{TP}}>;
var<workgroup> sh: array<f32, {{SHN}}>;
var<workgroup> sh2: array<f32, {{SH2N}}>;

const FX: u32 = {{FX}}u;
const PY: u32 = 256u / FX;

// sum the lanes of NB taps whose registers are in sh[j * 256 + lid]; write taps t0 .. t0 + NB
fn reduce_taps(lid: u32, nb: u32, r: u32, t0: u32, chunk: u32, fblock: u32) {
  workgroupBarrier();
  for (var u = lid; u < nb * FX * r; u = u + 256u) {
    let j = u / (FX * r);
    let rr = (u / FX) % r;
    let fx = u % FX;
    var s = 0.0;
    for (var k = 0u; k < PY / r; k = k + 1u) { s = s + sh[j * 256u + (rr + k * r) * FX + fx]; }
    sh2[u] = s;
  }
  workgroupBarrier();
  for (var u = lid; u < nb * FX; u = u + 256u) {
    let j = u / FX;
    let fx = u % FX;
    var s = 0.0;
    for (var k = 0u; k < r; k = k + 1u) { s = s + sh2[(j * r + k) * FX + fx]; }
    let f = fblock * FX + fx;
    if (f < {{F}}u) {
      let t = t0 + j;
{{WRITE}}
    }
  }
  workgroupBarrier();
}

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
{{BODY}}
    }
  }
{{REDUCE}}
}
