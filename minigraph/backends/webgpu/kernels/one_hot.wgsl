// one_hot: result element (p, d, q) (d on the new axis of length DEPTH) is ON where
// indices[p, q] == d, OFF elsewhere; indices outside [0, DEPTH) match no d.
@group(0) @binding(0) var<storage, read> idx: array<{{TI}}>;
@group(0) @binding(1) var<storage, read_write> out: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  let q = t % {{INNER}}u;
  let d = (t / {{INNER}}u) % {{DEPTH}}u;
  let p = t / ({{INNER}}u * {{DEPTH}}u);
  let v = idx[p * {{INNER}}u + q];
  if ({{IS_ON}}) { out[t] = {{ON}}; } else { out[t] = {{OFF}}; }
}
