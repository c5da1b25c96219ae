// One thread per row of an (outer, L, inner) tensor: a running sum, product, maximum or minimum
// (COMBINE, from IDENTITY) along L, in order (from the end when reversed), written before
// combining the element when exclusive. A long loop (loops.py): this pass visits j0 <= j < j1 and
// keeps the running value in `state` (the compute type) for the next one.
// params: rows, L, inner, exclusive, reverse, j0, j1
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> state: array<{{ACC}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (r >= prm(0u)) { return; }
  let L = prm(1u);
  let inner = prm(2u);
  let exclusive = prm(3u) != 0u;
  let reverse = prm(4u) != 0u;
  let j0 = prm(5u);
  let j1 = prm(6u);
  let base = (r / inner) * L * inner + r % inner;
  var acc: {{ACC}} = {{IDENTITY}};
  if (j0 > 0u) { acc = state[r]; }
  for (var j = j0; j < j1; j = j + 1u) {
    let p = base + select(j, L - 1u - j, reverse) * inner;
    let v = {{ACC}}(src[p]);
    if (exclusive) {
      dst[p] = {{T}}(acc);
      acc = {{COMBINE}};
    } else {
      acc = {{COMBINE}};
      dst[p] = {{T}}(acc);
    }
  }
  if (j1 < L) { state[r] = acc; }
}
