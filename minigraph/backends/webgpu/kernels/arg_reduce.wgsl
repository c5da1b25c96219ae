// One thread per slice of an (outer, L, inner) tensor: the index of its first maximum (or
// minimum) along L. NaN is skipped, as by MPSGraph's reductionArgMaximum/Minimum (and by
// reduction_maximum/minimum, so x[argmax] is their result); a slice of only NaN gives -1. A long
// loop (loops.py): this pass visits j0 <= j < j1 and keeps the best value (its bits) and its index
// in `state` for the next one. params: rows, L, inner, j0, j1
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<i32>;
@group(0) @binding(3) var<storage, read_write> state: array<u32>;
{{ORDER}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (r >= prm(0u)) { return; }
  let L = prm(1u);
  let inner = prm(2u);
  let j0 = prm(3u);
  let j1 = prm(4u);
  let base = (r / inner) * L * inner + r % inner;
  var best = {{C}}(0);
  var at = -1i;
  if (j0 > 0u) {
    best = bitcast<{{C}}>(state[2u * r]);
    at = bitcast<i32>(state[2u * r + 1u]);
  }
  for (var j = j0; j < j1; j = j + 1u) {
    let v = {{C}}(src[base + j * inner]);
    if (!is_nan_c(v) && (at < 0 || {{BETTER}})) {
      best = v;
      at = i32(j);
    }
  }
  if (j1 < L) {
    state[2u * r] = bitcast<u32>(best);
    state[2u * r + 1u] = bitcast<u32>(at);
  } else {
    dst[r] = at;
  }
}
