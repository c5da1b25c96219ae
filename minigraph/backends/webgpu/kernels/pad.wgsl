// pad_tensor: one thread per result element. Each axis maps its coordinate to a source
// coordinate by the padding mode (pad_map, semantics in ops/padding.py); a coordinate outside
// the source on any axis writes the constant, an odd number of ANTI_PERIODIC periods negates.
// params: n, then per axis (result size, source size, left padding, source stride), last axis first
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{T}}>;

{{MAP}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let k = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (k >= prm(0u)) { return; }
  var r = k;
  var s = 0u;
  var flips = 0;
  var inside = true;
  for (var a = 0u; a < {{RANK}}u; a = a + 1u) {
    let size = prm(1u + 4u * a);
    let q = r % size;
    r = r / size;
    let m = pad_map(q, prm(2u + 4u * a), prm(3u + 4u * a));
    if (m.x < 0) { inside = false; } else { s = s + u32(m.x) * prm(4u + 4u * a); }
    flips = flips + m.y;
  }
  if (!inside) {
    dst[k] = {{CONST}};
    return;
  }
  let v = src[s];
  if ((flips & 1) != 0) { dst[k] = {{NEG}}; } else { dst[k] = v; }
}
