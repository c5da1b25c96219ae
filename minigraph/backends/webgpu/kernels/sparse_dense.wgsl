// sparse_tensor: dense element t = (r, c) sums the values k in [prm(0), prm(1)) of NNZ per pass
// (loops.long_loop) that name it, in the order of k: COO when i0[k] == r and i1[k] == c; CSR
// over the values of row r (i1 the row starts, clipped to [0, NNZ]) with i0[k] == c; CSC the same
// with rows and columns swapped.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> vals: array<{{T}}>;
@group(0) @binding(2) var<storage, read> i0: array<{{I}}>;
@group(0) @binding(3) var<storage, read> i1: array<{{I}}>;
@group(0) @binding(4) var<storage, read_write> out: array<{{T}}>;
@group(0) @binding(5) var<storage, read_write> state: array<u32>;

fn start(i: u32) -> u32 { return u32(clamp(i64_of(i1[i]), 0, {{NNZ}})); }
fn i64_of(v: {{I}}) -> i32 { return {{TO_I32}}; }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  let r = i32(t / {{COLS}}u);
  let c = i32(t % {{COLS}}u);
  let j0 = prm(0u);
  let j1 = prm(1u);
  var acc = {{C_T}}(0);
  if (j0 > 0u) { acc = bitcast<{{C_T}}>(state[t]); }
{{BODY}}
  if (j1 == {{NNZ}}u) { out[t] = {{T}}(acc); } else { state[t] = bitcast<u32>(acc); }
}
