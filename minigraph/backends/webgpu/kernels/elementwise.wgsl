// Elementwise map with NumPy broadcasting: o[i] = f(a[ia], b[ib], ...).
// Per input, the index is i (same shape), 0 (one element) or decoded from i over the
// collapsed output shape with that input's strides (0 along broadcast axes).
{{PARAMS}}
{{BINDINGS}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= prm(0u)) { return; }
{{INDEX}}
{{BODY}}
}
