// band_part: element (b, i, j) of the ROWS x COLS matrices keeps its value where
// (LOWER < 0 || i - j <= LOWER) && (UPPER < 0 || j - i <= UPPER), else is 0.
@group(0) @binding(0) var<storage, read> x: array<{{T}}>;
@group(0) @binding(1) var<storage, read_write> out: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (t >= {{TOTAL}}u) { return; }
  let j = i32(t % {{COLS}}u);
  let i = i32((t / {{COLS}}u) % {{ROWS}}u);
  let keep = ({{LOWER}} < 0 || i - j <= {{LOWER}}) && ({{UPPER}} < 0 || j - i <= {{UPPER}});
  if (keep) { out[t] = x[t]; } else { out[t] = {{T}}(0); }
}
