// `chunks` workgroups per output element, each covering 256 * PER reduced elements: every thread
// combines up to PER of them, 8 at a time and then those 8-element results (so its loops are
// never longer than PER, whatever the size), then a tree in workgroup memory. dst[o * chunks + c]
// gets chunk c's result: the output itself when chunks == 1, else a partial that a further
// reduction combines (a pairwise-like order throughout, so long float sums stay accurate).
{{COMMON}}
const PER: u32 = {{PER}}u;
var<workgroup> sh: array<{{ACC}}, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let gid = wid.y * nwg.x + wid.x;
  let chunks = prm(2u);
  let o = gid / chunks;
  let live = o < prm(0u);
  let count = prm(1u);
  var acc: {{ACC}} = {{INIT}};
  if (live) {
    let b = base_of(o);
    let start = (gid % chunks) * (256u * PER);
    let j0 = start + lid;
    let groups = min(PER / 8u, (count - start + 2047u) / 2048u);
    for (var q = 0u; q < groups; q = q + 1u) {
      var part: {{ACC}} = {{INIT}};
      for (var k = 0u; k < 8u; k = k + 1u) {
        let j = j0 + (q * 8u + k) * 256u;
        if (j < count) { part = combine(part, {{LOAD}}(src[b + off_of(j)])); }
      }
      acc = combine(acc, part);
    }
  }
  sh[lid] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s >> 1u) {
    if (lid < s) { sh[lid] = combine(sh[lid], sh[lid + s]); }
    workgroupBarrier();
  }
  if (live && lid == 0u) { dst[gid] = finish(sh[0], prm(3u)); }
}
