// sample_grid (ops/sample_grid.py): one thread per result element, up to four loads. The
// positions of the result pixels (step 1, "relative_coordinates") come from the host in
// bases: Wo x-positions, then Ho y-positions.
@group(0) @binding(0) var<storage, read> src: array<{{T}}>;
@group(0) @binding(1) var<storage, read> crd: array<{{T}}>;
@group(0) @binding(2) var<storage, read> bases: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<{{T}}>;

fn is_nan(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn odd(v: f32) -> bool {
  return v - 2.0 * floor(v / 2.0) == 1.0;
}

// steps 1-3: the pixel position of coordinate c along an axis of size last + 1
fn pixel(c0: f32, b: f32, a: f32, o: f32, last: f32, lo: f32, span: f32) -> f32 {
  var c = c0;
  if ({{RELATIVE}}) { c = c + b; }
  if ({{NORMALIZE}}) { c = c * a + o; }
  if ({{PAD}} == 1) { return clamp(c, 0.0, last); }
  if ({{PAD}} == 2) {
    if (span == 0.0) { return c * 0.0; }
    let q = abs(c - lo);
    let flips = floor(q / span);
    let extra = q - flips * span;
    c = select(extra + lo, (extra * -1.0 + span) + lo, odd(flips));
    return clamp(c, 0.0, last);
  }
  return c;
}

fn rounded(p: f32) -> f32 {
  let fl = floor(p);
  let frac = p - fl;
  let r = {{ROUNDING}};
  if (r == 3) { return fl; }
  if (r == 2) { return select(fl, fl + 1.0, frac > 0.0); }
  let up = frac > 0.5;
  let tie = frac == 0.5;
  if (r == 1) { return select(fl, fl + 1.0, up); }
  var cond = tie;
  if (r == 4) { cond = tie && odd(fl); }
  if (r == 5) { cond = tie && odd(fl + 1.0); }
  return select(select(fl, fl + 1.0, cond), fl + 1.0, up);
}

fn load(n: u32, ch: u32, iy: f32, ix: f32) -> f32 {
  if (ix < 0.0 || ix > {{LASTX}} || iy < 0.0 || iy > {{LASTY}}) { return {{FILL}}; }
  let yi = u32(iy);
  let xi = u32(ix);
  if ({{NCHW}}) { return f32(src[((n * {{C}}u + ch) * {{H}}u + yi) * {{W}}u + xi]); }
  return f32(src[((n * {{H}}u + yi) * {{W}}u + xi) * {{C}}u + ch]);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= {{TOTAL}}u) { return; }
  var ch: u32;
  var ow: u32;
  var oh: u32;
  var n: u32;
  if ({{NCHW}}) {
    ow = i % {{WO}}u;
    oh = (i / {{WO}}u) % {{HO}}u;
    ch = (i / ({{WO}}u * {{HO}}u)) % {{C}}u;
    n = i / ({{WO}}u * {{HO}}u * {{C}}u);
  } else {
    ch = i % {{C}}u;
    ow = (i / {{C}}u) % {{WO}}u;
    oh = (i / ({{C}}u * {{WO}}u)) % {{HO}}u;
    n = i / ({{C}}u * {{WO}}u * {{HO}}u);
  }
  let k = ((n * {{HO}}u + oh) * {{WO}}u + ow) * 2u;
  let px = pixel(f32(crd[k]), bases[ow], {{AX}}, {{OX}}, {{LASTX}}, {{LOX}}, {{SPANX}});
  let py = pixel(f32(crd[k + 1u]), bases[{{WO}}u + oh], {{AY}}, {{OY}}, {{LASTY}}, {{LOY}}, {{SPANY}});
  var v = 0.0;
  if ({{NEAREST}}) {
    v = load(n, ch, rounded(py), rounded(px));
  } else {
    let x0 = floor(px);
    let fx = px - x0;
    let y0 = floor(py);
    let fy = py - y0;
    let wx = array<f32, 2>(fx * -1.0 + 1.0, fx);
    let wy = array<f32, 2>(fy * -1.0 + 1.0, fy);
    for (var ty = 0; ty < 2; ty = ty + 1) {
      for (var tx = 0; tx < 2; tx = tx + 1) {
        let w = wx[tx] * wy[ty];
        if (w != 0.0) {
          v = v + w * load(n, ch, y0 + f32(ty), x0 + f32(tx));
        }
      }
    }
  }
  if (is_nan(px) || is_nan(py)) {
    v = bitcast<f32>(0x7fc00000u);
  }
  y[i] = {{T}}(v);
}
