// tile_gradient: one thread per source element; it sums the incoming gradient over every copy
// (copy index c decoded per axis). A long loop (loops.py): this pass visits the copies
// j0 <= c < j1 and keeps the sum in `state` (the compute type) for the next one.
// params: n, copies, j0, j1, then per axis (source size, multiplier, incoming gradient
// stride), last axis first
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> state: array<{{C}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let k = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (k >= prm(0u)) { return; }
  var r = k;
  var base = 0u;
  for (var a = 0u; a < {{RANK}}u; a = a + 1u) {
    let size = prm(4u + 3u * a);
    base = base + (r % size) * prm(6u + 3u * a);
    r = r / size;
  }
  let j0 = prm(2u);
  let j1 = prm(3u);
  var acc = {{C}}(0);
  if (j0 > 0u) { acc = state[k]; }
  for (var c = j0; c < j1; c = c + 1u) {
    var rc = c;
    var off = base;
    for (var a = 0u; a < {{RANK}}u; a = a + 1u) {
      let m = prm(5u + 3u * a);
      off = off + (rc % m) * prm(4u + 3u * a) * prm(6u + 3u * a);
      rc = rc / m;
    }
    acc = acc + {{LOAD}};
  }
  if (j1 < prm(1u)) { state[k] = acc; } else { dst[k] = {{STORE}}; }
}
