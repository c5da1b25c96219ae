// pool4d_forward: window t = (b, o0, o1, o2, o3) of a pooling window over the four innermost axes;
// taps k in [prm(0), prm(1)) of {{TAPS}} per pass (loops.long_loop), in row-major tap order, taps
// outside the source skipped; the running maximum and its tap, or the sum, kept in state.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> y: array<{{TY}}>;
@group(0) @binding(3) var<storage, read_write> aux: array<i32>;
@group(0) @binding(4) var<storage, read_write> state: array<u32>;

fn fdiv(a: i32, b: i32) -> i32 { if (a >= 0) { return a / b; } return -((-a + b - 1) / b); }

// taps i in [0, k) of a window starting at s with lo <= s + i*d < hi
fn taps_in(s: i32, k: i32, d: i32, lo: i32, hi: i32) -> f32 {
  let i0 = max(0, -fdiv(s - lo, d));
  let i1 = min(k - 1, fdiv(hi - 1 - s, d));
  return f32(max(i1 - i0 + 1, 0));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  let o3 = t % {{O3}}u;
  let o2 = (t / {{OP3}}u) % {{O2}}u;
  let o1 = (t / {{OP2}}u) % {{O1}}u;
  let o0 = (t / {{OP1}}u) % {{O0}}u;
  let b = t / {{OP0}}u;
  let s0 = i32(o0 * {{S0}}u) - {{P0}};
  let s1 = i32(o1 * {{S1}}u) - {{P1}};
  let s2 = i32(o2 * {{S2}}u) - {{P2}};
  let s3 = i32(o3 * {{S3}}u) - {{P3}};
  let xb = b * {{NP0}}u;
  let j0 = prm(0u);
  let j1 = prm(1u);
  var m = -mg_inf();
  var best = 0xffffffffu;
  var acc = 0.0;
  if (j0 > 0u) { {{LOAD}} }
  for (var k = j0; k < j1; k = k + 1u) {
    let i3 = k % {{K3}}u;
    let i2 = (k / {{KP3}}u) % {{K2}}u;
    let i1 = (k / {{KP2}}u) % {{K1}}u;
    let i0 = k / {{KP1}}u;
    let p0 = s0 + i32(i0) * {{D0}};
    let p1 = s1 + i32(i1) * {{D1}};
    let p2 = s2 + i32(i2) * {{D2}};
    let p3 = s3 + i32(i3) * {{D3}};
    if (p0 >= 0 && p0 < {{N0}} && p1 >= 0 && p1 < {{N1}} && p2 >= 0 && p2 < {{N2}} && p3 >= 0 && p3 < {{N3}}) {
      let v = f32(x[xb + u32(p0) * {{NP1}}u + u32(p1) * {{NP2}}u + u32(p2) * {{NP3}}u + u32(p3)]);
      {{STEP}}
    }
  }
  if (j1 == {{TAPS}}u) {
{{STORE}}
  } else { {{SAVE}} }
}
