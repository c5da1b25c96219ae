// sparse_tensor_gradient: value k's gradient is dy at its position (0 outside the shape); for CSR
// and CSC it sums dy over the rows (columns) r in [prm(0), prm(1)) of N per pass whose range of
// starts holds k (loops.long_loop).
{{PARAMS}}
@group(0) @binding(1) var<storage, read> dy: array<{{T}}>;
@group(0) @binding(2) var<storage, read> i0: array<{{I}}>;
@group(0) @binding(3) var<storage, read> i1: array<{{I}}>;
@group(0) @binding(4) var<storage, read_write> out: array<{{T}}>;
@group(0) @binding(5) var<storage, read_write> state: array<u32>;

fn i64_of(v: {{I}}) -> i32 { return {{TO_I32}}; }
fn start(i: u32) -> i32 { return clamp(i64_of(i1[i]), 0, {{NNZ}}); }
fn inside(r: i32, c: i32) -> bool { return r >= 0 && r < {{ROWS}} && c >= 0 && c < {{COLS}}; }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let k = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (k >= {{NNZ}}u) { return; }
  let j0 = prm(0u);
  let j1 = prm(1u);
  var acc = {{C_T}}(0);
  if (j0 > 0u) { acc = bitcast<{{C_T}}>(state[k]); }
{{BODY}}
  if (j1 == {{N}}u) { out[k] = {{T}}(acc); } else { state[k] = bitcast<u32>(acc); }
}
