// One thread per slice of an (outer, L, inner) tensor: the index of its first maximum (or
// minimum) along L, a NaN winning over every number (the first NaN wins). The loop is nested in
// chunks of 4096, so none runs longer than a fixed bound. params: rows, L, inner
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<i32>;
{{ORDER}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (r >= prm(0u)) { return; }
  let L = prm(1u);
  let inner = prm(2u);
  let base = (r / inner) * L * inner + r % inner;
  var best = {{C}}(src[base]);
  var at = 0u;
  let chunks = (L + 4095u) / 4096u;
  for (var c = 0u; c < chunks; c = c + 1u) {
    for (var t = 0u; t < 4096u; t = t + 1u) {
      let j = c * 4096u + t;
      if (j >= L) { break; }
      let v = {{C}}(src[base + j * inner]);
      if (!is_nan_c(best) && (is_nan_c(v) || {{BETTER}})) {
        best = v;
        at = j;
      }
    }
  }
  dst[r] = i32(at);
}
