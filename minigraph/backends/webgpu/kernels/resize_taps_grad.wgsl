// The adjoint of one resize pass: dy viewed as [OUTER, M, INNER] -> dx [OUTER, N, INNER], one
// thread per dx element gathering the results that read it (no atomics). The host listed them
// per source index k: entries tab[k] .. tab[k + 1] - 1, entry e being the result index
// tab[N + 1 + 2e] and the bits of its weight tab[N + 2 + 2e] (zero weights left out).
@group(0) @binding(0) var<storage, read> dy: array<{{TI}}>;
@group(0) @binding(1) var<storage, read> tab: array<u32>;
@group(0) @binding(2) var<storage, read_write> dx: array<{{TO}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= {{TOTAL}}u) { return; }
  let inner = i % {{INNER}}u;
  let rest = i / {{INNER}}u;
  let k = rest % {{N}}u;
  let outer = rest / {{N}}u;
  let base = outer * {{M}}u * {{INNER}}u + inner;
  var s = 0.0;
  for (var e = tab[k]; e < tab[k + 1u]; e = e + 1u) {
    let o = tab[{{N}}u + 1u + 2u * e];
    s = s + f32(dy[base + o * {{INNER}}u]) * bitcast<f32>(tab[{{N}}u + 2u + 2u * e]);
  }
  dx[i] = {{TO}}(s);
}
