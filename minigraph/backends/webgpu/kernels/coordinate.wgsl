// dst[i] = (i / inner) % size: coordinate_along_axis, the axis's index of each element
// params: n, inner (elements after the axis), size (the axis's length)
{{PARAMS}}
@group(0) @binding(1) var<storage, read_write> dst: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= prm(0u)) { return; }
  dst[i] = i32((i / prm(1u)) % prm(2u));
}
