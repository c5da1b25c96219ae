// Merge sort, first step: rows of an (outer, L, inner) tensor copied to contiguous rows of
// (value, original index) pairs. params: n (elements), L, inner
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> vals: array<{{C}}>;
@group(0) @binding(3) var<storage, read_write> idx: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let p = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (p >= prm(0u)) { return; }
  let L = prm(1u);
  let inner = prm(2u);
  let row = p / L;
  let i = p % L;
  vals[p] = {{C}}(src[(row / inner) * L * inner + i * inner + row % inner]);
  idx[p] = i;
}
