// One thread per output element, for short reductions (count < 256, so the loop stays short).
{{COMMON}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let o = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (o >= prm(0u)) { return; }
  let count = prm(1u);
  let b = base_of(o);
  var acc: {{ACC}} = {{INIT}};
  for (var j = 0u; j < count; j = j + 1u) {
    acc = combine(acc, {{LOAD}}(src[b + off_of(j)]));
  }
  dst[o] = finish(acc, prm(3u));
}
