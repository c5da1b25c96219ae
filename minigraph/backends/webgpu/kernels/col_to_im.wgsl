// col_to_im: image element t (n, c, y, x) is the sum of the column elements im_to_col copies from
// it: window position k = (i, j) in [prm(0), prm(1)) of KH*KW per pass (loops.long_loop) reads
// window (oy, ox) when y + PT - i*DY = oy*SY and x + PL - j*DX = ox*SX fall inside the windows.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> cols: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> state: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  var n = 0u;
  var c = 0u;
  var y = 0u;
  var x = 0u;
  if ({{NCHW}}) { x = t % {{W}}u; y = (t / {{W}}u) % {{H}}u; c = (t / ({{W}}u * {{H}}u)) % {{C}}u; n = t / ({{W}}u * {{H}}u * {{C}}u); }
  else { c = t % {{C}}u; x = (t / {{C}}u) % {{W}}u; y = (t / ({{C}}u * {{W}}u)) % {{H}}u; n = t / ({{C}}u * {{W}}u * {{H}}u); }
  let rows = {{C}}u * {{KH}}u * {{KW}}u;
  let windows = {{OH}}u * {{OW}}u;
  let j0 = prm(0u);
  let j1 = prm(1u);
  var acc = {{C_T}}(0);
  if (j0 > 0u) { acc = bitcast<{{C_T}}>(state[t]); }
  for (var k = j0; k < j1; k = k + 1u) {
    let ty = i32(y) + {{PT}} - i32((k / {{KW}}u) * {{DY}}u);
    let tx = i32(x) + {{PL}} - i32((k % {{KW}}u) * {{DX}}u);
    if (ty >= 0 && tx >= 0 && ty % {{SY}} == 0 && tx % {{SX}} == 0 && ty / {{SY}} < {{OH}} && tx / {{SX}} < {{OW}}) {
      let l = u32(ty / {{SY}}) * {{OW}}u + u32(tx / {{SX}});
      var s = 0u;
      if ({{NCHW}}) { s = (n * rows + c * {{KH}}u * {{KW}}u + k) * windows + l; }
      else { s = (n * windows + l) * rows + k * {{C}}u + c; }
      acc = acc + {{C_T}}(cols[s]);
    }
  }
  if (j1 == {{KK}}u) { out[t] = {{T}}(acc); } else { state[t] = bitcast<u32>(acc); }
}
