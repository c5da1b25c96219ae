// dst[i] = params[1 + i]: shape_of writes the (static) shape, one int32 per axis
// params: n, then the n values
{{PARAMS}}
@group(0) @binding(1) var<storage, read_write> dst: array<i32>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32) {
  if (lid < prm(0u)) { dst[lid] = i32(prm(1u + lid)); }
}
