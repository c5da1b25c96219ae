// dequantize: out[t] = (q[t] - Z) * S, in f32 (exact for the int8/uint8 range), rounded once to
// the result type. S and Z are baked constants or the parameters at index p (per axis or per block).
{{BINDINGS}}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
{{PARAM_INDEX}}
  let v = (f32(q[t]) - {{ZP}}) * {{SCALE}};
  out[t] = {{STORE}};
}
