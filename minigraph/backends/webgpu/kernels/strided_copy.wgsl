// dst[dst_off + sum_d idx_d * dst_stride_d] = src[src_off + sum_d idx_d * src_stride_d]
// over a copy shape of RANK axes: broadcast, permute, transpose, slice, concat pieces.
// params: n, src_off, dst_off, then per axis (size, src_stride, dst_stride), last axis first
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= prm(0u)) { return; }
  var r = i;
  var s = prm(1u);
  var d = prm(2u);
  for (var k = 0u; k < {{RANK}}u; k = k + 1u) {
    let size = prm(3u + 3u * k);
    let q = r % size;
    r = r / size;
    s = s + q * prm(4u + 3u * k);
    d = d + q * prm(5u + 3u * k);
  }
  dst[d] = src[s];
}
