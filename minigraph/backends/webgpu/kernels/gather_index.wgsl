// Gather, gather_along_axis and gather_nd as one indexed read, one thread per result element.
// The result is [B, O, N, IN] in memory order; element (b, o, n, i) reads updates at
// b * UB + o * UO + i plus, per index coordinate k, coord(indices[b * IB + o * IO + n * INS
// + i * II + k], D_k) * S_k. An index out of [-D_k, D_k) makes the element 0.
@group(0) @binding(0) var<storage, read> upd: array<{{T}}>;
@group(0) @binding(1) var<storage, read> idx: array<{{TI}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{T}}>;

{{COORD}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  let i = t % {{IN}}u;
  let n = (t / {{IN}}u) % {{N}}u;
  let o = (t / ({{IN}}u * {{N}}u)) % {{O}}u;
  let b = t / ({{IN}}u * {{N}}u * {{O}}u);
  let ib = b * {{IB}}u + o * {{IO}}u + n * {{INS}}u + i * {{II}}u;
  var src = b * {{UB}}u + o * {{UO}}u + i;
  var ok = true;
{{COORDS}}
  if (ok) { out[t] = upd[src]; } else { out[t] = {{T}}(0); }
}
