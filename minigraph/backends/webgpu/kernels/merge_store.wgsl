// Merge sort, last step: the sorted rows of (value, original index) pairs written out.
// params: n (elements), L, inner, k (top_k)
{{PARAMS}}
@group(0) @binding(1) var<storage, read> vals: array<{{C}}>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
{{BINDINGS}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let p = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (p >= prm(0u)) { return; }
  let L = prm(1u);
  let inner = prm(2u);
  let row = p / L;
  let i = p % L;
  let at = (row / inner) * L * inner + i * inner + row % inner;
  {{WRITE}}
}
