// pool4d_grad: source element t = (b, p0, p1, p2, p3) gathers from the windows that hold it: tap
// k in [prm(0), prm(1)) of {{TAPS}} per pass (loops.long_loop) reads window o when
// p + P - i*D = o*S on every axis; the sum is kept in state between passes.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> dy: array<{{T}}>;
@group(0) @binding(2) var<storage, read> aux: array<{{TA}}>;
@group(0) @binding(3) var<storage, read> x: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> out: array<{{T}}>;
@group(0) @binding(5) var<storage, read_write> state: array<u32>;

fn fdiv(a: i32, b: i32) -> i32 { if (a >= 0) { return a / b; } return -((-a + b - 1) / b); }

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
  let p3 = i32(t % {{N3}}u);
  let p2 = i32((t / {{NP3}}u) % {{N2}}u);
  let p1 = i32((t / {{NP2}}u) % {{N1}}u);
  let p0 = i32((t / {{NP1}}u) % {{N0}}u);
  let b = t / {{NP0}}u;
  let j0 = prm(0u);
  let j1 = prm(1u);
  var acc = 0.0;
  if (j0 > 0u) { acc = bitcast<f32>(state[t]); }
  for (var k = j0; k < j1; k = k + 1u) {
    let i3 = k % {{K3}}u;
    let i2 = (k / {{KP3}}u) % {{K2}}u;
    let i1 = (k / {{KP2}}u) % {{K1}}u;
    let i0 = k / {{KP1}}u;
    let q0 = p0 + {{P0}} - i32(i0) * {{D0}};
    let q1 = p1 + {{P1}} - i32(i1) * {{D1}};
    let q2 = p2 + {{P2}} - i32(i2) * {{D2}};
    let q3 = p3 + {{P3}} - i32(i3) * {{D3}};
    if (q0 >= 0 && q1 >= 0 && q2 >= 0 && q3 >= 0 && q0 % {{S0}} == 0 && q1 % {{S1}} == 0 && q2 % {{S2}} == 0
        && q3 % {{S3}} == 0 && q0 / {{S0}} < {{O0}} && q1 / {{S1}} < {{O1}} && q2 / {{S2}} < {{O2}}
        && q3 / {{S3}} < {{O3}}) {
      let o0 = q0 / {{S0}};
      let o1 = q1 / {{S1}};
      let o2 = q2 / {{S2}};
      let o3 = q3 / {{S3}};
      let w = b * {{OP0}}u + u32(o0) * {{OP1}}u + u32(o1) * {{OP2}}u + u32(o2) * {{OP3}}u + u32(o3);
      {{STEP}}
    }
  }
  if (j1 == {{TAPS}}u) { {{STORE}} } else { state[t] = bitcast<u32>(acc); }
}
