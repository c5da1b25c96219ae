// One workgroup per output element: 256 threads stride over the reduced elements, then a
// tree in workgroup memory (pairwise-like accuracy for long sums).
{{COMMON}}
var<workgroup> sh: array<{{ACC}}, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let o = wid.y * nwg.x + wid.x;
  let live = o < prm(0u);
  let count = prm(1u);
  var acc: {{ACC}} = {{INIT}};
  if (live) {
    let b = base_of(o);
    for (var j = lid; j < count; j = j + 256u) {
      acc = combine(acc, {{LOAD}}(src[b + off_of(j)]));
    }
  }
  sh[lid] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s >> 1u) {
    if (lid < s) { sh[lid] = combine(sh[lid], sh[lid + s]); }
    workgroupBarrier();
  }
  if (live && lid == 0u) { dst[o] = finish(sh[0], count); }
}
