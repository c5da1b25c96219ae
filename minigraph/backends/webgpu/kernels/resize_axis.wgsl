// One resize pass along one axis: x viewed as [OUTER, N, INNER] -> y [OUTER, M, INNER],
// one thread per result element.
{{COMMON}}
@group(0) @binding(0) var<storage, read> x: array<{{TI}}>;
@group(0) @binding(1) var<storage, read_write> y: array<{{TO}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= {{TOTAL}}u) { return; }
  let inner = i % {{INNER}}u;
  let rest = i / {{INNER}}u;
  let o = rest % {{M}}u;
  let outer = rest / {{M}}u;
  let t = tap(i32(o));
  let base = outer * {{N}}u * {{INNER}}u + inner;
  let a = f32(x[base + t.i0 * {{INNER}}u]);
  var v = a;
  if (t.f > 0.0) {
    let b = f32(x[base + t.i1 * {{INNER}}u]);
    v = a * (1.0 - t.f) + b * t.f;
  }
  y[i] = {{TO}}(v);
}
