// hamming_distance: result (b, m, n) = sum over k < K of countOneBits(a[b, m, k] ^ c[b, n, k]),
// the batch index b mapped to each input's offset with its broadcast strides (BATCH_OFFSETS).
// One pass sums k in [prm(0), prm(1)) (loops.long_loop), the running count kept in state.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> a: array<{{TI}}>;
@group(0) @binding(2) var<storage, read> c: array<{{TI}}>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<storage, read_write> state: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  let n = t % {{N}}u;
  let m = (t / {{N}}u) % {{M}}u;
  let bi = t / ({{M}}u * {{N}}u);
  var ao = 0u;
  var co = 0u;
{{BATCH_OFFSETS}}
  let ar = ao + m * {{K}}u;
  let cr = co + n * {{K}}u;
  let j0 = prm(0u);
  let j1 = prm(1u);
  var s = 0u;
  if (j0 > 0u) { s = state[t]; }
  for (var k = j0; k < j1; k = k + 1u) {
    s = s + countOneBits(bitcast<u32>(a[ar + k] ^ c[cr + k]));
  }
  if (j1 == {{K}}u) { out[t] = s; } else { state[t] = s; }
}
