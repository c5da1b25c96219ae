// One thread per element of an (outer, L, inner) tensor: its rank along the L axis is the number
// of elements that come before it in the stable order (ties by index), which is where it goes.
// The count loops are nested in chunks of 4096, so none runs longer than a fixed bound.
// params: n (elements), L, inner, descending, k (top_k)
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{T}}>;
{{BINDINGS}}
{{ORDER}}

fn key(i: u32) -> {{C}} { return {{C}}(src[i]); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (e >= prm(0u)) { return; }
  let L = prm(1u);
  let inner = prm(2u);
  let desc = prm(3u) != 0u;
  let n = e % inner;
  let l = (e / inner) % L;
  let o = e / (inner * L);
  let base = o * L * inner + n;
  let xi = key(e);
  var rank = 0u;
  let chunks = (L + 4095u) / 4096u;
  for (var c = 0u; c < chunks; c = c + 1u) {
    for (var t = 0u; t < 4096u; t = t + 1u) {
      let j = c * 4096u + t;
      if (j >= L) { break; }
      let xj = key(base + j * inner);
      var before = false;
      if (desc) { before = lt(xi, xj) || (!lt(xj, xi) && j < l); }
      else { before = lt(xj, xi) || (!lt(xi, xj) && j < l); }
      if (before) { rank = rank + 1u; }
    }
  }
  {{WRITE}}
}
