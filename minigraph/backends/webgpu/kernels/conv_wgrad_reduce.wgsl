// Grouped convolution, weights gradient, pass 2: dw[f, tap] = sum over chunks of part[chunk][f][tap],
// in chunk order, written at the weights layout's strides.
@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> dw: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= {{F}}u * {{TAPS}}u) { return; }
  var s = 0.0;
  for (var k = 0u; k < {{CHUNKS}}u; k = k + 1u) { s = s + part[k * {{F}}u * {{TAPS}}u + i]; }
  let f = i / {{TAPS}}u;
  let t = i % {{TAPS}}u;
  let ci = f % {{CI}}u;
  let og = (f / {{CI}}u) % {{OG}}u;
  let g = f / ({{CI}}u * {{OG}}u);
  let kw = t % {{KW}}u;
  let kh = (t / {{KW}}u) % {{KH}}u;
  let kd = t / ({{KW}}u * {{KH}}u);
  dw[g * {{WSG}}u + og * {{WSOG}}u + ci * {{WSCI}}u + kd * {{WSKD}}u + kh * {{WSKH}}u + kw * {{WSKW}}u] = {{T}}(s);
}
