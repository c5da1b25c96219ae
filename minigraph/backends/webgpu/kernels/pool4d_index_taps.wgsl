// pool4d_index_taps: window t's index (of return_indices_mode) as the flat tap it names within the
// window, or 0xffffffff where it names no tap of the window inside the source.
@group(0) @binding(0) var<storage, read> indices: array<i32>;
@group(0) @binding(1) var<storage, read_write> taps: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  let o3 = i32(t % {{O3}}u);
  let o2 = i32((t / {{OP3}}u) % {{O2}}u);
  let o1 = i32((t / {{OP2}}u) % {{O1}}u);
  let o0 = i32((t / {{OP1}}u) % {{O0}}u);
  let index = indices[t];
  var ok = index >= 0 && index < {{RANGE}};
  var rest = select(0, index, ok);
  var tap = 0;
{{DECODE}}
  taps[t] = select(0xffffffffu, u32(tap), ok);
}
