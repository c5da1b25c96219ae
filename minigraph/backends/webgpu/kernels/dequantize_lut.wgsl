// dequantize_lut / dequantize_vector_lut: out[t] = lut[(table * ENTRIES + q[ii]) * V + vv], where
// COORDS computes, from the result coordinate, the index ii into q, the table of the LUT group
// the element falls in, and the vector component vv (0 for a scalar LUT). A plain copy of the
// LUT's element, in its storage type.
@group(0) @binding(0) var<storage, read> q: array<u32>;
@group(0) @binding(1) var<storage, read> lut: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  var ii = 0u;
  var table = 0u;
  var vv = 0u;
{{COORDS}}
  out[t] = lut[(table * {{ENTRIES}}u + q[ii]) * {{V}}u + vv];
}
