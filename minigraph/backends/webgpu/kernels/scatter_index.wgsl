// Scatter, scatter_along_axis and scatter_nd without atomics, one thread per result element:
// element (b, o, a, i) of the result [B, O, A, IN] (a: the flat position among the indexed
// axes, coordinates c_k) visits the updates n = N0 .. N1-1 in order and combines each whose
// index tuple (indices[b * IB + o * IO + n * INS + i * II + k], made non-negative) equals
// (c_k); updates out of range match nothing. Visiting in order makes collisions add up in
// row-major order of the updates, as the NumPy backend does. Long loops run as several passes
// over chunks of n; between passes the running value stays in the compute type, with a flag
// saying whether an update reached the element, in `state` (2 words per element), so float16
// rounds once, when the last pass stores the result (FINISH: 0 where no update landed, for
// scatter and scatter_nd).
@group(0) @binding(0) var<storage, read> upd: array<{{T}}>;
@group(0) @binding(1) var<storage, read> idx: array<{{TI}}>;
@group(0) @binding(2) var<storage, read> base: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> out: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> state: array<u32>;

{{COORD}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  let i = t % {{IN}}u;
  let a = (t / {{IN}}u) % {{A}}u;
  let o = (t / ({{IN}}u * {{A}}u)) % {{O}}u;
  let b = t / ({{IN}}u * {{A}}u * {{O}}u);
{{TARGET}}
  var acc: {{C}} = {{START}};
  var hit: bool = {{HIT}};
  let ub = b * {{UB}}u + o * {{UO}}u + i;
  let ib0 = b * {{IB}}u + o * {{IO}}u + i * {{II}}u;
  for (var n = {{N0}}u; n < {{N1}}u; n = n + 1u) {
    let ib = ib0 + n * {{INS}}u;
    if ({{MATCH}}) {
      let v = {{C}}(upd[ub + n * {{UN}}u]);
      acc = {{COMBINE}};
      hit = true;
    }
  }
{{FINISH}}
}
