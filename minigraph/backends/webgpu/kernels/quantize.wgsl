// quantize: out[t] = clamp(round(x[t] / S) + Z, LO, HI) in the quantized type (stored as i32 or
// u32); round is WGSL's, half to even; a NaN quotient gives Z. S and Z are baked constants or
// the per-axis parameters at index p.
{{BINDINGS}}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
{{PARAM_INDEX}}
  let r = round(f32(x[t]) / {{SCALE}});
  var v = r + {{ZP}};
  if (mg_isnan(r)) { v = {{ZP}}; }
  out[t] = {{OUT}}(clamp(v, {{LO}}, {{HI}}));
}
