// One thread per row of an (outer, L, inner) tensor: a running sum along L, in order (from the
// end when reversed), written before adding the element when exclusive. The loop is nested in
// chunks of 4096, so none runs longer than a fixed bound. params: rows, L, inner, exclusive, reverse
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (r >= prm(0u)) { return; }
  let L = prm(1u);
  let inner = prm(2u);
  let exclusive = prm(3u) != 0u;
  let reverse = prm(4u) != 0u;
  let base = (r / inner) * L * inner + r % inner;
  var acc: {{ACC}} = {{ACC}}(0);
  let chunks = (L + 4095u) / 4096u;
  for (var c = 0u; c < chunks; c = c + 1u) {
    for (var t = 0u; t < 4096u; t = t + 1u) {
      let j = c * 4096u + t;
      if (j >= L) { break; }
      let p = base + select(j, L - 1u - j, reverse) * inner;
      let v = {{ACC}}(src[p]);
      if (exclusive) {
        dst[p] = {{T}}(acc);
        acc = acc + v;
      } else {
        acc = acc + v;
        dst[p] = {{T}}(acc);
      }
    }
  }
}
