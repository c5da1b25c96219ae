// One chunk of a long per-output loop of the convolution and pooling kernels (the multi-pass
// path). Thread gid = chunk * TOTAL + i takes the flat taps j in [chunk * CH, chunk * CH + CH) of
// output i (in the output's memory order; j decodes to the same loop variables, in the same
// order, as the single-pass kernel's nested loops) and writes one partial result to
// part[gid]: a sum (added in blocks of 8 first, so float sums round in two levels), or, for max
// pooling, the first maximal tap. The partials of an output are then reduced by a second pass.
// Every loop here runs at most CH / 8 * 9 times (llvmpipe stops a shader's loops after 65,535).
{{COMMON}}
@group(0) @binding(0) var<storage, read> a: array<{{T}}>;
@group(0) @binding(1) var<storage, read> b: array<{{TB}}>;
@group(0) @binding(2) var<storage, read_write> part: array<{{TP}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let gid = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (gid >= {{TOTAL}}u * {{CHUNKS}}u) { return; }
  let chunk = gid / {{TOTAL}}u;
  var r = gid % {{TOTAL}}u;
{{DECODE}}
{{SETUP}}
  let j0 = chunk * {{CH}}u;
  var acc = 0.0;
  for (var q = 0u; q < {{CH}}u / 8u; q = q + 1u) {
    var blk = 0.0;
    for (var k = 0u; k < 8u; k = k + 1u) {
      let j = j0 + q * 8u + k;
      if (j >= {{R}}u) { break; }
      var t = j;
{{TERM}}
    }
    acc = acc + blk;
  }
{{WRITE}}
}
