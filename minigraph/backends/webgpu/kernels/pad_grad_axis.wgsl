// pad_gradient along one axis: one thread per element of the result (that axis at the source's
// size); it sums, in position order, the incoming elements whose position on the axis maps to
// its coordinate (pad_map), subtracting those an odd number of ANTI_PERIODIC periods negated:
// the padding's positions and its own, so left + right + 1 visits. The other axes are folded
// one dispatch each. A long loop (loops.py): this pass makes the visits j0 <= q < j1 and keeps
// the sum in `state` (the compute type) for the next one.
// params: n, inner (elements after the axis), source size, padded size, left padding, j0, j1
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> state: array<{{C}}>;

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
  let left = prm(4u);
  let trips = padded - size + 1u;
  let j0 = prm(5u);
  let j1 = prm(6u);
  var acc = {{C}}(0);
  if (j0 > 0u) { acc = state[k]; }
  for (var q = j0; q < j1; q = q + 1u) {
    var j = q;  // the left padding, then this element's own position, then the right padding
    if (q == left) { j = left + u32(i); } else if (q > left) { j = q + size - 1u; }
    let m = pad_map(j, size, left);
    if (m.x != i) { continue; }
    let v = {{LOAD}};
    if ((m.y & 1) != 0) { acc = acc - v; } else { acc = acc + v; }
  }
  if (j1 < trips) { state[k] = acc; } else { dst[k] = {{STORE}}; }
}
