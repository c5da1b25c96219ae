// reinterpret_cast: the same bits read as another type, copied word by word (both buffers seen
// as 32-bit words; float16 halves pair up little-endian, as in NumPy's view).
@group(0) @binding(0) var<storage, read> src: array<{{T}}>;
@group(0) @binding(1) var<storage, read_write> out: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i < {{TOTAL}}u) { out[i] = src[i]; }
}
