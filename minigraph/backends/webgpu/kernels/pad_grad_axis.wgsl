// pad_gradient along one axis: one thread per element of the result (that axis at the source's
// size); it sums the incoming elements whose position on the axis maps to its coordinate
// (pad_map), subtracting those an odd number of ANTI_PERIODIC periods negated. The other
// axes are folded one dispatch each.
// params: n, inner (elements after the axis), source size, padded size, left padding
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{T}}>;

{{MAP}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let k = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (k >= prm(0u)) { return; }
  let inner = prm(1u);
  let size = prm(2u);
  let padded = prm(3u);
  let c = k % inner;
  let t = k / inner;
  let i = i32(t % size);
  let base = (t / size) * padded * inner + c;
  var acc = {{C}}(0);
  for (var j = 0u; j < padded; j = j + 1u) {
    let m = pad_map(j, size, prm(4u));
    if (m.x != i) { continue; }
    let v = {{LOAD}};
    if ((m.y & 1) != 0) { acc = acc - v; } else { acc = acc + v; }
  }
  dst[k] = {{STORE}};
}
