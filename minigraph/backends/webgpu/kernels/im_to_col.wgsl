// im_to_col: result element t of [N, C*KH*KW, L] (NCHW) or [N, L, KH*KW*C] (NHWC) is the image
// element under window position (i, j) of window l, or 0 in the padding (layouts: ops/image.py).
@group(0) @binding(0) var<storage, read> src: array<{{T}}>;
@group(0) @binding(1) var<storage, read_write> out: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  let rows = {{C}}u * {{KH}}u * {{KW}}u;
  let windows = {{OH}}u * {{OW}}u;
  var row = 0u;
  var l = 0u;
  if ({{NCHW}}) { l = t % windows; row = (t / windows) % rows; } else { row = t % rows; l = (t / rows) % windows; }
  let n = t / (rows * windows);
  var c = 0u;
  var k = 0u;
  if ({{NCHW}}) { c = row / ({{KH}}u * {{KW}}u); k = row % ({{KH}}u * {{KW}}u); } else { c = row % {{C}}u; k = row / {{C}}u; }
  let y = i32((l / {{OW}}u) * {{SY}}u + (k / {{KW}}u) * {{DY}}u) - {{PT}};
  let x = i32((l % {{OW}}u) * {{SX}}u + (k % {{KW}}u) * {{DX}}u) - {{PL}};
  var v = {{T}}(0);
  if (y >= 0 && y < {{H}} && x >= 0 && x < {{W}}) {
    var s = 0u;
    if ({{NCHW}}) { s = ((n * {{C}}u + c) * {{H}}u + u32(y)) * {{W}}u + u32(x); }
    else { s = ((n * {{H}}u + u32(y)) * {{W}}u + u32(x)) * {{C}}u + c; }
    v = src[s];
  }
  out[t] = v;
}
