// hamming_distance: result (b, m, n) = sum over k < K of countOneBits(a[b, m, k] ^ c[b, n, k]),
// the batch index b mapped to each input's offset with its broadcast strides (BATCH_OFFSETS).
@group(0) @binding(0) var<storage, read> a: array<{{TI}}>;
@group(0) @binding(1) var<storage, read> c: array<{{TI}}>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

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
  var s = 0u;
  for (var k = 0u; k < {{K}}u; k = k + 1u) {
    s = s + countOneBits(bitcast<u32>(a[ar + k] ^ c[cr + k]));
  }
  out[t] = s;
}
